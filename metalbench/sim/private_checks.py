"""Checked mode's findings about one thread's own accesses (a mixin of
:class:`metalbench.sim.checks.Checker`):

- ``"uninitialised read"`` of a thread-local array (``float vals[4];`` in MSL, the DSL's and
  Numba's local arrays): an element this thread has not written holds whatever the
  private memory held on a GPU (zeros on the simulator). An array with an initialiser
  (``= {0}``, ``= {}``) is written whole at its declaration; stores through any name or
  pointer into it, and through a device function's pointer parameter, write elements.
- ``"misaligned vector access"`` (a warning): a vector read or written through a pointer
  whose type Metal requires aligned (``*(const device float4*)(x + 2)``: 16 bytes) at an
  address that is not; undefined on a GPU, the simulator accesses the elements. The front
  end marks such accesses (``ir.Load.vector``) with the alignment of its layout rule.

    >>> import numpy as np
    >>> from metalbench import ir, types as T
    >>> from metalbench.sim.chunk import Launch, Chunk
    >>> from metalbench.sim.checks import LaunchChecker
    >>> lg = Launch((2, 1, 1), (2, 1, 1)); c = Chunk(lg, 0, 1)
    >>> rd = ir.Load("v", ir.Const(1, T.int32), T.float32)
    >>> lc = LaunchChecker(lg, [(rd, "v", "thread", "read"), (None, "v", "thread", "write")], None)
    >>> ck = lc.chunk(c); arr = np.zeros((4, 2), np.float32); ck.loc_decl(arr, "v")
    >>> ck.acc_loc(1, arr, 0, 4, None); ck.acc_loc(0, arr, 0, 4, None); ck.acc_loc(0, arr, 1, 4, None)
    >>> [(f.kind, f.buffer, f.index, f.count) for f in lc.findings]
    [('uninitialised read', 'v', [1], 2)]
"""
from __future__ import annotations

import weakref

import numpy as np


def _per_lane(idx, ln):
    """``idx`` (a lane vector or one number) at chunk lanes ``ln``, as int64."""
    if isinstance(idx, np.ndarray) and idx.ndim:
        if ln.size == idx.size:     # every lane
            return idx.astype(np.int64, copy=False)
        return idx[ln].astype(np.int64, copy=False)
    return np.full(ln.size, int(idx), np.int64)


class _Tracked:
    """A thread-local array's written flags (``(size, lanes)``, as the array); ``done`` once
    every element of every lane is written (then its accesses cost a lookup only)."""
    __slots__ = ("ref", "w", "name", "done", "wait", "gap")

    def __init__(self, ref, w, name):
        self.ref, self.w, self.name = ref, w, name
        self.done, self.wait, self.gap = False, 1, 1

    def all_written(self) -> bool:
        """Whether every element is written: tested again after 1, 2, 4 ... 64 reads."""
        self.wait -= 1
        if self.wait <= 0:
            self.done = bool(self.w.all())
            self.gap = min(2 * self.gap, 64)
            self.wait = self.gap
        return self.done


class PrivateChecks:
    """Hooks for thread-local arrays and vector alignment (``self._loc``: id of a tracked
    array -> its :class:`_Tracked`)."""

    _loc = None

    def loc_decl(self, arr, name):
        """A thread-local array declared without an initialiser: nothing written yet."""
        loc = self._loc
        if loc is None:
            loc = self._loc = {}
        key = id(arr)
        loc[key] = _Tracked(weakref.ref(arr, lambda _r, key=key, loc=loc: loc.pop(key, None)),
                            np.zeros(arr.shape, bool), name)

    def _tracked(self, arr):
        ent = self._loc.get(id(arr))
        return ent if ent is not None and ent.ref() is arr else None

    def acc_loc(self, k, arr, idx, n, m, src=None):
        """An access of element ``idx`` of thread-local array ``arr`` (``(size, lanes)``);
        ``src``: for a store copying element ``j`` of thread-local array ``a``, ``(a, j)``:
        the element is written where that one was."""
        self.acc(k, idx, n, m)
        if m is False or not self._loc:
            return
        ent = self._tracked(arr)
        if ent is None or ent.done:
            return
        read = self.nodes[k][3] == "read"
        if read and ent.all_written():
            return
        if src is None and not (isinstance(idx, np.ndarray) and idx.ndim):
            row = ent.w[int(idx)]           # one element for every lane (a uniform index): its row
            if not read:
                if m is None:
                    row[:] = True
                else:
                    row[m] = True
            elif not (row.all() if m is None else row[m].all()):
                ln = self._lanes(m)
                j = np.flatnonzero(~row[ln])
                self.o.add("uninitialised read", [k], ent.name, "thread", [int(idx)], ln[j] + self.base, ["read"],
                           int(j.size))
            return
        ln = self._lanes(m)
        E = _per_lane(idx, ln)
        F = E * arr.shape[1] + ln
        s = None if src is None else self._tracked(src[0])
        if s is not None:
            ent.w.reshape(-1)[F] = s.w[_per_lane(src[1], ln), ln]
        else:
            self._loc_cells(k, ent, F, ln, E)

    def loc_ref(self, k, ref, i, m):
        """An access through a device function's pointer parameter into a thread-local array."""
        if m is False or not self._loc:
            return
        arr = ref.flat if id(ref.flat) in self._loc else ref.flat.base
        ent = self._tracked(arr)
        if ent is None or ent.done:
            return
        ln = self._lanes(m)
        F = _per_lane(ref.addr(i), ln)
        self._loc_cells(k, ent, F, ln, F // arr.shape[1])

    def _loc_cells(self, k, ent, F, lanes, E):
        """Flat cells ``F`` of a tracked array (elements ``E``) accessed by chunk lanes ``lanes``."""
        w = ent.w.reshape(-1)
        if self.nodes[k][3] != "read":      # a store (or an atomic) writes the element
            w[F] = True
            return
        if ent.all_written():
            return
        unw = ~w[F]
        if unw.any():
            j = np.flatnonzero(unw)
            self.o.add("uninitialised read", [k], ent.name, "thread", E[j[:1]], lanes[j] + self.base, ["read"],
                       int(j.size))

    def align(self, k, rel, size, align, m, vtype, name):
        """A vector access at element ``rel`` (``size`` bytes each) of ``name``: a warning for
        the active lanes whose byte offset is not a multiple of ``align``."""
        if m is False:
            return
        if isinstance(rel, np.ndarray) and rel.ndim:
            ln = self._lanes(m)
            b = rel[ln].astype(np.int64, copy=False) * size
        else:
            b = np.int64(int(rel) * size)
            if b % align == 0:
                return
            ln = self._lanes(m)
            b = np.full(ln.size, b, np.int64)
        bad = b % align != 0
        if not bad.any():
            return
        j = np.flatnonzero(bad)
        _, _, space, access = self.nodes[k]
        self.o.add("misaligned vector access", [k], name, space, [int(b[j[0]]) // size], ln[j] + self.base,
                   [access], int(j.size), vtype=vtype, align=int(align), byte=int(b[j[0]]))
