"""The simulator's speed paths give the same results as the general ones: contiguous
(slice) device accesses in 1-D launches, loop-invariant code motion, the threadgroup
address fold, and the cached launch binding of ``Kernel.__call__``."""
import numpy as np
import pytest

import metalbench as mb
from metalbench.dsl import (float32, int32, thread_position_in_grid, thread_position_in_threadgroup, threadgroup_array,
                            threadgroup_barrier, uint32)
from metalbench.errors import KernelCheckError


@mb.kernel
def shifted(x, out: mb.Out, k: int):
    i = thread_position_in_grid.x
    if i < out.size:
        out[i] = x[i + k] * 2.0


@mb.kernel
def saxpy(a: float, x, y, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = a * x[i] + y[i]


def test_contiguous_and_gathered_accesses_agree():
    x = np.arange(1000, dtype=np.float32)
    # whole chunks in bounds (slices), and a tail that is not: same values either way
    got = np.asarray(shifted(x, 3, grid=997, threadgroup=64, backend="sim"))
    np.testing.assert_array_equal(got[:997], x[3:] * 2)
    assert np.isnan(got[997:]).all()  # never written: poisoned


def test_contiguous_read_past_the_end_reads_zero_with_a_warning():
    # the slice path's bounds proof fails on the last chunk: the gather reads 0 there
    x = np.arange(100, dtype=np.float32)
    with pytest.warns(mb.OutOfBoundsWarning, match=r"'x' \(size 100\): 1 read"):
        got = np.asarray(shifted(x, 1, grid=100, threadgroup=32, backend="sim"))
    np.testing.assert_array_equal(got, np.append(x[1:], 0) * 2)
    with pytest.raises(KernelCheckError, match="out-of-bounds"):
        shifted(x, 1, grid=100, threadgroup=32, backend="sim", checked=True)


def test_unsigned_wrap_below_zero_reads_zero_with_a_warning():
    @mb.kernel
    def prev(x, out: mb.Out):
        i = thread_position_in_grid.x
        out[i] = x[i - uint32(1)]

    x = np.arange(64, dtype=np.float32)
    with pytest.warns(mb.OutOfBoundsWarning, match="index 4294967295"):
        got = np.asarray(prev(x, grid=64, threadgroup=32, backend="sim"))
    np.testing.assert_array_equal(got, np.append(0, x[:-1]))
    with pytest.raises(KernelCheckError, match="out-of-bounds"):
        prev(x, grid=64, threadgroup=32, backend="sim", checked=True)


def test_cached_binding_follows_dtypes_shapes_and_scalars():
    rng = np.random.default_rng(1)
    for n, a, dt in [(300, 2.0, np.float32), (300, -1.5, np.float32), (77, 2.0, np.float32),
                     (300, 2.0, np.float16), (300, 2.0, np.float32)]:
        x, y = rng.standard_normal(n).astype(dt), rng.standard_normal(n).astype(dt)
        got = np.asarray(saxpy(a, x, y, grid=n, threadgroup=64, backend="sim"))
        assert got.dtype == dt and got.shape == (n,)
        np.testing.assert_allclose(got, (np.float32(a) * x.astype(np.float32) + y).astype(dt), rtol=2e-3)


def test_loop_invariant_index_math_and_tile_fold():
    # a tiled transpose-and-sum: invariant index arithmetic inside two loops, threadgroup
    # addresses `row * 16 + k` (invariant + loop counter)
    @mb.kernel
    def tile_sums(a, out: mb.Out):
        t = threadgroup_array(256, float32)
        tx = thread_position_in_threadgroup.x
        ty = thread_position_in_threadgroup.y
        gx = thread_position_in_grid.x
        gy = thread_position_in_grid.y
        n = a.shape[1]
        acc = 0.0
        for rep in range(3):
            t[ty * 16 + tx] = a[gy * n + gx] + float32(rep)
            threadgroup_barrier()
            for k in range(16):
                acc += t[tx * 16 + k] - t[ty * 16 + k] * 0.5
            threadgroup_barrier()
        out[gy * n + gx] = acc

    a = np.random.default_rng(2).standard_normal((32, 48)).astype(np.float32)
    got = np.asarray(tile_sums(a, grid=(48, 32), threadgroup=(16, 16), backend="sim"))
    ref = np.zeros_like(a)
    for rep in range(3):
        tiles = (a + np.float32(rep)).reshape(2, 16, 3, 16)  # (by, ty, bx, tx)
        row_sums = tiles.sum(axis=3)  # per (by, row, bx)
        # thread (ty, tx) adds sum(t[tx, :]) - 0.5 * sum(t[ty, :])
        ref += (row_sums.transpose(0, 2, 1)[:, :, None, :] - 0.5 * row_sums.transpose(0, 2, 1)[:, :, :, None]) \
            .transpose(0, 2, 1, 3).reshape(32, 48)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@mb.kernel
def div_in_loop(x, n: int, d: int, out: mb.Out):
    i = thread_position_in_grid.x
    acc = 0
    for j in range(n):
        if i > 3:
            acc += (int(i) + n) // d
    out[i] = float(acc) + x[i]


def test_checked_launch_keeps_loop_code_in_the_loop():
    # invariant code is not moved out of loops when checked: a division by zero in a loop
    # that never runs is no finding
    x = np.zeros(64, np.float32)
    np.testing.assert_array_equal(np.asarray(div_in_loop(x, 0, 0, grid=64, threadgroup=32, backend="sim",
                                                         checked=True)), 0)
    i = np.arange(64)
    want = np.where(i > 3, 3 * ((i + 3) // 2), 0).astype(np.float32)
    for chk in (True, False):
        got = np.asarray(div_in_loop(x, 3, 2, grid=64, threadgroup=32, backend="sim", checked=chk))
        np.testing.assert_array_equal(got, want)


@mb.kernel
def tree_sum(x, out: mb.Out(shape=lambda x: x.size // 128)):
    sh = threadgroup_array(128, float32)
    tid = thread_position_in_threadgroup.x
    sh[tid] = x[thread_position_in_grid.x]
    threadgroup_barrier()
    s = uint32(64)
    while s > 0:
        if tid < s:
            sh[tid] += sh[tid + s]  # slices of the threadgroup array, the tail inactive
        threadgroup_barrier()
        s //= 2
    if tid == 0:
        out[thread_position_in_grid.x // 128] = sh[0]


@mb.kernel
def past_the_tile(x, out: mb.Out, off: int):
    sh = threadgroup_array(64, float32)
    tid = thread_position_in_threadgroup.x
    sh[tid] = x[tid]
    threadgroup_barrier()
    acc = 0.0
    for r in range(2):
        if tid < 40:
            acc += sh[tid + off]
    out[tid] = acc


def test_threadgroup_slices_with_inactive_tail():
    x = np.random.default_rng(3).standard_normal(128 * 40).astype(np.float32)
    got = np.asarray(tree_sum(x, grid=x.size, threadgroup=128, backend="sim"))
    np.testing.assert_allclose(got, x.reshape(-1, 128).sum(1), rtol=1e-5, atol=1e-5)
    x = np.arange(64, dtype=np.float32)
    got = np.asarray(past_the_tile(x, 24, grid=64, threadgroup=64, backend="sim"))
    np.testing.assert_array_equal(got, np.where(np.arange(64) < 40, 2 * (np.arange(64) + 24), 0))


def test_threadgroup_read_past_the_array_reads_zero_with_a_warning():
    # lanes 34..39 read sh[64..69], past the array: 0 (never the next group's copy)
    x = np.arange(128, dtype=np.float32)
    with pytest.warns(mb.OutOfBoundsWarning, match=r"'sh' \(size 64\): 12 reads"):
        got = np.asarray(past_the_tile(x[:64], 30, grid=64, threadgroup=64, backend="sim"))
    t = np.arange(64)
    np.testing.assert_array_equal(got, np.where((t < 40) & (t + 30 < 64), 2 * (t + 30), 0))
    with pytest.warns(mb.OutOfBoundsWarning, match=r"24 reads"):
        got = np.asarray(past_the_tile(x, 30, grid=128, threadgroup=64, backend="sim"))
    # both groups load x[tid] and write out[tid]: the same values
    np.testing.assert_array_equal(got[:64], np.where((t < 40) & (t + 30 < 64), 2 * (t + 30), 0))
    with pytest.raises(KernelCheckError, match="out-of-bounds"):
        past_the_tile(x, 30, grid=64, threadgroup=64, backend="sim", checked=True)


def test_uniform_shuffle_up_down_match_the_general_path():
    from metalbench.sim import simd
    lay = simd.SimdLayout(groups=3, tg=64, exist=None)
    v = np.random.default_rng(4).standard_normal(lay.L).astype(np.float32)
    for name in ("down", "up"):
        for d in (0, 1, 5, 16, 31, 32, 40):
            fast = simd.shuffle(lay, name, v, np.uint32(d), None)
            general = simd.shuffle(lay, name, v, np.full(lay.L, d, np.uint32), None)  # per-lane deltas
            np.testing.assert_array_equal(fast, general)


def _zoo_cases():
    from zoo import CASES
    return CASES


@pytest.mark.parametrize("c", _zoo_cases(), ids=[c.name for c in _zoo_cases()])
def test_zoo_fast_paths_match_checked_launches(c):
    # checked launches take none of the speed paths (invariant code motion, address
    # folds, threadgroup slices): both must compute the same bits
    from metalbench.runtime import to_numpy
    outs = []
    for chk in (False, True):
        args = c.make_args(np.random.default_rng(5))
        o = c.kernel(*args, backend="sim", checked=chk, **c.launch)
        outs.append([to_numpy(x) for x in (o if isinstance(o, tuple) else (o,))])
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


@mb.kernel
def guarded(x, out: mb.Out, n: int):
    i = int32(thread_position_in_grid.x)
    if i < n:
        out[i] = x[i] + 1.0
    if n > i + 1:
        out[i] += 1.0


@pytest.mark.parametrize("n", [0, 1, 100, 4095, 4096])
def test_bounds_guard_shortcut(n):
    x = np.arange(4096, dtype=np.float32)
    got = np.asarray(guarded(x, n, grid=4096, threadgroup=256, backend="sim"))
    i = np.arange(4096)
    want = np.where(i < n, x + 1 + (i + 1 < n), np.nan)
    np.testing.assert_array_equal(got, want.astype(np.float32))


REVERSED_RANK = """
    uint t = thread_position_in_threadgroup.x;
    threadgroup float top[K];
    int rank = int(t) + OFF;                     // negative or past K for some lanes
    if (rank >= 0 && rank < K) { top[K - 1 - rank] = x[thread_position_in_grid.x]; }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (t < uint(K)) out[threadgroup_position_in_grid.x * K + t] = top[t];
"""


@pytest.mark.parametrize("checked", [False, True])
@pytest.mark.parametrize("off", [0, -3])
def test_a_guarded_threadgroup_store_whose_inactive_lanes_index_outside_is_no_finding(checked, off):
    # inactive lanes' indices (K - 1 - rank < 0) must not count: no warning, no error, right values
    import warnings

    import mlx.core as mx
    k = mb.metal_kernel(name="rank", input_names=["x"], output_names=["out"], source=REVERSED_RANK)
    x = np.arange(32, dtype=np.float32) + 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (o,) = k(inputs=[mx.array(x)], template=[("K", 4), ("OFF", off)], grid=(32, 1, 1), threadgroup=(16, 1, 1),
                 output_shapes=[(8,)], output_dtypes=[mx.float32], backend="sim", checked=checked)
    want = np.concatenate([x[g * 16:(g + 1) * 16][-off:-off + 4][::-1] for g in range(2)])
    np.testing.assert_array_equal(np.array(o), want)
