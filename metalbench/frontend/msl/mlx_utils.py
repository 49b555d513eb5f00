"""MLX's ``utils.h`` helpers a kernel body may call (``elem_to_loc`` and its fixed-rank
variants, ``ceildiv``), expanded into IR by the semantic layer, and its ``Limits<T>``
constants."""
from __future__ import annotations

from ... import ir
from ... import types as T
from ...semantics.folding import const_value
from .symbols import ShapeArr, _span_all, _type_of_descriptor


UTILS = ("elem_to_loc", "elem_to_loc_1", "elem_to_loc_2", "elem_to_loc_3", "ceildiv")


class MLXUtilsMixin:
    """MLX's utils.h helpers: a part of :class:`~metalbench.frontend.msl.Translator`."""

    def mlx_limits(self, node):
        """``Limits<T>::max`` / ``min`` / ``finite_max`` / ``finite_min`` from MLX's utils.h
        (which MLX includes in every custom kernel): for floating types max and min are
        +-infinity and the finite ones +-the largest finite value; for integers the
        type's range; ``Limits<bool>`` has max (true) and min (false). None when ``node``
        is not such a name (or the kernel defines its own ``Limits``)."""
        scope, name = node.child_by_field_name("scope"), node.child_by_field_name("name")
        if scope is None or scope.type != "template_type" or name is None or \
                self.text(scope.child_by_field_name("name")).replace(" ", "") not in ("Limits", "::Limits") or \
                self.lookup("Limits") is not None:
            return None
        member = self.text(name).strip()
        targs = scope.child_by_field_name("arguments").named_children
        t, _ = self.resolve_type(_type_of_descriptor(targs[0])) if len(targs) == 1 else (None, False)
        if not isinstance(t, T.ScalarType):
            self.unsupported(node, f"Limits<{self.text(targs[0]) if targs else ''}> (MLX's utils.h has it for "
                                   "scalar types and complex64_t)")
        from .calls import _limit
        sp = self.sp(node)
        if t.is_bool:
            v = {"max": True, "min": False}.get(member)
        elif t.is_float:
            fmax = _limit(t, "max")
            v = {"max": float("inf"), "min": float("-inf"), "finite_max": fmax, "finite_min": -fmax}.get(member)
        else:
            v = {"max": _limit(t, "max"), "min": _limit(t, "min"), "finite_max": _limit(t, "max"),
                 "finite_min": _limit(t, "min")}.get(member)
        if v is None:
            self.type_err(node, f"Limits<{t.msl}> has no member '{member}' (MLX's utils.h: max, min, "
                                "finite_max, finite_min)")
        return self.sem.const(v, t, sp)

    def util_applies(self, name, argn) -> bool:
        """Whether :meth:`util` expands this call: ``ceildiv`` always; the ``elem_to_loc``
        family when its shape and strides arguments are an input's ``x_shape``/``x_strides``
        (other constant pointers go to MLX's own definition, ``mlx_prelude.py``)."""
        if name == "ceildiv" or name == "elem_to_loc_1":
            return True
        arrays = argn[1:3] if name == "elem_to_loc" else argn[1:2]
        return all(a.type == "identifier" and isinstance(self.lookup(self.text(a)), ShapeArr) for a in arrays)

    def util(self, name, argn, node, targs=()):
        """MLX's utils.h helper ``name`` expanded in place; ``elem_to_loc<IdxT>(...)``
        computes in int64 and converts to ``IdxT``."""
        r = self._util(name, argn, node)
        if targs and name.startswith("elem_to_loc"):
            t, _ = self.resolve_type(_type_of_descriptor(targs[0]))
            r = self.sem.convert(r, t)
        return r

    def _util(self, name, argn, node):
        sp = self.sp(node)
        S = self.sem
        if name == "ceildiv":
            if len(argn) != 2:
                self.type_err(node, "ceildiv(a, b) takes 2 arguments")
            a, b = (self.expr(x) for x in argn)
            t = S.common_type(a.type, b.type, sp)
            a, b = S.convert(a, t), S.convert(b, t)
            num = S.binop("-", S.binop("+", a, b, sp), S.const(1, t, sp), sp)
            return S.binop("/", num, b, sp)

        def arr(n, kind):
            sym = self.lookup(self.text(n)) if n.type == "identifier" else None
            if not isinstance(sym, ShapeArr) or sym.kind != kind:
                self.unsupported(n, f"{name} with an argument other than an input's _{kind}")
            return sym
        i64 = T.int64

        def op(o, x, y):
            return S.binop(o, x, y, sp)

        def dim(sym, d):        # x_shape[d] or x_strides[d], as int64
            return S.convert(self.shape_at(sym, ir.Const(d, T.int32), sp), i64)

        if name == "elem_to_loc":
            if len(argn) != 4:
                self.type_err(node, "elem_to_loc(elem, x_shape, x_strides, x_ndim)")
            elem = self.expr(argn[0])
            shp, strd = arr(argn[1], "shape"), arr(argn[2], "strides")
            nd = const_value(self.expr(argn[3]))
            if nd is None:
                self.unsupported(argn[3], "elem_to_loc with a run-time ndim")
            nd = int(nd)
            if isinstance(elem.type, T.VectorType):
                # the uint3 overload: x, y index the last two dims, z the rest
                ex, ey, ez = (S.convert(S.component(elem, c, sp), i64) for c in "xyz")
                loc = op("*", ex, dim(strd, nd - 1))
                if nd >= 2:
                    loc = op("+", loc, op("*", ey, dim(strd, nd - 2)))
                div = None
                for d in range(nd - 3, -1, -1):
                    size = dim(shp, d)
                    q = ez if div is None else op("/", ez, div)
                    loc = op("+", loc, op("*", op("%", q, size), dim(strd, d)))
                    div = size if div is None else op("*", div, size)
                return _span_all(loc, sp)
            e = S.convert(elem, i64)
            loc = None
            div = None
            for d in range(nd - 1, -1, -1):
                size = dim(shp, d)
                q = e if div is None else op("/", e, div)
                term = op("*", op("%", q, size), dim(strd, d))
                loc = term if loc is None else op("+", loc, term)
                div = size if div is None else op("*", div, size)
            return _span_all(loc if loc is not None else ir.Const(0, i64), sp)
        if name == "elem_to_loc_1":
            return op("*", S.convert(self.expr(argn[0]), i64), S.convert(self.expr(argn[1]), i64))
        n = int(name[-1])
        elem = self.expr(argn[0])
        strd = arr(argn[1], "strides")
        loc = None
        for j in range(n):
            term = op("*", S.convert(S.component(elem, "xyz"[j], sp), i64), dim(strd, n - 1 - j))
            loc = term if loc is None else op("+", loc, term)
        return _span_all(loc, sp)
