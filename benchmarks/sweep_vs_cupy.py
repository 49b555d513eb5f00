"""Does ``kernel.sweep`` rank configurations as the GPU does? (issue 18, item 4)

A sweep can only rank what its clock sees. Through MLX a launch costs the host ~25 µs
(the H200 run of 2026-12-01), so a kernel that runs for 5 µs is timed as the launch
path, however many launches a synchronisation waits for: ``saxpy`` and ``transpose``
at 64K elements ranked noise (Spearman 0.6 and -0.6). This script sweeps threadgroup
sizes of DSL kernels at 64K elements and times *the same generated CUDA*
(``codegen.cuda.full_source`` of each configuration's specialisation, compiled by
CuPy's NVRTC against metalbench's MLX shim header) with CUDA events through CuPy:

- ``rowsum`` 64 rows x 1024 (64K elements), one threadgroup per row, each element put
  through ``W`` dependent steps before the group's sum (a row reduction of an
  expensive function). The threadgroup size decides the parallelism (64 x tg threads):
  from 32 to 512 threads each doubling should halve the time (~1 ms down to ~70 µs on
  an H200), well above the launch path's cost, so the ranking is the kernel's;
- ``saxpy`` 65536 over 1-D threadgroups (a 5 µs kernel: launch-bound, the contrast).

Per configuration it prints the sweep's per-launch time (batched launches, median and
20/80% quantiles) next to the CUDA-event time (median and quantiles), Spearman's rho
of the two rankings, and ``pairs``: of the configuration pairs whose event times differ
by more than 10%, how many the sweep orders the same way (differences above noise).

    python benchmarks/sweep_vs_cupy.py                 # on the H200 (needs cupy)
    python benchmarks/sweep_vs_cupy.py --backend sim   # the sweep on the simulator (small rows
                                                       # and W); the CuPy sources compiled with
                                                       # NVRTC when present
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import metalbench as mb  # noqa: E402
from metalbench.codegen import cuda as cuda_codegen  # noqa: E402
from metalbench.dsl import *  # noqa: E402,F401,F403

ROWS, COLS, STEPS = 64, 1024, 16384     # rowsum at 64K elements; STEPS: the work per element


@mb.kernel
def rowsum_k(x, out: mb.Out(shape=lambda x, **_: (x.shape[0],), dtype=mb.float32),
             C: mb.constexpr = 1024, W: mb.constexpr = 64):
    # One threadgroup per row; each thread strides over the row (threads_per_threadgroup:
    # the swept size), puts each element through W dependent steps, then the group sums.
    red = threadgroup_array(32, float32)
    row = threadgroup_position_in_grid.x
    tid = thread_index_in_threadgroup
    s = 0.0
    for j in range(tid, C, threads_per_threadgroup.x):
        v = x[row * C + j]
        for _ in range(W):
            v = v * 0.999 + 0.001
        s += v
    s = simd_sum(s)
    if thread_index_in_simdgroup == 0:
        red[simdgroup_index_in_threadgroup] = s
    threadgroup_barrier()
    if simdgroup_index_in_threadgroup == 0:
        nsg = (threads_per_threadgroup.x + 31) // 32
        t = simd_sum(red[thread_index_in_simdgroup] if thread_index_in_simdgroup < nsg else 0.0)
        if thread_index_in_simdgroup == 0:
            out[row] = t


def rowsum_ref(x, steps):
    v = np.array(x, dtype=np.float32)
    a, b = np.float32(0.999), np.float32(0.001)
    for _ in range(steps):
        v = v * a + b
    return v.sum(axis=1, dtype=np.float64).astype(np.float32)


@mb.kernel
def saxpy_k(a: float, x, y, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = a * x[i] + y[i]


def cases(backend):
    """(name, kernel, args, launch keywords (grid may be a function of the threadgroup),
    threadgroup sizes, NumPy reference)."""
    import mlx.core as mx
    sim = backend == "sim"
    mod = (lambda a: mx.array(a)) if not sim else (lambda a: a)
    rng = np.random.default_rng(0)
    rows, steps = (4, 8) if sim else (ROWS, STEPS)       # the simulator: a smoke test
    xr = rng.standard_normal((rows, COLS)).astype(np.float32)
    yield ("rowsum", rowsum_k, (mod(xr),), dict(grid=lambda threadgroup: rows * threadgroup, C=COLS, W=steps),
           [32, 64, 128, 256, 512, 1024], lambda x: rowsum_ref(x, steps))
    n = 1 << 16
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    yield ("saxpy", saxpy_k, (2.0, mod(x), mod(y)), dict(grid=n), [32, 64, 128, 256, 512, 1024],
           lambda a, x, y: a * x + y)


def at(launch, tg):
    """The launch keywords of threadgroup size ``tg`` (a grid function evaluated)."""
    g = launch["grid"]
    return dict(launch, grid=g(tg) if callable(g) else g)


def generated(kernel, args, launch, tg):
    """(full CUDA source, kernel name, bound launch) of one configuration's specialisation."""
    b = kernel.bind(*args, threadgroup=tg, backend="sim", **at(launch, tg))
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


def cupy_time(kernel, args, launch, tg, reps=50, budget=0.25):
    """Per-launch times of the generated kernel with CUDA events (CuPy): ``reps`` batches
    of launches (as many per batch as fill ~2 ms), each timed by an event pair."""
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
    start.record()
    f(blocks, b.threadgroup, argv)
    end.record()
    end.synchronize()
    one = max(cp.cuda.get_elapsed_time(start, end) * 1e-3, 1e-7)
    inner = int(min(500, max(1, 2e-3 // one)))
    reps = int(max(10, min(reps, budget // (inner * one))))
    ts = []
    for _ in range(reps):
        start.record()
        for _ in range(inner):
            f(blocks, b.threadgroup, argv)
        end.record()
        end.synchronize()
        ts.append(cp.cuda.get_elapsed_time(start, end) / inner * 1e-3)
    return ts


def pairs_agree(sweep_s, event_s, margin=0.10):
    """(agreeing, total): configuration pairs whose event times differ by more than
    ``margin`` (relative), and how many of them the sweep orders the same way.

    >>> pairs_agree([1.0, 2.0, 3.0], [10.0, 20.0, 20.5])
    (2, 2)
    """
    agree = total = 0
    for i in range(len(event_s)):
        for j in range(i + 1, len(event_s)):
            lo, hi = sorted((event_s[i], event_s[j]))
            if hi > lo * (1 + margin):
                total += 1
                agree += (sweep_s[i] < sweep_s[j]) == (event_s[i] < event_s[j])
    return agree, total


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
               "sweep_q20_s": [r.get("q20") for r in s.rows], "sweep_q80_s": [r.get("q80") for r in s.rows],
               "sweep_per_call_s": [r.get("per_call") for r in s.rows], "ok": [r["ok"] for r in s.rows],
               "errors": [r["error"] for r in s.rows if r["error"]]}
        if a.backend == "cuda":
            try:
                ev = [cupy_time(k, args, launch, tg) for tg in shapes]
                res["cupy_event_s"] = [float(np.median(t)) for t in ev]
                res["cupy_q20_s"] = [float(np.quantile(t, 0.2)) for t in ev]
                res["cupy_q80_s"] = [float(np.quantile(t, 0.8)) for t in ev]
                res["spearman"] = spearman(res["sweep_s"], res["cupy_event_s"])
                # the old method for contrast: one launch per synchronisation
                res["spearman_per_call"] = spearman(res["sweep_per_call_s"], res["cupy_event_s"])
                res["same_best"] = int(np.argmin(res["sweep_s"])) == int(np.argmin(res["cupy_event_s"]))
                res["pairs_agree"], res["pairs_10pct"] = pairs_agree(res["sweep_s"], res["cupy_event_s"])
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
            generated(k, args, launch, shapes[0])      # the CuPy side's source builds (no GPU needed)
        results.append(res)
        print(json.dumps({k_: v for k_, v in res.items() if k_ in (
            "kernel", "spearman", "spearman_per_call", "same_best", "pairs_agree", "pairs_10pct", "nvrtc_ok",
            "cupy_error", "errors")}), flush=True)
    print("| kernel | configuration | sweep µs/launch (q20..q80) | CuPy events µs/launch (q20..q80) |\n|---|---|---|---|")

    def us(r, key, i):
        v = r.get(key)
        return "" if v is None or v[i] is None else f"{v[i] * 1e6:.3f}"
    for r in results:
        for i, c in enumerate(r["configs"]):
            ev = f"{us(r, 'cupy_event_s', i)} ({us(r, 'cupy_q20_s', i)}..{us(r, 'cupy_q80_s', i)})" \
                if "cupy_event_s" in r else ""
            print(f"| {r['kernel']} | {c} | {us(r, 'sweep_s', i)} ({us(r, 'sweep_q20_s', i)}..{us(r, 'sweep_q80_s', i)})"
                  f" | {ev} |")
        if "spearman" in r:
            print(f"| {r['kernel']} | Spearman rho {r['spearman']:.3f} (one launch per sync: "
                  f"{r['spearman_per_call']:.3f}), same best: {r['same_best']}, pairs >10% apart ordered alike: "
                  f"{r['pairs_agree']}/{r['pairs_10pct']} | | |")
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    return 0 if all(all(o is not False for o in r["ok"]) and not r["errors"] and r.get("nvrtc_ok", True)
                    for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
