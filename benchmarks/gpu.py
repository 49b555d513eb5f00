"""GPU benchmarks: metalbench-generated kernels against the same kernel written by hand.

For each kernel (copy, saxpy, block reduction, row softmax, tiled matmul) and size, the
table gives the median time of:

- ``mb``      the metalbench DSL kernel launched through ``Kernel.__call__`` (binding,
              cache lookup and launch included),
- ``raw``     the same algorithm hand-written as a raw ``mx.fast.cuda_kernel`` body
              (``mx.fast.metal_kernel`` on a Mac),
- ``mlx``     MLX's built-in ops,
- ``cupy``    a CuPy ``RawKernel`` of the same CUDA source (NVIDIA only, when CuPy exists),

and the ratio raw/mb (≥ 0.95 is the target: generated code as fast as hand-written), and
``model_ms``: the roofline time of the launch on this GPU (``metalbench.devices``), with
``model/mb`` saying how close the model comes. ``bias_gelu`` is the new-user check: a fused
bias + GELU as someone new would write it, against its hand-written twin.

    python benchmarks/gpu.py                    # backend from METALBENCH_BACKEND / auto
    python benchmarks/gpu.py --backend metal    # on Apple silicon
    python benchmarks/gpu.py --quick            # small sizes only
    python benchmarks/gpu.py --backend sim      # smoke test: each kernel once, small, and the
                                                # raw MSL twins through mb.metal_kernel, all checked

Timing: launches queued back to back (``mx.async_eval``) with one ``mx.synchronize()``
per batch of 10, warm-up first, median over the batches; inputs are created on the
device (``mx.random``); ``mb`` and ``raw`` in alternating rounds (``interleaved_times``),
so a drift during a row reaches both alike. Exit status 1 when a kernel's result is wrong.
"""
from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import sys
import time

import numpy as np

import metalbench as mb
from metalbench.dsl import *  # noqa: F401,F403

# ----------------------------------------------------------------------------- DSL kernels

# (before the kernels: a kernel resolves the module's names when it is decorated)
INF = float("inf")


@mb.kernel
def copy_k(x, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = x[i]


@mb.kernel
def saxpy_k(a: float, x, y, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = a * x[i] + y[i]


@mb.kernel
def block_sum_k(x, out: mb.Out(shape=lambda x, **_: (x.size // 1024,), dtype=mb.float32)):
    # 1024 threads per threadgroup: simd sums, then one simdgroup sums the partials.
    part = threadgroup_array(32, float32)
    v = simd_sum(x[thread_position_in_grid.x])
    if thread_index_in_simdgroup == 0:
        part[simdgroup_index_in_threadgroup] = v
    threadgroup_barrier()
    if simdgroup_index_in_threadgroup == 0:
        s = simd_sum(part[thread_index_in_simdgroup])
        if thread_index_in_simdgroup == 0:
            out[threadgroup_position_in_grid.x] = s


@mb.kernel
def softmax_k(x, out: mb.Out, NC: mb.constexpr = 1024, TG: mb.constexpr = 256):
    # One threadgroup per row; each thread strides over the row. The row length is a
    # constexpr, as the raw kernel's template constant NC, so both compile the same loops.
    red = threadgroup_array(32, float32)
    row = threadgroup_position_in_grid.x
    tid = thread_index_in_threadgroup
    base = row * NC
    m = -INF
    for j in range(tid, NC, TG):
        m = max(m, x[base + j])
    m = simd_max(m)
    if thread_index_in_simdgroup == 0:
        red[simdgroup_index_in_threadgroup] = m
    threadgroup_barrier()
    m = simd_max(red[thread_index_in_simdgroup] if thread_index_in_simdgroup < TG // 32 else -INF)
    threadgroup_barrier()
    s = 0.0
    for j in range(tid, NC, TG):
        s += metal.exp(x[base + j] - m)
    s = simd_sum(s)
    if thread_index_in_simdgroup == 0:
        red[simdgroup_index_in_threadgroup] = s
    threadgroup_barrier()
    s = simd_sum(red[thread_index_in_simdgroup] if thread_index_in_simdgroup < TG // 32 else 0.0)
    inv = 1.0 / s
    for j in range(tid, NC, TG):
        out[base + j] = metal.exp(x[base + j] - m) * inv



@mb.kernel
def matmul_k(a, b, c: mb.Out(shape=lambda a, b, **_: (a.shape[0], b.shape[1]), dtype=mb.float32),
             KD: mb.constexpr = 512, ND: mb.constexpr = 512, TILE: mb.constexpr = 16):
    # Sizes are constexprs, as the raw kernel's template constants KD and ND.
    ta = threadgroup_array((TILE, TILE), float32)
    tb = threadgroup_array((TILE, TILE), float32)
    col = thread_position_in_grid.x
    row = thread_position_in_grid.y
    tx = thread_position_in_threadgroup.x
    ty = thread_position_in_threadgroup.y
    acc = 0.0
    for k0 in range(0, KD, TILE):
        ta[ty, tx] = a[row * KD + k0 + tx]
        tb[ty, tx] = b[(k0 + ty) * ND + col]
        threadgroup_barrier()
        for kk in range(TILE):
            acc += ta[ty, kk] * tb[kk, tx]
        threadgroup_barrier()
    c[row * ND + col] = acc


# The new-user check (issue 18): a kernel written as someone new to metalbench would
# write it, not tuned for the benchmarks -- a fused bias + GELU (tanh form) over a
# (rows, GELU_COLS) activation, the bias broadcast along rows through ``bias.size``.
GELU_COLS = 4096


@mb.kernel
def bias_gelu_k(x, bias, out: mb.Out):
    i = thread_position_in_grid.x
    v = x[i] + bias[i % bias.size]
    out[i] = 0.5 * v * (1.0 + metal.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))


# ----------------------------------------------------------------------------- raw kernels

RAW_CUDA = {
    "copy": ("int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < N) out[i] = x[i];", ["x"]),
    "saxpy": ("int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < N) out[i] = a[0] * x[i] + y[i];",
              ["a", "x", "y"]),
    "block_sum": ("""
    __shared__ float part[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        float s = part[threadIdx.x];
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (threadIdx.x == 0) out[blockIdx.x] = s;
    }""", ["x"]),
    "softmax": ("""
    __shared__ float red[32];
    int row = blockIdx.x, tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    const float* xr = x + (long long)row * NC;
    float m = -INFINITY;
    for (int j = tid; j < NC; j += TG) m = fmaxf(m, xr[j]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0) red[w] = m;
    __syncthreads();
    m = lane < TG / 32 ? red[lane] : -INFINITY;
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    __syncthreads();
    float s = 0.f;
    for (int j = tid; j < NC; j += TG) s += expf(xr[j] - m);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) red[w] = s;
    __syncthreads();
    s = lane < TG / 32 ? red[lane] : 0.f;
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    float inv = 1.f / s;
    for (int j = tid; j < NC; j += TG) out[(long long)row * NC + j] = expf(xr[j] - m) * inv;""", ["x"]),
    # its hand-written twin: what a CUDA programmer writes for mx.fast.cuda_kernel
    "bias_gelu": ("""
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float v = x[i] + bias[i % C];
        out[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    }""", ["x", "bias"]),
    "matmul": ("""
    __shared__ float ta[16][16];
    __shared__ float tb[16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    int col = blockIdx.x * 16 + tx, row = blockIdx.y * 16 + ty;
    float acc = 0.f;
    for (int k0 = 0; k0 < KD; k0 += 16) {
        ta[ty][tx] = a[row * KD + k0 + tx];
        tb[ty][tx] = b[(k0 + ty) * ND + col];
        __syncthreads();
        for (int kk = 0; kk < 16; ++kk) acc += ta[ty][kk] * tb[kk][tx];
        __syncthreads();
    }
    c[row * ND + col] = acc;""", ["a", "b"]),
}

# The same algorithms for mx.fast.metal_kernel (a Mac). ``--backend sim`` runs them through
# mb.metal_kernel on the simulator, so they are checked here before a Mac sees them.
RAW_MSL = {
    "copy": ("uint i = thread_position_in_grid.x; out[i] = x[i];", ["x"]),
    "saxpy": ("uint i = thread_position_in_grid.x; out[i] = a * x[i] + y[i];", ["a", "x", "y"]),
    "block_sum": ("""
    threadgroup float part[32];
    float v = simd_sum(x[thread_position_in_grid.x]);
    if (thread_index_in_simdgroup == 0) part[simdgroup_index_in_threadgroup] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (simdgroup_index_in_threadgroup == 0) {
        float s = simd_sum(part[thread_index_in_simdgroup]);
        if (thread_index_in_simdgroup == 0) out[threadgroup_position_in_grid.x] = s;
    }""", ["x"]),
    "softmax": ("""
    threadgroup float red[32];
    uint row = threadgroup_position_in_grid.x;
    int tid = thread_index_in_threadgroup;
    uint lane = thread_index_in_simdgroup, w = simdgroup_index_in_threadgroup;
    const device float* xr = x + row * NC;
    float m = -INFINITY;
    for (int j = tid; j < NC; j += TG) m = metal::max(m, xr[j]);
    m = simd_max(m);
    if (lane == 0) red[w] = m;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    m = simd_max(lane < TG / 32 ? red[lane] : -INFINITY);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float s = 0.0f;
    for (int j = tid; j < NC; j += TG) s += metal::exp(xr[j] - m);
    s = simd_sum(s);
    if (lane == 0) red[w] = s;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    s = simd_sum(lane < TG / 32 ? red[lane] : 0.0f);
    float inv = 1.0f / s;
    for (int j = tid; j < NC; j += TG) out[row * NC + j] = metal::exp(xr[j] - m) * inv;""", ["x"]),
    "bias_gelu": ("""
    uint i = thread_position_in_grid.x;
    float v = x[i] + bias[i % C];
    out[i] = 0.5f * v * (1.0f + metal::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));""", ["x", "bias"]),
    "matmul": ("""
    threadgroup float ta[16][16];
    threadgroup float tb[16][16];
    uint tx = thread_position_in_threadgroup.x, ty = thread_position_in_threadgroup.y;
    uint col = thread_position_in_grid.x, row = thread_position_in_grid.y;
    float acc = 0.0f;
    for (int k0 = 0; k0 < KD; k0 += 16) {
        ta[ty][tx] = a[row * KD + k0 + tx];
        tb[ty][tx] = b[(k0 + ty) * ND + col];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (int kk = 0; kk < 16; ++kk) acc += ta[ty][kk] * tb[kk][tx];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    c[row * ND + col] = acc;""", ["a", "b"]),
}


# ----------------------------------------------------------------------------- timing

def median_time(fn, warmup=5, reps=30, inner=10):
    """Median over ``reps`` of the time per launch, each rep being ``inner`` launches
    queued back to back (``mx.async_eval``) and one synchronisation, so the host's launch
    cost and the GPU's run overlap as in real use and the sync latency is amortised
    (``metalbench.bench.time_launch`` times the same way)."""
    return statistics.median(batch_times(fn, warmup, reps, inner))


def interleaved_times(fns: dict, reps=30, rounds=3, inner=10, budget=0.3) -> dict:
    """Median time per launch of each function, batches of ``inner`` queued launches
    (``batch_times``) alternating one batch at a time between the functions (the order
    reversed every other turn), so that drift in the GPU's clocks or the host's load
    reaches every function alike; on the H200 the launch path's per-call time moved
    between 20 and 45 µs across machines and minutes, while rows are compared at 1 µs.
    At least ``reps`` batches each, more where batches are short, up to about ``budget``
    seconds per function (at most 20x ``reps``). ``rounds`` is kept for callers."""
    import mlx.core as mx
    one = {}
    for k, fn in fns.items():     # warm up, and one batch each to size the run
        for _ in range(2):
            mx.eval(fn())
        mx.synchronize()
        one[k] = batch_times(fn, warmup=0, reps=1, inner=inner)[0]
    want = int(budget / (inner * max(max(one.values()), 1e-7)))
    total = min(max(reps, want), 20 * reps)
    times = {k: [] for k in fns}
    names = list(fns)
    for b in range(total):
        for k in (names if b % 2 == 0 else names[::-1]):
            times[k] += batch_times(fns[k], warmup=0, reps=1, inner=inner)
    return {k: statistics.median(v) for k, v in times.items()}


def user_call(kernel, args, kw, grid, tg, backend):
    """The call of ``kernel`` on ``args`` (and constexpr keywords ``kw``) as a user writes it
    for one kernel, arguments and keywords spelled out -- ``block_sum_k(x, grid=..,
    threadgroup=.., backend=..)`` -- not through ``*args, **kw``, which costs Python ~0.2 µs a
    call more (a dict built and unpacked) on a path measured at 1 µs.

    >>> user_call(lambda *a, **k: (a, sorted(k)), (1, 2), {"NC": 3}, 8, 4, "sim")()
    ((1, 2), ['NC', 'backend', 'grid', 'threadgroup'])
    """
    names = [f"a{i}" for i in range(len(args))]
    call = ", ".join(names + [f"{k}={k}" for k in kw] + ["grid=grid", "threadgroup=tg", "backend=backend"])
    env = dict(zip(names, args), **kw, kernel=kernel, grid=grid, tg=tg, backend=backend)
    exec(f"def mb_fn():\n    return kernel({call})\n", env)     # noqa: S102 - our own text
    return env["mb_fn"]


def batch_times(fn, warmup=5, reps=30, inner=10) -> list:
    """Per-launch time of each of ``reps`` batches (see ``median_time``)."""
    import mlx.core as mx
    for _ in range(warmup):
        mx.eval(fn())
    mx.synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            mx.async_eval(fn())
        mx.synchronize()
        ts.append((time.perf_counter() - t0) / inner)
    return ts


def cupy_time(kern, grid, block, args, warmup=5, reps=30, inner=10):
    import cupy as cp
    for _ in range(warmup):
        kern(grid, block, args)
    cp.cuda.Device().synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            kern(grid, block, args)
        cp.cuda.Device().synchronize()
        ts.append((time.perf_counter() - t0) / inner)
    return statistics.median(ts)


# ----------------------------------------------------------------------------- cases

def cases(quick: bool, sim: bool = False):
    if sim:     # the simulator: every kernel once, small (a check of the script and the raw MSL)
        yield from [("copy", 1 << 12), ("saxpy", 1 << 12), ("block_sum", 1 << 12), ("softmax", (4, 1024)),
                    ("bias_gelu", 1 << 14), ("matmul", 32)]
        return
    sizes = [1 << 10, 1 << 20, 1 << 24] + ([] if quick else [1 << 26, 134_217_728])
    for n in sizes:
        yield "copy", n
        yield "saxpy", n
    for n in ([1 << 20, 1 << 24] + ([] if quick else [1 << 26])):
        yield "block_sum", n
    for rows, cols in ([(1024, 1024)] + ([] if quick else [(8192, 4096)])):
        yield "softmax", (rows, cols)
    # the new-user check: fused bias + GELU over 64M elements against its cuda_kernel twin
    for n in ([1 << 20] + ([] if quick else [1 << 26])):
        yield "bias_gelu", n
    for n in ([512] + ([] if quick else [2048, 4096])):
        yield "matmul", n


def _sim_raw(**kw):
    """mb.metal_kernel on the simulator, called as MLX's metal_kernel object is."""
    k = mb.metal_kernel(**kw)
    return lambda **call: k(backend="sim", **call)


def run(backend: str, quick: bool, reps: int, device=None, only=None):
    import mlx.core as mx
    from metalbench import devices
    rows = []
    sim = backend == "sim"
    raw_table = RAW_CUDA if backend == "cuda" else RAW_MSL
    make_raw = mx.fast.cuda_kernel if backend == "cuda" else (_sim_raw if sim else mx.fast.metal_kernel)
    model_device = devices.chosen(device or devices.current(backend) or ("H200" if backend == "cuda" else None))
    if sim:
        reps = 1
    raw_kernels = {}
    try:
        import cupy as cp
    except Exception:
        cp = None
    if backend != "cuda":
        cp = None
    for name, size in cases(quick, sim):
        if only and not re.search(only, f"{name}:{size}"):
            continue
        mx.random.seed(0)
        tmpl, grid, tg, bytes_moved, flops = [], None, None, 0, 0
        if name in ("copy", "saxpy"):
            n = size
            x = mx.random.normal((n,))
            y = mx.random.normal((n,))
            a = 2.0
            mb_args = (x,) if name == "copy" else (a, x, y)
            raw_inputs = [x] if name == "copy" else [mx.array(a, dtype=mx.float32), x, y]
            grid, tg = (n, 1, 1), (256, 1, 1)
            out_shape = (n,)
            tmpl = [("N", n)]
            bytes_moved = n * 4 * (2 if name == "copy" else 3)
            mlx_fn = (lambda: x + 0.0) if name == "copy" else (lambda: a * x + y)  # noqa: E731
            mb_kernel, mb_kw = (copy_k, {}) if name == "copy" else (saxpy_k, {})
            ref = np.array(x) if name == "copy" else a * np.array(x) + np.array(y)
        elif name == "block_sum":
            n = size
            x = mx.random.normal((n,))
            mb_args, raw_inputs = (x,), [x]
            grid, tg = (n, 1, 1), (1024, 1, 1)
            # the raw body names no template constant: none passed (it kept the row before's
            # [("N", n)] until session 15, ~0.4 µs a call more for raw on the H200)
            tmpl = []
            out_shape = (n // 1024,)
            bytes_moved = n * 4
            mlx_fn = lambda: x.reshape(-1, 1024).sum(1)  # noqa: E731
            mb_kernel, mb_kw = block_sum_k, {}
            ref = np.array(x).reshape(-1, 1024).sum(1)
        elif name == "softmax":
            r, cn = size
            x = mx.random.normal((r, cn))
            mb_args, raw_inputs = (x,), [x]
            grid, tg = (r * 256, 1, 1), (256, 1, 1)
            out_shape = (r, cn)
            tmpl = [("NC", cn), ("TG", 256)]
            bytes_moved = r * cn * 4 * 2
            mlx_fn = lambda: mx.softmax(x, axis=1)  # noqa: E731
            mb_kernel, mb_kw = softmax_k, {"NC": cn, "TG": 256}
            xn = np.array(x)
            e = np.exp(xn - xn.max(1, keepdims=True))
            ref = e / e.sum(1, keepdims=True)
        elif name == "bias_gelu":
            n = size
            cols = min(GELU_COLS, n)
            x = mx.random.normal((n,))
            bias = mx.random.normal((cols,))
            mb_args, raw_inputs = (x, bias), [x, bias]
            grid, tg = (n, 1, 1), (256, 1, 1)
            out_shape = (n,)
            tmpl = [("N", n), ("C", cols)]
            bytes_moved = n * 4 * 2 + cols * 4
            mlx_fn = lambda: _gelu_mlx(x.reshape(-1, cols) + bias)  # noqa: E731
            mb_kernel, mb_kw = bias_gelu_k, {}
            v = (np.array(x).reshape(-1, cols) + np.array(bias)).reshape(-1)
            ref = 0.5 * v * (1 + np.tanh(0.7978845608 * (v + 0.044715 * v ** 3)))
        else:
            n = size
            a_ = mx.random.normal((n, n))
            b_ = mx.random.normal((n, n))
            mb_args, raw_inputs = (a_, b_), [a_, b_]
            grid, tg = (n, n, 1), (16, 16, 1)
            out_shape = (n, n)
            tmpl = [("KD", n), ("ND", n)]
            flops = 2 * n ** 3
            mlx_fn = lambda: a_ @ b_  # noqa: E731
            mb_kernel, mb_kw = matmul_k, {"KD": n, "ND": n, "TILE": 16}
            ref = np.array(a_) @ np.array(b_)

        mb_fn = user_call(mb_kernel, mb_args, mb_kw, grid, tg, backend)

        got = np.array(mb_fn())
        ok = bool(np.allclose(got, ref, rtol=1e-3, atol=1e-3 * max(1.0, float(np.abs(ref).max()))))
        row = dict(kernel=name, size=str(size), ok=ok)
        if sim:
            row["mb_ms"] = _sim_time(mb_fn) * 1e3
        elif name not in raw_table:
            row["mb_ms"] = median_time(mb_fn, reps=reps) * 1e3
        # the roofline model of this launch on this GPU (issue 18 item 5): how close it comes
        est = devices.estimate_launch(mb_kernel, *mb_args, grid=grid, threadgroup=tg, device=model_device, **mb_kw)
        row["model_device"] = model_device.name
        row["model_ms"] = est.seconds * 1e3
        if name in raw_table:
            if name not in raw_kernels:
                src, in_names = raw_table[name]
                raw_kernels[name] = make_raw(name=f"raw_{name}", input_names=in_names,
                                             output_names=["c" if name == "matmul" else "out"], source=src)
            rk = raw_kernels[name]

            def raw_fn():
                return rk(inputs=raw_inputs, template=tmpl, grid=grid, threadgroup=tg,
                          output_shapes=[out_shape], output_dtypes=[mx.float32])[0]
            row["raw_ok"] = bool(np.allclose(np.array(raw_fn()), ref, rtol=1e-3,
                                             atol=1e-3 * max(1.0, float(np.abs(ref).max()))))
            if not sim:
                # mb and raw in alternating rounds (mb, raw, raw, mb, mb, raw): a drift of the
                # GPU's clocks or the host's load during the row reaches both alike
                t = interleaved_times({"mb": mb_fn, "raw": raw_fn}, reps)
                row["mb_ms"], row["raw_ms"] = t["mb"] * 1e3, t["raw"] * 1e3
                row["raw/mb"] = row["raw_ms"] / row["mb_ms"]
        if not sim:
            row["model/mb"] = row["model_ms"] / row["mb_ms"]
            row["mlx_ms"] = median_time(mlx_fn, reps=reps) * 1e3
        if cp is not None and name in RAW_CUDA:
            try:
                row["cupy_ms"] = _cupy(name, size, reps) * 1e3
            except Exception as e:  # a CuPy failure must not lose the other columns
                row["cupy_err"] = str(e).splitlines()[0][:120]
        if bytes_moved:
            row["mb_GB/s"] = bytes_moved / (row["mb_ms"] * 1e-3) / 1e9
        if flops:
            row["mb_GFLOP/s"] = flops / (row["mb_ms"] * 1e-3) / 1e9
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def _gelu_mlx(v):
    import mlx.core as mx
    return 0.5 * v * (1.0 + mx.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))


def _sim_time(fn):
    t0 = time.perf_counter()
    np.array(fn())
    return time.perf_counter() - t0


def _cupy(name, size, reps):
    import cupy as cp
    src, in_names = RAW_CUDA[name]
    if name == "bias_gelu":
        n, cols = size, min(GELU_COLS, size)
        code = f'extern "C" __global__ void k(const float* x, const float* bias, float* out) ' \
               f'{{ const int N = {n}; const int C = {cols}; {src} }}'
        kern = cp.RawKernel(code, "k")
        x = cp.random.standard_normal(n, dtype=cp.float32)
        bias = cp.random.standard_normal(cols, dtype=cp.float32)
        out = cp.empty_like(x)
        return cupy_time(kern, ((n + 255) // 256,), (256,), (x, bias, out), reps=reps)
    if name in ("copy", "saxpy"):
        n = size
        params = ", ".join([f"const float* {v}" for v in in_names] + ["float* out"])
        code = f'extern "C" __global__ void k({params}) {{ const int N = {n}; {src} }}'
        kern = cp.RawKernel(code, "k")
        x = cp.random.standard_normal(n, dtype=cp.float32)
        y = cp.random.standard_normal(n, dtype=cp.float32)
        out = cp.empty_like(x)
        args = (x, out) if name == "copy" else (cp.full(1, 2.0, dtype=cp.float32), x, y, out)
        return cupy_time(kern, ((n + 255) // 256,), (256,), args, reps=reps)
    if name == "block_sum":
        n = size
        code = f'extern "C" __global__ void k(const float* x, float* out) {{ {src} }}'
        kern = cp.RawKernel(code, "k")
        x = cp.random.standard_normal(n, dtype=cp.float32)
        out = cp.empty(n // 1024, dtype=cp.float32)
        return cupy_time(kern, (n // 1024,), (1024,), (x, out), reps=reps)
    if name == "softmax":
        r, cn = size
        code = (f'#define INFINITY __int_as_float(0x7f800000)\nextern "C" __global__ void k(const float* x, float* out) '
                f'{{ const int NC = {cn}; const int TG = 256; {src} }}')
        kern = cp.RawKernel(code, "k")
        x = cp.random.standard_normal((r, cn), dtype=cp.float32)
        out = cp.empty_like(x)
        return cupy_time(kern, (r,), (256,), (x, out), reps=reps)
    n = size
    code = (f'extern "C" __global__ void k(const float* a, const float* b, float* c) '
            f'{{ const int KD = {n}; const int ND = {n}; {src} }}')
    kern = cp.RawKernel(code, "k")
    a = cp.random.standard_normal((n, n), dtype=cp.float32)
    b = cp.random.standard_normal((n, n), dtype=cp.float32)
    c = cp.empty((n, n), dtype=cp.float32)
    return cupy_time(kern, (n // 16, n // 16), (16, 16), (a, b, c), reps=reps)


def overhead(backend: str, reps: int = 2000):
    """Per-call cost at 1K elements: mb kernel call vs the raw MLX custom kernel call."""
    import mlx.core as mx
    x = mx.random.normal((1024,))
    make_raw = mx.fast.cuda_kernel if backend == "cuda" else mx.fast.metal_kernel
    src, names = (RAW_CUDA if backend == "cuda" else RAW_MSL)["copy"]
    rk = make_raw(name="raw_copy_small", input_names=names, output_names=["out"], source=src)

    def raw():
        return rk(inputs=[x], template=[("N", 1024)], grid=(1024, 1, 1), threadgroup=(256, 1, 1),
                  output_shapes=[(1024,)], output_dtypes=[mx.float32])[0]

    def mbc():
        return copy_k(x, grid=1024, threadgroup=256, backend=backend)

    res = {}
    for label, fn in (("raw", raw), ("mb", mbc)):
        for _ in range(50):
            mx.eval(fn())
        mx.synchronize()
        # Launch cost on the host: build the lazy graph only (no eval), many times.
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        res[f"{label}_host_us"] = (time.perf_counter() - t0) / reps * 1e6
        res[f"{label}_call_us"] = median_time(fn, reps=50) * 1e6
    res["mb_overhead_us"] = res["mb_host_us"] - res["raw_host_us"]
    print(json.dumps(res), flush=True)
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default=None,
                    help="cuda or metal (default: auto); sim: every kernel once, small, checked (a smoke test)")
    ap.add_argument("--device", default=None, help="the device table's entry the model uses (default: this GPU)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--json", default=None, help="write the rows here")
    ap.add_argument("--only", default=None, metavar="REGEX",
                    help="only the rows whose 'kernel:size' this matches, e.g. ':1048576$|softmax:\\(1024,'")
    args = ap.parse_args(argv)
    backend = mb.resolve_backend(args.backend or "auto")
    import mlx.core as mx
    print(f"# {platform.node()} {backend} mlx {mx.__version__} {time.strftime('%Y-%m-%d')}", flush=True)
    if backend == "sim":
        print("# sim: each kernel once at a small size (simulator time, not a GPU's); raw MSL via mb.metal_kernel",
              flush=True)
    ov = overhead(backend) if backend != "sim" else {}
    rows = run(backend, args.quick, args.reps, args.device, args.only)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(overhead=ov, rows=rows), f, indent=1)
    keys = ["kernel", "size", "ok", "mb_ms", "raw_ms", "raw/mb", "mlx_ms", "cupy_ms", "mb_GB/s", "mb_GFLOP/s",
            "model_ms", "model/mb"]
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(_fmt(r.get(k, "")) for k in keys) + " |")
    bad = [r["kernel"] for r in rows if not r["ok"] or r.get("raw_ok") is False]
    if bad:
        print(f"MISMATCH: {', '.join(bad)}", file=sys.stderr)
    return 1 if bad else 0


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


if __name__ == "__main__":
    sys.exit(main())
