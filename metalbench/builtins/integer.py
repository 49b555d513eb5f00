"""Numeric builtins (integers and floats alike) and integer bit functions: one
declaration each.

Integer references work on exact Python integers (``object`` arrays), so they are
independent of the simulator's NumPy code.
"""
from __future__ import annotations

import numpy as np

from . import numerics as N
from . import refs as R
from .. import types as T
from .core import BuiltinTypeError, add_builtin, custom, integer, numeric, type_word
from .floatmath import MB_FMAX3, MB_FMIN3
from .spell import CUDA_FT, by_kind, cuda, metal, template_helper

_PS = ("precise", "fast")


def _ints(fn):
    """An exact reference over Python ints: ``fn(*ints, bits, signed) -> int``."""
    def ref(*args, dt):
        bits, signed = 8 * dt.itemsize, dt.kind == "i"
        f = np.vectorize(lambda *a: fn(*[int(x) for x in a], bits=bits, signed=signed), otypes=[object])
        return f(*args)
    return ref


def _num(name, n, int_fn, float_fn, cu_float, cu_int, doc, *, example=None, py=(), helpers=None, msl=None,
         ref_int=None, ref_float=None, no_int_vector=False, namespaces=(), shim=None, details="", grad=None):
    """A builtin for integers and floats alike (``min``, ``abs``...)."""
    args = ", ".join(["x[i]", "y", "z"][:n])
    int_sim, float_sim = N.isim(int_fn), N.fsim(float_fn)

    def ref(*a, dt):
        return ref_float(*a) if N.is_float(dt) else _ints(ref_int)(*a, dt=dt)
    return add_builtin(
        name, group="Numeric", doc=doc, example=example or f"r = {name}({args})",
        rule=numeric(n, no_int_vector=no_int_vector), sim=N.by_kind(int_sim, float_sim),
        msl=msl or metal(name), cuda=cuda(float=cu_float, int=cu_int, helpers=helpers), python=py,
        namespaces=namespaces, ref=ref, shim=shim or f"m{n}", details=details, grad=grad)


def _wrapped(v, bits, signed):
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


# ----------------------------------------------------------------------------- numeric

_num("abs", 1, lambda x, dt: np.abs(x), np.abs, "fabsf", "mb_abs", "Absolute value (|INT_MIN| wraps to INT_MIN).",
     py=("abs", "np.abs", "np.absolute"),
     helpers={"mb_abs": "template <class T> __device__ inline T mb_abs(T x) { return x < T(0) ? static_cast<T>(-x) : x; }"},
     ref_int=lambda x, bits, signed: _wrapped(abs(x), bits, signed), ref_float=R.fabs, grad=("grad * sign(x)",))
_num("min", 2, lambda a, b, dt: np.minimum(a, b), np.fmin, "fminf", "mb_min",
     "The smaller of x and y (for floats a NaN argument gives the other).", py=("min", "np.minimum"),
     details="Python's min(a, b, c, ...) with more arguments chains min.",
     helpers={"mb_min": "template <class T> __device__ inline T mb_min(T a, T b) { return b < a ? b : a; }"},
     ref_int=lambda a, b, bits, signed: min(a, b), ref_float=R.fmin, namespaces=_PS,
     grad=("grad if x < y else 0", "0 if x < y else grad"))
_num("max", 2, lambda a, b, dt: np.maximum(a, b), np.fmax, "fmaxf", "mb_max",
     "The larger of x and y (for floats a NaN argument gives the other).", py=("max", "np.maximum"),
     details="Python's max(a, b, c, ...) with more arguments chains max.",
     helpers={"mb_max": "template <class T> __device__ inline T mb_max(T a, T b) { return a < b ? b : a; }"},
     ref_int=lambda a, b, bits, signed: max(a, b), ref_float=R.fmax, namespaces=_PS,
     grad=("grad if x > y else 0", "0 if x > y else grad"))
_num("clamp", 3, lambda x, lo, hi, dt: np.minimum(np.maximum(x, lo), hi), lambda x, lo, hi: np.fmin(np.fmax(x, lo), hi),
     "mb_fclamp", "mb_clamp", "min(max(x, lo), hi).", example="r = clamp(x[i], 0.0, 1.0)", py=("np.clip",),
     # Metal's integer clamp is min(max(x, minval), maxval) (Table 6.2), spelled out so that
     # lo > hi (undefined in Metal) gives hi on CUDA as on the simulator
     helpers={"mb_clamp": "template <class T> __device__ inline T mb_clamp(T x, T lo, T hi) "
                          "{ T m = x < lo ? lo : x; return hi < m ? hi : m; }",
              "mb_fclamp": "template <class T> __device__ inline T mb_fclamp(T x, T lo, T hi) "
                           "{ return mb_fmin_t(mb_fmax_t(x, lo), hi); }", **CUDA_FT},
     ref_int=lambda x, lo, hi, bits, signed: min(max(x, lo), hi),
     ref_float=R.clamp, namespaces=_PS,
     grad=("grad if x >= y and x <= z else 0", "grad if x < y else 0", "grad if x > z and x >= y else 0"))

_ISIGN = """\
// sign of an integer (Metal's sign is for floats only).
template <typename T>
inline T mb_isign(T x) {
    return static_cast<T>((x > T(0)) - (x < T(0)));
}"""
_num("sign", 1, lambda x, dt: np.sign(x), N.fsign, "mb_fsign", "mb_sign",
     "1 for positive x, -1 for negative, 0 (keeping the sign of a zero) otherwise; 0 for NaN.",
     py=("np.sign",), no_int_vector=True,
     msl=by_kind(int=template_helper("mb_isign", _ISIGN, vectors=False), float=metal("sign")),
     helpers={"mb_sign": "template <class T> __device__ inline T mb_sign(T x) "
                         "{ return static_cast<T>((T(0) < x) - (x < T(0))); }",
              "mb_fsign": """\
template <class T> __device__ inline T mb_fsign(T x) {
    return isnan(x) ? T(0) : (x > T(0) ? T(1) : (x < T(0) ? T(-1) : x));
}"""},
     ref_int=lambda x, bits, signed: (x > 0) - (x < 0),
     ref_float=R.sign, grad="zero")


def _med(a, b, c):
    return max(min(a, b), min(max(a, b), c))


_num("max3", 3, lambda a, b, c, dt: np.maximum(np.maximum(a, b), c), lambda a, b, c: np.fmax(np.fmax(a, b), c),
     "mb_fmax3", "mb_max3", "The largest of x, y and z.",
     helpers={"mb_max3": "template <class T> __device__ inline T mb_max3(T a, T b, T c) "
                         "{ T m = a < b ? b : a; return m < c ? c : m; }",
              "mb_fmax3": MB_FMAX3, **CUDA_FT},
     ref_int=lambda a, b, c, bits, signed: max(a, b, c), ref_float=R.fmax3,
     grad=(
           "grad if x >= y and x >= z else 0",
           "grad if y > x and y >= z else 0",
           "grad if z > x and z > y else 0"))
_num("min3", 3, lambda a, b, c, dt: np.minimum(np.minimum(a, b), c), lambda a, b, c: np.fmin(np.fmin(a, b), c),
     "mb_fmin3", "mb_min3", "The smallest of x, y and z.",
     helpers={"mb_min3": "template <class T> __device__ inline T mb_min3(T a, T b, T c) "
                         "{ T m = b < a ? b : a; return c < m ? c : m; }",
              "mb_fmin3": MB_FMIN3, **CUDA_FT},
     ref_int=lambda a, b, c, bits, signed: min(a, b, c), ref_float=R.fmin3,
     grad=(
           "grad if x <= y and x <= z else 0",
           "grad if y < x and y <= z else 0",
           "grad if z < x and z < y else 0"))
_num("median3", 3, lambda a, b, c, dt: np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c)),
     lambda a, b, c: np.fmax(np.fmin(a, b), np.fmin(np.fmax(a, b), c)),
     "mb_fmedian3", "mb_median3", "The middle value of x, y and z.",
     helpers={"mb_median3": "template <class T> __device__ inline T mb_median3(T a, T b, T c) {\n"
                            "    T lo = b < a ? b : a, hi = a < b ? b : a;\n"
                            "    T m = c < hi ? c : hi;\n    return lo < m ? m : lo;\n}",
              "mb_fmedian3": "template <class T> __device__ inline T mb_fmedian3(T a, T b, T c) "
                             "{ return mb_fmax_t(mb_fmin_t(a, b), mb_fmin_t(mb_fmax_t(a, b), c)); }", **CUDA_FT},
     ref_int=lambda a, b, c, bits, signed: _med(a, b, c),
     ref_float=R.median3,
     grad=(
           "grad if (x >= y) != (x >= z) or x == y or x == z else 0",
           "mx = (x >= y) != (x >= z) or x == y or x == z; grad if not mx and ((y >= x) != (y >= z) or y == z) else 0",
           "mx = (x >= y) != (x >= z) or x == y or x == z; my = (y >= x) != (y >= z) or y == z; grad if not mx and not my else 0"))


# ----------------------------------------------------------------------------- integer bit functions

def _i(name, n, sim, cu_code, doc, ref, *, rule=None, example=None, numba=(), shim=None, details="", uses=None):
    """An integer-only builtin: Metal's own function, a CUDA template helper (``uses``: the
    helpers its code calls, ``{name: code}``, added before it)."""
    fn = f"mb_{name}"
    args = ", ".join(["x[i]", "y", "z"][:n])
    return add_builtin(
        name, group="Integer", doc=doc, example=example or f"r = {name}({args})", rule=rule or integer(n),
        sim=N.isim(sim), msl=metal(name), cuda=cuda(int=fn, helpers={**(uses or {}), fn: cu_code}), numba=numba,
        ref=_ints(ref), shim=shim or f"i{n}", details=details)


_i("popcount", 1, N.popcount, """\
template <class T> __device__ inline T mb_popcount(T x) {
    if constexpr (sizeof(T) == 8) return static_cast<T>(__popcll(static_cast<unsigned long long>(x)));
    else if constexpr (sizeof(T) == 4) return static_cast<T>(__popc(static_cast<unsigned>(x)));
    else return static_cast<T>(__popc(static_cast<unsigned>(x) & ((1u << (8 * sizeof(T))) - 1u)));
}""", "The number of bits set in x.", lambda x, bits, signed: bin(x & ((1 << bits) - 1)).count("1"),
   numba=("cuda.popc",))
_i("clz", 1, N.clz, """\
template <class T> __device__ inline T mb_clz(T x) {
    if constexpr (sizeof(T) == 8) return static_cast<T>(__clzll(static_cast<long long>(x)));
    else if constexpr (sizeof(T) == 4) return static_cast<T>(__clz(static_cast<int>(x)));
    else return static_cast<T>(__clz(static_cast<int>(static_cast<unsigned>(x) & ((1u << (8 * sizeof(T))) - 1u)))
                               - (32 - 8 * (int)sizeof(T)));
}""", "The number of leading zero bits of x (its width for 0).",
   lambda x, bits, signed: bits - (x & ((1 << bits) - 1)).bit_length(), numba=("cuda.clz",))
_i("ctz", 1, N.ctz, """\
template <class T> __device__ inline T mb_ctz(T x) {
    if constexpr (sizeof(T) == 8) return static_cast<T>(x == 0 ? 64 : __ffsll(static_cast<long long>(x)) - 1);
    else {
        unsigned u = static_cast<unsigned>(x) & (sizeof(T) == 4 ? 0xffffffffu : (1u << (8 * sizeof(T))) - 1u);
        return static_cast<T>(u == 0 ? 8 * (int)sizeof(T) : __ffs(static_cast<int>(u)) - 1);
    }
}""", "The number of trailing zero bits of x (its width for 0).",
   lambda x, bits, signed: bits if x & ((1 << bits) - 1) == 0 else ((x & -x).bit_length() - 1))
_i("reverse_bits", 1, N.reverse_bits, """\
template <class T> __device__ inline T mb_reverse_bits(T x) {
    if constexpr (sizeof(T) == 8) return static_cast<T>(__brevll(static_cast<unsigned long long>(x)));
    else return static_cast<T>(__brev(static_cast<unsigned>(x)) >> (32 - 8 * sizeof(T)));
}""", "x with its bits in reverse order.",
   lambda x, bits, signed: _wrapped(int(format(x & ((1 << bits) - 1), f"0{bits}b")[::-1], 2), bits, signed),
   numba=("cuda.brev",))


def _mulhi(a, b, dt):
    bits = 8 * dt.itemsize
    return N.to_dt((N.wide(a, dt) * N.wide(b, dt)) >> bits, dt)


_MULHI = """\
template <class T> __device__ inline T mb_mulhi(T a, T b) {
    if constexpr (sizeof(T) == 8) {
        if constexpr (T(-1) < T(0)) return __mul64hi(a, b);
        else return __umul64hi(a, b);
    } else if constexpr (T(-1) < T(0)) {
        return static_cast<T>((static_cast<long long>(a) * static_cast<long long>(b)) >> (8 * sizeof(T)));
    } else {
        return static_cast<T>((static_cast<unsigned long long>(a) * static_cast<unsigned long long>(b))
                              >> (8 * sizeof(T)));
    }
}"""
_i("mulhi", 2, _mulhi, _MULHI, "The high half of the full product x * y.", lambda a, b, bits, signed: (a * b) >> bits)
_i("absdiff", 2, lambda a, b, dt: N.to_dt(abs(N.wide(a, dt) - N.wide(b, dt)), dt), """\
template <class T> __device__ inline T mb_absdiff(T a, T b) {
    return a < b ? static_cast<T>(b - a) : static_cast<T>(a - b);
}""", "|x - y| without overflow (the result's bits are the unsigned difference).",
   lambda a, b, bits, signed: _wrapped(abs(a - b), bits, signed))
_i("addsat", 2, lambda a, b, dt: N.saturate(N.wide(a, dt) + N.wide(b, dt), dt), """\
template <class T> __device__ inline T mb_addsat(T a, T b) {
    // the sum wraps in unsigned arithmetic: a signed overflow is undefined, and nvcc then
    // folds the overflow tests below away (INT_MAX + 1 came out INT_MIN on the H200)
    T s = static_cast<T>(static_cast<unsigned long long>(a) + static_cast<unsigned long long>(b));
    if constexpr (T(-1) < T(0)) {
        const T mx = static_cast<T>((1ull << (8 * sizeof(T) - 1)) - 1ull);
        if (b > T(0) && s < a) return mx;
        if (b < T(0) && s > a) return static_cast<T>(-mx - 1);
        return s;
    } else {
        return s < a ? static_cast<T>(~T(0)) : s;
    }
}""", "x + y, saturated to the type's range.",
   lambda a, b, bits, signed: min(max(a + b, -(1 << (bits - 1)) if signed else 0),
                                  (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1))
_i("subsat", 2, lambda a, b, dt: N.saturate(N.wide(a, dt) - N.wide(b, dt), dt), """\
template <class T> __device__ inline T mb_subsat(T a, T b) {
    T s = static_cast<T>(static_cast<unsigned long long>(a) - static_cast<unsigned long long>(b));
    if constexpr (T(-1) < T(0)) {
        const T mx = static_cast<T>((1ull << (8 * sizeof(T) - 1)) - 1ull);
        if (b < T(0) && s < a) return mx;
        if (b > T(0) && s > a) return static_cast<T>(-mx - 1);
        return s;
    } else {
        return b > a ? T(0) : s;
    }
}""", "x - y, saturated to the type's range.",
   lambda a, b, bits, signed: min(max(a - b, -(1 << (bits - 1)) if signed else 0),
                                  (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1))
def _low24(v, signed):
    """The low 24 bits of exact integers (object or int64 arrays, or ints), sign-extended
    from bit 23 for a signed type: what Metal's ``mul24`` multiplies."""
    v = v & 0xFFFFFF
    return (v ^ 0x800000) - 0x800000 if signed else v


def _exact(x, dt):
    return np.asarray(x).astype(dt).astype(object)


def _mul24_sim(a, b, dt):
    s = dt.kind == "i"
    return N.to_dt(_low24(_exact(a, dt), s) * _low24(_exact(b, dt), s), dt)


_MUL24 = """\
template <class T> __device__ inline T mb_mul24(T a, T b) {
    long long x = static_cast<long long>(a) & 0xFFFFFF, y = static_cast<long long>(b) & 0xFFFFFF;
    if constexpr (T(-1) < T(0)) { x = (x ^ 0x800000) - 0x800000; y = (y ^ 0x800000) - 0x800000; }
    return static_cast<T>(static_cast<unsigned long long>(x * y));
}"""
_i("mul24", 2, _mul24_sim, _MUL24, "x * y of the low 24 bits of x and y (sign-extended for signed types).",
   lambda a, b, bits, signed: _wrapped(_low24(a, signed) * _low24(b, signed), bits, signed),
   details="Metal defines it for 32-bit integers whose values fit in 24 bits; beyond that the result is "
           "the product of the low 24 bits, as here.")
_i("mad24", 3, lambda a, b, c, dt: N.to_dt(_mul24_sim(a, b, dt).astype(object) + _exact(c, dt), dt), """\
template <class T> __device__ inline T mb_mad24(T a, T b, T c) {
    return static_cast<T>(static_cast<unsigned long long>(mb_mul24(a, b)) + static_cast<unsigned long long>(c));
}""", "mul24(x, y) + z (wrapping).",
   lambda a, b, c, bits, signed: _wrapped(_low24(a, signed) * _low24(b, signed) + c, bits, signed),
   uses={"mb_mul24": _MUL24})
_i("madhi", 3, lambda a, b, c, dt: N.to_dt(_mulhi(a, b, dt).astype(object) + _exact(c, dt), dt), """\
template <class T> __device__ inline T mb_madhi(T a, T b, T c) {
    return static_cast<T>(static_cast<unsigned long long>(mb_mulhi(a, b)) + static_cast<unsigned long long>(c));
}""", "mulhi(x, y) + z (wrapping).",
   lambda a, b, c, bits, signed: _wrapped(((a * b) >> bits) + c, bits, signed), uses={"mb_mulhi": _MULHI})
_i("madsat", 3, lambda a, b, c, dt: N.saturate(_exact(a, dt) * _exact(b, dt) + _exact(c, dt), dt), """\
template <class T> __device__ inline T mb_madsat(T a, T b, T c) {
    typedef unsigned long long U;
    if constexpr (sizeof(T) < 8 && T(-1) < T(0)) {           // exact in 64 bits, then clamped
        long long v = static_cast<long long>(a) * static_cast<long long>(b) + static_cast<long long>(c);
        const long long hi = static_cast<long long>((1ull << (8 * sizeof(T) - 1)) - 1ull);
        return static_cast<T>(v > hi ? hi : v < -hi - 1 ? -hi - 1 : v);
    } else if constexpr (sizeof(T) < 8) {
        U v = static_cast<U>(a) * static_cast<U>(b) + static_cast<U>(c);
        const U hi = (1ull << (8 * sizeof(T))) - 1ull;
        return static_cast<T>(v > hi ? hi : v);
    } else if constexpr (T(-1) < T(0)) {                       // the 128-bit sum as (high, low)
        U lo = static_cast<U>(a) * static_cast<U>(b), s = lo + static_cast<U>(c);
        long long h = __mul64hi(static_cast<long long>(a), static_cast<long long>(b))
                      + (c < T(0) ? -1 : 0) + (s < lo ? 1 : 0);
        if (h == (static_cast<long long>(s) < 0 ? -1 : 0)) return static_cast<T>(s);
        return h < 0 ? static_cast<T>(1ull << 63) : static_cast<T>(~(1ull << 63));
    } else {
        U lo = static_cast<U>(a) * static_cast<U>(b), s = lo + static_cast<U>(c);
        U h = __umul64hi(static_cast<U>(a), static_cast<U>(b)) + (s < lo ? 1 : 0);
        return h != 0 ? static_cast<T>(~0ull) : static_cast<T>(s);
    }
}""", "x * y + z, saturated to the type's range.",
   lambda a, b, c, bits, signed: min(max(a * b + c, -(1 << (bits - 1)) if signed else 0),
                                     (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1))
_i("hadd", 2, lambda a, b, dt: N.to_dt((N.wide(a, dt) + N.wide(b, dt)) >> 1, dt), """\
template <class T> __device__ inline T mb_hadd(T a, T b) {
    return static_cast<T>((a >> 1) + (b >> 1) + (a & b & T(1)));
}""", "(x + y) >> 1 without overflow.", lambda a, b, bits, signed: (a + b) >> 1)
_i("rhadd", 2, lambda a, b, dt: N.to_dt((N.wide(a, dt) + N.wide(b, dt) + 1) >> 1, dt), """\
template <class T> __device__ inline T mb_rhadd(T a, T b) {
    return static_cast<T>((a >> 1) + (b >> 1) + ((a | b) & T(1)));
}""", "(x + y + 1) >> 1 without overflow.", lambda a, b, bits, signed: (a + b + 1) >> 1)


def _rotate(v, s, dt):
    bits = 8 * dt.itemsize
    u = N.unsigned(v, dt)
    k = (N.unsigned(s, dt) % np.uint64(bits)).astype(np.uint64)
    mask = np.uint64((1 << bits) - 1) if bits < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    left = (u << k) & mask
    right = np.where(k == 0, np.uint64(0), u >> ((np.uint64(bits) - k) % np.uint64(64)))
    return N.wrap(left | right, dt)


def _rot_ref(v, s, bits, signed):
    u, k = v & ((1 << bits) - 1), (s & ((1 << bits) - 1)) % bits
    return _wrapped(((u << k) | (u >> (bits - k))) if k else u, bits, signed)


_i("rotate", 2, _rotate, """\
template <class T> __device__ inline T mb_rotate(T v, T s) {
    constexpr unsigned W = 8 * sizeof(T);
    constexpr unsigned long long M = W == 64 ? ~0ull : (1ull << (W % 64)) - 1ull;
    unsigned long long u = static_cast<unsigned long long>(v) & M;
    unsigned k = static_cast<unsigned>((static_cast<unsigned long long>(s) & M) % W);
    return static_cast<T>(k == 0 ? u : (((u << k) | (u >> (W - k))) & M));
}""", "x rotated left by y bits (modulo the width).", _rot_ref, example="r = rotate(x[i], 3)")


def _bits_rule(n_values: int):
    """``extract_bits(x, offset, bits)`` / ``insert_bits(base, insert, offset, bits)``."""
    names = ("x", "offset", "bits") if n_values == 1 else ("base", "insert", "offset", "bits")

    def check(name, types):
        for t in types:
            if not isinstance(t, (T.ScalarType, T.VectorType)) or not T.elem_of(t).is_int:
                raise BuiltinTypeError(f"{name} takes integers, got {type_word(t)}")
        for t in types[n_values:]:
            if isinstance(t, T.VectorType):
                raise BuiltinTypeError(f"{name}'s offset and bits are scalars, got {type_word(t)}")
        v = types[0] if n_values == 1 else T.binary_result(types[0], types[1])
        return [v] * n_values + [T.uint32, T.uint32], v
    doc = "(x: I, offset: uint, bits: uint) -> I" if n_values == 1 else \
        "(base: I, insert: I, offset: uint, bits: uint) -> I"
    ints = [T.int32, T.uint32, T.uint8, T.int16, T.uint64, T.int64]
    return custom(names, check, doc, "I is any integer type or a vector of one; offset + bits must not "
                  "exceed its width.", [tuple([t] * n_values + [T.uint32, T.uint32]) for t in ints])


_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


def _ones(nb):
    """uint64 masks of ``nb`` low one bits (``nb`` in 0..64)."""
    return np.where(nb >= 64, _ALL, (np.uint64(1) << np.minimum(nb, np.uint64(63))) - np.uint64(1))


def _off_bits(off, nb, bits):
    # offsets past the width read nothing; fields past the width are cut at it
    off = np.minimum(np.asarray(off).astype(np.uint64), np.uint64(bits))
    return off, np.minimum(np.asarray(nb).astype(np.uint64), np.uint64(bits) - off)


def _extract(x, off, nb, dt):
    off, nb = _off_bits(off, nb, 8 * dt.itemsize)
    f = (N.unsigned(x, dt) >> np.minimum(off, np.uint64(63))) & _ones(nb)
    if dt.kind == "i":     # sign-extend the field
        top = (f >> (np.maximum(nb, np.uint64(1)) - np.uint64(1))) & np.uint64(1)
        f = np.where((nb > 0) & (top == 1), f | ~_ones(nb), f)
    return N.wrap(f, dt)


def _extract_ref(x, off, nb, bits, signed):
    off = min(off, bits)
    nb = min(nb, bits - off)
    if nb == 0:
        return 0
    f = ((x & ((1 << bits) - 1)) >> off) & ((1 << nb) - 1)
    if signed and f >> (nb - 1):
        f -= 1 << nb
    return _wrapped(f, bits, signed)


def _insert(base, ins, off, nb, dt):
    off, nb = _off_bits(off, nb, 8 * dt.itemsize)
    sh = np.minimum(off, np.uint64(63))
    mask = np.where(nb == 0, np.uint64(0), _ones(nb) << sh)
    r = (N.unsigned(base, dt) & ~mask) | ((N.unsigned(ins, dt) << sh) & mask)
    return N.wrap(r, dt)


def _insert_ref(base, ins, off, nb, bits, signed):
    off = min(off, bits)
    nb = min(nb, bits - off)
    mask = ((1 << nb) - 1) << off
    r = ((base & ((1 << bits) - 1)) & ~mask) | ((ins << off) & mask)
    return _wrapped(r, bits, signed)


add_builtin("extract_bits", group="Integer", doc="The field of `bits` bits of x starting at bit `offset` "
            "(sign-extended for signed x).", example="r = extract_bits(x[i], 4u, 8u)", rule=_bits_rule(1),
            sim=N.isim(_extract), msl=metal("extract_bits"), ref=_ints(_extract_ref),
            shim="template <class T> T extract_bits(T, uint, uint);",
            cuda=cuda(int="mb_extract_bits", helpers={"mb_extract_bits": """\
template <class T> __device__ inline T mb_extract_bits(T x, unsigned off, unsigned bits) {
    constexpr unsigned W = 8 * sizeof(T);
    if (bits == 0) return T(0);
    unsigned long long f = static_cast<unsigned long long>(x) << (64 - off - bits);
    if constexpr (T(-1) < T(0)) return static_cast<T>(static_cast<long long>(f) >> (64 - bits));
    else return static_cast<T>(f >> (64 - bits));
}"""}))
add_builtin("insert_bits", group="Integer", doc="base with its `bits` bits at `offset` replaced by the low "
            "bits of insert.", example="r = insert_bits(x[i], 5u, 4u, 8u)", rule=_bits_rule(2),
            sim=N.isim(_insert), msl=metal("insert_bits"), ref=_ints(_insert_ref),
            shim="template <class T> T insert_bits(T, T, uint, uint);",
            cuda=cuda(int="mb_insert_bits", helpers={"mb_insert_bits": """\
template <class T> __device__ inline T mb_insert_bits(T base, T ins, unsigned off, unsigned bits) {
    if (bits == 0) return base;
    unsigned long long ones = bits >= 64 ? ~0ull : (1ull << bits) - 1ull;
    unsigned long long mask = ones << off;
    unsigned long long b = static_cast<unsigned long long>(base), n = static_cast<unsigned long long>(ins);
    return static_cast<T>((b & ~mask) | ((n << off) & mask));
}"""}))
