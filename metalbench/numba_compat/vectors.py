"""CUDA's built-in vector types as Numba exposes them: ``cuda.float32x4``, ``cuda.int16x2``,
... (``<base>x<n>`` for the ten integer and float bases and n = 1..4) and their C aliases
(``cuda.float4``, ``cuda.short2``, ``cuda.double3``, ``cuda.ulonglong1`` ...).

Inside a kernel or device function a constructor call builds a vector value from scalars
and smaller vectors of the same base whose elements add up to ``n`` (``float32x4(v2, z, w)``);
each element converts to the base type as C's cast does. Its components are read as
``.x``, ``.y``, ``.z``, ``.w``. A vector value is a compile-time tuple of its components
(:class:`~metalbench.semantics.TupleValue` with field names), so it lives in locals, loops
over tuples of vectors unroll, and device functions take and return it::

    >>> from metalbench import cuda
    >>> import numpy as np
    >>> @cuda.jit
    ... def k(out):
    ...     v = cuda.float32x2(1.5, 2)
    ...     w = cuda.float32x3(v, 7)
    ...     out[0] = w.x + w.y + w.z
    >>> out = np.zeros(1, np.float32)
    >>> k[1, 1](out); out
    array([10.5], dtype=float32)
    >>> cuda.float4 is cuda.float32x4
    True
"""
from __future__ import annotations

import itertools

import numpy as np

from ..errors import KernelTypeError
from ..semantics import TupleValue
from ..semantics.tuples import flatten
from . import nbtypes
from .intrinsics import _Placeholder

ATTRS = ("x", "y", "z", "w")
BASES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64")
# C's names for the bases (numba-cuda's aliases: long is 64-bit as on Linux)
C_ALIASES = {"char": "int8", "short": "int16", "int": "int32", "long": "int64", "longlong": "int64",
             "uchar": "uint8", "ushort": "uint16", "uint": "uint32", "ulong": "uint64", "ulonglong": "uint64",
             "float": "float32", "double": "float64"}


class VectorType(_Placeholder):
    """One vector type (``float32x4``): the constructor in kernels, and the descriptor
    numba-cuda's ``vector_types`` table gives (``name``, ``base_type``, ``num_elements``,
    ``user_facing_object``, ``aliases``)."""

    def __init__(self, base: str, n: int):
        self.name = f"{base}x{n}"
        self._what = self.name
        self.base_type = getattr(nbtypes, base)
        self.num_elements = n
        self.attr_names = ATTRS[:n]
        self.aliases: list[str] = []

    @property
    def user_facing_object(self):
        return self

    def is_value(self, v) -> bool:
        return isinstance(v, TupleValue) and isinstance(v.cls, VectorType)

    def __metalbench_intrinsic__(self, tr, call):
        if call.keywords:
            raise tr.err(KernelTypeError, f"cuda.{self.name}() takes its components positionally", call)
        sp = tr.span(call)
        elems = []
        for a in call.args:
            v = tr.value_or_tuple(a)
            if isinstance(v, TupleValue):
                if not (isinstance(v.cls, VectorType) and v.cls.base_type == self.base_type):
                    raise tr.err(KernelTypeError, f"cuda.{self.name}() takes {self.base_type} values and "
                                                  f"{self.base_type} vectors, not a {v.type.name}", a)
                elems.extend(flatten(v))
            else:
                elems.append(v)
        if len(elems) != self.num_elements:
            raise tr.err(KernelTypeError, f"cuda.{self.name}() needs {self.num_elements} elements in all, "
                                          f"got {len(elems)}", call)
        t = self.base_type.__metalbench_dtype__
        items = [tr.sem.cast(t, e, sp) for e in elems]
        return TupleValue(items, names=self.attr_names, cls=self, span=sp)

    def __repr__(self) -> str:
        return f"<metalbench.cuda vector type {self.name}>"


def _make():
    table = {}
    for base, n in itertools.product(BASES, (1, 2, 3, 4)):
        table[f"{base}x{n}"] = VectorType(base, n)
    aliases = {}
    for alias, base in C_ALIASES.items():
        for n in (1, 2, 3, 4):
            vt = table[f"{base}x{n}"]
            vt.aliases.append(f"{alias}{n}")
            aliases[f"{alias}{n}"] = vt
    return table, aliases


vector_types, vector_aliases = _make()
# every name and alias, for ``cuda.<name>``
all_names = {**vector_types, **vector_aliases}

assert np.dtype(np.intc).itemsize == 4  # the aliases above assume C's int is 32-bit
