"""metalbench.scalar: the one table of C/MSL scalar semantics, against hand-checked C
values, and folded vs run-time values of the cases where they used to disagree."""
import math

import ml_dtypes
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench import scalar as S
from metalbench import types as T

INTS = [T.int8, T.uint8, T.int16, T.uint16, T.int32, T.uint32, T.int64, T.uint64]
FLOATS = [T.float16, T.bfloat16, T.float32]


def msl(expr: str, out_dtype, inputs=()):
    """``out[0] = expr;`` run on the simulator; inputs are named x0, x1, ... (NumPy)."""
    names = [f"x{i}" for i in range(len(inputs))]
    k = mb.metal_kernel(name="e", input_names=names, output_names=["out"],
                        source=f"out[0] = {expr};")
    (o,) = k(inputs=[mx.array(a) for a in inputs], grid=(1, 1, 1), threadgroup=(1, 1, 1),
             output_shapes=[(1,)], output_dtypes=[out_dtype], backend="sim")
    return np.array(o)[0]


# ----------------------------------------------------------------------------- folded == run time

@pytest.mark.parametrize("folded, runtime, inputs, dtype, want", [
    ("static_cast<int>(2147483648.0f)", "static_cast<int>(x0[0])", [np.float32([2147483648.0])],
     mx.int32, 2147483647),
    ("uchar(300.5f)", "uchar(x0[0])", [np.float32([300.5])], mx.uint8, 255),
    ("uchar(-3.5f)", "(uchar)x0[0]", [np.float32([-3.5])], mx.uint8, 0),
    ("int(NAN)", "int(x0[0])", [np.float32([np.nan])], mx.int32, 0),
    ("long(1e30f)", "long(x0[0])", [np.float32([1e30])], mx.int64, 2**63 - 1),
    ("long(-1e30f)", "long(x0[0])", [np.float32([-1e30])], mx.int64, -2**63),
    ("ulong(1e30f)", "ulong(x0[0])", [np.float32([1e30])], mx.uint64, 2**64 - 1),
    ("int(300) / int(0)", "x0[0] / x1[0]", [np.int32([300]), np.int32([0])], mx.int32, 0),
    ("(-2147483647 - 1) / -1", "x0[0] / x1[0]", [np.int32([-2**31]), np.int32([-1])], mx.int32, -2**31),
    ("1u << 33", "x0[0] << x1[0]", [np.uint32([1]), np.uint32([33])], mx.uint32, 2),
    ("-7 % 2", "x0[0] % x1[0]", [np.int32([-7]), np.int32([2])], mx.int32, -1),
])
def test_folded_equals_runtime(folded, runtime, inputs, dtype, want):
    assert int(msl(folded, dtype)) == want
    assert int(msl(runtime, dtype, inputs)) == want


def test_c_style_cast_of_a_parenthesised_expression():
    assert int(msl("(uchar)(x0[0])", mx.uint8, [np.float32([300.5])])) == 255


def test_functional_cast_to_long_inside_parentheses():
    assert int(msl("(long(x0[0]) + 1)", mx.int64, [np.float32([2.5])])) == 3


def test_nan_divided_by_zero_is_nan_folded_and_at_run_time():
    assert np.isnan(msl("NAN / 0.0f", mx.float32))
    assert np.isnan(msl("x0[0] / x1[0]", mx.float32, [np.float32([np.nan]), np.float32([0.0])]))
    assert msl("-1.0f / 0.0f", mx.float32) == -np.inf
    assert S.fold_binop("/", math.nan, 0.0, T.float32) != S.fold_binop("/", math.nan, 0.0, T.float32)


# ----------------------------------------------------------------------------- the table

def test_integer_division_truncates_and_zero_divisor_gives_zero():
    a = np.array([-7, 7, -7, 7, 5, -2**31], np.int32)
    b = np.array([2, -2, -2, 0, 0, -1], np.int32)
    assert S.binop("/", a, b, T.int32).tolist() == [-3, -3, 3, 0, 0, -2**31]
    assert S.binop("%", a, b, T.int32).tolist() == [-1, 1, -1, 0, 0, 0]
    u = np.array([7, 2**32 - 1, 9], np.uint32)
    assert S.binop("/", u, np.uint32(2), T.uint32).tolist() == [3, 2**31 - 1, 4]
    assert S.binop("%", u, np.array([0, 10, 4], np.uint32), T.uint32).tolist() == [0, 5, 1]
    # scalars in, scalars out
    r = S.binop("/", np.int64(-9), np.int64(4), T.int64)
    assert isinstance(r, np.int64) and r == -2


@pytest.mark.parametrize("t", INTS)
def test_shift_count_is_masked_to_the_width(t):
    one = t.np.type(1)
    for count in (0, 1, t.bits - 1, t.bits, t.bits + 3, 2 * t.bits + 1):
        want = (1 << (count % t.bits)) & ((1 << t.bits) - 1)
        got = S.binop("<<", one, np.uint32(count), t)
        assert int(S.value(int(got), T.uint64)) & ((1 << t.bits) - 1) == want
    if t.is_signed:
        assert int(S.binop(">>", t.np.type(-8), np.int32(1), t)) == -4       # arithmetic shift
        assert int(S.binop(">>", t.np.type(-1), np.int32(-1), t)) == -1      # count -1 -> bits-1


@pytest.mark.parametrize("t", INTS)
def test_wrap_around(t):
    mx_, mn = np.iinfo(t.np).max, np.iinfo(t.np).min
    assert int(S.binop("+", t.np.type(mx_), t.np.type(1), t)) == mn
    assert int(S.binop("-", t.np.type(mn), t.np.type(1), t)) == mx_
    assert int(S.unop("-", t.np.type(mn), t)) == mn
    assert int(S.unop("~", t.np.type(0), t)) == (-1 if t.is_signed else mx_)


@pytest.mark.parametrize("dst", INTS)
@pytest.mark.parametrize("src", FLOATS + [T.float64])
def test_float_to_int_truncates_and_saturates(src, dst):
    info = np.iinfo(dst.np)
    vals = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.75, -0.75, 2.5, -2.5, 1e30, -1e30,
            float(info.max), float(info.min), float(info.max) + 1.0, float(info.min) - 1.0,
            2.0**31, 2.0**63, 2.0**64, -2.0**63, 2.0**63 - 1024, 65504.0, 3.0e38]
    with np.errstate(over="ignore"):
        x = np.array(vals, np.float64).astype(src.np)
    got = S.cast(x, src, dst)
    assert got.dtype == dst.np
    for v, g in zip(x.astype(np.float64), got.tolist()):
        if np.isnan(v):
            want = 0
        else:
            want = min(max(math.trunc(v), int(info.min)), int(info.max)) if np.isfinite(v) else \
                (int(info.max) if v > 0 else int(info.min))
        assert g == want, (src, dst, v)
    # a scalar in, a scalar out
    assert isinstance(S.cast(x[0], src, dst), np.generic)


def test_int_to_int_wraps_and_to_bool_is_nonzero():
    assert S.cast(np.int32(300), T.int32, T.uint8) == 44
    assert S.cast(np.int64(-1), T.int64, T.uint32) == 2**32 - 1
    assert S.cast(np.array([0.0, -0.0, np.nan, 0.5], np.float32), T.float32, T.bool_).tolist() == \
        [False, False, True, True]


def test_double_to_bfloat_rounds_once():
    # 1 + 2^-8 + 2^-30: rounding through float would tie to even (1.0); once: 1 + 2^-7
    x = np.float64(1 + 2**-8 + 2**-30)
    assert float(S.cast(x, T.float64, T.bfloat16)) == 1 + 2**-7
    xs = np.random.default_rng(1).standard_normal(10000) * np.exp2(np.random.default_rng(2).integers(-140, 128, 10000))
    got = S.cast(xs, T.float64, T.bfloat16).astype(np.float64)
    # the nearest bfloat: no other bfloat neighbour is strictly closer
    up = np.nextafter(got.astype(ml_dtypes.bfloat16), np.array(np.inf, ml_dtypes.bfloat16)).astype(np.float64)
    dn = np.nextafter(got.astype(ml_dtypes.bfloat16), np.array(-np.inf, ml_dtypes.bfloat16)).astype(np.float64)
    err = np.abs(got - xs)
    ok = np.isinf(got) | ((np.abs(up - xs) >= err) & (np.abs(dn - xs) >= err))
    assert ok.all()


def test_int_to_bfloat_rounds_through_float():
    v = np.int64(2**62 + 2**54 + 1)          # float: 2^62 + 2^54 (a tie for bfloat) -> 2^62
    assert float(S.cast(v, T.int64, T.bfloat16)) == float(np.float32(v).astype(ml_dtypes.bfloat16))


def test_python_values_convert_as_c():
    assert S.value(-1, T.uint8) == 255 and S.value(2**64 + 5, T.int32) == 5
    assert S.value(2.9, T.int32) == 2 and S.value(-2.9, T.int32) == -2
    assert S.value(1e10, T.int32) == 2**31 - 1 and S.value(float("nan"), T.int64) == 0
    assert S.fold_cast(2147483648.0, T.int32) == 2**31 - 1
    assert S.fold_cast(300.5, T.uint8) == 255
    assert S.fold_binop("<<", 1, 33, T.uint32) == 2
    assert S.fold_binop("/", 1, 0, T.int32) is None        # stays for the run time (checked mode)
    assert S.fold_binop("<", 1.0, float("nan"), T.float32) is False
    assert S.fold_unop("~", 0, T.uint8) == 255


def test_half_and_bfloat_arithmetic_round_the_exact_result():
    rng = np.random.default_rng(0)
    for t, dt in ((T.float16, np.float16), (T.bfloat16, ml_dtypes.bfloat16)):
        a = rng.standard_normal(2000).astype(dt)
        b = rng.standard_normal(2000).astype(dt)
        for op in ("+", "-", "*", "/"):
            got = S.binop(op, a, b, t)
            want = S.binop(op, a.astype(np.float64), b.astype(np.float64), T.float64)
            assert (got == S.cast(want, T.float64, t)).all(), (t, op)


# ----------------------------------------------------------------------------- the printed CUDA

EDGE_BODY = ("uint i = thread_position_in_grid.x;\n"
             "o[i * 6 + 0] = a[i] << b[i]; o[i * 6 + 1] = a[i] >> b[i]; o[i * 6 + 2] = a[i] / b[i];\n"
             "o[i * 6 + 3] = a[i] % b[i]; o[i * 6 + 4] = int(uchar(f[i])); o[i * 6 + 5] = int(short(f[i]));")
EDGE_A = np.array([1, -7, -2**31, 5, 300, -1], np.int32)
EDGE_B = np.array([33, 2, -1, 0, 32, -1], np.int32)
EDGE_F = np.array([300.5, -3.5, np.nan, 1e10, -40000.0, 255.9], np.float32)


def _edge_want():
    want = []
    for a, b, f in zip(EDGE_A, EDGE_B, EDGE_F):
        want += [S.binop(op, a, b, T.int32) for op in ("<<", ">>", "/", "%")]
        want += [S.cast(S.cast(f, T.float32, T.uint8), T.uint8, T.int32),
                 S.cast(S.cast(f, T.float32, T.int16), T.int16, T.int32)]
    return [int(w) for w in want]


def _edge_run(backend):
    k = mb.metal_kernel(name="edges", input_names=["a", "b", "f"], output_names=["o"], source=EDGE_BODY)
    (o,) = k(inputs=[mx.array(EDGE_A), mx.array(EDGE_B), mx.array(EDGE_F)], grid=(6, 1, 1), threadgroup=(6, 1, 1),
             output_shapes=[(36,)], output_dtypes=[mx.int32], backend=backend)
    return np.array(o).tolist()


def test_edge_cases_on_the_simulator_follow_the_table():
    assert _edge_run("sim") == _edge_want()


def test_printed_cuda_spells_the_table_where_cuda_differs(monkeypatch):
    monkeypatch.setenv("METALBENCH_CUDA_GUARD_READS", "0")     # the reads plain (codegen/cuda_guard.py)
    from metalbench.codegen import cuda
    k = mb.metal_kernel(name="edges", input_names=["a", "b", "f"], output_names=["o"], source=EDGE_BODY)
    body = cuda.render(k.ir([EDGE_A, EDGE_B, EDGE_F], [(36,)], [mx.int32])).body
    assert "a[i] << (b[i] & 31)" in body and "mb_idiv<int32_t>(a[i], b[i])" in body and "mb_imod<int32_t>(a[i], b[i])" in body
    assert "mb_f2narrow<uint8_t>(f[i], 0, 255)" in body and "mb_f2narrow<int16_t>(f[i], -32768, 32767)" in body


@pytest.mark.gpu
def test_edge_cases_on_the_gpu_follow_the_table():
    """Shift counts past the width, division by zero and MIN / -1, narrow float -> int
    conversions: the GPU gives the table's values (through the printer's helpers)."""
    assert _edge_run("cuda") == _edge_want()
