"""Atomic read-modify-write operations on lane vectors.

The result equals the sequential execution of the active lanes in lane order: lanes
hitting one address see, as their old value, the value after all earlier lanes' updates.
No loop runs over threads: integer add/sub and exchange use a sort by address and a
segmented prefix scan; other operations whose old value is used (min, max, bit ops,
float add with many lanes per address, cas) loop over the *rank within an address*, so
the loop count is the largest number of lanes that hit one address::

    >>> import numpy as np
    >>> d = np.zeros(2, np.int32)
    >>> atomic("add", d, np.array([0, 1, 0, 0]), [np.int32(1)], None, 4, 0).tolist()
    [0, 0, 1, 2]
    >>> d.tolist()
    [3, 1]
"""
from __future__ import annotations

import numpy as np

from .memory import OutOfBounds

_AT = {"add": np.add, "sub": np.subtract, "min": np.minimum, "max": np.maximum,
       "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


def _lanes(x, lanes, n, dt=None):
    if isinstance(x, np.ndarray):
        return x if lanes is None else x[lanes]
    return np.full(n, x, dtype=dt)


def _apply(op, cur, v):
    if op == "exchange" or op == "store":
        return v
    uf = _AT[op]
    if cur.dtype.kind == "b":
        uf = {np.add: np.logical_or, np.bitwise_and: np.logical_and,
              np.bitwise_or: np.logical_or, np.bitwise_xor: np.logical_xor}.get(uf, uf)
    return uf(cur, v).astype(cur.dtype, copy=False)


def atomic(op, data, addr, args, m, L, k, used=True, rel=None, n=None, ob=None):
    """Run atomic ``op`` on ``data[addr]`` for the active lanes of ``m``; return the old
    values per lane (0 on inactive lanes). ``args`` is ``[value]``, ``[expected,
    desired]`` for cas and ``[]`` for load. With ``used=False`` the old values are not
    computed (an atomic in statement position), which is the fast ``ufunc.at`` path.
    ``rel``/``n``: the index within its array and the array's size (default: ``addr`` in
    ``data``); a lane outside does nothing and gets 0, counted in ``ob`` (an
    :class:`~metalbench.sim.memory.OOBCount`; without one it raises ``OutOfBounds``)."""
    dt = data.dtype
    if m is False:
        return dt.type(0)
    if rel is None:
        rel, n = addr, data.size
    lanes = None if m is None else np.flatnonzero(m)
    cnt = L if lanes is None else lanes.size
    r = _lanes(rel, lanes, cnt)
    if cnt and (int(r.min()) < 0 or int(r.max()) >= n):
        bad = (r < 0) | (r >= n)
        if ob is None:
            raise OutOfBounds(k, addr, None, n)
        ob.add(k, int(np.count_nonzero(bad)), r[np.flatnonzero(bad)[0]], n)
        keep = np.flatnonzero(~bad)
        lanes = keep if lanes is None else lanes[keep]
        cnt = lanes.size
    a = _lanes(addr, lanes, cnt, np.int64)
    old = _run(op, data, a, [_lanes(x, lanes, cnt, dt).astype(dt, copy=False) for x in args], used)
    if old is None:
        return dt.type(0)
    if lanes is None:
        return old
    out = np.zeros(L, dt)
    out[lanes] = old
    return out


def _run(op, data, a, args, used):
    n = a.size
    if op == "load":
        return data[a]
    if not used and op in _AT and data.dtype.kind != "b":
        _AT[op].at(data, a, args[0])
        return None
    if n == 0:
        return np.zeros(0, data.dtype)
    order = np.argsort(a, kind="stable")
    sa = a[order]
    new = np.empty(n, bool)
    new[0] = True
    np.not_equal(sa[1:], sa[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    seg = np.cumsum(new) - 1
    last = np.append(starts[1:] - 1, n - 1)
    sargs = [x[order] for x in args]
    old_s = np.empty(n, data.dtype)
    dt = data.dtype

    if op in ("exchange", "store"):
        v = sargs[0]
        old_s[starts] = data[sa[starts]]
        rest = ~new
        old_s[rest] = v[:-1][rest[1:]]
        data[sa[last]] = v[last]
    elif op in ("add", "sub") and dt.kind in "iu":
        v = sargs[0] if op == "add" else (np.zeros(1, dt) - sargs[0]).astype(dt)
        cs = np.cumsum(v, dtype=dt)
        excl = cs - v
        prefix = excl - excl[starts][seg]
        init = data[sa]
        old_s[:] = init + prefix
        data[sa[last]] = old_s[last] + v[last]
    else:
        rank = np.arange(n) - starts[seg]
        top = int(rank.max())
        if op in ("add", "sub") and top > 64:
            # Many lanes per address: a float64 segmented scan (rounded once at the end)
            # instead of a long loop; it is a valid order up to float32 rounding.
            v = sargs[0].astype(np.float64)
            if op == "sub":
                v = -v
            cs = np.cumsum(v)
            excl = cs - v
            prefix = excl - excl[starts][seg]
            init = data[sa].astype(np.float64)
            old_s[:] = (init + prefix).astype(dt)
            data[sa[last]] = (init[last] + prefix[last] + v[last]).astype(dt)
        else:
            for r in range(top + 1):
                idx = np.flatnonzero(rank == r)
                aa = sa[idx]
                cur = data[aa]
                old_s[idx] = cur
                if op == "cas":
                    # compare-exchange compares the bits (NaN matches NaN, -0.0 is not 0.0), as GPUs do
                    exp = sargs[0][idx]
                    ok = cur.view(f"u{dt.itemsize}") == exp.view(f"u{dt.itemsize}") if dt.kind == "f" \
                        else cur == exp
                    data[aa] = np.where(ok, sargs[1][idx], cur)
                else:
                    data[aa] = _apply(op, cur, sargs[0][idx])
    old = np.empty(n, dt)
    old[order] = old_s
    return old
