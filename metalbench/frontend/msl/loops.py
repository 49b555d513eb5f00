"""Loops and switches of an MSL body: ``for`` (C style and range based) and ``switch``
(a loop that runs once, so ``break`` leaves it). Part of the :class:`Translator`.

    >>> from metalbench.frontend.msl.translator import Translator
    >>> hasattr(Translator, "range_for") and hasattr(Translator, "switch")
    True
"""
from __future__ import annotations

from ... import ir
from ... import types as T
from ...semantics.folding import const_value
from .symbols import Buf, Ptr


class LoopsMixin:
    def for_stmt(self, node):
        sp = self.sp(node)
        self.scopes.append({})
        try:
            init_n = node.child_by_field_name("initializer")
            init = []
            if init_n is not None:
                if init_n.type == "declaration":
                    pre, st = self.with_pre(lambda: self.declaration(init_n))
                else:
                    pre, st = self.with_pre(lambda: self.expr_stmt(init_n))
                init = pre + st
            cond_n = node.child_by_field_name("condition")
            cond = None
            cpre = []
            if cond_n is not None:
                cpre, cond = self.with_pre(lambda: self.sem.to_bool(self.expr(cond_n)))
            upd_n = node.child_by_field_name("update")
            upd = []
            if upd_n is not None:
                pre, st = self.with_pre(lambda: self.expr_stmt(upd_n))
                upd = pre + st
            body = self.body_of(node.child_by_field_name("body"))
        finally:
            self.scopes.pop()
        if cpre:
            brk = ir.If(self.sem.unop("!", cond, cond.span), [ir.Break(span=sp)], span=sp)
            body = cpre + [brk] + body
            cond = None
        return [ir.CFor(init, cond, upd, body, span=sp)]

    def switch(self, node):
        """``switch``: a loop that runs once (so ``break`` leaves it); each case runs when an
        earlier one fell through or its value matches; ``default`` when no value matches."""
        sp = self.sp(node)
        cnode = node.child_by_field_name("condition")
        pre, cond = self.with_pre(lambda: self.expr(cnode.child_by_field_name("value") or cnode.named_children[-1]))
        if not (isinstance(cond.type, T.ScalarType) and (cond.type.is_int or cond.type.is_bool)):
            self.type_err(cnode, "a switch needs an integer value")
        cond = self.sem.convert(cond, self.sem.rules.promote(cond.type))
        cases = [c for c in node.child_by_field_name("body").named_children if c.type == "case_statement"]
        for c in node.child_by_field_name("body").named_children:
            if c.type not in ("case_statement", "comment"):
                self.unsupported(c, "a statement before the first case of a switch")
        if any(n.type == "continue_statement" for c in cases for n in _outside_loops(c)):
            self.unsupported(node, "continue inside a switch")
        out = list(pre)
        cv = self.new_var("_sw", cond.type, cond, sp, out)
        hit = self.new_var("_hit", T.bool_, ir.Const(False, T.bool_), sp, out)
        values = []
        for c in cases:
            v = c.child_by_field_name("value")
            if v is not None:
                val = const_value(self.expr(v))
                if val is None:
                    self.type_err(v, "case values must be compile-time constants")
                values.append(self.sem.const(val, cond.type, self.sp(v)))
        body = []
        self.scopes.append({})
        try:
            for c in cases:
                v = c.child_by_field_name("value")
                if v is not None:
                    match = self.sem.binop("==", cv, self.sem.const(const_value(self.expr(v)), cond.type), sp)
                else:          # default: no case value matches
                    match = ir.Const(True, T.bool_)
                    for val in values:
                        match = self.sem.logical("and", match, self.sem.binop("!=", cv, val, sp), sp)
                stmts = []
                for st in c.named_children:
                    if (v is not None and st.start_byte == v.start_byte) or st.type == "comment":
                        continue
                    stmts.extend(self.stmt(st))
                body.append(ir.If(self.sem.logical("or", hit, match, sp),
                                  [ir.Assign(hit, ir.Const(True, T.bool_), span=sp)] + stmts, span=sp))
        finally:
            self.scopes.pop()
        return out + [ir.While(ir.Const(False, T.bool_), body, do_while=True, span=sp)]

    def range_for(self, node):
        """``for (T v : arr)`` over an array of static size: an index loop reading ``arr[k]``
        (``for (thread T& v : arr)``: ``v`` refers to ``arr[k]``)."""
        sp = self.sp(node)
        right = node.child_by_field_name("right")
        decl = node.child_by_field_name("declarator")
        sym = self.lookup(self.text(right)) if right.type == "identifier" else None
        if isinstance(sym, Ptr) and sym.off is None and sym.extent:     # an array of vectors
            count, rank = sym.extent, 1 + len(sym.view.inner)
        elif isinstance(sym, Buf) and sym.shape:
            count, rank = sym.shape[0], len(sym.shape)
        else:
            self.unsupported(node, "a range-based for over something that is not an array of known size")
        ref = decl.type == "reference_declarator" and decl.named_children[-1].type == "identifier"
        if decl.type != "identifier" and not ref:
            self.unsupported(decl, "a range-based for with a pattern variable")
        t, _ = self.resolve_type(node.child_by_field_name("type"))
        self.scopes.append({})
        try:
            k = ir.Var(self.fresh("_k"), T.int32, span=sp)
            view = self.sym_view(sym, right)
            elem = self.sem.view_load(view, k, sp) if rank == 1 else None
            if elem is None:
                self.unsupported(node, "a range-based for over a multi-dimensional array")
            if ref:      # ``for (thread auto& e : arr)``: ``e`` is element k itself
                head = self.element_ref(self.text(decl.named_children[-1]), t, view, k, decl, sp)
            else:
                t = elem.type if t == "auto" else t
                v = ir.Var(self.fresh(self.text(decl)), t, span=sp)
                self.scopes[-1][self.text(decl)] = v
                head = [ir.Decl(v, self.sem.convert(elem, t, sp), span=sp)]
            body = head + self.body_of(node.child_by_field_name("body"))
        finally:
            self.scopes.pop()
        return [ir.For(k, ir.Const(0, T.int32), ir.Const(int(count), T.int32), ir.Const(1, T.int32),
                       body, span=sp)]


def _outside_loops(node):
    """The nodes under ``node`` that are not inside a nested loop (or switch)."""
    stack = list(node.named_children)
    while stack:
        n = stack.pop()
        yield n
        if n.type not in ("for_statement", "while_statement", "do_statement", "for_range_loop",
                          "switch_statement"):
            stack.extend(n.named_children)

