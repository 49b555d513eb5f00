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

from .. import ir
from .. import scalar as S
from .. import types as T
from ..passes.uniformity import Uniformity, uniform_attributes
from .gen_expr import Expressions, _is_vec
from .gen_hoist import Hoisting, _Hoist
from .gen_linear import LinearAccess
from .gen_loops import Loops, _Loop
from .gen_memory import MemoryAccess
from .matrix import MatrixGen
from .printing import gen_print
from .sync_checks import mem_bits

@dataclass
class Program:
    """Generated source, its namespace and the node table (node, buffer, space, access)."""
    source: str
    namespace: dict
    nodes: list = field(default_factory=list)


class _Scope:
    """How buffer/array names resolve in the body being generated."""

    def __init__(self):
        self.bufs: dict[str, tuple] = {}  # name -> (kind, pyname, size-expr, space, elem)


class Gen(Expressions, MemoryAccess, Loops, LinearAccess, Hoisting, MatrixGen):
    """The generator: state, program assembly, statements and blocks here; expressions,
    memory access, loops, lane-linear analysis and hoisting in its mixins (gen_*.py)."""

    def __init__(self, kernel: ir.KernelIR, checked: bool, even: bool, linear: bool = False):
        self.k = kernel
        self.checked = checked
        self.even = even
        # 1-D launch: thread_position_in_grid.x is the chunk's first thread + lane, so
        # device accesses at (that + uniform) can be slices instead of gathers/scatters
        self.lin_on = linear
        self.lin: dict[str, tuple] = {}  # variable -> (offset name, no-wrap conditions)
        self.untracked: set = set()  # ids of thread-array loads checked for bounds only (gen_memory)
        self.view_roots: dict = {}   # reinterpreting view -> the array it views (the checker's messages)
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
        self.uses_cov = False   # stores into outputs report to the launch's coverage check
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
        if self.uses_cov:
            pro.append("    _cv = getattr(_c, 'cov', None)")
        pro.append("    _ob = getattr(_c, 'oob', None)")
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
            # the race checker orders the memory the flags name (sim/sync_checks.py)
            if self.checked and s.scope == "threadgroup":
                k = self.node(s, None, "threadgroup", "barrier")
                self.emit(f"_ck.barrier({self.m}, {k}, {mem_bits(s.flags)})")
            elif self.checked:
                k = self.node(s, None, "threadgroup", "barrier")
                self.emit(f"_ck.simd_barrier({self.m}, {k}, {mem_bits(s.flags)})")
        elif isinstance(s, ir.Fence):
            # only device-scope fences of device memory order anything the checker tracks
            if self.checked and s.scope == "device" and mem_bits(s.flags) & 2:
                self.emit(f"_ck.fence({self.m})")
        elif isinstance(s, ir.Print):
            gen_print(self, s)
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
            if self.checked and init is None:   # its elements undefined until written
                self.emit(f"_ck.loc_decl(l_{s.name}, {s.name!r})")
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
        self.view_roots[s.name] = self.view_roots.get(s.buf, s.buf)
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































def generate(kernel: ir.KernelIR, checked: bool = False, even: bool = True, linear: bool = False,
             variant=None) -> Program:
    """Generate the lane-vector Python program of ``kernel`` (not yet compiled); ``linear``
    when the launch is 1-D (grid and threadgroup); ``variant="trace"`` adds the trace's
    records of assignments (``sim/trace.py``)."""
    if variant == "trace":
        from .trace import TraceGen
        return TraceGen(kernel, checked, even, False).program()
    return Gen(kernel, checked, even, linear).program()
