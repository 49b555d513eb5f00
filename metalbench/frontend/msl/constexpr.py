"""Calls of ``constexpr`` header functions with constant arguments, evaluated while
translating, as C++ evaluates them: such a call is a constant expression, so it may size
an array, initialise a ``static constexpr`` class member or be a template argument (MLX's
quantised loaders: ``static constant constexpr const short pack_factor =
get_pack_factor<bits, 8>();``)::

    >>> from metalbench.frontend.msl import translate_kernel
    >>> from metalbench import ir, types as T
    >>> hdr = ("template <int bits> inline constexpr short per_byte() {\\n"
    ...        "  constexpr int pow2 = (bits & (bits - 1)) == 0;\\n"
    ...        "  return pow2 ? 8 / bits : 1; }")
    >>> k = translate_kernel("k", "threadgroup float t[per_byte<4>()]; out[0] = per_byte<4>();", hdr,
    ...                      inputs=[], outputs=[("out", T.float32, 1)])
    >>> print(ir.dump(k.body).splitlines()[-1])
    out[0] = 2.0

Only straight-line bodies are evaluated here (declarations, assignments, ``if`` on
constants, ``return``); a body doing anything else stays a call, evaluated at run time.
"""
from __future__ import annotations

import dataclasses

from ... import ir
from ... import types as T
from ...semantics.folding import fold


class _NotConstant(Exception):
    """The body does something this evaluator does not (or a value is not constant)."""


_FALLS_THROUGH = object()


def is_constexpr(fd, code: str) -> bool:
    """Whether the header function ``fd`` (a :class:`~.symbols.FuncDef`) is declared
    ``constexpr``: the qualifier the parser masked in ``code`` (the header's text) before
    its body, the blanks the masking left before the definition included."""
    start = fd.node.start_byte
    while start > 0 and code[start - 1] in " \t\r\n":
        start -= 1
    end = fd.node.child_by_field_name("body").start_byte
    return any(q == "constexpr" for p, q in fd.quals.items() if isinstance(p, int) and start <= p < end)


def call_value(f: ir.Function, args: list, functions: dict | None = None) -> ir.Const | None:
    """The value of ``f(*args)`` when every argument is a constant and ``f``'s body is
    straight-line code over constants, calling only such functions of ``functions`` (name
    -> ``ir.Function``: ``constexpr int outer(bool p) { return inner(p) + 1; }``); None when
    it is not (the call then runs)."""
    try:
        return _call(f, args, _Calls(functions or {}))
    except _NotConstant:
        return None


class _Calls(dict):
    """The functions a constant evaluation may call, and how deep it is (C++ bounds it too)."""

    def __init__(self, functions):
        super().__init__(functions)
        self.depth = 0


def _call(f, args, calls) -> ir.Const:
    args = [fold(a) for a in args]
    if len(args) != len(f.params) or f.ret is None or not isinstance(f.ret, T.ScalarType) or \
            not all(isinstance(a, ir.Const) and isinstance(a.type, T.ScalarType) for a in args) or calls.depth > 64:
        raise _NotConstant
    env = {p.name: a for p, a in zip(f.params, args)}
    calls.depth += 1
    try:
        r = _run(f.body, env, calls)
    finally:
        calls.depth -= 1
    if r is _FALLS_THROUGH:
        raise _NotConstant
    return ir.Const(r.value, r.type) if r.type == f.ret else fold(ir.Cast(f.ret, r))


def inlined_value(stmts: list, res) -> ir.Const | None:
    """The constant that the statements of an inlined call (a member function, a function
    taking objects) leave in ``res``, when they are straight-line code over constants writing
    only variables they declare -- nothing is lost by not running them -- else None. So
    ``static constexpr int n() { return 4; }`` gives a constant ``Cfg::n()`` (an array size).

    >>> r = ir.Var("_n", T.int32)
    >>> inlined_value([ir.Decl(r), ir.Assign(r, ir.Const(4, T.int32))], r)
    Const(value=4, type=int32)
    >>> inlined_value([ir.Assign(r, ir.Const(4, T.int32))], r) is None     # writes the caller's variable
    True
    """
    if not isinstance(res, ir.Var) or not isinstance(res.type, T.ScalarType):
        return None
    declared, written = set(), set()

    def scan(ss):
        for st in ss:
            if isinstance(st, ir.Decl):
                declared.add(st.var.name)
            elif isinstance(st, ir.Assign):
                written.add(st.var.name)
            elif isinstance(st, ir.If):
                scan(st.then)
                scan(st.orelse or [])
    scan(stmts)
    if not written <= declared or res.name not in declared:
        return None
    env: dict = {}
    try:
        if _run(stmts, env) is not _FALLS_THROUGH or res.name not in env:
            return None
    except _NotConstant:
        return None
    return env[res.name]


def _run(stmts, env, calls=None):
    for s in stmts:
        if isinstance(s, ir.Decl) and s.init is None and isinstance(s.var.type, T.ScalarType):
            continue                    # declared, not yet set: reading it is not constant (_subst)
        if isinstance(s, (ir.Decl, ir.Assign)):
            value = s.init if isinstance(s, ir.Decl) else s.value
            if value is None or not isinstance(s.var.type, T.ScalarType):
                raise _NotConstant
            env[s.var.name] = _const(value, env, calls)
        elif isinstance(s, ir.If):
            cond = _const(s.cond, env, calls)
            r = _run(s.then if cond.value else s.orelse, env, calls)
            if r is not _FALLS_THROUGH:
                return r
        elif isinstance(s, ir.Return) and s.value is not None:
            return _const(s.value, env, calls)
        else:
            raise _NotConstant
    return _FALLS_THROUGH


def _const(e, env, calls=None) -> ir.Const:
    v = fold(_subst(e, env, calls))
    if not isinstance(v, ir.Const):
        raise _NotConstant
    return v


def _subst(e, env, calls=None):
    """``e`` with the variables of ``env`` replaced by their constant values, and calls of
    the functions in ``calls`` by theirs."""
    if isinstance(e, ir.Var):
        if e.name not in env:
            raise _NotConstant
        c = env[e.name]
        return ir.Const(c.value, c.type, span=e.span) if c.type == e.type else fold(ir.Cast(e.type, c))
    if isinstance(e, (ir.Const, ir.ThreadAttr)) or not dataclasses.is_dataclass(e):
        return e
    if isinstance(e, ir.FuncCall) and calls is not None and e.func in calls:
        r = _call(calls[e.func], [_subst(a, env, calls) for a in e.args], calls)
        return ir.Const(r.value, r.type, span=e.span)
    if isinstance(e, (ir.Load, ir.Atomic, ir.FuncCall)):
        raise _NotConstant          # memory, atomics and other calls: not evaluated here
    changes = {}
    for f in dataclasses.fields(e):
        v = getattr(e, f.name)
        if isinstance(v, ir.Expr):
            changes[f.name] = _subst(v, env, calls)
        elif isinstance(v, list) and any(isinstance(x, ir.Expr) for x in v):
            changes[f.name] = [_subst(x, env, calls) if isinstance(x, ir.Expr) else x for x in v]
    return dataclasses.replace(e, **changes) if changes else e
