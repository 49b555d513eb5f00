"""Where the agent simulation's per-step time goes (issue 18, item 7): one kernel at a time,
three ways.

``benchmarks/simulation.py`` reports metalbench's per-step compute against CuPy's. This
probe splits that step: for each variant it launches ``steps`` steps after a warm-up,
synchronised once at the end, and reports per step

- ``host_us``: the time the Python loop took to issue the launches (before the final
  synchronisation): what the host spends;
- ``step_us``: the whole time per step, synchronisation included.

Variants: ``mb`` (``from metalbench import cuda``, as simulation.py launches it),
``raw`` (the same kernels hand-written as ``mx.fast.cuda_kernel`` bodies, with fresh
outputs and the hit counter accumulated in a zero-initialised output added on the host:
what MLX itself costs), ``cupy`` (``RawKernel``s of simulation.py's CUDA source). Each for
the whole step, ``move`` only and ``hazard`` only. When ``host_us`` is close to
``step_us``, the step is bound by the host issuing launches, not by the GPU.

    python benchmarks/simulation_probe.py --n 4194304 --steps 200
    python benchmarks/simulation_probe.py --quick --backend sim     # a smoke test
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simulation as S  # noqa: E402
from metalbench import cuda  # noqa: E402

RAW_MOVE = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n[0]) return;
    float u = vx[i] * damp[0] + (gx[0] - px[i]) * pull[0] * dt[0];
    float w = vy[i] * damp[0] + (gy[0] - py[i]) * pull[0] * dt[0];
    float x = px[i] + u * dt[0], y = py[i] + w * dt[0];
    if (x < lo[0]) { x = lo[0] + lo[0] - x; u = -u; }
    if (x > hi[0]) { x = hi[0] + hi[0] - x; u = -u; }
    if (y < lo[0]) { y = lo[0] + lo[0] - y; w = -w; }
    if (y > hi[0]) { y = hi[0] + hi[0] - y; w = -w; }
    opx[i] = x; opy[i] = y; ovx[i] = u; ovy[i] = w;
"""
RAW_HAZARD = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n[0]) return;
    float dx = px[i] - cx[0], dy = py[i] - cy[0];
    if (dx * dx + dy * dy < r2[0]) atomicAdd(&acc[step[0]], 1);
"""


def save_json(res: dict, path) -> int:
    """Write ``res`` to ``path`` (when given) as the scripts of this family do; 0 (the exit code)."""
    if path:
        with open(path, "w") as f:
            json.dump(res, f, indent=1)
    return 0


def _timed(step, steps: int, sync, warm: int = 3) -> dict:
    for s in range(warm):
        step(s)
    sync()
    t0 = time.perf_counter()
    for s in range(steps):
        step(s)
    t1 = time.perf_counter()
    sync()
    t2 = time.perf_counter()
    return {"host_us": (t1 - t0) / steps * 1e6, "step_us": (t2 - t0) / steps * 1e6}


def variants_mb(state, steps, tpb=256):
    n = state[0].size
    p = S.PARAMS
    d = [cuda.to_device(a) for a in state]
    hits = cuda.to_device(np.zeros(steps + 8, np.int32))
    blocks = (n + tpb - 1) // tpb
    nn = np.int32(n)

    def move(s):
        S.move[blocks, tpb](*d, p["gx"], p["gy"], p["dt"], p["pull"], p["damp"], p["lo"], p["hi"], nn)

    def hazard(s):
        S.hazard[blocks, tpb](d[0], d[1], p["cx"], p["cy"], p["r2"], hits, np.int32(s), nn)

    def both(s):
        move(s)
        hazard(s)
    return {"step": both, "move": move, "hazard": hazard}, cuda.synchronize


def variants_raw(state, steps, tpb=256):
    import mlx.core as mx
    n = state[0].size
    p = {k: mx.array([float(v)], dtype=mx.float32) for k, v in S.PARAMS.items()}
    nn = mx.array([n], dtype=mx.int32)
    d = [mx.array(a) for a in state]
    box = {"d": d, "hits": mx.zeros((steps + 8,), mx.int32)}
    mk = mx.fast.cuda_kernel(name="probe_move", input_names=["px", "py", "vx", "vy", "gx", "gy", "dt", "pull",
                                                              "damp", "lo", "hi", "n"],
                             output_names=["opx", "opy", "ovx", "ovy"], source=RAW_MOVE)
    hk = mx.fast.cuda_kernel(name="probe_hazard", input_names=["px", "py", "cx", "cy", "r2", "step", "n"],
                             output_names=["acc"], source=RAW_HAZARD)
    steps_arr = [mx.array([s], dtype=mx.int32) for s in range(steps + 8)]
    grid = (((n + tpb - 1) // tpb) * tpb, 1, 1)
    shapes, dtypes = [(n,)] * 4, [mx.float32] * 4
    pending = []

    def note(arrays):
        pending.extend(arrays)
        if len(pending) >= 32:                  # as metalbench's cuda layer does
            mx.async_eval(*pending)
            pending.clear()

    def move(s):
        d = box["d"]
        box["d"] = mk(inputs=[*d, p["gx"], p["gy"], p["dt"], p["pull"], p["damp"], p["lo"], p["hi"], nn],
                      grid=grid, threadgroup=(tpb, 1, 1), output_shapes=shapes, output_dtypes=dtypes)
        note(box["d"])

    def hazard(s):
        d = box["d"]
        acc = hk(inputs=[d[0], d[1], p["cx"], p["cy"], p["r2"], steps_arr[s], nn], grid=grid,
                 threadgroup=(tpb, 1, 1), output_shapes=[box["hits"].shape], output_dtypes=[mx.int32],
                 init_value=0)[0]
        box["hits"] = box["hits"] + acc
        note([box["hits"]])

    def both(s):
        move(s)
        hazard(s)

    def sync():
        mx.eval(*pending, *box["d"], box["hits"])
        pending.clear()
        mx.synchronize()
    return {"step": both, "move": move, "hazard": hazard}, sync


def variants_cupy(state, steps, tpb=256):
    import cupy as cp
    mod = cp.RawModule(code=S.CUPY_SRC)
    mv, hz = mod.get_function("move"), mod.get_function("hazard")
    n = state[0].size
    p = S.PARAMS
    d = [cp.asarray(a) for a in state]
    hits = cp.zeros(steps + 8, cp.int32)
    blocks = ((n + tpb - 1) // tpb,)
    nn = np.int32(n)

    def move(s):
        mv(blocks, (tpb,), (*d, p["gx"], p["gy"], p["dt"], p["pull"], p["damp"], p["lo"], p["hi"], nn))

    def hazard(s):
        hz(blocks, (tpb,), (d[0], d[1], p["cx"], p["cy"], p["r2"], hits, np.int32(s), nn))

    def both(s):
        move(s)
        hazard(s)
    return {"step": both, "move": move, "hazard": hazard}, cp.cuda.Device().synchronize


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default=None)
    ap.add_argument("--n", type=int, default=1 << 22)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    if a.quick:
        a.n, a.steps, a.repeats = 4096, 4, 1
    if a.backend:
        cuda.set_backend(a.backend)
    backend = cuda.get_backend()
    state = S.initial_state(a.n)
    makers = {"mb": variants_mb}
    if backend == "cuda":
        makers["raw"] = variants_raw
        try:
            import cupy  # noqa: F401
            makers["cupy"] = variants_cupy
        except Exception:
            pass
    res = {"backend": backend, "n": a.n, "steps": a.steps}
    # the variants take turns (the order reversed every other repeat): the H200's launch
    # path drifts by tens of µs across minutes, and the variants are compared at a few µs
    runs: dict = {}
    names = list(makers)
    for rep in range(a.repeats):
        for who in (names if rep % 2 == 0 else names[::-1]):
            for part in ("step", "move", "hazard"):
                fns, sync = makers[who](state, a.steps)
                runs.setdefault((who, part), []).append(_timed(fns[part], a.steps, sync, warm=1 if a.quick else 3))
    print("| variant | part | host µs/step | µs/step |\n|---|---|---|---|")
    for (who, part), rs in runs.items():
        r = {k: statistics.median(x[k] for x in rs) for k in rs[0]}
        res[f"{who}/{part}"] = r
        print(f"| {who} | {part} | {r['host_us']:.1f} | {r['step_us']:.1f} |", flush=True)
    return save_json(res, a.json)


if __name__ == "__main__":
    sys.exit(main())
