"""Constant folding with MSL's arithmetic: what a compile-time value computes to.

Front ends fold as they build the IR, so constexpr parameters, globals and
literals vanish into constants (and a constant ``if`` keeps only its taken side).

    >>> from metalbench import types as T
    >>> fold_binop("-", 0, 1, T.uint32)           # unsigned wrap-around
    4294967295
    >>> fold_binop("/", -7, 2, T.int32)           # C division truncates
    -3
    >>> fold_cast(3.9, T.int32), fold_cast(300, T.uint8)
    (3, 44)
"""
from __future__ import annotations

import math

import numpy as np

from .. import types as T


def wrap_int(v: int, t: T.ScalarType) -> int:
    """``v`` reduced to integer type ``t`` (two's complement wrap-around)."""
    bits = t.bits
    v &= (1 << bits) - 1
    if t.is_signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def round_float(v: float, t: T.ScalarType) -> float:
    """``v`` rounded to float type ``t`` (float32, float16 or bfloat16)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.array(v, dtype=np.float64).astype(t.np))


def fold_cast(v, t: T.ScalarType):
    """The value of ``static_cast<t>(v)`` for a Python bool/int/float ``v``."""
    if t.is_bool:
        return bool(v)
    if t.is_float:
        return round_float(float(v), t)
    if isinstance(v, float):
        if math.isnan(v):
            return 0
        if math.isinf(v):
            v = (1 << (t.bits - (1 if t.is_signed else 0))) - 1 if v > 0 else (-(1 << (t.bits - 1)) if t.is_signed else 0)
            return v
        v = int(v)  # truncates toward zero
    return wrap_int(int(v), t)


def _cdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def fold_binop(op: str, a, b, t: T.ScalarType):
    """``a op b`` computed in type ``t`` (the operands' common type); comparisons
    return a bool. Returns None when the result is not a compile-time value (integer
    division by zero)."""
    if op in ("==", "!=", "<", "<=", ">", ">="):
        return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    if t.is_float:
        a, b = float(a), float(b)
        try:
            r = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
                 "/": lambda: a / b if b != 0 else math.copysign(math.inf, a) * math.copysign(1, b) if a != 0 else math.nan,
                 "%": lambda: math.fmod(a, b) if b != 0 else math.nan}[op]()
        except (KeyError, OverflowError):
            return None
        return round_float(r, t)
    a, b = int(a), int(b)
    if op in ("/", "%") and b == 0:
        return None
    if op in ("<<", ">>"):
        b %= t.bits
    r = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
         "/": lambda: _cdiv(a, b), "%": lambda: a - _cdiv(a, b) * b,
         "&": lambda: a & b, "|": lambda: a | b, "^": lambda: a ^ b,
         "<<": lambda: a << b, ">>": lambda: a >> b}[op]()
    if t.is_bool:
        return bool(r)
    return wrap_int(r, t)


def fold_unop(op: str, a, t: T.ScalarType):
    """``op a`` in type ``t``."""
    if op == "!":
        return not a
    if op == "-":
        return round_float(-float(a), t) if t.is_float else wrap_int(-int(a), t)
    if op == "~":
        return wrap_int(~int(a), t)
    raise KeyError(op)
