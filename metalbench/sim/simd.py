"""SIMD-group lane machinery over 32-lane groups of a chunk (the builtins that use it
are declared in ``metalbench/builtins/simd.py``).

Simdgroups are linear over ``thread_index_in_threadgroup``; a threadgroup whose size is
not a multiple of 32 ends with a partial simdgroup (48 threads: 32 + 16). Values are
viewed as ``(simdgroups, 32)``; lanes that do not exist (past the end of a partial
simdgroup or a partial threadgroup) are padding.

Quad-groups are the simdgroup's groups of 4 lanes (``lane & ~3``): the ``quad_*``
reductions and scans are the simdgroup ones over ``width=4``, the quad shuffles are
shuffle modes whose source lane stays in the caller's quad (``quad_index`` & co.).

Conventions where Metal leaves things open:
- reductions, scans, votes and ``broadcast_first`` see only *active* lanes (lanes
  masked off by divergence or padding contribute the operation's identity), as
  Metal specifies for SIMD-group and quad-group reductions;
- shuffles read the source lane's current value whether or not it is active (in
  lockstep every existing lane has one); a source lane that does not exist gives 0;
  a source outside 0..31 for ``shuffle_up``/``shuffle_down`` leaves the caller's
  own value; lane indices of ``shuffle``/``broadcast``/``xor`` are taken modulo 32.

    >>> import numpy as np
    >>> lay = SimdLayout(groups=1, tg=48, exist=None)
    >>> r = reduce(lay, "sum", np.ones(48, np.int32), None)
    >>> int(r[0]), int(r[40])
    (32, 16)
    >>> q = reduce(lay, "max", np.arange(48, dtype=np.int32), np.arange(48) % 4 != 3, width=4)
    >>> q[:8].tolist()
    [2, 2, 2, 2, 6, 6, 6, 6]
"""
from __future__ import annotations

import numpy as np

W = 32
Q = 4               # lanes of a quad-group


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


def _is_float(dt) -> bool:
    return dt.kind == "f" or dt.name == "bfloat16"     # ml_dtypes' bfloat16 has kind "V"


def identity(op: str, dt):
    """The identity of reduction ``op`` ("sum", "product", "max", "min", "and", "or", "xor") for ``dt``."""
    if op in ("sum", "or", "xor"):
        return dt.type(0)
    if op == "product":
        return dt.type(1)
    if op == "and":
        return ~dt.type(0) if dt.kind in "iu" else dt.type(1)
    if _is_float(dt):
        return dt.type(-np.inf if op == "max" else np.inf)
    if dt.kind == "b":
        return dt.type(op == "min")
    info = np.iinfo(dt)
    return dt.type(info.min if op == "max" else info.max)


def _acc_dtype(dt):
    # half and bfloat accumulate in float32, as the GPU's ALUs do; double in double
    return np.dtype(np.float32) if _is_float(dt) and dt.itemsize <= 4 else dt


_UFUNC = {"sum": np.add, "product": np.multiply, "max": np.maximum, "min": np.minimum,
          "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}
_BOOL_UFUNC = {"sum": np.logical_or, "product": np.logical_and, "max": np.logical_or,
               "min": np.logical_and, "and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


def reduce(lay: SimdLayout, op: str, v, m, width: int = W):
    """The reduction ``op`` over the active lanes of each group of ``width`` lanes (the
    SIMD-group: ``simd_sum`` & co.; 4: ``quad_sum`` & co.), on every lane."""
    V = lay.view(v)
    dt = V.dtype
    M = lay.mask(m)
    if M is not None:
        V = np.where(M, V, identity(op, dt))
    G = V.reshape(-1, width)
    if dt.kind == "b":
        r = _BOOL_UFUNC[op].reduce(G, axis=1)
    elif op in ("sum", "product"):
        r = _UFUNC[op].reduce(G, axis=1, dtype=_acc_dtype(dt)).astype(dt)
    else:
        r = _UFUNC[op].reduce(G, axis=1)
    return lay.unview(np.broadcast_to(r[:, None], G.shape).reshape(V.shape))


def scan(lay: SimdLayout, product: bool, exclusive: bool, v, m, width: int = W):
    """Inclusive/exclusive prefix sums (or products) over the active lanes of each group
    of ``width`` lanes."""
    V = lay.view(v)
    dt = V.dtype
    M = lay.mask(m)
    ident = dt.type(1 if product else 0)
    if M is not None:
        V = np.where(M, V, ident)
    G = V.reshape(-1, width)
    acc = _acc_dtype(dt)
    if exclusive:
        G = np.concatenate([np.full((G.shape[0], 1), ident, dt), G[:, :-1]], axis=1)
    r = (np.cumprod if product else np.cumsum)(G, axis=1, dtype=acc).astype(dt)
    return lay.unview(r.reshape(V.shape))


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


# How each shuffle mode finds its source lane, and whether a source outside 0..31
# leaves the caller's own value.
_SOURCE = {
    "index": (lambda lane, d: d & 31, False),
    "up": (lambda lane, d: lane - d, True),
    "down": (lambda lane, d: lane + d, True),
    "xor": (lambda lane, d: (lane ^ d) & 31, False),
    "rotate_up": (lambda lane, d: (lane - d) % W, False),
    "rotate_down": (lambda lane, d: (lane + d) % W, False),
    # quad-groups: the source stays in the caller's quad (quad lane indices modulo 4)
    "quad_index": (lambda lane, d: (lane & ~3) | (d & 3), False),
    "quad_xor": (lambda lane, d: lane ^ (d & 3), False),
    "quad_up": (lambda lane, d: np.where((lane & 3) >= d, lane - d, -1), True),
    "quad_down": (lambda lane, d: np.where(d < Q - (lane & 3), lane + d, W), True),
    "quad_rotate_up": (lambda lane, d: (lane & ~3) | ((lane - d) & 3), False),
    "quad_rotate_down": (lambda lane, d: (lane & ~3) | ((lane + d) & 3), False),
}


def shuffle(lay: SimdLayout, mode: str, v, d, m):
    """Reads another lane's value: ``mode`` is one of ``_SOURCE`` (``simd_shuffle`` is
    "index", ``simd_shuffle_up`` "up", ...)."""
    V = lay.view(v)
    d = _delta(lay, d)
    if lay.E is None and not isinstance(d, np.ndarray) and mode in ("down", "up") and 0 <= d < W:
        # a uniform shift of whole simdgroups: column slices, the edge lanes keep their value
        r = V.copy()
        if d:
            if mode == "down":
                r[:, :W - d] = V[:, d:]
            else:
                r[:, d:] = V[:, :W - d]
        return lay.unview(r)
    src, own = _SOURCE[mode]
    return lay.unview(_gather(lay, V, src(lay.lane, d), own))


def _first(M, shape):
    if M is None:
        return np.zeros(shape[0], np.int64)
    return np.argmax(M, axis=1)


def is_first(lay: SimdLayout, m):
    """True on the first active lane of each simdgroup."""
    M = lay.mask(m)
    shape = (lay.L // W if lay.direct else lay.idx.shape[0], W)
    return lay.unview(lay.lane == _first(M, shape)[:, None])


def broadcast_first(lay: SimdLayout, v, m):
    """The first active lane's value, on every lane."""
    M = lay.mask(m)
    V = lay.view(v)
    r = V[np.arange(V.shape[0]), _first(M, V.shape)]
    return lay.unview(np.broadcast_to(r[:, None], V.shape))


def vote(lay: SimdLayout, kind: str, v, m):
    """``kind`` "all", "any" or "ballot" of a condition over the active lanes."""
    M = lay.mask(m)
    V = lay.view(v)
    B = V if M is None else (V & M)
    if kind == "all":
        r = (V | ~M).all(axis=1) if M is not None else V.all(axis=1)
    elif kind == "any":
        r = B.any(axis=1)
    else:
        r = (B.astype(np.uint64) << lay.lane.astype(np.uint64)).sum(axis=1, dtype=np.uint64)
    return lay.unview(np.broadcast_to(r[:, None], V.shape))
