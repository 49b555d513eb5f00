"""Typing helpers both front ends share: explicit conversions and constant folding.

The IR wants every implicit conversion spelled out as a ``Cast``; these helpers
build those casts (folding them away on constants) and evaluate compile-time
constant expressions with C semantics (wrap-around, truncating division)::

    >>> from metalbench import ir, types as T
    >>> convert(ir.Const(3, T.int32), T.float32).value
    3.0
    >>> const_value(ir.BinOp("-", ir.Const(0, T.uint32), ir.Const(1, T.uint32), T.uint32))
    4294967295
"""
from __future__ import annotations

from .. import ir
from .. import types as T
from ..scalar import fold_binop, fold_cast, fold_unop


def coerce_value(v, t, src=None):
    """The Python value ``v`` (of scalar type ``src`` when known) converted to scalar type
    ``t`` with C semantics (the element type for a vector type); see
    :func:`metalbench.scalar.fold_cast`.

    >>> coerce_value(-1, T.uint8), coerce_value(2.7, T.int32), coerce_value(3, T.bool_)
    (255, 2, True)
    """
    src = T.elem_of(src) if src is not None else None
    return fold_cast(v, T.elem_of(t), src)


def convert(e: ir.Expr, t, span=None) -> ir.Expr:
    """``e`` as type ``t``: itself if it already has it, a folded ``Const``, a scalar
    broadcast ``VecCons`` for scalar -> vector, else a ``Cast``."""
    if e.type == t:
        return e
    span = span or e.span
    if isinstance(e, ir.Const) and isinstance(t, T.ScalarType) and not isinstance(e.type, T.VectorType):
        return ir.Const(coerce_value(e.value, t, e.type), t, span=span)
    if isinstance(t, T.VectorType) and isinstance(e.type, T.ScalarType):
        return ir.VecCons(t, [convert(e, t.elem, span)], span=span)
    return ir.Cast(t, e, span=span)


def to_bool(e: ir.Expr) -> ir.Expr:
    """``e`` as a bool condition (C: non-zero is true)."""
    return convert(e, T.bool_)


def const_value(e):
    """The compile-time value of ``e`` (a Python scalar), or None if it is not constant."""
    if isinstance(e, ir.Const):
        return e.value if not isinstance(e.type, T.VectorType) else None
    if isinstance(e, ir.Cast) and isinstance(e.type, T.ScalarType):
        v = const_value(e.value)
        return None if v is None else coerce_value(v, e.type, e.value.type)
    if isinstance(e, ir.UnOp) and isinstance(e.type, T.ScalarType):
        v = const_value(e.a)
        if v is None or e.op not in ("-", "!", "~"):
            return None
        return fold_unop(e.op, v, e.a.type)
    if isinstance(e, ir.BinOp) and isinstance(e.type, T.ScalarType):
        a, b = const_value(e.a), const_value(e.b)
        if a is None or b is None:
            return None
        # comparisons and arithmetic compute in the operands' type (the IR converted
        # them); a shift's count keeps its own type
        return fold_binop(e.op, a, b, e.a.type, e.b.type)
    if isinstance(e, ir.Logical):
        a = const_value(e.a)
        if a is None:
            return None
        if e.op == "and" and not a:
            return False
        if e.op == "or" and a:
            return True
        b = const_value(e.b)
        return None if b is None else bool(b)
    if isinstance(e, ir.Select):
        c = const_value(e.cond)
        if c is None:
            return None
        return const_value(e.a if c else e.b)
    return None


def fold(e: ir.Expr) -> ir.Expr:
    """``e`` replaced by a ``Const`` when it is a compile-time constant scalar."""
    if isinstance(e, ir.Const) or not isinstance(e.type, T.ScalarType):
        return e
    v = const_value(e)
    if v is None:
        return e
    return ir.Const(v, e.type, span=e.span)
