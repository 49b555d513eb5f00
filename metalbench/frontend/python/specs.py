"""What a DSL kernel's parameters and names are bound to during translation: the
``mb.Out`` and ``mb.constexpr`` markers, per-specialisation :class:`ArgSpec`,
indexable buffers (:class:`BufInfo`), name bindings, and dtype resolution::

    >>> resolve_dtype("half").name, resolve_dtype(float).name
    ('float16', 'float32')
"""
from __future__ import annotations

import builtins as _pybuiltins
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import dsl
from ... import ir
from ... import types as T
from ...semantics import DSL, RuleSet


class OutSpec:
    """Marks a kernel parameter as an output: ``out: mb.Out`` or
    ``out: mb.Out(shape=(n, m), dtype=mb.float16)``.

    ``shape`` may be a tuple, the name of another argument (same shape as it), or a
    callable receiving the call's arguments by name. Shape and dtype default to the
    first array argument's.
    """

    def __init__(self, shape=None, dtype=None):
        self.shape = shape
        self.dtype = dtype

    def __call__(self, shape=None, dtype=None) -> "OutSpec":
        return OutSpec(shape, dtype)

    def __repr__(self) -> str:
        return f"mb.Out(shape={self.shape!r}, dtype={self.dtype!r})"


class ConstExpr:
    """Marks a compile-time parameter (``TILE: mb.constexpr = 16``), specialised on its
    value and sweepable like Triton's ``tl.constexpr``."""

    def __getitem__(self, item):
        return self

    def __repr__(self) -> str:
        return "mb.constexpr"


Out = OutSpec()


constexpr = ConstExpr()


@dataclass
class ArgSpec:
    """How one kernel parameter is specialised: a device buffer, a scalar or a constexpr."""
    name: str
    kind: str                      # "buffer", "scalar", "constexpr"
    type: T.ScalarType | None = None
    ndim: int = 1
    is_output: bool = False
    value: Any = None              # constexpr value
    wide: bool = False             # a buffer of 2**31 elements or more: its shape and indices in 64 bits
    zero_d: bool = False           # a 0-d array (stored as one element): x[()] is that element


@dataclass
class BufInfo:
    """A buffer or array the body can index: a kernel buffer (``space="device"``), a
    threadgroup/thread array (static shape), or a device function's buffer parameter."""
    name: str
    elem: T.ScalarType
    space: str
    ndim: int
    shape: tuple | None = None     # static shape (arrays); None for device buffers
    kernel_param: ir.Param | None = None
    decl: ir.ArrayDecl | None = None
    # A view of the storage (frontend/python/views.py): ``x[i:]``, a row ``x[r]``,
    # ``x.view(float4)``. ``offset``: the first element, in ``elem`` units (None: 0);
    # ``vec``: the vector type one element is read as; ``dims``: the view's dimensions
    # as IR expressions, when they are not the buffer's own (``shape``/``x.shape``).
    offset: ir.Expr | None = None
    vec: Any = None
    dims: tuple | None = None
    # ``strides``: elements between neighbours along each dimension, when not row-major
    # (a slice with a step, a column slice ``a[:, j]``); IR expressions.
    strides: tuple | None = None
    # a kernel buffer of 2**31 elements or more: shape in int64, index arithmetic widened
    wide: bool = False
    # a complex array (complexes.py): ``name`` is its storage, real parts with a trailing
    # dimension of 2 that ``ndim``/``shape`` leave out; an element is the pair at 2*index
    cplx: bool = False
    # a datetime64/timedelta64 array of the Numba layer (int64 storage): (kind, unit)
    dt: tuple | None = None
    zero_d: bool = False           # a 0-d array stored as one element: x[()] reads and writes it

    @property
    def is_view(self) -> bool:
        return self.offset is not None or self.vec is not None or self.dims is not None or \
            self.strides is not None


@dataclass
class Binding:
    kind: str      # "var", "buf", "const", "pyobj"
    value: Any


class Module:
    """State shared by a kernel and the device functions it calls during one translation."""

    def __init__(self, kernel_name: str, rules: RuleSet = DSL):
        self.kernel_name = kernel_name
        self.rules = rules
        self.functions: dict[tuple, ir.Function] = {}
        self.order: list[ir.Function] = []
        self.in_progress: set = set()
        self.names: set[str] = set()
        # NumPy arrays of the enclosing Python scope read by the kernel: constant arrays
        # (KernelIR.globals), one per array object, as Numba captures them at compile time.
        self.globals: list[ir.ArrayDecl] = []
        self.global_arrays: dict[int, tuple] = {}

    def unique(self, base: str) -> str:
        name, i = base, 1
        while name in self.names:
            name = f"{base}_{i}"
            i += 1
        self.names.add(name)
        return name


_PY_CASTS = {_pybuiltins.float: T.float32, _pybuiltins.int: T.int32, _pybuiltins.bool: T.bool_}


def resolve_dtype(obj) -> T.ScalarType | None:
    """The ScalarType meant by ``obj``: a DSL dtype, a NumPy or MLX dtype, a type name,
    or Python's ``float``/``int``/``bool``."""
    if isinstance(obj, dsl.DType):
        return obj.type
    if isinstance(obj, T.ScalarType):
        return obj
    hook = getattr(obj, "__metalbench_dtype__", None)   # Numba's type objects (numba_compat.nbtypes)
    if isinstance(hook, T.ScalarType):
        return hook
    if obj in _PY_CASTS:
        return _PY_CASTS[obj]
    if isinstance(obj, str):
        try:
            t = T.lookup(obj)
            return t if isinstance(t, T.ScalarType) else None
        except KeyError:
            return None
    if type(obj).__module__.startswith("mlx"):
        try:
            return T.from_mlx(obj)
        except Exception:
            return None
    try:
        dt = np.dtype(obj)
    except Exception:
        return None
    if dt == np.float64:
        # Python's float type spells MSL's float; np.float64 / "float64" are float64
        return T.float32 if obj is float else T.float64
    try:
        return T.from_numpy(dt)
    except Exception:
        return None
