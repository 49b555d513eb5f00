"""Compile-time structure in the DSL: tuple constexprs (static indexing, ``for w in W``,
``len``), ``static_range`` unrolling, lists where tuples go, names computed from
constexprs as array sizes, dtype constexprs as casts, infinities -- each against NumPy
on the simulator."""
from __future__ import annotations

import math

import numpy as np
import pytest

import metalbench as mb
from metalbench import ir
from metalbench.dsl import *  # noqa: F401,F403
from metalbench.errors import KernelSyntaxError, KernelTypeError

RNG = np.random.default_rng(7)


def _x(n=64, dtype=np.float32):
    return RNG.standard_normal(n).astype(dtype)


@mb.kernel
def fir(x, out: mb.Out, W: mb.constexpr = (0.25, 0.5, 0.25)):
    i = thread_position_in_grid.x
    acc = 0.0
    for k in static_range(len(W)):
        j = i + k
        if j < x.size:
            acc += W[k] * x[j]
    out[i] = acc


def _fir_ref(x, w):
    xp = np.concatenate([x, np.zeros(len(w), x.dtype)])
    return sum(np.float32(wk) * xp[k:k + x.size] for k, wk in enumerate(w)).astype(np.float32)


@pytest.mark.parametrize("w", [(0.25, 0.5, 0.25), (1.0,), [2.0, -1.0, 0.5, 3.0], (1, 2, 3, 4, 5)])
def test_tuple_constexpr_with_static_range(w):
    x = _x()
    got = np.asarray(fir(x, grid=x.size, threadgroup=32, backend="sim", W=w))
    np.testing.assert_allclose(got, _fir_ref(x, w), rtol=1e-6, atol=1e-6)


def test_static_range_unrolls_the_loop_in_the_ir():
    x = _x()
    kir = fir.ir(x, W=(1.0, 2.0))
    assert not any(isinstance(n, ir.For) for n in ir.walk(kir.body))
    assert "2.0" in fir.source(x, W=(1.0, 2.0), backend="metal")


@mb.kernel
def weighted(x, out: mb.Out, W: mb.constexpr = (1, 2, 4), S: mb.constexpr = (10, 20, 40)):
    i = thread_position_in_grid.x
    acc = 0.0
    for w in W:                       # a tuple constexpr iterated directly
        acc += w * x[i]
    for k, (w, s) in enumerate(zip(W, S)):
        acc += k * w * s
    out[i] = acc + W[-1] + W[1:][0]


def test_for_over_tuple_enumerate_and_zip():
    x = _x(32)
    got = np.asarray(weighted(x, grid=32, threadgroup=32, backend="sim"))
    want = 7 * x + (0 * 10 + 1 * 2 * 20 + 2 * 4 * 40) + 4 + 2
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-6)
    got = np.asarray(weighted(x, grid=32, threadgroup=32, backend="sim", W=[3, 5], S=[1, 1]))
    np.testing.assert_allclose(got, (8 * x + 5 + 5 + 5).astype(np.float32), rtol=1e-6)


@mb.kernel
def block_sums(x, out: mb.Out(shape=lambda x, BM: (x.size // BM,)), BM: mb.constexpr = 64, NSG: mb.constexpr = 2):
    RPS = BM // NSG                   # rows per simdgroup: a compile-time int
    tile = threadgroup_array(RPS * NSG, float32)
    part = threadgroup_array(NSG, float32)
    t = thread_position_in_threadgroup.x
    g = threadgroup_position_in_grid.x
    tile[t] = x[g * BM + t]
    threadgroup_barrier()
    if t < NSG:
        s = 0.0
        for k in range(RPS):
            s += tile[t * RPS + k]
        part[t] = s
    threadgroup_barrier()
    if t == 0:
        total = 0.0
        for k in static_range(NSG):
            total += part[k]
        out[g] = total


@pytest.mark.parametrize("bm,nsg", [(64, 2), (32, 4), (128, 1)])
def test_names_computed_from_constexprs_size_arrays(bm, nsg):
    x = _x(512)
    got = np.asarray(block_sums(x, grid=512, threadgroup=bm, backend="sim", checked=True, BM=bm, NSG=nsg))
    np.testing.assert_allclose(got, x.reshape(-1, bm).sum(1), rtol=1e-5, atol=1e-5)
    kir = block_sums.ir(x, BM=bm, NSG=nsg)
    assert ir.threadgroup_bytes(kir) == 4 * (bm + nsg)


@mb.kernel
def cast_to(x, out: mb.Out, DT: mb.constexpr = float16):
    i = thread_position_in_grid.x
    out[i] = float32(DT(x[i] * 3.0)) + min(0.0, float("inf")) - float32(-math.inf < x[i]) + 1.0


@pytest.mark.parametrize("dt,npdt", [(float16, np.float16), (int32, np.int32), (bfloat16, None), (uint8, np.uint8)])
def test_a_dtype_constexpr_is_callable_as_a_cast(dt, npdt):
    x = np.abs(_x(64)) * 10
    got = np.asarray(cast_to(x, grid=64, threadgroup=64, backend="sim", DT=dt))
    if npdt is None:          # bfloat16: round to nearest even on the top 16 bits
        b = (x * 3).astype(np.float32).view(np.uint32)
        b = ((b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
        want = b.view(np.float32)
    else:
        want = (x * np.float32(3)).astype(npdt).astype(np.float32)
    np.testing.assert_array_equal(got, want)


def test_infinities_inside_kernels():
    @mb.kernel
    def clamp_inf(x, out: mb.Out):
        i = thread_position_in_grid.x
        lo = -math.inf
        hi = float("inf")
        m = max(lo, x[i])
        out[i] = min(hi, m) if x[i] > 0 else lo

    x = _x(32)
    got = np.asarray(clamp_inf(x, grid=32, threadgroup=32, backend="sim"))
    np.testing.assert_array_equal(got, np.where(x > 0, x, -np.inf).astype(np.float32))


def test_static_range_bounds_from_constexprs_and_steps():
    @mb.kernel
    def stepped(out: mb.Out(shape=(16,), dtype=mb.int32), A: mb.constexpr = 3, B: mb.constexpr = 15):
        i = thread_position_in_grid.x
        acc = 0
        for k in static_range(A, B, 4):
            acc += k
        for k in static_range(B, A, -5):
            acc += 100 * k
        out[i] = acc + i

    got = np.asarray(stepped(grid=16, threadgroup=16, backend="sim"))
    want = sum(range(3, 15, 4)) + 100 * sum(range(15, 3, -5)) + np.arange(16)
    np.testing.assert_array_equal(got, want)


def test_a_name_assigned_twice_is_a_variable_not_a_constant():
    @mb.kernel
    def twice(x, out: mb.Out):
        i = thread_position_in_grid.x
        n = 2
        if x[i] > 0:
            n = 3
        out[i] = n

    x = _x(32)
    np.testing.assert_array_equal(np.asarray(twice(x, grid=32, threadgroup=32, backend="sim")),
                                  np.where(x > 0, 3, 2).astype(np.float32))


def test_static_loop_variables_are_compile_time_inside_nested_loops():
    @mb.kernel
    def nested(out: mb.Out(shape=(4, 3), dtype=mb.int32), R: mb.constexpr = (4, 3)):
        i = thread_position_in_grid.x
        if i == 0:
            for r in static_range(R[0]):
                row = local_array(R[1], int32)      # sized by a tuple constexpr's element
                for c in static_range(R[1]):
                    row[c] = r * 10 + c
                for c in range(R[1]):
                    out[r, c] = row[c]

    got = np.asarray(nested(grid=1, threadgroup=1, backend="sim"))
    np.testing.assert_array_equal(got, np.arange(4)[:, None] * 10 + np.arange(3))


# ----------------------------------------------------------------------------- errors

def test_static_range_of_a_run_time_value_is_an_error_at_its_line():
    @mb.kernel
    def bad(x, n: int, out: mb.Out):
        i = thread_position_in_grid.x
        for k in static_range(n):
            out[i] = k

    with pytest.raises(KernelTypeError, match="static_range.. needs compile-time integers; n is not one") as ei:
        bad(_x(), 3, grid=64, backend="sim")
    assert "for k in static_range(n)" in str(ei.value)


def test_break_in_an_unrolled_loop_is_an_error():
    @mb.kernel
    def bad(x, out: mb.Out, W: mb.constexpr = (1, 2)):
        i = thread_position_in_grid.x
        for w in W:
            if x[i] > w:
                break
            out[i] = w

    with pytest.raises(KernelSyntaxError, match="'break' is not supported in a static_range or tuple loop"):
        bad(_x(), grid=64, backend="sim")


def test_a_tuple_index_out_of_range_is_named():
    @mb.kernel
    def bad(x, out: mb.Out, W: mb.constexpr = (1, 2)):
        i = thread_position_in_grid.x
        out[i] = W[2]

    with pytest.raises(KernelTypeError, match="index 2 is out of range for a tuple of 2"):
        bad(_x(), grid=64, backend="sim")


def test_a_runtime_tuple_index_is_an_error():
    @mb.kernel
    def bad(x, out: mb.Out, W: mb.constexpr = (1, 2)):
        i = thread_position_in_grid.x
        out[i] = W[i % 2]

    with pytest.raises(KernelTypeError, match="indexed by a compile-time integer"):
        bad(_x(), grid=64, backend="sim")
