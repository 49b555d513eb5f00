"""Binding NumPy structured arrays and records (record dtypes) as ``@cuda.jit`` arguments:
each field the kernel names is a strided view of the caller's bytes passed as a buffer
(the body's field accesses are rewritten by ``frontend/python/records.py``).

    >>> import numpy as np
    >>> rec = np.dtype([("a", np.float32), ("b", np.int8)])
    >>> [(p, leaf) for p, leaf, _ in record_layouts({"r": np.zeros(2, rec)})["r"]]
    [(('a',), 'r__a'), (('b',), 'r__b')]
"""
from __future__ import annotations

import numpy as np

from ..errors import KernelLaunchError, KernelTypeError
from ..frontend import python as F
from ..frontend.python.constrecords import const_record_arrays
from ..frontend.python.records import field_view, is_record_array, record_leaves, with_record_fields


def record_layouts(arguments: dict) -> dict:
    """name -> ``(field path, leaf name, sub-shape)`` of each record argument; a record
    scalar (``np.void``) also has the marker ``((), None, ())``."""
    return {n: tuple(record_leaves(n, v.dtype)) + (((), None, ()),) * isinstance(v, np.void)
            for n, v in arguments.items() if is_record_array(v)}


def record_uses(kernel, records: dict) -> set:
    """The record fields (leaf names) ``kernel``'s body names, for these layouts (cached)."""
    cache = kernel.__dict__.setdefault("_record_use_cache", {})
    key = tuple(sorted(records.items()))
    used = cache.get(key)
    if used is None:
        parsed = kernel.parsed()
        # record arrays the body makes (constrecords.py): S[t] = x[i] uses every field of x
        fdef, _, made = const_record_arrays(parsed.fdef, parsed.env)
        recs = {n: {p: (lf, sub) for p, lf, sub in fields} for n, fields in records.items()}
        recs.update({n: f for n, (f, _) in made.items()})
        _, used = with_record_fields(fdef, recs)
        cache[key] = used
    return used


def bind_record(name, v, fields, used, values, specs, host_array):
    # host_array: (NumPy storage, element type, is complex) of an array (host._host_array_kind)
    """One buffer per field the kernel names, each a strided view of ``v`` (written back into
    it after the launch, as every array argument is); a record scalar is a one-element copy."""
    if not isinstance(v, (np.ndarray, np.void)):        # a device array of records: its NumPy storage
        v = v._host
    if isinstance(v, np.void):      # one record: a one-element copy, written back after the launch
        values[name] = (v, np.array([v]), None)
        v = values[name][1]
    elif v.size == 0:
        raise KernelLaunchError(f"argument {name!r} is empty (shape {v.shape})")
    else:
        values[name] = (v, None, None)
    specs.append(F.ArgSpec(name, "record", None, v.ndim if values[name][1] is None else 0, value=fields))
    for path, leaf, sub in fields:
        if leaf is not None and leaf in used:
            view = field_view(v, path)
            a, t, cplx = host_array(view, leaf)
            values[leaf] = (view, a, t)
            # a complex field: its real-part storage (complexarg.py), bound as a complex array
            specs.append(F.ArgSpec(leaf, "buffer", t, a.ndim if cplx else view.ndim, value="complex" if cplx else None))


def write_back_records(data: dict):
    """After a launch: record scalars get their copies' fields (Numba passes records by reference)."""
    for v, arr, _ in data.values():
        if isinstance(v, np.void) and arr is not None:
            for f in arr.dtype.names:
                v[f] = arr[f][0]


def record_matches(spec, at) -> bool:
    """Whether record argument ``spec`` fits Numba type ``at`` of a declared signature (a
    ``Record`` for a record, an array of one for a record array, of the same fields)."""
    from . import nbtypes as nbt
    scalar = any(p == () for p, _, _ in spec.value)
    if scalar:
        rec = at
    elif isinstance(at, nbt.Array) and at.ndim == spec.ndim:
        rec = at.dtype
    else:
        return False
    if not isinstance(rec, nbt.Record):
        return False
    want = [(p, sub) for p, _, sub in spec.value if p != ()]
    return [(p, sub) for p, _, sub in record_leaves(spec.name, rec.dtype)] == want


def check_record_alignment(at, kernel: str):
    """A declared signature's record type (or array of one) whose fields are not at multiples
    of their alignment is refused, as Numba's CUDA target refuses it at compile time."""
    from . import nbtypes as nbt
    rec = at.dtype if isinstance(at, nbt.Array) else at
    if isinstance(rec, nbt.Record):
        bad = _misaligned(rec.dtype)
        if bad is not None:
            raise KernelTypeError(f"@cuda.jit kernel {kernel}: type {bad} is not aligned (record {rec.dtype})",
                                  hint="build the dtype with np.dtype([...], align=True)")


def _misaligned(dtype: np.dtype, base: int = 0):
    for f in dtype.names:
        ft, off = dtype.fields[f][:2]
        elem = ft.subdtype[0] if ft.subdtype is not None else ft
        if elem.names is not None:
            bad = _misaligned(elem, base + off)
            if bad is not None:
                return bad
        elif (base + off) % elem.alignment:
            return elem.name
    return None
