"""GPU devices: the limits MLX users trip on, and a modelled kernel time (roofline).

``DEVICES`` holds Apple's M1-M4 families (base, Pro, Max, Ultra: there is no M4 Ultra;
Apple's 2025 Ultra is the M3 Ultra) and the NVIDIA H200: memory bandwidth, FP32 peak,
threadgroup (shared) memory per threadgroup, threads per threadgroup and SIMD width.
:func:`estimate` turns a launch's bytes and floating-point operations into the time a
device needs at least (the roofline: ``max(bytes / bandwidth, flops / peak)``);
:func:`work` counts them for a launch from the specialised IR (compulsory traffic:
every input read once, every output written once; operations per thread with loop
trip counts from ``passes/ranges.py``, times the grid's threads). The simulator's own
wall-clock time says nothing about a GPU: the panel shows this estimate beside it.

    >>> d = lookup("Apple M2 Max")
    >>> d.name, d.bandwidth_gbs, d.threadgroup_memory
    ('M2 Max', 400.0, 32768)
    >>> e = estimate(d, nbytes=400e6, flops=1e6)       # 400 MB: about 1 ms at 400 GB/s
    >>> round(e.seconds * 1e3, 3), e.bound
    (1.0, 'memory')

Sources (comments in the table cite each row): Apple's newsroom announcements and
Mac tech-spec pages for memory bandwidth and GPU core counts; FP32 peak is cores x 128
ALUs x 2 (FMA) x GPU clock, which reproduces Apple's own figures where Apple gave them
(M1 2.6, M1 Pro 5.2, M1 Max 10.4, M1 Ultra 21 TFLOPS; M2 3.6, M2 Ultra 27.2 TFLOPS)
and is an estimate for M3/M4 (clocks from public measurements; Apple gives no FLOPS).
Threadgroup memory and threads per threadgroup: Apple's "Metal feature set tables"
(32 KiB, 1024 threads on every Apple GPU family). H200: NVIDIA's H200 datasheet (4.8
TB/s HBM3e, 67 TFLOPS FP32 for SXM) and the CUDA C++ Programming Guide (48 KiB static
``__shared__`` per block -- what ``mx.fast.cuda_kernel`` bodies get --, 1024 threads
per block, warps of 32).
"""
from __future__ import annotations

import functools
import os
import warnings
from dataclasses import dataclass

from . import ir
from . import types as T
from .errors import KernelLaunchError


@dataclass(frozen=True)
class Device:
    """One GPU's figures. ``pipeline_threads``: a lower limit on threads per threadgroup
    that compiled pipelines have been seen to report on this device (a pipeline's
    ``maxTotalThreadsPerThreadgroup`` falls below 1024 when a kernel uses many
    registers; None where none is known)."""
    name: str
    vendor: str
    bandwidth_gbs: float         # memory bandwidth, GB/s
    fp32_tflops: float           # FP32 peak (FMA = 2), TFLOP/s
    gpu_cores: int               # Apple GPU cores / NVIDIA SMs
    threadgroup_memory: int = 32768
    max_threads: int = 1024
    simd_width: int = 32
    pipeline_threads: int | None = None

    @property
    def ridge(self) -> float:
        """Operations per byte where the kernel stops being memory-bound."""
        return self.fp32_tflops * 1e12 / (self.bandwidth_gbs * 1e9)


def _apple(name, gbs, cores, ghz, pipeline_threads=None):
    return Device(name, "apple", float(gbs), round(cores * 128 * 2 * ghz / 1e3, 2), cores,
                  pipeline_threads=pipeline_threads)


DEVICES: dict[str, Device] = {d.name: d for d in [
    # M1 family (Nov 2020 - Mar 2022 announcements): 68.25 GB/s LPDDR4X; 200/400/800 GB/s
    _apple("M1", 68.25, 8, 1.278),
    _apple("M1 Pro", 200, 16, 1.296),
    _apple("M1 Max", 400, 32, 1.296),
    _apple("M1 Ultra", 800, 64, 1.296),
    # M2 family (Jun 2022 - Jun 2023): 100/200/400/800 GB/s
    _apple("M2", 100, 10, 1.398),
    _apple("M2 Pro", 200, 19, 1.398),
    _apple("M2 Max", 400, 38, 1.398),
    # MLX users report pipelines limited to 896 threads per threadgroup on M2 Ultra
    # (issue 18; a register-heavy kernel's maxTotalThreadsPerThreadgroup)
    _apple("M2 Ultra", 800, 76, 1.398, pipeline_threads=896),
    # M3 family (Oct 2023; M3 Ultra Mar 2025): 100/150/400/819 GB/s (M3 Max: 40-core GPU)
    _apple("M3", 100, 10, 1.38),
    _apple("M3 Pro", 150, 18, 1.38),
    _apple("M3 Max", 400, 40, 1.38),
    _apple("M3 Ultra", 819, 80, 1.38),
    # M4 family (May-Oct 2024): 120/273/546 GB/s (M4 Max: 40-core GPU); no M4 Ultra exists
    _apple("M4", 120, 10, 1.47),
    _apple("M4 Pro", 273, 20, 1.47),
    _apple("M4 Max", 546, 40, 1.47),
    # NVIDIA H200 SXM datasheet: 4.8 TB/s, 67 TFLOPS FP32, 132 SMs; 48 KiB static shared memory
    Device("H200", "nvidia", 4800.0, 67.0, 132, threadgroup_memory=48 * 1024),
]}

DEFAULT_DEVICE = "M2"


def lookup(name: str) -> Device:
    """The device whose name ``name`` mentions (``"Apple M3 Pro"``, ``"metal:Apple M1"``,
    ``"NVIDIA H200"``, ``"m2 ultra"``); the longest matching name wins.

    >>> lookup("cuda:NVIDIA H200 NVL").name, lookup("Apple M1 Max").name, lookup("m1").name
    ('H200', 'M1 Max', 'M1')
    """
    low = " " + name.lower().replace(":", " ").replace("-", " ") + " "
    hits = [d for n, d in DEVICES.items() if f" {n.lower()} " in low]
    if not hits:
        raise KeyError(f"no device matches {name!r}; known: {', '.join(DEVICES)}")
    return max(hits, key=lambda d: len(d.name))


@functools.lru_cache(maxsize=None)
def current(backend: str) -> Device | None:
    """The table's entry for the GPU ``backend`` runs on (None on sim or when unknown)."""
    if backend not in ("metal", "cuda"):
        return None
    from .bench import device_name
    try:
        return lookup(device_name(backend))
    except Exception:    # noqa: BLE001 — an unknown GPU: no per-device facts
        return None


def chosen(device=None) -> Device:
    """``device`` (a Device or a name), else ``$METALBENCH_DEVICE``, else ``DEFAULT_DEVICE``."""
    if isinstance(device, Device):
        return device
    return lookup(device or os.environ.get("METALBENCH_DEVICE") or DEFAULT_DEVICE)


# ----------------------------------------------------------------------------- limits

def check_launch(device: Device | None, threadgroup, kernel: ir.KernelIR | None = None, span=None) -> None:
    """Raise :class:`KernelLaunchError` when a launch exceeds ``device``'s threads per
    threadgroup or threadgroup memory; warn when it exceeds a known pipeline limit;
    a kernel printed for SIMD-groups of 32 on a device of another width is an error.

    >>> check_launch(lookup("M1"), (1024, 1, 1))
    >>> try:
    ...     check_launch(lookup("M1"), (2048, 1, 1))
    ... except KernelLaunchError as e:
    ...     print(e.message)
    threadgroup (2048, 1, 1) has 2048 threads; M1 allows at most 1024 per threadgroup
    """
    if device is None:
        return
    n = 1
    for d in threadgroup:
        n *= int(d)
    if n > device.max_threads:
        raise KernelLaunchError(
            f"threadgroup {tuple(threadgroup)} has {n} threads; {device.name} allows at most "
            f"{device.max_threads} per threadgroup", span, hint="use a smaller threadgroup, e.g. (256, 1, 1)")
    if device.pipeline_threads is not None and n > device.pipeline_threads:
        warnings.warn(f"threadgroup of {n} threads on {device.name}: pipelines of register-heavy kernels "
                      f"allow only {device.pipeline_threads} there (MLX then fails at dispatch); "
                      f"{device.pipeline_threads} or fewer is safe", RuntimeWarning, stacklevel=3)
    if device.simd_width != 32:
        raise KernelLaunchError(f"{device.name} runs SIMD-groups of {device.simd_width} lanes; metalbench "
                                f"kernels assume 32", span)
    if kernel is not None:
        tg = threadgroup_memory(kernel)
        if tg > device.threadgroup_memory:
            raise KernelLaunchError(
                f"kernel {kernel.name} uses {tg} bytes of threadgroup memory; {device.name} has "
                f"{device.threadgroup_memory} ({device.threadgroup_memory // 1024} KiB) per threadgroup",
                span, hint="use smaller threadgroup arrays (a smaller tile, or float16 elements)")


def threadgroup_memory(kernel: ir.KernelIR) -> int:
    """Bytes of the threadgroup arrays a kernel declares."""
    seen = {}
    for body in [kernel.body] + [f.body for f in kernel.functions]:
        for n in ir.walk(body):
            if isinstance(n, ir.ArrayDecl) and n.space == "threadgroup":
                seen[n.name] = n.nbytes
    return int(sum(seen.values()))


# ----------------------------------------------------------------------------- the model

@dataclass
class Estimate:
    """A modelled kernel time on one device: ``seconds = max(memory, compute)``."""
    device: Device
    nbytes: float
    flops: float
    exact_loops: bool = True

    @property
    def memory_seconds(self) -> float:
        return self.nbytes / (self.device.bandwidth_gbs * 1e9)

    @property
    def compute_seconds(self) -> float:
        return self.flops / (self.device.fp32_tflops * 1e12)

    @property
    def seconds(self) -> float:
        return max(self.memory_seconds, self.compute_seconds)

    @property
    def bound(self) -> str:
        return "memory" if self.memory_seconds >= self.compute_seconds else "compute"

    @property
    def intensity(self) -> float:
        """Floating-point operations per byte."""
        return self.flops / self.nbytes if self.nbytes else float("inf")

    def __str__(self) -> str:
        from .bench import fmt_time
        approx = "" if self.exact_loops else " (a loop's trip count unknown: counted once)"
        return (f"modelled {self.device.name}: {fmt_time(self.seconds)} ({self.bound}-bound, roofline; "
                f"{self.nbytes / 1e6:.3g} MB, {self.flops / 1e6:.3g} MFLOP){approx}")

    __repr__ = __str__


def estimate(device, nbytes: float, flops: float, exact_loops: bool = True) -> Estimate:
    """The roofline time of moving ``nbytes`` and doing ``flops`` on ``device``."""
    return Estimate(chosen(device), float(nbytes), float(flops), exact_loops)


def work(kernel, *args, **launch) -> tuple[float, float, bool]:
    """``(bytes, flops, exact)`` of one launch of ``kernel`` with these arguments (see the
    module doc); ``exact`` is False when some loop's trip count was not known."""
    bound = kernel.bind(*args, **{k: v for k, v in launch.items() if k != "device"})
    sp = kernel.specialization(bound)
    threads = 1
    for g in bound.grid or (1,):
        threads *= int(g)
    nbytes = bound.input_bytes() + sum(_prod(s) * t.itemsize for _, s, t in bound.outputs)
    flops, exact = _count(sp.ir, bound.threadgroup)
    return float(nbytes), float(flops) * threads, exact


def estimate_launch(kernel, *args, device=None, **launch) -> Estimate:
    """The modelled time of one launch on ``device`` (name or :class:`Device`).

    >>> import numpy as np, metalbench as mb
    >>> from metalbench.dsl import thread_position_in_grid
    >>> @mb.kernel
    ... def twice(x, out: mb.Out):
    ...     out[thread_position_in_grid.x] = 2.0 * x[thread_position_in_grid.x]
    >>> e = estimate_launch(twice, np.ones(1 << 20, np.float32), grid=1 << 20, device="M1")
    >>> e.nbytes, e.flops, e.bound
    (8388608.0, 1048576.0, 'memory')
    """
    nbytes, flops, exact = work(kernel, *args, **launch)
    return estimate(device, nbytes, flops, exact)


def _prod(s) -> int:
    n = 1
    for d in s:
        n *= int(d)
    return n


_FLOAT_CALL_OPS = {"fma": 2, "metal::fma": 2}


def _count(kernel: ir.KernelIR, threadgroup) -> tuple[float, bool]:
    """Floating-point operations one thread does (If: the costlier branch)."""
    from .passes.ranges import LaunchFacts, Ranges
    facts = LaunchFacts(tuple(threadgroup) if threadgroup else None)
    r = Ranges(kernel.body, facts)
    state = {"exact": True}

    def expr_ops(e) -> int:
        n = 0
        for x in ir.walk(e):
            t = getattr(x, "type", None)
            if not (isinstance(t, (T.ScalarType, T.VectorType)) and T.elem_of(t).is_float):
                continue
            width = getattr(t, "n", 1) if isinstance(t, T.VectorType) else 1
            if isinstance(x, ir.BinOp) and x.op in ("+", "-", "*", "/"):
                n += width
            elif isinstance(x, ir.Call):
                n += _FLOAT_CALL_OPS.get(x.name, 1) * width
        return n

    def trips(start, stop, step) -> float:
        rs, re_, rt = r.of(start), r.of(stop), r.of(step)
        if None in (rs, re_, rt) or rt[0] <= 0 or re_[1] - re_[0] > (1 << 20) or rs[1] - rs[0] > (1 << 20):
            state["exact"] = False
            return 1.0
        return max(0.0, ((re_[0] + re_[1]) / 2 - (rs[0] + rs[1]) / 2) / ((rt[0] + rt[1]) / 2))

    def block(stmts) -> float:
        total = 0.0
        for s in stmts:
            if isinstance(s, ir.For):
                total += trips(s.start, s.stop, s.step) * block(s.body)
            elif isinstance(s, ir.CFor):
                from .passes.ranges import canonical_cfor
                c = canonical_cfor(s)
                n = trips(c[1], c[3], c[4]) if c is not None else (state.update(exact=False) or 1.0)
                total += n * (block(s.body) + block(s.update))
            elif isinstance(s, ir.While):
                state["exact"] = False
                total += block(s.body)
            elif isinstance(s, ir.If):
                total += expr_ops(s.cond) + max(block(s.then), block(s.orelse))
            else:
                total += expr_ops(s)
        return total

    return block(kernel.body), state["exact"]


# ----------------------------------------------------------------------------- roofline

def roofline(points, device=None, ax=None):
    """A roofline plot for ``device``: the bandwidth and compute roofs, and one point per
    ``(label, Estimate)`` or ``(label, Estimate, measured_seconds)`` (the measured time
    drawn as a second marker at the same intensity). Returns the figure.

    >>> fig = roofline([("saxpy", estimate("M1", 12e6, 2e6))], "M1")
    >>> fig._repr_png_()[:4] == b"\\x89PNG"
    True
    """
    import numpy as np

    from .bench import _Figure
    d = chosen(device)
    if ax is None:
        fig = _Figure(figsize=(5, 3.4), dpi=90)
        ax = fig.subplots()
    else:
        fig = ax.figure
    xs = np.logspace(-3, 4, 200)
    ax.loglog(xs, np.minimum(xs * d.bandwidth_gbs, d.fp32_tflops * 1e3), color="#57606a",
              label=f"{d.name} roof")
    for p in points:
        label, e = p[0], p[1]
        flops_s = e.flops / e.seconds / 1e9 if e.seconds else 0.0
        ax.loglog([e.intensity], [flops_s], "o", label=f"{label} (model)")
        if len(p) > 2 and p[2]:
            ax.loglog([e.intensity], [e.flops / p[2] / 1e9], "x", label=f"{label} (measured)")
    ax.set_xlabel("FLOP per byte")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f"roofline: {d.name} ({d.bandwidth_gbs:g} GB/s, {d.fp32_tflops:g} TFLOP/s FP32)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
