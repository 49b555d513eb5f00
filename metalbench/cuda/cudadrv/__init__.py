"""``numba.cuda.cudadrv`` for ported code: ``driver`` (the transfers between host and
device arrays go through ``driver.cuMemcpyHtoD``/``cuMemcpyDtoH``), ``devicearray``,
``error``. There is no CUDA driver underneath: kernels run through MLX or the simulator.
"""
from . import devicearray, driver, error  # noqa: F401
