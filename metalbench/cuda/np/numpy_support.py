"""``numba.cuda.np.numpy_support``: NumPy dtypes and Numba types.

    >>> import numpy as np
    >>> from_dtype(np.float32)[::1], as_dtype(from_dtype(np.int16))
    (array(float32, 1d, C), dtype('int16'))
"""
from __future__ import annotations

import numpy as np

from ..compiler import PTXNotAvailable
from ...numba_compat.nbtypes import as_dtype, from_dtype  # noqa: F401


# NumPy's (major, minor), as numba's numpy_support has it (tests branch on it)
numpy_version = tuple(int(x) for x in np.__version__.split(".")[:2])


def carray(ptr, shape, dtype=None):
    """Numba's array view of a raw pointer: metalbench kernels have no raw pointers."""
    raise PTXNotAvailable("carray/farray build arrays from raw pointers (CPointer arguments), which metalbench "
                          "kernels do not have", hint="pass the array itself to the kernel")


farray = carray

__all__ = ["from_dtype", "as_dtype", "carray", "farray", "numpy_version"]
