"""Integer range facts from the IR, and the rewrite they allow: signed loop counters.

MSL makes most index arithmetic ``uint`` (``thread_position_in_grid`` is unsigned), so a
loop ``for (uint j = tid; j < n; j += 256)`` has an unsigned counter. Unsigned
wrap-around is defined behaviour, so a C compiler must keep the counter 32 bits wide and
cannot turn ``x[base + j]`` into a pointer that steps by a constant; on NVIDIA this cost
19% in a row softmax (``benchmarks/gpu_probe.py``): the loop is unrolled 4 deep instead
of 16. When the facts below prove that the counter stays in ``[0, INT_MAX]`` and its
increment cannot overflow, the counter can be an ``int`` with the very same values:
:func:`signed_loops` rewrites such loops (the counter becomes ``int32``; each use reads
it back as ``uint`` through a cast, so every expression keeps its type and value).

:class:`Ranges` is a flow-insensitive interval analysis over one body: each integer
variable gets the union of the values its definitions can produce (a fixpoint with
widening), thread attributes get the bounds a launch guarantees (:class:`LaunchFacts`:
at most 1024 threads per threadgroup, 32 lanes per SIMD-group, and when known the
launch's threadgroup size), and an operation whose mathematical result could leave its
type's range (wrap) gets the whole range of its type.

    >>> from metalbench import ir, types as T
    >>> tid = ir.ThreadAttr("thread_index_in_threadgroup", T.uint32)
    >>> j = ir.Var("j", T.uint32)
    >>> loop = ir.For(j, tid, ir.Const(4096, T.uint32), ir.Const(256, T.uint32), [])
    >>> r = Ranges([loop])
    >>> r.of(tid), r.of(j)
    ((0, 1023), (0, 4095))
    >>> signed_loops(ir.KernelIR("k", [], [loop])).body[0].var.type.name
    'int32'
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

from .. import ir
from .. import types as T

INT32_MAX = 2 ** 31 - 1
_WIDEN_AFTER = 4          # changes of one variable's range before it widens to its type's


@dataclass(frozen=True)
class LaunchFacts:
    """What is known about the launch when a kernel is printed. ``threadgroup``: the
    launch's threadgroup size (a 3-tuple), when the printed code is specialised for it;
    ``exact_grid``: the grid is whole threadgroups (no partial threadgroup, no thread
    past the grid); ``max_threads``: the most threads a threadgroup can have (the
    semantics contract: 1024)."""
    threadgroup: tuple | None = None
    exact_grid: bool = False
    max_threads: int = 1024

    @property
    def group_threads(self) -> int:
        """Threads in a (full) threadgroup: the known size, else the largest possible."""
        if self.threadgroup is None:
            return self.max_threads
        n = 1
        for d in self.threadgroup:
            n *= int(d)
        return n

    @property
    def full_warps(self) -> bool:
        """True when every SIMD-group of every threadgroup has all 32 lanes at launch."""
        return self.exact_grid and self.threadgroup is not None and self.group_threads % 32 == 0

    def attribute(self, name: str, comp: int) -> tuple[int, int] | None:
        """The range of component ``comp`` of thread attribute ``name`` (None: unknown)."""
        tg = self.threadgroup
        n = self.group_threads
        dim = tg[comp] if tg is not None else self.max_threads
        simds = (n + 31) // 32
        quads = (n + 3) // 4
        if name == "thread_position_in_threadgroup":
            return (0, dim - 1)
        if name == "thread_index_in_threadgroup":
            return (0, n - 1)
        if name == "thread_index_in_simdgroup":
            return (0, 31)
        if name == "thread_index_in_quadgroup":
            return (0, 3)
        if name == "simdgroup_index_in_threadgroup":
            return (0, simds - 1)
        if name == "quadgroup_index_in_threadgroup":
            return (0, quads - 1)
        if name in ("threads_per_simdgroup", "thread_execution_width"):
            return (32, 32)
        if name == "dispatch_threads_per_threadgroup":
            return (dim, dim) if tg is not None else (1, dim)
        if name == "threads_per_threadgroup":
            return (dim, dim) if tg is not None and self.exact_grid else (1, dim)
        if name in ("simdgroups_per_threadgroup", "dispatch_simdgroups_per_threadgroup"):
            exact = tg is not None and (self.exact_grid or name.startswith("dispatch"))
            return (simds, simds) if exact else (1, simds)
        if name in ("quadgroups_per_threadgroup", "dispatch_quadgroups_per_threadgroup"):
            exact = tg is not None and (self.exact_grid or name.startswith("dispatch"))
            return (quads, quads) if exact else (1, quads)
        if name == "grid_origin":
            return (0, 0)
        return None


def type_range(t) -> tuple[int, int] | None:
    """``(lo, hi)`` of an integer or bool scalar type; None for anything else."""
    if not isinstance(t, T.ScalarType):
        return None
    if t.is_bool:
        return (0, 1)
    if not t.is_int:
        return None
    if t.is_signed:
        return (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1)
    return (0, (1 << t.bits) - 1)


def _fit(lo, hi, t):
    """``(lo, hi)`` when the exact values fit type ``t``, else the whole range (wrap)."""
    tr = type_range(t)
    if tr is None:
        return None
    if lo is None or lo < tr[0] or hi > tr[1]:
        return tr
    return (lo, hi)


def _union(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return (min(a[0], b[0]), max(a[1], b[1]))


_BOTTOM = "bottom"        # a variable none of whose definitions has a value yet


def canonical_cfor(s: ir.CFor):
    """``(var, init, op, stop, step)`` for ``for (T v = init; v < stop; v += step)`` (``<=``
    too; step a positive constant), with ``v`` not assigned in the body; else None."""
    if len(s.init) != 1 or not isinstance(s.init[0], ir.Decl) or s.init[0].init is None:
        return None
    v = s.init[0].var
    c = s.cond
    if not (isinstance(c, ir.BinOp) and c.op in ("<", "<=") and isinstance(c.a, ir.Var) and c.a.name == v.name):
        return None
    if len(s.update) != 1 or not isinstance(s.update[0], ir.Assign) or s.update[0].var.name != v.name:
        return None
    u = s.update[0].value
    if not (isinstance(u, ir.BinOp) and u.op == "+" and isinstance(u.a, ir.Var) and u.a.name == v.name
            and isinstance(u.b, ir.Const) and isinstance(u.b.value, int) and u.b.value > 0):
        return None
    if _assigns(s.body, v.name) or _declares(s.body, v.name):
        return None
    return v, s.init[0].init, c.op, c.b, u.b


def _assigns(stmts, name) -> bool:
    return any(isinstance(n, ir.Assign) and n.var.name == name for n in ir.walk(stmts))


def _declares(stmts, name) -> bool:
    return any((isinstance(n, ir.Decl) and n.var.name == name) or (isinstance(n, ir.For) and n.var.name == name)
               for n in ir.walk(stmts))


class Ranges:
    """Integer ranges of one body's variables and expressions (see the module doc).
    ``params``: variables defined outside the body (function parameters, scalar kernel
    arguments), which get their type's whole range."""

    def __init__(self, body, facts: LaunchFacts | None = None):
        self.facts = facts or LaunchFacts()
        self.defs: list = []               # (var, kind, payload)
        self._collect(body, body)
        self.vars: dict[str, object] = {v.name: _BOTTOM for v, _, _ in self.defs}
        self.types: dict[str, object] = {v.name: v.type for v, _, _ in self.defs}
        self.loops: dict[int, tuple] = {}  # id(For/CFor) -> (lo, hi) of its counter in the body
        changes: dict[str, int] = {}
        for _ in range(64):
            changed = False
            for v, kind, payload in self.defs:
                r = self._def_range(v, kind, payload)
                if r is None or r == _BOTTOM:
                    continue
                old = self.vars[v.name]
                new = r if old == _BOTTOM else _union(old, r)
                if new != old:
                    changes[v.name] = changes.get(v.name, 0) + 1
                    if changes[v.name] > _WIDEN_AFTER:
                        new = _union(type_range(v.type), new)
                    self.vars[v.name] = new
                    changed = True
            if not changed:
                break
        else:       # pragma: no cover - widening makes the lattice finite
            for n, t in self.types.items():
                self.vars[n] = type_range(t)

    # -- definitions
    def _collect(self, stmts, top):
        for i, s in enumerate(stmts):
            if isinstance(s, ir.Decl):
                if s.init is not None:
                    self.defs.append((s.var, "expr", s.init))
                elif not _assigned_before_read(stmts, i, s.var.name):
                    self.defs.append((s.var, "any", None))
            elif isinstance(s, ir.Assign):
                self.defs.append((s.var, "expr", s.value))
            elif isinstance(s, ir.If):
                self._collect(s.then, top)
                self._collect(s.orelse, top)
            elif isinstance(s, ir.For):
                self.defs.append((s.var, "for", s))
                self._collect(s.body, top)
            elif isinstance(s, ir.CFor):
                canon = canonical_cfor(s)
                if canon is not None:
                    self.defs.append((canon[0], "cfor", s))
                    self._collect(s.update[1:], top)
                else:
                    self._collect(s.init, top)
                    self._collect(s.update, top)
                self._collect(s.body, top)
            elif isinstance(s, ir.While):
                self._collect(s.body, top)

    def _def_range(self, v, kind, payload):
        if type_range(v.type) is None:
            return None
        if kind == "any":
            return type_range(v.type)
        if kind == "expr":
            return self.of(payload)
        if kind == "for":
            r = self._counter(v, payload.start, "<", payload.stop, payload.step, payload.body)
        else:
            canon = canonical_cfor(payload)
            _, init, op, stop, step = canon
            r = self._counter(v, init, op, stop, step, payload.body)
        if r != _BOTTOM:
            self.loops[id(payload)] = r
        return r

    def _counter(self, v, start, op, stop, step, body):
        """The counter's range inside the body (no wrap proved), else its type's range."""
        tr = type_range(v.type)
        if _assigns(body, v.name):
            return tr
        rs, re_, rt = self.of(start), self.of(stop), self.of(step)
        if _BOTTOM in (rs, re_, rt):
            return _BOTTOM
        if None in (rs, re_, rt):
            return tr
        neg = isinstance(step, ir.Const) and isinstance(step.value, int) and step.value < 0 and op == "<"
        if neg:     # for (v = start; v > stop; v += step), step < 0
            lo = re_[0] + 1
            if lo + rt[0] < tr[0]:
                return tr
            return (min(lo, rs[1]), rs[1])
        if rt[0] < 0:
            return tr
        hi = re_[1] - (1 if op == "<" else 0)
        if hi + rt[1] > tr[1]:          # the increment past the last value could wrap
            return tr
        return (rs[0], max(hi, rs[0]))

    # -- expressions
    def of(self, e):
        """``(lo, hi)`` of integer/bool expression ``e`` (None for other types; the
        internal marker ``"bottom"`` only while the fixpoint runs)."""
        t = getattr(e, "type", None)
        tr = type_range(t)
        if tr is None:
            return None
        m = getattr(self, "_" + type(e).__name__, None)
        r = m(e) if m is not None else tr
        if r == _BOTTOM or r is None:
            return r if r == _BOTTOM else tr
        return (max(r[0], tr[0]), min(r[1], tr[1]))

    def _Const(self, e):
        if isinstance(e.value, (list, tuple)):
            return type_range(e.type)
        v = int(e.value)
        return (v, v)

    def _Var(self, e):
        r = self.vars.get(e.name)
        if r is None:
            return type_range(e.type)   # a parameter or a variable defined outside the body
        return r

    def _ThreadAttr(self, e):
        return self.facts.attribute(e.name, 0) or type_range(e.type)

    def _Swizzle(self, e):
        if isinstance(e.value, ir.ThreadAttr) and len(e.components) == 1:
            r = self.facts.attribute(e.value.name, T.COMPONENTS.index(e.components))
            if r is not None:
                return r
        return type_range(e.type)

    def _Cast(self, e):
        r = self.of(e.value)
        if r == _BOTTOM:
            return r
        if r is None:
            return type_range(e.type)    # float -> int saturates: anything in range
        return _fit(r[0], r[1], e.type)

    def _Select(self, e):
        a, b = self.of(e.a), self.of(e.b)
        if _BOTTOM in (a, b):
            return _BOTTOM
        return _union(a, b)

    def _UnOp(self, e):
        if e.op == "!":
            return (0, 1)
        a = self.of(e.a)
        if a == _BOTTOM:
            return a
        if e.op == "-" and a is not None:
            return _fit(-a[1], -a[0], e.type)
        return type_range(e.type)

    def _Logical(self, e):
        return (0, 1)

    def _ShapeOf(self, e):
        return (0, INT32_MAX)          # MLX shapes are int32

    def _Call(self, e):
        if e.name in ("min", "max") and len(e.args) == 2:
            a, b = self.of(e.args[0]), self.of(e.args[1])
            if _BOTTOM in (a, b):
                return _BOTTOM
            if a is not None and b is not None:
                f = min if e.name == "min" else max
                return (f(a[0], b[0]), f(a[1], b[1]))
        return type_range(e.type)

    def _BinOp(self, e):
        if e.op in ir.COMPARE_OPS:
            return (0, 1)
        a, b = self.of(e.a), self.of(e.b)
        if _BOTTOM in (a, b):
            return _BOTTOM
        t = e.type
        if a is None or b is None:
            return type_range(t)
        op = e.op
        if op in ("+", "-", "*"):
            f = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y}[op]
            vals = [f(x, y) for x in a for y in b]
            r = _fit(min(vals), max(vals), t)
            if op == "*" and r[1] < max(vals):     # wrapped
                r = _wrapped_multiple(r, t, max(_pow2_factor(a), _pow2_factor(b)))
            return r
        if a[0] < 0 or b[0] < 0:       # the rest: non-negative operands only
            return type_range(t)
        if op == "/":
            return (0, a[1] // max(b[0], 1)) if b[0] > 0 else (0, a[1])      # x / 0 is 0
        if op == "%":
            return (0, min(a[1], max(b[1] - 1, 0)))                         # x % 0 is 0
        if op == "&":
            return (0, min(a[1], b[1]))
        if op in ("|", "^"):
            return (0, (1 << max(a[1], b[1]).bit_length()) - 1)
        if op == ">>" and b[1] < T.elem_of(t).bits:
            return (a[0] >> b[1], a[1] >> b[0])
        if op == "<<" and b[1] < T.elem_of(t).bits:
            r = _fit(a[0] << b[0], a[1] << b[1], t)
            return _wrapped_multiple(r, t, b[0]) if r[1] < a[1] << b[1] else r
        return type_range(t)


def _pow2_factor(r) -> int:
    """``k`` such that every value of the one-value range ``r`` is a multiple of ``2**k``
    (0 for a range of several values)."""
    if r[0] != r[1] or r[0] == 0:
        return 0
    return (r[0] & -r[0]).bit_length() - 1


def _wrapped_multiple(r, t, k: int):
    """The range of an unsigned product that wrapped (``r`` is then the type's range)
    when every exact value is a multiple of ``2**k``: wrapping modulo ``2**bits`` keeps
    the low ``k`` bits zero, so the largest value is ``2**bits - 2**k`` (``row * 4096u``
    plus a column below 4096 cannot wrap, whatever ``row`` is)."""
    if k <= 0 or t.is_signed or k >= t.bits:
        return r
    return (0, (1 << t.bits) - (1 << k))


def _assigned_before_read(stmts, i, name) -> bool:
    """Is variable ``name`` (declared without a value at ``stmts[i]``) certainly assigned
    before any read? True when, after the declaration, the first statement that mentions
    it at all is a plain assignment at this level whose value does not read it."""
    for s in stmts[i + 1:]:
        mentions = any(isinstance(n, ir.Var) and n.name == name for n in ir.walk(s)) or \
            any(isinstance(n, (ir.Assign, ir.Decl)) and n.var.name == name for n in ir.walk(s))
        if not mentions:
            continue
        return isinstance(s, ir.Assign) and s.var.name == name and \
            not any(isinstance(n, ir.Var) and n.name == name for n in ir.walk(s.value))
    return True


# ----------------------------------------------------------------------------- the rewrite

def signed_loops(kernel: ir.KernelIR, facts: LaunchFacts | None = None) -> ir.KernelIR:
    """``kernel`` with every unsigned 32-bit loop counter that provably stays in
    ``[0, INT_MAX]`` (increment included) made ``int32``; uses read it through a cast to
    its old type, so values are unchanged bit for bit. Returns a copy (the input is not
    changed) or ``kernel`` itself when nothing qualifies.
    """
    facts = facts or LaunchFacts()
    plans = []
    for body in [kernel.body] + [f.body for f in kernel.functions]:
        r = Ranges(body, facts)
        for n in ir.walk(body):
            if isinstance(n, (ir.For, ir.CFor)) and _qualifies(n, r):
                plans.append(n)
    if not plans:
        return kernel
    memo = {}
    for n in list(ir.walk(kernel.body)) + [x for f in kernel.functions for x in ir.walk(f.body)]:
        if n.span is not None:
            memo[id(n.span)] = n.span
    memo[id(kernel.source)] = kernel.source
    new = copy.deepcopy(kernel, memo)
    targets = {id(memo[id(p)]) for p in plans}
    for body in [new.body] + [f.body for f in new.functions]:
        for n in ir.walk(body):
            if id(n) in targets:
                _retype(n)
    return new


def _counter_of(s):
    if isinstance(s, ir.For):
        return s.var, s.start, s.stop, s.step, "<"
    canon = canonical_cfor(s)
    if canon is None:
        return None
    v, init, op, stop, step = canon
    return v, init, stop, step, op


def _qualifies(s, r: Ranges) -> bool:
    c = _counter_of(s)
    if c is None:
        return False
    v, start, stop, step, op = c
    if not (isinstance(v.type, T.ScalarType) and v.type.name == "uint32"):
        return False
    if isinstance(s, ir.For) and (_assigns(s.body, v.name) or _declares(s.body, v.name)):
        return False
    body = r.loops.get(id(s))
    rs, re_, rt = r.of(start), r.of(stop), r.of(step)
    if body in (None, _BOTTOM) or None in (rs, re_, rt) or _BOTTOM in (rs, re_, rt):
        return False
    ok = lambda x: 0 <= x[0] and x[1] <= INT32_MAX        # noqa: E731
    return ok(body) and ok(rs) and ok(re_) and ok(rt) and body[1] + rt[1] <= INT32_MAX


def _to(t, e):
    if isinstance(e, ir.Const):
        return ir.Const(int(e.value), t, span=e.span)
    return ir.Cast(t, e, span=e.span)


def _retype(s):
    """Make the counter of loop ``s`` int32 in place (``_qualifies`` held)."""
    old = _counter_of(s)[0]
    ot = old.type
    nv = ir.Var(old.name, T.int32, span=old.span)

    def reads(node):
        # every read of the counter in the body (and update) becomes (uint)counter
        for parent in ir.walk(node):
            for k, val in vars(parent).items():
                if isinstance(val, ir.Var) and val.name == old.name and val.type == ot:
                    setattr(parent, k, ir.Cast(ot, ir.Var(old.name, T.int32, span=val.span), span=val.span))
                elif isinstance(val, list):
                    for i, x in enumerate(val):
                        if isinstance(x, ir.Var) and x.name == old.name and x.type == ot:
                            val[i] = ir.Cast(ot, ir.Var(old.name, T.int32, span=x.span), span=x.span)
    if isinstance(s, ir.For):
        s.var = nv
        s.start, s.stop, s.step = _to(T.int32, s.start), _to(T.int32, s.stop), _to(T.int32, s.step)
        reads(s.body)
        return
    decl = s.init[0]
    decl.var = nv
    decl.init = _to(T.int32, decl.init)
    c = s.cond
    s.cond = ir.BinOp(c.op, ir.Var(old.name, T.int32, span=c.a.span), _to(T.int32, c.b), c.type, span=c.span)
    u = s.update[0]
    u.var = ir.Var(old.name, T.int32, span=u.var.span)
    u.value = ir.BinOp("+", ir.Var(old.name, T.int32, span=u.value.a.span), _to(T.int32, u.value.b), T.int32,
                       span=u.value.span)
    reads(s.body)
