"""Buffers of 2**31 elements or more (issue 19): their shapes are int64 and index arithmetic
on them is redone in 64 bits, so x[i * n + j] does not wrap; on the simulator against NumPy
with a real 2**31 + 64-element array (calloc'd: only the touched pages exist) and, for the
index rules, with the threshold lowered; the printed MSL/CUDA cast the shapes."""
from __future__ import annotations

import numpy as np
import pytest

import metalbench as mb
import importlib
import inspect
from metalbench.dsl import *  # noqa: F401,F403

RNG = np.random.default_rng(2 ** 31)


@mb.kernel
def tail2d(x, out: mb.Out(shape=64, dtype=mb.int32)):
    i = thread_position_in_grid.x
    r = x.shape[0] - 1
    out[i] = int32(x[r, x.shape[1] - 64 + i]) + int32(x.size % 1000)


@mb.kernel
def tail1d(x, out: mb.Out(shape=64, dtype=mb.int32)):
    i = thread_position_in_grid.x
    out[i] = int32(x[(x.size // 64 - 1) * 64 + i])


def test_a_real_array_of_more_than_2_31_elements():
    n1 = 2 ** 16 + 1
    x = np.zeros((n1, 2 ** 15), np.int8)       # 2**31 + 2**15 elements, pages untouched
    x[-1, -64:] = np.arange(64) - 32
    got = np.asarray(tail2d(x, grid=64, threadgroup=64, backend="sim"))
    np.testing.assert_array_equal(got, np.arange(64) - 32 + (x.size % 1000))
    flat = x.reshape(-1)
    got = np.asarray(tail1d(flat, grid=64, threadgroup=64, backend="sim"))
    np.testing.assert_array_equal(got, flat[(flat.size // 64 - 1) * 64:][:64])


@mb.kernel
def rows(x, out: mb.Out(shape=lambda x: (x.shape[0],), dtype=mb.float32)):
    r = thread_position_in_grid.x
    n = uint32(x.shape[1])
    out[r] = x[r * n + n - 1] + x[r, 0]


def test_index_arithmetic_is_widened(monkeypatch):
    x = RNG.standard_normal((6, 20)).astype(np.float32)
    small = np.asarray(rows(x.reshape(-1).reshape(6, 20), grid=6, threadgroup=6, backend="sim"))
    monkeypatch.setattr(importlib.import_module("metalbench.kernel"), "WIDE", 64)                  # every array of 64+ elements is "wide"
    r = rows.specialize(x).rendered("metal")
    assert "static_cast<long>(x_shape[1])" in r.body
    assert "static_cast<long>(r)" in r.body           # r * n + n - 1 redone in 64 bits
    got = np.asarray(rows(x, grid=6, threadgroup=6, backend="sim", checked=True))
    np.testing.assert_array_equal(got, x[:, -1] + x[:, 0])
    np.testing.assert_array_equal(got, small)


@mb.kernel
def fill_tail(x, out: mb.Out(shape=lambda x: x.shape, dtype=mb.int8)):
    i = thread_position_in_grid.x
    out[x.size - 1 - i] = int8(i)


def test_dimensions_mlx_cannot_hold_are_launch_errors():
    x = np.zeros(2 ** 31 + 3, np.int8)          # a NumPy input may have one (the simulator reads it)
    got = np.asarray(tail1d(x, grid=64, threadgroup=64, backend="sim"))
    np.testing.assert_array_equal(got, 0)
    with pytest.raises(mb.KernelLaunchError, match=r"output 'out' would have a dimension of 2147483651") as ei:
        fill_tail(x, grid=8, threadgroup=8, backend="sim")
    assert "shape=(n // 65536, 65536)" in str(ei.value)
    b = tail1d.bind(x, grid=8, backend="sim")
    kernel_mod = importlib.import_module("metalbench.kernel")
    with pytest.raises(mb.KernelLaunchError, match=r"array 'x' has a dimension of 2147483651 elements") as ei:
        kernel_mod._check_gpu_extents(b.values, b.specs, b.outputs)      # what a GPU launch checks
    assert "reshape" in str(ei.value)


@mb.kernel
def precomputed(x, out: mb.Out(shape=lambda x: (x.shape[0],), dtype=mb.float32), WIDE64: mb.constexpr = 0):
    r = thread_position_in_grid.x
    if WIDE64:
        j = int64(r) * 20 + 19
    else:
        j = r * 20 + 19
    out[r] = x[j]


def test_an_index_computed_in_32_bits_before_is_named(monkeypatch):
    x = RNG.standard_normal((6, 20)).astype(np.float32)
    monkeypatch.setattr(importlib.import_module("metalbench.kernel"), "WIDE", 64)
    lines, first = inspect.getsourcelines(precomputed.fn)
    line = first + next(k for k, t in enumerate(lines) if "j = r * 20 + 19" in t)
    with pytest.raises(mb.KernelTypeError, match=rf"j indexes 'x', which has 2\*\*31 elements or more, but line "
                                                 rf"{line} computes it in 32 bits \(uint32\)") as ei:
        precomputed(x, grid=6, threadgroup=6, backend="sim")
    assert "out[r] = x[j]" in str(ei.value) and "int64(" in str(ei.value)
    got = np.asarray(precomputed(x, WIDE64=1, grid=6, threadgroup=6, backend="sim"))
    np.testing.assert_array_equal(got, x[:, 19])


@pytest.mark.gpu
def test_a_wide_array_on_the_gpu():
    import mlx.core as mx
    n1 = 2 ** 16 + 1
    x = mx.zeros((n1, 2 ** 15), dtype=mx.int8)
    x[-1, -64:] = mx.arange(64, dtype=mx.int8) - 32
    got = np.asarray(tail2d(x, grid=64, threadgroup=64))
    np.testing.assert_array_equal(got, np.arange(64) - 32 + (n1 * 2 ** 15) % 1000)
