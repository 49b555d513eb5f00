"""Numba's type objects, as ``from numba import float32, void`` and ``numba.types`` give
them: scalar types (``float32``, ``int64``, ``boolean``, ``intp``, ...), array types
(``float32[:]``, ``int32[:, ::1]``, ``types.Array(float32, 2, "C")``), tuples
(``types.UniTuple(int32, 2)``), ``none``/``void``, and signatures built by calling a type
(``void(float32[:], int32)``) or written as text (``"void(float32[:], int32)"``)::

    >>> sig = void(float32[:], int32)
    >>> sig.return_type, sig.args
    (none, (array(float32, 1d, A), int32))
    >>> parse_signature("float32(float32, int64)").args[1] is int64
    True
    >>> float32(1.5), int8(7)             # outside a kernel: the value as that NumPy type
    (np.float32(1.5), np.int8(7))

Inside a ``@cuda.jit`` body a scalar type converts (``uint32(x)``: C's conversion),
names a dtype (``cuda.local.array(4, float32)``), and can be passed to device functions,
which are specialised per call on it (as Numba does). Nothing here imports numba.
"""
from __future__ import annotations

import numpy as np

from .. import types as T


class Type:
    """Base of every Numba type object: compared and hashed by name; ``t[:]`` makes an
    array type, ``t(a, b)`` with type arguments a signature."""

    def __init__(self, name: str):
        self.name = name

    @property
    def key(self):
        return self.name

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other):
        return type(self) is type(other) and self.key == other.key

    def __hash__(self):
        return hash((type(self).__name__, self.key))

    def __getitem__(self, item) -> "Array":
        """``float32[:]``, ``float32[:, ::1]`` (C layout), ``float32[::1, :]`` (F layout)."""
        if not isinstance(item, tuple):
            item = (item,)
        if not all(isinstance(s, slice) for s in item):
            raise TypeError(f"{self}[...] takes slices: {self}[:], {self}[:, ::1]")
        nd = len(item)
        layout = "A"
        if item[-1].step == 1 and all(s.step is None for s in item[:-1]):
            layout = "C"
        elif nd > 1 and item[0].step == 1 and all(s.step is None for s in item[1:]):
            layout = "F"
        return Array(self, nd, layout)

    def __call__(self, *args):
        if args and all(isinstance(a, (Type, str)) for a in args):
            return Signature(self, tuple(_as_type(a) for a in args))
        if not args:
            return Signature(self, ())
        raise TypeError(f"{self}(...) takes types (to make a signature)")

    # Numba spells these on every type; ported code sometimes reads them.
    @property
    def is_precise(self):
        return True

    @property
    def mangling_args(self):
        return self.name, ()


class Dummy(Type):
    """A type that only has a name (``types.Dummy("x")``)."""


class Opaque(Dummy):
    pass


class NoneType(Type):
    """``types.none`` (also ``void``: a function that returns nothing)."""


class Omitted(Type):
    """An argument left at its default (``types.Omitted(value)``)."""

    def __init__(self, value):
        super().__init__(f"omitted(default={value!r})")
        self.value = value


class Number(Type):
    """A scalar: converts a value outside kernels, a Python value ``t(x)`` inside."""

    bitwidth = 0

    def __init__(self, name: str, mb: T.ScalarType | None):
        super().__init__(name)
        self._mb = mb

    @property
    def __metalbench_dtype__(self) -> T.ScalarType | None:
        """The metalbench ScalarType this type denotes (the front end's dtype hook)."""
        return self._mb

    def cast_python_value(self, value):
        return np.dtype(self.name).type(value)

    def __call__(self, *args):
        if len(args) == 1 and not isinstance(args[0], (Type, str)):
            return self.cast_python_value(args[0])
        return super().__call__(*args)

    def __lt__(self, other):
        if not isinstance(other, Number):
            return NotImplemented
        return (_KIND_ORDER[type(self)], self.bitwidth) < (_KIND_ORDER[type(other)], other.bitwidth)

    def __metalbench_intrinsic__(self, tr, call):
        """``float32(x)`` in a kernel: the conversion (see the front end's casts)."""
        if self._mb is None:
            raise tr.err(_type_error(), f"{self.name} values are not supported in kernels", call)
        return tr.cast_call(self._mb, call, self.name)


class Boolean(Number):
    bitwidth = 8

    def cast_python_value(self, value):
        return np.bool_(value)


class Integer(Number):
    def __init__(self, name: str, mb=None):
        super().__init__(name, mb or T.BY_NAME[name])
        self.bitwidth = self._mb.bits
        self.signed = self._mb.kind == "i"

    @classmethod
    def from_bitwidth(cls, bitwidth: int, signed: bool = True) -> "Integer":
        return globals()[f"{'' if signed else 'u'}int{bitwidth}"]

    @property
    def maxval(self):
        return int(np.iinfo(self.name).max)

    @property
    def minval(self):
        return int(np.iinfo(self.name).min)


class Float(Number):
    def __init__(self, name: str, mb=None):
        super().__init__(name, mb or T.BY_NAME[name])
        self.bitwidth = self._mb.bits

    def cast_python_value(self, value):
        if self.name == "bfloat16":
            return T.bfloat16.np.type(value)
        return super().cast_python_value(value)


class Complex(Number):
    def __init__(self, name: str, underlying_float: Float):
        super().__init__(name, None)
        self.underlying_float = underlying_float
        self.bitwidth = 2 * underlying_float.bitwidth

    @property
    def __metalbench_complex__(self):
        """The front end's complex type (a pair of floats: metalbench.semantics.complexval)."""
        from ..semantics import complex_type
        return complex_type(self.underlying_float._mb)

    def cast_python_value(self, value):
        return np.dtype(self.name).type(value)

    def __metalbench_intrinsic__(self, tr, call):
        """``complex64(x)`` in a kernel: the conversion."""
        return tr.complex_cast(self.__metalbench_complex__, call, False)


_KIND_ORDER = {Boolean: 0, Integer: 1, Float: 2, Complex: 3}


class Array(Type):
    """``types.Array(dtype, ndim, layout)``: what ``float32[:]`` makes."""

    def __init__(self, dtype, ndim: int, layout: str = "A", readonly: bool = False, aligned: bool = True):
        dtype = _as_type(dtype)
        if layout not in ("C", "F", "A"):
            raise ValueError(f"layout must be 'C', 'F' or 'A', not {layout!r}")
        self.dtype, self.ndim, self.layout, self.mutable = dtype, int(ndim), layout, not readonly
        self.aligned = aligned
        ro = "readonly " if readonly else ""
        super().__init__(f"{ro}array({dtype}, {ndim}d, {layout})")

    @property
    def key(self):
        return self.dtype, self.ndim, self.layout, self.mutable

    def copy(self, dtype=None, ndim=None, layout=None, readonly=None):
        return Array(self.dtype if dtype is None else dtype, self.ndim if ndim is None else ndim,
                     self.layout if layout is None else layout,
                     (not self.mutable) if readonly is None else readonly)

    @property
    def is_c_contig(self):
        return self.layout == "C" or (self.ndim <= 1 and self.layout in "CF")


class BaseTuple(Type):
    types: tuple = ()

    @property
    def count(self):
        return len(self.types)

    def __iter__(self):
        return iter(self.types)

    def __len__(self):
        return len(self.types)

    def __getitem__(self, i):
        if isinstance(i, slice) and i == slice(None):
            return Type.__getitem__(self, i)
        return self.types[i]


class UniTuple(BaseTuple):
    """``types.UniTuple(int32, 2)``: a tuple of ``count`` values of one type."""

    def __init__(self, dtype, count: int):
        self.dtype = _as_type(dtype)
        self.types = (self.dtype,) * int(count)
        super().__init__(f"UniTuple({self.dtype}, {count})")

    @property
    def key(self):
        return self.dtype, len(self.types)


class Tuple(BaseTuple):
    """``types.Tuple((int32, float32))`` (a ``UniTuple`` when all types are one)."""

    def __new__(cls, types=()):
        types = tuple(_as_type(t) for t in types)
        if types and all(t == types[0] for t in types):
            return UniTuple(types[0], len(types))
        return super().__new__(cls)

    def __init__(self, types=()):
        self.types = tuple(_as_type(t) for t in types)
        super().__init__(f"Tuple({', '.join(map(str, self.types))})")

    @property
    def key(self):
        return self.types


class NamedUniTuple(UniTuple):
    def __init__(self, dtype, count, cls):
        super().__init__(dtype, count)
        self.instance_class = cls
        self.name = f"{cls.__name__}({', '.join(map(str, self.types))})"


class NamedTuple(Tuple):
    def __new__(cls, types, klass):
        return BaseTuple.__new__(cls)

    def __init__(self, types, cls):
        super().__init__(types)
        self.instance_class = cls
        self.name = f"{cls.__name__}({', '.join(map(str, self.types))})"


class Optional(Type):
    """``types.Optional(int64)``: a value that may be None."""

    def __init__(self, typ):
        self.type = _as_type(typ)
        super().__init__(f"OptionalType({self.type})")


class Literal(Type):
    def __init__(self, value):
        self.literal_value = value
        super().__init__(f"Literal[{type(value).__name__}]({value})")


class IntegerLiteral(Literal, Integer):
    def __init__(self, value):
        Literal.__init__(self, value)
        Integer.__init__(self, "int64")
        self.name = f"Literal[int]({value})"


class BooleanLiteral(Literal, Boolean):
    def __init__(self, value):
        Literal.__init__(self, value)
        Boolean.__init__(self, "bool", T.bool_)
        self.name = f"Literal[bool]({value})"


class StringLiteral(Literal):
    pass


class CPointer(Type):
    def __init__(self, dtype, addrspace=None):
        self.dtype = _as_type(dtype)
        super().__init__(f"{self.dtype}*")


class RawPointer(Opaque):
    pass


class Container(Type):
    def __init__(self, dtype, reflected=False, initial_value=None):
        self.dtype = _as_type(dtype)
        super().__init__(f"{type(self).__name__.lower()}({self.dtype})")


class List(Container):
    pass


class Set(Container):
    pass


class SliceType(Type):
    def __init__(self, name, members):
        super().__init__(name)
        self.members = members


class RangeType(Type):
    def __init__(self, dtype):
        self.dtype = dtype
        super().__init__(f"range_state_{dtype}")


class NPDatetime(Type):
    def __init__(self, unit=""):
        self.unit = unit
        super().__init__(f"datetime64[{unit}]" if unit else "datetime64")


class NPTimedelta(Type):
    def __init__(self, unit=""):
        self.unit = unit
        super().__init__(f"timedelta64[{unit}]" if unit else "timedelta64")


class Record(Type):
    """A NumPy structured dtype as a type (``from_dtype`` of a record dtype)."""

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)
        super().__init__(f"Record({self.dtype})")


class Signature:
    """``return_type(args...)``: what ``void(float32[:], int32)`` and
    ``parse_signature("void(float32[:], int32)")`` give."""

    def __init__(self, return_type, args=(), recvr=None, pysig=None):
        self.return_type = _as_type(return_type) if return_type is not None else None
        self.args = tuple(_as_type(a) for a in args)
        self.recvr, self.pysig = recvr, pysig

    def __repr__(self) -> str:
        return f"({', '.join(map(str, self.args))}) -> {self.return_type}"

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, Signature) and (self.return_type, self.args) == (other.return_type, other.args)

    def __hash__(self):
        return hash((self.return_type, self.args))


def signature(return_type, *args, **kws) -> Signature:
    """``numba.core.typing.signature``: ``signature(float32, float32, int32)``."""
    return Signature(return_type, args, kws.get("recvr"))


def _type_error():
    from ..errors import KernelTypeError
    return KernelTypeError


# ----------------------------------------------------------------------------- instances

pyobject = Opaque("pyobject")
ffi_forced_object = Opaque("ffi_forced_object")
ffi = Opaque("ffi")
none = NoneType("none")
void = none
ellipsis = Opaque("...")
Any = Dummy("any")
undefined = Dummy("undefined")
unknown = Dummy("unknown")
unicode_type = Opaque("unicode_type")
string = unicode_type
voidptr = RawPointer("void*")
optional = Optional
slice2_type = SliceType("slice<a:b>", 2)
slice3_type = SliceType("slice<a:b:c>", 3)

boolean = bool_ = Boolean("bool", T.bool_)
uint8, uint16, uint32, uint64 = (Integer(f"uint{n}") for n in (8, 16, 32, 64))
int8, int16, int32, int64 = (Integer(f"int{n}") for n in (8, 16, 32, 64))
byte = uchar = uint8
char = int8
short, ushort = int16, uint16
intp = ssize_t = int_ = long_ = longlong = int64
uintp = size_t = uint = ulong = ulonglong = uint64
intc, uintc = int32, uint32
float16 = half = Float("float16")
bfloat16 = Float("bfloat16")
float32 = float_ = Float("float32")
float64 = double = Float("float64")
complex64 = Complex("complex64", float32)
complex128 = Complex("complex128", float64)

range_state32_type = RangeType(int32)
range_state64_type = RangeType(int64)
unsigned_range_state64_type = RangeType(uint64)

signed_domain = frozenset([int8, int16, int32, int64])
unsigned_domain = frozenset([uint8, uint16, uint32, uint64])
integer_domain = signed_domain | unsigned_domain
real_domain = frozenset([float32, float64])
complex_domain = frozenset([complex64, complex128])
number_domain = real_domain | integer_domain | complex_domain

b1 = bool_
i1, i2, i4, i8 = int8, int16, int32, int64
u1, u2, u4, u8 = uint8, uint16, uint32, uint64
f2, f4, f8 = float16, float32, float64
c8, c16 = complex64, complex128

SCALAR_NAMES = ("boolean bool_ int8 int16 int32 int64 uint8 uint16 uint32 uint64 intp uintp intc uintc "
                "float16 float32 float64 complex64 complex128 double void byte char uchar short ushort "
                "int_ uint long_ ulong longlong ulonglong float_ b1 i1 i2 i4 i8 u1 u2 u4 u8 f2 f4 f8 "
                "c8 c16 none").split()
"""The names ``from numba import ...`` gives for types (exported by ``metalbench.cuda``)."""

_NP_TO_TYPE = {np.dtype(t.name): t for t in (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
                                             float16, float32, float64, complex64, complex128)}


def from_dtype(dtype) -> Type:
    """The Numba type of a NumPy dtype (``numpy_support.from_dtype``).

    >>> from_dtype(np.float32), from_dtype(np.dtype("i8"))
    (float32, int64)
    """
    dt = np.dtype(dtype)
    if dt.fields is not None:
        return Record(dt)
    if dt.kind == "M":
        return NPDatetime(np.datetime_data(dt)[0])
    if dt.kind == "m":
        return NPTimedelta(np.datetime_data(dt)[0])
    if dt in _NP_TO_TYPE:
        return _NP_TO_TYPE[dt]
    if dt == T.bfloat16.np:
        return bfloat16
    raise TypeError(f"dtype {dt} has no Numba type here")


def as_dtype(t) -> np.dtype:
    """The NumPy dtype of a Numba scalar type (``numpy_support.as_dtype``)."""
    if isinstance(t, Record):
        return t.dtype
    if isinstance(t, Number):
        return np.dtype(t.name) if t.name != "bfloat16" else T.bfloat16.np
    raise TypeError(f"{t} has no NumPy dtype")


def typeof(value) -> Type:
    """The Numba type of a Python value (``numba.typeof``): ``1`` -> int64, ``1.0`` ->
    float64, arrays -> ``array(dtype, ndim, layout)``, tuples -> (Uni)Tuple.

    >>> typeof(1), typeof(1.0), typeof(np.zeros((2, 3), np.float32))
    (int64, float64, array(float32, 2d, C))
    """
    if value is None:
        return none
    if isinstance(value, (bool, np.bool_)):
        return boolean
    if isinstance(value, int):
        return int64
    if isinstance(value, float):
        return float64
    if isinstance(value, complex):
        return complex128
    if isinstance(value, np.generic):
        return from_dtype(value.dtype)
    if isinstance(value, tuple):
        return Tuple([typeof(v) for v in value])
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        flags = getattr(value, "flags", None)
        layout = "A"
        if flags is not None:
            layout = "C" if flags.c_contiguous else ("F" if flags.f_contiguous else "A")
        elif len(shape) <= 1:
            layout = "C"
        return Array(from_dtype(dtype), len(shape), layout)
    raise ValueError(f"cannot determine the Numba type of {type(value).__name__}")


def _as_type(t):
    if isinstance(t, Type):
        return t
    if isinstance(t, str):
        return parse_type(t)
    if isinstance(t, np.dtype) or (isinstance(t, type) and issubclass(t, np.generic)):
        return from_dtype(t)
    raise TypeError(f"{t!r} is not a Numba type")


def _namespace() -> dict:
    ns = {k: v for k, v in globals().items() if isinstance(v, (Type, type)) and not k.startswith("_")}
    ns.update(types=_TypesView(), float=float64, int=int64, bool=boolean, complex=complex128)
    return ns


class _TypesView:
    """``types.x`` inside signature text."""

    def __getattr__(self, name):
        return globals()[name]


def parse_type(text: str) -> Type:
    """A Numba type from its text: ``"float32[:, ::1]"``, ``"int64"``, ``"UniTuple(int32, 2)"``."""
    try:
        t = eval(text, {"__builtins__": {}}, _namespace())
    except Exception as e:
        raise TypeError(f"cannot read the Numba type {text!r}: {e}") from None
    if not isinstance(t, Type):
        raise TypeError(f"{text!r} is not a Numba type")
    return t


def parse_signature(sig) -> Signature:
    """A :class:`Signature` from what ``cuda.jit`` takes: a signature, text such as
    ``"void(float32[:], int32)"`` or ``"(float32[:], int32)"`` (no return type), or a
    tuple of argument types.

    >>> parse_signature("(int32, float64[:])")
    (int32, array(float64, 1d, A)) -> None
    """
    if isinstance(sig, Signature):
        return sig
    if isinstance(sig, tuple):
        return Signature(None, sig)
    if isinstance(sig, str):
        try:
            v = eval(sig, {"__builtins__": {}}, _namespace())
        except Exception as e:
            raise TypeError(f"cannot read the signature {sig!r}: {e}") from None
        if isinstance(v, Signature):
            return v
        if isinstance(v, tuple):
            return Signature(None, v)
        if isinstance(v, Type):
            return Signature(None, (v,))
    raise TypeError(f"{sig!r} is not a signature: write it as 'void(float32[:], int32)' or "
                    "void(float32[:], int32)")


def is_signature(obj) -> bool:
    """Whether ``cuda.jit``'s first argument is a signature (or a list of them), not a function."""
    if isinstance(obj, (Signature, str)):
        return True
    if isinstance(obj, (list, tuple)):
        return all(isinstance(s, (Signature, str, tuple)) or isinstance(s, Type) for s in obj)
    return False


def scalar_of(t) -> T.ScalarType | None:
    """The metalbench scalar type of a Numba scalar type (None for other types).

    >>> scalar_of(float64).name, scalar_of(intp).name
    ('float64', 'int64')
    """
    return getattr(t, "__metalbench_dtype__", None) if isinstance(t, Number) else None


__all__ = [n for n in list(globals()) if not n.startswith("_") and n not in ("np", "T", "annotations")]
