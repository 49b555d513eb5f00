"""A pointer into one of two buffers chosen at run time: ``(c ? FBW : GBW) + off``.

The IR has no pointer values (a pointer is a buffer known when the kernel is compiled plus
an offset), so the block splits where such a pointer is made: the rest of it is translated
once for each buffer, under ``if (c) {...} else {...}`` (:meth:`BufferChoiceMixin.split_on_buffer`,
called by ``statements.stmt_list``).

That changes what the rest does where threads of one group take different sides and the
rest holds a collective: a barrier, a SIMD-group or quad-group function, a SIMD-group
matrix function (``passes/collectives.py``, from the builtin registry), directly or in a
device function it calls. On the GPU all lanes of a SIMD-group run ``simd_sum`` together;
after the split each side would sum over its own lanes only. So once the kernel is
translated, :meth:`BufferChoiceMixin.check_buffer_splits` requires ``c`` of each split
followed by a collective to be uniform over the collective's group (threadgroup,
SIMD-group, quad-group: ``passes/uniformity.py`` with that group's attributes);
otherwise it joins the two sides where they agree (``buffer_merge.py``: the collectives
then run once, on every thread, and the choice is an ``if (c)`` around the statements that
read the pointer), and only where they cannot be joined (a collective whose own operands
come through the pointer) raises an error naming both lines.

Why a split and not a select (``c ? A[k] : B[k]`` per load): a pointer flows everywhere
a view does -- reinterpreting casts, struct views, atomics, SIMD-group matrix loads,
device function arguments -- and each would need a two-buffer form; and the select would
read the buffer not chosen, at an offset meant for the other one (out of its bounds for
the checked simulator and CUDA's read guard). The split reuses all of that unchanged.
"""
from __future__ import annotations

from ... import ir
from ... import types as T
from ...errors import KernelSyntaxError
from ...passes.collectives import SCOPES, collectives, describe, within
from .buffer_merge import merge_sides
from .cxx_objects import PendingPtr
from .symbols import METAL_ONLY

_GROUP_WORDS = {"threadgroup": "threadgroup", "simdgroup": "SIMD-group", "quadgroup": "quad-group"}


class _Split:
    """One split: the declaration of its condition, its ``if``, the ``?:``'s span, the
    buffers, and the threadgroup arrays each side declared (hoisted out of the sides: pairs
    ``(first side's, second side's)``, one array once the sides are joined)."""

    def __init__(self, decl, iff, span, bufs, shared=()):
        self.decl, self.iff, self.span, self.bufs, self.shared = decl, iff, span, bufs, shared


def _shared_arrays(tg_arrays: list, marks: list) -> list:
    """``(first side's, second side's)`` threadgroup arrays declared while translating the
    two sides (``tg_arrays[marks[0]:marks[1]]`` and ``[marks[1]:marks[2]]``), by position."""
    a, b = tg_arrays[marks[0]:marks[1]], tg_arrays[marks[1]:marks[2]]
    return list(zip(a, b)) if len(a) == len(b) else []


class BufferChoiceMixin:
    """Blocks split on a buffer choice: a part of :class:`~metalbench.frontend.msl.Translator`."""

    def split_on_buffer(self, e, rest, before):
        """``if (c) { rest, the pointer into the first buffer } else { rest, into the
        second }`` for the conditional ``e.node`` written in statement ``rest[0]`` (a
        declaration or an expression statement, the conditional not inside a loop, block
        or lambda of it, so ``c`` can be evaluated first); None where that does not hold.
        Collectives in ``rest`` are checked once the kernel is translated
        (:meth:`check_buffer_splits`)."""
        node, first = e.node, rest[0]
        if node is None or first.type not in ("declaration", "expression_statement"):
            return None
        p, child = node.parent, node
        while p is not None and not (p.start_byte == first.start_byte and p.end_byte == first.end_byte
                                     and p.type == first.type):
            if p.type in ("for_statement", "while_statement", "do_statement", "compound_statement",
                          "lambda_expression"):
                return None
            if p.type == "binary_expression" and self.text(p.child_by_field_name("operator")) in ("&&", "||") \
                    and child.start_byte == p.child_by_field_name("right").start_byte:
                return None                      # evaluated only sometimes
            if p.type == "conditional_expression" and child.start_byte != p.child_by_field_name("condition").start_byte:
                return None
            p, child = p.parent, p
        if p is None:
            return None
        key = (node.start_byte, node.end_byte)
        if key in self.buffer_choice:
            return None
        sp = self.sp(node)
        self.scopes[-1].clear()
        self.scopes[-1].update(before)
        pre, c = self.with_pre(lambda: self.sem.to_bool(self.expr(node.child_by_field_name("condition"))))
        which = ir.Var(self.fresh("_which"), T.bool_, span=sp)
        branches = []
        marks = [len(self.tg_arrays)]
        try:
            for side in (True, False):
                self.buffer_choice[key] = side
                self.scopes[-1].clear()
                self.scopes[-1].update(before)
                branches.append(self.stmt_list(rest))
                marks.append(len(self.tg_arrays))
        finally:
            self.buffer_choice.pop(key, None)
        decl = ir.Decl(which, c, span=sp)
        iff = ir.If(which, branches[0], branches[1], span=sp)
        self.buffer_splits.append(_Split(decl, iff, sp, e.bufs, _shared_arrays(self.tg_arrays, marks)))
        return pre + [decl, iff]

    def pending_pointer(self, name, base, space, is_const, sp) -> list:
        """``const device T* p;``: a pointer declared without a value. Its first assignment
        fixes the buffer it points into (``cxx_objects.bind_pointer``), and an if/else that
        sets it into one of two buffers splits the rest of the block
        (:meth:`split_on_pointer_if`).

        >>> import mlx.core as mx, numpy as np, metalbench as mb
        >>> k = mb.metal_kernel("pick", ["a", "b"], ["out"], '''
        ...     uint i = thread_position_in_grid.x;
        ...     const device float* p;
        ...     if (i < 2) { p = a + i; } else { p = b + (i - 2); }
        ...     out[i] = p[0];''')
        >>> k(inputs=[mx.array([1.0, 2.0]), mx.array([3.0, 4.0])], grid=(4, 1, 1),
        ...   threadgroup=(4, 1, 1), output_shapes=[(4,)], output_dtypes=[mx.float32])[0].tolist()
        [1.0, 2.0, 3.0, 4.0]
        """
        off = ir.Var(self.fresh(name + "_off"), T.int64, span=sp)
        self.scopes[-1][name] = PendingPtr(name, base, space or "thread", is_const, off)
        return [ir.Decl(off, ir.Const(0, T.int64, span=sp), span=sp)]

    def split_on_pointer_if(self, node, rest, before):
        """``if (c) p = A + i; else p = B + j;`` (each side one assignment, braces or not) for
        a pointer ``p`` this block declared without a value, A and B two buffers: the rest of
        the block is translated once per side under ``if (c)``, as for ``p = c ? A + i : B + j``
        (:meth:`split_on_buffer`; the same check of collectives after it). None where the
        statement is not that (then it is an ordinary ``if``)."""
        alt = node.child_by_field_name("alternative")
        if alt is None or self.is_if_constexpr(node):
            return None
        sides = [self._lone_assign(node.child_by_field_name("consequence")),
                 self._lone_assign(alt.named_children[-1] if alt.type == "else_clause" else alt)]
        if None in sides or sides[0][0] != sides[1][0] or not isinstance(before.get(sides[0][0]), PendingPtr):
            return None
        cnode = node.child_by_field_name("condition")
        cexpr = cnode.child_by_field_name("value") or cnode.named_children[-1]
        if cnode.child_by_field_name("initializer") is not None or cexpr.type == "declaration":
            return None
        bufs = tuple(self.probe(lambda r=r: self.pointer(r)).buf for _, r, _ in sides)
        if bufs[0] == bufs[1]:
            return None                  # one buffer: the assignments only move its offset
        sp = self.sp(node)
        pre, c = self.with_pre(lambda: self.sem.to_bool(self.expr(cexpr)))
        which = ir.Var(self.fresh("_which"), T.bool_, span=sp)
        branches = []
        marks = [len(self.tg_arrays)]
        for _, _, stmt in sides:
            self.scopes[-1].clear()
            self.scopes[-1].update(before)
            branches.append(self.stmt_list([stmt] + list(rest)))
            marks.append(len(self.tg_arrays))
        decl = ir.Decl(which, c, span=sp)
        iff = ir.If(which, branches[0], branches[1], span=sp)
        self.buffer_splits.append(_Split(decl, iff, sp, bufs, _shared_arrays(self.tg_arrays, marks)))
        return pre + [decl, iff]

    def _lone_assign(self, body):
        """(name, value node, statement) of a branch that is the one statement ``name = v;``."""
        if body is not None and body.type == "compound_statement":
            kids = [k for k in body.named_children if k.type != "comment"]
            body = kids[0] if len(kids) == 1 else None
        if body is None or body.type != "expression_statement" or not body.named_children:
            return None
        e = body.named_children[0]
        if e.type != "assignment_expression" or self.text(e.child_by_field_name("operator")) != "=" \
                or e.child_by_field_name("left").type != "identifier":
            return None
        return self.text(e.child_by_field_name("left")), e.child_by_field_name("right"), body

    def check_buffer_splits(self, kernel: ir.KernelIR) -> None:
        """Raise where a split's condition may differ between threads of a group that must
        run a collective after it together (see the module's doc)."""
        if not self.buffer_splits:
            return
        funcs = {f.name: f for f in kernel.functions}
        bodies = [(kernel.body, ())] + [(f.body, [q.name for q in f.params]) for f in kernel.functions]
        owner = {id(n): i for i, (body, _) in enumerate(bodies) for n in ir.walk(body) if isinstance(n, ir.Decl)}
        const = {g.name for g in kernel.globals}
        inputs = {q.name for q in kernel.inputs if q.kind == "buffer"}
        written = {n.buf for n in ir.walk(kernel.body) if isinstance(n, (ir.Store, ir.Atomic))}
        views = {n.name for n in ir.walk(kernel.body) if isinstance(n, ir.ViewDecl) and n.buf in inputs}
        kernel_bufs = (inputs | views | const) - written
        cache = {}
        for s in self.buffer_splits:      # (inner splits first: each was appended after its sides)
            i = owner.get(id(s.decl))
            if i is None:
                continue                    # translated only to inspect it (probe): not in the kernel
            found = collectives(s.iff.then + s.iff.orelse, funcs)
            if not found:
                continue
            node, scope, site = min(found, key=lambda f: SCOPES.index(f[1]))
            if (i, scope) not in cache:
                body, varying = bodies[i]
                cache[i, scope] = within(body, scope, varying, kernel_bufs if i == 0 else const)
            if cache[i, scope].is_uniform(s.decl.init):
                continue
            # the sides joined where they agree, the choice narrowed to what differs (buffer_merge);
            # the threads of a threadgroup share its arrays, whichever side they take
            shared = [(a, b) for a, b in s.shared if (a.elem, a.shape, a.space) == (b.elem, b.shape, b.space)]
            merged = merge_sides(s.iff.then, s.iff.orelse, s.decl.var, funcs, {b.name: a.name for a, b in shared})
            if merged is None or not _replace(bodies[i][0], s.iff, merged):
                self._split_error(s, node, scope, site)
            for _, b in shared:
                _replace(kernel.body, b, [])      # (the second side's copy: no longer used)
            cache.clear()                   # (the body changed)

    def _split_error(self, s, node, scope, site):
        group = _GROUP_WORDS[scope]
        a, b = s.bufs
        name = f"a call of '{node.func}'" if isinstance(node, ir.FuncCall) else describe(node)
        where = f"line {site.span.line}" if site.span is not None else "a later line"
        if site is node:
            what = f"{name} at {where}"
        else:
            inner = f" (line {node.span.line} of {node.span.source.name})" if node.span is not None else ""
            what = f"{name}{inner}, reached through the call at {where}"
        if isinstance(node, (ir.Barrier, ir.FuncCall)):
            why = f"threads of one {group} taking different sides would wait at different barriers"
        else:
            why = (f"a {group} whose threads take different sides would run {name} once per side, each time "
                   f"over only its own threads, not over the whole {group} as the GPU does")
        raise KernelSyntaxError(
            f"a pointer into '{a}' or '{b}' depending on a run-time condition that may differ between the "
            f"threads of a {group} (line {s.span.line}), followed by {what}: metalbench runs the statements "
            f"after the choice once per buffer, under if/else, and {why}; {METAL_ONLY}", s.span,
            hint=f"index both buffers under the condition instead (c ? {a}[k] : {b}[k]), or choose by a "
                 f"value the same on the whole {group} (threadgroup_position_in_grid, a scalar argument, "
                 "a template constant)")


def _replace(stmts: list, old, new: list) -> bool:
    """Put the statements ``new`` where statement ``old`` is, in ``stmts`` or a statement
    list nested in it; whether it was found."""
    for k, st in enumerate(stmts):
        if st is old:
            stmts[k:k + 1] = new
            return True
        for f in ("then", "orelse", "body", "init", "update"):
            inner = getattr(st, f, None)
            if isinstance(inner, list) and _replace(inner, old, new):
                return True
    return False
