"""Checked mode's value-aware findings (a mixin of :class:`metalbench.sim.checks.Checker`).

Several threads writing one element in one barrier interval is a data race, but when they
all write the value the element already holds (``y[j] = 0`` by every lane of a masked
step, a flag set to 1 by many threads) every GPU gives the same result: a lower-severity
finding, ``"same-value write"``, warned about with ``mb.KernelCheckWarning`` instead of
raised. Values compare bit for bit (NaN equals NaN, -0.0 differs from 0.0).

    >>> import numpy as np
    >>> same_bits(np.array([1.0, np.nan, -0.0], np.float32), np.array([1.0, np.nan, 0.0], np.float32)).tolist()
    [True, True, False]
"""
from __future__ import annotations

import numpy as np


def same_bits(a, b) -> np.ndarray:
    """Elementwise: ``a`` and ``b`` (one dtype) hold the same bits."""
    a, b = np.asarray(a), np.asarray(b, dtype=np.asarray(a).dtype)
    u = np.dtype(f"u{a.dtype.itemsize}")
    return np.ascontiguousarray(a).view(u) == np.ascontiguousarray(b).view(u)


class ValueChecks:
    """Hooks that look at the values a store writes (``self._wv``, set by ``acc``), and at
    shift counts."""

    def shift(self, a, b, fn, m, k, op, width):
        """C ``<<`` / ``>>`` (``op``, computed by the scalar table's ``fn``, which takes the
        count modulo ``width`` as the printed CUDA does), warning of a count outside
        ``[0, width)`` on an active lane: undefined in MSL, so a GPU may give another value
        (PTX clamps: ``x << 32`` is 0 there)."""
        lanes = self.active_hits((b < 0) | (b >= width), m)
        if lanes is not None:
            count = np.asarray(b)[lanes[0]] if np.ndim(b) else b
            self.o.add("shift count", [k], None, None, [int(count)], lanes + self.base, [op], int(lanes.size),
                       width=width)
        return fn(a, b)

    def active_hits(self, cond, m):
        """The chunk lanes where ``cond`` (per lane, or one bool for all) holds among the active
        ones (mask ``m``: None all, False none), or None when it holds on none."""
        if m is False:
            return None
        if isinstance(cond, np.ndarray):
            if m is not None:
                cond = cond & m
            return np.flatnonzero(cond) if cond.any() else None
        lanes = self._lanes(m) if cond else None
        return lanes if lanes is not None and lanes.size else None

    def _stored(self, lanes, dtype):
        """The current store's values for chunk lanes ``lanes``."""
        v = self._wv
        if isinstance(v, np.ndarray):
            return v[lanes].astype(dtype, copy=False)
        return np.full(len(lanes), v, dtype)

    def _same_as_held(self, data, E, lanes, mask):
        """Per entry of ``E`` (addresses in ``data``, written by chunk lanes ``lanes``):
        where ``mask`` holds, whether the store writes the value the element holds now (the
        last writer's); None when the store's value is unknown."""
        if self._wv is None or data is None:
            return None
        j = np.flatnonzero(mask)
        out = np.zeros(len(E), bool)
        if j.size:
            out[j] = same_bits(data[E[j]], self._stored(lanes[j], data.dtype))
        return out

    def _same_as_lanes(self, la, lb, mask):
        """Where ``mask`` holds, whether the store's lanes ``la`` and ``lb`` write the same
        value (two lanes of one store hitting one element)."""
        v = self._wv
        if v is None:
            return None
        if not isinstance(v, np.ndarray):
            return np.asarray(mask, bool).copy()
        j = np.flatnonzero(mask)
        out = np.zeros(len(la), bool)
        if j.size:
            out[j] = same_bits(v[la[j]], v[lb[j]])
        return out

    def _same_in_store(self, E, lanes, sj, ok):
        """Per lane of one store writing elements ``E`` (``sj``: per lane, the position of the
        lane that wrote its element last): True where every lane writing that element writes
        the same value and ``ok`` holds for all of them (the element held nothing, or the
        value it held)."""
        agree = self._same_as_lanes(lanes, lanes[sj], np.ones(len(E), bool))
        if agree is None:
            return np.zeros(len(E), bool)
        bad = np.unique(E[~(agree & ok)])
        return ~np.isin(E, bad)

    def _uninit_output(self, name, data, addr, lo, m, k, access):
        """An output launched without ``init_value``: its memory is garbage on a GPU until a
        thread writes it. A plain store, atomic store or exchange defines the element; a
        read, atomic load or read-modify-write of an element no thread has defined yet is
        an ``"uninitialised read"`` (once per element)."""
        o = self.o
        done = o.uninit[name]
        if done is None:
            done = o.uninit[name] = np.zeros(data.size, bool)
        if lo is not None:
            E = np.arange(lo, lo + self.L, dtype=np.int64)
            if m is not None:
                E = E[m]
            lanes = E - lo
        else:
            lanes = self._lanes(m)
            E = (addr.astype(np.int64, copy=False)[lanes] if m is not None else addr.astype(np.int64, copy=False)) \
                if isinstance(addr, np.ndarray) else np.full(lanes.size, int(addr), np.int64)
        op = getattr(self.nodes[k][0], "op", None) if access == "atomic" else None
        if access == "write" or op in ("store", "exchange"):
            done[E] = True
            return
        fresh = ~done[E]
        if fresh.any():
            j = np.flatnonzero(fresh)
            elems, first = np.unique(E[j], return_index=True)  # counted once per element
            o.add("uninitialised read", [k], name, "device", elems[:1], lanes[j[first]] + self.base, [access],
                  int(elems.size))
            done[elems] = True
