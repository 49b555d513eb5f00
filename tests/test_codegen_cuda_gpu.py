"""Generated CUDA on a real NVIDIA GPU against the simulator, without MLX's CUDA build.

The kernels of ``test_codegen_kernels`` are printed by ``codegen.cuda``, wrapped the
way MLX 0.32's ``cuda_kernel`` wraps them (``cuda.full_source``) and launched from a
small generated host program exactly as MLX launches them: ``ceil(grid/threadgroup)``
blocks, inputs (0-d scalars too) as device pointers, then ``mb_grid``, then outputs.
The outputs are compared with the simulator's on the same inputs.

Runs where ``nvcc`` and a GPU are present (``-m gpu``); elsewhere it skips. The build
and the comparison are separate functions so the binary can be built on one machine
and run on another::

    python tests/test_codegen_cuda_gpu.py build DIR     # writes DIR/mb_cuda_check
    DIR/mb_cuda_check RESULTS                          # on the GPU machine
    python tests/test_codegen_cuda_gpu.py compare RESULTS
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from metalbench import ir  # noqa: E402
from metalbench import types as T  # noqa: E402
from metalbench.codegen import cuda  # noqa: E402

import test_codegen_kernels as K  # noqa: E402


@dataclass
class Case:
    name: str
    build: object
    grid: tuple
    tg: tuple
    inputs: dict            # name -> np.ndarray (0-d for scalars)
    outputs: dict           # name -> (size, dtype)
    exact: bool = True
    skip_prefix: dict = field(default_factory=dict)   # output -> elements to ignore at the start


def _rng():
    return np.random.default_rng(7)


def math_each():
    """One output slot per (thread, builtin): a NaN stays in its slot."""
    from metalbench import builtins as Bt
    names = [b.name for b in Bt.registry.all() if b.group == "Float math" and b.arity == 1] + [
        "pow", "atan2", "fmod", "hypot", "copysign", "fma", "mix", "clamp", "divide", "fmin3", "median3"]
    i, x = K.V("i"), K.V("x", K.f32)
    body = [ir.Decl(i, K.gid()), ir.Decl(x, ir.Load("inp", i, K.f32))]
    for k, n in enumerate(names):
        ar = Bt.registry.get(n).arity
        args = [x] + [K.C(0.75, K.f32)] * (ar - 1) if n not in ("clamp", "median3") else \
            [x, K.C(0.25, K.f32), K.C(0.75, K.f32)]
        idx = K.bin("+", K.bin("*", i, K.C(len(names))), K.C(k))
        body.append(ir.Store("out", idx, ir.Call(n, args, K.f32)))
        hb = ir.Call(n, [ir.Cast(T.float16, a) for a in args], T.float16)
        body.append(ir.Store("outh", idx, hb))
    return ir.KernelIR("math_each", [K.buf("inp"), K.buf("out", out=True), K.buf("outh", T.float16, out=True)],
                       body), len(names)


def attr_each():
    """Every component of every thread attribute, one slot each."""
    idx = K.bin("+", K.gid(), K.bin("*", K.X("threads_per_grid", "x"),
                                     K.bin("+", K.X("thread_position_in_grid", "y"),
                                           K.bin("*", K.X("threads_per_grid", "y"), K.X("thread_position_in_grid", "z")))))
    body = [ir.Decl(K.V("slot"), K.bin("*", idx, K.C(60)))]
    for k, (name, ty) in enumerate(ir.THREAD_ATTRIBUTES.items()):
        comps = "xyz" if ty == "uint3" else " "
        for j, c in enumerate(comps):
            val = K.X(name, c) if ty == "uint3" else K.A(name)
            body.append(ir.Store("out", K.bin("+", K.V("slot"), K.C(3 * k + j)), val))
    return ir.KernelIR("attr_each", [K.buf("out", K.u32, out=True)], body)


def _dsl_kernels():
    """Kernels from the Python DSL front end (``@mb.kernel``), specialised to IR."""
    import metalbench as mb
    from metalbench.dsl import (atomic_add, simd_sum, thread_index_in_simdgroup, thread_position_in_grid,
                                thread_position_in_threadgroup, threadgroup_array, threadgroup_barrier,
                                threads_per_threadgroup, float32)

    @mb.kernel
    def dsl_saxpy(a: float, x, y, out: mb.Out):
        i = thread_position_in_grid.x
        if i < x.size:
            out[i] = a * x[i] + y[i]

    @mb.kernel
    def dsl_reduce(x, out: mb.Out):
        buf = threadgroup_array(256, float32)
        tid = thread_position_in_threadgroup.x
        buf[tid] = x[thread_position_in_grid.x]
        threadgroup_barrier()
        s = threads_per_threadgroup.x // 2
        while s > 0:
            if tid < s:
                buf[tid] += buf[tid + s]
            threadgroup_barrier()
            s //= 2
        if tid == 0:
            atomic_add(out, 0, buf[0])

    @mb.kernel
    def dsl_simd(x, out: mb.Out):
        v = simd_sum(x[thread_position_in_grid.x])
        if thread_index_in_simdgroup == 0:
            atomic_add(out, 0, v)
    return dsl_saxpy, dsl_reduce, dsl_simd


def simd_partial():
    """Reductions and scans in partial SIMD-groups (48-thread threadgroups: 32 + 16 lanes)."""
    from metalbench import builtins as Bt
    i, x = K.V("i"), K.V("x", K.f32)
    body = [ir.Decl(i, K.gid()), ir.Decl(x, ir.Load("inp", i, K.f32)), ir.Decl(K.V("k", K.i32), ir.Cast(K.i32, x))]
    names = ["simd_sum", "simd_max", "simd_min", "simd_prefix_inclusive_sum", "simd_prefix_exclusive_sum",
             "simd_prefix_inclusive_product", "simd_prefix_exclusive_product", "simd_broadcast_first"]
    for k, n in enumerate(names):
        body.append(ir.Store("out", K.bin("+", K.bin("*", i, K.C(len(names) + 2)), K.C(k)), ir.Call(n, [x], K.f32)))
    body.append(ir.Store("out", K.bin("+", K.bin("*", i, K.C(len(names) + 2)), K.C(len(names))),
                         ir.Cast(K.f32, ir.Call("simd_xor", [K.V("k", K.i32)], K.i32))))
    body.append(ir.Store("out", K.bin("+", K.bin("*", i, K.C(len(names) + 2)), K.C(len(names) + 1)),
                         ir.Cast(K.f32, ir.Call("simd_ballot", [K.bin(">", x, K.C(0.5, K.f32))], T.uint64))))
    return ir.KernelIR("simd_partial", [K.buf("inp"), K.buf("out", out=True)], body), len(names) + 2


def cases() -> list[Case]:
    r = _rng()
    f = lambda n, lo=-1, hi=1: r.uniform(lo, hi, n).astype(np.float32)  # noqa: E731
    out = []
    out.append(Case("saxpy", K.saxpy, (1000, 1, 1), (256, 1, 1),
                    {"a": np.float32(2.5), "x": f(1000), "y": f(1000), "n": np.uint32(990)},
                    {"out": (1000, np.float32)}, exact=False))   # nvcc contracts a * x + y to an fma
    out.append(Case("tg_reduce", K.tg_reduce, (1000, 1, 1), (256, 1, 1), {"x": f(1000)},
                    {"out": (4, np.float32)}, exact=False))
    out.append(Case("simd_atomic_sum", K.simd_atomic_sum, (1000, 1, 1), (96, 1, 1), {"x": f(1000)},
                    {"total": (1, np.float32)}, exact=False))
    out.append(Case("histogram", K.histogram, (1000, 1, 1), (256, 1, 1),
                    {"x": r.integers(0, 1 << 20, 1000).astype(np.uint32), "nbins": np.uint32(64)},
                    {"hist": (64, np.uint32)}))
    M, N, Kd = 20, 24, 33
    out.append(Case("tiled_matmul", K.tiled_matmul, (32, 32, 1), (16, 16, 1),
                    {"A": f(M * Kd), "B": f(Kd * N), "M": np.uint32(M), "N": np.uint32(N), "K": np.uint32(Kd)},
                    {"Cout": (M * N, np.float32)}, exact=False))
    out.append(Case("device_function", K.device_function, (100, 1, 1), (32, 1, 1),
                    {"x": f(100), "n": np.uint32(90)}, {"out": (100, np.float32), "count": (1, np.uint32)}))
    out.append(Case("select_logical", K.select_logical, (200, 1, 1), (64, 1, 1),
                    {"inp": r.integers(-50, 50, 200).astype(np.int32)}, {"out": (200, np.int32)}))
    out.append(Case("vectors", K.vectors, (100, 1, 1), (32, 1, 1), {"x": f(100)},
                    {"out": (256, np.float32)}, exact=False))
    out.append(Case("control_flow", K.control_flow, (8, 1, 1), (8, 1, 1), {}, {"out": (8, np.int32)}))
    out.append(Case("attr_each", attr_each, (10, 3, 2), (4, 2, 2), {}, {"out": (60 * 60, np.uint32)}))
    out.append(Case("all_attributes", K.all_attributes, (10, 3, 2), (4, 2, 2), {}, {"out": (60, np.uint32)}))
    out.append(Case("simd_all", K.simd_all, (128, 1, 1), (64, 1, 1), {"inp": f(128, 0, 1)},
                    {"out": (128, np.float32)}, exact=False))
    out.append(Case("simd_partial", lambda: simd_partial()[0], (100, 1, 1), (48, 1, 1), {"inp": f(100, 0.5, 1.5)},
                    {"out": (100 * simd_partial()[1], np.float32)}, exact=False))
    out.append(Case("atomics_all", K.atomics_all, (40, 1, 1), (32, 1, 1), {},
                    {"ai": (40, np.int32), "au": (40, np.uint32), "af": (40, np.float32)},
                    skip_prefix={"ai": 4, "au": 4, "af": 4}))
    dt_in = {}
    for t in T.SCALARS:
        v = r.uniform(-3, 3, 64) if t.is_float else r.integers(0 if not t.is_signed else -3, 4, 64)
        dt_in[f"in_{t.name}"] = (v > 0) if t.is_bool else np.asarray(v).astype(t.np)
    out.append(Case("all_dtypes", K.all_dtypes, (64, 1, 1), (32, 1, 1), dt_in,
                    {f"out_{t.name}": (128, t.np) for t in T.SCALARS}, exact=False))
    out.append(Case("shapes", K.shapes, (10, 1, 1), (8, 1, 1), {"x": f(35).reshape(5, 7)},
                    {"out": (10, np.float32)}))
    xm = f(64, -2, 2)
    h2 = xm.astype(np.float16).astype(np.float64) * 2
    xm[h2 == np.round(h2)] += 0.01        # no half-integer in half: tanpi's pole has no sign to agree on
    out.append(Case("math_each", lambda: math_each()[0], (64, 1, 1), (32, 1, 1), {"inp": xm},
                    {"out": (64 * math_each()[1], np.float32), "outh": (64 * math_each()[1], np.float16)},
                    exact=False))
    try:
        ks, kr, kq = _dsl_kernels()
        x1 = f(1000)
        out.append(Case("dsl_saxpy", lambda: ks.specialize(np.float32(1.5), x1, x1).ir, (1000, 1, 1), (128, 1, 1),
                        {"a": np.float32(1.5), "x": x1, "y": x1}, {"out": (1000, np.float32)}, exact=False))
        x2 = f(1024)
        out.append(Case("dsl_reduce", lambda: kr.specialize(x2).ir, (1024, 1, 1), (256, 1, 1), {"x": x2},
                        {"out": (1024, np.float32)}, exact=False))
        out.append(Case("dsl_simd", lambda: kq.specialize(x1).ir, (1000, 1, 1), (64, 1, 1), {"x": x1},
                        {"out": (1000, np.float32)}, exact=False))
    except ImportError:       # the DSL front end is not there
        pass
    return out


# ----------------------------------------------------------------------------- host program

def _bytes(a: np.ndarray) -> str:
    b = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
    return ", ".join(str(int(x)) for x in b) or "0"


def host_source(cs: list[Case]) -> str:
    parts = ['#include "mlx/backend/cuda/device/utils.cuh"\n#include <cooperative_groups.h>\n'
             "#include <cstdio>\n#include <cstring>\n#include <string>\n"
             "using mlx::core::cu::Shape;\nusing mlx::core::cu::Strides;\n"]
    calls = []
    for c in cs:
        kir = c.build()
        r = cuda.render(kir)
        parts.append(f"namespace mbk_{c.name} {{\n{cuda.full_source(r)}\n}}\n")
        lines = [f"static void run_{c.name}(const std::string& dir) {{"]
        args = []
        types = dict(zip(r.input_names, r.input_types))
        for p in kir.inputs + [ir.Param("mb_grid", "buffer", T.uint32)]:
            n = r.input_names[[q.name for q in kir.inputs].index(p.name)] if p.name != "mb_grid" else "mb_grid"
            a = np.asarray(c.grid, np.uint32) if p.name == "mb_grid" else np.asarray(c.inputs[p.name], p.type.np)
            # float64 crosses MLX as its bits: the kernel declares uint64_t buffers
            ct = "uint64_t" if p.type.name == "float64" else cuda.CUDA_TYPES[p.type.name]
            lines.append(f"  static const unsigned char h_{n}[] = {{{_bytes(a)}}};")
            lines.append(f"  {ct}* d_{n}; cudaMalloc(&d_{n}, {max(1, a.nbytes)}); "
                         f"cudaMemcpy(d_{n}, h_{n}, {a.nbytes}, cudaMemcpyHostToDevice);")
            args.append(f"d_{n}")
            if types[n][1] > 0:
                shp = a.shape or (1,)
                st = [int(s) // a.itemsize for s in a.strides] or [1]
                if f"{n}_shape" in r.body:
                    lines.append(f"  Shape {n}_shape{{}}; " + " ".join(f"{n}_shape[{k}] = {v};" for k, v in enumerate(shp)))
                    args.append(f"{n}_shape")
                if f"{n}_strides" in r.body:
                    lines.append(f"  Strides {n}_strides{{}}; " + " ".join(f"{n}_strides[{k}] = {v};" for k, v in enumerate(st)))
                    args.append(f"{n}_strides")
                if f"{n}_ndim" in r.body:
                    lines.append(f"  int {n}_ndim = {len(shp)};")
                    args.append(f"{n}_ndim")
        for p, n in zip(kir.outputs, r.output_names):
            size, dt = c.outputs[p.name]
            nb = size * np.dtype(dt).itemsize
            ct = "uint64_t" if p.type.name == "float64" else cuda.CUDA_TYPES[p.type.name]
            lines.append(f"  {ct}* d_{n}; cudaMalloc(&d_{n}, {nb}); cudaMemset(d_{n}, 0, {nb});")
            args.append(f"d_{n}")
        g, t = c.grid, c.tg
        lines.append(f"  dim3 block({t[0]}, {t[1]}, {t[2]}); dim3 grid({-(-g[0] // t[0])}, {-(-g[1] // t[1])}, "
                     f"{-(-g[2] // t[2])});")
        lines.append(f"  mbk_{c.name}::mlx::core::cu::custom_kernel_{kir.name}<<<grid, block>>>({', '.join(args)});")
        lines.append("  cudaError_t e = cudaDeviceSynchronize();")
        lines.append(f'  if (e != cudaSuccess) {{ printf("{c.name}: %s\\n", cudaGetErrorString(e)); return; }}')
        for p, n in zip(kir.outputs, r.output_names):
            size, dt = c.outputs[p.name]
            nb = size * np.dtype(dt).itemsize
            lines.append(f"  {{ std::string buf({nb}, '\\0'); cudaMemcpy(&buf[0], d_{n}, {nb}, cudaMemcpyDeviceToHost);")
            lines.append(f'    FILE* fp = fopen((dir + "/{c.name}.{p.name}.bin").c_str(), "wb"); '
                         f"fwrite(buf.data(), 1, {nb}, fp); fclose(fp); }}")
        lines.append(f'  printf("{c.name}: ok\\n");\n}}')
        parts.append("\n".join(lines) + "\n")
        calls.append(f"  run_{c.name}(dir);")
    parts.append("int main(int argc, char** argv) {\n  std::string dir = argc > 1 ? argv[1] : \".\";\n"
                 + "\n".join(calls) + "\n  return 0;\n}\n")
    return "".join(parts)


def build(outdir) -> Path:
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    src = outdir / "mb_cuda_check.cu"
    src.write_text(host_source(cases()))
    exe = outdir / "mb_cuda_check"
    p = subprocess.run(["nvcc", "-O1", "-std=c++17", "-arch=sm_90", "-I", cuda.SHIM_INCLUDE, str(src), "-o", str(exe)],
                       capture_output=True, text=True, timeout=600)
    if p.returncode:
        raise RuntimeError(p.stderr[-8000:])
    return exe


def simulate(c: Case) -> dict:
    from metalbench import sim
    kir = c.build()
    args = {}
    for p in kir.inputs:
        a = c.inputs[p.name]
        args[p.name] = sim.Buffer(np.array(a)) if p.kind == "buffer" else np.asarray(a, p.type.np)[()]
    outs = {}
    for p in kir.outputs:
        size, dt = c.outputs[p.name]
        outs[p.name] = np.zeros(size, dt)
        args[p.name] = sim.Buffer(outs[p.name])
    sim.compile_kernel(kir).run(args, c.grid, c.tg)
    return outs


def compare(results, sim_failures: list | None = None) -> list[str]:
    """Differences between the GPU results in ``results`` and the simulator (empty if none);
    kernels the simulator cannot run go to ``sim_failures`` instead."""
    problems = []
    sim_failures = [] if sim_failures is None else sim_failures
    for c in cases():
        try:
            want = simulate(c)
        except Exception as e:       # a simulator limitation is not a codegen finding
            sim_failures.append(f"{c.name}: simulator failed ({type(e).__name__}: {e})")
            continue
        for name, (size, dt) in c.outputs.items():
            f = Path(results) / f"{c.name}.{name}.bin"
            if not f.exists():
                problems.append(f"{c.name}.{name}: no GPU result")
                continue
            got = np.frombuffer(f.read_bytes(), dtype=dt)
            w = want[name]
            k = c.skip_prefix.get(name, 0)
            got, w = got[k:], w[k:]
            if c.exact or not np.issubdtype(np.dtype(dt), np.floating):
                bad = np.flatnonzero(~((got == w) | (np.isnan(got.astype(np.float64)) & np.isnan(w.astype(np.float64)))))
            else:
                g64, w64 = got.astype(np.float64), w.astype(np.float64)
                tol = 2e-3 if np.dtype(dt).itemsize == 2 else 1e-4
                close = np.isclose(g64, w64, rtol=tol, atol=tol) | (np.isnan(g64) & np.isnan(w64))
                bad = np.flatnonzero(~close)
            if bad.size:
                i = bad[0] + k
                problems.append(f"{c.name}.{name}: {bad.size} differ, first [{i}] gpu={got[i - k]!r} sim={w[i - k]!r}")
    return problems


def _gpu_present() -> bool:
    return shutil.which("nvcc") is not None and shutil.which("nvidia-smi") is not None and \
        subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_present(), reason="needs nvcc and an NVIDIA GPU")
def test_generated_cuda_matches_simulator(tmp_path):
    exe = build(tmp_path)
    res = tmp_path / "results"
    res.mkdir()
    p = subprocess.run([str(exe), str(res)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert compare(res) == []


if __name__ == "__main__":
    if sys.argv[1] == "build":
        print(build(sys.argv[2]))
    else:
        sf: list = []
        print("\n".join(compare(sys.argv[2], sf) + sf) or "all outputs match the simulator")
