"""Number literals read exactly as clang reads them: C/MSL integer typing and float
literals rounded once, from the exact decimal (or hexadecimal) value, to their type.

Python's ``float("1.000000059604644775390625000001")`` rounds to double first and then to
float would round again (to 1.0); the literal's exact value is just above the midpoint
between 1.0 and the next float, so clang gives the next float::

    >>> parse("1.000000059604644775390625000001f")
    (1.0000001192092896, float32)
    >>> parse("0x1p-3f"), parse("0x1.8p1"), parse("1.5h")
    ((0.125, float32), (3.0, float32), (1.5, float16))
    >>> parse("4294967295"), parse("0xffffffff"), parse("1ul"), parse("017")
    ((4294967295, int64), (4294967295, uint32), (1, uint64), (15, int32))

Rules (C11 / C++14 on an LP64 target, which is what MSL and CUDA have):

- an unsuffixed decimal integer is ``int``, else ``long``; hex, octal and binary ones are
  ``int``, ``uint``, ``long``, ``ulong``, the first that holds the value; ``u`` allows only the
  unsigned ones, ``l``/``ll`` start at ``long``; a decimal too large for ``long`` is ``ulong``
  (clang warns), one too large for ``ulong`` is an error;
- a float literal is ``float`` in MSL when unsuffixed (Metal has no double; ``double=True``
  gives C's ``double``), ``f`` makes ``float``, ``h`` makes ``half``; it rounds to nearest
  even once, and a value too large for the type is infinity (clang warns);
- ``'`` digit separators are allowed (C++14).
"""
from __future__ import annotations

import re
from fractions import Fraction

from . import types as T

# (precision p with the implicit bit, minimum normal exponent, maximum exponent)
FORMATS = {"float16": (11, -14, 15), "bfloat16": (8, -126, 127),
           "float32": (24, -126, 127), "float64": (53, -1022, 1023)}

_DEC_FLOAT = re.compile(r"(?:(\d+)\.(\d*)|\.(\d+)|(\d+)(?=[eE]))(?:[eE]([+-]?\d+))?")
_HEX_FLOAT = re.compile(r"0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?[pP]([+-]?\d+)")
_INT = re.compile(r"(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
_INT_SUFFIXES = {"": "", "u": "u", "l": "l", "ll": "l", "ul": "ul", "lu": "ul", "ull": "ul", "llu": "ul"}


class LiteralError(ValueError):
    """A number literal that C / MSL rejects; the message says what and how to fix it."""


def round_to(q: Fraction, t: T.ScalarType) -> float:
    """The value of float type ``t`` nearest to the rational ``q`` (ties to even; past the
    largest finite value, infinity), as a Python float.

    >>> from fractions import Fraction
    >>> round_to(Fraction(1, 3), T.float16), round_to(Fraction(10**40), T.float32)
    (0.333251953125, inf)
    """
    p, emin, emax = FORMATS[t.name]
    if q == 0:
        return 0.0
    sign = -1.0 if q < 0 else 1.0
    q = abs(q)
    n, d = q.numerator, q.denominator
    e = n.bit_length() - d.bit_length()          # 2**e <= q < 2**(e+2)
    if Fraction(2) ** e > q:
        e -= 1
    elif Fraction(2) ** (e + 1) <= q:
        e += 1
    e = max(e, emin)                               # subnormals share the minimum exponent
    shift = p - 1 - e                              # q * 2**shift has p significant bits
    num, den = (n << shift, d) if shift >= 0 else (n, d << -shift)
    m, r = divmod(num, den)
    if 2 * r > den or (2 * r == den and m & 1):
        m += 1
    if m == 1 << p:                                # rounding carried into a new binade
        m, e = m >> 1, e + 1
        shift -= 1
    if e > emax:
        return sign * float("inf")
    return sign * float(Fraction(m) / Fraction(2) ** shift)


def _float_value(body: str) -> Fraction | None:
    """The exact value of a decimal or hex float literal without sign and suffix."""
    m = _HEX_FLOAT.fullmatch(body)
    if m:
        whole, frac, exp = m.group(1), m.group(2) or "", int(m.group(3))
        if not whole and not frac:
            return None
        mant = int(whole + frac, 16) if (whole + frac) else 0
        return Fraction(mant) * Fraction(2) ** (exp - 4 * len(frac))
    m = _DEC_FLOAT.fullmatch(body)
    if m:
        if m.group(1) is not None:
            whole, frac = m.group(1), m.group(2)
        elif m.group(3) is not None:
            whole, frac = "", m.group(3)
        else:
            whole, frac = m.group(4), ""
        exp = int(m.group(5) or 0) - len(frac)
        mant = int((whole + frac) or "0")
        return Fraction(mant) * Fraction(10) ** exp
    return None


def parse(text: str, double: bool = False):
    """``(value, ScalarType)`` of a C/MSL number literal; raises :class:`LiteralError`.

    The value is a Python int, or a Python float holding the type's value exactly.
    ``double``: unsuffixed float literals are ``double`` (C) instead of ``float`` (MSL).

    >>> parse("1e39f"), parse("2147483648"), parse("0x80000000"), parse("0x1P+4h")
    ((inf, float32), (2147483648, int64), (2147483648, uint32), (16.0, float16))
    """
    s = text.strip().replace("'", "")
    low = s.lower()
    is_hex = low.startswith("0x")
    if (is_hex and ("p" in low or "." in low)) or (not is_hex and not low.startswith("0b") and ("." in low or "e" in low)):
        return _parse_float(s, double)
    m = _INT.match(low)
    if not m:
        raise LiteralError(f"'{text}' is not a number literal")
    digits, suffix = m.group(1), low[m.end():]
    if digits.startswith("0") and suffix[:1].isdigit():
        raise LiteralError(f"invalid digit '{suffix[0]}' in octal constant '{text}'")
    if suffix not in _INT_SUFFIXES or ("l" in suffix and "l" in s and "L" in s):
        hint = " (write 1.0f for a float)" if suffix in ("f", "h") else ""
        raise LiteralError(f"invalid suffix '{s[m.end():]}' on integer constant '{text}'{hint}")
    suffix = _INT_SUFFIXES[suffix]
    if digits.startswith(("0x", "0b")):
        v, decimal = int(digits, 0), False
    elif digits.startswith("0") and len(digits) > 1:
        v, decimal = int(digits, 8), False
    else:
        v, decimal = int(digits), True
    if v >= 2 ** 64:
        raise LiteralError(f"integer literal '{text}' is too large for any integer type (the largest is "
                           "18446744073709551615ul)")
    if decimal:
        order = {"": [T.int32, T.int64], "u": [T.uint32, T.uint64], "l": [T.int64], "ul": [T.uint64]}[suffix]
    else:
        order = {"": [T.int32, T.uint32, T.int64, T.uint64], "u": [T.uint32, T.uint64],
                 "l": [T.int64, T.uint64], "ul": [T.uint64]}[suffix]
    for t in order:
        if v < 2 ** (t.bits - (1 if t.is_signed else 0)):
            return v, t
    return v, T.uint64       # a decimal past long: clang's "interpreting as unsigned"


def _parse_float(s: str, double: bool):
    low = s.lower()
    t = T.float64 if double else T.float32
    body = s
    if low.endswith("h"):
        t, body = T.float16, s[:-1]
    elif low.endswith("f"):          # a hex float's digits end at its 'p' exponent
        t, body = T.float32, s[:-1]
    elif low.endswith("l"):
        raise LiteralError(f"'{s}': long double literals are not supported; drop the 'l'")
    q = _float_value(body)
    if q is None:
        raise LiteralError(f"'{s}' is not a valid floating-point literal"
                           + (" (a hexadecimal float needs an exponent: 0x1.8p1)" if low.startswith("0x") else ""))
    return round_to(q, t), t


def parse_python_float(text: str, t: T.ScalarType = T.float32) -> float | None:
    """A Python float literal's source text rounded once to ``t``; None when ``text`` is
    not one (the caller then uses the double Python made of it).

    >>> parse_python_float("1.000000059604644775390625000001"), parse_python_float("1_0.5e-1")
    (1.0000001192092896, 1.0499999523162842)
    """
    body = text.strip().replace("_", "")
    if not body or body[-1] in "jJ":
        return None
    q = _float_value(body)
    return None if q is None else round_to(q, t)
