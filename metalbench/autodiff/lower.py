"""Lowering a kernel body to the primal program (SSA form) with activity analysis.

A value is *active* when it is a float that depends differentiably on a float input
(an array argument or a float scalar): only active values get adjoints. Variables are
renamed per assignment and copied through (``env`` maps a source name to its current
atom); ``if`` merges by phi variables; a loop gets one variable per carried value.
"""
from __future__ import annotations

from .. import ir
from .. import types as T
from . import formula as B
from .prepare import NotDifferentiableError, assigned_names, unsupported
from .program import (Carried, PAssign, PBarrier, PFor, PIf, PLoad, PScatter, PTGLoad, PTGStore, StoreGroup,
                      cse_key, safe_everywhere, same_atom)
from .rules import builtin_rule, rule_of_operator


class Lowering:
    """The lowering half of :class:`~metalbench.autodiff.reverse.Generator`."""

    def active(self, e, var_active=None) -> bool:
        """True when expression ``e`` (source names, read through the environment) is a
        float value that depends differentiably on a float input. ``var_active(name)``
        overrides how a variable's activity is decided."""
        t = getattr(e, "type", None)
        if isinstance(t, T.VectorType):
            if t.elem.is_float and any(self.active(c, var_active) for c in ir.children(e) if isinstance(c, ir.Expr)):
                raise unsupported("a float vector value", e, hint="use scalar values (one variable per component)")
            return False
        if not (isinstance(t, T.ScalarType) and t.is_float):
            return False
        if isinstance(e, ir.Var):
            if var_active is not None:
                return var_active(e.name)
            return self.is_active(self.env.get(e.name))
        if isinstance(e, ir.Load):
            if e.buf in self.tg_decls:
                return var_active(e.buf) if var_active is not None else e.buf in self.active_tg
            return e.buf in self.diff_bufs
        if isinstance(e, (ir.BinOp, ir.Select)):
            return self.active(e.a, var_active) or self.active(e.b, var_active)
        if isinstance(e, ir.UnOp):
            return self.active(e.a, var_active)
        if isinstance(e, ir.Cast):
            return self.active(e.value, var_active)
        if isinstance(e, ir.Call):
            if builtin_rule(e.name) == "zero":
                return False
            return any(self.active(a, var_active) for a in e.args)
        return False

    def name_activity(self, body) -> set[str]:
        """Source variable names that may ever hold an active value (flow-insensitive):
        a loop's carried value is active when any assignment to it is."""
        names = {n for n in self.scalars if n in self.active_vars}
        assigns = [(n.var.name, n.value if isinstance(n, ir.Assign) else n.init) for n in ir.walk(body)
                   if isinstance(n, ir.Assign) or (isinstance(n, ir.Decl) and n.init is not None)]
        # a threadgroup array is active when some store puts an active value in it
        assigns += [(n.buf, n.value) for n in ir.walk(body) if isinstance(n, ir.Store) and n.buf in self.tg_decls]
        while True:
            grown = names | {n for n, e in assigns if self.active(e, names.__contains__)}
            if grown == names:
                return names
            names = grown

    def lookup(self, v: ir.Var):
        a = self.env.get(v.name)
        if a is None:        # read before any assignment (C leaves it undefined): a fresh variable
            a = self.env[v.name] = self.new_var(v.name, v.type)
        return a

    def copy(self, e):
        """``e`` with its variables read through the environment (an inactive value)."""
        if isinstance(e, ir.Var):
            return self.lookup(e)
        if isinstance(e, ir.Const):
            return e
        if isinstance(e, (ir.ShapeOf, ir.StrideOf, ir.NDimOf)):
            p = self.k.param(e.buf)
            if p is not None and p.is_output:     # the adjoint has its cotangent, of the same shape
                new = self.copy_plain(e)
                new.buf = self.ct_param(e.buf)
                return new
        new = object.__new__(type(e))
        for k, v in vars(e).items():
            if isinstance(v, ir.Expr):
                v = self.copy(v)
            elif isinstance(v, list):
                v = [self.copy(x) if isinstance(x, ir.Expr) else x for x in v]
            setattr(new, k, v)
        return new

    def copy_plain(self, e):
        new = object.__new__(type(e))
        for k, v in vars(e).items():
            setattr(new, k, self.copy(v) if isinstance(v, ir.Expr) else v)
        return new

    def bind(self, e, out: list, active: bool, base: str = "t"):
        key = cse_key(e, self.tg_decls)
        if key is not None:
            for scope in reversed(self.cse):
                hit = scope.get(key)
                if hit is not None:
                    return hit
        v = self.new_var(base, e.type, active)
        out.append(PAssign(v, e, active, self.depth, e.span))
        self.defs[v.name] = e
        if key is not None:
            self.cse[-1][key] = v
        return v

    def atom(self, e, out: list, base: str = "t"):
        """An atom (Var or Const) holding ``e``'s value, with statements computing it in ``out``."""
        if isinstance(e, ir.Const):
            return e
        if isinstance(e, ir.Var):
            return self.lookup(e)
        if not self.active(e):
            for n in ir.walk(e):
                if isinstance(n, ir.Load) and n.buf in self.tg_decls and self.depth > 0:
                    self.tg_loop_loads.append((self.phase, n.buf, n))
                if isinstance(n, ir.Atomic):
                    raise unsupported(f"using the value atomic_{n.op} returns", n,
                                      why="it depends on the order threads ran in", hint="call it as a statement")
            c = self.copy(e)
            if isinstance(c, (ir.Const, ir.Var)):
                return c
            return self.bind(c, out, False, base)
        if isinstance(e, ir.Load) and e.buf in self.tg_decls:
            idx = self.atom(e.index, out, "j")
            v = self.new_var(f"{e.buf}_v", e.type, True)
            out.append(PTGLoad(v, e.buf, idx, self.depth, e.span))
            if self.depth > 0:
                self.tg_loop_loads.append((self.phase, e.buf, e))
            return v
        if isinstance(e, ir.Load):
            idx = self.atom(e.index, out, "j")
            key = ("load", e.buf, cse_key(idx))
            for scope in reversed(self.cse):
                if key in scope:
                    return scope[key]
            v = self.new_var(f"{e.buf}_v", e.type, True)
            out.append(PLoad(v, e.buf, idx, self.depth, self.lane_distinct(idx), e.span))
            self.cse[-1][key] = v
            return v
        if isinstance(e, ir.BinOp):
            if rule_of_operator(e.op) is None:
                raise unsupported(f"the operator {e.op} on floats", e, hint="use fmod(x, y) for a float remainder")
            return self.bind(ir.BinOp(e.op, self.atom(e.a, out), self.atom(e.b, out), e.type, span=e.span),
                             out, True, base)
        if isinstance(e, ir.UnOp):
            return self.bind(ir.UnOp(e.op, self.atom(e.a, out), e.type, span=e.span), out, True, base)
        if isinstance(e, ir.Cast):
            return self.bind(ir.Cast(e.type, self.atom(e.value, out), span=e.span), out, True, base)
        if isinstance(e, ir.Call):
            if builtin_rule(e.name) is None:
                raise NotDifferentiableError(f"{e.name}() has no derivative rule", e.span,
                                             hint="write it with builtins that have one, or keep its argument "
                                                  "independent of the differentiated inputs")
            args = [self.atom(a, out) for a in e.args]
            return self.bind(ir.Call(e.name, args, e.type, span=e.span), out, True, e.name)
        if isinstance(e, ir.Select):
            c = self.atom(e.cond, out, "c")
            if safe_everywhere(e.a) and safe_everywhere(e.b):
                return self.bind(ir.Select(c, self.atom(e.a, out), self.atom(e.b, out), e.type, span=e.span),
                                 out, True, base)
            sides = []
            for side in (e.a, e.b):
                blk: list = []
                self.cse.append({})
                self.cond_depth += 1
                sides.append((blk, self.atom(side, blk)))
                self.cond_depth -= 1
                self.cse.pop()
            v = self.new_var(base, e.type, self.is_active(sides[0][1]) or self.is_active(sides[1][1]))
            out.append(PIf(c, sides[0][0], sides[1][0], [(v, sides[0][1], sides[1][1])], self.depth, e.span))
            return v
        if isinstance(e, ir.Atomic):
            raise unsupported(f"using the value atomic_{e.op} returns", e,
                              why="it depends on the order threads ran in", hint="call it as a statement")
        raise unsupported(f"the expression {ir.dump(e)}", e)

    def lane_distinct(self, idx) -> bool:
        """True when ``idx`` is the thread's position in the grid along x (maybe converted,
        maybe plus a value every thread shares): lanes of a SIMD-group read distinct elements."""
        e = idx
        for _ in range(8):
            if isinstance(e, ir.Var) and e.name in self.defs:
                e = self.defs[e.name]
            elif isinstance(e, ir.Cast) and T.elem_of(e.type).is_int:
                e = e.value
            elif isinstance(e, ir.BinOp) and e.op in ("+", "-") and isinstance(e.b, ir.Const):
                e = e.a
            else:
                break
        return (isinstance(e, ir.Swizzle) and e.components == "x" and isinstance(e.value, ir.ThreadAttr)
                and e.value.name == "thread_position_in_grid") or \
            (isinstance(e, ir.ThreadAttr) and e.name == "thread_position_in_grid")

    def block(self, stmts: list) -> list:
        out: list = []
        self.cse.append({})
        self.blocks.append(len(self.block_of))
        self.block_of[id(out)] = self.blocks[-1]
        for name in self.pending_defs:          # a loop's carried values change per iteration
            self.def_block[name] = (self.blocks[-1], self.depth)
        self.pending_defs = []
        for s in stmts:
            self.stmt(s, out)
        self.blocks.pop()
        self.cse.pop()
        return out

    def index_block(self, idx) -> tuple[int, int]:
        """(block, loop depth) where index atom ``idx`` is defined (0, 0 at the top)."""
        if isinstance(idx, ir.Var) and idx.name in self.def_block:
            return self.def_block[idx.name]
        return 0, 0

    def stmt(self, s, out: list) -> None:
        if isinstance(s, ir.Decl):
            if s.init is not None:
                self.env[s.var.name] = self.atom(s.init, out, s.var.name)
            else:
                self.env.pop(s.var.name, None)
        elif isinstance(s, ir.Assign):
            self.env[s.var.name] = self.atom(s.value, out, s.var.name)
        elif isinstance(s, ir.Store) and s.buf in self.tg_decls:
            idx, val = self.atom(s.index, out, "j"), self.atom(s.value, out, "v")
            out.append(PTGStore(s.buf, idx, val, s.span))
            self.tg_store_phases.setdefault(s.buf, set()).add(self.phase)
        elif isinstance(s, ir.Store):
            self.output(s.buf, s.index, s.value, 1, s, out)
        elif isinstance(s, ir.ArrayDecl):
            if s.init is not None:
                raise unsupported(f"the initialised threadgroup array {s.name!r}", s, hint="store its values in the body")
        elif isinstance(s, ir.Barrier):
            if self.depth > 0 or self.cond_depth > 0:
                raise unsupported("a barrier inside an if or a loop", s,
                                  why="the reverse sweep runs the phases barriers separate backwards, with barriers "
                                      "every thread reaches",
                                  hint="keep barriers at the top level of the body (an early return before a barrier "
                                       "also puts it under a condition)")
            out.append(PBarrier(s))
            self.phase += 1
        elif isinstance(s, ir.ExprStmt):
            e = s.expr
            if isinstance(e, ir.Atomic):
                p = self.k.param(e.buf)
                if p is not None and p.is_output and p.type.is_float:
                    if e.op not in ("add", "sub"):
                        raise unsupported(f"atomic_{e.op} on the float output {e.buf!r}", e,
                                          why="its result depends on which thread's value won",
                                          hint="use atomic_add, or store the value")
                    self.output(e.buf, e.index, e.args[0], 1 if e.op == "add" else -1, e, out)
            # other expression statements have no effect on the outputs' values
        elif isinstance(s, ir.If):
            self.if_(s, out)
        elif isinstance(s, ir.For):
            self.for_(s, out)
        else:
            raise unsupported(f"the statement {type(s).__name__}", s)

    def output(self, buf, index, value, sign, node, out):
        p = self.k.param(buf)
        if p is None or not p.is_output:
            raise unsupported(f"writing {buf!r}", node, hint="write outputs only")
        if not p.type.is_float:
            return
        idx = self.atom(index, out, "j")
        key = ("store", buf, cse_key(idx, self.tg_decls))
        store = isinstance(node, ir.Store)
        group = None
        if key[2] is not None:
            group = self.store_groups.get(key)
            if group is None:
                group = self.store_groups[key] = StoreGroup(key, *self.index_block(idx))
        val = self.atom(value, out, "v") if self.active(value) else B.const(0, p.type)
        # an inactive store still overwrites: it takes the cotangent (and passes it nowhere)
        ps = PScatter(buf, idx, val, sign, node.span, store=store, depth=self.depth, group=group)
        out.append(ps)
        if group is not None:
            group.sites.append(ps)

    def if_(self, s: ir.If, out: list) -> None:
        c = self.atom(s.cond, out, "c")
        saved = dict(self.env)
        self.cond_depth += 1
        then = self.block(s.then)
        env_t, self.env = self.env, dict(saved)
        orelse = self.block(s.orelse)
        env_e, self.env = self.env, dict(saved)
        self.cond_depth -= 1
        phis = []
        for name in sorted(set(env_t) | set(env_e)):
            at, ae = env_t.get(name), env_e.get(name)
            if same_atom(at, ae):
                self.env[name] = at
                continue
            t = (at or ae).type
            v = self.new_var(name, t, self.is_active(at) or self.is_active(ae))
            phis.append((v, at, ae))
            self.env[name] = v
        out.append(PIf(c, then, orelse, phis, self.depth, s.span))

    def for_(self, s: ir.For, out: list) -> None:
        vt = s.var.type
        start = B.cast(vt, self.atom(s.start, out, "start"))
        stop = B.cast(vt, self.atom(s.stop, out, "stop"))
        step = int(s.step.value)
        if step == 0:
            raise unsupported("a loop with step 0", s)
        n = self.trip_count(start, stop, step, vt, out)
        types = {}
        for node in ir.walk(s.body):
            if isinstance(node, (ir.Assign, ir.Decl)):
                types[node.var.name] = node.var.type
        carried = []
        for name in sorted(assigned_names(s.body)):
            entry = self.env.get(name)
            L = self.new_var(f"{name}_L", types[name], name in self.name_active or self.is_active(entry))
            carried.append(Carried(name, L, entry))
            self.pending_defs.append(L.name)
        saved = dict(self.env)
        lv = self.new_var(s.var.name, vt)
        self.pending_defs.append(lv.name)
        self.env[s.var.name] = lv
        for c in carried:
            self.env[c.name] = c.L
        self.depth += 1
        body = self.block(s.body)
        self.depth -= 1
        for c in carried:
            c.last = self.env.get(c.name)
            if self.is_active(c.last) and not self.is_active(c.L):
                raise AssertionError(f"activity of {c.name} in the loop at {s.span}")
        self.env = saved
        for c in carried:
            self.env[c.name] = c.L
        out.append(PFor(lv, start, step, n, body, carried, self.depth, s.span))

    def trip_count(self, start, stop, step, vt, out):
        if isinstance(start, ir.Const) and isinstance(stop, ir.Const):
            return B.const(len(range(int(start.value), int(stop.value), step)), vt)
        lo, hi = (start, stop) if step > 0 else (stop, start)
        span = B.binop("-", hi, lo)
        cnt = B.binop("/", B.binop("+", span, B.const(abs(step) - 1, vt)), B.const(abs(step), vt))
        return self.bind(B.select(B.binop(">", hi, lo), cnt, B.const(0, vt)), out, False, "n")
