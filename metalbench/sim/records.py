"""Checked mode's per-element access records: threadgroup-array state per chunk and
device-memory state per launch (last writer, barrier interval, first/other threadgroup),
with a pool that recycles their arrays between launches.
"""
from __future__ import annotations

import numpy as np


class _TgState:
    """Per chunk, per threadgroup array (all the chunk's copies, flat)."""

    def __init__(self, data, name):
        n = data.size
        self.name = name
        self.data = data  # keeps id(data) from being reused while the state lives
        self.wr = np.full(n, -1, np.int64)     # last writer (lane of the chunk)
        self.wr_ep = np.full(n, -1, np.int64)  # ... its barrier interval
        self.wr_k = np.zeros(n, np.int32)
        self.wr_sep = np.zeros(n, np.int64)    # ... its lane's SIMD ordering count (sync_checks.py)
        self.stamp = np.zeros(n, np.int64)
        self.written = np.zeros(n, bool)
        self.all_written = False               # then reads need no uninitialised check
        self.wrote = -1                        # the last interval with a write
        self.log = []
        self.nlog = 0
        self.lim = 0                           # log size of the next merge past LOG_LIMIT (checks.py)


class _Pool:
    """Per-element record arrays kept between launches: refilling mapped memory is much
    cheaper than the page faults of fresh allocations (a device buffer of 1M elements
    needs several MB of records per launch)."""

    LIMIT = 256 << 20  # bytes kept between launches at most

    def __init__(self):
        self.free: dict = {}
        self.bytes = 0

    def get(self, n, dtype, fill):
        lst = self.free.get((n, dtype))
        if lst:
            a = lst.pop()
            self.bytes -= a.nbytes
        else:
            a = np.empty(n, dtype)
        if fill is not None:
            a.fill(fill)
        return a

    def put(self, arrays):
        for a in arrays:
            lst = self.free.setdefault((a.size, a.dtype.str), [])
            if len(lst) < 8 and self.bytes + a.nbytes <= self.LIMIT:
                lst.append(a)
                self.bytes += a.nbytes


_POOL = _Pool()


class _DevState:
    """Per launch, per device buffer that the kernel may write; thread ids are global
    (threadgroup * TG + index in it), so ``t // TG`` is the threadgroup."""

    _FIELDS = ("own", "own_k", "wr", "wr_ep", "wr_k")

    def __init__(self, n):
        get = _POOL.get
        self.n = n
        # only own and wr need clearing: the others are read where those are set
        self.own = get(n, "<i4", -1)     # first thread that touched the element
        self.own_k = get(n, "<i4", None)
        self.wr = get(n, "<i4", -1)      # last non-atomic writer
        self.wr_ep = get(n, "<i4", None)  # ... its barrier interval
        self.wr_k = get(n, "<i4", None)
        self._oth = None                 # a thread of another threadgroup than own's (lazy)
        self._stamp = None
        self._wr_sep = None
        self._wr_fc = None
        self.wrote = -1                  # the last interval with a write
        self.log = []                    # this interval's reads and atomics
        self.nlog = 0
        self.lim = 0                     # log size of the next merge past LOG_LIMIT (checks.py)

    def _lazy(self):
        # rarely needed (elements touched by several threadgroups, non-unique stores)
        self._oth = np.full(self.n, -1, np.int32)
        self._oth_k = np.zeros(self.n, np.int32)
        self._hit = np.zeros(self.n, bool)

    @property
    def oth(self):
        if self._oth is None:
            self._lazy()
        return self._oth

    @property
    def oth_k(self):
        if self._oth is None:
            self._lazy()
        return self._oth_k

    @property
    def hit(self):  # a race on the element was already reported
        if self._oth is None:
            self._lazy()
        return self._hit

    @property
    def stamp(self):
        if self._stamp is None:
            self._stamp = np.zeros(self.n, np.int64)
        return self._stamp

    @property
    def wr_fc(self):  # the last writer's count of device fences when it wrote (lazy)
        if self._wr_fc is None:
            self._wr_fc = np.zeros(self.n, np.int32)
        return self._wr_fc

    @property
    def wr_sep(self):  # the last writer's SIMD ordering count for device memory (lazy)
        if self._wr_sep is None:
            self._wr_sep = np.zeros(self.n, np.int64)
        return self._wr_sep

    def release(self):
        _POOL.put([getattr(self, f) for f in self._FIELDS])
