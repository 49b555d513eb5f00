"""Guarded reads of input buffers in printed CUDA: a read outside its buffer gives 0.

Real MSL kernels read past their inputs and mask the value away afterwards: MLX's own
documented ``grid_sample`` loads all four bilinear neighbours, then zeroes those outside
the image. On Apple GPUs such a read returns some value and nothing faults, so the kernel
is right. On NVIDIA the same read outside the allocation is an illegal address: the CUDA
context dies, and with it every later MLX call in the process (issue 13: 8x256x256x32 did
that on the H200). The simulator's unchecked launch gives 0 for such a read (DESIGN.md,
"Semantics contract"); with ``read_guard`` set on the kernel (the MSL front end sets it,
see :func:`guard_enabled`) the CUDA printer does the same:

* at the top of the body, after the launch guard, each input buffer the kernel reads gets
  its extent from MLX's own ``x_shape`` (and ``x_strides``) parameters (MLX passes them
  because the body names them): the lowest and the number of addressable elements,
  ``mb_lo_x``/``mb_n_x``. With ``ensure_row_contiguous=True`` (MLX's default; the kernel's
  ``read_guard`` is ``"rows"``) an input is row-contiguous: 0 and the product of the
  shape. Otherwise (``"strided"``) both come from shape and strides, negative strides
  included;
* every load of such a buffer (and of a reinterpreting view of it, ``(device float4*)x``)
  in the kernel body is ``mb_gload(x, i, mb_lo_x, mb_n_x)``: one unsigned compare, the
  load predicated on it, 0 otherwise; a vector access is one check for the whole vector
  and the unguarded vector load when it is inside.

What is not guarded: reads inside device functions (the buffer arrives as a pointer with
an offset; most MSL helpers are inlined by the front end, so their reads are in the body),
outputs (MLX allocates them from ``output_shapes``; a kernel reading its output out of
range is a bug the checked simulator reports), threadgroup and thread arrays (no fault on
the GPU), 0-d inputs (read once, MLX guarantees one element). Writes are not guarded:
a write outside its buffer is a bug on every GPU.

Why only MSL kernels by default: sizes are launch values, so no read can be proved in
range when the kernel is printed (the range facts of ``passes/ranges.py`` bound indices,
not buffers). DSL and Numba kernels are written for metalbench and CUDA (Numba's own CUDA
target faults on such a read too), and the checked simulator reports the read; they stay
unguarded, as the issue-18 kernels were measured. ``METALBENCH_CUDA_GUARD_READS=1`` guards
every kernel, ``=0`` none (for measuring the guard's cost: ``benchmarks/msl_cuda.py``).

    >>> from metalbench import ir, types as T
    >>> from metalbench.codegen import cuda
    >>> i = ir.ThreadAttr("thread_position_in_grid", T.vector_of(T.uint32, 3))
    >>> ix = ir.Swizzle(i, "x", T.uint32)
    >>> k = ir.KernelIR("k", [ir.Param("x", "buffer", T.float32),
    ...                       ir.Param("o", "buffer", T.float32, is_output=True)],
    ...                 [ir.Store("o", ix, ir.Load("x", ir.BinOp("+", ix, ir.Const(1, T.uint32), T.uint32),
    ...                  T.float32))], read_guard=True)
    >>> print(cuda.render(k).body.splitlines()[-1])
    o[thread_position_in_grid.x] = mb_gload(x, thread_position_in_grid.x + 1u, mb_lo_x, mb_n_x);
"""
from __future__ import annotations

import os

from .. import ir
from .c_like import ASSIGN

GUARD_ENV = "METALBENCH_CUDA_GUARD_READS"

_EXTENT = """\
// The addressable elements of an input from MLX's shape and strides: the lowest element
// offset (``lo``, negative for negative strides) and how many there are (0 when empty).
template <class S, class St> __device__ inline unsigned long long mb_extent(const S& shape, const St& strides,
                                                                           int nd, long long& lo) {
    long long l = 0, h = 0;
    for (int d = 0; d < nd; ++d) {
        const long long n = shape[d];
        if (n <= 0) { lo = 0; return 0ull; }
        const long long e = (n - 1) * static_cast<long long>(strides[d]);
        if (e < 0) l += e; else h += e;
    }
    lo = l;
    return static_cast<unsigned long long>(h - l + 1);
}"""

_ROWS = """\
// The elements of a row-contiguous input (MLX copies other inputs for ensure_row_contiguous).
template <class S> __device__ inline unsigned long long mb_extent_rows(const S& shape, int nd) {
    unsigned long long n = 1;
    for (int d = 0; d < nd; ++d) n *= static_cast<unsigned long long>(shape[d] < 0 ? 0 : shape[d]);
    return n;
}"""

_GLOAD = """\
// A read of an input outside its buffer gives 0, as on the simulator (Metal does not fault).
template <class T, class I> __device__ inline T mb_gload(const T* p, I i, long long lo, unsigned long long n) {
    const long long j = static_cast<long long>(i);
    return static_cast<unsigned long long>(j - lo) < n ? p[j] : T();
}"""

_GVLOAD = """\
template <class T, int N, class I> __device__ inline mb_vec<T, N> mb_vload_g(const T* p, I i, long long lo,
                                                                          unsigned long long n) {
    const long long j = static_cast<long long>(i);
    if (static_cast<unsigned long long>(j - lo) < n && static_cast<unsigned long long>(j + N - 1 - lo) < n)
        return mb_vload<T, N>(p + j);
    mb_vec<T, N> r;
    for (int k = 0; k < N; ++k) r[k] = mb_gload(p, j + k, lo, n);
    return r;
}"""


def guard_enabled(kernel: ir.KernelIR) -> str | None:
    """How the printed CUDA guards input reads: ``"rows"`` (row-contiguous inputs),
    ``"strided"`` or None (not at all). The kernel's ``read_guard`` (set by the MSL
    front end; ``True`` means ``"strided"``), overridden by ``METALBENCH_CUDA_GUARD_READS``
    (``1``: every kernel, ``0``: none)."""
    mode = getattr(kernel, "read_guard", False)
    mode = "strided" if mode is True else (mode or None)
    env = os.environ.get(GUARD_ENV, "").strip()
    if env in ("0", "1"):
        return (mode or "strided") if env == "1" else None
    return mode


class ReadGuardMixin:
    """Mixed into ``CUDAPrinter``: :meth:`setup_guard` picks the guarded buffers,
    :meth:`guard_prelude` prints their extents, ``load`` and :meth:`guarded_vload` the
    guarded reads."""

    guarded: dict = {}

    def setup_guard(self, kernel: ir.KernelIR, mode: str | None) -> None:
        self.guarded = {}          # buffer or view name -> the input whose extent bounds it
        self._views = {}           # view name -> (input, view element type)
        self._guard_mode = mode
        if not mode:
            return
        inputs = {p.name: p for p in kernel.inputs if p.kind == "buffer"}
        loads = set()
        for n in ir.walk(kernel.body):
            if isinstance(n, ir.Load):
                loads.add(n.buf)
            elif isinstance(n, ir.ViewDecl) and n.buf in inputs:
                self._views[n.name] = (n.buf, n.elem)
        for name in loads:
            if name in inputs:
                self.guarded[name] = name
            elif name in self._views:
                self.guarded[name] = self._views[name][0]

    def guard_prelude(self) -> list[str]:
        """The extent of every guarded input (and view), computed once per thread."""
        if not self.guarded:
            return []
        rows = self._guard_mode == "rows"
        self.need("mb_extent_rows" if rows else "mb_extent", _ROWS if rows else _EXTENT)
        out = ["// Reads outside an input give 0 (Metal does not fault there; CUDA would)."]
        roots = sorted(set(self.guarded.values()), key=lambda n: [p.name for p in self.k.params].index(n))
        for r in roots:
            n, nd = self.name(r), self.k.param(r).ndim
            if rows:
                out.append(f"const long long mb_lo_{n} = 0; "
                           f"const unsigned long long mb_n_{n} = mb_extent_rows({n}_shape, {nd});")
            else:
                out.append(f"long long mb_lo_{n}; "
                           f"const unsigned long long mb_n_{n} = mb_extent({n}_shape, {n}_strides, {nd}, mb_lo_{n});")
        for v in sorted(x for x in self.guarded if x in self._views):
            root, elem = self._views[v]
            r, vn = self.name(root), self.name(v)
            rt, vt = self.tname(self.k.param(root).type), self.tname(elem)
            out.append(f"const long long mb_lo_{vn} = mb_lo_{r} * (long long)sizeof({rt}) / (long long)sizeof({vt}); "
                       f"const unsigned long long mb_n_{vn} = mb_n_{r} * sizeof({rt}) / sizeof({vt});")
        return out

    def _guard_name(self, buf: str) -> str | None:
        if self.in_function is not None or buf not in self.guarded:
            return None
        return self.name(buf)

    def load(self, buf: str, index, t) -> str:
        g = self._guard_name(buf)
        if g is None:
            return super().load(buf, index, t)
        self.need("mb_gload", _GLOAD)
        return f"mb_gload({g}, {self.expr(index, ASSIGN)}, mb_lo_{g}, mb_n_{g})"

    def guarded_vload(self, buf: str, first, t) -> str | None:
        """The guarded vector read of ``t.n`` elements from ``first``, or None when
        ``buf`` is not guarded (``CUDAPrinter.vector_load`` asks first)."""
        g = self._guard_name(buf)
        if g is None:
            return None
        self.need("mb_gload", _GLOAD)
        self.need("mb_vload_g", _GVLOAD)
        return (f"mb_vload_g<{self.tname(t.elem)}, {t.n}>({g}, {self.expr(first, ASSIGN)}, "
                f"mb_lo_{g}, mb_n_{g})")
