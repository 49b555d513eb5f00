"""Typed IR from small formulas: the derivative rules of builtins and operators.

A rule is written as text, like PyTorch's ``derivatives.yaml``: one formula per
argument in terms of the arguments (by their parameter names), ``result`` (the
call's value) and ``grad`` (the adjoint of the result). A formula may start with
``name = expr;`` bindings; it may use numbers, ``+ - * /``, comparisons,
``and``/``or``/``not``, ``a if c else b`` and calls of builtins (typed through the
registry), and thread attributes such as ``thread_index_in_simdgroup``::

    >>> from metalbench import ir, types as T
    >>> x = ir.Var("x", T.float32); r = ir.Var("r", T.float32); g = ir.Var("g", T.float32)
    >>> lets, e = Formula("grad * cos(x)").build({"x": x, "result": r, "grad": g})
    >>> ir.dump(e)
    '(g * cos(x))'
    >>> lets, e = Formula("t = x * x; grad / (1 + t)").build({"x": x, "result": r, "grad": g})
    >>> [ir.dump(v) + " = " + ir.dump(v2) for v, v2 in lets], ir.dump(e)
    (['t = (x * x)'], '(g / (1.0 + t))')

Numbers take the type of what they meet (a float formula keeps the argument's
float type; ``lane + 1`` stays an integer).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from .. import ir
from .. import types as T


# ----------------------------------------------------------------------------- typed helpers

def const(value, t):
    """A constant of type ``t`` (Python value converted)."""
    if t.is_bool:
        return ir.Const(bool(value), t)
    if t.is_float:
        return ir.Const(float(value), t)
    return ir.Const(int(value), t)


def cast(t, e):
    """``e`` converted to ``t`` (no node when it already has that type; constants fold)."""
    if e.type == t:
        return e
    if isinstance(e, ir.Const):
        return const(e.value, t)
    return ir.Cast(t, e, span=e.span)


def binop(op: str, a, b):
    """``a op b`` with C's usual arithmetic conversions; comparisons give bool.
    Identities (``x + 0``, ``x * 1``, ``x / 1``, ``x - 0``) fold away."""
    t = T.binary_result(a.type, b.type)
    a, b = cast(t, a), cast(t, b)
    if op in ("+", "-") and _is_const(b, 0):
        return a
    if op == "+" and _is_const(a, 0):
        return b
    if op in ("*", "/") and _is_const(b, 1):
        return a
    if op == "*" and _is_const(a, 1):
        return b
    rt = T.bool_ if op in ir.COMPARE_OPS else t
    return ir.BinOp(op, a, b, rt, span=a.span or b.span)


def _is_const(e, v) -> bool:
    return isinstance(e, ir.Const) and not isinstance(e.value, bool) and e.value == v


def add(a, b):
    """``a + b``, simplified when one side is a zero constant."""
    if _is_zero(a):
        return cast(b.type, b) if b.type == a.type else binop("+", a, b)
    if _is_zero(b):
        return a
    return binop("+", a, b)


def mul(a, b):
    return binop("*", a, b)


def neg(a):
    if isinstance(a, ir.Const) and not isinstance(a.value, bool):
        return const(-a.value, a.type)
    return ir.UnOp("-", a, a.type, span=a.span)


def select(c, a, b):
    t = T.binary_result(a.type, b.type) if a.type != b.type else a.type
    return ir.Select(cast(T.bool_, c), cast(t, a), cast(t, b), t, span=c.span)


def call(name: str, args: list, span=None):
    """A builtin call typed through the registry (arguments converted to its parameters)."""
    from ..builtins import registry
    b = registry.get(name)
    sig = b.typecheck([a.type for a in args], span)
    return ir.Call(name, [cast(t, a) for t, a in zip(sig.params, args)], sig.result, span=span)


def _is_zero(e) -> bool:
    return isinstance(e, ir.Const) and not isinstance(e.value, bool) and e.value == 0


# ----------------------------------------------------------------------------- formulas

class _Num:
    """A literal not yet typed: it takes the type of the operand it meets."""

    def __init__(self, value):
        self.value = value


@dataclass
class Formula:
    """A derivative formula (text), parsed once and built per call site."""
    text: str

    def __post_init__(self):
        try:
            tree = ast.parse("\n".join(part.strip() for part in self.text.split(";")))
        except SyntaxError as e:
            raise ValueError(f"derivative formula {self.text!r}: {e.msg}") from None
        *lets, last = tree.body
        if not isinstance(last, ast.Expr) or not all(isinstance(s, ast.Assign) and len(s.targets) == 1
                                                     and isinstance(s.targets[0], ast.Name) for s in lets):
            raise ValueError(f"derivative formula {self.text!r}: write `name = expr;` bindings, then one expression")
        self._lets = [(s.targets[0].id, s.value) for s in lets]
        self._expr = last.value

    def names(self) -> set[str]:
        """The free names the formula reads (arguments, result, grad, builtins...)."""
        bound = {n for n, _ in self._lets}
        out = set()
        for node in [v for _, v in self._lets] + [self._expr]:
            for n in ast.walk(node):
                if isinstance(n, ast.Name) and n.id not in bound:
                    out.add(n.id)
        return out

    def build(self, env: dict, span=None, fresh=None) -> tuple[list, ir.Expr]:
        """(bindings, expression): bindings are ``(Var, Expr)`` pairs to assign first
        (``fresh(base)`` names their variables), the expression reads them."""
        b = _Builder(dict(env), span, env["grad"].type if "grad" in env else T.float32)
        lets = []
        for name, node in self._lets:
            e = b.typed(b.expr(node), None)
            v = ir.Var(fresh(name) if fresh else name, e.type, span=span)
            lets.append((v, e))
            b.env[name] = v
        ftype = env["grad"].type if "grad" in env else None
        return lets, b.typed(b.expr(self._expr), ftype)


_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


class _Builder:
    def __init__(self, env, span, ftype):
        self.env = env
        self.span = span
        self.ftype = ftype          # what a number meeting no typed operand becomes

    def typed(self, v, t):
        if isinstance(v, _Num):
            return const(v.value, t or self.ftype)
        return v

    def expr(self, n):
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)) and not isinstance(n.value, bool):
            return _Num(n.value)
        if isinstance(n, ast.Name):
            if n.id in self.env:
                return self.env[n.id]
            if n.id in ir.THREAD_ATTRIBUTES and ir.THREAD_ATTRIBUTES[n.id] == "uint":
                return ir.ThreadAttr(n.id, T.uint32, span=self.span)
            raise ValueError(f"unknown name {n.id!r} in a derivative formula")
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            v = self.expr(n.operand)
            return _Num(-v.value) if isinstance(v, _Num) else neg(v)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            return ir.UnOp("!", cast(T.bool_, self.typed(self.expr(n.operand), T.bool_)), T.bool_, span=self.span)
        if isinstance(n, ast.BinOp) and type(n.op) in _BIN:
            return self.arith(_BIN[type(n.op)], self.expr(n.left), self.expr(n.right))
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and type(n.ops[0]) in _CMP:
            return self.arith(_CMP[type(n.ops[0])], self.expr(n.left), self.expr(n.comparators[0]))
        if isinstance(n, ast.BoolOp):
            vals = [cast(T.bool_, self.typed(self.expr(v), T.bool_)) for v in n.values]
            out = vals[0]
            for v in vals[1:]:
                out = ir.Logical("and" if isinstance(n.op, ast.And) else "or", out, v, T.bool_, span=self.span)
            return out
        if isinstance(n, ast.IfExp):
            a, b = self.expr(n.body), self.expr(n.orelse)
            c = self.typed(self.expr(n.test), T.bool_)
            if isinstance(a, _Num) and isinstance(b, _Num):
                a, b = const(a.value, self.ftype), const(b.value, self.ftype)
            a = self.typed(a, getattr(b, "type", None))
            b = self.typed(b, a.type)
            return select(c, a, b)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
            args = [self.expr(a) for a in n.args]
            typed = [a for a in args if not isinstance(a, _Num)]
            t = typed[0].type if typed else self.ftype
            return call(n.func.id, [self.typed(a, t) for a in args], self.span)
        raise ValueError(f"unsupported syntax in a derivative formula: {ast.unparse(n)}")

    def arith(self, op, a, b):
        if isinstance(a, _Num) and isinstance(b, _Num):
            if op in _CMP.values():
                return const(eval(f"{a.value!r} {op} {b.value!r}"), T.bool_)
            return _Num(eval(f"{a.value!r} {op} {b.value!r}"))
        if isinstance(a, _Num):
            a = const(a.value, b.type)
        if isinstance(b, _Num):
            b = const(b.value, a.type)
        return binop(op, a, b)
