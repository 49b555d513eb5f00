"""Arrays that one pointer points into in turn (ping-pong buffers), and threadgroup scalars::

    threadgroup float a[D];                   float s0[8], s1[8];
    threadgroup float b[D];                   thread float* src = s0;
    threadgroup float* src = a;               thread float* dst = s1;
    threadgroup float* dst = b;               ... src = dst; dst = t; ...
    for (...) { ...; threadgroup float* t = src; src = dst; dst = t; }

The IR has no pointer values: a pointer is a buffer known when the kernel is compiled plus
an offset (``semantics/views.py``), so ``src = dst`` could not change which array ``src``
reads. On the GPU such arrays live in one address space, so they are laid out one after
another in a single array (a *pool*): each array is a fixed view of the pool at its start,
and a pointer into any of them is the pool plus an offset, which an assignment (or
``c ? a : b``) can change.

Which arrays share a pool is found before the body is translated
(:meth:`ArrayPoolsMixin.find_array_pools`): names linked by a pointer declaration or
assignment (``T* p = a``, ``auto p = a + k``, ``p = q``, ``p = &b[i]``, ``p = c ? a : b``)
are joined, and each group holding two or more arrays of the kernel body of one address
space is pooled -- threadgroup arrays anywhere in the body (they are one allocation per
threadgroup, hoisted), thread arrays only when declared in the same block (the pool is
declared where the first of them is). Names, not scopes, link the pointers: a shadowing name
at worst pools arrays that did not need it. An array of another element type or row shape
than its pool's keeps its own storage (and assigning between them stays an error).

What the checked simulator loses: it sees one buffer, so an index past the end of one
pooled array that lands in the next is not reported as out of bounds (as on the GPU, where
it reads the neighbour); ``ir.ArrayDecl.parts`` lets the findings it does report name the
array the kernel declared, with that array's index.
"""
from __future__ import annotations

from dataclasses import replace

from ... import ir
from ... import types as T
from ...semantics.folding import coerce_value
from .symbols import Ptr, Ref


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


def _declared(d):
    """(identifier node, the array_declarator or None, is a pointer) of a declarator."""
    arr, is_ptr = None, False
    while d is not None and d.type in ("init_declarator", "array_declarator", "pointer_declarator"):
        if d.type == "array_declarator" and arr is None:
            arr = d
        is_ptr |= d.type == "pointer_declarator"
        d = d.child_by_field_name("declarator")
    return (d if d is not None and d.type == "identifier" else None), arr, is_ptr


class ArrayPoolsMixin:
    """Pooled arrays and threadgroup scalars: a part of :class:`~metalbench.frontend.msl.Translator`."""

    def find_array_pools(self, body_node) -> dict:
        """{(start, end) of an array's declarator: its pool} for the arrays of the body
        that a pointer moves between (the module docstring)."""
        arrays, pointers, links = {}, set(), []
        stack = [body_node]
        while stack:
            n = stack.pop()
            stack.extend(n.named_children)
            if n.type == "declaration":
                tnode = n.child_by_field_name("type")
                if tnode is None:
                    continue
                # (address spaces are masked out of the code and recorded by position: parse.py)
                quals = self.quals_before(n.start_byte, tnode.start_byte)
                space = next((q for q in ("threadgroup", "thread", "device", "constant") if q in quals), "thread")
                auto = self.text(tnode).strip() == "auto"
                for d in n.children_by_field_name("declarator"):
                    name, arr, is_ptr = _declared(d)
                    if name is None:
                        continue
                    if arr is not None and not is_ptr and space in ("threadgroup", "thread"):
                        block = (n.parent.start_byte, n.parent.end_byte) if space == "thread" else None
                        arrays.setdefault(self.text(name), []).append(((arr.start_byte, arr.end_byte), space, block))
                    if is_ptr or auto:
                        pointers.add(self.text(name))
                        val = d.child_by_field_name("value") if d.type == "init_declarator" else None
                        if val is not None:
                            links.append((self.text(name), val))
            elif n.type == "assignment_expression" and self.text(n.child_by_field_name("operator")) == "=":
                lhs = n.child_by_field_name("left")
                if lhs.type == "identifier":
                    links.append((self.text(lhs), n.child_by_field_name("right")))
        known = set(arrays) | pointers
        parent = {}

        def find(a):
            parent.setdefault(a, a)
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        for name, val in links:
            if name in pointers:
                for r in _roots(val, self.text, known):
                    parent[find(r)] = find(name)
        groups = {}
        for a, decls in arrays.items():
            for at, space, block in decls:
                groups.setdefault((find(a), space, block), []).append(at)
        pools = {}
        for k, members in enumerate(g for g in groups.values() if len(g) > 1):
            for at in members:
                pools[at] = k
        return pools

    def pooled_array(self, name, elem, dims, space, values, runtime, d, sp):
        """The statements that declare array ``name`` (``d``, an array_declarator of the
        kernel body in pool ``self.array_pools[...]``) as part of its pool, its symbol bound;
        None where it keeps its own storage (another element type or row shape than the
        pool's, or an initialiser of a threadgroup array, which is an error of its own)."""
        k = self.array_pools.get((d.start_byte, d.end_byte)) if self.in_kernel else None
        if k is None or (space == "threadgroup" and values is not None):
            return None
        inner = tuple(dims[1:])
        size = 1
        for x in dims:
            size *= x
        pool = self.array_pool_decls.get(k)
        if pool is not None and (pool[0].elem != elem or pool[1] != inner):
            return None
        key = (d.start_byte, d.end_byte)
        out = []
        if pool is None:
            decl = ir.ArrayDecl(self.fresh("_pool"), space, elem, (0,), None, span=sp)
            if space == "threadgroup":
                self.tg_arrays.append(decl)      # one allocation per threadgroup, hoisted
            else:
                out.append(decl)                 # declared where the block's first member is
            pool = self.array_pool_decls[k] = (decl, inner, {})
        decl, _, starts = pool
        if space == "thread" and not out and next(iter(starts), None) == key:
            out = [decl]             # the block translated again (split on a buffer choice): declared again
        if key not in starts:        # (a block translated twice, split on a buffer choice: once)
            starts[key] = decl.size
            if values is not None or decl.init is not None:
                zero = coerce_value(0, elem)
                decl.init = (decl.init or [zero] * starts[key]) + (values or [zero] * size)
            # rows of the pool's row shape, so the start is a whole number of rows
            decl.shape = (decl.shape[0] + (dims[0] if inner else size),) + inner
            decl.parts = decl.parts + ((name, starts[key], size),)
        start = starts[key]
        view = self.sem.view_of(decl.name, elem, space, decl.shape, span=sp)
        self.scopes[-1][name] = Ptr(replace(view, offset=ir.Const(start, T.int32, span=sp)), None)
        # {x[i], 1.0f}: a store per run-time value, after the constant parts
        return out + [ir.Store(decl.name, ir.Const(start + j, T.int32, span=sp), v, span=sp) for j, v in runtime]

    def threadgroup_scalar(self, name, base, init, atomic, sp, d):
        """``threadgroup float inv;``: one value shared by the threadgroup, a one-element
        threadgroup array that the name reads and writes at element 0 (as a reference)."""
        if init is not None:
            self.type_err(d, "threadgroup variables cannot have initialisers (Metal)")
        if not isinstance(base, T.ScalarType):
            self.unsupported(d, f"a threadgroup variable of type '{getattr(base, 'name', base)}'")
        if not self.in_kernel:
            self.unsupported(d, "a threadgroup variable declared in a device function")
        irname = self.fresh(name)
        a = ir.ArrayDecl(irname, "threadgroup", base, (1,), None, span=sp)
        self.scopes[-1][name] = Ref(self.sem.view_of(irname, base, "threadgroup", (1,), atomic=atomic, span=sp))
        return [a]
