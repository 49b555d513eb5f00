"""Launch coverage: did the launch write every element of its fresh outputs?

Outputs without ``init_value`` are uninitialised on a GPU (poisoned on the simulator).
An element the kernel never writes holds garbage there, and the classic cause is a
``grid`` given in threadgroups instead of threads (MLX issues #1547 and #4534: silent
wrong results and a bogus speed-up). Every simulator launch with fresh outputs checks
this and warns with :class:`CoverageWarning`.

It is exact and cheap: contiguous stores (``out[i]`` in a 1-D launch: the simulator's
slice path) record their ranges, O(1) per store and chunk, and any other store or
atomic marks its output for a scan. At the end an output covered by its ranges needs
nothing more; an unmarked one has exactly the uncovered elements unwritten; a marked
one has its uncovered elements scanned for the poison bit pattern. Float poison is a
NaN with its own payload, so a kernel writing NaN is not mistaken for one that did
not write; an integer output still holding the poison value is launched once more,
quietly, with a second poison, and only elements holding both count as unwritten.

    >>> import warnings, numpy as np, metalbench as mb
    >>> k = mb.metal_kernel("twice", ["x"], ["y"], "uint i = thread_position_in_grid.x; y[i] = 2 * x[i];")
    >>> x = np.ones(1024, np.float32)
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     _ = k(inputs=[x], grid=(4, 1, 1), threadgroup=(256, 1, 1), output_shapes=[x.shape],
    ...           output_dtypes=[np.float32], backend="sim")
    >>> print(w[0].message)                                 # doctest: +ELLIPSIS
    kernel 'twice' wrote 4 of the 1024 elements of output 'y' ...
"""
from __future__ import annotations

import numpy as np

from .. import ir
from .. import runtime as R
from ..errors import CoverageWarning


class Coverage:
    """Per launch: the ranges contiguous stores wrote in each output, and which outputs
    other stores or atomics touched (those get the scan)."""

    __slots__ = ("names", "iv", "dirty", "watch", "types", "datas")

    def __init__(self, kernel: ir.KernelIR, watch, bufs):
        outs = kernel.outputs
        self.names = [p.name for p in outs]
        self.types = [p.type for p in outs]
        self.watch = [p.name in watch for p in outs]
        self.datas = [bufs.get(p.name) for p in outs]
        self.iv = [[] for _ in outs]
        self.dirty = [False] * len(outs)

    def lin(self, j, o, n, m):
        """A contiguous store of ``n`` lanes at ``o`` under mask ``m``."""
        if m is None:
            self.iv[j].append((o, n))
        elif m is not False:
            self.dirty[j] = True

    def mark(self, j):
        """Any other write to output ``j`` (-1: any output)."""
        if j < 0:
            self.dirty = [True] * len(self.dirty)
        else:
            self.dirty[j] = True

    def unwritten(self):
        """``{name: (candidates, exact)}``: per watched output, a bool mask of the elements
        that may be unwritten (None: all written) and whether that is certain."""
        out = {}
        for j, name in enumerate(self.names):
            if not self.watch[j] or self.datas[j] is None:
                continue
            data = self.datas[j]
            n = data.size
            covered = _covered(self.iv[j], n)
            if covered is not None and covered.all():
                continue
            miss = np.ones(n, bool) if covered is None else ~covered
            if self.dirty[j]:
                t = self.types[j]
                bits = data.view(R._UINT[data.itemsize]) if not t.is_bool else data.view(np.uint8)
                hit = np.zeros(n, bool)
                idx = np.flatnonzero(miss)
                hit[idx] = bits[idx] == R.poison_bits(t)
                if not hit.any():
                    continue
                out[name] = (hit, t.is_float)
            else:
                out[name] = (miss, True)
        return out


def _covered(iv, n):
    if not iv:
        return None
    m = np.zeros(n, bool)
    iv.sort()
    start, end = iv[0][0], iv[0][0] + iv[0][1]
    for o, k in iv[1:]:
        if o > end:
            m[start:end] = True
            start, end = o, o + k
        else:
            end = max(end, o + k)
    m[start:end] = True
    return m


def writes_inputs(kernel: ir.KernelIR) -> bool:
    """Whether a store or atomic may write something other than an output, a threadgroup
    or a thread-local array (an input, a view, a device function's buffer parameter):
    then a second launch would change the inputs."""
    outs = {p.name for p in kernel.outputs}
    local = {n.name for n in ir.walk(kernel.body) if isinstance(n, ir.ArrayDecl)}
    for f in kernel.functions:
        local |= {n.name for n in ir.walk(f.body) if isinstance(n, ir.ArrayDecl)}
        local |= {p.name for p in f.params if p.space in ("threadgroup", "thread")}
    nodes = list(ir.walk(kernel.body))
    for f in kernel.functions:
        nodes.extend(ir.walk(f.body))
    for n in nodes:
        if isinstance(n, (ir.Store, ir.Atomic, ir.MatrixStore)) and n.buf not in outs and n.buf not in local:
            return True
    return False


def report(sk, args, grid, threadgroup, checked, cov: Coverage, rerun) -> dict:
    """After a launch: warn about unwritten output elements; returns ``{name: (written,
    total)}`` for the outputs watched. ``rerun(alt_args)`` launches again (quietly) on
    other outputs, to tell integers written with the poison value from unwritten ones."""
    found = cov.unwritten()
    if not found:
        return {}
    unsure = [name for name, (_, exact) in found.items() if not exact]
    if unsure:
        if writes_inputs(sk.ir):
            for name in unsure:      # cannot launch again: give the kernel the benefit of the doubt
                found.pop(name)
        else:
            alt_args = dict(args)
            fresh = {}
            for p in sk.ir.outputs:
                b = args[p.name]
                a = R.poisoned(b.data.shape, p.type, alt=p.name in unsure)
                fresh[p.name] = a
                alt_args[p.name] = type(b)(a, b.shape, b.strides)
            rerun(alt_args)
            for name in unsure:
                t = sk.ir.param(name).type
                a = fresh[name]
                bits = a.view(R._UINT[a.itemsize]) if not t.is_bool else a.view(np.uint8)
                still = found[name][0] & (bits == R.poison_bits(t, alt=True))
                if still.any():
                    found[name] = (still, True)
                else:
                    found.pop(name)
    counts = {}
    for name, (mask, _) in found.items():
        n = mask.size
        counts[name] = (n - int(np.count_nonzero(mask)), n)
    if counts:
        from .notices import warn_user
        warn_user(message(sk.ir.name, counts, grid, threadgroup), CoverageWarning)
    return counts


def message(kernel: str, counts: dict, grid, threadgroup) -> str:
    """The warning's text: per output, how many elements were written, and the likely cause
    when only a small fraction was.

    >>> print(message("k", {"out": (4, 1024)}, (4, 1, 1), (256, 1, 1)))  # doctest: +NORMALIZE_WHITESPACE
    kernel 'k' wrote 4 of the 1024 elements of output 'out' (no init_value): the others are
    uninitialised (garbage on a GPU).
    Likely cause: `grid` counts threads, not threadgroups (Metal's dispatchThreads): this launch
    ran 4 threads in threadgroups of 256 (grid=(4, 1, 1), threadgroup=(256, 1, 1)); for one
    thread per element pass grid=(1024, 1, 1).
    """
    parts = []
    small = False
    for name, (w, n) in counts.items():
        parts.append(f"wrote {w} of the {n} elements of output {name!r}")
        small = small or w * 4 <= n
    head = (f"kernel {kernel!r} " + "; ".join(parts) + " (no init_value): the others are uninitialised "
            "(garbage on a GPU).")
    threads = grid[0] * grid[1] * grid[2]
    tg = threadgroup[0] * threadgroup[1] * threadgroup[2]
    n_max = max(n for _, n in counts.values())
    if small and threads < n_max:
        g = tuple(int(a) * int(b) for a, b in zip(grid, threadgroup))
        suggest = (f"; for one thread per element pass grid={(n_max, 1, 1) if grid[1] == grid[2] == 1 else g}"
                   if threads * tg >= n_max else "")
        head += (f"\nLikely cause: `grid` counts threads, not threadgroups (Metal's dispatchThreads): this "
                 f"launch ran {threads} threads in threadgroups of {tg} (grid={tuple(grid)}, "
                 f"threadgroup={tuple(threadgroup)}){suggest}.")
    else:
        head += "\nWrite every element, or pass init_value= to fill the rest."
    return head
