"""MSL memory: pointers and the locations they name (``a[i]``, ``a[i][j]``, ``*p``,
``p[i]``, ``*(p + i)``, ``x + off``, ``&x[i]``, ``tile[r]``, ``(const device float4*)(x + i)``).

Every pointer value is a :class:`~metalbench.semantics.views.View` (buffer, element
offset, element type), built and used through the semantic layer; this mixin maps the
syntax onto it. :meth:`ptr_rank` decides from the syntax alone (before any IR is built)
whether an expression is a pointer, so nothing is translated twice."""
from __future__ import annotations

from dataclasses import replace

from ... import ir
from ... import types as T
from ...semantics.folding import fold
from ...semantics.views import View
from ...errors import KernelNameError, KernelSyntaxError, KernelTypeError, MetalbenchError
from .metal_matrices import MetalMatrixType
from .symbols import METAL_ONLY, SMALL_INPUT_NOTE, Buf, NullPtr, Ptr, Ref, _SPACES, _TypeName
from .complex64 import CplxVar
from .cxx_decls import PtrType



class BufferChoice(KernelTypeError):
    """``(c ? A : B) + off`` with two different buffers: raised where the pointer is
    translated, caught by the enclosing block, which translates the rest of itself once
    for each buffer under ``if (c)`` (``buffer_choice.py``)."""

    def __init__(self, message, span=None, hint=None, node=None, bufs=("?", "?")):
        self.node, self.bufs = node, bufs
        super().__init__(message, span, hint)


class MemoryMixin:
    """Memory locations and pointers: a part of :class:`~metalbench.frontend.msl.Translator`."""

    def buf_of(self, name) -> Buf:
        for sc in reversed(self.scopes):
            for v in sc.values():
                if isinstance(v, Buf) and v.name == name:
                    return v
        for v in self.global_syms.values():
            if isinstance(v, Buf) and v.name == name:
                return v
        raise KeyError(name)

    def index_expr(self, node):
        """An array index (see :meth:`Semantics.index`)."""
        return self.sem.index(self.expr(node), self.sp(node))

    # -- which expressions are pointers (syntax only) --------------------------------------
    def pointer_cast_type(self, tn):
        """For the type of a cast (a ``type_descriptor``): ``(type, space, const, packed)``
        when it is a pointer type (``const device float4*``), else None."""
        if tn is None or tn.type != "type_descriptor":
            return None
        decl = tn.child_by_field_name("declarator")
        alias = self.pointer_alias(tn)
        if alias is not None:             # (P)x with using P = const device float4*;
            return alias.elem, alias.space, alias.const, False
        if decl is None or decl.type != "abstract_pointer_declarator":
            return None
        if decl.named_children:
            self.unsupported(tn, "a cast to a pointer to a pointer")
        inner = tn.child_by_field_name("type")
        quals = self.quals_before(tn.start_byte, inner.start_byte)
        space = next((q for q in quals if q in _SPACES), None)
        const = any(c.type == "type_qualifier" and self.text(c) == "const" for c in tn.children)
        packed = self.text(inner).strip().startswith("packed_")
        t, _ = self.resolve_type(inner)
        if t is None:
            self.unsupported(tn, "a void pointer")
        return t, space, const, packed

    def cast_parts(self, node):
        """``(type node, value node)`` of a cast: ``(T)v``, ``reinterpret_cast<T>(v)`` or
        ``static_cast<T>(v)``; None for anything else."""
        if node.type == "cast_expression":
            return node.child_by_field_name("type"), node.child_by_field_name("value")
        if node.type != "call_expression":
            return None
        fn = node.child_by_field_name("function")
        if fn.type != "template_function" or \
                self.text(fn.child_by_field_name("name")).strip() not in ("reinterpret_cast", "static_cast"):
            return None
        targs = fn.child_by_field_name("arguments").named_children
        args = node.child_by_field_name("arguments").named_children
        return (targs[0], args[0]) if len(targs) == 1 and len(args) == 1 else None

    def pointer_alias(self, tn):
        """The :class:`PtrType` a type descriptor ``tn`` names through an alias or typedef
        (``using P = device float*;`` then ``(P)x``), else None. Syntax and lookup only."""
        if tn.type != "type_descriptor" or tn.child_by_field_name("declarator") is not None:
            return None
        inner = tn.child_by_field_name("type")
        if inner is None or inner.type not in ("type_identifier", "qualified_identifier"):
            return None
        sym = self.lookup(self.text(inner).strip())
        return sym.t if isinstance(sym, _TypeName) and isinstance(sym.t, PtrType) else None

    def ptr_rank(self, node):
        """None when ``node`` is not a pointer expression; else how many array dimensions
        one step of the pointer spans (0: a pointer to elements; 1: to rows of a 2-D array)."""
        k = node.type
        if k == "parenthesized_expression":
            return self.ptr_rank(node.named_children[-1]) if node.named_children else None
        if k == "identifier":
            sym = self.lookup(self.text(node))
            if isinstance(sym, Buf):
                return len(sym.shape) - 1 if sym.shape else 0
            if isinstance(sym, Ptr):
                return len(sym.view.inner)
            return self.symbol_rank(sym)              # pointers of C++ objects (cxx_assign)
        if k == "field_expression":
            return self.member_rank(node)
        if k == "binary_expression":
            op = self.text(node.child_by_field_name("operator"))
            if op not in ("+", "-"):
                return None
            a = self.ptr_rank(node.child_by_field_name("left"))
            b = self.ptr_rank(node.child_by_field_name("right"))
            if a is not None and b is None:
                return a
            if op == "+" and a is None:
                return b
            return None
        if k == "cast_expression":
            tn = node.child_by_field_name("type")
            d = tn.child_by_field_name("declarator") if tn.type == "type_descriptor" else None
            if self.is_struct_pointer_node(node):
                return None               # a pointer to structs in memory (struct_views)
            return 0 if (d is not None and d.type == "abstract_pointer_declarator") or self.pointer_alias(tn) \
                else None
        if k == "pointer_expression":
            return 0 if self.text(node).lstrip().startswith("&") else None
        if k == "subscript_expression":
            r = self.ptr_rank(node.child_by_field_name("argument"))
            return r - 1 if r else None
        if k == "conditional_expression":
            return self.ptr_rank(node.child_by_field_name("consequence"))
        if k in ("update_expression", "assignment_expression"):       # *p++, *(p += 2)
            arg = node.child_by_field_name("argument" if k == "update_expression" else "left")
            return self.ptr_rank(arg) if arg.type == "identifier" else None
        if k == "call_expression":
            if self.call_returns(node) == "ptr":       # a member function returning a pointer
                return 0
            fn = node.child_by_field_name("function")
            if fn.type == "template_function":
                nm = self.text(fn.child_by_field_name("name")).strip()
                targs = fn.child_by_field_name("arguments").named_children
                if nm in ("static_cast", "reinterpret_cast", "const_cast") and targs \
                        and not self.is_struct_pointer_node(node) and self.pointer_cast_type(targs[0]) is not None:
                    return 0
                if nm == "mb_view":     # metalbench's printed reinterpreting view
                    return 0
        return None

    # -- pointer values ------------------------------------------------------------------
    def is_null_pointer(self, node) -> bool:
        """Whether ``node`` is a null pointer constant: ``nullptr``, ``NULL``, or one cast to a
        pointer type, ``(const device float*)nullptr``, ``(device T*)0``."""
        while node.type == "parenthesized_expression" and node.named_children:
            node = node.named_children[-1]
        if node.type == "null":
            return True
        if node.type == "identifier" and isinstance(self.lookup(self.text(node)), NullPtr):
            return True             # a pointer variable initialised with nullptr
        if node.type == "cast_expression" and self.ptr_rank(node) is not None:
            val = node.child_by_field_name("value")
            while val.type == "parenthesized_expression" and val.named_children:
                val = val.named_children[-1]
            return val.type == "null" or (val.type == "number_literal" and self.text(val).strip() == "0") or \
                self.is_null_pointer(val)
        return False

    def uses_null_pointer(self, node) -> bool:
        """Whether expression ``node`` names ``nullptr``/``NULL`` or a null pointer parameter
        (:class:`NullPtr`)."""
        stack = [node]
        while stack:
            n = stack.pop()
            if n.type in ("nullptr", "null") or self.text(n) in ("nullptr", "NULL") or \
                    (n.type == "identifier" and isinstance(self.lookup(self.text(n)), NullPtr)):
                return True
            stack.extend(n.named_children)
        return False

    def constant_branch(self, node):
        """The side of ``c ? a : b`` that a compile-time constant ``c`` takes (the other is
        not translated: MLX's sort.h writes ``ARG_SORT ? tgp_idxs + off : nullptr``); None
        when ``node`` is no such conditional."""
        while node.type == "parenthesized_expression" and node.named_children:
            node = node.named_children[-1]
        if node.type != "conditional_expression":
            return None
        c = fold(self.sem.to_bool(self.expr(node.child_by_field_name("condition"))))
        if not isinstance(c, ir.Const):
            return None
        return node.child_by_field_name("consequence" if c.value else "alternative")

    def sym_view(self, sym, node) -> View:
        sp = self.sp(node)
        if isinstance(sym, NullPtr):
            line = sym.bound_at.line if sym.bound_at is not None else "?"
            self.type_err(node, f"'{sym.name}' is a null pointer here (the argument for it at line {line} is "
                                "nullptr): using it is undefined in MSL")
        v = self.cxx_sym_view(sym, node)
        if v is not None:
            return v
        if isinstance(sym, Ptr) and sym.off is None:       # an array of vectors: a fixed view
            return sym.view
        if isinstance(sym, Ptr):
            return replace(sym.view, offset=ir.Var(sym.off.name, sym.off.type, span=sp))
        return self.sem.view_of(sym.name, sym.elem, sym.space, sym.shape, const=sym.const,
                                atomic=sym.atomic, span=sp)

    def ref_view(self, ref, sp) -> View:
        v = ref.view
        if isinstance(v.offset, ir.Var):
            return replace(v, offset=ir.Var(v.offset.name, v.offset.type, span=sp))
        return v

    def const_ref_copy(self, d, name, init, base, sp, is_const):
        """``const T& r = e`` where ``e`` is no variable or element: a temporary (C++ keeps it
        alive as long as ``r``) or a thread attribute's component never changes, so a const
        copy reads the same. A component of a local (``v.y``) may change later: refused."""
        what = "a reference to something that is not a variable or an array element"
        if not is_const:
            self.unsupported(init, what)
        val = self.expr(init) if base == "auto" else self.value_as(init, base)
        lvalue_form = init.type in ("field_expression", "subscript_expression", "pointer_expression",
                                    "parenthesized_expression", "identifier")
        if lvalue_form and any(isinstance(n, ir.Var) for n in ir.walk(val)):
            self.unsupported(init, what)
        t = val.type if base == "auto" else base
        v = ir.Var(self.fresh(name), t, span=sp)
        self.scopes[-1][name] = v
        return [ir.Decl(v, self.sem.convert(val, t), span=sp)]

    def lvalue(self, node):
        """For an argument bound to a reference parameter: ``("loc", view, index)`` for an
        element (``a[i]``, ``*p``, a reference), ``("var", var)`` for a local variable, or None."""
        while node.type == "parenthesized_expression" and node.named_children:
            node = node.named_children[-1]
        if node.type in ("field_expression", "call_expression"):
            return self.cxx_lvalue(node)               # members, functions returning references
        if node.type == "identifier":
            sym = self.lookup(self.text(node))
            if isinstance(sym, (ir.Var, CplxVar)):
                return ("var", sym)
            if isinstance(sym, Ref):
                return ("loc", self.ref_view(sym, self.sp(node)), ir.Const(0, T.int32))
            return None
        if node.type == "subscript_expression" and self.ptr_rank(node.child_by_field_name("argument")) == 0 \
                or node.type == "pointer_expression" and self.text(node).lstrip().startswith("*"):
            v, i = self.location(node)
            return ("loc", v, i)
        return None

    def pointer(self, node) -> View:
        """The :class:`View` a pointer expression denotes (``ptr_rank(node)`` is not None)."""
        k = node.type
        sp = self.sp(node)
        if k == "parenthesized_expression":
            return self.pointer(node.named_children[-1])
        if k == "identifier":
            return self.sym_view(self.lookup(self.text(node)), node)
        if k in ("field_expression", "call_expression"):
            v = self.cxx_pointer(node)                 # members, functions returning pointers
            if v is not None:
                return v
        if k == "binary_expression":
            op = self.text(node.child_by_field_name("operator"))
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if self.ptr_rank(left) is not None:
                v = self.pointer(left)
                return self.sem.view_offset(v, self.expr(right), sp, op)
            k_ = self.expr(left)
            return self.sem.view_offset(self.pointer(right), k_, sp)
        if k in ("cast_expression", "call_expression"):
            if k == "cast_expression":
                tn, val = node.child_by_field_name("type"), node.child_by_field_name("value")
            else:
                fn = node.child_by_field_name("function")
                tn = fn.child_by_field_name("arguments").named_children[0]
                args = node.child_by_field_name("arguments").named_children
                if len(args) != 1:
                    self.type_err(node, "a cast takes one argument")
                val = args[0]
            if k == "call_expression" and self.text(fn.child_by_field_name("name")).strip() == "mb_view":
                t, space, const, packed = self.resolve_type(tn)[0], None, None, False
            else:
                t, space, const, packed = self.pointer_cast_type(tn)
            if self.ptr_rank(val) is None:
                self.type_err(val, f"'{self.quote(val)}' is not a pointer into a buffer or array, "
                              "so it cannot be cast to a pointer",
                              hint="metalbench follows pointers whose target buffer is known when the "
                                   "kernel is compiled")
            if isinstance(t, MetalMatrixType):     # (device float4x4*)x: rows of its column vectors
                v = self.sem.view_cast(self.pointer(val), t.col, space, const, False, sp)
                return replace(v, inner=(t.cols,))
            v = self.sem.view_cast(self.pointer(val), t, space, const, packed, sp)
            if tn.type == "type_descriptor" and self.resolve_type(tn.child_by_field_name("type"))[1]:
                # (device atomic_uint*)&out[i]: plain memory used through atomic operations
                if not v.atomic:
                    self.use_of_output(v.buf, "cast", f"({self.text(tn).strip()})", sp)
                v = replace(v, atomic=True)
            return v
        if k == "pointer_expression":          # &a[i], &p[i], &*p
            v, i = self.location(node.child_by_field_name("argument"))
            return self.sem.view_offset(v, i, sp)
        if k in ("update_expression", "assignment_expression"):
            # the pointer moves (a statement run first); p++ gives the old position
            target = node.child_by_field_name("argument" if k == "update_expression" else "left")
            postfix = k == "update_expression" and not self.text(node).lstrip().startswith(("++", "--"))
            old = None
            if postfix:
                v0 = self.pointer(target)
                old = self.new_tmp(T.int64, self.sem.convert(v0.offset, T.int64, sp), sp)
            for st in self.expr_stmt(node):
                self.emit_pre(st, sp)
            v = self.pointer(target)
            return v if old is None else replace(v, offset=old)
        if k == "subscript_expression":        # a row of a multi-dimensional array
            base = self.pointer(node.child_by_field_name("argument"))
            inds = node.child_by_field_name("indices").named_children
            if len(inds) != 1:
                self.type_err(node, "one index per [] in MSL")
            return self.sem.view_row(base, self.expr(inds[0]), sp)
        if k == "conditional_expression":
            chosen = self.buffer_choice.get((node.start_byte, node.end_byte))
            if chosen is not None:       # a branch of a split statement list: this side
                return self.pointer(node.child_by_field_name("consequence" if chosen else "alternative"))
            taken = self.constant_branch(node)
            if taken is not None:        # ARG_SORT ? idx + off : nullptr, a constant condition
                return self.pointer(taken)
            c = self.sem.to_bool(self.expr(node.child_by_field_name("condition")))
            alt = node.child_by_field_name("alternative")
            if self.ptr_rank(alt) is None:
                self.type_err(node, "both sides of ?: must be pointers here")
            self.lazy += 1
            try:
                a = self.pointer(node.child_by_field_name("consequence"))
                b = self.pointer(alt)
            finally:
                self.lazy -= 1
            if a.buf != b.buf and a.type == b.type and a.inner == b.inner:
                # (c ? FBW : GBW) + off: the statement list splits here (buffer_choice.py)
                raise BufferChoice(
                    f"a pointer that points into '{a.buf}' or '{b.buf}' depending on a run-time condition "
                    "is supported where it is written in a declaration or expression statement (not in "
                    "a loop or lambda of it, nor where it is evaluated only sometimes)", self.sp(node),
                    hint="index both buffers under the condition instead", node=node, bufs=(a.buf, b.buf))
            if a.buf != b.buf or a.type != b.type or a.inner != b.inner:
                self.type_err(node, f"a pointer that points into '{a.buf}' or '{b.buf}' depending on a "
                              "run-time condition: metalbench needs each pointer's target buffer known "
                              "when the kernel is compiled",
                              hint="index both buffers under the condition instead")
            off = self.sem.select(c, self.sem.convert(a.offset, T.int64, sp),
                                  self.sem.convert(b.offset, T.int64, sp), sp)
            return replace(a, offset=off)
        self.type_err(node, f"'{self.quote(node)}' is not a pointer into a buffer or array")

    # -- locations ------------------------------------------------------------------------
    def location(self, node):
        """``(view, index)`` of the element an lvalue names: ``a[i]``, ``a[i][j]``, ``*p``,
        ``p[i]``, ``*(p + i)``, ``((device float4*)x)[j]``."""
        k = node.type
        if k == "parenthesized_expression":
            return self.location(node.named_children[-1])
        if k == "pointer_expression" and self.text(node).lstrip().startswith("*"):
            return self.deref(node.child_by_field_name("argument"), node)
        if k == "subscript_expression":
            base = node.child_by_field_name("argument")
            inds = node.child_by_field_name("indices").named_children
            if len(inds) != 1:
                self.type_err(node, "one index per [] in MSL")
            r = self.ptr_rank(base)
            if r is None:
                if base.type == "identifier" and isinstance(self.lookup(self.text(base)), ir.Var):
                    self.type_err(base, f"'{self.text(base)}' is a value, not an array or buffer")
                if base.type == "identifier" and self.lookup(self.text(base)) is None:
                    # a name declared nowhere (a misspelt or missing input, also one a header
                    # macro indexes): say so, as for any other use of it
                    name = self.text(base)
                    raise KernelNameError(f"use of undeclared identifier '{name}'", self.sp(base),
                                          hint=self._template_hint(name) or "declare it, or add it to input_names")
                self.type_err(base, f"'{self.text(base)}' is not an array or buffer")
            if r > 0:
                self.type_err(node, "a partial index of a multi-dimensional array is not a value")
            v = self.pointer(base)
            return v, self.index_expr(inds[0])
        if k == "identifier" and isinstance(self.lookup(self.text(node)), Ref):
            return self.ref_view(self.lookup(self.text(node)), self.sp(node)), ir.Const(0, T.int32)
        if k == "identifier" and isinstance(self.lookup(self.text(node)), (ir.Var, ir.Const)):
            # &x of a scalar or vector local: its bits through a view (semantics/local_views.py)
            sym = self.lookup(self.text(node))
            if isinstance(sym, ir.Var):
                sym = ir.Var(sym.name, sym.type, span=self.sp(node))
            return self.sem.local_view(sym, self.sp(node), self.text(node)), ir.Const(0, T.int32)
        if k == "field_expression":
            loc = self.member_location(node, locals_too=True)
            if loc is not None:
                return loc
        self.unsupported(node, f"'{self.text(node)}' as a memory location")

    def is_vector_member(self, node) -> bool:
        """Whether ``node`` is a vector member of an object in memory (``pp[i].q``,
        ``s[t].v``), probed: nothing it emits is kept."""
        if node.type != "field_expression":
            return False
        try:
            loc = self.probe(lambda: self.member_location(node))
        except MetalbenchError:
            return False
        return loc is not None and isinstance(loc[0].type, T.VectorType)

    def member_location(self, node, locals_too=False):
        """``(view, index)`` of a scalar or vector member of an object (``p[i].y``,
        ``blk->q``, ``s[t].v``): in memory, a reference into its buffer; with ``locals_too``
        also a member of a local object (its variable's bits, as ``&x`` of a local); None
        for anything else."""
        if node.type != "field_expression":
            return None
        arg = node.child_by_field_name("argument")
        arrow = self.text(node.child_by_field_name("operator")).strip() == "->"
        if not (self.is_struct_pointer_node(arg) if arrow else self.is_object_node(arg)):
            return None
        obj = self.struct_object(arg) if arrow else self.object_value(arg)
        sym = obj.fields.get(self.text(node.child_by_field_name("field")).strip()) if obj is not None else None
        if isinstance(sym, Ref):
            return self.ref_view(sym, self.sp(node)), ir.Const(0, T.int32)
        if isinstance(sym, ir.Var) and locals_too:
            return self.sem.local_view(ir.Var(sym.name, sym.type, span=self.sp(node)), self.sp(node),
                                       self.text(node)), ir.Const(0, T.int32)
        return None

    def load_at(self, node):
        """The value of the element ``node`` names."""
        v, i = self.location(node)
        return self.sem.view_load(v, i, self.sp(node))

    def bufarg(self, node):
        """A BufArg for a pointer-valued expression, or None when it is not one."""
        if self.ptr_rank(node) is None:
            return None
        return self.sem.view_arg(self.pointer(node), self.sp(node))

    # -- buffer parameters used as pointer variables ----------------------------------------
    def assigned_names(self, node) -> set:
        """The names ``node``'s code assigns to or increments (``y += n``, ``x++``), syntactically."""
        names = set()
        stack = [node]
        while stack:
            n = stack.pop()
            if n.type == "assignment_expression":
                lhs = n.child_by_field_name("left")
                if lhs.type == "identifier":
                    names.add(self.text(lhs))
            elif n.type == "update_expression":
                arg = n.child_by_field_name("argument")
                if arg.type == "identifier":
                    names.add(self.text(arg))
            stack.extend(n.named_children)
        return names

    def advance_params(self, body_node, scope: dict) -> list:
        """Buffer parameters the code advances (``y += n``, ``x++``, ``out = out + 1``)
        become pointer variables: an int64 offset declared 0 at the top of the body
        (found before translating, so uses before the first advance in a loop see it)."""
        out = []
        for name in sorted(self.assigned_names(body_node)):
            sym = scope.get(name)
            if isinstance(sym, Buf) and not sym.shape:
                off = ir.Var(self.fresh(name + "_off"), T.int64)
                view = self.sem.view_of(sym.name, sym.elem, sym.space, const=sym.const, atomic=sym.atomic)
                scope[name] = Ptr(replace(view, offset=off), off)
                out.append(ir.Decl(off, ir.Const(0, T.int64)))
        return out

    def declare_alias(self, v: View, elem, span):
        """The name of ``v.buf``'s storage read as ``elem`` (see
        :class:`~metalbench.ir.ViewDecl`), declared once per kernel or function body."""
        root, space, const, root_elem = self.alias_root.get(v.buf, (v.buf, v.space, v.const, v.elem))
        if elem == root_elem:
            return root
        if space == "thread":
            raise KernelSyntaxError(
                f"a pointer cast from {v.elem.name} to {elem.name} of a thread-local array (reinterpreting "
                f"its bytes) is not supported by the simulator; {METAL_ONLY}", span,
                hint="use as_type<T>(...) on the values instead")
        key = (root, elem)
        name = self.alias_names.get(key)
        if name is None:
            name = self.fresh(f"{root}_as_{elem.msl}")
            self.alias_names[key] = name
            self.alias_root[name] = (root, space, const, root_elem)
            self.view_decls.append(ir.ViewDecl(name, root, elem, space, const, span=span))
            if space == "threadgroup" and elem.itemsize > root_elem.itemsize:
                # CUDA places a __shared__ uchar array at any byte: its uint view must not fault
                for a in self.tg_arrays:
                    if a.name == root:
                        a.align = max(a.align or 0, 16)
        return name

    def pointer_decl(self, name, init, base, space, is_const, sp, d):
        """``T* p = <pointer>;`` / ``auto p = <pointer>;``: a :class:`Ptr` whose offset is
        a new int64 variable (a null pointer, also as the side a constant ``?:`` takes: a
        :class:`NullPtr`, an error where it is used)."""
        init = self.constant_branch(init) or init
        base = None if base == "auto" else base     # const device auto* p = x + k: x's element type
        if self.is_null_pointer(init):
            self.scopes[-1][name] = NullPtr(name, sp)
            return []
        if self.ptr_rank(init) is None:
            self.type_err(init, f"'{self.quote(init)}' is not a pointer into a buffer or array",
                          hint="metalbench follows pointers whose target buffer is known when the "
                               "kernel is compiled: x + offset, &x[i], a row tile[r], (T*)x")
        v = self.pointer(init)
        if base is not None and not v.inner and base != v.type:
            vt = v.type.name if v.type is not None else "?"
            self.type_err(d, f"cannot point a {getattr(base, 'name', base)}* at {vt} data",
                          hint=f"a pointer cast reinterprets memory: ({space or v.space} "
                               f"{getattr(base, 'msl', base)}*)...")
        if base is not None and v.inner:
            self.type_err(d, f"'{name}' would point to rows of a multi-dimensional array; index a row")
        if space is not None and space != v.space:
            self.type_err(d, f"cannot point a {space} pointer at {v.space} memory"
                          + SMALL_INPUT_NOTE * (v.space == "constant"))
        if not is_const and v.const and base is not None and space != "constant":   # (constant: read-only itself)
            self.type_err(d, f"'{name}' must be a const pointer: it points at read-only memory",
                          hint=f"declare it const {v.space} ...*")
        off = ir.Var(self.fresh(name + "_off"), T.int64, span=sp)
        self.scopes[-1][name] = Ptr(replace(v, offset=off, const=v.const or is_const), off)
        return [ir.Decl(off, self.sem.convert(v.offset, T.int64, sp), span=sp)]


_CASTS = ("reinterpret_cast", "static_cast", "const_cast")


def written_names(source: str, header: str = "") -> list[str]:
    """The names an MSL body stores through, in order of first store: the buffer under
    each assigned element (``out[i] = ...``, ``*(out + k) += ...``, ``o[j] = ...`` where
    ``o`` points into ``out``), each atomic's first argument; arrays declared in the body
    are not included. Used to guess a cell's outputs. The body is read with the header's
    macros and templates (:func:`~.translator.parse_body`).

    >>> written_names("uint i = thread_position_in_grid.x;\\nif (i < x_shape[0]) { out[i] = 2.0f * x[i]; }")
    ['out']
    >>> written_names("device ushort* bits = reinterpret_cast<device ushort*>(out);\\nbits[0] = 1;")
    ['out']
    """
    from .translator import parse_body
    from ...errors import Source
    tree, code, _ = parse_body(source, Source("body", source), header)
    text = lambda n: code[n.start_byte:n.end_byte]  # noqa: E731
    mutable = _mutable_params(header) if header else {}
    # the body's own variables (int ni; -- set by a macro as (ni) = ...) are not outputs; a
    # pointer into an output stands for it (alias, below)
    local = declared_names(source, header)
    alias: dict[str, str] = {}
    declared: set[str] = set()
    found: list[str] = []

    def base(n):
        while True:
            if n.type in ("subscript_expression", "field_expression"):
                n = n.child_by_field_name("argument")
            elif n.type == "pointer_expression":
                n = n.child_by_field_name("argument")
            elif n.type == "parenthesized_expression" and n.named_children:
                n = n.named_children[-1]
            elif n.type == "cast_expression":
                n = n.child_by_field_name("value")
            elif n.type == "call_expression" and n.child_by_field_name("arguments").named_children and \
                    text(n.child_by_field_name("function")).split("<")[0].strip() in _CASTS:
                # reinterpret_cast<device ushort*>(out): a view of out (bfloat16 stored as bits)
                n = n.child_by_field_name("arguments").named_children[0]
            elif n.type == "binary_expression":
                n = n.child_by_field_name("left")
            elif n.type == "identifier":
                name = text(n)
                return alias.get(name, name)
            else:
                return None

    def add(n, element):
        while n.type == "parenthesized_expression" and n.named_children:
            n = n.named_children[-1]   # (x) = ...: a macro's parenthesised argument
        if element and n.type == "identifier":
            return                     # `x = ...` assigns a variable (or moves a pointer)
        b = base(n)
        if b is not None and b not in declared and b not in local and b not in found:
            found.append(b)

    stack = [tree.root_node]
    while stack:
        n = stack.pop()
        if n.type == "init_declarator":
            d, v = n.child_by_field_name("declarator"), n.child_by_field_name("value")
            if d.type == "array_declarator":
                while d.type == "array_declarator":
                    d = d.child_by_field_name("declarator")
                declared.add(text(d))
            elif v is not None:
                while d.type == "pointer_declarator":
                    d = d.child_by_field_name("declarator")
                b = base(v)
                if d.type == "identifier" and b is not None:
                    alias[text(d)] = b
        elif n.type == "declaration":
            for d in n.children_by_field_name("declarator"):
                if d.type == "array_declarator":
                    while d.type == "array_declarator":
                        d = d.child_by_field_name("declarator")
                    declared.add(text(d))
        elif n.type == "assignment_expression":
            add(n.child_by_field_name("left"), True)
        elif n.type == "update_expression":
            add(n.child_by_field_name("argument"), True)
        elif n.type == "call_expression" and mutable and \
                text(n.child_by_field_name("function")).split("::")[-1].split("<")[0].strip() in mutable:
            # an output written in a header function: passed to its non-const pointer/reference
            # (a local passed by reference is not one)
            at = mutable[text(n.child_by_field_name("function")).split("::")[-1].split("<")[0].strip()]
            for j, a in enumerate(n.child_by_field_name("arguments").named_children):
                b = base(a) if j in at else None
                if b is not None and b not in local:
                    add(a, False)
        elif n.type == "call_expression" and text(n.child_by_field_name("function")).split("::")[-1].strip() \
                .startswith("atomic_"):
            args = n.child_by_field_name("arguments").named_children
            if args and not text(n.child_by_field_name("function")).strip().endswith(("load_explicit", "_load")):
                add(args[0], False)
        stack.extend(reversed(n.named_children))
    return found


def _mutable_params(header: str) -> dict[str, set[int]]:
    """The header's functions (by name) and which of their parameters are non-const pointers or
    references, through which a call writes its argument (MLX's inputs are const, so what is
    passed there is an output or a local).

    >>> _mutable_params("void put(const device float* a, device float* b, thread float& c, float d) {}")
    {'put': {1, 2}}
    """
    from .parse import _parse
    from .preprocess import Preprocessor
    from .symbols import _params_of
    from .translator import header_template_names
    from ...errors import Source
    try:
        src = Source("header", header, 1)
        tree, code, _ = _parse(Preprocessor().run(header, src), src, 0, False, templates=header_template_names(header))
    except MetalbenchError:
        return {}
    out: dict[str, set[int]] = {}
    stack = [tree.root_node]
    while stack:
        n = stack.pop()
        stack.extend(n.named_children)
        if n.type != "function_definition":
            continue
        d = n.child_by_field_name("declarator")
        while d is not None and d.type in ("pointer_declarator", "reference_declarator"):
            d = d.child_by_field_name("declarator") or d.named_children[-1]
        if d is None or d.type != "function_declarator":
            continue
        name = code[d.child_by_field_name("declarator").start_byte:d.child_by_field_name("declarator").end_byte]
        at = out.setdefault(name.split("::")[-1].strip(), set())
        for j, p in enumerate(_params_of(n)):
            pd = p.child_by_field_name("declarator")
            const = any(c.type == "type_qualifier" and code[c.start_byte:c.end_byte] == "const" for c in p.children)
            if pd is not None and pd.type in ("pointer_declarator", "reference_declarator", "array_declarator") \
                    and not const:
                at.add(j)
    return out


def declared_names(source: str, header: str = "") -> set[str]:
    """The variables an MSL body declares (``float v[4];``, ``auto k_ = k + o;``, a ``for``
    loop's ``int j``): a cell does not take a notebook array of that name as an input.

    >>> sorted(declared_names("float v[4]; auto *p = x + 1; for (int k = 0; k < 4; ++k) v[k] = p[k];"))
    ['k', 'p', 'v']
    """
    from .translator import parse_body
    from ...errors import Source
    tree, code, _ = parse_body(source, Source("body", source), header)
    out: set[str] = set()
    stack = [tree.root_node]
    while stack:
        n = stack.pop()
        if n.type == "declaration":
            for d in n.children_by_field_name("declarator"):
                while d is not None and d.type != "identifier":
                    d = d.child_by_field_name("declarator") or (d.named_children[0] if d.type in (
                        "reference_declarator",) and d.named_children else None)
                if d is not None:
                    out.add(code[d.start_byte:d.end_byte])
        stack.extend(n.named_children)
    return out
