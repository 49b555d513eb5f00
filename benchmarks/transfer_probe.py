"""Where the simulation's transfer time goes: each step of the host<->device path, timed.

``simulation.py`` moves 4 float32 arrays of 4M agents up and back (issue 18 item 7).
On MLX's CUDA build an ``mx.array`` made from NumPy is CUDA managed memory filled by
the CPU (MLX ``allocator::malloc`` -> ``cudaMallocManaged``), whose pages the GPU
migrates when a kernel first reads them; a kernel's output is device memory, which
``np.asarray`` first moves into managed memory (``Buffer::raw_ptr`` ->
``move_to_unified_memory``, a ``cudaMemcpy``) and the CPU then reads by migrating
pages back. This times those steps one by one (median of ``--repeats``, ms, for
``--arrays`` arrays of ``--n`` float32), next to ``cuda.to_device``/``copy_to_host``
and CuPy's ``asarray``/``asnumpy`` when CuPy is importable:

- ``mx.array``: the upload as MLX does it (the CPU copy into managed memory);
- ``first touch``: a kernel reading the fresh arrays (the GPU migrating their pages),
  minus ``touch again`` (the same kernel on resident pages);
- ``np.asarray``: the view of kernel outputs (their move into managed memory);
- ``read view``: the CPU copying from those views into new arrays (pages migrating back);
- ``copy_to_host``, ``copy_to_host(ary)``: metalbench's read-back, whole.

    python benchmarks/transfer_probe.py --backend cuda --json out.json
    python benchmarks/transfer_probe.py --quick          # here: MLX's CPU build, a smoke test
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

from metalbench import cuda


@cuda.jit
def bump(x, f, n):
    i = cuda.grid(1)
    if i < n:
        x[i] = x[i] * f


def timed(fn, repeats):
    """Median seconds of ``fn(i)`` over ``repeats`` calls (``fn`` synchronises itself)."""
    out = []
    for i in range(repeats):
        t = time.perf_counter()
        fn(i)
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default=None, help="the metalbench.cuda backend (cuda on the H200)")
    ap.add_argument("--n", type=int, default=1 << 22)
    ap.add_argument("--arrays", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="64K elements, 3 repeats")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    if a.quick:
        a.n, a.repeats = 1 << 16, 3
    import mlx.core as mx
    if a.backend:
        cuda.set_backend(a.backend)
    rng = np.random.default_rng(0)
    host = [rng.random(a.n, dtype=np.float32) for _ in range(a.arrays)]
    res = {"backend": cuda.get_backend(), "n": a.n, "arrays": a.arrays, "mb": a.n * 4 * a.arrays / 1e6}
    ms = lambda s: round(s * 1e3, 4)

    fresh = {}

    def upload(i):
        fresh[i] = [mx.array(h) for h in host]
        mx.eval(*fresh[i])
        mx.synchronize()
    res["mx.array"] = ms(timed(upload, a.repeats))

    outs = {}

    def touch(i):
        outs[i] = [x + 1 for x in fresh[i]]
        mx.eval(*outs[i])
        mx.synchronize()
    first = timed(touch, a.repeats)
    again = timed(touch, a.repeats)
    res["first touch"], res["touch again"] = ms(first), ms(again)
    res["migration (first - again)"] = ms(first - again)

    views = {}

    def view(i):
        views[i] = [np.asarray(y) for y in outs[i]]
    res["np.asarray"] = ms(timed(view, a.repeats))
    res["read view"] = ms(timed(lambda i: [np.array(v) for v in views[i]], a.repeats))

    d = [cuda.to_device(h) for h in host]
    res["to_device"] = ms(timed(lambda i: ([cuda.to_device(h) for h in host], cuda.synchronize()), a.repeats))

    def fresh_outputs():       # device arrays whose contents are kernel outputs, not yet read back
        for x in d:
            bump[(a.n + 255) // 256, 256](x, np.float32(1), np.int32(a.n))
        cuda.synchronize()

    def back(i, into=None):
        fresh_outputs()
        t = time.perf_counter()
        [x.copy_to_host() if into is None else x.copy_to_host(into[k]) for k, x in enumerate(d)]
        return time.perf_counter() - t

    res["copy_to_host"] = ms(statistics.median(back(i) for i in range(a.repeats)))
    bufs = [np.empty_like(h) for h in host]
    res["copy_to_host(ary)"] = ms(statistics.median(back(i, bufs) for i in range(a.repeats)))
    try:
        import cupy as cp
        have = res["backend"] == "cuda"
    except Exception:
        have = False
    if have:
        dev = [cp.asarray(h) for h in host]
        res["cupy asarray"] = ms(timed(lambda i: ([cp.asarray(h) for h in host],
                                                  cp.cuda.Device().synchronize()), a.repeats))
        res["cupy asnumpy"] = ms(timed(lambda i: [cp.asnumpy(x) for x in dev], a.repeats))
        res["cupy asnumpy(out=)"] = ms(timed(lambda i: [cp.asnumpy(x, out=b) for x, b in zip(dev, bufs)],
                                             a.repeats))
    print(json.dumps(res), flush=True)
    print("| step | ms |\n|---|---|")
    for k, v in res.items():
        if isinstance(v, float):
            print(f"| {k} | {v:.3f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
