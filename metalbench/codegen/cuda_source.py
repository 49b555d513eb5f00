"""The complete CUDA source MLX's ``cuda_kernel`` compiles from a printed kernel
(``full_source``: MLX 0.32's ``build_kernel``, for compile checks without a GPU), and
the types MLX declares (``mlx_facing_types``). Split from ``codegen/cuda.py``, which
re-exports both.
"""
from __future__ import annotations

from .. import types as T
from ..mlx_signature import shape_infos
from .c_like import Rendered

CUDA_TYPES = {t.name: t.cuda for t in T.ALL_SCALARS}
# MLX's spelling in the signature (dtype_to_cuda_type): cuda::std::complex<float>
CUDA_TYPES["complex64"] = "mlx::core::cu::complex64_t"


def mlx_facing_types(r: Rendered, kernel=None) -> Rendered:
    """``r`` with its input and output types as MLX declares them: float64 as uint64
    (``runtime.carrier``), the complex64 buffers of ``kernel`` (``ir.Param.complex``,
    float32 in the IR) as complex64, so ``full_source`` prints MLX's signature.

    >>> from metalbench import ir, types as T
    >>> k = ir.KernelIR("k", [ir.Param("x", "buffer", T.float64), ir.Param("o", "buffer", T.float64,
    ...                       is_output=True)], [ir.Store("o", ir.Const(0, T.uint32), ir.Load("x",
    ...                       ir.Const(0, T.uint32), T.float64))])
    >>> from metalbench.codegen.cuda import render
    >>> src = full_source(render(k))
    >>> "const uint64_t* x," in src and "uint64_t* o)" in src and "double* o = " in src
    True
    """
    from ..runtime import carrier
    if kernel is not None:
        cplx = [p.complex for p in kernel.inputs]
        r.input_types = [(T.complex64, nd) if k < len(cplx) and cplx[k] else (t, nd)
                         for k, (t, nd) in enumerate(r.input_types)]
        r.output_types = [T.complex64 if p.complex else t for p, t in zip(kernel.outputs, r.output_types)]
    r.input_types = [(carrier(t, "cuda"), nd) for t, nd in r.input_types]
    r.output_types = [carrier(t, "cuda") for t in r.output_types]
    return r


_DEFAULT_HEADER = """
#include "mlx/backend/cuda/device/utils.cuh"

#include <cooperative_groups.h>

#define inf cuda::std::numeric_limits<float>::infinity()

"""


def launch_bounds(threads: int) -> str:
    """Header text telling ptxas the launch's block size, for blocks of more than 256 threads
    ('' otherwise).

    MLX writes the kernel's ``__global__`` line itself, so the header (the last text before
    that line; metalbench's helpers are ``__device__``) redefines ``__global__`` with
    ``__launch_bounds__``. Without it ptxas may give a thread more registers than a block of
    this size can have (a 1024-thread GLM decode kernel: 96 registers x 1024 > 65536): the
    launch then fails, which MLX does not report, and the outputs stay unwritten, silently.
    With the bound that kernel takes 48 registers and spills nothing. At 256 threads or fewer
    every register count fits (255 x 256 < 65536).

    >>> launch_bounds(256)
    ''
    >>> launch_bounds(1024).splitlines()[-2]
    '#define __global__ __attribute__((global)) __launch_bounds__(1024)'
    """
    if threads <= 256:
        return ""
    # only where CUDA compiles it (NVRTC, nvcc); the host model and libclang's shim keep theirs
    return ("\n#if defined(__CUDACC_RTC__) || defined(__CUDACC__)\n#undef __global__\n"
            f"#define __global__ __attribute__((global)) __launch_bounds__({threads})\n#endif\n")


def full_source(r: Rendered, template: list | None = None) -> str:
    """The complete CUDA source MLX 0.32's ``cuda_kernel`` builds from ``r`` (its
    ``build_kernel``); shapes/strides/ndim parameters appear for the inputs whose
    ``x_shape``/``x_strides``/``x_ndim`` occur in the body.

    >>> from metalbench import ir, types as T
    >>> from metalbench.codegen.cuda import render
    >>> k = ir.KernelIR("k", [ir.Param("o", "buffer", T.float32, is_output=True)], [])
    >>> "__global__ void custom_kernel_k(" in full_source(render(k))
    True
    """
    name = "custom_kernel_" + r.name
    if template:
        for _, v in template:
            if isinstance(v, bool):
                name += "_t" if v else "_f"
            elif isinstance(v, int):
                name += f"_{v}"
            else:
                name += "_" + _mlx_type_string(v)
    src = _DEFAULT_HEADER + r.header + "namespace mlx::core::cu {\n\nnamespace cg = cooperative_groups;\n\n"
    src += f"__global__ void {name}(\n"
    types = r.input_types or [(T.float32, 1)] * len(r.input_names)
    for n, (t, nd), (shape, strides, ndim) in zip(r.input_names, types, shape_infos(r.body, r.input_names)):
        src += f"    const {CUDA_TYPES[t.name]}* {n},\n"
        if nd > 0:
            if shape:
                src += f"    const __grid_constant__ Shape {n}_shape,\n"
            if strides:
                src += f"    const __grid_constant__ Strides {n}_strides,\n"
            if ndim:
                src += f"    const __grid_constant__ int {n}_ndim,\n"
    otypes = r.output_types or [T.float32] * len(r.output_names)
    src += ",\n".join(f"    {CUDA_TYPES[t.name]}* {n}" for n, t in zip(r.output_names, otypes)) + ") {\n"
    if template:
        for n, v in template:
            if isinstance(v, bool):
                src += f"  constexpr bool {n} = {'true' if v else 'false'};\n"
            elif isinstance(v, int):
                src += f"  constexpr int {n} = {v};\n"
            else:
                src += f"  using {n} = {CUDA_TYPES[_scalar(v).name]};\n"
        src += "\n"
    return src + r.body + "\n}\n\n} // namespace mlx::core::cu\n"


def _scalar(v) -> T.ScalarType:
    if isinstance(v, T.ScalarType):
        return v
    if isinstance(v, str):
        return T.complex64 if v == "complex64" else T.lookup(v)
    return T.from_mlx(v, complex_ok=True)     # a template type may be complex64 (using T = complex64_t)


def _mlx_type_string(v) -> str:
    from ..mlx_signature import type_string
    t = _scalar(v)
    return "complex64_t" if t is T.complex64 else type_string(t)     # MLX's get_type_string
