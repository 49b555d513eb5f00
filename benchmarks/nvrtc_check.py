"""Compile every CUDA kernel the H200 session launches, with NVRTC and no GPU.

``mx.fast.cuda_kernel`` compiles with NVRTC at the first launch; a typo in a
hand-written twin or a printer bug would cost device time to find. This compiles,
to PTX for ``compute_90``, the full source MLX 0.32 builds (``codegen.cuda.
full_source``, MLX's headers replaced by the shim in ``codegen/cuda_shim``) of:

- every hand-written kernel of ``benchmarks/gpu.py`` (``RAW_CUDA``) and
  ``benchmarks/msl_cuda.py`` (the CUDA twins of MLX's documented kernels);
- the generated CUDA of ``gpu.py``'s DSL kernels at the benchmark's launch shapes and
  of the MSL kernels of ``msl_cuda.py`` through ``mb.metal_kernel``;
- the generated CUDA of ``simulation.py``'s Numba kernels;
- ``gpu_probe.py``'s variants, ``host_overhead.py --real cuda``'s raw saxpy and
  ``sweep_vs_cupy.py``'s generated kernels at each swept threadgroup size.

    pip install nvidia-cuda-nvrtc-cu12 nvidia-cuda-runtime-cu12 nvidia-cuda-cccl-cu12   # any venv
    python benchmarks/nvrtc_check.py --nvrtc-site /tmp/nvrtc/lib/python3.11/site-packages

Exit status 1 and the compiler's log when any source fails; 0 with "skipped" when no
NVRTC library is found.
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import os
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from metalbench import types as T  # noqa: E402
from metalbench.codegen import cuda  # noqa: E402
from metalbench.codegen.c_like import Rendered  # noqa: E402


def _lib(site: str | None):
    pats = []
    for s in [site] + sys.path if site else sys.path:
        if s:
            pats += glob.glob(os.path.join(s, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so*"))
    for p in sorted(pats) + ["libnvrtc.so.12", "libnvrtc.so"]:
        try:
            return ctypes.CDLL(p), (Path(p).parents[3].as_posix() if "/" in p else None)
        except OSError:
            continue
    return None, None


def compile_ptx(lib, src: str, includes: list[str]) -> tuple[bool, str]:
    prog = ctypes.c_void_p()
    rc = lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"k.cu", 0, None, None)
    if rc:
        return False, f"nvrtcCreateProgram failed ({rc})"
    opts = [b"--gpu-architecture=compute_90", b"-std=c++17"] + [f"-I{i}".encode() for i in includes]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, log)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return rc == 0, log.value.decode(errors="replace")


def raw(name, body, ins, outs, template=None, shaped=()):
    r = Rendered(name, body, "", list(ins), list(outs),
                 input_types=[(T.float32, 0 if n == "a" and name == "raw_saxpy" else 1) for n in ins],
                 output_types=[T.float32] * len(outs))
    # MLX's real headers bring INFINITY (the H200 ran this softmax on 2026-11-29); the shim does not
    return "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n" + cuda.full_source(r, template)


def sources(quick=True):
    import gpu
    import msl_cuda
    import simulation
    import metalbench as mb
    f32 = np.float32
    tm = {"copy": [("N", 1024)], "saxpy": [("N", 1024)], "softmax": [("NC", 1024), ("TG", 256)],
          "matmul": [("KD", 512), ("ND", 512)], "bias_gelu": [("N", 1 << 20), ("C", gpu.GELU_COLS)],
          "block_sum": []}
    for name, (body, ins) in gpu.RAW_CUDA.items():
        yield f"gpu.py raw {name}", raw(f"raw_{name}", body, ins, ["c" if name == "matmul" else "out"], tm[name])
    x = np.zeros(1 << 12, f32)
    gen = [("copy", gpu.copy_k, (x,), {}, (256, 1, 1)), ("saxpy", gpu.saxpy_k, (2.0, x, x), {}, (256, 1, 1)),
           ("block_sum", gpu.block_sum_k, (x,), {}, (1024, 1, 1)),
           ("softmax", gpu.softmax_k, (np.zeros((4, 1024), f32),), {"NC": 1024, "TG": 256}, (256, 1, 1)),
           ("matmul", gpu.matmul_k, (np.zeros((64, 64), f32),) * 2, {"KD": 64, "ND": 64, "TILE": 16}, (16, 16, 1)),
           ("bias_gelu", gpu.bias_gelu_k, (x, np.zeros(64, f32)), {}, (256, 1, 1))]
    for name, k, args, kw, tg in gen:
        b = k.bind(*args, grid=(tg[0] * 4, tg[1], 1), threadgroup=tg, backend="sim", **kw)
        sp = k.specialization(b)
        lengths = sp.lengths(b.values, b.outputs, "cuda")       # what a launch compiles in (bias_gelu: C)
        for exact in (True, False):
            yield f"gpu.py mb {name} exact={exact}", cuda.full_source(replace(sp.rendered("cuda", exact, tg)))
            if lengths:
                yield f"gpu.py mb {name} exact={exact} lengths", \
                    cuda.full_source(replace(sp.rendered("cuda", exact, tg, lengths)))
    import mlx.core as mx
    for c in msl_cuda.cases(True, "sim", msl_cuda.corpus_dir()):
        name, in_names, outs = c["name"].split()[0], c["in_names"], c["outs"]
        tmpl = [(k, T.lookup(v) if isinstance(v, str) else v) for k, v in c["template"]]
        ins = [np.asarray(c["inputs"][n]) for n in in_names]
        r = Rendered(f"raw_{name}", c["cuda"], c["header"], in_names, [o for o, _ in outs],
                     input_types=[(T.from_numpy(a.dtype), a.ndim) for a in ins],
                     output_types=[T.float32] * len(outs))
        yield f"msl_cuda.py raw {name}", cuda.full_source(r, tmpl)
        k = mb.metal_kernel(name=name, input_names=in_names, output_names=[o for o, _ in outs], source=c["msl"],
                            header=c["header"], atomic_outputs=c["kw"].get("atomic_outputs", False))
        b = k.bind(inputs=[mx.array(a) for a in ins], template=msl_cuda.mlx_template(c["template"]),
                   grid=c["grid"], threadgroup=c["threadgroup"], output_shapes=[s for _, s in outs],
                   output_dtypes=[mx.float32] * len(outs), backend="sim")
        sp = k.specialization(b)
        for exact in (True, False):
            yield f"msl_cuda.py mb {name} exact={exact}", \
                cuda.full_source(replace(sp.rendered("cuda", exact, c["threadgroup"])), tmpl)
    n = 1024
    st = simulation.initial_state(n)
    p = simulation.PARAMS
    for kname, args in (("move", (*st, p["gx"], p["gy"], p["dt"], p["pull"], p["damp"], p["lo"], p["hi"],
                                  np.int32(n))),
                        ("hazard", (st[0], st[1], p["cx"], p["cy"], p["r2"], np.zeros(4, np.int32), np.int32(0),
                                    np.int32(n)))):
        sp = getattr(simulation, kname).specialization_of(*args)     # (specialize is Numba's)
        yield f"simulation.py {kname}", cuda.full_source(replace(sp.rendered("cuda", True, (256, 1, 1))))
    import gpu_probe
    sp = gpu.softmax_k.specialize(np.zeros((4, 1024), f32), NC=1024, TG=256)
    generic = sp.rendered("cuda", True)
    for name, body, header in (("raw_uint", gpu_probe.UINT_SOFTMAX, ""),
                               ("raw_u32index", gpu_probe.U32INDEX_SOFTMAX, ""),
                               ("raw_mbreduce", gpu_probe.MBRED_SOFTMAX, generic.header)):
        r = Rendered(f"probe_{name}", body, header, ["x"], ["out"], input_types=[(T.float32, 2)],
                     output_types=[T.float32])
        yield f"gpu_probe.py {name}", "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n" + \
            cuda.full_source(r, [("NC", 1024), ("TG", 256)])
    r = Rendered("probe_raw_shape_mod", gpu_probe.SHAPE_MOD_GELU, "", ["x", "bias"], ["out"],
                 input_types=[(T.float32, 1), (T.float32, 1)], output_types=[T.float32])
    yield "gpu_probe.py bias_gelu raw_shape_mod", cuda.full_source(r, [("N", 1 << 26)])
    import host_overhead
    r = Rendered("host_overhead_raw_saxpy", host_overhead.RAW_SAXPY["cuda"], "", ["a", "x", "y"], ["out"],
                 input_types=[(T.float32, 0), (T.float32, 1), (T.float32, 1)], output_types=[T.float32])
    yield "host_overhead.py raw saxpy", cuda.full_source(r)
    import msl_call_cost
    r = Rendered("msl_call_cost_saxpy_raw", msl_call_cost.CUDA_SAXPY, "", ["a", "x", "y"], ["out"],
                 input_types=[(T.float32, 1), (T.float32, 1), (T.float32, 1)], output_types=[T.float32])
    yield "msl_call_cost.py raw saxpy", cuda.full_source(r)
    import sweep_vs_cupy
    for name, k, args, launch, shapes, _ in sweep_vs_cupy.cases("sim"):
        for tg in shapes:
            yield f"sweep_vs_cupy.py {name} threadgroup={tg}", sweep_vs_cupy.generated(k, args, launch, tg)[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nvrtc-site", default=os.environ.get("NVRTC_SITE"),
                    help="a site-packages with nvidia-cuda-nvrtc-cu12 (+ runtime, cccl headers)")
    a = ap.parse_args(argv)
    lib, site = _lib(a.nvrtc_site)
    if lib is None:
        print("skipped: no NVRTC library (pip install nvidia-cuda-nvrtc-cu12)")
        return 0
    inc = [cuda.SHIM_INCLUDE] + glob.glob(os.path.join(site or "", "nvidia", "*", "include")) + \
        glob.glob(os.path.join(site or "", "nvidia", "cuda_cccl", "include", "cccl"))
    bad = 0
    for label, src in sources():
        ok, log = compile_ptx(lib, src, inc)
        print(f"{'ok  ' if ok else 'FAIL'} {label}")
        if not ok:
            bad += 1
            print(log[-3000:])
    print(f"{bad} of the sources failed" if bad else "every source compiles")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
