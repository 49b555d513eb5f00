"""Builtins whose simulator or CUDA spelling the H200 run found wrong, on their edge
cases, each against an oracle independent of the code under test:

- sinpi/cospi/tanpi of float64: exact argument reduction (sin(pi * x) rounds pi * x),
  against 40-digit decimal Taylor series and exactly known values;
- fract: always in [0, 1) in the result type (MSL Table 6.4), against exact rational
  arithmetic;
- lgamma of float64 near its zeros at 1 and 2, against Stirling's series in decimal;
- simd_max/simd_min: NaN lanes drop out (Metal's max/min are fmax/fmin), one value on
  every lane;
- integer clamp: Metal's min(max(x, lo), hi), also for lo > hi, and the printed CUDA helper
  compiled by the machine's C++ compiler agrees;
- mul24, mad24, madhi, madsat on every integer width at the range's edges: the simulator and
  the CUDA helpers (compiled by the machine's C++ compiler, 64-bit high products through
  __int128 there) against exact Python integers.
"""
from __future__ import annotations

import math
import shutil
import subprocess
from fractions import Fraction

import numpy as np
import pytest

from metalbench import ir
from metalbench import types as T
from metalbench.builtins import refs, registry
from metalbench.builtins.floatmath import _trig_pi
from metalbench.sim import Buffer, compile_kernel

F64 = np.dtype(np.float64)


def _sim(name, x, dt=F64):
    return np.asarray(registry.get(name).sim([np.asarray(x, dt)], dt))


def _ulps(got, want) -> float:
    if math.isinf(want) or math.isnan(want):
        return 0.0 if (got == want or (math.isnan(got) and math.isnan(want))) else math.inf
    return abs(got - want) / math.ulp(want) if want != 0 else (0.0 if got == 0 else math.inf)


TRIG_X = [1 / 3, 0.1, 0.2, 0.3, 0.7, 0.9, 1.1, 1.966065836052842, 2.5 - 2 ** -40, 0.5 + 2 ** -45, 1e-300,
          5e-324, -1e-310, 2.0 ** 52 + 0.5, 2.0 ** 51 + 0.25, 123456.789, -7.125, 1e15 + 0.3, 0.25, 0.75, -0.25]


@pytest.mark.parametrize("name, f", [("sinpi", math.sin), ("cospi", math.cos), ("tanpi", math.tan)])
def test_trig_pi_of_float64_is_within_an_ulp(name, f):
    xs = np.array(TRIG_X + list(-np.array(TRIG_X)))
    got = _sim(name, xs)
    bad = [(x, g, _trig_pi(f, x, 2.0)) for x, g in zip(xs, got) if _ulps(float(g), _trig_pi(f, x, 2.0)) > 1]
    assert bad == []


def test_trig_pi_exact_values_and_signs():
    # sinpi(0.25) = sqrt(2)/2 (math.sqrt is correctly rounded); the H200's sinpi(1.966065836052842)
    assert _ulps(float(_sim("sinpi", 0.25)), math.sqrt(0.5)) <= 1 and _ulps(float(_sim("cospi", 0.25)), math.sqrt(0.5)) <= 1
    assert float(_sim("sinpi", 1.966065836052842)) == -0.10640550070429829
    ints = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -3.0, 2.0 ** 60])
    s = _sim("sinpi", ints)
    assert np.all(s == 0) and list(np.signbit(s)) == list(np.signbit(ints))
    assert list(_sim("cospi", ints)) == [1.0, 1.0, -1.0, -1.0, 1.0, -1.0, 1.0]
    halves = np.array([0.5, 1.5, -0.5, 2.5])
    assert list(_sim("sinpi", halves)) == [1.0, -1.0, -1.0, 1.0]
    assert list(_sim("cospi", halves)) == [0.0, 0.0, 0.0, 0.0] and not np.signbit(_sim("cospi", halves)).any()
    assert list(_sim("tanpi", halves)) == [math.inf, -math.inf, -math.inf, math.inf]
    assert np.isnan(_sim("sinpi", [math.inf, -math.inf, math.nan])).all()


def _fract_exact(x: float, dt) -> float:
    """x - floor(x) exactly, rounded once to ``dt``, at most the largest ``dt`` below 1."""
    below = float(np.nextafter(np.array(1, dt), np.array(0, dt)).astype(np.float64)) if dt.name != "bfloat16" \
        else 1 - 2 ** -8
    if not math.isfinite(x):
        return below
    q = Fraction(x) - math.floor(Fraction(x))
    r = float(np.array(float(q), np.float64).astype(np.float32).astype(dt)) if dt.itemsize < 8 else float(q)
    return min(r, below)


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.float16, "bfloat16"])
def test_fract_stays_below_one_in_the_result_type(dt):
    dt = np.dtype(T.bfloat16.np) if dt == "bfloat16" else np.dtype(dt)
    xs = [-1e-300, -1e-30, -2.0 ** -24, -2.0 ** -12, -6e-5, -0.3, -0.0, 0.0, 0.75, 2.5, -7.0, 1e30, -1e30,
          math.inf, -math.inf, math.nan]
    with np.errstate(over="ignore", under="ignore"):      # 1e30 is inf in half, -1e-300 is -0
        vals = np.array(xs, np.float64).astype(np.float32).astype(dt) if dt.itemsize < 8 else np.array(xs)
    got = _sim("fract", vals, dt).astype(np.float64)
    want = [_fract_exact(float(v), dt) for v in vals.astype(np.float64)]
    assert list(got) == want
    assert (got >= 0).all() and (got < 1).all()


def test_fract_cuda_clamps_half_and_bfloat_below_one_in_their_own_type():
    from metalbench.codegen.cuda import CUDAPrinter
    for t, const in [(T.float16, "0x1.ffcp-1f"), (T.bfloat16, "0x1.fep-1f"), (T.float32, "0x1.fffffep-1f")]:
        p = CUDAPrinter(ir.KernelIR("k", [], []))
        registry.get("fract").cuda(p, [ir.Var("x", t)], t)
        assert any(const in code for code in p.helpers.values()), t


LGAMMA_X = [1.0344677456995077, 1 + 2 ** -52, 1 - 2 ** -53, 2 + 2 ** -51, 2 - 2 ** -52, 1 + 1e-9, 2 - 1e-7,
            0.5, 0.75, 1.25, 1.5, 1.75, 2.25, 2.5, 0.9, 1.1, 1.9, 2.1]


def test_lgamma_of_float64_near_its_zeros_is_within_two_ulps():
    rng = np.random.default_rng(3)
    xs = np.array(LGAMMA_X + list(rng.uniform(0.5, 2.5, 40)))
    got = _sim("lgamma", xs)
    bad = [(x, g, refs.lgamma_scalar(x)) for x, g in zip(xs, got) if _ulps(float(g), refs.lgamma_scalar(x)) > 2]
    assert bad == []
    assert list(_sim("lgamma", [1.0, 2.0])) == [0.0, 0.0]
    # the value the H200's lgamma gave (CUDA: 4 ulps); math.lgamma is ~100 ulps off here
    assert _ulps(float(_sim("lgamma", 1.0344677456995077)), -0.018934246361880454) <= 1


def _simd_kernel(name, t):
    i = ir.Var("i", T.uint32)
    return ir.KernelIR("k", [ir.Param("x", "buffer", t), ir.Param("o", "buffer", t, is_output=True)], [
        ir.Decl(i, ir.Swizzle(ir.ThreadAttr("thread_position_in_grid", T.uint3), "x", T.uint32)),
        ir.Store("o", i, ir.Call(name, [ir.Load("x", i, t)], t))])


@pytest.mark.parametrize("t", [T.float32, T.float16])
@pytest.mark.parametrize("name, fn", [("simd_max", np.fmax), ("simd_min", np.fmin)])
def test_simd_max_and_min_ignore_nan_lanes(name, fn, t):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(96).astype(t.np)
    x[[0, 5, 31]] = np.nan              # simdgroup 0: some NaN lanes
    x[32:64] = np.nan                   # simdgroup 1: every lane NaN
    x[70] = np.inf if name == "simd_max" else -np.inf
    o = np.zeros(96, t.np)
    compile_kernel(_simd_kernel(name, t)).run({"x": Buffer(x), "o": Buffer(o)}, (96, 1, 1), (96, 1, 1))
    want = np.concatenate([np.full(32, fn.reduce(x[g * 32:(g + 1) * 32])) for g in range(3)])
    assert np.array_equal(o, want, equal_nan=True)
    assert not np.isnan(o[:32]).any() and np.isnan(o[32:64]).all() and abs(float(o[64])) == math.inf


_CLAMP_CASES = [(0, 1, 0), (5, 7, 3), (-4, -1, -9), (2, 0, 5), (9, 0, 5), (-9, 0, 5), (3, 3, 3)]


def test_integer_clamp_is_min_of_max_also_when_lo_exceeds_hi():
    sim = registry.get("clamp").sim
    for x, lo, hi in _CLAMP_CASES:
        assert int(sim([np.int32(x), np.int32(lo), np.int32(hi)], np.dtype(np.int32))) == min(max(x, lo), hi)


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_integer_clamp_cuda_helper_compiled_by_gcc_agrees(tmp_path):
    from metalbench.codegen.cuda import CUDAPrinter
    p = CUDAPrinter(ir.KernelIR("k", [], []))
    registry.get("clamp").cuda(p, [ir.Var(n, T.int32) for n in "xyz"], T.int32)
    rows = "\n".join(f'    std::printf("%d\\n", mb_clamp({x}, {lo}, {hi}));' for x, lo, hi in _CLAMP_CASES)
    src = tmp_path / "c.cpp"
    src.write_text("#include <cstdio>\n#define __device__\n" + p.helpers["mb_clamp"] + "\nint main() {\n" + rows
                   + "\n    return 0;\n}\n")
    subprocess.run(["g++", "-std=c++17", "-O2", str(src), "-o", str(tmp_path / "c")], check=True)
    out = subprocess.run([str(tmp_path / "c")], capture_output=True, text=True, check=True).stdout.split()
    assert [int(v) for v in out] == [min(max(x, lo), hi) for x, lo, hi in _CLAMP_CASES]


_WIDE = {"int8_t": T.int8, "uint8_t": T.uint8, "int16_t": T.int16, "uint16_t": T.uint16, "int32_t": T.int32,
         "uint32_t": T.uint32, "int64_t": T.int64, "uint64_t": T.uint64}
_HI64 = """#include <cstdio>
#include <cstdint>
#define __device__
long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * (__int128)b) >> 64); }
unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64); }
"""


def _mad_cases():
    import itertools
    import random
    for cname, t in _WIDE.items():
        signed = t.np.kind == "i"
        lo, hi = (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if signed else (0, (1 << t.bits) - 1)
        r = random.Random(t.bits + signed)
        vals = [lo, hi, 0, 1, -1 if signed else 2, min(hi, 0x7FFFFF), max(lo, -0x800000) if signed else min(hi, 0x800000)]
        vals += [r.randint(lo, hi) for _ in range(4)]
        for name in ("mul24", "mad24", "madhi", "madsat"):
            for abc in itertools.islice(itertools.product(vals, repeat=3), 0, None, 5):
                yield name, cname, t, abc[:2] if name == "mul24" else abc


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_24_bit_and_fused_integer_builtins_are_exact(tmp_path):
    from metalbench.codegen.cuda import CUDAPrinter
    helpers, rows, want = {}, [], []
    for name, cname, t, args in _mad_cases():
        p = CUDAPrinter(ir.KernelIR("k", [], []))
        b = registry.get(name)
        b.cuda(p, [ir.Var(n, t) for n in "xyz"[:len(args)]], t)
        helpers.update(p.helpers)
        w = int(b.ref(*[np.array([a], dtype=object) for a in args], dt=np.dtype(t.np))[0])
        got = b.sim([np.array([a]).astype(t.np) for a in args], np.dtype(t.np))
        assert int(np.asarray(got).reshape(-1)[0]) == w, (name, cname, args)
        suffix = "ULL" if t == T.uint64 else "LL" if t == T.int64 else ""
        call = f"mb_{name}(" + ", ".join(f"({cname}){a}{suffix}" for a in args) + ")"
        fmt, cast = ("%lld", "long long") if t.np.kind == "i" else ("%llu", "unsigned long long")
        rows.append(f'    std::printf("{fmt}\\n", ({cast})(({cname}){call}));')
        want.append(w)
    src = tmp_path / "mad.cpp"
    src.write_text(_HI64 + "\n".join(helpers.values()) + "\nint main() {\n" + "\n".join(rows) + "\n}\n")
    subprocess.run(["g++", "-std=c++17", "-O2", "-w", str(src), "-o", str(tmp_path / "mad")], check=True)
    out = subprocess.run([str(tmp_path / "mad")], capture_output=True, text=True, check=True).stdout.split()
    assert [int(v) for v in out] == want
