"""Tiny atomic outputs on cuda: allocated past MLX's small managed pool, sliced back.

MLX's CUDA allocator serves allocations of at most 8 bytes from a pool of managed memory
the GPU reaches in host memory; atomics into a one-element output there cost 35 ms a launch
at 1M threads on the H200 (41 us padded). metalbench asks MLX for a longer output and hands
back a view of the first elements. These tests run the whole host side through the
simulator standing in for MLX's cuda_kernel (tests/simcuda.py) and compare with NumPy.
"""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench import protocol
from metalbench.dsl import atomic_add, thread_position_in_grid

RNG = np.random.default_rng(1810)


@pytest.fixture
def asked(monkeypatch):
    """simcuda installed; yields the output shapes each MLX kernel call was asked for."""
    import simcuda
    from metalbench.numba_compat import host
    simcuda.install(monkeypatch)
    monkeypatch.delenv("METALBENCH_BACKEND", raising=False)
    host.set_backend(None)
    shapes = []
    real = protocol.Specialization.mlx_kernel

    def spy(self, *a, **kw):
        k = real(self, *a, **kw)

        def call(**kwargs):
            shapes.append([tuple(s) for s in kwargs["output_shapes"]])
            return k(**kwargs)
        return call
    monkeypatch.setattr(protocol.Specialization, "mlx_kernel", spy)
    yield shapes
    host.set_backend(None)


COUNT = """
uint i = thread_position_in_grid.x;
if (i < x_shape[0] && x[i] > 0.5f) { atomic_fetch_add_explicit(&n[0], 1, memory_order_relaxed); }
if (i < x_shape[0]) { atomic_store_explicit(&out[i], 2.0f * x[i], memory_order_relaxed); }
"""


@pytest.mark.parametrize("shape", [(1,), (2,), ()])
def test_msl_atomic_count_into_a_tiny_output(asked, shape):
    k = mb.metal_kernel("count_big", ["x"], ["n", "out"], COUNT, atomic_outputs=True)
    for size in (64, 1000, 1000):                # the second call of a key takes the thin path
        x = mx.array(RNG.random(size).astype(np.float32))
        n, out = k(inputs=[x], output_shapes=[shape, (size,)], output_dtypes=[mx.int32, mx.float32],
                   grid=(size, 1, 1), threadgroup=(64, 1, 1), init_value=0, backend="cuda")
        xs = np.asarray(x)
        assert n.shape == shape and np.asarray(n).reshape(-1)[0] == int((xs > 0.5).sum())
        if shape == (2,):
            assert np.asarray(n)[1] == 0
        np.testing.assert_array_equal(np.asarray(out), 2 * xs)
        # the tiny atomic output was asked for past 8 bytes; the plain one as it is
        assert asked[-1][0][0] * 4 > 8 and asked[-1][1] == (size,)


def test_dsl_atomic_sum_into_one_float(asked):
    @mb.kernel
    def total(x, s: mb.Out(shape=(1,), dtype=mb.float32)):
        i = thread_position_in_grid.x
        if i < x.size:
            atomic_add(s, 0, x[i])
    for _ in range(3):
        x = RNG.standard_normal(512).astype(np.float32)
        got = total(mx.array(x), grid=512, threadgroup=128, init_value=0, backend="cuda")
        assert got.shape == (1,)
        np.testing.assert_allclose(np.asarray(got), [x.sum()], rtol=1e-4, atol=1e-4)
    assert asked[-1] == [(3,)]


def test_cuda_jit_counter_in_a_one_element_device_array(asked):
    from metalbench import cuda

    @cuda.jit
    def count(x, thr, c):
        i = cuda.grid(1)
        if i < x.size and x[i] > thr:
            cuda.atomic.add(c, 0, 1)
    x = RNG.random(4096).astype(np.float32)
    dx = cuda.to_device(x)
    c = cuda.to_device(np.array([5], np.int32))       # counts on from 5, as Numba's would
    for thr in (0.5, 0.5, 0.9, 0.5):
        count[16, 256](dx, np.float32(thr), c)
    want = 5 + 3 * int((x > 0.5).sum()) + int((x > 0.9).sum())
    assert c.copy_to_host().tolist() == [want]
    assert any(s and s[0][0] * 4 > 8 for s in asked)


def test_a_tiny_output_written_by_stores_is_not_padded(asked):
    k = mb.metal_kernel("first_only", ["x"], ["y"], "if (thread_position_in_grid.x == 0) { y[0] = x[0] + 1.0f; }")
    x = mx.array(np.arange(8, dtype=np.float32))
    for _ in range(2):
        y, = k(inputs=[x], output_shapes=[(1,)], output_dtypes=[mx.float32], grid=(8, 1, 1),
               threadgroup=(8, 1, 1), backend="cuda")
        assert y.tolist() == [1.0]
    assert asked[-1] == [(1,)]


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1,), ()])
def test_tiny_atomic_outputs_on_the_gpu(shape):
    # the real thing: MLX allocates the padded output, metalbench slices it back; the count
    # and the sum agree with NumPy, every launch, also inside mx.compile
    from metalbench import cuda
    k = mb.metal_kernel("count_big_gpu", ["x"], ["n", "out"], COUNT, atomic_outputs=True)
    x = mx.array(RNG.random(1 << 20).astype(np.float32))

    def f(x):
        return k(inputs=[x], output_shapes=[shape, x.shape], output_dtypes=[mx.int32, mx.float32],
                 grid=(x.shape[0], 1, 1), threadgroup=(256, 1, 1), init_value=0, backend="cuda")
    for fn in (f, f, mx.compile(f)):
        n, out = fn(x)
        assert n.shape == shape and int(np.asarray(n).reshape(-1)[0]) == int((np.asarray(x) > 0.5).sum())
        np.testing.assert_array_equal(np.asarray(out), 2 * np.asarray(x))

    @cuda.jit
    def count(x, c):
        i = cuda.grid(1)
        if i < x.size and x[i] > 0.5:
            cuda.atomic.add(c, 0, 1)
    dx, c = cuda.to_device(np.asarray(x)), cuda.to_device(np.zeros(1, np.int32))
    for _ in range(3):
        count[4096, 256](dx, c)
    assert c.copy_to_host().tolist() == [3 * int((np.asarray(x) > 0.5).sum())]
