"""SASS instruction counts of the MSL->CUDA kernels of ``msl_cuda.py`` and their twins,
without a GPU: what the read guard (``codegen/cuda_guard.py``) costs in instructions.

For every kernel of ``msl_cuda.py`` (at its H200 size and template) the printed CUDA a
launch compiles (``Specialization.launch_rendered``: with the lengths it divides by
compiled in, ``passes/lengths.py``) is compiled as MLX would build it (``cuda.full_source``, ``nvcc -cubin -arch=sm_90 -O3``)
with the guard's default scope (reads whose index depends on data or may be negative),
with every input read guarded (``METALBENCH_CUDA_GUARD_READS=1``) and with none (``=0``),
next to the hand-written twin; ``cuobjdump -sass`` counts the instructions of each.

    python benchmarks/msl_cuda_sass.py                 # a table; needs nvcc and cuobjdump
    python benchmarks/msl_cuda_sass.py --keep DIR      # keep the .cu/.cubin/.sass files
    CUOBJDUMP=/path/to/cuobjdump python benchmarks/msl_cuda_sass.py

cuobjdump needs nvdisasm beside it (pip: ``nvidia-cuda-cuobjdump``, ``nvidia-cuda-nvdisasm``).
A count is not a time: it shows where the guard's compares and lost load merging went.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import msl_cuda as M  # noqa: E402

OPS = ("LDG", "ISETP", "IMAD", "IADD3", "SEL", "BRA")
SCOPES = {"default": None, "all": "1", "none": "0"}


def sass_counts(src: str, tag: str, out: Path, cuobjdump: str):
    from metalbench.codegen import cuda
    f = out / f"{tag}.cu"
    f.write_text(src)
    cub = out / f"{tag}.cubin"
    p = subprocess.run(["nvcc", "-cubin", "-std=c++17", "-O3", "-arch=sm_90", "-I", cuda.SHIM_INCLUDE, str(f),
                        "-o", str(cub)], capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"{tag}: nvcc failed\n{p.stderr[-2000:]}")
    s = subprocess.run([cuobjdump, "-sass", str(cub)], capture_output=True, text=True, check=True).stdout
    (out / f"{tag}.sass").write_text(s)
    ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", s)
    ops = [o for o in ops if o != "NOP"]
    return len(ops), collections.Counter(o.split(".")[0] for o in ops)


def rendered(c, guard):
    import mlx.core as mx
    import metalbench as mb
    old = os.environ.get("METALBENCH_CUDA_GUARD_READS")
    try:
        if guard is None:
            os.environ.pop("METALBENCH_CUDA_GUARD_READS", None)
        else:
            os.environ["METALBENCH_CUDA_GUARD_READS"] = guard
        kw = dict(c["kw"])
        k = mb.metal_kernel(name=c["name"].split()[0], input_names=c["in_names"],
                            output_names=[o for o, _ in c["outs"]], source=c["msl"], header=c["header"],
                            atomic_outputs=kw.pop("atomic_outputs", False))
        args = [c["inputs"][n] if isinstance(c["inputs"][n], int) else mx.array(c["inputs"][n]) for n in c["in_names"]]
        b = k.bind(inputs=args, output_shapes=[s for _, s in c["outs"]], output_dtypes=[mx.float32] * len(c["outs"]),
                   grid=c["grid"], threadgroup=c["threadgroup"], template=M.mlx_template(c["template"]), backend="sim")
        # what the launch compiles: exact-grid variant, threadgroup, the shapes it divides by
        return k.specialization(b).launch_rendered(b, "cuda")
    finally:
        if old is None:
            os.environ.pop("METALBENCH_CUDA_GUARD_READS", None)
        else:
            os.environ["METALBENCH_CUDA_GUARD_READS"] = old


def twin(c):
    import numpy as np
    from metalbench import types as T
    from metalbench.codegen.c_like import Rendered
    ins = []
    for n in c["in_names"]:
        v = c["inputs"][n]
        if isinstance(v, int):
            ins.append((T.int32, 0))
        else:
            ins.append((T.uint8 if v.dtype == np.uint8 else T.float32, v.ndim))
    return Rendered(name="twin_" + c["name"].split()[0], body=c["cuda"], header=c["header"],
                    input_names=list(c["in_names"]), output_names=[o for o, _ in c["outs"]], input_types=ins,
                    output_types=[T.float32] * len(c["outs"]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", default=None, help="keep the sources, cubins and SASS here")
    ap.add_argument("--corpus", default=None, help="the MSL corpus (the mlx-lm kernels), as msl_cuda.py")
    ap.add_argument("--only", default=None, help="kernels whose name matches this regex")
    a = ap.parse_args(argv)
    cuobjdump = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    if shutil.which("nvcc") is None or cuobjdump is None:
        print("needs nvcc and cuobjdump (CUOBJDUMP=...)")
        return 2
    from metalbench.codegen import cuda
    out = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="msl_cuda_sass_"))
    out.mkdir(parents=True, exist_ok=True)
    cols = ["default", "all", "none", "twin"]
    print("| kernel | " + " | ".join(f"{c} (total; " + " ".join(OPS) + ")" for c in cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for c in M.cases(False, "cuda", M.corpus_dir(a.corpus)):
        name = c["name"].split()[0]
        if a.only and not re.search(a.only, name):
            continue
        tmpl = M.mlx_template(c["template"])
        cells = []
        for scope, env in SCOPES.items():
            n, cnt = sass_counts(cuda.full_source(rendered(c, env), tmpl), f"{name}-{scope}", out, cuobjdump)
            cells.append(f"{n}; " + " ".join(str(cnt[o]) for o in OPS))
        n, cnt = sass_counts(cuda.full_source(twin(c), tmpl), f"{name}-twin", out, cuobjdump)
        cells.append(f"{n}; " + " ".join(str(cnt[o]) for o in OPS))
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print(f"\n(files in {out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
