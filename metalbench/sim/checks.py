"""Checked mode: bounds, data races, uninitialised reads, divergent barriers, runaway
loops and division by zero, plus the memory-access statistics of a launch.

The generated program of a checked kernel calls a per-chunk :class:`Checker` before
every memory access (``acc``/``acc_ref``), at every threadgroup barrier (``barrier``)
and for every integer division (``div``); :class:`LaunchChecker` holds what outlives a
chunk (device-memory access records, findings, statistics).

Thread-local arrays and vector alignment are :mod:`~metalbench.sim.private_checks`.

Race detection is vectorised, never a loop over threads:

- a non-atomic write compares, per element, with the last non-atomic writer recorded
  for that element (thread, barrier interval, node) and with the other lanes of the
  same store (a scatter of lane numbers: a lane whose number got overwritten shares
  its element with a later lane);
- reads and atomics are only logged (index and lane arrays); at the end of each
  barrier interval the log is compared with the last writers of that interval. The
  last writer suffices: an earlier writer of another thread was already a
  write-write race;
- device memory has no grid-wide barrier, so every access is also folded into a
  launch-wide per-element record: the first thread that touched the element, a
  thread of another threadgroup that touched it, and a writer. A writer plus
  accesses from two threadgroups is a race between threadgroups.

A barrier ends the interval of the memory its ``mem_flags`` name, as in Metal:
``mem_threadgroup`` threadgroup memory, ``mem_device`` device memory, ``mem_none``
neither (see :mod:`~metalbench.sim.sync_checks`); a ``simdgroup_barrier`` orders the
memory its flags name within a simdgroup, and a SIMD-group (quad-group) function such as
``simd_sum`` or ``simd_shuffle`` orders both memories between the lanes that run it.
Accesses whose lanes touch ``offset + lane`` (``x[i]``) take O(1) bounds and
coalescing checks and slice updates of the records.

Findings other than out-of-bounds, divergent barriers and runaway loops do not stop the
launch: they are summarised per (kind, buffer, lines) and raised at its end::

    >>> import numpy as np
    >>> from metalbench.sim.chunk import Launch, Chunk
    >>> lg = Launch((4, 1, 1), (4, 1, 1)); c = Chunk(lg, 0, 1)
    >>> lc = LaunchChecker(lg, [(None, "x", "device", "read")], {"x"})
    >>> ck = lc.chunk(c); ck.acc(0, np.arange(4), 4, None); ck.finish()
    >>> lc.stats()["device_reads"], lc.findings
    (4, [])
"""
from __future__ import annotations

import numpy as np

from ..errors import KernelCheckError
from .findings import WARNING_KINDS, CheckFailed, DivergentBarrier, Finding, make_error, max_steps, pool_member
from .memory import OutOfBounds, check
from .private_checks import PrivateChecks
from .records import _DevState, _TgState
from .sync_checks import SyncChecks
from .value_checks import ValueChecks

# Distinct (kind, buffer, lines) findings kept per launch; more are only counted.
MAX_FINDINGS = 64
# Logged reads of one barrier interval before duplicates are merged.
LOG_LIMIT = 1 << 22
_BIG = np.int64(1) << 62


class LaunchChecker:
    """What a checked launch keeps across chunks: device-memory records, findings and
    statistics. ``tracked`` names the device buffers that may be written (only those
    can race); ``None`` tracks all."""

    def __init__(self, launch, nodes, tracked, kernel_name="", aliases=None, uninitialised=()):
        self.launch, self.nodes, self.tracked = launch, nodes, tracked
        self.kernel = kernel_name
        # names passed the same array: one record per group (sim/aliases.py)
        self.aliases = aliases or {}
        if self.aliases and tracked is not None:
            keys = {self.aliases[n][0] for n in tracked if n in self.aliases}
            self.tracked = set(tracked) | {n for n, a in self.aliases.items() if a[0] in keys}
        self.uninit = {n: None for n in uninitialised}  # output -> elements written so far (lazy)
        self.alias_names: dict = {}
        self.pools: dict = {}     # array pool -> the arrays it holds (ir.ArrayDecl.parts)
        for n, (key, _, _) in self.aliases.items():
            self.alias_names.setdefault(key, []).append(n)
        self.TG = launch.TG
        self.ivl = 0
        self.dev: dict = {}
        self._found: dict = {}
        self.dropped = 0
        self.tot = np.zeros(4, np.int64)    # device r/w, threadgroup r/w
        self.maxpt = np.zeros(4, np.int64)  # ... the most by one thread
        self.coal = np.zeros(2, np.int64)   # device lane-accesses in contiguous simdgroup runs, all
        self._ar = None
        self._sg_cache: dict = {}
        self._cnt = None
        self._cnt_dirty = [False] * 4
        self._gid_buf = None
        self.fc = None  # device-scope fences executed, per thread (allocated by the first fence)

    def chunk(self, c) -> "Checker":
        """The checker of chunk ``c`` (call ``finish`` after running it)."""
        return Checker(self, c)

    @property
    def findings(self) -> list:
        return list(self._found.values())

    def stats(self) -> dict:
        t, mx = self.tot, self.maxpt
        return dict(device_reads=int(t[0]), device_writes=int(t[1]),
                    threadgroup_reads=int(t[2]), threadgroup_writes=int(t[3]),
                    max_device_reads_per_thread=int(mx[0]), max_device_writes_per_thread=int(mx[1]),
                    max_threadgroup_reads_per_thread=int(mx[2]),
                    max_threadgroup_writes_per_thread=int(mx[3]),
                    coalesced_accesses=int(self.coal[0]), device_accesses=int(self.coal[1]))

    def positions(self, gt) -> list:
        """``thread_position_in_grid`` of global thread ids (group * TG + local index)."""
        lg = self.launch
        out = []
        nx, ny, _ = lg.ngrp
        for g_t in np.asarray(gt).reshape(-1)[:4]:
            gid, t = divmod(int(g_t), lg.TG)
            gi = (gid % nx, (gid // nx) % ny, gid // (nx * ny))
            ax, ay, _ = (min(tt, g - i * tt) for g, tt, i in zip(lg.grid, lg.tg, gi))
            p = (t % ax, (t // ax) % ay, t // (ax * ay))
            out.append(tuple(i * tt + pp for i, tt, pp in zip(gi, lg.tg, p)))
        return out

    def add(self, kind, k_nodes, buffer, space, index, gthreads, accesses, count, size=None, **extra):
        """Record a finding (merged with an earlier one of the same kind and lines)."""
        key = (kind, buffer, tuple(k_nodes))
        f = self._found.get(key)
        if f is not None:
            f.count += count
            return f
        if len(self._found) >= MAX_FINDINGS:
            self.dropped += count
            return None
        spans = [getattr(self.nodes[k][0], "span", None) for k in k_nodes]
        if buffer in self.pools and len(index):      # the array the user declared, not the pool
            buffer, i0 = pool_member(self.pools[buffer], int(index[0]))
            index = [i0] + [int(i) - int(index[0]) + i0 for i in index[1:]]
        if buffer in self.alias_names and space == "device":
            extra["aliases"] = self.alias_names[buffer]
        f = Finding(kind, buffer, space, [int(i) for i in index], self.positions(gthreads), spans,
                    list(accesses), count, self.kernel, size, extra)
        self._found[key] = f
        return f

    @property
    def errors(self) -> list:
        """The findings that are errors (all but :data:`~metalbench.sim.findings.WARNING_KINDS`)."""
        return [f for f in self._found.values() if f.kind not in WARNING_KINDS]

    @property
    def warnings(self) -> list:
        """Lower-severity findings (warned about with ``mb.KernelCheckWarning``)."""
        return [f for f in self._found.values() if f.kind in WARNING_KINDS]

    def error(self) -> KernelCheckError | None:
        """The error for the findings so far (warnings apart), or None."""
        errs = self.errors
        if not errs:
            return None
        return make_error(errs, self.kernel, self.dropped)

    def close(self):
        """Give the per-element records back for the next launch (call once, at the end)."""
        for st in self.dev.values():
            st.release()
        self.dev = {}

    # device-memory records across chunks
    def dev_state(self, name, n):
        st = self.dev.get(name)
        if st is None:
            st = self.dev[name] = _DevState(n)
        return st


class Checker(SyncChecks, ValueChecks, PrivateChecks):
    """Per-chunk checker: the hooks the generated program calls (barriers and fences in
    :class:`~metalbench.sim.sync_checks.SyncChecks`)."""

    def __init__(self, owner: LaunchChecker, c):
        self.o = owner
        self.nodes = owner.nodes
        self.c = c
        self.G, self.TG, self.L = c.G, owner.TG, c.L
        self.exist = c.exist
        self.base = np.int64(c.g0 * owner.TG)
        self.tg: dict = {}
        # per-lane access counts: masked accesses in ``cnt`` (a buffer shared by the
        # launch's chunks), unmasked ones as one number per row
        cnt = owner._cnt
        if cnt is None or cnt.shape[1] != self.L:
            cnt = owner._cnt = np.zeros((4, self.L), np.int32)
            owner._cnt_dirty = [False] * 4
        for r in range(4):
            if owner._cnt_dirty[r]:
                cnt[r].fill(0)
                owner._cnt_dirty[r] = False
        self.cnt = cnt
        self.used = owner._cnt_dirty
        self.uni = [0] * 4
        self._all = None
        self._gid = None
        self._gbl = None
        self._ex = None
        self._ln_cache = None
        self._bounds_ok: dict = {}
        # per lane, its simdgroup's and quad-group's ordering points so far (simdgroup_barrier,
        # SIMD-group functions: sync_checks.py), for threadgroup memory; None before the first
        self.sv = None
        self.svd = None  # ... for device memory
        self._sg = None
        self._contig_cache: dict = {}
        self._wv = None  # the value the current store writes (same-value writes)
        owner.ivl += 1
        self.ep = owner.ivl   # the threadgroup-memory barrier interval
        self.epd = owner.ivl  # the device-memory one (barriers order what their flags name)

    # -- helpers
    def _lanes(self, m):
        if m is None:
            return self._ar64()
        c = self._ln_cache
        if c is not None and c[0] is m:
            return c[1]
        ln = np.flatnonzero(m)
        self._ln_cache = (m, ln)
        return ln

    def _sg_layout(self):
        # per lane: simdgroup start offsets for reduceat, lane index within its simdgroup
        if self._sg is None:
            key = (self.G, self.TG)
            hit = self.o._sg_cache.get(key)
            if hit is None:
                t = self.c.t_lane.astype(np.int64)
                sg = np.repeat(np.arange(self.G, dtype=np.int64), self.TG) * 1_000_000 + t // 32
                starts = np.flatnonzero(np.r_[True, sg[1:] != sg[:-1]])
                hit = self.o._sg_cache[key] = (starts, t % 32, sg)
            self._sg = hit
        return self._sg

    def _coalescing(self, addr, m, ln):
        if not isinstance(addr, np.ndarray):
            self.o.coal += self.L if m is None else int(np.count_nonzero(m))
            return
        starts, lsg, sg = self._sg_layout()
        if m is not None:
            if ln is None:
                ln = np.flatnonzero(m)
            if ln.size * 4 < self.L:
                # few active lanes: their simdgroups only
                if ln.size == 0:
                    return
                s_ = sg[ln]
                brk = np.flatnonzero(np.r_[True, s_[1:] != s_[:-1]])
                a = addr[ln].astype(np.int64)
                d = a - lsg[ln]
                act = np.diff(np.r_[brk, ln.size])
                ok = ((np.minimum.reduceat(d, brk) == np.maximum.reduceat(d, brk))
                      | (np.minimum.reduceat(a, brk) == np.maximum.reduceat(a, brk)))
                self.o.coal[0] += int(act[ok].sum())
                self.o.coal[1] += int(ln.size)
                return
        d = addr.astype(np.int64) - lsg
        a = addr.astype(np.int64)
        if m is None:
            dmin = np.minimum.reduceat(d, starts)
            dmax = np.maximum.reduceat(d, starts)
            amin = np.minimum.reduceat(a, starts)
            amax = np.maximum.reduceat(a, starts)
            act = np.diff(np.r_[starts, d.size])
        else:
            dmin = np.minimum.reduceat(np.where(m, d, _BIG), starts)
            dmax = np.maximum.reduceat(np.where(m, d, -_BIG), starts)
            amin = np.minimum.reduceat(np.where(m, a, _BIG), starts)
            amax = np.maximum.reduceat(np.where(m, a, -_BIG), starts)
            act = np.add.reduceat(m.astype(np.int64), starts)
        ok = (act > 0) & ((dmin == dmax) | (amin == amax))
        self.o.coal[0] += int(act[ok].sum())
        self.o.coal[1] += int(act.sum())

    # -- hooks
    def _contig(self, idx):
        """Whether a full-chunk lane vector of indices is one consecutive run (then
        bounds, coalescing and uniqueness are O(1)); cached per index array, which the
        accesses of one chunk often share (``x[i]``, ``y[i]``, ``out[i]``)."""
        if not isinstance(idx, np.ndarray) or idx.size != self.L or idx.dtype.kind not in "iu":
            return False
        hit = self._contig_cache.get(id(idx))
        if hit is not None and hit[0] is idx:
            return hit[1]
        if self.L == 0:
            ok = False
        else:
            lo = int(idx[0])
            ok = int(idx[-1]) - lo == self.L - 1 and bool(np.array_equal(idx, self._ar64() + lo))
        self._contig_cache[id(idx)] = (idx, ok)
        return ok

    def _ar64(self):
        if self._all is None:
            ar = self.o._ar
            if ar is None or ar.size != self.L:
                ar = self.o._ar = np.arange(self.L, dtype=np.int64)
            self._all = ar
        return self._all

    def acc(self, k, rel, n, m, data=None, addr=None, name=None, space=None, val=None):
        """Bounds-check ``0 <= rel < n`` on the active lanes of ``m``, count the access
        and, given the storage ``data`` and absolute ``addr``, track races and
        uninitialised reads (``val``: a store's value, for same-value writes)."""
        if m is False:
            return
        self._wv = val
        _, buf, sp, access = self.nodes[k]
        space = space or sp
        name = name or buf
        dev = space in ("device", "constant")
        contig = dev and self._contig(rel)
        # few active lanes (a shrinking tree reduction, tid == 0): work on those only
        ln = None
        if m is not None and isinstance(rel, np.ndarray) and not contig:
            ln = self._lanes(m)
            if ln.size * 4 >= self.L:
                ln = None
        # accesses of one statement often share index and mask (buf[tid] += ...)
        bkey = (id(rel), n, id(m))
        seen = self._bounds_ok.get(bkey)
        if seen is not None and seen[0] is rel and seen[1] is m:
            pass
        elif contig:
            if (int(rel[0]) < 0 or int(rel[-1]) >= n) and (m is None or m.any()):
                check(rel, n, m, k)  # raises, with the lanes
        elif ln is not None:
            r = rel[ln]
            bad = r >= n
            if r.dtype.kind != "u":
                bad |= r < 0
            if bad.any():
                check(rel, n, m, k)
        else:
            check(rel, n, m, k)
        if seen is None and isinstance(rel, np.ndarray):
            if len(self._bounds_ok) > 8:
                self._bounds_ok.clear()
            self._bounds_ok[bkey] = (rel, m)
        if space == "thread":
            return
        self._count(access, 0 if dev else 2, m, ln)
        if dev:
            if contig:
                self.o.coal += self.L if m is None else int(np.count_nonzero(m))
            else:
                self._coalescing(rel if data is None else addr, m, ln)
            if self.o.uninit and name in self.o.uninit and data is not None:
                self._uninit_output(name, data, addr, int(addr[0]) if contig else None, m, k, access)
            if data is None or space != "device" or (self.o.tracked is not None and name not in self.o.tracked):
                return
            self._dev_access(name, data, addr, m, k, access, int(addr[0]) if contig else None)
            return
        if data is None:
            return
        if ln is None:
            ln = self._lanes(m)
        if isinstance(addr, np.ndarray):
            E = addr.astype(np.int64, copy=False) if m is None else addr[ln].astype(np.int64, copy=False)
        else:
            E = np.full(ln.size, int(addr), np.int64)
        st = self.tg.get(id(data))
        if st is None:
            st = self.tg[id(data)] = _TgState(data, name)
        T = ln
        if access == "write":
            self._write(st, E, T, k, name, space, False, data)
            if not st.all_written:
                st.written[E] = True
        else:
            if not st.all_written:
                # an atomic store (or exchange) writes without reading the old value (as for device memory)
                stores = access == "atomic" and getattr(self.nodes[k][0], "op", None) in ("store", "exchange")
                unw = ~st.written[E] & (not stores)
                if unw.any():
                    unw[unw] = ~self._written_through_views(st, E[unw])
                if unw.any():
                    j = np.flatnonzero(unw)
                    size = data.size // self.G
                    self.o.add("uninitialised read", [k], name, space, E[j[:1]] % size,
                               T[j] + self.base, [access], int(j.size))
                if access == "atomic":
                    st.written[E] = True
            self._log(st, (E, T, k, 0 if self.sv is None else self.sv[T]))

    def _written_through_views(self, st, E):
        """Which elements ``E`` of threadgroup array (or view) ``st`` have had every byte written
        through another name for the same storage: a uchar array read as uint after byte
        stores (each name keeps its own records, in its own element size)."""
        ok = np.ones(E.size, bool)
        isz = st.data.itemsize
        at = st.data.__array_interface__["data"][0]
        others = [o for o in self.tg.values() if o is not st and np.may_share_memory(o.data, st.data)]
        if not others:
            return ~ok
        for b in range(isz):                   # each byte of each element: written by some name
            got = np.zeros(E.size, bool)
            for o in others:
                rel = at - o.data.__array_interface__["data"][0] + E * isz + b
                idx = rel // o.data.itemsize
                inside = (rel >= 0) & (idx < o.written.size)
                got[inside] |= o.all_written or o.written[idx[inside]]
            ok &= got
        return ok

    def _count(self, access, row, m, ln=None):
        rows = (row,) if access == "read" else (row + 1,) if access == "write" else (row, row + 1)
        for r in rows:
            if m is None:
                self.uni[r] += 1
            else:
                self.used[r] = True
                if ln is not None:
                    self.cnt[r, ln] += 1
                else:
                    self.cnt[r] += m

    def acc_lin(self, k, o, n, m, data, val=None):
        """``acc`` for the lane-contiguous device access ``data[o + lane]`` that the
        program has proved in bounds (``0 <= o``, ``o + lanes <= n``)."""
        if m is False:
            return
        self._wv = val
        _, name, space, access = self.nodes[k]
        self._count(access, 0, m)
        self.o.coal += self.L if m is None else int(np.count_nonzero(m))
        if self.o.uninit and name in self.o.uninit:
            self._uninit_output(name, data, None, int(o), m, k, access)
        if space != "device" or (self.o.tracked is not None and name not in self.o.tracked):
            return
        self._dev_access(name, data, None, m, k, access, int(o))

    def _dev_access(self, name, data, addr, m, k, access, lo):
        """Device memory: same-interval conflicts within a threadgroup, and conflicts
        between threadgroups anywhere in the launch (per-element records). ``lo`` is
        given when the lanes access ``lo + lane`` (then ``addr`` may be None)."""
        al = self.o.aliases.get(name)
        off = 0
        if al is None:
            st = self.o.dev_state(name, data.size)
        else:  # one array passed as several arguments: the group's records, its indices
            name, off, n = al
            st = self.o.dev_state(name, n)
            if lo is not None:
                lo += off
            elif off:
                addr = addr + off
        ep = self.epd
        write = access == "write"
        contig = lo is not None
        if contig and m is None:
            E = slice(lo, lo + self.L)
            T = self._gids()
            if int(st.own[E].max()) < 0:
                # first touch of distinct elements: nothing to compare with (the common case)
                st.own[E] = T
                st.own_k[E] = k
                if write:
                    st.wr[E] = T
                    st.wr_ep[E] = ep
                    st.wr_k[E] = k
                    if self.svd is not None or st._wr_sep is not None:
                        st.wr_sep[E] = 0 if self.svd is None else self.svd
                    if self.o.fc is not None:
                        st.wr_fc[E] = self.o.fc[T]
                    st.wrote = ep
                else:
                    E = np.arange(lo, lo + self.L, dtype=np.int64)
                    self._log(st, (E, T.copy(), k) if self.svd is None else (E, T.copy(), k, self.svd.copy()))
                return
            E = np.arange(lo, lo + self.L, dtype=np.int64)
            unique = True
        else:
            ln = self._lanes(m)
            if contig:
                E = ln + lo
            elif isinstance(addr, np.ndarray):
                E = addr.astype(np.int64, copy=False) if m is None else addr[ln].astype(np.int64, copy=False)
            else:
                E = np.full(ln.size, int(addr), np.int64)
            T = ln + self.base
            unique = contig
        if E.size == 0:
            return
        TG = self.TG
        o = st.own[E]
        fresh = o < 0
        if unique and fresh.all():
            st.own[E] = T
            st.own_k[E] = k
        else:
            if fresh.any():
                st.own[E[fresh]] = T[fresh]
                st.own_k[E[fresh]] = k
                o = st.own[E]
            gb = self._group_base(m, ln if not (contig and m is None) else None)
            other = (o < gb) | (o >= gb + TG)  # o's threadgroup is not the lane's
            if other.any():
                Eo = E[other]
                f2 = st.oth[Eo] < 0
                if f2.any():
                    st.oth[Eo[f2]] = T[other][f2]
                    st.oth_k[Eo[f2]] = k
                if st.wrote >= 0 and not write:  # a write checks all of E below
                    self._cross(st, name, Eo)
        if write:
            wr = st.wr[E]
            bad = (wr >= 0) & (wr != T) & (st.wr_ep[E] == ep) & (wr // TG == T // TG)
            if self.svd is not None and bad.any():
                j = np.flatnonzero(bad)
                bad[j] = ~self._simd_ordered_dev(wr[j], st.wr_sep[E[j]], T[j], self.svd[T[j] - self.base])
            if self.o.fc is not None and bad.any():
                bad &= ~self._fenced(wr, st.wr_fc[E], T)
            if bad.any():
                self._race(st, E, bad, wr, st.wr_k[E], T, k, "write", "write", name, "device", True, None,
                           self._same_as_held(data, E - off, T - self.base, bad))
            sj = None
            if not unique:
                ar = np.arange(E.size, dtype=np.int64)
                st.stamp[E] = ar
                sj = st.stamp[E]
                dup = (sj != ar) & (T[sj] // TG == T // TG)
                if dup.any():
                    self._race(st, E, dup, T[sj], np.full(E.size, k, np.int32), T, k, "write", "write",
                               name, "device", True, None,
                               self._same_as_lanes(T - self.base, T[sj] - self.base, dup))
            before = wr >= 0       # written by an earlier store (any threadgroup)
            st.wr[E] = T
            st.wr_ep[E] = ep
            st.wr_k[E] = k
            if self.svd is not None or st._wr_sep is not None:
                # (an element's record may hold a count of an earlier chunk: always overwritten)
                st.wr_sep[E] = 0 if self.svd is None else self.svd[T - self.base]
            if self.o.fc is not None:
                st.wr_fc[E] = self.o.fc[T]
            st.wrote = ep
            if st._oth is not None:
                has_oth = st.oth[E] >= 0
                if has_oth.any():
                    same = self._same_as_held(data, E - off, T - self.base, has_oth)
                    if same is not None and sj is not None:
                        # lanes of different threadgroups in this one store: the value they agree on
                        same |= self._same_in_store(E, T - self.base, sj, ~before | same)
                    self._cross(st, name, E[has_oth], None if same is None else E[has_oth & same])
        else:
            self._log(st, (E, T, k) if self.svd is None else (E, T, k, self.svd[T - self.base]))

    def _cross(self, st, name, E, same_elems=None):
        """Report elements of ``E`` written by one threadgroup and touched by another
        (``same_elems``: elements the current store writes with the value they hold: a
        warning when the other access is a write too)."""
        cand = (st.wr[E] >= 0) & (st.oth[E] >= 0) & ~st.hit[E]
        if not cand.any():
            return
        Ec = np.unique(E[cand])
        w, wk = st.wr[Ec], st.wr_k[Ec]
        use_own = (st.own[Ec] // self.TG) != (w // self.TG)
        ot = np.where(use_own, st.own[Ec], st.oth[Ec])
        ok = np.where(use_own, st.own_k[Ec], st.oth_k[Ec])
        if self.o.fc is not None:  # published through device fences (a look-back scan)
            keep = ~self._fenced(w, st.wr_fc[Ec], ot)
            if not keep.all():
                Ec, w, wk, ot, ok = Ec[keep], w[keep], wk[keep], ot[keep], ok[keep]
                if not Ec.size:
                    return
        acc = np.array([self.nodes[int(x)][3] for x in ok], object)
        same = None if same_elems is None else (np.isin(Ec, same_elems) & (acc == "write"))
        self._race(st, Ec, np.ones(Ec.size, bool), w, wk, ot, ok, "write", acc, name, "device", True, None, same)

    def _group_base(self, m, ln):
        """Per active lane, the global id of its threadgroup's first thread."""
        gb = self._gbl
        if gb is None:
            g = self.c.g_lane
            gb = self._gbl = g * self.TG + self.base
        return gb if ln is None or m is None else gb[ln]

    def _gids(self):
        if self._gid is None:
            buf = self.o._gid_buf
            if buf is None or buf.size != self.L:
                buf = self.o._gid_buf = np.empty(self.L, np.int32)
                self.o._ar32 = np.arange(self.L, dtype=np.int32)
            # int32 like the records (a plain copy into them); reused by the next chunk:
            # nothing keeps it past this chunk's flush
            self._gid = np.add(self.o._ar32, np.int32(self.base), out=buf)
        return self._gid

    def tg_init(self, data, name):
        """A threadgroup array declared with an initialiser: every element is written."""
        st = self.tg[id(data)] = _TgState(data, name)
        st.written[:] = True
        st.all_written = True

    def acc_ref(self, k, ref, i, m, val=None):
        """``acc`` through a device function's buffer parameter (a ``BufRef``)."""
        rel = ref.off + i
        if ref.space in ("device", "threadgroup"):
            self.acc(k, rel, ref.n, m, ref.flat, ref.addr(i), ref.name, ref.space, val)
        else:
            self.acc(k, rel, ref.n, m, None, None, ref.name, ref.space)
            if ref.space == "thread":
                self.loc_ref(k, ref, i, m)

    def _write(self, st, E, T, k, name, space, dev, data):
        """A threadgroup-memory store: against the interval's last writers, and lanes of
        the store sharing an element."""
        nE = E.size
        if nE == 0:
            return
        if st.wrote == self.ep:
            wt = st.wr[E]
            bad = (wt >= 0) & (wt != T) & (st.wr_ep[E] == self.ep)
            if self.sv is not None and bad.any():
                j = np.flatnonzero(bad)
                bad[j] = ~self._simd_ordered(wt[j], st.wr_sep[E[j]], T[j], self.sv[T[j]])
            if bad.any():
                self._race(st, E, bad, wt, st.wr_k[E], T, k, "write", "write", name, space, dev, data,
                           self._same_as_held(data, E, T, bad))
        # increasing addresses (the usual tile[tid] = ...) are distinct; else the scatter
        # keeps the last lane's number: a lane that lost shares its element
        if nE > 1 and not bool((E[1:] > E[:-1]).all()):
            ar = self._ar64()[:nE]
            st.stamp[E] = ar
            sj = st.stamp[E]
            dup = sj != ar
        else:
            dup = None
        if dup is not None and dup.any():
            self._race(st, E, dup, T[sj], np.full(nE, k, np.int32), T, k, "write", "write",
                       name, space, dev, data, self._same_as_lanes(T, T[sj], dup))
        st.wr[E] = T
        st.wr_ep[E] = self.ep
        st.wr_k[E] = k
        if self.sv is not None:
            st.wr_sep[E] = self.sv[T]
        st.wrote = self.ep

    def _race(self, st, E, bad, t_a, k_a, T, k_b, acc_a, acc_b, name, space, dev, data, same=None, kind="data race"):
        j = np.flatnonzero(bad)
        if same is not None and j.size:
            # several threads writing the value the element holds: a warning, not a race error
            s = same[j]
            if s.any():
                self._race(st, E, np.isin(np.arange(E.size), j[s]), t_a, k_a, T, k_b, acc_a, acc_b, name, space,
                           dev, data, kind="same-value write")
                j = j[~s]
        if kind != "data race":
            pass
        elif dev:
            j = j[~st.hit[E[j]]]
            if j.size == 0:
                return
            st.hit[E[j]] = True
        if j.size == 0:
            return
        if dev:
            ga, gb = t_a[j], T[j]
            idx = E[j]
        else:
            ga, gb = t_a[j] + self.base, T[j] + self.base
            idx = E[j] % (data.size // self.G)
        ka = np.asarray(k_a)[j] if isinstance(k_a, np.ndarray) else np.full(j.size, k_a)
        kb = np.asarray(k_b)[j] if isinstance(k_b, np.ndarray) else np.full(j.size, k_b)
        acc_a = np.asarray(acc_a)[j] if isinstance(acc_a, np.ndarray) else np.full(j.size, acc_a, object)
        acc_b = np.asarray(acc_b)[j] if isinstance(acc_b, np.ndarray) else np.full(j.size, acc_b, object)
        pair = ka.astype(np.int64) * 65536 + kb
        # the example of each pair of lines: two threads of different SIMD-groups where there are
        # some -- lanes of one SIMD-group run together on Apple GPUs, so a pair of them reads as a
        # false alarm when the race is real between SIMD-groups
        apart = (ga // self.TG != gb // self.TG) | ((ga % self.TG) // 32 != (gb % self.TG) // 32)
        order = np.lexsort((~apart, pair))
        ps = pair[order]
        starts = np.flatnonzero(np.r_[True, ps[1:] != ps[:-1]])
        counts = np.diff(np.r_[starts, ps.size])
        for f, cnum in zip(order[starts], counts):
            same_group = bool(ga[f] // self.TG == gb[f] // self.TG)
            self.o.add(kind, [int(ka[f]), int(kb[f])], name, space, [idx[f]],
                       [ga[f], gb[f]], [acc_a[f], acc_b[f]], int(cnum), same_group=same_group,
                       same_simd=same_group and not bool(apart[f]))

    def _log(self, st, entry):
        """Log a read/atomic of the interval; a long interval (a loop without barriers)
        keeps one entry per (element, thread), so memory stays bounded by those pairs."""
        st.log.append(entry)
        st.nlog += entry[0].size
        # the next merge waits until the log has doubled since the last one: when the distinct
        # pairs alone fill LOG_LIMIT (a 1024-thread group reading 4096 elements), merging at
        # every read again re-sorted all of them each time (quadratic: minutes per launch)
        if st.nlog > max(LOG_LIMIT, st.lim):
            log = st.log
            E = np.concatenate([x[0] for x in log])
            T = np.concatenate([x[1] for x in log]).astype(np.int64)
            K = np.concatenate([np.full(x[0].size, x[2], np.int32) for x in log])
            key = E * (int(T.max()) + 1) + T
            _, first = np.unique(key, return_index=True)
            e = [E[first], T[first], K[first]]
            if len(entry) == 4:
                e.append(np.concatenate([np.broadcast_to(np.asarray(x[3] if len(x) > 3 else 0, np.int64),
                                                         x[0].shape) for x in log])[first])
            st.log, st.nlog, st.lim = [tuple(e)], first.size, 2 * first.size

    def _flush(self, mem=3):
        """End of a barrier interval of threadgroup memory (``mem & 1``) and/or device
        memory (``mem & 2``): the interval's reads and atomics against its last writers
        (skipped for arrays nobody wrote in the interval)."""
        if mem & 1:
            for st in self.tg.values():
                if st.log:
                    if st.wrote == self.ep:
                        self._flush_reads(st, st.log, False, st.name)
                    st.log, st.nlog, st.lim = [], 0, 0
                if not st.all_written:
                    st.all_written = bool(st.written.all())
        if mem & 2:
            for name, st in self.o.dev.items():
                if st.log:
                    if st.wrote == self.epd:
                        self._flush_reads(st, st.log, True, name)
                    st.log, st.nlog, st.lim = [], 0, 0

    def _flush_reads(self, st, log, dev, name):
        E = np.concatenate([x[0] for x in log])
        T = np.concatenate([x[1] for x in log])
        wt = st.wr[E]
        bad = (wt >= 0) & (wt != T) & (st.wr_ep[E] == (self.epd if dev else self.ep))
        if (self.svd if dev else self.sv) is not None and bad.any():
            j = np.flatnonzero(bad)  # candidates only: most reads are of the thread's own writes
            S = np.concatenate([np.broadcast_to(np.asarray(x[3] if len(x) > 3 else 0, np.int64), x[0].shape)
                                for x in log])[j]
            ordered = self._simd_ordered_dev if dev else self._simd_ordered
            bad[j] = ~ordered(wt[j], st.wr_sep[E[j]], T[j], S)
        if dev and self.o.fc is not None and bad.any():
            bad &= ~self._fenced(wt, st.wr_fc[E], T)
        if bad.any():
            K = np.concatenate([np.full(x[0].size, x[2], np.int32) for x in log])
            acc = np.array([self.nodes[k][3] for k in range(len(self.nodes))], object)
            space = "device" if dev else "threadgroup"
            self._race(st, E, bad, wt, st.wr_k[E], T, K, "write", acc[K], name,
                       space, dev, st.data if not dev else None)

    def div(self, a, b, fn, m, k, op):
        """C integer ``/`` or ``%`` (``op``, computed by the scalar table's ``fn``),
        reporting a zero divisor on an active lane."""
        lanes = self.active_hits(b == 0, m)         # (value_checks)
        if lanes is not None:
            self.o.add("division by zero", [k], None, None, [], lanes + self.base,
                       ["modulo" if op == "%" else "divide"], int(lanes.size))
        return fn(a, b)

    def finish(self):
        """End of the chunk: last interval, statistics."""
        self._flush()
        if not self.L:
            return
        nex = self.L if self.exist is None else int(np.count_nonzero(self.exist))
        for r in range(4):
            u = self.uni[r]
            if self.used[r]:
                row = self.cnt[r]
                self.o.tot[r] += int(row.sum()) + u * nex
                self.o.maxpt[r] = max(int(self.o.maxpt[r]), int(row.max()) + u)
            elif u:
                self.o.tot[r] += u * nex
                self.o.maxpt[r] = max(int(self.o.maxpt[r]), u)


__all__ = ["Checker", "LaunchChecker", "DivergentBarrier", "Finding", "OutOfBounds",
           "make_error", "max_steps", "CheckFailed"]
