"""What a simulator launch did: sizes, time and (checked launches) memory accesses.

    >>> s = SimStats(threads=64, threadgroups=2, chunks=1, seconds=0.01)
    >>> s.device_reads is None
    True
"""
from __future__ import annotations

import html
from dataclasses import dataclass

_ROWS = [("device reads", "device_reads", "max_device_reads_per_thread"),
         ("device writes", "device_writes", "max_device_writes_per_thread"),
         ("threadgroup reads", "threadgroup_reads", "max_threadgroup_reads_per_thread"),
         ("threadgroup writes", "threadgroup_writes", "max_threadgroup_writes_per_thread")]


@dataclass
class SimStats:
    """Statistics of one simulator launch (``SimKernel.run`` returns it; kernels keep the
    last one as ``kernel.last_stats``).

    Access counts are collected by checked launches only (``None`` otherwise), so
    unchecked launches pay nothing: totals over all threads and the most by any one
    thread (the GPU-puzzles score). An atomic counts as a read and a write.
    ``coalesced`` is the share of device lane-accesses whose SIMD-group (32 lanes of one
    instruction) touched a consecutive run of elements, or one element for all.

        >>> s = SimStats(64, 2, 1, 0.01, device_reads=128, device_writes=64,
        ...              threadgroup_reads=0, threadgroup_writes=0,
        ...              max_device_reads_per_thread=2, max_device_writes_per_thread=1,
        ...              max_threadgroup_reads_per_thread=0, max_threadgroup_writes_per_thread=0,
        ...              coalesced_accesses=192, device_accesses=192)
        >>> s.coalesced, s.score
        (1.0, (2, 1))
    """
    threads: int
    threadgroups: int
    chunks: int
    seconds: float
    device_reads: int | None = None
    device_writes: int | None = None
    threadgroup_reads: int | None = None
    threadgroup_writes: int | None = None
    max_device_reads_per_thread: int | None = None
    max_device_writes_per_thread: int | None = None
    max_threadgroup_reads_per_thread: int | None = None
    max_threadgroup_writes_per_thread: int | None = None
    coalesced_accesses: int | None = None
    device_accesses: int | None = None
    #: outputs left partly unwritten: ``{name: (written, total)}`` (see ``sim/coverage.py``)
    coverage: dict | None = None

    @property
    def checked(self) -> bool:
        """Whether access counts were collected."""
        return self.device_reads is not None

    @property
    def coalesced(self) -> float | None:
        """Share (0..1) of device accesses in contiguous SIMD-group runs; None when unknown."""
        if self.device_accesses is None:
            return None
        return 1.0 if self.device_accesses == 0 else self.coalesced_accesses / self.device_accesses

    @property
    def score(self):
        """(most device reads by one thread, most device writes by one thread)."""
        return (self.max_device_reads_per_thread, self.max_device_writes_per_thread)

    def __repr__(self) -> str:
        head = (f"SimStats({self.threads} threads in {self.threadgroups} threadgroups, "
                f"{self.chunks} chunk(s), {self.seconds * 1e3:.2f} ms")
        if not self.checked:
            return head + "; access counts: run with checked=True)"
        parts = [f"{label} {getattr(self, tot)} (max {getattr(self, mx)}/thread)"
                 for label, tot, mx in _ROWS]
        return head + ";\n  " + ", ".join(parts) + f";\n  coalesced {self.coalesced:.0%})"

    def to_html(self) -> str:
        """A small HTML table (for the notebook panel)."""
        cap = (f"{self.threads} threads, {self.threadgroups} threadgroups, "
               f"{self.seconds * 1e3:.2f} ms on the simulator")
        if not self.checked:
            return (f"<div class='mb-simstats'>{html.escape(cap)}; "
                    f"access counts need <code>checked=True</code></div>")
        rows = "".join(f"<tr><td>{label}</td><td style='text-align:right'>{getattr(self, tot)}</td>"
                       f"<td style='text-align:right'>{getattr(self, mx)}</td></tr>"
                       for label, tot, mx in _ROWS)
        return ("<table class='mb-simstats'>"
                f"<caption>{html.escape(cap)}</caption>"
                "<tr><th></th><th>total</th><th>max per thread</th></tr>" + rows +
                f"<tr><td>coalesced device accesses</td><td colspan=2 style='text-align:right'>"
                f"{self.coalesced:.0%}</td></tr></table>")

    def _repr_html_(self) -> str:
        return self.to_html()


__all__ = ["SimStats"]
