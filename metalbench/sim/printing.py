"""Kernel prints on the simulator: each executing thread prints its lines, tagged with its
``thread_position_in_grid``, in thread order, through Python's ``print`` (so notebooks
and ``contextlib.redirect_stdout`` capture them).

A print statement records, per execution, the active lanes and their values (lane
vectors, never a loop over threads); the launch prints at its end. Without
``print_threads=`` the output is bounded (:data:`PRINT_LIMIT` lines, then one line
summarising the rest), and lanes past the first threads are dropped as they come, so
a 1M-thread launch costs little and cannot flood a notebook::

    >>> import numpy as np, metalbench as mb
    >>> from metalbench.dsl import thread_position_in_grid
    >>> k = mb.kernel(source='''
    ... def show(x, out: mb.Out):
    ...     i = thread_position_in_grid.x
    ...     print("x =", x[i])
    ...     out[i] = x[i]
    ... ''')
    >>> _ = k(np.arange(8, dtype=np.float32), grid=8, threadgroup=4, backend="sim", print_threads=[1, 6])
    [thread 1] x = 1.0
    [thread 6] x = 6.0
"""
from __future__ import annotations

import contextlib
import contextvars
import os

import numpy as np

from .. import ir
from ..codegen.printf import format_c

# Lines a launch prints without print_threads= (the last one summarises the rest).
PRINT_LIMIT = int(os.environ.get("METALBENCH_PRINT_LIMIT", "100"))

_SELECTED: contextvars.ContextVar = contextvars.ContextVar("metalbench_print_threads", default=None)


@contextlib.contextmanager
def print_threads(threads):
    """Within the block, simulator launches print only for ``threads`` (linear positions in
    the grid or position tuples); ``None`` restores the bounded default."""
    tok = _SELECTED.set(None if threads is None else list(threads))
    try:
        yield
    finally:
        _SELECTED.reset(tok)


# ----------------------------------------------------------------------------- code generation

def gen_print(g, s: ir.Print) -> None:
    """Emit the simulator code of print statement ``s`` (``g`` is the generator)."""
    k = g.node(s, None, None, "print")
    vals = [g.tuple_or(g.ex(a)) for a in s.args]
    tup = "(" + ", ".join(vals) + ("," if len(vals) == 1 else "") + ")"
    g.emit(f"_c.prints.add({k}, {g.m}, {tup})")


def has_prints(kernel: ir.KernelIR) -> bool:
    """Whether the kernel (or a device function it calls) prints."""
    nodes = list(ir.walk(kernel.body))
    for f in kernel.functions:
        nodes.extend(ir.walk(f.body))
    return any(isinstance(n, ir.Print) for n in nodes)


# ----------------------------------------------------------------------------- the launch's lines

def linear_ids(pos, grid) -> np.ndarray | int:
    """Linear position ``x + gx * (y + gy * z)`` of thread positions (lane vectors or ints)."""
    x, y, z = (np.asarray(p, np.int64) if isinstance(p, np.ndarray) else int(p) for p in pos)
    return x + grid[0] * (y + grid[1] * z)


def selection(threads, grid) -> np.ndarray:
    """``print_threads=`` as sorted linear positions; tuples are positions, ints linear.
    Positions outside the grid select nothing (a 1-D launch has no thread (3, 1))."""
    out = []
    n = grid[0] * grid[1] * grid[2]
    for t in threads:
        if isinstance(t, (tuple, list)):
            p = tuple(int(v) for v in t) + (0,) * (3 - len(t))
            if len(p) == 3 and all(0 <= v < g for v, g in zip(p, grid)):
                out.append(linear_ids(p, grid))
        else:
            v = int(t)
            if 0 <= v < n:
                out.append(v)
    return np.unique(np.asarray(out, np.int64))


class PrintSink:
    """What one launch's print statements recorded: per execution, the sequence number,
    the printing threads' linear positions and their values."""

    def __init__(self, launch, nodes, limit: int | None = PRINT_LIMIT):
        self.grid = launch.grid
        self.nodes = nodes
        self.dims = 3 if self.grid[2] > 1 else 2 if self.grid[1] > 1 else 1
        sel = _SELECTED.get()
        self.select = None if sel is None else selection(sel, self.grid)
        self.limit = None if self.select is not None else limit
        self.records: list = []     # (seq, linear ids, values restricted to those lanes)
        self.kept = 0
        self.total = 0
        self.threads: set | None = set() if self.select is None else None
        self.cut = None             # drop lanes above this id (bounded output)
        self.seq = 0
        self.c = None
        self._ids = None
        self.enabled = True

    def chunk(self, c) -> None:
        self.c = c
        self._ids = None

    def _lane_ids(self):
        if self._ids is None:
            self._ids = linear_ids(self.c.attr("thread_position_in_grid"), self.grid)
            if not isinstance(self._ids, np.ndarray):
                self._ids = np.full(self.c.L, self._ids, np.int64)
        return self._ids

    def add(self, k, m, values) -> None:
        """One execution of print node ``k`` under mask ``m`` with ``values`` (scalars or lane vectors)."""
        if m is False or not self.enabled:
            return
        ids = self._lane_ids()
        lanes = None
        if m is not None:
            lanes = np.flatnonzero(m)
        elif self.c.exist is not None:
            lanes = np.flatnonzero(self.c.exist)
        tid = ids if lanes is None else ids[lanes]
        self.seq += 1
        if self.select is not None:
            keep = np.isin(tid, self.select)
        else:
            self.total += tid.size
            if self.limit is not None and len(self.threads) <= self.limit:
                self.threads.update(np.unique(tid[:self.limit + 1]).tolist())
            keep = None if self.cut is None else tid <= self.cut
        if keep is not None:
            if not keep.any():
                return
            sub = np.flatnonzero(keep)
            lanes = sub if lanes is None else lanes[sub]
            tid = tid[sub]
        vals = tuple(_pick(v, lanes) for v in values)
        self.records.append((self.seq, k, tid, vals))
        self.kept += tid.size
        if self.limit is not None and self.kept > 4 * self.limit + 64:
            self._prune()

    def _prune(self) -> None:
        """Keep the first ``limit`` lines in (thread, sequence) order."""
        tid = np.concatenate([r[2] for r in self.records])
        seq = np.concatenate([np.full(r[2].size, r[0], np.int64) for r in self.records])
        order = np.lexsort((seq, tid))[:self.limit]
        self.cut = int(tid[order[-1]])
        new, kept = [], 0
        for s, k, t, v in self.records:
            keep = t <= self.cut
            if keep.all():
                new.append((s, k, t, v))
            elif keep.any():
                sub = np.flatnonzero(keep)
                new.append((s, k, t[sub], tuple(_pick(x, sub) for x in v)))
            else:
                continue
            kept += new[-1][2].size
        self.records, self.kept = new, kept

    def lines(self) -> list[str]:
        """The text to print: the lines in thread order, then (bounded) a summary."""
        entries = []      # (tid, seq, text, tagged)
        for seq, k, tid, vals in self.records:
            s = self.nodes[k][0]
            for j in range(tid.size):
                entries.append((int(tid[j]), seq, _render(s, vals, j), s.tag is not None))
        entries.sort(key=lambda e: (e[0], e[1]))
        out, per_thread = [], {}
        for tid, _, text, tagged in entries:
            per_thread.setdefault(tid, []).append((text, tagged))
        for tid, items in per_thread.items():
            text = "".join(t for t, _ in items)
            body = text[:-1] if text.endswith("\n") else text
            for ln in body.split("\n"):
                out.append(f"[thread {self._pos_text(tid)}] {ln}" if items[0][1] else ln)
        if self.limit is not None and self.total > len(entries) or \
                (self.limit is not None and len(out) > self.limit):
            shown = out[:max(0, self.limit - 1)]
            nthreads = len(self.threads)
            out = shown + [f"... {self.total - len(shown)} more print(s) not shown "
                           f"({nthreads}{'+' if nthreads > self.limit else ''} threads printed; "
                           f"select threads with print_threads=[...])"]
        return out

    def _pos_text(self, tid: int) -> str:
        gx, gy, _ = self.grid
        x, y, z = tid % gx, (tid // gx) % gy, tid // (gx * gy)
        if self.dims == 1:
            return str(x)
        return str((x, y) if self.dims == 2 else (x, y, z))

    def flush(self) -> None:
        """Print the lines (Python's ``print``: captured like any output)."""
        for ln in self.lines():
            print(ln)


def _pick(v, lanes):
    if isinstance(v, tuple):
        return tuple(_pick(c, lanes) for c in v)
    if isinstance(v, np.ndarray) and v.ndim:
        return v if lanes is None else v[lanes]
    return v


def _at(v, j):
    if isinstance(v, tuple):
        return tuple(_at(c, j) for c in v)
    if isinstance(v, np.ndarray) and v.ndim:
        return v[j]
    return v


def _render(s: ir.Print, vals, j) -> str:
    parts = [s.text[0]]
    for (kind, spec), v, t in zip(s.specs, vals, s.text[1:]):
        x = _at(v, j)
        parts.append(format(x, spec) if kind == "py" else format_c(spec, x))
        parts.append(t)
    return "".join(parts)
