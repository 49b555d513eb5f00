"""One table of C/MSL scalar semantics: operators, unary operators and casts.

Constant folding (``passes/fold.py``) and the simulator (``sim/``) both compute through
this module, so a folded value and the value the same expression has at run time agree
bit for bit. Every function works on NumPy scalars (uniform values) and on 1-D NumPy
arrays with one entry per lane alike; operands already have the operation's type (the
IR spells every implicit conversion as a ``Cast``).

The rules (the semantics contract of docs/architecture.md, as GPUs behave):

- integers wrap around (two's complement), signed ones too;
- ``/`` and ``%`` truncate toward zero (C); a zero divisor gives 0 for both (no trap; the
  checked simulator reports it), and ``INT_MIN / -1`` wraps to ``INT_MIN`` (``% -1`` is 0);
- ``<<`` and ``>>`` use the count modulo the width of the left operand's type, as GPUs
  do (``x << 33`` on a 32-bit ``x`` is ``x << 1``); ``>>`` is arithmetic on signed types;
- float -> integer truncates toward zero and saturates to the destination's range
  (NaN gives 0), for every integer width, ``long``/``ulong`` included (``long(1e30)`` is
  2**63-1, as PTX's ``cvt.rzi`` and Metal give; C leaves out-of-range conversions
  undefined, and x86's ``cvttsd2si`` answers INT64_MIN to all of them, so gcc-compiled
  C is no oracle there; the CUDA printer saturates 8- and 16-bit destinations itself);
- integer -> integer wraps; anything -> bool is ``!= 0`` (NaN is true);
- float -> float rounds to nearest even, once (``double`` -> ``bfloat`` too); integer ->
  ``bfloat`` rounds through ``float`` (as Metal's and CUDA's bfloat conversions do);
- half and bfloat arithmetic rounds the exact result once (NumPy and ml_dtypes compute in
  float and round; float has enough bits for that to be exact).

The API::

    >>> import numpy as np
    >>> from metalbench import types as T
    >>> binop("/", np.int32(-7), np.int32(2), T.int32)            # C division truncates
    np.int32(-3)
    >>> binop("<<", np.uint32(1), np.uint32(33), T.uint32)        # shift count mod 32
    np.uint32(2)
    >>> cast(np.float32(3e9), T.float32, T.int32)                 # float -> int saturates
    np.int32(2147483647)
    >>> value(300.5, T.uint8), value(-1, T.uint8)                 # a Python number, converted as C does
    (np.uint8(255), np.uint8(255))
    >>> fold_binop("-", 0, 1, T.uint32), fold_cast(2147483648.0, T.int32)   # Python in, Python out
    (4294967295, 2147483647)
"""
from __future__ import annotations

import operator
from functools import lru_cache

import ml_dtypes
import numpy as np

from . import types as T

COMPARE = ("==", "!=", "<", "<=", ">", ">=")
ARITH = ("+", "-", "*", "/", "%")
BITWISE = ("&", "|", "^", "<<", ">>")
BINARY = ARITH + BITWISE + COMPARE
UNARY = ("-", "~", "!")

_PYOP = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
         "&": operator.and_, "|": operator.or_, "^": operator.xor,
         "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
         ">": operator.gt, ">=": operator.ge}
_BF16 = np.dtype(ml_dtypes.bfloat16)


def _lanes(r):
    """A 0-d array result back to a NumPy scalar (scalars in, scalar out)."""
    return r[()] if isinstance(r, np.ndarray) and r.ndim == 0 else r


# ----------------------------------------------------------------------------- integer / and %


def _idiv(t: T.ScalarType):
    dt = t.np
    one, zero = dt.type(1), dt.type(0)

    def idiv(a, b):
        scalar = not isinstance(a, np.ndarray) and not isinstance(b, np.ndarray)
        a, b = np.asarray(a, dt), np.asarray(b, dt)
        z = b == 0
        bs = np.where(z, one, b)
        if t.kind == "u":
            q = a // bs
        else:
            # (a - fmod(a, b)) is an exact multiple of b: floor division of it truncates;
            # INT_MIN // -1 wraps to INT_MIN in NumPy, as on the GPU
            q = (a - np.fmod(a, bs)) // bs
        q = np.where(z, zero, q).astype(dt, copy=False)
        return _lanes(q) if scalar else q
    return idiv


def _imod(t: T.ScalarType):
    dt = t.np
    one, zero = dt.type(1), dt.type(0)

    def imod(a, b):
        scalar = not isinstance(a, np.ndarray) and not isinstance(b, np.ndarray)
        a, b = np.asarray(a, dt), np.asarray(b, dt)
        z = b == 0
        # np.fmod has C's sign rule (the dividend's); INT_MIN fmod -1 is 0
        r = np.where(z, zero, np.fmod(a, np.where(z, one, b))).astype(dt, copy=False)
        return _lanes(r) if scalar else r
    return imod


# ----------------------------------------------------------------------------- shifts


def _shift(t: T.ScalarType, left: bool):
    dt, mask = t.np, t.bits - 1
    fn = np.left_shift if left else np.right_shift

    def shift(a, b):
        s = b & mask          # the GPU's masked count; any integer type, any sign
        s = s.astype(dt) if isinstance(s, (np.ndarray, np.generic)) else dt.type(s)
        return fn(a, s)
    return shift


# ----------------------------------------------------------------------------- bool arithmetic


def _bool_arith(op: str):
    # C promotes bool operands to int; a bool-typed result is that int != 0
    f = _PYOP[op]

    def run(a, b):
        return f(np.asarray(a, np.int32), np.asarray(b, np.int32)) != 0
    return lambda a, b: _lanes(run(a, b))


# ----------------------------------------------------------------------------- the table


@lru_cache(maxsize=None)
def infix(op: str, t: T.ScalarType) -> str | None:
    """The Python operator that computes ``op`` exactly on NumPy values of type ``t``
    (the simulator prints it inline), or None when a function of :func:`binop_fn` must.

    >>> infix("+", T.int32), infix("/", T.int32), infix("/", T.float32)
    ('+', None, '/')
    """
    if op in COMPARE:
        return op
    if t.is_bool:
        return op if op in ("&", "|", "^") else None
    if t.is_float:
        return op if op in ("+", "-", "*", "/") else None
    return op if op in ("+", "-", "*", "&", "|", "^") else None


@lru_cache(maxsize=None)
def binop_fn(op: str, t: T.ScalarType):
    """The function ``(a, b) -> a op b`` for operands of type ``t`` (the left operand's
    type for shifts; the count may have any integer type).

    >>> import numpy as np
    >>> binop_fn("%", T.int32)(np.array([-7, 7], np.int32), np.int32(0)).tolist()
    [0, 0]
    """
    if op not in BINARY:
        raise KeyError(f"unknown binary operator {op!r}")
    i = infix(op, t)
    if i is not None:
        return _PYOP[i]
    if t.is_bool:
        if op in ("+", "-", "*"):
            return _bool_arith(op)
        if op in ("/", "%", "<<", ">>"):
            return lambda a, b: binop_fn(op, T.int32)(np.asarray(a, np.int32), np.asarray(b, np.int32)) != 0
    if t.is_float:
        if op == "%":
            return np.fmod
        raise TypeError(f"the {op} operator needs integers, got {t.name}")
    if op == "/":
        return _idiv(t)
    if op == "%":
        return _imod(t)
    if op in ("<<", ">>"):
        return _shift(t, op == "<<")
    raise KeyError(op)


def binop(op: str, a, b, t: T.ScalarType):
    """``a op b`` on NumPy values of type ``t``: of type ``t``, or bool for comparisons.

    >>> import numpy as np
    >>> binop("%", np.int32(-7), np.int32(2), T.int32), binop("<", np.float32(1), np.float32(2), T.float32)
    (np.int32(-1), np.True_)
    """
    with np.errstate(all="ignore"):
        return binop_fn(op, t)(a, b)


def unary_infix(op: str, t: T.ScalarType) -> str | None:
    """The Python prefix operator that computes ``op`` exactly on NumPy values of type
    ``t`` (``-`` on numbers, ``~`` on integers), or None.

    >>> unary_infix("-", T.uint32), unary_infix("!", T.bool_)
    ('-', None)
    """
    if op == "-" and not t.is_bool:
        return "-"
    if op == "~" and t.is_int:
        return "~"
    return None


@lru_cache(maxsize=None)
def unop_fn(op: str, t: T.ScalarType):
    """The function ``a -> op a`` for an operand of type ``t`` (``-`` wraps on integers)."""
    if op == "!":
        return np.logical_not
    if op == "-":
        if t.is_bool:
            return lambda a: a      # -true is -1: still true
        return np.negative
    if op == "~":
        if t.is_float:
            raise TypeError(f"the ~ operator needs an integer, got {t.name}")
        return np.logical_not if t.is_bool else np.invert
    raise KeyError(f"unknown unary operator {op!r}")


def unop(op: str, a, t: T.ScalarType):
    """``op a`` for ``op`` in ``-``, ``~``, ``!``.

    >>> import numpy as np
    >>> unop("-", np.uint32(1), T.uint32), unop("~", np.int8(0), T.int8)
    (np.uint32(4294967295), np.int8(-1))
    """
    with np.errstate(all="ignore"):
        return unop_fn(op, t)(a)


# ----------------------------------------------------------------------------- casts


def _f2i(src: T.ScalarType, dst: T.ScalarType):
    dt = dst.np
    info = np.iinfo(dt)
    if dst.bits < 64:
        lo, hi = float(info.min), float(info.max)   # exact in float64

        def f2i(v):
            x = np.trunc(np.asarray(v, np.float64))   # every float type converts exactly
            return _lanes(np.nan_to_num(np.clip(x, lo, hi), nan=0.0).astype(dt))
        return f2i
    top = 2.0 ** (63 if dst.is_signed else 64)         # first value past the range
    bottom = -(2.0 ** 63) if dst.is_signed else 0.0
    vmax, vmin = dt.type(info.max), dt.type(info.min)

    def f2i64(v):
        # 2**63 - 1 is no float64: clipping would saturate at 2**63 - 1024, so mask instead
        x = np.trunc(np.asarray(v, np.float64))
        hi = x >= top
        lo = x < bottom
        ok = ~(hi | lo | np.isnan(x))
        r = np.where(ok, x, 0.0).astype(dt)
        return _lanes(np.where(hi, vmax, np.where(lo, vmin, r)))
    return f2i64


def _round_to_odd_f32(x):
    """float64 -> float32 rounding to odd: then float32 -> bfloat16 (nearest even) is the
    single correct rounding of ``x`` (float32 keeps more than 2 extra bits)."""
    f = x.astype(np.float32)
    back = f.astype(np.float64)
    bump = (back != x) & np.isfinite(f) & ((f.view(np.uint32) & 1) == 0)
    if bump.any():
        toward = np.where(x > back, np.float32(np.inf), np.float32(-np.inf))
        f = np.where(bump, np.nextafter(f, toward), f)
    return f


def _f64_to_bf16(v):
    x = np.asarray(v, np.float64)
    return _lanes(_round_to_odd_f32(x).astype(_BF16))


@lru_cache(maxsize=None)
def caster(src: T.ScalarType, dst: T.ScalarType):
    """The function converting NumPy values of type ``src`` to ``dst`` (C / MSL rules).

    >>> import numpy as np
    >>> caster(T.float32, T.uint8)(np.array([300.5, -2.0, np.nan], np.float32)).tolist()
    [255, 0, 0]
    """
    if src == dst:
        return lambda v: v
    dt = dst.np
    if dst.is_bool:
        return lambda v: v != 0
    if src.is_float and dst.is_int:
        return _f2i(src, dst)
    if dst.name == "bfloat16":
        if src.name == "float64":
            return _f64_to_bf16
        if not src.is_float:
            # integers round through float (Metal's and CUDA's bfloat conversions)
            return lambda v: v.astype(np.float32).astype(dt) if isinstance(v, (np.ndarray, np.generic)) \
                else np.float32(v).astype(dt)
    return lambda v: v.astype(dt) if isinstance(v, (np.ndarray, np.generic)) else dt.type(v)


def cast(v, src: T.ScalarType, dst: T.ScalarType):
    """``static_cast<dst>(v)`` for a NumPy value ``v`` of type ``src``.

    >>> import numpy as np
    >>> cast(np.float32(np.nan), T.float32, T.int32), cast(np.int32(300), T.int32, T.uint8)
    (np.int32(0), np.uint8(44))
    """
    with np.errstate(all="ignore"):
        return caster(src, dst)(v)


# ----------------------------------------------------------------------------- Python values


def type_of_value(x) -> T.ScalarType:
    """The scalar type a Python or NumPy number has before conversion: bool, int64 (ulong
    from 2**63 on), float64, or a NumPy scalar's own type."""
    if isinstance(x, (bool, np.bool_)):
        return T.bool_
    if isinstance(x, np.generic):
        return T.float64 if x.dtype == np.float64 else T.from_numpy(x.dtype)
    if isinstance(x, int):
        return T.uint64 if x >= 2 ** 63 else T.int64
    return T.float64


def value(x, t: T.ScalarType):
    """The NumPy scalar of type ``t`` that the Python (or NumPy) number ``x`` converts to,
    with C's conversion rules (integers beyond 64 bits keep their low 64 bits).

    >>> value(-1, T.uint32), value(2.5, T.int8), value(float("nan"), T.uint16), value(1.0, T.bool_)
    (np.uint32(4294967295), np.int8(2), np.uint16(0), np.True_)
    """
    src = type_of_value(x)
    if isinstance(x, np.generic):
        v = x
    elif src.is_int:
        x = int(x) & ((1 << 64) - 1)
        if src.is_signed and x >= 1 << 63:
            x -= 1 << 64
        v = src.np.type(x)
    else:
        v = src.np.type(x)
    with np.errstate(all="ignore"):
        r = cast(v, src, t)
    return r if isinstance(r, np.generic) else t.np.type(r)


def to_python(x, t: T.ScalarType | None = None):
    """A NumPy scalar as a Python bool, int or float (the IR's ``Const`` values).

    >>> to_python(np.uint8(7)), to_python(np.float16(0.5))
    (7, 0.5)
    """
    t = t or type_of_value(x)
    if t.is_bool:
        return bool(x)
    if t.is_int:
        return int(x)
    return float(x)


def _py_in(x, t):
    """A Python operand (already of type ``t``'s values, or any number) as NumPy ``t``."""
    if isinstance(x, np.generic) and x.dtype == t.np:
        return x
    return value(x, t)


def fold_binop(op: str, a, b, t: T.ScalarType, tb: T.ScalarType | None = None):
    """``a op b`` on Python numbers of type ``t`` (``tb``: the count's type of a shift),
    as a Python number; None when it has no compile-time value (an integer division by
    zero: it stays in the program, where the checked simulator reports it).

    >>> fold_binop("/", -7, 2, T.int32), fold_binop("/", float("nan"), 0.0, T.float32)
    (-3, nan)
    """
    if op in ("/", "%") and (t.is_int or t.is_bool) and int(b) == 0:
        return None
    r = binop(op, _py_in(a, t), _py_in(b, tb or t), t)
    return to_python(r, T.bool_ if op in COMPARE else t)


def fold_unop(op: str, a, t: T.ScalarType):
    """``op a`` on a Python number of type ``t``, as a Python number.

    >>> fold_unop("-", 1, T.uint32), fold_unop("!", 0, T.bool_)
    (4294967295, True)
    """
    r = unop(op, _py_in(a, t if op != "!" else T.bool_), t)
    return to_python(r, T.bool_ if op == "!" else t)


def fold_cast(x, dst: T.ScalarType, src: T.ScalarType | None = None):
    """``static_cast<dst>(x)`` for a Python number ``x`` (of type ``src`` when given), as
    a Python number.

    >>> fold_cast(3.9, T.int32), fold_cast(300, T.uint8), fold_cast(300.5, T.uint8)
    (3, 44, 255)
    """
    if src is not None:
        return to_python(cast(_py_in(x, src), src, dst), dst)
    return to_python(value(x, dst), dst)
