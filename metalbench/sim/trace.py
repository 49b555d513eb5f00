"""Per-thread traces: every assignment a chosen thread executes, in order.

``k.trace(*args, thread=5, grid=..., threadgroup=...)`` runs the kernel once on the
simulator with a program variant that records, after each assignment to a local, each
store and each loop iteration, the chosen lanes' values (taken from the lane vectors:
no per-thread Python). Loops record their variable at the start of every iteration,
so each iteration has its own records::

    >>> import numpy as np, metalbench as mb
    >>> k = mb.kernel(source='''
    ... def csum(x, out: mb.Out):
    ...     i = thread_position_in_grid.x
    ...     acc = 0.0
    ...     for j in range(3):
    ...         acc += x[i] * j
    ...     out[i] = acc
    ... ''')
    >>> tr = k.trace(np.ones(4, np.float32), thread=2, grid=4, threadgroup=4)
    >>> [(r.line, r.name, float(r.value)) for r in tr.rows if r.name in ("acc", "j")][:4]
    [(4, 'acc', 0.0), (5, 'j', 0.0), (6, 'acc', 0.0), (5, 'j', 1.0)]
    >>> [float(v) for v in tr.values("acc")]
    [0.0, 0.0, 1.0, 3.0]
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field

import numpy as np

from .. import ir
from .codegen import Gen
from .printing import linear_ids

# Records one trace keeps at most (a long loop in the traced thread is cut there).
MAX_RECORDS = 200_000


def display_name(var: ir.Var) -> str:
    """The variable's name as the user wrote it (its declaration's text), else its IR name."""
    sp = getattr(var, "span", None)
    if sp is not None and sp.source is not None and (sp.end_line in (None, sp.line)) and sp.end_col:
        text = sp.source.line(sp.line)[sp.col:sp.end_col].strip()
        if text.isidentifier():
            return text
    return var.name


# ----------------------------------------------------------------------------- the program variant

class TraceGen(Gen):
    """The generator of the trace variant: the ordinary program plus ``_c.tr.rec(...)``
    after every assignment, store and loop-iteration start."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self._pre: dict = {}
        self._loops: list = []

    def _rec_node(self, node, name):
        return self.node(node, name, None, "trace")

    def ex(self, e):
        got = self._pre.get(id(e))
        if got is not None:
            return got
        return super().ex(e)

    def stmt(self, s) -> bool:
        if isinstance(s, ir.Store):
            idx = self._name(self.tuple_or(self.ex(s.index)))
            val = self._name(self.tuple_or(self.ex(s.value)))
            self._pre[id(s.index)], self._pre[id(s.value)] = idx, val
            try:
                r = super().stmt(s)
            finally:
                self._pre.pop(id(s.index), None)
                self._pre.pop(id(s.value), None)
            k = self._rec_node(s, s.buf)
            self.emit(f"_c.tr.rec({k}, {val}, {self.m}, {idx})")
            return r
        r = super().stmt(s)
        if isinstance(s, (ir.Decl, ir.Assign)) and (isinstance(s, ir.Assign) or s.init is not None) \
                and not s.var.name.startswith("_"):
            k = self._rec_node(s, display_name(s.var))
            self.emit(f"_c.tr.rec({k}, {self.tuple_or(self.ex_Var(s.var))}, {self.m})")
        return r

    def loop(self, s):
        self._loops.append(s)
        try:
            super().loop(s)
        finally:
            self._loops.pop()

    def block(self, stmts):
        s = self._loops[-1] if self._loops else None
        if isinstance(s, ir.For) and stmts is s.body and not s.var.name.startswith("_"):
            # the start of an iteration: record the loop variable (not the front end's own
            # counters, such as the index behind `for v in x`)
            k = self._rec_node(s, display_name(s.var))
            self.emit(f"_c.tr.rec({k}, v_{s.var.name}, {self.m})")
        super().block(stmts)


# ----------------------------------------------------------------------------- recording

class Tracer:
    """The observer of one traced launch: which lanes of each chunk are traced, and
    their records ``(step, node, thread slot, value, index)``."""

    variant = "trace"
    checked = False
    launch_checker = None

    def __init__(self, threads: list[int]):
        self.want = np.asarray(sorted(set(threads)), np.int64)
        self.records: list = []      # (node k, slots array, values array or scalar, index)
        self.nodes = None
        self.kernel = None
        self.grid = None
        self.truncated = False
        self.lanes = None
        self.slots = None

    def start(self, lg, prog, kernel, bufs):
        self.nodes = prog.nodes
        self.kernel = kernel
        self.grid = lg.grid

    def chunk(self, c):
        c.tr = self
        ids = linear_ids(c.attr("thread_position_in_grid"), self.grid)
        if not isinstance(ids, np.ndarray):
            ids = np.full(c.L, ids, np.int64)
        if c.exist is not None:
            ids = np.where(c.exist, ids, -1)
        hit = np.isin(ids, self.want)
        if not hit.any():
            self.lanes = None
            return
        self.lanes = np.flatnonzero(hit)
        self.slots = np.searchsorted(self.want, ids[self.lanes])

    def rec(self, k, v, m, idx=None):
        lanes = self.lanes
        if lanes is None or m is False:
            return
        if m is None:
            sel = slice(None)
        else:
            act = m[lanes]
            if not act.any():
                return
            sel = act if not act.all() else slice(None)
        if len(self.records) >= MAX_RECORDS:
            self.truncated = True
            return
        ln = lanes[sel]
        self.records.append((k, self.slots[sel], _take(v, ln), None if idx is None else _take(idx, ln)))


def _take(v, lanes):
    if isinstance(v, tuple):
        return tuple(_take(c, lanes) for c in v)
    if isinstance(v, np.ndarray) and v.ndim:
        return v[lanes]
    return v


def _at(v, j):
    if isinstance(v, tuple):
        return tuple(_at(c, j) for c in v)
    if isinstance(v, np.ndarray) and v.ndim:
        return v[j]
    return v


# ----------------------------------------------------------------------------- the result

@dataclass
class Step:
    """One record of a trace: at source ``line`` (as the user sees it), ``name`` got
    ``value`` (for a store ``name`` is ``buf[index]``); ``thread`` is the thread's
    position, ``step`` the record's number in execution order."""
    step: int
    line: int | None
    name: str
    value: object
    thread: tuple
    kind: str = "assign"           # "assign", "store" or "loop"
    index: int | None = None
    text: str = ""                 # the source line

    def __iter__(self):            # (line, name, value), as DESIGN.md shows the rows
        return iter((self.line, self.name, self.value))


@dataclass
class Trace:
    """The trace of one launch for some threads: ``rows`` (all records in execution order;
    for several threads, each step's threads in order), ``threads`` (their positions),
    ``table`` (threads x steps), ``source`` (the kernel's text, for the panel)."""
    kernel: str
    threads: list
    rows: list
    grid: tuple
    source: object = None
    truncated: bool = False
    _steps: list = field(default_factory=list)

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i]

    def for_thread(self, thread) -> "Trace":
        """The records of one of the traced threads (a position tuple or a linear index)."""
        pos = _pos(thread, self.grid)
        rows = [r for r in self.rows if r.thread == pos]
        return Trace(self.kernel, [pos], rows, self.grid, self.source, self.truncated)

    def values(self, name: str, thread=None) -> list:
        """The values ``name`` took, in order (of ``thread`` when several were traced)."""
        rows = self.rows if thread is None else self.for_thread(thread).rows
        return [r.value for r in rows if r.name == name]

    @property
    def table(self) -> "TraceTable":
        """Threads x steps: ``values[t, s]`` is what thread ``t`` assigned at step ``s``
        (None where it did not run that step)."""
        steps = self._steps
        vals = np.full((len(self.threads), len(steps)), None, object)
        idx = {t: i for i, t in enumerate(self.threads)}
        for r in self.rows:
            vals[idx[r.thread], r.step] = r.value
        return TraceTable(self.threads, steps, vals)

    def lines(self) -> list:
        """The distinct source lines the trace passes, in order of first execution."""
        seen = []
        for r in self.rows:
            if r.line not in seen:
                seen.append(r.line)
        return seen

    def __repr__(self):
        who = f"thread {self.threads[0]}" if len(self.threads) == 1 else f"{len(self.threads)} threads"
        return f"<Trace of {self.kernel!r}, {who}: {len(self.rows)} records>"

    def __str__(self):
        """The records as a text table (what ``print(tr)`` shows outside a notebook)."""
        head = repr(self)
        rows = [(str(r.step), str(r.line), str(r.thread) if len(self.threads) > 1 else None, r.name,
                 fmt_value(r.value), r.text.strip()) for r in self.rows[:500]]
        cols = ["step", "line", "thread" if len(self.threads) > 1 else None, "name", "value", "source"]
        keep = [i for i, c in enumerate(cols) if c is not None]
        table = [[cols[i] for i in keep]] + [[row[i] for i in keep] for row in rows]
        width = [max(len(r[j]) for r in table) for j in range(len(keep) - 1)]
        lines = ["  ".join(c.rjust(w) if j in (0, 1) else c.ljust(w) for j, (c, w) in enumerate(zip(r, width)))
                 + "  " + r[-1] for r in table]
        more = [f"... {len(self.rows) - 500} more records"] if len(self.rows) > 500 else []
        return "\n".join([head] + lines + more)

    def _repr_html_(self) -> str:
        if len(self.threads) > 1:
            return self.table._repr_html_()
        head = (f"<b>trace of {html.escape(self.kernel)}</b>, thread {self.threads[0] if self.threads else '?'}: "
                f"{len(self.rows)} records" + (" (truncated)" if self.truncated else ""))
        rows = "".join(f"<tr><td style='text-align:right'>{r.step}</td><td style='text-align:right'>{r.line}</td>"
                       f"<td><code>{html.escape(r.name)}</code></td><td style='text-align:right'>"
                       f"<code>{html.escape(fmt_value(r.value))}</code></td>"
                       f"<td><code style='color:#666'>{html.escape(r.text.strip())}</code></td></tr>"
                       for r in self.rows[:2000])
        more = f"<p>... {len(self.rows) - 2000} more</p>" if len(self.rows) > 2000 else ""
        return (f"<div class='mb-trace'>{head}<table><tr><th>step</th><th>line</th><th>name</th><th>value</th>"
                f"<th>source</th></tr>{rows}</table>{more}</div>")


@dataclass
class TraceTable:
    """A trace of several threads as a table: ``threads`` (rows), ``steps`` ((line, name)
    per column), ``values`` (object array, None where the thread did not run the step)."""
    threads: list
    steps: list
    values: np.ndarray

    def __repr__(self):
        """Threads as rows, steps as columns (``name@line``), as text."""
        steps = self.steps[:40]
        head = ["thread"] + [f"{n}@{ln}" for ln, n in steps]
        rows = [[str(t)] + ["" if v is None else fmt_value(v) for v in row[:40]]
                for t, row in zip(self.threads[:64], self.values[:64])]
        width = [max(len(r[j]) for r in [head] + rows) for j in range(len(head))]
        out = ["  ".join(c.rjust(w) for c, w in zip(r, width)) for r in [head] + rows]
        if len(self.steps) > 40 or len(self.threads) > 64:
            out.append(f"... ({len(self.threads)} threads x {len(self.steps)} steps in all; .values has them)")
        return "\n".join(out)

    def to_pandas(self):
        import pandas as pd
        cols = [f"{s}:{ln}:{n}" for s, (ln, n) in enumerate(self.steps)]
        return pd.DataFrame(self.values, index=[str(t) for t in self.threads], columns=cols)

    def _repr_html_(self) -> str:
        steps = self.steps[:200]
        head = "".join(f"<th title='line {ln}'>{html.escape(n)}<br/><small>line {ln}</small></th>"
                       for ln, n in steps)
        body = []
        for t, row in zip(self.threads[:64], self.values[:64]):
            cells = "".join(f"<td style='text-align:right'>{'' if v is None else html.escape(fmt_value(v))}</td>"
                            for v in row[:200])
            body.append(f"<tr><th>{html.escape(str(t))}</th>{cells}</tr>")
        return (f"<div class='mb-trace-table' style='overflow:auto'><table><tr><th>thread</th>{head}</tr>"
                + "".join(body) + "</table></div>")


def fmt_value(v) -> str:
    if isinstance(v, tuple):
        return "(" + ", ".join(fmt_value(c) for c in v) + ")"
    return str(v)


def _pos(thread, grid) -> tuple:
    if isinstance(thread, (tuple, list)):
        p = tuple(int(x) for x in thread)
        return p + (0,) * (3 - len(p))
    t = int(thread)
    gx, gy, _ = grid
    return (t % gx, (t // gx) % gy, t // (gx * gy))


def build(tracer: Tracer, threads_pos: list, kernel_name: str, source=None) -> Trace:
    """The :class:`Trace` of a finished traced launch."""
    rows, steps = [], []
    for step, (k, slots, v, idx) in enumerate(tracer.records):
        node, name, _, _ = tracer.nodes[k]
        sp = getattr(node, "span", None)
        line = sp.line if sp is not None else None
        text = sp.source.line(sp.line) if sp is not None and sp.source is not None else ""
        kind = "store" if isinstance(node, ir.Store) else "loop" if isinstance(node, ir.For) else "assign"
        steps.append((line, name if idx is None else f"{name}[]"))
        for j, slot in enumerate(np.asarray(slots).reshape(-1)):
            val = _at(v, j)
            index = None if idx is None else int(_at(idx, j))
            nm = name if index is None else f"{name}[{index}]"
            rows.append(Step(step, line, nm, val, threads_pos[int(slot)], kind, index, text))
    if source is None:
        for n, *_ in tracer.nodes:
            sp = getattr(n, "span", None)
            if sp is not None and sp.source is not None:
                source = sp.source
                break
    return Trace(kernel_name, list(threads_pos), rows, tracer.grid, source, tracer.truncated, steps)


# ----------------------------------------------------------------------------- the entry point

def selected_threads(grid, thread=None, group=None, threadgroup=None) -> list[tuple]:
    """The positions ``thread=`` (an int, a position tuple, or a list of them) or
    ``group=`` (a threadgroup's position or linear index: all its threads) select."""
    from ..errors import KernelLaunchError
    n = grid[0] * grid[1] * grid[2]
    out = []
    if group is not None:
        tg = threadgroup
        ng = tuple(-(-g // t) for g, t in zip(grid, tg))
        gp = _pos(group, ng)
        if any(not 0 <= a < b for a, b in zip(gp, ng)):
            raise KernelLaunchError(f"trace: threadgroup {gp} is outside the launch's {ng} threadgroups")
        lo = [a * t for a, t in zip(gp, tg)]
        hi = [min(g, lo_ + t) for g, lo_, t in zip(grid, lo, tg)]
        out = [(x, y, z) for z in range(lo[2], hi[2]) for y in range(lo[1], hi[1]) for x in range(lo[0], hi[0])]
    if thread is not None:
        items = thread if isinstance(thread, list) or (isinstance(thread, tuple) and thread
                                                       and isinstance(thread[0], (tuple, list))) else [thread]
        for t in items:
            p = _pos(t, grid)
            if isinstance(t, (int, np.integer)) and not 0 <= int(t) < n or any(
                    not 0 <= a < b for a, b in zip(p, grid)):
                raise KernelLaunchError(f"trace: thread {t} is outside the grid {tuple(grid)} ({n} threads)",
                                        hint="thread= takes a linear position (0 .. grid size - 1) or a "
                                             "position tuple")
            if p not in out:
                out.append(p)
    if not out:
        out = [(0, 0, 0)]
    return out


def trace_kernel(kernel, *args, thread=None, group=None, **launch) -> Trace:
    """Run ``kernel`` once on the simulator and return the trace of the chosen threads
    (``thread=0`` by default). See :meth:`metalbench.protocol.KernelBase.trace`."""
    from .. import launch as L
    from .debug import observing
    launch["backend"] = "sim"
    bound = kernel.bind(*args, **launch)
    if bound.grid is None:
        L.normalize(None, None)
    pos = selected_threads(bound.grid, thread, group, bound.threadgroup)
    tracer = Tracer([int(linear_ids(p, bound.grid)) for p in pos])
    with observing(tracer):
        kernel.launch(bound)
    order = sorted(pos, key=lambda p: int(linear_ids(p, bound.grid)))
    return build(tracer, order, kernel.name)
