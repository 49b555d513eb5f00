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
    other stores or atomics touched (those get the scan). Built on every launch with
    fresh outputs, so it does as little as it can until the end."""

    __slots__ = ("sk", "watch", "bufs", "iv", "dirty")

    def __init__(self, sim_kernel, watch, bufs):
        self.sk, self.watch, self.bufs = sim_kernel, watch, bufs
        self.iv: dict = {}          # output index -> [(start, length)]
        self.dirty = ()             # output indices with other writes (-1: all)

    def lin(self, j, o, n, m):
        """A contiguous store of ``n`` lanes at ``o`` into output ``j`` under mask ``m``."""
        if m is None:
            got = self.iv.get(j)
            if got is None:
                self.iv[j] = [(o, n)]
            else:
                got.append((o, n))
        elif m is not False:
            self.mark(j)

    def mark(self, j):
        """Any other write to output ``j`` (-1: any output)."""
        if j not in self.dirty:
            self.dirty = self.dirty + (j,)

    def unwritten(self):
        """``{name: (candidates, exact)}``: per watched output, a bool mask of the elements
        that may be unwritten and whether that is certain (outputs written in full are
        left out). Ranges that cover an output need no mask and no scan."""
        static = self.sk.__dict__.get("_cov_static")
        if static is None:       # per kernel, not per launch
            outs = self.sk.ir.outputs
            static = self.sk._cov_static = [(p.name, p.type) for p in outs]
        out = {}
        dirty = self.dirty
        for j, (name, t) in enumerate(static):
            if name not in self.watch:
                continue
            data = self.bufs.get(name)
            if data is None:
                continue
            n = data.size
            iv = self.iv.get(j)
            if iv is None:
                iv = ()
            else:
                iv = [(iv[0][0], iv[0][0] + iv[0][1])] if len(iv) == 1 else _merged(iv)
                if len(iv) == 1 and iv[0][0] <= 0 and iv[0][1] >= n:
                    continue                   # the common case: contiguous stores covered it
            if j in dirty or -1 in dirty:
                # one pass over the output's bits (no gather of the uncovered indices)
                bits = data.view(R._UINT[data.itemsize]) if not t.is_bool else data.view(np.uint8)
                hit = bits == R.poison_bits(t)
                for a, b in iv:
                    hit[max(a, 0):b] = False
                if not hit.any():
                    continue
                out[name] = (hit, t.is_float)
            else:
                miss = np.ones(n, bool)
                for a, b in iv:
                    miss[max(a, 0):b] = False
                if miss.any():
                    out[name] = (miss, True)
        return out


def _merged(iv) -> list:
    """Sorted, merged ``[start, end)`` ranges of ``(start, length)`` pairs."""
    if not iv:
        return []
    iv.sort()
    out = []
    start, end = iv[0][0], iv[0][0] + iv[0][1]
    for o, k in iv[1:]:
        if o > end:
            out.append((start, end))
            start, end = o, o + k
        elif o + k > end:
            end = o + k
    out.append((start, end))
    return out


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


def report(sk, args, grid, threadgroup, checked, cov: Coverage) -> dict | None:
    """After a launch: warn about unwritten output elements; returns ``{name: (written,
    total)}`` for the outputs watched (None when all were written). An integer output
    still holding the poison value is launched again, quietly, with the second poison
    (``sk.rerun_quietly``), to tell elements written with that value from unwritten ones."""
    found = cov.unwritten()
    if not found:
        return None
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
            sk.rerun_quietly(alt_args, grid, threadgroup, checked)
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
        atomic = [p.name for p in sk.ir.outputs if p.atomic and p.name in counts]
        warn_user(message(sk.ir.name, counts, grid, threadgroup, atomic), CoverageWarning)
    return counts


def message(kernel: str, counts: dict, grid, threadgroup, atomic=()) -> str:
    """The warning's text: per output, how many elements were written, and the likely cause
    when only a small fraction was. ``atomic``: the outputs among them declared atomic
    (``atomic_outputs=True``), which an atomic update leaves unwritten when it starts from
    garbage: those most likely miss ``init_value=0``.

    >>> print(message("g", {"acc": (0, 64)}, (64, 1, 1), (32, 1, 1), ["acc"]))  # doctest: +NORMALIZE_WHITESPACE
    kernel 'g' wrote 0 of the 64 elements of output 'acc' (no init_value): the others are
    uninitialised (garbage on a GPU).
    Likely cause: 'acc' is atomic and starts uninitialised, so every atomic update (atomic_fetch_add_explicit
    ...) added to garbage: pass init_value=0 (--init-value 0 in a %%metal cell), as MLX's docs do with
    atomic_outputs=True.

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
    one_d = grid[1] == grid[2] == 1
    if atomic:
        names = ", ".join(repr(a) for a in atomic)
        head += (f"\nLikely cause: {names} {'is' if len(atomic) == 1 else 'are'} atomic and "
                 f"start{'s' if len(atomic) == 1 else ''} uninitialised, so every atomic update "
                 f"(atomic_fetch_add_explicit ...) added to garbage: pass init_value=0 (--init-value 0 "
                 f"in a %%metal cell), as MLX's docs do with atomic_outputs=True.")
    elif small and threads < n_max and (threads * tg >= n_max or one_d and threadgroup[0] == grid[0]):
        # grid * threadgroup would cover the output: the grid was most likely given in
        # threadgroups (MLX clamps the threadgroup to the grid: a 1-D grid equal to its threadgroup
        # may be one too)
        g = (n_max, 1, 1) if one_d else tuple(int(a) * int(b) for a, b in zip(grid, threadgroup))
        head += (f"\nLikely cause: `grid` counts threads, not threadgroups (Metal's dispatchThreads): this "
                 f"launch ran {threads} threads in threadgroups of {tg} (grid={tuple(grid)}, "
                 f"threadgroup={tuple(threadgroup)}); for one thread per element pass grid={g}.")
    elif small and threads < n_max:
        head += (f"\nLikely cause: the launch ran {threads} threads (grid={tuple(grid)}; `grid` counts threads, "
                 f"not threadgroups) for {n_max} elements: give each element a thread, or check the output's "
                 f"shape (mb.Out(shape=...), by default the first array argument's; output_shapes= for MSL), or "
                 f"pass init_value= to fill the rest.")
    else:
        head += "\nWrite every element, or pass init_value= to fill the rest."
    return head
