"""Where C++ objects meet the rest of the MSL translator: object declarations, assignments
to objects and members, members as values and pointers, references returned by functions,
``reinterpret_cast<T&>``, struct copies through reinterpreted pointers and ``(void)x;``.
The statement, expression and memory mixins call these hooks.

    >>> from metalbench.frontend.msl import translate_kernel
    >>> from metalbench import ir, types as T
    >>> hdr = "struct P { float2 v; int n; };"
    >>> k = translate_kernel("k", "P p = {float2(1.0f, 2.0f), 3};\\np.v.y += float(p.n);\\nout[0] = p.v.y;", hdr,
    ...                      inputs=[], outputs=[("out", T.float32, 1)])
    >>> print(ir.dump(k.body))
    float2 p_v
    int32 p_n
    p_v = float2(1.0, 2.0)
    p_n = 3
    p_v = float2(p_v.x, (p_v.y + float32(p_n)))
    out[0] = p_v.y
"""
from __future__ import annotations

from dataclasses import replace

from ... import ir
from ... import types as T
from ...semantics.complexval import ComplexType
from ...semantics.folding import const_value
from .cxx_decls import ClassInst, PtrType, _unwrap_declarator
from .cxx_objects import FixedView, PendingPtr, StructObj, const_view
from .symbols import Buf, NullPtr, Ptr, Ref, _params_of, _type_of_descriptor


class CxxAssignMixin:
    """C++ objects in statements and expressions: a part of :class:`~metalbench.frontend.msl.Translator`."""

    # -- statements ------------------------------------------------------------------------
    def void_cast(self, node) -> bool:
        """``(void)x;`` (a statement that only silences a warning)."""
        if node.type != "cast_expression":
            return False
        tn = node.child_by_field_name("type")
        return self.text(tn).strip() == "void"

    def is_if_constexpr(self, node) -> bool:
        cond = node.child_by_field_name("condition")
        return any(q == "constexpr" for q in self.quals_before(node.start_byte, cond.start_byte)) or \
            any(c.type == "constexpr" for c in node.children)

    def if_constexpr(self, node) -> list:
        """``if constexpr (c)``: the condition is a constant; the other branch is discarded
        untranslated (it need not make sense for these template arguments), as C++ does."""
        cnode = node.child_by_field_name("condition")
        cexpr = cnode.child_by_field_name("value") or cnode.named_children[-1]
        c = const_value(self.sem.to_bool(self.expr(cexpr)))
        if c is None:
            self.type_err(cexpr, "if constexpr needs a compile-time constant condition")
        if c:
            return self.body_of(node.child_by_field_name("consequence"))
        alt = node.child_by_field_name("alternative")
        if alt is None:
            return []
        return self.body_of(alt.named_children[-1] if alt.type == "else_clause" else alt)

    def declares_objects(self, node, base) -> bool:
        if isinstance(base, ClassInst):
            return True
        if base != "auto":
            return False
        for d in node.children_by_field_name("declarator"):
            if d.type == "init_declarator" and d.child_by_field_name("declarator").type == "identifier" and \
                    self.is_object_node(d.child_by_field_name("value")):
                return True
        return False

    def object_declaration(self, node, base, space) -> list:
        """``T x;``, ``T x(a, b);``, ``T x = {a, b};``, ``T x = y;``, ``auto x = T{...};``,
        ``thread T& r = obj.member;`` for class types."""
        out = []
        for d in node.children_by_field_name("declarator"):
            init = None
            if d.type == "init_declarator":
                init = d.child_by_field_name("value")
                d = d.child_by_field_name("declarator")
            how = ("default",)
            if d.type == "function_declarator":        # `T x(a, b);`: C++'s most vexing parse
                params = d.child_by_field_name("parameters").named_children
                how = ("args", params)
                d = d.child_by_field_name("declarator")
            if d.type == "reference_declarator":
                name_n, _ = _unwrap_declarator(d)
                if init is None or not self.is_object_node(init):
                    self.unsupported(d, "this reference to an object")
                obj = self.object_value(init)
                if any(c.type == "type_qualifier" and self.text(c) == "const" for c in node.children):
                    obj = const_view(obj)           # const T& r = obj: r's calls take the const members
                self.scopes[-1][self.text(name_n)] = obj
                continue
            if d.type == "pointer_declarator" and d.child_by_field_name("declarator").type == "identifier" \
                    and isinstance(base, ClassInst):      # a pointer to structs in memory (struct_views)
                out += self.struct_pointer_decl(self.text(d.child_by_field_name("declarator")), init, base,
                                                self.sp(d), d)
                continue
            if d.type == "array_declarator" or space == "threadgroup":
                out += self.object_array(d, base, space, init)
                continue
            if d.type != "identifier":
                what = {"pointer_declarator": "a pointer to a struct"}
                self.unsupported(d, what.get(d.type, f"the declaration '{self.text(d)}'"))
            if space in ("device", "constant"):
                self.unsupported(d, f"a struct in {space} memory")
            name = self.text(d)
            cls = base
            if init is not None:
                if init.type == "argument_list":
                    how = ("args", list(init.named_children))
                elif init.type == "initializer_list":
                    how = ("list", init)
                elif self.is_object_node(init):
                    src = self.object_value(init)
                    cls = src.cls if cls == "auto" else cls
                    how = ("copy", src)
                else:
                    self.type_err(init, f"a {getattr(cls, 'name', cls)} cannot be initialised from "
                                  f"'{self.quote(init)}'")
            obj = self.alloc_object(cls, name, out, d)
            out += self.construct(obj, how, d)
            # a const object calls its const members (cxx_calls.call_overload)
            obj.const = any(c.type == "type_qualifier" and self.text(c) == "const" for c in node.children)
            self.scopes[-1][name] = obj
        return out

    def _converts_to(self, cls) -> bool:
        """Whether ``cls`` has a constructor callable with one argument (not ``explicit``)."""
        return any(1 <= len(_params_of(m.node)) and sum(p.type != "optional_parameter_declaration"
                                                        for p in _params_of(m.node)) <= 1
                   and "explicit" not in self.method_ctx(m)[0].code[m.node.start_byte:m.node.end_byte].split("(")[0]
                   for m in self.ctors(cls))

    def takes_class_value(self, name) -> bool:
        """Whether a header overload of ``name`` takes a class by value (a call may convert its
        argument through the class's constructor: translated inline, where that is done)."""
        return any(k == "value" and isinstance(t, ClassInst) for fd in self.funcdefs.get(name, ())
                   for k, t in self._param_specs(fd))

    def object_array(self, d, cls, space, init) -> list:
        """``T a[n];`` / ``T a[n] = {{...}, ...};`` / ``threadgroup T a[n];`` / ``threadgroup T x;``
        of a class type: stored member by member; thread elements are constructed as C++
        does (threadgroup memory is not initialised, as Metal requires)."""
        if space in ("device", "constant"):
            self.unsupported(d, f"an array of structs in {space} memory")
        space = space or "thread"
        dims = []
        name_n = d
        while name_n.type == "array_declarator":
            size = name_n.child_by_field_name("size")
            v = const_value(self.expr(size)) if size is not None else None
            if v is None or int(v) <= 0:
                self.type_err(name_n, "array sizes must be positive compile-time constants")
            dims.insert(0, int(v))
            name_n = name_n.child_by_field_name("declarator")
        if name_n.type != "identifier":
            self.unsupported(d, f"the declaration '{self.text(d)}'")
        if len(dims) > 1:
            self.unsupported(d, "a multi-dimensional array of structs")
        name = self.text(name_n)
        out: list = []
        arr = self.alloc_array(cls, name, dims[0] if dims else 1, space, out, d)
        sp = self.sp(d)
        if space == "threadgroup":
            if init is not None:
                self.type_err(d, "threadgroup memory cannot be initialised (Metal)")
        elif init is not None:
            if init.type != "initializer_list":
                self.type_err(init, "an array of structs is initialised with a {...} list")
            items = list(init.named_children)
            for k in range(arr.n):
                el = self.element(arr, ir.Const(k, T.int32, span=sp), d)
                item = items[k] if k < len(items) else None
                how = ("value",) if item is None else (("list", item) if item.type == "initializer_list" else
                                                       ("copy", self.object_value(item)))
                out += self.construct(el, how, d)
        else:
            k = ir.Var(self.fresh("_k"), T.int32, span=sp)
            body = self.construct(self.element(arr, k, d), ("default",), d)
            if body:
                out.append(ir.For(k, ir.Const(0, T.int32), ir.Const(arr.n, T.int32), ir.Const(1, T.int32), body,
                                  span=sp))
        self.scopes[-1][name] = arr if dims else self.element(arr, ir.Const(0, T.int32, span=sp), d)
        return out

    def cxx_assign(self, lhs, op, rhs_node, sp, rhs=None):
        """``lhs op= rhs`` when ``lhs`` is an object, a member, an element of a vector
        reference, a reference a function returns or a struct through a pointer; None otherwise."""
        k = lhs.type

        def value(cur, t):
            r = rhs if rhs is not None else (self.value_as(rhs_node, t) if rhs_node is not None
                                             else ir.Const(1, T.int32, span=sp))
            if op is None:
                return self.sem.convert(r, t, sp)
            return self.sem.convert(self.binop(op, cur, r, lhs), t, sp)
        sym = None
        if k == "identifier":
            sym = self.lookup(self.text(lhs))
            if not isinstance(sym, (StructObj, PendingPtr, FixedView)):
                return None
        elif k == "field_expression":
            sym = self.member_symbol(lhs)
            if sym is None:
                return None
        if sym is not None:
            return self.assign_symbol(sym, lhs, op, rhs_node, sp, value)
        if k == "subscript_expression":
            base = lhs.child_by_field_name("argument")
            if self.is_object_node(lhs):                 # an element of an array of objects
                return self.assign_symbol(self.object_value(lhs), lhs, op, rhs_node, sp, value)
            if base.type in ("identifier", "call_expression", "parenthesized_expression") and \
                    self.is_object_node(base):           # obj[i] = v through operator[] (operators.py)
                out, lv, kind = self.subscript_call(lhs)
                if kind != "ref":
                    self.type_err(lhs, f"'{self.quote(lhs)}' is not assignable: its operator[] returns a value")
                for s in out:
                    self.emit_pre(s, sp)
                return self.assign_lvalue(lv, lhs, op, rhs_node, sp, value)
            if base.type == "identifier" and isinstance(self.lookup(self.text(base)), Ref) and \
                    isinstance(self.lookup(self.text(base)).view.type, T.VectorType):
                ref = self.lookup(self.text(base))
                v = self.sem.view_cast(self.ref_view(ref, sp), ref.view.type.elem, None, None, False, sp)
                i = self.index_expr(lhs.child_by_field_name("indices").named_children[0])
                cur = self.sem.view_load(v, i, sp) if op is not None else None
                return self.sem.view_store(v, i, value(cur, v.type), sp)
            if base.type == "call_expression" and self.call_returns(base) == "ref":
                out, lv = self.call_target(base)         # t.frag_at(j)[1] = x: a vector reference
                for s in out:
                    self.emit_pre(s, sp)
                if lv[0] == "loc":
                    return self.component_store(lv[1], lv[2], base, lhs, value, sp)
                if lv[0] == "var" and isinstance(lv[1].type, T.VectorType):
                    return self.vector_assign(ir.Var(lv[1].name, lv[1].type, span=sp), lhs, value, sp)
            return None
        if k == "call_expression":
            fn = lhs.child_by_field_name("function")
            if fn.type == "template_function" and self.text(fn.child_by_field_name("name")).strip() in (
                    "reinterpret_cast", "static_cast", "const_cast"):
                targ = fn.child_by_field_name("arguments").named_children[0]
                decl = targ.child_by_field_name("declarator") if targ.type == "type_descriptor" else None
                if decl is not None and decl.type == "abstract_reference_declarator":
                    target = lhs.child_by_field_name("arguments").named_children[0]
                    t = self.resolve_type(_type_of_descriptor(targ))[0]
                    if self.elements_call(target):
                        mnode, cur = self.elements_of(target)
                        if t != cur.type:
                            self.unsupported(lhs, f"reinterpreting thread_elements() as {getattr(t, 'name', t)}")
                        new = value(cur, cur.type)
                        return self.assign(mnode, None, None, sp, rhs=ir.MatrixFromElements(new, cur.matrix.type,
                                                                                            span=sp))
                    return self.assign(target, op, rhs_node, sp, rhs)
            if self.call_returns(lhs) == "ref":
                out, lv = self.call_target(lhs)
                for s in out:
                    self.emit_pre(s, sp)
                return self.assign_lvalue(lv, lhs, op, rhs_node, sp, value)
            return None
        if k == "pointer_expression" and self.text(lhs).lstrip().startswith("*"):
            return self.struct_copy_through_pointers(lhs, op, rhs_node, sp)
        return None

    def assign_symbol(self, sym, lhs, op, rhs_node, sp, value):
        if isinstance(sym, ir.Var):
            return [ir.Assign(sym, value(ir.Var(sym.name, sym.type, span=sp), sym.type), span=sp)]
        if isinstance(sym, Ref):
            v = self.ref_view(sym, sp)
            zero = ir.Const(0, T.int32, span=sp)
            cur = self.sem.view_load(v, zero, sp) if op is not None else None
            return self.sem.view_store(v, zero, value(cur, v.type), sp)
        if isinstance(sym, StructObj):
            if op is not None:
                return self.compound_operator(sym, lhs, op, rhs_node, sp)
            if "operator=" in self.class_members(sym.cls)["methods"]:
                self.unsupported(lhs, f"{sym.cls.name}::operator= (operator overloading)")
            if rhs_node is not None and rhs_node.type == "initializer_list":
                # p = {a, b}: a temporary built from the list (which may read p), then copied
                out = []
                tmp = self.alloc_object(sym.cls, self.fresh(f"_{sym.cls.name}_tmp"), out, rhs_node)
                out += self.construct(tmp, ("list", rhs_node), rhs_node)
                return out + self.copy_object(sym, tmp, lhs)
            if rhs_node is None or not self.is_object_node(rhs_node):
                self.type_err(lhs, f"'{self.text(lhs)}' is a {sym.cls.name}: assign it another {sym.cls.name}")
            return self.copy_object(sym, self.object_value(rhs_node), lhs)
        if isinstance(sym, PendingPtr):
            if op is not None:
                self.type_err(lhs, f"the pointer '{self.text(lhs)}' is moved before it is set")
            scope = self._scope_holding(lhs, sym)
            return self.set_pointer(scope, sym.name if lhs.type != "identifier" else self.text(lhs), rhs_node,
                                    op, sp)
        if isinstance(sym, Ptr):
            return self.pointer_assign(sym, lhs, op, rhs_node, sp)
        if isinstance(sym, FixedView):
            self.unsupported(lhs, f"moving the pointer '{self.text(lhs)}'")
        if isinstance(sym, ir.Const):
            self.type_err(lhs, f"'{self.text(lhs)}' is a constant and cannot be assigned")
        self.type_err(lhs, f"cannot assign to '{self.text(lhs)}'")

    def _scope_holding(self, lhs, sym):
        """The dict (an object's members, or a scope) that holds pointer ``sym``."""
        if lhs.type == "field_expression":
            obj = self.object_of(lhs.child_by_field_name("argument"))
            return obj.fields
        for sc in reversed(self.scopes):
            if isinstance(sc, dict) and self.text(lhs) in sc:
                return sc
        self.type_err(lhs, f"cannot set '{self.text(lhs)}'")

    def assign_lvalue(self, lv, lhs, op, rhs_node, sp, value):
        if lv[0] == "var":
            return self.assign_symbol(lv[1], lhs, op, rhs_node, sp, value)
        if lv[0] == "obj":
            return self.assign_symbol(lv[1], lhs, op, rhs_node, sp, value)
        v, i = lv[1], lv[2]
        cur = self.sem.view_load(v, i, sp) if op is not None else None
        return self.sem.view_store(v, i, value(cur, v.type), sp)

    def struct_copy_through_pointers(self, lhs, op, rhs_node, sp):
        """``*((threadgroup S*)p) = *((const device S*)q);`` with S a struct: a copy of
        sizeof(S) bytes, as elements of the pointers' own type (MLX's BlockLoader)."""
        arg = lhs.child_by_field_name("argument")
        while arg.type == "parenthesized_expression":
            arg = arg.named_children[-1]
        if arg.type != "cast_expression":
            return None
        tn = arg.child_by_field_name("type")
        inner = tn.child_by_field_name("type") if tn.type == "type_descriptor" else None
        if inner is None:
            return None
        st = self.cxx_type(inner)
        if not isinstance(st, ClassInst):
            return None
        if op is not None or rhs_node is None or rhs_node.type != "pointer_expression":
            self.unsupported(lhs, f"this assignment of a {st.name} through a pointer")
        src = rhs_node.child_by_field_name("argument")
        while src.type == "parenthesized_expression":
            src = src.named_children[-1]
        if src.type != "cast_expression" or self.cxx_type(src.child_by_field_name("type")
                                                          .child_by_field_name("type")) is not st:
            self.unsupported(rhs_node, f"copying a {st.name} from something else than a {st.name} pointer")
        dv = self.pointer(arg.child_by_field_name("value"))
        sv = self.pointer(src.child_by_field_name("value"))
        size = self.sizeof_class(st)
        if dv.elem != sv.elem or size % dv.elem.itemsize:
            self.unsupported(lhs, f"copying a {st.name} between pointers to {dv.elem.name} and {sv.elem.name}")
        n = size // dv.elem.itemsize
        dv, sv = replace(dv, type=dv.elem, inner=()), replace(sv, type=sv.elem, inner=())
        out = []
        for k in range(n):
            i = ir.Const(k, T.int32, span=sp)
            out += self.sem.view_store(dv, i, self.sem.view_load(sv, i, sp), sp)
        return out

    def field_packed(self, owner, f) -> bool:
        """Whether data member ``f`` is declared with a packed vector type (``packed_float3``,
        ``packed_half4``: the components back to back, aligned as one component)."""
        key = ("packed", f.name)
        if key not in owner.cache:
            tn = f.decl.child_by_field_name("type")
            with self.in_ctx(owner.ctx, self.class_scopes(owner), owner.ns):     # the text of its header
                txt = self.text(tn) if tn is not None else ""
            owner.cache[key] = txt.replace(" ", "").removeprefix("metal::").startswith("packed_")
        return owner.cache[key]

    def layout_of(self, t, packed: bool = False, pointer: bool = False):
        """(size, alignment) in bytes of a value of type ``t`` in Metal's layout (the one
        rule ``sizeof``, ``alignof`` and struct members use), or None for a type with no
        layout here: a scalar its size; a vector its size, a 3-vector a 4-vector's, a
        ``packed`` one its components back to back aligned as one; a matrix its columns; a
        class its members (``sizeof_class``); a pointer or reference 8."""
        if pointer or isinstance(t, PtrType):      # (PtrType: a pointer alias, using P = device T*)
            return 8, 8
        if isinstance(t, ClassInst):
            return self.sizeof_class(t), self.alignof_class(t)
        if self.is_metal_matrix(t):
            return t.size, t.align
        if isinstance(t, T.VectorType):
            if packed:
                return t.elem.itemsize * t.n, t.elem.itemsize
            a = t.elem.itemsize * T.padded(t.n)
            return a, a
        if isinstance(t, T.ScalarType):
            return t.itemsize, t.itemsize
        if isinstance(t, ComplexType):          # MLX's complex64_t: struct {float real, imag;}
            return 2 * t.part.itemsize, t.part.itemsize
        return None

    def member_size_align(self, f, owner, t, kinds, what):
        """(size, alignment) in bytes of one element of data member ``f`` of type ``t``."""
        r = self.layout_of(t, isinstance(t, T.VectorType) and self.field_packed(owner, f),
                           bool(kinds) and kinds[0] in ("ptr", "ref"))
        if r is None:
            self.unsupported(f.decl, f"{what} with a {getattr(t, 'name', t)} member")
        return r

    def sizeof_class(self, cls) -> int:
        """sizeof of a class: members laid out in order, each aligned to its size (C's
        rule; a packed vector to its component), the whole rounded up to the largest
        alignment and to ``alignas``."""
        size, align = 0, 1
        for f, owner in self.all_fields(cls):
            t, kinds, dims, _, _ = self.field_info(owner, f)
            s, a = self.member_size_align(f, owner, t, kinds, "sizeof a struct")
            n = 1
            for d in dims:
                n *= d
            size = (size + a - 1) // a * a + s * n
            align = max(align, a)
        align = max(align, self.alignas_of(cls))
        return max(1, (size + align - 1) // align * align)

    def alignof_class(self, cls) -> int:
        a = self.alignas_of(cls)
        for f, owner in self.all_fields(cls):
            t, kinds, _, _, _ = self.field_info(owner, f)
            if isinstance(t, (T.ScalarType, T.VectorType, ClassInst)) or self.is_metal_matrix(t) or \
                    kinds and kinds[0] in ("ptr", "ref"):
                a = max(a, self.member_size_align(f, owner, t, kinds, "alignof a struct")[1])
        return a

    def alignas_of(self, cls) -> int:
        for c in cls.node.children:
            if c.type == "alignas_qualifier" or self.text(c).startswith("alignas"):
                arg = c.named_children[-1] if c.named_children else None
                if arg is not None:
                    with self.in_ctx(cls.ctx, self.class_scopes(cls), cls.ns):
                        v = const_value(self.expr(arg))
                    return int(v or 1)
        return 1

    # -- expressions ------------------------------------------------------------------------
    def member_value(self, node):
        """``obj.member`` as a value, or None when ``node`` is not a member of an object."""
        sym = self.member_symbol(node)
        if sym is None:
            return None
        sp = self.sp(node)
        if isinstance(sym, (ir.Var, Ref, ir.Const)):
            return self.symbol_value(sym, sp)
        if isinstance(sym, StructObj):
            return self.convert_object(sym, node)
        self.type_err(node, f"'{self.text(node)}' is an array or a pointer; index it")

    def object_as_value(self, sym, node):
        """An object (or unset pointer) named where a value is expected."""
        if isinstance(sym, StructObj):
            return self.convert_object(sym, node)
        self.type_err(node, f"'{self.text(node)}' is a pointer; index it (p[i]) or dereference it (*p)")

    def cxx_expr(self, node):
        """Expressions only C++ has: ``T{...}`` literals, variable templates (``is_same_v<A, B>``);
        None for the others."""
        k = node.type
        sp = self.sp(node)
        if k == "compound_literal_expression":
            tn = node.child_by_field_name("type")
            t, _ = self.resolve_type(tn)
            items = list(node.child_by_field_name("value").named_children)
            if isinstance(t, ClassInst):
                return self.convert_object(self.object_value(node), node)
            if isinstance(t, T.VectorType):
                args = [self.expr(x) for x in items] or [self.sem.const(0, t.elem, sp)]
                return self.sem.vector(t, args, sp)
            if isinstance(t, T.ScalarType):
                return self.sem.cast(t, self.expr(items[0]), sp) if items else self.sem.const(0, t, sp)
            self.unsupported(node, f"the literal '{self.quote(node)}'")
        if k == "template_function":
            v = self.cxx_value(node)
            if v is not None:
                return v
        return None

    @staticmethod
    def reference_cast(targ) -> bool:
        """Whether a cast's type is a reference type (``thread T&``)."""
        d = targ.child_by_field_name("declarator") if targ.type == "type_descriptor" else None
        return d is not None and d.type == "abstract_reference_declarator"

    def ref_cast_value(self, targ, arg, node):
        """``reinterpret_cast<thread T&>(x)`` read: ``x`` itself when it has type T."""
        t = self.resolve_type(_type_of_descriptor(targ))[0]
        v = self.value_expr(arg)
        if v.type != t:
            self.unsupported(node, f"reinterpreting a {getattr(v.type, 'name', v.type)} as a "
                                   f"{getattr(t, 'name', t)} (a reference cast)")
        return v

    def ref_vector_element(self, sym, node):
        """``r[i]`` of a reference to a vector (a parameter ``thread float2& r``)."""
        sp = self.sp(node)
        v = self.sem.view_cast(self.ref_view(sym, sp), sym.view.type.elem, None, None, False, sp)
        return self.sem.view_load(v, self.index_expr(node.child_by_field_name("indices").named_children[0]), sp)

    # -- memory ------------------------------------------------------------------------------
    def member_rank(self, node):
        """``ptr_rank`` of a member (an array or pointer member): None otherwise."""
        try:
            sym = self.probe(lambda: self.member_symbol(node))
        except Exception:
            return None
        return self.symbol_rank(sym)

    @staticmethod
    def symbol_rank(sym):
        if isinstance(sym, Buf):
            return len(sym.shape) - 1 if sym.shape else 0
        if isinstance(sym, Ptr):
            return len(sym.view.inner)
        if isinstance(sym, FixedView):
            return len(sym.view.inner)
        if isinstance(sym, (PendingPtr, NullPtr)):
            return 0
        return None

    def cxx_pointer(self, node):
        """The view of a member pointer/array or of a call returning a pointer; None otherwise."""
        if node.type == "field_expression":
            sym = self.member_symbol(node)
            if sym is not None:
                return self.sym_view(sym, node)
        if node.type == "call_expression" and self.call_returns(node) == "ptr":
            out, v = self.call_target(node)
            for s in out:
                self.emit_pre(s, self.sp(node))
            return v
        return None

    def cxx_sym_view(self, sym, node):
        if isinstance(sym, FixedView):
            return replace(sym.view)
        if isinstance(sym, PendingPtr):
            self.type_err(node, f"the pointer member '{sym.name}' is used before it is set")
        return None

    def cxx_lvalue(self, node):
        """``lvalue`` of a member or of a call returning a reference; None otherwise."""
        if node.type == "field_expression":
            sym = self.member_symbol(node)
            if isinstance(sym, ir.Var):
                return ("var", sym)
            if isinstance(sym, Ref):
                return ("loc", self.ref_view(sym, self.sp(node)), ir.Const(0, T.int32))
            if isinstance(sym, StructObj):
                return ("obj", sym)
            return None
        if node.type == "call_expression" and self.call_returns(node) == "ref":
            out, lv = self.call_target(node)
            for s in out:
                self.emit_pre(s, self.sp(node))
            return lv
        return None
