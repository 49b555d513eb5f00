"""Printed CUDA run on the host: g++ with AddressSanitizer, one thread after another.

For kernels without barriers, SIMD-group functions or atomics (each thread runs to its
end before the next starts): the whole source MLX would compile (``cuda.full_source``),
with a stand-in for the few CUDA names such kernels use (``blockIdx``/``threadIdx`` as
globals, MLX's ``Shape``/``Strides``). Inputs are heap arrays of exactly their size, so
a read outside one is an AddressSanitizer error (the test fails) rather than a silent
read of a neighbour: a guard that misses a read shows, as it would on the GPU.

    outs = run(rendered, {"x": x, "idx": idx}, {"out": (8,)}, grid=(8, 1, 1), tg=(32, 1, 1))
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from metalbench.codegen import cuda

HAVE_GXX = shutil.which("g++") is not None

_STUB = r"""
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cmath>
#include <array>
#include <limits>
#include <algorithm>
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __grid_constant__
struct uint3 { unsigned x, y, z; };
struct dim3 { unsigned x, y, z; };
static uint3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;
inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return {x, y, z}; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
using std::min;
using std::max;
namespace cuda { namespace std {
using ::std::numeric_limits;
template <class T, ::std::size_t N> using array = ::std::array<T, N>;
} }
struct __half { float f; };
struct __nv_bfloat16 { float f; };
namespace mlx::core::cu {
using Shape = std::array<int32_t, 10>;
using Strides = std::array<int64_t, 10>;
}
namespace cooperative_groups {}
"""

_C = {"float32": ("float", "%a"), "int32": ("int32_t", "%d"), "uint32": ("uint32_t", "%u"),
      "int64": ("int64_t", "%lld"), "uint8": ("uint8_t", "%u")}


def _array(ctype: str, name: str, values) -> str:
    vals = ", ".join(repr(float(v)) if ctype == "float" else str(int(v)) for v in np.ravel(values))
    return (f"    {ctype}* {name} = new {ctype}[{max(np.size(values), 1)}];\n"
            f"    {{ const {ctype} init[] = {{{vals or '0'}}}; std::memcpy({name}, init, sizeof(init)); }}\n")


def run(r, inputs: dict, outputs: dict, grid, tg, tmp: Path | None = None) -> dict:
    """Run rendered kernel ``r`` (``cuda.render``) on the host. ``inputs``: name -> NumPy
    array (row-contiguous), ``outputs``: name -> shape (float32, zero-filled). Returns
    name -> NumPy array; raises ``AssertionError`` with g++'s or AddressSanitizer's
    message when the kernel does not compile or reads outside an input."""
    tmp = Path(tmp or tempfile.mkdtemp(prefix="mb_cuda_host_"))
    inc = tmp / "inc"
    for rel, text in (("mlx/backend/cuda/device/utils.cuh", _STUB), ("cooperative_groups.h", ""),
                      ("cuda_fp16.h", ""), ("cuda_bf16.h", "")):
        (inc / rel).parent.mkdir(parents=True, exist_ok=True)
        (inc / rel).write_text(text)
    src = cuda.full_source(r)
    fn = re.search(r"__global__ void (\w+)\(", src).group(1)
    main = "int main() {\n"
    args = []
    types = r.input_types
    for n, (t, nd) in zip(r.input_names, types):
        if n == cuda.GRID_INPUT:
            a = np.array(grid, np.uint32)
        else:
            a = np.ascontiguousarray(inputs[n])
        ctype = _C[t.name][0]
        main += _array(ctype, n, a)
        args.append(n)
        if nd > 0:
            shape = list(np.shape(a)) + [0] * (10 - np.ndim(a))
            if f"{n}_shape" in r.body:
                main += f"    mlx::core::cu::Shape {n}_shape = {{{', '.join(map(str, shape))}}};\n"
                args.append(f"{n}_shape")
            if f"{n}_strides" in r.body:
                st = [s // a.itemsize for s in a.strides] + [0] * (10 - np.ndim(a))
                main += f"    mlx::core::cu::Strides {n}_strides = {{{', '.join(map(str, st))}}};\n"
                args.append(f"{n}_strides")
            if f"{n}_ndim" in r.body:
                main += f"    int {n}_ndim = {np.ndim(a)};\n"
                args.append(f"{n}_ndim")
    for n in r.output_names:
        size = int(np.prod(outputs[n]))
        main += f"    float* {n} = new float[{size}]();\n"
        args.append(n)
    blocks = [(g + t - 1) // t for g, t in zip(grid, tg)]
    main += f"    blockDim = {{{tg[0]}u, {tg[1]}u, {tg[2]}u}}; gridDim = {{{blocks[0]}u, {blocks[1]}u, {blocks[2]}u}};\n"
    main += ("    for (unsigned bz = 0; bz < gridDim.z; ++bz) for (unsigned by = 0; by < gridDim.y; ++by)\n"
             "    for (unsigned bx = 0; bx < gridDim.x; ++bx) for (unsigned tz = 0; tz < blockDim.z; ++tz)\n"
             "    for (unsigned ty = 0; ty < blockDim.y; ++ty) for (unsigned tx = 0; tx < blockDim.x; ++tx) {\n"
             "        blockIdx = {bx, by, bz}; threadIdx = {tx, ty, tz};\n"
             f"        mlx::core::cu::{fn}({', '.join(args)});\n    }}\n")
    for n in r.output_names:
        size = int(np.prod(outputs[n]))
        main += f'    for (int k = 0; k < {size}; ++k) std::printf("%a\\n", (double){n}[k]);\n'
    main += "    return 0;\n}\n"
    (tmp / "k.cpp").write_text(src + "\n" + main)
    exe = tmp / "k"
    c = subprocess.run(["g++", "-std=c++17", "-O1", "-g", "-fsanitize=address", "-fno-omit-frame-pointer",
                        "-I", str(inc), "-o", str(exe), str(tmp / "k.cpp")], capture_output=True, text=True)
    assert c.returncode == 0, c.stderr[-4000:]
    p = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120,
                       env={"ASAN_OPTIONS": "detect_leaks=0"})
    assert p.returncode == 0, p.stderr[-4000:]
    vals = [float.fromhex(v) for v in p.stdout.split()]
    out, k = {}, 0
    for n in r.output_names:
        size = int(np.prod(outputs[n]))
        out[n] = np.array(vals[k:k + size], np.float32).reshape(outputs[n])
        k += size
    return out
