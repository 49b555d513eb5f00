"""Whole-array reductions in kernels, as Numba compiles them: ``a.sum()``, ``np.sum(a)``,
``prod``, ``min``/``amin``, ``max``/``amax``, ``mean``, ``var``, ``std``, ``all``, ``any``,
``argmin``, ``argmax``, ``np.count_nonzero`` and the ``np.nan*`` forms (``nansum``,
``nanprod``, ``nanmin``, ``nanmax``, ``nanmean``, ``nanvar``, ``nanstd``).

Each is a loop over the elements in C order (any number of dimensions, views and
arrays of the Python scope included), written as Numba's implementation is, so the
result is Numba's bit for bit: one accumulator updated in order (``sum`` of a float32
array adds in float32; of integers in int64/uint64), ``mean`` = sum / size, ``var`` =
mean of squared deviations from the mean (two passes), ``std`` = sqrt(var); ``min``/
``max``/``argmin``/``argmax`` give the first NaN when there is one, ``nanmin``/``nanmax``
skip NaN. The statements go before the statement that uses the value; the value is a
local variable.

    >>> import numpy as np, metalbench as mb
    >>> from metalbench import cuda
    >>> @cuda.jit
    ... def k(a, out):
    ...     out[0] = a.sum()
    ...     out[1] = np.nanmax(a)
    >>> out = np.zeros(2)
    >>> k[1, 1](np.array([1.5, np.nan, -2.0]), out)
    >>> out.tolist()
    [nan, 1.5]
"""
from __future__ import annotations

import ast

import numpy as np

from ... import ir
from ... import types as T
from ...errors import KernelTypeError
from .specs import Binding, BufInfo

#: array methods that reduce the whole array
METHODS = frozenset({"sum", "prod", "min", "max", "mean", "var", "std", "all", "any", "argmin", "argmax"})

#: NumPy functions -> the reduction they are
FUNCTIONS = {f: name for name, f in (
    ("sum", np.sum), ("prod", np.prod), ("min", np.min), ("min", getattr(np, "amin", np.min)),
    ("max", np.max), ("max", getattr(np, "amax", np.max)), ("mean", np.mean), ("var", np.var),
    ("std", np.std), ("all", np.all), ("any", np.any), ("argmin", np.argmin), ("argmax", np.argmax),
    ("count_nonzero", np.count_nonzero), ("nansum", np.nansum), ("nanprod", np.nanprod),
    ("nanmin", np.nanmin), ("nanmax", np.nanmax), ("nanmean", np.nanmean), ("nanvar", np.nanvar),
    ("nanstd", np.nanstd))}

_NO_IDENTITY = {"min": "minimum", "max": "maximum", "nanmin": "minimum", "nanmax": "maximum",
                "argmin": "argmin", "argmax": "argmax"}


def _expand(t: T.ScalarType) -> T.ScalarType:
    """Numba's accumulator for integer sums: a machine integer (bool counts as int64)."""
    if t.is_bool:
        return T.int64
    if t.is_int:
        return T.uint64 if np.dtype(t.np).kind == "u" else T.int64
    return t


class ReductionsMixin:
    """Reductions: a part of :class:`~metalbench.frontend.python.FunctionTranslator`."""

    def reduction_call(self, node: ast.Call):
        """The value of ``node`` when it is a whole-array reduction, else None."""
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in METHODS:
            info = self.array_of(f.value)
            if info is not None:
                if node.args or node.keywords:
                    raise self.err(KernelTypeError, f"{ast.unparse(f)}() takes no arguments in kernels "
                                                    "(axis=, dtype=, out= are not supported)", node,
                                   hint=f"reduce the whole array: {ast.unparse(f)}()")
                return self.reduce_array(f.attr, info, node)
        obj = self._callee_obj(f)
        name = FUNCTIONS.get(obj) if obj is not None and _hashable(obj) else None
        if name is None or len(node.args) != 1:
            return None
        info = self.array_of(node.args[0])
        if info is None:
            return None
        if node.keywords:
            raise self.err(KernelTypeError, f"{ast.unparse(f)}(a) takes no keyword arguments in kernels "
                                            "(axis=, dtype=, out= are not supported)", node,
                           hint=f"reduce the whole array: {ast.unparse(f)}(a)")
        return self.reduce_array(name, info, node)

    def copy_array(self, name: str, info, node) -> list:
        """``name = a.copy()`` (also ``np.copy(a)``): a thread-local C-contiguous copy (Numba
        allocates one per thread); its shape must be known at compile time."""
        sp = self.span(node)
        elem = self.element_type(info)
        if info.shape is None or not isinstance(elem, T.ScalarType):
            raise self.err(KernelTypeError, f"{ast.unparse(node)}: a copy in a kernel is a local array, so the "
                                            "array's shape must be known at compile time", node,
                           hint="copy into cuda.local.array(shape, dtype) with a loop")
        shape = tuple(int(d) for d in info.shape)
        n = int(np.prod(shape))
        cname = self.fresh(name, ("copy", node.lineno, node.col_offset))
        decl = ir.ArrayDecl(cname, "thread", elem, (max(n, 1),), span=sp)
        self.scopes[0][name] = Binding("buf", BufInfo(cname, elem, "thread", len(shape), shape, decl=decl))
        if not any(isinstance(h, ir.ArrayDecl) and h.name == cname for h in self.hoisted):
            self.hoisted.append(decl)
        self._begin(node)
        out = self._pending()
        k = self._tmp("k", T.int64, node, out, self.sem.int_literal(0, sp))
        self._each(info, node, out, lambda v: [ir.Store(cname, self.sem.index(k, sp), v, span=sp)], counter=k)
        return out

    # -- the loops -----------------------------------------------------------------------
    def _begin(self, node):
        sp = self.span(node)
        base = (sp.line, sp.col, sp.end_line, sp.end_col)
        n = self._once_counts.get(("reduce",) + base, 0)
        self._once_counts[("reduce",) + base] = n + 1
        self._red = (("reduce",) + base + (n,), 0)
        if not hasattr(self, "_red_names"):
            self._red_names = {}

    def reduce_array(self, kind: str, info, node) -> ir.Expr:
        """``kind`` (a :data:`FUNCTIONS` name) over every element of ``info``."""
        sp = self.span(node)
        elem = self.element_type(info)
        if not isinstance(elem, T.ScalarType):
            raise self.err(KernelTypeError, f"{kind}() of an array of {elem.name} is not supported", node)
        if kind in _NO_IDENTITY and info.shape is not None and 0 in tuple(info.shape):
            raise self.err(KernelTypeError, f"zero-size array to reduction operation {_NO_IDENTITY[kind]} which "
                                            "has no identity", node)
        self._begin(node)
        out = self._pending()
        r = getattr(self, "_r_" + kind.removeprefix("nan").replace("count_nonzero", "count"))(kind, info, elem,
                                                                                              node, out)
        self._pending_list = out + self._pending_list
        return r

    def _tmp(self, what: str, t, node, out: list, init=None) -> ir.Var:
        """A fresh local of this reduction (its type settles with the other locals)."""
        key, k = self._red
        self._red = (key, k + 1)
        name = self.fresh("_r_" + what, key + (k,))
        v = self.local_var(name, t, node)
        self._red_names[v.name] = name
        if init is not None:
            out.append(ir.Assign(v, self.conv(init, v.type), span=self.span(node)))
        return v

    def _set(self, var: ir.Var, value: ir.Expr, node) -> ir.Stmt:
        """``var = value`` (the value's type joins the local's)."""
        v = self.local_var(self._red_names[var.name], value.type, node)
        return ir.Assign(v, self.conv(value, v.type), span=self.span(node))

    def _each(self, info, node, out: list, body, counter: ir.Var | None = None):
        """Append the loop nest calling ``body(value)`` (statements) per element, C order."""
        sp = self.span(node)
        dims = [self.shape_of(info, d, node) for d in range(info.ndim)]
        ct = self.sem.rules.promote(dims[0].type) if dims and dims[0].type.is_int else T.int32
        bounds = [self.sem.convert(d, ct, sp) for d in dims]
        out.extend(self._pending())
        idx = [ir.Var(self.fresh("_r_i", self._red[0] + ("i", self._red[1], d)), ct, span=sp)
               for d in range(info.ndim)]
        val = self._tmp("v", self.element_type(info), node, [])
        lin = [self.sem.index(i, sp) for i in idx]
        if info.ndim == 0:                      # a 0-d array: its one element, no loop
            flat = ir.Const(0, T.int32, span=sp)
        elif info.strides is not None:
            flat = self.strided_index(info, lin, node)
        else:
            if info.wide:
                lin = [self.widen_index(e, info.name, node) for e in lin]
            flat = lin[0] if len(lin) == 1 else self.sem.linear_index(lin, [None] + dims[1:], sp)
        load = [ir.Assign(val, self.element_load(info, flat, sp), span=sp)]
        load = self._pending() + load           # temporaries of the index: inside the loop
        stmts = body(ir.Var(val.name, val.type, span=sp))
        if counter is not None:
            stmts.append(self._set(counter, self.sem.binop("+", counter, self.sem.int_literal(1, sp), sp), node))
        inner = load + self._pending() + stmts  # temporaries of the body: after the load
        for d in reversed(range(info.ndim)):
            inner = [ir.For(idx[d], ir.Const(0, ct, span=sp), bounds[d], ir.Const(1, ct, span=sp), inner, span=sp)]
        out.extend(inner)

    def _isnan(self, v, node):
        return self.builtin_call("isnan", [v], node)

    def _skip_nan(self, kind, elem, v, node, stmts):
        """``stmts`` for a nan* reduction: only where ``v`` is not NaN."""
        if kind.startswith("nan") and elem.is_float:
            return [ir.If(self.sem.unop("!", self._isnan(v, node), self.span(node)), stmts, span=self.span(node))]
        return stmts

    # -- the reductions (Numba's implementations, in IR) -----------------------------------
    def _r_sum(self, kind, info, elem, node, out, op="+", one=0):
        sp = self.span(node)
        if kind.startswith("nan"):      # Numba: intp for integer arrays
            t = T.int64 if elem.is_int or elem.is_bool else elem
        else:
            t = _expand(elem)
        c = self._tmp("acc", t, node, out, self.sem.convert(ir.Const(one, T.int64, span=sp), t, sp))
        self._each(info, node, out, lambda v: self._skip_nan(kind, elem, v, node, [
            self._set(c, self.sem.binop(op, c, self.sem.convert(v, t, sp), sp), node)]))
        return ir.Var(c.name, c.type, span=sp)

    def _r_prod(self, kind, info, elem, node, out):
        return self._r_sum(kind, info, elem, node, out, "*", 1)

    def _r_count(self, kind, info, elem, node, out):
        sp = self.span(node)
        c = self._tmp("acc", T.int64, node, out, self.sem.int_literal(0, sp))
        self._each(info, node, out, lambda v: [ir.If(self.sem.to_bool(v, sp), [
            self._set(c, self.sem.binop("+", c, self.sem.int_literal(1, sp), sp), node)], span=sp)])
        return ir.Var(c.name, c.type, span=sp)

    def _r_all(self, kind, info, elem, node, out):
        sp = self.span(node)
        want = kind == "all"
        c = self._tmp("acc", T.bool_, node, out, ir.Const(want, T.bool_, span=sp))
        test = (lambda v: self.sem.unop("!", self.sem.to_bool(v, sp), sp)) if want else \
            (lambda v: self.sem.to_bool(v, sp))
        self._each(info, node, out, lambda v: [ir.If(test(v), [
            ir.Assign(c, ir.Const(not want, T.bool_, span=sp), span=sp)], span=sp)])
        return ir.Var(c.name, c.type, span=sp)

    def _r_any(self, kind, info, elem, node, out):
        return self._r_all(kind, info, elem, node, out)

    def _r_mean(self, kind, info, elem, node, out, count=None):
        """Numba: a float64 (integer arrays) or element-type accumulator over size;
        nanmean: a float64 accumulator over the count of non-NaN elements."""
        sp = self.span(node)
        if kind == "nanmean" or kind == "nanvar":
            c = self._tmp("acc", self.const(0.0, node).type, node, out, self.const(0.0, node))
            count = self._tmp("n", T.int64, node, out, self.sem.int_literal(0, sp))
            self._each(info, node, out, lambda v: self._skip_nan("nan", elem, v, node, [
                self._set(c, self.sem.binop("+", c, v, sp), node),
                self._set(count, self.sem.binop("+", count, self.sem.int_literal(1, sp), sp), node)]))
            n = count
        else:
            t = T.float64 if elem.is_int or elem.is_bool else elem
            c = self._tmp("acc", t, node, out, self.sem.convert(ir.Const(0, T.int64, span=sp), t, sp))
            self._each(info, node, out, lambda v: [self._set(c, self.sem.binop("+", c, v, sp), node)])
            n = self.sem.convert(self.size_of(info, node), T.int64, sp)
        m = self._tmp("mean", self.sem.binop("/", c, n, sp).type, node, out, self.sem.binop("/", c, n, sp))
        return ir.Var(m.name, m.type, span=sp)

    def _r_var(self, kind, info, elem, node, out):
        sp = self.span(node)
        nan = kind.startswith("nan")
        m = self._r_mean("nanmean" if nan else "mean", info, elem, node, out)
        dev_t = self.sem.binop("-", ir.Var("_", elem), m, sp).type
        ssd = self._tmp("ssd", dev_t, node, out, self.sem.convert(self.const(0.0 if nan else 0, node), dev_t, sp))
        n = self._tmp("n", T.int64, node, out, self.sem.int_literal(0, sp)) if nan else None

        def body(v):
            d = self._tmp("d", dev_t, node, [])
            stmts = [self._set(d, self.sem.binop("-", v, m, sp), node),
                     self._set(ssd, self.sem.binop("+", ssd, self.sem.binop("*", d, d, sp), sp), node)]
            if n is not None:
                stmts.append(self._set(n, self.sem.binop("+", n, self.sem.int_literal(1, sp), sp), node))
            return self._skip_nan(kind, elem, v, node, stmts)
        self._each(info, node, out, body)
        count = n if n is not None else self.sem.convert(self.size_of(info, node), T.int64, sp)
        r = self.sem.binop("/", ssd, count, sp)
        v = self._tmp("var", r.type, node, out, r)
        return ir.Var(v.name, v.type, span=sp)

    def _r_std(self, kind, info, elem, node, out):
        v = self._r_var("nanvar" if kind.startswith("nan") else "var", info, elem, node, out)
        return self.builtin_call("sqrt", [v], node)      # var ** 0.5, correctly rounded

    def _r_min(self, kind, info, elem, node, out, cmp="<"):
        """min/max: the first NaN if there is one (Numba returns it); nanmin/nanmax: NaN
        skipped, ``not (r < v)`` replaces r (the last of equal values)."""
        sp = self.span(node)
        first = self._first(info, node)
        r = self._tmp("acc", elem, node, out, first)
        nan = elem.is_float

        def body(v):
            if kind.startswith("nan"):
                keep = self.sem.binop(cmp, r, v, sp)
                return self._skip_nan(kind, elem, v, node, [
                    ir.If(self.sem.unop("!", keep, sp), [ir.Assign(r, v, span=sp)], span=sp)])
            take = self.sem.binop(cmp, v, r, sp)
            if nan:
                take = self.sem.logical("and", self.sem.unop("!", self._isnan(r, node), sp),
                                        self.sem.logical("or", self._isnan(v, node), take, sp), sp)
            return [ir.If(take, [ir.Assign(r, v, span=sp)], span=sp)]
        self._each(info, node, out, body)
        return ir.Var(r.name, r.type, span=sp)

    def _r_max(self, kind, info, elem, node, out):
        return self._r_min(kind, info, elem, node, out, ">")

    def _r_argmin(self, kind, info, elem, node, out, cmp="<"):
        sp = self.span(node)
        r = self._tmp("acc", elem, node, out, self._first(info, node))
        ri = self._tmp("at", T.int64, node, out, self.sem.int_literal(0, sp))
        k = self._tmp("k", T.int64, node, out, self.sem.int_literal(0, sp))

        def body(v):
            take = self.sem.binop(cmp, v, r, sp)
            if elem.is_float:
                take = self.sem.logical("and", self.sem.unop("!", self._isnan(r, node), sp),
                                        self.sem.logical("or", self._isnan(v, node), take, sp), sp)
            return [ir.If(take, [ir.Assign(r, v, span=sp), ir.Assign(ri, k, span=sp)], span=sp)]
        self._each(info, node, out, body, counter=k)
        return ir.Var(ri.name, ri.type, span=sp)

    def _r_argmax(self, kind, info, elem, node, out):
        return self._r_argmin(kind, info, elem, node, out, ">")

    def _first(self, info, node) -> ir.Expr:
        """The first element in C order."""
        sp = self.span(node)
        zero = [ir.Const(0, T.int32, span=sp)] * info.ndim
        if info.strides is not None:
            return self.element_load(info, self.strided_index(info, zero, node), sp)
        return self.element_load(info, ir.Const(0, T.int32, span=sp), sp)


def _hashable(obj) -> bool:
    try:
        hash(obj)
        return True
    except TypeError:
        return False
