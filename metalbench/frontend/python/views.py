"""Array views in the DSL: ``x[i:]``, a row ``x[r]`` of a multi-dimensional array, and
``x.view(float4)`` (a vector view, as NumPy and Warp spell it), built on the semantic
layer's views (:mod:`metalbench.semantics.views`).

A view is a compile-time value: the array it looks into is known statically, only its
offset is computed at run time. Views index, store, take part in atomics and
``simdgroup_load``/``simdgroup_store``, and pass to ``@mb.func`` functions::

    >>> import numpy as np, metalbench as mb
    >>> from metalbench.dsl import *
    >>> @mb.func
    ... def total(v, n):
    ...     s = 0.0
    ...     for k in range(n):
    ...         s += v[k]
    ...     return s
    >>> @mb.kernel
    ... def rows(x, out: mb.Out(shape=lambda x: x.shape[:1])):
    ...     r = thread_position_in_grid.x
    ...     q = x.view(float4)                 # x read four floats at a time
    ...     v = q[r]                           # a float4: row r of a (n, 4) array
    ...     out[r] = total(x[r], 4) + v.x - v.x
    >>> x = np.arange(8, dtype=np.float32).reshape(2, 4)
    >>> [float(v) for v in rows(x, grid=2, backend="sim")]
    [6.0, 22.0]

Meaning (one rule, the semantic layer's):

- ``x[i:]`` is the elements from ``i`` on (``x[i:j]``: up to ``j``; steps other than 1
  are not supported); its ``size`` and ``shape[0]`` are what remains.
- ``x[r]`` of an array with two or more dimensions, where an array is expected
  (indexed again, sliced, passed to an ``@mb.func`` whose parameter is indexed, given to
  ``simdgroup_load``, bound to a name that is indexed), is row ``r``; as a value, one
  index on a multi-dimensional array stays the linear element ``r`` (the DSL's rule).
- ``x.view(T)`` reads the storage as elements of ``T``: a vector type of the array's
  element type (``float4`` over float32: element ``i`` is ``x[4 i .. 4 i + 3]``;
  ``float3`` steps by 4 elements, as Metal lays it out) or another type of another size,
  which reinterprets the bytes as NumPy's ``view`` does.
- A name bound to a view keeps the offset it had when bound (``p = x[i:]``, then
  changing ``i`` does not move ``p``).
"""
from __future__ import annotations

import ast
from dataclasses import replace
import numpy as np

from ... import ir
from ... import types as T
from ...errors import KernelSyntaxError, KernelTypeError, MetalbenchError
from ...semantics import DatetimeType, DatetimeValue, View
from .specs import Binding, BufInfo, resolve_dtype


def resolve_elem_type(obj):
    """The element type ``obj`` names for arrays and views: a scalar dtype, a vector type
    (``float4``) or a simdgroup matrix type (``simdgroup_float8x8``); None if none."""
    t = resolve_dtype(obj)
    if t is not None:
        return t
    if isinstance(obj, str) and obj in T.VECTORS:
        return T.VECTORS[obj]
    if isinstance(obj, (T.VectorType, T.MatrixType)):
        return obj
    mt = getattr(obj, "matrix_type", None)
    return mt if isinstance(mt, T.MatrixType) else None


def _uses_as_array(fdef, name: str) -> bool:
    """Whether the function body indexes, slices or views ``name`` (so an argument or
    value bound to it must be an array)."""
    for n in ast.walk(fdef):
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == name:
            return True
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == name \
                and n.attr in ("view", "size", "shape", "ndim"):
            return True
        if isinstance(n, ast.Call) and any(isinstance(a, ast.Name) and a.id == name for a in n.args):
            f = n.func
            fname = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if fname in ("simdgroup_load", "simdgroup_store", "len") or fname.startswith("atomic_"):
                return True
    return False


class ViewsMixin:
    """Array views: a part of :class:`~metalbench.frontend.python.FunctionTranslator`."""

    # -- what an expression denotes -----------------------------------------------------
    def array_of(self, node, want_array: bool = True) -> BufInfo | None:
        """The array (or view) ``node`` denotes, or None when it is not one: a name bound to
        an array, ``x[i:]``, ``x[r]`` (a row; with ``want_array``), ``x.view(T)``, or a
        field of a structure argument."""
        if isinstance(node, ast.Name):
            b = self.lookup(node.id, node)
            if b.kind == "buf":
                return b.value
            if b.kind == "complexbuf":
                return self.complex_array(b.value)          # complexes.py
            hook = getattr(b.value, "__metalbench_buffer__", None) if b.kind == "pyobj" else None
            if hook is None and b.kind == "pyobj" and _host_array(b.value) is not None:
                return self.global_array(node.id, b.value, node)
            return hook(self, node) if hook is not None else None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and self.lookup(node.value.id, node.value).kind == "complexbuf":
            return self.complex_part(self.lookup(node.value.id, node.value).value, node)
        if isinstance(node, ast.Attribute) and node.attr in ("real", "imag") and isinstance(node.value, ast.Name) \
                and getattr(self.lookup(node.value.id, node.value).value, "cplx", False):
            return self.complex_part(self.complex_storage_info(self.lookup(node.value.id, node.value).value), node)
        if isinstance(node, ast.Attribute):
            hook = getattr(self, "field_array", None)          # structure arguments (tuples.py)
            return hook(node) if hook is not None else None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "reshape":
            base = self.array_of(node.func.value)
            return self.reshape_view(base, node) if base is not None else None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "view":
            base = self.array_of(node.func.value)
            if base is None:
                return None
            if len(node.args) != 1 or node.keywords:
                raise self.err(KernelTypeError, "x.view(dtype) takes one type", node)
            return self.view_as(base, node.args[0], node)
        if isinstance(node, ast.Subscript):
            parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if any(isinstance(p, ast.Slice) for p in parts):
                base = self.array_of(node.value)
                if base is None:
                    return None
                return self.slice_view(base, parts, node)
            item = self._tuple_array_item(node)
            if item is not None:
                return item
            if not want_array:
                return None
            base = self.array_of(node.value)
            if base is None or len(parts) >= base.ndim:
                return None
            return self.row_view(base, parts, node)
        return None

    def _tuple_array_item(self, node: ast.Subscript):
        """``x[k]`` of a tuple argument whose item ``k`` (a constant) is an array."""
        if not (isinstance(node.value, ast.Name) and self.lookup(node.value.id, node.value).kind == "tuple"):
            return None
        tup = self.lookup(node.value.id, node.value).value
        try:
            k = self.static_value(node.slice)
        except MetalbenchError:
            return None
        items = getattr(tup, "items", None)
        if not isinstance(k, (int, np.integer)) or items is None or not -len(items) <= k < len(items):
            return None
        return getattr(items[k], "info", None)

    def global_array(self, name: str, obj, node) -> BufInfo:
        """A NumPy array (or device array) of the Python scope read by the kernel: its
        values at compile time, as a constant array (Numba captures globals this way)."""
        import numpy as np
        a = _host_array(obj)
        got = self.m.global_arrays.get(id(obj))
        if got is None and a.dtype.kind == "c" and a.size:
            # a complex array: a constant of its real parts with a trailing 2 (complexes.py)
            store = np.ascontiguousarray(a)
            store = store.view(store.dtype.char.lower()).reshape(a.shape + (2,))
            info = self.global_array(name, store, node)
            got = self.m.global_arrays[id(obj)] = (obj, self.complex_array(info))
        if got is None:
            t = resolve_dtype(a.dtype)
            if t is None:
                raise self.err(KernelTypeError, f"the global array {name!r} ({a.dtype}, shape {a.shape}) cannot be "
                                                "a constant in a kernel", node, hint="pass it as an argument")
            cname = self.m.unique(f"{name}_const")
            shape = tuple(int(d) for d in a.shape) or (1,)
            # An empty array keeps its shape (size 0, loops over it run no iteration) over a
            # one-element storage: C has no arrays of zero elements.
            decl = ir.ArrayDecl(cname, "constant", t, shape if a.size else (1,),
                                np.ascontiguousarray(a).reshape(-1).tolist() or [0], span=self.span(node))
            if not isinstance(obj, np.ndarray):
                # a device array: Numba reads it by reference, so the kernel compares these
                # contents with the array's at each launch and recompiles when they changed
                # (numba_compat/host.py, CUDAKernel._captures_changed)
                decl.captured = obj
            self.m.globals.append(decl)
            # a 0-d array keeps ndim 0 and shape () (z[()], z.ndim, z.size, reductions) over one element
            got = self.m.global_arrays[id(obj)] = (obj, BufInfo(cname, t, "constant", a.ndim,
                                                                shape if a.ndim else (), decl=decl))
        return got[1]

    # -- building views -------------------------------------------------------------------
    def _dims(self, info: BufInfo, node) -> list:
        return [self.shape_of(info, d, node) for d in range(info.ndim)]

    def _as_view(self, info: BufInfo, span) -> View:
        const = info.kernel_param is not None and not info.kernel_param.is_output
        off = info.offset if info.offset is not None else ir.Const(0, T.int32, span=span)
        return View(info.name, info.space, info.vec or info.elem, off, (), const)

    def slice_view(self, info: BufInfo, parts, node) -> BufInfo:
        """``x[i:]`` / ``x[i:j]`` (first dimension; further dimensions as ``:``); the general
        case (steps, several sliced dimensions, an index mixed with slices ``a[1:, 2]``)
        is :meth:`strided_view`."""
        sp = self.span(node)
        s = parts[0]
        def neg(b):
            return b is not None and not (isinstance(b, ast.Constant) and isinstance(b.value, int) and b.value >= 0) \
                and isinstance(b, (ast.UnaryOp, ast.Constant))
        # Numba's slices follow Python's clipping everywhere; the DSL's take the bounds as given
        # (unless negative), which costs nothing per view
        if not isinstance(s, ast.Slice) or s.step is not None or info.strides is not None or \
                self.sem.rules.name == "numba" or neg(s.lower) or neg(s.upper) or \
                any(not (isinstance(p, ast.Slice) and p.lower is None and p.upper is None and p.step is None)
                    for p in parts[1:]):
            return self.strided_view(info, parts, node)
        dims = self._dims(info, node)
        lo = self.sem.index(self.expr(s.lower), sp) if s.lower is not None else ir.Const(0, T.int32, span=sp)
        hi = self.sem.index(self.expr(s.upper), sp) if s.upper is not None else dims[0]
        v = self._as_view(info, sp)
        if info.ndim > 1:        # rows of runtime length: move by lo * (elements per row)
            per_row = dims[1]
            for d in dims[2:]:
                per_row = self.sem.binop("*", per_row, d, sp)
            moved = self.sem.view_offset(replace(v, type=v.elem), self.sem.binop("*", lo, per_row, sp), sp)
        else:
            moved = self.sem.view_offset(v, lo, sp)
        n = self.sem.fold(self.sem.binop("-", self.sem.convert(hi, T.int32, sp) if hi.type != T.int32 else hi,
                                         self.sem.convert(lo, T.int32, sp) if lo.type != T.int32 else lo, sp))
        return replace(info, offset=moved.offset, dims=(n,) + tuple(dims[1:]),
                       shape=None if not isinstance(n, ir.Const) or info.shape is None
                       else (int(n.value),) + tuple(info.shape[1:]))

    # -- strided views (steps, several sliced dimensions; Numba's slicing) --------------
    def complex_part(self, info: BufInfo, node: ast.Attribute) -> BufInfo:
        """``z.real`` / ``z.imag`` of a complex array argument: a strided view of its storage
        (real parts with a trailing dimension of 2), as NumPy's ``z.real`` is."""
        if node.attr not in ("real", "imag"):
            raise self.err(KernelTypeError, f"complex arrays support only .real and .imag in kernels "
                                            f"(not .{node.attr})", node)
        parts = [ast.copy_location(ast.Slice(), node) for _ in range(info.ndim - 1)]
        parts.append(ast.copy_location(ast.Constant(0 if node.attr == "real" else 1), node))
        return self.strided_view(info, parts, node)

    def strides_of(self, info: BufInfo, node) -> list:
        """Elements between neighbours along each dimension (row-major unless a view says)."""
        if info.strides is not None:
            return list(info.strides)
        sp = self.span(node)
        dims = self._dims(info, node)
        out = [ir.Const(1, T.int32, span=sp)]
        for d in reversed(dims[1:]):
            out.insert(0, self.sem.binop("*", out[0], d, sp))
        return out

    def strided_index(self, info: BufInfo, idx: list, node) -> ir.Expr:
        """The element index (from the view's offset) of ``info[idx...]`` of a strided view."""
        sem, sp = self.sem, self.span(node)
        lin = None
        for i, st in zip(idx, info.strides):
            term = i if isinstance(st, ir.Const) and st.value == 1 else sem.binop("*", i, st, sp)
            lin = term if lin is None else sem.binop("+", lin, term, sp)
        return lin

    def strided_view(self, info: BufInfo, parts, node) -> BufInfo:
        """``a[i:j:k]``, ``a[1:, 2]``, ``a[:, j]``: Python's slicing (negative bounds count
        from the end, bounds clip to the extent, steps are non-zero constants)."""
        if info.vec is not None:
            raise self.err(KernelTypeError, "slicing a vector view this way is not supported", node)
        if len(parts) > info.ndim:
            raise self.err(KernelTypeError, f"{info.name} has {info.ndim} dimension(s) but {len(parts)} indices "
                                            "were given", node)
        sem, sp = self.sem, self.span(node)
        dims, strides = self._dims(info, node), self.strides_of(info, node)
        off = None
        new_dims, new_strides = [], []
        for d, p in enumerate(parts):
            if isinstance(p, ast.Slice):
                start, length, step = self._slice_bounds(p, dims[d], node)
                new_dims.append(length)
                new_strides.append(strides[d] if step == 1 else
                                   sem.binop("*", strides[d], ir.Const(step, T.int64, span=sp), sp))
                first = start
            else:
                first = self.expr(p)
                if isinstance(first, ir.Const) and isinstance(first.value, int) and first.value < 0:
                    first = sem.binop("+", dims[d], first, sp)
            if not (isinstance(first, ir.Const) and first.value == 0):
                term = sem.binop("*", sem.convert(sem.index(first, sp), T.int64, sp), strides[d], sp)
                off = term if off is None else sem.binop("+", off, term, sp)
        new_dims += dims[len(parts):]
        new_strides += strides[len(parts):]
        if not new_dims:
            raise self.err(KernelTypeError, "this indexes one element; write it without a slice", node)
        v = self._as_view(info, sp)
        moved = sem.view_offset(replace(v, type=v.elem), off, sp) if off is not None else v
        contiguous = all(isinstance(x, ir.Const) for x in new_strides) and \
            [int(x.value) for x in new_strides] == _row_major([d.value if isinstance(d, ir.Const) else None
                                                              for d in new_dims])
        return replace(info, offset=None if _zero(moved.offset) else moved.offset, ndim=len(new_dims),
                       shape=None, dims=tuple(new_dims), strides=None if contiguous else tuple(new_strides))

    def _slice_bounds(self, p: ast.Slice, n: ir.Expr, node):
        """(start, length, step) of slice ``p`` over ``n`` elements, as ``slice.indices`` gives."""
        sem, sp = self.sem, self.span(node)
        step = 1
        if p.step is not None:
            step = self.static_value(p.step)
            if not isinstance(step, int) or isinstance(step, bool) or step == 0:
                raise self.err(KernelTypeError, "a slice step must be a non-zero constant integer", p)
        n = sem.convert(n, T.int64, sp)
        zero = ir.Const(0, T.int64, span=sp)
        if step < 0:
            return self._reverse_bounds(p, n, step, node)

        def bound(x, default):
            if x is None:
                return default
            v = sem.convert(self.expr(x), T.int64, sp)
            if isinstance(v, ir.Const) and isinstance(n, ir.Const):
                w = v.value + n.value if v.value < 0 else v.value
                return ir.Const(min(max(w, 0), n.value), T.int64, span=sp)
            v = sem.once(v, sp)
            if not (isinstance(v, ir.Const) and v.value >= 0):
                v = sem.once(sem.select(sem.binop("<", v, zero, sp), sem.binop("+", n, v, sp), v, sp), sp)
            v = sem.select(sem.binop("<", v, zero, sp), zero, v, sp)
            return sem.select(sem.binop(">", v, n, sp), n, v, sp)
        start = sem.once(bound(p.lower, zero), sp)
        stop = bound(p.upper, n)
        diff = sem.binop("-", stop, start, sp)
        if step != 1:
            diff = sem.binop("//", sem.binop("+", diff, ir.Const(step - 1, T.int64, span=sp), sp),
                             ir.Const(step, T.int64, span=sp), sp)
        length = sem.fold(sem.select(sem.binop(">", diff, zero, sp), diff, zero, sp))
        return start, length, step

    def _reverse_bounds(self, p: ast.Slice, n, step: int, node):
        """(start, length, step) of a slice with a negative step, as ``slice.indices``
        gives them: bounds clip to [-1, n - 1], the defaults are n - 1 and "before 0"."""
        sem, sp = self.sem, self.span(node)
        minus1 = ir.Const(-1, T.int64, span=sp)
        last = sem.binop("-", n, ir.Const(1, T.int64, span=sp), sp)

        def bound(x, default):
            if x is None:
                return default
            v = sem.once(sem.convert(self.expr(x), T.int64, sp), sp)
            v = sem.once(sem.select(sem.binop("<", v, ir.Const(0, T.int64, span=sp), sp), sem.binop("+", n, v, sp),
                                    v, sp), sp)
            v = sem.select(sem.binop("<", v, minus1, sp), minus1, v, sp)
            return sem.select(sem.binop(">", v, last, sp), last, v, sp)
        start = sem.once(bound(p.lower, last), sp)
        stop = bound(p.upper, minus1)
        diff = sem.binop("//", sem.binop("+", sem.binop("-", start, stop, sp), ir.Const(-step - 1, T.int64, span=sp),
                                         sp), ir.Const(-step, T.int64, span=sp), sp)
        zero = ir.Const(0, T.int64, span=sp)
        length = sem.fold(sem.select(sem.binop(">", diff, zero, sp), diff, zero, sp))
        return start, length, step

    def reshape_view(self, info: BufInfo, node: ast.Call) -> BufInfo:
        """``a.reshape(shape)`` of a contiguous array: the same elements, other extents
        (one extent may be -1)."""
        sp = self.span(node)
        if info.strides is not None or info.vec is not None:
            raise self.err(KernelTypeError, "reshape needs a contiguous array (not a strided or vector view)", node)
        args = [self.value_or_tuple(a) for a in node.args]
        shape = args[0] if len(args) == 1 else None
        items = list(shape.items) if hasattr(shape, "items") else ([shape] if shape is not None else args)
        dims = [self.sem.index(x, sp) for x in items]
        total = self.size_of(info, node)
        if all(isinstance(d, ir.Const) for d in dims) and isinstance(total, ir.Const):
            vals = [int(d.value) for d in dims]
            if vals.count(-1) == 1:
                known = 1
                for v in vals:
                    known *= v if v != -1 else 1
                vals[vals.index(-1)] = total.value // max(known, 1)
            prod = 1
            for v in vals:
                prod *= v
            if prod != total.value:
                raise self.err(KernelTypeError, f"cannot reshape an array of {total.value} elements into "
                                                f"{tuple(vals)}", node)
            return replace(info, ndim=len(vals), shape=tuple(vals), dims=None, strides=None)
        return replace(info, ndim=len(dims), shape=None, dims=self._resolve_minus_one(dims, total, node),
                       strides=None)

    def _resolve_minus_one(self, dims, total, node) -> tuple:
        """Run-time extents with NumPy's -1 ("the rest") resolved: a -1 extent is the
        array's size over the product of the others (the others' -1 counting as 1)."""
        sem, sp = self.sem, self.span(node)
        if all(isinstance(d, ir.Const) and d.value != -1 for d in dims):
            return tuple(dims)
        dims = [d if isinstance(d, ir.Const) else sem.once(d, sp) for d in dims]
        out = []
        for i, d in enumerate(dims):
            if isinstance(d, ir.Const) and d.value != -1:
                out.append(d)
                continue
            t = d.type
            one, minus = ir.Const(1, t, span=sp), ir.Const(-1, t, span=sp)
            others = one
            for j, e in enumerate(dims):
                if j != i:
                    others = sem.binop("*", others, sem.select(sem.binop("==", e, minus, sp), one, e, sp), sp)
            others = sem.once(others, sp)
            rest = self.binop("//", sem.convert(total, t, sp),
                              sem.select(sem.binop(">", others, ir.Const(0, t, span=sp), sp), others, one, sp), node)
            out.append(sem.once(sem.select(sem.binop("==", d, minus, sp), sem.convert(rest, t, sp), d, sp), sp))
        return tuple(out)

    def row_at(self, info: BufInfo, idx: list, node) -> BufInfo:
        """The row ``info[idx...]`` (``idx`` IR values) of a multi-dimensional array."""
        if info.strides is not None:
            sem, sp = self.sem, self.span(node)
            off = self.strided_index(replace(info, strides=info.strides[:len(idx)]),
                                     [sem.convert(sem.index(i, sp), T.int64, sp) for i in idx], node)
            v = self._as_view(info, sp)
            moved = sem.view_offset(replace(v, type=v.elem), off, sp)
            return replace(info, offset=moved.offset, ndim=info.ndim - len(idx), shape=None,
                           dims=tuple(self._dims(info, node)[len(idx):]), strides=info.strides[len(idx):])
        return self._row(info, idx, node)

    def row_view(self, info: BufInfo, parts, node) -> BufInfo:
        """``x[r]`` (or ``x[r, s]`` of a 3-D array ...): the remaining dimensions' view."""
        return self.row_at(info, [self.expr(p) for p in parts], node)

    def _row(self, info: BufInfo, idx_values, node) -> BufInfo:
        sp = self.span(node)
        if info.vec is not None:
            raise self.err(KernelTypeError, "rows of a vector view are not supported", node)
        dims = self._dims(info, node)
        k = len(idx_values)
        idx = [self.sem.index(e, sp) for e in idx_values]
        inner = dims[k:]
        # element offset of the row: (linear index of idx over the outer dimensions) times
        # the elements of one row
        lin = idx[0] if k == 1 else self.sem.linear_index(idx, [None] + dims[1:k], sp)
        for d in inner:
            lin = self.sem.binop("*", lin, d, sp)
        v = self._as_view(info, sp)
        moved = self.sem.view_offset(v, lin, sp)
        shape = tuple(info.shape[k:]) if info.shape is not None else None
        return replace(info, offset=moved.offset, ndim=info.ndim - k, shape=shape,
                       dims=None if shape is not None else tuple(inner))

    def view_as(self, info: BufInfo, type_node, node) -> BufInfo:
        """``x.view(T)``."""
        sp = self.span(node)
        t = resolve_elem_type(self.static_value(type_node))
        if t is None or isinstance(t, T.MatrixType):
            raise self.err(KernelTypeError, f"{ast.unparse(type_node)} is not a type a view can have", type_node,
                           hint="x.view(float4), x.view(half2), x.view(uint32)")
        if info.vec is not None:
            raise self.err(KernelTypeError, "a view of a vector view is not supported", node,
                           hint="take the view of the array itself")
        size = self.size_of(info, node)
        v = self._as_view(info, sp)
        if T.elem_of(t) != info.elem:
            self.sem.declare_alias = self.declare_alias
            v = self.sem.view_cast(v, T.elem_of(t), span=sp)
            ratio = (info.elem.itemsize, T.elem_of(t).itemsize)
            size = self._rescale(size, ratio, sp)
            info = replace(info, name=v.buf, elem=T.elem_of(t), offset=None if _zero(v.offset) else v.offset,
                           kernel_param=info.kernel_param)
        width = t.n if isinstance(t, T.VectorType) else 1
        step = 4 if width == 3 else width
        n = size if step == 1 else self.sem.fold(self.sem.binop("//", size, ir.Const(step, T.int32, span=sp), sp))
        shape = (int(n.value),) if isinstance(n, ir.Const) else None
        return replace(info, vec=t if isinstance(t, T.VectorType) else None, ndim=1, shape=shape,
                       dims=None if shape is not None else (n,))

    def _rescale(self, size, ratio, sp):
        s_old, s_new = ratio
        if s_old == s_new:
            return size
        if s_old > s_new:
            return self.sem.fold(self.sem.binop("*", size, ir.Const(s_old // s_new, T.int32, span=sp), sp))
        return self.sem.fold(self.sem.binop("//", size, ir.Const(s_new // s_old, T.int32, span=sp), sp))

    def declare_alias(self, v: View, elem, span):
        """The semantic layer's hook: a name for ``v.buf``'s storage read as ``elem`` (an
        ``ir.ViewDecl``, declared once per body)."""
        aliases = self.__dict__.setdefault("_aliases", {})
        root, space, root_elem = aliases.get(v.buf, (v.buf, v.space, v.elem))
        if elem == root_elem:
            return root
        if space == "thread":
            raise KernelTypeError(f"a view of a thread-local {root_elem.name} array as {elem.name} (reinterpreting "
                                  "its bytes) is not supported", span, hint="use as_type(...) on the values")
        name = self.fresh(f"{root}_as_{elem.msl}", ("alias", root, elem.name))
        aliases[name] = (root, space, root_elem)
        if not any(isinstance(h, ir.ViewDecl) and h.name == name for h in self.hoisted):
            self.hoisted.append(ir.ViewDecl(name, root, elem, space, False, span=span))   # once per pass
        return name

    # -- elements through a view ---------------------------------------------------------
    def element_load(self, info: BufInfo, idx: ir.Expr, span) -> ir.Expr:
        """``info[idx]`` (``idx`` a linear index into the view) as a value."""
        if info.dt is not None:         # a datetime array: its int64 as a DatetimeValue
            return DatetimeValue(self.element_load(replace(info, dt=None), idx, span), *info.dt, span=span)
        if info.cplx:
            return self.complex_load(info, idx, span)
        if not info.is_view:
            return ir.Load(info.name, idx, info.elem, span=span)
        return self.sem.view_load(self._as_view(info, span), idx, span)

    def element_store(self, info: BufInfo, idx: ir.Expr, value: ir.Expr, span) -> list:
        """Statements storing ``value`` at ``info[idx]``."""
        if info.cplx:
            return self.complex_store(info, idx, value, span)
        if info.space == "constant" and info.decl is not None:
            raise KernelTypeError(f"{info.name.removesuffix('_const')!r} is an array of the Python scope, a "
                                  "constant in the kernel: it cannot be written", span,
                                  hint="pass the array as an argument to write it")
        if info.dt is not None:         # only a value of its kind; the int64 is stored
            value = self.sem.convert(value, DatetimeType(*info.dt), span).value
            info = replace(info, dt=None)
        if not info.is_view:
            return [ir.Store(info.name, idx, self.conv(value, info.elem), span=span)]
        return self.sem.view_store(self._as_view(info, span), idx, value, span)

    def element_type(self, info: BufInfo):
        """The type of one element as indexing gives it (a vector for a vector view)."""
        return info.vec or info.elem

    def absolute_index(self, info: BufInfo, idx: ir.Expr, span) -> ir.Expr:
        """The buffer's element index of ``info[idx]`` (a scalar view)."""
        if info.vec is not None:
            raise self.err(KernelTypeError, "atomics and simdgroup matrices need a scalar array, not a vector view",
                           span)
        if info.offset is None:
            return idx
        return self.sem.view_address(self._as_view(info, span), idx, span)[1]

    def store_components(self, target: ast.Attribute, value: ir.Expr, sp) -> list:
        """``v.x = a``, ``v.zw = b``, ``t[i].y = c``: stores to components of a vector
        variable or of a vector element of an array (only those components are written)."""
        comps = target.attr
        base = target.value
        if isinstance(base, ast.Subscript):
            info = self.array_of(base.value)
            if info is not None and info.vec is not None:
                idx = self.sem.once(self.index(info, base.slice, base), sp)
                cur = self.element_load(info, idx, sp)
                sw = self.sem.component(cur, comps, sp)          # checks the names
                value = self.sem.once(self.conv(value, sw.type), sp)
                step = 4 if info.vec.n == 3 else info.vec.n
                scalar = replace(self._as_view(info, sp), type=info.elem)
                out = []
                for k, c in enumerate(sw.components):
                    at = self.sem.binop("+", self.sem.binop("*", idx, ir.Const(step, T.int32, span=sp), sp),
                                        ir.Const("xyzw".index(c), T.int32, span=sp), sp)
                    buf, a = self.sem.view_address(scalar, at, sp)
                    v = value if len(sw.components) == 1 else self.sem.component(value, "xyzw"[k], sp)
                    out.append(ir.Store(buf, a, v, span=sp))
                return self._pending() + out
        if not isinstance(base, ast.Name):
            raise KernelSyntaxError("cannot assign to this attribute", sp,
                                    hint="components can be set on vector variables (v.x = ...) and on "
                                         "elements of vector arrays (t[i].x = ...)")
        cur = self.expr(base)
        if not isinstance(cur.type, T.VectorType):
            raise self.err(KernelTypeError, f"cannot set .{comps} of a {getattr(cur.type, 'name', cur.type)} value",
                           target)
        sw = self.sem.component(cur, comps, sp)
        value = self.sem.once(self.conv(value, sw.type), sp)
        parts = [self.sem.component(cur, c, sp) for c in "xyzw"[:cur.type.n]]
        for k, c in enumerate(sw.components):
            parts["xyzw".index(c)] = value if len(sw.components) == 1 else self.sem.component(value, "xyzw"[k], sp)
        new = self.sem.vector(cur.type, parts, sp)
        pre = self._pending()
        return pre + self.store_to(base, new, sp)

    # -- names bound to views --------------------------------------------------------------
    def bind_array(self, target: ast.Name, info: BufInfo, node) -> list:
        """``name = <array or view>``: the name denotes the array; a run-time offset is
        stored in a variable of its own, so the view keeps where it pointed when bound."""
        sp = self.span(node)
        if target.id in self.params:
            raise self.err(KernelTypeError, f"cannot assign to {target.id!r}: it is a parameter", target,
                           hint="use another name for the view")
        prev = self.statics.get(target.id)
        shadow = any(target.id in sc for sc in self.scopes)   # a loop variable: t = B names B in this block
        out = []
        if info.offset is not None and not _stable(info.offset):
            off = self.local_var(target.id + "_off", info.offset.type, target)
            off = self.local_var(target.id + "_off", T.int64, target) if off.type != info.offset.type else off
            out.append(ir.Assign(off, self.conv(info.offset, off.type), span=sp))
            info = replace(info, offset=ir.Var(off.name, off.type, span=sp))
        if info.dims is not None:
            dims = []
            for k, d in enumerate(info.dims):
                if _stable(d):
                    dims.append(d)
                    continue
                dv = self.local_var(f"{target.id}_n{k}", d.type, target)
                out.append(ir.Assign(dv, self.conv(d, dv.type), span=sp))
                dims.append(ir.Var(dv.name, dv.type, span=sp))
            info = replace(info, dims=tuple(dims))
        if prev is not None and prev.kind == "buf" and (prev.value.name, prev.value.vec) != (info.name, info.vec):
            raise self.err(KernelTypeError, f"{target.id!r} already names a view of {prev.value.name!r}; a name "
                                            "can view one array only", node, hint="use another name")
        if shadow:
            self.scopes[-1][target.id] = Binding("buf", info)
        else:
            self.statics[target.id] = Binding("buf", info)
        return self._pending() + out

    def array_value_for(self, target: ast.Name, value_node) -> BufInfo | None:
        """The array ``value_node`` denotes when ``target = value_node`` binds an array (a
        name, a view, or a row ``x[r]`` when ``target`` is used as an array)."""
        if isinstance(value_node, ast.Subscript) and not any(
                isinstance(p, ast.Slice) for p in (value_node.slice.elts if isinstance(value_node.slice, ast.Tuple)
                                                   else [value_node.slice])):
            # a row: where the name is used as an array (always in Numba, where a[r] of a 2-D array is one)
            if not _uses_as_array(self.p.fdef, target.id) and self.sem.rules.name != "numba":
                return None
        if not isinstance(value_node, (ast.Name, ast.Subscript, ast.Call, ast.Attribute)):
            return None
        if isinstance(value_node, ast.Call) and not (isinstance(value_node.func, ast.Attribute)
                                                     and value_node.func.attr in ("view", "reshape")):
            return None
        return self.array_of(value_node)


def _host_array(obj):
    """The NumPy array a Python-scope object is (a NumPy array or a metalbench device
    array), or None."""
    import numpy as np
    if isinstance(obj, np.ndarray):
        return obj
    if type(obj).__name__ == "DeviceNDArray" and hasattr(obj, "copy_to_host"):
        return np.asarray(obj.copy_to_host())
    if hasattr(type(obj), "__cuda_array_interface__") or "__cuda_array_interface__" in getattr(obj, "__dict__", {}):
        from ...numba_compat.devicearray import from_interface     # a wrapper of a metalbench device array
        d = from_interface(obj)
        return np.asarray(d.copy_to_host()) if d is not None else None
    return None


def _stable(e) -> bool:
    """Whether ``e`` means the same wherever it is read (no variables: constants, shapes,
    thread attributes), so a view can keep the expression instead of a copy."""
    return not any(isinstance(n, (ir.Var, ir.Load, ir.Call, ir.FuncCall)) for n in ir.walk([ir.ExprStmt(e)]))


def _zero(e) -> bool:
    return isinstance(e, ir.Const) and e.value == 0


def _row_major(dims) -> list:
    """The element strides of a row-major array of extents ``dims`` (None: unknown)."""
    out = [1]
    for d in reversed(dims[1:]):
        out.insert(0, None if d is None or out[0] is None else out[0] * d)
    return out


__all__ = ["ViewsMixin", "resolve_elem_type"]
