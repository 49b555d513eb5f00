"""IR -> Python source operating on lane vectors (one generated function per kernel).

The generated ``_chunk(_c)`` runs one chunk of whole threadgroups in lockstep. Values
are NumPy scalars (uniform) or lane vectors; vector types are tuples of components.
Uniform branches and simple loops (see ``passes.uniformity``) become plain Python
control flow; divergent ones run under lane masks (``runtime``). A divergent
break/continue/return records its lanes in an escape set (``_brkN``, ``_cntN``,
``_ret``); the statements after it run under the mask minus those sets.

With ``checked=True`` every load, store and atomic is preceded by a bounds check and
every barrier by a divergence check (``checks.Checker``); later checks (races,
uninitialised reads) hook into the same places::

    >>> from metalbench import ir, types as T
    >>> i = ir.Var("i", T.uint32)
    >>> k = ir.KernelIR("copy", [ir.Param("x", "buffer", T.float32),
    ...     ir.Param("out", "buffer", T.float32, is_output=True)],
    ...     [ir.Decl(i, ir.Swizzle(ir.ThreadAttr("thread_position_in_grid", T.uint3), "x", T.uint32)),
    ...      ir.Store("out", i, ir.Load("x", i, T.float32))])
    >>> "def _chunk(_c):" in generate(k, checked=False, even=True).source
    True
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..builtins import registry
from .. import ir
from .. import scalar as S
from .. import types as T
from ..passes.uniformity import Uniformity, uniform_attributes

_SW = {"x": 0, "y": 1, "z": 2, "w": 3, "r": 0, "g": 1, "b": 2, "a": 3}


@dataclass
class Program:
    """Generated source, its namespace and the node table (node, buffer, space, access)."""
    source: str
    namespace: dict
    nodes: list = field(default_factory=list)


class _Loop:
    def __init__(self, n, simple, node):
        self.n, self.simple, self.node = n, simple, node
        self.on_continue = None  # emits what a Python-level continue must run first


def _is_vec(t):
    return isinstance(t, T.VectorType)


def _pure(e, checked=False) -> bool:
    """No memory access, call or SIMD function: safe to evaluate on every lane (checked:
    nor an integer division, whose zero divisor on an untaken side is no finding)."""
    for n in ir.walk(e):
        if checked and isinstance(n, ir.BinOp) and n.op in ("/", "%") and T.elem_of(n.type).is_int:
            return False
        if isinstance(n, (ir.Load, ir.Atomic, ir.FuncCall)):
            return False
        if isinstance(n, ir.Call) and registry.get(n.name).kind == "simd":
            return False
    return True


def _assigns(stmts, name) -> bool:
    return any(isinstance(n, ir.Assign) and n.var.name == name for n in ir.walk(stmts))


def _has_return(stmts) -> bool:
    return any(isinstance(n, ir.Return) for n in ir.walk(stmts))


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


class _Scope:
    """How buffer/array names resolve in the body being generated."""

    def __init__(self):
        self.bufs: dict[str, tuple] = {}  # name -> (kind, pyname, size-expr, space, elem)


class Gen:
    def __init__(self, kernel: ir.KernelIR, checked: bool, even: bool, linear: bool = False):
        self.k = kernel
        self.checked = checked
        self.even = even
        # 1-D launch: thread_position_in_grid.x is the chunk's first thread + lane, so
        # device accesses at (that + uniform) can be slices instead of gathers/scatters
        self.lin_on = linear
        self.lin: dict[str, tuple] = {}  # variable -> (offset name, no-wrap conditions)
        self._lin_pending = None
        self.uses_lin = False
        self.lines: list[str] = []
        self.ind = 1
        self.ns: dict = {}
        self._consts: dict = {}
        self._fns: dict = {}
        self.nodes: list = []
        self.n = 0
        self.m = "_m0"
        self.div = False
        self.loops: list[_Loop] = []
        self.esc: list = []
        self.in_func = False
        self.scope = _Scope()
        self.funcs = {f.name: f for f in kernel.functions}
        self.attrs_used: set[str] = set()
        self.gbase_sizes: set[int] = set()
        self.uses_simd = False
        self.U: Uniformity | None = None
        self.keys: dict[int, int] = {}
        self.func_lines: list[str] = []
        # loop-invariant code motion: one context per enclosing loop, outermost first
        self.hoists: list[_Hoist] = []
        self._hoisting = False
        self._facts: dict[int, tuple] = {}

    # -- emission helpers
    def emit(self, line: str):
        self.lines.append("    " * self.ind + line)

    def new(self, p="t"):
        self.n += 1
        return f"_{p}{self.n}"

    def const(self, value, t):
        """A namespace name holding ``value`` as a NumPy scalar of type ``t``."""
        v = S.value(value, t)
        key = (t.name, repr(v))
        name = self._consts.get(key)
        if name is None:
            name = self._consts[key] = f"_k{len(self._consts)}"
            self.ns[name] = v
        return name

    def scalar_fn(self, fn, *key):
        """A namespace name for ``fn``, one of :mod:`metalbench.scalar`'s operator or cast
        functions (``key`` names it: the same key, the same name)."""
        name = self._fns.get(key)
        if name is None:
            name = self._fns[key] = f"_sc{len(self._fns)}"
            self.ns[name] = fn
        return name

    def dtn(self, t):
        name = f"_dt_{t.name}"
        self.ns[name] = t.np
        return name

    def node(self, n, buf, space, access):
        self.nodes.append((n, buf, space, access))
        return len(self.nodes) - 1

    def tmp(self, expr, p="t"):
        name = self.new(p)
        self.emit(f"{name} = {expr}")
        return name

    # -- program
    def program(self) -> Program:
        k = self.k
        self.ns["_GLOBALS"] = {}
        for g in k.globals:
            arr = np.zeros(g.size, g.elem.np)
            if g.init is not None:
                flat = np.asarray(g.init).reshape(-1)
                arr[:flat.size] = flat[:g.size]
            self.ns[f"g_{g.name}"] = arr
            self.scope.bufs[g.name] = ("glob", f"g_{g.name}", str(g.size), "constant", g.elem)
        for p in k.params:
            if p.kind == "buffer":
                self.scope.bufs[p.name] = ("dev", f"b_{p.name}", f"n_{p.name}", "device", p.type)
        body_lines = self._body_with(lambda: self._kernel_body())
        pro = ["def _chunk(_c):", "    _m0 = _c.m0", "    _L = _c.L", "    _ret = False"]
        for p in k.params:
            if p.kind == "buffer":
                pro.append(f"    b_{p.name} = _c.bufs[{p.name!r}]")
                pro.append(f"    n_{p.name} = b_{p.name}.size")
                pro.append(f"    s_{p.name}, st_{p.name}, nd_{p.name} = _c.meta[{p.name!r}]")
            else:
                pro.append(f"    v_{p.name} = _c.scalars[{p.name!r}]")
        for a in sorted(self.attrs_used):
            if ir.THREAD_ATTRIBUTES[a] == "uint3":
                pro.append(f"    a_{a}_0, a_{a}_1, a_{a}_2 = _c.attr({a!r})")
            else:
                pro.append(f"    a_{a} = _c.attr({a!r})")
        for s in sorted(self.gbase_sizes):
            pro.append(f"    _gb{s} = _c.gbase({s})")
        pro.append("    _lane = _c.lane")
        if self.uses_simd:
            pro.append("    _sg = _c.simd()")
        pro.append("    _ck = _c.checker")
        if self.uses_lin:
            pro.append("    _lin0 = _c.g0 * _c.launch.TG")
        pro.append("    _MAXS = getattr(_c, 'max_steps', 20000000)")
        src = "\n".join(pro + self.func_lines + body_lines) + "\n"
        return Program(src, self.ns, self.nodes)

    def _body_with(self, fn):
        saved = self.lines
        self.lines = []
        fn()
        out = self.lines
        self.lines = saved
        return out

    def _kernel_body(self):
        # device functions first (they become closures inside _chunk)
        self.func_lines = []
        for f in self.k.functions:
            self.func_lines += self._body_with(lambda f=f: self._function(f))
        ubufs = {p.name for p in self.k.params if p.kind == "buffer"} | {g.name for g in self.k.globals}
        self.U = Uniformity(self.k.body, uniform_attributes(self.even),
                            uniform_buffers=ubufs)
        self.ind, self.m, self.div, self.in_func = 1, "_m0", False, False
        self.block(self.k.body)

    def _function(self, f: ir.Function):
        saved_scope = self.scope
        self.scope = _Scope()
        for name, v in saved_scope.bufs.items():
            if v[0] == "glob":
                self.scope.bufs[name] = v
        args = ["_m"]
        for p in f.params:
            if p.space is None:
                args.append(f"v_{p.name}")
            else:
                args.append(f"p_{p.name}")
                self.scope.bufs[p.name] = ("ref", f"p_{p.name}", f"p_{p.name}.n", p.space, T.elem_of(p.type))
        ubufs = {n for n, v in self.scope.bufs.items() if v[0] == "glob"}
        self.U = Uniformity(f.body, uniform_attributes(self.even),
                            varying=[p.name for p in f.params], uniform_buffers=ubufs)
        self.ind = 1
        self.emit(f"def f_{f.name}({', '.join(args)}):")
        self.ind = 2
        self.emit("_ret = False")
        self.emit(f"_rv = {self.zero(f.ret) if f.ret is not None else 'None'}")
        self.m, self.div, self.in_func, self.loops = "_m", False, True, []
        saved_hoists, self.hoists = self.hoists, []
        saved_lin, self.lin = self.lin, {}
        self.block(f.body)
        self.hoists, self.lin = saved_hoists, saved_lin
        self.emit("return _rv")
        self.scope = saved_scope

    def zero(self, t):
        if _is_vec(t):
            z = self.const(0, t.elem)
            return "(" + ", ".join([z] * t.n) + ",)"
        return self.const(0, t)

    # -- blocks and escapes
    def block(self, stmts):
        """Emit statements under the current mask; after a statement from which some
        lanes may have escaped (masked break/continue/return), the rest runs under the
        mask minus the escape sets, and only if a lane is left."""
        start_len = len(self.lines)
        saved_m, saved_ind = self.m, self.ind
        for i, s in enumerate(stmts):
            mark = len(self.esc)
            if self.stmt(s):
                break  # unconditional escape: the rest is unreachable
            sets = self._escape_sets(self.esc[mark:])
            if sets and i < len(stmts) - 1:
                expr = self.m
                for st in sets:
                    expr = f"_rt.minus({expr}, {st})"
                m2 = self.tmp(expr, "m")
                self.emit(f"if _rt.any_({m2}):")
                self.ind += 1
                self.m = m2
        if len(self.lines) == start_len or self.lines[-1].strip().endswith(":"):
            self.emit("pass")
        self.m, self.ind = saved_m, saved_ind

    def _escape_sets(self, entries):
        cur = self.loops[-1].n if self.loops else None
        out = []
        for kind, n in entries:
            if kind == "ret":
                name = "_ret"
            elif n == cur:
                name = f"_{kind}{n}"
            else:
                continue
            if name not in out:
                out.append(name)
        return out

    def sub(self, stmts, mask, div):
        saved = (self.m, self.div)
        self.m, self.div = mask, div
        self.block(stmts)
        self.m, self.div = saved

    # -- statements
    def stmt(self, s) -> bool:
        """Emit one statement; True when it always leaves the block (break/continue/return)."""
        if not self.lin_on:
            return self._stmt(s)
        self._lin_before(s)
        r = self._stmt(s)
        self._lin_after(s)
        return r

    # -- contiguous (lane-linear) values: value == offset + lane, offset a Python int
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

    def _stmt(self, s) -> bool:
        if isinstance(s, ir.Decl):
            if s.init is None:
                self.emit(f"v_{s.var.name} = {self.zero(s.var.type)}")
            else:
                self.emit(f"v_{s.var.name} = {self.tuple_or(self.ex(s.init))}")
        elif isinstance(s, ir.Assign):
            self.assign(s.var, self.ex(s.value))
        elif isinstance(s, ir.Store):
            self.store(s)
        elif isinstance(s, ir.ArrayDecl):
            self.array_decl(s)
        elif isinstance(s, ir.ViewDecl):
            self.view_decl(s)
        elif isinstance(s, ir.If):
            self.if_(s)
        elif isinstance(s, (ir.For, ir.While, ir.CFor)):
            self.loop(s)
        elif isinstance(s, ir.Break):
            return self.jump(s, "brk")
        elif isinstance(s, ir.Continue):
            return self.jump(s, "cnt")
        elif isinstance(s, ir.Return):
            return self.ret(s)
        elif isinstance(s, ir.Barrier):
            if self.checked and s.scope == "threadgroup":
                k = self.node(s, None, "threadgroup", "barrier")
                self.emit(f"_ck.barrier({self.m}, {k})")
            elif self.checked:
                k = self.node(s, None, "threadgroup", "barrier")
                self.emit(f"_ck.simd_barrier({self.m}, {k})")
        elif isinstance(s, ir.ExprStmt):
            if isinstance(s.expr, ir.Atomic):
                self.atomic(s.expr, used=False)
            else:
                v = self.ex(s.expr)
                if isinstance(v, str) and not v.isidentifier():
                    self.emit(v)
        else:
            raise NotImplementedError(f"simulator: statement {type(s).__name__}")
        return False

    def tuple_or(self, v):
        if isinstance(v, list):
            return "(" + ", ".join(v) + ",)"
        return v

    def assign(self, var, v):
        name = f"v_{var.name}"
        if not self.div:
            self.emit(f"{name} = {self.tuple_or(v)}")
        elif isinstance(v, list):
            comps = [f"_rt.sel({self.m}, {c}, {name}[{i}])" for i, c in enumerate(v)]
            self.emit(f"{name} = ({', '.join(comps)},)")
        else:
            self.emit(f"{name} = _rt.sel({self.m}, {v}, {name})")

    def if_(self, s):
        c = self.ex(s.cond)
        if self.U.is_uniform(s.cond):
            self.emit(f"if {c}:")
            self.ind += 1
            self.block(s.then)
            self.ind -= 1
            if s.orelse:
                self.emit("else:")
                self.ind += 1
                self.block(s.orelse)
                self.ind -= 1
            return
        c = self.tmp(c, "c")
        mt = self.tmp(f"_rt.and_({self.m}, {c})", "m")
        me = self.tmp(f"_rt.andnot({self.m}, {c})", "m") if s.orelse else None
        self.emit(f"if _rt.any_({mt}):")
        self.ind += 1
        self.sub(s.then, mt, True)
        self.ind -= 1
        if s.orelse:
            self.emit(f"if _rt.any_({me}):")
            self.ind += 1
            self.sub(s.orelse, me, True)
            self.ind -= 1

    def jump(self, s, kind) -> bool:
        lp = self.loops[-1]
        if lp.simple:
            if kind == "cnt" and lp.on_continue is not None:
                lp.on_continue()
            self.emit("break" if kind == "brk" else "continue")
        else:
            self.emit(f"_{kind}{lp.n} = _rt.or_(_{kind}{lp.n}, {self.m})")
            self.esc.append((kind, lp.n))
        return True

    def ret(self, s) -> bool:
        if s.value is not None:
            v = self.ex(s.value)
            if isinstance(v, list):
                comps = [f"_rt.sel({self.m}, {c}, _rv[{i}])" for i, c in enumerate(v)]
                self.emit(f"_rv = ({', '.join(comps)},)")
            else:
                self.emit(f"_rv = _rt.sel({self.m}, {v}, _rv)")
        if not self.div:
            self.emit("return _rv" if self.in_func else "return")
        else:
            self.emit(f"_ret = _rt.or_(_ret, {self.m})")
            self.esc.append(("ret", None))
        return True

    def array_decl(self, s):
        init = None
        if s.init is not None:
            init = f"_init{len(self.ns)}"
            self.ns[init] = s.init
        dt = self.dtn(s.elem)
        if s.space == "threadgroup":
            self.gbase_sizes.add(s.size)
            self.emit(f"t_{s.name} = _c.tg_array({dt}, {s.size}, {init})")
            if self.checked and init is not None:
                self.emit(f"_ck.tg_init(t_{s.name}, {s.name!r})")
            self.scope.bufs[s.name] = ("tg", f"t_{s.name}", str(s.size), "threadgroup", s.elem)
        elif s.space == "thread":
            self.emit(f"l_{s.name} = _c.local_array({dt}, {s.size}, {init})")
            self.scope.bufs[s.name] = ("loc", f"l_{s.name}", str(s.size), "thread", s.elem)
        else:  # a constant array declared in a body: same as a global
            arr = np.zeros(s.size, s.elem.np)
            if s.init is not None:
                flat = np.asarray(s.init).reshape(-1)
                arr[:flat.size] = flat[:s.size]
            self.ns[f"g_{s.name}"] = arr
            self.scope.bufs[s.name] = ("glob", f"g_{s.name}", str(s.size), "constant", s.elem)

    def view_decl(self, s):
        """A reinterpreting view (``ir.ViewDecl``): a NumPy view of the same storage."""
        kind, py, size, space, elem = self._buf(s.buf)
        dt = self.dtn(s.elem)
        if kind in ("dev", "glob"):
            self.emit(f"b_{s.name} = _mem.reinterpret({py}, {dt})")
            self.emit(f"n_{s.name} = b_{s.name}.size")
            self.scope.bufs[s.name] = ("dev", f"b_{s.name}", f"n_{s.name}", space, s.elem)
        elif kind == "tg":
            n = int(size) * elem.itemsize // s.elem.itemsize
            self.gbase_sizes.add(n)
            self.emit(f"t_{s.name} = _mem.reinterpret({py}, {dt})")
            self.scope.bufs[s.name] = ("tg", f"t_{s.name}", str(n), space, s.elem)
        elif kind == "ref":
            self.emit(f"p_{s.name} = {py}.viewed({dt})")
            self.scope.bufs[s.name] = ("ref", f"p_{s.name}", f"p_{s.name}.n", space, s.elem)
        else:
            raise NotImplementedError("simulator: reinterpreting a thread-local array")

    # -- loops
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

    # -- memory
    def _buf(self, name):
        b = self.scope.bufs.get(name)
        if b is None:
            raise NotImplementedError(f"simulator: unknown buffer or array {name!r}")
        return b

    def _check(self, kind, py, size, idx, k):
        if not self.checked:
            return
        # the storage and absolute address let the checker track races per element
        if kind == "ref":
            self.emit(f"_ck.acc_ref({k}, {py}, {idx}, {self.m})")
        elif kind == "dev":
            self.emit(f"_ck.acc({k}, {idx}, {size}, {self.m}, {py}, {idx})")
        elif kind == "tg":
            a = self.tmp(f"_gb{size} + {idx}", "a")  # one address array for check and access
            self.emit(f"_ck.acc({k}, {idx}, {size}, {self.m}, {py}, {a})")
            return a
        else:
            self.emit(f"_ck.acc({k}, {idx}, {size}, {self.m})")

    def _check_lin(self, f, py, size, index, k):
        # proved contiguous and in bounds: the checker's O(1) path; else the general check
        if self.checked:
            ix = self.ex(index)
            self.emit(f"_ck.acc_lin({k}, {f[0]}, {size}, {self.m}, {py}) if {self._lin_cond(f, size)} "
                      f"else _ck.acc({k}, {ix}, {size}, {self.m}, {py}, {ix})")

    def _index(self, e):
        idx = self.ex(e)
        if self.checked and not idx.isidentifier():
            idx = self.tmp(idx, "x")
        return idx

    def _tg_addr(self, e, size):
        """The flat address of element ``e`` of a threadgroup array in each lane's group.
        In a loop, an invariant address is computed before it, and ``A + s`` (``A``
        invariant, ``s`` uniform) becomes one add on a precomputed ``_gb + A`` when
        ``A + s`` provably does not wrap (else the exact wrapped form)."""
        gb = f"_gb{size}"
        # returns (address, o): o an expression for an int (or None) such that the
        # addresses are o + lane (found once per loop entry): the access can be a slice
        if not self.hoists or self.checked or self._hoisting:
            return f"{gb} + {self.ex(e)}", None
        h = self._invariant_ctx(e)
        if h is not None:
            hv = self._hoist(h, lambda: f"{gb} + {self.ex(e)}")
            hc = self._hoist(h, lambda: f"_rt.contig({hv})")
            return hv, hc
        t = e.type
        if isinstance(e, ir.BinOp) and e.op in ("+", "-") and isinstance(t, T.ScalarType) and t.is_int \
                and e.a.type == t and e.b.type == t:
            pairs = [(e.a, e.b)] + ([(e.b, e.a)] if e.op == "+" else [])
            for a, b in pairs:
                ha = self._invariant_ctx(a)
                if ha is None or self.U.is_uniform(a) or not self.U.is_uniform(b):
                    continue
                an = self._hoist(ha, lambda: self.ex(a))
                gv = self._hoist(ha, lambda: f"{gb} + {an}")
                sp = self._hoist(ha, lambda: f"_rt.span({an})")
                gc = self._hoist(ha, lambda: f"_rt.contig({gv})")
                info = np.iinfo(t.np)
                s = self.tmp(f"int({self.ex(b)})", "s")
                if e.op == "-":
                    s = self.tmp(f"-{s}", "s")
                ok = self.tmp(f"{info.min} <= {sp}[0] + {s} and {sp}[1] + {s} <= {info.max}", "ok")
                return (f"(({gv} + {s}) if {ok} else {gb} + {self.ex(e)})",
                        f"(({gc} + {s}) if {ok} and {gc} is not None else None)")
        return f"{gb} + {self.ex(e)}", None

    def load(self, e):
        kind, py, size, space, _ = self._buf(e.buf)
        k = self.node(e, e.buf, space, "read")
        if self.lin_on and kind in ("dev", "glob"):
            f = self._lin(e.index)
            if f is not None:
                self._check_lin(f, py, size, e.index, k)
                return self.tmp(f"_mem.ld_lin({py}, {f[0]}, _L, {self.m}) if {self._lin_cond(f, size)} "
                                f"else _mem.ld({py}, {self.ex(e.index)}, {self.m}, {k})")
        if kind == "tg" and not self.checked:
            addr, o = self._tg_addr(e.index, size)
            if o is None:
                return self.tmp(f"_mem.ld({py}, {addr}, {self.m}, {k})")
            return self.tmp(f"_mem.ld_seg({py}, {o}, _L, {self.m}, {k}, lambda: {addr})")
        idx = self._index(e.index)
        a = self._check(kind, py, size, idx, k)
        if kind in ("dev", "glob"):
            return self.tmp(f"_mem.ld({py}, {idx}, {self.m}, {k})")
        if kind == "tg":
            return self.tmp(f"_mem.ld({py}, {a or f'_gb{size} + {idx}'}, {self.m}, {k})")
        if kind == "loc":
            return self.tmp(f"_mem.ld_loc({py}, {idx}, {self.m}, _lane, {k})")
        return self.tmp(f"_mem.ld_ref({py}, {idx}, {self.m}, {k})")

    def store(self, s):
        kind, py, size, space, _ = self._buf(s.buf)
        k = self.node(s, s.buf, space, "write")
        if self.lin_on and kind in ("dev", "glob"):
            f = self._lin(s.index)
            if f is not None:
                idx = self.ex(s.index)
                v = self._name(self.tuple_or(self.ex(s.value)))
                self._check_lin(f, py, size, s.index, k)
                self.emit(f"if {self._lin_cond(f, size)}:")
                self.emit(f"    _mem.st_lin({py}, {f[0]}, _L, {v}, {self.m})")
                self.emit("else:")
                self.emit(f"    _mem.st({py}, {idx}, {v}, {self.m}, {k})")
                return
        if kind == "tg" and not self.checked:
            addr, o = self._tg_addr(s.index, size)
            if o is None:
                self.emit(f"_mem.st({py}, {addr}, {self.ex(s.value)}, {self.m}, {k})")
                return
            v = self.tuple_or(self.ex(s.value))
            self.emit(f"_mem.st_seg({py}, {o}, _L, {v}, {self.m}, {k}, lambda: {addr})")
            return
        idx = self._index(s.index)
        v = self.ex(s.value)
        a = self._check(kind, py, size, idx, k)
        if kind in ("dev", "glob"):
            self.emit(f"_mem.st({py}, {idx}, {v}, {self.m}, {k})")
        elif kind == "tg":
            self.emit(f"_mem.st({py}, {a or f'_gb{size} + {idx}'}, {v}, {self.m}, {k})")
        elif kind == "loc":
            self.emit(f"_mem.st_loc({py}, {idx}, {v}, {self.m}, _lane, {k})")
        else:
            self.emit(f"_mem.st_ref({py}, {idx}, {v}, {self.m}, {k})")

    def atomic(self, e, used=True):
        kind, py, size, space, _ = self._buf(e.buf)
        k = self.node(e, e.buf, space, "atomic")
        idx = self._index(e.index)
        args = [self.ex(a) for a in e.args]
        a_ = self._check(kind, py, size, idx, k)
        if kind == "tg":
            data, addr = py, a_ or f"_gb{size} + {idx}"
        elif kind == "ref":
            data, addr = f"{py}.flat", f"{py}.addr({idx})"
        elif kind == "loc":
            data, addr = f"{py}.reshape(-1)", f"{idx} * _L + _lane"
        else:
            data, addr = py, idx
        call = f"_at.atomic({e.op!r}, {data}, {addr}, [{', '.join(args)}], {self.m}, _L, {k}, {used})"
        if used:
            return self.tmp(call)
        self.emit(call)
        return None

    def bufarg(self, a: ir.BufArg):
        kind, py, size, space, _ = self._buf(a.buf)
        off = self.ex(a.offset) if a.offset is not None else None
        if kind == "ref":
            return f"{py}.shifted({off})" if off is not None else py
        o = off if off is not None else "0"
        if kind in ("dev", "glob"):
            return f"_mem.BufRef({py}, 0, {o}, 1, {size}, {a.buf!r}, {space!r})"
        if kind == "tg":
            return f"_mem.BufRef({py}, _gb{size}, {o}, 1, {size}, {a.buf!r}, 'threadgroup')"
        return f"_mem.BufRef({py}.reshape(-1), _lane, {o}, _L, {size}, {a.buf!r}, 'thread')"

    # -- expressions
    def exl(self, e):
        v = self.ex(e)
        return v if isinstance(v, list) else [v]

    def ex(self, e):
        """Python source for expression ``e``: a string, or a list of component strings
        for a vector type. May emit statements (loads, calls, lazy branches)."""
        meth = getattr(self, "ex_" + type(e).__name__, None)
        if meth is None:
            raise NotImplementedError(f"simulator: expression {type(e).__name__}")
        # not when checked: checks of hoisted code (a division) would run, and report,
        # where the loop does not
        if self.hoists and not self._hoisting and not self.checked and isinstance(e, _HOISTABLE):
            h = self._invariant_ctx(e)
            if h is not None:
                return self._hoist(h, lambda: meth(e))
        return meth(e)

    def _expr_facts(self, e):
        """(pure and free of calls/StrideOf, variable names it reads), memoised."""
        f = self._facts.get(id(e))
        if f is None:
            ok, names = True, set()
            for n in ir.walk(e):
                if isinstance(n, ir.Var):
                    names.add(n.name)
                elif isinstance(n, (ir.Load, ir.Atomic, ir.FuncCall, ir.Call, ir.StrideOf, ir.BufArg)):
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

    def ex_Const(self, e):
        if _is_vec(e.type):
            vals = e.value if isinstance(e.value, (list, tuple)) else [e.value] * e.type.n
            return [self.const(v, e.type.elem) for v in vals]
        return self.const(e.value, e.type)

    def ex_Var(self, e):
        if _is_vec(e.type):
            return [f"v_{e.name}[{i}]" for i in range(e.type.n)]
        return f"v_{e.name}"

    def ex_ThreadAttr(self, e):
        self.attrs_used.add(e.name)
        if ir.THREAD_ATTRIBUTES[e.name] == "uint3":
            return [f"a_{e.name}_{i}" for i in range(3)]
        return f"a_{e.name}"

    def ex_Swizzle(self, e):
        comps = self.exl(e.value)
        picked = [comps[_SW[c]] for c in e.components]
        if len(picked) > 1 and len(set(picked)) < len(picked):
            picked = [p if p.isidentifier() else self.tmp(p) for p in picked]
        return picked[0] if len(picked) == 1 else picked

    def ex_VecCons(self, e):
        comps = []
        for a in e.args:
            comps += self.exl(a)
        if len(comps) == 1 and e.type.n > 1:
            c = comps[0] if comps[0].isidentifier() else self.tmp(comps[0])
            comps = [c] * e.type.n
        return comps

    def _bin(self, op, a, b, t, node=None):
        """One component of a binary operation on operands of scalar type ``t``: the
        operator inline where NumPy's is exactly C's, else the scalar table's function."""
        if self.checked and node is not None and op in ("/", "%") and t.is_int:
            k = self.node(node, None, None, "divide")
            fn = self.scalar_fn(S.binop_fn(op, t), "bin", op, t.name)
            return f"_ck.div({a}, {b}, {fn}, {self.m}, {k}, {op!r})"
        inline = S.infix(op, t)
        if inline is not None:
            return f"({a} {inline} {b})"
        return f"{self.scalar_fn(S.binop_fn(op, t), 'bin', op, t.name)}({a}, {b})"

    def ex_BinOp(self, e):
        if self.lin_on and e.op in ("<", ">"):
            r = self._lin_guard(e)
            if r is not None:
                return r
        a, b = self.ex(e.a), self.ex(e.b)
        ta = T.elem_of(e.a.type)
        if _is_vec(e.type):
            n = e.type.n
            av = a if isinstance(a, list) else [self._name(a)] * n
            bv = b if isinstance(b, list) else [self._name(b)] * n
            return [self._bin(e.op, x, y, ta, e) for x, y in zip(av, bv)]
        return self._bin(e.op, a, b, ta, e)

    def _name(self, s):
        return s if s.isidentifier() else self.tmp(s)

    def ex_UnOp(self, e):
        t = T.elem_of(e.a.type)
        inline = S.unary_infix(e.op, t)
        fn = None if inline is not None else self.scalar_fn(S.unop_fn(e.op, t), "un", e.op, t.name)
        out = [f"({inline}{c})" if fn is None else f"{fn}({c})" for c in self.exl(e.a)]
        return out if _is_vec(e.type) else out[0]

    def ex_Cast(self, e):
        src = e.value.type
        comps = self.exl(e.value)
        out = [self._cast(c, T.elem_of(src), T.elem_of(e.type)) for c in comps]
        if _is_vec(e.type) and len(out) == 1:
            c = self._name(out[0])
            out = [c] * e.type.n
        return out if _is_vec(e.type) else out[0]

    def _cast(self, c, f, t):
        if f == t:
            return c
        return f"{self.scalar_fn(S.caster(f, t), 'cast', f.name, t.name)}({c})"

    def ex_Load(self, e):
        return self.load(e)

    def ex_Bitcast(self, e):
        # as_type: the components' bytes read as the new type (NumPy views)
        src, dst = T.elem_of(e.value.type), T.elem_of(e.type)
        r = self.tmp(f"_mem.bitcast([{', '.join(self.exl(e.value))}], {self.dtn(src)}, {self.dtn(dst)})")
        if _is_vec(e.type):
            return [f"{r}[{k}]" for k in range(e.type.n)]
        return f"{r}[0]"

    def ex_ShapeOf(self, e):
        return f"s_{e.buf}[{e.dim}]"

    def ex_StrideOf(self, e):
        return f"st_{e.buf}[{self.ex(e.dim)}]"

    def ex_NDimOf(self, e):
        return f"nd_{e.buf}"

    def ex_Atomic(self, e):
        return self.atomic(e, used=True)

    def ex_BufArg(self, e):
        return self.bufarg(e)

    def ex_FuncCall(self, e):
        f = self.funcs.get(e.func)
        if f is None:
            raise NotImplementedError(f"simulator: unknown device function {e.func!r}")
        args = [self.m]
        for a in e.args:
            v = self.ex(a)
            args.append(self.tuple_or(v))
        r = self.tmp(f"f_{e.func}({', '.join(args)})")
        if e.type is not None and _is_vec(e.type):
            return [f"{r}[{i}]" for i in range(e.type.n)]
        return r

    def ex_Call(self, e):
        # the builtin's declaration implements it: _bi[name].sim (see metalbench/builtins)
        b = registry.get(e.name)
        if b.kind == "simd":
            return self.simd(e)
        argv = [self.exl(a) for a in e.args]
        rt = e.type
        if not b.componentwise:     # whole vectors: each argument as its list of components
            lists = ", ".join(f"[{', '.join(a)}]" for a in argv)
            r = self.tmp(f"_bi[{e.name!r}]([{lists}], {self.dtn(T.elem_of(rt))})")
            return [f"{r}[{k}]" for k in range(rt.n)] if _is_vec(rt) else r
        n = rt.n if _is_vec(rt) else 1
        dt = self.dtn(T.elem_of(rt))
        out = []
        for i in range(n):
            cs = [a[i] if len(a) > 1 else a[0] for a in argv]
            out.append(f"_bi[{e.name!r}]([{', '.join(cs)}], {dt})")
        return out if _is_vec(rt) else out[0]

    def simd(self, e):
        self.uses_simd = True
        argv = [self.exl(a) for a in e.args]
        n = e.type.n if _is_vec(e.type) else 1
        out = []
        for i in range(n):
            cs = [a[i] if len(a) > 1 else a[0] for a in argv]
            out.append(self.tmp(f"_bi[{e.name!r}](_sg, [{', '.join(cs)}], {self.m})"))
        return out if _is_vec(e.type) else out[0]

    def ex_Logical(self, e):
        a = self.ex(e.a)
        if self.U.is_uniform(e.a) and self.U.is_uniform(e.b) and _pure(e.b, self.checked):
            return f"({a} {e.op} {self.ex(e.b)})"
        if _pure(e.b, self.checked):
            return f"({a} {'&' if e.op == 'and' else '|'} {self.ex(e.b)})"
        r = self.tmp(a, "r")
        mb = self.tmp(f"_rt.{'and_' if e.op == 'and' else 'andnot'}({self.m}, {r})", "m")
        self.emit(f"if _rt.any_({mb}):")
        self.ind += 1
        saved = self.m
        self.m = mb
        b = self.ex(e.b)
        self.emit(f"{r} = {r} {'&' if e.op == 'and' else '|'} {b}")
        self.m = saved
        self.ind -= 1
        return r

    def ex_Select(self, e):
        n = e.type.n if _is_vec(e.type) else 1
        cu = self.U.is_uniform(e.cond)
        c = self.ex(e.cond)
        if _pure(e.a, self.checked) and _pure(e.b, self.checked):
            a, b = self.exl(e.a), self.exl(e.b)
            a = a * n if len(a) == 1 else a
            b = b * n if len(b) == 1 else b
            if cu:
                out = [f"({x} if {c} else {y})" for x, y in zip(a, b)]
            else:
                c = self._name(c)
                out = [f"_rt.where({c}, {x}, {y})" for x, y in zip(a, b)]
            return out if n > 1 else out[0]
        rs = [self.new("r") for _ in range(n)]
        zero = self.zero(e.type)
        self.emit(f"{', '.join(rs)}, = {zero if n > 1 else '(' + zero + ',)'}")
        if cu:
            for branch, neg in ((e.a, False), (e.b, True)):
                self.emit(f"if {'not ' if neg else ''}{c}:")
                self.ind += 1
                v = self.exl(branch)
                v = v * n if len(v) == 1 else v
                for r, x in zip(rs, v):
                    self.emit(f"{r} = {x}")
                self.ind -= 1
        else:
            c = self._name(c)
            saved = self.m
            for branch, fn in ((e.a, "and_"), (e.b, "andnot")):
                mm = self.tmp(f"_rt.{fn}({saved}, {c})", "m")
                self.emit(f"if _rt.any_({mm}):")
                self.ind += 1
                self.m = mm
                v = self.exl(branch)
                v = v * n if len(v) == 1 else v
                for r, x in zip(rs, v):
                    self.emit(f"{r} = _rt.sel({mm}, {x}, {r})")
                self.m = saved
                self.ind -= 1
        return rs if n > 1 else rs[0]


def generate(kernel: ir.KernelIR, checked: bool = False, even: bool = True, linear: bool = False) -> Program:
    """Generate the lane-vector Python program of ``kernel`` (not yet compiled); ``linear``
    when the launch is 1-D (grid and threadgroup)."""
    return Gen(kernel, checked, even, linear).program()
