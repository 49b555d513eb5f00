"""Launch-bound rows, finely interleaved: is metalbench's gap the generated kernel or its call? (issue 18)

For each kernel at 1M elements this times, one batch of ``inner`` queued launches per
function per turn (the order rotated every turn, so drift in the GPU's clocks or the shared
host's load reaches every function alike; on the H200 the launch path's per-call time moved
between ~20 and ~45 µs across machines):

- ``raw``             the hand-written ``mx.fast.cuda_kernel`` body of ``gpu.py``,
- ``direct_plain``    the CUDA metalbench prints for this launch, readable, through a fresh
                      ``mx.fast.cuda_kernel`` (no metalbench host code),
- ``direct_compact``  the same, compacted as metalbench hands it to MLX (``c_like.compact``),
- ``plan_kernel``     the prepared plan's own MLX kernel object, called with the plan's inputs,
- ``mb``              the DSL kernel called as a user calls it,
- ``raw_precompiled`` (with ``--precompiled``, needs CuPy's NVRTC) the raw body compiled to PTX
                      once and launched by ``mx.fast.precompiled_cuda_kernel``: does MLX's
                      precompiled path cost less per call than ``cuda_kernel``? (No: on the H200
                      on 2026-12-03 it cost 1.0-2.4 µs more -- MLX hashes the PTX, larger than
                      the CUDA source, at every launch -- so metalbench does not use it.)

``plan_kernel - raw`` is the generated code (and MLX's handling of it), ``mb - plan_kernel`` is
metalbench's Python front. Then ``mb.metal_kernel`` on an MSL saxpy against its raw twin (1K,
1M), and a new user's kernel that is in no benchmark: RMSNorm over rows written plainly in the
DSL (run-time row length) against a hand-written twin (8192x4096 and 1024x1024). Every row
has all five columns (for ``mb.metal_kernel``, ``mb`` is the MSL kernel's call).

    python3 benchmarks/launch_ab.py --json ab.json           # on the H200 (~40 s)
    python benchmarks/launch_ab.py --standin --turns 3       # here: a null MLX kernel (smoke test)
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
import numpy as np  # noqa: E402

import metalbench as mb  # noqa: E402
from metalbench.codegen.c_like import compact  # noqa: E402
from metalbench.dsl import *  # noqa: E402,F401,F403

import gpu  # noqa: E402


@mb.kernel
def rmsnorm(x, w, out: mb.Out, eps: float):
    # what a new user writes: one threadgroup per row, the row length read at run time
    row = threadgroup_position_in_grid.x
    tid = thread_index_in_threadgroup
    n = x.shape[1]
    red = threadgroup_array(32, float32)
    s = 0.0
    for j in range(tid, n, threads_per_threadgroup.x):
        v = x[row, j]
        s += v * v
    s = simd_sum(s)
    if thread_index_in_simdgroup == 0:
        red[simdgroup_index_in_threadgroup] = s
    threadgroup_barrier()
    s = simd_sum(red[thread_index_in_simdgroup] if thread_index_in_simdgroup < threads_per_threadgroup.x // 32
                 else 0.0)
    inv = metal.rsqrt(s / n + eps)
    for j in range(tid, n, threads_per_threadgroup.x):
        out[row, j] = x[row, j] * inv * w[j]


RMSNORM_CUDA = """
__shared__ float red[32];
int row = blockIdx.x, tid = threadIdx.x, n = x_shape[1];
const float* xr = x + (long long)row * n;
float s = 0.f;
for (int j = tid; j < n; j += blockDim.x) { float v = xr[j]; s += v * v; }
for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
if ((tid & 31) == 0) red[tid >> 5] = s;
__syncthreads();
s = (tid & 31) < (int)(blockDim.x >> 5) ? red[tid & 31] : 0.f;
for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
float inv = rsqrtf(s / n + eps[0]);
for (int j = tid; j < n; j += blockDim.x) out[(long long)row * n + j] = xr[j] * inv * w[j];
"""

MSL_SAXPY = "uint i = thread_position_in_grid.x;\nif (i < x_shape[0]) { out[i] = a[0] * x[i] + y[i]; }"
CUDA_SAXPY = "unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\nif (i < x_shape[0]) { out[i] = a[0] * x[i] + y[i]; }"


def rmsnorm_ref(x, w, eps):
    """NumPy RMSNorm over rows (float64 sums).

    >>> rmsnorm_ref(np.array([[3.0, 4.0]]), np.array([1.0, 2.0]), 0.0).round(4).tolist()
    [[0.8485, 2.2627]]
    """
    return x / np.sqrt((x.astype(np.float64) ** 2).mean(1, keepdims=True) + eps) * w


def one_batch(fn, inner: int) -> float:
    t0 = time.perf_counter()
    for _ in range(inner):
        mx.async_eval(fn())
    mx.synchronize()
    return (time.perf_counter() - t0) / inner * 1e6


def ab(fns: dict, turns: int, inner: int = 10) -> dict:
    """µs per launch of each function: median over ``turns`` turns of one batch each, the
    order rotated (and reversed every other turn)."""
    for f in fns.values():
        for _ in range(5):
            mx.eval(f())
    mx.synchronize()
    ts = {k: [] for k in fns}
    names = list(fns)
    for r in range(turns):
        order = names[r % len(names):] + names[:r % len(names)]
        for k in (order[::-1] if r % 2 else order):
            ts[k].append(one_batch(fns[k], inner))
    return {k: statistics.median(v) for k, v in ts.items()}


def plan_variants(kern, bound, name) -> dict:
    """``direct_plain``, ``direct_compact`` and ``plan_kernel`` calls for ``bound`` (see the
    module docstring): what metalbench would launch, without its Python front."""
    sp = kern.specialization(bound)
    plan = sp.gpu_plan(bound, "cuda")
    exact = all(a % b == 0 for a, b in zip(bound.grid, bound.threadgroup))
    r = sp.rendered("cuda", exact, bound.threadgroup, sp.lengths(bound.values, bound.outputs, "cuda"))
    d_in, d_kw = plan.inputs(bound.values), dict(plan.kwargs)
    names = dict(input_names=list(r.input_names), output_names=list(r.output_names))
    plain = mx.fast.cuda_kernel(name=f"ab_plain_{name}", source=r.body, header=r.header, **names)
    small = mx.fast.cuda_kernel(name=f"ab_compact_{name}", source=compact(r.body), header=compact(r.header), **names)
    return {"direct_plain": lambda: plain(inputs=d_in, **d_kw)[0],
            "direct_compact": lambda: small(inputs=d_in, **d_kw)[0],
            "plan_kernel": lambda: plan.kernel(inputs=d_in, **d_kw)[0]}


PRECOMPILED = False      # --precompiled


def precompiled_raw(src: str, tmpl, inputs, out_shape, grid, tg):
    """The raw body as ``extern "C" k(const float* x, float* out)`` with its template
    constants, compiled to PTX by CuPy's NVRTC and launched by MLX's precompiled path."""
    import cupy
    from cupy.cuda import compiler
    consts = "".join(f"constexpr int {k} = {v};\n" for k, v in tmpl)
    code = (f'#define INFINITY __int_as_float(0x7f800000)\n{consts}'
            f'extern "C" __global__ void k(const float* x, float* out) {{\n{src}\n}}\n')
    ptx = compiler.compile_using_nvrtc(code, options=("--std=c++17",), arch=cupy.cuda.Device().compute_capability)
    ptx = (ptx[0] if isinstance(ptx, tuple) else ptx)
    ptx = ptx if isinstance(ptx, bytes) else ptx.encode()
    return lambda: mx.fast.precompiled_cuda_kernel(
        name="k", compiled_source=ptx, inputs=inputs, output_shapes=[out_shape], output_dtypes=[mx.float32],
        scalars=[], grid=grid, threadgroup=tg)[0]


def dsl_row(name, kern, args, grid, tg, tmpl, out_shape, turns, kw=None) -> dict:
    kw = kw or {}
    bound = kern.bind(*args, grid=grid, threadgroup=tg, backend="cuda", **kw)
    src, in_names = gpu.RAW_CUDA[name]
    raw = mx.fast.cuda_kernel(name=f"ab_raw_{name}", input_names=in_names, output_names=["out"], source=src)
    raw_in = [a for a in args if isinstance(a, mx.array)]
    t = ab({"raw": lambda: raw(inputs=raw_in, template=tmpl, grid=bound.grid, threadgroup=bound.threadgroup,
                                output_shapes=[out_shape], output_dtypes=[mx.float32])[0],
            **plan_variants(kern, bound, name),
            **({"raw_precompiled": precompiled_raw(src, tmpl, raw_in, out_shape, bound.grid, bound.threadgroup)}
               if PRECOMPILED and len(raw_in) == 1 else {}),
            "mb": lambda: kern(*args, grid=grid, threadgroup=tg, backend="cuda", **kw)}, turns)
    return {"row": f"{name} {out_shape}", **{k: round(v, 2) for k, v in t.items()}, "raw/mb": round(t["raw"] / t["mb"], 3)}


def pad_rows(turns: int) -> list:
    """gpu.py's raw block_sum (1M) with 0, 2, 8 and 32 KB of comments appended to its
    source: MLX rebuilds a ``cuda_kernel``'s source at every call and hashes it at every
    launch, so its length is paid per launch (the reason ``c_like.compact`` exists)."""
    n = 1 << 20
    x = mx.random.normal((n,))
    mx.eval(x)
    src, names = gpu.RAW_CUDA["block_sum"]
    fns = {}
    for kb in (0, 2, 8, 32):
        text = src + "\n" + "\n".join("// " + "p" * 60 for _ in range(kb * 1024 // 64))
        k = mx.fast.cuda_kernel(name=f"ab_pad{kb}", input_names=names, output_names=["out"], source=text)
        fns[f"pad{kb}k"] = (lambda k=k: k(inputs=[x], template=[("N", n)], grid=(n, 1, 1), threadgroup=(1024, 1, 1),
                                          output_shapes=[(n // 1024,)], output_dtypes=[mx.float32])[0])
    t = ab(fns, turns)
    return [{"row": "raw block_sum 1M, source padded", **{k: round(v, 2) for k, v in t.items()}}]


def run(turns: int) -> list:
    rows = []
    n = 1 << 20
    x = mx.random.normal((n,))
    xs = mx.random.normal((1024, 1024))
    mx.eval(x, xs)
    rows.append(dsl_row("copy", gpu.copy_k, (x,), n, 256, [("N", n)], (n,), turns))
    rows.append(dsl_row("block_sum", gpu.block_sum_k, (x,), n, 1024, [("N", n)], (n // 1024,), turns))
    rows.append(dsl_row("softmax", gpu.softmax_k, (xs,), 1024 * 256, 256, [("NC", 1024), ("TG", 256)], (1024, 1024),
                        turns, dict(NC=1024, TG=256)))
    mbk = mb.metal_kernel(name="ab_saxpy", input_names=["a", "x", "y"], output_names=["out"], source=MSL_SAXPY)
    raw = mx.fast.cuda_kernel(name="ab_saxpy_raw", input_names=["a", "x", "y"], output_names=["out"], source=CUDA_SAXPY)
    for m in (1024, 1 << 20):
        a, x1, y1 = mx.array([2.0]), mx.random.normal((m,)), mx.random.normal((m,))
        mx.eval(a, x1, y1)
        call = dict(grid=(m, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(m,)], output_dtypes=[mx.float32])
        bound = mbk.bind(inputs=[a, x1, y1], backend="cuda", **call)
        t = ab({"raw": lambda: raw(inputs=[a, x1, y1], **call)[0],
                **plan_variants(mbk, bound, f"msl_saxpy_{m}"),
                "mb": lambda: mbk(inputs=[a, x1, y1], backend="cuda", **call)[0]}, turns)
        rows.append({"row": f"metal_kernel saxpy {m}", **{k: round(v, 2) for k, v in t.items()},
                     "raw/mb": round(t["raw"] / t["mb"], 3)})
    rk = mx.fast.cuda_kernel(name="ab_rmsnorm_raw", input_names=["x", "w", "eps"], output_names=["out"],
                             source=RMSNORM_CUDA)
    for r, c in ((8192, 4096), (1024, 1024)):
        X, W, eps = mx.random.normal((r, c)), mx.random.normal((c,)), mx.array([1e-5])
        mx.eval(X, W, eps)
        mb_fn = lambda: rmsnorm(X, W, 1e-5, grid=r * 256, threadgroup=256, backend="cuda")
        raw_fn = lambda: rk(inputs=[X, W, eps], grid=(r * 256, 1, 1), threadgroup=(256, 1, 1),
                            output_shapes=[(r, c)], output_dtypes=[mx.float32])[0]
        want = rmsnorm_ref(np.asarray(X), np.asarray(W), 1e-5)
        ok = [bool(np.allclose(np.asarray(f()), want, rtol=1e-4, atol=1e-4)) for f in (mb_fn, raw_fn)]
        bound = rmsnorm.bind(X, W, 1e-5, grid=r * 256, threadgroup=256, backend="cuda")
        t = ab({"raw": raw_fn, **plan_variants(rmsnorm, bound, f"rmsnorm_{r}"), "mb": mb_fn}, max(3, turns // 3))
        rows.append({"row": f"new-user rmsnorm {r}x{c}", "ok": ok, **{k: round(v, 2) for k, v in t.items()},
                     "raw/mb": round(t["raw"] / t["mb"], 3)})
    return rows


def standin():
    """A null MLX kernel (benchmarks/host_overhead.py's) for every ``cuda_kernel``: the
    script's plumbing runs here, without a GPU (the numbers are host time only)."""
    import host_overhead as H
    from metalbench import launch as L

    class Shaped(H.NullKernel):          # fresh outputs of the call's shapes (NumPy checks)
        def __call__(self, *, output_shapes, output_dtypes, **kw):
            return [mx.zeros(s, dtype=d) for s, d in zip(output_shapes, output_dtypes)]
    mx.fast.cuda_kernel = lambda **kw: Shaped(**kw)
    L.cuda_available = lambda: True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=150)
    ap.add_argument("--json", default="")
    ap.add_argument("--standin", action="store_true", help="a null MLX kernel: host plumbing only (no GPU)")
    ap.add_argument("--precompiled", action="store_true", help="also the raw body through precompiled_cuda_kernel")
    ap.add_argument("--pad", action="store_true", help="only the per-launch cost of a longer source")
    args = ap.parse_args(argv)
    global PRECOMPILED
    PRECOMPILED = args.precompiled
    if args.standin:
        standin()
    emit(pad_rows(args.turns) if args.pad else run(args.turns), args.json)
    return 0


def emit(rows: list, path: str) -> None:
    """Print ``rows`` one JSON line each; with ``path``, also write them there as JSON."""
    for r in rows:
        print(json.dumps(r), flush=True)
    if path:
        Path(path).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    sys.exit(main())
