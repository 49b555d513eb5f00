"""Timing, sweeps over launch configurations, and autotuning.

    t = saxpy.bench(2.0, x, y, grid=n, threadgroup=256)            # Timing: median, iqr, runs
    s = saxpy.sweep(2.0, x, y, grid=n, threadgroup=[64, 128, 256], ref=lambda a, x, y: a * x + y)
    s.rows, s.best, s.plot()
    out = saxpy(2.0, x, y, **s.best)                               # the best configuration
    best = saxpy.autotune(2.0, x, y, grid=n)                       # remembered on disk

GPU launches are queued in batches with one ``mx.synchronize()`` each (Triton's
``do_bench`` is the model: adaptive repeats, quantiles, optional L2 flush), so the
times are kernel time per launch; ``Timing.per_call`` adds one launch waited for on
its own. The simulator runs synchronously: its wall-clock time is *simulator time*,
not a GPU's (``metalbench.devices.estimate`` models a GPU's).
"""
from __future__ import annotations

import base64
import hashlib
import html
import io
import itertools
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import launch as L
from .check import BadReferenceError, Launch, check_outputs
from .errors import MetalbenchError, user_facing


# ----------------------------------------------------------------------------- timing

def _Figure(*args, **kwargs):
    """A matplotlib Figure that shows itself in notebooks without pyplot (``_repr_png_``)."""
    from matplotlib.figure import Figure

    class MBFigure(Figure):
        def _repr_png_(self):
            buf = io.BytesIO()
            self.savefig(buf, format="png", bbox_inches="tight")
            return buf.getvalue()

    return MBFigure(*args, **kwargs)


@dataclass
class Timing:
    """Run times of one launch configuration, in seconds.

    ``runs``: the kernel time per launch, one value per timed batch (on a GPU a batch is
    ``launches_per_sync`` launches queued back to back and one synchronisation, as
    Triton's ``do_bench`` and ``benchmarks/gpu.py`` time; on the simulator, one launch).
    ``per_call``: times of single launches each waited for (launch + run + sync: what
    one call in a script costs). ``flushed``: the L2 cache was flushed before each
    launch (its own time subtracted).

    >>> t = Timing([0.002, 0.001, 0.003], backend="sim", nbytes=3_000_000)
    >>> round(t.median, 4), round(t.gbps, 2), round(t.quantile(0.2), 4)
    (0.002, 1.5, 0.0014)
    """
    runs: list
    backend: str = "sim"
    nbytes: int | None = None
    warmup: int = 0
    config: dict = field(default_factory=dict)
    per_call_runs: list = field(default_factory=list)
    launches_per_sync: int = 1
    flushed: bool = False

    @property
    def median(self) -> float:
        return float(np.median(self.runs)) if self.runs else float("nan")

    def quantile(self, q: float) -> float:
        """The ``q`` quantile (0..1) of the per-launch times."""
        return float(np.quantile(self.runs, q)) if self.runs else float("nan")

    @property
    def quantiles(self) -> dict:
        """``{0.2: .., 0.5: .., 0.8: ..}``: the quantiles ``do_bench`` reports."""
        return {q: self.quantile(q) for q in (0.2, 0.5, 0.8)}

    @property
    def q1(self) -> float:
        return self.quantile(0.25)

    @property
    def q3(self) -> float:
        return self.quantile(0.75)

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def min(self) -> float:
        return float(np.min(self.runs)) if self.runs else float("nan")

    @property
    def per_call(self) -> float:
        """Median time of one launch waited for on its own (NaN if not measured)."""
        return float(np.median(self.per_call_runs)) if self.per_call_runs else float("nan")

    @property
    def gbps(self) -> float | None:
        """Bytes read and written per second, in GB/s (None if the byte count is unknown)."""
        if not self.nbytes or not self.runs or self.median <= 0:
            return None
        return self.nbytes / self.median / 1e9

    def __str__(self) -> str:
        bw = f", {self.gbps:.3g} GB/s" if self.gbps is not None else ""
        what = "simulator time" if self.backend == "sim" else f"{self.backend} kernel time"
        s = (f"{fmt_time(self.median)} median ({what}), IQR {fmt_time(self.iqr)} over {len(self.runs)} runs"
             f"{bw}")
        if self.backend != "sim":
            s += f"; {self.launches_per_sync} launches per sync"
            if self.per_call_runs:
                s += f", {fmt_time(self.per_call)} per call with its sync"
            if self.flushed:
                s += ", L2 flushed"
        return s

    __repr__ = __str__

    def plot(self, ax=None):
        """The individual run times (ms) with the median and IQR marked; returns the figure."""
        if ax is None:
            fig = _Figure(figsize=(4, 1.6), dpi=90)
            ax = fig.subplots()
        else:
            fig = ax.figure
        ms = np.array(self.runs) * 1e3
        ax.axvspan(self.q1 * 1e3, self.q3 * 1e3, color="#ddf4ff", label="IQR")
        ax.axvline(self.median * 1e3, color="#0969da", label="median")
        ax.plot(ms, np.zeros_like(ms), "o", color="#57606a", alpha=0.7)
        ax.set_yticks([])
        ax.set_xlabel("time (ms)")
        ax.legend(loc="upper right", fontsize=7)
        fig.tight_layout()
        return fig

    def plot_png(self) -> str:
        buf = io.BytesIO()
        self.plot().savefig(buf, format="png", bbox_inches="tight")
        return base64.b64encode(buf.getvalue()).decode()

    def _repr_html_(self) -> str:
        return f'<div class="metalbench-timing"><b>timing</b> {html.escape(str(self))}</div>'


def fmt_time(s: float) -> str:
    """``0.00123`` → ``'1.23 ms'``."""
    if s != s:
        return "n/a"
    for unit, f in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= f:
            return f"{s / f:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


# Triton's do_bench: flush a buffer larger than any GPU's last-level cache (the H200's L2
# is 50 MB, an M-series SLC up to 96 MB) before each launch when asked to.
L2_FLUSH_BYTES = 256 << 20
_MAX_INNER = 1000              # launches per synchronisation, at most
_BATCH_SECONDS = 2e-3          # a batch long enough that the sync latency (~10-30 µs) is small
_QUEUE_BYTES = 2 << 30         # outputs alive in one batch, at most (MLX frees them as they complete)


def plan_batches(per_launch: float, budget: float, out_bytes: int = 0, repeats: int | None = None) -> tuple[int, int]:
    """``(launches per sync, batches)`` for a kernel taking about ``per_launch`` seconds:
    batches of at least 2 ms (so one synchronisation's latency is amortised) within
    ``budget`` seconds in all, at least 5 batches (``repeats`` batches when given).

    >>> plan_batches(5e-6, 0.2)          # a 5 µs kernel: 400 launches per sync, 100 batches
    (400, 100)
    >>> plan_batches(0.05, 0.2)          # a 50 ms kernel: one launch per sync, 5 batches
    (1, 5)
    >>> plan_batches(5e-6, 0.2, out_bytes=64 << 20)[0]   # big outputs: fewer in flight
    32
    """
    per_launch = max(per_launch, 1e-7)
    inner = int(min(_MAX_INNER, max(1, -(-_BATCH_SECONDS // per_launch))))
    if out_bytes:
        inner = max(1, min(inner, _QUEUE_BYTES // out_bytes))
    if repeats is not None:
        return inner, max(1, int(repeats))
    batches = int(budget // (inner * per_launch))
    return inner, max(5, min(batches, 1000))


def time_launch(launch: Launch, warmup: int = 1, repeats: int | None = None, max_time: float = 2.0,
                flush_l2: bool = False, per_call: bool = True, **override) -> tuple[Timing, list]:
    """Time ``launch`` (with ``override`` launch keywords); returns the timing and the
    outputs of the first run (for checking).

    On a GPU: ``warmup`` launches, then (``per_call``) a few single launches each waited
    for, then batches of launches queued back to back with one synchronisation each
    (:func:`plan_batches`: ``repeats`` batches, or as many as fit ``max_time`` seconds);
    ``Timing.runs`` holds each batch's time per launch. ``flush_l2``: write a 256 MB
    buffer before every launch and subtract that write's own time. On the simulator
    (synchronous) each run is one launch, ``repeats`` of them (default 3) unless
    ``max_time`` runs out first.
    """
    bound = launch.bind(**override)
    backend = bound.backend

    def call():
        # One binding serves every run, unless a launch changes its values (cuda.jit
        # kernels write their arguments: each run gets fresh copies).
        return launch.call(bound if bound.reusable else launch.bind(**override))
    first = None
    for _ in range(max(1 if backend in ("metal", "cuda") else 0, warmup)):
        outs = call()
        launch.sync(outs, backend)
        if first is None:
            first = outs
    if backend not in ("metal", "cuda"):
        runs, spent = [], 0.0
        for i in range(max(1, repeats if repeats is not None else 3)):
            t0 = time.perf_counter()
            outs = call()
            launch.sync(outs, backend)
            dt = time.perf_counter() - t0
            runs.append(dt)
            spent += dt
            if first is None:
                first = outs
            # The simulator can be slow on big grids: stop early once enough time is spent.
            if spent > max_time and i >= 2:
                break
        nbytes = bound.input_bytes() + int(sum(getattr(o, "nbytes", 0) for o in first))
        return Timing(runs, backend, nbytes or None, warmup, bound.config(), list(runs), 1), first
    out_bytes = int(sum(getattr(o, "nbytes", 0) for o in first))
    calls = []
    for _ in range(5 if per_call else 0):
        t0 = time.perf_counter()
        launch.sync(call(), backend)
        calls.append(time.perf_counter() - t0)
    flush = _Flush(launch, backend) if flush_l2 else None
    # the per-launch time of a short probe batch sizes the real ones
    probe = _batch(launch, call, backend, 10, flush)
    inner, batches = plan_batches(probe, max_time, out_bytes, repeats)
    runs = [_batch(launch, call, backend, inner, flush) for _ in range(batches)]
    nbytes = bound.input_bytes() + out_bytes
    return Timing(runs, backend, nbytes or None, warmup, bound.config(), calls, inner, flush is not None), first


def _enqueue(outs):
    """Start computing ``outs`` without waiting (MLX evaluates lazily)."""
    arrays = [o for o in outs if type(o).__module__.startswith("mlx")]
    if arrays:
        import mlx.core as mx
        mx.async_eval(*arrays)


class _Flush:
    """Writes a buffer larger than the last-level cache; ``cost``: its own time per write."""

    def __init__(self, launch, backend):
        import mlx.core as mx
        self.mx = mx
        self.src = mx.zeros((L2_FLUSH_BYTES // 4,), dtype=mx.int32)
        mx.eval(self.src)
        self.cost = 0.0
        self.cost = _batch(launch, lambda: [], backend, 20, self)

    def __call__(self):
        _enqueue([self.src + 1])


def _batch(launch, call, backend, inner, flush) -> float:
    """Seconds per launch of ``inner`` launches queued back to back, one sync."""
    t0 = time.perf_counter()
    outs = []
    for _ in range(inner):
        if flush is not None:
            flush()
        outs = call()
        _enqueue(outs)
    launch.sync(outs, backend)
    if flush is not None and flush.mx is not None:
        flush.mx.synchronize()
    dt = (time.perf_counter() - t0) / inner
    return max(dt - (flush.cost if flush is not None else 0.0), 0.0)


@user_facing
def bench_kernel(kernel, *args, warmup: int = 1, repeats: int | None = None, max_time: float = 2.0,
                 flush_l2: bool = False, **launch_kwargs) -> Timing:
    """Time a kernel: ``warmup`` untimed runs, then median, quantiles and IQR of the
    kernel time per launch. On a GPU, launches are batched per synchronisation and the
    number of batches adapts to ``max_time`` seconds (``repeats``: a fixed number of
    batches); ``Timing.per_call`` is one launch waited for on its own, and
    ``flush_l2=True`` flushes the L2 cache before each launch (see :func:`time_launch`).
    On the simulator: ``repeats`` runs (3), fewer if ``max_time`` is exceeded.

    >>> t = bench_kernel(saxpy, 2.0, x, y, grid=n, threadgroup=256)    # doctest: +SKIP
    >>> t.median, t.iqr, t.gbps                                        # doctest: +SKIP
    """
    t, _ = time_launch(Launch(kernel, args, launch_kwargs), warmup, repeats, max_time, flush_l2)
    return t


# ----------------------------------------------------------------------------- sweeps

def threadgroup_shapes(dims: int = 1, max_threads: int = L.MAX_THREADS_PER_THREADGROUP,
                       min_threads: int = 32) -> list[tuple]:
    """Power-of-two threadgroup shapes with ``dims`` dimensions and between ``min_threads``
    and ``max_threads`` (at most 1024) threads.

    >>> threadgroup_shapes(1)
    [(32,), (64,), (128,), (256,), (512,), (1024,)]
    >>> threadgroup_shapes(2, max_threads=64, min_threads=64)[:3]
    [(1, 64), (2, 32), (4, 16)]
    """
    max_threads = min(max_threads, L.MAX_THREADS_PER_THREADGROUP)
    pows = [1 << i for i in range(11)]
    out = []
    for shape in itertools.product(pows, repeat=dims):
        n = int(np.prod(shape))
        if min_threads <= n <= max_threads:
            out.append(tuple(shape))
    return sorted(out, key=lambda s: (int(np.prod(s)), s)) if dims == 1 else out


class Config(dict):
    """Launch keywords of one configuration: ``k(*args, **config)``."""

    def label(self) -> str:
        return ", ".join(f"{k}={_short(v)}" for k, v in self.items() if k != "grid")


def _short(v) -> str:
    if isinstance(v, tuple):
        while len(v) > 1 and v[-1] == 1:
            v = v[:-1]
        return "x".join(str(x) for x in v)
    if isinstance(v, list):
        return ",".join(f"{a}={_short(b)}" if isinstance(a, str) else _short((a, b)) for a, b in v)
    return getattr(v, "name", None) or str(v)


@dataclass
class Sweep:
    """The outcome of a sweep: one row per configuration (failures recorded, not raised).

    ``rows``: dicts with the configuration, ``time`` (median seconds), ``iqr``, ``ok``
    (vs the reference, None without one) and ``error`` (message or None).
    ``best``: the fastest correct configuration as launch keywords.
    """
    kernel_name: str
    backend: str
    rows: list = field(default_factory=list)
    configs: list = field(default_factory=list)
    pruned: list = field(default_factory=list)      # configurations the prune predicate skipped

    @property
    def best_index(self) -> int | None:
        good = [(r["time"], i) for i, r in enumerate(self.rows)
                if r["error"] is None and r["ok"] is not False]
        return min(good)[1] if good else None

    @property
    def best(self) -> Config | None:
        i = self.best_index
        return None if i is None else Config(self.configs[i])

    @property
    def best_time(self) -> float | None:
        i = self.best_index
        return None if i is None else self.rows[i]["time"]

    @property
    def failures(self) -> list:
        return [r for r in self.rows if r["error"] is not None]

    def table(self) -> str:
        """The rows as plain text."""
        lines = [f"{'configuration':40s} {'median':>10s} {'iqr':>10s} {'per call':>10s}  result"]
        b = self.best_index
        for i, r in enumerate(self.rows):
            res = ("error: " + r["error"].splitlines()[0][:60]) if r["error"] else \
                ("ok" if r["ok"] else ("MISMATCH" if r["ok"] is False else ""))
            mark = " *best*" if i == b else ""
            pc = fmt_time(r.get("per_call", float("nan")))
            lines.append(f"{r['config']:40s} {fmt_time(r['time']):>10s} {fmt_time(r['iqr']):>10s} {pc:>10s}  "
                         f"{res}{mark}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Sweep of {self.kernel_name} [{self.backend}], {len(self.rows)} configurations\n" + self.table()

    def plot(self, ax=None):
        """Median time per configuration (IQR as error bars), the best marked; returns the figure."""
        if ax is None:
            fig = _Figure(figsize=(max(4, 0.5 * len(self.rows) + 2), 3.2), dpi=90)
            ax = fig.subplots()
        else:
            fig = ax.figure
        labels = [r["config"] for r in self.rows]
        xs = np.arange(len(self.rows))
        times = np.array([r["time"] if r["error"] is None else np.nan for r in self.rows]) * 1e3
        iqrs = np.array([r["iqr"] if r["error"] is None else 0 for r in self.rows]) * 1e3
        colors = ["#d0d7de" if r["ok"] is False else "#0969da" for r in self.rows]
        ax.bar(xs, np.nan_to_num(times), yerr=iqrs, color=colors, capsize=2)
        b = self.best_index
        if b is not None:
            ax.bar([b], [times[b]], color="#1a7f37", label="best")
            ax.annotate("best", (b, times[b]), ha="center", va="bottom")
        for i, r in enumerate(self.rows):
            if r["error"] is not None:
                ax.annotate("✗", (i, 0), ha="center", va="bottom", color="#cf222e")
        ax.set_xticks(xs)
        ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=8)
        ax.set_ylabel("median time (ms)")
        ax.set_title(f"{self.kernel_name} [{self.backend}]")
        fig.tight_layout()
        return fig

    def plot_png(self) -> str:
        buf = io.BytesIO()
        self.plot().savefig(buf, format="png", bbox_inches="tight")
        return base64.b64encode(buf.getvalue()).decode()

    def _repr_html_(self) -> str:
        b = self.best_index
        rows = []
        for i, r in enumerate(self.rows):
            res = html.escape(r["error"].splitlines()[0]) if r["error"] else \
                ("ok" if r["ok"] else ("mismatch" if r["ok"] is False else ""))
            style = ' style="font-weight:bold"' if i == b else ""
            rows.append(f"<tr{style}><td>{html.escape(r['config'])}</td><td>{fmt_time(r['time'])}</td>"
                        f"<td>{fmt_time(r['iqr'])}</td><td>{res}</td></tr>")
        best = html.escape(self.best.label()) if self.best is not None else "none"
        img = ""
        try:
            img = f'<img src="data:image/png;base64,{self.plot_png()}"/>'
        except Exception:
            pass
        return (f'<div class="metalbench-sweep"><b>sweep</b> {html.escape(self.kernel_name)} '
                f"[{self.backend}]: best {best}<table><tr><th>configuration</th><th>median</th><th>IQR</th>"
                f"<th>result</th></tr>{''.join(rows)}</table>{img}</div>")


def config_call(fn, cfg: dict, what: str):
    """``fn`` of a sweep configuration: given the configuration dict when it takes one
    parameter that is not a configuration key (``lambda cfg: ...``), else the keys its
    parameters name (``lambda BM, BN: ...``).

    >>> config_call(lambda cfg: cfg["BM"] * 2, {"BM": 16}, "grid"), config_call(lambda BM: BM + 1, {"BM": 16}, "grid")
    (32, 17)
    """
    import inspect
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    except (TypeError, ValueError):
        return fn(dict(cfg))
    if len(params) == 1 and params[0].name not in cfg:
        return fn(dict(cfg))
    missing = [p.name for p in params if p.name not in cfg and p.default is p.empty]
    if missing:
        raise MetalbenchError(f"the {what} function takes {', '.join(missing)}, which the sweep's configuration "
                              f"does not have (it has {', '.join(cfg)})",
                              hint="name its parameters after swept or given keywords, or take the whole "
                                   "configuration: lambda cfg: ...")
    return fn(**{p.name: cfg[p.name] for p in params if p.name in cfg})


def prune_configs(prune, configs: list, launch: Launch) -> tuple[list, list]:
    """(kept, pruned) configurations. ``prune`` is a predicate of one configuration (see
    :func:`config_call`) that returns True for a configuration to skip, or Triton's
    ``{"early_config_prune": f}`` with ``f(configs, named_args)`` returning those to keep."""
    if prune is None:
        return configs, []
    if isinstance(prune, dict):
        f = prune.get("early_config_prune")
        if f is None:
            raise MetalbenchError("prune= takes a predicate or {'early_config_prune': f}",
                                  hint="prune=lambda cfg: cfg['BM'] * cfg['BK'] > 8192 skips those configurations")
        named = dict(zip([p.name for p in getattr(launch.kernel, "_in_params", [])], launch.args))
        kept = list(f([dict(c) for c in configs], named))
        keys = [sorted(c.items(), key=lambda kv: kv[0]) for c in kept]
        return ([c for c in configs if sorted(c.items(), key=lambda kv: kv[0]) in keys],
                [c for c in configs if sorted(c.items(), key=lambda kv: kv[0]) not in keys])
    kept, dropped = [], []
    for c in configs:
        (dropped if config_call(prune, c, "prune") else kept).append(c)
    return kept, dropped


def _axes(launch: Launch, threadgroup, kwargs) -> tuple[list, list]:
    """Split sweep keywords into axes (name, values) and fixed launch keywords."""
    axes = []
    if callable(threadgroup):           # computed per configuration (see sweep_kernel)
        threadgroup = [threadgroup]
    elif threadgroup is None or threadgroup == "auto":
        grid = kwargs.get("grid", launch.kwargs.get("grid"))
        dims = 1
        if isinstance(grid, (tuple, list)):
            g = list(grid)
            while len(g) > 1 and g[-1] == 1:
                g.pop()
            dims = len(g)
        threadgroup = threadgroup_shapes(min(dims, 3))
    if isinstance(threadgroup, (list, range)):
        axes.append(("threadgroup", list(threadgroup)))
    else:
        axes.append(("threadgroup", [threadgroup]))
    for k, v in list(kwargs.items()):
        if isinstance(v, (list, range)) and k not in ("inputs", "output_shapes", "output_dtypes", "template"):
            axes.append((k, list(v)))
            del kwargs[k]
    return axes, kwargs


@user_facing
def sweep_kernel(kernel, *args, threadgroup=None, ref=None, progress=None, warmup: int = 1,
                 repeats: int | None = None, max_time: float = 0.25, prune=None, rtol=None, atol=None,
                 flush_l2: bool = False,
                 **kwargs) -> Sweep:
    """Time (and with ``ref`` check) ``kernel`` over every combination of the swept axes.

    ``threadgroup``: a list of shapes (ints or tuples), None/"auto" for power-of-two
    shapes of the grid's dimensionality (32..1024 threads), or a function of the
    configuration (to tie the threadgroup to tile sizes). Any other keyword given as a
    list is an axis too (constexpr parameters, e.g. ``TILE=[8, 16, 32]``; for
    ``metal_kernel`` objects they become template arguments). ``grid`` may be a function
    of the configuration too (it sees the threadgroup), for grids that depend on a tile
    size; such functions take the configuration dict (``lambda cfg: ...``) or name its
    keys (``lambda BM, threadgroup: ...``). ``prune``: a predicate of the configuration
    that is True for configurations to skip (Triton's ``prune_configs_by``; its
    ``{"early_config_prune": f}`` form works too); skipped ones are in ``Sweep.pruned``.
    ``progress``: None (a progress bar in notebooks, silent elsewhere), False, or
    ``f(done, total, row)``. ``rtol``/``atol`` set the comparison with ``ref`` (as in ``check``).
    Each configuration is timed as :func:`time_launch` does (on a GPU: batched launches
    for ``max_time`` seconds, kernel time per launch as ``time``, one waited-for call as
    ``per_call``; ``flush_l2`` as there), so configurations are ranked by what the kernel
    costs, not by the launch path.

    >>> s = sweep_kernel(saxpy, 2.0, x, y, grid=n, threadgroup=[64, 256, 2048])    # doctest: +SKIP
    >>> s.rows[-1]["error"]        # 2048 threads: recorded, not raised             # doctest: +SKIP
    >>> out = saxpy(2.0, x, y, **s.best)                                           # doctest: +SKIP
    """
    base = Launch(kernel, args, {})
    tg_fn = threadgroup if callable(threadgroup) else None
    axes, fixed = _axes(base, threadgroup, dict(kwargs))
    grid = fixed.pop("grid", None)
    launch = Launch(kernel, args, fixed)
    names = [a for a, _ in axes if not (tg_fn is not None and a == "threadgroup")]
    combos = [dict(zip(names, c)) for c in itertools.product(*[v for a, v in axes if a in names])]
    combos, pruned = prune_configs(prune, combos, launch)
    bar = _progress(progress, len(combos))
    sw = Sweep(launch.name, launch.backend)
    sw.pruned = pruned
    for i, cfg in enumerate(combos):
        cfg = dict(cfg)
        over_tg = {}
        if tg_fn is not None:
            try:
                over_tg = {"threadgroup": config_call(tg_fn, cfg, "threadgroup")}
            except MetalbenchError:
                raise
            except Exception as e:  # noqa: BLE001 - reported on its row
                over_tg = {"threadgroup": e}
            cfg = dict(over_tg, **cfg)
        g = config_call(grid, cfg, "grid") if callable(grid) else grid
        over = dict(cfg, grid=g)
        row = {"config": Config({k: v for k, v in cfg.items()}).label(), "time": float("nan"),
               "iqr": float("nan"), "ok": None, "error": None, **cfg}
        try:
            if isinstance(cfg.get("threadgroup"), Exception):
                raise cfg["threadgroup"]
            L.normalize(g, cfg.get("threadgroup"))   # limits first: a clear message per row
            t, outs = time_launch(launch, warmup, repeats, max_time, flush_l2, **over)
            row["time"], row["iqr"], row["per_call"] = t.median, t.iqr, t.per_call
            row["q20"], row["q80"] = t.quantile(0.2), t.quantile(0.8)
            if ref is not None:
                got = [np.array(_to_np(o)) for o in outs]
                row["ok"] = check_outputs(launch, ref, got, rtol, atol, config=over).ok
        except MetalbenchError as e:
            row["error"] = e.message + (f" (hint: {e.hint})" if e.hint else "")
            if isinstance(e, BadReferenceError):
                raise
        except Exception as e:  # noqa: BLE001 — a broken configuration must not stop the sweep
            row["error"] = f"{type(e).__name__}: {e}"
        sw.rows.append(row)
        sw.configs.append(Config({**over}))
        bar(i + 1, row)
    bar.close()
    return sw


def _to_np(o):
    from .runtime import to_numpy
    return to_numpy(o)


class _NoBar:
    def __init__(self, cb=None):
        self.cb = cb
        self.total = 0

    def __call__(self, done, row):
        if self.cb is not None:
            self.cb(done, self.total, row)

    def close(self):
        pass


class _WidgetBar(_NoBar):
    def __init__(self, total):
        super().__init__()
        import ipywidgets as W
        from IPython.display import display
        self.w = W.IntProgress(value=0, min=0, max=total, description="sweep")
        display(self.w)

    def __call__(self, done, row):
        self.w.value = done

    def close(self):
        self.w.bar_style = "success"


def in_notebook() -> bool:
    """True inside a Jupyter kernel (where widgets can be displayed)."""
    try:
        from IPython import get_ipython
        ip = get_ipython()
        return ip is not None and getattr(ip, "kernel", None) is not None
    except Exception:
        return False


def _progress(progress, total):
    if callable(progress):
        b = _NoBar(progress)
    elif progress is None and in_notebook():
        try:
            b = _WidgetBar(total)
        except Exception:
            b = _NoBar()
    else:
        b = _NoBar()
    b.total = total
    return b


# ----------------------------------------------------------------------------- autotune

def cache_dir() -> Path:
    """Where autotune results live: ``$METALBENCH_CACHE_DIR`` or ``~/.cache/metalbench``."""
    d = os.environ.get("METALBENCH_CACHE_DIR")
    return Path(d) if d else Path.home() / ".cache" / "metalbench"


def kernel_fingerprint(kernel) -> str:
    """A hash of a kernel's text, so an edited kernel is tuned afresh.

    >>> import metalbench as mb
    >>> k = mb.metal_kernel("twice", ["x"], ["y"], "y[0] = 2 * x[0];")
    >>> kernel_fingerprint(k).startswith("twice:")
    True
    """
    text, _ = kernel.user_source()
    return kernel.name + ":" + hashlib.sha256(text.encode()).hexdigest()[:16]


def device_name(backend: str) -> str:
    """The GPU model a backend runs on ("sim" for the simulator): autotune results are
    per device (an M1's best configuration is not an M3's, an H200's not an A100's).

    >>> device_name("sim")
    'sim'
    """
    if backend == "sim":
        return "sim"
    import mlx.core as mx
    for info in (getattr(mx, "device_info", None), getattr(getattr(mx, backend, None), "device_info", None)):
        try:
            name = info()["device_name"] if info is not None else None
        except Exception:  # noqa: BLE001 — an MLX without device facts: fall back below
            name = None
        if name:
            return f"{backend}:{name}"
    return f"{backend}:unknown"


def _describe(v):
    if hasattr(v, "shape") and hasattr(v, "dtype"):
        return [list(int(s) for s in v.shape), str(v.dtype)]
    if isinstance(v, (list, tuple)):
        return [_describe(x) for x in v]
    if isinstance(v, (bool, int, float, str)) or v is None:
        return type(v).__name__
    return type(v).__name__


def _jsonable(v):
    if isinstance(v, tuple):
        return {"__tuple__": [_jsonable(x) for x in v]}
    if isinstance(v, list):
        return [_jsonable(x) for x in v]
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    return {"__repr__": repr(v)}


def _from_json(v):
    if isinstance(v, dict) and "__tuple__" in v:
        return tuple(_from_json(x) for x in v["__tuple__"])
    if isinstance(v, list):
        return [_from_json(x) for x in v]
    return v


@user_facing
def autotune_kernel(kernel, *args, force: bool = False, **kwargs) -> Config:
    """Sweep once, remember the best configuration per device, backend, shapes and dtypes
    on disk (one JSON file per entry under :func:`cache_dir`, so notebooks tuning at
    once keep each other's results), and return it; later calls read it back.

    >>> best = autotune_kernel(saxpy, 2.0, x, y, grid=n, threadgroup=[64, 256])   # doctest: +SKIP
    >>> out = saxpy(2.0, x, y, **best)                                            # doctest: +SKIP
    """
    launch = Launch(kernel, args, {k: v for k, v in kwargs.items() if k == "backend"})
    backend = launch.backend
    desc = {"kernel": kernel_fingerprint(kernel), "backend": backend, "device": device_name(backend),
            "args": _describe(list(args)),
            "kwargs": {k: (_describe(v) if k in ("inputs",) else _jsonable(v) if not callable(v) else "callable")
                       for k, v in sorted(kwargs.items()) if k not in ("ref", "progress")}}
    key = hashlib.sha256(json.dumps(desc, sort_keys=True, default=repr).encode()).hexdigest()[:24]
    path = autotune_path(key)
    if not force:
        try:
            entry = json.loads(path.read_text())
            return Config({k: _from_json(v) for k, v in entry["best"].items()})
        except (OSError, ValueError, KeyError, TypeError):
            pass    # no entry yet (or a damaged one): tune
    s = sweep_kernel(kernel, *args, **kwargs)
    best = s.best
    if best is None:
        msgs = "; ".join(sorted({r["error"] or "mismatch" for r in s.rows}))[:300]
        raise MetalbenchError(f"autotune of {launch.name}: no configuration ran correctly ({msgs})",
                              hint="check the kernel at one configuration first with .check(...)")
    entry = {"describe": desc, "best": {k: _jsonable(v) for k, v in best.items()}, "time": s.best_time}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write a private temporary file, then rename: a reader sees the old entry or the
        # new one, never half of one, and concurrent tuners never share a file.
        fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(entry, indent=1, default=repr))
        os.replace(tmp, path)
    except OSError:
        pass   # a read-only home must not break tuning; the result is still returned
    return best


def autotune_path(key: str) -> Path:
    """The file holding one autotune entry.

    >>> autotune_path("abc").name
    'abc.json'
    """
    return cache_dir() / "autotune" / f"{key}.json"
