"""MSL statements: blocks, declarations (locals, arrays, pointers, constants),
expression statements and assignments, ``if``/``for``/``while``/``do``, ``return``."""
from __future__ import annotations

import re
from dataclasses import replace

from ... import ir
from ... import types as T
from ...errors import KernelNameError, KernelSyntaxError, error_net
from ...semantics.folding import coerce_value, const_value, fold
from .printing import is_logger_decl, print_call
from .struct_views import StructPtr
from .symbols import Buf, NullPtr, Ptr, Ref, _SPACES, _TypeName
from .memory import BufferChoice
from .complex64 import CplxVar
from .cxx_decls import PtrType
from ...semantics import ComplexType, is_complex


class StatementsMixin:
    """Statements: a part of :class:`~metalbench.frontend.msl.Translator`."""

    def block(self, node) -> list[ir.Stmt]:
        self.scopes.append({})
        try:
            return self.stmt_list(node.named_children)
        finally:
            self.scopes.pop()

    def stmt_list(self, items) -> list[ir.Stmt]:
        """The statements of a block. A statement that makes a pointer into one of two
        buffers depending on a run-time condition (``(c ? FBW : GBW) + off``, or an if/else
        setting a pointer declared without a value) splits the rest of the block: it is
        translated once for each buffer, under ``if (c)`` (``buffer_choice.py``)."""
        out = []
        for i, c in enumerate(items):
            before = dict(self.scopes[-1])
            split = self.split_on_pointer_if(c, items[i + 1:], before) if c.type == "if_statement" else None
            if split is not None:            # if (c) p = A + i; else p = B + j;
                return out + split
            try:
                out.extend(self.stmt(c))
            except BufferChoice as e:
                split = self.split_on_buffer(e, items[i:], before)
                if split is None:
                    raise
                return out + split
        return out

    def body_of(self, node) -> list[ir.Stmt]:
        if node.type == "compound_statement":
            return self.block(node)
        self.scopes.append({})
        try:
            return self.stmt(node)
        finally:
            self.scopes.pop()

    def with_pre(self, fn):
        """Run ``fn`` collecting statements that must precede its result."""
        saved = self.pre
        self.pre = []
        try:
            r = fn()
            return self.pre, r
        finally:
            self.pre = saved

    def probe(self, fn):
        """``fn()`` run only to inspect what it translates to (a symbol, a rank): the
        statements it emits are dropped, so a query never runs an expression's side
        effects (``p[k++].m`` is translated again, for real, where it is used)."""
        return self.with_pre(fn)[1]

    @error_net("sp")
    def stmt(self, node) -> list[ir.Stmt]:
        k = node.type
        sp = self.sp(node)
        if k == "comment":
            return []
        if k == "return_statement" and self.inline_stack:
            return self.inline_return(node)          # a member function translated inline (cxx_calls)
        if k == "compound_statement":
            return self.block(node)
        if k == "attributed_statement" and node.named_children:
            # [[unroll]], [[likely]], [[clang::...]] on a statement: hints (C++ ignores those it
            # does not know); the statement runs as written
            return self.stmt(node.named_children[-1])
        if self.local_type_definition(node):
            return []
        if k in ("declaration", "expression_statement", "return_statement", "if_statement", "while_statement",
                 "for_statement", "do_statement", "switch_statement"):
            node = self.value_parens(node)           # `s * (ODIM) + i` misread as a cast (expressions)
        if k == "declaration":
            tn = node.child_by_field_name("type")
            if tn is not None and tn.type in ("struct_specifier", "class_specifier") and \
                    tn.child_by_field_name("body") is not None:
                self.declare_class(tn, [], None)     # struct S { ... } s;: the class, then the variable
            pre, st = self.with_pre(lambda: self.declaration(node))
            return pre + st
        if k == "expression_statement":
            if not node.named_children or self.void_cast(node.named_children[0]):
                return []
            pre, st = self.with_pre(lambda: self.expr_stmt(node.named_children[0]))
            return pre + st
        if k == "if_statement" and self.is_if_constexpr(node):
            return self.if_constexpr(node)             # only the branch taken is translated (cxx_assign)
        if k == "if_statement":
            cnode = node.child_by_field_name("condition")
            cexpr = cnode.child_by_field_name("value") or cnode.named_children[-1]
            if cnode.child_by_field_name("initializer") is not None or cexpr.type == "declaration":
                self.unsupported(cnode, "a declaration in an if condition")
            pre, cond = self.with_pre(lambda: self.sem.to_bool(self.expr(cexpr)))
            alt = node.child_by_field_name("alternative")
            if not pre and isinstance(cond, ir.Const):
                # a constant condition (a constexpr flag, as MLX's kernels test their function
                # constants: if (has_mask) { mask += ...; }): only the side that runs is
                # translated, so the other may use what this launch does not have (a null pointer)
                if cond.value:
                    return self.body_of(node.child_by_field_name("consequence"))
                return self.body_of(alt.named_children[-1] if alt.type == "else_clause" else alt) if alt else []
            then = self.body_of(node.child_by_field_name("consequence"))
            orelse = []
            if alt is not None:
                inner = alt.named_children[-1] if alt.type == "else_clause" else alt
                orelse = self.body_of(inner)
            return pre + [ir.If(cond, then, orelse, span=sp)]
        if k == "for_statement":
            return self.for_stmt(node)
        if k == "for_range_loop":
            return self.range_for(node)
        if k == "while_statement":
            cnode = node.child_by_field_name("condition")
            pre, cond = self.with_pre(lambda: self.sem.to_bool(self.expr(cnode.named_children[-1])))
            body = self.body_of(node.child_by_field_name("body"))
            if pre:
                brk = ir.If(self.sem.unop("!", cond, cond.span), [ir.Break(span=sp)], span=sp)
                return [ir.While(ir.Const(True, T.bool_), pre + [brk] + body, span=sp)]
            return [ir.While(cond, body, span=sp)]
        if k == "do_statement":
            body = self.body_of(node.child_by_field_name("body"))
            cnode = node.child_by_field_name("condition")
            pre, cond = self.with_pre(lambda: self.sem.to_bool(self.expr(cnode.named_children[-1])))
            if pre:
                # do { body } while (f(&x)): while (true) { body; f(&x); if (!c) break; }, the
                # condition's statements run after the body (a `continue` would skip them)
                if _jumps(body, ir.Continue):
                    self.unsupported(cnode, "a side effect in a do-while condition of a loop with 'continue'")
                brk = ir.If(self.sem.unop("!", cond, cond.span), [ir.Break(span=sp)], span=sp)
                return [ir.While(ir.Const(True, T.bool_), body + pre + [brk], span=sp)]
            return [ir.While(cond, body, do_while=True, span=sp)]
        if k == "break_statement":
            return [ir.Break(span=sp)]
        if k == "continue_statement":
            return [ir.Continue(span=sp)]
        if k == "return_statement":
            vals = node.named_children
            if self.ret_type is None:
                if vals:
                    self.type_err(node, "a kernel (or void function) cannot return a value")
                return [ir.Return(span=sp)]
            if self.ret_type == "auto":      # a deduced return type (header.py): the first return's
                pre, v = self.with_pre(lambda: self.expr(vals[0])) if vals else ([], None)
                self.ret_type = v.type if vals else None
                return pre + [ir.Return(v, span=sp)]
            if not vals:
                self.type_err(node, "this function must return a value")
            if isinstance(self.ret_type, ComplexType):      # returned as its parts, a float2 (complex64.py)
                pre, v = self.with_pre(lambda: self.complex_return(vals[0], sp))
                return pre + [ir.Return(v, span=sp)]
            pre, v = self.with_pre(lambda: self.sem.convert(self.value_as(vals[0], self.ret_type), self.ret_type))
            return pre + [ir.Return(v, span=sp)]
        if k == "alias_declaration":       # using T4 = vec<T, 4>;  using P = device float*;
            self.scopes[-1][self.text(node.child_by_field_name("name"))] = _TypeName(self.alias_type(node))
            return []
        if k == "type_definition":         # typedef float2 F2;  typedef device float* P;
            for nm, t in self.typedef_names(node):
                self.scopes[-1][nm] = _TypeName(t)
            return []
        if k in ("using_declaration", "namespace_alias_definition"):   # using namespace metal;
            return []
        if k == "switch_statement":
            return self.switch(node)
        if k == "static_assert_declaration":
            return self.static_assert(node)
        if k == "goto_statement":
            self.unsupported(node, f"'{self.text(node).rstrip(';').strip()}' (goto)")
        if k == "labeled_statement":         # a goto's target: its label names it
            label = node.child_by_field_name("label")
            self.unsupported(label or node, f"the label '{self.text(label) if label else ''}:' (a goto target)")
        if k in ("try_statement", "throw_statement"):
            self.unsupported(node, f"'{k.replace('_statement', '')}'")
        if k == "function_definition":
            self.unsupported(node, "a function defined inside the body (put it in header=)")
        self.unsupported(node, f"'{self.quote(node)}'")

    def static_assert(self, node):
        """``static_assert(cond, "message")``: checked now, as the compiler does."""
        cond = node.child_by_field_name("condition")
        v = const_value(self.sem.to_bool(self.expr(cond)))
        if v is None:
            self.type_err(cond, "static_assert needs a compile-time constant condition")
        if not v:
            msg = node.child_by_field_name("message")
            self.type_err(node, "static_assert failed" + (f": {self.text(msg)}" if msg is not None else ""))
        return []

    def new_var(self, base, t, init, sp, out):
        v = ir.Var(self.fresh(base), t, span=sp)
        out.append(ir.Decl(v, init, span=sp))
        return v

    def declaration(self, node, top=False) -> list[ir.Stmt]:
        if is_logger_decl(self, node):      # os_log logger(...): its calls become prints
            return []
        tnode = node.child_by_field_name("type")
        quals = self.quals_before(node.start_byte, tnode.start_byte)
        space = next((q for q in quals if q in _SPACES), None)
        is_const = any(c.type == "type_qualifier" and self.text(c) in ("const", "constexpr")
                       for c in node.children) or "constexpr" in quals
        base, atomic = self.resolve_type(tnode)
        if base is None:
            self.type_err(node, "a variable cannot be void")
        if self.has_matrices:
            mt = self.declared_matrix(node, base)
            if mt is not None:
                return self.matrix_declaration(node, mt, space, top)   # Metal's matrices (metal_matrices)
        if self.declares_objects(node, base):
            return self.object_declaration(node, base, space)      # C++ objects (cxx_objects)
        out = []
        for d in node.children_by_field_name("declarator"):
            out.extend(self.declarator(d, base, atomic, space, is_const, top, node))
        return out

    def declarator(self, d, base, atomic, space, is_const, top, decl_node):
        sp = self.sp(d)
        init = None
        if d.type == "init_declarator":
            init = d.child_by_field_name("value")
            d = d.child_by_field_name("declarator")
        if d.type == "array_declarator" and base == "auto":
            self.type_err(d, f"'{self.quote(d)}': an array cannot be declared auto (C++ deduces no array type)",
                          hint="name the element type: float a[4]")
        if d.type == "array_declarator" and isinstance(base, (T.VectorType, ComplexType)):
            return self.vector_array_decl(d, init, base, space, top, sp)
        if d.type == "array_declarator":
            dims = []
            inner = d
            while inner.type == "array_declarator":
                size = inner.child_by_field_name("size")
                if size is None:
                    if init is None or inner.child_by_field_name("declarator").type == "array_declarator":
                        self.type_err(inner, "array size missing")
                    dims.insert(0, None)
                else:
                    v = const_value(self.expr(size))
                    if v is None or int(v) <= 0:
                        self.type_err(size, "array sizes must be positive compile-time constants",
                                      hint="use a template parameter or a constant from the header")
                    dims.insert(0, int(v))
                inner = inner.child_by_field_name("declarator")
            name = self.text(inner)
            values = None
            runtime = []
            if init is not None:
                values, runtime = self.init_list(init, base)
                if dims[0] is None:
                    inner_n = 1
                    for x in dims[1:]:
                        inner_n *= x
                    dims[0] = (len(values) + inner_n - 1) // inner_n
                total = 1
                for x in dims:
                    total *= x
                values = values + [coerce_value(0, base)] * (total - len(values))
            if runtime and (top or space == "constant"):
                self.type_err(init, "constant array initialisers must be compile-time constants")
            if top or (space == "constant"):
                gname = self.fresh(name) if not top else name
                if values is None:
                    self.type_err(d, "a constant array needs an initialiser")
                g = ir.ArrayDecl(gname, "constant", base, tuple(dims), values, span=sp)
                self.globals.append(g)
                self.used_names.add(gname)
                self.scopes[-1][name] = Buf(gname, base, "constant", tuple(dims), const=True)
                return []
            sp_name = space or "thread"
            if sp_name == "device":
                self.type_err(d, "device arrays cannot be declared in a kernel")
            pooled = None if atomic else self.pooled_array(name, base, dims, sp_name, values, runtime, d, sp)
            if pooled is not None:       # a pointer moves between it and other arrays (array_pools.py)
                return pooled
            irname = self.fresh(name)
            a = ir.ArrayDecl(irname, sp_name, base, tuple(dims), values, span=sp)
            self.scopes[-1][name] = Buf(irname, base, sp_name, tuple(dims), atomic=atomic)
            if runtime:
                if sp_name != "thread":
                    self.type_err(d, f"{sp_name} array initialisers must be compile-time constants")
                # {x[i], 1.0f}: the constant parts as the initialiser, then a store per run-time value
                return [a] + [ir.Store(irname, ir.Const(k, T.int32, span=sp), v, span=sp) for k, v in runtime]
            if sp_name == "threadgroup":
                # one allocation per threadgroup for the whole launch (declared in a loop, it keeps
                # its values from one iteration to the next), hoisted before the views of it
                if not self.in_kernel:
                    self.unsupported(d, "a threadgroup array declared in a device function")
                if values is not None:
                    self.type_err(d, "threadgroup arrays cannot have initialisers (Metal)")
                self.tg_arrays.append(a)
                return []
            return [a]
        if d.type == "pointer_declarator":
            name_n = d.child_by_field_name("declarator")
            if name_n.type != "identifier":
                self.unsupported(d, "this pointer declaration (a pointer to a pointer, or an array of pointers)")
            if init is None:             # set later: its first assignment fixes the buffer
                return self.pending_pointer(self.text(name_n), base, space, is_const, sp)
            return self.pointer_decl(self.text(name_n), init, base, space, is_const, sp, d)
        if d.type == "reference_declarator":
            return self.reference_decl(d, init, base, sp, is_const)
        if isinstance(base, PtrType) and d.type == "identifier":    # P p = x + k; (using P = device float*)
            # (a const before P makes the pointer const, not its data: the data's constness is P's)
            if init is None:
                return self.pending_pointer(self.text(d), base.elem, base.space, base.const, sp)
            return self.pointer_decl(self.text(d), init, base.elem, base.space, base.const, sp, d)
        if d.type == "function_declarator" and not top and init is None and \
                d.child_by_field_name("declarator").type == "identifier" and \
                d.child_by_field_name("parameters").named_children and \
                (isinstance(base, (T.ScalarType, T.VectorType)) and not isinstance(base, ComplexType)):
            # `float3 p(a, b, c);`: C++'s most vexing parse (the grammar reads a function
            # declaration; in a body it is a variable directly initialised, as C++ reads it there)
            name = self.text(d.child_by_field_name("declarator"))
            args = self.ctor_args(d.child_by_field_name("parameters").named_children)
            for a in args:
                if a.expr is None:
                    self.type_err(a.node, f"'{self.quote(a.node)}' is not a value: {getattr(base, 'msl', base)} "
                                          f"{name}(...) takes values")
            val = self.sem.convert(self.direct_init(base, [a.expr for a in args], d), base)
            if is_const and isinstance(fold(val), ir.Const):
                self.scopes[-1][name] = fold(val)
                return []
            v = ir.Var(self.fresh(name), base, span=sp)
            self.scopes[-1][name] = v
            return [ir.Decl(v, val, span=sp)]
        if d.type != "identifier":   # a header's function constant declares a name; the rest: refused
            return self.function_constant(d, top)
        name = self.text(d)
        if space == "threadgroup" and not top:
            return self.threadgroup_scalar(name, base, init, atomic, sp, d)
        if atomic:
            self.unsupported(d, "an atomic local variable")
        if isinstance(base, ComplexType):            # complex64_t: two float locals (complex64.py)
            return self.complex_decl(name, init, top, d, sp)
        t = base
        val = None
        if t == "auto" and init is not None and init.type == "lambda_expression":
            return self.declare_lambda(name, init, sp)
        if t == "auto" and init is not None and self.is_struct_pointer_node(init):    # auto p = (const device S*)w;
            return self.struct_pointer_decl(name, init, self.struct_pointer(init)[0], sp, d)
        if t == "auto" and init is not None and self.ptr_rank(init) is not None:
            return self.pointer_decl(name, init, None, None, False, sp, d)
        if init is not None:
            if init.type == "initializer_list":
                if isinstance(t, T.VectorType):
                    args = [self.expr(c) for c in init.named_children]
                    val = self.vec_cons(t, args, init)
                else:
                    items = init.named_children
                    val = self.sem.convert(self.expr(items[0]), t) if items else self.sem.const(0, t, sp)
            elif init.type == "argument_list":  # float x(1.0f); float3 p(1.0f, y, 2);
                val = self.direct_init(t, [self.expr(c) for c in init.named_children], init)
            else:
                val = self.expr(init) if t == "auto" else self.value_as(init, t)
            if t == "auto" and is_complex(val):
                return self.complex_local(name, val, sp)
            if t == "auto":
                t = val.type
            val = self.sem.convert(val, t)
        elif t == "auto":
            self.type_err(d, "'auto' needs an initialiser")
        if top or space == "constant" or is_const:
            # a const local with a constant value is a constant expression (array sizes,
            # template arguments), as in C++
            c = fold(val) if val is not None else None
            if top:
                if not isinstance(c, ir.Const):
                    self.type_err(d, "header constants must have a compile-time constant value")
                self.global_syms.ns.members[name] = c     # its namespace's (the global one: global_syms)
                return []
            if isinstance(c, ir.Const):
                self.scopes[-1][name] = c
                return []
        irname = self.fresh(name)
        v = ir.Var(irname, t, span=sp)
        self.scopes[-1][name] = v
        return [ir.Decl(v, val, span=sp)]

    def direct_init(self, t, args, node):
        """The value of ``T x(args...);`` (direct initialisation, which is ``T(args...)``): a
        vector's constructor (``float3 p(a, b, c)``; one scalar fills every component), a
        matrix's, or a scalar from its one value (converted by the caller)."""
        if isinstance(t, T.VectorType):
            return self.vec_cons(t, args, node)
        if isinstance(t, T.MatrixType):
            return self.matrix_construct(t, args, node)
        if len(args) != 1:
            self.type_err(node, f"a {getattr(t, 'msl', t)} is initialised from one value, got {len(args)}")
        return args[0]

    def reference_decl(self, d, init, base, sp, is_const=False):
        """``device float& r = out[i];`` (an element: its position fixed now),
        ``float& r = a;`` (another name for a local variable) or ``const uint& n =
        threads_per_threadgroup.y;`` (a const reference to a value nothing changes: a copy)."""
        name_n = d.named_children[-1]
        if name_n.type != "identifier" or init is None:
            self.unsupported(d, "this reference declaration")
        name = self.text(name_n)
        if self.elements_call(init):
            return self.elements_ref_decl(name, init, sp)
        lv = self.lvalue(init)
        if lv is None:
            return self.const_ref_copy(d, name, init, base, sp, is_const)
        if lv[0] == "var":
            if base != "auto" and lv[1].type != base:
                self.type_err(d, f"{getattr(base, 'msl', base)}& cannot refer to a "
                                   f"{getattr(lv[1].type, 'msl', lv[1].type)} (a reference has the type of what it refers to)")
            self.scopes[-1][name] = lv[1]
            return []
        _, v, i = lv
        return self.element_ref(name, base, v, i, d, sp)

    def element_ref(self, name, base, v, i, d, sp) -> list:
        """``name`` declared (in the innermost scope) as a reference of type ``base`` (or
        ``auto``) to element ``i`` of view ``v``, its position fixed now: the declaration of
        the offset it holds. ``d`` (the declarator) is where a type mismatch is reported."""
        if base != "auto" and v.type != base:
            self.type_err(d, f"{getattr(base, 'msl', base)}& cannot refer to {getattr(v.type, 'msl', v.type)} "
                               "data (a reference has the type of what it refers to)")
        at = self.sem.view_offset(v, i, sp)
        off = ir.Var(self.fresh(name + "_at"), T.int64, span=sp)
        self.scopes[-1][name] = Ref(replace(at, offset=off))
        return [ir.Decl(off, self.sem.convert(at.offset, T.int64, sp), span=sp)]

    def element_member_assign(self, base, comps, op, value, lhs, sp):
        """``p[i].x = v``, ``vals[k].xy += w``: stores to the components of a vector element."""
        v, i = self.location(base)
        return self.members_store(v, i, base, comps, value, lhs, sp)

    def members_store(self, v, i, base, comps, value, lhs, sp):
        """Store to the components ``comps`` of the vector ``v[i]``."""
        if v.width == 1:
            self.type_err(lhs, f"'{self.quote(base)}' is a scalar; it has no member '{comps}'")
        cur = self.sem.component(self.sem.view_load(v, i, sp), comps, sp)
        newv = self.sem.once(value(cur, cur.type), sp)
        from dataclasses import replace as _r
        flat = _r(v, type=v.elem, packed=True, inner=())
        at = self.sem.once(self.sem.binop("*", self.sem.index(i, sp), ir.Const(v.step, T.int32), sp), sp) \
            if v.step != 1 else i
        out = []
        for j, c in enumerate(cur.components if isinstance(cur, ir.Swizzle) else comps):
            k = T.COMPONENTS.index(c)
            part = newv if len(comps) == 1 else self.sem.vector_index(newv, j, sp)
            out.extend(self.sem.view_store(flat, self.sem.binop("+", at, ir.Const(k, T.int32), sp), part, sp))
        return out

    def element_component_assign(self, lhs, value, sp):
        """``vals[j][c] = x`` (also ``+=`` ...): component ``c`` of a vector element of an
        array or buffer, stored in place (the storage is the components, so a run-time ``c``
        is an offset)."""
        base = lhs.child_by_field_name("argument")
        v, i = self.location(base)
        return self.component_store(v, i, base, lhs, value, sp)

    def component_store(self, v, i, base, lhs, value, sp):
        """Store ``value(current, elem)`` to component ``lhs``'s index of the vector ``v[i]``."""
        inode = lhs.child_by_field_name("indices").named_children[0]
        if v.width == 1 or v.sub is not None:
            self.type_err(base, f"'{self.quote(base)}' is not a vector: it has no components to index")
        ce = self.sem.index(self.expr(inode), sp)
        c = const_value(ce)
        if c is not None and not 0 <= int(c) < v.width:
            self.type_err(inode, f"index {int(c)} is out of range for {v.type.name}")
        flat = replace(v, type=v.elem, packed=True, inner=())
        at = self.sem.index(i, sp) if v.step == 1 else self.sem.binop("*", self.sem.index(i, sp),
                                                                        ir.Const(v.step, T.int32), sp)
        at = self.sem.once(self.sem.binop("+", at, ce, sp), sp)
        cur = self.sem.view_load(flat, at, sp)
        return self.sem.view_store(flat, at, value(cur, v.elem), sp)

    def vector_assign(self, var, lhs, value, sp):
        """``v[i] = x`` (also ``+=`` ...) on a vector variable: the vector rebuilt with
        component ``i`` replaced (selected per component for a run-time ``i``)."""
        vt = var.type
        inode = lhs.child_by_field_name("indices").named_children[0]
        cur = self.vector_element(var, inode, sp)
        newv = self.sem.once(value(cur, vt.elem), sp)
        ie = self.sem.index(self.expr(inode), sp)
        i = const_value(ie)
        comps = []
        for c in range(vt.n):
            old = self.sem.vector_index(var, c, sp)
            if i is not None:
                comps.append(newv if int(i) == c else old)
            else:
                comps.append(self.sem.select(self.sem.binop("==", ie, ir.Const(c, T.int32, span=sp), sp),
                                             newv, old, sp))
        if i is not None and not 0 <= int(i) < vt.n:
            self.type_err(inode, f"index {int(i)} is out of range for {vt.name}")
        return [ir.Assign(var, self.sem.vector(vt, comps, sp), span=sp)]

    def pointer_assign(self, ptr, lhs, op, rhs_node, sp):
        """``p = q``, ``p += n``, ``p -= n``, ``++p`` on a pointer variable."""
        if ptr.off is None:
            self.type_err(lhs, f"'{self.text(lhs)}' is an array; it cannot be assigned")
        if op is None:
            if self.ptr_rank(rhs_node) is None:
                self.type_err(rhs_node, f"'{self.quote(rhs_node)}' is not a pointer into a buffer or array")
            v = self.pointer(rhs_node)
            if v.buf != ptr.view.buf or v.type != ptr.view.type or v.inner != ptr.view.inner:
                self.type_err(lhs, f"'{self.text(lhs)}' points into '{ptr.view.buf}'; it cannot be made to "
                              f"point into '{v.buf}'" + (" (another element type)" if v.buf == ptr.view.buf else ""),
                              hint="metalbench needs each pointer's target buffer known when the kernel is "
                                   "compiled; use a second pointer")
            return [ir.Assign(ptr.off, self.sem.convert(v.offset, T.int64, sp), span=sp)]
        if op not in ("+", "-"):
            self.type_err(lhs, f"the {op}= operator does not apply to a pointer")
        k = self.expr(rhs_node) if rhs_node is not None else ir.Const(1, T.int32, span=sp)
        cur = self.sym_view(ptr, lhs)
        moved = self.sem.view_offset(cur, k, sp, op)
        return [ir.Assign(ptr.off, self.sem.convert(moved.offset, T.int64, sp), span=sp)]

    def init_list(self, node, elem):
        """The flat values of ``{...}``: (constant values, with 0 where a value is only known
        at run time; [(position, expression)] of those)."""
        if node.type != "initializer_list":
            self.type_err(node, "array initialisers are {...} lists")
        vals, runtime = [], []
        for c in node.named_children:
            if c.type == "initializer_list":
                sub, rt = self.init_list(c, elem)
                runtime.extend((k + len(vals), v) for k, v in rt)
                vals.extend(sub)
                continue
            e = self.sem.convert(self.expr(c), elem)
            v = const_value(e)
            if v is None:
                runtime.append((len(vals), e))
                v = coerce_value(0, elem)
            vals.append(v)
        return vals, runtime

    def expr_stmt(self, node) -> list[ir.Stmt]:
        k = node.type
        sp = self.sp(node)
        if k == "comma_expression":
            return self.expr_stmt(node.child_by_field_name("left")) + \
                self.expr_stmt(node.child_by_field_name("right"))
        if k == "parenthesized_expression":
            return self.expr_stmt(node.named_children[0])
        if k == "conditional_expression":     # c ? f(a) : g(b); as a statement: an if (void sides too)
            pre, c = self.with_pre(lambda: self.sem.to_bool(self.expr(node.child_by_field_name("condition"))))
            sides = [self.with_pre(lambda f=f: self.expr_stmt(node.child_by_field_name(f)))
                     for f in ("consequence", "alternative")]
            return pre + [ir.If(c, sides[0][0] + sides[0][1], sides[1][0] + sides[1][1], span=sp)]
        if k == "assignment_expression":
            op = self.text(node.child_by_field_name("operator"))
            return self.assign(node.child_by_field_name("left"), op[:-1] or None,
                               node.child_by_field_name("right"), sp)
        if k == "update_expression":
            op = "+" if "++" in self.text(node) else "-"
            return self.assign(node.child_by_field_name("argument"), op, None, sp)
        if k == "call_expression":
            p = print_call(self, node)        # printf, os_log: metalbench/frontend/msl/printing.py
            if p is not None:
                return [p]
            fname = self.callee_name(node.child_by_field_name("function"))
            if fname in ("threadgroup_barrier", "simdgroup_barrier"):
                # mem_flags::mem_device | mem_flags::mem_threadgroup: every flag named
                flags = tuple(dict.fromkeys(
                    f for a in node.child_by_field_name("arguments").named_children
                    for f in re.findall(r"\bmem_(?:none|device|threadgroup|texture|threadgroup_imageblock|object_data)\b",
                                        self.text(a))))
                return [ir.Barrier(fname.split("_")[0], flags or ("mem_none",), span=sp)]
            if fname in ("atomic_thread_fence", "metal::atomic_thread_fence"):
                return [self._fence(node, sp)]
            e = self.expr(node, stmt=True)
            return [ir.ExprStmt(e, span=sp)] if e is not None else []
        e = self.expr(node)
        return [ir.ExprStmt(e, span=sp)]

    def _fence(self, node, sp) -> ir.Fence:
        """``atomic_thread_fence(flags, order[, scope])`` (scope: thread_scope_device by default)."""
        args = [self.text(a) for a in node.child_by_field_name("arguments").named_children]
        if not 2 <= len(args) <= 3:
            raise KernelSyntaxError("atomic_thread_fence takes (mem_flags, memory_order[, thread_scope])", sp,
                                    hint="atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, "
                                         "thread_scope_device)")
        flags = tuple(dict.fromkeys(re.findall(r"\bmem_(?:none|device|threadgroup|texture)\b", args[0])))
        order = re.search(r"\bmemory_order_(relaxed|acquire|release|acq_rel|seq_cst)\b", args[1])
        scope = re.search(r"\bthread_scope_(device|threadgroup|simdgroup)\b", args[2]) if len(args) > 2 else None
        if order is None or (len(args) > 2 and scope is None):
            raise KernelSyntaxError(f"atomic_thread_fence({', '.join(args)}): unknown memory order or thread scope",
                                    sp, hint="memory_order_seq_cst (or _relaxed, _acquire, _release, _acq_rel); "
                                             "thread_scope_device, _threadgroup or _simdgroup")
        return ir.Fence(tuple(f for f in flags if f != "mem_none") or ("mem_none",), order.group(0),
                        scope.group(1) if scope else "device", span=sp)

    def assign(self, lhs, op, rhs_node, sp, rhs=None) -> list[ir.Stmt]:
        """``lhs op= rhs`` (op None: plain assignment; rhs_node None: ++/--)."""
        def value(cur, t):
            if op is not None and isinstance(t, ComplexType):
                self.complex_compound_check(op if rhs_node is not None or rhs is not None else op * 2, lhs)
            r = rhs if rhs is not None else (self.assigned_value(rhs_node, t) if rhs_node is not None
                                             else ir.Const(1, T.int32, span=sp))
            if op is None:
                return self.sem.convert(r, t)
            return self.sem.convert(self.binop(op, cur, r, lhs), t)
        k = lhs.type
        if k == "parenthesized_expression":
            return self.assign(lhs.named_children[0], op, rhs_node, sp, rhs)
        if self.has_matrices and rhs is None:
            r = self.matrix_assign(lhs, op, rhs_node, sp)   # Metal's matrices (metal_matrices)
            if r is not None:
                return r
        r = self.cxx_assign(lhs, op, rhs_node, sp, rhs)      # objects, their members (cxx_assign)
        if r is not None:
            return r
        if k in ("subscript_expression", "field_expression") and self.is_elements(lhs.child_by_field_name("argument")):
            r = self.matrix_element_assign(lhs, op, rhs_node, sp, rhs)     # e[0] = v; e.x = v;
            if r is not None:
                return r
        if k == "identifier":
            name = self.text(lhs)
            sym = self.lookup(name)
            if isinstance(sym, CplxVar):
                return self.complex_assign(sym, lhs, op, value, sp)
            if isinstance(sym, ir.Var):
                if sym.name in self.kernel_syms and self.in_kernel and self.kernel_syms.get(sym.name) is sym:
                    self.type_err(lhs, f"'{name}' is a scalar input (constant T&) and cannot be assigned")
                return [ir.Assign(sym, value(sym, sym.type), span=sp)]
            if isinstance(sym, Ptr):
                return self.pointer_assign(sym, lhs, op, rhs_node, sp)
            if isinstance(sym, Ref):
                v = self.ref_view(sym, sp)
                zero = ir.Const(0, T.int32, span=sp)
                cur = self.sem.view_load(v, zero, sp) if op is not None else None
                return self.sem.view_store(v, zero, value(cur, v.type), sp)
            if isinstance(sym, ir.Const):
                self.type_err(lhs, f"'{name}' is a constant and cannot be assigned")
            if sym is None:
                raise KernelNameError(f"use of undeclared identifier '{name}'", self.sp(lhs))
            if isinstance(sym, StructPtr):
                return self.struct_pointer_move(sym, op, rhs_node, sp)
            if isinstance(sym, NullPtr):
                self.sym_view(sym, lhs)         # (raises: using a null pointer)
            self.type_err(lhs, f"cannot assign to '{name}'")
        if k == "subscript_expression" and lhs.child_by_field_name("argument").type == "identifier" and \
                isinstance(self.lookup(self.text(lhs.child_by_field_name("argument"))), ir.Var):
            var = self.expr(lhs.child_by_field_name("argument"))
            if not isinstance(var.type, T.VectorType):
                self.type_err(lhs, f"'{self.text(lhs.child_by_field_name('argument'))}' is a value, not an "
                              "array or buffer")
            return self.vector_assign(var, lhs, value, sp)
        if k == "subscript_expression" and (lhs.child_by_field_name("argument").type in (
                "subscript_expression", "pointer_expression") and self.ptr_rank(lhs.child_by_field_name("argument")) is None
                or self.is_vector_member(lhs.child_by_field_name("argument"))):
            return self.element_component_assign(lhs, value, sp)    # vals[j][0] *= s; pp[i].q[2] = x
        if k in ("subscript_expression", "pointer_expression"):
            v, idx = self.location(lhs)
            if v.const:
                what = "an input or constant" if v.space in ("device", "constant") else "a const pointer"
                self.type_err(lhs, f"'{self.quote(lhs)}' is read-only ({what})",
                              hint="write to one of the output_names" if v.space == "device" else None)
            if v.atomic:
                self.type_err(lhs, f"'{v.buf}' is atomic; write it with atomic_store_explicit "
                              "or atomic_fetch_add_explicit")
            cur = self.sem.view_load(v, idx, self.sp(lhs)) if op is not None else None
            return self.sem.view_store(v, idx, value(cur, v.type), sp)
        if k == "field_expression":
            r = self.complex_member_assign(lhs, op, value, sp)     # c.real = v, x[i].imag += v
            if r is not None:
                return r
            base = lhs.child_by_field_name("argument")
            comps = self.text(lhs.child_by_field_name("field"))
            if self.text(lhs.child_by_field_name("operator")) == "->" and self.ptr_rank(base) is not None:
                return self.members_store(*self.deref(base, lhs), base, comps, value, lhs, sp)   # q->y = v
            if base.type in ("subscript_expression", "pointer_expression") and not (
                    base.type == "subscript_expression"
                    and isinstance(self.lookup(self.text(base.child_by_field_name("argument"))), ir.Var)):
                return self.element_member_assign(base, comps, op, value, lhs, sp)
            if base.type == "call_expression" and self.call_returns(base) == "ref":
                out, lv = self.call_target(base)         # t.frag_at(j).y = x: through a returned reference
                for st in out:
                    self.emit_pre(st, sp)
                if lv[0] == "loc":
                    return self.members_store(lv[1], lv[2], base, comps, value, lhs, sp)
                if lv[0] == "var" and isinstance(lv[1].type, T.VectorType):
                    var = ir.Var(lv[1].name, lv[1].type, span=sp)
                    return [ir.Assign(var, self.with_components(var, comps, value, lhs, sp), span=sp)]
            loc = self.member_location(base) if base.type == "field_expression" else \
                self.location(base) if base.type == "parenthesized_expression" and \
                self.text(base).strip("( \t\n").startswith("*") else None
            if loc is not None and isinstance(loc[0].type, T.VectorType):
                return self.members_store(loc[0], loc[1], base, comps, value, lhs, sp)  # pp[i].v.x = a; (*q).y = b
            ref = self.lookup(self.text(base)) if base.type == "identifier" else None
            if isinstance(ref, Ref) and isinstance(self.ref_view(ref, sp).type, T.VectorType):
                # v.z = 3 through a vector reference (thread float4& v): read it once, write it back
                rv, zero = self.ref_view(ref, sp), ir.Const(0, T.int32, span=sp)
                cur_vec = self.new_tmp(rv.type, self.sem.view_load(rv, zero, sp), sp)
                return self.sem.view_store(rv, zero, self.with_components(cur_vec, comps, value, lhs, sp), sp)
            var = self.expr(base)
            if not isinstance(var, ir.Var) or not isinstance(var.type, T.VectorType):
                self.unsupported(lhs, "assignment to this member")
            return [ir.Assign(var, self.with_components(var, comps, value, lhs, sp), span=sp)]
        self.unsupported(lhs, f"assignment to '{self.text(lhs)}'")

    def with_components(self, var, comps, value, lhs, sp):
        """The vector ``var`` with its components ``comps`` (``z``, ``zw``) replaced by
        ``value(current, type)`` (an assignment or compound assignment to a swizzle)."""
        vt = var.type
        cur = self.sem.component(var, comps, self.sp(lhs))
        idxs = [T.COMPONENTS.index(c) for c in cur.components]
        ct = cur.type
        newv = value(cur, ct)
        if len(idxs) > 1:
            tmp = self.new_tmp(ct, newv, sp)
            parts = {i: self.sem.vector_index(tmp, j, sp) for j, i in enumerate(idxs)}
        else:
            parts = {idxs[0]: newv}
        args = [parts.get(i) or self.sem.vector_index(var, i, sp) for i in range(vt.n)]
        return self.sem.vector(vt, args, sp)


def _jumps(stmts, kind) -> bool:
    """Whether ``stmts`` hold a ``kind`` (ir.Break / ir.Continue) of the loop they are the
    body of (not one of a nested loop)."""
    for st in stmts:
        if isinstance(st, kind):
            return True
        if isinstance(st, ir.If) and (_jumps(st.then, kind) or _jumps(st.orelse or [], kind)):
            return True
    return False
