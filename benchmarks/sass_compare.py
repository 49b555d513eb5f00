"""Generated CUDA against the hand-written kernels of ``benchmarks/gpu.py``, compared as
machine code, with no GPU: what costs no device time (METHOD.md: "read the compiler's
resource report and the disassembly").

Each kernel's full source, as MLX 0.32's ``cuda_kernel`` builds it (``codegen.cuda.
full_source``; MLX's header replaced by the shim in ``codegen/cuda_shim``), is compiled
with ``nvcc -cubin -arch=sm_90`` (MLX compiles with NVRTC for the device's ``sm_XY``,
no fast math), and the SASS is counted: registers (``ptxas -v``), instructions, global
loads (``LDG``: their number after unrolling is the loads in flight per thread), warp
shuffles and votes (``SHFL``, ``VOTE``: the partial-warp reduction helper shows up
here), 64-bit address multiplies (``IMAD.WIDE``: one per load when an index is
recomputed instead of stepped). The generated kernel is the one a launch of the
benchmark's shape uses (``Specialization.launch_rendered``: exact grid, specialised for
its threadgroup and for the array lengths it divides by).

    python benchmarks/sass_compare.py              # table; needs nvcc, cuobjdump + nvdisasm
    python benchmarks/sass_compare.py --dump DIR   # also keep sources and SASS in DIR

``cuobjdump``/``nvdisasm``: the CUDA toolkit's, or pip's ``nvidia-cuda-cuobjdump`` and
``nvidia-cuda-nvdisasm`` wheels (``--tools DIR`` adds their ``bin`` folders to PATH).
Without them only registers and the PTX instruction count are given.
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from metalbench import types as T  # noqa: E402
from metalbench.codegen import cuda  # noqa: E402
from metalbench.codegen.c_like import Rendered  # noqa: E402

COUNTS = ("LDG", "STG", "SHFL", "VOTE", "IMAD.WIDE", "BRA", "MUFU")


def raw_source(name: str, template: list) -> str:
    """The full source of the hand-written kernel ``name`` of ``gpu.RAW_CUDA``."""
    import gpu
    body, ins = gpu.RAW_CUDA[name]
    outs = ["c" if name == "matmul" else "out"]
    r = Rendered(f"raw_{name}", body, "", list(ins), outs, input_types=[(T.float32, 1 if n != "a" or name == "matmul"
                                                                         else 0) for n in ins],
                 output_types=[T.float32])
    return cuda.full_source(r, template)


def generated_source(name: str, shape) -> str:
    """The full source of the DSL kernel ``name`` of ``gpu.py`` as a launch of the
    benchmark's configuration prints it."""
    import gpu
    f32 = np.float32
    if name in ("copy", "saxpy"):
        x = np.zeros(shape, f32)
        k, args, kw, tg = (gpu.copy_k, (x,), {}, (256, 1, 1)) if name == "copy" else \
            (gpu.saxpy_k, (2.0, x, x), {}, (256, 1, 1))
    elif name == "block_sum":
        k, args, kw, tg = gpu.block_sum_k, (np.zeros(shape, f32),), {}, (1024, 1, 1)
    elif name == "softmax":
        k, args, kw, tg = gpu.softmax_k, (np.zeros(shape, f32),), {"NC": shape[1], "TG": 256}, (256, 1, 1)
    elif name == "bias_gelu":
        x = np.zeros(shape, f32)
        k, args, kw, tg = gpu.bias_gelu_k, (x, np.zeros(gpu.GELU_COLS, f32)), {}, (256, 1, 1)
    else:
        n = shape[0]
        k, args, kw, tg = gpu.matmul_k, (np.zeros((n, n), f32), np.zeros((n, n), f32)), \
            {"KD": n, "ND": n, "TILE": 16}, (16, 16, 1)
    grid = (shape[0] * tg[0] if name == "softmax" else 1 << 20 if name == "block_sum" else shape[0],
            shape[0] if name == "matmul" else 1, 1)
    b = k.bind(*args, grid=grid, threadgroup=tg, backend="sim", **kw)
    # what a launch compiles: exact grid, this threadgroup, the lengths it divides by
    return cuda.full_source(replace(k.specialization(b).launch_rendered(b, "cuda")))


CASES = {
    "copy": ((1 << 20,), [("N", 1 << 20)]),
    "saxpy": ((1 << 20,), [("N", 1 << 20)]),
    "block_sum": ((1 << 20,), []),
    "softmax": ((8192, 4096), [("NC", 4096), ("TG", 256)]),
    "matmul": ((2048,), [("KD", 2048), ("ND", 2048)]),
    "bias_gelu": ((1 << 20,), [("N", 1 << 20), ("C", None)]),
}


def compile_sass(text: str, where: Path) -> dict:
    """Registers and SASS instruction counts of ``text`` (compiled in ``where``)."""
    where.mkdir(parents=True, exist_ok=True)
    src = where / "k.cu"
    src.write_text(text)
    p = subprocess.run(["nvcc", "-cubin", "-std=c++17", "-arch=sm_90", "-Xptxas", "-v", "-I", cuda.SHIM_INCLUDE,
                        str(src), "-o", str(where / "k.cubin")], capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(p.stderr[-3000:])
    regs = re.findall(r"Used (\d+) registers", p.stderr)
    out = {"regs": int(regs[0]) if regs else None}
    if shutil.which("cuobjdump") and shutil.which("nvdisasm"):
        sass = subprocess.run(["cuobjdump", "-sass", str(where / "k.cubin")], capture_output=True, text=True).stdout
        (where / "k.sass").write_text(sass)
        ins = [ln.split(";")[0] for ln in sass.splitlines() if re.match(r"\s+/\*[0-9a-f]{4}\*/", ln)]
        ins = [re.sub(r"/\*[0-9a-f]+\*/", "", i).strip() for i in ins]
        out["instr"] = len(ins)
        for c in COUNTS:
            out[c] = sum(1 for i in ins if re.search(r"(^|\s)" + re.escape(c) + r"[\s.]", i + " "))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", default=None, help="keep sources and SASS here")
    ap.add_argument("--tools", action="append", default=[],
                    help="a folder with cuobjdump/nvdisasm (or a pip --target holding nvidia/cu13/bin)")
    ap.add_argument("--only", default=None, help="comma-separated kernel names")
    args = ap.parse_args(argv)
    for t in args.tools:
        dirs = [t] + glob.glob(os.path.join(t, "nvidia", "*", "bin"))
        os.environ["PATH"] = os.pathsep.join(dirs + [os.environ["PATH"]])
    if shutil.which("nvcc") is None:
        print("nvcc not found: nothing to compare", file=sys.stderr)
        return 0
    import gpu  # noqa: F401  (the kernels)
    base = Path(args.dump) if args.dump else Path(tempfile.mkdtemp(prefix="mb_sass_"))
    names = args.only.split(",") if args.only else list(CASES)
    rows = []
    for name in names:
        shape, tmpl = CASES[name]
        tmpl = [(n, v if v is not None else _gelu_cols()) for n, v in tmpl]
        for variant in ("raw", "mb"):
            text = raw_source(name, tmpl) if variant == "raw" else generated_source(name, shape)
            r = compile_sass(text, base / f"{name}_{variant}")
            rows.append({"kernel": name, "variant": variant, **r})
    keys = ["kernel", "variant", "regs", "instr", *COUNTS]
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(str(r.get(k, "")) for k in keys) + " |")
    if args.dump:
        print(f"sources and SASS under {base}")
    return 0


def _gelu_cols():
    import gpu
    return gpu.GELU_COLS


if __name__ == "__main__":
    sys.exit(main())
