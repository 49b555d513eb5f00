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


def refuse_complex(sp, backend: str) -> None:
    """Complex array arguments run on the simulator only (the GPU launch paths move the
    caller's complex array, not its real-part storage): an error naming the argument."""
    names = [s.name for s in getattr(sp, "specs", ()) if s.kind == "buffer" and s.value == "complex"]
    if names:
        raise KernelLaunchError(f"complex array argument(s) {', '.join(map(repr, names))}: complex arrays run only "
                                f"on backend 'sim' so far, not {backend!r}",
                                hint="pass the real and imaginary parts as two float arrays (z.real.copy(), "
                                     "z.imag.copy()), or run on the simulator")


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
