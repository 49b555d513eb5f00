"""``numba.cuda.compiler`` for ported code: importable, and every entry point that would
produce PTX, LTO-IR or an LLVM module says why it cannot here.

metalbench does not compile through NVVM: a kernel becomes MSL (Apple GPUs) or CUDA C++
(``mx.fast.cuda_kernel``, compiled by MLX with NVRTC). Read the generated source with
``kernel.source(*args, backend="cuda")`` or ``backend="metal"``.

    >>> try:
    ...     compile_ptx(lambda x: None, "void(float32[:])")
    ... except PTXNotAvailable as e:
    ...     print(str(e).splitlines()[0][:40])
    PTX is not available: metalbench compile
"""
from __future__ import annotations

from ..errors import MetalbenchError


class PTXNotAvailable(MetalbenchError, NotImplementedError):
    """Asked for PTX/LTO-IR/LLVM, which metalbench does not produce."""


def _refuse(what):
    def refuse(*args, **kwargs):
        raise PTXNotAvailable(f"PTX is not available: metalbench compiles to MSL/CUDA through MLX ({what} needs "
                              "Numba's NVVM pipeline)",
                              hint="read the generated code with kernel.source(*args, backend='cuda') (CUDA C++) "
                                   "or backend='metal' (MSL)")
    refuse.__name__ = what
    refuse.__doc__ = f"Numba's ``{what}``: raises :class:`PTXNotAvailable`."
    return refuse


compile = _refuse("compile")
compile_ptx = _refuse("compile_ptx")
compile_ptx_for_current_device = _refuse("compile_ptx_for_current_device")
compile_for_current_device = _refuse("compile_for_current_device")
compile_all = _refuse("compile_all")
compile_ltoir = _refuse("compile_ltoir")
compile_cuda = _refuse("compile_cuda")
run_frontend = _refuse("run_frontend")
declare_device = _refuse("declare_device")


class CUSource:
    """numba-cuda's ``cuda.CUSource(text)``: CUDA C++ source to link into a kernel (with
    ``declare_device(..., link=...)`` or ``@cuda.jit(link=[...])``). Making one works, so a
    module that defines external sources imports; linking it raises
    :class:`PTXNotAvailable` (metalbench compiles kernels through MLX, which links no
    external device code).

    >>> src = CUSource('extern "C" __device__ int twice(int *r, int a) { *r = 2 * a; return 0; }')
    >>> src.kind, "twice" in src.data
    ('cu', True)
    """

    kind = "cu"

    def __init__(self, data):
        self.data = data.decode() if isinstance(data, bytes) else str(data)

    def __repr__(self) -> str:
        return f"<metalbench.cuda CUSource ({len(self.data)} characters; linking is not supported)>"
