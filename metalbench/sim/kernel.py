"""The simulator's launcher: compiled programs, chunking, argument binding, findings.

    >>> import numpy as np
    >>> from metalbench import ir, types as T
    >>> i = ir.Var("i", T.uint32)
    >>> k = ir.KernelIR("twice", [ir.Param("x", "buffer", T.float32),
    ...     ir.Param("out", "buffer", T.float32, is_output=True)],
    ...     [ir.Decl(i, ir.Swizzle(ir.ThreadAttr("thread_position_in_grid", T.uint3), "x", T.uint32)),
    ...      ir.Store("out", i, ir.BinOp("*", ir.Load("x", i, T.float32), ir.Const(2.0, T.float32), T.float32))])
    >>> x = np.arange(5, dtype=np.float32); out = np.full(5, np.nan, np.float32)
    >>> _ = compile_kernel(k).run({"x": Buffer(x), "out": Buffer(out)}, (5, 1, 1), (4, 1, 1))
    >>> out.tolist()
    [0.0, 2.0, 4.0, 6.0, 8.0]
"""
from __future__ import annotations

import math
import os
import time
import warnings
from dataclasses import dataclass

import numpy as np

from .. import ir
from ..errors import KernelCheckError, KernelLaunchError, MetalbenchError, internal_error
from . import atomics, memory, runtime, simd
from ..builtins import registry
from ..passes.simdgroup_matrix import lower as lower_matrices
from .checks import DivergentBarrier, Finding, LaunchChecker, make_error, max_steps
from .findings import pool_member
from .chunk import Chunk, Launch
from .codegen import Program, generate
from .aliases import buffer_aliases
from .memory import OOBCount, OutOfBounds
from .notices import oob_message, warn_user, warning_message
from ..errors import KernelCheckWarning, OutOfBoundsWarning
from .stats import SimStats
from . import debug
from .coverage import report as report_coverage

# Lanes per chunk: big enough that per-statement Python overhead vanishes, small enough
# to stay in cache and bound memory for 16M-thread grids.
CHUNK_LANES = int(os.environ.get("METALBENCH_SIM_LANES", 1 << 15))


@dataclass
class Buffer:
    """A device buffer: ``data`` is its flat 1-D storage (written in place for outputs);
    ``shape``/``strides`` (elements) back ``x.shape``, ``x_strides`` and ``x_ndim``.

    >>> Buffer(np.zeros((2, 3), np.float32)).shape
    (2, 3)
    """
    data: np.ndarray
    shape: tuple | None = None
    strides: tuple | None = None

    def __post_init__(self):
        if self.shape is None:
            self.shape = tuple(self.data.shape) if self.data.ndim else (1,)
        flat = self.data.reshape(-1)
        # a C-contiguous array's flat reshape is always a view: skip the costly overlap test
        if self.data.size and not self.data.flags.c_contiguous and not np.shares_memory(flat, self.data):
            raise KernelLaunchError("sim.Buffer needs contiguous storage (its flat view is written in place)")
        self.data = flat
        if self.strides is None:
            st, acc = [], 1
            for s in reversed(self.shape):
                st.append(acc)
                acc *= int(s)
            self.strides = tuple(reversed(st))


# _bi: each builtin's simulator implementation, from its declaration in metalbench/builtins
_NS = {"np": np, "_rt": runtime, "_mem": memory, "_at": atomics, "_sd": simd,
       "_bi": {b.name: b.sim for b in registry.all() if b.sim is not None}}


class SimKernel:
    """A kernel compiled for the simulator; ``run`` launches it on NumPy buffers."""

    def __init__(self, kernel: ir.KernelIR):
        self.ir = kernel
        self._programs: dict = {}
        # per-launch constants reused by later launches (a cached launch's overhead):
        # launch geometry with its lane arrays, and buffer shape/stride metadata
        self._launches: dict = {}
        self._metas: dict = {}
        self.program(False, True)  # compile now: errors show at compile time

    def program(self, checked: bool, even: bool, linear: bool = False, variant=None):
        """The compiled program variant (``checked``, all threadgroups full, 1-D launch;
        ``variant="trace"`` records assignments for :mod:`metalbench.sim.trace`)."""
        key = (checked, even, linear, variant)
        p = self._programs.get(key)
        if p is None:
            try:
                prog: Program = generate(self.ir, checked=checked, even=even, linear=linear, variant=variant)
                ns = dict(_NS)
                ns.update(prog.namespace)
                code = compile(prog.source, f"<sim:{self.ir.name}>", "exec")
                exec(code, ns)
            except MetalbenchError:
                raise
            except Exception as e:      # a bug of the simulator's code generator: say so, never a bare error
                raise internal_error(e, None, f"kernel '{self.ir.name}' for the simulator") from e
            p = self._programs[key] = (ns["_chunk"], prog)
        return p

    def source(self, checked: bool = False, even: bool = True) -> str:
        """The generated Python source (for debugging the simulator)."""
        return self.program(checked, even)[1].source

    def _bind(self, args):
        bufs, meta, scalars = {}, {}, {}
        for p in self.ir.params:
            if p.name not in args:
                raise KernelLaunchError(f"missing argument {p.name!r} for kernel {self.ir.name!r}")
            a = args[p.name]
            if p.kind == "buffer":
                if isinstance(a, np.ndarray):
                    a = Buffer(a)
                bufs[p.name] = a.data
                mk = (tuple(a.shape), tuple(a.strides))
                m = self._metas.get(mk)
                if m is None:
                    if len(self._metas) > 64:
                        self._metas.clear()
                    # 2**31 elements or more: the front end types the shape int64 (kernel.WIDE)
                    st = np.int64 if math.prod(a.shape) >= 2 ** 31 else np.int32
                    m = self._metas[mk] = (tuple(st(s) for s in a.shape),
                                           np.asarray(a.strides, np.int64), np.int32(len(a.shape)))
                meta[p.name] = m
            else:
                v = np.asarray(a)
                scalars[p.name] = v.astype(p.type.np).reshape(-1)[0] if v.size else p.type.np.type(0)
        return bufs, meta, scalars

    def _launch(self, grid, threadgroup, checked):
        if checked:  # the checker may keep per-launch state: a fresh geometry each time
            return Launch(grid, threadgroup)
        key = (tuple(grid), tuple(threadgroup))
        lg = self._launches.get(key)
        if lg is None:
            if len(self._launches) > 16:
                self._launches.clear()
            lg = self._launches[key] = Launch(grid, threadgroup)
        return lg

    def run(self, args: dict, grid, threadgroup, checked: bool = False, coverage=None,
            uninitialised=()) -> SimStats:
        """Run the kernel over ``grid`` threads in threadgroups of ``threadgroup``.

        ``args`` maps every parameter to a :class:`Buffer` (or a NumPy array) or a
        NumPy scalar. Unchecked, the launch behaves like a GPU: an out-of-bounds read
        gives 0 and an out-of-bounds write or atomic is dropped, and one
        ``OutOfBoundsWarning`` counts them. With ``checked=True`` (or
        ``METALBENCH_CHECKED=1``) findings (out-of-bounds, races, divergent barriers,
        ...) raise ``KernelCheckError``; ``uninitialised`` names the outputs launched
        without ``init_value`` (garbage on a GPU): reading one of their elements before a
        thread wrote it, atomically or not, is a finding. ``coverage`` names the outputs
        that are fresh and poisoned: a ``CoverageWarning`` counts their elements left
        unwritten. The kernel's prints are printed at the end (also when the launch fails)."""
        hooks = debug.launch_hooks(self, coverage)
        if hooks is None:
            return self._run(args, grid, threadgroup, checked, None, uninitialised)
        try:
            stats = self._run(args, grid, threadgroup, checked, hooks, uninitialised)
        finally:
            hooks.finish()
        if hooks.cov is not None:
            stats.coverage = report_coverage(self, args, grid, threadgroup, checked, hooks.cov)
        return stats

    def rerun_quietly(self, args, grid, threadgroup, checked):
        """Launch again without prints, warnings or coverage (the coverage check's second
        poison, see ``sim/coverage.py``)."""
        quiet = debug.LaunchHooks(self, None, None)
        quiet.quiet = True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._run(args, grid, threadgroup, checked, quiet, ())

    def _run(self, args, grid, threadgroup, checked, hooks, uninitialised=()) -> SimStats:
        t0 = time.perf_counter()
        checked = checked or os.environ.get("METALBENCH_CHECKED", "") not in ("", "0")
        if hooks is not None:
            checked = checked or hooks.checked
        lg = self._launch(grid, threadgroup, checked)
        fn, prog = self.program(checked, lg.even, lg.linear, hooks.variant if hooks is not None else None)
        bufs, meta, scalars = self._bind(args)
        per = max(1, CHUNK_LANES // max(1, lg.TG))
        stats = SimStats(threads=lg.grid[0] * lg.grid[1] * lg.grid[2],
                         threadgroups=lg.n_groups, chunks=0, seconds=0.0)
        make_lc = LaunchChecker if hooks is None or not checked else hooks.launch_checker(LaunchChecker)
        lc = make_lc(lg, prog.nodes, _written_buffers(self.ir, prog), self.ir.name,
                     buffer_aliases(bufs), uninitialised) if checked else None
        if lc is not None:
            lc.pools = _pools(self.ir)
        if hooks is not None:
            hooks.start(lg, prog, bufs)
        steps = max_steps(checked)
        ob = None if checked else OOBCount()
        with np.errstate(all="ignore"):
            for g0 in range(0, lg.n_groups, per):
                c = Chunk(lg, g0, min(per, lg.n_groups - g0))
                c.bufs, c.meta, c.scalars = bufs, meta, scalars
                c.max_steps = steps
                c.checker = lc.chunk(c) if checked else None
                if ob is not None:
                    ob.L = c.L
                c.oob = ob
                if hooks is not None:
                    hooks.chunk(c)
                try:
                    fn(c)
                    if checked:
                        c.checker.finish()
                except OutOfBounds as e:
                    raise _with_findings(_oob_error(self.ir, prog, e, c), lc) from None
                except DivergentBarrier as e:
                    raise _with_findings(_barrier_error(self.ir, prog, e, c), lc) from None
                except runtime.RunawayLoop as e:
                    raise _with_findings(_runaway_error(self.ir, prog, e, steps), lc) from None
                stats.chunks += 1
        if checked:
            lc.close()
            for key, v in lc.stats().items():
                setattr(stats, key, v)
            _warn_findings(lc)
            err = lc.error()
            if err is not None:
                raise err
        if ob is not None and ob.counts:
            warn_user(oob_message(self.ir.name, prog.nodes, ob), OutOfBoundsWarning)
        stats.seconds = time.perf_counter() - t0
        return stats


def compile_kernel(kernel: ir.KernelIR) -> SimKernel:
    """Compile ``kernel`` into a runnable :class:`SimKernel` (the caller caches it)."""
    return SimKernel(lower_matrices(kernel))


def _pools(kernel) -> dict:
    """{array pool: the arrays it holds} (``ir.ArrayDecl.parts``, MSL array_pools.py)."""
    return {d.name: d.parts for d in ir.walk(kernel.body) if isinstance(d, ir.ArrayDecl) and d.parts}


def _oob_error(kernel, prog, e: OutOfBounds, c: Chunk) -> KernelCheckError:
    node, buf, space, access = prog.nodes[e.k]
    idx = e.index
    n = e.n
    if isinstance(idx, np.ndarray):
        bad = e.bad
        if bad is None:
            bad = (idx >= n) if n is not None else np.ones(idx.shape, bool)
            if idx.dtype.kind == "i":
                bad |= idx < 0
        lanes = np.flatnonzero(bad)
        if lanes.size == 0:
            lanes = np.arange(min(1, idx.size))
        shown = [int(idx[i]) for i in lanes[:4]]
    else:
        if isinstance(e.bad, np.ndarray):
            lanes = np.flatnonzero(e.bad)
        else:
            lanes = np.flatnonzero(c.m0) if c.m0 is not None else np.arange(c.L)
        shown = [int(idx)]
    pos = c.positions(lanes)
    parts = _pools(kernel).get(buf)
    if parts:     # past the end of a threadgroup pool: say it of the last array in it
        buf, i0 = pool_member(parts, shown[0])
        n = next(p[2] for p in parts if p[0] == buf)
        shown = [i0] + [i - shown[0] + i0 for i in shown[1:]]
    f = Finding("out-of-bounds", buf, space, shown, pos, [getattr(node, "span", None)], [access],
                count=int(len(lanes)), kernel=kernel.name, size=n)
    return make_error([f], kernel.name)


def _barrier_error(kernel, prog, e: DivergentBarrier, c: Chunk) -> KernelCheckError:
    node = prog.nodes[e.k][0]
    gids = [c.g0 + int(g) for g in e.bad_groups[:4]]
    nx, ny, _ = c.launch.ngrp
    groups = [(g % nx, (g // nx) % ny, g // (nx * ny)) for g in gids]
    f = Finding("divergent barrier", None, None, [], [], [getattr(node, "span", None)], ["barrier"],
                kernel=kernel.name, extra={"groups": groups})
    return make_error([f], kernel.name)


def _written_buffers(kernel, prog):
    """Device buffers some store or atomic may write (only those can race); None when a
    device function's buffer parameter is written (it may be any buffer)."""
    params = {p.name for p in kernel.params if p.kind == "buffer"}
    out = set()
    for _, buf, space, access in prog.nodes:
        if access in ("write", "atomic") and space == "device":
            if buf not in params:
                return None
            out.add(buf)
    return out


def _with_findings(err: KernelCheckError, lc) -> KernelCheckError:
    """``err`` (which stopped the launch) followed by the findings collected before it
    (lower-severity ones are warned about)."""
    if lc is None:
        return err
    _warn_findings(lc)
    if not lc.errors:
        return err
    return make_error(err.findings + lc.errors, kernel="", dropped=lc.dropped)


def _warn_findings(lc):
    """One ``mb.KernelCheckWarning`` for the launch's lower-severity findings."""
    ws = lc.warnings
    if ws:
        warn_user(warning_message(ws), KernelCheckWarning)


def _runaway_error(kernel, prog, e, limit) -> KernelCheckError:
    node = prog.nodes[e.k][0]
    f = Finding("runaway loop", None, None, [], [], [getattr(node, "span", None)], ["loop"],
                kernel=kernel.name, extra={"limit": limit})
    return make_error([f], kernel.name)
