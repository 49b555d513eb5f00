"""The simulator on kernels written in the Python DSL (complements the zoo)."""
import ml_dtypes
import numpy as np
import pytest

import metalbench as mb
from metalbench.dsl import *  # noqa: F401,F403
from metalbench.errors import KernelCheckError
from metalbench.runtime import to_numpy

RNG = np.random.default_rng(7)


@mb.func
def first_negative(x, start, n):
    for j in range(n):
        if x[start + j] < 0.0:
            return j
    return n


@mb.kernel
def find_neg(x, out: mb.Out(shape=lambda x, **_: (x.size // 8,), dtype=mb.int32)):
    i = thread_position_in_grid.x
    if i >= x.size // 8:
        return
    out[i] = first_negative(x, i * 8, 8)


def test_device_function_early_return_and_kernel_return():
    x = RNG.standard_normal(8 * 300).astype(np.float32) + 1.0
    got = to_numpy(find_neg(x, grid=310, threadgroup=64, backend="sim"))
    v = x.reshape(300, 8) < 0
    np.testing.assert_array_equal(got, np.where(v.any(1), v.argmax(1), 8))


@mb.kernel
def local_scan(x, out: mb.Out):
    i = thread_position_in_grid.x
    buf = local_array((4,), float32)
    for j in range(4):
        buf[j] = x[i] * float32(j + 1)
    s = 0.0
    k = 0
    while k < 4:
        if buf[k] > 3.0:
            break
        s += buf[k]
        k += 1
    out[i] = s


def test_local_array_while_break():
    x = RNG.uniform(0, 2, 500).astype(np.float32)
    got = to_numpy(local_scan(x, grid=500, threadgroup=128, backend="sim"))
    want = []
    for v in x:
        s = np.float32(0)
        for j in range(4):
            b = np.float32(v * np.float32(j + 1))
            if b > 3.0:
                break
            s = np.float32(s + b)
        want.append(s)
    np.testing.assert_allclose(got, np.array(want, np.float32), rtol=1e-6)


@mb.kernel
def half_math(x, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = x[i] * x[i] + x[i]


@pytest.mark.parametrize("dt", [np.float16, ml_dtypes.bfloat16])
def test_half_and_bfloat_round_per_op(dt):
    x = RNG.standard_normal(256).astype(np.float32).astype(dt)
    got = to_numpy(half_math(x, grid=256, threadgroup=64, backend="sim"))
    f = x.astype(np.float32)
    want = ((f * f).astype(dt).astype(np.float32) + f).astype(dt)
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


@mb.kernel
def shifted(x, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = x[i + 1] if i + 1 < x.size else 0.0


@mb.kernel
def shifted_bad(x, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = x[i + 1]


def test_lazy_conditional_and_checked_oob_points_at_line():
    x = RNG.standard_normal(100).astype(np.float32)
    got = to_numpy(shifted(x, grid=100, threadgroup=32, backend="sim", checked=True))
    np.testing.assert_array_equal(got, np.append(x[1:], 0))
    with pytest.raises(KernelCheckError) as e:
        shifted_bad(x, grid=100, threadgroup=32, backend="sim", checked=True)
    assert "out-of-bounds" in str(e.value) and "x[i + 1]" in str(e.value)


@mb.kernel
def wrap(a, b, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = (a[i] - b[i]) // uint32(3)


def test_unsigned_wraparound():
    a = RNG.integers(0, 2**32, 300, dtype=np.uint32)
    b = RNG.integers(0, 2**32, 300, dtype=np.uint32)
    got = to_numpy(wrap(a, b, grid=300, threadgroup=64, backend="sim"))
    np.testing.assert_array_equal(got, (a - b) // np.uint32(3))
