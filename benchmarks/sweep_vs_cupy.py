"""Does ``kernel.sweep`` rank configurations as the GPU does? (issue 18, item 4)

At 64K elements a kernel runs for a few microseconds, less than one launch through
MLX costs on the host; a sweep that timed one launch per synchronisation ranked the
launch path's noise. ``sweep`` now queues launches in batches (``bench.time_launch``).
This script sweeps the threadgroup shape of two DSL kernels at 64K elements and times
*the same generated CUDA* (``codegen.cuda.full_source`` of each configuration's
specialisation, compiled by CuPy's NVRTC against metalbench's MLX shim header) with
CUDA events through CuPy, then compares the two rankings (Spearman's rho, and whether
both pick the same best configuration):

- ``transpose`` 256 x 256 over 2-D threadgroup shapes (coalescing decides: big, real
  differences);
- ``saxpy`` 65536 over 1-D threadgroups (small differences: the hard case).

    python benchmarks/sweep_vs_cupy.py                 # on the H200 (needs cupy)
    python benchmarks/sweep_vs_cupy.py --backend sim   # the sweep on the simulator; the CuPy
                                                       # sources compiled with NVRTC when present
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import metalbench as mb  # noqa: E402
from metalbench.codegen import cuda as cuda_codegen  # noqa: E402
from metalbench.dsl import *  # noqa: E402,F401,F403

N2 = 256


@mb.kernel
def transpose_k(x, out: mb.Out, N: mb.constexpr = 256):
    col = thread_position_in_grid.x
    row = thread_position_in_grid.y
    out[col * N + row] = x[row * N + col]


@mb.kernel
def saxpy_k(a: float, x, y, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = a * x[i] + y[i]


def cases(backend):
    import mlx.core as mx
    mod = (lambda a: mx.array(a)) if backend != "sim" else (lambda a: a)
    rng = np.random.default_rng(0)
    x2 = rng.standard_normal((N2, N2)).astype(np.float32)
    shapes2 = [(256, 1), (128, 2), (64, 4), (32, 8), (16, 16), (8, 32), (4, 64), (2, 128), (1, 256)]
    yield ("transpose", transpose_k, (mod(x2),), dict(grid=(N2, N2), N=N2), shapes2,
           lambda x: np.ascontiguousarray(x.T))
    n = 1 << 16
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    yield ("saxpy", saxpy_k, (2.0, mod(x), mod(y)), dict(grid=n), [32, 64, 128, 256, 512, 1024],
           lambda a, x, y: a * x + y)


def generated(kernel, args, launch, tg):
    """(full CUDA source, kernel name, bound launch) of one configuration's specialisation."""
    b = kernel.bind(*args, threadgroup=tg, backend="sim", **launch)
    sp = kernel.specialization(b)
    exact = all(g % t == 0 for g, t in zip(b.grid, b.threadgroup))
    r = replace(sp.rendered("cuda", exact, b.threadgroup))
    return cuda_codegen.full_source(r), "mlx::core::cu::custom_kernel_" + r.name, b, r


def include_dirs() -> list:
    """The shim's folder and the CUDA headers pip's nvidia-* packages bring (cuda_fp16.h)."""
    import glob
    import os
    dirs = [cuda_codegen.SHIM_INCLUDE]
    try:
        import nvidia
        for p in nvidia.__path__:
            dirs += glob.glob(os.path.join(p, "*", "include"))
    except ImportError:
        pass
    return dirs


def cupy_time(kernel, args, launch, tg, reps=50, inner=20):
    """Median per-launch time of the generated kernel with CUDA events (CuPy)."""
    import cupy as cp
    src, fname, b, r = generated(kernel, args, launch, tg)
    mod = cp.RawModule(code=src, options=("-std=c++17", *(f"-I{d}" for d in include_dirs())),
                       name_expressions=[fname])
    f = mod.get_function(fname)
    vals = []
    for name in r.input_names:
        if name == "mb_grid":
            vals.append(cp.asarray(np.array(b.grid, np.uint32)))
            continue
        v = b.values[name]
        vals.append(cp.asarray(np.asarray(v, np.float32).reshape(-1)) if np.ndim(v) or hasattr(v, "shape")
                    else cp.asarray(np.array([v], np.float32)))
    outs = [cp.empty(int(np.prod(s)), dtype=cp.float32) for _, s, _ in b.outputs]
    blocks = tuple(-(-g // t) for g, t in zip(b.grid, b.threadgroup))
    argv = tuple(vals + outs)
    for _ in range(5):
        f(blocks, b.threadgroup, argv)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    ts = []
    for _ in range(reps):
        start.record()
        for _ in range(inner):
            f(blocks, b.threadgroup, argv)
        end.record()
        end.synchronize()
        ts.append(cp.cuda.get_elapsed_time(start, end) / inner * 1e-3)
    return statistics.median(ts)


def spearman(a, b) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    if len(a) < 2:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--max-time", type=float, default=0.25, help="seconds per configuration in the sweep")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    results = []
    for name, k, args, launch, shapes, ref in cases(a.backend):
        s = k.sweep(*args, threadgroup=shapes, ref=ref, backend=a.backend, progress=False, max_time=a.max_time,
                    repeats=1 if a.backend == "sim" else None, **launch)
        print(s.table(), flush=True)
        res = {"kernel": name, "configs": [r["config"] for r in s.rows], "sweep_s": [r["time"] for r in s.rows],
               "sweep_per_call_s": [r.get("per_call") for r in s.rows], "ok": [r["ok"] for r in s.rows]}
        if a.backend == "cuda":
            try:
                res["cupy_event_s"] = [cupy_time(k, args, launch, tg) for tg in shapes]
                res["spearman"] = spearman(res["sweep_s"], res["cupy_event_s"])
                # the old method for contrast: one launch per synchronisation
                res["spearman_per_call"] = spearman(res["sweep_per_call_s"], res["cupy_event_s"])
                res["same_best"] = int(np.argmin(res["sweep_s"])) == int(np.argmin(res["cupy_event_s"]))
            except Exception as e:  # noqa: BLE001 — keep the sweep's numbers when CuPy fails
                res["cupy_error"] = f"{type(e).__name__}: {str(e)[:300]}"
                print(res["cupy_error"], file=sys.stderr)
        else:   # no GPU: check that what CuPy would compile compiles (NVRTC, when installed)
            try:
                import nvrtc_check
                lib, site = nvrtc_check._lib(None)
            except Exception:
                lib = None
            if lib is not None:
                import glob
                import os
                inc = [cuda_codegen.SHIM_INCLUDE] + glob.glob(os.path.join(site or "", "nvidia", "*", "include"))
                res["nvrtc_ok"] = all(nvrtc_check.compile_ptx(lib, generated(k, args, launch, tg)[0], inc)[0]
                                      for tg in shapes)
        results.append(res)
        print(json.dumps({k_: v for k_, v in res.items() if k_ in ("kernel", "spearman", "spearman_per_call", "same_best", "nvrtc_ok",
                                                           "cupy_error")}),
              flush=True)
    print("| kernel | configuration | sweep µs/launch | CuPy events µs/launch |\n|---|---|---|---|")
    for r in results:
        for i, c in enumerate(r["configs"]):
            ev = r.get("cupy_event_s", [None] * len(r["configs"]))[i]
            print(f"| {r['kernel']} | {c} | {r['sweep_s'][i] * 1e6:.3f} | {'' if ev is None else f'{ev * 1e6:.3f}'} |")
        if "spearman" in r:
            print(f"| {r['kernel']} | Spearman rho {r['spearman']:.3f} (one launch per sync: "
                  f"{r['spearman_per_call']:.3f}), same best: {r['same_best']} | | |")
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    return 0 if all(all(o is not False for o in r["ok"]) and r.get("nvrtc_ok", True) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
