"""Structs in device and constant memory, seen through pointers (GGML-style quantised
blocks, parameter structs): ``device const block_q4_0* b = (device const block_q4_0*)w;``,
``b[i].d``, ``b->qs[j]``, ``const device block_q4_0& blk = b[i];``, ``S s = b[i];``,
``b + k``, ``b++``. A struct pointer is the buffer it points into plus a byte offset (an
int64 variable); an object it designates is a :class:`~.cxx_objects.StructObj` whose
members are references into reinterpreting views of that buffer at the members' byte
offsets (C's layout: each member aligned to its size, vectors of 3 taking 4 elements), so
every use of an object (members, copies, member functions) works on it unchanged::

    >>> from metalbench.frontend.msl import translate_kernel
    >>> from metalbench import ir, types as T
    >>> k = translate_kernel("k", "device const Blk* b = (device const Blk*)w;\\n"
    ...     "out[0] = float(b[1].d) * b[1].q[2];",
    ...     "struct Blk { half d; uchar q[6]; };",
    ...     inputs=[("w", T.uint8, 1)], outputs=[("out", T.float32, 1)])
    >>> print(ir.dump(k.body).splitlines()[-1])
    out[0] = (float32(w_as_half[(_t3 / 2)]) * float32(w[((_t6 + 2) + 2)]))
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ... import ir
from ... import types as T
from ...errors import MetalbenchError
from ...semantics.folding import const_value
from ...semantics.views import View
from .cxx_decls import ClassInst
from .cxx_objects import FixedView, StructObj
from .symbols import Ref


@dataclass
class StructPtr:
    """A pointer to structs of class ``cls`` in ``view.buf`` (``view``: that buffer at
    offset 0); ``off`` (an int64 variable) is the byte offset it points at."""
    cls: ClassInst
    view: View
    off: ir.Var


@dataclass(eq=False)
class ObjPtr:
    """A pointer to one object in thread memory: ``&p`` of a local ``GEMMParams p`` passed
    to a ``const thread GEMMParams*`` parameter, or held in ``thread S* q = &p;``. ``q->m``,
    ``*q`` and ``q[0]`` are the object itself (so writes through it are the object's); it
    points at one object, so it does not move."""
    obj: StructObj


class StructViewsMixin:
    """Struct pointers into buffers: a part of :class:`~metalbench.frontend.msl.Translator`."""

    # -- layout ---------------------------------------------------------------------------
    def member_layout(self, cls, node) -> list:
        """``[(member, owner, type, dims, byte offset)]`` of ``cls`` (as ``sizeof_class`` lays
        it out)."""
        out, at = [], 0
        for f, owner in self.all_fields(cls):
            t, kinds, dims, _, _ = self.field_info(owner, f)
            if kinds and kinds[0] in ("ptr", "ref"):
                self.unsupported(node, f"a pointer to a {cls.name} in memory, which has the pointer or "
                                       f"reference member '{f.name}'")
            if not isinstance(t, (ClassInst, T.VectorType, T.ScalarType)) and not self.is_metal_matrix(t):
                self.unsupported(node, f"a {cls.name} in memory with a {getattr(t, 'name', t)} member")
            s, a = self.member_size_align(f, owner, t, kinds, f"a {cls.name} in memory")
            n = 1
            for d in dims:
                n *= d
            at = (at + a - 1) // a * a
            out.append((f, owner, t, dims, at))
            at += s * n
        return out

    # -- objects in memory ----------------------------------------------------------------
    def memory_object(self, cls, view: View, off: ir.Expr, node) -> StructObj:
        """The ``cls`` object at byte ``off`` of ``view.buf``: members are references into
        views of the buffer as each member's element type."""
        sp = self.sp(node)
        fields = {}
        for f, owner, t, dims, at in self.member_layout(cls, node):
            pos = self.sem.binop("+", off, ir.Const(at, T.int64, span=sp), sp) if at else off
            if isinstance(t, ClassInst):
                if dims:
                    self.unsupported(node, f"a {cls.name} in memory, whose member '{f.name}' is an array of structs")
                fields[f.name] = self.memory_object(t, view, pos, node)
                continue
            if self.is_metal_matrix(t):     # its columns in place (metal_matrices)
                fields[f.name] = self.matrix_in_memory(view, t, pos, dims, node)
                continue
            el = T.elem_of(t)
            typed = self.sem.view_cast(view, t, packed=self.field_packed(owner, f), span=sp)
            first = self.sem.binop("/", pos, ir.Const(el.itemsize, T.int64, span=sp), sp) \
                if el.itemsize > 1 else pos
            mv = replace(typed, offset=self.sem.convert(first, T.int64, sp))
            if self.field_atomic(owner, f):      # atomic_uint cnt: plain memory updated atomically
                if not mv.atomic:
                    self.use_of_output(mv.buf, "cast", f"the atomic member '{f.name}' of {cls.name}", sp)
                mv = replace(mv, atomic=True)
            if dims:
                count = 1
                for d in dims:
                    count *= d
                inner = tuple(dims[1:])
                fields[f.name] = FixedView(replace(mv, inner=inner), count)
            else:
                fields[f.name] = Ref(mv)
        return StructObj(cls, fields, f"{cls.name} in {view.buf}")

    # -- struct pointers ------------------------------------------------------------------
    def struct_pointer(self, node):
        """``(cls, view, byte offset expression)`` of a pointer-to-struct expression, or None."""
        sp = self.sp(node)
        k = node.type
        if k == "parenthesized_expression" and node.named_children:
            return self.struct_pointer(node.named_children[-1])
        if k == "identifier":
            sym = self.lookup(self.text(node))
            if isinstance(sym, StructPtr):
                return sym.cls, sym.view, ir.Var(sym.off.name, T.int64, span=sp)
            return None
        cast = self.cast_parts(node)
        if cast is not None:            # (P*)x, reinterpret_cast<P*>(x), static_cast<P*>(x)
            tn, val = cast
            decl = tn.child_by_field_name("declarator") if tn.type == "type_descriptor" else None
            if decl is None or decl.type != "abstract_pointer_declarator" or decl.named_children:
                return None
            cls = self.cxx_type(tn.child_by_field_name("type"))
            if not isinstance(cls, ClassInst):
                return None
            val = _void_cast_value(self, val)       # (P*)(device void*)x: x
            inner = self.struct_pointer(val)
            if inner is not None:
                return cls, inner[1], inner[2]
            if self.ptr_rank(val) is None:
                self.type_err(val, f"'{self.quote(val)}' is not a pointer into a buffer or array")
            v = self.pointer(val)
            off = self.sem.binop("*", self.sem.convert(v.offset, T.int64, sp),
                                 ir.Const(v.elem.itemsize, T.int64, span=sp), sp)
            return cls, replace(v, offset=ir.Const(0, T.int32, span=sp), inner=()), off
        if k == "binary_expression" and self.text(node.child_by_field_name("operator")) in ("+", "-"):
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            p = self.struct_pointer(left)
            if p is None:
                return None
            n = self.sem.convert(self.expr(right), T.int64, sp)
            step = self.sem.binop("*", n, ir.Const(self.sizeof_class(p[0]), T.int64, span=sp), sp)
            return p[0], p[1], self.sem.binop(self.text(node.child_by_field_name("operator")), p[2], step, sp)
        if k == "conditional_expression" and self.is_struct_pointer_node(node.child_by_field_name("consequence")):
            # c ? p : q of struct pointers into one buffer: the byte offset chosen (only the side taken runs)
            c = self.sem.to_bool(self.expr(node.child_by_field_name("condition")), sp)
            a = self.struct_pointer(node.child_by_field_name("consequence"))
            b = self.struct_pointer(node.child_by_field_name("alternative"))
            if a is None:
                return None                 # (pointers to local objects)
            if b is None or a[1].buf != b[1].buf or a[0].name != b[0].name:
                self.unsupported(node, "a choice between pointers to structs in different buffers (or of "
                                       "different types); index each under the condition instead")
            return a[0], a[1], self.sem.select(c, self.sem.convert(a[2], T.int64, sp),
                                               self.sem.convert(b[2], T.int64, sp), sp)
        if k == "pointer_expression" and self.text(node).lstrip().startswith("&"):
            arg = node.child_by_field_name("argument")
            if arg.type == "subscript_expression":
                p = self.struct_pointer(arg.child_by_field_name("argument"))
                if p is not None:
                    return p[0], p[1], self.struct_index_off(p, arg, sp)
        return None

    def struct_index_off(self, p, sub, sp):
        i = self.sem.convert(self.expr(sub.child_by_field_name("indices").named_children[0]), T.int64, sp)
        return self.sem.binop("+", p[2], self.sem.binop("*", i, ir.Const(self.sizeof_class(p[0]), T.int64,
                                                                          span=sp), sp), sp)

    def is_struct_pointer_node(self, node) -> bool:
        """Whether ``node`` is a pointer to structs in memory: a struct pointer variable, one
        moved by ``+``/``-``, or a cast to a struct pointer (decided without translating)."""
        while node.type == "parenthesized_expression" and node.named_children:
            node = node.named_children[-1]
        if node.type == "identifier":
            return isinstance(self.lookup(self.text(node)), (StructPtr, ObjPtr))
        if node.type == "binary_expression" and self.text(node.child_by_field_name("operator")) in ("+", "-"):
            return self.is_struct_pointer_node(node.child_by_field_name("left"))
        if node.type == "conditional_expression":
            return self.is_struct_pointer_node(node.child_by_field_name("consequence"))
        cast = self.cast_parts(node)
        if cast is not None:
            tn = cast[0]
            decl = tn.child_by_field_name("declarator") if tn.type == "type_descriptor" else None
            if decl is None or decl.type != "abstract_pointer_declarator" or decl.named_children:
                return False
            try:
                return isinstance(self.cxx_type(tn.child_by_field_name("type")), ClassInst)
            except MetalbenchError:
                return False
        return False

    def struct_object(self, node):
        """The object ``p[i]``, ``*p`` or the target of ``p->`` designates (``node``: ``p[i]``,
        ``*p`` or ``p``), or None when ``p`` is not a struct pointer."""
        sp = self.sp(node)
        if node.type == "subscript_expression":
            base = node.child_by_field_name("argument")
            if base.type == "identifier" and isinstance(self.lookup(self.text(base)), ObjPtr):
                if const_value(self.expr(node.child_by_field_name("indices").named_children[0])) != 0:
                    self.unsupported(node, f"an index other than 0 of '{self.text(base)}', a pointer to "
                                           "one local object")
                return self.lookup(self.text(base)).obj
            p = self.struct_pointer(base)
            if p is None:
                return None
            return self.memory_object(p[0], p[1], self.bound_off(self.struct_index_off(p, node, sp), sp), node)
        if node.type == "pointer_expression" and self.text(node).lstrip().startswith("*"):
            node = node.child_by_field_name("argument")
        local = self.object_address(node) if node.type == "identifier" else self.local_as_struct(node)
        if local is not None:
            return local
        p = self.struct_pointer(node)
        if p is None:
            return None
        return self.memory_object(p[0], p[1], self.bound_off(p[2], sp), node)

    def local_as_struct(self, node):
        """``*(thread S*)&v`` of a local scalar ``v`` (a wrapper struct over a value's bits, as
        FP8 code reads a byte): an object whose one member is ``v`` itself, so reads and
        writes through it are ``v``'s; None when ``node`` is not such a cast."""
        while node.type == "parenthesized_expression" and node.named_children:
            node = node.named_children[-1]
        if node.type != "cast_expression":
            return None
        val = node.child_by_field_name("value")
        while val.type == "parenthesized_expression" and val.named_children:
            val = val.named_children[-1]
        if val.type != "pointer_expression" or not self.text(val).lstrip().startswith("&"):
            return None
        arg = val.child_by_field_name("argument")
        sym = self.lookup(self.text(arg)) if arg.type == "identifier" else None
        if not isinstance(sym, ir.Var):
            return None
        tn = node.child_by_field_name("type")
        cls = self.cxx_type(tn.child_by_field_name("type")) if tn.type == "type_descriptor" else None
        if not isinstance(cls, ClassInst):
            return None
        fields = list(self.all_fields(cls))
        if len(fields) == 1:
            f, owner = fields[0]
            t, kinds, dims, _, _ = self.field_info(owner, f)
            if t == sym.type and not kinds and not dims:
                return StructObj(cls, {f.name: sym}, f"{cls.name} over {sym.name}")
        self.unsupported(node, f"reading the local variable '{self.text(arg)}' as a {cls.name} through a pointer "
                               f"cast (supported: a struct whose one member has the variable's type, "
                               f"{getattr(sym.type, 'msl', sym.type)})")

    def object_address(self, node):
        """The local object ``node`` points at when it is ``&obj`` (``obj`` an object) or a
        pointer to one (:class:`ObjPtr`), else None."""
        while node.type == "parenthesized_expression" and node.named_children:
            node = node.named_children[-1]
        if node.type == "pointer_expression" and self.text(node).lstrip().startswith("&"):
            arg = node.child_by_field_name("argument")
            obj = self.object_value(arg) if self.is_object_node(arg) else None
            return obj if isinstance(obj, StructObj) else None
        if node.type == "identifier":
            sym = self.lookup(self.text(node))
            return sym.obj if isinstance(sym, ObjPtr) else None
        return None

    def bound_off(self, off, sp):
        """``off`` evaluated now (an object, like a C++ reference, is bound where it is named)."""
        if isinstance(off, (ir.Var, ir.Const)):
            return off
        return self.new_tmp(T.int64, self.sem.convert(off, T.int64, sp), sp)

    def struct_pointer_decl(self, name, init, cls, sp, d) -> list:
        """``device const S* p = <struct pointer>;``"""
        if init is None:
            self.unsupported(d, f"a pointer to a {cls.name} without an initialiser")
        obj = self.object_address(init)
        if obj is not None:                 # thread S* q = &s;
            if obj.cls is not cls and obj.cls.name != cls.name:
                self.type_err(init, f"cannot point a {cls.name}* at a {obj.cls.name}")
            self.scopes[-1][name] = ObjPtr(obj)
            return []
        p = self.struct_pointer(init)
        if p is None:
            self.unsupported(init, f"a pointer to a struct ({cls.name}) that does not point into a buffer "
                                   f"('{self.quote(init)}'; cast a buffer pointer: ({cls.name}*)x)")
        if p[0] is not cls and p[0].name != cls.name:
            self.type_err(init, f"cannot point a {cls.name}* at {p[0].name} data")
        off = ir.Var(self.fresh(name + "_off"), T.int64, span=sp)
        self.scopes[-1][name] = StructPtr(cls, p[1], off)
        return [ir.Decl(off, self.sem.convert(p[2], T.int64, sp), span=sp)]

    def struct_pointer_move(self, sym: StructPtr, op, rhs_node, sp) -> list:
        """``p += n``, ``p -= n``, ``p = q``, ``p++``: the byte offset moves."""
        cur = ir.Var(sym.off.name, T.int64, span=sp)
        size = ir.Const(self.sizeof_class(sym.cls), T.int64, span=sp)
        if op is None:
            p = self.struct_pointer(rhs_node)
            if p is None or p[1].buf != sym.view.buf:
                self.unsupported(rhs_node, "pointing a struct pointer into another buffer")
            return [ir.Assign(sym.off, self.sem.convert(p[2], T.int64, sp), span=sp)]
        n = ir.Const(1, T.int64, span=sp) if rhs_node is None else \
            self.sem.convert(self.expr(rhs_node), T.int64, sp)
        return [ir.Assign(sym.off, self.sem.binop(op, cur, self.sem.binop("*", n, size, sp), sp), span=sp)]


def _void_cast_value(tr, node):
    """``v`` of a cast of ``v`` to a void pointer (``(device const void*)x``,
    ``static_cast<const device void*>(x)``), through parentheses; else ``node``."""
    while node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[-1]
    cast = tr.cast_parts(node)
    if cast is None or cast[0].type != "type_descriptor":
        return node
    decl, inner = cast[0].child_by_field_name("declarator"), cast[0].child_by_field_name("type")
    if decl is not None and decl.type == "abstract_pointer_declarator" and not decl.named_children and \
            inner is not None and tr.text(inner).strip() == "void":
        return _void_cast_value(tr, cast[1])
    return node
