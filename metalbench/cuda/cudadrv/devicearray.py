"""``numba.cuda.cudadrv.devicearray``: device arrays (see
:mod:`metalbench.numba_compat.devicearray`)."""
from ...numba_compat.devicearray import (DeviceNDArray, auto_device, from_array_like,  # noqa: F401
                                         from_record_like, is_cuda_array, is_device_array)

DeviceNDArrayBase = DeviceNDArray
DeviceRecord = DeviceNDArray
MappedNDArray = DeviceNDArray


def is_cuda_ndarray(obj) -> bool:
    return isinstance(obj, DeviceNDArray)


def verify_cuda_ndarray_interface(obj):
    if not is_cuda_ndarray(obj):
        raise AttributeError(f"{obj!r} is not a metalbench device array")
