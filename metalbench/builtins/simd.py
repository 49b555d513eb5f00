"""SIMD-group builtins (width 32): one declaration each.

The simulator runs them over a whole chunk (``metalbench.sim.simd`` holds the lane
machinery); CUDA prints warp shuffles over ``__activemask()``. References work on
``(simdgroups, 32)`` arrays of values with an ``active`` mask of the same shape and
give the value every active lane should see.
"""
from __future__ import annotations

import numpy as np

from .. import types as T
from .core import add_builtin, nullary, predicate_vote, same_type, value_lane
from .spell import ASSIGN



class _Lanes:
    """``metalbench.sim.simd`` (the lane machinery), imported on first use: the simulator
    package imports this registry."""

    def __getattr__(self, item):
        from ..sim import simd
        return getattr(simd, item)


S = _Lanes()

_SHFL = """\
// One warp shuffle for any type: small integers and bool travel as int, vectors per component.
template <class T> __device__ inline T mb_shfl(T v, int src, unsigned mask) {
    if constexpr (mb_is_vec<T>::value) {
        T r;
        for (int i = 0; i < (int)(sizeof(T) / sizeof(v[0])); ++i) r[i] = mb_shfl(v[i], src, mask);
        return r;
    } else if constexpr (sizeof(T) < 4 && !mb_is_half<T>::value) {
        return static_cast<T>(__shfl_sync(mask, static_cast<int>(v), src));
    } else {
        return __shfl_sync(mask, v, src);
    }
}"""

_SIMD_REDUCE = """\
// SIMD-group reduction over the active lanes: butterfly when the warp is full,
// otherwise an ordered loop over the active lanes (all lanes get the same value).
template <class T, class Op> __device__ inline T mb_simd_reduce(T v, Op op) {
    unsigned m = __activemask();
    if (m == 0xffffffffu) {
        for (int o = 16; o > 0; o >>= 1) v = op(v, mb_shfl(v, (int)(mb_lane() ^ o), m));
        return v;
    }
    T acc = v;
    bool have = false;
    for (int j = 0; j < 32; ++j) {
        if ((m >> j) & 1u) {
            T x = mb_shfl(v, j, m);
            acc = have ? op(acc, x) : x;
            have = true;
        }
    }
    return acc;
}"""

_SHFL_XOR_FULL = """\
// A butterfly shuffle on a full warp (every lane active; see passes/warps.py).
template <class T> __device__ inline T mb_shfl_xor_full(T v, int o) {
    if constexpr (mb_is_vec<T>::value) {
        T r;
        for (int i = 0; i < (int)(sizeof(T) / sizeof(v[0])); ++i) r[i] = mb_shfl_xor_full(v[i], o);
        return r;
    } else if constexpr (sizeof(T) < 4 && !mb_is_half<T>::value) {
        return static_cast<T>(__shfl_xor_sync(0xffffffffu, static_cast<int>(v), o));
    } else {
        return __shfl_xor_sync(0xffffffffu, v, o);
    }
}"""

_SIMD_REDUCE_FULL = """\
// SIMD-group reduction on a full warp: the five-step butterfly (every lane gets the value).
template <class T, class Op> __device__ inline T mb_simd_reduce_full(T v, Op op) {
    for (int o = 16; o > 0; o >>= 1) v = op(v, mb_shfl_xor_full(v, o));
    return v;
}"""

_SIMD_REDUCE_FULL_SCALAR = """\
// The same for a scalar __shfl_xor_sync takes as it is (32/64-bit, half, bfloat): no
// per-type dispatch to print (MLX rebuilds and hashes a kernel's source at every launch).
template <class T, class Op> __device__ inline T mb_simd_reduce_full1(T v, Op op) {
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}"""


def shuffles_as_is(t) -> bool:
    """Whether CUDA's ``__shfl_*_sync`` takes a value of type ``t`` as it is: a scalar of
    4 or 8 bytes, or a half/bfloat (not a vector, bool or small integer, which
    ``mb_shfl`` moves as an int or per component).

    >>> shuffles_as_is(T.float32), shuffles_as_is(T.uint8), shuffles_as_is(T.bfloat16)
    (True, False, True)
    """
    return isinstance(t, T.ScalarType) and (t.itemsize >= 4 or t in (T.float16, T.bfloat16))


_SIMD_SCAN = """\
// SIMD-group prefix scan over the active lanes (in lane order); partial warps loop.
template <class T, class Op> __device__ inline T mb_simd_scan(T v, Op op, T identity, bool inclusive) {
    unsigned m = __activemask();
    unsigned lane = mb_lane();
    if (m == 0xffffffffu) {     // full warp: Hillis-Steele in five shuffles
        T x = v;
        for (unsigned o = 1; o < 32u; o <<= 1) {
            T y = mb_shfl(x, (int)((lane - o) & 31u), m);
            if (lane >= o) x = op(y, x);
        }
        if (inclusive) return x;
        T e = mb_shfl(x, (int)((lane - 1u) & 31u), m);
        return lane == 0u ? identity : e;
    }
    T acc = identity;
    for (int j = 0; j < 32; ++j) {
        if ((m >> j) & 1u) {
            T x = mb_shfl(v, j, m);
            if ((unsigned)j < lane || (inclusive && (unsigned)j == lane)) acc = op(acc, x);
        }
    }
    return acc;
}"""

_REDUCE_OPS = {"sum": "a + b", "product": "a * b", "max": "b > a ? b : a", "min": "b < a ? b : a",
               "and": "a & b", "or": "a | b", "xor": "a ^ b"}


def _msl_call(name):
    def spell(p, args, t):
        return f"{name}({', '.join(p.expr(a, ASSIGN) for a in args)})"
    spell.metal_name = name
    return spell


def _float_minmax(kind, e: str, tn: str, a: str = "a", b: str = "b") -> str:
    """fmax/fmin of two floats of element type ``e`` (half and bfloat through float): a NaN
    operand gives the other, as Metal's max/min (= fmax/fmin, Table 6.4) do."""
    f = {"max": "fmax", "min": "fmin"}[kind]
    if e == "float64":
        return f"{f}({a}, {b})"
    if e == "float32":
        return f"{f}f({a}, {b})"
    return f"{tn}({f}f(static_cast<float>({a}), static_cast<float>({b})))"


def _cuda_op(p, kind, t) -> str:
    text = _REDUCE_OPS[kind]
    e = T.elem_of(t)
    if kind in ("max", "min") and e.is_float:
        if isinstance(t, T.VectorType):
            et = p.tname(e)
            return f"mb_map([]({et} x, {et} y) {{ return {_float_minmax(kind, e.name, et, 'x', 'y')}; }}, a, b)"
        return _float_minmax(kind, e.name, p.tname(t))
    if isinstance(t, T.VectorType) and kind in ("max", "min"):
        return "mb_select(" + ("b > a" if kind == "max" else "b < a") + ", b, a)"
    if e.name in ("float16", "bfloat16") and kind in ("sum", "product"):
        return f"{p.tname(t)}(static_cast<float>(a) {text[2]} static_cast<float>(b))"
    return text


# ----------------------------------------------------------------------------- reductions

def _reduce_ref(op, width=32):
    # float max/min ignore NaNs (a NaN only when every value is one): np.fmax/np.fmin
    fns = {"sum": np.sum, "product": np.prod, "max": np.fmax.reduce, "min": np.fmin.reduce,
           "and": np.bitwise_and.reduce, "or": np.bitwise_or.reduce, "xor": np.bitwise_xor.reduce}

    def ref(vals, active):
        out = np.zeros(vals.shape, vals.dtype)
        for g in range(vals.shape[0]):
            for q in range(0, 32, width):
                a = active[g, q:q + width]
                if a.any():
                    out[g, q:q + width] = fns[op](vals[g, q:q + width][a])
        return out
    return ref


def _group(prefix: str) -> str:
    return "SIMD-group" if prefix == "simd" else "Quad-group"


def _reduction(op, doc, int_only=False, float_tol=False, grad=None, prefix="simd", width=32, cuda=None):
    """``simd_<op>`` (or, with ``prefix="quad"``, ``width=4`` and the quad printer
    ``cuda``, ``quad_<op>``): the reduction over the active lanes of the group."""
    name = f"{prefix}_{op}"

    def sim(lay, args, m):
        v = args[0]
        if op in ("max", "min") and isinstance(v, np.ndarray) and S._is_float(v.dtype):
            # Metal's max/min of floats are fmax/fmin (a NaN argument gives the other), and
            # simd_max broadcasts one value to every lane: NaN lanes drop out unless all are NaN
            nan = np.isnan(v.astype(np.float32))
            r = S.reduce(lay, op, np.where(nan, S.identity(op, v.dtype), v), m, width)
            return np.where(S.reduce(lay, "min", nan, m, width), v.dtype.type(np.nan), r)
        return S.reduce(lay, op, v, m, width)

    def simd_cuda(p, args, t):
        tn = p.tname(t)
        lam = f"[]({tn} a, {tn} b) {{ return {_cuda_op(p, op, t)}; }}"
        if getattr(p, "full_warp", False) and shuffles_as_is(t):
            p.need("mb_simd_reduce_full1", _SIMD_REDUCE_FULL_SCALAR)
            return f"mb_simd_reduce_full1({p.expr(args[0], ASSIGN)}, {lam})"
        if getattr(p, "full_warp", False):     # all 32 lanes active (codegen/cuda.py, passes/warps.py)
            p.need("mb_shfl_xor_full", _SHFL_XOR_FULL)
            p.need("mb_simd_reduce_full", _SIMD_REDUCE_FULL)
            return f"mb_simd_reduce_full({p.expr(args[0], ASSIGN)}, {lam})"
        p.need("mb_shfl", _SHFL)
        p.need("mb_simd_reduce", _SIMD_REDUCE)
        return f"mb_simd_reduce({p.expr(args[0], ASSIGN)}, {lam})"
    add_builtin(name, group=_group(prefix), kind="simd", doc=doc, example=f"s = {name}(x[i])",
                rule=same_type(int_only=int_only), sim=sim, msl=_msl_call(name), cuda=cuda or simd_cuda,
                ref=_reduce_ref(op, width), tol_ulp=64 if float_tol else 1, shim="s1", grad=grad)


_reduction("sum", "The sum of x over the active lanes of the SIMD-group, on every lane.", float_tol=True,
           grad=("simd_sum(grad)",))
_reduction("product", "The product of x over the active lanes, on every lane.", float_tol=True,
           grad=("simd_sum(grad) * result / x",))
_reduction("max", "The maximum of x over the active lanes, on every lane (NaNs ignored, as fmax).",
           grad=("s = simd_sum(grad); n = simd_sum(1.0 if x == result else 0.0); s / n if x == result else 0",))
_reduction("min", "The minimum of x over the active lanes, on every lane (NaNs ignored, as fmin).",
           grad=("s = simd_sum(grad); n = simd_sum(1.0 if x == result else 0.0); s / n if x == result else 0",))
_reduction("and", "Bitwise AND of x over the active lanes, on every lane.", int_only=True)
_reduction("or", "Bitwise OR of x over the active lanes, on every lane.", int_only=True)
_reduction("xor", "Bitwise XOR of x over the active lanes, on every lane.", int_only=True)


# ----------------------------------------------------------------------------- scans

def _scan_ref(product, exclusive, width=32):
    def ref(vals, active):
        out = np.zeros(vals.shape, vals.dtype)
        for g in range(vals.shape[0]):
            for j in range(vals.shape[1]):
                if j % width == 0:
                    acc = vals.dtype.type(1 if product else 0)
                if not active[g, j]:
                    continue
                if exclusive:
                    out[g, j] = acc
                acc = acc * vals[g, j] if product else acc + vals[g, j]
                if not exclusive:
                    out[g, j] = acc
        return out
    return ref


def _scan(kind, op, grad=None, prefix="simd", width=32, cuda=None):
    """``simd_prefix_<kind>_<op>`` (``quad_...`` with ``width=4`` and the quad printer)."""
    name = f"{prefix}_prefix_{kind}_{op}"
    product, exclusive = op == "product", kind == "exclusive"

    def sim(lay, args, m):
        return S.scan(lay, product, exclusive, args[0], m, width)

    def simd_cuda(p, args, t):
        p.need("mb_shfl", _SHFL)
        p.need("mb_simd_scan", _SIMD_SCAN)
        tn = p.tname(t)
        ident = p.literal(1 if product else 0, t)
        return (f"mb_simd_scan({p.expr(args[0], ASSIGN)}, []({tn} a, {tn} b) {{ return {_cuda_op(p, op, t)}; }}, "
                f"{ident}, {'false' if exclusive else 'true'})")
    what = "before this lane (excluding it)" if exclusive else "up to and including this lane"
    add_builtin(name, group=_group(prefix), kind="simd", doc=f"The {'product' if product else 'sum'} of x over "
                f"the active lanes {what}" + (" of its quad" if prefix == "quad" else "") + ".",
                example=f"p = {name}(x[i])", rule=same_type(), sim=sim,
                msl=_msl_call(name), cuda=cuda or simd_cuda, ref=_scan_ref(product, exclusive, width), tol_ulp=64,
                shim="s1", grad=grad)


_scan("inclusive", "sum", grad=("simd_sum(grad) - simd_prefix_exclusive_sum(grad)",))
_scan("exclusive", "sum", grad=("simd_sum(grad) - simd_prefix_inclusive_sum(grad)",))
_scan("inclusive", "product")
_scan("exclusive", "product")


# ----------------------------------------------------------------------------- shuffles

# name -> (simulator mode, CUDA source-lane expression in lane and d, doc, reference source lane,
#          derivative rule: where each lane's cotangent goes back to)
_SHUFFLES = {
    "simd_shuffle": ("index", "(int)(d & 31u)", "The value of x on lane `lane` (modulo 32).",
                     lambda j, d: (d % 32, False),
                     None),
    "simd_broadcast": ("index", "(int)(d & 31u)", "The value of x on lane `lane`, on every lane.",
                       lambda j, d: (d % 32, False),
                       ("s = simd_sum(grad); s if thread_index_in_simdgroup == lane else 0", None)),
    "simd_shuffle_down": ("down", "(int)(lane + d < 32u ? lane + d : lane)",
                          "The value of x on lane (this lane + delta); lanes past 31 keep their own.",
                          lambda j, d: (j + d, True),
                          ("u = simd_shuffle_up(grad, delta); l = thread_index_in_simdgroup; "
                           "(u if l >= delta else 0) + (grad if l + delta >= 32 else 0)", None)),
    "simd_shuffle_up": ("up", "(int)(lane >= d ? lane - d : lane)",
                        "The value of x on lane (this lane - delta); lanes below 0 keep their own.",
                        lambda j, d: (j - d, True),
                        ("u = simd_shuffle_down(grad, delta); l = thread_index_in_simdgroup; "
                         "(u if l + delta < 32 else 0) + (grad if l < delta else 0)", None)),
    "simd_shuffle_xor": ("xor", "(int)((lane ^ d) & 31u)", "The value of x on lane (this lane XOR mask).",
                         lambda j, d: ((j ^ d) % 32, False),
                         ("simd_shuffle_xor(grad, mask)", None)),
    "simd_shuffle_rotate_down": ("rotate_down", "(int)((lane + d) & 31u)",
                                 "The value of x on lane (this lane + delta) modulo 32.",
                                 lambda j, d: ((j + d) % 32, False),
                                 ("simd_shuffle_rotate_up(grad, delta)", None)),
    "simd_shuffle_rotate_up": ("rotate_up", "(int)((lane - d) & 31u)",
                               "The value of x on lane (this lane - delta) modulo 32.",
                               lambda j, d: ((j - d) % 32, False),
                               ("simd_shuffle_rotate_down(grad, delta)", None)),
}


def _shuffle_ref(src):
    def ref(vals, lanes, active, exist):
        out = np.zeros(vals.shape, vals.dtype)
        for g in range(vals.shape[0]):
            for j in range(32):
                s, own = src(j, int(lanes[g, j]))
                if not 0 <= s < 32:
                    out[g, j] = vals[g, j] if own else 0
                else:
                    out[g, j] = vals[g, s] if exist[g, s] else 0
        return out
    ref.shuffle = True
    return ref


def _shuffle(name, mode, src_expr, doc, src, grad, second=None):
    """A shuffle: ``mode`` names the simulator's source rule (``sim.simd._SOURCE``),
    ``src_expr`` is the CUDA source lane in ``lane`` and ``d``, ``src`` the model's."""
    def sim(lay, args, m):
        return S.shuffle(lay, mode, args[0], args[1], m)

    def cuda(p, args, t):
        p.need("mb_shfl", _SHFL)
        full = getattr(p, "full_warp", False)      # all 32 lanes active: no vote for the mask
        fn = "mb_" + name + ("_full" if full else "")
        p.need(fn, f"""\
template <class T> __device__ inline T {fn}(T v, unsigned d) {{
    unsigned lane = mb_lane();
    (void)lane;
    return mb_shfl(v, {src_expr}, {'0xffffffffu' if full else '__activemask()'});
}}""")
        return f"{fn}({p.expr(args[0], ASSIGN)}, {p.expr(args[1], ASSIGN)})"
    second = second or ("delta" if mode in ("up", "down", "rotate_up", "rotate_down") else
                        ("mask" if mode == "xor" else "lane"))
    add_builtin(name, group=_group(name.split("_")[0]), kind="simd", doc=doc, example=f"v = {name}(x[i], 1)",
                rule=value_lane(("x", second)), sim=sim, msl=_msl_call(name), cuda=cuda, ref=_shuffle_ref(src),
                shim="s2", grad=grad, extra={"shuffle": mode})


for _n, (_mode, _src, _doc, _fn, _grad) in _SHUFFLES.items():
    _shuffle(_n, _mode, _src, _doc, _fn, _grad)


# ----------------------------------------------------------------------------- votes and the first lane

def _first_ref(vals, active):
    out = np.zeros(vals.shape, vals.dtype)
    for g in range(vals.shape[0]):
        idx = np.flatnonzero(active[g])
        out[g] = vals[g, idx[0]] if idx.size else 0
    return out


def _cuda_first(p, args, t):
    p.need("mb_shfl", _SHFL)
    return f"mb_shfl({p.expr(args[0], ASSIGN)}, __ffs(__activemask()) - 1, __activemask())"


add_builtin("simd_broadcast_first", group="SIMD-group", kind="simd",
            doc="The value of x on the first active lane, on every lane.", example="v = simd_broadcast_first(x[i])",
            rule=same_type(), sim=lambda lay, args, m: S.broadcast_first(lay, args[0], m),
            msl=_msl_call("simd_broadcast_first"), cuda=_cuda_first, ref=_first_ref, shim="s1",
            grad=("s = simd_sum(grad); s if simd_is_first() else 0",))


def _vote_ref(kind):
    def ref(vals, active):
        out = np.zeros(vals.shape, np.uint64 if kind == "ballot" else bool)
        for g in range(vals.shape[0]):
            v = vals[g].astype(bool) & active[g]
            if kind == "all":
                out[g] = bool(np.all(vals[g].astype(bool)[active[g]]))
            elif kind == "any":
                out[g] = bool(v.any())
            else:
                out[g] = sum(1 << j for j in range(32) if v[j])
        return out
    return ref


def _vote(kind, result, doc, cuda):
    name = f"simd_{kind}"
    msl = _msl_call(name)
    if kind == "ballot":
        def msl(p, args, t):
            return f"static_cast<ulong>(static_cast<simd_vote::vote_t>(simd_ballot({p.expr(args[0], ASSIGN)})))"
        msl.metal_name = "simd_ballot"
    add_builtin(name, group="SIMD-group", kind="simd", doc=doc, example=f"v = {name}(x[i] > 0)",
                rule=predicate_vote(result), sim=lambda lay, args, m: S.vote(lay, kind, args[0], m),
                msl=msl, cuda=lambda p, args, t: cuda.format(p.expr(args[0], ASSIGN)), ref=_vote_ref(kind),
                shim=f"{'simd_vote' if kind == 'ballot' else 'bool'} {name}(bool);")


_vote("all", T.bool_, "True if the condition holds on every active lane.", "__all_sync(__activemask(), {})")
_vote("any", T.bool_, "True if the condition holds on some active lane.", "__any_sync(__activemask(), {})")
_vote("ballot", T.uint64, "A bit mask of the active lanes where the condition holds (bit i: lane i).",
      "static_cast<uint64_t>(__ballot_sync(__activemask(), {}))")


def _is_first_cuda(p, args, t):
    p.need("mb_simd_is_first", "__device__ inline bool mb_simd_is_first() "
           "{ return mb_lane() == static_cast<unsigned>(__ffs(__activemask()) - 1); }")
    return "mb_simd_is_first()"


def _is_first_ref(vals, active):
    out = np.zeros(active.shape, bool)
    for g in range(active.shape[0]):
        idx = np.flatnonzero(active[g])
        if idx.size:
            out[g, idx[0]] = True
    return out


add_builtin("simd_is_first", group="SIMD-group", kind="simd", doc="True on the first active lane of the SIMD-group.",
            example="if simd_is_first(): ...", rule=nullary(T.bool_), sim=lambda lay, args, m: S.is_first(lay, m),
            msl=_msl_call("simd_is_first"), cuda=_is_first_cuda, ref=_is_first_ref, shim="bool simd_is_first();")
