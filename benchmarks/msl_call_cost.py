"""What an ``mb.metal_kernel`` call costs against the raw MLX call (issue 13's drop-in promise).

Issue 13 measured a saxpy written as an MSL body: raw ``mx.fast.cuda_kernel`` 32 µs at 1K
elements and 0.13 ms at 16M; ``mb.metal_kernel(..., backend="cuda")`` 337 µs and 61.6 ms
(every input copied through host NumPy). This script repeats that measurement on the
user's path: the MSL body through ``mb.metal_kernel`` on ``mx.array`` inputs against the
same algorithm hand-written for ``mx.fast.cuda_kernel``, per call (launches queued, one
synchronisation per batch, as ``benchmarks/gpu.py``), median of interleaved rounds, at 1K
and 16M elements. It also checks that ``mx.compile`` over the metalbench call works and
gives the raw kernel's values.

    python benchmarks/msl_call_cost.py --backend cuda --json msl_call_cost.json   # on the H200
    python benchmarks/msl_call_cost.py --backend sim                               # smoke test, small
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

MSL_SAXPY = """
    uint i = thread_position_in_grid.x;
    if (i < x_shape[0]) { out[i] = a[0] * x[i] + y[i]; }
"""

CUDA_SAXPY = """
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < x_shape[0]) { out[i] = a[0] * x[i] + y[i]; }
"""


def run(backend: str, sizes, reps: int) -> list:
    """One row per size: per-call ms of the raw kernel and of ``mb.metal_kernel``, their
    ratio, whether both match NumPy, and whether ``mx.compile`` over the metalbench call
    gives the same values."""
    import mlx.core as mx

    import metalbench as mb
    from gpu import interleaved_times

    tg = 256
    mbk = mb.metal_kernel(name="msl_call_cost_saxpy", input_names=["a", "x", "y"], output_names=["out"],
                          source=MSL_SAXPY)
    raw = None
    if backend == "cuda":
        raw = mx.fast.cuda_kernel(name="msl_call_cost_saxpy_raw", input_names=["a", "x", "y"],
                                  output_names=["out"], source=CUDA_SAXPY)
    elif backend == "metal":
        raw = mx.fast.metal_kernel(name="msl_call_cost_saxpy_raw", input_names=["a", "x", "y"],
                                   output_names=["out"], source=MSL_SAXPY)
    rows = []
    for n in sizes:
        a = mx.array([2.0], dtype=mx.float32)
        x, y = mx.random.normal((n,)), mx.random.normal((n,))
        mx.eval(a, x, y)
        grid = ((n + tg - 1) // tg * tg, 1, 1)
        call = dict(grid=grid, threadgroup=(tg, 1, 1), output_shapes=[(n,)], output_dtypes=[mx.float32])

        def mb_call():
            return mbk(inputs=[a, x, y], backend=backend, **call)[0]

        want = 2.0 * np.asarray(x) + np.asarray(y)
        got = np.asarray(mb_call())
        row = {"size": n, "ok": bool(np.allclose(got, want, rtol=1e-5, atol=1e-6))}
        try:
            compiled = mx.compile(lambda a, x, y: mbk(inputs=[a, x, y], backend=backend, **call)[0])
            row["mx.compile"] = bool(np.allclose(np.asarray(compiled(a, x, y)), want, rtol=1e-5, atol=1e-6))
        except Exception as e:  # noqa: BLE001 - the report says what failed
            row["mx.compile"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        if raw is not None:
            def raw_call():
                return raw(inputs=[a, x, y], **call)[0]
            row["raw_ok"] = bool(np.allclose(np.asarray(raw_call()), want, rtol=1e-5, atol=1e-6))
            t = interleaved_times({"raw": raw_call, "mb": mb_call}, reps=reps, rounds=3, inner=10)
            row.update(raw_ms=t["raw"] * 1e3, mb_ms=t["mb"] * 1e3, added_us=(t["mb"] - t["raw"]) * 1e6)
            row["raw/mb"] = t["raw"] / t["mb"]
        rows.append(row)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cuda", choices=["cuda", "metal", "sim"])
    ap.add_argument("--reps", type=int, default=60)
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    sizes = [1024, 1 << 24] if args.backend != "sim" else [1024]
    rows = run(args.backend, sizes, args.reps)
    print("| size | ok | mx.compile | raw ms | mb ms | added µs | raw/mb |\n|---|---|---|---|---|---|---|")
    for r in rows:
        f = lambda k: f"{r[k]:.4g}" if isinstance(r.get(k), float) else ""
        print(f"| {r['size']} | {r['ok']} | {r['mx.compile']} | {f('raw_ms')} | {f('mb_ms')} | "
              f"{f('added_us')} | {f('raw/mb')} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if all(r["ok"] and r.get("raw_ok", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
