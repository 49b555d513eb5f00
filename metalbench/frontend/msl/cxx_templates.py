"""C++ templates in MSL: template arguments (types and constants, a constant the grammar
reads as a type included), class template instantiation by substitution (defaults in the
template's scope, in order; the first matching partial specialisation), deduction of
template parameters from arguments, alias templates.

    >>> from metalbench.frontend.msl import translate_kernel
    >>> from metalbench import ir, types as T
    >>> hdr = '''
    ... template <typename T, int N> struct Pick { static constant constexpr const int v = 1; };
    ... template <typename T> struct Pick<T, 8> { static constant constexpr const int v = 8; };
    ... template <int N> using P = Pick<float, N>;'''
    >>> k = translate_kernel("k", "out[0] = P<8>::v + P<3>::v;", hdr, inputs=[],
    ...                      outputs=[("out", T.int32, 1)])
    >>> print(ir.dump(k.body))
    out[0] = 9
"""
from __future__ import annotations

from contextlib import contextmanager

from ... import ir
from ... import types as T
from ...errors import KernelNameError, KernelTypeError, MetalbenchError
from ...semantics.folding import fold
from .cxx_decls import (TRAIT_NAMES, AliasTemplate, ClassInst, ClassTemplate, PtrType, VarTemplate, _shown,
                        _unwrap_declarator)
from .symbols import _TypeName


class CxxTemplatesMixin:
    """C++ templates: a part of :class:`~metalbench.frontend.msl.Translator`."""

    # -- template arguments --------------------------------------------------------------
    def template_args(self, arg_nodes) -> list:
        """``[("t", type) | ("v", Const)]`` of template arguments written at the use site."""
        out = []
        for a in arg_nodes:
            if a.type == "type_descriptor":
                inner = a.child_by_field_name("type")
                decl = a.child_by_field_name("declarator")
                if decl is None and inner.type in ("type_identifier", "identifier"):
                    sym = self.lookup(self.text(inner))
                    if isinstance(sym, ir.Const):
                        out.append(("v", sym))
                        continue
                    if isinstance(sym, ir.Var):
                        self.type_err(a, f"template argument '{self.text(a)}' is not a compile-time constant")
                if decl is None and inner.type == "qualified_identifier":
                    v = self.cxx_value(inner)
                    if v is not None:
                        out.append(("v", v))
                        continue
                if decl is None and inner.type == "template_type":      # is_same_v<T, half>: a value
                    nm = self.text(inner.child_by_field_name("name")).strip()
                    if nm.endswith("_v") and nm in TRAIT_NAMES and self.lookup(nm) is None:
                        v = self.trait_value(nm, inner)
                        if v is not None:
                            out.append(("v", v))
                            continue
                    if isinstance(self.lookup(nm), VarTemplate):        # a variable template's value
                        out.append(("v", self.var_template(self.lookup(nm), inner)))
                        continue
                call = self.call_in_template_arg(inner, decl)
                if call is not None:
                    out.append(("v", call))
                    continue
                t = self.type_of_descriptor(a)
                out.append(("t", t))
                continue
            c = fold(self.expr(a))
            if not isinstance(c, ir.Const):
                self.type_err(a, f"template argument '{self.text(a)}' is not a compile-time constant")
            out.append(("v", c))
        return out

    def call_in_template_arg(self, inner, decl):
        """``f<N>()`` as a template argument, which the grammar reads as a function type:
        the value of a header function's call (a constexpr one with constant arguments is a
        constant, constexpr.py); None when ``inner``/``decl`` are not such a call."""
        if decl is None or decl.type != "abstract_function_declarator" or \
                any(c.type == "parameter_declaration" for c in decl.child_by_field_name("parameters").children):
            return None
        name_node = inner.child_by_field_name("name") if inner.type == "template_type" else inner
        name = self.text(name_node).replace(" ", "")
        if name not in self.funcdefs:
            return None
        targs = inner.child_by_field_name("arguments").named_children if inner.type == "template_type" else []
        c = fold(self.user_call(name, [], targs, inner))
        if not isinstance(c, ir.Const):
            self.type_err(inner, f"template argument '{self.text(inner)}()' is not a compile-time constant "
                                 f"('{name}' is not a constexpr function of constants)")
        return c

    def type_of_descriptor(self, a):
        """The type of a ``type_descriptor`` (a pointer type as :class:`PtrType`)."""
        inner = a.child_by_field_name("type") if a.type == "type_descriptor" else a
        decl = a.child_by_field_name("declarator") if a.type == "type_descriptor" else None
        return self.declared_type(a, inner, decl)

    def declared_type(self, node, tnode, decl, what=None, whole=None):
        """The type that base type ``tnode`` and abstract or named declarator ``decl`` (None:
        none) of declaration ``node`` spell: a pointer as :class:`PtrType` (its address
        space and ``const`` from ``node``). With ``what`` (an alias or typedef, say), a
        reference, array or pointer-to-pointer is refused naming it; without, those keep
        the base type (template arguments: the caller's rules); ``whole``: the node an
        error points at (default ``node``)."""
        t, _ = self.resolve_type(tnode)
        if decl is None:
            return t
        _, kinds = _unwrap_declarator(decl)
        if what is not None and kinds not in ([], ["ptr"]):
            kind = "a reference" if "ref" in kinds else "an array" if "array" in kinds else "a pointer-to-pointer"
            self.unsupported(whole or node, f"{what} of {kind} type ('{self.quote(whole or node)}'; write the "
                                            f"type out where it is used)")
        if "ptr" in kinds:
            quals = self.quals_before(node.start_byte, tnode.start_byte)
            space = next((q for q in quals if q in ("device", "threadgroup", "constant", "thread")), "thread")
            const = any(c.type == "type_qualifier" and self.text(c) == "const" for c in node.children)
            return PtrType(t, space, const)
        return t

    def alias_type(self, node):
        """The type ``using N = T;`` (``alias_declaration`` ``node``) names: a pointer type
        as :class:`PtrType`; reference and array types refused by name."""
        a = node.child_by_field_name("type")
        inner = a.child_by_field_name("type") if a.type == "type_descriptor" else a
        decl = a.child_by_field_name("declarator") if a.type == "type_descriptor" else None
        return self.declared_type(a, inner, decl, "an alias", node)

    def typedef_names(self, node):
        """``[(name, type)]`` of ``typedef T N, *P;`` (``type_definition`` ``node``):
        pointer types as :class:`PtrType`; reference and array types refused by name."""
        tnode = node.child_by_field_name("type")
        out = []
        for d in node.children_by_field_name("declarator"):
            name_n, _ = _unwrap_declarator(d)
            if name_n is None or name_n.type != "type_identifier":
                self.unsupported(d, f"the typedef '{self.quote(node)}'")
            out.append((self.text(name_n), self.declared_type(node, tnode, None if d is name_n else d, "a typedef")))
        return out

    def _bind_args(self, tps, args, scope_fn, node, what):
        """Template parameters bound to ``args`` (defaults evaluated in order, each in the
        template's scope with the parameters bound so far): a dict name -> symbol."""
        bind = {}
        if len(args) > len(tps) and not any(p.kind == "pack" for p in tps):
            self.type_err(node, f"{what} takes {len(tps)} template arguments, got {len(args)}")
        for i, p in enumerate(tps):
            if p.kind == "pack":
                self.unsupported(node, f"{what}: a variadic template")
            if p.kind == "template":
                self.unsupported(node, f"{what}: the template template parameter '{p.name}'")
            if i < len(args):
                kind, v = args[i]
            elif p.default is not None:
                with scope_fn(bind):
                    if p.kind == "type":
                        kind, v = "t", self.type_of_descriptor(p.default)
                    else:
                        c = fold(self.expr(p.default))
                        if not isinstance(c, ir.Const):
                            self.type_err(p.default, "a template default must be a compile-time constant")
                        kind, v = "v", c
            else:
                self.type_err(node, f"{what}: template parameter '{p.name}' has no argument")
            if p.kind == "type":
                if kind != "t":
                    self.type_err(node, f"{what}: template parameter '{p.name}' takes a type, got {v.value!r}")
                bind[p.name] = _TypeName(v)
            else:
                if kind != "v":
                    self.type_err(node, f"{what}: template parameter '{p.name}' takes a value, got a type")
                with scope_fn(bind):
                    vt, _ = self.resolve_type(p.vtype) if p.vtype is not None else (v.type, False)
                bind[p.name] = self.sem.const(v.value, vt) if isinstance(vt, T.ScalarType) else v
        return bind

    @staticmethod
    def _key(bind, tps):
        out = []
        for p in tps:
            s = bind[p.name]
            out.append(("t", s.t) if isinstance(s, _TypeName) else ("v", s.type, s.value))
        return tuple(out)

    def instantiate(self, tmpl: ClassTemplate, args, node) -> ClassInst:
        """``tmpl<args>``: the class instance (cached), from a matching partial
        specialisation if there is one."""
        outer_scopes = (lambda: self.class_scopes(tmpl.outer)) if tmpl.outer is not None else \
            (lambda: [self.global_syms])

        @contextmanager
        def scope_fn(bind):
            with self.in_ctx(tmpl.ctx, outer_scopes() + [dict(bind)], tmpl.ns):
                yield
        bind = self._bind_args(tmpl.tparams, args, scope_fn, node, tmpl.name)
        key = self._key(bind, tmpl.tparams)
        ci = tmpl.instances.get(key)
        if ci is not None:
            return ci
        shown = ", ".join(getattr(v.t, "name", str(v.t)) if isinstance(v, _TypeName) else str(_shown(v.value))
                          for v in (bind[p.name] for p in tmpl.tparams))
        body, ctx, final = tmpl.node, tmpl.ctx, bind
        # of the specialisations that match, the most specialised: an explicit one
        # (template <>) first, then the one with fewer parameters of its own (C++'s partial
        # ordering, approximately); declaration order breaks ties
        best = None
        for ptps, pargs, pnode, pctx in tmpl.partials:
            m = self.match_partial(tmpl, ptps, pargs, pctx, [bind[p.name] for p in tmpl.tparams])
            if m is not None and (best is None or len(ptps) < best[0]):
                best = (len(ptps), pnode, pctx, m)
        if best is not None:
            _, body, ctx, final = best
        ci = ClassInst(f"{tmpl.name}<{shown}>", body, ctx, tmpl.ns, tmpl.outer, final, tmpl, key)
        tmpl.instances[key] = ci
        site = self.sp(node)
        self.class_members(ci)
        for a in ci.members["asserts"]:
            try:
                with self.in_ctx(ci.ctx, self.class_scopes(ci), ci.ns):
                    self.static_assert(a)
            except MetalbenchError as e:
                raise e.add_call_site(site)            # where the class was instantiated
        return ci

    def match_partial(self, tmpl, ptps, pargs, pctx, actual):
        """The bindings of a partial specialisation's parameters when its pattern matches
        the actual arguments, else None."""
        names = {p.name for p in ptps}
        bind: dict = {}
        if len(pargs) != len(actual):
            return None
        outer = self.class_scopes(tmpl.outer) if tmpl.outer is not None else [self.global_syms]
        for pat, act in zip(pargs, actual):
            with self.in_ctx(pctx, outer + [dict(bind)], tmpl.ns):
                if not self.deduce(pat, act, bind, names):
                    return None
        if set(bind) != names:
            return None
        return bind

    def deduce(self, pat, act, bind, names) -> bool:
        """Matches pattern node ``pat`` (a template argument or a parameter's type) against
        ``act`` (a ``_TypeName`` or a ``Const``), binding the names in ``names``. A pattern
        ``const T`` matches nothing (types here carry no qualifiers, so it cannot be told from
        ``T``: the unqualified pattern takes the argument); ``device T*`` matches a pointer type
        of that address space, deducing ``T`` from its element type."""
        const = pat.type == "type_descriptor" and any(c.type == "type_qualifier" for c in pat.children)
        d = pat.child_by_field_name("declarator") if pat.type == "type_descriptor" else None
        if d is not None and d.type == "abstract_pointer_declarator":     # device T*, const device T*
            if not (isinstance(act, _TypeName) and isinstance(act.t, PtrType)) or d.named_children:
                return False
            inner = pat.child_by_field_name("type")
            quals = self.quals_before(pat.start_byte, inner.start_byte)
            space = next((q for q in quals if q in ("device", "threadgroup", "constant", "thread")), "thread")
            return space == act.t.space and const == act.t.const and \
                self.deduce(inner, _TypeName(act.t.elem), bind, names)
        if const:
            return False
        while pat.type in ("type_descriptor", "dependent_type"):     # T, typename metal::vec<U, 2>
            if pat.type == "type_descriptor" and pat.child_by_field_name("declarator") is not None:
                break
            pat = pat.child_by_field_name("type") if pat.type == "type_descriptor" else pat.named_children[-1]
        if pat.type in ("type_identifier", "identifier") and self.text(pat) in names:
            nm = self.text(pat)
            if nm in bind:
                return self._same(bind[nm], act)
            bind[nm] = act
            return True
        if pat.type == "template_type" and isinstance(act, _TypeName) and self.is_metal_matrix(act.t):
            # matrix<T, C, R> against a Metal matrix: T, then the columns and rows
            if self.text(pat.child_by_field_name("name")).replace(" ", "") not in ("matrix", "metal::matrix"):
                return False
            sub = pat.child_by_field_name("arguments").named_children
            acts = [_TypeName(act.t.elem), ir.Const(act.t.cols, T.int32), ir.Const(act.t.rows, T.int32)]
            return len(sub) == 3 and all(self.deduce(p, a, bind, names) for p, a in zip(sub, acts))
        if pat.type == "template_type" and isinstance(act, _TypeName) and isinstance(act.t, ClassInst):
            ent = self.entity_named(pat.child_by_field_name("name"))
            if not isinstance(ent, ClassTemplate) or act.t.template is not ent:
                return False
            sub = pat.child_by_field_name("arguments").named_children
            acts = [_TypeName(a[1]) if a[0] == "t" else ir.Const(a[2], a[1]) for a in act.t.args]
            if len(sub) > len(acts):
                return False
            return all(self.deduce(p, a, bind, names) for p, a in zip(sub, acts))
        targs = self._template_pattern(pat) if isinstance(act, _TypeName) else None
        if targs is not None:
            tname, sub = targs
            # vec<U, N> against a vector, simdgroup_matrix<U, R, C> against a SIMD-group matrix
            if isinstance(act.t, T.VectorType) and tname in ("vec", "metal::vec"):
                acts = [_TypeName(act.t.elem), ir.Const(act.t.n, T.int32)]
                return len(sub) == 2 and all(self.deduce(p, a, bind, names) for p, a in zip(sub, acts))
            if isinstance(act.t, T.MatrixType) and tname in ("simdgroup_matrix", "metal::simdgroup_matrix"):
                acts = [_TypeName(act.t.elem), ir.Const(act.t.rows, T.int32), ir.Const(act.t.cols, T.int32)]
                return len(sub) == 3 and all(self.deduce(p, a, bind, names) for p, a in zip(sub, acts))
            ent = self.probe(lambda: self.entity_named(pat.child_by_field_name("name")
                                                       if pat.type == "template_type" else pat))
            if isinstance(ent, AliasTemplate):
                return self.deduce_alias(ent, sub, act, bind, names)
        try:                    # a concrete pattern: evaluate it (an unknown type never matches)
            if isinstance(act, _TypeName):
                t = self.type_of_descriptor(pat) if pat.type == "type_descriptor" else self.resolve_type(pat)[0]
                return t == act.t
            if pat.type == "type_identifier":      # a constant the grammar reads as a type: vec<U, kN>
                c = self.lookup(self.text(pat).strip())
            else:
                c = fold(self.expr(pat))
            return isinstance(c, ir.Const) and c.value == act.value
        except (KernelNameError, KernelTypeError):
            return False

    def _template_pattern(self, pat):
        """``(name, argument nodes)`` of a pattern ``N<...>`` or ``ns::N<...>``, else None."""
        name_n = pat
        if pat.type == "qualified_identifier" and pat.child_by_field_name("name").type == "template_type":
            name_n = pat.child_by_field_name("name")
        if name_n.type != "template_type":
            return None
        scope = self.text(pat.child_by_field_name("scope")).strip() + "::" if name_n is not pat else ""
        return scope + self.text(name_n.child_by_field_name("name")).strip(), \
            name_n.child_by_field_name("arguments").named_children

    def deduce_alias(self, at: AliasTemplate, sub, act, bind, names) -> bool:
        """``dtype_frag_t<A>`` (an alias template, ``= vec<U, 2>``) against ``act``: the alias's
        type deduces its own parameters from ``act`` (in the alias's scope), then those
        values deduce the pattern's arguments (C++ deduces through an alias template: it is
        its type)."""
        outer = self.class_scopes(at.outer) if at.outer is not None else [self.global_syms]
        inner: dict = {}
        with self.in_ctx(at.ctx, outer + [{}], at.ns):
            if not self.deduce(at.node.child_by_field_name("type"), act, inner, {p.name for p in at.tparams}):
                return False
        return all(self.deduce(p, inner[tp.name], bind, names)
                   for p, tp in zip(sub, at.tparams) if tp.name in inner)

    @staticmethod
    def _same(a, b) -> bool:
        if isinstance(a, _TypeName) and isinstance(b, _TypeName):
            return a.t == b.t
        if isinstance(a, ir.Const) and isinstance(b, ir.Const):
            return a.value == b.value
        return False

    def alias(self, at: AliasTemplate, args, node):
        outer = self.class_scopes(at.outer) if at.outer is not None else [self.global_syms]

        @contextmanager
        def scope_fn(bind):
            with self.in_ctx(at.ctx, outer + [dict(bind)], at.ns):
                yield
        bind = self._bind_args(at.tparams, args, scope_fn, node, at.name)
        with scope_fn(bind):
            return self.type_of_descriptor(at.node.child_by_field_name("type"))
