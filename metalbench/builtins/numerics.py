"""The simulator's numerics for builtin calls, on NumPy scalars and lane vectors.

Float functions compute in float64 and round once to the result type (half and
bfloat included), so results are at least as accurate as the GPU's. ``erf``,
``erfc``, ``lgamma`` and ``tgamma`` use vectorised approximations (no per-element
Python)::

    >>> import numpy as np
    >>> float(fsim(erf)([np.float32(0.5)], np.dtype(np.float32)))  # doctest: +ELLIPSIS
    0.5204998...
"""
from __future__ import annotations

import math

import numpy as np

_SQRT_PI_2 = 2.0 / math.sqrt(math.pi)


def is_float(dt) -> bool:
    """Float dtypes, bfloat16 included (ml_dtypes' kind is "V")."""
    return dt.kind == "f" or dt.name == "bfloat16"


def out(r, dt):
    """``r`` as dtype ``dt`` (a NumPy scalar for 0-d results); bfloat16 rounds from float32."""
    r = np.asarray(r)
    if dt.name == "bfloat16":
        r = r.astype(np.float32)  # bfloat16 rounds from float32 (ml_dtypes)
    with np.errstate(all="ignore"):
        r = r.astype(dt)
    return r[()] if r.ndim == 0 else r


def _f64(x):
    return np.asarray(x, np.float64)


def fsim(fn, double=None):
    """A float function of float64 arrays as a simulator implementation ``(args, dt)``.
    ``double``, a function of Python floats, replaces ``fn`` for float64 results where
    ``fn`` is an approximation good only to float32 (erf, lgamma, ...)."""
    exact = np.vectorize(double, otypes=[np.float64]) if double is not None else None

    def sim(args, dt):
        with np.errstate(all="ignore"):
            f = exact if (exact is not None and dt == np.float64) else fn
            return out(f(*[_f64(a) for a in args]), dt)
    sim.model = fn
    return sim


def isim(fn):
    """An integer function ``fn(*args, dt=...)`` on the converted arguments."""
    def sim(args, dt):
        with np.errstate(all="ignore"):
            return out(fn(*[np.asarray(a) for a in args], dt=dt), dt)
    sim.model = fn
    return sim


def by_kind(int_sim, float_sim):
    """Chooses the integer or the float implementation by the result dtype."""
    def sim(args, dt):
        return (float_sim if is_float(dt) else int_sim)(args, dt)
    return sim


def predicate(fn):
    """A float classification (``isnan``...): bool result."""
    def sim(args, dt):
        r = fn(np.asarray(args[0]).astype(np.float64))     # exact for every float type
        return r[()] if np.ndim(r) == 0 else r
    return sim


# ----------------------------------------------------------------------------- special functions

def _erf_small(x):
    # Taylor series, exact to float64 rounding for |x| < 0.5
    x2 = x * x
    term = x.copy()
    s = x.copy()
    for n in range(1, 12):
        term = term * (-x2) / n
        s = s + term / (2 * n + 1)
    return _SQRT_PI_2 * s


def _erfc_pos(z):
    # Numerical Recipes' erfcc: relative error < 1.2e-7 for z >= 0
    t = 1.0 / (1.0 + 0.5 * z)
    p = (-1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277)))))))))
    return t * np.exp(-z * z + p)


def erf(x):
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    small = a < 0.5
    big = np.sign(x) * (1.0 - _erfc_pos(a))
    return np.where(small, _erf_small(np.where(small, x, 0.0)), big)


def erfc(x):
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    small = a < 0.5
    c = _erfc_pos(a)
    big = np.where(x >= 0, c, 2.0 - c)
    return np.where(small, 1.0 - _erf_small(np.where(small, x, 0.0)), big)


_LG = 7.0
_LP = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
       -176.61502916214059, 12.507343278686905, -0.13857109526572012,
       9.9843695780195716e-6, 1.5056327351493116e-7)


def _lanczos(z):
    # log|Gamma(z)| for z >= 0.5 (Lanczos, g=7, n=9)
    zm = z - 1.0
    s = np.full_like(zm, _LP[0])
    for i in range(1, 9):
        s = s + _LP[i] / (zm + i)
    t = zm + _LG + 0.5
    return 0.5 * math.log(2 * math.pi) + (zm + 0.5) * np.log(t) - t + np.log(s)


def lgamma(x):
    """log|Gamma(x)|; +inf at the poles (0, -1, -2, ...) and at +-inf, as C's lgamma."""
    x = np.asarray(x, np.float64)
    refl = x < 0.5
    xr = np.where(refl, 1.0 - x, x)
    r = _lanczos(xr)
    s = np.abs(np.sin(math.pi * x))
    left = np.log(math.pi / s) - r
    o = np.where(refl, left, r)
    o = np.where((x == 1) | (x == 2), 0.0, o)      # exact zeros, as C's lgamma
    return np.where(((x <= 0) & (x == np.floor(x))) | np.isinf(x), np.inf, o)


def tgamma(x):
    """Gamma(x), as C's tgamma: +-inf at +-0, NaN at the negative integers and -inf."""
    x = np.asarray(x, np.float64)
    refl = x < 0.5
    xr = np.where(refl, 1.0 - x, x)
    g = np.exp(_lanczos(xr))
    left = math.pi / (np.sin(math.pi * x) * g)
    o = np.where(refl, left, g)
    o = np.where(x == np.inf, np.inf, o)
    o = np.where(x == 0, np.copysign(np.inf, x), o)
    return np.where(((x < 0) & (x == np.floor(x))) | (x == -np.inf), np.nan, o)


def _pi_mod(x, period):
    # x modulo period, exactly (fmod is exact): the argument reduction sin(pi x) needs
    return np.fmod(x, period)


def sinpi(x):
    """sin(pi x), exact at integers (+-0) and half-integers (+-1), accurate for huge x."""
    r = _pi_mod(x, 2.0)
    s = np.sin(np.pi * r)
    s = np.where(r == np.trunc(r), np.copysign(0.0, x), s)
    return np.where(np.abs(r) == 0.5, np.copysign(1.0, r), np.where(np.abs(r) == 1.5, -np.copysign(1.0, r), s))


def cospi(x):
    """cos(pi x), exact at integers (+-1) and half-integers (+0)."""
    r = np.abs(_pi_mod(x, 2.0))
    c = np.cos(np.pi * r)
    c = np.where((r == 0.5) | (r == 1.5), 0.0, c)
    return np.where(r == 0, 1.0, np.where(r == 1, -1.0, c))


def tanpi(x):
    """sinpi(x) / cospi(x): +-0 at integers, +-inf at half-integers (as CUDA's sinpif/cospif)."""
    return sinpi(x) / cospi(x)


def round_half_away(x):
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def fsaturate(x):
    # NaN gives 0, as fmin(fmax(x, 0), 1) and CUDA's __saturatef do
    return np.fmin(np.fmax(x, 0.0), 1.0)


def fract(x):
    # fmin: fract(+-inf) is the largest float below 1, as CUDA's fminf gives (NaN stays NaN)
    r = np.fmin(x - np.floor(x), float(np.nextafter(np.float32(1), np.float32(0))))
    return np.where(np.isnan(x), x, r)


def smoothstep(e0, e1, x):
    t = np.fmin(np.fmax((x - e0) / (e1 - e0), 0.0), 1.0)     # a NaN t gives 0, as CUDA's fminf/fmaxf
    return t * t * (3.0 - 2.0 * t)


def fsign(x):
    return np.where(np.isnan(x), 0.0, np.where(x == 0, x, np.sign(x)))


def ldexp(args, dt):
    x = _f64(args[0])
    e = np.clip(np.asarray(args[1]).astype(np.int64), -2000, 2000).astype(np.int32)
    with np.errstate(all="ignore"):
        return out(np.ldexp(x, e), dt)


# ----------------------------------------------------------------------------- integers

def unsigned(x, dt):
    """The bits of ``x`` (of dtype ``dt``) as uint64."""
    return np.asarray(x).astype(dt).view(np.dtype(f"u{dt.itemsize}")).astype(np.uint64)


def bitlen(x, bits):
    x = np.asarray(x).astype(np.uint64)
    r = np.zeros(x.shape, np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        if s >= bits:
            continue
        t = x >> np.uint64(s)
        nz = t != 0
        r = r + np.where(nz, s, 0)
        x = np.where(nz, t, x)
    return r + (x != 0)


_REV8 = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], np.uint64)


def wrap(u, dt):
    """uint64 bit patterns as dtype ``dt`` (two's complement wrap-around)."""
    u = np.asarray(u).astype(np.uint64)
    return u.astype(np.dtype(f"u{dt.itemsize}")).view(dt)


def popcount(x, dt):
    return wrap(np.bitwise_count(unsigned(x, dt)), dt)


def clz(x, dt):
    bits = dt.itemsize * 8
    return wrap(bits - bitlen(unsigned(x, dt), bits), dt)


def ctz(x, dt):
    bits = dt.itemsize * 8
    u = unsigned(x, dt)
    low = u & (~u + np.uint64(1))
    return wrap(np.where(u == 0, bits, bitlen(low, bits) - 1), dt)


def reverse_bits(x, dt):
    bits = dt.itemsize * 8
    u = unsigned(x, dt)
    r = np.zeros(u.shape, np.uint64)
    for i in range(bits // 8):
        b = (u >> np.uint64(8 * i)) & np.uint64(0xFF)
        r |= _REV8[b.astype(np.int64)] << np.uint64(bits - 8 - 8 * i)
    return wrap(r, dt)


def wide(x, dt):
    """Exact integer values as Python-int-capable arrays: int64 for up to 32 bits,
    object arrays for 64-bit types (so products and sums do not overflow)."""
    x = np.asarray(x).astype(dt)
    if dt.itemsize < 8:
        return x.astype(np.int64)
    return x.astype(object)


def to_dt(v, dt):
    """Exact (wide) integer values back to ``dt``, wrapping modulo 2**bits."""
    v = np.asarray(v)
    if v.dtype == object:
        mask = (1 << (8 * dt.itemsize)) - 1
        u = np.vectorize(lambda a: int(a) & mask, otypes=[object])(v) if v.ndim else np.asarray(int(v) & mask)
        return wrap(np.asarray(u).astype(np.uint64), dt)
    return wrap(v.astype(np.int64).astype(np.uint64), dt)


def saturate(v, dt):
    """Exact (wide) integer values clamped to ``dt``'s range."""
    info = np.iinfo(dt)
    v = np.asarray(v)
    if v.dtype == object:
        f = np.vectorize(lambda a: min(max(int(a), int(info.min)), int(info.max)), otypes=[object])
        return np.asarray(f(v) if v.ndim else min(max(int(v), int(info.min)), int(info.max))).astype(dt)
    return np.clip(v, int(info.min), int(info.max)).astype(dt)
