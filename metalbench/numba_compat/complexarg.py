"""Complex array arguments of ``cuda.jit`` kernels (issue 14).

A complex64/complex128 array reaches the kernel as its storage read as the real type
(float32/float64) with a trailing dimension of 2 (real part, imaginary part), sharing the
caller's memory, so the kernel's writes land in the caller's array. Its buffer spec is
marked ``value="complex"``; the Python front end binds it so that only ``z.real`` and
``z.imag`` (strided views, as in NumPy) can use it, and any other use is an error at its
line -- complex values themselves are not supported yet.

    >>> import numpy as np
    >>> z = np.array([1 + 2j, 3 - 4j], dtype=np.complex64)
    >>> s, t = complex_storage(z, "z")
    >>> s.tolist(), t.name, np.shares_memory(s, z)
    ([[1.0, 2.0], [3.0, -4.0]], 'float32', True)
    >>> rec = np.zeros(2, [("a", np.int8), ("c", np.complex64)]); rec["c"] = [1j, 2 + 3j]
    >>> complex_storage(rec["c"], "c")[0].tolist()          # a strided view, not a copy
    [[0.0, 1.0], [2.0, 3.0]]
"""
from __future__ import annotations

import numpy as np

from .. import types as T
from ..errors import KernelLaunchError


def complex_storage(a: np.ndarray, name: str):
    """(``a``'s storage as real parts with a trailing 2, its ScalarType) for complex ``a``."""
    real = np.dtype(a.dtype.char.lower())       # F -> f (complex64 -> float32), D -> d, G -> g
    try:
        t = T.from_numpy(real)
    except T.TypeError_:
        raise KernelLaunchError(f"array argument {name!r}: dtype {a.dtype} is not supported; use complex64 "
                                "or complex128", hint=f"for example {name}.astype(np.complex128)")
    try:
        return a.view(real).reshape(a.shape + (2,)), t
    except ValueError:
        # a strided complex view (a record's complex field, z[::2]): the same bytes read with
        # the view's strides and the two parts one real apart
        return np.lib.stride_tricks.as_strided(a.real, shape=a.shape + (2,), strides=a.strides + (real.itemsize,)), t


def refuse_complex(sp, backend: str, values: dict) -> None:
    """On the GPU backends a complex array argument must be a NumPy array (its real-part
    storage goes to MLX and the merged result back into it); complex device arrays and
    mx.arrays there are an error naming the argument."""
    names = [s.name for s in getattr(sp, "specs", ()) if s.kind == "buffer" and s.value == "complex"
             and not isinstance(values[s.name][0], np.ndarray)]
    if names:
        raise KernelLaunchError(f"complex array argument(s) {', '.join(map(repr, names))}: on backend {backend!r} "
                                "complex arrays are passed as NumPy arrays (device arrays and mx.arrays of "
                                "complex numbers run only on backend 'sim' so far)",
                                hint="pass the NumPy array (copy_to_host() of a device array), or run on the "
                                     "simulator")


def matches_complex(spec, real_type, ndim: int) -> bool:
    """Whether buffer ``spec`` is a complex array of ``ndim`` dimensions whose parts are
    ``real_type`` (a declared ``complex64[:]`` signature argument)."""
    return spec.kind == "buffer" and spec.value == "complex" and spec.type == real_type and spec.ndim == ndim + 1


def spec_text(s) -> str:
    """An argument as a signature-mismatch error shows it: ``float32``, ``complex64[:, :]``."""
    if s.kind != "buffer":
        return s.type.name if s.type is not None else s.kind
    if s.value == "complex":
        return f"complex{2 * s.type.np.itemsize * 8}[{', '.join(':' * (s.ndim - 1))}]"
    return f"{s.type.name}[{', '.join(':' * s.ndim)}]"


def bind_complex_scalar(name: str, v, values: dict, specs: list) -> None:
    """A complex number argument: a ``complex`` spec naming its parts, two scalar
    parameters ``name__re``/``name__im`` (float64 for Python's complex, as
    ``numba.typeof``; the NumPy scalar's part type otherwise)."""
    from ..frontend.python import ArgSpec
    t = T.float32 if isinstance(v, np.complex64) else T.float64
    parts = (f"{name}__re", f"{name}__im")
    values[name] = (v, None, None)
    specs.append(ArgSpec(name, "complex", t, 0, value=parts))
    for leaf, x in zip(parts, (v.real, v.imag)):
        values[leaf] = (x, None, t)
        specs.append(ArgSpec(leaf, "scalar", t, 0))


def declare_complex_scalars(sig, specs: list, values: dict) -> None:
    """With a declared signature, complex scalar arguments take its precision."""
    from . import nbtypes as nbt
    from ..frontend.python import ArgSpec
    top = [s for s in specs if not ("__" in s.name and s.name.split("__")[0] in
                                    {t.name for t in specs if t.kind in ("tuple", "record", "complex")})]
    for spec, at in zip(top, sig.args):
        if spec.kind != "complex" or not isinstance(at, nbt.Complex):
            continue
        t = nbt.scalar_of(at.underlying_float)
        for k, s in enumerate(specs):
            if s.name == spec.name:
                specs[k] = ArgSpec(s.name, "complex", t, 0, value=s.value)
            elif s.name in spec.value:
                specs[k] = ArgSpec(s.name, "scalar", t, 0)
                values[s.name] = (values[s.name][0], None, t)


def refuse_metal_library(kernel_ir) -> None:
    """On Metal: a kernel calling the cmath library (frontend/python/cmathlib.py, which
    computes in float64) is an error at the user's call, naming it."""
    from .. import ir
    from ..errors import KernelTypeError
    by_name = {f.name: f for f in kernel_ir.functions}
    for n in ir.walk(kernel_ir.body + [s for f in kernel_ir.functions if not getattr(f, "library_name", None)
                                       for s in f.body]):
        f = by_name.get(n.func) if isinstance(n, ir.FuncCall) else None
        if f is not None and getattr(f, "library_name", None):
            raise KernelTypeError(f"{f.library_name} computes in float64, and Metal has no double (float64)", n.span,
                                  hint="complex64 arithmetic (+ - * / abs, conjugate, constant integer powers) runs "
                                       "on Metal as float pairs; run cmath functions on backend='sim' or 'cuda'")
