"""Threadgroup arrays that one pointer points into in turn (ping-pong buffers)::

    threadgroup float a[D];
    threadgroup float b[D];
    threadgroup float* src = a;
    threadgroup float* dst = b;
    for (...) { ...; threadgroup float* t = src; src = dst; dst = t; }

The IR has no pointer values: a pointer is a buffer known when the kernel is compiled plus
an offset (``semantics/views.py``), so ``src = dst`` could not change which array ``src``
reads. Threadgroup memory is one address space on the GPU, so such arrays are laid out one
after another in a single threadgroup array (a *pool*): each array is a fixed view of the
pool at its start, and a pointer into any of them is the pool plus an offset, which an
assignment (or ``c ? a : b``) can change.

Which arrays share a pool is found before the body is translated
(:meth:`TgPoolsMixin.find_tg_pools`): names linked by a pointer declaration or assignment
(``T* p = a``, ``auto p = a + k``, ``p = q``, ``p = &b[i]``, ``p = c ? a : b``) are joined,
and each group holding two or more threadgroup arrays declared in the kernel body is pooled
(by name, not by scope: a shadowing name at worst pools arrays that did not need it). An
array of another element type or row shape than the pool's keeps its own storage (and
assigning between them stays an error).

What the checked simulator loses: it sees one buffer, so an index past the end of one
pooled array that lands in the next is not reported as out of bounds (as on the GPU, where
it reads the neighbour).
"""
from __future__ import annotations

from dataclasses import replace

from ... import ir
from ... import types as T
from .symbols import Ptr


def _roots(node, text, known):
    """The names in ``known`` a pointer expression may point into (``a + k``, ``&a[i]``,
    ``(T*)a``, ``c ? a : b``, a row ``a[r]``)."""
    k = node.type
    if k == "identifier":
        n = text(node)
        return {n} if n in known else set()
    if k in ("parenthesized_expression", "cast_expression"):
        kids = node.named_children
        return _roots(kids[-1], text, known) if kids else set()
    if k == "binary_expression":
        return _roots(node.child_by_field_name("left"), text, known) | \
            _roots(node.child_by_field_name("right"), text, known)
    if k == "conditional_expression":
        return _roots(node.child_by_field_name("consequence"), text, known) | \
            _roots(node.child_by_field_name("alternative"), text, known)
    if k in ("pointer_expression", "subscript_expression"):
        arg = node.child_by_field_name("argument")
        return _roots(arg, text, known) if arg is not None else set()
    return set()


def _declared_name(d):
    """(name, is_array, is_pointer) of a declarator."""
    is_array = is_ptr = False
    while d is not None and d.type in ("init_declarator", "array_declarator", "pointer_declarator"):
        is_array |= d.type == "array_declarator"
        is_ptr |= d.type == "pointer_declarator"
        d = d.child_by_field_name("declarator")
    return (d, is_array, is_ptr) if d is not None and d.type == "identifier" else (None, False, False)


class TgPoolsMixin:
    """Pooled threadgroup arrays: a part of :class:`~metalbench.frontend.msl.Translator`."""

    def find_tg_pools(self, body_node) -> dict:
        """{array name: pool number} for the threadgroup arrays of the body that a pointer
        moves between (the module docstring)."""
        arrays, pointers, links = set(), set(), []
        stack = [body_node]
        while stack:
            n = stack.pop()
            stack.extend(n.named_children)
            if n.type == "declaration":
                tnode = n.child_by_field_name("type")
                if tnode is None:
                    continue
                # (address spaces are masked out of the code and recorded by position: parse.py)
                tg = "threadgroup" in self.quals_before(n.start_byte, tnode.start_byte)
                auto = self.text(tnode).strip() == "auto"
                for d in n.children_by_field_name("declarator"):
                    name, is_array, is_ptr = _declared_name(d)
                    if name is None:
                        continue
                    if tg and is_array:
                        arrays.add(self.text(name))
                    if is_ptr or auto:
                        pointers.add(self.text(name))
                        val = d.child_by_field_name("value") if d.type == "init_declarator" else None
                        if val is not None:
                            links.append((self.text(name), val))
            elif n.type == "assignment_expression" and self.text(n.child_by_field_name("operator")) == "=":
                lhs = n.child_by_field_name("left")
                if lhs.type == "identifier":
                    links.append((self.text(lhs), n.child_by_field_name("right")))
        known = arrays | pointers
        parent = {}

        def find(a):
            parent.setdefault(a, a)
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        for name, val in links:
            if name not in pointers:
                continue
            for r in _roots(val, self.text, known):
                parent[find(r)] = find(name)
        groups = {}
        for a in arrays:
            groups.setdefault(find(a), []).append(a)
        pools = {}
        for k, members in enumerate(g for g in groups.values() if len(g) > 1):
            for a in members:
                pools[a] = k
        return pools

    def pooled_array(self, name, elem, dims, d, sp):
        """The symbol of threadgroup array ``name`` laid out in its pool (None: it keeps its
        own storage, another element type or row shape than the pool's)."""
        if not self.in_kernel:
            self.unsupported(d, "a threadgroup array declared in a device function")
        k = self.tg_pools[name]
        inner = tuple(dims[1:])
        size = 1
        for x in dims:
            size *= x
        pool = self.tg_pool_decls.get(k)
        if pool is not None and (pool[0].elem != elem or pool[1] != inner):
            return None
        key = (d.start_byte, d.end_byte)
        if pool is None:
            decl = ir.ArrayDecl(self.fresh("_tg_pool"), "threadgroup", elem, (0,), None, span=sp)
            self.tg_arrays.append(decl)
            pool = self.tg_pool_decls[k] = (decl, inner, {})
        decl, _, starts = pool
        if key not in starts:        # (a block translated twice, split on a buffer choice: once)
            # rows of the pool's row shape, so the start is a whole number of rows
            starts[key] = decl.shape[0] * (size // dims[0]) if inner else decl.shape[0]
            decl.shape = (decl.shape[0] + (dims[0] if inner else size),) + inner
            decl.parts = decl.parts + ((name, starts[key], size),)
        view = self.sem.view_of(decl.name, elem, "threadgroup", decl.shape, span=sp)
        return Ptr(replace(view, offset=ir.Const(starts[key], T.int32, span=sp)), None)
