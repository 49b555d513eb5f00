"""``numba.cuda.kernels.transpose``: the transpose of a 2-D device array, on the device.

    >>> import numpy as np
    >>> from metalbench import cuda
    >>> transpose(cuda.to_device(np.arange(6).reshape(2, 3))).copy_to_host().tolist()
    [[0, 3], [1, 4], [2, 5]]
"""
from __future__ import annotations

from ...numba_compat.devicearray import DeviceNDArray, device_array, to_device


def transpose(a, b=None):
    """``b`` (a new device array if None) filled with the transpose of the 2-D ``a``;
    returns ``b``. Records and any dtype device arrays hold are fine."""
    if not isinstance(a, DeviceNDArray):
        a = to_device(a)
    if a.ndim != 2:
        raise ValueError(f"transpose takes a 2-D array, got {a.ndim} dimension(s)")
    if b is None:
        b = device_array((a.shape[1], a.shape[0]), dtype=a.dtype)
    if tuple(b.shape) != (a.shape[1], a.shape[0]):
        raise ValueError(f"transpose: the output has shape {b.shape}, the transpose of {a.shape} is "
                         f"{(a.shape[1], a.shape[0])}")
    b[...] = a.T
    return b
