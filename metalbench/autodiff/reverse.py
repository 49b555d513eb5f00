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

from dataclasses import dataclass, field

from .. import ir
from .. import types as T
from . import formula as B
from .dce import dce, drop_zero_adjoints, merge_ifs
from .prepare import Namer, NotDifferentiableError, assigned_names, names_in, prepare, unsupported
from .rules import builtin_rule, formula, rule_of_operator

# Largest thread-local tape (elements per loop) before carried values are recomputed instead.
TAPE_LIMIT = 1024


# ----------------------------------------------------------------------------- the primal program

@dataclass(eq=False)
class PAssign:
    var: ir.Var
    expr: ir.Expr
    active: bool
    depth: int
    span: object = None


@dataclass(eq=False)
class PLoad:
    """``var = buf[index]``: a read of a differentiable input; ``distinct`` when no two
    threads of a SIMD-group read the same element (the index is the thread's position)."""
    var: ir.Var
    buf: str
    index: ir.Expr
    depth: int
    distinct: bool
    span: object = None


@dataclass(eq=False)
class PScatter:
    """A store (or atomic add, ``sign=-1`` for atomic_sub) of ``value`` into output ``buf``."""
    buf: str
    index: ir.Expr
    value: ir.Expr
    sign: int
    span: object = None


@dataclass(eq=False)
class PIf:
    cond: ir.Expr
    then: list
    orelse: list
    phis: list                  # (merged var, value from then or None, value from else or None)
    depth: int
    span: object = None


@dataclass(eq=False)
class Carried:
    name: str
    L: ir.Var                   # the loop's variable for it: its value at the start of an iteration
    entry: object               # its value before the loop (atom or None)
    last: object = None         # its value at the end of the body (atom or None)


@dataclass(eq=False)
class PFor:
    var: ir.Var                 # the loop variable (assigned from the iteration number)
    start: ir.Expr
    step: int
    n: ir.Expr                  # trip count (atom)
    body: list
    carried: list
    depth: int
    span: object = None
    tape: dict = field(default_factory=dict)     # carried name -> thread array name


@dataclass
class Adjoint:
    """A generated adjoint kernel and how its parameters relate to the forward kernel's.

    ``grads`` maps each forward input (array or float scalar) that gets a gradient to
    the adjoint's output holding it; ``cotangents`` maps each forward output whose
    cotangent the adjoint reads to the adjoint's input; ``notes`` say how loops were
    reversed.
    """
    ir: ir.KernelIR
    forward: ir.KernelIR
    grads: dict
    cotangents: dict
    notes: list
    tapes: list = field(default_factory=list)     # (output name, element type, loop number)
    sizer: ir.KernelIR | None = None               # writes each taped loop's trip count (sim, grid 1)


def acc_type(t: T.ScalarType, wide: bool = True) -> T.ScalarType:
    """The type gradients of ``t`` values accumulate in: float32, and float64 for float64
    where 64-bit atomics exist (``wide``: the simulator; metalbench's GPU atomics are 32-bit)."""
    return t if (wide and t.itemsize >= 8) else T.float32


# ----------------------------------------------------------------------------- the generator

class Generator:
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

    # -- names and variables ---------------------------------------------------------------
    def new_var(self, base: str, t, active: bool = False) -> ir.Var:
        v = ir.Var(self.namer(base), t)
        self.vars[v.name] = v
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

    # -- activity ---------------------------------------------------------------------------
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
        while True:
            grown = names | {n for n, e in assigns if self.active(e, names.__contains__)}
            if grown == names:
                return names
            names = grown

    # -- lowering to the primal program -----------------------------------------------------
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
        key = _key(e)
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
                if isinstance(n, ir.Atomic):
                    raise unsupported(f"using the value atomic_{n.op} returns", n,
                                      why="it depends on the order threads ran in", hint="call it as a statement")
            c = self.copy(e)
            if isinstance(c, (ir.Const, ir.Var)):
                return c
            return self.bind(c, out, False, base)
        if isinstance(e, ir.Load):
            idx = self.atom(e.index, out, "j")
            key = ("load", e.buf, _key(idx))
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
            if _eager(e.a) and _eager(e.b):
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
            elif isinstance(e, ir.BinOp) and e.op == "+" and isinstance(e.b, ir.Const):
                e = e.a
            else:
                break
        return (isinstance(e, ir.Swizzle) and e.components == "x" and isinstance(e.value, ir.ThreadAttr)
                and e.value.name == "thread_position_in_grid") or \
            (isinstance(e, ir.ThreadAttr) and e.name == "thread_position_in_grid")

    def block(self, stmts: list) -> list:
        out: list = []
        self.cse.append({})
        for s in stmts:
            self.stmt(s, out)
        self.cse.pop()
        return out

    def stmt(self, s, out: list) -> None:
        if isinstance(s, ir.Decl):
            if s.init is not None:
                self.env[s.var.name] = self.atom(s.init, out, s.var.name)
            else:
                self.env.pop(s.var.name, None)
        elif isinstance(s, ir.Assign):
            self.env[s.var.name] = self.atom(s.value, out, s.var.name)
        elif isinstance(s, ir.Store):
            self.output(s.buf, s.index, s.value, 1, s, out)
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
        if not p.type.is_float or not self.active(value):
            return
        idx = self.atom(index, out, "j")
        val = self.atom(value, out, "v")
        if self.is_active(val):
            out.append(PScatter(buf, idx, val, sign, node.span))

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
            if _same(at, ae):
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
        saved = dict(self.env)
        lv = self.new_var(s.var.name, vt)
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

    # -- emitting the forward sweep ---------------------------------------------------------
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
                out += _if(p.cond, then, orelse, p.span)
            elif isinstance(p, PFor):
                out.extend(self.fwd_for(p))
        return out

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

    # -- emitting the reverse sweep ---------------------------------------------------------
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
        out_t = self.k.param(p.buf).type
        ct = ir.Load(self.ct_param(p.buf), p.index, out_t, span=p.span)
        contrib = B.cast(p.value.type, ct)
        if p.sign < 0:
            contrib = B.neg(contrib)
        return self.accumulate(p.value, contrib)

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
        return _if(p.cond, sides[0], sides[1], p.span)

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
                if isinstance(node, ir.Call) and not _eager(node):
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
        _mark_uses(kir)
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
        core, live = dce(core, set(self.adjoint_names))
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

    def rev(self, prog: list) -> list:
        out = []
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
        return out

    # -- the kernel -------------------------------------------------------------------------
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
        self.name_active = self.name_activity(body)
        prog = self.block(body)
        rev = self.rev(prog)
        flush = self.scalar_flush()
        fwd = self.fwd(prog)
        arrays = frozenset(a.name for a in self.arrays)
        stmts, _ = dce(fwd + rev + flush, set(), arrays)
        stmts, _ = dce(drop_zero_adjoints(stmts, self.adjoint_names), set(), arrays)
        stmts = merge_ifs(stmts)
        used = {n.name for n in ir.walk(stmts) if isinstance(n, ir.Var)}
        loop_vars = {n.var.name for n in ir.walk(stmts) if isinstance(n, ir.For)}
        arrays_used = {n.buf for n in ir.walk(stmts) if isinstance(n, (ir.Load, ir.Store))}
        decls: list = [a for a in self.arrays if a.name in arrays_used]
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
        _mark_uses(adj_ir)
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


# ----------------------------------------------------------------------------- helpers

def _key(e):
    """A structural key for common-subexpression reuse (None: not reusable)."""
    if isinstance(e, ir.Const):
        return ("c", e.type.name, repr(e.value))
    if isinstance(e, ir.Var):
        return ("v", e.name)
    if isinstance(e, ir.ThreadAttr):
        return ("attr", e.name)
    if isinstance(e, (ir.Atomic, ir.FuncCall)):
        return None
    parts = [type(e).__name__]
    for k, v in vars(e).items():
        if k == "span":
            continue
        if isinstance(v, ir.Expr):
            kv = _key(v)
            if kv is None:
                return None
            parts.append(kv)
        elif isinstance(v, list):
            ks = [_key(x) if isinstance(x, ir.Expr) else repr(x) for x in v]
            if any(x is None for x in ks):
                return None
            parts.append(tuple(ks))
        else:
            parts.append(repr(v) if not isinstance(v, (T.ScalarType, T.VectorType)) else v.name)
    return tuple(parts)


def _eager(e) -> bool:
    """True when ``e`` can be evaluated even where the forward kernel did not (no
    memory reads, no SIMD-group calls, no atomics)."""
    from ..builtins import registry
    for n in ir.walk(e):
        if isinstance(n, (ir.Load, ir.Atomic, ir.FuncCall)):
            return False
        if isinstance(n, ir.Call) and n.name in registry and registry.get(n.name).kind == "simd":
            return False
    return True


def _mark_uses(kir: ir.KernelIR) -> None:
    """Set each parameter's uses_shape/strides/ndim from what the body reads."""
    nodes = [n for n in ir.walk(kir.body) if isinstance(n, (ir.ShapeOf, ir.StrideOf, ir.NDimOf))]
    for prm in kir.params:
        mine = [n for n in nodes if n.buf == prm.name]
        prm.uses_shape = any(isinstance(n, ir.ShapeOf) for n in mine)
        prm.uses_strides = any(isinstance(n, ir.StrideOf) for n in mine)
        prm.uses_ndim = any(isinstance(n, ir.NDimOf) for n in mine)


def _if(cond, then, orelse, span) -> list:
    """``if cond: then else: orelse`` without empty branches."""
    if not then and not orelse:
        return []
    if not then:
        if isinstance(cond, ir.UnOp) and cond.op == "!":
            return [ir.If(cond.a, orelse, [], span=span)]
        return [ir.If(ir.UnOp("!", cond, T.bool_, span=span), orelse, [], span=span)]
    return [ir.If(cond, then, orelse, span=span)]


def _same(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, ir.Const) and isinstance(b, ir.Const):
        return a.type == b.type and a.value == b.value
    return False
