"""Loops for the simulator's code generator (a mixin of :class:`metalbench.sim.codegen.Gen`):
uniform loops become Python loops; divergent ones run under lane masks with break and
continue sets, every loop with a step budget so that one that never ends reports its line.
"""
from __future__ import annotations

from .. import ir
from .gen_hoist import _Hoist, _loop_assigned


class _Loop:
    def __init__(self, n, simple, node):
        self.n, self.simple, self.node = n, simple, node
        self.on_continue = None  # emits what a Python-level continue must run first


def _assigns(stmts, name) -> bool:
    return any(isinstance(n, ir.Assign) and n.var.name == name for n in ir.walk(stmts))


def _has_return(stmts) -> bool:
    return any(isinstance(n, ir.Return) for n in ir.walk(stmts))


class Loops:
    """``for``/``while``/C ``for`` statements."""

    def loop(self, s):
        simple = self.U.simple(s)
        n = self.n = self.n + 1
        lp = _Loop(n, simple, s)
        self.keys[id(s)] = n
        h = _Hoist(_loop_assigned(s), len(self.lines), self.ind)
        self.hoists.append(h)
        try:
            if isinstance(s, ir.CFor):
                for x in s.init:
                    self.stmt(x)
                if self.lin_on:
                    # the init just made ``t`` offset + lane (for (uint t = lane; ...)), but
                    # the update and body reassign it: inside the loop it is not
                    self._lin_forget(ir.CFor([], None, s.update, s.body))
            if simple:
                self._simple_loop(s, lp)
            else:
                self._masked_loop(s, lp)
        finally:
            self.hoists.pop()
        self.lines[h.at:h.at] = h.lines

    def _cond(self, s):
        """(statements-emitting) condition of a loop: a value string or None (always)."""
        if isinstance(s, ir.For):
            op = ">" if isinstance(s.step, ir.Const) and s.step.value < 0 else "<"
            return f"(v_{s.var.name} {op} _stop{self.keys[id(s)]})"
        if s.cond is None:
            return None
        return self.ex(s.cond)

    def _update(self, s):
        if isinstance(s, ir.For):
            self.assign(s.var, f"(v_{s.var.name} + _step{self.keys[id(s)]})")
        elif isinstance(s, ir.CFor):
            for x in s.update:
                self.stmt(x)

    def _for_setup(self, s):
        key = self.keys[id(s)]
        self.emit(f"v_{s.var.name} = {self.ex(s.start)}")
        self.emit(f"_stop{key} = {self.ex(s.stop)}")
        self.emit(f"_step{key} = {self.ex(s.step)}")

    def _simple_loop(self, s, lp):
        self.loops.append(lp)
        if isinstance(s, ir.For) and not _assigns(s.body, s.var.name):
            st, sp, stp = self.ex(s.start), self.ex(s.stop), self.ex(s.step)
            it = self.new("i")
            self.emit(f"for {it} in range(int({st}), int({sp}), int({stp})):")
            self.ind += 1
            self.emit(f"v_{s.var.name} = {self.dtn(s.var.type)}.type({it})")
            self.block(s.body)
            self.ind -= 1
        else:
            if isinstance(s, ir.For):
                self._for_setup(s)
            do_while = isinstance(s, ir.While) and s.do_while

            def test():
                c = self._cond(s)
                if c is not None:
                    self.emit(f"if not {c}:")
                    self.emit("    break")

            if isinstance(s, (ir.For, ir.CFor)):
                lp.on_continue = lambda: self._update(s)
            elif do_while:
                def cont():
                    c = self._cond(s)
                    self.emit(f"if not {c}:")
                    self.emit("    break")
                lp.on_continue = cont
            self._steps_init(s, lp)
            self.emit("while True:")
            self.ind += 1
            self._step(lp)
            if not do_while:
                test()
            self.block(s.body)
            if do_while:
                test()
            else:
                self._update(s)
            self.ind -= 1
        self.loops.pop()

    def _steps_init(self, s, lp):
        # a step budget, so that a loop that never ends reports its line instead of hanging
        lp.k = self.node(s, None, None, "loop")
        self.emit(f"_st{lp.n} = 0")

    def _step(self, lp):
        self.emit(f"_st{lp.n} += 1")
        self.emit(f"if _st{lp.n} > _MAXS:")
        self.emit(f"    raise _rt.RunawayLoop({lp.k})")

    def _masked_loop(self, s, lp):
        n = lp.n
        entry = self.m
        if isinstance(s, ir.For):
            self._for_setup(s)
        has_ret = _has_return(s.body)
        do_while = isinstance(s, ir.While) and s.do_while
        self.emit(f"_brk{n} = False")
        if do_while:
            self.emit(f"_first{n} = True")
        self._steps_init(s, lp)
        self.emit("while True:")
        self.ind += 1
        self._step(lp)
        it = f"_it{n}"
        expr = f"_rt.minus({entry}, _brk{n})"
        if has_ret:
            expr = f"_rt.minus({expr}, _ret)"
        self.emit(f"{it} = {expr}")
        saved = (self.m, self.div)
        self.m, self.div = it, True
        if do_while:
            self.emit(f"if not _first{n}:")
            self.ind += 1
        c = self._cond(s)
        if c is not None:
            c = self.tmp(c, "c")
            self.emit(f"_brk{n} = _rt.or_(_brk{n}, _rt.andnot({it}, {c}))")
            self.emit(f"{it} = _rt.and_({it}, {c})")
        if do_while:
            self.emit("pass")
            self.ind -= 1
            self.emit(f"_first{n} = False")
        self.emit(f"if not _rt.any_({it}):")
        self.emit("    break")
        self.emit(f"_cnt{n} = False")
        self.loops.append(lp)
        self.block(s.body)
        self.loops.pop()
        if isinstance(s, (ir.For, ir.CFor)):
            um = f"_rt.minus({it}, _brk{n})"
            if has_ret:
                um = f"_rt.minus({um}, _ret)"
            self.m = self.tmp(um, "m")
            self._update(s)
        self.m, self.div = saved
        self.ind -= 1
