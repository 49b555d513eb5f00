"""MSL bodies on NVIDIA: real MLX kernels through ``mb.metal_kernel`` on the cuda backend
against the same algorithms hand-written for ``mx.fast.cuda_kernel`` (issue 18, item 3).

The kernels are MLX's documented custom kernels (``tests/test_metal_kernel.py`` holds
their MSL verbatim): ``myexp`` (elementwise, the docs' first example),
``grid_sample`` (bilinear sampling, forward) and ``grid_sample_vjp`` (its VJP:
per-element atomics into ``x_grad`` plus a SIMD-group sum before the ``grid_grad``
atomics). Each CUDA twin is the line-for-line port a CUDA programmer writes
(``__shfl_xor_sync`` for ``simd_sum``, ``atomicAdd`` for the relaxed atomics).

    python benchmarks/msl_cuda.py                     # on the H200: a table, raw/mb per kernel
    python benchmarks/msl_cuda.py --backend sim       # the metalbench side only, small, checked
    python benchmarks/msl_cuda.py --json out.json

Timing as ``benchmarks/gpu.py``: launches queued back to back, one synchronisation per
batch, median over batches.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import metalbench as mb  # noqa: E402
from test_metal_kernel import EXP, GRID_SAMPLE, GRID_SAMPLE_VJP, grid_sample_ref, grid_sample_vjp_ref  # noqa: E402

CUDA_EXP = """
    uint32_t elem = blockIdx.x * blockDim.x + threadIdx.x;
    T tmp = inp[elem];
    out[elem] = expf(tmp);
"""

CUDA_GRID_SAMPLE = """
    uint32_t elem = blockIdx.x * blockDim.x + threadIdx.x;
    int H = x_shape[1], W = x_shape[2], C = x_shape[3];
    int gH = grid_shape[1], gW = grid_shape[2];
    int w_stride = C, h_stride = W * w_stride, b_stride = H * h_stride;
    uint32_t grid_idx = elem / C * 2;
    float ix = ((grid[grid_idx] + 1) * W - 1) / 2;
    float iy = ((grid[grid_idx + 1] + 1) * H - 1) / 2;
    int ix_nw = floorf(ix), iy_nw = floorf(iy);
    int ix_ne = ix_nw + 1, iy_ne = iy_nw, ix_sw = ix_nw, iy_sw = iy_nw + 1, ix_se = ix_nw + 1, iy_se = iy_nw + 1;
    T nw = (ix_se - ix) * (iy_se - iy);
    T ne = (ix - ix_sw) * (iy_sw - iy);
    T sw = (ix_ne - ix) * (iy - iy_ne);
    T se = (ix - ix_nw) * (iy - iy_nw);
    int base_idx = elem / C / gH / gW * b_stride + elem % C;
    T I_nw = x[base_idx + iy_nw * h_stride + ix_nw * w_stride];
    T I_ne = x[base_idx + iy_ne * h_stride + ix_ne * w_stride];
    T I_sw = x[base_idx + iy_sw * h_stride + ix_sw * w_stride];
    T I_se = x[base_idx + iy_se * h_stride + ix_se * w_stride];
    I_nw = iy_nw >= 0 && iy_nw <= H - 1 && ix_nw >= 0 && ix_nw <= W - 1 ? I_nw : T(0);
    I_ne = iy_ne >= 0 && iy_ne <= H - 1 && ix_ne >= 0 && ix_ne <= W - 1 ? I_ne : T(0);
    I_sw = iy_sw >= 0 && iy_sw <= H - 1 && ix_sw >= 0 && ix_sw <= W - 1 ? I_sw : T(0);
    I_se = iy_se >= 0 && iy_se <= H - 1 && ix_se >= 0 && ix_se <= W - 1 ? I_se : T(0);
    out[elem] = nw * I_nw + ne * I_ne + sw * I_sw + se * I_se;
"""

CUDA_GRID_SAMPLE_VJP = """
    uint32_t elem = blockIdx.x * blockDim.x + threadIdx.x;
    int H = x_shape[1], W = x_shape[2], C = x_shape[3];
    int C_padded = (C + 31) / 32 * 32;
    int gH = grid_shape[1], gW = grid_shape[2];
    int w_stride = C, h_stride = W * w_stride, b_stride = H * h_stride;
    uint32_t grid_idx = elem / C_padded * 2;
    float ix = ((grid[grid_idx] + 1) * W - 1) / 2;
    float iy = ((grid[grid_idx + 1] + 1) * H - 1) / 2;
    int ix_nw = floorf(ix), iy_nw = floorf(iy);
    int ix_ne = ix_nw + 1, iy_ne = iy_nw, ix_sw = ix_nw, iy_sw = iy_nw + 1, ix_se = ix_nw + 1, iy_se = iy_nw + 1;
    T nw = (ix_se - ix) * (iy_se - iy);
    T ne = (ix - ix_sw) * (iy_sw - iy);
    T sw = (ix_ne - ix) * (iy - iy_ne);
    T se = (ix - ix_nw) * (iy - iy_nw);
    int channel_idx = elem % C_padded;
    int base_idx = elem / C_padded / gH / gW * b_stride + channel_idx;
    T gix = T(0), giy = T(0);
    if (channel_idx < C) {
        T cot = cotangent[elem / C_padded * C + channel_idx];
        if (iy_nw >= 0 && iy_nw <= H - 1 && ix_nw >= 0 && ix_nw <= W - 1) {
            int off = base_idx + iy_nw * h_stride + ix_nw * w_stride;
            atomicAdd(&x_grad[off], nw * cot);
            gix -= x[off] * (iy_se - iy) * cot; giy -= x[off] * (ix_se - ix) * cot;
        }
        if (iy_ne >= 0 && iy_ne <= H - 1 && ix_ne >= 0 && ix_ne <= W - 1) {
            int off = base_idx + iy_ne * h_stride + ix_ne * w_stride;
            atomicAdd(&x_grad[off], ne * cot);
            gix += x[off] * (iy_sw - iy) * cot; giy -= x[off] * (ix - ix_sw) * cot;
        }
        if (iy_sw >= 0 && iy_sw <= H - 1 && ix_sw >= 0 && ix_sw <= W - 1) {
            int off = base_idx + iy_sw * h_stride + ix_sw * w_stride;
            atomicAdd(&x_grad[off], sw * cot);
            gix -= x[off] * (iy - iy_ne) * cot; giy += x[off] * (ix_ne - ix) * cot;
        }
        if (iy_se >= 0 && iy_se <= H - 1 && ix_se >= 0 && ix_se <= W - 1) {
            int off = base_idx + iy_se * h_stride + ix_se * w_stride;
            atomicAdd(&x_grad[off], se * cot);
            gix += x[off] * (iy - iy_nw) * cot; giy += x[off] * (ix - ix_nw) * cot;
        }
    }
    T gix_mult = W / 2, giy_mult = H / 2;
    for (int o = 16; o > 0; o >>= 1) {
        gix += __shfl_xor_sync(0xffffffffu, gix, o);
        giy += __shfl_xor_sync(0xffffffffu, giy, o);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(&grid_grad[grid_idx], gix * gix_mult);
        atomicAdd(&grid_grad[grid_idx + 1], giy * giy_mult);
    }
"""


def cases(quick: bool, backend: str):
    """(name, MSL, CUDA twin, inputs, outputs, grid, kwargs, check) per kernel and size."""
    import mlx.core as mx
    small = quick or backend == "sim"
    rng = np.random.default_rng(0)
    n = 1 << 12 if small else 1 << 24
    a = rng.standard_normal(n).astype(np.float32)
    yield ("myexp", EXP, CUDA_EXP, ["inp"], {"inp": a}, [("out", (n,))], (n, 1, 1), {},
           lambda outs: np.allclose(outs[0], np.exp(a), rtol=1e-4, atol=1e-6))
    B, H, W, C, gH, gW = (1, 8, 8, 32, 4, 4) if small else (8, 256, 256, 32, 256, 256)
    x = rng.standard_normal((B, H, W, C)).astype(np.float32)
    g = rng.uniform(-1, 1, size=(B, gH, gW, 2)).astype(np.float32)
    out_shape = (B, gH, gW, C)
    yield ("grid_sample", GRID_SAMPLE, CUDA_GRID_SAMPLE, ["x", "grid"], {"x": x, "grid": g},
           [("out", out_shape)], (int(np.prod(out_shape)), 1, 1), {},
           lambda outs: np.allclose(outs[0], grid_sample_ref(x, g), rtol=1e-4, atol=1e-4))
    cot = rng.standard_normal(out_shape).astype(np.float32)
    grid_n = B * gH * gW * ((C + 31) // 32 * 32)
    yield ("grid_sample_vjp", GRID_SAMPLE_VJP, CUDA_GRID_SAMPLE_VJP, ["x", "grid", "cotangent"],
           {"x": x, "grid": g, "cotangent": cot}, [("x_grad", x.shape), ("grid_grad", g.shape)],
           (grid_n, 1, 1), {"init_value": 0, "atomic_outputs": True},
           _vjp_check(x, g, cot) if small else None)     # (the NumPy reference loops in Python: small only)
    del mx


def _vjp_check(x, g, cot):
    def check(outs):
        rx, rg = grid_sample_vjp_ref(x, g, cot)
        return np.allclose(outs[0], rx, rtol=1e-4, atol=1e-4) and np.allclose(outs[1], rg, rtol=1e-4, atol=1e-3)
    return check


def run(backend: str, quick: bool):
    import mlx.core as mx
    from gpu import median_time
    rows = []
    for name, msl, cu, in_names, inputs, outs, grid, kw, check in cases(quick, backend):
        kw = dict(kw)
        atomic = kw.pop("atomic_outputs", False)
        k = mb.metal_kernel(name=name, input_names=in_names, output_names=[o for o, _ in outs], source=msl,
                            atomic_outputs=atomic)
        args = [mx.array(inputs[nm]) for nm in in_names]
        call = dict(template=[("T", mx.float32)], grid=grid, threadgroup=(256, 1, 1),
                    output_shapes=[s for _, s in outs], output_dtypes=[mx.float32] * len(outs), **kw)

        def mb_fn():
            return k(inputs=args, backend=backend, **call)
        got = [np.array(o) for o in mb_fn()]
        row = {"kernel": name, "grid": grid[0], "ok": bool(check(got)) if check else None}
        if backend != "sim":
            row["mb_ms"] = median_time(mb_fn) * 1e3
            raw = mx.fast.cuda_kernel(name=f"raw_{name}", input_names=in_names,
                                      output_names=[o for o, _ in outs], source=cu)

            def raw_fn():
                return raw(inputs=args, **call)
            ref = [np.array(o) for o in raw_fn()]
            row["raw_matches_mb"] = all(np.allclose(a_, b_, rtol=1e-3, atol=1e-3) for a_, b_ in zip(got, ref))
            row["raw_ms"] = median_time(raw_fn) * 1e3
            row["raw/mb"] = row["raw_ms"] / row["mb_ms"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cuda", help="cuda (default) or sim (the metalbench side, small)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    rows = run(a.backend, a.quick)
    keys = ["kernel", "grid", "ok", "mb_ms", "raw_ms", "raw/mb", "raw_matches_mb"]
    print("| " + " | ".join(keys) + " |\n|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(f"{r[k]:.4g}" if isinstance(r.get(k), float) else str(r.get(k, "")) for k in keys) + " |")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0 if all(r["ok"] is not False and r.get("raw_matches_mb", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
