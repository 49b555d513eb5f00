"""``numba.cuda.kernels.reduction``: see :mod:`metalbench.numba_compat.reduce`."""
from ...numba_compat.reduce import Reduce, reduce  # noqa: F401
