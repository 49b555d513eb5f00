"""The builtin functions every front end accepts and every back end implements.

One table, so a builtin is named and typed once. Names are Metal's (``metal::``
namespace dropped); each entry gives the arity and how the result type follows
from the argument types::

    >>> from metalbench import types as T
    >>> result_type("exp", [T.float16]).name, result_type("max", [T.int32, T.uint32]).name
    ('float16', 'uint32')
    >>> result_type("simd_all", [T.bool_]).name
    'bool'
"""
from __future__ import annotations

from . import types as T

# Float math of one argument: integers convert to float, half stays half.
MATH1 = ("exp", "exp2", "exp10", "log", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan",
         "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "floor",
         "ceil", "round", "rint", "trunc", "fract", "saturate", "erf", "erfc", "log1p", "expm1",
         "cbrt", "sinpi", "cospi", "tanpi", "lgamma", "tgamma")
# Float math of two or three arguments.
MATH2 = ("pow", "powr", "atan2", "fmod", "copysign", "hypot", "fdim", "step", "ldexp")
MATH3 = ("fma", "mix", "smoothstep")
# Work on integers and floats alike; the result has the common type.
NUMERIC = {"abs": 1, "fabs": 1, "min": 2, "max": 2, "fmin": 2, "fmax": 2, "clamp": 3, "sign": 1}
# Float classification: bool result.
PREDICATES = ("isnan", "isinf", "isfinite", "signbit")
# Integer bit functions (Metal names).
INTBITS = ("popcount", "clz", "ctz", "reverse_bits")

# SIMD-group (width 32) functions: reductions and scans keep the argument's type.
SIMD_REDUCE = ("simd_sum", "simd_product", "simd_max", "simd_min", "simd_and", "simd_or",
               "simd_xor")
SIMD_SCAN = ("simd_prefix_inclusive_sum", "simd_prefix_exclusive_sum",
             "simd_prefix_inclusive_product", "simd_prefix_exclusive_product")
# (value, lane-or-delta) -> value
SIMD_SHUFFLE = ("simd_shuffle", "simd_shuffle_up", "simd_shuffle_down", "simd_shuffle_xor",
                "simd_broadcast", "simd_shuffle_rotate_up", "simd_shuffle_rotate_down")
SIMD_OTHER = {"simd_broadcast_first": 1, "simd_all": 1, "simd_any": 1, "simd_ballot": 1,
              "simd_is_first": 0}

SIMD = set(SIMD_REDUCE) | set(SIMD_SCAN) | set(SIMD_SHUFFLE) | set(SIMD_OTHER)

# Atomic operations of the DSL: atomic_<op>(array, index, value...) -> old value.
ATOMICS = {"atomic_add": "add", "atomic_sub": "sub", "atomic_min": "min", "atomic_max": "max",
           "atomic_and": "and", "atomic_or": "or", "atomic_xor": "xor",
           "atomic_exchange": "exchange", "atomic_compare_exchange": "cas",
           "atomic_load": "load", "atomic_store": "store"}


def arity(name: str) -> int | tuple[int, ...]:
    """How many arguments builtin ``name`` takes."""
    if name in MATH1 or name in PREDICATES or name in INTBITS:
        return 1
    if name in MATH2:
        return 2
    if name in MATH3:
        return 3
    if name in NUMERIC:
        return NUMERIC[name]
    if name in SIMD_REDUCE or name in SIMD_SCAN:
        return 1
    if name in SIMD_SHUFFLE:
        return 2
    if name in SIMD_OTHER:
        return SIMD_OTHER[name]
    raise KeyError(name)


def is_builtin(name: str) -> bool:
    """True for every name in this table."""
    try:
        arity(name)
        return True
    except KeyError:
        return False


def _float_of(t):
    e = T.elem_of(t)
    if e.is_float:
        return t
    return T.float32 if isinstance(t, T.ScalarType) else T.vector_of(T.float32, t.n)


def _common(types):
    r = types[0]
    for t in types[1:]:
        r = T.binary_result(r, t)
    return r


def arg_types(name: str, types: list) -> list:
    """The types the arguments convert to before the call (MSL overload resolution,
    simplified: float math converts integers to float; numeric functions use the
    common type; shuffles take a ``ushort``-like lane index as uint)."""
    if name in MATH1 or name in PREDICATES:
        return [_float_of(types[0])]
    if name in MATH2 or name in MATH3:
        c = _float_of(_common(types))
        if name == "ldexp":
            return [_float_of(types[0]), T.int32]
        return [c] * len(types)
    if name in NUMERIC:
        c = _common(types)
        if name in ("fabs", "fmin", "fmax"):
            c = _float_of(c)
        return [c] * len(types)
    if name in SIMD_SHUFFLE:
        return [types[0], T.uint32]
    if name in ("simd_all", "simd_any", "simd_ballot"):
        return [T.bool_]
    return list(types)


def result_type(name: str, types: list):
    """The result type of builtin ``name`` applied to arguments of ``types``."""
    if name in PREDICATES:
        t = types[0]
        return T.bool_ if isinstance(t, T.ScalarType) else T.vector_of(T.bool_, t.n)
    if name in ("simd_all", "simd_any", "simd_is_first"):
        return T.bool_
    if name == "simd_ballot":
        return T.uint64
    if name in INTBITS:
        return types[0]
    conv = arg_types(name, types)
    if name == "ldexp":
        return conv[0]
    return conv[0]
