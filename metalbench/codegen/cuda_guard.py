"""Guarded reads of input buffers in printed CUDA: a read outside its buffer gives 0.

Real MSL kernels read past their inputs and mask the value away afterwards: MLX's own
documented ``grid_sample`` loads all four bilinear neighbours, then zeroes those outside
the image. On Apple GPUs such a read returns some value and nothing faults, so the kernel
is right. On NVIDIA the same read outside the allocation is an illegal address: the CUDA
context dies, and with it every later MLX call in the process (issue 13: 8x256x256x32 did
that on the H200). The simulator's unchecked launch gives 0 for such a read (DESIGN.md,
"Semantics contract"); with ``read_guard`` set on the kernel (the MSL front end sets it,
see :func:`guard_enabled`) the CUDA printer does the same for the reads that need it.

**Which reads are guarded** (the default scope, ``"data"``; ``passes/data_dependence.py``
decides): a read of an input buffer (or of a reinterpreting view of one,
``(device float4*)x``) in the kernel body whose index

* *depends on data*: on a value read from memory (an input or output, a threadgroup or
  thread array holding such values, an atomic's result), directly or through control
  flow -- a gather ``x[idx[i]]``, grid_sample's ``x[.. floor(coordinate) ..]``, a binary
  search. Nothing but the data bounds it, and a kernel right on Metal may read far
  outside (grid_sample: a whole image row before ``x``); or
* *may be negative*: its derivation has a subtraction the range facts
  (``passes/ranges.py``) do not prove non-negative, a negation, a negative constant, a
  float-to-integer conversion, a stride. ``x[i - 1]`` at ``uint i = 0`` is 2^32 - 1, far
  outside any buffer: a stencil that reads its left neighbour and masks it at the border.

**Not guarded**: reads whose index is *launch-determined and non-negative* -- computed
from thread positions, loop counters, template constants, shapes, scalar arguments and
inputs read at a constant index (``T[0]``, ``scale[0]``: MLX's scalars), with additions,
products, divisions, shifts and masks. Such a read lands past its input only when the
launch reaches past the input (a grid larger than ``x.size``, a loop bound past the
row), and then only past its end. The checked simulator reports it. A kernel that does
this and masks the value away afterwards is right on Metal. On CUDA it reads other memory
(harmless when masked) or, far enough past the allocation, faults. That case, and a
launch parameter that is negative (scalar arguments and constant-index reads count as
non-negative, as shapes do: they are the sizes and counts of index arithmetic), are what
this scope gives up; ``METALBENCH_CUDA_GUARD_READS=1`` covers both. The kernel's
hand-written CUDA twin reads the same way. These are the reads of elementwise kernels,
reductions and the mlx-lm model kernels. Left plain, the compiler treats them as
hand-written loads (merged, hoisted, vectorised): gated_delta went from 339 to 154 SASS
instructions, its unguarded count (``benchmarks/msl_cuda_sass.py``).
Also not guarded, as before: reads inside device functions (the front end inlines most
MSL helpers, so their reads are in the body), outputs (MLX allocates them from
``output_shapes``), threadgroup and thread arrays (no fault on the GPU), 0-d inputs, and
writes (a write outside its buffer is a bug on every GPU).
``METALBENCH_CUDA_GUARD_READS=1`` (or ``all``) guards every input read of every kernel,
for a kernel that reads past an input with a launch-determined index; ``=0`` guards none
(to measure the guard's cost: ``benchmarks/msl_cuda.py``).

**How**: at the top of the body, after the launch guard, each input with a guarded read
gets its extent from MLX's own ``x_shape`` (and ``x_strides``) parameters (MLX passes them
because the body names them): the lowest and the number of addressable elements,
``mb_lo_x``/``mb_n_x``. With ``ensure_row_contiguous=True`` (MLX's default; the kernel's
``read_guard`` is ``"rows"``) an input is row-contiguous: 0 and the product of the shape.
Otherwise (``"strided"``) both come from shape and strides, negative strides included.
A guarded read with a 32-bit index (``int``/``uint``, the usual MSL index) in a
row-contiguous input is ``mb_gload32(x, i, mb_e31_x, false)``: one 32-bit compare against
the element count capped to the index type's range (``mb_e31_x``, at most 2^31, for
``int``, whose negative values convert to 2^31 and more, outside; ``mb_e32_x`` and the
flag ``mb_all32_x`` of an input of 2^32 elements or more for ``uint``), and
the load predicated on it; other reads are ``mb_gload(x, i, mb_lo_x, mb_n_x)`` (64-bit).
A vector access is one check for the whole vector and the plain vector load inside.

Why only MSL kernels by default: DSL and Numba kernels are written for metalbench and
CUDA (Numba's own CUDA target faults on such a read too), and the checked simulator
reports the read; they stay unguarded, as the issue-18 kernels were measured.

    >>> from metalbench import ir, types as T
    >>> from metalbench.codegen import cuda
    >>> i = ir.ThreadAttr("thread_position_in_grid", T.vector_of(T.uint32, 3))
    >>> ix = ir.Swizzle(i, "x", T.uint32)
    >>> j = ir.Var("j", T.int32)
    >>> k = ir.KernelIR("k", [ir.Param("x", "buffer", T.float32), ir.Param("idx", "buffer", T.int32),
    ...                       ir.Param("o", "buffer", T.float32, is_output=True)],
    ...                 [ir.Decl(j, ir.Load("idx", ix, T.int32)),
    ...                  ir.Store("o", ix, ir.BinOp("+", ir.Load("x", j, T.float32), ir.Load("x", ix, T.float32),
    ...                                             T.float32))], read_guard="rows")
    >>> print(cuda.render(k).body.splitlines()[-1])
    o[thread_position_in_grid.x] = mb_gload32(x, static_cast<uint32_t>(j), mb_e31_x, false) + x[thread_position_in_grid.x];
"""
from __future__ import annotations

import os

from .. import ir
from ..passes.data_dependence import DataDependence
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
    // (MLX's shapes are never negative; a clamp here cost ~10 instructions per kernel)
    for (int d = 0; d < nd; ++d) n *= static_cast<unsigned long long>(static_cast<unsigned>(shape[d]));
    return n;
}"""

_GLOAD = """\
// A read of an input outside its buffer gives 0, as on the simulator (Metal does not fault).
template <class T, class I> __device__ inline T mb_gload(const T* p, I i, long long lo, unsigned long long n) {
    const long long j = static_cast<long long>(i);
    return static_cast<unsigned long long>(j - lo) < n ? p[j] : T();
}"""

_GLOAD32 = """\
// A 32-bit index against the element count as a 32-bit bound: one compare. ``all``: every
// index of the type is inside (a uint index into 2^32 or more elements).
__device__ inline bool mb_in32(uint32_t i, uint32_t end, bool all) { return i < end || all; }
template <class T> __device__ inline T mb_gload32(const T* p, uint32_t i, uint32_t end, bool all) {
    return mb_in32(i, end, all) ? p[i] : T();
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
    (``0``: none; ``1`` or ``all``: every kernel, every input read; ``data``: every kernel,
    the reads :func:`guard_scope` names)."""
    mode = getattr(kernel, "read_guard", False)
    mode = "strided" if mode is True else (mode or None)
    env = os.environ.get(GUARD_ENV, "").strip()
    if env == "0":
        return None
    if env in ("1", "all", "data"):
        return mode or "strided"
    return mode


def guard_scope() -> str:
    """Which reads a guarded kernel guards: ``"data"`` (the default: reads whose index
    depends on data or may be negative, see the module doc) or ``"all"``
    (``METALBENCH_CUDA_GUARD_READS=1`` or ``all``: every read of an input)."""
    return "all" if os.environ.get(GUARD_ENV, "").strip() in ("1", "all") else "data"


_INT32 = ("int32", "uint32")


class ReadGuardMixin:
    """Mixed into ``CUDAPrinter``: :meth:`setup_guard` decides which reads are guarded,
    ``load`` and :meth:`guarded_vload` print them, and :meth:`guard_prelude` (printed
    after the body, placed before it) the extents of the inputs they read."""

    guarded: dict = {}

    def setup_guard(self, kernel: ir.KernelIR, mode: str | None) -> None:
        self.guarded = {}          # buffer or view name -> its input, once a guarded read of it printed
        self._bounds32 = set()     # (buffer or view, "e32"|"e31"): 32-bit bounds the guarded reads use
        self._wide = set()         # buffers and views read through the 64-bit helpers (need mb_lo_)
        self._views = {}           # view name -> (input, view element type)
        self._guardable = {}       # input or view name -> the input whose extent bounds it
        self._guard_mode = mode
        self._deps = None
        if not mode:
            return
        inputs = {p.name for p in kernel.inputs if p.kind == "buffer"}
        for n in ir.walk(kernel.body):
            if isinstance(n, ir.ViewDecl) and n.buf in inputs:
                self._views[n.name] = (n.buf, n.elem)
        self._guardable = {n: n for n in inputs}
        self._guardable.update({v: b for v, (b, _) in self._views.items()})
        if guard_scope() == "data":
            self._deps = DataDependence(kernel, getattr(self, "facts", None))

    def needs_guard(self, buf: str, index) -> bool:
        """Is the read ``buf[index]`` printed guarded? Only in the kernel body, only for
        inputs (and views of them) of a guarded kernel, and (the default scope) only
        when the index depends on data or may be negative."""
        if self.in_function is not None or buf not in self._guardable:
            return False
        d = self._deps
        return d is None or d.data(index) or d.may_be_negative(index)

    def guard_prelude(self) -> list[str]:
        """The extent of every input (and view) a guarded read reads, computed once per
        thread (the compiler keeps what is uniform in uniform registers)."""
        if not self.guarded:
            return []
        rows = self._guard_mode == "rows"
        self.need("mb_extent_rows" if rows else "mb_extent", _ROWS if rows else _EXTENT)
        out = ["// Reads outside an input give 0 (Metal does not fault there; CUDA would):"
               " reads whose index depends on data or may be negative"
               + (" (here: every read)." if self._deps is None else ".")]
        order = [p.name for p in self.k.params]
        roots = sorted(set(self.guarded.values()), key=order.index)
        wide = self._wide | {self._views[v][0] for v in self._wide if v in self._views}
        for r in roots:
            n, nd = self.name(r), self.k.param(r).ndim
            # a complex64 input is read as floats (CUDAPrinter.param_aliases): two per element
            two = "2ull * " if self.k.param(r).complex else ""
            if rows:
                lo = f"const long long mb_lo_{n} = 0; " if r in wide else ""
                out.append(f"{lo}const unsigned long long mb_n_{n} = {two}mb_extent_rows({n}_shape, {nd});")
            else:
                out.append(f"long long mb_lo_{n}; const unsigned long long mb_n_{n} = "
                           f"{two}mb_extent({n}_shape, {n}_strides, {nd}, mb_lo_{n});" + (f" mb_lo_{n} *= 2;" if two else ""))
        for v in sorted(x for x in self.guarded if x in self._views):
            root, elem = self._views[v]
            r, vn = self.name(root), self.name(v)
            rt, vt = self.tname(self.k.param(root).type), self.tname(elem)
            lo = (f"const long long mb_lo_{vn} = mb_lo_{r} * (long long)sizeof({rt}) / (long long)sizeof({vt}); "
                  if v in wide else "")
            out.append(f"{lo}const unsigned long long mb_n_{vn} = mb_n_{r} * sizeof({rt}) / sizeof({vt});")
        for b, kind in sorted(self._bounds32):
            n = self.name(b)
            if kind == "e31":       # int indices: 2^31 bounds every non-negative one
                out.append(f"const uint32_t mb_e31_{n} = mb_n_{n} > 0x80000000ull ? 0x80000000u : (uint32_t)mb_n_{n};")
            else:                   # uint indices: every one is inside 2^32 or more elements
                out.append(f"const uint32_t mb_e32_{n} = mb_n_{n} > 0xffffffffull ? 0xffffffffu : (uint32_t)mb_n_{n}; "
                           f"const bool mb_all32_{n} = mb_n_{n} > 0xffffffffull;")
        return out

    def load(self, buf: str, index, t) -> str:
        if not self.needs_guard(buf, index):
            return super().load(buf, index, t)
        self.guarded[buf] = self._guardable[buf]
        g = self.name(buf)
        it = getattr(getattr(index, "type", None), "name", None)
        if self._guard_mode == "rows" and it in _INT32:
            # a 32-bit index: one 32-bit compare against the element count, capped at
            # 2^31 for an int index (a negative one converts to 2^31 or more: outside)
            self.need("mb_gload32", _GLOAD32)
            i = self.expr(index, ASSIGN)
            if it == "int32":
                self._bounds32.add((buf, "e31"))
                return f"mb_gload32({g}, static_cast<uint32_t>({i}), mb_e31_{g}, false)"
            self._bounds32.add((buf, "e32"))
            return f"mb_gload32({g}, {i}, mb_e32_{g}, mb_all32_{g})"
        self._wide.add(buf)
        self.need("mb_gload", _GLOAD)
        return f"mb_gload({g}, {self.expr(index, ASSIGN)}, mb_lo_{g}, mb_n_{g})"

    def guarded_vload(self, buf: str, first, t) -> str | None:
        """The guarded vector read of ``t.n`` elements from ``first`` (one check for the
        whole vector), or None when that read is not guarded (``CUDAPrinter.vector_load``
        asks first)."""
        if not self.needs_guard(buf, first):
            return None
        self.guarded[buf] = self._guardable[buf]
        self._wide.add(buf)
        g = self.name(buf)
        self.need("mb_gload", _GLOAD)
        self.need("mb_vload_g", _GVLOAD)
        return (f"mb_vload_g<{self.tname(t.elem)}, {t.n}>({g}, {self.expr(first, ASSIGN)}, "
                f"mb_lo_{g}, mb_n_{g})")
