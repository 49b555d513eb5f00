"""Loop-invariant code motion for the simulator's code generator (a mixin of
:class:`metalbench.sim.codegen.Gen`): arithmetic that does not change inside a loop is
computed once before it, per loop entry, instead of once per iteration.
"""
from __future__ import annotations

from .. import ir


class _Hoist:
    """Where a loop's invariant expressions are computed: just before the loop, once
    per entry instead of once per iteration (``lines`` are spliced in at ``at``)."""

    def __init__(self, assigned, at, ind):
        self.assigned, self.at, self.ind = assigned, at, ind
        self.lines: list[str] = []
        self.cse: dict[str, str] = {}


def _loop_assigned(s) -> set:
    names = set()
    parts = [s.body] + ([s.init, s.update] if isinstance(s, ir.CFor) else [])
    for n in ir.walk(parts):
        if isinstance(n, (ir.Decl, ir.Assign, ir.For)):
            names.add(n.var.name)
    if isinstance(s, ir.For):
        names.add(s.var.name)
    return names


# Expressions worth computing once before a loop: arithmetic on lane vectors (index
# math). Calls, loads and StrideOf stay put: they may depend on guards in the body.
_HOISTABLE = (ir.BinOp, ir.UnOp, ir.Cast, ir.Select, ir.Logical)


class Hoisting:
    """Where a loop-invariant expression is computed (``Gen.hoists``: one context per
    enclosing loop, outermost first)."""

    def _expr_facts(self, e):
        """(pure and free of calls/StrideOf, variable names it reads), memoised."""
        f = self._facts.get(id(e))
        if f is None:
            ok, names = True, set()
            for n in ir.walk(e):
                if isinstance(n, ir.Var):
                    names.add(n.name)
                elif isinstance(n, (ir.Load, ir.Atomic, ir.FuncCall, ir.Call, ir.StrideOf, ir.BufArg, ir.MatrixMul)):
                    ok = False
            f = self._facts[id(e)] = (ok, frozenset(names), e)
        return f[0], f[1]

    def _invariant_ctx(self, e):
        """The outermost enclosing loop ``e`` does not vary in (None: the innermost one)."""
        ok, names = self._expr_facts(e)
        if not ok:
            return None
        for h in self.hoists:
            if not (names & h.assigned):
                return h
        return None

    def _hoist(self, h, make):
        """Emit ``make()``'s value before loop ``h``; returns its name(s)."""
        saved = (self.lines, self.ind, self._hoisting)
        self.lines, self.ind, self._hoisting = h.lines, h.ind, True
        try:
            v = make()
            out = []
            for c in (v if isinstance(v, list) else [v]):
                if not c.isidentifier():
                    name = h.cse.get(c)
                    if name is None:
                        name = h.cse[c] = self.tmp(c, "h")
                    c = name
                out.append(c)
        finally:
            self.lines, self.ind, self._hoisting = saved
        return out if isinstance(v, list) else out[0]
