"""Lane-linear value analysis for the simulator's code generator (a mixin of
:class:`metalbench.sim.codegen.Gen`): on a 1-D launch, which integer values are
``offset + lane`` (``offset`` a Python int), so that device accesses at them are slices
instead of gathers and scatters, and bounds guards ``i < n`` a scalar test per chunk.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from .. import types as T


class LinearAccess:
    """``Gen.lin``: variable -> (offset name, no-wrap conditions), kept per statement."""

    def _lin_before(self, s):
        self._lin_pending = None
        if isinstance(s, (ir.Decl, ir.Assign)):
            v = s.init if isinstance(s, ir.Decl) else s.value
            f = None if (v is None or self.div) else self._lin(v)
            self._lin_pending = (s.var.name, f)
        elif isinstance(s, (ir.If, ir.For, ir.While, ir.CFor)):
            self._lin_forget(s)

    def _lin_after(self, s):
        if isinstance(s, (ir.Decl, ir.Assign)):
            name, f = self._lin_pending
            if f is None:
                self.lin.pop(name, None)
            else:
                self.lin[name] = f
        elif isinstance(s, (ir.If, ir.For, ir.While, ir.CFor)):
            self._lin_forget(s)

    def _lin_forget(self, s):
        for n in ir.walk(s):
            if isinstance(n, (ir.Decl, ir.Assign, ir.For)):
                self.lin.pop(n.var.name, None)

    def _lin(self, e):
        """(offset, conditions) when ``e`` is offset + lane on every lane, provided the
        conditions (no step of the chain wrapped) hold at run time; else None."""
        if isinstance(e, ir.Var):
            return self.lin.get(e.name)
        if (isinstance(e, ir.Swizzle) and e.components == "x" and isinstance(e.value, ir.ThreadAttr)
                and e.value.name == "thread_position_in_grid"):
            self.uses_lin = True
            return ("_lin0", ())
        t = e.type
        if not (isinstance(t, T.ScalarType) and t.is_int):
            return None
        if isinstance(e, ir.Cast) and isinstance(e.value.type, T.ScalarType) and e.value.type.is_int:
            f = self._lin(e.value)
            return None if f is None else (f[0], f[1] + (self._lin_fits(f[0], t),))
        if isinstance(e, ir.BinOp) and e.op in ("+", "-") and e.a.type == t and e.b.type == t:
            pairs = [(e.a, e.b)] + ([(e.b, e.a)] if e.op == "+" else [])
            for x, u in pairs:
                if not self.U.is_uniform(u) or not self._expr_facts(u)[0]:
                    continue
                f = self._lin(x)
                if f is None:
                    continue
                o = self.tmp(f"{f[0]} {e.op} int({self.ex(u)})", "lo")
                return (o, f[1] + (self._lin_fits(o, t),))
        return None

    def _lin_guard(self, e):
        """``i < n`` (or ``n > i``) with ``i`` offset + lane and ``n`` uniform: a scalar
        True when every lane of the chunk passes (the usual bounds guard), skipping the
        comparison and the mask work it causes; else the comparison."""
        t = e.a.type
        if not (isinstance(t, T.ScalarType) and t.is_int and e.b.type == t):
            return None
        x, u = (e.a, e.b) if e.op == "<" else (e.b, e.a)
        if not self.U.is_uniform(u) or not self._expr_facts(u)[0]:
            return None
        f = self._lin(x)
        if f is None:
            return None
        n = self.tmp(f"int({self.ex(u)})", "n")
        cond = " and ".join(f[1] + (f"{f[0]} + _L <= {n}",))
        return f"({self.const(True, T.bool_)} if {cond} else {self._bin(e.op, self.ex(e.a), self.ex(e.b), t, e)})"

    def _lin_fits(self, o, t):
        info = np.iinfo(t.np)
        return f"{int(info.min)} <= {o} and {o} + _L <= {int(info.max) + 1}"

    def _lin_cond(self, f, size):
        return " and ".join(f[1] + (f"0 <= {f[0]}", f"{f[0]} + _L <= {size}"))
