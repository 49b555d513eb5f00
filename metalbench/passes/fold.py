"""Constant folding with MSL's arithmetic: what a compile-time value computes to.

Front ends fold as they build the IR, so constexpr parameters, globals and
literals vanish into constants (and a constant ``if`` keeps only its taken side).
The arithmetic is :mod:`metalbench.scalar`'s, the table the simulator runs too, so a
folded value is the value the expression has at run time:

    >>> from metalbench import types as T
    >>> fold_binop("-", 0, 1, T.uint32)           # unsigned wrap-around
    4294967295
    >>> fold_binop("/", -7, 2, T.int32)           # C division truncates
    -3
    >>> fold_cast(3.9, T.int32), fold_cast(300, T.uint8), fold_cast(300.5, T.uint8)
    (3, 44, 255)
"""
from __future__ import annotations

from ..scalar import fold_binop, fold_cast, fold_unop

__all__ = ["fold_binop", "fold_cast", "fold_unop"]
