"""GEMM in the DSL: SIMD-group matrices against scalar register blocking, both against
MLX's own matmul (issue 19).

- ``scalar``  each thread computes a TM x TN block of C from threadgroup tiles of A and B
              (register blocking with ``local_array`` and ``static_range``: scalar FMAs);
- ``sgmat``   each SIMD-group computes a block of 8x8 accumulators with
              ``simdgroup_multiply_accumulate`` from threadgroup tiles that are filled with
              ``float4`` vector loads (``a.view(float4)``);
- ``sgmat16`` the same on half inputs with a float accumulator (on CUDA the tensor-core
              path runs when ``METALBENCH_CUDA_TENSOR_CORES=1``);
- ``mlx``     ``a @ b``.

    python benchmarks/dsl_gemm.py                 # backend from METALBENCH_BACKEND / auto
    METALBENCH_CUDA_TENSOR_CORES=1 python benchmarks/dsl_gemm.py --backend cuda
    python benchmarks/dsl_gemm.py --check         # the kernels against NumPy on the simulator

Timing as ``benchmarks/gpu.py`` (median of repeated launch + ``mx.eval`` + synchronise).
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time

import numpy as np

import metalbench as mb
from metalbench.dsl import *  # noqa: F401,F403


@mb.kernel
def gemm_scalar(a, b, c: mb.Out(shape=lambda a, b: (a.shape[0], b.shape[1]), dtype=mb.float32),
                BM: mb.constexpr = 64, BN: mb.constexpr = 64, BK: mb.constexpr = 16,
                TM: mb.constexpr = 4, TN: mb.constexpr = 4):
    # threadgroup (BN // TN, BM // TM): thread (tx, ty) owns rows ty*TM.., columns tx*TN..
    K = a.shape[1]
    N = b.shape[1]
    NT = (BM // TM) * (BN // TN)
    As = threadgroup_array((BM, BK), float32)
    Bs = threadgroup_array((BK, BN), float32)
    tx = thread_position_in_threadgroup.x
    ty = thread_position_in_threadgroup.y
    tid = thread_index_in_threadgroup
    row0 = threadgroup_position_in_grid.y * BM
    col0 = threadgroup_position_in_grid.x * BN
    acc = local_array((TM, TN), float32)
    for i in static_range(TM):
        for j in static_range(TN):
            acc[i, j] = 0.0
    for k0 in range(0, K, BK):
        for e in range(tid, BM * BK, NT):
            As[e // BK, e % BK] = a[row0 + e // BK, k0 + e % BK]
        for e in range(tid, BK * BN, NT):
            Bs[e // BN, e % BN] = b[k0 + e // BN, col0 + e % BN]
        threadgroup_barrier(mem_flags.mem_threadgroup)
        for kk in range(BK):
            ra = local_array(TM, float32)
            for i in static_range(TM):
                ra[i] = As[ty * TM + i, kk]
            for j in static_range(TN):
                bv = Bs[kk, tx * TN + j]
                for i in static_range(TM):
                    acc[i, j] += ra[i] * bv
        threadgroup_barrier(mem_flags.mem_threadgroup)
    for i in static_range(TM):
        for j in static_range(TN):
            c[row0 + ty * TM + i, col0 + tx * TN + j] = acc[i, j]


@mb.kernel
def gemm_sgmat(a, b, c: mb.Out(shape=lambda a, b: (a.shape[0], b.shape[1]), dtype=mb.float32),
               BM: mb.constexpr = 64, BN: mb.constexpr = 64, BK: mb.constexpr = 16,
               WM: mb.constexpr = 2, WN: mb.constexpr = 2,
               DT: mb.constexpr = float32, VT: mb.constexpr = float4, MT: mb.constexpr = simdgroup_float8x8):
    # WM x WN SIMD-groups, each a (BM // WM) x (BN // WN) block of 8x8 float accumulators;
    # tiles of A and B (element type DT) staged in threadgroup memory by 4-wide vector loads
    TM = BM // WM // 8
    TN = BN // WN // 8
    NT = WM * WN * 32
    K = a.shape[1]
    N = b.shape[1]
    As = threadgroup_array((BM, BK), DT)
    Bs = threadgroup_array((BK, BN), DT)
    tid = thread_index_in_threadgroup
    sg = simdgroup_index_in_threadgroup
    sm = sg // WN
    sn = sg % WN
    row0 = threadgroup_position_in_grid.y * BM
    col0 = threadgroup_position_in_grid.x * BN
    acc = local_array((TM, TN), simdgroup_float8x8)
    for i in static_range(TM):
        for j in static_range(TN):
            acc[i, j] = simdgroup_float8x8(0)
    a4 = a.view(VT)
    b4 = b.view(VT)
    As4 = As.view(VT)
    Bs4 = Bs.view(VT)
    for k0 in range(0, K, BK):
        for e in range(tid, BM * BK // 4, NT):
            As4[e] = a4[((row0 + e // (BK // 4)) * K + k0) // 4 + e % (BK // 4)]
        for e in range(tid, BK * BN // 4, NT):
            Bs4[e] = b4[((k0 + e // (BN // 4)) * N + col0) // 4 + e % (BN // 4)]
        threadgroup_barrier(mem_flags.mem_threadgroup)
        for kk in static_range(0, BK, 8):
            fa = local_array(TM, MT)
            fb = local_array(TN, MT)
            for i in static_range(TM):
                simdgroup_load(fa[i], As, BK, (kk, sm * TM * 8 + i * 8))
            for j in static_range(TN):
                simdgroup_load(fb[j], Bs, BN, (sn * TN * 8 + j * 8, kk))
            for i in static_range(TM):
                for j in static_range(TN):
                    simdgroup_multiply_accumulate(acc[i, j], fa[i], fb[j], acc[i, j])
        threadgroup_barrier(mem_flags.mem_threadgroup)
    for i in static_range(TM):
        for j in static_range(TN):
            simdgroup_store(acc[i, j], c, N, (col0 + sn * TN * 8 + j * 8, row0 + sm * TM * 8 + i * 8))


SCALAR = dict(BM=64, BN=64, BK=16, TM=4, TN=4)
SGMAT = dict(BM=64, BN=64, BK=16, WM=2, WN=2)
HALF = dict(SGMAT, DT=float16, VT=half4, MT=simdgroup_half8x8)


def launches(m: int, n: int):
    """(name, kernel, constexprs, grid, threadgroup, half inputs) of each DSL GEMM for an
    m x n result (m, n multiples of 64; k a multiple of 16)."""
    s, g = SCALAR, SGMAT
    tg_s = (s["BN"] // s["TN"], s["BM"] // s["TM"], 1)
    tg_g = (32 * g["WM"] * g["WN"], 1, 1)
    return [("scalar", gemm_scalar, s, (n // s["BN"] * tg_s[0], m // s["BM"] * tg_s[1], 1), tg_s, False),
            ("sgmat", gemm_sgmat, g, (n // g["BN"] * tg_g[0], m // g["BM"], 1), tg_g, False),
            ("sgmat16", gemm_sgmat, HALF, (n // g["BN"] * tg_g[0], m // g["BM"], 1), tg_g, True)]


def check(m=128, k=48, n=128, checked=True):
    """Every kernel against NumPy on the simulator (what the tests run)."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    out = {}
    for name, kern, kw, grid, tg, half in launches(m, n):
        x, y = (a.astype(np.float16), b.astype(np.float16)) if half else (a, b)
        got = np.asarray(kern(x, y, grid=grid, threadgroup=tg, backend="sim", checked=checked, **kw))
        ref = x.astype(np.float64) @ y.astype(np.float64)
        out[name] = float(np.abs(got - ref).max())
    return out


def run(backend: str, sizes, reps: int):
    import mlx.core as mx
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from gpu import median_time
    rows = []
    for n in sizes:
        mx.random.seed(0)
        a, b = mx.random.normal((n, n)), mx.random.normal((n, n))
        a16, b16 = a.astype(mx.float16), b.astype(mx.float16)
        ref = np.array(a) @ np.array(b)
        row = dict(size=n, mlx_ms=median_time(lambda: a @ b, reps=reps) * 1e3,
                   mlx16_ms=median_time(lambda: a16 @ b16, reps=reps) * 1e3)
        for name, kern, kw, grid, tg, half in launches(n, n):
            x, y = (a16, b16) if half else (a, b)

            def fn():
                return kern(x, y, grid=grid, threadgroup=tg, backend=backend, **kw)
            got = np.array(fn())
            row[name + "_ok"] = bool(np.allclose(got, ref, rtol=2e-2 if half else 1e-3,
                                                 atol=(2e-2 if half else 1e-3) * float(np.abs(ref).max())))
            row[name + "_ms"] = median_time(fn, reps=reps) * 1e3
            row[name + "_TFLOP/s"] = 2 * n ** 3 / (row[name + "_ms"] * 1e-3) / 1e12
        row["sgmat/scalar speedup"] = row["scalar_ms"] / row["sgmat_ms"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default=None, help="cuda or metal (default: auto)")
    ap.add_argument("--sizes", default="1024,2048,4096")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--check", action="store_true", help="check the kernels on the simulator and exit")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if args.check:
        print(json.dumps(check()))
        return 0
    backend = mb.resolve_backend(args.backend or "auto")
    if backend == "sim":
        print("no GPU backend here (metal or cuda); nothing to measure (--check runs the simulator)",
              file=sys.stderr)
        return 0
    import mlx.core as mx
    from metalbench.codegen.matrix import tensor_cores_enabled
    tc = backend == "cuda" and tensor_cores_enabled()
    print(f"# {platform.node()} {backend} mlx {mx.__version__} {time.strftime('%Y-%m-%d')}; CUDA tensor cores for "
          f"half matrices: {'on' if tc else 'off (exact shuffle multiply)'}", flush=True)
    rows = run(backend, [int(s) for s in args.sizes.split(",")], args.reps)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    keys = ["size", "scalar_ms", "sgmat_ms", "sgmat16_ms", "mlx_ms", "mlx16_ms", "sgmat/scalar speedup",
            "scalar_TFLOP/s", "sgmat_TFLOP/s", "sgmat16_TFLOP/s"]
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(f"{r[k]:.4g}" if isinstance(r[k], float) else str(r[k]) for k in keys) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
