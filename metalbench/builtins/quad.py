"""Quad-group builtins: the SIMD-group functions over groups of 4 lanes (``lane & ~3``).

One declaration each, made by the SIMD-group factories of :mod:`.simd` with
``width=4``. Their semantics on a partial quad (divergent control flow, the end of
a partial threadgroup) are those of the SIMD-group functions on a partial
SIMD-group: reductions and scans combine the *active* lanes of the caller's quad
(Metal specifies reductions over the active threads), shuffles read the source
lane's current value, and reading an inactive lane is a finding in checked mode
(undefined on the GPU). The simulator runs them through ``metalbench.sim.simd``
(``reduce``/``scan`` with ``width=4``, the ``quad_*`` shuffle modes); CUDA prints
shuffles within the quad over ``__activemask()``.

    >>> from metalbench.builtins import registry
    >>> registry.lookup("quad_sum").group, registry.lookup("quad_shuffle_up").rule.params
    ('Quad-group', ('x', 'delta'))
"""
from __future__ import annotations

from .simd import _SHFL, _cuda_op, _reduction, _scan, _shuffle
from .spell import ASSIGN

_QUAD_REDUCE = """\
// Quad-group reduction over the active lanes of the caller's quad (lanes lane & ~3 ..
// +3): two butterfly steps on a full warp; otherwise every active lane reads the four
// lanes of its quad (the same shuffles on every lane, as __shfl_sync requires) and
// combines the active ones in lane order.
template <class T, class Op> __device__ inline T mb_quad_reduce(T v, Op op, unsigned m) {
    unsigned lane = mb_lane();
    if (m == 0xffffffffu) {
        v = op(v, mb_shfl(v, (int)(lane ^ 1u), m));
        return op(v, mb_shfl(v, (int)(lane ^ 2u), m));
    }
    unsigned base = lane & ~3u;
    T acc = v;
    bool have = false;
    for (unsigned j = 0; j < 4u; ++j) {
        T x = mb_shfl(v, (int)(base + j), m);
        if ((m >> (base + j)) & 1u) {
            acc = have ? op(acc, x) : x;
            have = true;
        }
    }
    return acc;
}"""

_QUAD_SCAN = """\
// Quad-group prefix scan over the active lanes of the caller's quad, in lane order.
template <class T, class Op> __device__ inline T mb_quad_scan(T v, Op op, T identity, bool inclusive, unsigned m) {
    unsigned lane = mb_lane();
    unsigned base = lane & ~3u;
    T acc = identity;
    for (unsigned j = base; j < base + 4u; ++j) {
        T x = mb_shfl(v, (int)j, m);
        if (((m >> j) & 1u) && (j < lane || (inclusive && j == lane))) acc = op(acc, x);
    }
    return acc;
}"""


def _mask(p) -> str:
    # all 32 lanes active (codegen/cuda.py, passes/warps.py): no vote for the mask
    return "0xffffffffu" if getattr(p, "full_warp", False) else "__activemask()"


def _reduce_cuda(op):
    def cuda(p, args, t):
        p.need("mb_shfl", _SHFL)
        p.need("mb_quad_reduce", _QUAD_REDUCE)
        tn = p.tname(t)
        return (f"mb_quad_reduce({p.expr(args[0], ASSIGN)}, []({tn} a, {tn} b) {{ return {_cuda_op(p, op, t)}; }}, "
                f"{_mask(p)})")
    return cuda


def _scan_cuda(kind, op):
    def cuda(p, args, t):
        p.need("mb_shfl", _SHFL)
        p.need("mb_quad_scan", _QUAD_SCAN)
        tn = p.tname(t)
        ident = p.literal(1 if op == "product" else 0, t)
        return (f"mb_quad_scan({p.expr(args[0], ASSIGN)}, []({tn} a, {tn} b) {{ return {_cuda_op(p, op, t)}; }}, "
                f"{ident}, {'false' if kind == 'exclusive' else 'true'}, {_mask(p)})")
    return cuda


_ARGMAX = "s = quad_sum(grad); n = quad_sum(1.0 if x == result else 0.0); s / n if x == result else 0"
for _op, _doc, _kw in (
        ("sum", "The sum of x over the active lanes of this lane's quad, on each of them.",
         dict(float_tol=True, grad=("quad_sum(grad)",))),
        ("product", "The product of x over the active lanes of this lane's quad, on each of them.",
         dict(float_tol=True, grad=("quad_sum(grad) * result / x",))),
        ("max", "The maximum of x over the active lanes of this lane's quad (NaNs ignored, as fmax).",
         dict(grad=(_ARGMAX,))),
        ("min", "The minimum of x over the active lanes of this lane's quad (NaNs ignored, as fmin).",
         dict(grad=(_ARGMAX,))),
        ("and", "Bitwise AND of x over the active lanes of this lane's quad.", dict(int_only=True)),
        ("or", "Bitwise OR of x over the active lanes of this lane's quad.", dict(int_only=True)),
        ("xor", "Bitwise XOR of x over the active lanes of this lane's quad.", dict(int_only=True))):
    _reduction(_op, _doc, prefix="quad", width=4, cuda=_reduce_cuda(_op), **_kw)

_scan("inclusive", "sum", grad=("quad_sum(grad) - quad_prefix_exclusive_sum(grad)",), prefix="quad", width=4,
      cuda=_scan_cuda("inclusive", "sum"))
_scan("exclusive", "sum", grad=("quad_sum(grad) - quad_prefix_inclusive_sum(grad)",), prefix="quad", width=4,
      cuda=_scan_cuda("exclusive", "sum"))
_scan("inclusive", "product", prefix="quad", width=4, cuda=_scan_cuda("inclusive", "product"))
_scan("exclusive", "product", prefix="quad", width=4, cuda=_scan_cuda("exclusive", "product"))

# name -> (simulator mode, CUDA source lane in lane and d, doc, the model's (source lane, keeps its own
#          value when outside), second parameter, derivative rule); quad lane indices are taken modulo 4
_QUAD_SHUFFLES = {
    "quad_shuffle": ("quad_index", "(int)((lane & ~3u) | (d & 3u))", "The value of x on quad lane `lane` "
                     "(modulo 4) of this lane's quad.", lambda j, d: ((j & ~3) | (d & 3), False), "lane", None),
    "quad_broadcast": ("quad_index", "(int)((lane & ~3u) | (d & 3u))", "The value of x on quad lane `lane` "
                       "(modulo 4), on every lane of the quad.", lambda j, d: ((j & ~3) | (d & 3), False), "lane",
                       ("s = quad_sum(grad); s if thread_index_in_quadgroup == lane - lane / 4 * 4 else 0", None)),
    "quad_shuffle_xor": ("quad_xor", "(int)(lane ^ (d & 3u))", "The value of x on quad lane (this quad lane "
                         "XOR mask), mask modulo 4.", lambda j, d: (j ^ (d & 3), False), "mask",
                         ("quad_shuffle_xor(grad, mask)", None)),
    "quad_shuffle_up": ("quad_up", "(int)((lane & 3u) >= d ? lane - d : lane)",
                        "The value of x on quad lane (this quad lane - delta); the first delta lanes of the quad "
                        "keep their own.", lambda j, d: (j - d if (j & 3) >= d else -1, True), "delta",
                        ("u = quad_shuffle_down(grad, delta); l = thread_index_in_quadgroup; "
                         "(u if l + delta < 4 else 0) + (grad if l < delta else 0)", None)),
    "quad_shuffle_down": ("quad_down", "(int)(d < 4u - (lane & 3u) ? lane + d : lane)",
                          "The value of x on quad lane (this quad lane + delta); the last delta lanes of the quad "
                          "keep their own.", lambda j, d: (j + d if (j & 3) + d < 4 else 32, True), "delta",
                          ("u = quad_shuffle_up(grad, delta); l = thread_index_in_quadgroup; "
                           "(u if l >= delta else 0) + (grad if l + delta >= 4 else 0)", None)),
    "quad_shuffle_rotate_up": ("quad_rotate_up", "(int)((lane & ~3u) | ((lane - d) & 3u))",
                               "The value of x on quad lane (this quad lane - delta) modulo 4.",
                               lambda j, d: ((j & ~3) | ((j - d) & 3), False), "delta",
                               ("quad_shuffle_rotate_down(grad, delta)", None)),
    "quad_shuffle_rotate_down": ("quad_rotate_down", "(int)((lane & ~3u) | ((lane + d) & 3u))",
                                 "The value of x on quad lane (this quad lane + delta) modulo 4.",
                                 lambda j, d: ((j & ~3) | ((j + d) & 3), False), "delta",
                                 ("quad_shuffle_rotate_up(grad, delta)", None)),
}

for _n, (_mode, _src, _doc, _fn, _second, _grad) in _QUAD_SHUFFLES.items():
    _shuffle(_n, _mode, _src, _doc, _fn, _grad, second=_second)
