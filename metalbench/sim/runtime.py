"""Helpers the generated lane-vector code calls: masks, selects, loop budgets.

Arithmetic and casts are :mod:`metalbench.scalar`'s (the table constant folding uses).

A *value* is a NumPy scalar (uniform: the same for every lane of the chunk) or a 1-D
array with one entry per lane. A *mask* is ``None`` (every lane of the chunk active),
``False`` (no lane active) or a bool array. Helpers accept all three so the generated
code need not know statically which one it holds::

    >>> import numpy as np
    >>> m = and_(None, np.array([True, False]))
    >>> sel(m, np.int32(7), np.array([1, 2], np.int32)).tolist()
    [7, 2]
"""
from __future__ import annotations

import numpy as np

# ----------------------------------------------------------------------------- masks


def any_(m) -> bool:
    """True when at least one lane of mask ``m`` is active."""
    if m is None:
        return True
    if m is False:
        return False
    return bool(m.any())


def and_(m, c):
    """Lanes of ``m`` where ``c`` (bool scalar or array) holds."""
    if not isinstance(c, np.ndarray):
        return m if c else False
    if m is None:
        # an all-true mask becomes None: the fast unmasked paths (no where/compress)
        return None if c.all() else c
    if m is False:
        return False
    return m & c


def andnot(m, c):
    """Lanes of ``m`` where ``c`` does not hold."""
    if not isinstance(c, np.ndarray):
        return False if c else m
    if m is None:
        return None if not c.any() else ~c
    if m is False:
        return False
    return m & ~c


def minus(m, s):
    """Lanes of ``m`` that are not in the escape set ``s``."""
    if s is False or m is False:
        return m
    if s is None:
        return False
    if m is None:
        return ~s
    return m & ~s


def or_(a, b):
    """Union of two masks."""
    if a is False:
        return b
    if b is False:
        return a
    if a is None or b is None:
        return None
    return a | b


def sel(m, new, old):
    """``new`` on the lanes of ``m``, ``old`` elsewhere (a masked assignment)."""
    if m is None:
        return new
    if m is False:
        return old
    return np.where(m, new, old)


def where(c, a, b):
    """Eager ``c ? a : b`` on lane vectors (both sides already evaluated)."""
    if not isinstance(c, np.ndarray):
        return a if c else b
    return np.where(c, a, b)


def span(v):
    """(min, max) of an integer value as Python ints (for no-wrap proofs)."""
    if isinstance(v, np.ndarray):
        return (int(v.min()), int(v.max())) if v.size else (0, 0)
    return (int(v), int(v))


def contig(v):
    """``o`` when the integer lane vector ``v`` is ``o, o+1, o+2, ...`` (an access at ``v``
    is then a slice), else None. Run once per loop entry on invariant addresses."""
    if not isinstance(v, np.ndarray) or v.ndim != 1 or v.size == 0 or v.dtype.kind not in "iu":
        return None
    o = int(v[0])
    if v.size > 1 and not (int(v[-1]) - o == v.size - 1 and bool((v[1:] - v[:-1] == 1).all())):
        return None
    return o


class RunawayLoop(Exception):
    """A loop ran past its step budget (``METALBENCH_MAX_STEPS``); ``k`` is its node."""

    def __init__(self, k: int):
        super().__init__(k)
        self.k = k
