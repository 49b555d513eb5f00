"""C++ names in MSL: qualified names (``ns::X``, ``X<T>::member``, ``decltype(x)::N``,
``typename X::Y``), the types they name (classes, class and alias templates, member types,
Metal's type traits) and the values (static members, variable templates, ``is_same_v``).

    >>> from metalbench.frontend.msl import translate_kernel
    >>> from metalbench import ir, types as T
    >>> hdr = "struct S { typedef half elem; static constant constexpr const int n = 3; };"
    >>> k = translate_kernel("k", "typename S::elem h = 2; out[0] = S::n * metal::is_same_v<S::elem, half>;",
    ...                      hdr, inputs=[], outputs=[("out", T.int32, 1)])
    >>> print(ir.dump(k.body))
    float16 h = 2.0
    out[0] = 3
"""
from __future__ import annotations

from contextlib import contextmanager

from ... import ir
from ... import types as T
from ...semantics.folding import fold
from .cxx_decls import (TRAIT_NAMES, AliasTemplate, ClassInst, ClassScope, ClassTemplate, MethodSet, Namespace,
                        PtrType, VarTemplate)
from .symbols import VOID, _NoMatch, _TypeName


class CxxNamesMixin:
    """C++ names, types and values: a part of :class:`~metalbench.frontend.msl.Translator`."""

    # -- names --------------------------------------------------------------------------
    def entity_named(self, node):
        """What a (possibly qualified) name node denotes: a symbol, an entity
        (ClassTemplate, Namespace, ...), or None."""
        k = node.type
        if k in ("identifier", "type_identifier", "namespace_identifier", "field_identifier"):
            return self.lookup(self.text(node).strip())
        if k == "qualified_identifier":
            scope_n, name_n = node.child_by_field_name("scope"), node.child_by_field_name("name")
            scope = self.scope_of(scope_n) if scope_n is not None else self.global_syms.root
            if scope is None:
                return None
            if name_n.type in ("template_type", "template_function"):
                inner = self.member_of(scope, self.text(name_n.child_by_field_name("name")).strip())
                return inner
            if name_n.type == "qualified_identifier":
                with self._scoped_lookup(scope):
                    return self.entity_named(name_n)
            return self.member_of(scope, self.text(name_n).strip())
        return None

    @contextmanager
    def _scoped_lookup(self, scope):
        """Look names up inside ``scope`` (a namespace or class) for a nested qualified name,
        then in the current scopes: a template argument in it is read where it is written
        (``typename metal::enable_if<is_same_v<T, half>>::type`` inside a function template
        sees its ``T``); code Metal accepts names members that exist, so they win."""
        saved = self.scopes
        if isinstance(scope, ClassInst):
            self.scopes = saved + [ClassScope(self, scope)]
        else:
            self.scopes = saved + [scope.members]
        try:
            yield
        finally:
            self.scopes = saved

    def scope_of(self, n):
        """The namespace or class a scope node (``a::``, ``X<T>::``, ``decltype(x)::``) names."""
        k = n.type
        if k == "decltype":
            t = self.decltype(n)
            return t if isinstance(t, ClassInst) else None
        if k == "template_type":
            t = self.cxx_type(n)
            return t if isinstance(t, ClassInst) else None
        if k == "qualified_identifier":
            ent = self.entity_named(n)
        else:
            name = self.text(n).strip()
            ent = self.lookup(name)
            if ent is None:
                ent = self.namespace_named(name) if name in ("metal", "std") else None
        if isinstance(ent, _TypeName) and getattr(ent, "enum_members", None) is not None:
            return Namespace(self.text(n), None, ent.enum_members)      # an enum's enumerators: E::A
        if isinstance(ent, _TypeName):
            ent = ent.t
        if isinstance(ent, (Namespace, ClassInst)):
            return ent
        return None

    def member_of(self, scope, name):
        if isinstance(scope, ClassInst):
            return self.class_member(scope, name)
        if isinstance(scope, Namespace):
            if scope is self.global_syms.root:
                return dict.get(self.global_syms, name)
            r = scope.members.get(name)
            if r is None:
                for u in scope.usings:
                    r = u.members.get(name)
                    if r is not None:
                        break
            return r
        return None

    def decltype(self, n):
        arg = n.named_children[0] if n.named_children else None
        if arg is None:
            self.unsupported(n, "decltype(auto)")
        obj = self.object_value(arg)
        if obj is not None:
            return obj.cls
        pre, e = self.with_pre(lambda: self.expr(arg))     # unevaluated: only its type counts
        return e.type

    # -- types --------------------------------------------------------------------------
    def cxx_type(self, node):
        """The type a C++ type node names when it is a class, a class or alias template,
        a member type, ``decltype`` or a trait; None for the types the rest of the
        translator knows (scalars, vectors, ``metal::vec``)."""
        k = node.type
        if k == "type_descriptor":
            return self.type_of_descriptor(node) if node.child_by_field_name("declarator") is not None \
                else self.cxx_type(node.child_by_field_name("type"))
        if k == "dependent_type":
            return self.cxx_type(node.named_children[0])
        if k == "decltype":
            return self.decltype(node)
        if k in ("type_identifier", "identifier"):
            ent = self.lookup(self.text(node).strip())
            if isinstance(ent, ClassTemplate):
                cur = self.this_class_of(ent)
                if cur is not None:
                    return cur             # the injected class name inside its own template
                self.type_err(node, f"'{ent.name}' is a class template: give its arguments, "
                              f"{ent.name}<...>")
            if isinstance(ent, _TypeName) and isinstance(ent.t, ClassInst):
                return ent.t
            if isinstance(ent, MethodSet) and ent.cls is not None and any(m.kind == "ctor" for m in ent.methods):
                return ent.cls             # the class's own name inside it: its constructors shadow it
            return None
        if k == "template_type":
            name_n = node.child_by_field_name("name")
            nm = self.text(name_n).replace(" ", "")
            ent = self.entity_named(name_n) if name_n.type != "type_identifier" or "::" not in nm \
                else None
            if ent is None and "::" in nm:
                ent = self.entity_named(name_n)
            base = nm.split("::")[-1]
            # inside a class template, its name (the injected class name, or its constructors)
            # with arguments names the template again: LoopedElemToLoc<DIM - 1, ...> as a member
            inner = ent.cls if isinstance(ent, MethodSet) else ent.t if isinstance(ent, _TypeName) else ent
            inner = inner if isinstance(inner, ClassInst) else None
            if inner is not None and getattr(inner, "template", None) is not None and inner.template.name == base:
                ent = inner.template
            if isinstance(ent, ClassTemplate):
                return self.instantiate(ent, self.template_args(node.child_by_field_name("arguments").named_children),
                                        node)
            if isinstance(ent, AliasTemplate):
                return self.alias(ent, self.template_args(node.child_by_field_name("arguments").named_children), node)
            if ent is None and base in TRAIT_NAMES:
                return self.trait_type(base, node)
            return None
        if k == "qualified_identifier":
            t = self.trait_member_type(node)
            if t is not None:
                return t
            scope_n, name_n = node.child_by_field_name("scope"), node.child_by_field_name("name")
            if scope_n is not None and scope_n.type == "namespace_identifier" and \
                    self.text(scope_n).strip() in ("metal", "std") and name_n.type != "template_type" and \
                    name_n.type != "qualified_identifier":
                ent = self.entity_named(node)
                if isinstance(ent, _TypeName):
                    return ent.t
                return None             # metal::float4 & co.: the translator's own
            scope = self.scope_of(scope_n) if scope_n is not None else None
            while scope is not None and name_n.type == "qualified_identifier":    # a::b::S<T, N>
                with self._scoped_lookup(scope):
                    scope = self.scope_of(name_n.child_by_field_name("scope"))
                name_n = name_n.child_by_field_name("name")
            if name_n.type == "template_type":      # its arguments are read in the current scope
                inner_name = self.text(name_n.child_by_field_name("name")).strip()
                ent = self.member_of(scope, inner_name) if scope is not None else None
                if isinstance(ent, ClassTemplate):
                    return self.instantiate(ent, self.template_args(
                        name_n.child_by_field_name("arguments").named_children), name_n)
                if isinstance(ent, AliasTemplate):
                    return self.alias(ent, self.template_args(name_n.child_by_field_name("arguments").named_children),
                                      name_n)
                if ent is None and inner_name in TRAIT_NAMES:
                    return self.trait_type(inner_name, name_n)
                return None
            ent = self.entity_named(node)
            if isinstance(ent, _TypeName):
                return ent.t
            if ent is None and scope_n is not None and self.scope_of(scope_n) is not None:
                self.type_err(node, f"'{self.text(name_n)}' is not a member type of "
                              f"'{self.text(scope_n)}'")
            return None
        return None

    def this_class_of(self, tmpl):
        for sc in reversed(self.scopes):
            if isinstance(sc, ClassScope):
                ci = sc.ci
                while ci is not None:
                    if ci.template is tmpl:
                        return ci
                    ci = ci.outer
        return None

    def trait_member_type(self, node):
        """``[metal::]enable_if<c, T>::type`` & co., the pre-``_t`` spelling of a type trait:
        ``trait_type`` of its ``_t`` form; None for any other qualified name."""
        while node.type == "qualified_identifier" and node.child_by_field_name("scope") is not None and \
                self.text(node.child_by_field_name("scope")).strip() in ("metal", "std"):
            node = node.child_by_field_name("name")
        scope_n = node.child_by_field_name("scope") if node.type == "qualified_identifier" else None
        if scope_n is None or scope_n.type != "template_type" or \
                self.text(node.child_by_field_name("name")).strip() != "type":
            return None
        nm = self.text(scope_n.child_by_field_name("name")).replace(" ", "").split("::")[-1]
        if nm + "_t" not in TRAIT_NAMES or self.lookup(nm) is not None:
            return None
        return self.trait_type(nm + "_t", scope_n)

    def trait_type(self, name, node):
        """Metal's type traits that give types: ``pointer_element_t``, ``remove_cv_t`` & co."""
        args = self.template_args(node.child_by_field_name("arguments").named_children)
        ts = [v for k, v in args if k == "t"]
        if name in ("pointer_element_t",) and len(ts) == 1:
            p = ts[0]
            if not isinstance(p, PtrType):
                self.type_err(node, f"pointer_element_t of '{getattr(p, 'name', p)}', which is not a pointer")
            return p.elem
        if name in ("remove_cv_t", "remove_const_t", "remove_volatile_t", "remove_reference_t",
                    "remove_addrspace_t", "decay_t", "uniform") and len(ts) == 1:    # (uniform<T>: a hint)
            return ts[0]
        if name == "enable_if_t" and args and args[0][0] == "v":
            if not args[0][1].value:
                if self.in_signature:   # SFINAE: this overload drops out
                    raise _NoMatch(f"'{self.text(node)}' has no type for these arguments")
                self.type_err(node, "enable_if_t<false, ...>: no such type")
            return ts[0] if len(args) > 1 else VOID
        if name == "conditional_t" and len(args) == 3 and args[0][0] == "v":
            return args[1][1] if args[0][1].value else args[2][1]
        self.unsupported(node, f"the type trait '{self.text(node)}'")

    def trait_value(self, name, node):
        """``is_same_v<A, B>``, ``is_integral<T>::value`` & co. as constants; also the
        logic over traits, ``[_]disjunction<is_same<T, int>, ...>`` (MLX's atomic.h),
        ``conjunction``, ``negation``."""
        base = name[:-2] if name.endswith("_v") else name
        if base.lstrip("_") in ("disjunction", "conjunction", "negation"):
            vals = []
            for a in node.child_by_field_name("arguments").named_children:
                a = a.child_by_field_name("type") if a.type == "type_descriptor" else a
                nm = self.text(a.child_by_field_name("name")).replace(" ", "").split("::")[-1] \
                    if a is not None and a.type in ("template_type", "template_function") else None
                c = self.trait_value(nm, a) if nm in TRAIT_NAMES else None
                if c is None:
                    return None
                vals.append(bool(c.value))
            v = any(vals) if base.lstrip("_") == "disjunction" else all(vals) if base.lstrip("_") == "conjunction" \
                else not vals[0]
            return self.sem.bool_const(v, self.sp(node))
        args = self.template_args(node.child_by_field_name("arguments").named_children)
        ts = [v for k, v in args if k == "t"]
        if base == "is_same" and len(ts) == 2:
            v = ts[0] == ts[1]
        elif base in ("is_integral", "is_floating_point", "is_signed", "is_unsigned", "is_arithmetic") \
                and len(ts) == 1:
            t = ts[0]
            ok = isinstance(t, T.ScalarType)
            v = ok and {"is_integral": t.is_int or t.is_bool, "is_floating_point": t.is_float,
                        "is_signed": t.is_signed, "is_unsigned": t.is_int and not t.is_signed,
                        "is_arithmetic": True}[base]
        else:
            return None
        return self.sem.bool_const(bool(v), self.sp(node))

    # -- values -------------------------------------------------------------------------
    def cxx_value(self, node):
        """The value of a qualified name (``X::member``, ``decltype(x)::N``,
        ``is_same_v<A, B>``, ``ns::constant``), or None when it is not one of those."""
        k = node.type
        if k == "template_function":
            nm = self.text(node.child_by_field_name("name")).replace(" ", "").split("::")[-1]
            ent = self.lookup(nm)
            if isinstance(ent, VarTemplate):
                return self.var_template(ent, node)
            if ent is None and nm in TRAIT_NAMES:
                return self.trait_value(nm, node)
            return None
        if k != "qualified_identifier":
            return None
        scope_n, name_n = node.child_by_field_name("scope"), node.child_by_field_name("name")
        if name_n.type == "template_function" or name_n.type == "template_type":
            scope = self.scope_of(scope_n) if scope_n is not None else None
            if isinstance(scope, Namespace):
                nm = self.text(name_n.child_by_field_name("name")).strip()
                ent = self.member_of(scope, nm)
                if isinstance(ent, VarTemplate):
                    return self.var_template(ent, name_n)
                if ent is None and nm in TRAIT_NAMES:
                    return self.trait_value(nm, name_n)
            return None
        if scope_n is not None and scope_n.type == "template_type":
            nm = self.text(scope_n.child_by_field_name("name")).replace(" ", "").split("::")[-1]
            if nm in TRAIT_NAMES and self.lookup(nm) is None and self.text(name_n).strip() == "value":
                return self.trait_value(nm, scope_n)
        scope = self.scope_of(scope_n) if scope_n is not None else None
        if scope is None:
            return None
        if name_n.type == "qualified_identifier":
            with self._scoped_lookup(scope):
                return self.cxx_value(name_n)
        ent = self.member_of(scope, self.text(name_n).strip())
        if isinstance(ent, ir.Const):
            return ir.Const(ent.value, ent.type, span=self.sp(node))
        if ent is None and isinstance(scope, ClassInst):
            self.type_err(node, f"'{scope.name}' has no static member '{self.text(name_n)}'")
        return None

    def var_template(self, vt: VarTemplate, node):
        args = self.template_args(node.child_by_field_name("arguments").named_children)
        outer = self.class_scopes(vt.outer) if vt.outer is not None else [self.global_syms]

        @contextmanager
        def scope_fn(bind):
            with self.in_ctx(vt.ctx, outer + [dict(bind)], vt.ns):
                yield
        bind = self._bind_args(vt.tparams, args, scope_fn, node, vt.name)
        with scope_fn(bind):
            d = next(x for x in vt.node.children_by_field_name("declarator")
                     if self.text(x.child_by_field_name("declarator")) == vt.name)
            t, _ = self.resolve_type(vt.node.child_by_field_name("type"))
            c = fold(self.sem.convert(self.expr(d.child_by_field_name("value")), t))
        if not isinstance(c, ir.Const):
            self.type_err(node, f"'{vt.name}' is not a compile-time constant")
        return ir.Const(c.value, c.type, span=self.sp(node))
