"""The kernel author's vocabulary: ``from metalbench.dsl import *``.

These objects only have meaning inside an ``@mb.kernel`` or ``@mb.func`` body, where
the front end recognises them; called from ordinary Python they raise. Names are
Metal's::

    from metalbench.dsl import *

    @mb.kernel
    def add(x, y, out: mb.Out):
        i = thread_position_in_grid.x
        if i < x.size:
            out[i] = x[i] + y[i]
"""
from __future__ import annotations

from . import builtins as _B
from . import types as _T
from .ir import THREAD_ATTRIBUTES


class DSLObject:
    """Base of every placeholder: usable only inside a kernel body."""

    dsl_kind = "object"

    def __init__(self, name: str):
        self.dsl_name = name

    def __repr__(self) -> str:
        return f"<metalbench.dsl {self.dsl_name}>"

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self.dsl_name}() can only be used inside an @mb.kernel or @mb.func body")


class ThreadAttribute(DSLObject):
    """A Metal thread attribute such as ``thread_position_in_grid`` (``.x``, ``.y``, ``.z``)."""

    dsl_kind = "attr"

    def __getattr__(self, item):
        if item.startswith("__"):
            raise AttributeError(item)
        raise RuntimeError(f"{self.dsl_name}.{item} can only be used inside an @mb.kernel body")


class Builtin(DSLObject):
    """A builtin function (math, SIMD-group, atomics, barriers, arrays)."""

    dsl_kind = "builtin"


class DType(DSLObject):
    """A scalar type; calling it inside a kernel converts (``float32(x)``)."""

    dsl_kind = "dtype"

    def __init__(self, t: _T.ScalarType):
        super().__init__(t.name)
        self.type = t


class Namespace:
    """``metal.exp``, ``metal.precise.exp``, ``metal.fast.exp``: Metal's math namespaces."""

    def __init__(self, name: str, names):
        self._name = name
        for n in names:
            setattr(self, n, Builtin(n))

    def __repr__(self) -> str:
        return f"<metalbench.dsl namespace {self._name}>"


for _name in THREAD_ATTRIBUTES:
    globals()[_name] = ThreadAttribute(_name)

_MATH = list(_B.MATH1) + list(_B.MATH2) + list(_B.MATH3) + list(_B.NUMERIC) + list(_B.PREDICATES) \
    + list(_B.INTBITS)
metal = Namespace("metal", _MATH)
metal.precise = Namespace("metal.precise", _MATH)
metal.fast = Namespace("metal.fast", _MATH)

_FUNCS = sorted(_B.SIMD) + list(_B.ATOMICS) + [
    "threadgroup_array", "local_array", "threadgroup_barrier", "simdgroup_barrier",
    "select"] + _MATH
import builtins as _py
# Python's own min/max/abs/round/pow keep working in the notebook after
# `from metalbench.dsl import *`; inside kernels the front end maps them to Metal's.
_FUNCS = [n for n in dict.fromkeys(_FUNCS) if not hasattr(_py, n)]
for _name in _FUNCS:
    globals()[_name] = Builtin(_name)

for _t in _T.SCALARS:
    if _t.name != "bool":
        globals()[_t.name] = DType(_t)
bool_ = DType(_T.bool_)
half = DType(_T.float16)
bfloat = DType(_T.bfloat16)
uint = DType(_T.uint32)

# Metal's mem_flags, for threadgroup_barrier(mem_device) and friends.
mem_none = "mem_none"
mem_device = "mem_device"
mem_threadgroup = "mem_threadgroup"
mem_texture = "mem_texture"

__all__ = (list(THREAD_ATTRIBUTES) + _FUNCS + [t.name for t in _T.SCALARS]
           + ["metal", "bool_", "half", "bfloat", "uint", "mem_none", "mem_device",
              "mem_threadgroup", "mem_texture"])
__all__ = [n for n in dict.fromkeys(__all__) if n != "bool"]
