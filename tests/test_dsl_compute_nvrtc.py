"""The compute-bound DSL kernels' CUDA compiles with NVRTC (sm_90, as MLX's cuda_kernel
compiles it; no GPU needed; skips without NVRTC, see tests/nvrtc.py): vector views as one
128-bit access (ld/st .v4 in the PTX), the GEMMs of benchmarks/dsl_gemm.py, and half
SIMD-group matrices on tensor cores (mma.sync) with METALBENCH_CUDA_TENSOR_CORES=1."""
from __future__ import annotations

import ctypes
import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

import nvrtc
from metalbench.codegen import cuda

ROOT = Path(__file__).resolve().parent.parent
NV = nvrtc.find()
pytestmark = pytest.mark.skipif(NV is None, reason="NVRTC not installed (tests/nvrtc.py says how)")


def _ptx(sp) -> str:
    """The PTX of ``sp``'s CUDA, compiled with MLX's options (tests/nvrtc.py's)."""
    src = cuda.full_source(sp.rendered("cuda"))
    ok, log = NV.compile(src)
    assert ok, f"{log}\n{src}"
    lib, prog = NV.lib, ctypes.c_void_p()
    lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"custom_kernel.cu", 0, None, None)
    opts = [b"--device-as-default-execution-space", b"--gpu-architecture=compute_90"]
    opts += [b"-I" + d.encode() for d in NV.includes]
    assert lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts)) == 0
    n = ctypes.c_size_t()
    lib.nvrtcGetPTXSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetPTX(prog, buf)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return buf.value.decode()


def test_vector_views_compile_to_vector_accesses():
    from test_roundtrip import vec_views
    sp = vec_views.specialize(np.ones(128, np.float32), np.ones(64, np.float16))
    body = sp.rendered("cuda").body
    assert "mb_vload<float, 4>(x + i * 4u)" in body and "mb_vstore<float, 4>(out + i * 4u, v)" in body
    ptx = _ptx(sp)
    assert ("ld.global.v4" in ptx or "ld.global.nc.v4" in ptx) and "st.global.v4" in ptx and "ld.shared.v4" in ptx


@pytest.mark.parametrize("tensor_cores", ["0", "1"])
def test_benchmark_gemms_compile(monkeypatch, tensor_cores):
    monkeypatch.setenv("METALBENCH_CUDA_TENSOR_CORES", tensor_cores)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import dsl_gemm
    dsl_gemm = importlib.reload(dsl_gemm)      # fresh kernels: the setting is read when CUDA is printed
    a = np.ones((64, 32), np.float32)
    for name, k, kw, _, _, half in dsl_gemm.launches(64, 64):
        x = a.astype(np.float16) if half else a
        sp = k.specialize(x, x.T.copy(), **kw)
        body = sp.rendered("cuda").body
        if half:
            assert ("mb_simdgroup_mma_tc" in body) == (tensor_cores == "1")
        ptx = _ptx(sp)
        assert ("mma.sync" in ptx) == (half and tensor_cores == "1")
