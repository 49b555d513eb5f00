"""Number literals (metalbench.literals) against gcc: the value and the type C gives the same
text, on random literals, on decimals right at and next to the midpoint between two
floats (where rounding twice goes wrong), hex floats and every integer suffix."""
import math
import os
import shutil
import struct
import subprocess
import tempfile
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import metalbench as mb
from metalbench import literals as L
from metalbench import types as T

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc (the oracle)")
CAMPAIGN = os.environ.get("METALBENCH_SCALAR_CAMPAIGN")
SETTINGS = dict(max_examples=int(CAMPAIGN) if CAMPAIGN else 8, derandomize=not CAMPAIGN, deadline=None,
                suppress_health_check=list(HealthCheck))

_GCC_TYPE = {"int": T.int32, "uint": T.uint32, "long": T.int64, "ulong": T.uint64, "llong": T.int64,
             "ullong": T.uint64, "i128": T.uint64, "float": T.float32, "half": T.float16, "double": T.float64}


def gcc_literals(texts):
    """(value, type) gcc gives each C literal text (a decimal past long: __int128 in gcc,
    unsigned long in clang, whose reading MSL follows)."""
    lines = []
    for i, t in enumerate(texts):
        lines.append(f'  P({i}, {t});')
    src = r"""#include <stdio.h>
#include <string.h>
#include <stdint.h>
#define TN(x) _Generic((x), int: "int", unsigned int: "uint", long: "long", unsigned long: "ulong", \
  long long: "llong", unsigned long long: "ullong", __int128: "i128", float: "float", _Float16: "half", \
  double: "double", default: "?")
#define P(i, x) do { __typeof__(x) v_ = (x); unsigned char b_[16] = {0}; memcpy(b_, &v_, sizeof v_); \
  unsigned long long lo_; memcpy(&lo_, b_, 8); printf("%d %s %llu\n", i, TN(x), lo_); } while (0)
int main(void) {
""" + "\n".join(lines) + "\n}\n"
    d = tempfile.mkdtemp(prefix="mb_lit_")
    c, exe = os.path.join(d, "l.c"), os.path.join(d, "l")
    with open(c, "w") as f:
        f.write(src)
    r = subprocess.run(["gcc", "-std=gnu11", "-w", "-o", exe, c], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:2000]
    out = {}
    for line in subprocess.run([exe], capture_output=True, text=True, check=True).stdout.splitlines():
        i, tn, bits = line.split()
        t = _GCC_TYPE[tn]
        b = int(bits)
        if t.is_float:
            b &= (1 << t.bits) - 1
            v = float(np.array(b, {16: np.uint16, 32: np.uint32, 64: np.uint64}[t.bits]).view(t.np))
        else:
            v = b & ((1 << 64) - 1)
        out[int(i)] = (v, t)
    return [out[i] for i in range(len(texts))]


def to_c(text: str) -> str:
    """The C spelling of an MSL literal: unsuffixed floats are float in MSL, half is f16."""
    low = text.lower()
    is_float = ("p" in low) if low.startswith("0x") else ("." in low or "e" in low)
    if not is_float:
        return text
    if low.endswith("h"):
        # gcc evaluates _Float16 constants in float (excess precision: rounding twice);
        # clang, like this oracle, rounds once: through __float128 (113 bits), whose first
        # rounding is harmless for the texts drawn here (nudges >= 1e-30 from a midpoint)
        return f"((_Float16){text[:-1]}q)"
    return text if low.endswith("f") else text + "f"


def check_against_gcc(texts):
    want = gcc_literals([to_c(t) for t in texts])
    for text, (wv, wt) in zip(texts, want):
        v, t = L.parse(text)
        if wt.is_int:
            wv = wv if wt.is_signed is False or wv < 2 ** 63 else wv - 2 ** 64
            assert (v, t) == (wv, wt), f"{text}: ours {v!r} {t}, gcc {wv!r} {wt}"
        else:
            assert t == wt and (struct.pack("<d", v) == struct.pack("<d", wv)), \
                f"{text}: ours {v!r} {t}, gcc {wv!r} {wt}"


# ----------------------------------------------------------------------------- strategies

def _midpoint_text(draw, t, max_digits=60):
    """A decimal at, just below or just above the midpoint between a float and the next."""
    bits = draw(st.integers(1, (1 << (t.bits - 1)) - 1 - (1 << (10 if t.bits == 16 else 23))))
    u = np.uint16 if t.bits == 16 else np.uint32
    a = float(np.array(bits, u).view(t.np))
    b = float(np.array(bits + 1, u).view(t.np))
    if not math.isfinite(b):
        b = a * 2
    mid = (Fraction(a) + Fraction(b)) / 2
    nudge = draw(st.sampled_from([0, 1, -1]))
    digits = draw(st.integers(10, max_digits))
    q = mid + nudge * Fraction(1, 10 ** digits) * mid
    return _exact_decimal(q, digits + 5)


def _exact_decimal(q: Fraction, digits: int) -> str:
    """``q`` written with ``digits`` significant decimal digits, exactly when it has a
    finite expansion that short (midpoints do: they are dyadic)."""
    e = 0
    while q >= 10:
        q /= 10
        e += 1
    while q < 1:
        q *= 10
        e -= 1
    out = ""
    for _ in range(digits):
        d = int(q)
        out += str(d)
        q = (q - d) * 10
        if q == 0:
            break
    return f"{out[0]}.{out[1:] or '0'}e{e}"


@st.composite
def float_literal(draw, python=False):
    """An MSL float literal; ``python``: a Python one (decimal, no suffix)."""
    kind = draw(st.sampled_from(["dec", "mid32"] if python else ["dec", "mid32", "mid16", "hex"]))
    if kind == "mid32":
        return _midpoint_text(draw, T.float32) + ("" if python else draw(st.sampled_from(["f", "F", ""])))
    if kind == "mid16":
        return _midpoint_text(draw, T.float16, 28) + "h"
    if kind == "hex":
        whole = draw(st.text("0123456789abcdefABCDEF", min_size=0, max_size=8))
        frac = draw(st.text("0123456789abcdef", min_size=0 if whole else 1, max_size=8))
        exp = draw(st.integers(-160, 140))
        dot = "." if (frac or draw(st.booleans())) else ""
        return f"0x{whole or ('' if frac else '1')}{dot}{frac}p{exp:+d}" + draw(st.sampled_from(["f", "", "h"]))
    mant = draw(st.text("0123456789", min_size=1, max_size=40))
    pos = draw(st.integers(0, len(mant)))
    exp = draw(st.one_of(st.none(), st.integers(-60, 45), st.integers(-400, 400)))
    text = mant[:pos] + "." + mant[pos:]
    if exp is not None:
        text += f"e{exp}"
    return text + ("" if python else draw(st.sampled_from(["f", "", "h", "F"])))


@st.composite
def int_literal(draw):
    v = draw(st.one_of(st.integers(0, 2 ** 64 - 1),
                       st.sampled_from([0, 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 63 - 1, 2 ** 63,
                                        2 ** 64 - 1, 255, 65535, 65536])))
    base = draw(st.sampled_from(["dec", "hex", "oct", "bin"]))
    body = {"dec": str(v), "hex": hex(v), "oct": ("0" + oct(v)[2:]) if v else "0", "bin": bin(v)}[base]
    if base == "hex" and draw(st.booleans()):
        body = "0X" + body[2:].upper()
    suffix = draw(st.sampled_from(["", "u", "U", "l", "L", "ul", "UL", "lu", "ll", "LL", "ull", "LLU", "uLL"]))
    return body + suffix


# ----------------------------------------------------------------------------- tests

@settings(**SETTINGS)
@given(st.lists(st.one_of(float_literal(), int_literal()), min_size=30, max_size=60))
def test_literals_read_as_gcc_reads_them(texts):
    check_against_gcc(texts)


def test_known_literals():
    check_against_gcc(["1.000000059604644775390625000001f", "1.000000059604644775390625", "0x1p-3f",
                       "0x1.8p1", "0x.8p0", "0xAp0f", "1e-45f", "7e-46f", "3.4028235677973366e38f",
                       "3.4028235677973367e38f", "1e39f", "0.1h", "65519.99h", "65520.0h", "65519.0h", "5.96e-8h",
                       "2147483647", "2147483648", "4294967296", "0x7fffffff", "0x80000000",
                       "0xffffffff", "0x100000000", "0x8000000000000000", "9223372036854775807",
                       "9223372036854775808", "18446744073709551615u", "017", "0b101", "0u", "1ll", "1LLU"])
    assert L.parse("1.000000059604644775390625000001f") == (float(np.nextafter(np.float32(1), np.float32(2))),
                                                            T.float32)


@pytest.mark.parametrize("text, message", [
    ("1f", "invalid suffix 'f' on integer constant"), ("08", "invalid digit '8' in octal constant"),
    ("0x1.8", "needs an exponent"), ("18446744073709551616", "too large"), ("1lL", "invalid suffix"),
    ("1.5l", "long double"),
])
def test_bad_literals_say_why(text, message):
    with pytest.raises(L.LiteralError, match=message):
        L.parse(text)


def test_msl_front_end_reads_literals_exactly():
    k = mb.metal_kernel(name="lit", input_names=[], output_names=["out"],
                        source="out[0] = 1.000000059604644775390625000001f; out[1] = 0x1p-3f; out[2] = -0x1.8p1;")
    with pytest.raises(mb.KernelTypeError, match="invalid suffix 'f'"):
        bad = mb.metal_kernel(name="bad", input_names=[], output_names=["out"], source="out[0] = 1f;")
        bad(inputs=[], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1,)],
            output_dtypes=[mb.types.to_mlx(T.float32)], backend="sim")
    (o,) = k(inputs=[], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(3,)],
             output_dtypes=[mb.types.to_mlx(T.float32)], backend="sim")
    assert np.array(o).tolist() == [float(np.nextafter(np.float32(1), np.float32(2))), 0.125, -3.0]


@settings(**SETTINGS)
@given(st.lists(float_literal(python=True), min_size=10, max_size=30))
def test_dsl_float_literals_round_once_to_float32(texts):
    """A Python float literal in a DSL kernel is its text rounded once to float32."""
    want = gcc_literals([t + "f" for t in texts])
    body = "\n".join(f"    out[{i}] = {t}" for i, t in enumerate(texts))
    src = f"def lits(out: mb.Out(shape=({len(texts)},), dtype=mb.float32)):\n{body}\n"
    k = mb.Kernel(source=src, env={"mb": mb}, source_name="lits")
    got = np.array(k(grid=1, threadgroup=1, backend="sim"))
    for t, g, (w, _) in zip(texts, got.tolist(), want):
        assert struct.pack("<d", g) == struct.pack("<d", w), f"{t}: DSL {g!r}, gcc {w!r}"
