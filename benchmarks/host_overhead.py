"""metalbench's own host time per kernel call, measured on the CPU with a stand-in MLX kernel.

The GPU-performance goal (issue 18) is that a metalbench launch adds at most 1 µs over
the raw ``mx.fast.cuda_kernel`` call. Here ``mx.fast.cuda_kernel`` (and
``metal_kernel``) are replaced by a null kernel that returns ready outputs at once, so
the difference between a metalbench call and the same null kernel called directly, as
a user of the raw MLX kernel would call it, is metalbench's host time alone::

    python benchmarks/host_overhead.py              # a table, µs per call
    python benchmarks/host_overhead.py --json       # the numbers as JSON
    python benchmarks/host_overhead.py --real cuda  # on a GPU: the real MLX kernels, raw vs metalbench

Rows: a DSL kernel (``saxpy(2.0, x, y, grid=n)`` and ``saxpy[n, tg](2.0, x, y)``),
``mb.metal_kernel`` (MLX's call, without and with ``template=``), and ``cuda.jit``
launched on device arrays (``k[blocks, threads](...)``), each on ``mx.array``/device-array
inputs after a first call (the repeated call is the thin path), against the raw saxpy
call; then gpu.py's row softmax with its constexprs by keyword (``softmax_k(x, NC=,
TG=)``) against the raw call with ``template=[("NC", ..), ("TG", ..)]``. Each metalbench
row's "added" is over the raw row above it (``--json``: µs per call by row). The row
"its guard called directly" calls the DSL saxpy's thin-path guard as a plain function,
without the kernel object's call (``thin.FastCall``): the difference to the DSL row is
what calling the object costs. A ``cuda.jit`` launch on device arrays schedules its
results (``mx.async_eval`` every ``_PENDING_MAX`` launches, as a CUDA stream queues
work): its peer is the raw call scheduled the same way.
With ``--real cuda`` (or ``metal``) the kernels are real: the host time of building
each call's lazy MLX graph (no eval inside the timed loop, as ``benchmarks/gpu.py``
measures it) for the raw ``mx.fast.cuda_kernel``/``metal_kernel`` and for metalbench's
three kinds.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import mlx.core as mx
import numpy as np

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent))

import metalbench as mb  # noqa: E402
from metalbench import cuda  # noqa: E402
from metalbench import launch as L  # noqa: E402
from metalbench.numba_compat import runtime_stubs  # noqa: E402
from metalbench.dsl import thread_position_in_grid  # noqa: E402

N = 1 << 20
TG = 256


class NullKernel:
    """An MLX kernel object that does nothing: returns the same ready outputs."""

    def __init__(self, **kw):
        self.input_names = kw.get("input_names", [])
        self.outs = None

    def __call__(self, *, inputs, grid, threadgroup, output_shapes, output_dtypes, init_value=None,
                 template=None, verbose=False, stream=None):
        if self.outs is None:
            self.outs = [mx.zeros(s, dtype=d) for s, d in zip(output_shapes, output_dtypes)]
            mx.eval(*self.outs)
        return self.outs


def per_call(fn, number=2000, repeats=7) -> float:
    """The best over ``repeats`` of the mean CPU time of ``number`` calls, in µs: CPU time
    of this process (not wall time) and the best run, because on a shared machine other
    work only ever adds time."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(number):
            fn()
        times.append((time.process_time() - t0) / number * 1e6)
    return min(times)


def measure(number=2000, repeats=7) -> dict:
    mx.fast.cuda_kernel = lambda **kw: NullKernel(**kw)
    mx.fast.metal_kernel = lambda **kw: NullKernel(**kw)
    L.cuda_available = lambda: True          # the stand-in "cuda" backend
    x, y = mx.array(np.random.rand(N).astype(np.float32)), mx.array(np.random.rand(N).astype(np.float32))
    mx.eval(x, y)
    a = mx.array(2.0)
    grid, tg = (N, 1, 1), (TG, 1, 1)

    @mb.kernel
    def saxpy(a: float, x, y, out: mb.Out):
        i = thread_position_in_grid.x
        if i < x.size:
            out[i] = a * x[i] + y[i]

    msl = mb.metal_kernel("saxpy", ["a", "x", "y"], ["out"], MSL_SAXPY)
    msl_t = mb.metal_kernel("saxpy_t", ["a", "x", "y"], ["out"], MSL_SAXPY_T)

    @cuda.jit
    def saxpy_numba(a, x, y, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a * x[i] + y[i]
    saxpy_numba.configure(backend="cuda")

    raw, raw_t, raw_s = NullKernel(), NullKernel(), NullKernel()
    tmpl = [("T", mx.float32)]

    def raw_call():
        return raw(inputs=[a, x, y], grid=grid, threadgroup=tg, output_shapes=[(N,)], output_dtypes=[mx.float32])

    d_x, d_y, d_out = cuda.to_device(np.asarray(x)), cuda.to_device(np.asarray(y)), cuda.device_array(N, np.float32)
    raw_sm, sm = NullKernel(), _softmax_rows(raw=None, backend="cuda")
    rows = {
        "raw MLX kernel call (null kernel)": raw_call,
        "DSL kernel  saxpy(2.0, x, y, grid=n)": lambda: saxpy(2.0, x, y, grid=N, threadgroup=TG, backend="cuda"),
        "DSL kernel  saxpy[n, tg](2.0, x, y)": lambda: saxpy[N, TG](2.0, x, y, backend="cuda"),
        "  its guard called directly (no object call)": lambda: saxpy._guard((2.0, x, y), N, TG, "cuda"),
        "mb.metal_kernel(...)(inputs=...)": lambda: msl(inputs=[2.0, x, y], grid=grid, threadgroup=tg,
                                                         output_shapes=[(N,)], output_dtypes=[mx.float32],
                                                         backend="cuda"),
        "raw call with template=[T] (null kernel)": lambda: raw_t(inputs=[a, x, y], template=tmpl, grid=grid,
                                                                   threadgroup=tg, output_shapes=[(N,)],
                                                                   output_dtypes=[mx.float32]),
        "mb.metal_kernel(..., template=[T])": lambda: msl_t(inputs=[2.0, x, y], template=tmpl, grid=grid,
                                                             threadgroup=tg, output_shapes=[(N,)],
                                                             output_dtypes=[mx.float32], backend="cuda"),
        "raw call, scheduled as cuda.jit schedules (null kernel)": _scheduled(
            lambda: raw_s(inputs=[a, x, y], grid=grid, threadgroup=tg, output_shapes=[(N,)],
                          output_dtypes=[mx.float32])[0]),
        "cuda.jit  k[blocks, threads](device arrays)": lambda: saxpy_numba[N // TG, TG](2.0, d_x, d_y, d_out),
        "raw softmax call, template=[NC, TG] (null kernel)": sm["raw"](raw_sm),
        "DSL kernel  softmax(x, NC=, TG=)": sm["mb"],
    }
    return {name: per_call(fn, number, repeats) for name, fn in rows.items()}


MSL_SAXPY = "uint i = thread_position_in_grid.x;\nif (i < x_shape[0]) { out[i] = a * x[i] + y[i]; }"
MSL_SAXPY_T = "uint i = thread_position_in_grid.x;\nif (i < x_shape[0]) { out[i] = T(a) * x[i] + y[i]; }"


def _scheduled(call):
    """``call()`` (returning an ``mx.array``) made to schedule its result as a ``cuda.jit``
    launch does (``mx.async_eval`` every ``_PENDING_MAX`` results)."""
    pending = []

    def scheduled():
        pending.append(call())
        if len(pending) >= runtime_stubs._PENDING_MAX:
            mx.async_eval(*pending)
            pending.clear()
    return scheduled


def _softmax_rows(raw, backend: str, rows: int = 8, cols: int = 1024) -> dict:
    """gpu.py's row softmax: the raw call (with its template) and the DSL call (constexprs
    by keyword), as functions of the raw kernel object."""
    import gpu
    xs = mx.random.normal((rows, cols))
    mx.eval(xs)
    tmpl, grid, tg = [("NC", cols), ("TG", 256)], (rows * 256, 1, 1), (256, 1, 1)
    return {"raw": lambda rk: (lambda: rk(inputs=[xs], template=tmpl, grid=grid, threadgroup=tg,
                                          output_shapes=[(rows, cols)], output_dtypes=[mx.float32])),
            "mb": lambda: gpu.softmax_k(xs, grid=rows * 256, threadgroup=256, backend=backend, NC=cols, TG=256),
            "source": (gpu.RAW_CUDA if backend == "cuda" else gpu.RAW_MSL)["softmax"]}


RAW_SAXPY = {
    "cuda": "unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\nif (i < x_shape[0]) { out[i] = a[0] * x[i] + y[i]; }",
    "metal": "uint i = thread_position_in_grid.x;\nout[i] = a * x[i] + y[i];",
}


def measure_real(backend: str, number=2000, repeats=15, n=1024) -> dict:
    """Host time per call with the real MLX kernels on ``backend`` ("cuda" or "metal"):
    name -> the mean per call of each of ``repeats`` rounds over all rows (see ``summarise``)."""
    x, y = mx.random.normal((n,)), mx.random.normal((n,))
    a = mx.array(2.0)
    mx.eval(x, y, a)
    grid, tg = (n, 1, 1), (TG, 1, 1)
    make_raw = mx.fast.cuda_kernel if backend == "cuda" else mx.fast.metal_kernel
    raw = make_raw(name="host_overhead_raw_saxpy", input_names=["a", "x", "y"], output_names=["out"],
                   source=RAW_SAXPY[backend])

    @mb.kernel
    def saxpy(a: float, x, y, out: mb.Out):
        i = thread_position_in_grid.x
        if i < x.size:
            out[i] = a * x[i] + y[i]

    msl = mb.metal_kernel("host_overhead_saxpy", ["a", "x", "y"], ["out"], MSL_SAXPY)
    msl_t = mb.metal_kernel("host_overhead_saxpy_t", ["a", "x", "y"], ["out"], MSL_SAXPY_T)
    raw_t = make_raw(name="host_overhead_raw_saxpy_t", input_names=["a", "x", "y"], output_names=["out"],
                     source=RAW_SAXPY[backend])
    tmpl = [("T", mx.float32)]

    @cuda.jit
    def saxpy_numba(a, x, y, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a * x[i] + y[i]
    saxpy_numba.configure(backend=backend)
    d_x, d_y, d_out = cuda.to_device(np.asarray(x)), cuda.to_device(np.asarray(y)), cuda.device_array(n, np.float32)
    sm = _softmax_rows(None, backend)
    raw_sm = make_raw(name="host_overhead_raw_softmax", input_names=sm["source"][1], output_names=["out"],
                      source=sm["source"][0])
    raw_scheduled = _scheduled(lambda: raw(inputs=[a, x, y], grid=grid, threadgroup=tg, output_shapes=[(n,)],
                                           output_dtypes=[mx.float32])[0])

    rows = {
        f"raw mx.fast.{backend}_kernel call": lambda: raw(inputs=[a, x, y], grid=grid, threadgroup=tg,
                                                           output_shapes=[(n,)], output_dtypes=[mx.float32]),
        "DSL kernel  saxpy(2.0, x, y, grid=n)": lambda: saxpy(2.0, x, y, grid=n, threadgroup=TG, backend=backend),
        "DSL kernel  saxpy[n, tg](2.0, x, y)": lambda: saxpy[n, TG](2.0, x, y, backend=backend),
        "  its guard called directly (no object call)": lambda: saxpy._guard((2.0, x, y), n, TG, backend),
        "mb.metal_kernel(...)(inputs=...)": lambda: msl(inputs=[2.0, x, y], grid=grid, threadgroup=tg,
                                                         output_shapes=[(n,)], output_dtypes=[mx.float32],
                                                         backend=backend),
        "raw call with template=[T]": lambda: raw_t(inputs=[a, x, y], template=tmpl, grid=grid, threadgroup=tg,
                                                     output_shapes=[(n,)], output_dtypes=[mx.float32]),
        "mb.metal_kernel(..., template=[T])": lambda: msl_t(inputs=[2.0, x, y], template=tmpl, grid=grid,
                                                             threadgroup=tg, output_shapes=[(n,)],
                                                             output_dtypes=[mx.float32], backend=backend),
        # a cuda.jit launch on device arrays returns nothing and schedules its results
        # (mx.async_eval every _PENDING_MAX launches, as a CUDA stream queues work), so the
        # host time of encoding those kernels lands in the timed loop: its peer is the raw
        # call scheduled the same way, not the graph-only raw call above
        "raw call, scheduled as cuda.jit schedules (async_eval per batch)": raw_scheduled,
        "cuda.jit  k[blocks, threads](device arrays)": lambda: saxpy_numba[n // TG, TG](2.0, d_x, d_y, d_out),
        "raw softmax call, template=[NC, TG]": sm["raw"](raw_sm),
        "DSL kernel  softmax(x, NC=, TG=)": sm["mb"],
    }
    for fn in rows.values():
        for _ in range(20):
            mx.eval(fn())
    mx.synchronize()
    # rounds over all rows, so that the host's drift (a shared VM: ±1 µs between minutes)
    # reaches a metalbench row and its raw peer alike; each row's figure is the median
    # over the rounds, and its "added" the median of the per-round differences
    rounds = {name: [] for name in rows}
    for _ in range(repeats):
        for name, fn in rows.items():
            k = number if "cuda.jit" not in name and "scheduled" not in name else max(20, number // 20)
            t0 = time.perf_counter()
            keep = [fn() for _ in range(k)]       # graphs only: no eval in the timed loop
            rounds[name].append((time.perf_counter() - t0) / k * 1e6)
            mx.eval([o for o in keep if o is not None])
            del keep
    return rounds


def summarise(rounds: dict) -> tuple[dict, dict]:
    """(µs per call, µs added over the raw row above) per row: medians over the rounds,
    the added time as the median of each round's difference (``rounds``: name -> list;
    a stand-in measurement's single figures count as one round).

    >>> summarise({"raw a": [1.0, 3.0, 1.2], "mb a": [1.5, 3.4, 1.9]})[1]["mb a"]
    0.5
    """
    import statistics
    per, added, raw = {}, {}, None
    for name, v in rounds.items():
        v = v if isinstance(v, list) else [v]
        if name.startswith("raw"):
            raw = v
        per[name] = statistics.median(v)
        added[name] = statistics.median(a - b for a, b in zip(v, raw))
    return per, added


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--number", type=int, default=2000)
    ap.add_argument("--real", choices=["cuda", "metal"], help="use the real MLX kernels on this backend")
    args = ap.parse_args(argv)
    res = measure_real(args.real, args.number) if args.real else measure(args.number)
    per, added = summarise(res)
    if args.json:
        print(json.dumps({k: round(v, 3) for k, v in per.items()}, indent=1))     # medians, one object
        return
    print(f"{'call':56s} {'µs/call':>9s} {'added over raw':>15s}")
    for k, v in per.items():
        print(f"{k:56s} {v:9.2f} {added[k]:15.2f}")


if __name__ == "__main__":
    main()
