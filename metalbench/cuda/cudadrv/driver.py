"""``numba.cuda.cudadrv.driver``: ``driver`` and the error classes.

    >>> driver.get_device_count()
    1
"""
from ...numba_compat.runtime_stubs import CudaAPIError, Driver, _have_nvjitlink, driver  # noqa: F401
from .error import CudaDriverError, CudaSupportError  # noqa: F401

__all__ = ["driver", "Driver", "CudaAPIError", "CudaDriverError", "CudaSupportError"]
