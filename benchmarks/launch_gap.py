"""Where do launch-bound rows of gpu.py lose time: metalbench's host path or the GPU? (issue 18)

On the H200 (2026-12-01) block_sum and softmax at 1M elements ran at 0.73x and 0.76x the
raw kernel (+9 µs per call) while copy/saxpy at 1M were 0.90-0.99x and every row at 16M
and up ~1.0x: a cost per call that does not scale with size. For each kernel this times,
interleaved over several rounds (median of the rounds):

- ``raw``        the hand-written ``mx.fast.cuda_kernel`` body of gpu.py,
- ``direct``     the CUDA metalbench generates for this launch (the exact-grid,
                 block-size-specialised variant its launch uses), called straight through
                 ``mx.fast.cuda_kernel`` with the same inputs (no metalbench host code),
- ``mb``         the DSL kernel called as gpu.py calls it (``Kernel.__call__``),

each as ``*_ms`` (per launch, batched as gpu.py times: ``gpu.median_time``) and
``*_host_us`` (host time to build one launch's lazy graph, no eval). ``mb - direct`` is
metalbench's host path; ``direct - raw`` is the generated code (and MLX's handling of
its signature). It also records what the metalbench call passes to MLX (``mlx_call``:
inputs, grid, threadgroup, output shapes, keywords) next to the raw call's.

    python3 benchmarks/launch_gap.py --json out.json         # on the H200
    python3 benchmarks/launch_gap.py --standin                # here: a null MLX kernel (host only)
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mlx.core as mx  # noqa: E402

import gpu  # noqa: E402


def cases(small: bool):
    n = 1 << 12 if small else 1 << 20
    r, c = (4, 1024) if small else (1024, 1024)
    x = mx.random.normal((n,))
    y = mx.random.normal((n,))
    xs = mx.random.normal((r, c))
    bias = mx.random.normal((min(gpu.GELU_COLS, n),))
    a = mx.array(2.0, dtype=mx.float32)
    mx.eval(x, y, xs, bias, a)
    # name, mb kernel, mb args, mb keywords, raw inputs, template, grid, threadgroup, output shape
    yield "copy", gpu.copy_k, (x,), {}, [x], [("N", n)], n, 256, (n,)
    yield "saxpy", gpu.saxpy_k, (2.0, x, y), {}, [a, x, y], [("N", n)], n, 256, (n,)
    yield "block_sum", gpu.block_sum_k, (x,), {}, [x], [], n, 1024, (n // 1024,)
    yield ("softmax", gpu.softmax_k, (xs,), {"NC": c, "TG": 256}, [xs], [("NC", c), ("TG", 256)], r * 256, 256,
           (r, c))
    yield ("bias_gelu", gpu.bias_gelu_k, (x, bias), {}, [x, bias], [("N", n), ("C", bias.size)], n, 256, (n,))


def host_us(fn, number=2000, repeats=5) -> float:
    """Best mean host time of building ``fn``'s lazy graph, µs (no eval in the timed loop)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        keep = [fn() for _ in range(number)]
        best = min(best, (time.perf_counter() - t0) / number * 1e6)
        mx.eval([k for k in keep if isinstance(k, mx.array)])
        del keep
    return best


def run(standin: bool, rounds: int, reps: int):
    calls = []
    if standin:
        import host_overhead as H
        from metalbench import launch as L

        class Recording(H.NullKernel):
            def __call__(self, **kw):
                calls.append(kw)
                return super().__call__(**kw)
        mx.fast.cuda_kernel = lambda **kw: Recording(**kw)
        L.cuda_available = lambda: True
        # kernels launched earlier in this process hold MLX kernel objects made before the
        # stand-in (another test's, in a pytest worker): forget them, so calls are recorded
        for k in (gpu.copy_k, gpu.saxpy_k, gpu.block_sum_k, gpu.softmax_k, gpu.bias_gelu_k):
            k._cache.clear()
            k._thin_cache.clear()
            k._guard = k._guard_kw = None
    rows = []
    for name, k, args, kw, raw_inputs, tmpl, grid, tg, oshape in cases(standin):
        src, in_names = gpu.RAW_CUDA[name]
        rk = mx.fast.cuda_kernel(name=f"gap_raw_{name}", input_names=in_names, output_names=["out"], source=src)
        g3, t3 = (grid, 1, 1), (tg, 1, 1)

        def raw(rk=rk, raw_inputs=raw_inputs, tmpl=tmpl, g3=g3, t3=t3, oshape=oshape):
            return rk(inputs=raw_inputs, template=tmpl, grid=g3, threadgroup=t3, output_shapes=[oshape],
                      output_dtypes=[mx.float32])[0]

        def mbc(k=k, args=args, kw=kw, grid=grid, tg=tg):
            return k(*args, grid=grid, threadgroup=tg, backend="cuda", **kw)
        bound = k.bind(*args, grid=grid, threadgroup=tg, backend="cuda", **kw)
        plan = k.specialization(bound).gpu_plan(bound, "cuda")
        r = k.specialization(bound).rendered("cuda", all(a % b == 0 for a, b in zip(bound.grid, bound.threadgroup)),
                                             bound.threadgroup)
        dk = mx.fast.cuda_kernel(name=f"gap_direct_{name}", input_names=list(r.input_names),
                                 output_names=list(r.output_names), source=r.body, header=r.header)
        plan.inputs(bound.values)
        d_inputs = plan.inputs(bound.values)    # a repeated scalar's array (thin.scalar_array), as the calls get
        d_kw = dict(plan.kwargs)

        def direct(dk=dk, d_inputs=d_inputs, d_kw=d_kw):
            return dk(inputs=d_inputs, **d_kw)[0]
        mbc()
        calls.clear()
        mbc()
        row = {"kernel": name, "size": str(oshape if name == "softmax" else grid),
               "mb_call": _describe(calls[-1]) if calls else None,
               "mlx_call": {"inputs": [(tuple(i.shape), str(i.dtype)) for i in d_inputs], **_describe(d_kw)}}
        times = {v: [] for v in ("raw", "direct", "mb")}
        hosts = {v: [] for v in ("raw", "direct", "mb")}
        fns = {"raw": raw, "direct": direct, "mb": mbc}
        for i in range(rounds):
            order = ["raw", "direct", "mb"] if i % 2 == 0 else ["mb", "direct", "raw"]
            for v in order:
                if not standin:
                    times[v].append(gpu.median_time(fns[v], reps=reps) * 1e3)
                hosts[v].append(host_us(fns[v], number=200 if standin else 2000))
        for v in fns:
            if times[v]:
                row[f"{v}_ms"] = statistics.median(times[v])
            row[f"{v}_host_us"] = statistics.median(hosts[v])
        if "raw_ms" in row:
            row["raw/mb"] = row["raw_ms"] / row["mb_ms"]
            row["raw/direct"] = row["raw_ms"] / row["direct_ms"]
        row["mb-raw host_us"] = row["mb_host_us"] - row["raw_host_us"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def _describe(kw):
    out = {}
    for key, v in kw.items():
        if key == "inputs":
            out[key] = [(tuple(i.shape), str(i.dtype)) for i in v]
        else:
            out[key] = v if isinstance(v, (int, float, str, type(None))) else str(v)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--standin", action="store_true", help="null MLX kernel, small sizes (no GPU): host times only")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    rows = run(a.standin, a.rounds, a.reps)
    keys = ["kernel", "size", "raw_ms", "direct_ms", "mb_ms", "raw/direct", "raw/mb", "raw_host_us", "direct_host_us",
            "mb_host_us", "mb-raw host_us"]
    print("| " + " | ".join(keys) + " |\n|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(f"{r[k]:.4g}" if isinstance(r.get(k), float) else str(r.get(k, "")) for k in keys)
              + " |")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
