"""``numba.cuda.deviceufunc``: gufunc signatures and scheduling (see
:mod:`metalbench.numba_compat.ufunc`).

    >>> GUFuncEngine.from_signature("(),()->()").schedule([(5,), ()]).pinned
    [False, True]
"""
from ..numba_compat.ufunc import (CUDAGUFunc, CUDAUFunc, GUFuncEngine, GUFuncSchedule,  # noqa: F401
                                  parse_gufunc_signature as parse_signature)

__all__ = ["GUFuncEngine", "GUFuncSchedule", "parse_signature"]
