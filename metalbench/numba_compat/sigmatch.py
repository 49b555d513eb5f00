"""Matching ``@cuda.jit(sig)`` signatures against a launch's argument specs, and the leaf
structure of tuple arguments (split out of :mod:`metalbench.numba_compat.host`).

>>> from metalbench.numba_compat.sigmatch import _tuple_structure
>>> leaves = []
>>> _tuple_structure("t", (1, (2.0, 3)), leaves)
(('t__0', (('t__1_0', 't__1_1'), None)), None)
"""
from __future__ import annotations

from ..errors import KernelLaunchError
from . import nbtypes as nbt
from .complexarg import matches_complex
from .record_args import record_matches


def _tuple_structure(name: str, v: tuple, leaves: list, path=()):
    """``(items, field names)`` of a tuple argument, items being leaf parameter names
    (``name__0``, ``name__1_0`` ...) or nested structures; appends (leaf, value) to ``leaves``."""
    items = []
    for k, x in enumerate(v):
        p = path + (k,)
        if isinstance(x, tuple):
            items.append(_tuple_structure(name, x, leaves, p))
        else:       # a number, or an array (a buffer parameter of its own)
            leaf = f"{name}__{'_'.join(map(str, p))}"
            leaves.append((leaf, x))
            items.append(leaf)
    return tuple(items), (tuple(v._fields) if hasattr(v, "_fields") else None)


class SignatureMismatch(KernelLaunchError, TypeError):
    """No declared signature of a ``@cuda.jit(sig)`` kernel fits the arguments (Numba
    raises a TypeError here)."""


def _match(sig, specs):
    """How well ``specs`` fit Numba signature ``sig``: None if not at all, else a score
    (0: exact; more: scalars converted)."""
    score = 0
    specs = [s for s in specs if not ("__" in s.name and s.name.split("__")[0] in
                                      {t.name for t in specs if t.kind in ("tuple", "record", "complex")})]
    for spec, at in zip(specs, sig.args):
        if spec.kind == "record":
            if not record_matches(spec, at):
                return None
            continue
        if spec.kind == "complex" or isinstance(at, nbt.Complex):
            if spec.kind != "complex" or not isinstance(at, nbt.Complex):
                return None
            score += nbt.scalar_of(at.underlying_float) != spec.type
            continue
        if spec.kind == "tuple":
            if not isinstance(at, nbt.BaseTuple):
                return None
            continue
        if isinstance(at, nbt.Array) and isinstance(at.dtype, nbt.Complex):
            if not matches_complex(spec, nbt.scalar_of(at.dtype.underlying_float), at.ndim):
                return None
        elif isinstance(at, nbt.Array):
            t = nbt.scalar_of(at.dtype)
            if spec.kind != "buffer" or t != spec.type or at.ndim != spec.ndim or spec.value == "complex":
                return None
        else:
            t = nbt.scalar_of(at)
            if spec.kind != "scalar" or t is None:
                return None
            if t != spec.type:
                if spec.type.is_float and not t.is_float:
                    return None
                score += 1
    return score


def sign_reinterpret(sig, specs, values):
    """A kernel with exactly one declared signature: Numba launches it without checking
    the arrays' dtypes, and the kernel reads their bytes as declared. Here that holds for
    integer arrays that differ from the signature in signedness only (same values below
    2**(bits-1), two's complement above): they are retyped as views of the caller's
    storage. Returns ``(0, sig)`` when that makes the arguments fit, else None (the
    mismatch error stands).

    >>> import numpy as np
    >>> from metalbench.frontend.python import ArgSpec
    >>> from metalbench import types as T
    >>> a = np.arange(4, dtype=np.uint32)
    >>> specs, values = [ArgSpec("a", "buffer", T.uint32, 1)], {"a": (a, a, T.uint32)}
    >>> sign_reinterpret(nbt.void(nbt.int32[:]), specs, values)[0], specs[0].type.name, values["a"][1].dtype
    (0, 'int32', dtype('int32'))
    """
    import numpy as np
    from dataclasses import replace
    trial, changed = list(specs), []
    for k, (spec, at) in enumerate(zip(specs, sig.args)):
        if spec.kind != "buffer" or not isinstance(at, nbt.Array) or spec.value is not None:
            continue
        t = nbt.scalar_of(at.dtype)
        if t is not None and t != spec.type and t.is_int and spec.type.is_int and t.bits == spec.type.bits \
                and at.ndim == spec.ndim and isinstance(values[spec.name][1], np.ndarray):
            trial[k] = replace(spec, type=t)
            changed.append(k)
    if not changed or _match(sig, trial) is None:
        return None
    for k in changed:
        specs[k] = trial[k]
        v, a, _ = values[specs[k].name]
        values[specs[k].name] = (v, a.view(specs[k].type.np), specs[k].type)
    return 0, sig


def as_bound_type(storage, t):
    """``(NumPy storage, type)`` of an argument as the bound launch typed it: a same-size
    integer array of the other signedness is viewed as ``t`` (see :func:`sign_reinterpret`)."""
    a, ta = storage
    if ta == t or t is None or not (ta.is_int and t.is_int and ta.bits == t.bits):
        return a, ta
    return a.view(t.np), t
