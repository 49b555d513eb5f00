"""Tuples in the Python front end (the DSL and the Numba layer): tuple expressions,
tuple locals, unpacking, indexing, tuple arguments and tuple results of device
functions. The representation is :class:`metalbench.semantics.TupleValue`, a
compile-time aggregate of IR values (see :mod:`metalbench.semantics.tuples`)."""
from __future__ import annotations

import ast

import numpy as np

from ... import ir
from ... import types as T
from ...errors import KernelSyntaxError, KernelTypeError
from ...semantics import ComplexType, ComplexValue, TupleType, TupleValue
from ...semantics.tuples import flatten, join_types
from .specs import Binding


class TuplesMixin:
    """Tuples: a part of :class:`~metalbench.frontend.python.FunctionTranslator`."""

    def tuple_expr(self, node: ast.Tuple) -> TupleValue:
        """``(a, b, ...)`` as a tuple value (items may be tuples)."""
        return TupleValue([self.value_or_tuple(e) for e in node.elts], span=self.span(node))

    def value_or_tuple(self, node):
        """``node``'s value: an IR expression or a :class:`TupleValue`."""
        if isinstance(node, ast.Tuple):
            return self.tuple_expr(node)
        return self.expr(node)

    # -- the compile-time layer's hooks (compiletime.py) -------------------------------
    def static_tuple_value(self, seq, node) -> TupleValue:
        """A compile-time tuple used as a value: a tuple of constants."""
        return TupleValue([self.static_tuple_value(x, node) if isinstance(x, tuple) else self.static_as_value(x, node)
                           for x in seq], span=self.span(node))

    def tuple_items_of(self, node):
        """The items of a run-time tuple ``node`` iterates over (a loop over it unrolls), or
        None (not a tuple; or a body that breaks over items of one type: a counted loop)."""
        if not isinstance(node, (ast.Name, ast.Tuple, ast.Subscript, ast.Attribute, ast.Call)):
            return None
        try:
            v = self.value_or_tuple(node) if not isinstance(node, ast.Call) or self._callee_obj(node.func) not in \
                (enumerate, zip, range) else None
        except KernelTypeError:
            return None
        return list(v.items) if isinstance(v, TupleValue) else None

    def tuple_items(self, value):
        """The items of a tuple value (unpacking a loop target), or None."""
        return list(value.items) if isinstance(value, TupleValue) else None

    def runtime_binding(self, value, node):
        """A name bound to a run-time tuple in an unrolled loop."""
        if isinstance(value, TupleValue):
            return Binding("tuple", value)
        if isinstance(value, ir.Expr) and isinstance(value.type, (T.ScalarType, T.VectorType)):
            # an item computed at run time: evaluated once, into a temporary, before the body
            sp = self.span(node)
            base = ("loop item", sp.line, sp.col)
            n = self._once_counts.get(base, 0)
            self._once_counts[base] = n + 1
            tmp = self.local_var(self.fresh("_mb_it", base + (n,)), value.type, node)
            self._pending_list.append(ir.Assign(tmp, value, span=sp))
            return Binding("var", ir.Var(tmp.name, tmp.type, span=sp))
        return None

    # -- tuple locals ------------------------------------------------------------------
    def _tuple_binding(self, name: str):
        b = self.scopes[0].get(name)
        return b if b is not None and b.kind == "tuple" else None

    def _leaf_vars(self, name: str, tt: TupleType, node, path=()):
        items = []
        for k, t in enumerate(tt.items):
            p = path + (k,)
            if isinstance(t, TupleType):
                items.append(self._leaf_vars(name, t, node, p))
            else:
                items.append(self.local_var(f"{name}__{'_'.join(map(str, p))}", t, node))
        return TupleValue(items, names=tt.names, cls=tt.cls)

    def store_tuple_local(self, name: str, value: TupleValue, node, sp) -> list[ir.Stmt]:
        """``name = (a, b)``: one local per item (typed by the fixpoint, item-wise)."""
        if isinstance(value, ComplexValue) and name in self.vars and name not in self.params \
                and name not in self.complex_names:
            self.complex_names.add(name)        # a real local that becomes complex (translator.py)
            self.complex_retry = True
        elif name in self.vars or name in self.params:
            raise self.err(KernelTypeError, f"{name!r} holds a number; it cannot also hold a "
                                            f"{'complex number' if isinstance(value, ComplexValue) else 'tuple'}",
                           node)
        old = self._tuple_binding(name)
        if old is not None and join_types(self._join, old.value.type, value.type) is None:
            raise self.err(KernelTypeError, f"{name!r} holds a {old.value.type.name}; it cannot also hold a "
                                            f"{value.type.name}", node)
        vars_ = self._leaf_vars(name, value.type, node)
        vals = flatten(value)
        out = []
        if len(vals) > 1 and not all(isinstance(v, (ir.Const, ir.ThreadAttr)) for v in vals):
            vals = self._temps(vals, node, sp, out)          # t = (t[1], t[0]): values first
        for var, v in zip(flatten(vars_), vals):
            out.append(ir.Assign(var, self.conv(v, var.type), span=sp))
        if isinstance(value, ComplexValue):
            self.scopes[0][name] = Binding("tuple", ComplexValue(*vars_.items))
        else:
            self.scopes[0][name] = Binding("tuple", TupleValue(flatten_like(vars_, value), names=value.names,
                                                               cls=value.cls))
        return out

    def _temps(self, vals, node, sp, out):
        temps = []
        for k, v in enumerate(vals):
            if isinstance(v, ir.Const):
                temps.append(v)
                continue
            tmp = self.local_var(self.fresh("_t", ("tuple tmp", sp.line, sp.col, k)), v.type, node)
            out.append(ir.Assign(tmp, v, span=sp))
            temps.append(ir.Var(tmp.name, tmp.type, span=sp))
        return temps

    # -- unpacking ---------------------------------------------------------------------
    def unpack(self, value, n: int, sp):
        """The ``n`` items of a tuple, a vector (components) or raise."""
        if isinstance(value, TupleValue):
            if len(value) != n:
                raise KernelTypeError(f"cannot unpack a tuple of {len(value)} items into {n} names", sp)
            return list(value.items)
        if isinstance(value.type, T.VectorType) and value.type.n == n:
            return [self.sem.component(value, "xyzw"[k], value.span) for k in range(n)]
        raise KernelSyntaxError("tuple assignment needs a tuple, a vector or x.shape on the right", sp)

    def assign_targets(self, targets, values, node, sp) -> list[ir.Stmt]:
        """``a, (b, c) = values``: every value evaluated before any name is assigned."""
        out = []
        flat = []

        def collect(tgts, vals):
            for t, v in zip(tgts, vals):
                if isinstance(t, (ast.Tuple, ast.List)):
                    collect(t.elts, self.unpack(v, len(t.elts), sp))
                else:
                    flat.append((t, v))
        collect(targets, values)
        scalars = [v for _, v in flat if not isinstance(v, TupleValue)]
        if len(flat) > 1 and self._needs_temps(flat):
            temps = iter(self._temps(scalars, node, sp, out))
            flat = [(t, v if isinstance(v, TupleValue) else next(temps)) for t, v in flat]
        for t, v in flat:
            out.extend(self.store_to(t, v, sp))
        return out

    def _needs_temps(self, flat) -> bool:
        """Whether ``a, b = x, y`` must evaluate every value first: a value reads a variable
        (or, when an element is a target, memory) that an earlier target changes."""
        names = set()
        stores = False
        for t, _ in flat:
            if isinstance(t, ast.Name):
                names.add(t.id)
                v = self.vars.get(t.id)
                if v is not None:
                    names.add(v.name)
                b = self.scopes[-1].get(t.id) if self.scopes else None
                if b is not None and b.kind == "var":
                    names.add(b.value.name)
            else:
                stores = True
        for _, v in flat:
            for n in ir.walk(flatten(v)):
                if isinstance(n, ir.Var) and n.name in names:
                    return True
                if stores and isinstance(n, (ir.Load, ir.Atomic, ir.FuncCall)):
                    return True
        return False

    # -- indexing ----------------------------------------------------------------------
    def tuple_subscript(self, t: TupleValue, node: ast.Subscript):
        """``t[k]`` (``t[a:b]`` with constant bounds)."""
        sp = self.span(node)
        if isinstance(node.slice, ast.Slice):
            bounds = [None if x is None else self.static_value(x)
                      for x in (node.slice.lower, node.slice.upper, node.slice.step)]
            return self.sem.tuple_slice(t, *bounds, sp)
        try:
            k = self.static_value(node.slice)
        except KernelTypeError:
            k = None
        if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            return self.sem.tuple_index(t, int(k), sp)
        return self.sem.tuple_index(t, self.expr(node.slice), sp)

    def index_parts(self, slc):
        """The index expressions of ``a[slc]``: a tuple (literal or value) gives several."""
        if isinstance(slc, ast.Tuple):
            return [(p, None) for p in slc.elts]
        if isinstance(slc, (ast.Name, ast.Call, ast.Attribute, ast.Subscript)):
            v = self.value_or_tuple(slc)
            if isinstance(v, TupleValue):
                return [(slc, x) for x in flatten(v)]
            return [(slc, v)]
        return [(slc, None)]

    # -- tuple results of device functions --------------------------------------------
    def tuple_return(self, v: TupleValue, sp) -> list[ir.Stmt]:
        """``return a, b`` in a device function: the items go through the hidden thread
        arrays ``_mb_ret<k>`` (one per item), then the function returns."""
        self.ret_types.append(v.type)
        rt = self.ret_type if isinstance(self.ret_type, TupleType) and \
            len(self.ret_type.leaves) == len(flatten(v)) else v.type
        out = self._pending()
        for k, (x, t) in enumerate(zip(flatten(v), rt.leaves)):
            out.append(ir.Store(f"_mb_ret{k}", ir.Const(0, T.int32, span=sp), self.conv(x, t), span=sp))
        return out + [ir.Return(span=sp)]

    def tuple_result(self, fn_ir: ir.Function, rt: TupleType, args: list, node):
        """The call of a tuple-returning function: thread arrays declared for its items,
        the call as a statement, the items read back into locals."""
        sp = self.span(node)
        key = (node.lineno, node.col_offset)
        bufs = []
        for k, t in enumerate(rt.leaves):
            name = self.fresh(f"_mb_r{k}", ("tuple result", key, k))
            if not any(isinstance(h, ir.ArrayDecl) and h.name == name for h in self.hoisted):
                self.hoisted.append(ir.ArrayDecl(name, "thread", t, (1,), span=sp))
            bufs.append(name)
        call = ir.FuncCall(fn_ir.name, args + [ir.BufArg(b, span=sp) for b in bufs], None, span=sp)
        self._pending_list.append(ir.ExprStmt(call, span=sp))
        leaves = []
        for k, (b, t) in enumerate(zip(bufs, rt.leaves)):
            v = self.local_var(self.fresh(f"_mb_rv{k}", ("tuple value", key, k)), t, node)
            self._pending_list.append(ir.Assign(v, ir.Load(b, ir.Const(0, T.int32, span=sp), t, span=sp), span=sp))
            leaves.append(ir.Var(v.name, t, span=sp))
        return rebuild(rt, iter(leaves))


def flatten_like(structure: TupleValue, value: TupleValue) -> list:
    """``structure``'s items (vars), nested as ``value``'s are."""
    return list(structure.items)


def rebuild(tt: TupleType, leaves) -> TupleValue:
    """A tuple of type ``tt`` whose leaves come from the iterator ``leaves``."""
    if isinstance(tt, ComplexType):
        return ComplexValue(next(leaves), next(leaves))
    return TupleValue([rebuild(t, leaves) if isinstance(t, TupleType) else next(leaves) for t in tt.items],
                      names=tt.names, cls=tt.cls)
