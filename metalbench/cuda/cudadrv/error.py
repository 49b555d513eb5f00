"""``numba.cuda.cudadrv.error``: the CUDA driver's error classes (for ``except`` clauses
of ported code; metalbench raises its own errors, see ``metalbench.errors``)."""
from ...numba_compat.runtime_stubs import CudaDriverError  # noqa: F401


class CudaRuntimeError(RuntimeError):
    pass


class CudaSupportError(ImportError):
    pass


class NvvmError(Exception):
    pass


class NvvmSupportError(ImportError):
    pass


class NvrtcError(Exception):
    pass


class NvrtcCompilationError(NvrtcError):
    pass


class NvrtcSupportError(ImportError):
    pass
