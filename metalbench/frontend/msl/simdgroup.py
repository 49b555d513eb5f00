"""SIMD-group matrices in MSL: ``simdgroup_matrix<T, 8, 8>`` (and the ``simdgroup_float8x8``
typedefs), arrays of them, ``make_filled_simdgroup_matrix``, the diagonal constructor,
``simdgroup_load``/``simdgroup_store``, ``simdgroup_multiply(_accumulate)`` and
``m.thread_elements()`` (read, and written element by element), onto the IR's matrix
nodes (see ``passes/simdgroup_matrix.py`` for their semantics)::

    >>> from metalbench.frontend.msl import translate_kernel
    >>> from metalbench import ir, types as T
    >>> k = translate_kernel("k", "simdgroup_float8x8 a;\\n"
    ...     "simdgroup_load(a, x, 8);\\n"
    ...     "simdgroup_multiply(a, a, a);\\n"
    ...     "simdgroup_store(a, out, 8);",
    ...     inputs=[("x", T.float32, 1)], outputs=[("out", T.float32, 1)])
    >>> print(ir.dump(k.body))
    simdgroup_float8x8 a
    a = simdgroup_load(x + 0, 8)
    a = (a @ a)
    simdgroup_store(a, out + 0, 8)
"""
from __future__ import annotations

from ... import ir
from ... import types as T
from ...semantics.folding import const_value
from .symbols import ElemsRef, _type_of_descriptor

MATRIX_CALLS = frozenset({"simdgroup_load", "simdgroup_store", "simdgroup_multiply",
                          "simdgroup_multiply_accumulate", "make_filled_simdgroup_matrix"})
MATRIX_TEMPLATES = ("simdgroup_matrix", "metal::simdgroup_matrix")


def _is_mat(t) -> bool:
    return isinstance(t, T.MatrixType)


_ELEMENT_FIELDS = {"x": 0, "y": 1, "r": 0, "g": 1}     # thread_elements() is a vec<T, 2>


class SimdgroupMatrixMixin:
    """SIMD-group matrices: a part of :class:`~metalbench.frontend.msl.Translator`."""

    # -- types
    def matrix_type(self, node, targs) -> T.MatrixType:
        """``simdgroup_matrix<T, 8, 8>`` (``targs``: the three template argument nodes)."""
        if len(targs) != 3:
            self.type_err(node, "simdgroup_matrix takes three template arguments: <T, 8, 8>")
        el, _ = self.resolve_type(_type_of_descriptor(targs[0]))
        dims = [v.value if k == "v" else None for k, v in self.template_args(targs[1:])]
        if el not in (T.float32, T.float16, T.bfloat16):
            self.type_err(targs[0], f"simdgroup matrices hold float, half or bfloat, not {getattr(el, 'msl', el)}")
        if dims != [8, 8]:
            self.type_err(node, "only 8x8 simdgroup matrices exist (simdgroup_matrix<T, 8, 8>)")
        return T.MatrixType(el)

    def matrix_construct(self, t, args, node):
        """``simdgroup_float8x8(v)``: ``v`` on the diagonal, 0 elsewhere (Metal's constructor)."""
        sp = self.sp(node)
        if len(args) != 1:
            self.type_err(node, f"{t.name}(value) takes one value (it puts it on the diagonal)")
        if _is_mat(args[0].type):
            if args[0].type != t:
                self.type_err(node, f"cannot convert {args[0].type.name} to {t.name}")
            return args[0]
        return ir.MatrixFill(self.sem.convert(args[0], t.elem, sp), t, diagonal=True, span=sp)

    # -- thread_elements()
    def elements_call(self, node) -> bool:
        """Whether ``node`` is ``m.thread_elements()`` (also under a reference cast to its own
        type, ``reinterpret_cast<thread float2&>(m.thread_elements())``)."""
        if node.type == "parenthesized_expression" and node.named_children:
            return self.elements_call(node.named_children[-1])
        if node.type != "call_expression":
            return False
        inner = self.ref_cast_argument(node)
        if inner is not None:
            return self.elements_call(inner)
        fn = node.child_by_field_name("function")
        return fn.type == "field_expression" and self.text(fn.child_by_field_name("field")) == "thread_elements"

    def elements_of(self, node):
        """(the matrix node, its thread elements) of ``m.thread_elements()``."""
        node = self.elements_node(node)
        fn = node.child_by_field_name("function")
        if node.child_by_field_name("arguments").named_children:
            self.type_err(node, "thread_elements() takes no arguments")
        mnode = fn.child_by_field_name("argument")
        m = self.expr(mnode)
        if not _is_mat(m.type):
            self.type_err(mnode, f"'{self.text(mnode)}' is not a simdgroup matrix")
        return mnode, ir.MatrixElements(m, span=self.sp(node))

    def is_elements(self, node) -> bool:
        """``m.thread_elements()``, or a reference bound to one (:class:`ElemsRef`)."""
        if node.type == "identifier":
            return isinstance(self.lookup(self.text(node)), ElemsRef)
        return self.elements_call(node)

    def elements_target(self, node):
        """(how to write the matrix back, its thread elements) of ``m.thread_elements()`` or
        of a reference to them: ``("node", matrix node)`` or ``("lv", lvalue)``."""
        if node.type == "identifier":
            sp = self.sp(node)
            lv = self.lookup(self.text(node)).lv
            m = self.lvalue_load(lv, sp)
            return ("lv", lv), ir.MatrixElements(m, span=sp)
        mnode, cur = self.elements_of(node)
        return ("node", mnode), cur

    def elements_node(self, node):
        """The ``m.thread_elements()`` call of ``node`` (under parentheses and a reference cast
        to the elements' own type, which names them as they are: a different type is refused)."""
        while True:
            while node.type == "parenthesized_expression":
                node = node.named_children[-1]
            inner = self.ref_cast_argument(node)
            if inner is None:
                return node
            t = self.resolve_type(_type_of_descriptor(self.cast_parts(node)[0]))[0]
            elems = self.elements_of(inner)[1].type
            if t != elems:
                self.unsupported(node, f"reading the thread elements ({elems.msl}) as a {getattr(t, 'msl', t)} "
                                       "(a reference cast)")
            node = inner

    def ref_cast_argument(self, node):
        """``x`` of ``reinterpret_cast<thread T&>(x)`` (or ``static_cast``), else None."""
        cast = self.cast_parts(node) if node.type == "call_expression" else None
        return cast[1] if cast is not None and self.reference_cast(cast[0]) else None

    def elements_ref_decl(self, name, init, sp):
        """``thread auto& e = m.thread_elements();``: ``e`` names the matrix's location (an
        array element's index is evaluated once, here, as C++ binds a reference)."""
        init = self.elements_node(init)
        if init.child_by_field_name("arguments").named_children:
            self.type_err(init, "thread_elements() takes no arguments")
        mnode = init.child_by_field_name("function").child_by_field_name("argument")
        lv = self.lvalue(mnode)
        if lv is None or lv[0] not in ("var", "loc"):
            self.unsupported(init, "a reference to the thread_elements() of this matrix expression")
        if not _is_mat(self.lvalue_load(lv, sp).type):
            self.type_err(mnode, f"'{self.text(mnode)}' is not a simdgroup matrix")
        out = []
        if lv[0] == "loc" and const_value(lv[2]) is None:
            at = ir.Var(self.fresh(name + "_at"), T.int64, span=sp)
            out.append(ir.Decl(at, self.sem.convert(lv[2], T.int64, sp), span=sp))
            lv = ("loc", lv[1], ir.Var(at.name, at.type, span=sp))
        self.scopes[-1][name] = ElemsRef(lv)
        return out

    def elements_value(self, node):
        """``m.thread_elements()`` as a value (a ``vec<T, 2>``)."""
        return self.elements_of(node)[1]

    def _element_index(self, inode):
        i = self.expr(inode)
        c = const_value(i)
        if c is not None and int(c) not in (0, 1):
            self.type_err(inode, f"thread_elements() has two elements (0 and 1), not {int(c)}")
        return i, c

    def matrix_subscript(self, node):
        """``m.thread_elements()[i]`` read, or None when ``node`` is another subscript."""
        base = node.child_by_field_name("argument")
        if not self.is_elements(base):
            return None
        sp = self.sp(node)
        _, v = self.elements_target(base)
        inds = node.child_by_field_name("indices").named_children
        i, c = self._element_index(inds[0])
        if c is not None:
            return self.sem.component(v, "xy"[int(c)], sp)
        v = self.sem.once(v, sp)
        first = self.sem.binop("==", self.sem.convert(i, T.int32, sp), ir.Const(0, T.int32), sp)
        return self.sem.select(first, self.sem.component(v, "x", sp), self.sem.component(v, "y", sp), sp)

    def matrix_element_assign(self, lhs, op, rhs_node, sp, rhs=None):
        """``m.thread_elements()[i] op= value`` (or ``e.x``/``e.y`` of a reference ``e`` to
        them): statements, or None when ``lhs`` is not that."""
        if lhs.type == "field_expression" and self.is_elements(lhs.child_by_field_name("argument")) and \
                self.text(lhs.child_by_field_name("field")).strip() in _ELEMENT_FIELDS:
            c = _ELEMENT_FIELDS[self.text(lhs.child_by_field_name("field")).strip()]
            i = ir.Const(c, T.int32, span=sp)
        elif lhs.type == "subscript_expression" and self.is_elements(lhs.child_by_field_name("argument")):
            i, c = self._element_index(lhs.child_by_field_name("indices").named_children[0])
        else:
            return None
        target, cur = self.elements_target(lhs.child_by_field_name("argument"))
        el = cur.type.elem
        r = rhs if rhs is not None else (self.expr(rhs_node) if rhs_node is not None
                                         else ir.Const(1, T.int32, span=sp))
        comps = [self.sem.component(cur, "x", sp), self.sem.component(cur, "y", sp)]
        if c is not None:
            old = comps[int(c)]
            new = r if op is None else self.sem.binop(op, old, r, sp)
            comps[int(c)] = self.sem.convert(new, el, sp)
        else:
            r = self.sem.once(r, sp)
            ic = self.new_tmp(T.int32, self.sem.convert(i, T.int32, sp), sp)
            for k in (0, 1):
                new = r if op is None else self.sem.binop(op, comps[k], r, sp)
                hit = self.sem.binop("==", ic, ir.Const(k, T.int32), sp)
                comps[k] = self.sem.select(hit, self.sem.convert(new, el, sp), comps[k], sp)
        value = ir.MatrixFromElements(ir.VecCons(cur.type, comps, span=sp), cur.matrix.type, span=sp)
        if target[0] == "lv":
            return self.assign_lvalue(target[1], None, None, None, sp, lambda _cur, _t: value)
        return self.assign(target[1], None, None, sp, rhs=value)

    # -- calls
    def matrix_arg(self, node, what):
        e = self.expr(node)
        if not _is_mat(e.type):
            self.type_err(node, f"{what} takes simdgroup matrices; '{self.quote(node)}' is "
                          f"{getattr(e.type, 'msl', 'not a value')}")
        return e

    def _pointer(self, node):
        """(buffer, element offset, element type) of a pointer argument."""
        sp = self.sp(node)
        if hasattr(self, "pointer") and hasattr(self, "ptr_rank"):      # pointers as views
            if self.ptr_rank(node) is None:
                self.type_err(node, f"'{self.quote(node)}' is not a pointer into a buffer or array")
            v = self.pointer(node)
            a = self.sem.view_arg(v, sp)
            return a.buf, a.offset, v.type
        a = self.bufarg(node)
        if a is None:
            self.type_err(node, f"'{self.quote(node)}' is not a pointer into a buffer or array")
        return a.buf, a.offset, self.buf_of(a.buf).elem

    def _addressing(self, name, argn, mtype, node):
        """(buffer, index of element (0, 0), stride, transpose) of a load/store call."""
        sp = self.sp(node)
        buf, off, elem = self._pointer(argn[1])
        if elem != mtype.elem:
            self.type_err(argn[1], f"{name} of a {mtype.name} needs a pointer to {mtype.elem.msl} elements, "
                          f"not {getattr(elem, 'msl', elem)}", hint=f"declare the matrix as simdgroup_matrix<"
                          f"{getattr(elem, 'msl', elem)}, 8, 8> or convert the data first")
        i64 = T.int64
        stride = self.sem.convert(self.expr(argn[2]), i64, sp) if len(argn) > 2 else ir.Const(8, i64, span=sp)
        index = self.sem.convert(off, i64, sp) if off is not None else ir.Const(0, i64, span=sp)
        if len(argn) > 3:
            o = self.expr(argn[3])
            if isinstance(o, ir.VecCons) and len(o.args) == 2:       # ulong2(col, row)
                ox, oy = o.args
            elif isinstance(o.type, T.VectorType):
                o = self.sem.once(o, sp)
                ox, oy = self.sem.component(o, "x", sp), self.sem.component(o, "y", sp)
            else:
                ox = oy = o
            ox, oy = self.sem.convert(ox, i64, sp), self.sem.convert(oy, i64, sp)
            at = self.sem.binop("+", self.sem.binop("*", oy, stride, sp), ox, sp)
            index = at if const_value(index) == 0 else self.sem.binop("+", index, at, sp)
        transpose = False
        if len(argn) > 4:
            c = const_value(self.sem.to_bool(self.expr(argn[4])))
            if c is None:
                self.unsupported(argn[4], "a transpose flag that is not a compile-time constant")
            transpose = bool(c)
        if len(argn) > 5:
            self.type_err(node, f"{name} takes at most 5 arguments")
        return buf, index, stride, transpose

    def matrix_call(self, name, argn, targs, node, stmt):
        """One of :data:`MATRIX_CALLS`: a value (``make_filled_simdgroup_matrix``) or, for
        the functions that write their first argument, statements emitted before the
        current one (the call's value is None)."""
        sp = self.sp(node)
        if name == "make_filled_simdgroup_matrix":
            if not targs:
                self.type_err(node, "make_filled_simdgroup_matrix needs its type: "
                              "make_filled_simdgroup_matrix<float, 8, 8>(value)")
            t = self.matrix_type(node, targs)
            if len(argn) != 1:
                self.type_err(node, "make_filled_simdgroup_matrix takes one value")
            return ir.MatrixFill(self.sem.convert(self.expr(argn[0]), t.elem, sp), t, span=sp)
        if not stmt:
            self.type_err(node, f"{name} returns nothing; call it as a statement")
        need = {"simdgroup_load": 2, "simdgroup_store": 2, "simdgroup_multiply": 3,
                "simdgroup_multiply_accumulate": 4}[name]
        if len(argn) < need or (name.startswith("simdgroup_multiply") and len(argn) != need):
            self.type_err(node, f"{name} takes {need} arguments" + (" (or up to 5)" if need == 2 else ""))
        if name == "simdgroup_store":
            m = self.matrix_arg(argn[0], name)
            buf, index, stride, tr = self._addressing(name, argn, m.type, node)
            self.emit_pre(ir.MatrixStore(m, buf, index, stride, tr, span=sp), sp)
            return None
        dest = self.matrix_arg(argn[0], name)
        if name == "simdgroup_load":
            buf, index, stride, tr = self._addressing(name, argn, dest.type, node)
            value = ir.MatrixLoad(buf, index, stride, dest.type, tr, span=sp)
        else:
            a, b = self.matrix_arg(argn[1], name), self.matrix_arg(argn[2], name)
            c = self.matrix_arg(argn[3], name) if need == 4 else None
            value = ir.MatrixMul(a, b, c, dest.type, span=sp)
        for s in self.assign(argn[0], None, None, sp, rhs=value):
            self.emit_pre(s, sp)
        return None
