"""SIMD-group functions over 32-lane groups of a chunk.

Simdgroups are linear over ``thread_index_in_threadgroup``; a threadgroup whose size is
not a multiple of 32 ends with a partial simdgroup (48 threads: 32 + 16). Values are
viewed as ``(simdgroups, 32)``; lanes that do not exist (past the end of a partial
simdgroup or a partial threadgroup) are padding.

Conventions where Metal leaves things open:
- reductions, scans, votes and ``broadcast_first`` see only *active* lanes (lanes
  masked off by divergence or padding contribute the operation's identity);
- shuffles read the source lane's current value whether or not it is active (in
  lockstep every existing lane has one); a source lane that does not exist gives 0;
  a source outside 0..31 for ``shuffle_up``/``shuffle_down`` leaves the caller's
  own value; lane indices of ``shuffle``/``broadcast``/``xor`` are taken modulo 32.

    >>> import numpy as np
    >>> lay = SimdLayout(groups=1, tg=48, exist=None)
    >>> r = reduce(lay, "simd_sum", np.ones(48, np.int32), None)
    >>> int(r[0]), int(r[40])
    (32, 16)
"""
from __future__ import annotations

import numpy as np

W = 32


class SimdLayout:
    """How the lanes of a chunk of ``groups`` threadgroups of ``tg`` threads map to
    ``(simdgroups, 32)``."""

    def __init__(self, groups: int, tg: int, exist):
        self.L = groups * tg
        s = -(-tg // W)
        self.direct = tg % W == 0
        if self.direct:
            self.E = None if exist is None else exist.reshape(-1, W)
        else:
            t = np.arange(s * W)
            valid = np.broadcast_to(t < tg, (groups, s * W)).reshape(-1, W)
            g = np.arange(groups)[:, None]
            self.idx = (g * tg + np.minimum(t, tg - 1)[None, :]).reshape(-1, W)
            self.back = (g * (s * W) + np.arange(tg)[None, :]).reshape(-1)
            self.E = valid if exist is None else (valid & exist[self.idx])
        self.lane = np.arange(W)[None, :]

    def view(self, v):
        """``v`` (scalar or lane vector) as ``(simdgroups, 32)``."""
        if not isinstance(v, np.ndarray):
            v = np.full(self.L, v)
        return v.reshape(-1, W) if self.direct else v[self.idx]

    def mask(self, m):
        """The active lanes as ``(simdgroups, 32)`` bool, or None when all are active."""
        if m is None:
            return self.E
        if m is False:
            m = np.zeros(self.L, bool)
        mm = m.reshape(-1, W) if self.direct else m[self.idx]
        return mm if self.E is None else (mm & self.E)

    def unview(self, r):
        """A ``(simdgroups, 32)`` result back as a lane vector."""
        r = r.reshape(-1)
        return r if self.direct else r[self.back]


def _identity(name, dt):
    if name in ("simd_sum", "simd_or", "simd_xor"):
        return dt.type(0)
    if name == "simd_product":
        return dt.type(1)
    if name == "simd_and":
        return ~dt.type(0) if dt.kind in "iu" else dt.type(1)
    if dt.kind == "f":
        return dt.type(-np.inf if name == "simd_max" else np.inf)
    info = np.iinfo(dt)
    return dt.type(info.min if name == "simd_max" else info.max)


def _acc_dtype(dt):
    # half and bfloat accumulate in float32, as the GPU's ALUs do
    return np.dtype(np.float32) if dt.kind == "f" else dt


_RED = {"simd_sum": np.add, "simd_product": np.multiply, "simd_max": np.maximum,
        "simd_min": np.minimum, "simd_and": np.bitwise_and, "simd_or": np.bitwise_or,
        "simd_xor": np.bitwise_xor}


def reduce(lay: SimdLayout, name: str, v, m):
    """``simd_sum`` and kin: the reduction over the active lanes, on every lane."""
    V = lay.view(v)
    dt = V.dtype
    M = lay.mask(m)
    if M is not None:
        V = np.where(M, V, _identity(name, dt))
    uf = _RED[name]
    if dt.kind == "b":
        uf = {np.add: np.logical_or, np.multiply: np.logical_and, np.maximum: np.logical_or,
              np.minimum: np.logical_and}.get(uf, uf)
        r = uf.reduce(V, axis=1)
    elif uf in (np.add, np.multiply):
        r = uf.reduce(V, axis=1, dtype=_acc_dtype(dt)).astype(dt)
    else:
        r = uf.reduce(V, axis=1)
    return lay.unview(np.broadcast_to(r[:, None], V.shape))


def scan(lay: SimdLayout, name: str, v, m):
    """Inclusive/exclusive prefix sums and products over the active lanes."""
    V = lay.view(v)
    dt = V.dtype
    M = lay.mask(m)
    prod = "product" in name
    ident = dt.type(1 if prod else 0)
    if M is not None:
        V = np.where(M, V, ident)
    acc = _acc_dtype(dt)
    if "exclusive" in name:
        V = np.concatenate([np.full((V.shape[0], 1), ident, dt), V[:, :-1]], axis=1)
    r = (np.cumprod if prod else np.cumsum)(V, axis=1, dtype=acc).astype(dt)
    return lay.unview(r)


def _gather(lay, V, src, own_if_out):
    src = np.asarray(src, np.int64)
    if src.ndim == 0:
        src = np.broadcast_to(src, V.shape)
    inside = (src >= 0) & (src < W)
    s = np.where(inside, src, 0)
    r = np.take_along_axis(V, s, axis=1)
    if lay.E is not None:
        r = np.where(np.take_along_axis(lay.E, s, axis=1), r, V.dtype.type(0))
    if own_if_out:
        r = np.where(inside, r, V)
    return r


def _delta(lay, d):
    if isinstance(d, np.ndarray):
        return lay.view(d).astype(np.int64)
    return np.int64(d)


def shuffle(lay: SimdLayout, name: str, v, d, m):
    """``simd_shuffle``, ``_up``, ``_down``, ``_xor``, ``_rotate_up/_down``, ``simd_broadcast``."""
    V = lay.view(v)
    d = _delta(lay, d)
    lane = lay.lane
    if lay.E is None and not isinstance(d, np.ndarray) and name in ("simd_shuffle_down", "simd_shuffle_up") \
            and 0 <= d < W:
        # a uniform shift of whole simdgroups: column slices, the edge lanes keep their value
        r = V.copy()
        if d:
            if name == "simd_shuffle_down":
                r[:, :W - d] = V[:, d:]
            else:
                r[:, d:] = V[:, :W - d]
        return lay.unview(r)
    if name in ("simd_shuffle", "simd_broadcast"):
        r = _gather(lay, V, d & 31, False)
    elif name == "simd_shuffle_up":
        r = _gather(lay, V, lane - d, True)
    elif name == "simd_shuffle_down":
        r = _gather(lay, V, lane + d, True)
    elif name == "simd_shuffle_xor":
        r = _gather(lay, V, (lane ^ d) & 31, False)
    elif name == "simd_shuffle_rotate_up":
        r = _gather(lay, V, (lane - d) % W, False)
    elif name == "simd_shuffle_rotate_down":
        r = _gather(lay, V, (lane + d) % W, False)
    else:  # pragma: no cover - the table in builtins.py lists every name
        raise NotImplementedError(name)
    return lay.unview(r)


def _first(M, shape):
    if M is None:
        return np.zeros(shape[0], np.int64)
    return np.argmax(M, axis=1)


def other(lay: SimdLayout, name: str, args, m):
    """``simd_broadcast_first``, ``simd_all``, ``simd_any``, ``simd_ballot``, ``simd_is_first``."""
    M = lay.mask(m)
    if name == "simd_is_first":
        shape = (lay.L // W if lay.direct else lay.idx.shape[0], W)
        f = _first(M, shape)
        return lay.unview(lay.lane == f[:, None])
    V = lay.view(args[0])
    if name == "simd_broadcast_first":
        f = _first(M, V.shape)
        r = V[np.arange(V.shape[0]), f]
        return lay.unview(np.broadcast_to(r[:, None], V.shape))
    B = V if M is None else (V & M)
    if name == "simd_all":
        r = (V | ~M).all(axis=1) if M is not None else V.all(axis=1)
    elif name == "simd_any":
        r = B.any(axis=1)
    elif name == "simd_ballot":
        r = (B.astype(np.uint64) << lay.lane.astype(np.uint64)).sum(axis=1, dtype=np.uint64)
    else:  # pragma: no cover
        raise NotImplementedError(name)
    return lay.unview(np.broadcast_to(r[:, None], V.shape))
