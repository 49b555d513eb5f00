"""Checked mode's barriers, fences and SIMD-group functions: which memory a
``threadgroup_barrier``, ``simdgroup_barrier``, ``atomic_thread_fence`` or ``simd_sum`` orders,
and between which threads (a mixin of :class:`metalbench.sim.checks.Checker`).

Metal's ``mem_flags`` decide it, and the race checker follows them:

- ``threadgroup_barrier(mem_flags::mem_threadgroup)`` ends the barrier interval of
  threadgroup memory only: a device write before it and another thread's device read
  after it are still a race;
- ``mem_device`` ends the device-memory interval only (within the threadgroup: threads
  of different threadgroups are never ordered by a barrier); both flags (``mem_device |
  mem_threadgroup``, CUDA's ``__syncthreads()``, Numba's ``cuda.syncthreads()``) end both;
- ``mem_none`` orders no memory: the threads wait for each other, but their accesses on
  either side may still race;
- ``simdgroup_barrier(flags)`` orders the memory its flags name between the lanes of one
  simdgroup;
- a SIMD-group function (``simd_sum``/``prod``/``min``/``max``/``and``/``or``/``xor``, the prefix
  scans, ``simd_broadcast(_first)``, ``simd_shuffle*``, ``simd_ballot``, ``simd_all``/``any``,
  ``simd_is_first``, a SIMD-group matrix product: every builtin whose ``collective`` is
  ``"simdgroup"``) orders threadgroup and device memory between the lanes that run it: it
  combines their values, so they all arrive, and what a lane accessed before it happens
  before what another of them accesses after it. ``quad_*`` functions do the same for the
  lanes of one quad-group. Lanes of other SIMD-groups stay unordered: reading ``s[0]`` in
  SIMD-group 0, ``simd_sum``, then writing ``s[0]`` from SIMD-group 1 is still a race.
  A call counts for a SIMD-group (quad-group) only when all its existing lanes run it; a
  divergent ``simd_sum`` under ``if (lane < 16)`` orders the quad-groups it holds whole
  (the checker does not follow orderings between a subset of lanes beyond that).

Both are counted per lane (:meth:`SyncChecks._order_lanes`): the lane's SIMD-group's
ordering points in the high 32 bits, its quad-group's in the low 32 (a SIMD-group's point is
also one of each of its quad-groups). Every lane of a group holds the group's count, so two
accesses by lanes of one group are ordered when their counts differ.

The DSL's ``threadgroup_barrier()`` without arguments is
``threadgroup_barrier(mem_flags::mem_threadgroup)`` (what it prints as); its
``simdgroup_barrier()`` is ``simdgroup_barrier(mem_flags::mem_none)``.

Flags are passed as bits: 1 threadgroup memory, 2 device memory (:func:`mem_bits`).

    >>> mem_bits(("mem_device", "mem_threadgroup")), mem_bits(("mem_none",)), mem_bits(("mem_threadgroup",))
    (3, 0, 1)
"""
from __future__ import annotations

import numpy as np

from .findings import DivergentBarrier


_SG_STEP = (1 << 32) + 1  # one ordering point of a whole simdgroup (and so of each of its quad-groups)


def _ordered(ta, va, tb, vb):
    """Whether threads ``ta``, ``tb`` (indices in one threadgroup) whose accesses carried the
    counts ``va``, ``vb`` (:meth:`SyncChecks._order_lanes`) are ordered: one quad-group with an
    ordering point of it between them, or one simdgroup with a simdgroup one (which also
    changes the quad-group count: ``va != vb`` holds in both cases).

        >>> import numpy as np
        >>> S = 1 << 32
        >>> _ordered(np.array([0, 0, 0, 0]), np.array([0, 1, S + 1, 1]), np.array([1, 4, 4, 33]), np.array([1, 0, 0, 0]))
        array([ True, False,  True, False])
    """
    va, vb = np.asarray(va, np.int64), np.asarray(vb, np.int64)
    d = va != vb
    if not d.any():
        return d
    ta, tb = np.asarray(ta, np.int64), np.asarray(tb, np.int64)
    return d & (((ta >> 2) == (tb >> 2)) | (((ta >> 5) == (tb >> 5)) & ((va >> 32) != (vb >> 32))))


def mem_bits(flags) -> int:
    """The memory a barrier's or fence's ``mem_flags`` order: 1 threadgroup, 2 device."""
    return (1 if "mem_threadgroup" in flags else 0) | (2 if "mem_device" in flags else 0)


class SyncChecks:
    """``barrier``, ``simd_barrier`` and ``fence`` hooks (state lives in the Checker)."""

    def barrier(self, m, k, mem=3):
        """Every existing thread of a threadgroup must reach a barrier, or none; the
        barrier ends the interval of the memory ``mem`` names (1 threadgroup, 2 device)."""
        if m is False:
            return
        if m is not None:
            act = np.count_nonzero(m.reshape(self.G, self.TG), axis=1)
            ex = self._ex
            if ex is None:
                ex = self._ex = (np.full(self.G, self.TG) if self.exist is None
                                 else np.count_nonzero(self.exist.reshape(self.G, self.TG), axis=1))
            bad = np.flatnonzero((act > 0) & (act < ex))
            if bad.size:
                raise DivergentBarrier(k, bad, m)
            if not act.any():
                return
        if not mem:
            return
        self._flush(mem)
        self.o.ivl += 1
        if mem & 1:
            self.ep = self.o.ivl
        if mem & 2:
            self.epd = self.o.ivl

    def simd_barrier(self, m, k, mem=1):
        """A simdgroup_barrier: accesses of one simdgroup before it are ordered with those
        after it, for the memory ``mem`` names (other simdgroups stay unordered). Every lane
        of a simdgroup must reach it, so a simdgroup with any active lane counts as whole."""
        if m is not False and mem:
            self._order_lanes(m, 32, mem, any_lane=True)

    def simd_sync(self, m, width=32):
        """A SIMD-group function (``width`` 32: ``simd_sum``, ``simd_shuffle``, ``simd_ballot``,
        a SIMD-group matrix product ...) or quad-group function (4: ``quad_sum`` ...) run by
        the active lanes of ``m``. It combines values of the lanes that run it, so they all
        arrive there: what a lane accessed before it happens before what another of those
        lanes accesses after it, in threadgroup and device memory alike. Only a SIMD-group
        (quad-group) whose existing lanes are all active counts; a divergent call orders the
        quad-groups it holds whole."""
        if m is not False:
            self._order_lanes(m, width, 3)

    def _order_lanes(self, m, width, mem, any_lane=False):
        """Count an ordering point of the active lanes of ``m`` per lane (``self.sv`` for
        threadgroup memory, ``self.svd`` for device memory): the simdgroup's count in the high
        32 bits, its quad-groups' in the low 32. Every lane of a simdgroup (quad-group) holds
        the same count, so two accesses of its lanes are ordered when their counts differ."""
        lay = self.c.simd()
        M = lay.mask(m)
        if M is None:
            inc = _SG_STEP if width == 32 else 1
        else:
            ok = M if lay.E is None else (M | ~lay.E)   # active, or no thread at all
            quads = ok.reshape(ok.shape[0], -1, 4).all(axis=2)
            inc = np.repeat(quads, 4, axis=1).astype(np.int64)
            if width == 32:
                whole = M.any(axis=1) if any_lane else ok.all(axis=1)
                inc = np.where(whole[:, None], _SG_STEP, inc)
            inc = lay.unview(inc)
        for bit, attr in ((1, "sv"), (2, "svd")):
            if mem & bit:
                cur = getattr(self, attr)
                if cur is None:
                    cur = np.zeros(self.L, np.int64)
                    setattr(self, attr, cur)
                cur += inc

    def _simd_ordered(self, a, va, b, vb):
        """Lane pairs of one simdgroup (quad-group) with an ordering point of it between their
        accesses (lanes are chunk lanes of one threadgroup; ``a`` may hold -1 for none;
        ``va``/``vb`` their counts from :meth:`_order_lanes`)."""
        t = self.c.t_lane
        ta, tb = t[np.maximum(a, 0)], t[b]
        return _ordered(ta, va, tb, vb)

    def _simd_ordered_dev(self, a, va, b, vb):
        """:meth:`_simd_ordered` for device records, whose thread ids are global
        (threadgroup * TG + index in it)."""
        TG = self.TG
        return (a // TG == b // TG) & _ordered(a % TG, va, b % TG, vb)

    # -- device-scope fences
    def fence(self, m):
        """``atomic_thread_fence(mem_device, ..., thread_scope_device)`` by the active lanes
        of ``m``: counted per thread for :meth:`_fenced`."""
        if m is False:
            return
        o = self.o
        if o.fc is None:
            o.fc = np.zeros(o.launch.n_groups * o.TG, np.int32)
        ids = self._lanes(m) + self.base
        o.fc[ids] += 1

    def _fenced(self, a, wfc, b):
        """Pairs (a wrote an element when its fence count was ``wfc``; b accessed it) that
        device fences order: ``a`` fenced after its write (a release) and ``b`` fenced before
        its access (an acquire). The checker does not follow which atomic flag carries the
        handshake between the two fences: it trusts that one does."""
        fc = self.o.fc
        a = np.asarray(a)
        valid = a >= 0
        a0 = np.where(valid, a, 0)
        return valid & (fc[a0] > wfc) & (fc[np.asarray(b)] > 0)

    # -- SIMD shuffles
    def shuffle(self, k, mode, lay, d, m):
        """``simd_shuffle*``/``simd_broadcast`` (``mode``: see ``sim.simd._SOURCE``) by the
        active lanes of ``m``: a source lane that is inactive (masked off by divergent
        control flow, or past the threads of a partial SIMD-group) gives an undefined value
        on Metal: a finding. Sources outside 0..31 of ``up``/``down`` keep the lane's own
        value (no read)."""
        if m is False:
            return
        from .simd import _SOURCE, _delta
        M = lay.mask(m)
        if M is None:
            return
        src_fn, own = _SOURCE[mode]
        src = np.asarray(src_fn(lay.lane, _delta(lay, d)), np.int64)
        src = np.broadcast_to(src, M.shape)
        inside = (src >= 0) & (src < 32)
        ok = np.take_along_axis(M, np.where(inside, src, 0), axis=1)
        bad = M & inside & ~ok
        if not bad.any():
            return
        lanes = np.flatnonzero(lay.unview(bad))
        s = np.where(bad, src, -1).reshape(-1)
        first = int(s[np.flatnonzero(s >= 0)[0]])
        self.o.add("inactive lane read", [k], None, None, [first], lanes + self.base, ["shuffle"], int(lanes.size),
                   builtin=getattr(self.nodes[k][0], "name", "simd_shuffle"))
