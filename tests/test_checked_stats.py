"""Memory-access statistics of checked simulator launches (SimStats)."""
import mlx.core as mx
import numpy as np

import metalbench as mb
from metalbench import cuda
from metalbench.dsl import *  # noqa: F401,F403
from metalbench.mlx_compat import metal_kernel
from metalbench.sim.stats import SimStats

RNG = np.random.default_rng(5)
K = 5


@mb.kernel
def conv_naive(a, out: mb.Out):
    i = thread_position_in_grid.x
    if i < out.size:
        acc = 0.0
        for j in range(K):
            if i + j < a.size:
                acc += a[i + j]
        out[i] = acc


@mb.kernel
def conv_shared(a, out: mb.Out, TPB: mb.constexpr = 64):
    sh = threadgroup_array(TPB + K - 1, float32)
    i = thread_position_in_grid.x
    l = thread_position_in_threadgroup.x
    sh[l] = a[i] if i < a.size else 0.0
    if l < K - 1:
        j = i + TPB
        sh[l + TPB] = a[j] if j < a.size else 0.0
    threadgroup_barrier(mem_threadgroup)
    acc = 0.0
    for j in range(K):
        acc += sh[l + j]
    if i < out.size:
        out[i] = acc


@mb.kernel
def strided(a, out: mb.Out(shape=lambda a, **_: (a.size // 32,), dtype=mb.float32)):
    i = thread_position_in_grid.x
    out[i] = a[i * 32]


def test_naive_conv_reads_k_per_thread():
    a = RNG.standard_normal(256).astype(np.float32)
    got = np.array(conv_naive(a, grid=256, threadgroup=64, backend="sim", checked=True))
    want = np.array([a[i:i + K].sum() for i in range(256)], np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    s = conv_naive.last_stats
    assert isinstance(s, SimStats) and s.checked
    assert s.max_device_reads_per_thread == K and s.max_device_writes_per_thread == 1
    assert s.device_reads == sum(min(K, 256 - i) for i in range(256)) and s.device_writes == 256
    assert s.threadgroup_reads == 0 and s.score == (K, 1)
    assert s.coalesced == 1.0


def test_shared_memory_conv_reads_at_most_two_per_thread():
    a = RNG.standard_normal(256).astype(np.float32)
    got = np.array(conv_shared(a, grid=256, threadgroup=64, backend="sim", checked=True))
    want = np.array([a[i:i + K].sum() for i in range(256)], np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    s = conv_shared.last_stats
    assert s.max_device_reads_per_thread == 2 and s.max_device_writes_per_thread == 1
    assert s.max_threadgroup_reads_per_thread == K and s.max_threadgroup_writes_per_thread == 2
    assert s.threadgroup_reads == 256 * K and s.threadgroup_writes == 256 + 4 * (K - 1)


def test_coalescing_share():
    a = RNG.standard_normal(32 * 128).astype(np.float32)
    strided(a, grid=128, threadgroup=64, backend="sim", checked=True)
    s = strided.last_stats
    assert s.device_reads == 128 and s.device_writes == 128
    assert s.coalesced == 0.5  # the writes are contiguous, the strided reads are not
    assert "coalesced 50%" in repr(s) and "50%" in s.to_html() and s._repr_html_() == s.to_html()


def test_unchecked_launch_has_no_access_counts(monkeypatch):
    monkeypatch.delenv("METALBENCH_CHECKED", raising=False)
    a = RNG.standard_normal(256).astype(np.float32)
    conv_naive(a, grid=256, threadgroup=64, backend="sim", checked=False)
    s = conv_naive.last_stats
    assert s.device_reads is None and s.coalesced is None and "checked=True" in repr(s)
    assert "checked=True" in s.to_html()


def test_metal_kernel_and_numba_keep_last_stats():
    k = metal_kernel(name="add", input_names=["a", "b"], output_names=["out"],
                     source="uint i = thread_position_in_grid.x;\nout[i] = a[i] + b[i];\n")
    a = mx.array(RNG.standard_normal(100).astype(np.float32))
    k(inputs=[a, a], grid=(100, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(100,)],
      output_dtypes=[mx.float32], backend="sim", checked=True)
    s = k.last_stats
    assert (s.device_reads, s.device_writes, s.score) == (200, 100, (2, 1))
    assert s.coalesced == 1.0  # partial last simdgroup: its active lanes are still one run

    @cuda.jit(backend="sim", checked=True)
    def add(x, y, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] + y[i]

    x = np.arange(50, dtype=np.float32)
    out = np.zeros(50, np.float32)
    add[2, 32](x, x, out)
    np.testing.assert_array_equal(out, 2 * x)
    assert add.last_stats.device_reads == 100 and add.last_stats.max_device_reads_per_thread == 2


def test_numba_race_is_reported():
    import pytest
    from metalbench.errors import KernelCheckError

    @cuda.jit(backend="sim", checked=True)
    def total(x, out):
        i = cuda.grid(1)
        if i < x.size:
            out[0] += x[i]

    with pytest.raises(KernelCheckError, match="data race") as e:
        total[2, 32](np.ones(64, np.float32), np.zeros(1, np.float32))
    assert "out[0] += x[i]" in str(e.value)


def test_coalescing_with_few_active_lanes():
    @mb.kernel
    def firsts(x, out: mb.Out(shape=lambda x, **_: (x.size // 64,), dtype=mb.float32)):
        i = thread_position_in_grid.x
        if thread_position_in_threadgroup.x == 0:
            out[threadgroup_position_in_grid.x] = x[i]

    @mb.kernel
    def pairs(x, out: mb.Out):
        i = thread_position_in_grid.x
        if i % 64 < 2:
            out[i] = x[(i * 7) % x.size]

    x = RNG.standard_normal(4096).astype(np.float32)
    firsts(x, grid=4096, threadgroup=64, backend="sim", checked=True)
    s = firsts.last_stats
    assert s.device_reads == 64 and s.device_writes == 64 and s.coalesced == 1.0  # one lane each
    pairs(x, grid=4096, threadgroup=64, backend="sim", checked=True)
    s = pairs.last_stats
    assert s.device_accesses == 256 and s.coalesced == 0.5  # writes i, i+1; reads 7 apart
