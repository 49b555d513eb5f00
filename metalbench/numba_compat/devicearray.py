"""Numba's host-side array API: ``cuda.to_device``, ``cuda.device_array``, ``copy_to_host``.

The "device" copy lives in host memory as a NumPy array (the simulator runs on it; the
GPU backends copy it into MLX for each launch and back), so a script's explicit
transfers keep working and cost little::

    >>> import numpy as np
    >>> d = to_device(np.arange(4, dtype=np.float32))
    >>> d.copy_to_host().tolist(), d.shape
    ([0.0, 1.0, 2.0, 3.0], (4,))
"""
from __future__ import annotations

import numpy as np


class DeviceNDArray:
    """A "device" array: ``shape``, ``dtype``, ``size``, ``copy_to_host()``,
    ``copy_to_device(ary)``, slicing, and ``np.asarray(d)``.

    >>> d = device_array((2, 3), np.float32)
    >>> d.shape, d.dtype.name
    ((2, 3), 'float32')
    """

    def __init__(self, data: np.ndarray):
        self._data = data

    # NumPy-like attributes
    shape = property(lambda self: self._data.shape)
    dtype = property(lambda self: self._data.dtype)
    size = property(lambda self: self._data.size)
    ndim = property(lambda self: self._data.ndim)
    strides = property(lambda self: self._data.strides)
    nbytes = property(lambda self: self._data.nbytes)
    T = property(lambda self: DeviceNDArray(self._data.T))

    def __len__(self):
        return len(self._data)

    def __metalbench_signature__(self):
        """What a launch's argument signature needs (the thin path of repeated launches)."""
        return ("device", self.dtype.str, self.shape)

    def __repr__(self) -> str:
        return f"<metalbench.cuda DeviceNDArray shape={self.shape} dtype={self.dtype}>"

    def __array__(self, dtype=None, copy=None):
        return self._data if dtype is None else self._data.astype(dtype)

    def __getitem__(self, item):
        r = self._data[item]
        return DeviceNDArray(r) if isinstance(r, np.ndarray) else r

    def __setitem__(self, item, value):
        self._data[item] = np.asarray(value)

    def copy_to_host(self, ary=None, stream=0):
        """A NumPy copy of the array, or a copy into ``ary`` (returned)."""
        if ary is None:
            return self._data.copy()
        np.copyto(ary, self._data.reshape(ary.shape))
        return ary

    def copy_to_device(self, ary, stream=0):
        """Overwrite the contents with the host array (or device array) ``ary``."""
        np.copyto(self._data, np.asarray(ary).reshape(self._data.shape))

    def reshape(self, *shape, order="C"):
        return DeviceNDArray(self._data.reshape(*shape, order=order))

    def ravel(self, order="C"):
        return DeviceNDArray(self._data.ravel(order=order))

    def is_c_contiguous(self):
        return self._data.flags.c_contiguous

    def is_f_contiguous(self):
        return self._data.flags.f_contiguous

    def get_ipc_handle(self):
        raise NotImplementedError("IPC handles are not supported by metalbench.cuda")

    def split(self, section, stream=0):
        return [DeviceNDArray(self._data[i:i + section]) for i in range(0, len(self._data), section)]


def to_device(obj, stream=0, copy=True, to=None):
    """Copy a host array to the "device": ``d = cuda.to_device(a)``; with ``to=d`` it
    fills an existing device array.

    >>> to_device(np.ones(3, np.int32)).copy_to_host().tolist()
    [1, 1, 1]
    """
    if to is not None:
        to.copy_to_device(obj)
        return to
    if isinstance(obj, DeviceNDArray):
        return DeviceNDArray(obj._data.copy())
    a = np.array(obj, copy=True) if copy else np.asarray(obj)
    return DeviceNDArray(np.ascontiguousarray(a))


def device_array(shape, dtype=np.float64, strides=None, order="C", stream=0):
    """A new "device" array (zero-filled; Numba's is uninitialised).

    >>> device_array(3, np.int32).copy_to_host().tolist()
    [0, 0, 0]
    """
    return DeviceNDArray(np.zeros(shape, dtype=dtype, order=order))


def device_array_like(ary, stream=0):
    """A new "device" array with the shape and dtype of ``ary``.

    >>> device_array_like(np.ones((2, 2), np.float32)).shape
    (2, 2)
    """
    return device_array(ary.shape, ary.dtype)


def pinned_array(shape, dtype=np.float64, strides=None, order="C"):
    """A host array (pinning means nothing here)."""
    return np.zeros(shape, dtype=dtype, order=order)


mapped_array = pinned_array
managed_array = pinned_array


def pinned_array_like(ary):
    return np.zeros_like(ary)


def is_cuda_array(obj) -> bool:
    """True for metalbench device arrays (Numba: objects with ``__cuda_array_interface__``)."""
    return isinstance(obj, DeviceNDArray)
