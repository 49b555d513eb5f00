"""Checked mode: bounds, data races, uninitialised reads, divergent barriers, runaway
loops and division by zero, plus the memory-access statistics of a launch.

The generated program of a checked kernel calls a per-chunk :class:`Checker` before
every memory access (``acc``/``acc_ref``), at every threadgroup barrier (``barrier``)
and for every integer division (``div``); :class:`LaunchChecker` holds what outlives a
chunk (device-memory access records, findings, statistics).

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

import os
from dataclasses import dataclass, field

import numpy as np

from ..errors import KernelCheckError
from . import runtime as _rt
from .memory import OutOfBounds, check

# Distinct (kind, buffer, lines) findings kept per launch; more are only counted.
MAX_FINDINGS = 64
# Findings shown in full in the error message; the rest get one line each.
SHOWN_IN_FULL = 3
_BIG = np.int64(1) << 62


def max_steps(checked: bool) -> int:
    """Iterations one loop may run per entry before it is reported as runaway
    (``METALBENCH_MAX_STEPS``; unchecked launches get twice as many).

        >>> max_steps(True) >= 1
        True
    """
    n = int(os.environ.get("METALBENCH_MAX_STEPS", "10000000"))
    return n if checked else 2 * n


class DivergentBarrier(Exception):
    """A threadgroup barrier reached by only part of a threadgroup."""

    def __init__(self, k, bad_groups, m):
        super().__init__(k)
        self.k, self.bad_groups, self.m = k, bad_groups, m


@dataclass(eq=False)
class Finding:
    """One kind of problem at one place (several elements or threads are summarised
    in ``count``). ``threads`` are ``thread_position_in_grid`` tuples: for a race the
    two threads, in the order of ``spans``/``accesses``.

        >>> Finding("division by zero", None, None, [], [(3, 0, 0)], [], ["divide"]).kind
        'division by zero'
    """
    kind: str
    buffer: str | None
    space: str | None
    index: list
    threads: list
    spans: list
    accesses: list
    count: int = 1
    kernel: str = ""
    size: int | None = None
    extra: dict = field(default_factory=dict)

    @property
    def line(self):
        """The (first) user line number involved, or None."""
        return self.spans[0].line if self.spans and self.spans[0] is not None else None

    @property
    def lines(self):
        return [s.line if s is not None else None for s in self.spans]

    def __getitem__(self, key):  # findings used to be dicts: keep f["kind"] working
        return getattr(self, key)

    def summary(self) -> str:
        """One line: kind, buffer, index, line(s), thread(s)."""
        where = "/".join(f"line {ln}" for ln in self.lines if ln is not None) or "?"
        buf = f" {self.buffer!r}" if self.buffer else ""
        idx = f" [{self.index[0]}]" if self.index else ""
        n = f" ({self.count} times)" if self.count > 1 else ""
        return f"{self.kind}{buf}{idx} at {where}, thread {self.threads[0] if self.threads else '?'}{n}"

    def describe(self) -> str:
        """The full text: what, where, which threads, with the user's lines shown."""
        head = _describe_head(self)
        ex = [s.excerpt() for s in self.spans if s is not None]
        seen, uniq = set(), []
        for e in ex:
            if e not in seen:
                seen.add(e)
                uniq.append(e)
        return "\n".join([head] + uniq)

    def __str__(self):
        return self.describe()


_VERB = {"read": "reads", "write": "writes", "atomic": "atomically updates"}


def _space_word(space):
    return {"threadgroup": "threadgroup array", "device": "device buffer", "constant": "constant buffer",
            "thread": "thread-local array"}.get(space, "buffer")


def _describe_head(f: Finding) -> str:
    k = f" in kernel {f.kernel!r}" if f.kernel else ""
    many = f" ({f.count} occurrences)" if f.count > 1 else ""
    thr = ", ".join(map(str, f.threads[:4]))
    if f.kind == "data race":
        (ta, tb), (aa, ab) = f.threads[:2], f.accesses[:2]
        la, lb = f.lines[:2]
        when = ("in the same barrier interval" if f.extra.get("same_group", True)
                else "from different threadgroups (no barrier orders them)")
        return (f"data race on {_space_word(f.space)} {f.buffer!r} at index {f.index[0]}{k}: "
                f"thread {ta} {_VERB.get(aa, aa)} it at line {la} and thread {tb} "
                f"{_VERB.get(ab, ab)} it at line {lb}, {when}{many}")
    if f.kind == "uninitialised read":
        return (f"uninitialised read of {_space_word(f.space)} {f.buffer!r} at index {f.index[0]}{k}: "
                f"no thread of the threadgroup has written it yet; read by thread(s) {thr}{many}")
    if f.kind == "division by zero":
        what = "%" if f.accesses and f.accesses[0] == "modulo" else "/"
        return f"integer division by zero ({what}){k} by thread(s) {thr}{many}"
    if f.kind == "runaway loop":
        return (f"runaway loop{k}: a loop ran more than {f.extra.get('limit')} iterations "
                f"(METALBENCH_MAX_STEPS sets the limit)")
    if f.kind == "divergent barrier":
        return (f"divergent barrier{k}: threadgroup(s) {', '.join(map(str, f.extra.get('groups', [])))} "
                f"reached threadgroup_barrier with only part of their threads")
    if f.kind == "out-of-bounds":
        what = {"read": "read of", "write": "write to", "atomic": "atomic on"}.get(
            f.accesses[0] if f.accesses else "", "access to")
        idx = f.index[0] if len(set(f.index)) == 1 else f.index
        size = f" (size {f.size})" if f.size is not None else ""
        more = f" and {f.count - len(f.threads)} more" if f.count > len(f.threads) else ""
        return (f"out-of-bounds {what} {f.space} buffer {f.buffer!r} at index {idx}{size}{k}, "
                f"by thread(s) at thread_position_in_grid {thr}{more}")
    return f"{f.kind}{k}"


class CheckFailed(KernelCheckError):
    """``KernelCheckError`` whose message already shows every line involved."""

    def _format(self) -> str:
        parts = [self.message]
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return "\n".join(parts)


_HINTS = {
    "data race": "put a threadgroup_barrier() between the write and the other thread's access, "
                 "or use an atomic; threadgroups cannot synchronise with each other within a launch",
    "uninitialised read": "write every element before the barrier that precedes its reads",
    "divergent barrier": "every thread of a threadgroup must reach the same barrier "
                         "(no barrier inside a branch some threads skip or after an early return)",
    "runaway loop": "check the loop's condition and update; raise METALBENCH_MAX_STEPS for a long loop",
    "division by zero": "guard the divisor; the GPU gives an undefined result",
    "out-of-bounds": "guard the index with the right buffer's size",
}


def make_error(findings: list, kernel: str, dropped: int = 0) -> KernelCheckError:
    """The error raised for ``findings``: the first ones in full, the rest one line each.

        >>> f = Finding("division by zero", None, None, [], [(1, 0, 0)], [], ["divide"], kernel="k")
        >>> print(make_error([f], "k"))                       # doctest: +NORMALIZE_WHITESPACE
        integer division by zero (/) in kernel 'k' by thread(s) (1, 0, 0)
        hint: guard the divisor; the GPU gives an undefined result
    """
    parts = [f.describe() for f in findings[:SHOWN_IN_FULL]]
    if len(findings) > 1:
        kinds = sorted({f.kind for f in findings})
        parts.insert(0, f"{len(findings)} findings of the checked simulator ({', '.join(kinds)}):")
    rest = findings[SHOWN_IN_FULL:]
    if rest:
        parts.append(f"{len(rest)} more finding(s):")
        parts += ["  - " + f.summary() for f in rest]
    if dropped:
        parts.append(f"(and {dropped} more occurrence(s) not listed)")
    kinds = {f.kind for f in findings}
    hint = _HINTS.get(findings[0].kind) if len(kinds) == 1 else None
    span = findings[0].spans[0] if findings[0].spans else None
    return CheckFailed("\n".join(parts), span=span, hint=hint, findings=list(findings))


# ----------------------------------------------------------------------------- state


class _TgState:
    """Per chunk, per threadgroup array (all the chunk's copies, flat)."""

    def __init__(self, data, name):
        n = data.size
        self.name = name
        self.data = data  # keeps id(data) from being reused while the state lives
        self.w_t = np.full(n, -1, np.int64)
        self.w_ep = np.full(n, -1, np.int64)
        self.w_k = np.zeros(n, np.int32)
        self.stamp = np.zeros(n, np.int64)
        self.written = np.zeros(n, bool)
        self.log = []


class _DevState:
    """Per launch, per device buffer that the kernel may write."""

    def __init__(self, n):
        self.w_t = np.full(n, -1, np.int64)    # last non-atomic writer (global thread id)
        self.w_ep = np.full(n, -1, np.int64)   # ... and its barrier interval
        self.w_k = np.zeros(n, np.int32)
        self.stamp = np.zeros(n, np.int64)
        self.a_t = np.full(n, -1, np.int64)    # first thread that touched the element
        self.a_k = np.zeros(n, np.int32)
        self.b_t = np.full(n, -1, np.int64)    # a thread of another threadgroup than a_t's
        self.b_k = np.zeros(n, np.int32)
        self.x_t = np.full(n, -1, np.int64)    # some non-atomic writer, ever
        self.x_k = np.zeros(n, np.int32)
        self.hit = np.zeros(n, bool)           # a race on it was already reported
        self.log = []


class LaunchChecker:
    """What a checked launch keeps across chunks: device-memory records, findings and
    statistics. ``tracked`` names the device buffers that may be written (only those
    can race); ``None`` tracks all."""

    def __init__(self, launch, nodes, tracked, kernel_name=""):
        self.launch, self.nodes, self.tracked = launch, nodes, tracked
        self.kernel = kernel_name
        self.TG = launch.TG
        self.ivl = 0
        self.dev: dict = {}
        self._found: dict = {}
        self.dropped = 0
        self.tot = np.zeros(4, np.int64)    # device r/w, threadgroup r/w
        self.maxpt = np.zeros(4, np.int64)  # ... the most by one thread
        self.coal = np.zeros(2, np.int64)   # device lane-accesses in contiguous simdgroup runs, all

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
        f = Finding(kind, buffer, space, [int(i) for i in index], self.positions(gthreads), spans,
                    list(accesses), count, self.kernel, size, extra)
        self._found[key] = f
        return f

    def error(self) -> KernelCheckError | None:
        """The error for the findings so far, or None."""
        if not self._found:
            return None
        return make_error(self.findings, self.kernel, self.dropped)

    # device-memory records across chunks
    def dev_state(self, name, n):
        st = self.dev.get(name)
        if st is None:
            st = self.dev[name] = _DevState(n)
        return st


class Checker:
    """Per-chunk checker: the hooks the generated program calls."""

    def __init__(self, owner: LaunchChecker, c):
        self.o = owner
        self.nodes = owner.nodes
        self.c = c
        self.G, self.TG, self.L = c.G, owner.TG, c.L
        self.exist = c.exist
        self.base = np.int64(c.g0 * owner.TG)
        self.tg: dict = {}
        self.cnt = np.zeros((4, self.L), np.int32)
        self._all = None
        self._sg = None
        owner.ivl += 1
        self.ep = owner.ivl

    # -- helpers
    def _lanes(self, m):
        if m is None:
            if self._all is None:
                self._all = np.arange(self.L, dtype=np.int64)
            return self._all
        return np.flatnonzero(m)

    def _sg_layout(self):
        # per lane: simdgroup start offsets for reduceat, lane index within its simdgroup
        if self._sg is None:
            t = self.c.t_lane.astype(np.int64)
            sg = np.repeat(np.arange(self.G, dtype=np.int64), self.TG) * 1_000_000 + t // 32
            starts = np.flatnonzero(np.r_[True, sg[1:] != sg[:-1]])
            self._sg = (starts, t % 32)
        return self._sg

    def _coalescing(self, addr, m, ln):
        if not isinstance(addr, np.ndarray):
            n = ln.size
            self.o.coal += n
            return
        starts, lsg = self._sg_layout()
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
    def acc(self, k, rel, n, m, data=None, addr=None, name=None, space=None):
        """Bounds-check ``0 <= rel < n`` on the active lanes of ``m``, count the access
        and, given the storage ``data`` and absolute ``addr``, track races and
        uninitialised reads."""
        if m is False:
            return
        check(rel, n, m, k)
        _, buf, sp, access = self.nodes[k]
        space = space or sp
        name = name or buf
        dev = space in ("device", "constant")
        row = 0 if dev else 2
        if space == "thread":
            row = -1
        if row >= 0:
            cnt = self.cnt
            if access in ("read", "atomic"):
                if m is None:
                    cnt[row] += 1
                else:
                    cnt[row] += m
            if access in ("write", "atomic"):
                if m is None:
                    cnt[row + 1] += 1
                else:
                    cnt[row + 1] += m
        if data is None or row < 0:
            if dev:
                self._coalescing(rel, m, self._lanes(m))
            return
        ln = self._lanes(m)
        if dev:
            self._coalescing(addr, m, ln)
            if space != "device" or (self.o.tracked is not None and name not in self.o.tracked):
                return
        if isinstance(addr, np.ndarray):
            E = addr.astype(np.int64, copy=False) if m is None else addr[ln].astype(np.int64, copy=False)
        else:
            E = np.full(ln.size, int(addr), np.int64)
        if dev:
            st = self.o.dev_state(name, data.size)
            T = ln + self.base
        else:
            st = self.tg.get(id(data))
            if st is None:
                st = self.tg[id(data)] = _TgState(data, name)
            T = ln
        if access == "write":
            self._write(st, E, T, k, name, space, dev, data)
            if not dev:
                st.written[E] = True
        else:
            if not dev:
                unw = ~st.written[E]
                if unw.any():
                    j = np.flatnonzero(unw)
                    size = data.size // self.G
                    self.o.add("uninitialised read", [k], name, space, E[j[:1]] % size,
                               T[j] + self.base, [access], int(j.size))
                if access == "atomic":
                    st.written[E] = True
                st.log.append((E, T, k))
        if dev:
            st.log.append((E, T, k, access == "write"))

    def tg_init(self, data, name):
        """A threadgroup array declared with an initialiser: every element is written."""
        st = self.tg[id(data)] = _TgState(data, name)
        st.written[:] = True

    def acc_ref(self, k, ref, i, m):
        """``acc`` through a device function's buffer parameter (a ``BufRef``)."""
        rel = ref.off + i
        if ref.space in ("device", "threadgroup"):
            self.acc(k, rel, ref.n, m, ref.flat, ref.addr(i), ref.name, ref.space)
        else:
            self.acc(k, rel, ref.n, m, None, None, ref.name, ref.space)

    def _write(self, st, E, T, k, name, space, dev, data):
        nE = E.size
        if nE == 0:
            return
        wt = st.w_t[E]
        bad = (wt >= 0) & (wt != T)
        if dev:
            bad &= (st.w_ep[E] == self.ep) | (wt // self.TG != T // self.TG)
        else:
            bad &= st.w_ep[E] == self.ep
        if bad.any():
            self._race(st, E, bad, wt, st.w_k[E], T, k, "write", "write", name, space, dev, data)
        # lanes of this store sharing an element: the scatter keeps the last lane's number
        ar = np.arange(nE, dtype=np.int64)
        st.stamp[E] = ar
        s = st.stamp[E]
        dup = s != ar
        if dup.any():
            self._race(st, E, dup, T[s], np.full(nE, k, np.int32), T, k, "write", "write",
                       name, space, dev, data)
        st.w_t[E] = T
        st.w_ep[E] = self.ep
        st.w_k[E] = k

    def _race(self, st, E, bad, t_a, k_a, T, k_b, acc_a, acc_b, name, space, dev, data):
        j = np.flatnonzero(bad)
        if dev:
            j = j[~st.hit[E[j]]]
            if j.size == 0:
                return
            st.hit[E[j]] = True
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
        _, first, counts = np.unique(pair, return_index=True, return_counts=True)
        for f, cnum in zip(first, counts):
            same = bool(ga[f] // self.TG == gb[f] // self.TG)
            self.o.add("data race", [int(ka[f]), int(kb[f])], name, space, [idx[f]],
                       [ga[f], gb[f]], [acc_a[f], acc_b[f]], int(cnum), same_group=same)

    def _flush(self):
        """End of a barrier interval: reads/atomics against the interval's writers, and
        device accesses into the launch-wide records."""
        for st in self.tg.values():
            if st.log:
                self._flush_reads(st, [x for x in st.log], False, None)
                st.log = []
        for name, st in self.o.dev.items():
            if st.log:
                reads = [x[:3] for x in st.log if not x[3]]
                if reads:
                    self._flush_reads(st, reads, True, name)
                self._fold_device(st, name)
                st.log = []

    def _flush_reads(self, st, log, dev, name):
        E = np.concatenate([x[0] for x in log])
        T = np.concatenate([x[1] for x in log])
        K = np.concatenate([np.full(x[0].size, x[2], np.int32) for x in log])
        wt = st.w_t[E]
        bad = (wt >= 0) & (wt != T) & (st.w_ep[E] == self.ep)
        if bad.any():
            acc = np.array([self.nodes[k][3] for k in range(len(self.nodes))], object)
            space = "device" if dev else "threadgroup"
            self._race(st, E, bad, wt, st.w_k[E], T, K, "write", acc[K], name or st.name,
                       space, dev, st.data if not dev else None)

    def _fold_device(self, st, name):
        log = st.log
        E = np.concatenate([x[0] for x in log])
        T = np.concatenate([x[1] for x in log])
        K = np.concatenate([np.full(x[0].size, x[2], np.int32) for x in log])
        W = np.concatenate([np.full(x[0].size, x[3], bool) for x in log])
        TG = self.TG
        new = st.a_t[E] < 0
        if new.any():
            st.a_t[E[new]] = T[new]
            st.a_k[E[new]] = K[new]
        A = st.a_t[E]
        other = (A // TG) != (T // TG)
        if other.any():
            Eo = E[other]
            fresh = st.b_t[Eo] < 0
            if fresh.any():
                st.b_t[Eo[fresh]] = T[other][fresh]
                st.b_k[Eo[fresh]] = K[other][fresh]
        if W.any():
            Ew = E[W]
            fresh = st.x_t[Ew] < 0
            if fresh.any():
                st.x_t[Ew[fresh]] = T[W][fresh]
                st.x_k[Ew[fresh]] = K[W][fresh]
        cand = (st.x_t[E] >= 0) & (st.b_t[E] >= 0) & ~st.hit[E]
        if cand.any():
            Ec = np.unique(E[cand])
            w, wk = st.x_t[Ec], st.x_k[Ec]
            use_a = (st.a_t[Ec] // TG) != (w // TG)
            ot = np.where(use_a, st.a_t[Ec], st.b_t[Ec])
            ok = np.where(use_a, st.a_k[Ec], st.b_k[Ec])
            acc = np.array([self.nodes[int(x)][3] for x in ok], object)
            self._race(st, Ec, np.ones(Ec.size, bool), w, wk, ot, ok, "write", acc, name,
                       "device", True, None)

    def barrier(self, m, k):
        """Every existing thread of a threadgroup must reach a barrier, or none; a
        barrier ends the barrier interval."""
        if m is False:
            return
        if m is not None:
            act = m.reshape(self.G, self.TG).sum(axis=1)
            ex = (np.full(self.G, self.TG) if self.exist is None
                  else self.exist.reshape(self.G, self.TG).sum(axis=1))
            bad = np.flatnonzero((act > 0) & (act < ex))
            if bad.size:
                raise DivergentBarrier(k, bad, m)
            if not act.any():
                return
        self._flush()
        self.o.ivl += 1
        self.ep = self.o.ivl

    def div(self, a, b, dt, m, k, op):
        """C integer ``/`` or ``%`` (``op``), reporting a zero divisor on an active lane."""
        if m is not False:
            z = b == 0
            if isinstance(z, np.ndarray):
                if m is not None:
                    z = z & m
                hit = z.any()
            else:
                hit = bool(z)
            if hit:
                lanes = np.flatnonzero(z) if isinstance(z, np.ndarray) else self._lanes(m)
                self.o.add("division by zero", [k], None, None, [], lanes + self.base,
                           ["modulo" if op == "%" else "divide"], int(lanes.size))
        return _rt.idiv(a, b, dt) if op == "/" else _rt.imod(a, b, dt)

    def finish(self):
        """End of the chunk: last interval, statistics."""
        self._flush()
        if self.exist is None:
            self.o.tot += self.cnt.sum(axis=1)
        else:
            self.o.tot += self.cnt.sum(axis=1)
        if self.L:
            np.maximum(self.o.maxpt, self.cnt.max(axis=1), out=self.o.maxpt)


__all__ = ["Checker", "LaunchChecker", "DivergentBarrier", "Finding", "OutOfBounds",
           "make_error", "max_steps", "CheckFailed"]
