"""``numba.cuda.typing.typeof``: the Numba type of a Python value.

    >>> typeof(1.0), typeof((1, 2.0))
    (float64, Tuple(int64, float64))
"""
from ...numba_compat.nbtypes import typeof  # noqa: F401

__all__ = ["typeof"]
