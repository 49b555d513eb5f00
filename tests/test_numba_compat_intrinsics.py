"""Block votes, warp functions, atomics and constant arrays of metalbench.cuda, on the
simulator, against NumPy. Random data everywhere."""
import os

import numpy as np
import pytest

from metalbench import cuda

pytest.importorskip("metalbench.sim")


@pytest.fixture(autouse=True)
def _sim_backend():
    # METALBENCH_TEST_BACKEND=cuda runs these ports on the GPU (the device run of issue 7).
    cuda.set_backend(os.environ.get("METALBENCH_TEST_BACKEND", "sim"))
    yield
    cuda.set_backend(None)


rng = np.random.default_rng(99)
ON_GPU = os.environ.get("METALBENCH_TEST_BACKEND", "sim") != "sim"


def refused_on_gpu(launch):
    """Run ``launch``; on metal, in-place atomics other than add/sub/or/xor on an argument
    must be refused with a message naming the array (never wrong); cuda runs them through
    a private copy (numba_compat/inplace_copy.py), as sim runs them in place."""
    if os.environ.get("METALBENCH_TEST_BACKEND", "sim") != "metal":
        launch()
        return True
    from metalbench.errors import KernelLaunchError
    with pytest.raises(KernelLaunchError, match="array argument"):
        launch()
    return False


@cuda.jit
def block_votes(x, counts, alls, anys):
    i = cuda.grid(1)
    c = cuda.syncthreads_count(x[i] > 0.3)
    a = cuda.syncthreads_and(x[i] > -5.0)
    n = cuda.syncthreads_or(x[i] > 0.999)
    a2 = cuda.syncthreads_and(x[i] > 0.0)
    if cuda.threadIdx.x == 0:
        counts[cuda.blockIdx.x] = c
        alls[cuda.blockIdx.x] = a * 10 + a2
        anys[cuda.blockIdx.x] = n


def test_syncthreads_count_and_or():
    x = rng.uniform(-1, 1, 4 * 96).astype(np.float32)
    x[0:96] = np.abs(x[0:96]) + 0.01            # block 0: all positive
    x[200] = 0.9995                              # block 2 has one > 0.999
    counts = rng.integers(100, 200, 4).astype(np.int32)
    alls = counts.copy()
    anys = counts.copy()
    block_votes[4, 96](x, counts, alls, anys)
    xb = x.reshape(4, 96)
    np.testing.assert_array_equal(counts, (xb > np.float32(0.3)).sum(1))
    np.testing.assert_array_equal(alls, 10 * (xb > -5).all(1) + (xb > 0).all(1))
    np.testing.assert_array_equal(anys, (xb > np.float32(0.999)).any(1))


@cuda.jit
def warp_sum(x, out):
    i = cuda.grid(1)
    v = x[i]
    off = 16
    while off > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, off)
        off //= 2
    if cuda.laneid == 0:
        out[i // cuda.warpsize] = v


def test_shfl_down_warp_reduction():
    x = rng.integers(-100, 100, 128).astype(np.int32)
    out = rng.integers(1, 9, 4).astype(np.int32)
    warp_sum[2, 64](x, out)
    np.testing.assert_array_equal(out, x.reshape(4, 32).sum(1))


@cuda.jit
def shuffles(x, a, b, c, d):
    i = cuda.grid(1)
    v = x[i]
    a[i] = cuda.shfl_sync(0xFFFFFFFF, v, 3)
    b[i] = cuda.shfl_up_sync(0xFFFFFFFF, v, 1)
    c[i] = cuda.shfl_xor_sync(0xFFFFFFFF, v, 1)
    d[i] = cuda.shfl_down_sync(0xFFFFFFFF, v, 2)


def test_shuffles():
    x = rng.standard_normal(64).astype(np.float32)
    a, b, c, d = (rng.standard_normal(64).astype(np.float32) for _ in range(4))
    shuffles[1, 64](x, a, b, c, d)
    w = x.reshape(2, 32)
    lane = np.arange(32)
    np.testing.assert_array_equal(a.reshape(2, 32), np.repeat(w[:, 3:4], 32, 1))
    np.testing.assert_array_equal(b.reshape(2, 32), w[:, np.maximum(lane - 1, 0)])  # lane 0 keeps its own
    np.testing.assert_array_equal(c.reshape(2, 32), w[:, lane ^ 1])
    np.testing.assert_array_equal(d.reshape(2, 32), w[:, np.where(lane + 2 < 32, lane + 2, lane)])


@cuda.jit
def votes(x, ballots, alls, anys, masks):
    i = cuda.grid(1)
    p = x[i] > 0
    b = cuda.ballot_sync(0xFFFFFFFF, p)
    al = cuda.all_sync(0xFFFFFFFF, x[i] > -10)
    an = cuda.any_sync(0xFFFFFFFF, x[i] > 2.5)
    m = cuda.activemask()
    if cuda.laneid == 0:
        w = i // 32
        ballots[w] = b
        alls[w] = al
        anys[w] = an
        masks[w] = m


def test_warp_votes():
    x = rng.standard_normal(96).astype(np.float32)
    x[40] = 3.0
    ballots = rng.integers(1, 9, 3).astype(np.uint32)
    alls = rng.integers(5, 9, 3).astype(np.int32)
    anys, masks = alls.copy(), ballots.copy()
    votes[1, 96](x, ballots, alls, anys, masks)
    w = x.reshape(3, 32)
    ref = ((w > 0) * (1 << np.arange(32, dtype=np.uint64))).sum(1).astype(np.uint32)
    np.testing.assert_array_equal(ballots, ref)
    assert (alls != 0).tolist() == [True] * 3
    assert (anys != 0).tolist() == (w > 2.5).any(1).tolist()
    np.testing.assert_array_equal(masks, [0xFFFFFFFF] * 3)


@cuda.jit
def atomics(v, vals, ui, out_old):
    i = cuda.grid(1)
    if i < vals.size:
        cuda.atomic.max(v, 0, vals[i])
        cuda.atomic.min(v, 1, vals[i])
        cuda.atomic.sub(v, 2, vals[i])
        cuda.atomic.and_(v, 3, vals[i] | 0x100)
        cuda.atomic.or_(v, 4, vals[i] & 0xF0)
        cuda.atomic.xor(v, 5, vals[i])
        cuda.atomic.inc(ui, 0, 7)
        cuda.atomic.dec(ui, 1, 5)
        out_old[i] = cuda.atomic.add(v, 6, 1)


def test_atomic_operations():
    vals = rng.integers(1, 1000, 100).astype(np.int32)
    v = rng.integers(100, 200, 7).astype(np.int32)
    ui = np.array([3, 2], np.uint32)
    old = rng.integers(1, 9, 100).astype(np.int32)
    v0 = v.copy()
    if not refused_on_gpu(lambda: atomics[1, 128](v, vals, ui, old)):
        return
    assert v[0] == max(v0[0], vals.max())
    assert v[1] == min(v0[1], vals.min())
    assert v[2] == v0[2] - vals.sum()
    r = v0[3]
    for x in vals:
        r &= x | 0x100
    assert v[3] == r
    r = v0[4]
    for x in vals:
        r |= x & 0xF0
    assert v[4] == r
    r = v0[5]
    for x in vals:
        r ^= x
    assert v[5] == r
    assert v[6] == v0[6] + 100
    assert sorted(old.tolist()) == list(range(v0[6], v0[6] + 100))
    # inc: wraps to 0 after reaching 7; dec: wraps to 5 at 0.
    inc, dec = 3, 2
    for _ in range(100):
        inc = 0 if inc >= 7 else inc + 1
        dec = 5 if (dec == 0 or dec > 5) else dec - 1
    assert ui.tolist() == [inc, dec]


@cuda.jit
def cas_lock(counter, flag, data, out, out2):
    i = cuda.grid(1)
    if i < data.size:
        out[i] = cuda.atomic.cas(counter, 1, 0, 1)
        out2[i] = cuda.atomic.compare_and_swap(flag, 3, 9)


def test_atomic_cas_once():
    counter = np.array([5, 0], np.int32)
    flag = np.array([3], np.int32)
    data = rng.standard_normal(40).astype(np.float32)
    out = rng.integers(3, 9, 40).astype(np.int32)
    out2 = out.copy()
    if not refused_on_gpu(lambda: cas_lock[1, 64](counter, flag, data, out, out2)):
        return
    assert counter.tolist() == [5, 1] and flag[0] == 9
    assert sorted(out.tolist()) == [0] + [1] * 39
    assert sorted(out2.tolist()) == [3] + [9] * 39


@cuda.jit
def exch_and_shared_atomic(x, out, last):
    s = cuda.shared.array(1, np.int32)
    if cuda.threadIdx.x == 0:
        s[0] = 0
    cuda.syncthreads()
    cuda.atomic.add(s, 0, x[cuda.grid(1)])
    cuda.atomic.exch(last, 0, 42)
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = s[0]


def test_shared_atomics_and_exch():
    x = rng.integers(-50, 50, 128).astype(np.int32)
    out = rng.integers(1, 9, 2).astype(np.int32)
    last = np.array([7], np.int32)
    if not refused_on_gpu(lambda: exch_and_shared_atomic[2, 64](x, out, last)):
        return
    np.testing.assert_array_equal(out, x.reshape(2, 64).sum(1))
    assert last[0] == 42


COEFFS = np.array([0.5, -1.25, 2.0, 3.5], dtype=np.float32)


@cuda.jit
def poly(x, out):
    c = cuda.const.array_like(COEFFS)
    i = cuda.grid(1)
    if i < x.size:
        acc = 0.0
        for k in range(4):
            acc = acc * x[i] + c[k]
        out[i] = acc


def test_const_array_like():
    x = rng.standard_normal(77).astype(np.float32)
    out = rng.standard_normal(77).astype(np.float32)
    poly[1, 128](x, out)
    ref = np.polyval(COEFFS.astype(np.float64), x)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_numba_type_objects_detected_by_name():
    class Float32Type:                # how numba.float32 looks: a module under numba, a .name
        name = "float32"
    Float32Type.__module__ = "numba.core.types.scalars"
    from metalbench.numba_compat.intrinsics import numba_dtype
    assert numba_dtype(Float32Type()).name == "float32"
    assert numba_dtype(np.float64).name == "float64"            # a real type (exact on sim, cuda)
    assert numba_dtype(np.int32).name == "int32"


@cuda.jit
def syncwarp_fence(x, out):
    i = cuda.grid(1)
    out[i] = x[i] * 2
    cuda.threadfence()
    cuda.threadfence_block()
    cuda.syncwarp()
    cuda.syncwarp(0xFFFFFFFF)


def test_syncwarp_and_fences():
    x = rng.standard_normal(64).astype(np.float32)
    out = rng.standard_normal(64).astype(np.float32)
    syncwarp_fence[2, 32](x, out)
    np.testing.assert_array_equal(out, 2 * x)
