"""Where does a generated kernel lose time against the hand-written one? (cuda backend)

For row softmax and saxpy, times (as benchmarks/gpu.py does) these variants:

- ``raw``        the hand-written ``mx.fast.cuda_kernel`` body of benchmarks/gpu.py,
- ``mb``         the DSL kernel through ``Kernel.__call__``,
- ``mb_direct``  the source metalbench generates, launched straight through
                 ``mx.fast.cuda_kernel`` (so the difference to ``mb`` is metalbench's
                 host path, the difference to ``raw`` is the generated code),
- ``raw_uint``   the raw body with unsigned loop counters (as MSL's types make them),
- ``raw_mbreduce`` the raw body with metalbench's SIMD-group reduction helper,
- ``raw_u32index`` the raw body indexing as the generated code did before session 6
                 (``uint base = row * NC; x[base + j]``, a 32-bit unsigned index, instead
                 of a 64-bit row pointer; the generated code now prints
                 ``x[static_cast<uint64_t>(base) + j]`` where the sum provably never wraps);

and for the new-user kernel (fused bias + GELU at 64M elements, 0.93x raw on 2026-12-01):
``raw`` (the bias length a template constant, ``i % C``), ``raw_shape_mod`` (the length
read at run time, ``i % bias_shape[0]``), ``mb_direct`` (what a launch compiles: the
length compiled in, ``i % 4096u``), ``mb_generic`` (the length tested at run time,
``mb_umod_len``: a mask for a power of two, behind a uniform branch) and ``mb``.

    python3 benchmarks/gpu_probe.py
"""
from __future__ import annotations

import json
import sys

import numpy as np

import metalbench as mb
from gpu import GELU_COLS, RAW_CUDA, bias_gelu_k, median_time, saxpy_k, softmax_k

UINT_SOFTMAX = RAW_CUDA["softmax"][0].replace("int row = blockIdx.x, tid = threadIdx.x, lane = tid & 31, w = tid >> 5;",
                                              "unsigned row = blockIdx.x, tid = threadIdx.x, lane = tid & 31, w = tid >> 5;") \
    .replace("for (int j = tid;", "for (unsigned j = tid;")
U32INDEX_SOFTMAX = RAW_CUDA["softmax"][0].replace(
    "const float* xr = x + (long long)row * NC;", "unsigned base = (unsigned)row * NC; const float* xr = x;") \
    .replace("xr[j]", "xr[base + j]").replace("out[(long long)row * NC + j]", "out[base + j]")
SHAPE_MOD_GELU = RAW_CUDA["bias_gelu"][0].replace("bias[i % C]", "bias[i % bias_shape[0]]")
MBRED_SOFTMAX = """
    __shared__ float red[32];
    int row = blockIdx.x, tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    const float* xr = x + (long long)row * NC;
    float m = -INFINITY;
    for (int j = tid; j < NC; j += TG) m = fmaxf(m, xr[j]);
    m = mb_simd_reduce(m, [](float a, float b) { return b > a ? b : a; });
    if (lane == 0) red[w] = m;
    __syncthreads();
    m = mb_simd_reduce(lane < TG / 32 ? red[lane] : -INFINITY, [](float a, float b) { return b > a ? b : a; });
    __syncthreads();
    float s = 0.f;
    for (int j = tid; j < NC; j += TG) s += expf(xr[j] - m);
    s = mb_simd_reduce(s, [](float a, float b) { return a + b; });
    if (lane == 0) red[w] = s;
    __syncthreads();
    s = mb_simd_reduce(lane < TG / 32 ? red[lane] : 0.f, [](float a, float b) { return a + b; });
    float inv = 1.f / s;
    for (int j = tid; j < NC; j += TG) out[(long long)row * NC + j] = expf(xr[j] - m) * inv;"""


def main():
    import mlx.core as mx
    rows = []
    for r, c in ((8192, 4096), (1024, 1024)):
        mx.random.seed(0)
        x = mx.random.normal((r, c))
        tmpl = [("NC", c), ("TG", 256)]
        grid, tg = (r * 256, 1, 1), (256, 1, 1)
        b = softmax_k.bind(x, NC=c, TG=256, grid=grid, threadgroup=tg, backend="cuda")
        sp = softmax_k.specialization(b)
        gen = sp.launch_rendered(b, "cuda")                              # the variant the launch uses
        generic = sp.rendered("cuda", exact_grid=True)                   # its header has mb_simd_reduce
        variants = {
            "raw": (RAW_CUDA["softmax"][0], "", ["x"], tmpl),
            "mb_direct": (gen.body, gen.header, list(gen.input_names), []),
            "raw_uint": (UINT_SOFTMAX, "", ["x"], tmpl),
            "raw_mbreduce": (MBRED_SOFTMAX, generic.header, ["x"], tmpl),
            "raw_u32index": (U32INDEX_SOFTMAX, "", ["x"], tmpl),
        }
        res = {"kernel": "softmax", "size": f"{r}x{c}"}
        for name, (src, hdr, ins, tp) in variants.items():
            k = mx.fast.cuda_kernel(name=f"probe_{name}_{r}", input_names=ins, output_names=["out"],
                                    source=src, header=hdr)

            def fn(k=k, tp=tp):
                return k(inputs=[x], template=tp, grid=grid, threadgroup=tg,
                         output_shapes=[(r, c)], output_dtypes=[mx.float32])[0]
            res[name + "_ms"] = median_time(fn) * 1e3
        res["mb_ms"] = median_time(lambda: softmax_k(x, grid=grid, threadgroup=tg, backend="cuda",
                                                     NC=c, TG=256)) * 1e3
        rows.append(res)
        print(json.dumps(res), flush=True)
    n = 134_217_728
    x = mx.random.normal((n,))
    y = mx.random.normal((n,))
    a = mx.array(2.0, dtype=mx.float32)
    sp = saxpy_k.specialize(2.0, x, y)
    gen = sp.rendered("cuda", exact_grid=True, threadgroup=(256, 1, 1))
    res = {"kernel": "saxpy", "size": str(n)}
    for name, (src, hdr, ins, tp) in {
            "raw": (RAW_CUDA["saxpy"][0], "", ["a", "x", "y"], [("N", n)]),
            "mb_direct": (gen.body, gen.header, list(gen.input_names), [])}.items():
        k = mx.fast.cuda_kernel(name=f"probe_saxpy_{name}", input_names=ins, output_names=["out"],
                                source=src, header=hdr)

        def fn(k=k, tp=tp):
            return k(inputs=[a, x, y], template=tp, grid=(n, 1, 1), threadgroup=(256, 1, 1),
                     output_shapes=[(n,)], output_dtypes=[mx.float32])[0]
        res[name + "_ms"] = median_time(fn) * 1e3
    res["mb_ms"] = median_time(lambda: saxpy_k(2.0, x, y, grid=n, threadgroup=256, backend="cuda")) * 1e3
    rows.append(res)
    print(json.dumps(res), flush=True)
    n, cols = 1 << 26, GELU_COLS
    x = mx.random.normal((n,))
    bias = mx.random.normal((cols,))
    b = bias_gelu_k.bind(x, bias, grid=n, threadgroup=256, backend="cuda")
    sp = bias_gelu_k.specialization(b)
    gen = sp.launch_rendered(b, "cuda")         # i % 4096u: the bias length compiled in
    generic = sp.rendered("cuda", exact_grid=True, threadgroup=(256, 1, 1))   # mb_umod_len(i, n)
    res = {"kernel": "bias_gelu", "size": str(n)}
    for name, (src, hdr, ins, tp) in {
            "raw": (RAW_CUDA["bias_gelu"][0], "", ["x", "bias"], [("N", n), ("C", cols)]),
            "raw_shape_mod": (SHAPE_MOD_GELU, "", ["x", "bias"], [("N", n)]),
            "mb_direct": (gen.body, gen.header, list(gen.input_names), []),
            "mb_generic": (generic.body, generic.header, list(generic.input_names), [])}.items():
        k = mx.fast.cuda_kernel(name=f"probe_gelu_{name}", input_names=ins, output_names=["out"],
                                source=src, header=hdr)

        def fn(k=k, tp=tp):
            return k(inputs=[x, bias], template=tp, grid=(n, 1, 1), threadgroup=(256, 1, 1),
                     output_shapes=[(n,)], output_dtypes=[mx.float32])[0]
        res[name + "_ms"] = median_time(fn) * 1e3
    res["mb_ms"] = median_time(lambda: bias_gelu_k(x, bias, grid=n, threadgroup=256, backend="cuda")) * 1e3
    rows.append(res)
    print(json.dumps(res), flush=True)
    print("--- generated softmax body ---")
    print(softmax_k.specialize(mx.zeros((2, 64)), NC=64, TG=256).rendered("cuda", exact_grid=True).body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
