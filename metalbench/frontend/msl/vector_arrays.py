"""MSL arrays of vectors: ``float4 acc[N][M] = {...};`` (thread and threadgroup) and
``constant half2 LUT[16] = {...};`` (header or body) as scalar arrays with a vector view over
them (a 3-vector takes 4 elements, as Metal lays it out). Arrays of MLX's ``complex64_t``
are laid out the same way, as float pairs (``complex64.py``)."""
from __future__ import annotations

from dataclasses import replace as _r

from ... import ir
from ... import types as T
from ...semantics.folding import coerce_value, const_value, fold
from .symbols import Ptr
from ...semantics.complexval import ComplexType, storage_elem


def _width(t) -> int:
    """Elements one array element takes: a vector's (a 3-vector 4), a complex number's 2."""
    return 2 if isinstance(t, ComplexType) else T.padded(t.n)


class VectorArraysMixin:
    """Arrays of vectors: a part of :class:`~metalbench.frontend.msl.Translator`."""

    def vector_array_decl(self, d, init, t, space, top, sp):
        """``float4 acc[N][M] = {...};``: a scalar array with a vector view over it (a
        3-vector takes 4 elements, as Metal lays it out)."""
        dims, inner = [], d
        while inner.type == "array_declarator":
            size = inner.child_by_field_name("size")
            v = const_value(self.expr(size)) if size is not None else None
            if v is None or int(v) <= 0:
                self.type_err(size or inner, "array sizes must be positive compile-time constants")
            dims.insert(0, int(v))
            inner = inner.child_by_field_name("declarator")
        name = self.text(inner)
        sp_name = space or "thread"
        step = _width(t)
        total = step
        for x in dims:
            total *= x
        if top or sp_name == "constant":
            return self.constant_vector_array(d, name, init, t, dims, total, top, sp)
        if sp_name not in ("thread", "threadgroup"):
            self.unsupported(d, f"a {sp_name} array of vectors")
        irname = self.fresh(name)
        a = ir.ArrayDecl(irname, sp_name, storage_elem(t), (total,), None, span=sp)
        view = self.sem.view_of(irname, storage_elem(t), sp_name, span=sp)
        view = _r(view, type=t, inner=tuple(dims[1:]))
        self.scopes[-1][name] = Ptr(view, None, extent=dims[0])
        if sp_name == "threadgroup":
            if init is not None:
                self.type_err(d, "threadgroup arrays cannot have initialisers (Metal)")
            self.tg_arrays.append(a)
            return []
        out = [a]
        if init is not None:
            if init.type != "initializer_list":
                self.type_err(init, "array initialisers are {...} lists")
            a.init = [coerce_value(0, storage_elem(t))] * total       # the elements not listed are zero
            flat = view
            for _ in dims[1:]:
                flat = _r(flat, inner=flat.inner[1:])
            items = init.named_children
            if len(dims) > 1:
                self.unsupported(init, "an initialiser of a multi-dimensional array of vectors")
            for k, item in enumerate(items):
                val = self.vector_item(item, t)
                out.extend(self.sem.view_store(flat, ir.Const(k, T.int32, span=sp), val, sp))
        return out

    def constant_vector_array(self, d, name, init, t, dims, total, top, sp):
        """``constant half2 LUT[16] = {half2(-1.0h, 0.0h), ...};`` (in the header or the
        body): a constant scalar array holding the components (a 3-vector takes 4 elements,
        as Metal lays it out), read through a vector view."""
        if init is None or init.type != "initializer_list":
            self.type_err(d, "a constant array needs an initialiser {...}")
        step = _width(t)
        values = [coerce_value(0, storage_elem(t))] * total          # the elements not listed are zero
        leaves = []

        def collect(node, depth, at):
            rows = node.named_children
            if depth == len(dims) - 1:
                if len(rows) > dims[depth]:
                    self.type_err(node, f"{len(rows)} initialisers for {dims[depth]} elements")
                leaves.extend((at + k, item) for k, item in enumerate(rows))
                return
            inner = 1
            for x in dims[depth + 1:]:
                inner *= x
            for k, row in enumerate(rows):
                if row.type != "initializer_list":
                    self.unsupported(row, "a multi-dimensional array of vectors initialised without braces per row")
                collect(row, depth + 1, at + k * inner)

        collect(init, 0, 0)
        for k, item in leaves:
            isp = self.sp(item)
            val = self.vector_item(item, t)
            comps = val.items if isinstance(t, ComplexType) else \
                [self.sem.vector_index(val, c, isp) for c in range(t.n)]
            for c, comp in enumerate(comps):
                comp = fold(comp)
                if not isinstance(comp, ir.Const):
                    self.type_err(item, "constant array initialisers must be compile-time constants")
                values[k * step + c] = coerce_value(comp.value, storage_elem(t))
        gname = self.fresh(name) if not top else name
        self.globals.append(ir.ArrayDecl(gname, "constant", storage_elem(t), (total,), values, span=sp))
        self.used_names.add(gname)
        view = _r(self.sem.view_of(gname, storage_elem(t), "constant", const=True, span=sp), type=t,
                  inner=tuple(dims[1:]))
        self.scopes[-1][name] = Ptr(view, None, extent=dims[0])
        return []

    def vector_item(self, item, t):
        """One element of a vector array's initialiser: a braced ``{a, b}`` or an expression
        converted to the vector type ``t``."""
        if item.type == "initializer_list" and isinstance(t, ComplexType):
            return self.complex_construct([self.expr(c) for c in item.named_children], item)
        if item.type == "initializer_list":
            return self.sem.vector(t, [self.expr(c) for c in item.named_children], self.sp(item))
        return self.sem.convert(self.expr(item), t, self.sp(item))
