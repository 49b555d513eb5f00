"""metalbench: write GPU kernels in notebook cells, run them as live MLX kernels.

    import metalbench as mb
    from metalbench.dsl import *

    @mb.kernel
    def saxpy(a: float, x, y, out: mb.Out):
        i = thread_position_in_grid.x
        if i < x.size:
            out[i] = a * x[i] + y[i]

    out = saxpy(2.0, x, y, grid=x.size, threadgroup=256)

Backends: ``metal`` (Apple GPU), ``cuda`` (NVIDIA through MLX), ``sim`` (CPU simulator).
"""


def _require_mlx():
    # On Linux the `mlx` package needs one backend build (mlx-cpu or mlx-cuda-*), chosen by
    # an extra; without one `import mlx.core` fails on libmlx.so: say which extra to add.
    try:
        import mlx.core  # noqa: F401
    except ImportError as e:
        if "libmlx" not in str(e):
            raise
        raise ImportError(
            "MLX is installed without a backend build (libmlx.so is missing). On Linux install one: "
            "pip install 'metalbench[cpu]' (CPU: the simulator and MLX on the CPU) or "
            "'metalbench[cuda]' (NVIDIA GPUs, CUDA 13; [cuda12] for CUDA 12)") from e


_require_mlx()

from .errors import (BackendUnavailableError, KernelCheckError, KernelInternalError, KernelLaunchError,
                     KernelNameError, KernelSyntaxError, KernelTypeError, MetalbenchError)
from .errors import CoverageWarning, KernelCheckWarning, OutOfBoundsWarning
from .check import BadReferenceError
from .autodiff.prepare import NotDifferentiableError
from .frontend.python import Out, constexpr
from .kernel import Func, Kernel, func, kernel
from .launch import resolve_backend
from .types import bfloat16, bool_, float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64
from . import devices  # noqa: E402,F401  (mb.devices: GPU table, limits, roofline model)



def _version() -> str:
    # One place for the version: extension/package.json, read by the build (hatch-nodejs-version)
    # into the installed metadata, which this reads back.
    try:
        from importlib.metadata import version
        return version("metalbench")
    except Exception:  # noqa: BLE001 — running from a source tree that is not installed
        return "0+unknown"


__version__ = _version()


def metal_kernel(*args, **kwargs):
    """Drop-in for ``mx.fast.metal_kernel`` that also runs on ``cuda`` and ``sim``::

        k = mb.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"],
                            source="uint i = thread_position_in_grid.x; out[i] = metal::exp(inp[i]);")
        (out,) = k(inputs=[a], grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
                   output_shapes=[a.shape], output_dtypes=[a.dtype], backend="sim")
    """
    from .mlx_compat import metal_kernel as _mk
    return _mk(*args, **kwargs)


def check_grad(kernel, *args, **kwargs):
    """Compare a DSL kernel's generated VJP with central finite differences (simulator,
    float64 where the kernel specialises for it); worst error per argument::

        r = mb.check_grad(k, x, grid=n, threadgroup=256)
        r.ok, r.rows                     # + a table in notebooks
    """
    from .autodiff.gradcheck import check_grad as _cg
    return _cg(kernel, *args, **kwargs)


def load_ipython_extension(ipython):
    """``%load_ext metalbench``: registers the ``%%metal`` cell magic."""
    from .notebook.magic import load_ipython_extension as _load
    _load(ipython)


__all__ = ["kernel", "func", "Kernel", "Func", "Out", "constexpr", "metal_kernel", "resolve_backend",
           "MetalbenchError", "KernelSyntaxError", "KernelNameError", "KernelTypeError",
           "KernelLaunchError", "KernelCheckError", "KernelInternalError", "BackendUnavailableError",
           "BadReferenceError", "check_grad", "NotDifferentiableError", "OutOfBoundsWarning", "KernelCheckWarning", "CoverageWarning",
           "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "bfloat16", "float32", "float64"]
