"""Scalar and vector types, with their MSL, CUDA, NumPy and MLX names, and MSL's C rules.

Every backend reads its type names from here, so a type is defined once::

    >>> from metalbench.types import float16, int32, binary_result
    >>> float16.msl, float16.cuda, float16.np
    ('half', '__half', dtype('float16'))
    >>> binary_result(float16, int32).name      # half op int -> half, as in MSL
    'float16'
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class ScalarType:
    """A scalar type. ``rank`` orders integer conversion ranks (C) and float widths."""

    name: str          # metalbench / NumPy-style name: "float32"
    msl: str           # Metal name: "float"
    cuda: str          # CUDA name: "float"
    np: np.dtype
    kind: str          # "b" bool, "i" signed, "u" unsigned, "f" float
    bits: int
    rank: int

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind in "iu"

    @property
    def is_signed(self) -> bool:
        return self.kind in "if"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    @property
    def itemsize(self) -> int:
        return max(1, self.bits // 8)

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True)
class VectorType:
    """A Metal vector type such as ``float4`` or ``uint3`` (SIMD vectors, not arrays)."""

    elem: ScalarType
    n: int

    @property
    def name(self) -> str:
        # clang's ext vectors of 8 and 16 have no Metal type name: only the template spelling
        return f"{self.elem.msl}{self.n}" if self.n <= 4 else f"vec<{self.elem.msl}, {self.n}>"

    @property
    def msl(self) -> str:
        return self.name

    @property
    def cuda(self) -> str:
        # The CUDA printer emits its own small vector structs with these names (wider ones: the template).
        return f"mb_{self.elem.msl}{self.n}" if self.n <= 4 else f"mb_vec<{self.elem.cuda}, {self.n}>"

    @property
    def is_float(self) -> bool:
        return self.elem.is_float

    @property
    def is_int(self) -> bool:
        return self.elem.is_int

    @property
    def is_bool(self) -> bool:
        return self.elem.is_bool

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True)
class MatrixType:
    """Metal's ``simdgroup_matrix<T, 8, 8>``: an 8x8 matrix held by the 32 threads of a
    SIMD-group together, two elements per thread (``thread_elements()``; the layout is in
    :mod:`metalbench.simdgroup_matrix`). Not a vector: it has no operators, only the
    simdgroup matrix functions (IR nodes ``MatrixLoad``, ``MatrixMul``, ...).

    >>> MatrixType(float16).msl, MatrixType(float32).per_thread.name
    ('simdgroup_half8x8', 'float2')
    """

    elem: ScalarType
    rows: int = 8
    cols: int = 8

    @property
    def name(self) -> str:
        return f"simdgroup_{self.elem.msl}{self.rows}x{self.cols}"

    @property
    def msl(self) -> str:
        return self.name

    @property
    def per_thread(self) -> VectorType:
        """What one thread holds: ``vec<T, 2>`` (its ``thread_elements()``)."""
        return VECTORS[f"{self.elem.msl}2"]

    def __repr__(self) -> str:
        return self.name


Type = "ScalarType | VectorType"

bool_ = ScalarType("bool", "bool", "bool", np.dtype(np.bool_), "b", 8, 0)
int8 = ScalarType("int8", "char", "int8_t", np.dtype(np.int8), "i", 8, 1)
uint8 = ScalarType("uint8", "uchar", "uint8_t", np.dtype(np.uint8), "u", 8, 1)
int16 = ScalarType("int16", "short", "int16_t", np.dtype(np.int16), "i", 16, 2)
uint16 = ScalarType("uint16", "ushort", "uint16_t", np.dtype(np.uint16), "u", 16, 2)
int32 = ScalarType("int32", "int", "int32_t", np.dtype(np.int32), "i", 32, 3)
uint32 = ScalarType("uint32", "uint", "uint32_t", np.dtype(np.uint32), "u", 32, 3)
int64 = ScalarType("int64", "long", "int64_t", np.dtype(np.int64), "i", 64, 4)
uint64 = ScalarType("uint64", "ulong", "uint64_t", np.dtype(np.uint64), "u", 64, 4)
float16 = ScalarType("float16", "half", "__half", np.dtype(np.float16), "f", 16, 1)
bfloat16 = ScalarType("bfloat16", "bfloat", "__nv_bfloat16", np.dtype(ml_dtypes.bfloat16), "f", 16, 1)
float32 = ScalarType("float32", "float", "float", np.dtype(np.float32), "f", 32, 2)
# float64 is exact on the simulator and CUDA; Metal has no double (the MSL printer and the
# metal backend refuse it with an error that says so)
float64 = ScalarType("float64", "double", "double", np.dtype(np.float64), "f", 64, 3)

# SCALARS: the types every backend has (Metal's); ALL_SCALARS adds float64 (sim and CUDA)
SCALARS = [bool_, int8, uint8, int16, uint16, int32, uint32, int64, uint64, float16, bfloat16, float32]
ALL_SCALARS = SCALARS + [float64]
BY_NAME = {t.name: t for t in ALL_SCALARS}
BY_MSL = {t.msl: t for t in ALL_SCALARS}
# Aliases that MSL and the DSL accept as well.
BY_MSL.update({"int8_t": int8, "uint8_t": uint8, "int16_t": int16, "uint16_t": uint16,
               "int32_t": int32, "uint32_t": uint32, "int64_t": int64, "uint64_t": uint64,
               "size_t": uint64, "unsigned": uint32, "unsigned int": uint32, "bfloat16_t": bfloat16,
               "float16_t": float16, "float32_t": float32, "signed char": int8, "unsigned char": uint8,
               "unsigned short": uint16, "unsigned long": uint64, "long long": int64,
               "unsigned long long": uint64})
BY_NAME["bool"] = bool_

# MLX's complex64 (``complex64_t`` in kernel text): a dtype of kernel *arguments* only, in
# none of the tables above. The IR has no complex type: the MSL front end reads such a
# buffer as float32 pairs (real, imag) and its elements as complex values
# (``semantics/complexval.py``); ``ir.Param.complex`` marks the buffer.
complex64 = ScalarType("complex64", "complex64_t", "complex64_t", np.dtype(np.complex64), "c", 64, 5)

# no double vectors: Metal has none, and nothing needs them yet
VECTOR_ELEMS = [bool_, int8, uint8, int16, uint16, int32, uint32, int64, uint64, float16, bfloat16, float32]
VECTORS = {f"{e.msl}{n}": VectorType(e, n) for e in VECTOR_ELEMS for n in (2, 3, 4)}
# ``vec<T, n>`` for n of 5..16 (clang's ext_vector_type; real kernels load 8 halves at a time
# and keep vec<float, NA> accumulators): reachable only through ``vector_of``, since Metal
# has no ``float8`` names
WIDE_VECTORS = {(e, n): VectorType(e, n) for e in VECTOR_ELEMS for n in range(5, 17)}
VECTOR_WIDTHS = tuple(range(2, 17))
# The IR's component letters (``ir.Swizzle``): x y z w, then 4..15 in hex digits for the wide
# vectors (clang's .s4 .. .sF), upper case so that no letter is also one of rgba
COMPONENTS = "xyzw456789ABCDEF"

uint3 = VECTORS["uint3"]

# simdgroup_matrix element types (Metal: float, half, bfloat) and their typedef names.
MATRICES = {f"simdgroup_{e.msl}8x8": MatrixType(e) for e in (float32, float16, bfloat16)}


class TypeError_(TypeError):
    """Raised by the helpers here; front ends turn it into a KernelTypeError with a span."""


def from_numpy(dtype, complex_ok: bool = False) -> ScalarType:
    """The ScalarType of a NumPy dtype (``complex_ok``: complex64 too, for the callers that
    handle it: ``metal_kernel`` arguments).

    >>> from_numpy(np.dtype("float32")).msl, from_numpy(np.float64).cuda
    ('float', 'double')
    """
    dt = np.dtype(dtype)
    for t in ALL_SCALARS + [complex64] * complex_ok:
        if t.np == dt:
            return t
    raise TypeError_(f"dtype {dt} is not supported; use one of "
                     + ", ".join(t.name for t in ALL_SCALARS))


def from_mlx(dtype, complex_ok: bool = False) -> ScalarType:
    """The ScalarType of an MLX dtype (``mx.float32`` ...; ``complex_ok``: complex64 too).

    >>> import mlx.core as mx
    >>> from_mlx(mx.bfloat16).msl
    'bfloat'
    """
    name = str(dtype).split(".")[-1]
    if name == "bool":
        return bool_
    if name in BY_NAME:
        return BY_NAME[name]
    if name == "complex64" and complex_ok:
        return complex64
    raise TypeError_(f"MLX dtype {dtype} is not supported")


NO_DOUBLE = ("Metal has no double (float64): convert the data to float32 "
             "(.astype(np.float32) or mx.float32), or run on backend='sim' or 'cuda'")


def to_mlx(t: ScalarType):
    """The MLX dtype of a ScalarType.

    >>> to_mlx(float16)
    mlx.core.float16
    """
    import mlx.core as mx
    return getattr(mx, "bool_" if t is bool_ else t.name)


def lookup(name: str):
    """A type by any of its names: DSL (``float32``), MSL (``float``, ``uint3``).

    >>> lookup("half") is float16 and lookup("float4").n == 4
    True
    """
    if name in BY_NAME:
        return BY_NAME[name]
    if name in BY_MSL:
        return BY_MSL[name]
    if name in VECTORS:
        return VECTORS[name]
    if name in MATRICES:
        return MATRICES[name]
    raise KeyError(name)


def promote_int(t: ScalarType) -> ScalarType:
    """C integer promotion: bool, char, short and their unsigned kin become int."""
    if (t.is_int or t.is_bool) and t.rank < int32.rank:
        return int32
    return t


def _int_pair(a: ScalarType, b: ScalarType) -> ScalarType:
    a, b = promote_int(a), promote_int(b)
    if a == b:
        return a
    if a.is_signed == b.is_signed:
        return a if a.rank >= b.rank else b
    s, u = (a, b) if a.is_signed else (b, a)
    if u.rank >= s.rank:
        return u
    if s.bits > u.bits:
        return s
    return BY_NAME["u" + s.name]


def is_promotion(frm, to) -> bool:
    """Whether ``frm`` to ``to`` is C++'s integral promotion (bool, char, short and their
    unsigned types to int), which overload resolution ranks above a conversion.

    >>> is_promotion(int16, int32), is_promotion(uint8, int32), is_promotion(int16, uint32)
    (True, True, False)
    """
    return isinstance(frm, ScalarType) and to is int32 and (frm is bool_ or (frm.is_int and frm.itemsize < 4))


def binary_result(a, b):
    """The type of ``a op b`` under MSL's usual arithmetic conversions.

    Floats beat integers; between floats the wider wins (half with bfloat gives
    float); between integers the C rules apply (int with uint gives uint).

    >>> binary_result(int32, uint32).name, binary_result(float16, float32).name
    ('uint32', 'float32')
    """
    if isinstance(a, MatrixType) or isinstance(b, MatrixType):
        raise TypeError_("simdgroup matrices have no arithmetic operators; use simdgroup_multiply "
                         "or simdgroup_multiply_accumulate")
    if isinstance(a, VectorType) or isinstance(b, VectorType):
        va = a if isinstance(a, VectorType) else None
        vb = b if isinstance(b, VectorType) else None
        if va and vb and va.n != vb.n:
            raise TypeError_(f"cannot combine {va.name} and {vb.name}: different lengths")
        n = (va or vb).n
        ea = va.elem if va else a
        eb = vb.elem if vb else b
        # A scalar combined with a vector takes the vector's element type (MSL).
        if va and not vb:
            e = va.elem if not (b.is_float and not va.elem.is_float) else binary_result(va.elem, b)
        elif vb and not va:
            e = vb.elem if not (a.is_float and not vb.elem.is_float) else binary_result(a, vb.elem)
        else:
            e = binary_result(ea, eb)
        return vector_of(e, n)
    if a.is_float or b.is_float:
        if a.is_float and b.is_float:
            if a == b:
                return a
            return a if a.rank > b.rank else b if b.rank > a.rank else float32
        return a if a.is_float else b
    return _int_pair(a, b)


def padded(n: int) -> int:
    """Elements an ``n``-vector takes in memory (its size and alignment): a 3-vector pads to 4,
    clang's ext vectors past 4 to the next power of two (``vec<float, 5>`` is 32 bytes).

    >>> [padded(n) for n in (2, 3, 4, 5, 8, 9, 16)]
    [2, 4, 4, 8, 8, 16, 16]
    """
    return n if n in (1, 2, 4) else 4 if n == 3 else 1 << (n - 1).bit_length()


def vector_of(elem: ScalarType, n: int) -> VectorType:
    """The vector type with ``n`` elements of ``elem``.

    >>> vector_of(float32, 4).name, vector_of(float16, 8).name
    ('float4', 'vec<half, 8>')
    """
    if n > 4:
        return WIDE_VECTORS[(elem, n)]
    return VECTORS[f"{elem.msl}{n}"]


def elem_of(t):
    """The scalar element type of a scalar or vector type."""
    return t.elem if isinstance(t, VectorType) else t


def literal_int_type(value: int) -> ScalarType:
    """The type C gives an unsuffixed decimal literal: int, else long, else ulong."""
    if -(2**31) <= value < 2**31:
        return int32
    if -(2**63) <= value < 2**63:
        return int64
    return uint64
