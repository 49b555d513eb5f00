"""Uniformity analysis: which values are the same for every thread of a launch.

A value is *uniform* when every thread computes the same one: constants, scalar kernel
arguments, shapes, grid-level thread attributes, loads from device memory at a uniform
index, and variables assigned only uniform values under uniform control flow. A loop is
*simple* when its trip count is uniform and no thread leaves it early on its own (no
break/continue/return under divergent control). The simulator keeps uniform values as
scalars, runs uniform branches and simple loops as plain Python control flow, and needs
lane masks only elsewhere::

    >>> from metalbench import ir, types as T
    >>> i = ir.Var("i", T.uint32)
    >>> tid = ir.Swizzle(ir.ThreadAttr("thread_position_in_grid", T.uint3), "x", T.uint32)
    >>> u = Uniformity([ir.Decl(i, tid)], uniform_attrs=GRID_UNIFORM)
    >>> u.is_uniform(i), u.is_uniform(ir.Const(3, T.int32))
    (False, True)
"""
from __future__ import annotations

from ..builtins import registry
from .. import ir

# Attributes that are the same for every thread of every launch shape.
GRID_UNIFORM = frozenset({
    "dispatch_quadgroups_per_threadgroup", "dispatch_simdgroups_per_threadgroup",
    "dispatch_threads_per_threadgroup", "grid_origin", "grid_size", "threadgroups_per_grid",
    "threads_per_grid", "thread_execution_width", "threads_per_simdgroup",
})
# Attributes that are uniform only when the grid is a multiple of the threadgroup
# (otherwise edge threadgroups are smaller).
GROUP_SIZE = frozenset({"threads_per_threadgroup", "simdgroups_per_threadgroup",
                        "quadgroups_per_threadgroup"})

# Attributes with one value on every thread of one threadgroup, SIMD-group or quad-group
# (a threadgroup's size is its own, full or not; SIMD- and quad-groups lie within one).
WITHIN = {"threadgroup": GRID_UNIFORM | GROUP_SIZE | {"threadgroup_position_in_grid"}}
WITHIN["simdgroup"] = WITHIN["threadgroup"] | {"simdgroup_index_in_threadgroup"}
WITHIN["quadgroup"] = WITHIN["simdgroup"] | {"quadgroup_index_in_threadgroup"}


def uniform_attributes(even: bool) -> frozenset:
    """The uniform thread attributes of a launch; ``even`` when every threadgroup is full."""
    return GRID_UNIFORM | GROUP_SIZE if even else GRID_UNIFORM


_LOOPS = (ir.For, ir.While, ir.CFor)


class Uniformity:
    """Uniformity facts of one body (a kernel's or a device function's).

    ``uniform_attrs``: attribute names that are uniform; ``varying``: names that are never
    uniform (device function parameters); ``uniform_buffers``: buffers whose loads at a
    uniform index are uniform (device/constant buffers and module constants)."""

    def __init__(self, body, uniform_attrs=GRID_UNIFORM, varying=(), uniform_buffers=()):
        self.attrs = frozenset(uniform_attrs)
        self.varying: set[str] = set(varying)
        self.buffers = frozenset(uniform_buffers)
        self.nonsimple: set[int] = set()
        changed = True
        while changed:  # monotone: sets only grow
            before = (len(self.varying), len(self.nonsimple))
            self._block(body, False)
            changed = (len(self.varying), len(self.nonsimple)) != before

    # -- queries
    def is_uniform(self, e) -> bool:
        """True when expression ``e`` has the same value in every thread."""
        if isinstance(e, ir.Const):
            return True
        if isinstance(e, ir.Var):
            return e.name not in self.varying
        if isinstance(e, ir.ThreadAttr):
            return e.name in self.attrs
        if isinstance(e, (ir.ShapeOf, ir.NDimOf)):
            return True
        if isinstance(e, ir.StrideOf):
            return self.is_uniform(e.dim)
        if isinstance(e, (ir.Swizzle,)):
            return self.is_uniform(e.value)
        if isinstance(e, ir.Cast):
            return self.is_uniform(e.value)
        if isinstance(e, ir.UnOp):
            return self.is_uniform(e.a)
        if isinstance(e, (ir.BinOp, ir.Logical)):
            return self.is_uniform(e.a) and self.is_uniform(e.b)
        if isinstance(e, ir.Select):
            return all(self.is_uniform(x) for x in (e.cond, e.a, e.b))
        if isinstance(e, ir.VecCons):
            return all(self.is_uniform(x) for x in e.args)
        if isinstance(e, ir.Call):
            return registry.get(e.name).kind != "simd" and all(self.is_uniform(x) for x in e.args)
        if isinstance(e, ir.Load):
            return e.buf in self.buffers and self.is_uniform(e.index)
        return False  # Atomic, FuncCall, BufArg

    def simple(self, loop) -> bool:
        """True when ``loop`` runs the same iterations in every thread that enters it."""
        return id(loop) not in self.nonsimple

    # -- the fixpoint walk
    def _mark(self, var):
        self.varying.add(var.name)

    def _block(self, stmts, div):
        for s in stmts:
            self._stmt(s, div)

    def _stmt(self, s, div):
        U = self.is_uniform
        if isinstance(s, ir.Decl):
            if s.init is not None and (div or not U(s.init)):
                self._mark(s.var)
        elif isinstance(s, ir.Assign):
            if div or not U(s.value):
                self._mark(s.var)
        elif isinstance(s, ir.If):
            d = div or not U(s.cond)
            self._block(s.then, d)
            self._block(s.orelse, d)
        elif isinstance(s, ir.For):
            simple = (U(s.start) and U(s.stop) and U(s.step) and s.var.name not in self.varying
                      and not self._escapes(s.body, div))
            if not simple:
                self.nonsimple.add(id(s))
                self._mark(s.var)
            self._block(s.body, div or not simple)
        elif isinstance(s, ir.While):
            simple = U(s.cond) and not self._escapes(s.body, div)
            if not simple:
                self.nonsimple.add(id(s))
            self._block(s.body, div or not simple)
        elif isinstance(s, ir.CFor):
            self._block(s.init, div)
            simple = (s.cond is None or U(s.cond)) and not self._escapes(s.body, div)
            if not simple:
                self.nonsimple.add(id(s))
            self._block(s.body, div or not simple)
            self._block(s.update, div or not simple)

    def _escapes(self, body, outer_div) -> bool:
        """Does some thread leave this loop body on its own (divergent break/continue, or
        a return while the threads in the loop are not all of the body's threads)?"""
        def walk(stmts, rel, depth):
            for s in stmts:
                if isinstance(s, (ir.Break, ir.Continue)):
                    if depth == 0 and rel:
                        return True
                elif isinstance(s, ir.Return):
                    if rel or outer_div:
                        return True
                elif isinstance(s, ir.If):
                    r = rel or not self.is_uniform(s.cond)
                    if walk(s.then, r, depth) or walk(s.orelse, r, depth):
                        return True
                elif isinstance(s, _LOOPS):
                    r = rel or not self.simple(s)
                    if walk(s.body, r, depth + 1):
                        return True
            return False
        return walk(body, False, 0)
