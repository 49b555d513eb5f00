"""Access maps: what a launch did to memory, element by element and line by line.

``am = k.access_map(*args, grid=..., threadgroup=...)`` runs the kernel once on the
checked simulator, whose checker already sees every access (index, active lanes,
storage), and counts on top of it:

- ``am.reads[name]`` / ``am.writes[name]``: per element of every device buffer (and
  threadgroup array, summed over threadgroups), NumPy arrays shaped like the buffers;
  an atomic counts as a read and a write (also in ``am.atomics``);
- ``am.groups[name]``: the linear threadgroup that touched each element (-1: none,
  -2: several);
- ``am.lines``: per access line (:class:`LineStats`): device accesses' per-simdgroup
  coalescing (128-byte segments touched per simdgroup access against the fewest
  possible) and threadgroup accesses' bank conflicts (32 banks of 4 bytes: the most
  distinct words one bank serves in one simdgroup access).

All counting is vectorised over the lanes of each access. A finding of the checked
run (a race, an out-of-bounds access) does not lose the map: it is in ``am.error``
and the counts go up to where the launch stopped::

    >>> import numpy as np, metalbench as mb
    >>> k = mb.kernel(source='''
    ... def blur(x, out: mb.Out):
    ...     i = thread_position_in_grid.x
    ...     if i > 0 and i < x.size - 1:
    ...         out[i] = x[i - 1] + x[i] + x[i + 1]
    ... ''')
    >>> am = k.access_map(np.zeros(8, np.float32), grid=8, threadgroup=4, init_value=0)
    >>> am.reads["x"].tolist(), am.writes["out"].tolist()
    ([1, 2, 3, 3, 3, 3, 2, 1], [0, 1, 1, 1, 1, 1, 1, 0])
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .checks import Checker, LaunchChecker

SEGMENT = 128      # bytes a device memory transaction serves
BANKS = 32         # threadgroup memory banks of 4 bytes


@dataclass
class LineStats:
    """One access site (a load, store or atomic at one source line).

    Device memory: ``requests`` simdgroup accesses, ``transactions`` the 128-byte
    segments they touched, ``ideal`` the fewest segments their active lanes could have
    used; ``coalescing`` = ideal / transactions (1.0: perfectly coalesced).
    Threadgroup memory: ``requests``, ``wavefronts`` (serialised bank accesses: one
    per request without conflicts), ``max_ways`` (the worst conflict degree);
    ``conflicts`` = wavefronts - requests."""
    line: int | None
    buffer: str
    space: str
    access: str
    text: str = ""
    lanes: int = 0
    requests: int = 0
    transactions: int = 0
    ideal: int = 0
    wavefronts: int = 0
    max_ways: int = 0

    @property
    def coalescing(self) -> float | None:
        return None if self.space == "threadgroup" or not self.transactions else self.ideal / self.transactions

    @property
    def conflicts(self) -> int:
        return max(0, self.wavefronts - self.requests) if self.space == "threadgroup" else 0

    @property
    def coalesced(self) -> bool:
        return self.coalescing is None or self.coalescing >= 0.99

    def summary(self) -> str:
        where = f"line {self.line}" if self.line is not None else "?"
        if self.space == "threadgroup":
            avg = self.wavefronts / self.requests if self.requests else 0
            return (f"{where}: {self.access} of threadgroup {self.buffer!r}: {self.requests} simdgroup accesses, "
                    f"{self.conflicts} bank-conflict replays (up to {self.max_ways}-way, {avg:.2f} wavefronts "
                    f"per access)")
        c = self.coalescing
        return (f"{where}: {self.access} of {self.buffer!r}: {self.requests} simdgroup accesses, "
                f"{self.transactions} x 128-byte segments (ideal {self.ideal}): "
                f"{'coalesced' if self.coalesced else 'uncoalesced'} ({(c if c is not None else 1):.0%})")


@dataclass
class AccessMap:
    """The result of :func:`access_map_kernel`."""
    kernel: str
    reads: dict
    writes: dict
    atomics: dict
    groups: dict
    lines: list
    grid: tuple
    threadgroup: tuple
    spaces: dict = field(default_factory=dict)
    error: Exception | None = None
    stats: object = None

    @property
    def findings(self) -> list:
        return list(getattr(self.error, "findings", []) or [])

    def uncoalesced(self) -> list:
        """The device access lines that are not coalesced."""
        return [s for s in self.lines if s.space != "threadgroup" and not s.coalesced]

    def bank_conflicts(self) -> list:
        """The threadgroup access lines with bank conflicts."""
        return [s for s in self.lines if s.space == "threadgroup" and s.conflicts]

    def __repr__(self):
        bufs = ", ".join(f"{n}: {int(self.reads[n].sum())}r/{int(self.writes[n].sum())}w" for n in self.reads)
        return f"<AccessMap of {self.kernel!r}: {bufs}; {len(self.lines)} access lines>"

    def summary(self) -> str:
        parts = [repr(self)] + ["  " + s.summary() for s in self.lines]
        if self.error is not None:
            parts.append("  (the checked run stopped: " + str(self.error).splitlines()[0] + ")")
        return "\n".join(parts)

    def _repr_html_(self) -> str:
        from ..notebook.heatmaps import access_map_html
        return access_map_html(self)


# ----------------------------------------------------------------------------- recording

class _Recorder:
    """Per launch: the counts per element, and per access node the simdgroup statistics."""

    def __init__(self):
        self.nodes = None
        self.kernel = None
        self.by_id: dict = {}       # id(storage) -> (name, storage)
        self.params: dict = {}      # name -> flat storage
        self.reads: dict = {}
        self.writes: dict = {}
        self.atomics: dict = {}
        self.first: dict = {}
        self.several: dict = {}
        self.tg_size: dict = {}
        self.spaces: dict = {}
        self.line: dict = {}        # node k -> LineStats

    def start(self, lg, prog, kernel, bufs):
        self.nodes = prog.nodes
        self.kernel = kernel
        self.TG = lg.TG
        for name, data in bufs.items():
            self.params[name] = data
            self.by_id[id(data)] = (name, data, 0, data.itemsize)
            self._alloc(name, data.size, "device")

    def _alloc(self, name, n, space):
        if name not in self.reads:
            self.reads[name] = np.zeros(n, np.int64)
            self.writes[name] = np.zeros(n, np.int64)
            self.atomics[name] = np.zeros(n, np.int64)
            self.first[name] = np.full(n, -1, np.int64)
            self.several[name] = np.zeros(n, bool)
            self.spaces[name] = space

    def _root(self, data):
        """(name, byte offset, itemsize ratio...) of a device storage array (a view of a parameter)."""
        hit = self.by_id.get(id(data))
        if hit is not None and hit[1] is data:
            return hit
        ptr = data.__array_interface__["data"][0]
        for name, base in self.params.items():
            b0 = base.__array_interface__["data"][0]
            if b0 <= ptr < b0 + base.nbytes:
                hit = (name, data, ptr - b0, data.itemsize)
                self.by_id[id(data)] = hit
                return hit
        return None

    def stats_for(self, k, space, name):
        st = self.line.get(k)
        if st is None:
            node, buf, _, access = self.nodes[k]
            sp = getattr(node, "span", None)
            text = sp.source.line(sp.line).strip() if sp is not None and sp.source is not None else ""
            st = self.line[k] = LineStats(sp.line if sp is not None else None, name or buf, space, access, text)
        return st

    def record(self, ck, k, rel, m, data, addr, name, space, lin=None):
        if m is False or space not in ("device", "threadgroup"):
            return
        _, buf, _, access = self.nodes[k]
        L = ck.L
        if m is None:
            lanes = None if ck.exist is None else np.flatnonzero(ck.exist)
        else:
            lanes = np.flatnonzero(m)
            if lanes.size == 0:
                return
        if space == "device":
            root = self._root(data) if data is not None else None
            if root is None:
                return
            rname, _, off, isz = root
            base = self.params[rname]
            if lin is not None:
                E = np.arange(lin, lin + L, dtype=np.int64)
            elif isinstance(addr, np.ndarray):
                E = addr.astype(np.int64, copy=False)
            else:
                E = np.full(L, int(addr), np.int64)
            if lanes is not None:
                E = E[lanes]
            nbytes = E * isz + off                       # byte addresses in the parameter's storage
            Eroot = nbytes // base.itemsize
            self._count(rname, Eroot, access, ck, lanes, lin is not None and lanes is None and isz == base.itemsize)
            self._coalescing(self.stats_for(k, "device", rname), nbytes, isz, ck, lanes)
        else:
            tname = name or buf
            per = data.size // ck.G
            key = tname if tname not in self.params else f"{tname} (threadgroup)"
            self._alloc(key, per, "threadgroup")
            r = np.asarray(rel).astype(np.int64) if isinstance(rel, np.ndarray) else np.full(L, int(rel), np.int64)
            if lanes is not None:
                r = r[lanes]
            self._count(key, r, access, ck, lanes, False)
            self._banks(self.stats_for(k, "threadgroup", key), r * data.itemsize, ck, lanes)

    def _count(self, name, E, access, ck, lanes, contiguous):
        groups = ck.c.g_lane + ck.c.g0
        G = groups if lanes is None else groups[lanes]
        targets = []
        if access in ("read", "atomic"):
            targets.append(self.reads[name])
        if access in ("write", "atomic"):
            targets.append(self.writes[name])
        if access == "atomic":
            targets.append(self.atomics[name])
        if contiguous:
            sl = slice(int(E[0]), int(E[0]) + E.size)
            for t in targets:
                t[sl] += 1
        else:
            for t in targets:
                np.add.at(t, E, 1)
        first = self.first[name]
        cur = first[E]
        new = cur < 0
        if new.any():
            first[E[new]] = G[new]
            cur = first[E]
        diff = cur != G
        if diff.any():
            self.several[name][E[diff]] = True

    def _sg(self, ck, lanes):
        """Per active lane: its simdgroup's number in the chunk."""
        t = ck.c.t_lane.astype(np.int64)
        sg = ck.c.g_lane * ((self.TG + 31) // 32) + t // 32
        return sg if lanes is None else sg[lanes]

    def _coalescing(self, st, nbytes, isz, ck, lanes):
        sg = self._sg(ck, lanes)
        seg = nbytes // SEGMENT
        key = np.unique(sg * (1 << 40) + seg)
        st.transactions += int(key.size)
        sgs, counts = np.unique(sg, return_counts=True)
        st.requests += int(sgs.size)
        st.ideal += int(((counts * isz + SEGMENT - 1) // SEGMENT).sum())
        st.lanes += int(sg.size)

    def _banks(self, st, nbytes, ck, lanes):
        sg = self._sg(ck, lanes)
        word = nbytes // 4
        bank = word % BANKS
        W = int(word.max()) + 1 if word.size else 1
        key = np.unique((sg * BANKS + bank) * W + word)          # distinct (simdgroup, bank, word)
        sgbank, ways = np.unique(key // W, return_counts=True)   # words per (simdgroup, bank)
        sgs = sgbank // BANKS
        starts = np.flatnonzero(np.r_[True, sgs[1:] != sgs[:-1]])
        worst = np.maximum.reduceat(ways, starts)
        st.requests += int(starts.size)
        st.wavefronts += int(worst.sum())
        st.max_ways = max(st.max_ways, int(worst.max()) if worst.size else 0)
        st.lanes += int(sg.size)


class _MapChecker(Checker):
    """The checked mode's per-chunk checker, also feeding the access map."""

    def acc(self, k, rel, n, m, data=None, addr=None, name=None, space=None, *more, **kw):
        super().acc(k, rel, n, m, data, addr, name, space, *more, **kw)
        sp = space or self.nodes[k][2]
        self.o.map.record(self, k, rel, m, data, addr if addr is not None else rel, name, sp)

    def acc_lin(self, k, o, n, m, data, *more, **kw):
        super().acc_lin(k, o, n, m, data, *more, **kw)
        self.o.map.record(self, k, None, m, data, None, None, self.nodes[k][2], lin=int(o))


class _MapLaunchChecker(LaunchChecker):
    map: _Recorder = None

    def chunk(self, c):
        return _MapChecker(self, c)


class AccessMapRequest:
    """The observer of one access-map launch: the checked mode with the map's checker."""

    variant = None
    checked = True

    def __init__(self):
        self.rec = _Recorder()

    def launch_checker(self, lg, nodes, tracked, name="", *more, **kw):
        lc = _MapLaunchChecker(lg, nodes, tracked, name, *more, **kw)
        lc.map = self.rec
        return lc

    def start(self, lg, prog, kernel, bufs):
        self.rec.start(lg, prog, kernel, bufs)

    def chunk(self, c):
        pass


# ----------------------------------------------------------------------------- the entry point

def access_map_kernel(kernel, *args, **launch) -> AccessMap:
    """Run ``kernel`` once on the checked simulator and return its :class:`AccessMap`
    (see :meth:`metalbench.protocol.KernelBase.access_map`)."""
    from .. import launch as L
    from ..errors import KernelCheckError
    from .debug import observing
    launch["backend"] = "sim"
    launch.pop("checked", None)
    bound = kernel.bind(*args, **launch)
    if bound.grid is None:
        L.normalize(None, None)
    req = AccessMapRequest()
    err = None
    with observing(req):
        try:
            kernel.launch(bound)
        except KernelCheckError as e:
            err = e
    rec = req.rec
    shapes = _shapes(bound)
    out = {}
    for what in ("reads", "writes", "atomics"):
        out[what] = {n: _shaped(a, shapes.get(n)) for n, a in getattr(rec, what).items()}
    groups = {n: _shaped(np.where(rec.several[n], -2, rec.first[n]), shapes.get(n)) for n in rec.first}
    lines = _merge_lines(rec.line.values())
    return AccessMap(kernel.name, out["reads"], out["writes"], out["atomics"], groups, lines,
                     bound.grid, bound.threadgroup, dict(rec.spaces), err, kernel.last_stats)


def _merge_lines(stats) -> list:
    """One :class:`LineStats` per (line, buffer, space, access): the accesses of one line
    (``x[i - 1] + x[i] + x[i + 1]``) together."""
    out: dict = {}
    for s in stats:
        key = (s.line, s.buffer, s.space, s.access)
        m = out.get(key)
        if m is None:
            out[key] = LineStats(s.line, s.buffer, s.space, s.access, s.text, s.lanes, s.requests,
                                 s.transactions, s.ideal, s.wavefronts, s.max_ways)
            continue
        m.lanes += s.lanes
        m.requests += s.requests
        m.transactions += s.transactions
        m.ideal += s.ideal
        m.wavefronts += s.wavefronts
        m.max_ways = max(m.max_ways, s.max_ways)
    return sorted(out.values(), key=lambda s: (s.line if s.line is not None else 0, s.buffer, s.access))


def _shapes(bound) -> dict:
    shapes = {}
    for name, v in bound.values.items():
        s = getattr(v, "shape", None)
        if s is not None:
            shapes[name] = tuple(int(x) for x in s)
    for name, s, _ in bound.outputs:
        shapes[name] = tuple(s)
    data = bound.data or {}
    for name, v in data.items():      # cuda.jit: (given, storage, type)
        if isinstance(v, tuple) and len(v) == 3 and getattr(v[1], "shape", None) is not None:
            shapes[name] = tuple(v[1].shape)
    return shapes


def _shaped(a, shape):
    if shape is not None and int(np.prod(shape)) == a.size:
        return a.reshape(shape)
    return a


__all__ = ["AccessMap", "LineStats", "access_map_kernel"]
