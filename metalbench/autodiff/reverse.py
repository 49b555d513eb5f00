"""Reverse-mode adjoint generation on the IR, per thread.

The adjoint kernel runs on the forward kernel's grid. Each thread

1. replays its forward statements (the *forward sweep*) in SSA form: every value it
   will need later keeps its own variable, stores to outputs are dropped;
2. walks its statements backwards (the *reverse sweep*), propagating adjoints:
   a read ``x[j]`` of a float input becomes an atomic add into ``x``'s gradient at
   ``j``; a write ``out[i] = e`` reads ``out``'s cotangent at ``i``; an
   ``atomic_add(out, j, v)`` passes ``out``'s cotangent at ``j`` to ``v``; ``if``/``else``
   and ``select`` take the forward branch (its condition is kept); operators and
   builtins apply their derivative rules (:mod:`metalbench.autodiff.rules`);
3. adds the adjoints of float scalar arguments into one-element outputs (a
   reduction over threads: a SIMD-group sum, then one atomic add per SIMD-group).

A ``for`` loop runs backwards; each reverse iteration restores the values the loop
carries from one iteration to the next that its derivatives need (from a
thread-local tape when the trip count is a small constant, else recomputed from the
loop's start), replays the iteration's body and reverses it. Values only the
forward sweep needs, or only the reverse, are dropped by dead-code elimination.

Entry point: :func:`generate` (kernel IR in, :class:`Adjoint` out).
"""
from __future__ import annotations

from .. import ir
from .. import types as T
from . import formula as B
from .dce import dce, drop_zero_adjoints, merge_ifs
from .loops import TAPE_LIMIT, Loops
from .lower import Lowering
from .prepare import Namer, NotDifferentiableError, names_in, prepare, unsupported
from .program import (Adjoint, PAssign, PBarrier, PFor, PIf, PLoad, PScatter, PTGLoad, PTGStore, acc_type, if_stmt,
                      mark_uses)
from .rules import builtin_rule, formula, rule_of_operator

__all__ = ["Generator", "generate", "Adjoint", "acc_type", "TAPE_LIMIT"]


class Generator(Lowering, Loops):
    """One adjoint generation: lowering (:class:`.lower.Lowering`), loop reversal
    (:class:`.loops.Loops`), and the sweeps and kernel assembly here."""

    def __init__(self, kernel: ir.KernelIR, aggregate: bool = True, device_tapes: bool = True,
                 wide_atomics: bool = True):
        self.k = kernel
        self.wide = wide_atomics
        self.aggregate = aggregate
        self.allow_device_tapes = device_tapes
        self.namer = Namer(names_in(kernel))
        self.vars: dict[str, ir.Var] = {}
        self.active_vars: set[str] = set()
        self.adjoints: dict[str, ir.Var] = {}
        self.adjoint_names: set[str] = set()
        self.env: dict = {}
        self.cse: list[dict] = [{}]
        self.depth = 0
        self.cond_depth = 0
        self.arrays: list[ir.ArrayDecl] = []
        self.notes: list[str] = []
        self.diff_bufs = {p.name for p in kernel.inputs if p.kind == "buffer" and p.type.is_float}
        self.scalars = {p.name: p for p in kernel.inputs if p.kind == "scalar"}
        for p in kernel.inputs:
            if p.kind == "scalar":
                v = ir.Var(p.name, p.type)
                self.env[p.name] = v
                if p.type.is_float:
                    self.active_vars.add(p.name)
        self.grad_params: dict[str, str] = {}
        self.ct_params: dict[str, str] = {}
        self.defs: dict[str, ir.Expr] = {}          # SSA variable -> the expression assigned to it
        self.device_tapes: list[tuple] = []         # (loop index, param name, tape type)
        self.sized_loops: list[tuple] = []          # (trip count atom, its definitions, span)
        # threadgroup memory: arrays, those holding active values, their adjoint arrays, phases
        self.tg_decls: dict[str, ir.ArrayDecl] = {}
        self.active_tg: set[str] = set()
        self.tg_adjoints: dict[str, ir.ArrayDecl] = {}
        self.phase = 0
        self.tg_store_phases: dict[str, set] = {}
        self.tg_loop_loads: list[tuple] = []        # (phase, array, node) of loads replayed in loops
        # blocks of the primal program: which block defines each variable (for store groups)
        self.blocks: list[int] = []
        self.block_of: dict[int, int] = {}          # id(primal statement list) -> block number
        self.def_block: dict[str, tuple] = {}       # variable -> (block, loop depth)
        self.pending_defs: list[str] = []
        self.store_groups: dict[tuple, object] = {}
        self.flag_names: set[str] = set()           # live across reversed loops, like adjoints

    def new_var(self, base: str, t, active: bool = False) -> ir.Var:
        v = ir.Var(self.namer(base), t)
        self.vars[v.name] = v
        self.def_block[v.name] = (self.blocks[-1] if self.blocks else 0, self.depth)
        if active:
            self.active_vars.add(v.name)
        return v

    def is_active(self, a) -> bool:
        return isinstance(a, ir.Var) and a.name in self.active_vars

    def adj(self, v: ir.Var) -> ir.Var:
        """The adjoint variable of active value ``v`` (a scalar argument's accumulator)."""
        a = self.adjoints.get(v.name)
        if a is None:
            a = self.adjoints[v.name] = self.new_var(f"adj_{v.name}", v.type)
            self.adjoint_names.add(a.name)
        return a

    def grad_param(self, name: str) -> str:
        g = self.grad_params.get(name)
        if g is None:
            g = self.grad_params[name] = self.namer(f"grad_{name}")
        return g

    def ct_param(self, name: str) -> str:
        c = self.ct_params.get(name)
        if c is None:
            c = self.ct_params[name] = self.namer(f"ct_{name}")
        return c

    def fwd(self, prog: list) -> list:
        out = []
        for p in prog:
            if isinstance(p, PAssign):
                out.append(ir.Assign(p.var, p.expr, span=p.span))
            elif isinstance(p, PLoad):
                out.append(ir.Assign(p.var, ir.Load(p.buf, p.index, p.var.type, span=p.span), span=p.span))
            elif isinstance(p, PIf):
                then = self.fwd(p.then) + [ir.Assign(v, a, span=p.span) for v, a, _ in p.phis if a is not None]
                orelse = self.fwd(p.orelse) + [ir.Assign(v, b, span=p.span) for v, _, b in p.phis if b is not None]
                out += if_stmt(p.cond, then, orelse, p.span)
            elif isinstance(p, PFor):
                out.extend(self.fwd_for(p))
            elif isinstance(p, PTGLoad):
                out.append(ir.Assign(p.var, ir.Load(p.buf, p.index, p.var.type, span=p.span), span=p.span))
            elif isinstance(p, PTGStore):
                out.append(ir.Store(p.buf, p.index, p.value, span=p.span))
            elif isinstance(p, PBarrier):
                out.append(p.stmt)
        return out

    def accumulate(self, target, contrib) -> list:
        """``adj(target) += contrib`` (nothing for constants and inactive values)."""
        if not self.is_active(target):
            return []
        a = self.adj(target)
        return [ir.Assign(a, B.add(a, B.cast(a.type, contrib)), span=contrib.span)]

    def zero(self, v) -> list:
        if v.name not in self.adjoints:
            return []
        a = self.adjoints[v.name]
        return [ir.Assign(a, B.const(0, a.type))]

    def apply(self, formulas, env: dict, operands: list, span) -> list:
        out = []
        for f, u in zip(formulas, operands):
            if f is None or not self.is_active(u):
                continue
            lets, e = formula(f).build(env, span, fresh=lambda base: self.namer(base))
            for v, x in lets:
                self.vars[v.name] = v
                out.append(ir.Assign(v, x, span=span))
            out += self.accumulate(u, e)
        return out

    def rev_assign(self, p: PAssign) -> list:
        if not p.active:
            return []
        e, g = p.expr, self.adj(p.var)
        out: list = []
        if isinstance(e, ir.BinOp):
            out = self.apply(rule_of_operator(e.op), {"a": e.a, "b": e.b, "result": p.var, "grad": g},
                             [e.a, e.b], p.span)
        elif isinstance(e, ir.UnOp):
            if e.op != "-":
                raise unsupported(f"the operator {e.op} on floats", e)
            out = self.apply(rule_of_operator("neg"), {"a": e.a, "result": p.var, "grad": g}, [e.a], p.span)
        elif isinstance(e, ir.Cast):
            out = self.accumulate(e.value, B.cast(e.value.type, g))
        elif isinstance(e, ir.Select):
            zero = B.const(0, g.type)
            out = self.accumulate(e.a, ir.Select(e.cond, g, zero, g.type)) + \
                self.accumulate(e.b, ir.Select(e.cond, zero, g, g.type))
        elif isinstance(e, ir.Call):
            from ..builtins import registry
            b = registry.get(e.name)
            rule = builtin_rule(e.name)
            env = dict(zip(b.rule.params, e.args))
            env.update(result=p.var, grad=g)
            if len(rule) != len(e.args):
                raise AssertionError(f"derivative rule of {e.name} has {len(rule)} formulas")
            out = self.apply(rule, env, e.args, p.span)
        elif isinstance(e, (ir.Var, ir.Const)):
            out = self.accumulate(e, g)
        else:
            raise unsupported(f"the expression {ir.dump(e)}", e)
        return out + (self.zero(p.var) if p.depth > 0 else [])

    def rev_load(self, p: PLoad) -> list:
        g = self.adj(p.var)
        gbuf = self.grad_param(p.buf)
        t = acc_type(p.var.type, self.wide)
        val = B.cast(t, g)
        add = ir.ExprStmt(ir.Atomic("add", gbuf, p.index, [val], t, span=p.span), span=p.span)
        out = [add]
        if self.aggregate and not p.distinct:
            # Threads of a SIMD-group often read the same element (a weight, a grid point
            # shared by channels): one atomic per SIMD-group instead of one per thread. The
            # test and the sum run over the same active lanes, also in divergent code.
            first = B.call("simd_broadcast_first", [p.index], p.span)
            same = B.call("simd_all", [B.binop("==", p.index, first)], p.span)
            s = self.new_var(f"sum_{p.var.name}", t)
            out = [ir.If(same, [ir.Assign(s, B.call("simd_sum", [val], p.span), span=p.span),
                                ir.If(B.call("simd_is_first", [], p.span),
                                      [ir.ExprStmt(ir.Atomic("add", gbuf, p.index, [s], t, span=p.span))])],
                         [add], span=p.span)]
        return out + (self.zero(p.var) if p.depth > 0 else [])

    def rev_scatter(self, p: PScatter) -> list:
        out = []
        if self.is_active(p.value):
            out_t = self.k.param(p.buf).type
            ct = ir.Load(self.ct_param(p.buf), p.index, out_t, span=p.span)
            contrib = B.cast(p.value.type, ct)
            if p.sign < 0:
                contrib = B.neg(contrib)
            out = self.accumulate(p.value, contrib)
        f = p.group.flag if p.group is not None else None
        if f is None:
            return out
        # the last store executed takes the cotangent; an atomic add before it gets none
        claim = [ir.Assign(f, B.const(True, T.bool_), span=p.span)] if p.store else []
        return if_stmt(ir.UnOp("!", f, T.bool_, span=p.span), out + claim, [], p.span)

    def store_flags(self) -> None:
        """A ``claimed`` flag for each group of stores one of which may overwrite another:
        several sites, or a store in a loop the index does not change in."""
        for g in self.store_groups.values():
            stores = [s for s in g.sites if s.store]
            if stores and (len(g.sites) > 1 or any(s.depth > g.depth for s in stores)):
                g.flag = self.new_var("claimed", T.bool_)
                self.flag_names.add(g.flag.name)

    def flag_resets(self, prog: list) -> list:
        b = self.block_of.get(id(prog))
        return [ir.Assign(g.flag, B.const(False, T.bool_)) for g in self.store_groups.values()
                if g.flag is not None and g.block == b]

    def rev_if(self, p: PIf) -> list:
        sides = []
        for k, block in ((1, p.then), (2, p.orelse)):
            pre = []
            for phi in p.phis:
                v, src = phi[0], phi[k]
                if self.is_active(v):
                    if src is not None:
                        pre += self.accumulate(src, self.adj(v))
                    pre += self.zero(v)
            sides.append(pre + self.rev(block))
        return if_stmt(p.cond, sides[0], sides[1], p.span)

    def rev(self, prog: list) -> list:
        out = self.flag_resets(prog)
        for p in reversed(prog):
            if isinstance(p, PAssign):
                out += self.rev_assign(p)
            elif isinstance(p, PLoad):
                out += self.rev_load(p)
            elif isinstance(p, PScatter):
                out += self.rev_scatter(p)
            elif isinstance(p, PIf):
                out += self.rev_if(p)
            elif isinstance(p, PFor):
                out += self.rev_for(p)
            elif isinstance(p, PTGLoad):
                out += self.rev_tg_load(p)
            elif isinstance(p, PTGStore):
                out += self.rev_tg_store(p)
            elif isinstance(p, PBarrier):
                out.append(ir.Barrier("threadgroup", ("mem_threadgroup",), span=p.stmt.span))
        return out

    # -- threadgroup memory: phases run backwards; an array's adjoint is a threadgroup array
    def tg_adjoint(self, name: str) -> str:
        a = self.tg_adjoints.get(name)
        if a is None:
            d = self.tg_decls[name]
            # float32: threadgroup atomics exist for 32-bit floats only
            a = self.tg_adjoints[name] = ir.ArrayDecl(self.namer(f"adj_{name}"), "threadgroup", T.float32,
                                                      d.shape, span=d.span)
        return a.name

    def rev_tg_load(self, p: PTGLoad) -> list:
        if not self.is_active(p.var):
            return []
        g = B.cast(T.float32, self.adj(p.var))
        out = [ir.ExprStmt(ir.Atomic("add", self.tg_adjoint(p.buf), p.index, [g], T.float32, span=p.span),
                           span=p.span)]
        return out + (self.zero(p.var) if p.depth > 0 else [])

    def rev_tg_store(self, p: PTGStore) -> list:
        # the store overwrote the element: what was read of it after this point belongs to
        # this value; earlier contents get nothing from those reads
        if p.buf not in self.active_tg:
            return []
        arr = self.tg_adjoint(p.buf)
        zero = ir.Store(arr, p.index, B.const(0, T.float32), span=p.span)
        if not self.is_active(p.value):
            return [zero]
        g = self.new_var(f"g_{p.buf}", T.float32)
        return [ir.Assign(g, ir.Load(arr, p.index, T.float32, span=p.span), span=p.span), zero] + \
            self.accumulate(p.value, B.cast(p.value.type, g))

    def tg_zero_init(self) -> list:
        """Every thread zeroes its share of the adjoint arrays, then a barrier."""
        if not self.tg_adjoints:
            return []
        u = T.uint32
        tpt = ir.ThreadAttr("threads_per_threadgroup", T.vector_of(u, 3))
        n = B.binop("*", ir.Swizzle(tpt, "x", u), B.binop("*", ir.Swizzle(tpt, "y", u), ir.Swizzle(tpt, "z", u)))
        lid = ir.ThreadAttr("thread_index_in_threadgroup", u)
        out = []
        for a in self.tg_adjoints.values():
            size = B.const(a.size, u)
            k = ir.Var(self.namer("z"), u)
            e = self.new_var("e", u)
            trips = B.binop("/", B.binop("+", size, B.binop("-", n, B.const(1, u))), n)
            body = [ir.Assign(e, B.binop("+", B.binop("*", k, n), lid)),
                    ir.If(B.binop("<", e, size), [ir.Store(a.name, e, B.const(0, T.float32))])]
            out.append(ir.For(k, B.const(0, u), trips, B.const(1, u), body))
        return out + [ir.Barrier("threadgroup", ("mem_threadgroup",))]

    def scalar_flush(self) -> list:
        out = []
        for name, p in self.scalars.items():
            if name not in self.adjoints:
                continue
            acc = self.adjoints[name]
            gbuf = self.grad_param(name)
            t = acc_type(p.type, self.wide)
            val = B.cast(t, acc)
            zero = B.const(0, T.uint32)
            if self.aggregate:
                s = self.new_var(f"sum_{name}", t)
                out += [ir.Assign(s, B.call("simd_sum", [val])),
                        ir.If(B.call("simd_is_first", []), [ir.ExprStmt(ir.Atomic("add", gbuf, zero, [s], t))])]
            else:
                out.append(ir.ExprStmt(ir.Atomic("add", gbuf, zero, [val], t)))
        return out

    def run(self) -> Adjoint:
        k = self.k
        body = prepare(k, self.namer)
        self.tg_decls = {n.name: n for n in ir.walk(body) if isinstance(n, ir.ArrayDecl)}
        self.name_active = self.name_activity(body)
        self.active_tg = {n for n in self.name_active if n in self.tg_decls}
        prog = self.block(body)
        for phase, buf, node in self.tg_loop_loads:
            if any(ph > phase for ph in self.tg_store_phases.get(buf, ())):
                raise unsupported(f"reading the threadgroup array {buf!r} in a loop of a phase a later phase "
                                  "overwrites", node, why="the reverse sweep replays the loop after the later phase",
                                  hint="copy the values into a local variable outside the loop, or use another array")
        self.store_flags()
        rev = self.rev(prog)
        flush = self.scalar_flush()
        fwd = self.fwd(prog)
        arrays = frozenset(a.name for a in self.arrays)
        stmts, _ = dce(self.tg_zero_init() + fwd + rev + flush, set(), arrays)
        stmts, _ = dce(drop_zero_adjoints(stmts, self.adjoint_names), set(), arrays)
        stmts = merge_ifs(stmts)
        used = {n.name for n in ir.walk(stmts) if isinstance(n, ir.Var)}
        loop_vars = {n.var.name for n in ir.walk(stmts) if isinstance(n, ir.For)}
        arrays_used = {n.buf for n in ir.walk(stmts) if isinstance(n, (ir.Load, ir.Store))}
        tg = [d for d in self.tg_decls.values()] + [a for a in self.tg_adjoints.values() if a.name in arrays_used]
        tg_bytes = sum(d.nbytes for d in tg)
        if tg_bytes > 32768:
            raise NotDifferentiableError(f"the adjoint of {k.name} needs {tg_bytes} bytes of threadgroup memory "
                                         "(its arrays and their adjoints); at most 32768 are available",
                                         next(iter(self.tg_decls.values())).span,
                                         hint="use smaller threadgroup arrays (tiles)")
        decls: list = tg + [a for a in self.arrays if a.name in arrays_used]
        for name in sorted(used - loop_vars - set(self.scalars)):
            v = self.vars[name]
            init = B.const(0, v.type) if name in self.adjoint_names else None
            decls.append(ir.Decl(ir.Var(v.name, v.type), init))
        final = decls + stmts
        params = [ir.Param(p.name, p.kind, p.type, p.ndim) for p in k.inputs]
        cts = {}
        for p in k.outputs:
            if p.name in self.ct_params:
                cts[p.name] = self.ct_params[p.name]
                params.append(ir.Param(self.ct_params[p.name], "buffer", p.type, p.ndim))
        grads = {}
        for p in k.inputs:
            if p.name in self.grad_params:
                grads[p.name] = self.grad_params[p.name]
                params.append(ir.Param(self.grad_params[p.name], "buffer", acc_type(p.type, self.wide),
                                       p.ndim if p.kind == "buffer" else 1, is_output=True, atomic=True))
        tapes = []
        for name, tt, loop in self.device_tapes:
            if name in {n.buf for n in ir.walk(final) if isinstance(n, ir.Store)}:
                tapes.append((name, tt, loop))
                params.append(ir.Param(name, "buffer", tt, 1, is_output=True))
        adj_ir = ir.KernelIR(f"{k.name}_vjp", params, final, [], list(k.globals), k.source)
        mark_uses(adj_ir)
        return Adjoint(adj_ir, k, grads, cts, self.notes, tapes, self.sizer() if tapes else None)


def generate(kernel: ir.KernelIR, aggregate: bool = True, device_tapes: bool = True,
             wide_atomics: bool = True) -> Adjoint:
    """The adjoint kernel of ``kernel`` (see the module docstring).

    ``aggregate`` sums a SIMD-group's contributions to one gradient element before
    its atomic add where the threads of a SIMD-group often share the element.
    ``device_tapes=False`` recomputes the carried values of loops whose trip count is
    known only at launch instead of storing them (no tape outputs to size).
    ``wide_atomics=False`` accumulates float64 gradients in float32 (GPU backends).
    """
    return Generator(kernel, aggregate, device_tapes, wide_atomics).run()
