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


def _zeta_table(kmax: int) -> list:
    """zeta(k) - 1 for k = 2..kmax: a direct sum to N = 1000 (small terms first) plus the
    Euler-Maclaurin tail; good to float64 rounding."""
    out = []
    for k in range(2, kmax + 1):
        n = 1000
        s = sum(j ** -float(k) for j in range(n - 1, 1, -1))
        s += n ** (1.0 - k) / (k - 1) + 0.5 * n ** -float(k) + k * n ** (-k - 1.0) / 12.0
        out.append(s)
    return out


_EULER_GAMMA = 0.5772156649015329
# lgamma(1 + z) = -gamma z + sum_k (-1)^k zeta(k) / k z^k and, subtracting log(1 + z)'s series,
# lgamma(2 + z) = (1 - gamma) z + sum_k (-1)^k (zeta(k) - 1) / k z^k (|z| < 1): 60 terms reach
# float64 rounding for |z| <= 1/2
_ZM1 = _zeta_table(61)
_LG1 = [-_EULER_GAMMA] + [(-1) ** k * (zk + 1.0) / k for k, zk in enumerate(_ZM1, start=2)]
_LG2 = [1.0 - _EULER_GAMMA] + [(-1) ** k * zk / k for k, zk in enumerate(_ZM1, start=2)]


def lgamma64(x: float) -> float:
    """C's lgamma for one float64, accurate near its zeros at 1 and 2 (a power series in
    x - 1, which is exact there): math.lgamma is off by ~100 ulps at lgamma(1.034...)."""
    if 0.5 <= x <= 2.5:
        z = x - 1.0 if x < 1.5 else x - 2.0           # exact (Sterbenz)
        p = 0.0
        for c in reversed(_LG1 if x < 1.5 else _LG2):
            p = p * z + c
        return p * z + 0.0                            # + 0.0: lgamma(1) is +0, not -0
    if x != x:
        return x
    if math.isinf(x) or (x <= 0 and x == math.floor(x)):
        return math.inf
    try:
        return math.lgamma(x)
    except OverflowError:
        return math.inf


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


_PI_HI = math.pi                      # pi = _PI_HI + _PI_LO to about 2**-107
_PI_LO = 1.2246467991473532e-16
_SPLIT = 134217729.0                  # 2**27 + 1: Veltkamp's splitting constant


def _split(a):
    c = _SPLIT * a
    h = c - (c - a)
    return h, a - h


def _two_prod(a, b):
    """(p, e) with p = fl(a * b) and p + e = a * b exactly (Dekker; no overflow)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _pi_times(t):
    """pi * t as an unevaluated sum hi + lo (double-double), for |t| <= 1/4."""
    hi, err = _two_prod(_PI_HI, t)
    return hi, err + _PI_LO * t


def _reduce_half(x, period):
    """(k, t) with |x| mod period == k / 2 + t, |t| <= 1/4, all exact: fmod is exact and
    subtracting a multiple of 1/2 within a factor 2 of it is too (Sterbenz). sin(pi x)
    from sin(pi * x) loses the error of pi * x: for float64 x that is many ulps (the
    H200's sinpi agreed with the exact value where this did not)."""
    a = np.abs(np.fmod(x, period))
    k = np.rint(2.0 * a)
    return k, a - 0.5 * k


def _sincos_pi(t):
    """sin(pi t) and cos(pi t) for |t| <= 1/4, to about half an ulp."""
    hi, lo = _pi_times(t)
    s, c = np.sin(hi), np.cos(hi)
    return s + lo * c, c - lo * s


def sinpi(x):
    """sin(pi x) with exact argument reduction: +-0 at integers (the sign of x), +-1 at
    half-integers, accurate for float64 and huge x.

    >>> float(sinpi(np.float64(1 / 3)) - math.sqrt(3) / 2)
    0.0
    """
    x = np.asarray(x, np.float64)
    k, t = _reduce_half(x, 2.0)
    s, c = _sincos_pi(t)
    q = np.mod(k, 4.0)
    r = np.where(q == 0, s, np.where(q == 1, c, np.where(q == 2, -s, -c)))
    r = np.where(np.signbit(x), -r, r)
    return np.where((t == 0) & (q % 2 == 0), np.copysign(0.0, x), r)


def cospi(x):
    """cos(pi x) with exact argument reduction: +-1 at integers, +0 at half-integers."""
    x = np.asarray(x, np.float64)
    k, t = _reduce_half(x, 2.0)
    s, c = _sincos_pi(t)
    q = np.mod(k, 4.0)
    r = np.where(q == 0, c, np.where(q == 1, -s, np.where(q == 2, -c, s)))
    return np.where((t == 0) & (q % 2 == 1), 0.0, r)


def tanpi(x):
    """tan(pi x): +-0 at integers; +-inf at half-integers with the sign of
    sinpi(x) / cospi(x) (CUDA's sinpi / cospi, C23's tanpi); elsewhere tan of the exactly
    reduced argument (cot for the odd quarter periods), to about an ulp."""
    x = np.asarray(x, np.float64)
    k, t = _reduce_half(x, 1.0)
    hi, lo = _pi_times(t)
    th = np.tan(hi)
    tl = lo * (1.0 + th * th)               # tan(hi + lo) = th + tl to first order
    with np.errstate(all="ignore"):
        q = 1.0 / th                        # cot: 1 / (th + tl) with one Newton step
        p, e = _two_prod(q, np.where(np.isfinite(q), th, 0.0))
        q = q + q * (((1.0 - p) - e) - q * tl)
        r = np.where(k == 1, -q, th + tl)
    r = np.where(np.signbit(x), -r, r)
    with np.errstate(divide="ignore", invalid="ignore"):
        exact = sinpi(x) / cospi(x)
    return np.where(t == 0, exact, r)


def round_half_away(x):
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def fsaturate(x):
    # NaN gives 0, as fmin(fmax(x, 0), 1) and CUDA's __saturatef do
    return np.fmin(np.fmax(x, 0.0), 1.0)


_BELOW_ONE = {"float64": 1.0 - 2.0 ** -53, "float32": 1.0 - 2.0 ** -24, "float16": 1.0 - 2.0 ** -11,
              "bfloat16": 1.0 - 2.0 ** -8}


def below_one(dt) -> float:
    """The largest value of float dtype ``dt`` below 1.

    >>> below_one(np.dtype(np.float16)) == float(np.nextafter(np.float16(1), np.float16(0)))
    True
    """
    return _BELOW_ONE[np.dtype(dt).name]


def fract(args, dt):
    """fmin(x - floor(x), below_one(dt)): in [0, 1) in the result type, NaN and +-inf
    included (they give below_one: fmin drops the NaN), as Metal and CUDA's fminf."""
    x = _f64(args[0])
    with np.errstate(all="ignore"):
        return out(np.fmin(x - np.floor(x), below_one(dt)), dt)


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
