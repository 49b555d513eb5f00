"""Joining the two sides of a buffer split where they differ only away from collectives.

A pointer into one of two buffers chosen per thread (``(second ? w1 : w0) + off``) splits
the rest of its block into ``if (c) {rest on w1} else {rest on w0}`` (``buffer_choice.py``).
When the rest holds a barrier or a SIMD-group function and ``c`` may differ between the
threads of its group, that split is wrong: each side would run the collective over its own
threads. But the two sides are translations of the same statements, so they differ only
where the pointer is used. :func:`merge_sides` walks them in step and keeps one copy of
every statement the two sides agree on (names each side declared for itself matched by
position), narrowing the choice to the statements that differ:

- a statement that differs and reaches no collective becomes ``if (c) A else B``; a
  differing declaration is declared once before it, and assigned on each side;
- a loop, ``if`` or block that reaches a collective and has the same header on both sides
  is kept once, with its bodies merged the same way;
- anything else (a collective whose own operands differ, a reinterpreting view declared
  differently) cannot be joined: :func:`merge_sides` returns None and the split's error
  stands.

    >>> from metalbench import types as T
    >>> i, c = ir.Var("i", T.uint32), ir.Var("_which", T.bool_)
    >>> a = [ir.Store("out", i, ir.Load("w1", i, T.float32)), ir.Barrier()]
    >>> b = [ir.Store("out", i, ir.Load("w0", i, T.float32)), ir.Barrier()]
    >>> print(ir.dump(merge_sides(a, b, c, {})))
    if _which:
        out[i] = w1[i]
    else:
        out[i] = w0[i]
    threadgroup_barrier(mem_threadgroup)
"""
from __future__ import annotations

import dataclasses

from ... import ir
from ...passes.collectives import collectives

# the fields of IR nodes that hold the name of a local, array or view a side declares
_NAME_FIELDS = ("name", "buf")
# nodes whose "name" field names something else (a builtin)
_NOT_LOCAL_NAMES = (ir.Call,)


def merge_sides(then: list, orelse: list, which: ir.Var, functions: dict, same: dict | None = None) -> list | None:
    """The statements of ``if (which) then else orelse`` with everything the sides agree
    on taken out of the ``if`` (see the module's doc), or None where they cannot be
    joined. ``functions``: the kernel's device functions by name (for the collectives
    they reach); ``same``: names of the second side that are the first side's (arrays
    declared outside the sides)."""
    return _merge(then, orelse, which, functions, dict(same or {}))


def _merge(a_list, b_list, which, functions, ren):
    """``a_list`` and ``b_list`` joined; ``ren`` (the other side's declared names -> this
    side's) grows with what they declare."""
    if len(a_list) != len(b_list):
        return None
    out = []
    for a, b in zip(a_list, b_list):
        if _same_committed(a, b, ren):
            out.append(a)
            continue
        if not (collectives([a], functions) or collectives([b], functions)):
            joined = _choose(a, b, which, ren)
        else:
            joined = _merge_compound(a, b, which, functions, ren)
            joined = joined and [joined]
        if joined is None:
            return None
        out.extend(joined)
    return out


def _choose(a, b, which, ren):
    """``if (which) a else b`` for two statements that reach no collective; a declaration
    is declared before it and assigned on each side."""
    if isinstance(a, ir.Decl) and isinstance(b, ir.Decl) and a.var.type == b.var.type:
        init_b = _renamed(b.init, ren)
        ren[b.var.name] = a.var.name
        sides = [[ir.Assign(a.var, i, span=a.span)] if i is not None else [] for i in (a.init, init_b)]
        return [ir.Decl(a.var, None, span=a.span), ir.If(which, sides[0], sides[1], span=a.span)]
    if isinstance(a, (ir.Decl, ir.ArrayDecl, ir.ViewDecl)) or isinstance(b, (ir.Decl, ir.ArrayDecl, ir.ViewDecl)):
        return None          # a name the rest uses, declared differently on each side
    return [ir.If(which, [a], [_renamed(b, ren)], span=a.span)]


def _merge_compound(a, b, which, functions, ren):
    """One loop or ``if`` for two of the same shape reaching a collective: the same header
    on both sides, the bodies merged; else None."""
    if type(a) is not type(b):
        return None
    if isinstance(a, ir.If) and _same_committed(a.cond, b.cond, ren):
        then = _merge(a.then, b.then, which, functions, ren)
        orelse = then is not None and _merge(a.orelse, b.orelse, which, functions, ren)
        return None if then is None or orelse is None else dataclasses.replace(a, then=then, orelse=orelse)
    if isinstance(a, ir.For) and a.var.type == b.var.type and \
            all(_same_committed(getattr(a, f), getattr(b, f), ren) for f in ("start", "stop", "step")):
        ren[b.var.name] = a.var.name
        body = _merge(a.body, b.body, which, functions, ren)
        return None if body is None else dataclasses.replace(a, body=body)
    if isinstance(a, ir.CFor) and _same_committed(a.init, b.init, ren) and _same_committed(a.cond, b.cond, ren) \
            and _same_committed(a.update, b.update, ren):
        body = _merge(a.body, b.body, which, functions, ren)
        return None if body is None else dataclasses.replace(a, body=body)
    if isinstance(a, ir.While) and a.do_while == b.do_while and _same_committed(a.cond, b.cond, ren):
        body = _merge(a.body, b.body, which, functions, ren)
        return None if body is None else dataclasses.replace(a, body=body)
    return None


def _same_committed(a, b, ren) -> bool:
    """:func:`_same`, keeping in ``ren`` the names it matched only when it holds."""
    trial = dict(ren)
    if _same(a, b, trial):
        ren.update(trial)
        return True
    return False


def _same(a, b, ren) -> bool:
    """Whether IR ``a`` and ``b`` are the same, ``b``'s declared names read through ``ren``
    (spans ignored); each declaration met adds its pair of names to ``ren``."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y, ren) for x, y in zip(a, b))
    if not isinstance(a, ir.Node):
        return a == b
    if isinstance(a, ir.Decl):
        if a.var.type != b.var.type or not _same(a.init, b.init, ren):
            return False
        ren[b.var.name] = a.var.name
        return True
    if isinstance(a, ir.For):
        if a.var.type != b.var.type:
            return False
        ren[b.var.name] = a.var.name
    elif isinstance(a, (ir.ArrayDecl, ir.ViewDecl)):
        ren[b.name] = a.name
    for f in dataclasses.fields(a):
        if f.name == "span":
            continue
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name in _NAME_FIELDS and isinstance(y, str) and not isinstance(a, _NOT_LOCAL_NAMES):
            if x != ren.get(y, y):
                return False
        elif isinstance(x, (ir.Node, list, tuple)):
            if not _same(x, y, ren):
                return False
        elif x != y:
            return False
    return True


def _renamed(node, ren):
    """A copy of IR ``node`` with the names in ``ren`` replaced (the other side's names)."""
    if isinstance(node, list):
        return [_renamed(x, ren) for x in node]
    if isinstance(node, tuple):
        return tuple(_renamed(x, ren) for x in node)
    if not isinstance(node, ir.Node):
        return node
    changes = {}
    for f in dataclasses.fields(node):
        if f.name == "span":
            continue
        v = getattr(node, f.name)
        if f.name in _NAME_FIELDS and isinstance(v, str) and not isinstance(node, _NOT_LOCAL_NAMES):
            if v in ren:
                changes[f.name] = ren[v]
        elif isinstance(v, (ir.Node, list, tuple)):
            changes[f.name] = _renamed(v, ren)
    return dataclasses.replace(node, **changes) if changes else node
