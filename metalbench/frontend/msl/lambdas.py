"""C++ lambdas in kernel bodies: ``auto f = [&](float v) { return v * k; };`` then ``f(x)``.
A lambda is a function translated inline at each call (as header functions taking objects
are, ``cxx_calls.py``), in the text and scopes where it was written, so it sees the
variables it captures. Variables captured by copy (``[=]``, ``[k]``) are copied where the
lambda is defined, so later changes to them do not reach it; the rest are references::

    >>> from metalbench.frontend.msl import translate_kernel
    >>> from metalbench import ir, types as T
    >>> k = translate_kernel("k", "float s = 2.0f;\\n"
    ...     "auto scale = [&](float v) { return v * s; };\\n"
    ...     "out[0] = scale(x[0]) + scale(1.0f);",
    ...     inputs=[("x", T.float32, 1)], outputs=[("out", T.float32, 1)])
    >>> "scale" in ir.dump(k.body)
    True
"""
from __future__ import annotations

from dataclasses import replace

from ... import ir
from ... import types as ir_types
from .cxx_decls import Method, MethodSet
from .cxx_objects import StructObj
from .symbols import Buf, Ptr


def _returns_value(node) -> bool:
    """Whether a lambda body returns a value (its own ``return``s, not nested lambdas')."""
    stack = list(node.named_children)
    while stack:
        n = stack.pop()
        if n.type == "lambda_expression":
            continue
        if n.type == "return_statement" and n.named_children:
            return True
        stack.extend(n.named_children)
    return False


class LambdasMixin:
    """Lambdas: a part of :class:`~metalbench.frontend.msl.Translator`."""

    def declare_lambda(self, name, node, sp) -> list:
        """``auto name = [captures](params) -> R { body };``: a one-overload function set."""
        m = Method(name, node, [], True, "lambda", None)
        copies, decls = self.lambda_copies(node, sp)
        m.lambda_ctx = (self.ctx_here(), self.global_syms.ns, list(self.scopes) + ([copies] if copies else []))
        m.in_kernel = self.in_kernel
        self.scopes[-1][name] = MethodSet(None, name, [m])
        return decls

    def auto_param(self, p) -> bool:
        """Whether lambda parameter ``p`` has type ``auto`` (``[](auto v)``,
        ``[](const thread auto& v)``): a generic lambda, whose call deduces the parameter's
        type from the argument, as a template's (``cxx_calls.match``)."""
        tn = p.child_by_field_name("type")
        return p.type in ("parameter_declaration", "optional_parameter_declaration") and tn is not None \
            and self.text(tn).strip() == "auto"

    def lambda_copies(self, node, sp):
        """The local variables a lambda captures by copy (``[=]`` for those its body names,
        ``[k]``), copied here: ``({name: copy}, declarations)``: values, pointers (their
        position), objects and thread arrays (their contents), so later changes on either
        side stay on that side (:meth:`captured_copy`)."""
        cap = next((c for c in node.children if c.type == "lambda_capture_specifier"), None)
        if cap is None:
            return {}, []
        default, explicit = None, {}
        for c in cap.children:
            if c.type == "lambda_default_capture":
                default = self.text(c).strip()
            elif c.type == "identifier":
                prev = c.prev_sibling
                explicit[self.text(c)] = "ref" if prev is not None and self.text(prev).strip() == "&" else "copy"
        names, stack = [], [node.child_by_field_name("body")]
        while stack:
            n = stack.pop()
            if n is None:
                continue
            if n.type == "identifier":
                names.append(self.text(n))
            stack.extend(n.named_children)
        copies, decls = {}, []
        for nm in dict.fromkeys(list(explicit) + names):
            if explicit.get(nm, "copy" if default == "=" else "ref") != "copy":
                continue
            sym = self.lookup(nm)
            if not isinstance(sym, ir.Var) or sym.type is None:
                copied = self.captured_copy(nm, sym, decls, node, sp)
                if copied is not None:
                    copies[nm] = copied
                continue
            v = ir.Var(self.fresh(f"{nm}_copy"), sym.type, span=sp)
            decls.append(ir.Decl(v, ir.Var(sym.name, sym.type, span=sp), span=sp))
            copies[nm] = ir.Var(v.name, v.type, span=sp)
        return copies, decls

    def captured_copy(self, nm, sym, decls, node, sp):
        """A by-copy capture's copy of a non-value symbol, its declarations appended to
        ``decls``: a pointer (a new offset, the same buffer), an object (a copy), a thread array
        (a copy of its elements); None for anything else (kept as it is)."""
        if isinstance(sym, Ptr):
            off = ir.Var(self.fresh(f"{nm}_copy_off"), ir_types.int64, span=sp)
            decls.append(ir.Decl(off, ir.Var(sym.off.name, ir_types.int64, span=sp), span=sp))
            return Ptr(replace(sym.view, offset=off), off)
        if isinstance(sym, StructObj):
            obj = self.alloc_object(sym.cls, self.fresh(f"{nm}_copy"), decls, node)
            decls.extend(self.copy_object(obj, sym, node))
            return obj
        if isinstance(sym, Buf) and sym.space == "thread" and sym.shape:
            n = 1
            for d in sym.shape:
                n *= d
            name = self.fresh(f"{nm}_copy")
            decls.append(ir.ArrayDecl(name, "thread", sym.elem, tuple(sym.shape), span=sp))
            k = ir.Var(self.fresh("_k"), ir_types.int32, span=sp)
            decls.append(ir.CFor([ir.Decl(k, ir.Const(0, ir_types.int32), span=sp)],
                                 ir.BinOp("<", k, ir.Const(n, ir_types.int32), ir_types.bool_, span=sp),
                                 [ir.Assign(k, ir.BinOp("+", k, ir.Const(1, ir_types.int32), ir_types.int32), span=sp)],
                                 [ir.Store(name, k, ir.Load(sym.name, k, sym.elem, span=sp), span=sp)], span=sp))
            return replace(sym, name=name)
        return None

    def lambda_return_kind(self, m, scopes=None):
        """("value", type or "auto") or ("void", None): a trailing ``-> R`` or the body."""
        decl = m.node.child_by_field_name("declarator")
        trailing = None
        if decl is not None:
            trailing = next((c for c in decl.named_children if c.type == "trailing_return_type"), None)
        if trailing is not None:
            ctx, ns, sc = m.lambda_ctx
            with self.in_ctx(ctx, scopes or sc, ns):
                t, _ = self.resolve_type(trailing.named_children[0])
            return ("void", None) if t is None else ("value", t)
        return ("value", "auto") if _returns_value(m.node.child_by_field_name("body")) else ("void", None)
