"""Which array indices depend on data, and which may fall below zero.

The CUDA printer guards a read of an MSL kernel's input only where the index can leave
the buffer in a way a kernel that is right on Metal still does (``codegen/cuda_guard.py``).
This pass sorts indices by where their values come from:

* **data-dependent** (:meth:`DataDependence.data`): the value depends on something read
  from memory -- a device buffer, a threadgroup or thread array that holds such values,
  an atomic's result, a device function given a buffer -- directly or through control
  flow (a variable assigned under a condition, or in a loop that exits on a condition,
  that depends on data). A gather ``x[idx[i]]``, MLX's ``grid_sample`` (an index from
  ``floor`` of a loaded coordinate), a binary search. Nothing bounds such an index but
  the data.
* **launch-determined**: everything else is computed from thread positions, loop
  counters, template constants, shapes and strides, scalar arguments and reads of an
  input at a constant index (``scale[0]``, ``T[0]``: MLX passes scalars as 1-element
  arrays; such a read is a launch parameter, as a 0-d input is). Among these,
  :meth:`DataDependence.may_be_negative` marks the indices whose derivation can go
  below zero, or wrap around: a subtraction that the range facts (``passes/ranges.py``)
  do not prove non-negative, a negation or complement, a negative constant, a
  float-to-integer conversion, a bitcast, a stride, a signed value read from a thread
  array. ``x[i - 1]`` for ``uint i`` is 4G elements past the start at ``i = 0``.
  Launch parameters (scalar arguments, inputs read at a constant index) count as
  non-negative, as shapes do: in the kernels measured they are sizes, counts and steps
  (gated_delta's ``int T``), and calling every ``int`` parameter possibly negative would
  guard most index arithmetic. A negative one in an index (a shift of -1) is not
  caught; ``METALBENCH_CUDA_GUARD_READS=1`` guards every read.

The analysis is flow-insensitive (a variable is data when any of its definitions is),
so it may call an index data that is not; never the other way round.

    >>> from metalbench import ir, types as T
    >>> i = ir.Swizzle(ir.ThreadAttr("thread_position_in_grid", T.vector_of(T.uint32, 3)), "x", T.uint32)
    >>> j = ir.Var("j", T.int32)
    >>> body = [ir.Decl(j, ir.Load("idx", i, T.int32)),
    ...         ir.Store("o", i, ir.Load("x", j, T.float32))]
    >>> k = ir.KernelIR("k", [ir.Param("x", "buffer", T.float32), ir.Param("idx", "buffer", T.int32),
    ...                       ir.Param("o", "buffer", T.float32, is_output=True)], body)
    >>> d = DataDependence(k)
    >>> d.data(j), d.data(i), d.may_be_negative(ir.BinOp("-", i, ir.Const(1, T.uint32), T.uint32))
    (True, False, True)
"""
from __future__ import annotations

from .. import ir
from .. import types as T
from .ranges import LaunchFacts, Ranges

_LOOPS = (ir.For, ir.CFor, ir.While)
# builtins whose result is one of their arguments' values (or between them): never
# negative when no argument is
_SAME_SIGN = frozenset(("min", "simd_shuffle", "simd_broadcast", "simd_broadcast_first",
                        "simd_shuffle_xor", "simd_shuffle_up", "simd_shuffle_down", "simd_min", "simd_max",
                        "quad_shuffle", "quad_broadcast", "quad_shuffle_xor", "quad_shuffle_up",
                        "quad_shuffle_down", "quad_min", "quad_max"))


class DataDependence:
    """Data dependence (and possible negativity) of the expressions of ``kernel``'s body.
    ``facts``: the launch facts the range analysis may use (``passes/ranges.py``)."""

    def __init__(self, kernel: ir.KernelIR, facts: LaunchFacts | None = None):
        self.kernel = kernel
        self.buffers = {p.name for p in kernel.params if p.kind == "buffer"}
        self.inputs = {p.name for p in kernel.inputs if p.kind == "buffer"}
        self.views = {}                       # view name -> the buffer it reinterprets
        for n in ir.walk(kernel.body):
            if isinstance(n, ir.ViewDecl):
                self.views[n.name] = n.buf
        self.vars: set[str] = set()           # variables holding data
        self.arrays: set[str] = set()         # thread/threadgroup arrays holding data
        self.neg: set[str] = set()            # variables that may be negative (or wrapped)
        self._ranges = None
        self._facts = facts
        for _ in range(64):
            # answers per expression, fresh each round: a stale "no" costs a round, and
            # the last round (no change) answers from the final sets
            self._memo: dict = {}
            before = (len(self.vars), len(self.arrays), len(self.neg))
            self._stmts(kernel.body, False)
            if (len(self.vars), len(self.arrays), len(self.neg)) == before:
                break

    # -- queries
    def _memoised(self, e, question: int, answer) -> bool:
        key = (id(e), question)
        hit = self._memo.get(key)
        if hit is None:          # the entry keeps e alive, so its id names no other node
            hit = self._memo[key] = (e, answer(e))
        return hit[1]

    def data(self, e) -> bool:
        """Does the value of expression ``e`` depend on data read from memory?"""
        return self._memoised(e, 0, self._data)

    def _data(self, e) -> bool:
        if isinstance(e, ir.Load):
            root = self.views.get(e.buf, e.buf)
            if root in self.buffers:
                # an input read at a constant index is a launch parameter (a scalar)
                return not (root in self.inputs and isinstance(e.index, ir.Const)) or self.data(e.index)
            return self._local(e.buf) in self.arrays or self.data(e.index)
        if isinstance(e, (ir.Atomic, ir.MatrixLoad)):
            return True
        if isinstance(e, ir.Var):
            return e.name in self.vars
        if isinstance(e, (ir.Call, ir.FuncCall)) and any(isinstance(a, ir.BufArg) for a in e.args):
            return True       # reads memory through the argument
        if isinstance(e, ir.BufArg):
            return True
        return any(self.data(c) for c in ir.children(e))

    def may_be_negative(self, e) -> bool:
        """Can integer expression ``e`` take a value below zero, or one that wrapped
        around below zero? Conservative: True unless proved otherwise (overflow past the
        type's maximum is not considered)."""
        return self._memoised(e, 1, self._negative)

    def _negative(self, e) -> bool:
        if isinstance(e, ir.Const):
            v = e.value
            return isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0
        if isinstance(e, ir.Var):
            return e.name in self.neg       # a scalar argument is a launch parameter: see the module doc
        if isinstance(e, (ir.ThreadAttr, ir.ShapeOf, ir.NDimOf, ir.Logical)):
            return False
        if isinstance(e, ir.Swizzle):
            return self.may_be_negative(e.value)
        if isinstance(e, ir.Load):
            if self.views.get(e.buf, e.buf) in self.inputs and isinstance(e.index, ir.Const):
                return False                # a launch parameter, as a scalar argument
            t = e.type
            return not (isinstance(t, T.ScalarType) and t.is_int and not t.is_signed)
        if isinstance(e, ir.Call):
            if e.name == "max":           # max(i - 1, 0): one non-negative argument is enough
                return all(self.may_be_negative(a) for a in e.args)
            if e.name == "clamp" and len(e.args) == 3:      # between its two bounds
                return self.may_be_negative(e.args[1]) or self.may_be_negative(e.args[2])
            return e.name not in _SAME_SIGN or any(self.may_be_negative(a) for a in e.args)
        if isinstance(e, ir.UnOp):
            return e.op in ("-", "~") or self.may_be_negative(e.a)
        if isinstance(e, ir.Cast):
            src = getattr(e.value, "type", None)
            if isinstance(src, T.ScalarType) and src.is_float:
                return True               # float -> int: floor(-0.5), and anything saturates
            return self.may_be_negative(e.value)
        if isinstance(e, ir.Select):
            return self.may_be_negative(e.a) or self.may_be_negative(e.b)
        if isinstance(e, ir.BinOp):
            if e.op in ir.COMPARE_OPS:
                return False
            if self.may_be_negative(e.a) or self.may_be_negative(e.b):
                return True
            if e.op != "-":
                return False
            a, b = self.ranges.of(e.a), self.ranges.of(e.b)
            return a is None or b is None or a[0] - b[1] < 0
        if isinstance(e, (ir.VecCons,)):
            return any(self.may_be_negative(a) for a in e.args)
        return True      # strides (negative in strided views), bitcasts, atomics, calls of functions

    @property
    def ranges(self) -> Ranges:
        if self._ranges is None:
            self._ranges = Ranges(self.kernel.body, self._facts)
        return self._ranges

    # -- the fixpoint over statements; ``ctx``: under control flow that depends on data
    def _def(self, var: ir.Var, value, ctx: bool):
        if ctx or (value is not None and self.data(value)):
            self.vars.add(var.name)
        if value is not None and self.may_be_negative(value):
            self.neg.add(var.name)

    def _stmts(self, stmts, ctx: bool):
        for s in stmts:
            self._stmt(s, ctx)

    def _local(self, buf: str) -> str | None:
        """The thread/threadgroup array behind ``buf`` (a view's too); None for buffers."""
        root = self.views.get(buf, buf)
        return None if root in self.buffers else root

    def _stmt(self, s, ctx: bool):
        for e in ir.children(s):
            if isinstance(e, ir.Expr):
                self._writes(e)
        if isinstance(s, ir.Decl):
            if s.init is not None or ctx:
                self._def(s.var, s.init, ctx)
        elif isinstance(s, ir.Assign):
            self._def(s.var, s.value, ctx)
        elif isinstance(s, ir.Store):
            arr = self._local(s.buf)
            if arr is not None and (ctx or self.data(s.value) or self.data(s.index)):
                self.arrays.add(arr)
        elif isinstance(s, ir.If):
            inner = ctx or self.data(s.cond)
            self._stmts(s.then, inner)
            self._stmts(s.orelse, inner)
        elif isinstance(s, ir.For):
            bounds = [s.start, s.stop, s.step]
            inner = ctx or any(self.data(b) for b in bounds) or self._exits_on_data(s.body)
            if inner:
                self.vars.add(s.var.name)
            if any(self.may_be_negative(b) for b in bounds):
                self.neg.add(s.var.name)
            self._stmts(s.body, inner)
        elif isinstance(s, ir.CFor):
            self._stmts(s.init, ctx)
            inner = ctx or (s.cond is not None and self.data(s.cond)) or self._exits_on_data(s.body)
            self._stmts(s.update, inner)
            self._stmts(s.body, inner)
            if inner:        # the counter's value after the loop depends on data too
                for n in ir.walk(s.init):
                    if isinstance(n, ir.Decl):
                        self.vars.add(n.var.name)
        elif isinstance(s, ir.While):
            inner = ctx or self.data(s.cond) or self._exits_on_data(s.body)
            self._stmts(s.body, inner)

    def _writes(self, e):
        """Arrays an expression may write: atomics on them, and device functions given
        them (or a variable by reference), which then hold data."""
        for n in ir.walk(e):
            if isinstance(n, ir.FuncCall):
                for a in n.args:
                    if isinstance(a, ir.BufArg) and self._local(a.buf) is not None:
                        self.arrays.add(self._local(a.buf))
                        self.vars.add(a.buf)
                        self.neg.add(a.buf)
            elif isinstance(n, ir.Atomic) and self._local(n.buf) is not None:
                self.arrays.add(self._local(n.buf))

    def _exits_on_data(self, body) -> bool:
        """Does the loop body leave (break/continue/return) under a condition on data?
        Then the iterations that run, and the values left behind, depend on data."""
        def scan(stmts, cond_data: bool, nested: bool) -> bool:
            for s in stmts:
                if isinstance(s, ir.Return) and cond_data:
                    return True
                if isinstance(s, (ir.Break, ir.Continue)) and cond_data and not nested:
                    return True
                if isinstance(s, ir.If):
                    c = cond_data or self.data(s.cond)
                    if scan(s.then, c, nested) or scan(s.orelse, c, nested):
                        return True
                elif isinstance(s, _LOOPS):
                    c = cond_data or (getattr(s, "cond", None) is not None and self.data(s.cond))
                    if scan(s.body, c, True):
                        return True
            return False
        return scan(body, False, False)


def read_classes(kernel: ir.KernelIR, facts: LaunchFacts | None = None) -> list[tuple[str, str, str]]:
    """``[(buffer, index as printed by ir.dump, class)]`` for every load of an input in
    the kernel body, class one of ``"data"``, ``"negative"`` and ``"launch"`` (a summary
    for tests and for reading what the CUDA guard does).

    >>> from metalbench import ir, types as T
    >>> i = ir.Swizzle(ir.ThreadAttr("thread_position_in_grid", T.vector_of(T.uint32, 3)), "x", T.uint32)
    >>> k = ir.KernelIR("k", [ir.Param("x", "buffer", T.float32), ir.Param("o", "buffer", T.float32, is_output=True)],
    ...                 [ir.Store("o", i, ir.Load("x", i, T.float32))])
    >>> read_classes(k)
    [('x', 'thread_position_in_grid.x', 'launch')]
    """
    d = DataDependence(kernel, facts)
    out = []
    for n in ir.walk(kernel.body):
        if isinstance(n, ir.Load) and d.views.get(n.buf, n.buf) in d.inputs:
            cls = "data" if d.data(n.index) else "negative" if d.may_be_negative(n.index) else "launch"
            out.append((n.buf, ir.dump(n.index), cls))
    return out
