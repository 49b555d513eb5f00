"""Generated VJPs on the GPU: MLX's bilinear grid_sample (docs, "Custom Metal Kernels").

For each size the table gives the median time of the backward pass computed by

- ``generated``     the adjoint kernel metalbench generates from the DSL forward kernel
                    (``grid_sample.vjp``; SIMD-group aggregation of gradient atomics on),
- ``generated-noagg``  the same without aggregation (``aggregate=False``),
- ``hand``          a hand-written VJP kernel in MSL (the algorithm of MLX's docs: a
                    thread per (grid point, channel padded to 32), atomics into x_grad,
                    ``simd_sum`` then one atomic per SIMD-group into grid_grad), launched
                    through ``mb.metal_kernel`` on the backend,
- ``mlx-ops``       ``mx.vjp`` of grid_sample written with MLX ops (gather + arithmetic),
                    and the same under ``mx.compile``,

and checks that all gradients agree. The target: generated at least 0.8x the speed of
the hand-written kernel (hand / generated >= 0.8).

    python benchmarks/autodiff_gpu.py                      # backend cuda (or METALBENCH_BACKEND)
    python benchmarks/autodiff_gpu.py --quick              # small sizes only
    python benchmarks/autodiff_gpu.py --backend sim --quick   # the correctness part, anywhere

Timing: wall clock around the call + ``mx.eval`` + ``mx.synchronize()``, after warm-up,
median of the repeats; inputs are created on the device. Results go to stdout and,
with ``--json PATH``, to a file.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time

import mlx.core as mx
import numpy as np

import metalbench as mb
from metalbench.dsl import *  # noqa: F401,F403


# ----------------------------------------------------------------------------- the forward kernel (DSL)

@mb.func
def tap(x, base, yy, xx, H, W, C):
    # one corner of the bilinear stencil; zero outside the image
    if yy >= 0 and yy < H and xx >= 0 and xx < W:
        return x[base + (yy * W + xx) * C]
    return 0.0


@mb.kernel
def grid_sample(x, grid, out: mb.Out(shape=lambda x, grid: (x.shape[0], grid.shape[1], grid.shape[2], x.shape[3]))):
    # a thread per output element (batch, row, column, channel)
    elem = thread_position_in_grid.x
    H = x.shape[1]
    W = x.shape[2]
    C = x.shape[3]
    if elem >= grid.shape[0] * grid.shape[1] * grid.shape[2] * C:
        return
    p = elem // C
    c = elem % C
    ix = ((grid[2 * p] + 1.0) * W - 1.0) / 2.0
    iy = ((grid[2 * p + 1] + 1.0) * H - 1.0) / 2.0
    x0 = int(metal.floor(ix))
    y0 = int(metal.floor(iy))
    fx = ix - float(x0)
    fy = iy - float(y0)
    base = p // (grid.shape[1] * grid.shape[2]) * H * W * C + c
    top = (1.0 - fx) * tap(x, base, y0, x0, H, W, C) + fx * tap(x, base, y0, x0 + 1, H, W, C)
    bottom = (1.0 - fx) * tap(x, base, y0 + 1, x0, H, W, C) + fx * tap(x, base, y0 + 1, x0 + 1, H, W, C)
    out[elem] = (1.0 - fy) * top + fy * bottom


# ----------------------------------------------------------------------------- the hand-written VJP (MSL)

HAND_VJP = """
uint tid = thread_position_in_grid.x;
int H = x_shape[1];
int W = x_shape[2];
int C = x_shape[3];
int Cp = (C + 31) / 32 * 32;            // channels padded to whole SIMD-groups
int gH = grid_shape[1];
int gW = grid_shape[2];
int p = tid / Cp;                       // the grid point (batch, row, column)
int c = tid % Cp;
int b = p / (gH * gW);
float ix = ((grid[2 * p] + 1) * W - 1) / 2;
float iy = ((grid[2 * p + 1] + 1) * H - 1) / 2;
int x0 = floor(ix);
int y0 = floor(iy);
float fx = ix - x0;
float fy = iy - y0;
float gx = 0;
float gy = 0;
if (c < C) {
    float ct = cotangent[p * C + c];
    int base = b * H * W * C + c;
    for (int t = 0; t < 4; t++) {
        int dx = t & 1;
        int dy = t >> 1;
        int xx = x0 + dx;
        int yy = y0 + dy;
        if (xx >= 0 && xx < W && yy >= 0 && yy < H) {
            float wx = dx ? fx : 1 - fx;
            float wy = dy ? fy : 1 - fy;
            int off = base + (yy * W + xx) * C;
            atomic_fetch_add_explicit(&x_grad[off], wx * wy * ct, memory_order_relaxed);
            float v = x[off] * ct;
            gx += (dx ? v : -v) * wy;
            gy += (dy ? v : -v) * wx;
        }
    }
}
gx = simd_sum(gx);
gy = simd_sum(gy);
if (thread_index_in_simdgroup == 0) {
    atomic_fetch_add_explicit(&grid_grad[2 * p], gx * W / 2, memory_order_relaxed);
    atomic_fetch_add_explicit(&grid_grad[2 * p + 1], gy * H / 2, memory_order_relaxed);
}
"""

hand_kernel = mb.metal_kernel(name="grid_sample_vjp_hand", input_names=["x", "grid", "cotangent"],
                              output_names=["x_grad", "grid_grad"], source=HAND_VJP, atomic_outputs=True)


def hand_vjp(x, grid, ct, backend):
    B, gH, gW, _ = grid.shape
    Cp = (x.shape[3] + 31) // 32 * 32
    return hand_kernel(inputs=[x, grid, ct], grid=(B * gH * gW * Cp, 1, 1), threadgroup=(256, 1, 1),
                       output_shapes=[x.shape, grid.shape], output_dtypes=[mx.float32, mx.float32],
                       init_value=0, backend=backend)


# ----------------------------------------------------------------------------- MLX ops

def grid_sample_mx(x, grid):
    N, H, W, C = x.shape
    ix = ((grid[..., 0] + 1) * W - 1) / 2
    iy = ((grid[..., 1] + 1) * H - 1) / 2
    x0 = mx.stop_gradient(mx.floor(ix)).astype(mx.int32)
    y0 = mx.stop_gradient(mx.floor(iy)).astype(mx.int32)
    fx, fy = (ix - x0)[..., None], (iy - y0)[..., None]
    n = mx.arange(N)[:, None, None]

    def corner(yy, xx):
        inside = (yy >= 0) & (yy < H) & (xx >= 0) & (xx < W)
        return x[n, mx.clip(yy, 0, H - 1), mx.clip(xx, 0, W - 1), :] * inside[..., None]
    return ((1 - fy) * ((1 - fx) * corner(y0, x0) + fx * corner(y0, x0 + 1))
            + fy * ((1 - fx) * corner(y0 + 1, x0) + fx * corner(y0 + 1, x0 + 1)))


# ----------------------------------------------------------------------------- timing

def timeit(fn, repeats):
    for _ in range(3):
        mx.eval(fn())
    mx.synchronize()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        mx.eval(fn())
        mx.synchronize()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


SIZES = [  # (B, H, W, C, gH, gW)
    (1, 64, 64, 32, 32, 32),
    (8, 256, 256, 64, 128, 128),
    (8, 1024, 1024, 64, 256, 256),      # the MLX docs' size
]


def run(backend: str, sizes, repeats: int) -> list[dict]:
    rows = []
    for B, H, W, C, gH, gW in sizes:
        x = mx.random.normal((B, H, W, C))
        grid = mx.random.uniform(-1.05, 1.05, (B, gH, gW, 2))
        ct = mx.random.normal((B, gH, gW, C))
        mx.eval(x, grid, ct)
        n = B * gH * gW * C

        def generated(aggregate=True):
            return list(grid_sample.vjp(x, grid, cotangents=ct, grid=n, threadgroup=256, backend=backend,
                                        aggregate=aggregate))

        def mlx_ops():
            return mx.vjp(grid_sample_mx, [x, grid], [ct])[1]
        compiled = mx.compile(lambda a, g, c: mx.vjp(grid_sample_mx, [a, g], [c])[1])
        gx, gg = generated()
        hx, hg = hand_vjp(x, grid, ct, backend)
        wx, wg = mlx_ops()
        err = dict(
            gen_vs_mlx=(float(mx.abs(gx - wx).max()), float(mx.abs(gg - wg).max())),
            hand_vs_mlx=(float(mx.abs(hx - wx).max()), float(mx.abs(hg - wg).max())),
            scale=(float(mx.abs(wx).max()), float(mx.abs(wg).max())))
        r = dict(size=f"x {B}x{H}x{W}x{C}, grid {B}x{gH}x{gW}", threads=n, errors=err)
        if backend != "sim":
            r["generated_ms"] = 1e3 * timeit(generated, repeats)
            r["generated_noagg_ms"] = 1e3 * timeit(lambda: generated(False), repeats)
            r["hand_ms"] = 1e3 * timeit(lambda: hand_vjp(x, grid, ct, backend), repeats)
            r["mlx_ops_ms"] = 1e3 * timeit(mlx_ops, repeats)
            r["mlx_ops_compiled_ms"] = 1e3 * timeit(lambda: compiled(x, grid, ct), repeats)
            r["forward_ms"] = 1e3 * timeit(lambda: grid_sample(x, grid, grid=n, threadgroup=256, backend=backend),
                                           repeats)
            r["hand_over_generated"] = r["hand_ms"] / r["generated_ms"]
        rows.append(r)
        print(json.dumps(r), flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default=None, help="cuda (default), metal or sim")
    ap.add_argument("--quick", action="store_true", help="the smallest size only")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--json", default=None, help="write the rows to this file")
    a = ap.parse_args(argv)
    backend = mb.resolve_backend(a.backend or "auto")
    sizes = SIZES[:1] if a.quick else SIZES
    if backend == "sim":
        sizes = [(1, 8, 8, 32, 4, 4)]
    print(f"# autodiff_gpu: backend {backend}, mlx {mx.__version__}, {platform.platform()}", flush=True)
    rows = run(backend, sizes, a.repeats)
    print()
    print("| size | forward | generated VJP | generated, no aggregation | hand-written VJP | MLX ops VJP | "
          "MLX ops VJP, compiled | hand / generated |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if "hand_ms" in r:
            print(f"| {r['size']} | {r['forward_ms']:.3f} ms | {r['generated_ms']:.3f} ms | "
                  f"{r['generated_noagg_ms']:.3f} ms | {r['hand_ms']:.3f} ms | {r['mlx_ops_ms']:.3f} ms | "
                  f"{r['mlx_ops_compiled_ms']:.3f} ms | {r['hand_over_generated']:.2f}x |")
    bad = [r for r in rows for k in ("gen_vs_mlx", "hand_vs_mlx")
           if any(e > 1e-3 * max(1.0, s) for e, s in zip(r["errors"][k], r["errors"]["scale"]))]
    print("gradients agree" if not bad else f"GRADIENTS DIFFER: {bad}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(backend=backend, mlx=mx.__version__, rows=rows), f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
