"""Differential testing of scalar semantics: random typed expression trees, rendered as an
MSL body, a DSL kernel and a C program, evaluated four ways and compared bit for bit.

Each expression is evaluated

- ``lit``:   every leaf a literal or compile-time constant -> folded by the front end;
- ``uni``:   every leaf loaded from a buffer at a uniform index -> NumPy scalars at run time;
- ``lane``:  every leaf loaded at a per-thread index -> lane vectors at run time;
- ``mix``:   each leaf one of the three (partly folded subtrees meet run-time values);

on the simulator (or another backend), and once by a C program compiled with the
machine's gcc, whose arithmetic is the oracle. C leaves undefined what GPUs define
(float -> int out of range, integer division by zero, ``INT_MIN / -1``, shift counts past
the width): the C program spells those cases with small helpers implementing the GPU rule
(saturate, 0, wrap, mask), and plain C for everything else. The test's own typing rules
(C/MSL usual arithmetic conversions) are checked against gcc with ``_Generic``.

The generator draws through a ``Draw`` (hypothesis's ``data.draw`` or a ``random.Random``),
so the same code serves the hypothesis test and a large campaign.
"""
from __future__ import annotations

import math
import os
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass, field

import numpy as np

from metalbench import types as T

TYPES = [T.bool_, T.int8, T.uint8, T.int16, T.uint16, T.int32, T.uint32, T.int64, T.uint64,
         T.float16, T.bfloat16, T.float32]
TYPES64 = TYPES + [T.float64]          # the simulator and CUDA have double; Metal has not
INTS = [t for t in TYPES if t.is_int]
MODES = ("lit", "uni", "lane", "mix")
HAVE_GCC = shutil.which("gcc") is not None

# ----------------------------------------------------------------------------- typing (the test's own)

_INT_RANK = {"bool": 0, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 3, "uint32": 3,
             "int64": 4, "uint64": 4}
_BY = {t.name: t for t in TYPES64}


def promote(t):
    """C integer promotion."""
    return T.int32 if (not t.is_float and _INT_RANK[t.name] < 3) else t


def common(a, b):
    """C/MSL usual arithmetic conversions (half with bfloat gives float)."""
    if a.is_float or b.is_float:
        if a.is_float and b.is_float:
            if a == b:
                return a
            if a.bits != b.bits:
                return a if a.bits > b.bits else b
            return T.float32
        return a if a.is_float else b
    a, b = promote(a), promote(b)
    if a == b:
        return a
    if a.is_signed == b.is_signed:
        return a if _INT_RANK[a.name] >= _INT_RANK[b.name] else b
    s, u = (a, b) if a.is_signed else (b, a)
    if _INT_RANK[u.name] >= _INT_RANK[s.name]:
        return u
    if s.bits > u.bits:
        return s
    return _BY["u" + s.name]


# ----------------------------------------------------------------------------- drawing


class RandomDraw:
    """``Draw`` over a ``random.Random``."""

    def __init__(self, rnd):
        self.r = rnd

    def pick(self, seq):
        return seq[self.r.randrange(len(seq))]

    def int(self, lo, hi):
        return self.r.randint(lo, hi)

    def coin(self, p=0.5):
        return self.r.random() < p


class HypothesisDraw:
    """``Draw`` over hypothesis's ``st.data()`` (shrinks to small trees and values)."""

    def __init__(self, data):
        from hypothesis import strategies as st
        self.d, self.st = data, st

    def pick(self, seq):
        return self.d.draw(self.st.sampled_from(list(seq)))

    def int(self, lo, hi):
        return self.d.draw(self.st.integers(lo, hi))

    def coin(self, p=0.5):
        return self.d.draw(self.st.integers(0, 999)) < p * 1000


_F32_SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 2.0**-149, 1e-40, 2.0**-126, -2.0**-149,
                3.4028234663852886e38, 2.0**31, 2.0**31 - 128, -2.0**31, -2.0**31 - 256, 2.0**32,
                2.0**32 - 256, 2.0**63, 2.0**63 - 2.0**39, -2.0**63, 2.0**64, 2.0**64 - 2.0**40,
                0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 255.5, 256.0, 300.5, -300.5, 127.5, -128.5, 32767.5,
                65504.0, 65520.0, 65536.0, 1e10, -1e10, 1 / 3, 0.1, 1.0, -1.0, 7.0, 3.0]
_F64_SPECIAL = _F32_SPECIAL + [1e300, -1e300, 5e-324, 2.2250738585072014e-308, 2.0**63 - 1024, 2.0**64 - 2048,
                               2.0**53 + 2, 0.1, 1 / 3, 1 + 2.0**-8 + 2.0**-30, 1 + 2.0**-11 + 2.0**-40, 3.4028235677973366e38, 1e-46, 65519.99, 2.0**31 - 0.5]
_F16_SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 2.0**-24, 2.0**-14, 65504.0, -65504.0,
                2048.0, 0.5, 1.5, 2.5, -2.5, 255.5, 300.5, 1.0, -1.0, 0.1, 3.0]


def _int_specials(t):
    if t.is_bool:
        return [0, 1]
    lo, hi = (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.is_signed else (0, (1 << t.bits) - 1)
    vals = [0, 1, 2, 3, 7, 31, 32, 33, 63, 64, 255, 256, hi, hi - 1, lo, lo + 1, hi // 2 + 1]
    if t.is_signed:
        vals += [-1, -2, -7, -31, -32, -33, -64]
    return [v for v in vals if lo <= v <= hi]


def draw_value(draw, t):
    """A NumPy scalar of type ``t``: an edge value or random bits."""
    if t.is_bool:
        return np.bool_(draw.coin())
    if t.is_int:
        if draw.coin(0.4):
            v = draw.pick(_int_specials(t))
        else:
            lo = -(1 << (t.bits - 1)) if t.is_signed else 0
            v = draw.pick([draw.int(-12, 12), draw.int(-300, 300), draw.int(lo, lo + (1 << t.bits) - 1)])
        v &= (1 << t.bits) - 1                          # wrapped into the type
        if t.is_signed and v >= 1 << (t.bits - 1):
            v -= 1 << t.bits
        return t.np.type(v)
    if draw.coin(0.35):
        specials = {"float32": _F32_SPECIAL, "float64": _F64_SPECIAL}.get(t.name, _F16_SPECIAL)
        v = draw.pick(specials)
        with np.errstate(over="ignore"):
            return np.array(v, np.float64).astype(np.float32).astype(t.np)[()] if t.name == "bfloat16" \
                else np.array(v, np.float64).astype(t.np)[()]
    if draw.coin(0.5):   # a small "ordinary" number
        v = draw.int(-4000, 4000) / draw.pick([1, 2, 4, 8, 10, 16, 1024, 3])
        return np.array(v, np.float64).astype(np.float32).astype(t.np)[()]
    bits = draw.int(0, (1 << t.bits) - 1)
    u = {16: np.uint16, 32: np.uint32, 64: np.uint64}[t.bits]
    return np.array(bits, u).view(t.np)[()]


# ----------------------------------------------------------------------------- trees


@dataclass
class Node:
    kind: str                    # leaf bin cmp un cast sel logic
    type: T.ScalarType
    op: str = ""
    kids: list = field(default_factory=list)
    value: object = None         # leaf: NumPy scalar
    slot: int = -1               # leaf: index into the buffers of its type
    spelling: str = ""           # cast: static / func / c / cparen
    mode: str = ""               # leaf in a "mix" rendering: lit / uni / lane


MSL_NAME = {"bool": "bool", "int8": "char", "uint8": "uchar", "int16": "short", "uint16": "ushort",
            "int32": "int", "uint32": "uint", "int64": "long", "uint64": "ulong", "float16": "half",
            "bfloat16": "bfloat", "float32": "float", "float64": "double"}
MSL_ALIASES = {"int8": ["int8_t"], "uint8": ["uint8_t", "uchar"], "int16": ["int16_t"],
               "uint16": ["uint16_t"], "int32": ["int32_t"], "uint32": ["uint32_t", "unsigned int"],
               "int64": ["int64_t"], "uint64": ["uint64_t", "size_t"]}


class Gen:
    """Draws expression trees; leaves get slots in per-type buffers."""

    def __init__(self, draw, max_depth=4, types=TYPES, gpu_safe=False):
        self.d = draw
        self.max_depth = max_depth
        self.types = types
        self.gpu_safe = gpu_safe          # no float a*b feeding + or - (GPUs contract to FMA)
        self.leaves: dict[str, list] = {t.name: [] for t in TYPES64}

    def leaf(self, t=None):
        t = t or self.d.pick(self.types)
        v = draw_value(self.d, t)
        slot = len(self.leaves[t.name])
        self.leaves[t.name].append(v)
        return Node("leaf", t, value=v, slot=slot, mode=self.d.pick(["lit", "uni", "lane"]))

    def tree(self):
        """One expression, between one operator and ``max_depth`` levels deep."""
        self.depth_cap = self.d.int(1, self.max_depth)
        return self.expr(0)

    def expr(self, depth=0):
        d = self.d
        cap = getattr(self, "depth_cap", self.max_depth)
        if depth >= cap or (depth > 0 and d.coin(0.15 + 0.1 * depth)):
            return self.leaf()
        kind = d.pick(["bin", "bin", "bin", "cmp", "un", "cast", "cast", "sel", "logic"])
        if kind == "bin":
            a, b = self.expr(depth + 1), self.expr(depth + 1)
            if a.type.is_bool and b.type.is_bool:
                a = Node("cast", T.int32, kids=[a], spelling="static")   # MSL: int, DSL: bool
            ct = common(a.type, b.type)
            ops = ["+", "-", "*", "/"] if ct.is_float else ["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"]
            op = d.pick(ops)
            if op in ("<<", ">>"):
                if a.type.is_float or b.type.is_float:
                    op = "+"
                else:
                    return Node("bin", promote(a.type), op, [a, b])
            if self.gpu_safe and ct.is_float and op in ("+", "-") and any(_is_float_mul(k) for k in (a, b)):
                op = "/"          # GPUs contract a*b+c into an FMA: no product feeds + or - here
            return Node("bin", ct, op, [a, b])
        if kind == "cmp":
            a, b = self.expr(depth + 1), self.expr(depth + 1)
            return Node("cmp", T.bool_, d.pick(["==", "!=", "<", "<=", ">", ">="]), [a, b])
        if kind == "un":
            a = self.expr(depth + 1)
            ops = ["-", "!"] + (["~"] if not a.type.is_float else [])
            op = d.pick(ops)
            t = T.bool_ if op == "!" else (a.type if a.type.is_float else promote(a.type))
            return Node("un", t, op, [a])
        if kind == "cast":
            a = self.expr(depth + 1)
            t = d.pick(self.types)
            sp = d.pick(["static", "func", "c", "cparen", "alias"])
            return Node("cast", t, kids=[a], spelling=sp)
        if kind == "sel":
            c, a, b = self.expr(depth + 1), self.expr(depth + 1), self.expr(depth + 1)
            t = a.type if a.type == b.type else common(a.type, b.type)
            return Node("sel", t, kids=[c, a, b])
        a, b = self.expr(depth + 1), self.expr(depth + 1)
        return Node("logic", T.bool_, d.pick(["&&", "||"]), [a, b])


def literal_ok(n) -> bool:
    """Whether leaf ``n`` can be written as a literal: a double only when float holds it
    (MSL and the DSL read float literals as float)."""
    if n.type.name != "float64":
        return True
    v = float(n.value)
    with np.errstate(over="ignore"):
        return v != v or float(np.float32(v)) == v


def _is_float_mul(n) -> bool:
    """A float product, possibly under casts to its own type (which the IR drops) or a
    negation (nvcc contracts -(a * b) + c into fma(-a, b, c) as well)."""
    while (n.kind == "cast" and n.kids[0].type == n.type) or (n.kind == "un" and n.op == "-" and n.type.is_float):
        n = n.kids[0]
    return n.kind == "bin" and n.op == "*" and n.type.is_float


def walk(n):
    yield n
    for k in n.kids:
        yield from walk(k)


def has_int_division(n) -> bool:
    return any(x.kind == "bin" and x.op in ("/", "%") and not common(*(k.type for k in x.kids)).is_float
               for x in walk(n))


# ----------------------------------------------------------------------------- MSL rendering


def _f32_text(v: float, draw=None) -> str:
    """A float32 literal denoting ``v`` exactly once rounded: shortest repr, hex, or a long
    decimal inside the rounding interval."""
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    style = draw.pick(["repr", "hex", "long"]) if draw else "repr"
    if style == "hex":
        return float.hex(v) + "f"
    if style == "long" and v != 0:
        # a decimal strictly inside v's rounding interval, with 30 significant digits
        f = np.float32(v)
        with np.errstate(over="ignore"):
            up = float(np.nextafter(f, np.float32(np.inf)))
            lo = float(np.nextafter(f, np.float32(-np.inf)))
        if math.isfinite(up) and math.isfinite(lo):
            from fractions import Fraction
            q = Fraction(v) + (Fraction(up) - Fraction(v)) * Fraction(draw.int(-499, 499), 1000)
            if q < Fraction(v):
                q = Fraction(v) - (Fraction(v) - Fraction(lo)) * Fraction(draw.int(0, 499), 1000)
            return _decimal(q, 30) + "f"
    r = repr(float(np.float32(v)))
    return (r if ("e" in r or "." in r) else r + ".0") + "f"


def _decimal(q, digits):
    """``q`` as a decimal string with ``digits`` significant digits (truncated)."""
    sign = "-" if q < 0 else ""
    q = abs(q)
    e = 0
    while q >= 10:
        q /= 10
        e += 1
    while q < 1:
        q *= 10
        e -= 1
    s = ""
    for _ in range(digits):
        dgt = int(q)
        s += str(dgt)
        q = (q - dgt) * 10
    return f"{sign}{s[0]}.{s[1:]}e{e}"


def msl_literal(v, t, draw) -> str:
    if t.is_bool:
        return "true" if v else "false"
    if t.is_int:
        iv = int(v)
        if t.name == "int32":
            if iv == -2**31:
                return "(-2147483647 - 1)"
            return draw.pick([str(iv), (hex(iv) if iv >= 0 else "-" + hex(-iv))]) if iv != 0 else "0"
        if t.name == "uint32":
            return draw.pick([f"{iv}u", f"{hex(iv)}u", f"{iv}U"])
        if t.name == "int64":
            if iv == -2**63:
                return "(-9223372036854775807l - 1)"
            return draw.pick([f"{iv}l", f"{iv}L", f"{iv}ll"])
        if t.name == "uint64":
            return draw.pick([f"{iv}ul", f"{hex(iv)}ul", f"{iv}UL", f"{iv}ull"])
        return f"static_cast<{MSL_NAME[t.name]}>({iv})"
    fv = float(v)
    if t.name == "float32":
        return _f32_text(fv, draw)
    if t.name == "float64":
        # MSL has no double literal: a float literal, converted (the leaf is float-exact)
        return f"double({_f32_text(fv, draw)})"
    if t.name == "float16":
        if math.isnan(fv) or math.isinf(fv):
            return f"half({_f32_text(fv)})"
        return draw.pick([repr(fv) + "h" if ("." in repr(fv) or "e" in repr(fv)) else repr(fv) + ".0h",
                          float.hex(fv) + "h", f"half({_f32_text(fv)})"])
    return f"bfloat({_f32_text(fv)})"


def msl_cast(t, a_text, spelling, postfix: bool) -> str:
    name = MSL_NAME[t.name]
    if spelling == "alias" and t.name in MSL_ALIASES:
        return f"static_cast<{MSL_ALIASES[t.name][0] if 'unsigned' not in MSL_ALIASES[t.name][-1] else MSL_ALIASES[t.name][-1]}>({a_text})"
    if spelling == "func" or spelling == "alias":
        return f"{name}({a_text})"
    if spelling == "cparen":
        return f"(({name})({a_text}))"
    if spelling == "c":
        if postfix:                                     # `(T)x[i]`: a postfix operand
            return f"(({name}){a_text})"
        return f"static_cast<{name}>({a_text})"
    return f"static_cast<{name}>({a_text})"


def render_msl(n, mode, draw) -> str:
    if n.kind == "leaf":
        m = n.mode if mode == "mix" else mode
        if m == "lit" and not literal_ok(n):
            m = "uni"
        if m == "lit":
            return msl_literal(n.value, n.type, draw)
        idx = f"{2 * n.slot} + tid" if m == "lane" else f"{2 * n.slot}"
        return f"in_{n.type.name}[{idx}]"
    k = [render_msl(c, mode, draw) for c in n.kids]
    if n.kind in ("bin", "cmp", "logic"):
        return f"({k[0]} {n.op} {k[1]})"
    if n.kind == "un":
        return f"({n.op} {k[0]})"
    if n.kind == "cast":
        kid = n.kids[0]
        postfix = kid.kind == "leaf" and ((kid.mode if mode == "mix" else mode) != "lit" or not literal_ok(kid))
        return msl_cast(n.type, k[0], n.spelling, postfix)
    return f"({k[0]} ? {k[1]} : {k[2]})"


# ----------------------------------------------------------------------------- DSL rendering


class DslEnv:
    def __init__(self):
        self.env: dict = {}

    def const(self, v):
        name = f"c{len(self.env)}"
        self.env[name] = v
        return name


def render_dsl(n, mode, draw, env: DslEnv) -> str:
    if n.kind == "leaf":
        m = n.mode if mode == "mix" else mode
        if m == "lit" and not literal_ok(n):
            m = "uni"
        if m == "lit":
            v, t = n.value, n.type
            if t.name == "float64":      # a float constant, converted (constants are float)
                return f"float64({env.const(np.float32(v))})"
            if t.is_bool:
                return "True" if v else "False"
            if t.name == "int32" and int(v) != -2**31 and draw.coin():
                return f"({int(v)})"
            if t.name == "float32" and math.isfinite(float(v)) and draw.coin():
                text = _f32_text(float(v), draw)
                if text.endswith("f") and not text.startswith(("0x", "-0x")):
                    return f"({text[:-1]})"
            return env.const(v)
        idx = f"{2 * n.slot} + tid" if m == "lane" else f"{2 * n.slot}"
        return f"in_{n.type.name}[{idx}]"
    k = [render_dsl(c, mode, draw, env) for c in n.kids]
    if n.kind == "bin":
        op = n.op
        if op == "/" and not n.type.is_float:
            op = "//"               # the DSL's C (truncating) integer division
        return f"({k[0]} {op} {k[1]})"
    if n.kind == "cmp":
        return f"({k[0]} {n.op} {k[1]})"
    if n.kind == "logic":
        return f"({k[0]} {'and' if n.op == '&&' else 'or'} {k[1]})"
    if n.kind == "un":
        return f"({'not ' if n.op == '!' else n.op}{k[0]})"
    if n.kind == "cast":
        name = {"bool": "bool_"}.get(n.type.name, n.type.name)
        if n.spelling == "func" and n.type.name in ("bool", "int32", "float32"):
            name = {"bool": "bool", "int32": "int", "float32": "float"}[n.type.name]
        return f"{name}({k[0]})"
    return f"({k[1]} if {k[0]} else {k[2]})"


# ----------------------------------------------------------------------------- C oracle

C_TYPE = {"bool": "_Bool", "int8": "signed char", "uint8": "unsigned char", "int16": "short",
          "uint16": "unsigned short", "int32": "int", "uint32": "unsigned int", "int64": "long",
          "uint64": "unsigned long", "float16": "_Float16", "bfloat16": "float", "float32": "float",
          "float64": "double"}

C_PRELUDE = r"""
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <limits.h>
/* bfloat16 values live in floats; rounding to nearest even on the bits */
static float bf16(float f) {
    uint32_t u; memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return f;
    u += 0x7fffu + ((u >> 16) & 1u); u &= 0xffff0000u; memcpy(&f, &u, 4); return f;
}
/* GPU float -> integer: truncate, saturate, NaN -> 0 (C leaves out-of-range undefined) */
#define SAT(NAME, T, LO, HI_EXCL, TMIN, TMAX) \
static T NAME(double x) { if (x != x) return 0; if (x >= HI_EXCL) return TMAX; \
    if (x <= LO) return TMIN; return (T)x; }
SAT(sat_int8, signed char, -129.0, 128.0, -128, 127)
SAT(sat_uint8, unsigned char, -1.0, 256.0, 0, 255)
SAT(sat_int16, short, -32769.0, 32768.0, -32768, 32767)
SAT(sat_uint16, unsigned short, -1.0, 65536.0, 0, 65535)
SAT(sat_int32, int, -2147483649.0, 2147483648.0, INT_MIN, INT_MAX)
SAT(sat_uint32, unsigned int, -1.0, 4294967296.0, 0, UINT_MAX)
static long sat_int64(double x) { if (x != x) return 0; if (x >= 0x1p63) return LONG_MAX;
    if (x < -0x1p63) return LONG_MIN; return (long)x; }
static unsigned long sat_uint64(double x) { if (x != x) return 0; if (x >= 0x1p64) return ULONG_MAX;
    if (x <= -1.0) return 0; return (unsigned long)x; }
/* integer / and % with the GPU's answers where C has none: x/0 = x%0 = 0, MIN/-1 wraps */
#define DIVMOD(S, T, U, SIGNED) \
static T div_##S(T a, T b) { if (b == 0) return 0; if (SIGNED && b == (T)-1) return (T)(0 - (U)a); return a / b; } \
static T mod_##S(T a, T b) { if (b == 0) return 0; if (SIGNED && b == (T)-1) return 0; return a % b; } \
static T shl_##S(T a, long long c) { return (T)((U)a << (c & (sizeof(T) * 8 - 1))); } \
static T shr_##S(T a, long long c) { return (T)(a >> (c & (sizeof(T) * 8 - 1))); }
DIVMOD(int32, int, unsigned int, 1)
DIVMOD(uint32, unsigned int, unsigned int, 0)
DIVMOD(int64, long, unsigned long, 1)
DIVMOD(uint64, unsigned long, unsigned long, 0)
static void out_f32(int k, float v) { uint32_t u; memcpy(&u, &v, 4); printf("%d f %u\n", k, u); }
static void out_f16(int k, _Float16 v) { uint16_t u; memcpy(&u, &v, 2); printf("%d f %u\n", k, u); }
static void out_bf16(int k, float v) { uint32_t u; memcpy(&u, &v, 4); printf("%d f %u\n", k, u >> 16); }
/* double -> bfloat16, rounded once: scale to an 8-bit significand, round to nearest even */
#include <math.h>
static float bf16d(double x) {
    if (x != x || x == 0 || isinf(x)) return (float)x;
    int e = ilogb(x); if (e < -126) e = -126;
    double r = nearbyint(ldexp(x, 7 - e));       /* exact scaling; default mode: ties to even */
    double v = ldexp(r, e - 7);
    if (fabs(v) >= 0x1p128) return x > 0 ? __builtin_inff() : -__builtin_inff();
    return (float)v;
}
static void out_f64(int k, double v) { unsigned long long u; memcpy(&u, &v, 8); printf("%d f %llu\n", k, u); }
static void out_int(int k, unsigned long long v) { printf("%d i %llu\n", k, v); }
"""


def c_value(v, t) -> str:
    if t.is_bool:
        return "1" if v else "0"
    if t.is_int:
        u = int(v) & ((1 << t.bits) - 1)
        return f"(({C_TYPE[t.name]}){u}ull)"
    fv = float(v)
    if math.isnan(fv):
        lit = "__builtin_nanf(\"\")"
    elif math.isinf(fv):
        lit = "__builtin_inff()" if fv > 0 else "(-__builtin_inff())"
    else:
        lit = f"({float.hex(fv)}{'' if t.name == 'float64' else 'f'})"
    return f"(({C_TYPE[t.name]}){lit})"


def c_conv(x: str, src, dst) -> str:
    """C text converting the value ``x`` of type ``src`` to ``dst`` with GPU semantics."""
    if src == dst:
        return x
    if dst.is_bool:
        return f"((_Bool)({x}))"
    if src.is_float and dst.is_int:
        return f"sat_{dst.name}((double)({x}))"
    if dst.name == "bfloat16":
        if src.name == "float64":
            return f"bf16d({x})"                 # double rounds once
        return f"bf16((float)({x}))"          # every other source rounds through float
    return f"(({C_TYPE[dst.name]})({x}))"


class CProgram:
    def __init__(self):
        self.lines: list[str] = []
        self.n = 0
        self.checks: list[str] = []

    def tmp(self, t, text) -> str:
        self.n += 1
        name = f"t{self.n}"
        self.lines.append(f"    {C_TYPE[t.name]} {name} = {text};")
        return name

    def expr(self, n) -> str:
        if n.kind == "leaf":
            return self.tmp(n.type, c_value(n.value, n.type))
        k = [self.expr(c) for c in n.kids]
        kt = [c.type for c in n.kids]
        if n.kind == "bin":
            if n.op in ("<<", ">>"):
                pt = promote(kt[0])
                a = c_conv(k[0], kt[0], pt)
                b = f"(long long)({k[1]})"
                self._typecheck(f"({a}) {n.op} ({k[1]})", kt[0], kt[1], pt)
                return self.tmp(pt, f"{'shl' if n.op == '<<' else 'shr'}_{pt.name}({a}, {b})")
            ct = n.type
            a, b = c_conv(k[0], kt[0], ct), c_conv(k[1], kt[1], ct)
            self._typecheck(f"({k[0]}) {n.op} ({k[1]})", kt[0], kt[1], ct)
            if ct.is_int and n.op in ("/", "%"):
                return self.tmp(ct, f"{'div' if n.op == '/' else 'mod'}_{ct.name}({a}, {b})")
            if ct.name == "bfloat16":
                return self.tmp(ct, f"bf16({a} {n.op} {b})")
            return self.tmp(ct, f"({a} {n.op} {b})")
        if n.kind == "cmp":
            ct = common(kt[0], kt[1])
            a, b = c_conv(k[0], kt[0], ct), c_conv(k[1], kt[1], ct)
            return self.tmp(T.bool_, f"({a} {n.op} {b})")
        if n.kind == "un":
            if n.op == "!":
                return self.tmp(T.bool_, f"(!{k[0]})")
            a = c_conv(k[0], kt[0], n.type)
            if n.type.is_int:
                u = {"int32": "unsigned int", "int64": "unsigned long"}.get(n.type.name, C_TYPE[n.type.name])
                return self.tmp(n.type, f"(({C_TYPE[n.type.name]})({n.op}({u}){a}))")
            return self.tmp(n.type, f"(-{a})")
        if n.kind == "cast":
            return self.tmp(n.type, c_conv(k[0], kt[0], n.type))
        if n.kind == "sel":
            c = c_conv(k[0], kt[0], T.bool_)
            return self.tmp(n.type, f"({c} ? {c_conv(k[1], kt[1], n.type)} : {c_conv(k[2], kt[2], n.type)})")
        if n.kind == "logic":
            return self.tmp(T.bool_, f"({c_conv(k[0], kt[0], T.bool_)} {n.op} {c_conv(k[1], kt[1], T.bool_)})")
        raise ValueError(n.kind)

    def _typecheck(self, text, ta, tb, want):
        # gcc types `a op b` itself: our typing rules must agree (bfloat has no C type)
        if "bfloat16" in (ta.name, tb.name, want.name):
            return
        self.checks.append(f"    _Static_assert(_Generic({text}, {C_TYPE[want.name]}: 1, default: 0), "
                           f"\"type of {text} is not {want.name}\");")

    def out(self, k, name, t):
        if t.is_float:
            fn = {"float32": "out_f32", "float16": "out_f16", "bfloat16": "out_bf16", "float64": "out_f64"}[t.name]
            self.lines.append(f"    {fn}({k}, {name});")
        else:
            self.lines.append(f"    out_int({k}, (unsigned long long)({name}));")


def run_c(exprs, workdir=None):
    """Evaluate each tree with gcc; returns a list of bit patterns (ints)."""
    prog = CProgram()
    for k, e in enumerate(exprs):
        start = len(prog.lines)
        name = prog.expr(e)
        # each expression's checks go right after its temporaries (names are in scope)
        prog.lines[start:start] = []
        prog.lines += prog.checks
        prog.checks = []
        prog.out(k, name, e.type)
    src = C_PRELUDE + "int main(void) {\n" + "\n".join(prog.lines) + "\n    return 0;\n}\n"
    d = workdir or tempfile.mkdtemp(prefix="mb_scalar_")
    cpath, exe = os.path.join(d, "e.c"), os.path.join(d, "e")
    with open(cpath, "w") as f:
        f.write(src)
    r = subprocess.run(["gcc", "-std=c11", "-O0", "-fwrapv", "-ffp-contract=off", "-fno-strict-aliasing",
                        "-w", "-o", exe, cpath, "-lm"], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError("gcc rejected the oracle program (a typing rule disagrees with C?):\n"
                             + r.stderr[:3000])
    out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout.split("\n")
    vals = [None] * len(exprs)
    for line in out:
        if line:
            k, _, v = line.split()
            vals[int(k)] = int(v)
    return vals


# ----------------------------------------------------------------------------- the kernels


def buffers(gen: Gen):
    """Input arrays per type: every leaf value twice (one copy per lane)."""
    out = {}
    for name, vals in gen.leaves.items():
        if vals:
            t = _BY[name]
            out[name] = np.repeat(np.array(vals, dtype=t.np), 2)
    return out


def msl_body(exprs, draw):
    """The MSL body and the output slots: ``{type: count}``; output ``k`` of mode ``m``
    of expression ``e`` goes to ``out_<type>[(slot * 4 + m) * 2 + tid]``."""
    lines = ["uint tid = thread_position_in_grid.x;"]
    counts: dict[str, int] = {}
    where = []
    for e in exprs:
        slot = counts.get(e.type.name, 0)
        counts[e.type.name] = slot + 1
        where.append((e.type.name, slot))
        for mi, mode in enumerate(MODES):
            lines.append(f"out_{e.type.name}[{(slot * 4 + mi) * 2} + tid] = {render_msl(e, mode, draw)};")
    return "\n".join(lines), counts, where


def dsl_source(exprs, draw, in_names):
    env = DslEnv()
    counts: dict[str, int] = {}
    body = ["    tid = thread_position_in_grid.x"]
    for e in exprs:
        slot = counts.get(e.type.name, 0)
        counts[e.type.name] = slot + 1
        for mi, mode in enumerate(MODES):
            body.append(f"    out_{e.type.name}[{(slot * 4 + mi) * 2} + tid] = {render_dsl(e, mode, draw, env)}")
    outs = [f"out_{n}: mb.Out(shape=({c * 8},), dtype=mb.{'bool_' if n == 'bool' else n})"
            for n, c in counts.items()]
    src = f"def exprs({', '.join([f'in_{n}' for n in in_names] + outs)}):\n" + "\n".join(body) + "\n"
    return src, env.env, counts


def bits_of(arr, t):
    """Bit patterns (Python ints) of an output array."""
    a = np.asarray(arr)
    if t.is_float:
        u = {16: np.uint16, 32: np.uint32, 64: np.uint64}[t.bits]
        return [int(x) for x in a.view(u)]
    if t.is_bool:
        return [int(bool(x)) for x in a]
    return [int(x) & ((1 << t.bits) - 1) for x in a.astype(t.np)]


def same_bits(got: int, want: int, t) -> bool:
    if got == want:
        return True
    if t.is_float:
        e = {"float16": (0x7c00, 0x3ff), "bfloat16": (0x7f80, 0x7f), "float32": (0x7f800000, 0x7fffff),
             "float64": (0x7ff0000000000000, (1 << 52) - 1)}[t.name]
        nan = lambda b: (b & e[0]) == e[0] and (b & e[1]) != 0  # noqa: E731 (any NaN is NaN)
        return nan(got) and nan(want)
    return False


def describe(e, draw=None) -> str:
    from random import Random
    d = draw or RandomDraw(Random(0))
    return f"MSL: {render_msl(e, 'lit', d)}\n     {render_msl(e, 'lane', d)}"


def fmt_bits(b, t):
    if b is None:
        return "None"
    if t.is_float:
        if t.bits == 32:
            return f"{struct.unpack('<f', struct.pack('<I', b))[0]!r} (0x{b:08x})"
        if t.bits == 64:
            return f"{struct.unpack('<d', struct.pack('<Q', b))[0]!r} (0x{b:016x})"
        v = np.array(b, np.uint16).view(t.np)[()]
        return f"{float(v)!r} (0x{b:04x})"
    if t.is_signed and b >= 1 << (t.bits - 1):
        b -= 1 << t.bits
    return str(b)


# ----------------------------------------------------------------------------- running


def _mlx_dtype(t):
    return T.to_mlx(t)


def run_msl(exprs, gen, draw, backend="sim"):
    """Outputs of the MSL body on ``backend`` and its IR (for the folding check)."""
    import metalbench as mb
    from metalbench import runtime
    from metalbench.frontend import msl as FM
    body, counts, where = msl_body(exprs, draw)
    bufs = buffers(gen)
    names = list(bufs)
    kir = FM.translate_kernel("exprs", body, inputs=[(f"in_{n}", _BY[n], 1) for n in names],
                              outputs=[(f"out_{n}", _BY[n], 1) for n in counts])
    k = mb.metal_kernel(name="exprs", input_names=[f"in_{n}" for n in names],
                        output_names=[f"out_{n}" for n in counts], source=body)
    outs = k(inputs=[runtime.to_mlx(bufs[n]) for n in names], grid=(2, 1, 1), threadgroup=(2, 1, 1),
             output_shapes=[(c * 8,) for c in counts.values()],
             output_dtypes=[_mlx_dtype(_BY[n]) for n in counts], backend=backend)
    res = {n: runtime.to_numpy(o) for n, o in zip(counts, outs)}
    return res, where, kir, body


def run_dsl(exprs, gen, draw, backend="sim"):
    import metalbench as mb
    import metalbench.dsl as D
    from metalbench import runtime
    bufs = buffers(gen)
    names = list(bufs)
    src, consts, counts = dsl_source(exprs, draw, names)
    env = {n: getattr(D, n) for n in dir(D) if not n.startswith("_")}
    env.update(consts, mb=mb)
    k = mb.Kernel(source=src, env=env, source_name="exprs")
    args = [bufs[n] for n in names]
    kir = k.specialize(*args).ir
    outs = k(*args, grid=2, threadgroup=2, backend=backend)
    outs = outs if isinstance(outs, tuple) else (outs,)
    res = {n: runtime.to_numpy(o) for n, o in zip(counts, outs)}
    where, seen = [], {}
    for e in exprs:
        where.append((e.type.name, seen.get(e.type.name, 0)))
        seen[e.type.name] = seen.get(e.type.name, 0) + 1
    return res, where, kir, src


def folded_stores(kir):
    """The kernel's stores in body order (four per expression, ``lit`` first)."""
    from metalbench import ir
    return [s for s in kir.body if isinstance(s, ir.Store)]


def compare(exprs, c_bits, res, where, kir, front: str, gaps=None):
    """Mismatch descriptions (empty: all agree) of a front end's results with C's: the
    run-time values of every mode and lane, and the folder's value of the ``lit`` form
    (``semantics.folding.const_value`` of the stored expression: the compile-time path).
    ``gaps`` (a list) collects ``lit`` forms the front end left unfolded."""
    from metalbench import ir
    from metalbench.semantics.folding import const_value
    from metalbench import scalar as S
    bad = []
    stores = folded_stores(kir)
    for i, e in enumerate(exprs):
        t = e.type
        want = c_bits[i] & ((1 << t.bits) - 1) if not t.is_float else c_bits[i]
        tname, slot = where[i]
        got = bits_of(res[tname], t)
        for mi, mode in enumerate(MODES):
            for lane in (0, 1):
                g = got[(slot * 4 + mi) * 2 + lane]
                if not same_bits(g, want, t):
                    bad.append(f"{front} {mode} lane {lane}: got {fmt_bits(g, t)}, C gives "
                               f"{fmt_bits(want, t)} ({t.name})\n  {describe(e)}")
                    break
        lit = stores[i * 4].value
        if gaps is not None and not isinstance(lit, ir.Const):
            gaps.append(f"{front}: {ir.dump([stores[i * 4]]).strip()}")
        v = const_value(lit)
        if v is None:
            if not has_int_division(e) and all(literal_ok(x) for x in walk(e) if x.kind == "leaf"):
                bad.append(f"{front}: the literal form has no compile-time value: {ir.dump([stores[i * 4]])}"
                           f"\n  {describe(e)}")
            continue
        fb = bits_of(np.array([S.value(v, t)]), t)[0]
        if not same_bits(fb, want, t):
            bad.append(f"{front} folded: {fmt_bits(fb, t)}, C gives {fmt_bits(want, t)} ({t.name})"
                       f"\n  {describe(e)}")
    return bad


def batch(draw, n_exprs=20, max_depth=4, types=TYPES, fronts=("msl", "dsl"), backend="sim", gpu_safe=False,
          gaps=None):
    """One batch: ``n_exprs`` random trees, every front end, compared with gcc. Returns the
    list of mismatch descriptions."""
    gen = Gen(draw, max_depth=max_depth, types=types, gpu_safe=gpu_safe)
    exprs = [gen.tree() for _ in range(n_exprs)]
    c_bits = run_c(exprs)
    bad = []
    for front in fronts:
        run = run_msl if front == "msl" else run_dsl
        res, where, kir, _src = run(exprs, gen, draw, backend)
        bad += compare(exprs, c_bits, res, where, kir, front, gaps)
    return bad
