"""The semantic layer's core: constants, conversions, operators, select and logical.

Every method takes the already-built operand expressions and the span of the source
construct, builds the typed (and, where constant, folded) IR node, and raises
:class:`~metalbench.errors.KernelTypeError` at that span when the code is ill-typed::

    >>> from metalbench import ir, types as T
    >>> from metalbench.semantics import Semantics, MSL, DSL
    >>> i, n = ir.Var("i", T.uint32), ir.Var("n", T.int32)
    >>> e = Semantics(MSL).binop("<", n, i)           # int < uint compares as uint
    >>> e.type.name, e.a.type.name
    ('bool', 'uint32')
    >>> Semantics(DSL).binop("/", n, ir.Const(2, T.int32)).type.name   # Python's true division
    'float32'
"""
from __future__ import annotations

from .. import ir
from .. import types as T
from ..errors import KernelTypeError, Span
from . import folding
from .rules import DSL, RuleSet
from .datetimes import DatetimeType, DatetimeValue
from .tuples import TupleType

BITWISE_OPS = ("&", "|", "^")
SHIFT_OPS = ("<<", ">>")
ARITH_OPS = ("+", "-", "*")
SWIZZLE = {"x": "x", "y": "y", "z": "z", "w": "w", "r": "x", "g": "y", "b": "z", "a": "w"}


class CoreSemantics:
    """Constants, conversions and operators (see :class:`metalbench.semantics.Semantics`)."""

    def __init__(self, rules: RuleSet = DSL, once=None):
        self.rules = rules
        self._once = once

    # -- errors --------------------------------------------------------------------------
    def error(self, message: str, span: Span | None, hint: str | None = None) -> KernelTypeError:
        """The type error to raise at ``span`` (callers write ``raise sem.error(...)``)."""
        return KernelTypeError(message, span, hint)

    def common_type(self, a, b, span=None):
        """The common type of operands of types ``a`` and ``b`` (the usual arithmetic
        conversions of the rules); a type error at ``span`` for incompatible vectors.

        >>> from metalbench.semantics import Semantics
        >>> Semantics().common_type(T.int32, T.float16).name
        'float16'
        """
        try:
            return self.rules.arith(a, b)
        except T.TypeError_ as e:
            raise self.error(str(e), span)

    def _need_value(self, e, span, what="an operand"):
        if e.type is None:
            raise self.error(f"{what} has no value (a call that returns nothing)", span)
        if isinstance(e.type, TupleType):
            raise self.error(f"{what} is a {e.type.name}, not a number", span,
                             hint="index the tuple (t[0]) or unpack it (a, b = t)")

    # -- constants ---------------------------------------------------------------------------
    def const(self, value, t, span=None) -> ir.Const:
        """A constant of scalar type ``t`` holding ``value`` converted with C semantics.

        >>> from metalbench.semantics import Semantics
        >>> Semantics().const(-1, T.uint8).value
        255
        """
        return ir.Const(folding.coerce_value(value, t), t, span=span)

    def int_literal(self, value: int, span=None) -> ir.Const:
        """An unsuffixed integer literal, typed by the rules (int32, else int64, else uint64)."""
        try:
            t = self.rules.int_literal_type(int(value))
        except Exception:
            t = None
        if t is None or not -(2**63) <= int(value) < 2**64:
            raise self.error(f"integer {value} does not fit in 64 bits", span)
        return self.const(int(value), t, span)

    def float_literal(self, value: float, span=None) -> ir.Const:
        """An unsuffixed float literal, typed by the rules (float32 for MSL and the DSL)."""
        return self.const(float(value), self.rules.float_literal_type(), span)

    def bool_const(self, value, span=None) -> ir.Const:
        """``true`` / ``false``."""
        return ir.Const(bool(value), T.bool_, span=span)

    # -- conversions -------------------------------------------------------------------------
    def convert(self, e: ir.Expr, t, span=None) -> ir.Expr:
        """``e`` implicitly converted to ``t``: itself if it has that type, a folded
        ``Const``, a broadcast ``VecCons`` for scalar -> vector, else a ``Cast``. Vector
        -> scalar and vectors of different lengths are errors.

        >>> from metalbench.semantics import Semantics
        >>> Semantics().convert(ir.Const(3, T.int32), T.float32).value
        3.0
        """
        if e.type == t:
            return e
        span = span or e.span
        if isinstance(e, DatetimeValue) or isinstance(t, DatetimeType):
            return self.dt_convert(e, t, span)              # datetimes.py
        self._need_value(e, span, "this")
        if isinstance(t, T.MatrixType) or isinstance(e.type, T.MatrixType):
            raise self.error(f"cannot convert {getattr(e.type, 'msl', e.type)} to {getattr(t, 'msl', t)}", span,
                             hint="simdgroup matrices convert only through their thread_elements()")
        if isinstance(e.type, T.VectorType):
            if isinstance(t, T.ScalarType):
                raise self.error(f"cannot convert vector {e.type.name} to scalar {t.name}", span,
                                 hint="pick a component, e.g. v.x")
            if t.n != e.type.n:
                raise self.error(f"cannot convert {e.type.name} to {t.name}", span)
            return ir.Cast(t, e, span=span)
        if isinstance(t, T.VectorType):
            return ir.VecCons(t, [self.convert(e, t.elem, span)], span=span)
        if isinstance(e, ir.Const):
            return ir.Const(folding.coerce_value(e.value, t, e.type), t, span=span)
        return ir.Cast(t, e, span=span)

    def cast(self, t, e: ir.Expr, span=None) -> ir.Expr:
        """An explicit conversion ``t(e)`` / ``static_cast<t>(e)``: as :meth:`convert`
        (a vector target builds the vector, see :meth:`vector`), folded on constants."""
        if isinstance(t, T.VectorType):
            return self.vector(t, [e], span)
        return folding.fold(self.convert(e, t, span))

    def vector(self, t: T.VectorType, args: list, span=None) -> ir.Expr:
        """The vector constructor ``float4(a, b, c, d)``: the arguments' components in
        order (scalars or vectors), or one scalar broadcast; ``float4(int4_value)``
        converts component-wise.

        >>> from metalbench.semantics import Semantics
        >>> Semantics().vector(T.VECTORS["float2"], [ir.Const(1, T.int32)]).args[0].value
        1.0
        """
        for a in args:
            self._need_value(a, span, "a vector component")
        if len(args) == 1 and isinstance(args[0].type, T.VectorType):
            a = args[0]
            if a.type.n != t.n:
                raise self.error(f"cannot convert {a.type.name} to {t.name}", span)
            return a if a.type == t else ir.Cast(t, a, span=span)
        n, conv = 0, []
        for a in args:
            if isinstance(a.type, T.VectorType):
                n += a.type.n
                conv.append(self.convert(a, T.vector_of(t.elem, a.type.n)))
            else:
                n += 1
                conv.append(self.convert(a, t.elem))
        if not (n == t.n or (len(args) == 1 and n == 1)):
            raise self.error(f"{t.name}(...) needs {t.n} components, got {n}", span)
        return ir.VecCons(t, conv, span=span)

    def component(self, v: ir.Expr, comps: str, span=None) -> ir.Expr:
        """Vector components ``v.x``, ``v.zyx``, ``v.rg`` (``rgba`` spelled ``xyzw``)."""
        vt = v.type
        if not isinstance(vt, T.VectorType):
            name = vt.name if vt is not None else "void"
            raise self.error(f"{name} values have no component {comps!r}", span,
                             hint="components (.x, .y, ...) belong to vectors")
        norm = "".join(SWIZZLE.get(c, "?") for c in comps)
        if not comps or len(comps) > 4 or any(c not in "xyzw"[:vt.n] for c in norm):
            # Metal documents xyzw/rgba only; clang's .lo/.hi/.s7 on wide vectors are refused here
            raise self.error(f"{vt.name} has no component {comps!r}", span,
                             hint="use .x, .y, .z (and .w for 4-vectors)")
        t = vt.elem if len(norm) == 1 else T.vector_of(vt.elem, len(norm))
        return ir.Swizzle(v, norm, t, span=span)

    def component_read(self, v: ir.Expr, comps: str, span=None) -> ir.Expr:
        """:meth:`component` (``comps`` a swizzle, or an int: :meth:`vector_index`) of a value
        only read: a vector read component by component (``s[j].x`` of a vector array, a
        ``VecCons`` of one load per component) gives the loads of the picked components alone,
        so the others are not read -- the checked simulator would report reads of threadgroup
        memory no thread wrote, and the printed code reads less."""
        sw = self.vector_index(v, comps, span) if isinstance(comps, int) else self.component(v, comps, span)
        picked = _picked_loads(v, sw.components, sw.type, span)
        return picked if picked is not None else sw

    def vector_index(self, v: ir.Expr, k, span=None) -> ir.Expr:
        """``v[k]`` for a vector and a compile-time ``k`` in 0..n-1."""
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < v.type.n:
            raise self.error("vector components are indexed by a constant 0..n-1", span)
        return ir.Swizzle(v, T.COMPONENTS[k], v.type.elem, span=span)

    def to_bool(self, e: ir.Expr, span=None) -> ir.Expr:
        """``e`` as a condition (non-zero is true); vectors are not conditions."""
        if e.type == T.bool_:
            return e
        span = span or e.span
        self._need_value(e, span, "a condition")
        if isinstance(e.type, T.VectorType):
            raise self.error(f"a {e.type.name} vector cannot be a condition", span,
                             hint="compare components, e.g. v.x > 0")
        return self.convert(e, T.bool_, span)

    def once(self, e: ir.Expr, span=None) -> ir.Expr:
        """``e`` evaluated once: itself if it is a variable or a constant, else a
        temporary the front end declares (the ``once`` hook it gave)."""
        if isinstance(e, (ir.Var, ir.Const)) or self._once is None:
            return e
        return self._once(e, span)

    def fold(self, e: ir.Expr) -> ir.Expr:
        """``e`` folded to a constant when it is one (see :mod:`.folding`)."""
        return folding.fold(e)

    def join(self, a, b):
        """The type of a local assigned values of types ``a`` and ``b`` (see
        :meth:`~metalbench.semantics.rules.RuleSet.join`)."""
        return self.rules.join(a, b)

    # -- operators ------------------------------------------------------------------------
    def binop(self, op: str, a: ir.Expr, b: ir.Expr, span=None) -> ir.Expr:
        """``a op b`` for the arithmetic, bitwise, shift and comparison operators, and the
        language-defined ``/``, ``//``, ``%``, ``**`` (see the rule set); ``&&``/``||``
        (or ``and``/``or``) go to :meth:`logical`.

        >>> from metalbench.semantics import Semantics, MSL
        >>> e = Semantics(MSL).binop("<<", ir.Const(1, T.uint8), ir.Var("s", T.uint32))
        >>> e.type.name                           # shifts take the promoted left type
        'int32'
        """
        if op in ("&&", "||", "and", "or"):
            return self.logical({"&&": "and", "||": "or"}.get(op, op), a, b, span)
        if isinstance(a, DatetimeValue) or isinstance(b, DatetimeValue):
            return self.dt_binop(op, a, b, span)            # datetimes.py
        self._need_value(a, span)
        self._need_value(b, span)
        if op in SHIFT_OPS:
            return self._shift(op, a, b, span)
        if op in ir.COMPARE_OPS:
            try:
                t = self.rules.compare_type(a.type, b.type)
            except T.TypeError_ as e:
                raise self.error(str(e), span)
            rt = T.bool_ if isinstance(t, T.ScalarType) else T.vector_of(T.bool_, t.n)
            return self.fold(ir.BinOp(op, self.convert(a, t), self.convert(b, t), rt, span=span))
        t = self.common_type(a.type, b.type, span)
        if op == "/":
            return self.rules.divide(self, a, b, t, span)
        if op == "//":
            return self.rules.floor_divide(self, a, b, t, span)
        if op == "%":
            return self.rules.remainder(self, a, b, t, span)
        if op == "**":
            return self.rules.power(self, a, b, t, span)
        if op in BITWISE_OPS:
            if T.elem_of(t).is_float:
                raise self.error(f"the {op} operator needs integer operands, got {t.name}", span,
                                 hint="convert with int32(...) or uint32(...)")
            if self.rules.bool_bitwise_stays_bool and a.type == T.bool_ and b.type == T.bool_:
                t = T.bool_
            return self.fold(ir.BinOp(op, self.convert(a, t), self.convert(b, t), t, span=span))
        if op in ARITH_OPS:
            return self.fold(ir.BinOp(op, self.convert(a, t), self.convert(b, t), t, span=span))
        raise self.error(f"the {op} operator is not supported in kernels", span)

    def _shift(self, op, a, b, span):
        if T.elem_of(a.type).is_float or T.elem_of(b.type).is_float:
            bad = a.type if T.elem_of(a.type).is_float else b.type
            raise self.error(f"the {op} operator needs integer operands, got {bad.name}", span,
                             hint="convert with int32(...) or uint32(...)")
        ta, tb = self.rules.promote(a.type), self.rules.promote(b.type)
        if isinstance(tb, T.VectorType) and isinstance(ta, T.ScalarType):
            ta = T.vector_of(ta, tb.n)
        if isinstance(ta, T.VectorType) and isinstance(tb, T.VectorType) and ta.n != tb.n:
            raise self.error(f"cannot combine {ta.name} and {tb.name}: different lengths", span)
        return self.fold(ir.BinOp(op, self.convert(a, ta), self.convert(b, tb), ta, span=span))

    def unop(self, op: str, a: ir.Expr, span=None) -> ir.Expr:
        """``-a``, ``+a``, ``~a`` (integer promotion first) and ``!a`` / ``not a``.

        >>> from metalbench.semantics import Semantics
        >>> Semantics().unop("-", ir.Const(1, T.uint32)).value
        4294967295
        """
        if isinstance(a, DatetimeValue):
            return self.dt_unop(op, a, span)                # datetimes.py
        self._need_value(a, span)
        if op in ("!", "not"):
            return self.fold(ir.UnOp("!", self.to_bool(a, span), T.bool_, span=span))
        special = self.rules.unop(self, op, a, span)
        if special is not None:
            return special
        t = self.rules.promote(a.type)
        if op == "+":
            return self.convert(a, t, span)
        if op == "~" and T.elem_of(t).is_float:
            raise self.error(f"~ needs an integer operand, got {a.type.name}", span)
        if op not in ("-", "~"):
            raise self.error(f"the unary {op} operator is not supported in kernels", span)
        return self.fold(ir.UnOp(op, self.convert(a, t), t, span=span))

    def logical(self, op: str, a: ir.Expr, b: ir.Expr, span=None) -> ir.Expr:
        """Lazy ``a and b`` / ``a or b`` (op "and"/"or"); a constant left side folds.

        >>> from metalbench.semantics import Semantics
        >>> x = ir.Var("x", T.bool_)
        >>> Semantics().logical("and", ir.Const(True, T.bool_), x) is x
        True
        """
        a, b = self.to_bool(a, span), self.to_bool(b, span)
        if isinstance(a, ir.Const):
            if op == "and":
                return b if a.value else a
            return a if a.value else b
        return ir.Logical(op, a, b, T.bool_, span=span)

    def select(self, cond: ir.Expr, a: ir.Expr, b: ir.Expr, span=None) -> ir.Expr:
        """Lazy ``cond ? a : b`` in the common type of ``a`` and ``b``; a constant
        condition keeps only the taken side. (MSL's ``select(x, y, c)`` is ``c ? y : x``.)

        >>> from metalbench.semantics import Semantics
        >>> s = Semantics().select(ir.Var("c", T.bool_), ir.Const(1, T.int32), ir.Var("h", T.float16))
        >>> s.type.name
        'float16'
        """
        c = self.to_bool(cond, span)
        self._need_value(a, span)
        self._need_value(b, span)
        t = a.type if a.type == b.type else self.common_type(a.type, b.type, span)
        if isinstance(c, ir.Const):
            return self.convert(a if c.value else b, t, span)
        return ir.Select(c, self.convert(a, t), self.convert(b, t), t, span=span)


def _picked_loads(v, comps: str, t, span):
    """``comps`` of ``v`` as the loads of those components alone, where ``v`` is a vector
    read component by component (see ``component_read``); None where it is anything else."""
    if not isinstance(v, ir.VecCons) or len(v.args) != v.type.n or not all(isinstance(a, ir.Load) for a in v.args):
        return None
    picked = [v.args[T.COMPONENTS.index(c)] for c in comps]
    # (a vector access's alignment mark sits on component 0's load: kept where x is picked; a
    # read of other components alone is a scalar read on the GPU too)
    return picked[0] if len(picked) == 1 else ir.VecCons(t, picked, span=span)
