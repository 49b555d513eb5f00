"""``cuda.Reduce`` / ``cuda.reduce``: a full reduction of a 1-D array with a binary
function, on the device.

The function is compiled as a device function; the array is combined pairwise
(``a[:h]`` with ``a[h:2h]``) by an element-wise kernel until one value is left, all on
device arrays (a host array is copied to the device once), then combined with ``init``.

    >>> import numpy as np
    >>> sum_reduce = Reduce(lambda a, b: a + b)
    >>> float(sum_reduce(np.arange(10, dtype=np.float64)))
    45.0
"""
from __future__ import annotations

import numpy as np

from .devicearray import DeviceNDArray, device_array, to_device
from .ufunc import CUDAUFunc, pairwise


class Reduce:
    """``Reduce(functor)``: call it as ``r(arr, size=None, res=None, init=0, stream=0)``."""

    def __init__(self, functor):
        self._functor = functor
        self._ufunc = CUDAUFunc(functor)
        self.__name__ = getattr(functor, "__name__", "reduce")

    def __repr__(self) -> str:
        return f"<metalbench.cuda Reduce {self.__name__}>"

    def __call__(self, arr, size=None, res=None, init=0, stream=0):
        """The reduction of ``arr`` (its first ``size`` elements) and ``init``; with ``res``
        (a device array) the result goes to ``res[0]`` and None is returned."""
        if arr.ndim != 1:
            raise TypeError("only support 1D array")
        if size is not None:
            arr = arr[:size]
        dtype = np.dtype(arr.dtype)
        init = dtype.type(init)
        if arr.size < 1:
            if res is not None:
                res[0] = init
                return None
            return init
        uf = self._ufunc
        uf.types.setdefault((dtype, dtype), (dtype, None))     # results stored in the array's dtype
        a = arr if isinstance(arr, DeviceNDArray) else to_device(np.ascontiguousarray(arr), stream)
        total = pairwise(uf, a, stream)
        final = uf(total, np.full(1, init, dtype), stream=stream) if not isinstance(total, np.ndarray) else \
            uf(total, init, stream=stream)
        if res is not None:
            res[0:1] = final
            return None
        return final.copy_to_host(stream=stream)[0] if isinstance(final, DeviceNDArray) else np.asarray(final)[0]


def reduce(functor):
    """``@cuda.reduce``: a :class:`Reduce` of the decorated binary function.

    >>> @reduce
    ... def prod(a, b):
    ...     return a * b
    >>> float(prod(np.arange(1, 6, dtype=np.float64), init=1))
    120.0
    """
    return Reduce(functor)


__all__ = ["Reduce", "reduce", "device_array"]
