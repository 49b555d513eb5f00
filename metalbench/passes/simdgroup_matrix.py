"""SIMD-group matrices (Metal's ``simdgroup_matrix<T, 8, 8>``) lowered to per-thread values.

A simdgroup matrix is held by the 32 threads of a SIMD-group together, two elements per
thread: what ``m.thread_elements()`` gives. Metal does not document which thread holds
which elements; MLX's steel GEMM (``BaseMMAFrag::get_coord`` in ``steel/gemm/mma.h``) and
the kernels built on it rely on this layout, and metalbench defines it the same way:
lane ``l`` holds elements ``(r, c)`` and ``(r, c + 1)`` with ::

    q = l / 4
    r = (q & 4) + (l / 2) % 4          # row
    c = (q & 2) * 2 + (l % 2) * 2      # first of two adjacent columns

    >>> [lane_coord(l) for l in (0, 1, 2, 8, 16, 31)]
    [(0, 0), (0, 2), (1, 0), (0, 4), (4, 0), (7, 6)]

:func:`lower` rewrites a kernel's matrices into those two elements (a ``vec<T, 2>``
value per thread): ``simdgroup_load``/``simdgroup_store`` become each thread's two loads
and stores (so the checked simulator bounds-checks and race-checks them like any
access), ``make_filled_simdgroup_matrix`` a vector, ``thread_elements()`` the vector
itself, an array of ``n`` matrices a thread array of ``2 n`` elements. Only
``MatrixMul`` (a SIMD-group collective) stays a node; the simulator
(``sim/matrix.py``) and the CUDA printer implement it. The MSL printer prints the
unlowered IR, as Metal spells it.

    >>> from metalbench import ir, types as T
    >>> M = T.MatrixType(T.float32)
    >>> m = ir.Var("m", M)
    >>> k = ir.KernelIR("k", [ir.Param("x", "buffer", T.float32)],
    ...     [ir.Decl(m, ir.MatrixLoad("x", ir.Const(0, T.int64), ir.Const(8, T.int64), M))])
    >>> print(ir.dump(lower(k).body[2]))   # doctest: +ELLIPSIS
    float2 m = float2(x[...], x[...])
    >>> print(ir.dump(lower(k).body[0]))
    int32 _sg_row = int32((((thread_index_in_simdgroup >> 2) & 4) + ((thread_index_in_simdgroup >> 1) & 3)))
"""
from __future__ import annotations

from dataclasses import fields, replace

from .. import ir
from .. import types as T

LANE_ATTR = "thread_index_in_simdgroup"


def lane_coord(lane: int) -> tuple[int, int]:
    """(row, first column) of the two elements lane ``lane`` holds."""
    q = lane // 4
    return (q & 4) + (lane // 2) % 4, (q & 2) * 2 + (lane % 2) * 2


def has_matrices(kernel: ir.KernelIR) -> bool:
    """Whether ``kernel`` uses simdgroup matrices (else :func:`lower` returns it as is)."""
    def mat(t):
        return isinstance(t, T.MatrixType)
    for f in kernel.functions:
        if mat(f.ret) or any(mat(p.type) for p in f.params):
            return True
    bodies = [kernel.body] + [f.body for f in kernel.functions]
    for body in bodies:
        for n in ir.walk(body):
            if isinstance(n, (ir.MatrixStore, ir.MatrixElements)):
                return True
            if isinstance(n, ir.ArrayDecl) and mat(n.elem):
                return True
            if isinstance(n, ir.Expr) and mat(getattr(n, "type", None)):
                return True
    return False


def lower(kernel: ir.KernelIR) -> ir.KernelIR:
    """``kernel`` with every simdgroup matrix replaced by this thread's two elements
    (a new kernel; ``kernel`` itself is not changed). Kernels without matrices come back
    unchanged."""
    if not has_matrices(kernel):
        return kernel
    return _Lower(kernel).kernel()


def _i64(e: ir.Expr) -> ir.Expr:
    if e.type == T.int64:
        return e
    if isinstance(e, ir.Const):
        return ir.Const(int(e.value), T.int64, span=e.span)
    return ir.Cast(T.int64, e, span=e.span)


def _pure_index(e) -> bool:
    """Whether index ``e`` is made of variables, constants and arithmetic only."""
    return all(isinstance(n, (ir.Var, ir.Const, ir.BinOp, ir.UnOp, ir.Cast, ir.ThreadAttr)) for n in ir.walk(e))


def _kept_elements(s: ir.Store):
    """For ``a[i] = from_elements(vec(c0, c1))`` where some ``c_k`` is ``a[i].thread_elements()[k]``
    (writing one thread element of a matrix in an array), possibly under a condition on the
    element's run-time index: per element, whether it keeps its value; else None."""
    v = s.value
    if not (isinstance(v, ir.MatrixFromElements) and isinstance(v.value, ir.VecCons) and len(v.value.args) == 2
            and _pure_index(s.index)):
        return None
    key = ir.dump(s.index)

    def same(a, k):
        return (isinstance(a, ir.Swizzle) and a.components == "xy"[k] and isinstance(a.value, ir.MatrixElements)
                and isinstance(a.value.matrix, ir.Load) and a.value.matrix.buf == s.buf
                and ir.dump(a.value.matrix.index) == key)
    # per element: True (kept), "select" (c ? new : kept, the run-time element index), None (new)
    kept = [True if same(a, k) else "select" if isinstance(a, ir.Select) and same(a.b, k) else None
            for k, a in enumerate(v.value.args)]
    return kept if any(kept) else None


def _bin(op, a, b, t, span):
    return ir.BinOp(op, a, b, t, span=span)


class _Lower:
    def __init__(self, kernel: ir.KernelIR):
        self.k = kernel
        self.names = {n.name for body in [kernel.body] + [f.body for f in kernel.functions]
                      for n in ir.walk(body) if isinstance(n, ir.Var)}
        self.names |= {p.name for p in kernel.params}
        self.n = 0
        self.mat_bufs: set[str] = set()     # arrays (or array parameters) of matrices in scope
        self.coord_vars = None               # this lane's (row, column) variables, per body
        self.coord_decls: list = []

    # -- helpers
    def fresh(self, base="_mat") -> str:
        name = base
        while name in self.names:
            self.n += 1
            name = f"{base}{self.n}"
        self.names.add(name)
        return name

    @staticmethod
    def ty(t):
        return t.per_thread if isinstance(t, T.MatrixType) else t

    def coords(self, span):
        """(row, column) of this lane's first element, as int64 IR (variables declared
        once at the top of the body being lowered)."""
        if self.coord_vars is None:
            u = T.uint32
            lane = ir.ThreadAttr(LANE_ATTR, u)

            def c(v):
                return ir.Const(v, u)
            q = _bin(">>", lane, c(2), u, None)
            r = _bin("+", _bin("&", q, c(4), u, None), _bin("&", _bin(">>", lane, c(1), u, None), c(3), u, None),
                     u, None)
            col = _bin("+", _bin("*", _bin("&", q, c(2), u, None), c(2), u, None),
                       _bin("*", _bin("&", lane, c(1), u, None), c(2), u, None), u, None)
            rv, cv = ir.Var(self.fresh("_sg_row"), T.int32), ir.Var(self.fresh("_sg_col"), T.int32)
            self.coord_vars = (rv, cv)
            self.coord_decls = [ir.Decl(rv, ir.Cast(T.int32, r)), ir.Decl(cv, ir.Cast(T.int32, col))]
        rv, cv = self.coord_vars
        return (ir.Cast(T.int64, ir.Var(rv.name, rv.type, span=span), span=span),
                ir.Cast(T.int64, ir.Var(cv.name, cv.type, span=span), span=span))

    def addresses(self, index, stride, transpose, span):
        """The linear indices of this lane's two elements."""
        r, c = self.coords(span)
        base, st = _i64(self.expr(index)), _i64(self.expr(stride))
        L = T.int64
        one = ir.Const(1, L, span=span)
        if transpose:
            i0 = _bin("+", _bin("*", c, st, L, span), r, L, span)
            if not (isinstance(base, ir.Const) and base.value == 0):
                i0 = _bin("+", base, i0, L, span)
            return i0, _bin("+", i0, st, L, span)
        i0 = _bin("+", _bin("*", r, st, L, span), c, L, span)
        if not (isinstance(base, ir.Const) and base.value == 0):
            i0 = _bin("+", base, i0, L, span)
        return i0, _bin("+", i0, one, L, span)

    # -- expressions
    def expr(self, e):
        if e is None:
            return None
        m = getattr(self, "e_" + type(e).__name__, None)
        if m is not None:
            return m(e)
        return self.generic(e)

    def generic(self, node):
        changes = {}
        for f in fields(node):
            v = getattr(node, f.name)
            if f.name == "type":
                nv = self.ty(v)
            elif isinstance(v, ir.Expr):
                nv = self.expr(v)
            elif isinstance(v, list) and v and isinstance(v[0], ir.Stmt):
                nv = self.stmts(v)
            elif isinstance(v, list) and any(isinstance(x, ir.Expr) for x in v):
                nv = [self.expr(x) if isinstance(x, ir.Expr) else x for x in v]
            else:
                continue
            if nv is not v:
                changes[f.name] = nv
        return replace(node, **changes) if changes else node

    def e_MatrixFill(self, e):
        vt = e.type.per_thread
        v = self.expr(e.value)
        if not e.diagonal:
            return ir.VecCons(vt, [v], span=e.span)
        r, c = self.coords(e.span)
        zero = ir.Const(0, e.type.elem, span=e.span)
        out = []
        for k in (0, 1):
            ck = _bin("+", c, ir.Const(k, T.int64), T.int64, e.span) if k else c
            on = _bin("==", r, ck, T.bool_, e.span)
            out.append(ir.Select(on, v, zero, e.type.elem, span=e.span))
        return ir.VecCons(vt, out, span=e.span)

    def e_MatrixLoad(self, e):
        i0, i1 = self.addresses(e.index, e.stride, e.transpose, e.span)
        el = e.type.elem
        return ir.VecCons(e.type.per_thread, [ir.Load(e.buf, i0, el, span=e.span),
                                              ir.Load(e.buf, i1, el, span=e.span)], span=e.span)

    def e_MatrixMul(self, e):
        return ir.MatrixMul(self.expr(e.a), self.expr(e.b), self.expr(e.c), self.ty(e.type), span=e.span)

    def e_MatrixElements(self, e):
        return self.expr(e.matrix)

    def e_MatrixFromElements(self, e):
        return self.expr(e.value)

    def pair(self, idx, span):
        i = _i64(self.expr(idx))
        two = _bin("*", i, ir.Const(2, T.int64, span=span), T.int64, span)
        return two, _bin("+", two, ir.Const(1, T.int64, span=span), T.int64, span)

    def e_Load(self, e):
        if not isinstance(e.type, T.MatrixType):
            return self.generic(e)
        i0, i1 = self.pair(e.index, e.span)
        el = e.type.elem
        return ir.VecCons(e.type.per_thread, [ir.Load(e.buf, i0, el, span=e.span),
                                              ir.Load(e.buf, i1, el, span=e.span)], span=e.span)

    def e_BufArg(self, e):
        if e.buf in self.mat_bufs and e.offset is not None:
            return ir.BufArg(e.buf, _bin("*", _i64(self.expr(e.offset)), ir.Const(2, T.int64), T.int64, e.span),
                             span=e.span)
        return self.generic(e)

    # -- statements
    def stmts(self, body):
        out = []
        for s in body:
            m = getattr(self, "s_" + type(s).__name__, None)
            out.extend(m(s) if m is not None else [self.generic(s)])
        return out

    def temp(self, value, span):
        """(statements, var) holding ``value`` (already lowered) once."""
        if isinstance(value, ir.Var):
            return [], value
        v = ir.Var(self.fresh(), value.type, span=span)
        return [ir.Decl(v, value, span=span)], v

    def s_ArrayDecl(self, s):
        if not isinstance(s.elem, T.MatrixType):
            return [s]
        self.mat_bufs.add(s.name)
        return [ir.ArrayDecl(s.name, s.space, s.elem.elem, tuple(s.shape) + (2,), None, span=s.span)]

    def s_Store(self, s):
        if not isinstance(s.value.type, T.MatrixType):
            return [self.generic(s)]
        i0, i1 = self.pair(s.index, s.span)
        el = s.value.type.elem
        kept = _kept_elements(s)
        if kept:   # a[t].thread_elements()[k] = v: the other element is not read and rewritten
            out = []
            for i, a, same in zip((i0, i1), s.value.value.args, kept):
                if same is True:
                    continue
                if same is None:
                    out.append(ir.Store(s.buf, i, self.expr(a), span=s.span))
                else:      # (k == e ? v : the element): stored when the condition holds
                    out.append(ir.If(self.expr(a.cond), [ir.Store(s.buf, i, self.expr(a.a), span=s.span)],
                                     span=s.span))
            return out
        pre, v = self.temp(self.expr(s.value), s.span)
        return pre + [ir.Store(s.buf, i0, ir.Swizzle(v, "x", el, span=s.span), span=s.span),
                      ir.Store(s.buf, i1, ir.Swizzle(v, "y", el, span=s.span), span=s.span)]

    def s_MatrixStore(self, s):
        pre, v = self.temp(self.expr(s.value), s.span)
        i0, i1 = self.addresses(s.index, s.stride, s.transpose, s.span)
        el = v.type.elem
        return pre + [ir.Store(s.buf, i0, ir.Swizzle(v, "x", el, span=s.span), span=s.span),
                      ir.Store(s.buf, i1, ir.Swizzle(v, "y", el, span=s.span), span=s.span)]

    # -- kernel and functions
    def body(self, stmts):
        """A kernel or function body, with this lane's coordinates declared first if used."""
        self.coord_vars, self.coord_decls = None, []
        out = self.stmts(stmts)
        return self.coord_decls + out

    def function(self, f: ir.Function) -> ir.Function:
        saved = self.mat_bufs
        self.mat_bufs = set(saved)
        params = []
        for p in f.params:
            if isinstance(p.type, T.MatrixType) and p.space is not None:
                self.mat_bufs.add(p.name)
                params.append(replace(p, type=p.type.elem))
            else:
                params.append(replace(p, type=self.ty(p.type)))
        body = self.body(f.body)
        self.mat_bufs = saved
        return replace(f, params=params, ret=self.ty(f.ret), body=body)

    def kernel(self) -> ir.KernelIR:
        k = self.k
        # arrays of matrices are declared in the kernel body (names are unique per kernel)
        for n in ir.walk(k.body):
            if isinstance(n, ir.ArrayDecl) and isinstance(n.elem, T.MatrixType):
                self.mat_bufs.add(n.name)
        funcs = [self.function(f) for f in k.functions]
        return replace(k, body=self.body(k.body), functions=funcs)
