"""Which SIMD-group calls run with all 32 lanes of their SIMD-group active.

Metal's ``simd_sum(x)`` reduces over the *active* lanes. Printed for CUDA, that needs
``__activemask()`` and a fallback loop for partial warps (``builtins/simd.py``), which
costs a vote, a branch and a 32-way unrolled loop the compiler must keep: 17% of a row
softmax on an H200 (``benchmarks/gpu_probe.py``). A call can use the plain five-step
butterfly over a full mask instead when every lane of its SIMD-group is certainly
there:

- the launch has full SIMD-groups: the grid is whole threadgroups and the threadgroup
  size is a multiple of 32 (both known when the CUDA kernel is specialised for a
  launch shape, :class:`~metalbench.passes.ranges.LaunchFacts`);
- the call is reached under SIMD-group-uniform control flow: every enclosing condition
  and loop trip count is the same on all lanes of a SIMD-group (``passes/uniformity``
  with the attributes that are constant within a SIMD-group), no lane left early (a
  ``return`` under a divergent condition before it), and no lazy operand (``c ? a : b``,
  ``&&``, ``||``) guards it with a divergent condition;
- it is in the kernel body, not in a device function (whose callers are not analysed).

    >>> from metalbench import ir, types as T
    >>> from metalbench.passes.ranges import LaunchFacts
    >>> x = ir.Call("simd_sum", [ir.Const(1.0, T.float32)], T.float32)
    >>> k = ir.KernelIR("k", [], [ir.ExprStmt(x)])
    >>> len(converged_calls(k, LaunchFacts((256, 1, 1), exact_grid=True)))
    1
    >>> len(converged_calls(k, LaunchFacts((48, 1, 1), exact_grid=True)))   # 48: a half-empty SIMD-group
    0
"""
from __future__ import annotations

from .. import ir
from ..builtins import registry
from .ranges import LaunchFacts
from .uniformity import WITHIN, Uniformity

# Attributes with one value across the lanes of a SIMD-group.
SIMD_UNIFORM = WITHIN["simdgroup"]


def converged_calls(kernel: ir.KernelIR, facts: LaunchFacts) -> set[int]:
    """``id()`` of each SIMD-group ``Call`` in ``kernel.body`` that runs with all 32 lanes
    of its SIMD-group active (empty unless ``facts.full_warps``)."""
    if not facts.full_warps:
        return set()
    inputs = {p.name for p in kernel.inputs if p.kind == "buffer"}
    written = {n.buf for n in ir.walk(kernel.body) if isinstance(n, (ir.Store, ir.Atomic))}
    u = Uniformity(kernel.body, uniform_attrs=SIMD_UNIFORM, uniform_buffers=inputs - written)
    out: set[int] = set()
    _Walk(u, out).block(kernel.body, True)
    return out


class _Walk:
    def __init__(self, u: Uniformity, out: set):
        self.u, self.out = u, out

    def expr(self, e, conv: bool):
        """Mark the SIMD calls of ``e`` evaluated by every lane when ``conv``."""
        if e is None:
            return
        if isinstance(e, ir.Select):
            self.expr(e.cond, conv)
            inner = conv and (self.u.is_uniform(e.cond) or eager_select(e))
            self.expr(e.a, inner)
            self.expr(e.b, inner)
            return
        if isinstance(e, ir.Logical):
            self.expr(e.a, conv)
            self.expr(e.b, conv and self.u.is_uniform(e.a))
            return
        if isinstance(e, ir.Call) and conv:
            b = registry.lookup(e.name, dialect="msl")
            if b is not None and b.kind == "simd":
                self.out.add(id(e))
        for c in ir.children(e):
            if isinstance(c, ir.Expr):
                self.expr(c, conv)

    def stmt_exprs(self, s, conv):
        for c in ir.children(s):
            if isinstance(c, ir.Expr):
                self.expr(c, conv)

    def block(self, stmts, conv: bool) -> bool:
        """Walk ``stmts`` entered with ``conv``; returns whether every lane that entered is
        still there at the end (False after a ``return`` taken by some lanes only)."""
        for s in stmts:
            if isinstance(s, ir.If):
                self.expr(s.cond, conv)
                c = conv and self.u.is_uniform(s.cond)
                a = self.block(s.then, c)
                b = self.block(s.orelse, c)
                if conv and not c and _returns(s):
                    conv = False
                elif c:
                    conv = a and b
            elif isinstance(s, (ir.For, ir.While, ir.CFor)):
                if isinstance(s, ir.CFor):
                    conv = self.block(s.init, conv)
                simple = conv and self.u.simple(s)
                if isinstance(s, ir.For):
                    for e in (s.start, s.stop, s.step):
                        self.expr(e, conv)
                else:
                    self.expr(s.cond, simple)
                end = self.block(s.body, simple)
                if isinstance(s, ir.CFor):
                    self.block(s.update, simple)
                # lanes meet again after a loop, unless some of them returned in it
                conv = end if simple else (conv and not _returns(s))
            else:
                self.stmt_exprs(s, conv)
        return conv


def eager_select(e: ir.Select) -> bool:
    """Whether ``c ? a : b`` is printed for CUDA with both sides evaluated on every lane
    (``mb_sel``): a side holds a shuffle (a lane reading another lane's value) and nothing
    that is unsafe to evaluate where its side is not taken -- no other SIMD function
    (``simd_sum`` over the lanes that take the side is the meaning there), atomic, device
    function call or matrix operation.

    Real scans write ``(lane == 0) ? 0.0f : simd_shuffle_up(x, 1)``: lane 1 reads lane 0,
    which does not run the shuffle. That is undefined in MSL; Apple's compiler turns such a
    ``?:`` into a select (the kernels are right on Macs), and the simulator reads the
    source lane's value wherever it is, which is the select's meaning. On CUDA the branch
    reads another lane's register out of ``__shfl_sync``'s mask (garbage), so the printer
    evaluates both sides, as the simulator does. (The checked simulator still reports the
    inactive-lane read.)

        >>> from metalbench import types as T
        >>> x, lane = ir.Var("x", T.float32), ir.ThreadAttr("thread_index_in_simdgroup", T.uint32)
        >>> up = ir.Call("simd_shuffle_up", [x, ir.Const(1, T.uint32)], T.float32)
        >>> c = ir.BinOp("==", lane, ir.Const(0, T.uint32), T.bool_)
        >>> eager_select(ir.Select(c, ir.Const(0.0, T.float32), up, T.float32))
        True
        >>> eager_select(ir.Select(c, ir.Const(0.0, T.float32), ir.Call("simd_sum", [x], T.float32), T.float32))
        False
    """
    shuffles = False
    for n in ir.walk([e.a, e.b]):
        if isinstance(n, (ir.Atomic, ir.FuncCall, ir.MatrixMul, ir.MatrixLoad)):
            return False
        if isinstance(n, ir.Call):
            b = registry.lookup(n.name, dialect="msl")
            if b is not None and b.collective is not None:
                if "shuffle" not in b.extra:
                    return False
                shuffles = True
    return shuffles


def _returns(s) -> bool:
    return any(isinstance(n, ir.Return) for n in ir.walk(s))
