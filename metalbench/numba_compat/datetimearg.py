"""NumPy datetime64/timedelta64 arrays and scalars as ``@cuda.jit`` arguments: passed as
their int64 storage (an array's view shares the caller's memory, so in-place writes
land), with ``("datetime", kind, unit)`` as the argument spec's value; the front end
reads them as :class:`~metalbench.semantics.datetimes.DatetimeValue` (NaT-aware
arithmetic, units).

>>> import numpy as np
>>> a = np.arange("2005-02", "2005-03", dtype="datetime64[D]")
>>> s, t, marker = datetime_storage(a, "a")
>>> s.dtype, marker, np.shares_memory(s, a)
(dtype('int64'), ('datetime', 'M', 'D'), True)
>>> datetime_marker(np.timedelta64(3, "h")), datetime_marker(1.5)
(('datetime', 'm', 'h'), None)
"""
from __future__ import annotations

import numpy as np

from .. import types as T
from ..errors import KernelLaunchError
from ..semantics.datetimes import datetime_unit


def datetime_marker(v):
    """``("datetime", kind, unit)`` for a datetime64/timedelta64 scalar or array, else None."""
    dt = getattr(v, "dtype", None)
    if dt is None or not isinstance(v, (np.ndarray, np.datetime64, np.timedelta64)):
        return None
    u = datetime_unit(dt)
    return None if u is None else ("datetime", *u)


def datetime_storage(a: np.ndarray, name: str):
    """(int64 view of ``a``, int64, the marker) for a datetime64/timedelta64 array."""
    m = datetime_marker(a)
    if m is None:
        raise KernelLaunchError(f"array argument {name!r}: dtype {a.dtype} has no single unit kernels can use",
                                hint=f"for example {name}.astype('datetime64[D]')")
    return a.view(np.int64), T.int64, m
