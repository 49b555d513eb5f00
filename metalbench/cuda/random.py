"""``numba.cuda.random``: xoroshiro128+ generators (see :mod:`metalbench.numba_compat.random`)."""
from ..numba_compat.random import *  # noqa: F401,F403
from ..numba_compat.random import __all__  # noqa: F401
