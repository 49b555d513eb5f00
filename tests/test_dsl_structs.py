"""Structs as kernel arguments (issue 19): a NamedTuple, dataclass or plain tuple of arrays
and numbers passed as one argument; fields are used as arrays and scalars (indexing, views,
atomics, device functions, SIMD-group matrix loads), checked against NumPy on the simulator."""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

import metalbench as mb
from metalbench import msl_check
from metalbench.dsl import *  # noqa: F401,F403
from metalbench.errors import KernelLaunchError, KernelTypeError, MetalbenchError

RNG = np.random.default_rng(1919)


class Linear(NamedTuple):
    w: object
    b: object
    scale: float


@dataclasses.dataclass
class Params:
    lin: Linear
    bias: float
    hist: object = None


@mb.func
def dot_row(row, x, n):
    s = 0.0
    for j in range(n):
        s += row[j] * x[j]
    return s


@mb.kernel
def affine(x, p, out: mb.Out(shape=lambda p: (p.w.shape[0],), dtype=mb.float32)):
    i = thread_position_in_grid.x
    out[i] = dot_row(p.w[i], x, p.w.shape[1]) * p.scale + p[1][i]


@pytest.mark.parametrize("rows,cols", [(5, 3), (17, 8)])
def test_named_tuple_of_arrays_and_a_scalar(rows, cols):
    w = RNG.standard_normal((rows, cols)).astype(np.float32)
    b = RNG.standard_normal(rows).astype(np.float32)
    x = RNG.standard_normal(cols).astype(np.float32)
    for scale in (0.5, -3.0):       # a second launch with new values (no stale binding)
        got = np.asarray(affine(x, Linear(w, b, scale), grid=rows, threadgroup=rows, backend="sim", checked=True))
        np.testing.assert_allclose(got, (w @ x) * np.float32(scale) + b, rtol=1e-5, atol=1e-5)


@mb.kernel
def nested(x, q, out: mb.Out):
    i = thread_position_in_grid.x
    v = x[i] * q.lin.scale + q.bias + q.lin.b[i % 4]
    atomic_add(q.hist, i % 3, 1)
    out[i] = v + float(len(q.lin))


def test_nested_dataclass_with_an_atomic_field():
    x = RNG.standard_normal(30).astype(np.float32)
    b = RNG.standard_normal(4).astype(np.float32)
    hist = np.zeros(3, np.int32)
    q = Params(Linear(np.zeros((1, 1), np.float32), b, 2.0), 0.25, hist)
    got = np.asarray(nested(x, q, grid=30, threadgroup=10, backend="sim"))
    np.testing.assert_allclose(got, x * 2 + 0.25 + b[np.arange(30) % 4] + 3, rtol=1e-6)


@mb.kernel
def plain(t, out: mb.Out(shape=(8, 8), dtype=mb.float32), d: mb.Out(shape=8, dtype=mb.float32)):
    i = thread_position_in_grid.x
    m = simdgroup_float8x8()
    simdgroup_load(m, t[0], 8, transpose=True)
    simdgroup_store(m, out, 8)
    if i < 8:
        d[i] = t[0][i * 8 + i] + t[-1]


def test_plain_tuple_with_negative_index_and_matrix_load():
    a = RNG.standard_normal((8, 8)).astype(np.float32)
    got, diag = plain((a.reshape(-1), 1.5), grid=32, threadgroup=32, backend="sim", checked=True)
    np.testing.assert_array_equal(np.asarray(got), a.T)
    np.testing.assert_allclose(np.asarray(diag), np.diag(a) + 1.5, rtol=1e-6)


def test_printed_msl_has_one_parameter_per_field():
    w, b, x = np.ones((4, 3), np.float32), np.ones(4, np.float32), np.ones(3, np.float32)
    r = affine.specialize(x, Linear(w, b, 1.0)).rendered("metal")
    assert "p__w" in r.source and "p__scale" in r.source
    assert msl_check.check(r) == []


@mb.kernel
def whole(x, p, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = dot_row(p, x, 2)


@mb.kernel
def missing(x, p, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = p.bogus[i]


def test_misuse_is_named():
    x = np.ones(4, np.float32)
    with pytest.raises(KernelTypeError, match=r"'p' is a struct argument; use its fields \(p.w, p.b, p.scale\)"):
        whole(x, Linear(x, x, 1.0), grid=4, backend="sim")
    with pytest.raises(MetalbenchError, match="p has no attribute 'bogus'") as ei:
        missing(x, Linear(x, x, 1.0), grid=4, backend="sim")
    assert "out[i] = p.bogus[i]" in str(ei.value)
    with pytest.raises(KernelLaunchError, match="field 'p.b' is a str"):
        missing(x, Linear(x, "no", 1.0), grid=4, backend="sim")


def test_printed_cuda_type_checks():
    from metalbench.codegen import cuda_check
    w, b, x = np.ones((4, 3), np.float32), np.ones(4, np.float32), np.ones(3, np.float32)
    assert cuda_check.check(affine.specialize(x, Linear(w, b, 1.0)).rendered("cuda"), use_nvcc=False) == []


@pytest.mark.gpu
def test_struct_argument_on_the_gpu_equals_the_simulator():
    w = RNG.standard_normal((32, 8)).astype(np.float32)
    b = RNG.standard_normal(32).astype(np.float32)
    x = RNG.standard_normal(8).astype(np.float32)
    p = Linear(w, b, 0.75)
    sim = np.asarray(affine(x, p, grid=32, threadgroup=32, backend="sim"))
    np.testing.assert_allclose(np.asarray(affine(x, p, grid=32, threadgroup=32)), sim, rtol=1e-5, atol=1e-6)
