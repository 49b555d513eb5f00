"""mb.metal_kernel on the simulator vs NumPy on random data: GPU puzzles as MSL bodies,
MLX's documented custom-kernel examples, header helpers, scalar inputs."""
import os

import mlx.core as mx
import numpy as np
import pytest

import metalbench.sim as _sim
from metalbench.mlx_compat import metal_kernel

pytestmark = pytest.mark.skipif(not hasattr(_sim, "compile_kernel"), reason="simulator not built yet")

RNG = np.random.default_rng(0)
# METALBENCH_TEST_BACKEND=cuda runs these kernels on the GPU (the device run of issue 7).
BACKEND = os.environ.get("METALBENCH_TEST_BACKEND", "sim")


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def run(src, ins, outs, grid, tg, inputs, header="", template=None, **kw):
    names = [n for n in ins]
    k = metal_kernel(name="k", input_names=names, output_names=[o[0] for o in outs], source=src,
                     header=header, **{x: kw.pop(x) for x in list(kw) if x in ("ensure_row_contiguous", "atomic_outputs")})
    res = k(inputs=inputs, template=template, grid=grid, threadgroup=tg,
            output_shapes=[o[1] for o in outs], output_dtypes=[o[2] for o in outs],
            backend=BACKEND, **kw)
    return [np.array(r) for r in res]


def test_map():
    a = rand(37)
    (o,) = run("uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10;", ["a"],
               [("out", a.shape, mx.float32)], (37, 1, 1), (32, 1, 1), [mx.array(a)])
    np.testing.assert_allclose(o, a + 10, rtol=1e-6)


def test_zip():
    a, b = rand(50), rand(50)
    (o,) = run("uint i = thread_position_in_grid.x;\nout[i] = a[i] + b[i];", ["a", "b"],
               [("out", a.shape, mx.float32)], (50, 1, 1), (16, 1, 1), [mx.array(a), mx.array(b)])
    np.testing.assert_allclose(o, a + b, rtol=1e-6)


def test_guard_with_scalar_input():
    a = rand(10)
    (o,) = run("uint i = thread_position_in_grid.x;\nif (i < size) {\n  out[i] = a[i] * s;\n}",
               ["a", "size", "s"], [("out", a.shape, mx.float32)], (64, 1, 1), (32, 1, 1),
               [mx.array(a), 10, 3.0])
    np.testing.assert_allclose(o, a * 3, rtol=1e-6)


def test_map_2d():
    n = 6
    a = rand(n, n)
    src = """
        uint i = thread_position_in_grid.x;
        uint j = thread_position_in_grid.y;
        if (i < a_shape[1] && j < a_shape[0]) {
            out[j * a_shape[1] + i] = a[j * a_shape[1] + i] + 10;
        }
    """
    (o,) = run(src, ["a"], [("out", a.shape, mx.float32)], (8, 8, 1), (4, 4, 1), [mx.array(a)])
    np.testing.assert_allclose(o, a + 10, rtol=1e-6)


def test_broadcast():
    a, b = rand(1, 5), rand(7, 1)
    src = """
        uint i = thread_position_in_grid.x;
        uint j = thread_position_in_grid.y;
        if (i < 5 && j < 7) out[j * 5 + i] = a[i] + b[j];
    """
    (o,) = run(src, ["a", "b"], [("out", (7, 5), mx.float32)], (8, 8, 1), (8, 8, 1),
               [mx.array(a), mx.array(b)])
    np.testing.assert_allclose(o, a + b, rtol=1e-6)


def test_blocks_1d():
    a = rand(9)
    src = """
        uint i = threadgroup_position_in_grid.x * threads_per_threadgroup.x + thread_position_in_threadgroup.x;
        if (i < 9) out[i] = a[i] + 10;
    """
    (o,) = run(src, ["a"], [("out", a.shape, mx.float32)], (12, 1, 1), (4, 1, 1), [mx.array(a)])
    np.testing.assert_allclose(o, a + 10, rtol=1e-6)


def test_blocks_2d():
    n = 5
    a = rand(n, n)
    src = """
        uint2 g = threadgroup_position_in_grid.xy * threads_per_threadgroup.xy + thread_position_in_threadgroup.xy;
        if (g.x < N && g.y < N) out[g.y * N + g.x] = a[g.y * N + g.x] + 10;
    """
    (o,) = run(src, ["a"], [("out", a.shape, mx.float32)], (8, 8, 1), (4, 4, 1), [mx.array(a)],
               template=[("N", n)])
    np.testing.assert_allclose(o, a + 10, rtol=1e-6)


def test_threadgroup_memory():
    a = rand(8)
    src = """
        threadgroup float shared[4];
        uint i = thread_position_in_grid.x;
        uint l = thread_position_in_threadgroup.x;
        if (i < 8) shared[l] = a[i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (i < 8) out[i] = shared[l] + 10;
    """
    (o,) = run(src, ["a"], [("out", a.shape, mx.float32)], (8, 1, 1), (4, 1, 1), [mx.array(a)])
    np.testing.assert_allclose(o, a + 10, rtol=1e-6)


def test_pooling():
    a = rand(10)
    src = """
        threadgroup float sh[TPB];
        uint i = thread_position_in_grid.x;
        uint l = thread_position_in_threadgroup.x;
        sh[l] = a[i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float acc = 0;
        for (int k = 0; k < 3; k++) {
            int j = int(l) - k;
            if (j >= 0) acc += sh[j];
        }
        out[i] = acc;
    """
    (o,) = run(src, ["a"], [("out", a.shape, mx.float32)], (10, 1, 1), (10, 1, 1), [mx.array(a)],
               template=[("TPB", 10)])
    ref = np.array([a[max(0, i - 2):i + 1].sum() for i in range(10)], np.float32)
    np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-6)


def test_dot_product():
    n = 64
    a, b = rand(n), rand(n)
    src = """
        threadgroup float cache[64];
        uint l = thread_position_in_threadgroup.x;
        cache[l] = a[l] * b[l];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint s = 32; s > 0; s >>= 1) {
            if (l < s) cache[l] += cache[l + s];
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        if (l == 0) out[0] = cache[0];
    """
    (o,) = run(src, ["a", "b"], [("out", (1,), mx.float32)], (n, 1, 1), (n, 1, 1),
               [mx.array(a), mx.array(b)])
    np.testing.assert_allclose(o[0], np.dot(a, b), rtol=1e-4, atol=1e-5)


def test_conv1d_halo_two_threadgroups():
    n, kw, tpb = 15, 4, 8
    a, b = rand(n), rand(kw)
    src = """
        threadgroup float sh_a[TPB + KW - 1];
        threadgroup float sh_b[KW];
        uint i = thread_position_in_grid.x;
        uint l = thread_position_in_threadgroup.x;
        if (i < N) sh_a[l] = a[i]; else sh_a[l] = 0;
        if (l < KW - 1) {
            uint h = i + TPB;
            sh_a[l + TPB] = h < N ? a[h] : 0.0f;
        }
        if (l < KW) sh_b[l] = b[l];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (i < N) {
            float acc = 0;
            for (int k = 0; k < KW; ++k) acc += sh_a[l + k] * sh_b[k];
            out[i] = acc;
        }
    """
    (o,) = run(src, ["a", "b"], [("out", a.shape, mx.float32)], (16, 1, 1), (tpb, 1, 1),
               [mx.array(a), mx.array(b)], template=[("N", n), ("KW", kw), ("TPB", tpb)])
    pad = np.concatenate([a, np.zeros(kw, np.float32)])
    ref = np.array([np.dot(pad[i:i + kw], b) for i in range(n)], np.float32)
    np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-5)


def test_block_sums():
    n, tpb = 40, 8
    a = rand(n)
    src = """
        threadgroup float cache[8];
        uint i = thread_position_in_grid.x;
        uint l = thread_position_in_threadgroup.x;
        cache[l] = i < size ? a[i] : 0.0f;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint s = 1; s < 8; s *= 2) {
            float v = l >= s ? cache[l - s] : 0.0f;
            threadgroup_barrier(mem_flags::mem_threadgroup);
            cache[l] += v;
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        if (l == 7) out[threadgroup_position_in_grid.x] = cache[l];
    """
    (o,) = run(src, ["a", "size"], [("out", (n // tpb,), mx.float32)], (n, 1, 1), (tpb, 1, 1),
               [mx.array(a), mx.array(n, dtype=mx.uint32)])
    np.testing.assert_allclose(o, a.reshape(-1, tpb).sum(1), rtol=1e-4, atol=1e-5)


def test_axis_sum():
    rows, cols = 4, 6
    a = rand(rows, cols)
    src = """
        threadgroup float cache[8];
        uint l = thread_position_in_threadgroup.x;
        uint row = threadgroup_position_in_grid.y;
        cache[l] = l < a_shape[1] ? a[row * a_shape[1] + l] : 0.0f;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint s = 4; s > 0; s /= 2) {
            if (l < s) cache[l] = cache[l] + cache[l + s];
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        if (l == 0) out[row] = cache[0];
    """
    (o,) = run(src, ["a"], [("out", (rows,), mx.float32)], (8, rows, 1), (8, 1, 1), [mx.array(a)])
    np.testing.assert_allclose(o, a.sum(1), rtol=1e-4, atol=1e-5)


MATMUL_HEADER = """
constant uint TILE = 4;
"""

MATMUL = """
    threadgroup float As[TILE][TILE];
    threadgroup float Bs[TILE][TILE];
    uint2 t = thread_position_in_threadgroup.xy;
    uint col = thread_position_in_grid.x;
    uint row = thread_position_in_grid.y;
    uint n = a_shape[1];
    float acc = 0.0f;
    for (uint k0 = 0; k0 < n; k0 += TILE) {
        As[t.y][t.x] = (row < a_shape[0] && k0 + t.x < n) ? a[row * n + k0 + t.x] : 0.0f;
        Bs[t.y][t.x] = (k0 + t.y < n && col < b_shape[1]) ? b[(k0 + t.y) * b_shape[1] + col] : 0.0f;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint k = 0; k < TILE; ++k) {
            acc += As[t.y][k] * Bs[k][t.x];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (row < a_shape[0] && col < b_shape[1]) out[row * b_shape[1] + col] = acc;
"""


def test_tiled_matmul_transposed_input():
    m, n, p = 6, 7, 5
    a = rand(m, n)
    bt = rand(p, n)
    b = mx.array(bt).T          # a transposed (non-contiguous) input, copied by ensure_row_contiguous
    (o,) = run(MATMUL, ["a", "b"], [("out", (m, p), mx.float32)], (8, 8, 1), (4, 4, 1),
               [mx.array(a), b], header=MATMUL_HEADER)
    np.testing.assert_allclose(o, a @ bt.T, rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------- MLX's documented examples

EXP = """
    uint elem = thread_position_in_grid.x;
    T tmp = inp[elem];
    out[elem] = metal::exp(tmp);
"""


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16])
def test_mlx_doc_exp(dtype):
    a = mx.random.normal(shape=(4, 16)).astype(dtype)
    k = metal_kernel(name="myexp", input_names=["inp"], output_names=["out"], source=EXP)
    (b,) = k(inputs=[a], template=[("T", mx.float32)], grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
             output_shapes=[a.shape], output_dtypes=[a.dtype], backend=BACKEND)
    assert b.dtype == dtype
    assert mx.allclose(b, mx.exp(a), rtol=1e-3, atol=1e-3).item()


EXP_STRIDED = """
    uint elem = thread_position_in_grid.x;
    // Utils from `mlx/backend/metal/kernels/utils.h` are automatically included
    uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
    T tmp = inp[loc];
    // Output arrays are always row contiguous
    out[elem] = metal::exp(tmp);
"""


@pytest.mark.parametrize("view", ["rows", "transpose"])
def test_mlx_doc_exp_strided(view):
    a = mx.random.normal(shape=(4, 16)).astype(mx.float16)
    a = a[::2] if view == "rows" else a.T
    k = metal_kernel(name="myexp_strided", input_names=["inp"], output_names=["out"],
                     source=EXP_STRIDED, ensure_row_contiguous=False)
    (b,) = k(inputs=[a], template=[("T", mx.float32)], grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
             output_shapes=[a.shape], output_dtypes=[a.dtype], backend=BACKEND)
    assert mx.allclose(b, mx.exp(a), rtol=1e-3, atol=1e-3).item()


def test_strided_input_keeps_its_strides():
    a = mx.arange(12, dtype=mx.float32).reshape(3, 4).T     # strides (1, 4)
    src = "uint e = thread_position_in_grid.x;\nout[e] = float(inp_strides[e % 2]);"
    k = metal_kernel(name="s", input_names=["inp"], output_names=["out"], source=src,
                     ensure_row_contiguous=False)
    (b,) = k(inputs=[a], grid=(2, 1, 1), threadgroup=(2, 1, 1), output_shapes=[(2,)],
             output_dtypes=[mx.float32], backend=BACKEND)
    assert b.tolist() == [1.0, 4.0]
    k2 = metal_kernel(name="s", input_names=["inp"], output_names=["out"], source=src)
    (c,) = k2(inputs=[a], grid=(2, 1, 1), threadgroup=(2, 1, 1), output_shapes=[(2,)],
              output_dtypes=[mx.float32], backend=BACKEND)
    assert c.tolist() == [3.0, 1.0]


GRID_SAMPLE = """
    uint elem = thread_position_in_grid.x;
    int H = x_shape[1];
    int W = x_shape[2];
    int C = x_shape[3];
    int gH = grid_shape[1];
    int gW = grid_shape[2];

    int w_stride = C;
    int h_stride = W * w_stride;
    int b_stride = H * h_stride;

    uint grid_idx = elem / C * 2;
    float ix = ((grid[grid_idx] + 1) * W - 1) / 2;
    float iy = ((grid[grid_idx + 1] + 1) * H - 1) / 2;

    int ix_nw = floor(ix);
    int iy_nw = floor(iy);

    int ix_ne = ix_nw + 1;
    int iy_ne = iy_nw;

    int ix_sw = ix_nw;
    int iy_sw = iy_nw + 1;

    int ix_se = ix_nw + 1;
    int iy_se = iy_nw + 1;

    T nw = (ix_se - ix)    * (iy_se - iy);
    T ne = (ix    - ix_sw) * (iy_sw - iy);
    T sw = (ix_ne - ix)    * (iy    - iy_ne);
    T se = (ix    - ix_nw) * (iy    - iy_nw);

    int batch_idx = elem / C / gH / gW * b_stride;
    int channel_idx = elem % C;
    int base_idx = batch_idx + channel_idx;

    T I_nw = x[base_idx + iy_nw * h_stride + ix_nw * w_stride];
    T I_ne = x[base_idx + iy_ne * h_stride + ix_ne * w_stride];
    T I_sw = x[base_idx + iy_sw * h_stride + ix_sw * w_stride];
    T I_se = x[base_idx + iy_se * h_stride + ix_se * w_stride];

    I_nw = iy_nw >= 0 && iy_nw <= H - 1 && ix_nw >= 0 && ix_nw <= W - 1 ? I_nw : 0;
    I_ne = iy_ne >= 0 && iy_ne <= H - 1 && ix_ne >= 0 && ix_ne <= W - 1 ? I_ne : 0;
    I_sw = iy_sw >= 0 && iy_sw <= H - 1 && ix_sw >= 0 && ix_sw <= W - 1 ? I_sw : 0;
    I_se = iy_se >= 0 && iy_se <= H - 1 && ix_se >= 0 && ix_se <= W - 1 ? I_se : 0;

    out[elem] = nw * I_nw + ne * I_ne + sw * I_sw + se * I_se;
"""

GRID_SAMPLE_VJP = """
    uint elem = thread_position_in_grid.x;
    int H = x_shape[1];
    int W = x_shape[2];
    int C = x_shape[3];
    // Pad C to the nearest larger simdgroup size multiple
    int C_padded = ceildiv(C, threads_per_simdgroup) * threads_per_simdgroup;

    int gH = grid_shape[1];
    int gW = grid_shape[2];

    int w_stride = C;
    int h_stride = W * w_stride;
    int b_stride = H * h_stride;

    uint grid_idx = elem / C_padded * 2;
    float ix = ((grid[grid_idx] + 1) * W - 1) / 2;
    float iy = ((grid[grid_idx + 1] + 1) * H - 1) / 2;

    int ix_nw = floor(ix);
    int iy_nw = floor(iy);

    int ix_ne = ix_nw + 1;
    int iy_ne = iy_nw;

    int ix_sw = ix_nw;
    int iy_sw = iy_nw + 1;

    int ix_se = ix_nw + 1;
    int iy_se = iy_nw + 1;

    T nw = (ix_se - ix)    * (iy_se - iy);
    T ne = (ix    - ix_sw) * (iy_sw - iy);
    T sw = (ix_ne - ix)    * (iy    - iy_ne);
    T se = (ix    - ix_nw) * (iy    - iy_nw);

    int batch_idx = elem / C_padded / gH / gW * b_stride;
    int channel_idx = elem % C_padded;
    int base_idx = batch_idx + channel_idx;

    T gix = T(0);
    T giy = T(0);
    if (channel_idx < C) {
        int cot_index = elem / C_padded * C + channel_idx;
        T cot = cotangent[cot_index];
        if (iy_nw >= 0 && iy_nw <= H - 1 && ix_nw >= 0 && ix_nw <= W - 1) {
            int offset = base_idx + iy_nw * h_stride + ix_nw * w_stride;
            atomic_fetch_add_explicit(&x_grad[offset], nw * cot, memory_order_relaxed);

            T I_nw = x[offset];
            gix -= I_nw * (iy_se - iy) * cot;
            giy -= I_nw * (ix_se - ix) * cot;
        }
        if (iy_ne >= 0 && iy_ne <= H - 1 && ix_ne >= 0 && ix_ne <= W - 1) {
            int offset = base_idx + iy_ne * h_stride + ix_ne * w_stride;
            atomic_fetch_add_explicit(&x_grad[offset], ne * cot, memory_order_relaxed);

            T I_ne = x[offset];
            gix += I_ne * (iy_sw - iy) * cot;
            giy -= I_ne * (ix - ix_sw) * cot;
        }
        if (iy_sw >= 0 && iy_sw <= H - 1 && ix_sw >= 0 && ix_sw <= W - 1) {
            int offset = base_idx + iy_sw * h_stride + ix_sw * w_stride;
            atomic_fetch_add_explicit(&x_grad[offset], sw * cot, memory_order_relaxed);

            T I_sw = x[offset];
            gix -= I_sw * (iy - iy_ne) * cot;
            giy += I_sw * (ix_ne - ix) * cot;
        }
        if (iy_se >= 0 && iy_se <= H - 1 && ix_se >= 0 && ix_se <= W - 1) {
            int offset = base_idx + iy_se * h_stride + ix_se * w_stride;
            atomic_fetch_add_explicit(&x_grad[offset], se * cot, memory_order_relaxed);

            T I_se = x[offset];
            gix += I_se * (iy - iy_nw) * cot;
            giy += I_se * (ix - ix_nw) * cot;
        }
    }

    T gix_mult = W / 2;
    T giy_mult = H / 2;

    // Reduce across each simdgroup first.
    // This is much faster than relying purely on atomics.
    gix = simd_sum(gix);
    giy = simd_sum(giy);

    if (thread_index_in_simdgroup == 0) {
        atomic_fetch_add_explicit(&grid_grad[grid_idx], gix * gix_mult, memory_order_relaxed);
        atomic_fetch_add_explicit(&grid_grad[grid_idx + 1], giy * giy_mult, memory_order_relaxed);
    }
"""


def _corners(x, grid):
    N, H, W, C = x.shape
    ix = ((grid[..., 0] + 1) * W - 1) / 2
    iy = ((grid[..., 1] + 1) * H - 1) / 2
    ix0 = np.floor(ix).astype(np.int64)
    iy0 = np.floor(iy).astype(np.int64)
    return ix, iy, ix0, iy0


def grid_sample_ref(x, grid):
    N, H, W, C = x.shape
    ix, iy, ix0, iy0 = _corners(x, grid)
    out = np.zeros(grid.shape[:3] + (C,), np.float32)
    n = np.arange(N)[:, None, None]
    for dx, dy in ((0, 0), (1, 0), (0, 1), (1, 1)):
        xx, yy = ix0 + dx, iy0 + dy
        w = (1 - np.abs(ix - xx)) * (1 - np.abs(iy - yy))
        ok = (xx >= 0) & (xx < W) & (yy >= 0) & (yy < H)
        v = x[n, np.clip(yy, 0, H - 1), np.clip(xx, 0, W - 1), :] * ok[..., None]
        out += w[..., None] * v
    return out


def grid_sample_vjp_ref(x, grid, cot):
    N, H, W, C = x.shape
    ix, iy, ix0, iy0 = _corners(x, grid)
    xg = np.zeros_like(x)
    gg = np.zeros_like(grid)
    for b in range(N):
        for i in range(grid.shape[1]):
            for j in range(grid.shape[2]):
                gx = np.zeros(C, np.float32)
                gy = np.zeros(C, np.float32)
                for dx, dy in ((0, 0), (1, 0), (0, 1), (1, 1)):
                    xx, yy = ix0[b, i, j] + dx, iy0[b, i, j] + dy
                    if not (0 <= xx < W and 0 <= yy < H):
                        continue
                    wx = 1 - abs(ix[b, i, j] - xx)
                    wy = 1 - abs(iy[b, i, j] - yy)
                    xg[b, yy, xx] += wx * wy * cot[b, i, j]
                    sx = 1 if dx else -1
                    sy = 1 if dy else -1
                    gx += sx * wy * x[b, yy, xx] * cot[b, i, j]
                    gy += sy * wx * x[b, yy, xx] * cot[b, i, j]
                gg[b, i, j, 0] = gx.sum() * (W // 2)
                gg[b, i, j, 1] = gy.sum() * (H // 2)
    return xg, gg


def _grid_inputs():
    x = rand(2, 8, 8, 3)
    grid = RNG.uniform(-0.6, 0.6, size=(2, 3, 4, 2)).astype(np.float32)
    return x, grid


def test_mlx_doc_grid_sample():
    x, grid = _grid_inputs()
    k = metal_kernel(name="grid_sample", input_names=["x", "grid"], output_names=["out"],
                     source=GRID_SAMPLE)
    B, _, _, C = x.shape
    out_shape = (B, grid.shape[1], grid.shape[2], C)
    (o,) = k(inputs=[mx.array(x), mx.array(grid)], template=[("T", mx.float32)],
             output_shapes=[out_shape], output_dtypes=[mx.float32],
             grid=(int(np.prod(out_shape)), 1, 1), threadgroup=(256, 1, 1), backend=BACKEND)
    np.testing.assert_allclose(np.array(o), grid_sample_ref(x, grid), rtol=1e-4, atol=1e-5)


def test_mlx_doc_grid_sample_vjp_atomic_simd_sum():
    x, grid = _grid_inputs()
    B, _, _, C = x.shape
    _, gN, gM, _ = grid.shape
    cot = rand(B, gN, gM, C)
    k = metal_kernel(name="grid_sample_grad", input_names=["x", "grid", "cotangent"],
                     output_names=["x_grad", "grid_grad"], source=GRID_SAMPLE_VJP,
                     atomic_outputs=True)
    C_padded = (C + 31) // 32 * 32
    xg, gg = k(inputs=[mx.array(x), mx.array(grid), mx.array(cot)], template=[("T", mx.float32)],
               output_shapes=[x.shape, grid.shape], output_dtypes=[mx.float32, mx.float32],
               grid=(B * gN * gM * C_padded, 1, 1), threadgroup=(256, 1, 1), init_value=0,
               backend=BACKEND)
    rx, rg = grid_sample_vjp_ref(x, grid, cot)
    np.testing.assert_allclose(np.array(xg), rx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.array(gg), rg, rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------- header helpers, scalars

HELPERS = """
template <typename T>
inline T sigmoid(T x) { return T(1) / (T(1) + metal::exp(-x)); }

float weighted(const device float* v, uint i, float w) {
    return w * v[i];
}

constant float COEF[3] = {0.5f, 0.25f, 0.25f};
"""


def test_header_helpers():
    a = rand(20)
    src = """
        uint i = thread_position_in_grid.x;
        float s = 0;
        for (int k = 0; k < 3; k++) s += weighted(a, i, COEF[k]);
        out[i] = sigmoid(s) + sigmoid(half(0));
    """
    (o,) = run(src, ["a"], [("out", a.shape, mx.float32)], (20, 1, 1), (32, 1, 1), [mx.array(a)],
               header=HELPERS)
    ref = 1 / (1 + np.exp(-a)) + 0.5
    np.testing.assert_allclose(o, ref, rtol=1e-3, atol=1e-3)


def test_scalar_inputs_saxpy():
    x, y = rand(33), rand(33)
    (o,) = run("uint i = thread_position_in_grid.x;\nif (i < n) out[i] = alpha * x[i] + y[i];",
               ["alpha", "x", "y", "n"], [("out", x.shape, mx.float32)], (64, 1, 1), (32, 1, 1),
               [mx.array(2.5), mx.array(x), mx.array(y), mx.array(33, dtype=mx.int32)])
    np.testing.assert_allclose(o, 2.5 * x + y, rtol=1e-5, atol=1e-6)


def test_simd_and_atomic_counting():
    a = RNG.integers(0, 100, size=100).astype(np.int32)
    src = """
        uint i = thread_position_in_grid.x;
        int v = i < 100 ? a[i] : 0;
        int s = simd_sum(v);
        if (thread_index_in_simdgroup == 0) atomic_fetch_add_explicit(&out[0], s, memory_order_relaxed);
        if (i < 100 && v > 50) atomic_fetch_add_explicit(&out[1], 1, memory_order_relaxed);
    """
    (o,) = run(src, ["a"], [("out", (2,), mx.int32)], (128, 1, 1), (64, 1, 1), [mx.array(a)],
               atomic_outputs=True, init_value=0)
    assert o.tolist() == [int(a.sum()), int((a > 50).sum())]


def test_uninitialised_outputs_are_poisoned_and_init_value_fills():
    src = "uint i = thread_position_in_grid.x;\nif (i == 0) out[0] = 1;"
    (o,) = run(src, [], [("out", (3,), mx.float32)], (3, 1, 1), (3, 1, 1), [])
    assert o[0] == 1
    if BACKEND == "sim":        # on a GPU, unwritten elements hold whatever the memory held
        assert np.isnan(o[1:]).all()
    (o,) = run(src, [], [("out", (3,), mx.float32)], (3, 1, 1), (3, 1, 1), [], init_value=7)
    assert o.tolist() == [1, 7, 7]


def test_checked_finding_points_at_body_line():
    from metalbench.errors import KernelCheckError
    k = metal_kernel(name="oob", input_names=["a"], output_names=["out"],
                     source="\n    uint i = thread_position_in_grid.x;\n    out[i] = a[i + 1];\n")
    a = mx.zeros(8)
    with pytest.raises(KernelCheckError) as e:
        k(inputs=[a], grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(8,)],
          output_dtypes=[mx.float32], backend="sim", checked=True)
    assert "out[i] = a[i + 1];" in str(e.value)


def test_puzzles_have_no_findings_when_checked(monkeypatch):
    monkeypatch.setenv("METALBENCH_CHECKED", "1")
    test_conv1d_halo_two_threadgroups()
    test_tiled_matmul_transposed_input()
    test_block_sums()
    test_mlx_doc_grid_sample_vjp_atomic_simd_sum()
