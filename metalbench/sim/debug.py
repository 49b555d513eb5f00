"""The simulator's debugging hooks for one launch: prints, output coverage, per-thread
traces and access maps (``LaunchHooks``), reached by the generated code through the
chunk (``_c.prints``, ``_cv``, ``_c.tr``) and by the launcher (``SimKernel.run``).

A plain launch of a kernel without ``print`` and without fresh outputs builds none of
this. Traces and access maps are requested for the launches of a block::

    with observing(TraceRequest(...)):      # metalbench.sim.trace / access_map use this
        kernel.launch(bound)
"""
from __future__ import annotations

import contextlib
import contextvars

from .. import ir
from .coverage import Coverage
from .printing import PrintSink

_OBSERVER: contextvars.ContextVar = contextvars.ContextVar("metalbench_sim_observer", default=None)


@contextlib.contextmanager
def observing(obs):
    """Simulator launches in the block report to ``obs`` (a trace or access-map request):
    ``obs.variant`` picks the generated program ("trace" or None), ``obs.checked`` asks
    for the checked mode, ``obs.launch_checker`` replaces the checked mode's launch
    checker, and ``obs.start(launch, prog, kernel)``/``obs.chunk(c)``/``obs.done(...)``
    follow the launch."""
    tok = _OBSERVER.set(obs)
    try:
        yield obs
    finally:
        _OBSERVER.reset(tok)


def current():
    return _OBSERVER.get()


# ----------------------------------------------------------------------------- generation hooks

def output_index(g, buf: str) -> int | None:
    """The position of ``buf`` among the kernel's outputs (None: not an output; -1: a
    view or a device function's parameter, which may be any output)."""
    outs = g.__dict__.get("_cov_outputs")
    if outs is None:
        outs = g._cov_outputs = {p.name: j for j, p in enumerate(g.k.outputs)}
        g._cov_views = {n.name for n in ir.walk(g.k.body) if isinstance(n, ir.ViewDecl)}
    if buf in outs:
        return outs[buf]
    if buf in g._cov_views:
        return -1
    return None


def cov_lin(g, buf: str, o: str, indent: int = 1) -> None:
    """After a contiguous store ``buf[o .. o+L)``: record it for the coverage check."""
    j = output_index(g, buf)
    if j is None:
        return
    g.uses_cov = True
    pad = "    " * indent
    if j < 0:
        g.emit(f"{pad}if _cv is not None: _cv.mark(-1)")
    else:
        g.emit(f"{pad}if _cv is not None: _cv.lin({j}, {o}, _L, {g.m})")


def cov_store(g, buf: str, kind: str, space: str, indent: int = 0) -> None:
    """After any other store or atomic on ``buf``: the output needs the final scan."""
    if kind == "ref":
        if space != "device":
            return
        j = -1
    elif kind == "dev":
        j = output_index(g, buf)
        if j is None:
            return
    else:
        return
    g.uses_cov = True
    g.emit(f"{'    ' * indent}if _cv is not None: _cv.mark({j})")


# ----------------------------------------------------------------------------- the launch

class LaunchHooks:
    """What one launch records besides its results."""

    __slots__ = ("sk", "coverage_names", "obs", "prints", "cov", "quiet", "variant", "checked")

    def __init__(self, sim_kernel, coverage, observer):
        self.sk = sim_kernel
        self.coverage_names = coverage
        self.obs = observer
        self.prints = None
        self.cov = None
        self.quiet = False
        self.variant = getattr(observer, "variant", None)
        self.checked = bool(getattr(observer, "checked", False))

    def launch_checker(self, default):
        f = getattr(self.obs, "launch_checker", None) if self.obs is not None else None
        return f or default

    def start(self, lg, prog, bufs) -> None:
        """Before the first chunk (``bufs``: each buffer parameter's flat storage)."""
        if not self.quiet and prog_prints(prog):
            self.prints = PrintSink(lg, prog.nodes)
        if self.coverage_names:
            self.cov = Coverage(self.sk, self.coverage_names, bufs)
        if self.obs is not None:
            self.obs.start(lg, prog, self.sk.ir, bufs)

    def chunk(self, c) -> None:
        c.prints = self.prints
        c.cov = self.cov
        if self.prints is not None:
            self.prints.chunk(c)
        if self.obs is not None:
            self.obs.chunk(c)

    def finish(self) -> None:
        """After the launch, also when it failed: the prints so far."""
        if self.prints is not None:
            self.prints.flush()
            self.prints = None


class CoverageHooks(Coverage):
    """The hooks of a plain launch with fresh outputs (no print, no trace or access map):
    the coverage check alone, one object, as little per-launch work as it can (the common
    case: ``benchmarks/debug_overhead.py`` times it)."""

    __slots__ = ()
    variant = None
    checked = False
    obs = None
    prints = None
    quiet = False

    def __init__(self, sim_kernel, coverage):
        # Coverage.__init__'s fields, set here: no super() call on the per-launch path
        self.sk, self.watch, self.bufs, self.iv, self.dirty = sim_kernel, coverage, None, {}, ()

    @property
    def cov(self):
        return self

    def launch_checker(self, default):
        return default

    def start(self, lg, prog, bufs) -> None:
        self.bufs = bufs

    def chunk(self, c) -> None:
        c.cov = self

    def finish(self) -> None:
        pass


def prog_prints(prog) -> bool:
    p = prog.__dict__.get("_prints")
    if p is None:
        p = prog._prints = any(access == "print" for _, _, _, access in prog.nodes)
    return p


def launch_hooks(sim_kernel, coverage=None) -> LaunchHooks | CoverageHooks | None:
    """The hooks a launch needs, or None (no print, no fresh outputs, no observer)."""
    obs = _OBSERVER.get()
    p = sim_kernel.__dict__.get("_prints")
    if obs is None and not (sim_kernel_prints(sim_kernel) if p is None else p):
        return CoverageHooks(sim_kernel, coverage) if coverage else None
    return LaunchHooks(sim_kernel, coverage, obs)


def sim_kernel_prints(sk) -> bool:
    p = sk.__dict__.get("_prints")
    if p is None:
        from .printing import has_prints
        p = sk._prints = has_prints(sk.ir)
    return p
