"""Reversing loops: each reverse iteration restores the values the loop carries that its
derivatives need, from a thread-local tape (constant trip count), a device-memory tape
(an output of the adjoint kernel sized at launch by a one-thread *sizer* kernel), or by
recomputing them from the loop's start; then it replays the iteration and reverses it.
"""
from __future__ import annotations

from .. import ir
from .. import types as T
from . import formula as B
from .dce import dce
from .program import Carried, PFor, eager, mark_uses

# Largest thread-local tape (elements per loop) before a device tape or recomputation.
TAPE_LIMIT = 1024


class Loops:
    """The loop half of :class:`~metalbench.autodiff.reverse.Generator`."""

    def loop_var_at(self, p: PFor, it) -> ir.Stmt:
        vt = p.var.type
        off = B.binop("*", B.cast(vt, it), B.const(abs(p.step), vt))
        return ir.Assign(p.var, B.binop("+" if p.step > 0 else "-", p.start, off), span=p.span)

    def counter(self, p: PFor, base="it") -> ir.Var:
        return ir.Var(self.namer(base), p.n.type)

    def writeback(self, p: PFor, names=None) -> list:
        """``L = last`` for the carried values (``names``: a subset), as a parallel assignment."""
        cs = [c for c in p.carried if c.last is not None and c.last is not c.L and (names is None or c.name in names)]
        loop_vars = {c.L.name for c in p.carried}
        out, pairs = [], []
        for c in cs:
            src = c.last
            if isinstance(src, ir.Var) and src.name in loop_vars:
                tmp = self.new_var(f"{c.name}_next", c.L.type)
                out.append(ir.Assign(tmp, src, span=p.span))
                src = tmp
            pairs.append((c.L, src))
        return out + [ir.Assign(L, v, span=p.span) for L, v in pairs]

    def fwd_for(self, p: PFor) -> list:
        pre = [ir.Assign(c.L, c.entry, span=p.span) for c in p.carried if c.entry is not None]
        it = self.counter(p)
        body = [self.loop_var_at(p, it)]
        for c in p.carried:
            if c.name in p.tape:
                arr, index, tt = self.tape_slot(p, c, it)
                body.append(ir.Store(arr, index, B.cast(tt, c.L), span=p.span))
        body += self.fwd(p.body) + self.writeback(p)
        return pre + [ir.For(it, B.const(0, it.type), p.n, B.const(1, it.type), body, span=p.span)]

    def tape_slot(self, p: PFor, c: Carried, it):
        """(array, index, stored type) of carried value ``c`` at iteration ``it``."""
        arr, device, tt = p.tape[c.name]
        if not device:
            return arr, it, tt
        # device tape: iteration-major, so the threads of a SIMD-group touch consecutive elements
        pos = ir.ThreadAttr("thread_position_in_grid", T.vector_of(T.uint32, 3))
        tpg = ir.ThreadAttr("threads_per_grid", T.vector_of(T.uint32, 3))

        def comp(a, k):
            return ir.Swizzle(a, k, T.uint32)
        tid = B.binop("+", comp(pos, "x"), B.binop("*", comp(tpg, "x"),
                                                  B.binop("+", comp(pos, "y"), B.binop("*", comp(tpg, "y"),
                                                                                       comp(pos, "z")))))
        total = B.binop("*", comp(tpg, "x"), B.binop("*", comp(tpg, "y"), comp(tpg, "z")))
        return arr, B.binop("+", B.binop("*", B.cast(T.uint32, it), total), tid), tt

    def device_tape(self, p: PFor, needed: list, it, restore: list) -> bool:
        """Store ``needed`` in device-memory tapes (outputs of the adjoint kernel) when the
        trip count can be computed on the host before the launch; False otherwise."""
        defs = self.host_definitions(p.n) if self.allow_device_tapes else None
        if defs is None or any(c.L.type.itemsize > 4 for c in needed):
            return False
        loop = len(self.sized_loops)
        self.sized_loops.append((p.n, defs, p.span))
        for c in needed:
            tt = T.float32 if c.L.type.is_float else (T.uint32 if c.L.type.name.startswith("uint") else T.int32)
            name = self.namer(f"tape_{c.name}")
            p.tape[c.name] = (name, True, tt)
            self.device_tapes.append((name, tt, loop))
            arr, index, _ = self.tape_slot(p, c, it)
            restore.append(ir.Assign(c.L, B.cast(c.L.type, ir.Load(arr, index, tt, span=p.span)), span=p.span))
        return True

    def host_definitions(self, e):
        """The assignments (in order) that compute ``e`` from scalar arguments, shapes and
        constants only, or None when ``e`` depends on anything else."""
        order, seen = [], set()

        def visit(x) -> bool:
            for node in ir.walk(x):
                if isinstance(node, (ir.ThreadAttr, ir.Load, ir.Atomic, ir.FuncCall)):
                    return False
                if isinstance(node, ir.Call) and not eager(node):
                    return False
                if isinstance(node, ir.Var) and node.name not in self.scalars and node.name not in seen:
                    d = self.defs.get(node.name)
                    if d is None or not visit(d):
                        return False
                    seen.add(node.name)
                    order.append((self.vars[node.name], d))
            return True
        return order if visit(e) else None

    def sizer(self) -> ir.KernelIR | None:
        """A one-thread kernel writing each device-taped loop's trip count (run on sim)."""
        if not self.sized_loops:
            return None
        decls, body, declared = [], [], set()
        out = self.namer("mb_trip_counts")
        for k, (n, defs, span) in enumerate(self.sized_loops):
            for v, d in defs:
                if v.name not in declared:
                    declared.add(v.name)
                    decls.append(ir.Decl(ir.Var(v.name, v.type)))
                    body.append(ir.Assign(ir.Var(v.name, v.type), d))
            body.append(ir.Store(out, B.const(k, T.uint32), B.cast(T.int64, n)))
        params = [ir.Param(p.name, p.kind, p.type, p.ndim) for p in self.k.inputs]
        params.append(ir.Param(out, "buffer", T.int64, 1, is_output=True))
        kir = ir.KernelIR(f"{self.k.name}_trip_counts", params, decls + body, [], list(self.k.globals))
        mark_uses(kir)
        return kir

    def rev_for(self, p: PFor) -> list:
        body_rev = self.rev(p.body)
        replay = self.fwd(p.body)
        moves, gs = [], []
        for c in p.carried:
            if self.is_active(c.L):
                g = self.new_var(f"g_{c.name}", c.L.type)
                moves.append(ir.Assign(g, self.adj(c.L), span=p.span))
                gs.append((c, g))
        for c, _ in gs:
            moves += self.zero(c.L)
        for c, g in gs:
            moves += self.accumulate(c.last, g)
        core = replay + moves + body_rev
        # adjoints of values outside the loop accumulate across iterations: live after it
        core, live = dce(core, set(self.adjoint_names) | self.flag_names)
        needed = [c for c in p.carried if c.L.name in live]
        it = self.new_var("it", p.n.type)
        restore: list = []
        n_const = p.n.value if isinstance(p.n, ir.Const) else None
        if needed and n_const is not None and n_const * len(needed) <= TAPE_LIMIT:
            for c in needed:
                arr = self.namer(f"tape_{c.name}")
                p.tape[c.name] = (arr, False, c.L.type)
                self.arrays.append(ir.ArrayDecl(arr, "thread", c.L.type, (max(1, n_const),), span=p.span))
                restore.append(ir.Assign(c.L, ir.Load(arr, it, c.L.type, span=p.span), span=p.span))
        elif needed and self.device_tape(p, needed, it, restore):
            line = p.span.line if p.span is not None else "?"
            self.notes.append(f"line {line}: the loop's carried values "
                              f"({', '.join(sorted(c.name for c in needed))}) are stored in a device-memory tape "
                              "(trip count x threads elements each)")
        elif needed:
            closure = {c.name for c in needed}
            while True:
                sl, live_s = dce(self.fwd(p.body) + self.writeback(p, closure),
                                 {c.L.name for c in p.carried if c.name in closure})
                more = {c.name for c in p.carried if c.L.name in live_s} - closure
                if not more:
                    break
                closure |= more
            q = self.counter(p, "q")
            restore = [ir.Assign(c.L, c.entry, span=p.span) for c in p.carried
                       if c.name in closure and c.entry is not None]
            restore.append(ir.For(q, B.const(0, q.type), it, B.const(1, q.type), [self.loop_var_at(p, q)] + sl,
                                  span=p.span))
            line = p.span.line if p.span is not None else "?"
            self.notes.append(f"line {line}: the loop's carried values ({', '.join(sorted(closure))}) are "
                              "recomputed from the loop's start in each reverse iteration (time quadratic in "
                              "the trip count): its trip count is not known before the launch")
        r = self.counter(p, "r")
        last_it = B.binop("-", B.binop("-", p.n, B.const(1, p.n.type)), r)
        body = [ir.Assign(it, last_it, span=p.span)] + restore + [self.loop_var_at(p, it)] + core
        out = [ir.For(r, B.const(0, r.type), p.n, B.const(1, r.type), body, span=p.span)]
        for c in p.carried:
            if self.is_active(c.L):
                if c.entry is not None:
                    out += self.accumulate(c.entry, self.adj(c.L))
                out += self.zero(c.L)
        return out
