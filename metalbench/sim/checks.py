"""Checked mode: findings at loads, stores, atomics and barriers, and access counts.

The generated program of a checked kernel calls :class:`Checker` before every memory
access (``acc``) and at every threadgroup barrier (``barrier``). Data-race and
uninitialised-read detection will hook into the same calls.

    >>> import numpy as np
    >>> ck = Checker([(None, "x", "device", "read")], groups=1, tg=4, exist=None)
    >>> ck.acc(0, np.arange(4), 4, None); ck.device_reads
    4
"""
from __future__ import annotations

import numpy as np

from .memory import OutOfBounds, check


class DivergentBarrier(Exception):
    """A threadgroup barrier reached by only part of a threadgroup."""

    def __init__(self, k, bad_groups, m):
        super().__init__(k)
        self.k, self.bad_groups, self.m = k, bad_groups, m


class Checker:
    """Per-chunk checker; ``nodes`` is the program's node table."""

    def __init__(self, nodes, groups, tg, exist):
        self.nodes = nodes
        self.G, self.TG = groups, tg
        self.exist = exist
        self.device_reads = self.device_writes = 0
        self.threadgroup_reads = self.threadgroup_writes = 0

    def acc(self, k, rel, n, m):
        """Bounds-check ``0 <= rel < n`` on the active lanes and count the access."""
        check(rel, n, m, k)
        _, _, space, access = self.nodes[k]
        if m is None:
            c = self.G * self.TG if self.exist is None else int(np.count_nonzero(self.exist))
        elif m is False:
            c = 0
        else:
            c = int(np.count_nonzero(m))
        if space == "threadgroup":
            if access in ("read", "atomic"):
                self.threadgroup_reads += c
            if access in ("write", "atomic"):
                self.threadgroup_writes += c
        elif space in ("device", "constant"):
            if access in ("read", "atomic"):
                self.device_reads += c
            if access in ("write", "atomic"):
                self.device_writes += c

    def barrier(self, m, k):
        """Every existing thread of a threadgroup must reach a barrier, or none."""
        if m is None or m is False:
            return
        act = m.reshape(self.G, self.TG).sum(axis=1)
        ex = (np.full(self.G, self.TG) if self.exist is None
              else self.exist.reshape(self.G, self.TG).sum(axis=1))
        bad = np.flatnonzero((act > 0) & (act < ex))
        if bad.size:
            raise DivergentBarrier(k, bad, m)


__all__ = ["Checker", "DivergentBarrier", "OutOfBounds"]
