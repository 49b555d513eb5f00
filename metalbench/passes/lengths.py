"""Array lengths as divisors, and printed kernels specialised for them (issue 18).

``out[i] = x[i] + bias[i % bias.size]``: the divisor is an array length, the same for
every thread but unknown when the kernel is written. Printed as is, ``i % n`` is a
32-bit division by a run-time value (about 20 instructions on NVIDIA, a reciprocal among
them); the hand-written kernel's ``i % C`` with a constant ``C`` is a mask when ``C`` is
a power of two and a multiply-high otherwise. Two answers, both here:

- without knowing the launch, the printers print :func:`length_division`\\ s through
  ``mb_udiv_len``/``mb_umod_len``, which test for a power of two (a uniform branch);
- a GPU launch knows its arrays' shapes and already keys its prepared call by them
  (``protocol.Specialization.gpu_plan``), so the kernel it compiles can have those
  lengths as constants: :func:`divisor_lengths` names the lengths a kernel divides by,
  :func:`bind_lengths` writes their values into a copy of the IR (folded, so the
  printers see ``i % 4096u``). Only lengths used as divisors are bound: a bound length
  costs a compile per distinct value, which a loop bound or a bounds check does not
  earn back.

    >>> from metalbench import types as T
    >>> i = ir.ThreadAttr("thread_index_in_threadgroup", T.uint32)
    >>> n = ir.Cast(T.uint32, ir.ShapeOf("b", 0, T.int32))
    >>> k = ir.KernelIR("k", [ir.Param("b", "buffer", T.float32), ir.Param("o", "buffer", T.float32,
    ...     is_output=True)], [ir.Store("o", i, ir.Load("b", ir.BinOp("%", i, n, T.uint32), T.float32))])
    >>> divisor_lengths(k)
    (('b', 0),)
    >>> ir.dump(bind_lengths(k, {("b", 0): 4096}).body[0].value)
    'b[(thread_index_in_threadgroup % 4096)]'
"""
from __future__ import annotations

import copy

from .. import ir
from .. import types as T
from ..scalar import fold_binop, fold_cast


def is_length(e) -> bool:
    """Is ``e`` an array length (``x.shape[d]``, ``x.size``: products of ShapeOf, through
    casts)? Such a divisor is the same for every thread and often a power of two, which
    the printers' ``mb_udiv_len``/``mb_umod_len`` test for (a shift or a mask then)."""
    while isinstance(e, ir.Cast) and isinstance(e.type, T.ScalarType) and e.type.is_int:
        e = e.value
    if isinstance(e, ir.ShapeOf):
        return True
    return isinstance(e, ir.BinOp) and e.op == "*" and is_length(e.a) and is_length(e.b)


def length_division(e) -> bool:
    """``e`` is an unsigned 32/64-bit ``/`` or ``%`` by an array length (``is_length``)."""
    return (isinstance(e, ir.BinOp) and e.op in ("/", "%") and e.type in (T.uint32, T.uint64)
            and e.a.type == e.type and e.b.type == e.type and is_length(e.b))


def divisor_lengths(kernel: ir.KernelIR) -> tuple:
    """``((buffer, dim), ...)``: the lengths of kernel parameters that the kernel body
    divides by or takes a remainder by, sorted: directly (:func:`length_division`) or
    through the variables the divisor reads (``int C = x_shape[3]; elem / C``, as MSL
    kernels write it; bound, the compiler folds the division helper's branches away).
    Device functions are not looked at (their lengths are their parameters'). Which
    lengths are chosen only decides what is worth a compile per value: binding any
    length is exact for the launch it is bound for."""
    defs: dict = {}
    for n in ir.walk(kernel.body):
        if isinstance(n, (ir.Decl, ir.Assign)) and getattr(n, "init" if isinstance(n, ir.Decl) else "value",
                                                            None) is not None:
            defs.setdefault(n.var.name, []).append(n.init if isinstance(n, ir.Decl) else n.value)
    pairs, seen = set(), set()

    def lengths_in(e):
        for s in ir.walk(e):
            if isinstance(s, ir.ShapeOf) and kernel.param(s.buf) is not None:
                pairs.add((s.buf, s.dim))
            elif isinstance(s, ir.Var) and s.name not in seen:
                seen.add(s.name)
                for d in defs.get(s.name, ()):
                    lengths_in(d)
    for n in ir.walk(kernel.body):
        if isinstance(n, ir.BinOp) and n.op in ("/", "%") and _int(n.type):
            lengths_in(n.b)
    return tuple(sorted(pairs))


def bind_lengths(kernel: ir.KernelIR, lengths: dict) -> ir.KernelIR:
    """A copy of ``kernel`` whose body reads each ``(buffer, dim) -> value`` of
    ``lengths`` as a constant (products and integer casts of constants folded with the
    scalar table's arithmetic); ``kernel`` itself when ``lengths`` is empty. A zero
    length is not bound (``x % 0`` keeps its helper, which gives 0)."""
    lengths = {k: int(v) for k, v in lengths.items() if int(v) > 0}
    if not lengths:
        return kernel
    memo = {id(kernel.source): kernel.source}
    for n in ir.walk(kernel.body):
        if n.span is not None:
            memo[id(n.span)] = n.span
    new = copy.copy(kernel)
    made: set = set()       # the constants made here: only they are folded further
    new.body = [_rewrite(s, lengths, made) for s in copy.deepcopy(kernel.body, memo)]
    return new


def _rewrite(node, lengths, made):
    for k, v in vars(node).items():
        if isinstance(v, ir.Node):
            setattr(node, k, _rewrite(v, lengths, made))
        elif isinstance(v, list):
            v[:] = [_rewrite(x, lengths, made) if isinstance(x, ir.Node) else x for x in v]
    c = None
    if isinstance(node, ir.ShapeOf) and (node.buf, node.dim) in lengths:
        c = fold_cast(lengths[node.buf, node.dim], node.type)
    elif isinstance(node, ir.Cast) and id(node.value) in made and _int(node.type):
        c = fold_cast(node.value.value, node.type, node.value.type)
    elif isinstance(node, ir.BinOp) and node.op == "*" and id(node.a) in made and id(node.b) in made:
        c = fold_binop("*", node.a.value, node.b.value, node.type)
    if c is None:
        return node
    const = ir.Const(c, node.type, span=node.span)
    made.add(id(const))
    return const


def _int(t) -> bool:
    return isinstance(t, T.ScalarType) and t.is_int
