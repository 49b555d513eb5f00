"""MSL memory locations: which buffer and element an lvalue or pointer expression
names (``a[i]``, ``a[i][j]``, ``*p``, ``p[i]``, ``x + off``, ``&x[i]``), with the index
arithmetic built by the semantic layer."""
from __future__ import annotations

from ... import ir
from ... import types as T
from .symbols import Buf, Ptr


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

    def location(self, node):
        """(Buf, linear index) of ``a[i]``, ``a[i][j]``, ``*p``, ``p[i]``."""
        if node.type == "pointer_expression" and self.text(node).lstrip().startswith("*"):
            arg = self.bufarg(node.child_by_field_name("argument"))
            if arg is None:
                self.unsupported(node, "this dereference")
            return self.buf_of(arg.buf), arg.offset or ir.Const(0, T.int32)
        if node.type == "parenthesized_expression":
            return self.location(node.named_children[0])
        if node.type != "subscript_expression":
            self.unsupported(node, f"'{self.text(node)}' as a memory location")
        idx_nodes = []
        base = node
        while base.type == "subscript_expression":
            inds = base.child_by_field_name("indices").named_children
            if len(inds) != 1:
                self.type_err(base, "one index per [] in MSL")
            idx_nodes.insert(0, inds[0])
            base = base.child_by_field_name("argument")
        idxs = [self.index_expr(i) for i in idx_nodes]
        if base.type == "identifier":
            sym = self.lookup(self.text(base))
            if isinstance(sym, Buf):
                return sym, self.linear(sym, idxs, node)
            if isinstance(sym, Ptr):
                if len(idxs) != 1:
                    self.type_err(node, "a pointer takes one index")
                return sym.buf, self.add_idx(sym.off, idxs[0])
        arg = self.bufarg(base)
        if arg is not None and len(idxs) == 1:
            b = self.buf_of(arg.buf)
            return b, self.add_idx(arg.offset, idxs[0]) if arg.offset is not None else idxs[0]
        self.type_err(base, f"'{self.text(base)}' is not an array or buffer")

    def add_idx(self, a, b):
        if a is None:
            return b
        return self.sem.binop("+", a, b, b.span)

    def linear(self, buf, idxs, node):
        shape = buf.shape or (None,)
        if len(idxs) > len(shape):
            self.type_err(node, f"too many indices for '{self.text(node).split('[')[0]}'")
        if len(idxs) < len(shape):
            self.type_err(node, "a partial index of a multi-dimensional array is not a value")
        return self.sem.linear_index(idxs, list(shape), self.sp(node))

    def bufarg(self, node):
        """A BufArg for a pointer-valued expression (``x``, ``x + off``, ``&x[i]``,
        ``tile[r]`` of a 2-D array, a local pointer), or None."""
        k = node.type
        if k == "parenthesized_expression":
            return self.bufarg(node.named_children[0])
        if k == "identifier":
            sym = self.lookup(self.text(node))
            if isinstance(sym, Buf):
                return ir.BufArg(sym.name, span=self.sp(node))
            if isinstance(sym, Ptr):
                return ir.BufArg(sym.buf.name, sym.off, span=self.sp(node))
            return None
        if k == "binary_expression" and self.text(node.child_by_field_name("operator")) in "+-":
            a = self.bufarg(node.child_by_field_name("left"))
            if a is None:
                return None
            off = self.index_expr(node.child_by_field_name("right"))
            if self.text(node.child_by_field_name("operator")) == "-":
                base = a.offset if a.offset is not None else ir.Const(0, T.int32)
                return ir.BufArg(a.buf, self.sem.binop("-", base, off, off.span), span=self.sp(node))
            return ir.BufArg(a.buf, self.add_idx(a.offset, off), span=self.sp(node))
        if k == "pointer_expression" and self.text(node).lstrip().startswith("&"):
            buf, idx = self.location(node.child_by_field_name("argument"))
            return ir.BufArg(buf.name, idx, span=self.sp(node))
        if k == "subscript_expression":
            base = node.child_by_field_name("argument")
            if base.type == "identifier":
                sym = self.lookup(self.text(base))
                if isinstance(sym, Buf) and sym.shape and len(sym.shape) == 2:
                    i = self.index_expr(node.child_by_field_name("indices").named_children[0])
                    off = self.sem.binop("*", i, ir.Const(int(sym.shape[1]), T.int32), i.span)
                    return ir.BufArg(sym.name, off, span=self.sp(node))
        return None
