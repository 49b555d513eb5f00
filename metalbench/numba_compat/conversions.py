"""Numba's conversion kinds between scalar types and its choice among the declared
signatures of a device function (``@cuda.jit(["(int64, int64)", "(float64, float64)"],
device=True)``).

A conversion is *exact*, a *promotion* (int32 -> int64, float32 -> float64), *safe*
(int32 -> float64) or *unsafe* (float64 -> int64): Numba's casting graph, closed over
paths (a path is as bad as its worst step; the best path counts). A call picks the
signature whose conversions are best: fewest unsafe, then fewest safe, then fewest
promotions; the first declared among equals (Numba resolves such ties too).

>>> from metalbench import types as T
>>> kind(T.int32, T.float64), kind(T.int64, T.float32), kind(T.float32, T.float64)
('safe', 'unsafe', 'promote')
"""
from __future__ import annotations

from .. import types as T

KINDS = ("exact", "promote", "safe", "unsafe")

# (from, to, kind of from -> to, kind of to -> from): Numba's default casting rules
_EDGES = [
    ("bool", "int8", 2, 3), ("bool", "uint8", 2, 3),
    ("int8", "int16", 1, 3), ("uint8", "uint16", 1, 3), ("int16", "int32", 1, 3), ("uint16", "uint32", 1, 3),
    ("int32", "int64", 1, 3), ("uint32", "uint64", 1, 3),
    ("uint8", "int16", 2, 3), ("uint16", "int32", 2, 3), ("uint32", "int64", 2, 3),
    ("int8", "float16", 2, 3), ("int16", "float32", 2, 3), ("int32", "float64", 2, 3),
    ("int16", "float16", 3, 3), ("int32", "float32", 3, 3),
    ("int64", "float64", 2, 3), ("uint64", "float64", 2, 3),
    ("float16", "float32", 1, 3), ("float32", "float64", 1, 3),
]


def _closure() -> dict:
    names = sorted({a for e in _EDGES for a in e[:2]})
    best = {(a, a): 0 for a in names}
    for a, b, fwd, bwd in _EDGES:
        best[(a, b)] = min(best.get((a, b), 9), fwd)
        best[(b, a)] = min(best.get((b, a), 9), bwd)
    for m in names:                 # the best path's worst step (Floyd-Warshall on min/max)
        for a in names:
            for b in names:
                if (a, m) in best and (m, b) in best:
                    k = max(best[(a, m)], best[(m, b)])
                    if k < best.get((a, b), 9):
                        best[(a, b)] = k
    return best


_BEST = _closure()


def kind(src: T.ScalarType, dst: T.ScalarType) -> str | None:
    """The kind of Numba's conversion from ``src`` to ``dst`` (None: none exists)."""
    k = _BEST.get((src.name, dst.name))
    return None if k is None else KINDS[k]


def rating(arg_types, param_types):
    """``(unsafe, safe, promote)`` counts of converting ``arg_types`` to ``param_types``
    (each a ScalarType, or ``("array", elem, ndim)`` which must match exactly; None for
    an argument that is neither), or None when one cannot convert."""
    counts = [0, 0, 0, 0]
    if len(arg_types) != len(param_types):
        return None
    for a, p in zip(arg_types, param_types):
        if isinstance(a, tuple) or isinstance(p, tuple):
            if a != p:
                return None
            continue
        if a is None or p is None:
            return None
        if a == p:
            counts[0] += 1
            continue
        if not (isinstance(a, T.ScalarType) and isinstance(p, T.ScalarType)):
            return None         # complex and other values: only their own type
        k = _BEST.get((a.name, p.name))
        if k is None:
            return None
        counts[k] += 1
    return counts[3], counts[2], counts[1]


def choose(candidates):
    """The index of the best of ``candidates`` (ratings, None where a signature does not
    apply; the first among equals), or None.

    >>> choose([(1, 0, 0), (0, 1, 0), None])
    1
    """
    best = None
    for i, r in enumerate(candidates):
        if r is not None and (best is None or r < candidates[best]):
            best = i
    return best
