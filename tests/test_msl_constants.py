"""MSL local constants as array sizes, C-style casts of any expression, and the C
preprocessor (issue 13). Each kernel: simulator vs NumPy (unchecked and checked), a round
trip through the printed MSL, the libclang checks of the printed MSL and CUDA, and (GPU
machine) the printed CUDA."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import MetalbenchError, Source
from metalbench.frontend.msl.preprocess import METAL_VERSION, Preprocessor
from msl_cases import MSLCase, run_cuda, run_roundtrip, run_sim

RNG = np.random.default_rng(5)

CONSTSIZE = MSLCase(
    "constsize",
    """
    constexpr int M = 4;
    const int n = N / 2;                  // from a template constant
    constexpr int NACC = n + 1;
    static constexpr uint BLOCK = M * 8u;
    uint i = thread_position_in_grid.x;
    uint l = thread_position_in_threadgroup.x;
    threadgroup float shm[NACC * BLOCK];
    float v[M];
    float acc[NACC * 2] = {x[i], 1.0f};  // run-time values; the rest are zero
    for (int j = 0; j < M; ++j) v[j] = x[i] * (j + 1);
    float s = 0.0f;
    for (int j = 0; j < NACC * 2; ++j) s += acc[j];
    shm[l * NACC] = v[M - 1] + s;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = shm[(BLOCK - 1 - l) * NACC] + float(sizeof(v) / sizeof(float));
    """,
    {"x": RNG.standard_normal(64).astype(np.float32)},
    [("out", (64,), np.float32)],
    lambda x: [(5 * x + 1).reshape(2, 32)[:, ::-1].reshape(-1) + 4],
    grid=(64, 1, 1), tg=(32, 1, 1), template=[("N", 6)], atol=1e-5)

CASTS = MSLCase(
    "c_casts",
    """
    uint i = thread_position_in_grid.x;
    int k = (int)i - 8;
    float z = (float)(k * 3) + (T)(-1.5f);
    uint q = (uint)(k * 2);                 // wraps for negative k, as in C
    float big = (T)-2.0f;
    ushort s = (ushort)simd_min(x[i]);
    size_t off = (size_t)i * 2;
    out[i] = z + (float)(q >> 28) + big + (float)s + (float)off + (float)(uchar)(k);
    """,
    {"x": (RNG.random(32) * 100).astype(np.float32)},
    [("out", (32,), np.float32)],
    lambda x: [(np.arange(32) - 8) * 3.0 - 1.5 + (((np.arange(32) - 8) * 2).astype(np.uint32) >> 28)
               - 2.0 + np.floor(x.min()) + np.arange(32) * 2
               + ((np.arange(32) - 8) % 256)],
    grid=(32, 1, 1), tg=(32, 1, 1), template=[("T", mx.float32)], atol=1e-4)

PREPROC = MSLCase(
    "preprocessor",
    """
    #include <metal_stdlib>
    #define SCALE 3
    #define MADD(a, b) ((a) * SCALE + (b))
    #define CAT(a, b) a##b
    #define STR(x) #x
    uint i = thread_position_in_grid.x;
    #pragma clang loop unroll(full)
    for (int j = 0; j < 2; ++j) {
        _Pragma("unroll")
        out[2 * i + j] = MADD(x[i], j);
    }
    #if (D % 4) != 0          /* D is a template parameter, not a macro: 0 here */
    out[2 * i] = -1.0f;
    #elif defined(SCALE) && SCALE > 2 && __METAL_VERSION__ >= 300
    float CAT(to, tal) = sizeof(STR(ab)) + MADD(
        1,
        0);
    out[2 * i + 1] += total;
    #else
    out[2 * i + 1] = -2.0f;
    #endif
    #ifdef __FAST_MATH__
    out[2 * i] = -3.0f;
    #endif
    #undef SCALE
    #ifndef SCALE
    out[2 * i] += 0.5f;
    #endif
    """,
    {"x": RNG.standard_normal(16).astype(np.float32)},
    [("out", (32,), np.float32)],
    lambda x: [np.stack([3 * x + 0.5, 3 * x + 1 + 3 + 3], 1).reshape(-1)],
    grid=(16, 1, 1), tg=(16, 1, 1), template=[("D", 70)], atol=1e-5)

SWITCH = MSLCase(
    "switch",
    """
    uint i = thread_position_in_grid.x;
    float a = 0.0f;
    switch (i % 6) {
      case 0:
      case 1: a = 1.0f; break;
      default: a = 2.0f;              // falls through
      case 3: { a += 3.0f; }
      case 4: a += 10.0f; break;
    }
    for (int j = 0; j < 3; ++j) {
      switch (j) { case 1: a += 100.0f; break; default: break; }
    }
    out[i] = a;
    """,
    {"x": np.zeros(12, np.float32)},
    [("out", (12,), np.float32)],
    lambda x: [np.array([1, 1, 15, 13, 10, 15] * 2, np.float32) + 100],
    grid=(12, 1, 1), tg=(12, 1, 1))

TOPK = MSLCase(
    "thread_topk",
    """
    // each thread keeps the k smallest of its rows in thread arrays; thread 0 merges them
    const uint tpb = threads_per_threadgroup.x;
    const uint tid = thread_position_in_threadgroup.x;
    constexpr uint KMAX = 4u;
    thread float vals[KMAX];
    thread uint count = 0u;
    thread uint worst = 0u;
    for (uint r = tid; r < uint(x_shape[0]); r += tpb) {
        const device float* row = &x[r * 8];
        float acc = 0.0f;
        for (uint j = 0; j < 8; ++j) acc = fma(row[j], row[j], acc);
        if (count < KMAX) {
            vals[count++] = acc;
        } else if (acc < vals[worst]) {
            vals[worst] = acc;
        }
        worst = 0u;
        for (uint t = 1u; t < min(count, KMAX); ++t) if (vals[t] > vals[worst]) worst = t;
    }
    threadgroup float cand[KMAX * 32];
    for (uint j = 0; j < KMAX; ++j) cand[tid * KMAX + j] = j < count ? vals[j] : INFINITY;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (tid == 0u) {
        for (uint j = 0; j < KMAX; ++j) {
            uint best = j;
            for (uint t = j + 1u; t < tpb * KMAX; ++t) if (cand[t] < cand[best]) best = t;
            float tv = cand[j]; cand[j] = cand[best]; cand[best] = tv;
            out[j] = cand[j];
        }
    }
    """,
    {"x": RNG.standard_normal((100, 8)).astype(np.float32)},
    [("out", (4,), np.float32)],
    lambda x: [np.sort((x.astype(np.float64) ** 2).sum(1))[:4]],
    grid=(32, 1, 1), tg=(32, 1, 1), atol=1e-4)

CASES = [CONSTSIZE, CASTS, PREPROC, SWITCH, TOPK]
IDS = [c.name for c in CASES]


@pytest.mark.parametrize("c", CASES, ids=IDS)
@pytest.mark.filterwarnings("ignore::metalbench.frontend.msl.preprocess.MacroWarning")
def test_sim_matches_numpy(c):
    run_sim(c)


@pytest.mark.parametrize("c", CASES, ids=IDS)
@pytest.mark.filterwarnings("ignore::metalbench.frontend.msl.preprocess.MacroWarning")
def test_round_trip(c):
    run_roundtrip(c)


@pytest.mark.gpu
@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_printed_cuda_matches_sim(c):
    run_cuda(c)


def _pp(text, **kw):
    return Preprocessor(**kw).run(text, Source("t", text))


def test_preprocessor_keeps_lines_and_expands_in_place():
    text = "a\n#define F(x, y) x + y\nint b = F(1,\n  2);\n#if 0\nno\n#endif\nc"
    out = _pp(text)
    assert out.count("\n") == text.count("\n")
    lines = out.split("\n")
    assert lines[0] == "a" and lines[2] + lines[3].strip() == "int b = 1 + 2;" and lines[7] == "c"
    assert all(not x.strip() for x in (lines[1], lines[4], lines[5], lines[6]))


@pytest.mark.parametrize("gap", ["", " ", "\t\t ", "  \t"])
def test_a_backslash_continues_a_line_also_before_blanks(gap):
    # clang and GCC join `\<blanks><newline>` (with a warning); a real FDTD header's macros do
    out = _pp(f"#define TWICE(x) \\{gap}\n  ((x) * 2)\nint v = TWICE(3);\nint w = 1;")
    lines = out.split("\n")
    assert lines[2].replace(" ", "") == "intv=((3)*2);" and lines[3] == "int w = 1;", out


@pytest.mark.parametrize("expr,want", [
    ("1 + 2 * 3 == 7", True), ("(-1) < 0", True), ("-1 < 0u", False), ("10 / 3 == 3", True),
    ("-7 / 2 == -3", True), ("-7 % 2 == -1", True), ("1 ? 0 : 1", False), ("UNDEFINED_NAME == 0", True),
    ("defined(X) || !defined X", True), ("0x10 == 16 && 010 == 8", True), ("(1 << 40) > 0", True),
    ("'a' == 97", True), ("true && !false", True), (f"__METAL_VERSION__ == {METAL_VERSION}", True),
])
def test_if_arithmetic_is_c(expr, want):
    out = _pp(f"#if {expr}\nyes\n#else\nno\n#endif")
    assert ("yes" in out) == want and ("no" in out) != want


def test_fast_math_macro_follows_math_mode():
    text = "#ifdef __FAST_MATH__\nfast\n#endif"
    assert "fast" in _pp(text, math_mode="fast") and "fast" not in _pp(text)


def test_recursive_macros_stop():
    assert _pp("#define A B\n#define B A\nA").split("\n")[-1] == "A"
    assert _pp("#define f(x) x + f(x)\nf(1)").split("\n")[-1] == "1 + f(1)"


@pytest.mark.parametrize("src,line,words", [
    ('#include "my_helpers.h"\nout[0] = 1.0f;', 1, "#include \"my_helpers.h\""),
    ("out[0] = 1.0f;\n#if 1\nout[0] = 2.0f;", 3, "#if without #endif"),
    ("out[0] = 1.0f;\n#error stop here", 2, "#error stop here"),
    ("out[0] = 1.0f;\n#if 1 / 0\n#endif", 2, "division by zero"),
    ("#define F(a, b) a\nout[0] = F(1);", 2, "takes 2 arguments"),
    # Metal 4's closed library: named as such, with the construct to use instead
    ("out[0] = 1.0f;\n#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>", 2,
     "Metal Performance Primitives"),
])
def test_preprocessor_errors_name_the_line(src, line, words):
    k = mb.metal_kernel(name="pp_bad", input_names=["x"], output_names=["out"], source=src)
    with pytest.raises(MetalbenchError) as ei:
        k(inputs=[mx.zeros((4,))], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(4,)],
          output_dtypes=[mx.float32], backend="sim")
    assert words in str(ei.value)
    assert f"line {line}" in str(ei.value)


def test_header_macros_reach_the_body_and_errors_keep_body_lines():
    k = mb.metal_kernel(name="hdr_macro", input_names=["x"], output_names=["out"],
                        header="#define TWICE(v) (2 * (v))\n#pragma once\n",
                        source="uint i = thread_position_in_grid.x;\n#pragma unroll\nout[i] = TWICE(x[i]);\n"
                               "out[i] += undefined_thing;")
    x = mx.arange(4, dtype=mx.float32)
    with pytest.raises(MetalbenchError) as ei:
        k(inputs=[x], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
          output_dtypes=[mx.float32], backend="sim")
    assert "undefined_thing" in str(ei.value) and "line 4" in str(ei.value)


@pytest.mark.parametrize("opts,ok", [
    (None, True), ({"math_mode": "safe"}, True), ({"math_mode": "relaxed"}, True), ({"math_mode": "fast"}, True),
    ({"math_mode": "precise"}, False), ({"unknown": "value"}, False), ("fast", False),
])
def test_compile_options_validated_as_mlx(opts, ok):
    def make():
        return mb.metal_kernel(name="opts", input_names=["inp"], output_names=["out"], source="out[0] = inp[0];",
                               compile_options=opts)
    if ok:
        make()
    else:
        with pytest.raises(ValueError):
            make()


def test_static_assert_and_barrier_flags():
    from metalbench import ir
    from metalbench import types as T
    from metalbench.frontend.msl import translate_kernel
    body = ("static_assert(N % 4 == 0, \"N\");\n"
            "threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);\n"
            "threadgroup_barrier(mem_flags::mem_none);\nout[0] = 1;")
    k = translate_kernel("b", body, "static_assert(sizeof(float) == 4);", inputs=[],
                         outputs=[("out", T.float32, 1)], template=[("N", 8)])
    assert [s.flags for s in k.body if isinstance(s, ir.Barrier)] == [("mem_device", "mem_threadgroup"),
                                                                     ("mem_none",)]
    with pytest.raises(MetalbenchError) as ei:
        translate_kernel("b", body, inputs=[], outputs=[("out", T.float32, 1)], template=[("N", 6)])
    assert "static_assert failed" in str(ei.value) and "line 1" in str(ei.value)


def test_if_on_a_template_parameter_warns_with_its_line():
    from metalbench.frontend.msl.preprocess import MacroWarning
    k = mb.metal_kernel(name="tmpl_if", input_names=["x"], output_names=["out"],
                        source="uint i = thread_position_in_grid.x;\nout[i] = 1.0f;\n#if D > 2\nout[i] = 2.0f;\n#endif")
    with pytest.warns(MacroWarning, match="line 3: 'D' in #if is a template parameter"):
        (out,) = k(inputs=[mx.zeros((4,))], template=[("D", 4)], grid=(4, 1, 1), threadgroup=(4, 1, 1),
                   output_shapes=[(4,)], output_dtypes=[mx.float32], backend="sim")
    assert np.array(out).tolist() == [1.0] * 4          # D reads as 0: the branch is not compiled
