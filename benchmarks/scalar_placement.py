"""Where a CUDA kernel's scalar inputs live, and what it costs per launch (issue 18, item 7).

MLX's CUDA allocator serves every allocation of at most 8 bytes (a one-element float32 or
int32 array: how a hand-written ``mx.fast.cuda_kernel`` launch passes a scalar) from one
shared pool of managed memory that the GPU maps but does not migrate, so the kernel reads
those scalars from host memory. A larger array has managed pages of its own, which move to
the GPU on first use. This times the simulation's move kernel (``simulation_probe.RAW_MOVE``,
8 scalar inputs) at 64K agents, 200 launches per synchronisation, with its scalars as

- ``small``        one-element arrays made once (the hand-written way),
- ``padded``       the same values as 3-element arrays (12 bytes), made once,
- ``small, fresh`` / ``padded, fresh``  one scalar (``n``) made afresh every launch,
- ``gpu-made ...`` arrays produced by a GPU op (``mx.full``), small or padded,
- ``metalbench``   ``simulation.move`` through ``from metalbench import cuda`` (its
                   scalars: ``thin.scalar_array``),

each variant's turns interleaved (the order reversed every other round). Then the same pool
for outputs: a kernel of ``--atomic-n`` threads adding 1 atomically to element 0 of an output
of one element (4 bytes: the pool) against four (16 bytes), raw, and through
``mb.metal_kernel`` with a one-element output (metalbench pads it: protocol.small_atomic_outputs).

    python3 benchmarks/scalar_placement.py                 # on the H200 (~30 s)
    python3 benchmarks/scalar_placement.py --n 4194304
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simulation as S  # noqa: E402
import simulation_probe as P  # noqa: E402

NAMES = ["gx", "gy", "dt", "pull", "damp", "lo", "hi"]


def variants(n: int, steps: int):
    import mlx.core as mx
    state = S.initial_state(n)
    kernel = mx.fast.cuda_kernel(name="placement_move", input_names=["px", "py", "vx", "vy", *NAMES, "n"],
                                 output_names=["opx", "opy", "ovx", "ovy"], source=P.RAW_MOVE)
    kw = dict(grid=(n, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(n,)] * 4, output_dtypes=[mx.float32] * 4)

    def scalars(k):
        return ([mx.array([float(S.PARAMS[x])] * k, dtype=mx.float32) for x in NAMES]
                + [mx.array([n] * k, dtype=mx.int32)])

    def loop(get):
        box, pending = {"d": [mx.array(a) for a in state]}, []

        def move(s):
            box["d"] = kernel(inputs=[*box["d"], *get(s)], **kw)
            pending.extend(box["d"])
            if len(pending) >= 32:                  # as metalbench's cuda layer does
                mx.async_eval(*pending)
                pending.clear()

        def sync():
            mx.eval(*pending, *box["d"])
            pending.clear()
            mx.synchronize()
        return move, sync
    small, padded = scalars(1), scalars(3)
    g_small = [mx.full((1,), a) for a in small]
    g_padded = [mx.full((3,), a[:1]) for a in padded]
    mx.eval(g_small, g_padded)
    fns, sync_mb = P.variants_mb(state, steps)
    return {"small": loop(lambda s: small), "padded": loop(lambda s: padded),
            "small, fresh": loop(lambda s: small[:7] + [mx.array([n], dtype=mx.int32)]),
            "padded, fresh": loop(lambda s: padded[:7] + [mx.array([n] * 3, dtype=mx.int32)]),
            "gpu-made small": loop(lambda s: g_small), "gpu-made padded": loop(lambda s: g_padded),
            "metalbench": (fns["move"], sync_mb)}


ATOMIC_RAW = """
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < x_shape[0] && x[i] > 0.5f) atomicAdd(&out[0], 1);
"""
ATOMIC_MSL = """
    uint i = thread_position_in_grid.x;
    if (i < x_shape[0] && x[i] > 0.5f) { atomic_fetch_add_explicit(&out[0], 1, memory_order_relaxed); }
"""


def atomic_rows(n: int, rounds: int, launches: int = 20) -> dict:
    """µs a launch (``launches`` a synchronisation) of the atomic count into a tiny output."""
    import time

    import mlx.core as mx

    import metalbench as mb
    x = mx.random.uniform(shape=(n,))
    mx.eval(x)
    raw = mx.fast.cuda_kernel(name="placement_count", input_names=["x"], output_names=["out"], source=ATOMIC_RAW)
    mine = mb.metal_kernel("placement_count_mb", ["x"], ["out"], ATOMIC_MSL, atomic_outputs=True)
    common = dict(grid=(n, 1, 1), threadgroup=(256, 1, 1), output_dtypes=[mx.int32], init_value=0)
    fns = {"raw, out (1,)": lambda: raw(inputs=[x], output_shapes=[(1,)], **common)[0],
           "raw, out (4,)": lambda: raw(inputs=[x], output_shapes=[(4,)], **common)[0],
           "metalbench, out (1,)": lambda: mine(inputs=[x], output_shapes=[(1,)], backend="cuda", **common)[0]}
    want = int((np_array(x) > 0.5).sum())
    res = {}
    for r in range(rounds):
        for k in (list(fns) if r % 2 == 0 else list(fns)[::-1]):
            got = fns[k]()
            assert int(np_array(got)[0]) == want, (k, got, want)
            t0 = time.perf_counter()
            for _ in range(launches):
                mx.async_eval(fns[k]())
            mx.synchronize()
            res.setdefault(k, []).append((time.perf_counter() - t0) / launches * 1e6)
    return {k: statistics.median(v) for k, v in res.items()}


def np_array(a):
    import numpy as np
    return np.asarray(a)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=65536)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--atomic-n", type=int, default=1 << 20)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    from metalbench import cuda
    if cuda.get_backend() != "cuda":
        print("scalar_placement.py measures MLX's CUDA allocator: it needs backend 'cuda' (an NVIDIA GPU)")
        return 0
    vs = variants(a.n, a.steps)
    runs = {k: [] for k in vs}
    for r in range(a.rounds):
        for k in (list(vs) if r % 2 == 0 else list(vs)[::-1]):
            step, sync = vs[k]
            runs[k].append(P._timed(step, a.steps, sync))
    print(f"move kernel, {a.n} agents, {a.steps} launches a synchronisation, median of {a.rounds} rounds\n")
    print("| scalars | host µs/launch | µs/launch |\n|---|---:|---:|")
    res = {"n": a.n, "steps": a.steps}
    for k, rs in runs.items():
        res[k] = {m: statistics.median(x[m] for x in rs) for m in ("host_us", "step_us")}
        print(f"| {k} | {res[k]['host_us']:.1f} | {res[k]['step_us']:.1f} |")
    res["atomic"] = atomic_rows(a.atomic_n, a.rounds)
    print(f"\natomic count into element 0, {a.atomic_n} threads, median of {a.rounds} rounds\n")
    print("| output | µs/launch |\n|---|---:|")
    for k, v in res["atomic"].items():
        print(f"| {k} | {v:.1f} |")
    return P.save_json(res, a.json)


if __name__ == "__main__":
    sys.exit(main())
