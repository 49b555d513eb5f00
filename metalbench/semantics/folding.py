"""Compile-time values: constant folding with C semantics.

Every folded value comes from :mod:`metalbench.scalar`, the one table of C/MSL scalar
semantics (wrap-around, truncating division, saturating float->int casts) that the
simulator computes with too, so a folded expression and its run-time value agree bit
for bit. This module is the only place the semantic layer calls it::

    >>> from metalbench import ir, types as T
    >>> const_value(ir.BinOp("-", ir.Const(0, T.uint32), ir.Const(1, T.uint32), T.uint32))
    4294967295
    >>> fold(ir.Cast(T.int32, ir.Const(2.7, T.float32))).value
    2
"""
from __future__ import annotations

from .. import ir
from .. import types as T
from ..scalar import fold_binop, fold_cast, fold_unop


def coerce_value(v, t, src=None):
    """The Python value ``v`` (of scalar type ``src`` when known; else a Python number)
    converted to scalar type ``t`` with C semantics (the element type for a vector
    type), as ``static_cast<t>(v)`` computes it.

    >>> coerce_value(-1, T.uint8), coerce_value(2.7, T.int32), coerce_value(300.5, T.uint8)
    (255, 2, 255)
    """
    return fold_cast(v, T.elem_of(t), T.elem_of(src) if src is not None else None)


def binop_value(op: str, a, b, a_type, b_type=None):
    """``a op b`` for Python values of the operands' types (the IR has converted them to
    a common type; a shift's count keeps its own, ``b_type``); None when it is not a
    compile-time value (an integer division by zero stays for the checked simulator).

    >>> binop_value("/", -7, 2, T.int32), binop_value("<", 1, 2, T.int32)
    (-3, True)
    """
    return fold_binop(op, a, b, a_type, b_type if op in ("<<", ">>") else None)


def unop_value(op: str, a, t):
    """``op a`` for a Python value of type ``t`` (the operand's, already promoted).

    >>> unop_value("-", 1, T.uint32), unop_value("!", 0, T.bool_)
    (4294967295, True)
    """
    return fold_unop(op, a, t)


def const_value(e):
    """The compile-time value of expression ``e`` (a Python scalar), or None if it is
    not a constant. Looks through casts, operators, ``Logical`` and ``Select``.

    >>> const_value(ir.Select(ir.Const(True, T.bool_), ir.Const(1, T.int32),
    ...                       ir.Const(2, T.int32), T.int32))
    1
    """
    if isinstance(e, ir.Const):
        return e.value if not isinstance(e.type, T.VectorType) else None
    if isinstance(e, ir.Cast) and isinstance(e.type, T.ScalarType):
        v = const_value(e.value)
        return None if v is None else coerce_value(v, e.type, e.value.type)
    if isinstance(e, ir.UnOp) and isinstance(e.type, T.ScalarType):
        v = const_value(e.a)
        if v is None or e.op not in ("-", "!", "~"):
            return None
        return unop_value(e.op, v, e.a.type)
    if isinstance(e, ir.BinOp) and isinstance(e.type, T.ScalarType):
        a, b = const_value(e.a), const_value(e.b)
        if a is None or b is None:
            return None
        return binop_value(e.op, a, b, e.a.type, e.b.type)
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
    if isinstance(e, ir.Swizzle) and isinstance(e.type, T.ScalarType):
        parts = _vector_parts(e.value)              # float2(1, 2).y, LUT initialisers
        if parts is None:
            return None
        part = parts[T.COMPONENTS.index(e.components)]
        v = const_value(part)
        return None if v is None else coerce_value(v, e.type, part.type)
    if isinstance(e, ir.Select):
        c = const_value(e.cond)
        if c is None:
            return None
        return const_value(e.a if c else e.b)
    return None


def _vector_parts(e):
    """The scalar expressions giving the components of vector expression ``e`` when it is
    built from them (``half2(a, b)``, ``float4(x)``, ``float4(v2, c, d)`` of such), else None."""
    n = e.type.n if isinstance(e.type, T.VectorType) else None
    if n is None:
        return None
    if isinstance(e, ir.Const):
        v = e.value
        if isinstance(v, (list, tuple)) and len(v) == n:
            return [ir.Const(x, e.type.elem) for x in v]
        return [ir.Const(v, e.type.elem)] * n if isinstance(v, (int, float, bool)) else None
    if not isinstance(e, ir.VecCons):
        return None
    if len(e.args) == 1 and isinstance(e.args[0].type, T.ScalarType):
        return [e.args[0]] * n
    parts = []
    for a in e.args:
        if isinstance(a.type, T.ScalarType):
            parts.append(a)
            continue
        sub = _vector_parts(a)
        if sub is None:
            return None
        parts.extend(sub)
    return parts if len(parts) == n else None


def fold(e: ir.Expr) -> ir.Expr:
    """``e`` replaced by a ``Const`` when it is a compile-time constant scalar, else ``e``.

    >>> fold(ir.BinOp("*", ir.Const(6, T.int32), ir.Const(7, T.int32), T.int32)).value
    42
    """
    if isinstance(e, ir.Const) or not isinstance(e.type, T.ScalarType):
        return e
    v = const_value(e)
    if v is None:
        return e
    return ir.Const(v, e.type, span=e.span)
