"""Calls of C++ member functions, constructors and conversion operators (and of header
functions given objects), translated inline where they are called: overload choice,
template argument deduction, parameters bound as C++ binds them, and ``return``.

A member function may return a value, a reference (``thread T& at(int i)`` : the call is
the element itself, assignable), a pointer or an object. A ``return`` that is not the
body's last statement leaves the inlined body through a one-pass loop (a flag, and a
``break`` after every enclosing loop of the body), which the simulator and both printers
understand as any loop. ::

    >>> from metalbench.frontend.msl import translate_kernel
    >>> from metalbench import ir, types as T
    >>> hdr = '''
    ... template <typename T, int N>
    ... struct Buf {
    ...   T v[N];
    ...   thread T& at(int i) thread { return v[i]; }
    ... };'''
    >>> k = translate_kernel("k", "Buf<float, 4> b;\\nb.at(2) = 5.0f;\\nout[0] = b.at(2);", hdr,
    ...                      inputs=[], outputs=[("out", T.float32, 1)])
    >>> print(ir.dump(k.body))
    thread float32 b_v[4]
    int64 _at = 0
    int32 i = 2
    _at = int64(i)
    b_v[_at] = 5.0
    int64 _at_1 = 0
    int32 i_1 = 2
    _at_1 = int64(i_1)
    out[0] = b_v[_at_1]
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ... import ir
from ... import types as T
from ...errors import MetalbenchError
from .cxx_decls import ClassInst, ClassTemplate, Ctx, Method, MethodSet, _tparams_of, _unwrap_declarator
from .cxx_objects import NOT_MINE, InlineCtx
from .cxx_params import ArgVal
from .complex64 import CplxVar
from .constexpr import inlined_value
from ...semantics import ComplexType
from .metal_matrices import MetalMatrixType
from .parse import CONV_CALL
from .symbols import ShapeArr, _NoMatch, _params_of, _TypeName, specialization


@dataclass(eq=False)
class Binding:
    """One candidate of an overload set, matched to the call's arguments."""
    method: Method
    this: object
    args: list
    specs: list
    tbind: dict
    ctx: Ctx
    ns: object
    scopes: list
    score: int
    ctor: bool


def _assigned(body) -> set:
    """Names the body assigns or increments (pointer parameters it moves)."""
    out, stack = set(), [body]
    while stack:
        n = stack.pop()
        if n.type == "assignment_expression":
            lhs = n.child_by_field_name("left")
            if lhs.type == "identifier":
                out.add(lhs.text.decode())
        elif n.type == "update_expression":
            a = n.child_by_field_name("argument")
            if a.type == "identifier":
                out.add(a.text.decode())
        stack.extend(n.named_children)
    return out


_OP_WORDS = {"+": "plus", "-": "minus", "*": "times", "/": "div", "%": "mod", "=": "eq", "!": "not", "<": "lt",
             ">": "gt", "&": "and", "|": "or", "^": "xor", "~": "inv", "[": "at", "]": "", "(": "call", ")": ""}


def _ident(name: str) -> str:
    """A name usable in generated identifiers: ``operator+=`` -> ``operator_pluseq``."""
    if name.isidentifier():
        return name
    return "operator_" + "".join(_OP_WORDS.get(ch, "") for ch in name[len("operator"):]) \
        if name.startswith("operator") else "".join(ch if ch.isalnum() else "_" for ch in name)


class CxxCallsMixin:
    """C++ calls: a part of :class:`~metalbench.frontend.msl.Translator`."""

    # -- which function a call names ------------------------------------------------------
    def resolve_callee(self, fn, syntactic=False):
        """``(MethodSet, object or None, explicit template argument nodes)`` for a call of a
        member function, constructor or static member; None for other calls."""
        k = fn.type
        explicit = []
        if k == "field_expression":
            fld = fn.child_by_field_name("field")
            if fld.type == "dependent_name" and fld.named_children:
                fld = fld.named_children[0]
            if fld.type == "template_method":
                explicit = fld.child_by_field_name("arguments").named_children
                name = self.text(fld.child_by_field_name("name")).strip()
            else:
                name = self.text(fld).strip()
            if name == "thread_elements":
                return None
            base = fn.child_by_field_name("argument")
            if syntactic and base.type not in ("identifier", "field_expression", "this", "parenthesized_expression",
                                               "pointer_expression") and not self.is_object_node(base):
                return None
            # a chained call's receiver (a.add(1).add(2)) is translated to be known: only probed here
            obj = self.probe(lambda: self.object_of(base)) if syntactic else self.object_of(base)
            if obj is None:
                return None
            if name.startswith(CONV_CALL + "_"):       # x.operator T() (respelled by parse.py)
                convs = self.conversions(obj.cls, name[len(CONV_CALL):].lstrip("_"))
                if not convs:
                    self.type_err(fn, f"{obj.cls.name} has no conversion operator to "
                                      f"{name[len(CONV_CALL):].lstrip('_')}")
                return MethodSet(obj.cls, "operator_cast", convs[:1]), obj, explicit
            ms = self.class_member(obj.cls, name)
            if not isinstance(ms, MethodSet):
                if obj.fields.get(name) is not None or ms is not None:
                    self.type_err(fn, f"'{name}' is not a member function of {obj.cls.name}")
                self.defined_outside(obj.cls, name, fn)
                self.type_err(fn, f"{obj.cls.name} has no member function '{name}'")
            return ms, obj, explicit
        if k == "call_expression" and self.text(fn).replace(" ", "") == "operator()" and self.this_stack \
                and self.this_stack[-1] is not None:
            # operator()(a, b) inside a member function (MLX's reduction ops): this object's operator()
            ms = self.class_member(self.this_stack[-1].cls, "operator()")
            if isinstance(ms, MethodSet):
                return ms, self.this_stack[-1], explicit
        if k in ("identifier", "call_expression", "parenthesized_expression", "subscript_expression",
                 "compound_literal_expression") and self.is_object_node(fn):
            # a function object called: its operator() (op(a, b), Add()(a, b))
            obj = self.probe(lambda: self.object_value(fn)) if syntactic else self.object_value(fn)
            ms = self.class_member(obj.cls, "operator()")
            if not isinstance(ms, MethodSet):
                self.type_err(fn, f"'{self.quote(fn)}' is a {obj.cls.name}, which has no operator()")
            return ms, obj, explicit
        if k == "template_function":
            explicit = fn.child_by_field_name("arguments").named_children
            fn = fn.child_by_field_name("name")
            k = fn.type
        if k == "identifier":
            ms = self.lookup(self.text(fn).strip())
            if ms is None and self.text(fn).strip() in self.funcdefs:
                # a header function returning an object (S make(float v)): translated inline,
                # as functions taking objects are
                fs = self.funcdef_methods(self.text(fn).strip())
                if all(self.return_kind(m)[0] == "object" for m in fs.methods):
                    ms = fs
        elif k == "qualified_identifier":
            ms = self.entity_named(fn)
            name_n = fn.child_by_field_name("name")
            if name_n.type == "template_function" and not explicit:
                explicit = name_n.child_by_field_name("arguments").named_children
        else:
            return None
        if not isinstance(ms, MethodSet):
            return None
        this = None
        if self.this_stack and self.this_stack[-1] is not None and \
                any(not m.static for m in ms.methods):
            this = self.this_stack[-1]
        return ms, this, explicit

    def call_returns(self, node):
        """What a call gives, decided without translating it: "ptr", "ref", "object",
        "value", "void", or None when it is not a call this module translates."""
        fn = node.child_by_field_name("function")
        try:
            tgt = self.resolve_callee(fn, syntactic=True)
        except MetalbenchError:
            return None
        if tgt is None:
            return None
        kinds = {self.return_kind(m)[0] for m in tgt[0].methods}
        return kinds.pop() if len(kinds) == 1 else "value"

    def return_kind(self, m, scopes=None):
        """("void" | "value" | "ref" | "ptr" | "object", type or None) of method ``m``."""
        if m.kind == "ctor":
            return "void", None
        if m.kind == "lambda":
            return self.lambda_return_kind(m, scopes)
        fnode = m.node
        d = fnode.child_by_field_name("declarator")
        kinds = []
        while d is not None and d.type in ("pointer_declarator", "reference_declarator"):
            kinds.append("ptr" if d.type == "pointer_declarator" else "ref")
            d = d.child_by_field_name("declarator") or d.named_children[-1]
        tn = fnode.child_by_field_name("type")
        if m.kind == "conv":
            tn = d.child_by_field_name("type")
        ctx, ns, sc = self.method_ctx(m)
        with self.in_ctx(ctx, scopes or sc, ns):
            try:
                t, _ = self.resolve_type(tn)
            except MetalbenchError:
                t = "unknown"
                if tn is not None and tn.type == "template_type" and not kinds and isinstance(
                        self.lookup(self.text(tn.child_by_field_name("name")).strip()), ClassTemplate):
                    return "object", None   # V<T> before T is bound (an operator template): an object
        if "ref" in kinds:
            return "ref", t
        if "ptr" in kinds:
            return "ptr", t
        if t is None:
            return "void", None
        if isinstance(t, ClassInst):
            return "object", t
        if isinstance(t, MetalMatrixType):
            return "matrix", t                  # (metal_matrices)
        return "value", t

    def method_ctx(self, m):
        """(text context, namespace, scope chain) a method or header function is written in."""
        if m.cls is not None:
            return m.cls.ctx, m.cls.ns, self.class_scopes(m.cls)
        if m.kind == "lambda":                  # the text and scopes where it was written (lambdas.py)
            return m.lambda_ctx
        fd = m.fd
        return (self.funcdef_ctx(fd),
                getattr(fd, "ns", None) or self.global_syms.root, [self.global_syms])

    def funcdef_methods(self, name):
        out = []
        for fd in self.funcdefs.get(name, []):
            parent = fd.node.parent
            m = Method(name, fd.node, [], True, "func", None)
            m.fd = fd
            if parent is not None and parent.type == "template_declaration":
                ctx, ns, sc = self.method_ctx(m)
                with self.in_ctx(ctx, sc, ns):
                    m.tparams = _tparams_of(self, parent.child_by_field_name("parameters"))
            out.append(m)
        return MethodSet(None, name, out)

    # -- calls from the translator ----------------------------------------------------------
    def cxx_call(self, node, fn, argn, stmt):
        """A call this module translates (its value, or None for a statement), or NOT_MINE."""
        tgt = self.resolve_callee(fn)
        if tgt is None:
            name = self.callee_name(fn)
            if name in self.funcdefs and (any(self.is_object_node(a) or a.type == "initializer_list" or
                                              self.object_address(a) is not None or self.is_null_pointer(a)
                                              or self.is_struct_pointer_node(a)
                                              or self.shape_symbol(a) is not None for a in argn)
                                          or self.takes_class_value(name)
                                          or self._braced_defaults(name, len(argn))
                                          or self.has_matrices and self.metal_matrix_call(name, argn)):
                explicit = fn.child_by_field_name("arguments").named_children if fn.type == "template_function" else []
                tgt = self.funcdef_methods(name), None, explicit
            else:
                return NOT_MINE
        sp = self.sp(node)
        out, res, kind = self.call_target(node, tgt, with_kind=True)
        if kind == "value" and (c := inlined_value(out, res)) is not None:
            return c                  # a constant: Cfg::n() sizes an array (constexpr.py)
        for s in out:
            self.emit_pre(s, sp)
        if kind == "void":
            if not stmt:
                self.type_err(node, f"'{self.text(fn)}' returns nothing")
            return None
        if kind == "value":
            return self.local_value(res, sp) if isinstance(res, (ir.Var, CplxVar)) else res
        if kind == "ref":
            if res[0] == "obj":
                return None if stmt else self.convert_object(res[1], node)
            return self.lvalue_load(res, sp)
        if kind == "object":
            return None if stmt else self.convert_object(res, node)
        if stmt:
            return None
        if kind == "matrix":
            self.unsupported(node, f"a {res.mt.name} value here (matrices are supported in declarations, "
                                   "assignments, function arguments, their operators and transpose/determinant)")
        self.type_err(node, f"'{self.quote(node)}' is a pointer, not a value",
                      hint="index it (p[i]) or dereference it (*p)")

    def call_target(self, node, tgt=None, with_kind=False):
        """(statements, result) of a member function call node (result by its kind)."""
        fn = node.child_by_field_name("function")
        if tgt is None:
            tgt = self.resolve_callee(fn)
        ms, this, explicit_nodes = tgt
        args = [self.call_arg(a) for a in node.child_by_field_name("arguments").named_children]
        explicit = self.template_args(explicit_nodes) if explicit_nodes else []
        out, res, kind = self.call_overload(ms, this, args, explicit, node, with_kind=True)
        return (out, res, kind) if with_kind else (out, res)

    def shape_symbol(self, node):
        """The :class:`ShapeArr` an argument names (``x_shape``, ``x_strides``), else None."""
        sym = self.lookup(self.text(node)) if node.type == "identifier" else None
        return sym if isinstance(sym, ShapeArr) else None

    def call_arg(self, node):
        """An argument as :meth:`eval_arg` evaluates it; ``x_shape``/``x_strides`` (MLX's
        ``const constant int*``/``int64_t*``) as ``lv=("shape", sym)``: a pointer parameter
        of the inline-translated callee names the same shape (``bind_param``)."""
        sym = self.shape_symbol(node)
        return ArgVal(node, lv=("shape", sym)) if sym is not None else self.eval_arg(node)

    def call_overload(self, ms, this, args, explicit, node, ctor=False, with_kind=False):
        """Choose the overload of ``ms`` that matches ``args`` and translate it inline."""
        found, errors = [], []
        for m in ms.methods:
            try:
                found.append(self.match(m, this, args, explicit, node, ctor))
            except _NoMatch as e:
                errors.append(str(e))
        if not found:
            what = ms.name if ms.cls is None else f"{ms.cls.name}::{ms.name if ms.name != 'ctor' else ms.cls.name}"
            self.type_err(node, f"no overload of '{what}' matches these arguments" +
                          (": " + "; ".join(e for e in errors if e) if any(errors) else ""))
        if getattr(this, "const", False) and any(self._const_method(x.method) for x in found):
            found = [x for x in found if self._const_method(x.method)]    # a const object: const members only
        # a tie: the non-template, then the more specialised template (C++'s partial ordering),
        # then the member whose const-ness is the object's
        b = max(found, key=lambda x: (x.score, not x.method.tparams, self._specialization(x.method),
                                      self._const_method(x.method) == getattr(this, "const", False)))
        out, res, kind = self.inline(b, node)
        return (out, res, kind) if with_kind else (out, res)

    # -- matching ------------------------------------------------------------------------
    def match(self, m, this, args, explicit, node, ctor) -> Binding:
        ctx, ns, scopes = self.method_ctx(m)
        if not m.static and m.cls is not None and this is None and not ctor:
            raise _NoMatch(f"'{m.name}' needs an object")
        params = _params_of(m.node)
        required = sum(1 for p in params if p.type != "optional_parameter_declaration")
        if not required <= len(args) <= len(params):
            raise _NoMatch(f"takes {required}" + (f" to {len(params)}" if len(params) != required else "") +
                           " arguments")
        tbind: dict = {}
        tps = m.tparams
        if len(explicit) > len(tps):
            raise _NoMatch("too many template arguments")
        for p, (k, v) in zip(tps, explicit):
            if p.kind in ("type", "value") and (p.kind == "type") != (k == "t"):
                raise _NoMatch(f"template argument {p.name} must be {'a type' if p.kind == 'type' else 'a value'}, "
                               f"got {'the type ' + getattr(v, 'msl', str(v)) if k == 't' else 'a value'}")
            tbind[p.name] = _TypeName(v) if k == "t" else v
        names = {p.name for p in tps if p.name not in tbind}
        with self.in_ctx(ctx, scopes + [tbind], ns):
            for i, (p, a) in enumerate(zip(params, args)):
                if m.kind == "lambda" and self.auto_param(p):     # [](auto v): per call (lambdas.py)
                    tbind[f"__auto{i}"] = self.arg_type_name(_unwrap_declarator(p.child_by_field_name(
                        "declarator"))[1], a, "auto")
                else:
                    self.deduce_param(p, a, tbind, names)
            self.in_signature, outer = True, self.in_signature   # enable_if fails softly here (SFINAE)
            try:
                for p in tps:
                    if p.name in tbind:
                        continue
                    if p.default is None:
                        raise _NoMatch(f"cannot deduce the template parameter '{p.name}'")
                    if p.kind == "type":
                        tbind[p.name] = _TypeName(self.type_of_descriptor(p.default))
                    else:
                        tbind[p.name] = self.template_args([p.default])[0][1]
                self.sfinae_checks(m, tps)
            finally:
                self.in_signature = outer
            specs = [self.param_spec(p, i) for i, p in enumerate(params)]
        score = 0
        for s, a in zip(specs, args):
            score += self.arg_fits(s, a)
        return Binding(m, this, args + [None] * (len(params) - len(args)), specs, tbind, ctx, ns, scopes,
                       score, ctor)

    def _const_method(self, m) -> bool:
        """Whether member function ``m`` is declared ``const`` (``float get() const``)."""
        d = m.node.child_by_field_name("declarator")
        code = self.method_ctx(m)[0].code if m.cls is not None else ""
        return d is not None and any(c.type == "type_qualifier" and code[c.start_byte:c.end_byte] == "const"
                                     for c in d.children)

    def _specialization(self, m):
        """:func:`~.symbols.specialization` of method (or inline header function) ``m``."""
        with self.in_ctx(self.method_ctx(m)[0], self.scopes):
            return specialization(_params_of(m.node), {p.name for p in m.tparams}, self.text)

    def sfinae_checks(self, m, tps):
        """The parts of a member template's signature that may name a failing ``enable_if``:
        a value parameter's type (``enable_if_t<sizeof(T) < 8, bool> = true``) and the
        return type (``enable_if_t<is_integral_v<T>, T> f(T v)``); resolved with the
        template's arguments bound, a failure drops this overload (``_NoMatch``)."""
        for p in tps:
            if p.kind == "value" and p.vtype is not None and "enable_if" in self.text(p.vtype):
                self.resolve_type(p.vtype)
        ret = m.node.child_by_field_name("type")
        if ret is not None and "enable_if" in self.text(ret):
            self.resolve_type(ret)

    def inline(self, b: Binding, node):
        m = b.method
        key = id(m.node)
        if key in self._inlining:
            self.unsupported(node, f"the recursive function '{m.name}'")
        sp = self.sp(node)
        out: list = []
        pscope: dict = {}
        this_scope = [b.this.fields] if b.this is not None else []
        scopes = b.scopes + [b.tbind] + this_scope + [pscope]
        body_node = m.node.child_by_field_name("body")
        moved = _assigned(body_node)
        saved = (self.in_kernel, self.ret_type, self.pre, self.lazy)
        self._inlining.add(key)
        try:
            with self.in_ctx(b.ctx, scopes, b.ns):
                self.in_kernel, self.lazy, self.pre = getattr(m, "in_kernel", False), 0, out
                self.this_stack.append(b.this)
                try:
                    for s, a in zip(b.specs, b.args):
                        if a is None:
                            a = self.eval_arg(s.default)
                        self.bind_param(s, a, pscope, out, sp, s.name in moved)
                    kind, ret = self.return_kind(m, scopes)
                    stmts = [st for st in body_node.named_children if st.type != "comment"]
                    c = InlineCtx(m.name, kind, ret, stmts[-1] if stmts else None)
                    if b.ctor:
                        out += self.ctor_inits(b.this, m.node)
                    self.inline_stack.append(c)
                    try:
                        body = self.block(body_node)
                    finally:
                        self.inline_stack.pop()
                finally:
                    self.this_stack.pop()
        except MetalbenchError as e:
            raise e.add_call_site(sp) if hasattr(e, "add_call_site") else e
        finally:
            self.in_kernel, self.ret_type, self.pre, self.lazy = saved
            self._inlining.discard(key)
        if c.done is not None:
            body = [ir.While(ir.Const(True, T.bool_), _guard_loops(body, c.done.name) + [ir.Break(span=sp)],
                             span=sp)]
        res = c.result
        if kind == "ptr" and res is not None:
            res = replace(res[0], offset=ir.Var(res[1].name, res[1].type, span=sp))
        if kind in ("value", "ref", "ptr", "object", "matrix") and res is None:
            self.type_err(node, f"'{m.name}' ends without returning a value")
        return c.decls + out + body, res, kind

    def ctor_inits(self, obj, fnode):
        """A constructor's member initialisers, members without one default-initialised."""
        inits = {}
        for c in fnode.named_children:
            if c.type == "field_initializer_list":
                for fi in c.named_children:
                    nm_n = fi.named_children[0]
                    val = fi.named_children[-1]
                    nm = self.text(nm_n).strip()
                    if nm not in obj.fields:
                        if val.named_children:
                            self.unsupported(fi, f"initialising the base '{nm}' with arguments")
                        continue
                    inits[nm] = val
        return self.member_inits(obj, inits, fnode)

    # -- return ----------------------------------------------------------------------------------
    def inline_return(self, node):
        """``return`` inside a function being inlined: the result, then leaving the body."""
        c = self.inline_stack[-1]
        sp = self.sp(node)
        vals = node.named_children
        out: list = []
        if c.kind == "void":
            if vals:
                pre, st = self.with_pre(lambda: self.expr_stmt(vals[0]))
                out += pre + st
        elif c.kind == "value":
            known = c.ret not in (None, "auto", "unknown")
            pre, v = self.with_pre(lambda: self.value_as(vals[0], c.ret) if known else self.value_expr(vals[0]))
            t = c.ret if known else v.type
            if c.result is None and isinstance(t, ComplexType):     # complex64_t (complex64.py)
                scope = {}
                c.decls += self.complex_local("_r", self.complex_construct([], node), sp, scope)
                c.result = scope["_r"]
            if c.result is None:
                c.result = ir.Var(self.fresh(f"_{_ident(c.name)}"), t, span=sp)
                c.decls.append(ir.Decl(c.result, span=sp))
            out += pre + self.local_assign(c.result, v, sp)
        elif c.kind == "ref":
            pre, lv = self.with_pre(lambda: self.return_lvalue(vals[0]))
            out += pre
            if lv[0] == "loc":
                v, i = lv[1], lv[2]
                at = self.sem.view_offset(v, i, sp)
                if c.result is None:
                    off = ir.Var(self.fresh("_at"), T.int64, span=sp)
                    c.decls.append(ir.Decl(off, ir.Const(0, T.int64), span=sp))
                    c.result = ("loc", replace(at, offset=off), ir.Const(0, T.int32))
                elif c.result[0] != "loc" or c.result[1].buf != at.buf:
                    self.unsupported(node, "a function returning references to different places")
                off = c.result[1].offset
                out.append(ir.Assign(off, self.sem.convert(at.offset, T.int64, sp), span=sp))
            else:
                if c.result is not None and c.result[1] is not lv[1]:
                    self.unsupported(node, "a function returning references to different variables")
                c.result = lv
        elif c.kind == "ptr":
            pre, v = self.with_pre(lambda: self.pointer(vals[0]))
            out += pre
            if c.result is None:
                off = ir.Var(self.fresh("_ptr"), T.int64, span=sp)
                c.decls.append(ir.Decl(off, ir.Const(0, T.int64), span=sp))
                c.result = (v, off)
            elif c.result[0].buf != v.buf:
                self.unsupported(node, "a function returning pointers into different buffers")
            out.append(ir.Assign(c.result[1], self.sem.convert(v.offset, T.int64, sp), span=sp))
        elif c.kind == "matrix":
            out += self.return_matrix(c, vals[0], sp)        # (metal_matrices)
        elif vals[0].type == "initializer_list":     # return {a, b}; copy-list-initialises the object
            if c.result is None:
                c.result = self.alloc_object(c.ret, f"_{_ident(c.name)}", c.decls, node)
            out += self.construct(c.result, ("list", vals[0]), node)
        else:                   # an object
            pre, obj = self.with_pre(lambda: self.object_value(vals[0]) if self.is_object_node(vals[0]) else None)
            out += pre
            if obj is None:
                self.type_err(vals[0], f"'{c.name}' returns a {c.ret.name}")
            if c.result is None:
                c.result = self.alloc_object(c.ret, f"_{_ident(c.name)}", c.decls, node)
            out += self.copy_object(c.result, obj, node)
        if c.tail is None or (node.start_byte, node.end_byte) != (c.tail.start_byte, c.tail.end_byte):
            if c.done is None:
                c.done = ir.Var(self.fresh(f"_{_ident(c.name)}_done"), T.bool_, span=sp)
                c.decls.append(ir.Decl(c.done, ir.Const(False, T.bool_), span=sp))
            out += [ir.Assign(c.done, ir.Const(True, T.bool_), span=sp), ir.Break(span=sp)]
        return out

    def return_lvalue(self, node):
        if self.is_object_node(node):
            return ("obj", self.object_value(node))
        if node.type == "call_expression" and self.call_returns(node) == "ref":
            out, lv = self.call_target(node)
            for s in out:
                self.emit_pre(s, self.sp(node))
            return lv
        lv = self.lvalue(node)
        if lv is None:
            self.unsupported(node, "returning a reference to something that is not a variable, a member or "
                                   "an element")
        return lv


def _guard_loops(stmts, done):
    """After each loop that sets ``done`` (a return inside it), leave the enclosing loop too."""
    out = []
    for s in stmts:
        if isinstance(s, ir.If):
            s = replace(s, then=_guard_loops(s.then, done), orelse=_guard_loops(s.orelse, done))
        elif isinstance(s, (ir.For, ir.CFor, ir.While)):
            s = replace(s, body=_guard_loops(s.body, done))
        out.append(s)
        if isinstance(s, (ir.For, ir.CFor, ir.While)) and any(
                isinstance(n, ir.Assign) and n.var.name == done for n in ir.walk(s.body)):
            out.append(ir.If(ir.Var(done, T.bool_), [ir.Break()]))
    return out
