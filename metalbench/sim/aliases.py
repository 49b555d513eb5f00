"""Arrays passed as several arguments: one buffer to the race checker.

A kernel launched as ``k(a, a)`` or on overlapping views (``k[...](a[1:], a[:-1])`` in the
Numba layer, which writes its arguments in place) reads and writes one memory under two
names; a race between a write through one name and a read through the other is a race.
:func:`buffer_aliases` groups the device buffers whose storage overlaps (same element size,
element-aligned) and maps each name to ``(key, offset, extent)``: the group's name (its
member starting lowest in memory), the name's first element within the group, and the
group's size in elements.

    >>> import numpy as np
    >>> a = np.zeros(10, np.float32)
    >>> sorted(buffer_aliases({"x": a[1:], "y": a[:-1], "z": np.zeros(3, np.float32)}).items())
    [('x', ('y', 1, 10)), ('y', ('y', 0, 10))]
"""
from __future__ import annotations


def _span(a):
    start = a.__array_interface__["data"][0]
    return start, start + a.size * a.itemsize


def buffer_aliases(bufs: dict) -> dict:
    """``name -> (key, offset, extent)`` for the buffers that share storage with another
    (``bufs`` maps names to flat NumPy arrays); buffers alone in their memory are absent."""
    items = [(n, a) for n, a in bufs.items() if a.size]
    if len(items) < 2:
        return {}
    spans = sorted((_span(a) + (i, n, a)) for i, (n, a) in enumerate(items))
    groups, cur, end = [], [], -1
    for lo, hi, _i, n, a in spans:
        if cur and lo < end:
            cur.append((lo, n, a))
            end = max(end, hi)
        else:
            if len(cur) > 1:
                groups.append(cur)
            cur, end = [(lo, n, a)], hi
    if len(cur) > 1:
        groups.append(cur)
    out = {}
    for g in groups:
        base, key, a0 = g[0]
        size = a0.itemsize
        if any(a.itemsize != size or (lo - base) % size for lo, _, a in g):
            continue  # reinterpreted storage: each name keeps its own records
        extent = max((lo - base) // size + a.size for lo, _, a in g)
        for lo, n, _a in g:
            out[n] = (key, (lo - base) // size, extent)
    return out
