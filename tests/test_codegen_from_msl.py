"""MSL bodies (MLX's documented kernels) -> IR (MSL front end) -> MSL and CUDA again:
the path ``mb.metal_kernel(..., backend="cuda")`` takes. Both outputs must check clean."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from metalbench import msl_check
from metalbench import types as T
from metalbench.codegen import cuda, cuda_check, msl

mk = pytest.importorskip("test_metal_kernel")
translate_kernel = pytest.importorskip("metalbench.frontend.msl").translate_kernel

f32, f16 = T.float32, T.float16
CASES = {
    "exp": (mk.EXP, "", [("inp", f32, 2)], [("out", f32, 2)], [("T", f32)], False),
    "exp_strided": (mk.EXP_STRIDED, "", [("inp", f16, 2)], [("out", f16, 2)], [("T", f32)], False),
    "matmul": (mk.MATMUL, mk.MATMUL_HEADER, [("a", f32, 2), ("b", f32, 2)], [("out", f32, 2)], [], False),
    "grid_sample": (mk.GRID_SAMPLE, "", [("x", f32, 4), ("grid", f32, 4)], [("out", f32, 4)], [("T", f32)], False),
    "grid_sample_vjp": (mk.GRID_SAMPLE_VJP, "", [("x", f32, 4), ("grid", f32, 4), ("cotangent", f32, 4)],
                        [("x_grad", f32, 4), ("grid_grad", f32, 4)], [("T", f32)], True),
}


def _ir(name):
    src, hdr, ins, outs, tmpl, atomic = CASES[name]
    return translate_kernel(name, src, hdr, inputs=ins, outputs=outs, template=tmpl, atomic_outputs=atomic)


@pytest.mark.parametrize("name", sorted(CASES))
def test_msl_round_trip_checks_clean(name):
    r = msl.render(_ir(name))
    assert msl_check.check(r) == [], r.body
    assert r.atomic_outputs == CASES[name][5]


@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_from_msl_checks_clean(name):
    r = cuda.render(_ir(name))
    assert cuda_check.check(r, use_nvcc=False) == [], r.body


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_cuda_from_msl_compiles_with_nvcc(tmp_path):
    parts = ['#include "mlx/backend/cuda/device/utils.cuh"\n#include <cooperative_groups.h>\n'
             "using mlx::core::cu::Shape;\nusing mlx::core::cu::Strides;\n"]
    for name in sorted(CASES):
        parts.append(f"namespace mbk_{name} {{\n{cuda.full_source(cuda.render(_ir(name)))}\n}}\n")
    src = tmp_path / "from_msl.cu"
    src.write_text("".join(parts))
    p = subprocess.run(["nvcc", "--ptx", "-std=c++17", "-arch=sm_90", "-I", cuda.SHIM_INCLUDE, str(src),
                        "-o", str(tmp_path / "k.ptx")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-6000:]
