"""Compatibility names for the front ends' former shared helpers.

Conversions and constant folding now live in the semantic layer
(:mod:`metalbench.semantics`); these names keep working::

    >>> from metalbench import ir, types as T
    >>> convert(ir.Const(3, T.int32), T.float32).value
    3.0
    >>> const_value(ir.BinOp("-", ir.Const(0, T.uint32), ir.Const(1, T.uint32), T.uint32))
    4294967295
"""
from __future__ import annotations

from .. import ir
from ..semantics import MSL, Semantics
from ..semantics.folding import coerce_value, const_value, fold

_SEM = Semantics(MSL)


def convert(e: ir.Expr, t, span=None) -> ir.Expr:
    """``e`` implicitly converted to ``t`` (see :meth:`metalbench.semantics.Semantics.convert`)."""
    return _SEM.convert(e, t, span)


def to_bool(e: ir.Expr) -> ir.Expr:
    """``e`` as a bool condition (C: non-zero is true)."""
    return _SEM.to_bool(e)


__all__ = ["convert", "to_bool", "coerce_value", "const_value", "fold"]
