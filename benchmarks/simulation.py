"""The workload that started metalbench: a Numba-CUDA agent simulation, end to end.

A researcher's Numba-CUDA safety simulation spent 181-334 ms copying data to the GPU
and 89-91 ms computing (issue 18). This is a simulation of the same shape, written as
a Numba user writes it, through ``from metalbench import cuda``: ``n`` agents move in
a unit square for ``steps`` steps (steered toward a goal, damped, reflected at the
walls), and each step counts, with an atomic, the agents inside a hazard zone. Per
run it reports the researcher's split:

- ``transfer``: ``cuda.to_device`` of the state plus ``copy_to_host`` of the results
  (on Apple's unified memory the read-back is a view; on an NVIDIA GPU, one copy each);
- ``compute``: the ``steps`` x 2 kernel launches, synchronised once at the end;

and, when CuPy is importable (NVIDIA), the same kernels as CuPy ``RawKernel`` s with
``cp.asarray`` / ``cp.asnumpy`` transfers, timed the same way: the same arrays cross
(the hit counts go up as a zero array on both sides). The final state is checked
against NumPy running the same float32 arithmetic. Each side also reports the split
finer (``h2d_ms``, ``d2h_ms``, ``first_step_ms``, ``step_ms``): the first step is
synchronised on its own, because on MLX's CUDA build ``mx.array`` copies the host
data into CUDA managed memory and the GPU migrates those pages when the first kernel
reads them, so part of the upload is paid there (``first_step_ms`` minus ``step_ms``).

    python benchmarks/simulation.py                     # backend from METALBENCH_BACKEND / auto
    python benchmarks/simulation.py --backend sim --quick
    python benchmarks/simulation.py --backend cuda --n 4000000 --steps 200 --json out.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

from metalbench import cuda

F = np.float32


@cuda.jit
def move(px, py, vx, vy, gx, gy, dt, pull, damp, lo, hi, n):
    i = cuda.grid(1)
    if i < n:
        ax = (gx - px[i]) * pull
        ay = (gy - py[i]) * pull
        u = vx[i] * damp + ax * dt
        w = vy[i] * damp + ay * dt
        x = px[i] + u * dt
        y = py[i] + w * dt
        # the walls arrive as float32 arguments: a literal would be float64 in Numba's typing
        if x < lo:
            x = lo + lo - x
            u = -u
        if x > hi:
            x = hi + hi - x
            u = -u
        if y < lo:
            y = lo + lo - y
            w = -w
        if y > hi:
            y = hi + hi - y
            w = -w
        px[i] = x
        py[i] = y
        vx[i] = u
        vy[i] = w


@cuda.jit
def hazard(px, py, cx, cy, r2, hits, step, n):
    i = cuda.grid(1)
    if i < n:
        dx = px[i] - cx
        dy = py[i] - cy
        if dx * dx + dy * dy < r2:
            cuda.atomic.add(hits, step, 1)


PARAMS = dict(gx=F(0.8), gy=F(0.7), dt=F(0.01), pull=F(2.0), damp=F(0.98), lo=F(0.0), hi=F(1.0),
              cx=F(0.5), cy=F(0.5), r2=F(0.01))


def initial_state(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [rng.random(n, dtype=np.float32) for _ in range(2)] + \
        [(rng.random(n, dtype=np.float32) - F(0.5)) * F(0.2) for _ in range(2)]


def numpy_reference(state, steps: int):
    """The same float32 arithmetic in NumPy (the check)."""
    px, py, vx, vy = (a.copy() for a in state)
    p = PARAMS
    hits = np.zeros(steps, np.int32)
    for s in range(steps):
        u = vx * p["damp"] + (p["gx"] - px) * p["pull"] * p["dt"]
        w = vy * p["damp"] + (p["gy"] - py) * p["pull"] * p["dt"]
        x, y = px + u * p["dt"], py + w * p["dt"]
        for a, v in ((x, u), (y, w)):
            lo, hi = a < 0, a > 1
            a[lo] = -a[lo]
            v[lo] = -v[lo]
            a[hi] = F(2) - a[hi]
            v[hi] = -v[hi]
        px, py, vx, vy = x, y, u, w
        hits[s] = int(((px - p["cx"]) ** 2 + (py - p["cy"]) ** 2 < p["r2"]).sum())
    return px, py, vx, vy, hits


def split(t) -> dict:
    """The researcher's split (ms) from the timestamps ``t``: before the upload, after
    it, after the first step, after the last step, after the read-back."""
    ms = [(b - a) * 1e3 for a, b in zip(t, t[1:])]
    return {"transfer_ms": ms[0] + ms[3], "compute_ms": ms[1] + ms[2], "h2d_ms": ms[0], "d2h_ms": ms[3],
            "first_step_ms": ms[1]}


def run_metalbench(state, steps: int, tpb: int = 256):
    """(times as :func:`split` takes them, results) of one end-to-end run."""
    n = state[0].size
    p = PARAMS
    blocks = (n + tpb - 1) // tpb
    t = [time.perf_counter()]
    d = [cuda.to_device(a) for a in state]
    hits = cuda.to_device(np.zeros(steps, np.int32))
    cuda.synchronize()
    t.append(time.perf_counter())
    for s in range(steps):
        move[blocks, tpb](*d, p["gx"], p["gy"], p["dt"], p["pull"], p["damp"], p["lo"], p["hi"], np.int32(n))
        hazard[blocks, tpb](d[0], d[1], p["cx"], p["cy"], p["r2"], hits, np.int32(s), np.int32(n))
        if s == 0:
            cuda.synchronize()
            t.append(time.perf_counter())
    cuda.synchronize()
    t.append(time.perf_counter())
    out = [a.copy_to_host() for a in d] + [hits.copy_to_host()]
    t.append(time.perf_counter())
    return t, out


CUPY_SRC = r"""
extern "C" __global__ void move(float* px, float* py, float* vx, float* vy, float gx, float gy,
                                float dt, float pull, float damp, float lo, float hi, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float u = vx[i] * damp + (gx - px[i]) * pull * dt, w = vy[i] * damp + (gy - py[i]) * pull * dt;
    float x = px[i] + u * dt, y = py[i] + w * dt;
    if (x < lo) { x = lo + lo - x; u = -u; }
    if (x > hi) { x = hi + hi - x; u = -u; }
    if (y < lo) { y = lo + lo - y; w = -w; }
    if (y > hi) { y = hi + hi - y; w = -w; }
    px[i] = x; py[i] = y; vx[i] = u; vy[i] = w;
}
extern "C" __global__ void hazard(const float* px, const float* py, float cx, float cy, float r2,
                                  int* hits, int step, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float dx = px[i] - cx, dy = py[i] - cy;
    if (dx * dx + dy * dy < r2) atomicAdd(&hits[step], 1);
}
"""


def run_cupy(state, steps: int, tpb: int = 256):
    import cupy as cp
    mod = cp.RawModule(code=CUPY_SRC)
    mv, hz = mod.get_function("move"), mod.get_function("hazard")
    n = state[0].size
    p = PARAMS
    blocks = ((n + tpb - 1) // tpb,)
    t = [time.perf_counter()]
    d = [cp.asarray(a) for a in state]
    hits = cp.asarray(np.zeros(steps, np.int32))
    cp.cuda.Device().synchronize()
    t.append(time.perf_counter())
    for s in range(steps):
        mv(blocks, (tpb,), (*d, p["gx"], p["gy"], p["dt"], p["pull"], p["damp"], p["lo"], p["hi"], np.int32(n)))
        hz(blocks, (tpb,), (d[0], d[1], p["cx"], p["cy"], p["r2"], hits, np.int32(s), np.int32(n)))
        if s == 0:
            cp.cuda.Device().synchronize()
            t.append(time.perf_counter())
    cp.cuda.Device().synchronize()
    t.append(time.perf_counter())
    out = [cp.asnumpy(a) for a in d] + [cp.asnumpy(hits)]
    t.append(time.perf_counter())
    return t, out


def summary(runs, steps: int, ref) -> dict:
    """Medians over the runs of :func:`split`, the steady per-step time, and the check."""
    parts = [split(t) for t, _ in runs]
    res = {k: statistics.median(p[k] for p in parts) for k in parts[0]}
    res["step_ms"] = (res["compute_ms"] - res["first_step_ms"]) / max(1, steps - 1)
    res["ok"] = check(runs[-1][1], ref)
    return res


def check(out, ref) -> bool:
    """Positions and velocities within float32 rounding (the GPU may contract a*b+c into
    an FMA), hazard counts within 0.1% of the agents (an agent on the zone's edge)."""
    ok = all(np.allclose(a, b, rtol=1e-3, atol=1e-4) for a, b in zip(out[:4], ref[:4]))
    return ok and bool(np.all(np.abs(out[4].astype(np.int64) - ref[4]) <= max(2, out[0].size // 1000)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default=None, help="sim, metal or cuda (default: METALBENCH_BACKEND / auto)")
    ap.add_argument("--n", type=int, default=1 << 22, help="agents")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3, help="end-to-end runs (median reported)")
    ap.add_argument("--quick", action="store_true", help="4096 agents, 5 steps, 1 run (a smoke test)")
    ap.add_argument("--json", default=None, help="write the results here")
    a = ap.parse_args(argv)
    if a.quick:
        a.n, a.steps, a.repeats = 4096, 5, 1
    if a.backend:
        os.environ["METALBENCH_BACKEND"] = a.backend
        cuda.set_backend(a.backend)
    backend = cuda.get_backend()
    state = initial_state(a.n)
    ref = numpy_reference(state, a.steps)
    res = {"backend": backend, "n": a.n, "steps": a.steps}
    runs = [run_metalbench(state, a.steps) for _ in range(a.repeats + (backend != "sim"))]
    runs = runs[1:] if backend != "sim" else runs        # the first GPU run compiles
    res["metalbench"] = summary(runs, a.steps, ref)
    try:
        import cupy  # noqa: F401
        have_cupy = backend == "cuda"
    except Exception:
        have_cupy = False
    if have_cupy:
        res["cupy"] = summary([run_cupy(state, a.steps) for _ in range(a.repeats + 1)][1:], a.steps, ref)
    print(json.dumps(res), flush=True)
    print("| run | agents | steps | transfer ms | compute ms | h2d ms | d2h ms | first step ms | step ms "
          "| matches NumPy |\n|---|---|---|---|---|---|---|---|---|---|")
    for k in ("metalbench", "cupy"):
        if k in res:
            r = res[k]
            print(f"| {k} [{backend}] | {a.n} | {a.steps} | {r['transfer_ms']:.3f} | {r['compute_ms']:.3f} "
                  f"| {r['h2d_ms']:.3f} | {r['d2h_ms']:.3f} | {r['first_step_ms']:.3f} | {r['step_ms']:.4f} "
                  f"| {r['ok']} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0 if res["metalbench"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
