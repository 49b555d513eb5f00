"""Reference models of the float builtins: C's semantics written with Python's ``math``
on one float64 at a time, independent of the simulator's vectorised NumPy code. The
registry test compares the simulator with these on random and edge-case inputs.

    >>> float(log(0.0)), float(atanh(-1.0)), float(pow_(0.0, -1.0))
    (-inf, -inf, inf)
"""
from __future__ import annotations

import decimal
import math
from fractions import Fraction

import numpy as np

inf, nan = math.inf, math.nan


def _vec(fn):
    vec = np.vectorize(fn, otypes=[np.float64])

    def f(*args):
        with np.errstate(all="ignore"):    # libm's flags (math.pow(0, -1) divides by zero) are expected
            return vec(*args)
    return f


def _c(f, *, zero=None, overflow=None, nan_in=True):
    """``f`` with C's special values: a NaN argument gives NaN (``nan_in``), ``zero(x)``
    at x == 0, a domain error NaN, an overflow ``overflow(*args)`` (default +inf)."""
    def g(*a):
        if nan_in and any(v != v for v in a):
            return nan
        if zero is not None and a[0] == 0:
            return zero(a[0])
        try:
            return f(*a)
        except ValueError:
            return nan
        except OverflowError:
            return overflow(*a) if overflow else inf
    return _vec(g)


def _int_valued(f):
    """floor/ceil/trunc/rint: non-finite values pass through, results stay floats."""
    return _vec(lambda x: x if not math.isfinite(x) else math.copysign(float(f(x)), x) if f(x) == 0 else float(f(x)))


exp = _c(math.exp)
exp2 = _c(lambda x: 2.0 ** x)
exp10 = _c(lambda x: 10.0 ** x)
log = _c(math.log, zero=lambda x: -inf)
log2 = _c(math.log2, zero=lambda x: -inf)
log10 = _c(math.log10, zero=lambda x: -inf)
sqrt = _c(math.sqrt)
sin, cos, tan = _c(math.sin), _c(math.cos), _c(math.tan)
asin, acos, atan = _c(math.asin), _c(math.acos), _c(math.atan)
sinh = _c(math.sinh, overflow=lambda x: math.copysign(inf, x))
cosh = _c(math.cosh)
tanh, asinh, acosh = _c(math.tanh), _c(math.asinh), _c(math.acosh)
atanh = _c(lambda x: math.copysign(inf, x) if abs(x) == 1 else math.atanh(x))
floor, ceil, trunc = _int_valued(math.floor), _int_valued(math.ceil), _int_valued(math.trunc)
rint = _int_valued(round)                     # Python's round: halves to even, like rint
fmod = _c(math.fmod)
atan2 = _c(math.atan2, nan_in=True)
copysign = _c(math.copysign, nan_in=False)
hypot = _c(math.hypot, nan_in=False)
cbrt = _c(math.cbrt if hasattr(math, "cbrt") else (lambda x: math.copysign(abs(x) ** (1 / 3), x)))
fabs = _vec(abs)


def _pow(x, y):
    try:
        return math.pow(x, y)
    except ValueError:
        if x == 0:       # 0 to a negative power: +-inf (the sign of 0 for odd integer powers)
            odd = y == math.floor(y) and int(y) % 2 == 1
            return math.copysign(inf, x) if odd else inf
        return nan
    except OverflowError:
        odd = y == math.floor(y) and int(y) % 2 == 1
        return -inf if (x < 0 and odd) else inf


pow_ = _vec(_pow)


def _ldexp(x, k):
    try:
        return math.ldexp(x, int(max(min(k, 2000), -2000)))
    except OverflowError:
        return math.copysign(inf, x)


ldexp = _vec(_ldexp)


def _divide(a, b):
    if a != a or b != b:
        return nan
    try:
        return a / b
    except ZeroDivisionError:
        return nan if a == 0 else math.copysign(inf, a) * math.copysign(1.0, b)


divide = _vec(_divide)


def _fmin(a, b):
    return b if a != a else (a if b != b else min(a, b))


def _fmax(a, b):
    return b if a != a else (a if b != b else max(a, b))


fmin, fmax = _vec(_fmin), _vec(_fmax)
fmin3 = _vec(lambda a, b, c: _fmin(_fmin(a, b), c))
fmax3 = _vec(lambda a, b, c: _fmax(_fmax(a, b), c))
median3 = _vec(lambda a, b, c: _fmax(_fmin(a, b), _fmin(_fmax(a, b), c)))
clamp = _vec(lambda x, lo, hi: _fmin(_fmax(x, lo), hi))
fdim = _vec(lambda a, b: nan if a != a or b != b else (a - b if a > b else 0.0))
step = _vec(lambda e, x: 0.0 if x < e else 1.0)
saturate = _vec(lambda x: 0.0 if x != x else min(max(x, 0.0), 1.0))
mix = _vec(lambda x, y, a: x + (y - x) * a)
sign = _vec(lambda x: 0.0 if x != x else (x if x == 0 else (1.0 if x > 0 else -1.0)))


def _fma(a, b, c):
    if not all(math.isfinite(v) for v in (a, b, c)):
        return a * b + c
    return float(Fraction(a) * Fraction(b) + Fraction(c))     # one rounding


fma = _vec(_fma)
fma_scalar = _fma


def lgamma_scalar(x: float) -> float:
    """C's lgamma: +inf at the poles (0, -1, -2, ...) and at +-inf; on [0.5, 2.5], around
    its zeros at 1 and 2 where math.lgamma loses ~100 ulps, Stirling's series in 40-digit
    decimal arithmetic."""
    if x != x:
        return x
    if math.isinf(x) or (x <= 0 and x == math.floor(x)):
        return inf
    if x in (1.0, 2.0):
        return 0.0                  # Gamma(1) = Gamma(2) = 1 exactly
    if 0.5 <= x <= 2.5:
        return _lgamma_decimal(x)
    try:
        return math.lgamma(x)
    except OverflowError:
        return inf


_B2K = [Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30), Fraction(5, 66),
        Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510), Fraction(43867, 798)]   # B_2 .. B_18


def _lgamma_decimal(x: float) -> float:
    """log Gamma(x) for x > 0: shift to y = x + 100, Stirling's series there (the first
    omitted term is below 1e-37), minus log(x (x+1) ... (x+99)); 60 significant digits."""
    with decimal.localcontext(decimal.Context(prec=60)):
        d = decimal.Decimal(x)
        y = d + 100
        s = (y - decimal.Decimal("0.5")) * y.ln() - y + (2 * decimal.Decimal(_DEC_PI)).ln() / 2
        for k, b in enumerate(_B2K, start=1):
            s += decimal.Decimal(b.numerator) / (decimal.Decimal(b.denominator) * (2 * k) * (2 * k - 1)
                                                 * y ** (2 * k - 1))
        prod = decimal.Decimal(1)
        for j in range(100):
            prod *= d + j
        return float(s - prod.ln())


_DEC_PI = "3.14159265358979323846264338327950288419716939937510582097494459"


def _smoothstep(e0, e1, x):
    t = _divide(x - e0, e1 - e0)
    t = _fmin(_fmax(t, 0.0), 1.0)                     # NaN gives 0
    return t * t * (3.0 - 2.0 * t)


smoothstep = _vec(_smoothstep)

isnan = np.vectorize(math.isnan, otypes=[bool])
isinf = np.vectorize(math.isinf, otypes=[bool])
isfinite = np.vectorize(math.isfinite, otypes=[bool])
signbit = np.vectorize(lambda x: math.copysign(1.0, x) < 0, otypes=[bool])
