"""Numba programs ported by changing only the import, run on the simulator and compared
with NumPy (what Numba computes). Random data everywhere, never zeros.

Cross-checked: these tests, and those of test_numba_compat_intrinsics.py, pass unchanged
under Numba 0.68's own CUDA simulator (NUMBA_ENABLE_CUDASIM=1, `from numba import cuda`),
except the warp functions, which Numba's simulator does not implement."""
import math

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


rng = np.random.default_rng(1234)


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# ----------------------------------------------------------------------------- puzzles

@cuda.jit
def map_2d_guard(a, out, size):
    local_i = cuda.threadIdx.x
    local_j = cuda.threadIdx.y
    if local_i < size and local_j < size:
        out[local_i, local_j] = a[local_i, local_j] + 10


def test_puzzle_2d_guard():
    size = 5
    a = rand(size, size)
    out = rand(size, size)
    map_2d_guard[1, (8, 8)](a, out, size)
    np.testing.assert_allclose(out, a + 10, rtol=1e-6)


@cuda.jit
def broadcast_add(a, b, out, size):
    i = cuda.threadIdx.x
    j = cuda.threadIdx.y
    if i < size and j < size:
        out[i, j] = a[i, 0] + b[0, j]


def test_puzzle_broadcast():
    a = rand(4, 1)
    b = rand(1, 4)
    out = np.full((4, 4), 7.0, np.float32)
    broadcast_add[1, (6, 6)](a, b, out, 4)
    np.testing.assert_allclose(out, a + b, rtol=1e-6)


@cuda.jit
def shift_left(a, out):
    i = cuda.grid(1)
    # Numba indices are signed: i - 1 >= 0 is false for i == 0.
    if i - 1 >= 0 and i < a.size:
        out[i] = a[i - 1]


def test_signed_thread_indices():
    a = rand(40)
    out = rand(40)
    before = out.copy()
    shift_left[2, 32](a, out)
    assert out[0] == before[0]
    np.testing.assert_array_equal(out[1:], a[:-1])


@cuda.jit
def grid2d(a, out):
    x, y = cuda.grid(2)
    if x < a.shape[0] and y < a.shape[1]:
        out[x, y] = 2 * a[x, y] + cuda.blockIdx.y - cuda.gridDim.x + cuda.blockDim.y


def test_grid_2d_unpacking_and_block_attrs():
    a = rand(37, 21)
    out = rand(37, 21)
    grid2d[(5, 3), (8, 8)](a, out)
    bi_y = (np.arange(21) // 8)[None, :]
    np.testing.assert_allclose(out, 2 * a + bi_y - 5 + 8, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- grid-stride

@cuda.jit
def saxpy_stride(a, x, y, out):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, x.shape[0], stride):
        out[i] = a * x[i] + y[i]


def test_grid_stride_loop():
    n = 5000
    x, y, out = rand(n), rand(n), rand(n)
    saxpy_stride[3, 64](1.5, x, y, out)
    np.testing.assert_allclose(out, 1.5 * x + y, rtol=1e-5, atol=1e-6)


@cuda.jit
def scale_2d_stride(a, s):
    x0, y0 = cuda.grid(2)
    sx, sy = cuda.gridsize(2)
    for i in range(x0, a.shape[0], sx):
        for j in range(y0, a.shape[1], sy):
            a[i, j] *= s


def test_grid_stride_2d_in_place():
    a = rand(50, 70)
    expected = a * 3.0
    scale_2d_stride[(2, 2), (4, 8)](a, 3.0)
    np.testing.assert_allclose(a, expected, rtol=1e-6)


# ----------------------------------------------------------------------------- shared memory

TPB = 8


@cuda.jit
def pooling(a, out, size):
    shared = cuda.shared.array(TPB, np.float32)
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    local_i = cuda.threadIdx.x
    if i < size:
        shared[local_i] = a[i]
    cuda.syncthreads()
    if i < size:
        acc = shared[local_i]
        if local_i >= 1:
            acc += shared[local_i - 1]
        elif i >= 1:
            acc += a[i - 1]
        if local_i >= 2:
            acc += shared[local_i - 2]
        elif i >= 2:
            acc += a[i - 2]
        out[i] = acc


def test_shared_pooling():
    n = 30
    a = rand(n)
    out = rand(n)
    pooling[4, TPB](a, out, n)
    ref = a.copy()
    ref[1:] += a[:-1]
    ref[2:] += a[:-2]
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


THREADS = 64


@cuda.jit
def dot(a, b, partial):
    cache = cuda.shared.array(THREADS, dtype=np.float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    temp = 0.0
    while i < a.shape[0]:
        temp += a[i] * b[i]
        i += cuda.gridsize(1)
    cache[tid] = temp
    cuda.syncthreads()
    k = cuda.blockDim.x // 2
    while k != 0:
        if tid < k:
            cache[tid] += cache[tid + k]
        cuda.syncthreads()
        k //= 2
    if tid == 0:
        partial[cuda.blockIdx.x] = cache[0]


def test_dot_product_while_syncthreads():
    n = 3000
    a, b = rand(n), rand(n)
    partial = rand(4)
    dot[4, THREADS](a, b, partial)
    assert abs(partial.sum() - float(np.dot(a.astype(np.float64), b))) < 1e-3


@cuda.jit
def histogram(x, hist, lo, width):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    nbins = hist.shape[0]
    while i < x.shape[0]:
        b = int((x[i] - lo) / width)
        if b >= 0 and b < nbins:
            cuda.atomic.add(hist, b, 1)
        i += stride


def test_atomic_histogram():
    x = rng.uniform(-3, 3, 10000).astype(np.float32)
    hist = rng.integers(1, 50, 16).astype(np.int32)  # accumulates onto existing counts, as in Numba
    before = hist.copy()
    histogram[8, 128](x, hist, -2.0, 0.25)
    b = np.floor((x - np.float32(-2.0)) / np.float32(0.25)).astype(np.int64)
    b = np.trunc((x + np.float32(2.0)) / np.float32(0.25)).astype(np.int64)
    ok = (b >= 0) & (b < 16)
    ref = before + np.bincount(b[ok], minlength=16)
    np.testing.assert_array_equal(hist, ref)


TILE = 16


@cuda.jit
def matmul_tiled(A, B, C):
    sA = cuda.shared.array(shape=(TILE, TILE), dtype=np.float32)
    sB = cuda.shared.array(shape=(TILE, TILE), dtype=np.float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bpg = cuda.gridDim.x
    tmp = 0.0
    for i in range(bpg):
        sA[tx, ty] = 0
        sB[tx, ty] = 0
        if x < A.shape[0] and (ty + i * TILE) < A.shape[1]:
            sA[tx, ty] = A[x, ty + i * TILE]
        if y < B.shape[1] and (tx + i * TILE) < B.shape[0]:
            sB[tx, ty] = B[tx + i * TILE, y]
        cuda.syncthreads()
        for j in range(TILE):
            tmp += sA[tx, j] * sB[j, ty]
        cuda.syncthreads()
    if x < C.shape[0] and y < C.shape[1]:
        C[x, y] = tmp


def test_tiled_matmul():
    n = 40
    A, B = rand(n, n), rand(n, n)
    C = rand(n, n)
    bpg = math.ceil(n / TILE)
    matmul_tiled[(bpg, bpg), (TILE, TILE)](A, B, C)
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- device functions

@cuda.jit(device=True)
def sigmoid(v):
    return 1.0 / (1.0 + math.exp(-v))


@cuda.jit
def apply_sigmoid(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = sigmoid(x[i]) * math.sqrt(abs(x[i]))


def test_device_function_math_exp():
    x = rand(500)
    out = rand(500)
    apply_sigmoid[2, 256](x, out)
    ref = 1 / (1 + np.exp(-x.astype(np.float64))) * np.sqrt(np.abs(x))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


@cuda.jit("void(float32[:], float32[:])")
def with_signature(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = math.tanh(x[i]) + math.log(1.0 + x[i] * x[i])


def test_jit_with_signature():
    x = rand(100)
    out = rand(100)
    with_signature[1, 128](x, out)
    np.testing.assert_allclose(out, np.tanh(x) + np.log1p(x * x), rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- local arrays

@cuda.jit
def first_k_above(x, thresh, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        buf = cuda.local.array(4, dtype=np.float32)
        for k in range(4):
            buf[k] = -1.0
        n = 0
        for j in range(x.shape[1]):
            if x[i, j] > thresh:
                buf[n] = x[i, j]
                n += 1
                if n == 4:
                    break
        for k in range(4):
            out[i, k] = buf[k]


def test_local_array_with_break():
    x = rand(70, 20)
    out = rand(70, 4)
    first_k_above[3, 32](x, 0.8, out)
    ref = np.full((70, 4), -1.0, np.float32)
    for i in range(70):
        vals = x[i][x[i] > np.float32(0.8)][:4]
        ref[i, :len(vals)] = vals
    np.testing.assert_array_equal(out, ref)


# ----------------------------------------------------------------------------- host API

def test_device_arrays_round_trip():
    a, b = rand(300), rand(300)
    da, db = cuda.to_device(a), cuda.to_device(b)
    dout = cuda.device_array_like(a)
    add_k[2, 256](da, db, dout)
    cuda.synchronize()
    np.testing.assert_allclose(dout.copy_to_host(), a + b, rtol=1e-6)
    host = np.empty_like(a)
    dout.copy_to_host(host)
    np.testing.assert_allclose(host, a + b, rtol=1e-6)
    d2 = cuda.device_array(300, dtype=np.float32)
    add_k[2, 256](da, db, d2)
    np.testing.assert_allclose(np.asarray(d2), a + b, rtol=1e-6)


@cuda.jit
def add_k(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


def test_launch_with_stream_and_sharedmem_and_forall():
    a, b, out = rand(100), rand(100), rand(100)
    s = cuda.stream()
    add_k[1, 128, s, 0](a, b, out)
    s.synchronize()
    np.testing.assert_allclose(out, a + b, rtol=1e-6)
    out2 = rand(100)
    add_k.forall(100)(a, b, out2)
    np.testing.assert_allclose(out2, a + b, rtol=1e-6)


def test_mlx_arrays_updated_in_place():
    mx = pytest.importorskip("mlx.core")
    a, b = rand(64), rand(64)
    out = mx.array(rand(64))
    add_k[1, 64](mx.array(a), mx.array(b), out)
    np.testing.assert_allclose(np.array(out), a + b, rtol=1e-6)


def test_non_contiguous_and_float64_arguments():
    a = rand(64, 2)[:, 0]            # strided view
    b = rng.standard_normal(64)      # float64: exact on sim and cuda, as in Numba
    out = np.full(64, 3.0)           # float64 output, written back
    add_k[1, 64](a, b, out)
    np.testing.assert_array_equal(out, a.astype(np.float64) + b)


def test_stubs():
    assert cuda.is_available()
    dev = cuda.get_current_device()
    assert dev.WARP_SIZE == 32 and cuda.select_device(0) is dev
    assert isinstance(dev.name, bytes)
    cuda.synchronize()
    e0, e1 = cuda.event(), cuda.event()
    e0.record(); e1.record()
    assert cuda.event_elapsed_time(e0, e1) >= 0


def test_configure_and_env_backend(monkeypatch):
    cuda.set_backend(None)
    monkeypatch.setenv("METALBENCH_BACKEND", "sim")
    a, b, out = rand(10), rand(10), rand(10)
    add_k[1, 16](a, b, out)
    assert add_k.last_launch["backend"] == "sim"
    assert add_k.last_launch["grid"] == (16, 1, 1)
    monkeypatch.delenv("METALBENCH_BACKEND")
    add_k.configure(backend="sim")
    add_k[1, 16](a, b, out)
    assert add_k.last_launch["backend"] == "sim"
    add_k.configure(backend="auto")
    np.testing.assert_allclose(out, a + b, rtol=1e-6)


def test_call_style_returns_written_arrays_and_leaves_inputs():
    a, b, out = rand(50), rand(50), rand(50)
    keep = out.copy()
    r = add_k(a, b, out, grid=64, threadgroup=32)
    np.testing.assert_allclose(r, a + b, rtol=1e-6)
    np.testing.assert_array_equal(out, keep)


def test_scalar_types_and_checked_mode():
    x = rand(33)
    out = rand(33)
    saxpy_stride.configure(checked=True)
    try:
        saxpy_stride[1, 32](np.float32(0.5), x, x, out)
    finally:
        saxpy_stride.configure(checked=False)
    np.testing.assert_allclose(out, 1.5 * x, rtol=1e-6)
