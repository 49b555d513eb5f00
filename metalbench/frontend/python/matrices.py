"""SIMD-group matrices in the DSL, with Metal's names and argument order::

    a = simdgroup_float8x8(0)                 # the diagonal constructor: 0 everywhere here
    simdgroup_load(a, x, 16, (col, row))      # a[r, c] = x[(row + r) * 16 + col + c]
    simdgroup_load(b, tile, 8, transpose=True)
    simdgroup_multiply_accumulate(c, a, b, c) # c = a @ b + c
    simdgroup_store(c, out, n, (col, row))

They build the IR's matrix nodes (``ir.MatrixFill``, ``ir.MatrixLoad``, ``ir.MatrixMul``,
``ir.MatrixStore``), which the MSL front end builds too: the simulator computes them
exactly (``passes/simdgroup_matrix.py``), Metal prints ``simdgroup_matrix`` and CUDA a
warp-level implementation of the same bits.

- ``simdgroup_float8x8(v)`` / ``simdgroup_half8x8(v)`` / ``simdgroup_bfloat8x8(v)``: ``v``
  on the diagonal, 0 elsewhere (Metal's constructor); without ``v`` a matrix of zeros
  (Metal leaves it unset). ``make_filled_simdgroup_matrix(v, simdgroup_float8x8)``:
  every element ``v``.
- The array argument of ``simdgroup_load``/``simdgroup_store`` is a device or
  threadgroup array of the matrix's element type, or a view of one (``x[i:]``, ``x[r]``);
  ``elements_per_row`` defaults to 8, the origin ``(col, row)`` to ``(0, 0)``;
  ``transpose`` (``transpose_matrix``) is a compile-time bool.
- The first argument of ``simdgroup_load``/``simdgroup_multiply(_accumulate)`` is the
  matrix written: a name, or an element of a ``local_array(n, simdgroup_float8x8)``.
- Every thread of the SIMD-group must take part (as in Metal).
"""
from __future__ import annotations

import ast

from ... import ir
from ... import types as T
from ...errors import KernelSyntaxError, KernelTypeError
from ...semantics import const_value

MATRIX_CALLS = frozenset({"simdgroup_load", "simdgroup_store", "simdgroup_multiply",
                          "simdgroup_multiply_accumulate", "make_filled_simdgroup_matrix"})

_PARAMS = {"simdgroup_load": ("m", "array", "elements_per_row", "origin", "transpose"),
           "simdgroup_store": ("m", "array", "elements_per_row", "origin", "transpose"),
           "simdgroup_multiply_accumulate": ("d", "a", "b", "c"),
           "simdgroup_multiply": ("d", "a", "b"),
           "make_filled_simdgroup_matrix": ("value", "type")}
_ALIASES = {"matrix_origin": "origin", "transpose_matrix": "transpose", "src": "array", "dst": "array",
            "source": "array", "destination": "array"}


class MatricesMixin:
    """SIMD-group matrices: a part of :class:`~metalbench.frontend.python.FunctionTranslator`."""

    def matrix_construct(self, t: T.MatrixType, node: ast.Call) -> ir.Expr:
        """``simdgroup_float8x8(v)`` (``v`` on the diagonal) or ``simdgroup_float8x8()`` (zeros)."""
        sp = self.span(node)
        if node.keywords or len(node.args) > 1:
            raise self.err(KernelTypeError, f"{t.name}(value) takes at most one value (it goes on the diagonal)",
                           node, hint=f"make_filled_simdgroup_matrix(value, {t.name}) fills every element")
        if not node.args:
            return ir.MatrixFill(ir.Const(0.0, t.elem, span=sp), t, span=sp)
        v = self.expr(node.args[0])
        if isinstance(v.type, T.MatrixType):
            if v.type != t:
                raise self.err(KernelTypeError, f"cannot convert {v.type.name} to {t.name}", node,
                               hint="simdgroup matrices convert only element by element")
            return v
        v = self.sem.convert(v, t.elem, sp)
        zero = isinstance(v, ir.Const) and v.value == 0
        return ir.MatrixFill(v, t, diagonal=not zero, span=sp)      # 0 on the diagonal: all zeros

    def _matrix_args(self, name: str, node: ast.Call) -> dict:
        params = _PARAMS[name]
        if len(node.args) > len(params):
            raise self.err(KernelTypeError, f"{name}() takes at most {len(params)} arguments "
                                            f"({', '.join(params)})", node)
        got = dict(zip(params, node.args))
        for kw in node.keywords:
            key = _ALIASES.get(kw.arg, kw.arg)
            if key not in params or key in got:
                raise self.err(KernelTypeError, f"{name}() got an unexpected or repeated argument {kw.arg!r}", node,
                               hint=f"its arguments are ({', '.join(params)})")
            got[key] = kw.value
        need = {"simdgroup_load": 2, "simdgroup_store": 2, "make_filled_simdgroup_matrix": 2}.get(name, len(params))
        missing = [p for p in params[:need] if p not in got]
        if missing:
            raise self.err(KernelTypeError, f"{name}() is missing {', '.join(missing)}", node,
                           hint=f"{name}({', '.join(params[:need])}, ...)")
        return got

    def matrix_value(self, node, what: str) -> ir.Expr:
        e = self.expr(node)
        if not isinstance(e.type, T.MatrixType):
            raise self.err(KernelTypeError, f"{what} takes simdgroup matrices; {ast.unparse(node)} is "
                                            f"{getattr(e.type, 'name', 'not a value')}", node,
                           hint="make one with simdgroup_float8x8(0) (or _half8x8, _bfloat8x8)")
        return e

    def _matrix_target(self, node, what: str):
        """The type of the matrix ``node`` (a name or an array element) a call writes."""
        if not isinstance(node, (ast.Name, ast.Subscript)):
            raise self.err(KernelSyntaxError, f"{what} writes its first argument: give a matrix variable or an "
                                              "element of a matrix array", node)
        return self.matrix_value(node, what).type

    def matrix_call(self, name: str, node: ast.Call):
        """One of :data:`MATRIX_CALLS`: a value (``make_filled_simdgroup_matrix``) or the
        statements of a call that writes its first argument (returned as a list)."""
        sp = self.span(node)
        a = self._matrix_args(name, node)
        if name == "make_filled_simdgroup_matrix":
            from .views import resolve_elem_type
            t = resolve_elem_type(self.static_value(a["type"]))
            if not isinstance(t, T.MatrixType):
                raise self.err(KernelTypeError, "make_filled_simdgroup_matrix(value, type) takes a matrix type",
                               a["type"], hint="make_filled_simdgroup_matrix(0.0, simdgroup_float8x8)")
            return ir.MatrixFill(self.sem.convert(self.expr(a["value"]), t.elem, sp), t, span=sp)
        if name == "simdgroup_store":
            m = self.matrix_value(a["m"], name)
            buf, index, stride, tr = self._matrix_addressing(name, a, m.type, node, store=True)
            return self._pending() + [ir.MatrixStore(m, buf, index, stride, tr, span=sp)]
        mt = self._matrix_target(a["m"] if name == "simdgroup_load" else a["d"], name)
        if name == "simdgroup_load":
            buf, index, stride, tr = self._matrix_addressing(name, a, mt, node)
            value = ir.MatrixLoad(buf, index, stride, mt, tr, span=sp)
            target = a["m"]
        else:
            x, y = self.matrix_value(a["a"], name), self.matrix_value(a["b"], name)
            c = self.matrix_value(a["c"], name) if "c" in a else None
            value = ir.MatrixMul(x, y, c, mt, span=sp)
            target = a["d"]
        return self._pending() + self.store_to(target, value, sp)

    def _matrix_addressing(self, name, a, mt: T.MatrixType, node, store=False):
        """(buffer, linear index of element (0, 0), stride, transpose) of a load/store."""
        sp = self.span(node)
        info = self.array_of(a["array"])
        if info is None:
            raise self.err(KernelTypeError, f"{name}'s second argument is an array (or a view of one); "
                                            f"{ast.unparse(a['array'])} is not", a["array"])
        if info.vec is not None:
            raise self.err(KernelTypeError, f"{name} reads scalar elements, not a {info.vec.name} view", a["array"])
        if info.elem != mt.elem:
            raise self.err(KernelTypeError, f"{name} of a {mt.name} needs an array of {mt.elem.name}, not "
                                            f"{info.elem.name}", a["array"],
                           hint=f"use a simdgroup matrix of {info.elem.name} (simdgroup_{info.elem.msl}8x8) "
                                "or convert the data first")
        if info.space not in ("device", "threadgroup"):
            raise self.err(KernelTypeError, f"{name} works on device and threadgroup arrays, not on "
                                            f"{info.space} arrays", a["array"])
        if store and info.kernel_param is not None and not info.kernel_param.is_output and self.is_kernel:
            info.kernel_param.written = True
        i64 = T.int64
        stride = (self.sem.convert(self.expr(a["elements_per_row"]), i64, sp) if "elements_per_row" in a
                  else ir.Const(8, i64, span=sp))
        if not (isinstance(stride.type, T.ScalarType) and stride.type.is_int):
            raise self.err(KernelTypeError, "elements_per_row is an integer", a["elements_per_row"])
        index = ir.Const(0, i64, span=sp)
        if info.offset is not None:
            index = self.sem.convert(info.offset, i64, sp)
        if "origin" in a:
            o = a["origin"]
            if isinstance(o, (ast.Tuple, ast.List)):
                if len(o.elts) != 2:
                    raise self.err(KernelTypeError, "the origin is (column, row)", o)
                ox, oy = (self.expr(e) for e in o.elts)
            else:
                v = self.expr(o)
                if not (isinstance(v.type, T.VectorType) and v.type.n == 2):
                    raise self.err(KernelTypeError, "the origin is (column, row): a tuple or a 2-vector", o)
                v = self.sem.once(v, sp)
                ox, oy = self.sem.component(v, "x", sp), self.sem.component(v, "y", sp)
            for e, n in ((ox, "column"), (oy, "row")):
                if not (isinstance(e.type, T.ScalarType) and (e.type.is_int or e.type.is_bool)):
                    raise self.err(KernelTypeError, f"the origin's {n} is an integer, got {e.type.name}", o)
            ox, oy = self.sem.convert(ox, i64, sp), self.sem.convert(oy, i64, sp)
            at = self.sem.binop("+", self.sem.binop("*", oy, stride, sp), ox, sp)
            index = at if const_value(index) == 0 else self.sem.binop("+", index, at, sp)
        transpose = False
        if "transpose" in a:
            c = self.try_static(a["transpose"])
            if not isinstance(c, (bool, int)):
                raise self.err(KernelTypeError, "transpose is a compile-time bool", a["transpose"],
                               hint="transpose=True, or a constexpr")
            transpose = bool(c)
        return info.name, self.sem.fold(index), stride, transpose
