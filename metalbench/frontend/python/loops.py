"""``for`` loops of the Python front end (the DSL and the Numba layer).

``for i in range(...)`` with a constant step is an :class:`~metalbench.ir.For` (a
negative step counts down in a signed type, so ``range(n - 1, -1, -1)`` over an
unsigned ``n`` runs ``n`` times). Every other loop counts its trips ``k = 0 .. n-1`` and
computes the target from ``k``:

- ``range(start, stop, step)`` with a run-time step: ``n`` is Python's trip count
  (either sign of step), the target ``start + k * step``;
- a 1-D array: its elements; ``enumerate(it, start)``: ``(start + k, item)``;
  ``zip(a, b, ...)``: the shortest, a tuple of items;
- a run-time tuple: unrolled per item (compiletime.py's unrolling), or, when the body
  breaks or continues and the items have one type, a select on ``k``.

Loops over compile-time sequences and ``static_range`` unroll (compiletime.py).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ... import ir
from ... import types as T
from ...errors import KernelSyntaxError, KernelTypeError
from ...semantics import TupleValue
from .specs import Binding


@dataclass
class _Iter:
    count: ir.Expr                    # number of trips (an integer)
    value: Callable                   # k (ir.Expr) -> the target's value (Expr or TupleValue)
    items: list | None = None         # a heterogeneous tuple: its items (unrolled)


def _signed(t):
    """A signed integer type holding every value of ``t`` (loop counters that count down)."""
    if t.is_int and t.kind == "u":
        return T.int32 if t.bits < 32 else T.int64
    return t


class LoopsMixin:
    """``for`` loops: a part of :class:`~metalbench.frontend.python.FunctionTranslator`."""

    def for_loop(self, s: ast.For) -> list[ir.Stmt]:
        sp = self.span(s)
        if s.orelse:
            raise KernelSyntaxError("for ... else is not supported", sp)
        it = s.iter
        if self._is_call_of(it, range):
            if isinstance(s.target, ast.Name):
                start, stop, step = self._range_args(it)
                if isinstance(step, ir.Const):
                    return self._counted_for(s, start, stop, step)
        else:
            unrolled = self.static_loop(s)      # static_range(...) or a tuple (compiletime.py)
            if unrolled is not None:
                return unrolled
        itr = self._iterator(it)
        if itr.items is not None:
            return self.unroll(s, itr.items)
        pre = self._pending()
        sem = self.sem
        ct = sem.rules.promote(itr.count.type) if itr.count.type.is_int else T.int32
        k = ir.Var(self.fresh("_mb_k", ("loop counter", s.lineno, s.col_offset)), ct, span=sp)
        self.scopes.append({})
        self.loop_depth += 1
        try:
            head = self.assign_targets([s.target], [itr.value(ir.Var(k.name, ct, span=sp))], s.target, sp)
            head = self._pending() + head
            body = self.block(s.body)
        finally:
            self.loop_depth -= 1
            self.scopes.pop()
        n = sem.convert(itr.count, ct, sp)
        return pre + [ir.For(k, ir.Const(0, ct, span=sp), n, ir.Const(1, ct, span=sp), head + body, span=sp)]

    def _is_call_of(self, node, fn) -> bool:
        return isinstance(node, ast.Call) and self._callee_obj(node.func) is fn

    def _range_args(self, it: ast.Call):
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.err(KernelTypeError, "range() takes 1 to 3 positional arguments", it)
        args = [self.expr(a) for a in it.args]
        for a, node in zip(args, it.args):
            if not (isinstance(a.type, T.ScalarType) and (a.type.is_int or a.type.is_bool)):
                raise self.err(KernelTypeError, f"range() needs integers, got {a.type.name}", node,
                               hint="convert with int32(...) or uint32(...)")
        lit = self.sem.int_literal
        if len(args) == 1:
            return lit(0, self.span(it)), args[0], lit(1, self.span(it))
        if len(args) == 2:
            return args[0], args[1], lit(1, self.span(it))
        if isinstance(args[2], ir.Const) and args[2].value == 0:
            raise self.err(KernelTypeError, "range() step must not be zero", it.args[2])
        return tuple(args)

    def _counted_for(self, s: ast.For, start, stop, step) -> list[ir.Stmt]:
        """``for i in range(start, stop, c)`` with a constant step ``c``."""
        sp = self.span(s)
        rules = self.sem.rules
        t = rules.promote(rules.arith(start.type, stop.type))
        if step.value < 0:
            t = _signed(t)
        name = s.target.id
        var = ir.Var(self.fresh(name, ("loop", s.lineno, s.col_offset)), t, span=self.span(s.target))
        pre = self._pending()
        self.scopes.append({name: Binding("var", var)})
        self.loop_depth += 1
        try:
            body = self.block(s.body)
        finally:
            self.loop_depth -= 1
            self.scopes.pop()
        return pre + [ir.For(var, self.conv(start, t), self.conv(stop, t), self.conv(step, t), body, span=sp)]

    # -- iterables ---------------------------------------------------------------------
    def _iterator(self, node) -> _Iter:
        sem, sp = self.sem, self.span(node)
        if self._is_call_of(node, range):
            return self._range_iter(node)
        if self._is_call_of(node, enumerate):
            if not 1 <= len(node.args) <= 2 or any(k.arg != "start" for k in node.keywords):
                raise self.err(KernelTypeError, "enumerate(iterable, start=0)", node)
            inner = self._iterator(node.args[0])
            st = node.args[1] if len(node.args) > 1 else (node.keywords[0].value if node.keywords else None)
            start = self.expr(st) if st is not None else sem.int_literal(0, sp)
            if inner.items is not None:
                return _Iter(inner.count, None, [TupleValue([sem.int_literal(k, sp) if st is None else
                                                             sem.binop("+", start, sem.int_literal(k, sp), sp), x])
                                                 for k, x in enumerate(inner.items)])
            return _Iter(inner.count, lambda k: TupleValue([sem.binop("+", k, start, sp) if st is not None
                                                            else sem.convert(k, sem.rules.int_literal_type(0), sp),
                                                            inner.value(k)]))
        if self._is_call_of(node, zip):
            if node.keywords or not node.args:
                raise self.err(KernelTypeError, "zip(a, b, ...) takes iterables", node)
            its = [self._iterator(a) for a in node.args]
            if any(i.items is not None for i in its):
                if not all(i.items is not None for i in its):
                    raise self.err(KernelSyntaxError, "zip() of a tuple with a run-time sequence is not supported",
                                   node)
                n = min(len(i.items) for i in its)
                return _Iter(sem.int_literal(n, sp), None, [TupleValue([i.items[k] for i in its]) for k in range(n)])
            count = its[0].count
            for i in its[1:]:
                count = sem.select(sem.binop("<", i.count, count, sp), i.count, count, sp)
            return _Iter(count, lambda k: TupleValue([i.value(k) for i in its]))
        # a tuple (a literal, a tuple value or a static Python tuple of numbers)
        v = self._static_or_value(node)
        if isinstance(v, TupleValue):
            n = len(v)
            types = {getattr(x, "type", None) for x in v.items}
            if n and len(types) == 1 and isinstance(next(iter(types)), (T.ScalarType, T.VectorType)) \
                    and not any(isinstance(x, TupleValue) for x in v.items):
                return _Iter(sem.int_literal(n, sp), lambda k: sem.tuple_index(v, k, sp))
            return _Iter(sem.int_literal(n, sp), None, list(v.items))
        # an array: its elements (rows of a multi-dimensional one)
        info = self.buffer_of(node)
        count = self.shape_of(info, 0, node)
        return _Iter(count, lambda k: self.element_or_row(info, k, node))

    def _static_or_value(self, node):
        if isinstance(node, (ast.Name, ast.Attribute)):
            obj = self._maybe_static(node)
            from .expressions import _NOT_STATIC
            if isinstance(obj, (tuple, list)) and all(isinstance(x, (bool, int, float, np.generic)) for x in obj):
                return TupleValue([self.const(x, node) for x in obj])
            if obj is not _NOT_STATIC:
                return None
            b = self.lookup(node.id, node) if isinstance(node, ast.Name) else None
            if b is not None and b.kind == "buf":
                return None
        if isinstance(node, (ast.Tuple, ast.Name, ast.Call, ast.Subscript, ast.Attribute)):
            try:
                v = self.value_or_tuple(node)
            except KernelTypeError:
                return None
            return v if isinstance(v, TupleValue) else None
        return None

    def _range_iter(self, node) -> _Iter:
        sem, sp = self.sem, self.span(node)
        start, stop, step = self._range_args(node)
        rules = sem.rules
        t = _signed(rules.promote(rules.arith(rules.arith(start.type, stop.type), step.type)))
        start, stop, step = (sem.once(sem.convert(x, t, sp), sp) for x in (start, stop, step))
        zero, one = ir.Const(0, t, span=sp), ir.Const(1, t, span=sp)
        if isinstance(step, ir.Const):
            up = step.value > 0
            span_ = sem.binop("-", stop, start, sp) if up else sem.binop("-", start, stop, sp)
            mag = step if up else sem.unop("-", step, sp)
            n = sem.binop("//", sem.binop("+", span_, sem.binop("-", mag, one, sp), sp), mag, sp)
            ok = sem.binop(">", stop, start, sp) if up else sem.binop(">", start, stop, sp)
            count = sem.select(ok, n, zero, sp)
        else:
            up_n = sem.binop("//", sem.binop("+", sem.binop("-", stop, start, sp), sem.binop("-", step, one, sp), sp),
                             step, sp)
            down_n = sem.binop("//", sem.binop("-", sem.binop("-", start, stop, sp), sem.binop("+", step, one, sp), sp),
                               sem.unop("-", step, sp), sp)
            count = sem.select(sem.binop(">", step, zero, sp),
                               sem.select(sem.binop(">", stop, start, sp), up_n, zero, sp),
                               sem.select(sem.binop(">", start, stop, sp), down_n, zero, sp), sp)
        count = sem.once(count, sp)
        return _Iter(count, lambda k: sem.binop("+", start, sem.binop("*", sem.convert(k, t, sp), step, sp), sp))

    def element_or_row(self, info, k, node):
        """``a[k]`` of an array: an element (a row view of a multi-dimensional one)."""
        if info.ndim > 1:
            return self.row_at(info, [k], node)
        sp = self.span(node)
        k = self.sem.index(k, sp)
        return self.element_load(info, self.strided_index(info, [k], node) if info.strides is not None else k, sp)
