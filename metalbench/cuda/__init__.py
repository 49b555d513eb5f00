"""Numba-CUDA compatibility: port a Numba kernel by changing one import.

Replace ``from numba import cuda`` with ``from metalbench import cuda``; the kernel then
runs on Apple GPUs (Metal), NVIDIA GPUs (MLX's CUDA backend) or the CPU simulator::

    from metalbench import cuda
    import numpy as np

    @cuda.jit
    def add(a, b, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a[i] + b[i]

    a = np.random.rand(1000).astype(np.float32); b = np.random.rand(1000).astype(np.float32)
    out = np.empty_like(a)
    add[4, 256](a, b, out)          # out is written in place, as with Numba

Choose the backend with ``cuda.set_backend("sim")``, ``add.configure(backend="sim")`` or
``METALBENCH_BACKEND=sim``. Unsupported Numba features (grid-wide sync, runtime-sized
local arrays, recursion) raise ``KernelSyntaxError`` at the line.
"""
from ..sources import remember_compiled_strings as _remember_compiled_strings
from ..numba_compat.devicearray import (DeviceNDArray, as_cuda_array, device_array, device_array_like,
                                       is_cuda_array, managed_array, mapped, mapped_array, mapped_array_like,
                                       pinned, pinned_array, pinned_array_like, to_device)
from ..numba_compat.dispatcher import In, InOut, Out
from ..numba_compat.ufunc import guvectorize, vectorize
from ..numba_compat.reduce import Reduce, reduce
from ..numba_compat.host import CUDAKernel, DeviceFunction, get_backend, jit, set_backend
from ..numba_compat.intrinsics import (activemask, all_sync, any_sync, atomic, ballot_sync, blockDim, blockIdx,
                                      cg, const, grid, gridDim, gridsize, laneid, lanemask_lt, local, shared,
                                      shfl_down_sync, shfl_sync, shfl_up_sync, shfl_xor_sync, syncthreads,
                                      syncthreads_and, syncthreads_count, syncthreads_or, syncwarp,
                                      threadfence, threadfence_block, threadfence_system, threadIdx, warpsize)
from ..numba_compat.bitops import (brev, cbrt, clz, eq_sync, ffs, fma, match_all_sync, match_any_sync, popc,
                                    selp)
from ..numba_compat.runtime_stubs import (Device, Event, Stream, close, current_context, default_stream,
                                         defer_cleanup, detect, event, event_elapsed_time, external_stream, get_current_device,
                                         gpus, is_available, legacy_default_stream, list_devices,
                                         per_thread_default_stream, profile_start, profile_stop, select_device,
                                         stream, synchronize)

from ..numba_compat.nbtypes import (b1, bool_, boolean, byte, c8, c16, char, complex64, complex128, double, f2,
                                    f4, f8, float16, float32, float64, float_, from_dtype, i1, i2, i4, i8, int8,
                                    int16, int32, int64, int_, intc, intp, long_, longlong, none, short, typeof,
                                    u1, u2, u4, u8, uchar, uint, uint8, uint16, uint32, uint64, uintc, uintp,
                                    ulong, ulonglong, ushort, void)
from ..numba_compat.nbtypes import bfloat16  # noqa: F401  (numba.cuda.types has it)
from ..numba_compat.vectors import all_names as _vector_names
globals().update(_vector_names)   # cuda.float32x4, cuda.float4, cuda.short2, ... (numba_compat/vectors.py)
from . import types  # noqa: E402  (``from metalbench.cuda import types``, ``numba.types``)
# Host-side modules of numba.cuda (helper numba-host): importable; what cannot work here says why.
from . import args, compiler, cudadrv, deviceufunc, extending, kernels, launchconfig, random, typing  # noqa: E402,F401,E501
from .cudadrv import devicearray  # noqa: E402,F401
from .extending import njit  # noqa: E402,F401  (numba.njit: Python on the host, a device function in kernels)
from .misc.special import literal_unroll  # noqa: E402,F401  (from numba import literal_unroll)
from .compiler import (compile, compile_all, compile_for_current_device, compile_ptx,  # noqa: E402,F401
                       compile_ptx_for_current_device, declare_device, CUSource)

# Numba exposes `cuda.local.array` and `cuda.const.array_like`; `local` is also a module name here.
__all__ = [n for n in dir() if not n.startswith("_")]

# Numba compiles kernels made by exec() of a string from their bytecode; metalbench reads
# the string (sources.py keeps strings compiled from now on).
_remember_compiled_strings()
