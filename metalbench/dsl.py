"""The kernel author's vocabulary: ``from metalbench.dsl import *``.

These objects only have meaning inside an ``@mb.kernel`` or ``@mb.func`` body, where
the front end recognises them; called from ordinary Python they raise. Names are
Metal's, and ``help(name)`` shows each one's entry in the builtin registry (the same
text as ``docs/language.md``)::

    from metalbench.dsl import *

    @mb.kernel
    def add(x, y, out: mb.Out):
        i = thread_position_in_grid.x
        if i < x.size:
            out[i] = x[i] + y[i]

    >>> print(simd_sum.__doc__.splitlines()[0])
    simd_sum(x: T) -> T
"""
from __future__ import annotations

import builtins as _py

from . import types as _T
from .builtins import registry as _registry
from .builtins.attributes import ATTRIBUTES as _ATTRS
from .builtins.attributes import CONSTANTS as _CONSTS
from .ir import THREAD_ATTRIBUTES


class _Doc:
    """The class docstring on the class, the object's own entry on an instance (what
    ``help(obj)`` shows)."""

    def __init__(self, text: str):
        self.text = text

    def __get__(self, obj, cls=None):
        return self.text if obj is None else obj._entry()


class DSLObject:
    """Base of every placeholder: usable only inside a kernel body."""

    __doc__ = _Doc("Base of every placeholder: usable only inside a kernel body.")
    dsl_kind = "object"

    def __init__(self, name: str):
        self.dsl_name = name

    def _entry(self) -> str:
        return f"{self.dsl_name}: usable only inside an @mb.kernel or @mb.func body."

    def __repr__(self) -> str:
        return f"<metalbench.dsl {self.dsl_name}>"

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self.dsl_name}() can only be used inside an @mb.kernel or @mb.func body")


class ThreadAttribute(DSLObject):
    """A Metal thread attribute such as ``thread_position_in_grid`` (``.x``, ``.y``, ``.z``)."""

    __doc__ = _Doc("A Metal thread attribute such as thread_position_in_grid (.x, .y, .z).")
    dsl_kind = "attr"

    def _entry(self) -> str:
        ty, doc = _ATTRS[self.dsl_name]
        comps = " Components: .x, .y, .z." if ty == "uint3" else ""
        return (f"{self.dsl_name}: {ty}\n\n{doc}{comps}\n\nExample:  i = thread_position_in_grid.x\n\n"
                "Usable only inside a kernel body (pass it to @mb.func functions as an argument).")

    def __getattr__(self, item):
        if item.startswith("__"):
            raise AttributeError(item)
        raise RuntimeError(f"{self.dsl_name}.{item} can only be used inside an @mb.kernel body")


class Builtin(DSLObject):
    """A builtin function (math, SIMD-group, atomics, barriers, arrays)."""

    __doc__ = _Doc("A builtin function (math, SIMD-group, atomics, barriers, arrays).")
    dsl_kind = "builtin"

    def _entry(self) -> str:
        b = _registry.lookup(self.dsl_name, dialect="python")
        return b.help_text() if b is not None else super()._entry()


class DType(DSLObject):
    """A scalar type; calling it inside a kernel converts (``float32(x)``)."""

    __doc__ = _Doc("A scalar type; calling it inside a kernel converts (float32(x)).")
    dsl_kind = "dtype"

    def __init__(self, t: _T.ScalarType):
        super().__init__(t.name)
        self.type = t

    def _entry(self) -> str:
        t = self.type
        return (f"{self.dsl_name}: the {t.name} type (Metal {t.msl}, CUDA {t.cuda}).\n\n"
                f"{self.dsl_name}(x) converts x as C does: float to integer truncates toward zero "
                "(saturating; NaN gives 0), integer to integer wraps around.\n"
                f"As a dtype: threadgroup_array(256, {self.dsl_name}), mb.Out(dtype={self.dsl_name}).\n\n"
                f"Example:  v = {self.dsl_name}(x[i])")


class MatrixDType(DSLObject):
    """A SIMD-group matrix type (``simdgroup_float8x8``): calling it makes a matrix."""

    __doc__ = _Doc("A SIMD-group matrix type (simdgroup_float8x8): calling it makes a matrix.")
    dsl_kind = "matrix"

    def __init__(self, t: _T.MatrixType):
        super().__init__(t.name)
        self.matrix_type = t

    def _entry(self) -> str:
        t = self.matrix_type
        return (f"{self.dsl_name}: an 8x8 matrix of {t.elem.msl} held by the 32 threads of a SIMD-group "
                "(Metal's simdgroup_matrix<" + t.elem.msl + ", 8, 8>).\n\n"
                f"{self.dsl_name}(v) puts v on the diagonal, 0 elsewhere; {self.dsl_name}() is all zeros. "
                "Load, multiply and store with simdgroup_load, simdgroup_multiply_accumulate and "
                f"simdgroup_store; local_array(n, {self.dsl_name}) holds several.\n\n"
                f"Example:  acc = {self.dsl_name}(0)")


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

_CALLS = [b.name for b in _registry.all() if b.kind in ("call", "simd")]
metal = Namespace("metal", _CALLS)
metal.precise = Namespace("metal.precise", [b.name for b in _registry.all() if "precise" in b.namespaces])
metal.fast = Namespace("metal.fast", [b.name for b in _registry.all() if "fast" in b.namespaces])

# Python's own min/max/abs/round/pow keep working in the notebook after
# `from metalbench.dsl import *`; inside kernels the front end maps them to Metal's.
_FUNCS = [b.name for b in _registry.all() if not hasattr(_py, b.name)]
for _name in _FUNCS:
    globals()[_name] = Builtin(_name)

for _t in _T.ALL_SCALARS:
    if _t.name != "bool":
        globals()[_t.name] = DType(_t)
bool_ = DType(_T.bool_)
half = DType(_T.float16)
bfloat = DType(_T.bfloat16)
uint = DType(_T.uint32)

# Vector types (float4(x, y, z, w), int2(...), half3(...)): their Metal names, which the
# front end reads as constructors, dtypes and casts.
for _name in _T.VECTORS:
    globals()[_name] = _name

# SIMD-group matrix types (simdgroup_float8x8(0), local_array(4, simdgroup_half8x8)).
for _name, _mt in _T.MATRICES.items():
    globals()[_name] = MatrixDType(_mt)


class MemFlags(tuple):
    """A set of Metal ``mem_flags``: ``mem_flags.mem_device | mem_flags.mem_threadgroup``.

        >>> mem_flags.mem_device | mem_flags.mem_threadgroup
        mem_flags.mem_device | mem_flags.mem_threadgroup
    """

    def __or__(self, other):
        names = tuple(self) + ((other,) if isinstance(other, str) else tuple(other))
        return MemFlags(dict.fromkeys(f for f in names if f != "mem_none")) or MemFlags(("mem_none",))

    __ror__ = __or__

    def __repr__(self):
        return " | ".join(f"mem_flags.{f}" for f in self)


class MemFlag(str):
    """One of Metal's ``mem_flags`` (a string: ``mem_flags.mem_device == "mem_device"``)."""

    def __or__(self, other):
        return MemFlags((str(self),)) | other

    def __ror__(self, other):
        return MemFlags((other,) if isinstance(other, str) else tuple(other)) | MemFlags((str(self),))

    def __repr__(self):
        return f"mem_flags.{str.__str__(self)}"


class _MemFlagsEnum:
    """Metal's ``mem_flags``: ``threadgroup_barrier(mem_flags.mem_threadgroup)``; combine with ``|``."""
    mem_none = MemFlag("mem_none")
    mem_device = MemFlag("mem_device")
    mem_threadgroup = MemFlag("mem_threadgroup")
    mem_texture = MemFlag("mem_texture")

    def __repr__(self):
        return "mem_flags"


# Metal's mem_flags, for threadgroup_barrier(mem_flags.mem_device) and friends; the bare
# names too (threadgroup_barrier(mem_device)).
mem_flags = _MemFlagsEnum()
mem_none = mem_flags.mem_none
mem_device = mem_flags.mem_device
mem_threadgroup = mem_flags.mem_threadgroup
mem_texture = mem_flags.mem_texture

# atomic_thread_fence's memory orders and thread scopes (Metal's enumerators)
_FENCE_WORDS = ["memory_order_relaxed", "memory_order_acquire", "memory_order_release", "memory_order_acq_rel",
                "memory_order_seq_cst", "thread_scope_device", "thread_scope_threadgroup", "thread_scope_simdgroup"]
for _name in _FENCE_WORDS:
    globals()[_name] = _name

# Metal's float constants (INFINITY, NAN, M_PI_F, ...): plain floats, so they are
# compile-time float32 constants in a kernel and ordinary numbers outside.
for _name, (_value, _doc) in _CONSTS.items():
    globals()[_name] = _value

__all__ = (list(THREAD_ATTRIBUTES) + _FUNCS + [t.name for t in _T.ALL_SCALARS] + list(_CONSTS) + list(_T.VECTORS)
           + list(_T.MATRICES) + ["metal", "bool_", "half", "bfloat", "uint", "mem_flags", "mem_none", "mem_device",
              "mem_threadgroup", "mem_texture"] + _FENCE_WORDS)
__all__ = [n for n in dict.fromkeys(__all__) if n != "bool"]
