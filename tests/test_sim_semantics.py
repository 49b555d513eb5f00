"""Out-of-bounds semantics of simulator launches (DESIGN.md, "Semantics contract").

Unchecked, a launch behaves like a GPU: an active thread's read outside its buffer or
array gives 0, its write or atomic outside is dropped (negative indices included: no
NumPy wrap-around; threadgroup and thread-local indices never reach another group's or
thread's copy), and one ``mb.OutOfBoundsWarning`` per launch counts them per buffer.
Checked launches report them as findings. Every case compares with NumPy.
"""
import warnings

import mlx.core as mx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import metalbench as mb
from metalbench.dsl import (atomic_add, float32, int32, int64, local_array, thread_position_in_grid,
                            thread_position_in_threadgroup, threadgroup_array, threadgroup_barrier)
from metalbench.errors import KernelCheckError

TG = 64


def sim(k, *args, **kw):
    kw.setdefault("backend", "sim")
    return np.asarray(k(*args, **kw))


def oob_warnings(fn):
    """Run ``fn``; its result and the OutOfBoundsWarnings it raised."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = fn()
    return r, [x for x in w if issubclass(x.category, mb.OutOfBoundsWarning)]


def gathered(x, idx):
    """NumPy: x[idx] where idx is inside x, 0 elsewhere."""
    ok = (idx >= 0) & (idx < x.size)
    return np.where(ok, x[np.clip(idx, 0, max(x.size - 1, 0))], 0).astype(x.dtype)


# ----------------------------------------------------------------------------- device buffers

@mb.kernel
def prev(x, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = x[int32(i) - 1]


@mb.kernel
def prev64(x, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = x[int64(i) - 1]


@mb.kernel
def gather(x, idx, out: mb.Out(shape=lambda x, idx: idx.shape)):
    i = thread_position_in_grid.x
    out[i] = x[idx[i]]


@mb.kernel
def scatter(x, idx, out: mb.Out):
    i = thread_position_in_grid.x
    out[idx[i]] = x[i]


@pytest.mark.parametrize("k", [prev, prev64])
def test_negative_index_reads_zero_with_one_warning(k):
    x = np.arange(1, 9, dtype=np.float32)
    got, w = oob_warnings(lambda: sim(k, x, grid=8, threadgroup=8))
    np.testing.assert_array_equal(got, [0, 1, 2, 3, 4, 5, 6, 7])   # not x[-1] = 8
    assert len(w) == 1
    msg = str(w[0].message)
    assert "'x' (size 8): 1 read, index -1" in msg and "checked=True" in msg
    assert w[0].filename == __file__                                  # points at the launch
    with pytest.raises(KernelCheckError) as e:
        sim(k, x, grid=8, threadgroup=8, checked=True)
    f = e.value.findings[0]
    assert f.kind == "out-of-bounds" and f.buffer == "x" and f.index == [-1] and f.threads == [(0, 0, 0)]


def test_in_bounds_launch_does_not_warn():
    x = np.arange(8, dtype=np.float32)
    _, w = oob_warnings(lambda: sim(gather, x, np.arange(8, dtype=np.int32)[::-1].copy(), grid=8, threadgroup=4))
    assert w == []


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 300), m=st.integers(1, 300), seed=st.integers(0, 2**32 - 1),
       dt=st.sampled_from([np.int32, np.int64, np.uint32]))
def test_random_gathers_match_numpy_with_zero_outside(n, m, seed, dt):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(np.float32)
    lo = 0 if dt == np.uint32 else -2 * n
    idx = rng.integers(lo, 2 * n, m).astype(dt)
    got, w = oob_warnings(lambda: sim(gather, x, idx, grid=m, threadgroup=32))
    want = gathered(x, idx.astype(np.int64))
    np.testing.assert_array_equal(got, want)
    bad = int(((idx.astype(np.int64) < 0) | (idx.astype(np.int64) >= n)).sum())
    assert len(w) == (1 if bad else 0)
    if bad:
        assert f"'x' (size {n}): {bad} read{'s' if bad > 1 else ''}" in str(w[0].message)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 200), seed=st.integers(0, 2**32 - 1))
def test_random_scatters_drop_writes_outside(n, seed):
    # distinct indices (no two threads write one element), some outside the output
    rng = np.random.default_rng(seed)
    idx = rng.permutation(np.arange(-n, 2 * n))[:n].astype(np.int32)
    x = rng.standard_normal(n).astype(np.float32)
    got, w = oob_warnings(lambda: sim(scatter, x, idx, grid=n, threadgroup=32, init_value=-7))
    want = np.full(n, -7, np.float32)
    ok = (idx >= 0) & (idx < n)
    want[idx[ok]] = x[ok]
    np.testing.assert_array_equal(got, want)
    bad = int((~ok).sum())
    assert len(w) == (1 if bad else 0)
    if bad:
        assert f"'out' (size {n}): {bad} write" in str(w[0].message)


@mb.kernel
def uniform_index(x, j: int, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = x[j] + 1.0
    out[j] = 5.0


def test_uniform_index_outside_counts_every_thread():
    x = np.arange(40, dtype=np.float32)
    got, w = oob_warnings(lambda: sim(uniform_index, x, 40, grid=40, threadgroup=16))
    np.testing.assert_array_equal(got, np.ones(40, np.float32))
    assert "40 reads" in str(w[0].message) and "40 writes" in str(w[0].message)
    got, w = oob_warnings(lambda: sim(uniform_index, x, -3, grid=40, threadgroup=16))
    np.testing.assert_array_equal(got, np.ones(40, np.float32))
    assert "index -3" in str(w[0].message)
    got, w = oob_warnings(lambda: sim(uniform_index, x, 3, grid=40, threadgroup=16))
    assert w == [] and got[3] == 5 and got[0] == 4


@mb.kernel
def histogram(idx, hist: mb.Out(shape=16, dtype=mb.int32)):
    i = thread_position_in_grid.x
    atomic_add(hist, idx[i], 1)


def test_atomics_outside_are_dropped():
    idx = np.random.default_rng(0).integers(-8, 24, 500).astype(np.int32)
    got, w = oob_warnings(lambda: sim(histogram, idx, grid=500, threadgroup=64, init_value=0))
    ok = (idx >= 0) & (idx < 16)
    np.testing.assert_array_equal(got, np.bincount(idx[ok], minlength=16))
    assert f"'hist' (size 16): {int((~ok).sum())} atomics" in str(w[0].message)
    with pytest.raises(KernelCheckError, match="out-of-bounds atomic on device buffer 'hist'"):
        sim(histogram, idx, grid=500, threadgroup=64, init_value=0, checked=True)


# ----------------------------------------------------------------------------- threadgroup and thread memory

@mb.kernel
def tg_gather(x, idx, out: mb.Out):
    sh = threadgroup_array(64, float32)
    t = thread_position_in_threadgroup.x
    g = thread_position_in_grid.x
    sh[t] = x[g]
    threadgroup_barrier()
    out[g] = sh[idx[g]]


@mb.kernel
def tg_scatter(x, idx, out: mb.Out):
    sh = threadgroup_array(64, float32)
    t = thread_position_in_threadgroup.x
    g = thread_position_in_grid.x
    sh[t] = -1.0
    threadgroup_barrier()
    sh[idx[g]] = x[g]
    threadgroup_barrier()
    out[g] = sh[t]


@settings(max_examples=20, deadline=None)
@given(groups=st.integers(1, 5), seed=st.integers(0, 2**32 - 1))
def test_threadgroup_indices_outside_never_reach_another_group(groups, seed):
    rng = np.random.default_rng(seed)
    n = groups * TG
    x = rng.standard_normal(n).astype(np.float32)
    idx = rng.integers(-TG, 2 * TG, n).astype(np.int32)
    got, w = oob_warnings(lambda: sim(tg_gather, x, idx, grid=n, threadgroup=TG))
    base = np.repeat(np.arange(groups) * TG, TG)
    ok = (idx >= 0) & (idx < TG)
    np.testing.assert_array_equal(got, np.where(ok, x[np.clip(base + idx, 0, n - 1)], 0))
    assert len(w) == int((~ok).any())
    # writes: distinct indices per group, some outside; the rest of the array keeps -1
    idx = np.concatenate([rng.permutation(np.arange(-TG // 2, TG + TG // 2))[:TG] for _ in range(groups)])
    idx = idx.astype(np.int32)
    got, w = oob_warnings(lambda: sim(tg_scatter, x, idx, grid=n, threadgroup=TG))
    want = np.full(n, -1, np.float32)
    ok = (idx >= 0) & (idx < TG)
    want[(base + idx)[ok]] = x[ok]
    np.testing.assert_array_equal(got, want)
    if (~ok).any():
        assert f"'sh' (size 64): {int((~ok).sum())} write" in str(w[0].message)


@mb.kernel
def tg_loop(x, out: mb.Out, off: int):
    # the loop's hoisted paths: sh[t] is invariant, sh[t + off] is invariant + uniform
    sh = threadgroup_array(64, float32)
    t = thread_position_in_threadgroup.x
    g = thread_position_in_grid.x
    sh[t] = x[g]
    threadgroup_barrier()
    acc = 0.0
    for r in range(3):
        acc += sh[t + off] + sh[t]
        acc += sh[int32(t) + off]
    out[g] = acc


@pytest.mark.parametrize("off", [0, 5, -5, 63, -63, 64, -64, 70])
def test_threadgroup_fast_paths_in_loops_match_numpy(off):
    x = np.random.default_rng(off + 100).standard_normal(3 * TG).astype(np.float32)
    got, w = oob_warnings(lambda: sim(tg_loop, x, off, grid=3 * TG, threadgroup=TG))
    t = np.tile(np.arange(TG), 3)
    base = np.repeat(np.arange(3) * TG, TG)
    ok = (t + off >= 0) & (t + off < TG)
    shifted = np.where(ok, x[np.clip(base + t + off, 0, x.size - 1)], 0).astype(np.float32)
    acc = np.zeros(x.size, np.float32)
    for _ in range(3):
        acc = acc + (shifted + x)
        acc = acc + shifted
    np.testing.assert_allclose(got, acc, rtol=1e-6, atol=1e-6)
    assert len(w) == int((~ok).any())


@mb.kernel
def local_gather(x, idx, out: mb.Out):
    g = thread_position_in_grid.x
    a = local_array(8, float32)
    for j in range(8):
        a[j] = x[g] + float32(j)
    a[idx[g] + 2] = 100.0
    out[g] = a[idx[g]]


def test_thread_local_indices_outside():
    rng = np.random.default_rng(5)
    x = rng.standard_normal(96).astype(np.float32)
    idx = rng.integers(-6, 12, 96).astype(np.int32)
    got, w = oob_warnings(lambda: sim(local_gather, x, idx, grid=96, threadgroup=32))
    a = x[:, None] + np.arange(8, dtype=np.float32)[None, :]
    wi = idx + 2
    okw = (wi >= 0) & (wi < 8)
    a[np.arange(96)[okw], wi[okw]] = 100.0
    ok = (idx >= 0) & (idx < 8)
    np.testing.assert_array_equal(got, np.where(ok, a[np.arange(96), np.clip(idx, 0, 7)], 0))
    msg = str(w[0].message)
    assert f"{int((~ok).sum())} reads" in msg and f"{int((~okw).sum())} writes" in msg


# ----------------------------------------------------------------------------- MSL bodies

GRID_SAMPLE_LIKE = """
    uint i = thread_position_in_grid.x;
    int j = int(i) + shift;
    float v = x[j];            // read first, masked after: fine on a GPU
    out[i] = (j >= 0 && j < int(x_shape[0])) ? v : -1.0f;
"""


def test_msl_read_before_masking_runs_unchecked_and_is_reported_checked():
    k = mb.metal_kernel(name="masked_late", input_names=["x", "shift"], output_names=["out"],
                        source=GRID_SAMPLE_LIKE)
    x = mx.arange(16, dtype=mx.float32)

    def launch(**kw):
        return np.asarray(k(inputs=[x, -3], grid=(16, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(16,)],
                            output_dtypes=[mx.float32], backend="sim", **kw)[0])

    got, w = oob_warnings(launch)
    j = np.arange(16) - 3
    np.testing.assert_array_equal(got, np.where(j >= 0, j, -1))
    assert len(w) == 1 and "'x' (size 16): 3 reads, index -3 at line 4" in str(w[0].message)
    with pytest.raises(KernelCheckError, match="out-of-bounds read of device buffer 'x'"):
        launch(checked=True)


def test_outside_through_a_pointer_in_a_header_function():
    # p = x + 2 inside get(): p[j] is x[2 + j], inside the buffer for -2 <= j < 8
    k = mb.metal_kernel(name="via_pointer", input_names=["x"], output_names=["out"],
                        header="float get(const device float* p, int j) { return p[j]; }",
                        source="uint i = thread_position_in_grid.x; out[i] = get(x + 2, int(i) - 5);")
    x = mx.arange(1, 13, dtype=mx.float32)

    def launch(**kw):
        return np.asarray(k(inputs=[x], grid=(12, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(12,)],
                            output_dtypes=[mx.float32], backend="sim", **kw)[0])

    got, w = oob_warnings(launch)
    a = np.arange(12) - 3
    np.testing.assert_array_equal(got, np.where((a >= 0) & (a < 12), a + 1, 0))
    assert len(w) == 1 and "'x' (as 'p') (size 12): 3 reads, index -3" in str(w[0].message)
    with pytest.raises(KernelCheckError, match="out-of-bounds read"):
        launch(checked=True)
