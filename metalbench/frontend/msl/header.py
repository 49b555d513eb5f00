"""The header (``header=``): ``#define`` constants, type aliases, global constant
arrays, and device functions and function templates, specialised per call (argument
types, template arguments) like C++ template instantiation."""
from __future__ import annotations

import re

from ... import ir
from ...builtins import registry
from ... import types as T
from ...errors import KernelSyntaxError, MetalbenchError, error_net
from ...semantics.folding import fold
from ...semantics.complexval import ComplexType, storage_elem
from ...semantics.views import View
from .constexpr import call_value, is_constexpr
from .cxx_decls import Ctx, MethodSet, Namespace, PtrType
from .parse import _PARSER, _parse
from .symbols import (SMALL_INPUT_NOTE, Buf, FuncDef, FunctionConstant, Ref, specialization, _NoMatch, _params_of,
                      _SPACES, _TypeName)


class HeaderMixin:
    """The header and its functions: a part of :class:`~metalbench.frontend.msl.Translator`."""

    def header(self, header, src=None):
        """Translate the top level of ``header`` (text of ``src``, default the kernel's header)."""
        src = src or self.hsrc
        tree, code, quals = _parse(header, src, 0, wrap=False, templates=self.template_names)
        self.code, self.quals, self.cur_src, self.line_offset = code, quals, src, 0
        self.scopes = [self.global_syms]
        self.in_kernel = False
        for node in tree.root_node.named_children:
            self.top_level(node, code, quals)

    @error_net("sp")
    def top_level(self, node, code, quals):
        k = node.type
        if self.cxx_top_level(node):       # namespaces, classes, class/alias templates (cxx_decls)
            return
        if k in ("comment", "preproc_include", "preproc_call", "using_declaration",
                 "namespace_alias_definition", "alias_declaration"):
            if k == "alias_declaration":
                self.global_syms[self.text(node.child_by_field_name("name"))] = _TypeName(self.alias_type(node))
            return
        if k == "preproc_def":
            nm = self.text(node.child_by_field_name("name"))
            val = node.child_by_field_name("value")
            if val is None:
                return
            txt = self.code[val.start_byte:val.end_byte].strip()
            sub = _PARSER.parse(f"auto __v = {txt};".encode())
            # re-evaluate the macro text as an expression in the header's coordinates
            try:
                saved = self.code
                self.code = f"auto __v = {txt};"
                decl = sub.root_node.named_children[0]
                init = decl.child_by_field_name("declarator").child_by_field_name("value")
                c = fold(self.expr(init))
            except Exception:
                c = None
            finally:
                self.code = saved
            if not isinstance(c, ir.Const):
                self.unsupported(node, "a #define that is not a constant")
            self.global_syms[nm] = c
            return
        if k == "type_definition":
            for nm, t in self.typedef_names(node):
                self.global_syms[nm] = _TypeName(t)
            return
        if k == "function_definition":
            self.add_funcdef(node, [])
            return
        if k == "template_declaration":
            tps, defaults, sfinae = [], {}, []
            for p in node.child_by_field_name("parameters").named_children:
                if p.type in ("type_parameter_declaration", "optional_type_parameter_declaration"):
                    nm = p.child_by_field_name("name") or next(
                        (c for c in p.named_children if c.type == "type_identifier"), None)
                    # unnamed (template <typename>): a parameter nothing can name
                    tps.append(("type", self.text(nm) if nm is not None else f"_tparam{len(tps)}"))
                    if p.child_by_field_name("default_type") is not None:
                        defaults[tps[-1][1]] = p.child_by_field_name("default_type")
                elif p.type in ("parameter_declaration", "optional_parameter_declaration"):
                    d = p.child_by_field_name("declarator")       # unnamed: enable_if_t<c, bool> = true
                    tps.append(("value", self.text(d) if d is not None else f"_tparam{len(tps)}"))
                    if p.child_by_field_name("default_value") is not None:
                        defaults[tps[-1][1]] = p.child_by_field_name("default_value")
                    if "enable_if" in self.text(p.child_by_field_name("type")):
                        sfinae.append(p.child_by_field_name("type"))
                else:       # variadic and template template parameters: an error where it is called
                    tps.append(("unsupported", self.text(p)))
            inner = [c for c in node.named_children if c.type == "function_definition"]
            if not inner and any(c.type == "declaration" and all(
                    d.type == "function_declarator" for d in c.children_by_field_name("declarator"))
                    for c in node.named_children):
                return          # a function template's prototype
            if not inner:
                self.unsupported(node, "a template that is not a function")
            fd = self.add_funcdef(inner[0], tps)
            if fd is not None:
                fd.tdefaults, fd.sfinae = defaults, sfinae        # template <int N = 3>
            return
        if k == "declaration":
            decls = node.children_by_field_name("declarator")
            if decls and all(d.type == "function_declarator" for d in decls):
                return          # a prototype: the definition follows
            for st in self.declaration(node, top=True):
                pass
            return
        if k == "expression_statement" and not node.named_children:
            return
        if k == "static_assert_declaration":
            self.static_assert(node)
            return
        self.unsupported(node, f"'{self.text(node).split(chr(10))[0][:40]}' in the header")

    def function_constant(self, d, top):
        """Declare a header's ``constant bool has_mask [[function_constant(20)]];`` (MLX's own
        kernel headers declare them; MLX's metal_kernel gives them no values): a use of the
        name is refused by name (``expressions.name_expr``). Any other declarator is refused."""
        if not (top and d.type == "attributed_declarator" and "function_constant" in self.text(d)):
            self.unsupported(d, f"the declaration '{self.text(d)}'")
        name = self.text(d.named_children[0])
        self.global_syms[name] = FunctionConstant(name)
        return []

    @staticmethod
    def _declarator(node):
        """A function definition's declarator under its pointer/reference declarators (the
        ``function_declarator`` of ``thread T& f(...)``; something else when malformed)."""
        d = node.child_by_field_name("declarator")
        while d is not None and d.type in ("pointer_declarator", "reference_declarator"):
            d = d.child_by_field_name("declarator") or d.named_children[-1]
        return d

    def funcdef_key(self, node):
        """The name a function definition is called by (``operator+`` without spaces)."""
        name_n = self._declarator(node).child_by_field_name("declarator")
        if name_n.type == "template_function":      # template <> f<float>(float): an explicit specialisation of f
            name_n = name_n.child_by_field_name("name")
        nm = self.text(name_n)
        if name_n.type == "operator_name":
            nm = nm.replace(" ", "")                # operator + -> operator+ (operators.py)
        return nm.split("::")[-1].strip()

    def _spec_args(self, node):
        """The template argument nodes of an explicit specialisation's name (``f<float>``), or None."""
        name_n = self._declarator(node).child_by_field_name("declarator")
        return name_n.child_by_field_name("arguments").named_children if name_n.type == "template_function" else None

    def add_funcdef(self, node, tps):
        """Register the header function ``node`` (template parameters ``tps``) under its name
        (and ``ns::name``); its :class:`FuncDef`, or None for a member function defined outside
        its class, which is not a free function."""
        d = self._declarator(node)
        name_n = d.child_by_field_name("declarator") if d is not None and d.type == "function_declarator" else d
        ns = self.global_syms.ns                    # the namespace it is declared in
        if name_n is not None and name_n.type == "qualified_identifier":      # float a::b::f(...) { }
            parts = [t.strip() for t in self.text(name_n).split("::")[:-1]]
            ns = self.lookup(parts[0])
            for part in parts[1:]:
                ns = ns.members.get(part) if isinstance(ns, Namespace) else None
            if not isinstance(ns, Namespace):
                # a member defined outside its class (MLX's fft/readwrite.h: ReadWriter<float, float2>::load):
                # not a free function; a call of that member names what is missing (cxx_calls)
                return None
        if d is None or d.type != "function_declarator":   # `uint win { ... };`: no parameter list
            raise KernelSyntaxError(f"'{self.quote(node)}' is neither a function definition nor a struct "
                                    "(a missing parameter list, or a missing 'struct'?)", self.sp(node))
        if node.child_by_field_name("type") is None:      # `inline f(uchar r) { ... }`
            raise KernelSyntaxError(f"'{self.quote(d)}' has no return type (C++ has no implicit int)", self.sp(node))
        fd = FuncDef(node, tps, self.cur_src, self.line_offset, self.quals)
        fd.ns = ns
        fd.spec_args = self._spec_args(node) if not tps else None
        short = self.funcdef_key(node)
        self.funcdefs.setdefault(short, []).append(fd)
        qual = [n.name for n in fd.ns.chain() if n.name][::-1]
        if qual:                                    # also callable as ns::f
            self.funcdefs.setdefault("::".join(qual + [short]), []).append(fd)
        self.funcdef_code[id(node)] = self.code
        return fd

    def user_call(self, name, argn, targ_nodes, node):
        cands = [f for f in self.funcdefs[name] if _arity_fits(_params_of(f.node), len(argn))]
        variadic = [t for f in self.funcdefs[name] for k, t in f.tparams if k == "unsupported"]
        if not cands and variadic:
            self.unsupported(node, f"calling '{name}', a variadic template ('{variadic[0]}')")
        if not cands:
            self.type_err(node, f"no overload of '{name}' takes {len(argn)} argument(s)")
        # f<T, BM>(...): a constant the grammar reads as a type (a local `constexpr int BM`) is a value
        explicit = [("type", v) if kind == "t" else ("value", v) for kind, v in self.template_args(targ_nodes)]
        # evaluate arguments: pointers as views, values as expressions, and what a reference
        # parameter would bind to (an element or a local variable)
        args, lvals = [], []
        for a in argn:
            if a.type == "lambda_expression" or a.type == "identifier" and isinstance(self.lookup(self.text(a)), MethodSet):
                self.unsupported(a, f"passing a lambda to the function '{name}' (call the lambda where it "
                                    "is defined, or make it a header function)")
            args.append(self.pointer(a) if self.ptr_rank(a) is not None else self.expr(a))
            lvals.append(self.lvalue(a) if self.ptr_rank(a) is None else None)
        # the extent of an array argument, for a parameter `thread T (&v)[N]` to deduce N from
        extents = []
        for a in argn:
            sym = self.lookup(self.text(a)) if a.type == "identifier" else None
            extents.append(sym.shape[0] if isinstance(sym, Buf) and sym.shape else None)
        cands = self.explicit_specialisations(cands, explicit, args)
        errors = []
        for fd in self.ranked(cands, args):
            try:
                return self.specialise(fd, name, args, explicit, node, lvals, extents)
            except _NoMatch as e:
                errors.append(str(e))
        self.type_err(node, f"no matching overload of '{name}': " + "; ".join(errors))

    def header_key(self, fn, name):
        """The header functions a call to ``fn`` (callee name ``name``) may take: the key of
        ``funcdefs``, or None. ``metal::f(x)`` (also ``metal::precise::f``) sees only what the
        header declares in namespace metal (as MLX's bf16 math does), never a global ``f``."""
        txt = self.text(fn).replace(" ", "").removeprefix("::").split("<")[0]
        if fn.type == "qualified_identifier" and txt.split("::")[0] == "metal":
            return txt if txt in self.funcdefs else None
        return name if name in self.funcdefs else None

    def builtin_wins(self, key, name, argn) -> bool:
        """Whether a call that header functions ``funcdefs[key]`` overload with a Metal
        builtin of the same ``name`` takes the builtin, as C++ overload resolution would
        (kernels see both through ``using namespace metal``): when no header overload takes
        that many arguments, or when the builtin matches the argument types exactly and no
        non-template header overload does (a non-template exact match beats a template).
        Only simple arguments are typed ahead (no calls but constructors, no assignments):
        otherwise the header function is taken, as before.

            float4 max(float4 a, float b);   // header
            max(x[i], 0.0f)                  // metal::max(float, float)
        """
        b = registry.lookup(name)
        if b is None or b.kind not in ("call", "simd"):
            return False
        cands = [f for f in self.funcdefs[key] if _arity_fits(_params_of(f.node), len(argn))]
        if not cands:
            return True
        if not all(self._simple_arg(a) for a in argn) or any(self.ptr_rank(a) is not None for a in argn):
            return False
        types = [self.expr(a).type for a in argn]
        try:
            sig = b.typecheck(types)
        except MetalbenchError:
            return False
        if any(p != t for p, t in zip(sig.params, types)):
            return False
        return not any(not fd.tparams and self._param_types(fd) == types for fd in cands)

    def _simple_arg(self, node) -> bool:
        """An argument typed twice without harm: no assignment, increment or call other
        than a type's constructor (``float4(x[i])``) anywhere in it."""
        if node.type in ("assignment_expression", "update_expression", "lambda_expression"):
            return False
        if node.type == "call_expression":
            fn = node.child_by_field_name("function")
            if not self.is_type_name(fn):
                return False
            node = node.child_by_field_name("arguments")
        return all(self._simple_arg(c) for c in node.named_children)

    def _param_types(self, fd):
        """The parameter types of non-template header function ``fd`` (None for a pointer
        parameter or a type it cannot name here)."""
        specs = self._param_specs(fd)
        if any(k != "value" for k, _ in specs):
            return None
        return [t for _, t in specs]

    def _param_specs(self, fd):
        """Per parameter of header function ``fd``: ``("ptr", elem type or None)``,
        ``("value", type)``, ``("deduced", None)`` (a template type parameter's name) or
        ``("unknown", None)`` (a type it cannot name before the call binds the template)."""
        saved_sig, self.in_signature = self.in_signature, True
        tnames = {tn for k, tn in fd.tparams}
        out = []
        try:
            with self.in_ctx(self.funcdef_ctx(fd), self.scopes, getattr(fd, "ns", None) or self.global_syms.root):
                for p in _params_of(fd.node):
                    decl, tnode = p.child_by_field_name("declarator"), p.child_by_field_name("type")
                    ptr = decl is not None and decl.type in ("pointer_declarator", "array_declarator")
                    if set(re.findall(r"\w+", self.text(tnode))) & tnames:
                        out.append(("ptr" if ptr else "deduced", None))
                        continue
                    try:
                        t = self.resolve_type(tnode)[0]
                    except (MetalbenchError, _NoMatch):
                        t = None
                    out.append(("ptr", t) if ptr else ("value", t) if t is not None else ("unknown", None))
            return out
        finally:
            self.in_signature = saved_sig

    def funcdef_ctx(self, fd) -> Ctx:
        """Where header function ``fd``'s text is (code, masked qualifiers, source, line offset)."""
        return Ctx(self.funcdef_code[id(fd.node)], fd.quals, fd.src, fd.line_offset)

    def explicit_specialisations(self, cands, explicit, args):
        """``cands`` with each explicit specialisation (``template <> bool cv<bool, float>(float)``)
        first when it is the one the call names -- the call's template arguments a prefix of
        its own, its parameters the arguments' types exactly -- and left out otherwise (C++
        chooses among the primary templates, then takes the specialisation of the one chosen)."""
        specs, rest = [], []
        for fd in cands:
            if getattr(fd, "spec_args", None) is None:
                rest.append(fd)
                continue
            try:
                with self.in_ctx(self.funcdef_ctx(fd), self.scopes):
                    own = self.template_args(fd.spec_args)
            except MetalbenchError:
                continue
            given = [v for _, v in explicit]
            named = len(given) <= len(own) and all(
                (a.value == b.value if isinstance(a, ir.Const) and isinstance(b, ir.Const) else a == b)
                for (_, a), b in zip(own, given))
            if named and self._param_types(fd) == [getattr(a, "type", None) for a in args]:
                specs.append(fd)
        return specs + rest

    def ranked(self, cands, args):
        """``cands`` (header overloads of a call) best first, as C++ overload resolution
        ranks them: per argument an exact type match over a conversion (int to float, half to
        float), a non-template over a template on a tie; an overload that cannot take an
        argument (a vector for a scalar, a value for a pointer) last. The order in the header
        breaks ties. Before, the first overload that could be specialised was taken:
        ``h(float)`` for ``h(int(i))`` though ``h(int)`` was declared next."""
        if len(cands) < 2:
            return cands

        def score(fd):
            total = 0
            for (kind, pt), a in zip(self._param_specs(fd), args):
                is_view = isinstance(a, View)
                if (kind == "ptr") != is_view:
                    return (-1, 0)
                at = a.type
                if kind == "ptr":
                    total += 3 if pt is None or pt == at else -100
                elif kind in ("deduced", "unknown"):
                    total += 2
                elif pt == at:
                    total += 3
                elif T.is_promotion(at, pt):      # short, char, bool to int: above a conversion
                    total += 2
                elif isinstance(pt, T.VectorType) != isinstance(at, T.VectorType) or \
                        isinstance(pt, T.VectorType) and pt.n != at.n:
                    if isinstance(at, T.VectorType) or not isinstance(pt, T.VectorType):
                        return (-1, 0)            # a vector for a scalar, other widths: not viable
                    total += 0                    # a scalar for a vector: its broadcast
                else:
                    total += 1
            return (0 if total < 0 else 1, total, 0 if fd.tparams else 1,
                    specialization(_params_of(fd.node), {tn for _, tn in fd.tparams},
                                   lambda n: self.funcdef_ctx(fd).code[n.start_byte:n.end_byte]))
        return sorted(cands, key=lambda fd: score(fd), reverse=True)

    def declared_return(self, fd, bind, scope):
        """The return type a header function declares (None: void): its type, a trailing
        ``-> R`` (resolved with its template arguments and parameters in scope, so
        ``-> decltype(v * 2.0f)`` works), or ``"auto"``: deduced from the first return
        statement while the body is translated (``statements.py``)."""
        decl = fd.node.child_by_field_name("declarator")
        while decl is not None and decl.type != "function_declarator":
            decl = decl.child_by_field_name("declarator")
        trailing = decl and next((c for c in decl.named_children if c.type == "trailing_return_type"), None)
        if trailing is None:
            return self.resolve_type(fd.node.child_by_field_name("type"))[0]
        saved, self.scopes = self.scopes, [self.global_syms, bind, scope]
        try:
            return self.resolve_type(trailing.named_children[0])[0]
        finally:
            self.scopes = saved

    def atomic_param(self, name, pname, deduced, atomic, a, sp, roots, sig):
        """Whether pointer parameter ``pname`` (declared ``atomic`` or not) points to atomics
        given the argument view ``a``; notes the output it points into in ``roots``. Metal
        converts neither a plain pointer into an atomic one nor back, so a mismatch is not this
        overload; a deduced ``device T*`` takes either. While deciding atomic_outputs
        (:mod:`.atomic_outputs`) an output bound to it is recorded as used atomically or plainly."""
        root = self.output_root(a.buf)
        if root is not None:
            roots[pname] = root
            if self.atomic_uses is not None:          # one translation per output it points into
                sig.append(("root", root))
        if deduced or atomic == a.atomic:
            if not deduced and not atomic and root is not None:     # with atomic outputs, no match
                self.use_of_output(a.buf, "plain", f"passed to {name}'s plain pointer parameter '{pname}'", sp)
            return atomic
        what = f"passed to {name}'s {'atomic' if atomic else 'plain'} pointer parameter '{pname}'"
        if self.use_of_output(a.buf, "atomic" if atomic else "plain", what, sp):
            return atomic
        if atomic:
            hint = "; pass atomic_outputs=True to metal_kernel" if root is not None else ""
            raise _NoMatch(f"'{pname}' points to atomics, got plain memory ('{root or a.buf}' is not "
                           f"atomic{hint}, or cast it: (device atomic_...*))")
        raise _NoMatch(f"'{pname}' points to plain memory, got atomics ('{root or a.buf}' is atomic)")

    def specialise(self, fd: FuncDef, name, args, explicit, node, lvals=None, extents=None):
        sp = self.sp(node)
        bad = [t for k, t in fd.tparams if k == "unsupported"]
        if bad:
            self.unsupported(node, f"calling '{name}', whose template parameter '{bad[0]}' (a variadic or "
                                   "template template parameter)")
        lvals = lvals or [None] * len(args)
        passing = []          # per parameter: "value", "ptr", ("ref", view) or ("copy", var)
        # switch to the header's text
        sig_outer = self.in_signature     # (SFINAE, below) restored at the end
        saved = (self.code, self.quals, self.cur_src, self.line_offset, self.scopes, self.pre,
                 self.lazy, self.ret_type, self.in_kernel, self.view_decls, self.alias_names,
                 self.inline_stack, self.this_stack, self.global_syms.ns)
        self.inline_stack, self.this_stack = [], []      # a function of its own: no enclosing member call
        self.global_syms.ns = getattr(fd, "ns", None) or self.global_syms.root
        self.code = self.funcdef_code[id(fd.node)]
        self.quals, self.cur_src, self.line_offset = fd.quals, fd.src, fd.line_offset
        try:
            bind = {}
            for (kind, tn), ex in zip(fd.tparams, explicit):
                if (kind == "type") != (ex[0] == "type"):
                    given = f"the type {getattr(ex[1], 'msl', ex[1])}" if ex[0] == "type" else "a value"
                    raise _NoMatch(f"template argument {tn} must be {'a type' if kind == 'type' else 'a value'}, "
                                   f"got {given}")
                if kind == "type":
                    bind[tn] = _TypeName(ex[1])
                else:
                    c = fold(ex[1])
                    if not isinstance(c, ir.Const):
                        raise _NoMatch(f"template argument {tn} must be a constant")
                    bind[tn] = c
            self.scopes = [self.global_syms, bind]
            defaults = getattr(fd, "tdefaults", {})
            for kind, tn in fd.tparams:           # value parameters not given: their defaults
                if kind == "value" and tn not in bind and tn in defaults:
                    c = fold(self.expr(defaults[tn]))
                    if not isinstance(c, ir.Const):
                        raise _NoMatch(f"the default of template argument {tn} is not a constant")
                    bind[tn] = c
            tnames = {tn for k, tn in fd.tparams if k == "type"}
            params = _params_of(fd.node)
            if len(args) < len(params):     # default arguments, evaluated in the header's scope
                args = list(args) + [self.expr(p.child_by_field_name("default_value"))
                                     for p in params[len(args):]]
                lvals = list(lvals) + [None] * (len(params) - len(lvals))
            fparams = []
            sig = []
            scope = {}
            deduced = set()         # template parameters deduced from an argument (not given)
            roots = {}              # pointer/reference parameter -> the output it is (atomic_outputs.py)
            cprologue = []          # complex64_t value parameters as complex locals (complex64.py)
            # locals this call passes to non-const references: a const reference to one of them
            # must see the writes (g(v, v) with g(thread T& a, const thread T& b))
            written_vars = {lv[1].name for p, lv in zip(params, lvals)
                            if lv is not None and lv[0] == "var" and _nonconst_ref(self, p)}
            for p, a, lv in zip(params, args, lvals):
                tnode = p.child_by_field_name("type")
                decl = p.child_by_field_name("declarator")
                quals = self.quals_before(p.start_byte, tnode.start_byte)
                space = next((q for q in quals if q in _SPACES), None)
                is_ptr = decl is not None and decl.type in ("pointer_declarator", "array_declarator")
                is_ref = decl is not None and decl.type == "reference_declarator"
                if is_ptr and decl.type == "pointer_declarator" and \
                        decl.child_by_field_name("declarator") is not None and \
                        decl.child_by_field_name("declarator").type == "reference_declarator":
                    # T* thread& p: the caller's pointer itself; a move of it must reach the caller
                    pn = self.text(decl.child_by_field_name("declarator").named_children[-1]).strip()
                    if pn in self.assigned_names(fd.node.child_by_field_name("body")):
                        self.unsupported(p, f"moving '{pn}', a pointer passed by reference (the caller's pointer "
                                            "would have to move too); return the new pointer or its offset instead")
                const = any(c.type == "type_qualifier" and self.text(c) == "const" for c in p.children)
                size = decl.child_by_field_name("size") if decl is not None and decl.type == "array_declarator" \
                    else None
                # `thread T (&v)[N]`, an array passed by reference (MLX's sort.h): an array parameter
                # `uint3 tid [[threadgroup_position_in_grid]]` (MLX's qmm_t_impl): the attribute only
                # documents what the caller passes; the name is the declarator's first child
                while decl is not None and decl.type in ("pointer_declarator", "reference_declarator", "array_declarator",
                                                         "parenthesized_declarator", "attributed_declarator"):
                    decl = decl.named_children[0] if decl.type == "attributed_declarator" \
                        else decl.child_by_field_name("declarator") or decl.named_children[-1]
                if size is not None and size.type == "identifier" and self.text(size) not in bind and \
                        ("value", self.text(size)) in fd.tparams:
                    ext = (extents or [None] * len(args))[len(fparams)] if len(fparams) < len(extents or []) else None
                    if ext is None:
                        raise _NoMatch(f"cannot deduce '{self.text(size)}' from the argument for "
                                       f"'{self.text(p)}' (pass an array of known size)")
                    bind[self.text(size)] = ir.Const(ext, T.int32)
                pname = self.text(decl) if decl is not None else f"_p{len(fparams)}"
                tname = self.text(tnode).strip()
                # deduce T from the argument; deduced from two arguments as two types: no match (C++)
                if tname in deduced and not is_ptr and not isinstance(a, View) and \
                        getattr(bind[tname], "t", None) != a.type:
                    raise _NoMatch(f"'{tname}' deduced as {bind[tname].t.name} and as {a.type.name}")
                if tname in tnames and tname not in bind:
                    deduced.add(tname)
                    if is_ptr:
                        if not isinstance(a, View):
                            raise _NoMatch(f"argument for '{pname}' must be a buffer")
                        bind[tname] = _TypeName(a.type)
                    elif isinstance(a, View) and not is_ref:
                        # `template <typename P> f(P p)` given a pointer: P is the pointer type
                        # (so `P q = p + 1;` in the body declares a pointer too)
                        bind[tname] = _TypeName(PtrType(a.type, a.space, a.const))
                    else:
                        if isinstance(a, View):
                            raise _NoMatch(f"argument for '{pname}' must be a value")
                        bind[tname] = _TypeName(a.type)
                elif tnode.type in ("template_type", "qualified_identifier", "dependent_type") and \
                        not isinstance(a, View) and isinstance(a.type, (T.VectorType, T.MatrixType)) and \
                        {n for _, n in fd.tparams} - set(bind):   # vec<U, K> v of a vector (cxx_templates)
                    if not self.deduce(tnode, _TypeName(a.type), bind, {n for _, n in fd.tparams}):
                        raise _NoMatch(f"'{pname}' is a {tname}, got a {a.type.name}")
                if set(re.findall(r"\w+", tname)) & ({n for _, n in fd.tparams} - set(bind)):
                    raise _NoMatch(f"cannot deduce the template arguments of '{tname}' from the argument "
                                   f"for '{pname}'")
                pt, atomic = self.resolve_type(tnode)
                if isinstance(pt, PtrType):      # P p (using P = device float*, or a deduced P)
                    if is_ptr or is_ref:
                        self.unsupported(p, "a pointer to a pointer, or a reference to a pointer")
                    is_ptr, space, const, pt = True, pt.space, pt.const, pt.elem
                if is_ref:
                    if isinstance(a, View):
                        self.unsupported(p, "a reference to a pointer or array")
                    aliased = lv is not None and lv[0] == "var" and lv[1].name in written_vars
                    if const and not aliased and (lv is None or space is None or lv[0] != "loc"):
                        # const T& x of a value or a variable: a value (nothing to copy back); not when
                        # the variable is also another argument, which the call may write through
                        is_ref = False
                    elif lv is None:
                        raise _NoMatch(f"'{pname}' is a reference: its argument must be a variable or an "
                                       "array element")
                    elif a.type != pt:
                        raise _NoMatch(f"'{pname}' is a {pt.name}&, got a {a.type.name}")
                if is_ref:
                    # an element: a pointer to it; a local variable: a one-element copy that is
                    # copied back after the call (no other function can see the variable)
                    r_space = lv[1].space if lv[0] == "loc" else "thread"
                    r_atomic = lv[0] == "loc" and lv[1].atomic
                    if lv[0] == "loc" and self.output_root(lv[1].buf) is not None:
                        roots[pname] = self.output_root(lv[1].buf)
                        if self.atomic_uses is not None:      # one translation per output
                            sig.append(("root", roots[pname]))
                    # the parameter points to scalars (a vector reference: its components, which
                    # the function reads and writes through a view of the vector type)
                    fparams.append(ir.FuncParam(pname, storage_elem(pt), r_space, const))
                    scope[pname] = Ref(self.sem.view_of(pname, pt, r_space, const=const, atomic=r_atomic))
                    sig.append(("ref", pt.name, r_space, r_atomic))
                    passing.append(("ref", self.sem.view_offset(lv[1], lv[2], sp)) if lv[0] == "loc"
                                   else ("copy", lv[1]))
                    continue
                if is_ptr:
                    if not isinstance(a, View) or a.inner:
                        raise _NoMatch(f"argument for '{pname}' must be a pointer into a buffer or array")
                    if pt is None:          # device void* p: untyped; the function casts it
                        if not isinstance(a.type, T.ScalarType):
                            self.unsupported(p, f"a void pointer to {a.type.name} data")
                        pt = a.type
                    if a.type != pt:
                        raise _NoMatch(f"'{pname}' points to {pt.name}, got {a.type.name} data")
                    if space is not None and a.space != space:
                        raise _NoMatch(f"'{pname}' points to {space} memory, got {a.space} memory"
                                       + SMALL_INPUT_NOTE * (a.space == "constant"))
                    if a.const and not const and space != "constant":     # (constant: read-only itself)
                        raise _NoMatch(f"'{pname}' is not a const pointer; the argument points at "
                                       "read-only memory")
                    sp_name = space or a.space
                    atomic = self.atomic_param(name, pname, tname in tnames, atomic, a, sp, roots, sig)
                    # a vector pointer's storage is its components (as for a vector reference)
                    fparams.append(ir.FuncParam(pname, storage_elem(pt), sp_name, const))
                    scope[pname] = Buf(pname, pt, sp_name, atomic=atomic or a.atomic, const=const)
                    sig.append(("buf", pt.name, sp_name, a.atomic))
                    passing.append("ptr")
                else:
                    if isinstance(a, View):
                        raise _NoMatch(f"argument for '{pname}' must be a value, not an array")
                    if isinstance(pt, ComplexType):
                        self.complex_value_param(pname, scope, fparams, sig, passing, cprologue)
                        continue
                    fparams.append(ir.FuncParam(pname, pt))
                    scope[pname] = ir.Var(pname, pt)
                    sig.append(pt.name)
                    passing.append("value")
            # the rest of the signature: a substitution failure there (enable_if_t<false>) drops
            # this overload (SFINAE: _NoMatch, the next candidate), in the body it is an error
            self.in_signature = True
            try:
                for kind, tn in fd.tparams:           # type parameters neither given nor deduced
                    if kind == "type" and tn not in bind and tn in defaults:
                        bind[tn] = _TypeName(self.resolve_type(defaults[tn])[0])
                for tnode in getattr(fd, "sfinae", ()):     # template <.., enable_if_t<c, bool> = true>
                    self.resolve_type(tnode)
                ret = self.declared_return(fd, bind, scope)
            finally:
                self.in_signature = False       # the body (below) is no signature, whoever called
            key = (name, id(fd.node), tuple(sig),
                   tuple((k, getattr(v, "t", getattr(v, "value", None))) for k, v in sorted(bind.items())))
            fname = self._spec_names.get(key)
            if fname is None:
                if key in self.specialising:
                    self.unsupported(node, "a recursive function")
                short = name.split("::")[-1]          # ns::f specialises as an IR function f
                if short.startswith("operator") and not short.isidentifier():
                    from .cxx_calls import _ident         # operator+ as an IR function: operator_plus
                    short = _ident(short)
                fname = short if short not in self.used_names else self.fresh(short)
                self.used_names.add(fname)
                self._spec_names[key] = fname
                self.specialising.add(key)
                self.scopes = [self.global_syms, bind, scope]
                self.pre = None
                self.lazy = 0
                self.ret_type = ret
                self.in_kernel = False
                used_before = set(self.used_names)
                self.used_names |= set(scope) | {v.name for d in cprologue for v in [d.var]}
                self.view_decls, self.alias_names = [], {}
                body_node = fd.node.child_by_field_name("body")
                saved_roots, self.out_roots = self.out_roots, roots
                self.call_sites.append(sp)
                try:
                    prologue = cprologue + self.advance_params(body_node, scope)
                    body = prologue + self.block(body_node)
                except MetalbenchError as e:
                    raise e.add_call_site(sp)        # show the body line that called it too
                finally:
                    self.out_roots = saved_roots
                    self.call_sites.pop()
                body = self.view_decls + body
                # drop the body's local names, keep every function name: one specialised inside
                # this body (wide<IPG> in body<M, IPG>) must not be named again by the next
                self.used_names = used_before | {fname} | set(self._spec_funcs)
                if ret == "auto":          # deduced from its return statements (statements.py)
                    ret = None if self.ret_type == "auto" else self.ret_type
                f = ir.Function(fname, fparams, self.complex_carrier(ret), body, span=self.sp(fd.node))
                self._spec_funcs[fname] = f
                self.specialising.discard(key)
                self.func_order.append(f)
        finally:
            (self.code, self.quals, self.cur_src, self.line_offset, self.scopes, self.pre,
             self.lazy, self.ret_type, self.in_kernel, self.view_decls, self.alias_names,
             self.inline_stack, self.this_stack, self.global_syms.ns) = saved
            self.in_signature = sig_outer
        if ret == "auto":                  # a specialisation translated before: its deduced type
            ret = self._spec_funcs[fname].ret
        conv_args, copies, shared_copies = [], [], []
        for a, p, how in zip(args, fparams, passing):
            if how == "ptr":
                conv_args.append(self.sem.view_arg(a, sp))
            elif how == "value":
                conv_args.append(self.sem.convert(a, p.type))
            elif how == "complex":           # complex64_t(a), passed as its parts (complex64.py)
                conv_args.append(self.complex_arg(a, sp))
            elif how[0] == "ref":
                conv_args.append(self.sem.view_arg(how[1], sp))
            else:
                var = how[1]
                shared = next((b for v, b in shared_copies if v.name == var.name), None)
                if shared is not None:      # g(v, v): both references name the one variable
                    conv_args.append(ir.BufArg(shared, span=sp))
                    continue
                arr = self.fresh(f"_{var.name}_ref")
                shared_copies.append((var, arr))
                # a one-element copy (a vector: its components, as Metal lays it out), read and
                # written through a view of the variable's type
                n = T.padded(var.type.n) if isinstance(var.type, T.VectorType) else \
                    2 if isinstance(var.type, ComplexType) else 1
                self.emit_pre(ir.ArrayDecl(arr, "thread", storage_elem(var.type), (n,), span=sp), sp)
                view = self.sem.view_of(arr, var.type, "thread", span=sp)
                for st in self.sem.view_store(view, ir.Const(0, T.int32), self.local_value(var, sp), sp):
                    self.emit_pre(st, sp)
                conv_args.append(ir.BufArg(arr, span=sp))
                copies.append((var, view))
        if fname not in self._spec_funcs:     # called from its own body: still being translated
            self.unsupported(node, f"'{name}' calling itself (a recursive function)")
        if not isinstance(ret, ComplexType) and not copies and all(h == "value" for h in passing) and \
                is_constexpr(fd, self.funcdef_code[id(fd.node)]):
            # a constexpr function called with constants is a constant expression (constexpr.py)
            v = call_value(self._spec_funcs[fname], conv_args, self._spec_funcs)
            if v is not None:
                return ir.Const(v.value, v.type, span=sp)
        call = ir.FuncCall(fname, conv_args, self.complex_carrier(ret), span=sp)
        if not copies:
            return self.complex_result(call, ret, sp)
        result = None
        if ret is not None:
            result = self.complex_result(self.new_tmp(call.type, call, sp), ret, sp)
        else:
            self.emit_pre(ir.ExprStmt(call, span=sp), sp)
        for var, view in copies:
            for st in self.local_assign(var, self.sem.view_load(view, ir.Const(0, T.int32), sp), sp):
                self.emit_pre(st, sp)
        return result


def _nonconst_ref(tr, p) -> bool:
    """Whether parameter declaration ``p`` is a reference to non-const (``thread T& a``)."""
    d = p.child_by_field_name("declarator")
    return d is not None and d.type == "reference_declarator" and \
        not any(c.type == "type_qualifier" and tr.text(c) == "const" for c in p.children)


def _arity_fits(params, n) -> bool:
    """Whether a function with ``params`` can be called with ``n`` arguments (trailing
    parameters with default values may be left out)."""
    required = sum(1 for p in params if p.child_by_field_name("default_value") is None)
    return required <= n <= len(params)
