"""A float's parts, composed from IR for both front ends: ``modf`` (fraction and whole part)
and ``frexp`` (mantissa and exponent), as C, Metal and Python's ``math`` define them. The
MSL front end returns one part and stores the other through the out-parameter
(``modf(x, ip)``, ``frexp(x, e)``); the DSL/Numba front end returns both as a tuple.

    >>> from metalbench.semantics import Semantics, rules
    >>> from metalbench import types as T
    >>> sem = Semantics(rules.MSL)
    >>> m, e = frexp_parts(sem, ir.Var("x", T.float32), None)
    >>> (m.type.name, e.type.name)
    ('float32', 'int32')
"""
from __future__ import annotations

from .. import ir
from .. import types as T


def bit_op(sem, op, a, b, t, span):
    """``a op b`` computed in type ``t`` whatever the language's promotion (bit fiddling)."""
    return sem.fold(ir.BinOp(op, sem.convert(a, t, span), sem.convert(b, t, span), t, span=span))


def modf_parts(sem, x, sp):
    """``(frac, whole)`` of the float ``x``: ``whole = trunc(x)``, ``frac`` with ``x``'s
    sign (``-2.0`` gives ``-0.0``), and ``+-0.0`` for an infinite ``x``, as C's ``modf``."""
    x = sem.once(x, sp)
    whole = sem.once(sem.builtin("trunc", [x], sp), sp)
    zero = sem.convert(sem.const(0.0, T.float32, sp), x.type, sp)
    frac = sem.select(sem.builtin("isinf", [x], sp), sem.builtin("copysign", [zero, x], sp),
                      sem.builtin("copysign", [sem.binop("-", x, whole, sp), x], sp), sp)
    return frac, whole


def frexp_parts(sem, x, sp):
    """``(m, e)`` with ``x == m * 2**e`` and ``0.5 <= |m| < 1`` (int32 ``e``; ``(x, 0)`` for
    zeros, infinities and NaN), from the bits of a float32/float64 ``x`` (subnormals scaled
    up first; a half or bfloat goes through float32 and its mantissa back)."""
    x = sem.once(x, sp)
    t0 = t = x.type
    if t not in (T.float32, T.float64):
        x, t = sem.once(sem.convert(x, T.float32, sp), sp), T.float32
    ut = T.BY_NAME[f"uint{t.bits}"]
    mant_bits, bias = (23, 127) if t == T.float32 else (52, 1023)
    exp_mask = (1 << (t.bits - 1 - mant_bits)) - 1
    c = lambda v: ir.Const(v, ut, span=sp)                                    # noqa: E731
    sub = sem.binop("==", bit_op(sem, "&", sem.bitcast(ut, x, sp), c(exp_mask << mant_bits), ut, sp), c(0), sp)
    scale = 64
    xs = sem.once(sem.select(sub, sem.binop("*", x, sem.const(2.0 ** scale, t, sp), sp), x, sp), sp)
    bits = sem.once(sem.bitcast(ut, xs, sp), sp)
    expf = bit_op(sem, "&", bit_op(sem, ">>", bits, c(mant_bits), ut, sp), c(exp_mask), ut, sp)
    e = sem.binop("-", sem.convert(expf, T.int32, sp), ir.Const(bias - 1, T.int32, span=sp), sp)
    e = sem.binop("-", e, sem.select(sub, ir.Const(scale, T.int32, span=sp), ir.Const(0, T.int32, span=sp), sp), sp)
    keep = c(~(exp_mask << mant_bits) & ((1 << t.bits) - 1))
    m = sem.bitcast(t, bit_op(sem, "|", bit_op(sem, "&", bits, keep, ut, sp), c((bias - 1) << mant_bits), ut, sp), sp)
    special = sem.once(sem.logical("or", sem.binop("==", x, sem.const(0.0, t, sp), sp),
                                   sem.unop("!", sem.builtin("isfinite", [x], sp), sp), sp), sp)
    m = sem.select(special, x, m, sp)
    return (sem.convert(m, t0, sp) if t0 != t else m,
            sem.select(special, ir.Const(0, T.int32, span=sp), sem.convert(e, T.int32, sp), sp))
