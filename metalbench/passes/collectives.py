"""Collectives: IR nodes that a whole group of threads runs together, and whether a
condition is the same on every thread of such a group.

A barrier waits for every thread of its threadgroup (or SIMD-group); a SIMD-group or
quad-group function (``simd_sum``, ``simd_shuffle``, ``quad_broadcast`` ...) and a
SIMD-group matrix function combine the values of the lanes that run it. Code that sends
the threads of one group down different branches changes what such a node does: each
branch runs it over its own threads only. Which builtins are collectives, and over
which group, is the registry's fact (:attr:`~metalbench.builtins.core.Builtin.collective`).

    >>> from metalbench import ir, types as T
    >>> s = ir.Call("simd_sum", [ir.Const(1.0, T.float32)], T.float32)
    >>> [(describe(n), scope) for n, scope, _ in collectives([ir.ExprStmt(s), ir.Barrier()], {})]
    [('simd_sum', 'simdgroup'), ('threadgroup_barrier', 'threadgroup')]
    >>> tg = ir.ThreadAttr("threadgroup_position_in_grid", T.vector_of(T.uint32, 3))
    >>> c = ir.BinOp("==", ir.Swizzle(tg, "x", T.uint32), ir.Const(0, T.uint32), T.bool_)
    >>> lane = ir.ThreadAttr("thread_index_in_simdgroup", T.uint32)
    >>> within([], "threadgroup").is_uniform(c), within([], "simdgroup").is_uniform(lane)
    (True, False)
"""
from __future__ import annotations

from .. import ir
from ..builtins import registry
from .uniformity import WITHIN, Uniformity

# The groups, widest first: a condition the same on every thread of a threadgroup is the
# same on every thread of each of its SIMD-groups and quad-groups.
SCOPES = ("threadgroup", "simdgroup", "quadgroup")

# IR node class name -> the builtin it comes from, for the "node" builtins that are
# collectives (the SIMD-group matrix functions; barriers carry their scope themselves)
_NODE_BUILTINS = {}
for _b in registry.all():
    if _b.kind == "node" and _b.collective and _b.node != "Barrier":
        _NODE_BUILTINS.setdefault(_b.node, _b)


def scope_of(node) -> str | None:
    """The group of threads that must run ``node`` together, or None."""
    if isinstance(node, ir.Call):
        return registry.get(node.name).collective
    if isinstance(node, ir.Barrier):
        return node.scope
    b = _NODE_BUILTINS.get(type(node).__name__)
    return b.collective if b is not None else None


def describe(node) -> str:
    """The name the user wrote for collective ``node``: ``simd_sum``, ``threadgroup_barrier``."""
    if isinstance(node, ir.Call):
        return node.name
    if isinstance(node, ir.Barrier):
        return f"{node.scope}_barrier"
    return _NODE_BUILTINS[type(node).__name__].name


def collectives(stmts, functions: dict) -> list[tuple]:
    """``(node, scope, site)`` for each collective that running ``stmts`` reaches, in
    source order: its own node, or one inside a device function (``functions``: name ->
    ``ir.Function``) called from ``stmts``, directly or not; ``site`` is the node of
    ``stmts`` that reaches it (the collective itself, or the outermost call). A call of a
    function not in ``functions`` counts as a threadgroup barrier (nothing is known of it)."""
    out, seen = [], set()

    def visit(nodes, site):
        for n in ir.walk(nodes):
            here = n if site is None else site
            scope = scope_of(n)
            if scope is not None:
                out.append((n, scope, here))
            elif isinstance(n, ir.FuncCall) and n.func not in seen:
                seen.add(n.func)
                f = functions.get(n.func)
                if f is None:
                    out.append((n, "threadgroup", here))
                else:
                    visit(f.body, here)
    visit(list(stmts), None)
    return out


def within(body, scope: str, varying=(), uniform_buffers=()) -> Uniformity:
    """Uniformity within each ``scope`` group (``"threadgroup"``, ``"simdgroup"``,
    ``"quadgroup"``) of ``body``: its ``is_uniform(e)`` says whether ``e`` has one value on
    all threads of such a group that evaluate it -- it depends only on constants, scalar
    arguments, shapes, attributes the same across the group (``threadgroup_position_in_grid``
    ...) and loads of ``uniform_buffers`` at such indices, through variables assigned only
    such values under such control flow. ``varying``: names never uniform (a device
    function's parameters)."""
    return Uniformity(body, WITHIN[scope], varying=varying, uniform_buffers=uniform_buffers)
