"""Compile generated CUDA with NVRTC (the compiler MLX's ``cuda_kernel`` uses), no GPU needed.

NVRTC is found as the pip packages ``nvidia-cuda-nvrtc-cu12`` (or ``-cu13``/``nvidia-cuda-nvrtc``),
``nvidia-cuda-runtime-cu12`` and ``nvidia-cuda-cccl-cu12`` install it, in this Python or in the
site-packages named by ``METALBENCH_NVRTC_SITE`` (for example a throwaway venv's:
``python -m venv /tmp/nvrtc && /tmp/nvrtc/bin/pip install nvidia-cuda-nvrtc-cu12
nvidia-cuda-runtime-cu12 nvidia-cuda-cccl-cu12``, then
``METALBENCH_NVRTC_SITE=/tmp/nvrtc/lib/python3.11/site-packages``), or under ``CUDA_HOME``.
:func:`find` returns None when it is not there (the tests skip).

The options are MLX's (``mlx/backend/cuda/jit_module.cpp``): ``--device-as-default-execution-space``
and the architecture (sm_90, the H200's), with ``metalbench/codegen/cuda_shim`` standing in
for MLX's ``mlx/backend/cuda/device/utils.cuh``.
"""
from __future__ import annotations

import ctypes
import glob
import importlib.util
import os
import sys
from pathlib import Path


def _site_dirs() -> list[Path]:
    out = []
    if os.environ.get("METALBENCH_NVRTC_SITE"):
        out.append(Path(os.environ["METALBENCH_NVRTC_SITE"]))
    spec = importlib.util.find_spec("nvidia")
    if spec is not None and spec.submodule_search_locations:
        out += [Path(p).parent for p in spec.submodule_search_locations]
    out += [Path(p) for p in sys.path if p.endswith("site-packages")]
    return out


class NVRTC:
    def __init__(self, lib: str, includes: list[str]):
        self.lib = ctypes.CDLL(lib)
        self.includes = includes

    def compile(self, source: str, arch: str = "compute_90") -> tuple[bool, str]:
        """(compiled, log) for ``source`` as MLX compiles a custom kernel."""
        lib = self.lib
        prog = ctypes.c_void_p()
        if lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"custom_kernel.cu", 0, None, None):
            raise RuntimeError("nvrtcCreateProgram failed")
        opts = [b"--device-as-default-execution-space", f"--gpu-architecture={arch}".encode()]
        opts += [b"-I" + d.encode() for d in self.includes]
        arr = (ctypes.c_char_p * len(opts))(*opts)
        rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
        n = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
        log = ctypes.create_string_buffer(n.value + 1)
        lib.nvrtcGetProgramLog(prog, log)
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
        return rc == 0, log.value.decode(errors="replace")


def find() -> NVRTC | None:
    """The NVRTC library with CUDA's headers (cuda_fp16.h, cooperative_groups.h, cuda/std), or None."""
    from metalbench.codegen import cuda
    roots = [d / "nvidia" for d in _site_dirs()]
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    libs, incs = [], []
    for r in roots:
        libs += glob.glob(str(r / "cuda_nvrtc" / "lib" / "libnvrtc.so*")) + glob.glob(str(r / "cu1*" / "lib" / "libnvrtc.so*"))
        incs += [str(p) for p in (r / "cuda_runtime" / "include", r / "cuda_cccl" / "include")
                 if (p / "cuda_fp16.h").exists() or (p / "cuda" / "std").exists()]
        incs += [p for p in glob.glob(str(r / "cu1*" / "include")) + glob.glob(str(r / "cu1*" / "include" / "cccl"))]
    if home:
        libs += glob.glob(os.path.join(home, "lib64", "libnvrtc.so*"))
        incs += [os.path.join(home, "include"), os.path.join(home, "include", "cccl")]
    libs = [x for x in libs if "builtins" not in x and ".alt." not in x]
    incs = [x for x in dict.fromkeys(incs) if os.path.isdir(x)]
    if not libs or not any(os.path.exists(os.path.join(i, "cuda_fp16.h")) for i in incs):
        return None
    try:
        return NVRTC(sorted(libs)[0], [cuda.SHIM_INCLUDE] + incs)
    except OSError:
        return None
