"""Float math builtins: one declaration each.

Each ``_f(...)`` call below is one builtin's whole declaration: names and aliases,
typing, simulator implementation (``sim``, float64 then rounded once), Metal and CUDA
spellings, docs and the reference model the registry test compares with.
"""
from __future__ import annotations

import decimal
import math

import numpy as np

from . import numerics as N
from .. import types as T
from . import refs as R
from .. import types as T
from .core import (BuiltinTypeError, add_builtin, custom, float_int, float_math, float_predicate, float_vectors, numeric,
                   type_word)
from .spell import ASSIGN, CUDA_FT, cuda, metal, metal_helper

_PS = ("precise", "fast")       # Metal's nested math namespaces
MB_FMIN3 = "template <class T> __device__ inline T mb_fmin3(T a, T b, T c) { return mb_fmin_t(mb_fmin_t(a, b), c); }"
MB_FMAX3 = "template <class T> __device__ inline T mb_fmax3(T a, T b, T c) { return mb_fmax_t(mb_fmax_t(a, b), c); }"


def _vec(fn):
    """A scalar Python reference applied elementwise (float64)."""
    return np.vectorize(fn, otypes=[np.float64])


def _f(name, n, sim, cu, doc, *, example=None, py=(), numba=(), msl=None, ref=None, tol=1.0,
       details="", helpers=None, rule=None, namespaces=_PS, group="Float math", grad=None, shim=None,
       cuda_spell=None):
    args = ", ".join("x[i]" if k == 0 else ("y" if k == 1 else "z") for k in range(n))
    if msl is not None and not getattr(msl, "metal_name", "").startswith("metal::"):
        namespaces = ()         # not in Metal's library (a helper prints it): no precise::/fast:: spellings
    return add_builtin(
        name, group=group, doc=doc, example=example or f"r = {name}({args})",
        rule=rule or float_math(n), sim=sim, msl=msl or metal(name), cuda=cuda_spell or cuda(float=cu, helpers=helpers),
        python=py, numba=numba, namespaces=namespaces, tol_ulp=tol, details=details,
        ref=ref if ref is not None else getattr(R, name, None) or getattr(R, name + "_"),
        shim=shim or {1: "m1", 2: "m2", 3: "m3"}[n], grad=grad)


def _py(name, np_name=None):
    """``math.name`` and ``np.<np_name>`` aliases (where the modules have them)."""
    out = []
    if hasattr(math, name):
        out.append(f"math.{name}")
    for n in ([np_name] if isinstance(np_name, str) else (np_name or [name])):
        if hasattr(np, n):
            out.append(f"np.{n}")
    return tuple(out)


# ----------------------------------------------------------------------------- exponentials, logs, powers

_f("exp", 1, N.fsim(np.exp), "expf", "e raised to the power x.", py=_py("exp"), grad=("grad * result",))
_f("exp2", 1, N.fsim(np.exp2), "exp2f", "2 raised to the power x.", py=_py("exp2"),
   grad=("grad * result * 0.6931471805599453",))
_f("exp10", 1, N.fsim(lambda x: np.power(10.0, x)), "exp10f", "10 raised to the power x.",
   grad=("grad * result * 2.302585092994046",))
_f("log", 1, N.fsim(np.log), "logf", "Natural logarithm (log(0) is -inf, negative x gives NaN).", py=_py("log"),
   grad=("grad / x",))
_f("log2", 1, N.fsim(np.log2), "log2f", "Base-2 logarithm.", py=_py("log2"),
   grad=("grad / (x * 0.6931471805599453)",))
_f("log10", 1, N.fsim(np.log10), "log10f", "Base-10 logarithm.", py=_py("log10"),
   grad=("grad / (x * 2.302585092994046)",))
_f("sqrt", 1, N.fsim(np.sqrt), "sqrtf", "Square root.", py=_py("sqrt"), grad=("grad * 0.5 / result",))
_f("rsqrt", 1, N.fsim(lambda x: 1.0 / np.sqrt(x)), "rsqrtf", "Reciprocal square root, 1 / sqrt(x).",
   ref=_vec(lambda x: math.copysign(math.inf, x) if x == 0 else (math.nan if x < 0 or x != x else
                                                                 1.0 / math.sqrt(x))), tol=2,
   grad=("grad * -0.5 * result / x",))
_f("pow", 2, N.fsim(np.power), "powf", "x raised to the power y (also x ** y).", py=("pow",) + _py("pow", ["power", "pow"]),
   grad=("0 if y == 0 else grad * y * pow(x, y - 1)", "grad * result * log(x) if x > 0 else 0"))
_f("powr", 2, N.fsim(np.power), "powf", "x raised to the power y, for x >= 0 (Metal leaves x < 0 undefined).",
   ref=R.pow_, grad=("0 if y == 0 else grad * y * powr(x, y - 1)", "grad * result * log(x) if x > 0 else 0"))
_f("log1p", 1, N.fsim(np.log1p), "log1pf", "log(1 + x), accurate near 0.", py=_py("log1p"),
   msl=metal_helper("mb_log1p", """\
// log1p without cancellation (Goldberg's trick): Metal has no log1p.
inline float mb_log1p(float x) {
    float u = 1.0f + x;
    if (u == 1.0f || metal::isinf(x)) {
        return x;
    }
    return metal::log(u) * (x / (u - 1.0f));
}"""), ref=_vec(lambda x: -math.inf if x == -1 else (math.nan if x < -1 or x != x else
                                                      (x if math.isinf(x) else math.log1p(x)))),
   grad=("grad / (1 + x)",))
_f("expm1", 1, N.fsim(np.expm1), "expm1f", "exp(x) - 1, accurate near 0.", py=_py("expm1"),
   msl=metal_helper("mb_expm1", """\
// expm1 without cancellation (Kahan's trick): Metal has no expm1.
inline float mb_expm1(float x) {
    float u = metal::exp(x);
    if (u == 1.0f) {
        return x;
    }
    float um1 = u - 1.0f;
    if (um1 == -1.0f || metal::isinf(u)) {
        return um1;
    }
    return um1 * x / metal::log(u);
}"""), ref=_vec(lambda x: x if x != x else (math.inf if x > 709 else math.expm1(x))), grad=("grad * (result + 1)",))
_f("cbrt", 1, N.fsim(np.cbrt), "cbrtf", "Cube root (negative x gives a negative root).", py=_py("cbrt"),
   numba=("cuda.cbrt",), msl=metal_helper("mb_cbrt", """\
// cbrt: pow plus one Newton step: Metal has no cbrt.
inline float mb_cbrt(float x) {
    float y = metal::copysign(metal::pow(metal::fabs(x), 1.0f / 3.0f), x);
    if (y != 0.0f && metal::isfinite(y)) {
        y = y - (y * y * y - x) / (3.0f * y * y);
    }
    return y;
}"""), grad=("grad / (3 * result * result)",))
_f("ldexp", 2, N.ldexp, "ldexpf", "x * 2**k, exactly (k is an integer).", rule=float_int(("x", "k")),
   example="r = ldexp(x[i], 2)", py=_py("ldexp"),
   shim="template <class T> T ldexp(T, int); template <class T, int N> vec<T, N> ldexp(vec<T, N>, vec<int, N>);",
   ref=lambda x, k: np.ldexp(x, np.clip(k, -2000, 2000).astype(np.int32)), grad=("ldexp(grad, k)", None))

# ----------------------------------------------------------------------------- trigonometry

_f("sin", 1, N.fsim(np.sin), "sinf", "Sine (radians).", py=_py("sin"), grad=("grad * cos(x)",))
_f("cos", 1, N.fsim(np.cos), "cosf", "Cosine (radians).", py=_py("cos"), grad=("-grad * sin(x)",))
_f("tan", 1, N.fsim(np.tan), "tanf", "Tangent (radians).", py=_py("tan"), grad=("grad * (1 + result * result)",))
_f("asin", 1, N.fsim(np.arcsin), "asinf", "Arc sine, in [-pi/2, pi/2].", py=_py("asin", ["arcsin", "asin"]),
   grad=("grad * rsqrt(1 - x * x)",))
_f("acos", 1, N.fsim(np.arccos), "acosf", "Arc cosine, in [0, pi].", py=_py("acos", ["arccos", "acos"]),
   grad=("-grad * rsqrt(1 - x * x)",))
_f("atan", 1, N.fsim(np.arctan), "atanf", "Arc tangent, in [-pi/2, pi/2].", py=_py("atan", ["arctan", "atan"]),
   grad=("grad / (1 + x * x)",))
_f("atan2", 2, N.fsim(np.arctan2), "atan2f", "Angle of the point (y, x): atan2(y, x), in [-pi, pi].",
   example="a = atan2(y[i], x[i])", py=_py("atan2", ["arctan2", "atan2"]),
   grad=("grad * y / (x * x + y * y)", "-grad * x / (x * x + y * y)"))
_f("sinh", 1, N.fsim(np.sinh), "sinhf", "Hyperbolic sine.", py=_py("sinh"), grad=("grad * cosh(x)",))
_f("cosh", 1, N.fsim(np.cosh), "coshf", "Hyperbolic cosine.", py=_py("cosh"), grad=("grad * sinh(x)",))
_f("tanh", 1, N.fsim(np.tanh), "tanhf", "Hyperbolic tangent.", py=_py("tanh"), grad=("grad * (1 - result * result)",))
_f("asinh", 1, N.fsim(np.arcsinh), "asinhf", "Inverse hyperbolic sine.", py=_py("asinh", ["arcsinh", "asinh"]),
   grad=("grad * rsqrt(x * x + 1)",))
_f("acosh", 1, N.fsim(np.arccosh), "acoshf", "Inverse hyperbolic cosine.", py=_py("acosh", ["arccosh", "acosh"]),
   grad=("grad * rsqrt(x * x - 1)",))
_f("atanh", 1, N.fsim(np.arctanh), "atanhf", "Inverse hyperbolic tangent.", py=_py("atanh", ["arctanh", "atanh"]),
   grad=("grad / (1 - x * x)",))
_f("sinpi", 1, N.fsim(N.sinpi), "sinpif", "sin(pi * x), exact at integers and half-integers.",
   ref=_vec(lambda x: _trig_pi(math.sin, x, 2.0)), tol=2, grad=("grad * 3.141592653589793 * cospi(x)",))
_f("cospi", 1, N.fsim(N.cospi), "cospif", "cos(pi * x), exact at integers and half-integers.",
   ref=_vec(lambda x: _trig_pi(math.cos, x, 2.0)), tol=2, grad=("-grad * 3.141592653589793 * sinpi(x)",))
_f("tanpi", 1, N.fsim(N.tanpi), "mb_tanpi", "tan(pi * x); +-inf at half-integers.",
   helpers={"mb_tanpi": "template <class T> __device__ inline T mb_tanpi(T x) "
                        "{ if constexpr (sizeof(T) == 8) return sinpi(x) / cospi(x); else return sinpif(x) / cospif(x); }"},
   ref=_vec(lambda x: _trig_pi(math.tan, x, 2.0)), tol=2, grad=("grad * 3.141592653589793 * (1 + result * result)",))


def _trig_pi(f, x: float, period: float) -> float:
    """A reference for sinpi/cospi/tanpi: the exact values at multiples of 1/2, else
    f(pi * r) on the exactly reduced argument r, evaluated in 40-digit decimal arithmetic
    (math.sin(math.pi * r) is off by many ulps for float64: pi * r is rounded)."""
    if not math.isfinite(x):
        return math.nan
    r = math.fmod(x, period)
    exact = {math.sin: {0.0: 0.0, 0.5: 1.0, 1.0: 0.0, 1.5: -1.0},
             math.cos: {0.0: 1.0, 0.5: 0.0, 1.0: -1.0, 1.5: 0.0},
             math.tan: {0.0: 0.0, 0.5: math.inf, 1.0: 0.0, 1.5: -math.inf}}[f]
    a = abs(r)
    if a in exact:
        v = exact[a]
        return -v if (r < 0 and f is not math.cos) else v
    s, c = _dec_sincos(r)
    with decimal.localcontext(_DEC):
        return float(s if f is math.sin else (c if f is math.cos else s / c))


_DEC = decimal.Context(prec=40)
_DEC_PI = decimal.Decimal("3.14159265358979323846264338327950288419716939937510")


def _dec_sincos(r: float):
    """sin and cos of pi r (|r| < 2) by their Taylor series, to 40 digits."""
    with decimal.localcontext(_DEC):
        z = decimal.Decimal(r) * _DEC_PI
        s, c, term, k = decimal.Decimal(0), decimal.Decimal(0), decimal.Decimal(1), 0
        while k < 80:
            c += term if k % 4 == 0 else (-term if k % 4 == 2 else 0)
            s += term if k % 4 == 1 else (-term if k % 4 == 3 else 0)
            k += 1
            term = term * z / k
        return +s, +c


# ----------------------------------------------------------------------------- rounding and remainders

_f("floor", 1, N.fsim(np.floor), "floorf", "Largest integer value not above x (a float).", py=_py("floor"),
   grad="zero")
_f("ceil", 1, N.fsim(np.ceil), "ceilf", "Smallest integer value not below x (a float).", py=_py("ceil"), grad="zero")
_f("trunc", 1, N.fsim(np.trunc), "truncf", "x rounded toward zero (a float).", py=_py("trunc"), grad="zero")
_f("round", 1, N.fsim(N.round_half_away), "roundf",
   "x rounded to the nearest integer value, halfway cases away from zero.", py=("round",),
   details="Python's round() in a kernel means this Metal round (halves away from zero), not Python's "
           "round-half-to-even; use rint for that.",
   ref=_vec(lambda x: x if not math.isfinite(x) else math.copysign(math.floor(abs(x) + 0.5), x)), grad="zero")
_f("rint", 1, N.fsim(np.rint), "rintf", "x rounded to the nearest integer value, halfway cases to even.",
   py=_py("rint"), grad="zero")
_FRACT_CUDA = {
    # fmin(x - floor(x), the largest value below 1 of the RESULT type): half and bfloat
    # compute in float, so the float constant would round up to 1.0 there
    name: cuda(float=fn, helpers={fn: code}) for name, fn, code in (
        ("float", "mb_fract", "template <class T> __device__ inline T mb_fract(T x) { if constexpr (sizeof(T) == 8) "
                              "return fmin(x - floor(x), 0x1.fffffffffffffp-1); else return fminf(x - floorf(x), 0x1.fffffep-1f); }"),
        ("float16", "mb_fract_h", "__device__ inline float mb_fract_h(float x) { return fminf(x - floorf(x), 0x1.ffcp-1f); }"),
        ("bfloat16", "mb_fract_bf", "__device__ inline float mb_fract_bf(float x) { return fminf(x - floorf(x), 0x1.fep-1f); }"))}


def _fract_cuda(p, args, t):
    return _FRACT_CUDA.get(T.elem_of(args[0].type).name, _FRACT_CUDA["float"])(p, args, t)


_fract_cuda.cuda_name = "mb_fract"
_f("fract", 1, N.fract, None, "x - floor(x), clamped below 1: always in [0, 1).", cuda_spell=_fract_cuda,
   details="Metal specifies a result >= 0 and < 1 (Table 6.4), which x - floor(x) alone breaks for tiny negative x "
           "(-1e-9 - floor(-1e-9) rounds to 1.0): the result is fmin(x - floor(x), the largest value below 1 of "
           "the result type), so NaN and +-inf give that value too (fmin drops the NaN of inf - inf).",
   ref=lambda x, dt: _vec(lambda v: min(v - math.floor(v), N.below_one(dt)) if math.isfinite(v)
                          else N.below_one(dt))(x),
   grad=("grad",))
_f("fmod", 2, N.fsim(np.fmod), "fmodf", "Remainder of x / y with the sign of x (C's fmod; also x % y on floats).",
   py=_py("fmod"), grad=("grad", "-grad * trunc(x / y)"))
_f("divide", 2, N.fsim(np.divide), "mb_divide", "x / y; metal::fast::divide is Metal's fast variant.",
   example="q = metal.fast.divide(x[i], y)", msl=metal("divide", through_half=True),
   helpers={"mb_divide": "template <class T> __device__ inline T mb_divide(T x, T y) { return x / y; }"},
   details="The simulator and CUDA give the correctly rounded quotient; metal::fast::divide may differ "
           "by a few ulp on the GPU.", grad=("grad / y", "-grad * result / y"))

# ----------------------------------------------------------------------------- other float functions

_f("copysign", 2, N.fsim(np.copysign), "copysignf", "|x| with the sign of y.", py=_py("copysign"),
   grad=("grad if signbit(x) == signbit(y) else -grad", None))
_f("hypot", 2, N.fsim(np.hypot), "hypotf", "sqrt(x*x + y*y) without overflow.", py=_py("hypot"),
   msl=metal_helper("mb_hypot", """\
// hypot without overflow: Metal has no hypot.
inline float mb_hypot(float x, float y) {
    float a = metal::fabs(x);
    float b = metal::fabs(y);
    float m = metal::max(a, b);
    float n = metal::min(a, b);
    if (metal::isinf(m) || m == 0.0f) {
        return m;
    }
    float r = n / m;
    return m * metal::sqrt(1.0f + r * r);
}"""), tol=2, grad=("grad * x / result if result > 0 else 0", "grad * y / result if result > 0 else 0"))
_f("fdim", 2, N.fsim(lambda a, b: np.where(np.isnan(a) | np.isnan(b), np.nan, np.where(a > b, a - b, 0.0))),
   "fdimf", "x - y if x > y, else +0.", grad=("grad if x > y else 0", "-grad if x > y else 0"))
_f("step", 2, N.fsim(lambda e, x: np.where(x < e, 0.0, 1.0)), "mb_step", "0.0 if x < edge, else 1.0.",
   rule=float_math(2, ("edge", "x")), example="r = step(0.5, x[i])",
   helpers={"mb_step": "template <class T> __device__ inline T mb_step(T edge, T x) { return x < edge ? T(0) : T(1); }"},
   grad="zero")
_f("fma", 3, N.fsim(lambda a, b, c: a * b + c, R.fma_scalar), "fmaf", "x * y + z with one rounding.", py=_py("fma"),
   numba=("cuda.fma",), example="r = fma(x[i], y, z)",
   details="The simulator computes in float64 and rounds once, which equals a fused multiply-add for "
           "float32 and smaller types; float64 is computed exactly, one element at a time.", grad=("grad * y", "grad * x", "grad"))
_f("mix", 3, N.fsim(lambda x, y, a: x + (y - x) * a), "mb_mix", "Linear blend x + (y - x) * a.",
   rule=float_math(3, ("x", "y", "a")), example="r = mix(x[i], y[i], 0.25)",
   helpers={"mb_mix": "template <class T> __device__ inline T mb_mix(T x, T y, T a) { return x + (y - x) * a; }"},
   grad=("grad * (1 - a)", "grad * a", "grad * (y - x)"))
_f("smoothstep", 3, N.fsim(N.smoothstep), "mb_smoothstep", "Hermite interpolation: 0 below edge0, 1 above edge1.",
   rule=float_math(3, ("edge0", "edge1", "x")), example="r = smoothstep(0.0, 1.0, x[i])",
   helpers={"mb_smoothstep": """\
template <class T> __device__ inline T mb_smoothstep(T e0, T e1, T x) {
    T t = mb_fmin_t(mb_fmax_t((x - e0) / (e1 - e0), T(0)), T(1));
    return t * t * (T(3) - T(2) * t);
}""", **CUDA_FT},
   grad=(
         "w = edge1 - edge0; t = saturate((x - edge0) / w); grad * 6 * t * (1 - t) * (t - 1) / w",
         "w = edge1 - edge0; t = saturate((x - edge0) / w); -grad * 6 * t * (1 - t) * t / w",
         "w = edge1 - edge0; t = saturate((x - edge0) / w); grad * 6 * t * (1 - t) / w"))
_f("saturate", 1, N.fsim(N.fsaturate), "mb_saturate", "x clamped to [0, 1] (NaN gives 0).",
   helpers={"mb_saturate": "template <class T> __device__ inline T mb_saturate(T x) "
                           "{ return mb_fmin_t(mb_fmax_t(x, T(0)), T(1)); }", **CUDA_FT},
   ref=_vec(lambda x: 0.0 if x != x else min(max(x, 0.0), 1.0)), grad=("grad if x > 0 and x < 1 else 0",))
_f("fabs", 1, N.fsim(np.abs), "fabsf", "Absolute value of a float.", rule=numeric(1, float_only=True),
   py=_py("fabs"), grad=("grad * sign(x)",))
_f("fmin", 2, N.fsim(np.fmin), "fminf", "The smaller of x and y; a NaN argument gives the other.",
   rule=numeric(2, float_only=True), py=("np.fmin",),
   grad=("grad if x < y or isnan(y) else 0", "0 if x < y or isnan(y) else grad"))
_f("fmax", 2, N.fsim(np.fmax), "fmaxf", "The larger of x and y; a NaN argument gives the other.",
   rule=numeric(2, float_only=True), py=("np.fmax",),
   grad=("grad if x > y or isnan(y) else 0", "0 if x > y or isnan(y) else grad"))
_f("fmin3", 3, N.fsim(lambda a, b, c: np.fmin(np.fmin(a, b), c)), "mb_fmin3", "The smallest of x, y and z (NaNs ignored).",
   helpers={"mb_fmin3": MB_FMIN3, **CUDA_FT},
   grad=(
         "grad if x <= y and x <= z else 0",
         "grad if y < x and y <= z else 0",
         "grad if z < x and z < y else 0"))
_f("fmax3", 3, N.fsim(lambda a, b, c: np.fmax(np.fmax(a, b), c)), "mb_fmax3", "The largest of x, y and z (NaNs ignored).",
   helpers={"mb_fmax3": MB_FMAX3, **CUDA_FT},
   grad=(
         "grad if x >= y and x >= z else 0",
         "grad if y > x and y >= z else 0",
         "grad if z > x and z > y else 0"))

# ----------------------------------------------------------------------------- special functions

_ERFC = """\
// erfc (Numerical Recipes' erfcc; relative error < 1.2e-7): Metal has no erfc.
inline float mb_erfc(float x) {
    float z = metal::fabs(x);
    float t = 1.0f / (1.0f + 0.5f * z);
    float r = t * metal::exp(-z * z - 1.26551223f + t * (1.00002368f + t * (0.37409196f +
        t * (0.09678418f + t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f +
        t * (1.48851587f + t * (-0.82215223f + t * 0.17087277f)))))))));
    return x >= 0.0f ? r : 2.0f - r;
}"""
_LGAMMA_POS = """\
// lgamma for x >= 0.5: shift to x >= 7, then Stirling's series: Metal has no lgamma.
inline float mb_lgamma_pos(float x) {
    float acc = 1.0f;
    while (x < 7.0f) {
        acc *= x;
        x += 1.0f;
    }
    float r = 1.0f / x;
    float r2 = r * r;
    return (x - 0.5f) * metal::log(x) - x + 0.918938533f +
        r * (0.0833333333f - r2 * (0.00277777778f - r2 * 0.000793650794f)) - metal::log(acc);
}"""

_f("erf", 1, N.fsim(N.erf, math.erf), "erff", "The error function.", py=_py("erf"), tol=4,
   msl=metal_helper("mb_erf", """\
// erf: a Taylor series near 0 keeps the relative error small; 1 - erfc elsewhere.
inline float mb_erf(float x) {
    if (metal::fabs(x) < 0.5f) {
        float x2 = x * x;
        return x * (1.12837917f + x2 * (-0.37612639f + x2 * (0.11283792f + x2 * (-0.02686617f +
            x2 * (0.00522398f - x2 * 0.00085483f)))));
    }
    return x >= 0.0f ? 1.0f - mb_erfc(x) : mb_erfc(-x) - 1.0f;
}""", {"mb_erfc": _ERFC}), ref=_vec(math.erf), grad=("grad * 1.1283791670955126 * exp(-x * x)",))
_f("erfc", 1, N.fsim(N.erfc, math.erfc), "erfcf", "The complementary error function 1 - erf(x).", py=_py("erfc"),
   msl=metal_helper("mb_erfc", _ERFC), ref=_vec(math.erfc), tol=1e6,
   details="The simulator and Metal use an approximation with relative error below 1.2e-7 "
           "(larger in absolute ulps where erfc underflows).", grad=("-grad * 1.1283791670955126 * exp(-x * x)",))
_f("lgamma", 1, N.fsim(N.lgamma, N.lgamma64), "lgammaf", "log |Gamma(x)|; +inf at 0, -1, -2, ...", py=_py("lgamma"),
   msl=metal_helper("mb_lgamma", """\
inline float mb_lgamma(float x) {
    if (x < 0.5f) {
        return metal::log(M_PI_F / metal::fabs(metal::sinpi(x))) - mb_lgamma_pos(1.0f - x);
    }
    return mb_lgamma_pos(x);
}""", {"mb_lgamma_pos": _LGAMMA_POS}),
   ref=_vec(R.lgamma_scalar), tol=64)
_f("tgamma", 1, N.fsim(N.tgamma, lambda x: _gamma_ref(x)), "tgammaf", "The Gamma function.", py=("math.gamma",),
   msl=metal_helper("mb_tgamma", """\
// tgamma via lgamma, with the reflection formula below 0.5: Metal has no tgamma.
inline float mb_tgamma(float x) {
    if (x < 0.5f) {
        return M_PI_F / (metal::sinpi(x) * metal::exp(mb_lgamma_pos(1.0f - x)));
    }
    return metal::exp(mb_lgamma_pos(x));
}""", {"mb_lgamma_pos": _LGAMMA_POS}), ref=_vec(lambda x: _gamma_ref(x)), tol=64)


def _gamma_ref(x: float) -> float:
    if x != x or x == -math.inf or (x < 0 and x == math.floor(x)):
        return math.nan
    if x == 0:
        return math.copysign(math.inf, x)
    try:
        return math.gamma(x)
    except OverflowError:
        return math.inf


# ----------------------------------------------------------------------------- classification

def _p(name, fn, doc, py=()):
    return add_builtin(name, group="Float classification", doc=doc, example=f"ok = {name}(x[i])",
                       rule=float_predicate(), sim=N.predicate(fn), msl=metal(name, through_half=False),
                       cuda=cuda(float=name, double=name), python=py, namespaces=_PS, ref=getattr(R, name),
                       shim="p")


_p("isnan", np.isnan, "True if x is a NaN.", _py("isnan"))
_p("isinf", np.isinf, "True if x is +inf or -inf.", _py("isinf"))
_p("isfinite", np.isfinite, "True if x is neither infinite nor NaN.", _py("isfinite"))
add_builtin("isunordered", group="Float classification", doc="True if x or y is a NaN (they cannot be ordered).",
            example="skip = isunordered(x[i], y)", rule=float_predicate(2), namespaces=_PS,
            sim=lambda args, dt: np.isnan(np.asarray(args[0]).astype(np.float64))
            | np.isnan(np.asarray(args[1]).astype(np.float64)),
            msl=metal("isunordered"), ref=np.vectorize(lambda x, y: x != x or y != y, otypes=[bool]),
            cuda=cuda(float="mb_isunordered", helpers={"mb_isunordered": "template <class T> __device__ inline bool "
                                                       "mb_isunordered(T x, T y) { return isnan(x) || isnan(y); }"}),
            shim="template <class A, class B> typename _mb_pred<A>::type isunordered(A, B);")
_p("signbit", np.signbit, "True if x's sign bit is set (also for -0.0 and negative NaNs).", ("np.signbit",))



# ----------------------------------------------------------------------------- geometric (float vectors)

def _geo(name, n, result, sim, doc, cu_code, example):
    """A function of whole float vectors: the simulator gets each argument's components."""
    fn = f"mb_{name}"

    def spell_cuda(p, args, t):
        p.need("mb_dot_f", _GEO_CUDA)
        if "mb_dist2_f" in cu_code:
            p.need("mb_dist2_f", _DIST2_CUDA)
        p.need(fn, cu_code)
        return f"{fn}({', '.join(p.expr(a, ASSIGN) for a in args)})"
    spell_cuda.cuda_name = fn

    def f64sim(args, dt):
        with np.errstate(all="ignore"):
            r = sim(*[[np.asarray(c, np.float64) for c in a] for a in args])
        return [N.out(c, dt) for c in r] if isinstance(r, list) else N.out(r, dt)
    details = "" if name == "dot" else _GEO_RANGE
    return add_builtin(name, group="Geometric", doc=doc, example=example, details=details,
                       rule=float_vectors(n, ("x", "y")[:n], result), sim=f64sim, componentwise=False,
                       msl=metal(name), cuda=spell_cuda, ref=sim, tol_ulp=4, shim=_GEO_SHIM[name])


def _dot(x, y):
    return sum(a * b for a, b in zip(x, y))


def _length(x):
    return np.sqrt(_dot(x, x))


# what the GPU run showed for length(float3(FLT_MIN)) (0) and normalize(float3(3e38)) (0)
_GEO_RANGE = ("The simulator computes in float64. A GPU forms the squared sum x[0]^2 + x[1]^2 + ... as a float "
              "(MSL defines these by that formula; CUDA here, and Metal's fast variant): where it leaves float's "
              "normal range (components below about 1e-19 or above about 1e19) the GPU's result loses precision, "
              "underflows to 0 (Metal may also flush denormals, MSL 8.1) or overflows (length inf, normalize 0); "
              "scale such vectors first.")
_GEO_SHIM = {"dot": "template <class T> typename _mb_vt<T>::E dot(T, T);",
             "length": "template <class T> typename _mb_vt<T>::E length(T);",
             "distance": "template <class T> typename _mb_vt<T>::E distance(T, T);",
             "length_squared": "template <class T> typename _mb_vt<T>::E length_squared(T);",
             "distance_squared": "template <class T> typename _mb_vt<T>::E distance_squared(T, T);",
             "normalize": "template <class T> T normalize(T);",
             "cross": "template <class T> T cross(T, T);"}
_GEO_CUDA = """\
template <class T, int N> __device__ inline float mb_dot_f(const mb_vec<T, N>& a, const mb_vec<T, N>& b) {
    float s = 0.0f;
    for (int i = 0; i < N; ++i) s += static_cast<float>(a[i]) * static_cast<float>(b[i]);
    return s;
}"""
_DIST2_CUDA = """\
template <class T, int N> __device__ inline float mb_dist2_f(const mb_vec<T, N>& a, const mb_vec<T, N>& b) {
    float s = 0.0f;
    for (int i = 0; i < N; ++i) {
        float d = static_cast<float>(a[i]) - static_cast<float>(b[i]);
        s += d * d;
    }
    return s;
}"""

_geo("dot", 2, "scalar", _dot, "The dot product of two vectors.", """\
template <class T, int N> __device__ inline T mb_dot(const mb_vec<T, N>& a, const mb_vec<T, N>& b) {
    return static_cast<T>(mb_dot_f(a, b));
}""", "d = dot(float3(x[i], y[i], 0.0), n)")
_geo("length", 1, "scalar", _length, "The Euclidean length of a vector.", """\
template <class T, int N> __device__ inline T mb_length(const mb_vec<T, N>& a) {
    return static_cast<T>(sqrtf(mb_dot_f(a, a)));
}""", "r = length(v)")
_geo("distance", 2, "scalar", lambda x, y: _length([a - b for a, b in zip(x, y)]),
     "The Euclidean distance between two points.", """\
template <class T, int N> __device__ inline T mb_distance(const mb_vec<T, N>& a, const mb_vec<T, N>& b) {
    return static_cast<T>(sqrtf(mb_dist2_f(a, b)));
}""", "r = distance(p, q)")
_geo("length_squared", 1, "scalar", lambda x: _dot(x, x), "The squared Euclidean length of a vector (dot(x, x)).", """\
template <class T, int N> __device__ inline T mb_length_squared(const mb_vec<T, N>& a) {
    return static_cast<T>(mb_dot_f(a, a));
}""", "r2 = length_squared(v)")
_geo("distance_squared", 2, "scalar", lambda x, y: _dot(*[[a - b for a, b in zip(x, y)]] * 2),
     "The squared Euclidean distance between two points.", """\
template <class T, int N> __device__ inline T mb_distance_squared(const mb_vec<T, N>& a, const mb_vec<T, N>& b) {
    return static_cast<T>(mb_dist2_f(a, b));
}""", "d2 = distance_squared(p, q)")
_geo("normalize", 1, "vector", lambda x: [c / _length(x) for c in x],
     "The vector scaled to length 1 (NaN components for a zero vector).", """\
template <class T, int N> __device__ inline mb_vec<T, N> mb_normalize(const mb_vec<T, N>& a) {
    float r = rsqrtf(mb_dot_f(a, a));
    mb_vec<T, N> out;
    for (int i = 0; i < N; ++i) out[i] = static_cast<T>(static_cast<float>(a[i]) * r);
    return out;
}""", "n = normalize(v)")


def _cross_rule():
    def check(name, types):
        if len(types) != 2 or any(not isinstance(t, T.VectorType) or not t.elem.is_float or t.n != 3 for t in types):
            got = ", ".join(type_word(t) for t in types)
            raise BuiltinTypeError(f"{name} takes two 3-component float vectors (float3, half3), got {got}")
        c = types[0] if types[0] == types[1] else T.vector_of(T.float32, 3)
        return [c, c], c
    return custom(("x", "y"), check, "(x: F3, y: F3) -> F3", "F3 is float3, half3 or bfloat3.",
                  [(T.vector_of(T.float32, 3),) * 2, (T.vector_of(T.float16, 3),) * 2])


def _cross(x, y):
    return [x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0]]


def _cross32(x, y):
    """The model: float32 products, each rounded, then the float32 difference."""
    with np.errstate(all="ignore"):
        return _cross([np.asarray(c, np.float32) for c in x], [np.asarray(c, np.float32) for c in y])


def _cross_sim(args, dt):
    # float32 arithmetic, each product rounded before the subtraction (as the CUDA helper's
    # __fmul_rn keeps it): computing in float64 hid float32 overflow (1e30 * 1e10 products
    # that cancel gave 0 where a GPU gives inf - inf = NaN; H200, 2026-12-01)
    with np.errstate(all="ignore"):
        r = _cross(*[[np.asarray(c, np.float32) for c in a] for a in args])
    return [N.out(c, dt) for c in r]


def _cross_cuda(p, args, t):
    p.need("mb_cross", _CROSS_CUDA)
    return f"mb_cross({', '.join(p.expr(a, ASSIGN) for a in args)})"


_cross_cuda.cuda_name = "mb_cross"
_CROSS_CUDA = """\
template <class T> __device__ inline mb_vec<T, 3> mb_cross(const mb_vec<T, 3>& a, const mb_vec<T, 3>& b) {
    const float a0 = static_cast<float>(a[0]), a1 = static_cast<float>(a[1]), a2 = static_cast<float>(a[2]);
    const float b0 = static_cast<float>(b[0]), b1 = static_cast<float>(b[1]), b2 = static_cast<float>(b[2]);
    // __fmul_rn: the products are rounded, never contracted into an FMA with the subtraction
    // (nvcc/NVRTC contract a*b - c*d by default, which the simulator does not model)
    return mb_vec<T, 3>(static_cast<T>(__fmul_rn(a1, b2) - __fmul_rn(a2, b1)),
                        static_cast<T>(__fmul_rn(a2, b0) - __fmul_rn(a0, b2)),
                        static_cast<T>(__fmul_rn(a0, b1) - __fmul_rn(a1, b0)));
}"""
add_builtin("cross", group="Geometric", doc="The cross product of two 3-component vectors.",
            example="n = cross(u, v)", rule=_cross_rule(), sim=_cross_sim, componentwise=False,
            msl=metal("cross"), cuda=_cross_cuda, ref=_cross32, tol_ulp=4, shim=_GEO_SHIM["cross"])
