"""CUDA generator: IR -> what ``mx.fast.cuda_kernel`` receives (MLX's CUDA backend).

MLX 0.32's ``cuda_kernel`` (``mlx/backend/cuda/custom_kernel.cpp``) wraps the body in
``__global__ void custom_kernel_<name>(const T* in, [const __grid_constant__ Shape
in_shape, Strides in_strides, int in_ndim,] ..., T* out)`` inside
``namespace mlx::core::cu``; every input -- a 0-d scalar too -- arrives as
``const T*`` (so scalar parameters are read once at the top, ``mb_arg_a = a[0]``),
and the grid is launched as
``ceil(grid / threadgroup)`` whole blocks. Metal never runs threads past ``grid``,
so the body starts with a guard that needs the grid: the generated kernel takes
one extra input, ``mb_grid`` (``uint32[3]``), after the user's inputs. ``Rendered``
lists it in ``input_names`` and ``extra_inputs``; ``r.extra_inputs(grid, tg,
output_shapes)`` makes the arrays (also ``mb_<out>_shape``/``_strides`` when the
kernel reads an output's shape, which MLX does not pass).

Metal semantics, mapped: thread attributes become ``const`` locals computed from
``blockIdx``/``blockDim``/``threadIdx``; ``threads_per_threadgroup`` is the (possibly
partial) size of this threadgroup, ``dispatch_threads_per_threadgroup`` the launch
size; ``thread_index_in_threadgroup`` (and the SIMD/quad indices derived from it) is
linear over x, then y, then z of this threadgroup's own size, as in the simulator.
SIMD-group functions run on hardware warps (linear over the *launch* block size):
the two agree in every full threadgroup and in 1-D grids; only edge threadgroups
of a 2-D/3-D grid that are partial in x or y group their lanes differently;
threadgroup arrays are ``__shared__``; barriers ``__syncthreads()``; SIMD-group
functions are warp shuffles over ``__activemask()`` (a butterfly for full warps, an
ordered loop over active lanes otherwise); atomics are ``atomicAdd`` & co. (float
min/max/CAS through ``atomicCAS`` loops); ``half``/``bfloat`` are ``__half`` /
``__nv_bfloat16`` with math done in float; vectors are small ``mb_vec`` structs.

    >>> from metalbench import ir, types as T
    >>> k = ir.KernelIR("k", [ir.Param("a", "scalar", T.float32),
    ...                       ir.Param("o", "buffer", T.float32, is_output=True)],
    ...                 [ir.Store("o", ir.Const(0, T.uint32), ir.Var("a", T.float32))])
    >>> r = render(k)
    >>> for line in r.body.splitlines()[-2:]:
    ...     print(line)
    const float mb_arg_a = a[0];
    o[0u] = mb_arg_a;
    >>> r.input_names
    ['a', 'mb_grid']

Note: MLX 0.32.4's ``mx.fast.cuda_kernel`` takes ``shared_memory`` and no
``atomic_outputs``; ``Rendered.atomic_outputs`` is always False here.
"""
from __future__ import annotations


from pathlib import Path

import ml_dtypes
import numpy as np

from .. import ir
from .. import scalar as S
from .. import types as T
from ..builtins import check_atomic, registry
from ..errors import KernelTypeError
from ..passes.lengths import bind_lengths
from .cuda_prelude import base_prelude
from ..passes.ranges import LaunchFacts, Ranges, canonical_cfor, signed_loops
from ..passes.simdgroup_matrix import lower as lower_matrices
from ..passes.warps import converged_calls, eager_select
from .c_like import (ADD, ASSIGN, BINARY_PREC, MUL, POSTFIX, UNARY, CPrinter, Dialect, Rendered, length_division,
                     render_with)
from .c_like import _flat as _flat_values
from .cuda_guard import ReadGuardMixin, guard_enabled
from .cuda_ints import F2NARROW, IDIV, IMOD, IntegerVectorMixin
from .cuda_source import CUDA_TYPES, full_source, launch_bounds, mlx_facing_types
from .matrix import CUDAMatrixMixin
from .vector_access import VectorAccessMixin

__all__ = ["render", "Rendered", "CUDAPrinter", "CUDA", "full_source", "GRID_INPUT", "SHIM_INCLUDE"]

GRID_INPUT = "mb_grid"
SHIM_INCLUDE = str(Path(__file__).parent / "cuda_shim")

_CUDA_WORDS = """
__global__ __device__ __host__ __shared__ __constant__ __restrict__ __syncthreads __syncwarp
threadIdx blockIdx blockDim gridDim warpSize dim3 uint3 int3 float2 float3 float4 int2 int4 uint2
uint4 make_uint3 half bfloat __half __nv_bfloat16 inf cg cooperative_groups mlx Shape Strides
MAX_NDIM min max abs fabsf expf logf sqrtf powf atomicAdd atomicSub atomicMin atomicMax atomicAnd
atomicOr atomicXor atomicExch atomicCAS int8_t uint8_t int16_t uint16_t int32_t uint32_t int64_t
uint64_t size_t cuda std complex64_t complex_t elem_to_loc device constant thread threadgroup kernel uint ushort uchar
ulong
""".split()

CUDA = Dialect(
    name="CUDA",
    scalar=CUDA_TYPES,
    vector_prefix="mb_",
    int_suffix={"uint32": "u", "int64": "ll", "uint64": "ull"},
    reserved=frozenset(_CUDA_WORDS + [b.name for b in registry.all()]),
    func_prefix="__device__ inline ",
    space={"device": "", "constant": "", "threadgroup": "", "thread": "", "thread_array": ""},
    global_prefix="__constant__ ",
    threadgroup_prefix="__shared__ ",
    align="__align__({n}) ",
    barrier={"threadgroup": "__syncthreads();", "simdgroup": "__syncwarp(__activemask());"},
    # CUDA fences order every memory space; there is no warp-scope one (the block's is stronger)
    fence={"device": "__threadfence();", "threadgroup": "__threadfence_block();",
           "simdgroup": "__threadfence_block();"},
    inf="INFINITY", nan="NAN", half_suffix=None, cast_buffer_args=True, complex_buffers=True,
)

# ----------------------------------------------------------------------------- header helpers

_VEC = """\
// Metal vectors as small structs: componentwise operators, explicit conversions.
#define MB_VEC_COMMON(N)                                                                   \\
    typedef T elem_type;                                                                   \\
    mb_vec() = default;                                                                    \\
    __device__ explicit mb_vec(T s) { for (int i = 0; i < N; ++i) (*this)[i] = s; }      \\
    template <class U> __device__ explicit mb_vec(const mb_vec<U, N>& o) {                 \\
        for (int i = 0; i < N; ++i) (*this)[i] = mb_cvt<T>(o[i]);                          \\
    }                                                                                      \\
    __device__ T& operator[](int i) { return (&x)[i]; }                                    \\
    __device__ const T& operator[](int i) const { return (&x)[i]; }                        \\
    template <class B> __device__ mb_vec& operator+=(const B& b) { return *this = *this + b; } \\
    template <class B> __device__ mb_vec& operator-=(const B& b) { return *this = *this - b; } \\
    template <class B> __device__ mb_vec& operator*=(const B& b) { return *this = *this * b; } \\
    template <class B> __device__ mb_vec& operator/=(const B& b) { return *this = *this / b; } \\
    template <class B> __device__ mb_vec& operator%=(const B& b) { return *this = *this % b; } \\
    template <class B> __device__ mb_vec& operator&=(const B& b) { return *this = *this & b; } \\
    template <class B> __device__ mb_vec& operator|=(const B& b) { return *this = *this | b; } \\
    template <class B> __device__ mb_vec& operator^=(const B& b) { return *this = *this ^ b; } \\
    template <class B> __device__ mb_vec& operator<<=(const B& b) { return *this = *this << b; } \\
    template <class B> __device__ mb_vec& operator>>=(const B& b) { return *this = *this >> b; }
template <class T> struct mb_vec<T, 2> {
    T x, y;
    MB_VEC_COMMON(2)
    __device__ mb_vec(T a, T b) : x(a), y(b) {}
};
template <class T> struct mb_vec<T, 3> {
    T x, y, z;
    MB_VEC_COMMON(3)
    __device__ mb_vec(T a, T b, T c) : x(a), y(b), z(c) {}
};
template <class T> struct mb_vec<T, 4> {
    T x, y, z, w;
    MB_VEC_COMMON(4)
    __device__ mb_vec(T a, T b, T c, T d) : x(a), y(b), z(c), w(d) {}
};
// vec<T, n> of 5..16 (clang's ext vectors): components past w have no letter, only [k]
template <class T, int N> struct mb_vec {
    T x, _r[N - 1];
    MB_VEC_COMMON(N)
    template <class... A> __device__ mb_vec(T a, T b, A... r) : x(a), _r{b, static_cast<T>(r)...} {}
};
#define MB_VEC_BINOP(op, R)                                                                \\
    template <class T, int N>                                                              \\
    __device__ inline mb_vec<R, N> operator op(const mb_vec<T, N>& a, const mb_vec<T, N>& b) { \\
        mb_vec<R, N> r;                                                                    \\
        for (int i = 0; i < N; ++i) r[i] = a[i] op b[i];                                   \\
        return r;                                                                          \\
    }                                                                                      \\
    template <class T, int N, class S, class = typename mb_enable_if<!mb_is_vec<S>::value>::type> \\
    __device__ inline mb_vec<R, N> operator op(const mb_vec<T, N>& a, const S& b) {        \\
        return a op mb_vec<T, N>(static_cast<T>(b));                                       \\
    }                                                                                      \\
    template <class T, int N, class S, class = typename mb_enable_if<!mb_is_vec<S>::value>::type> \\
    __device__ inline mb_vec<R, N> operator op(const S& a, const mb_vec<T, N>& b) {        \\
        return mb_vec<T, N>(static_cast<T>(a)) op b;                                       \\
    }
MB_VEC_BINOP(+, T) MB_VEC_BINOP(-, T) MB_VEC_BINOP(*, T) MB_VEC_BINOP(/, T) MB_VEC_BINOP(%, T)
MB_VEC_BINOP(&, T) MB_VEC_BINOP(|, T) MB_VEC_BINOP(^, T) MB_VEC_BINOP(<<, T) MB_VEC_BINOP(>>, T)
MB_VEC_BINOP(==, bool) MB_VEC_BINOP(!=, bool) MB_VEC_BINOP(<, bool) MB_VEC_BINOP(<=, bool)
MB_VEC_BINOP(>, bool) MB_VEC_BINOP(>=, bool) MB_VEC_BINOP(&&, bool) MB_VEC_BINOP(||, bool)
#define MB_VEC_UNOP(op, R)                                                                 \\
    template <class T, int N> __device__ inline mb_vec<R, N> operator op(const mb_vec<T, N>& a) { \\
        mb_vec<R, N> r;                                                                    \\
        for (int i = 0; i < N; ++i) r[i] = op a[i];                                        \\
        return r;                                                                          \\
    }
MB_VEC_UNOP(-, T) MB_VEC_UNOP(~, T) MB_VEC_UNOP(!, bool)
template <int... I, class T, int N> __device__ inline mb_vec<T, sizeof...(I)> mb_swizzle(const mb_vec<T, N>& v) {
    return mb_vec<T, sizeof...(I)>(v[I]...);
}
template <class T, int N> __device__ inline T mb_comp(const mb_vec<T, N>& v, int i) { return v[i]; }
template <class S> __device__ inline S mb_comp(const S& s, int) { return s; }
// Componentwise application of a scalar function (vector math).
template <class F, class T, int N, class... R>
__device__ inline auto mb_map(F f, const mb_vec<T, N>& a, const R&... r)
    -> mb_vec<decltype(f(a[0], mb_comp(r, 0)...)), N> {
    mb_vec<decltype(f(a[0], mb_comp(r, 0)...)), N> out;
    for (int i = 0; i < N; ++i) out[i] = f(a[i], mb_comp(r, i)...);
    return out;
}
template <class C, class T, int N>
__device__ inline mb_vec<T, N> mb_select(const C& c, const mb_vec<T, N>& a, const mb_vec<T, N>& b) {
    mb_vec<T, N> out;
    for (int i = 0; i < N; ++i) out[i] = mb_comp(c, i) ? a[i] : b[i];
    return out;
}
template <class V, class S> __device__ inline void mb_put(V& r, int& k, const S& s) {
    r[k++] = mb_cvt<typename V::elem_type>(s);
}
template <class V, class T, int N> __device__ inline void mb_put(V& r, int& k, const mb_vec<T, N>& v) {
    for (int i = 0; i < N; ++i) r[k++] = mb_cvt<typename V::elem_type>(v[i]);
}
// float4(a.xy, b, c): the components of the arguments in order.
template <class V, class... A> __device__ inline V mb_make(const A&... a) {
    V r;
    int k = 0;
    (mb_put(r, k, a), ...);
    return r;
}"""

_VEC_TYPES = "\n".join(
    " ".join(f"typedef mb_vec<{CUDA_TYPES[e.name]}, {n}> mb_{e.msl}{n};" for n in (2, 3, 4))
    for e in T.VECTOR_ELEMS)

_FLOAT_ATOMIC = """\
// float atomic_{op} through atomicCAS; returns the old value.
__device__ inline float mb_atomic_{op}_float(float* p, float v) {{
    int* ip = reinterpret_cast<int*>(p);
    int old = *reinterpret_cast<volatile int*>(ip);
    while (v {cmp} __int_as_float(old)) {{
        int prev = atomicCAS(ip, old, __float_as_int(v));
        if (prev == old) break;
        old = prev;
    }}
    return __int_as_float(old);
}}"""

_FLOAT_CAS = """\
// float compare-and-swap on the bits; returns the old value.
__device__ inline float mb_atomic_cas_float(float* p, float expected, float desired) {
    return __int_as_float(atomicCAS(reinterpret_cast<int*>(p), __float_as_int(expected),
                                    __float_as_int(desired)));
}"""

_DOUBLE_ATOMIC = """\
// double atomic_{op} through atomicCAS on the bits; returns the old value (NaN never replaces).
__device__ inline double mb_atomic_{op}_double(double* p, double v) {{
    unsigned long long* ip = reinterpret_cast<unsigned long long*>(p);
    unsigned long long old = *reinterpret_cast<volatile unsigned long long*>(ip);
    while (v {cmp} __longlong_as_double(static_cast<long long>(old))) {{
        unsigned long long prev = atomicCAS(ip, old, static_cast<unsigned long long>(__double_as_longlong(v)));
        if (prev == old) break;
        old = prev;
    }}
    return __longlong_as_double(static_cast<long long>(old));
}}"""

_DOUBLE_CAS = """\
// double compare-and-swap on the bits; returns the old value.
__device__ inline double mb_atomic_cas_double(double* p, double expected, double desired) {
    return __longlong_as_double(static_cast<long long>(atomicCAS(
        reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(__double_as_longlong(expected)),
        static_cast<unsigned long long>(__double_as_longlong(desired)))));
}"""

_ATOMIC_LOAD = """\
template <class T> __device__ inline T mb_atomic_load(T* p) { return *reinterpret_cast<volatile T*>(p); }"""

# `c ? a : b` with both sides evaluated (a function's arguments), for a side with a shuffle
# (passes/warps.eager_select)
_EAGER_SELECT = """\
template <class T> __device__ inline T mb_sel(bool c, T a, T b) { return c ? a : b; }"""

# Attribute name -> (CUDA type, expression). "mb_grid" is the extra input.
_TID = f"mb_thread_index({GRID_INPUT})"
_ACTUAL = ("(min(blockDim.x, {g}[0] - blockIdx.x * blockDim.x) * min(blockDim.y, {g}[1] - blockIdx.y * "
           "blockDim.y) * min(blockDim.z, {g}[2] - blockIdx.z * blockDim.z))").format(g=GRID_INPUT)
_DISPATCH = "(blockDim.x * blockDim.y * blockDim.z)"
ATTRIBUTES = {
    "thread_position_in_grid": ("uint3", "make_uint3(blockIdx.x * blockDim.x + threadIdx.x, "
                                "blockIdx.y * blockDim.y + threadIdx.y, blockIdx.z * blockDim.z + threadIdx.z)"),
    "threadgroup_position_in_grid": ("uint3", "blockIdx"),
    "thread_position_in_threadgroup": ("uint3", "threadIdx"),
    "threads_per_threadgroup": ("uint3", "make_uint3(min(blockDim.x, {g}[0] - blockIdx.x * blockDim.x), "
                                "min(blockDim.y, {g}[1] - blockIdx.y * blockDim.y), "
                                "min(blockDim.z, {g}[2] - blockIdx.z * blockDim.z))".format(g=GRID_INPUT)),
    "dispatch_threads_per_threadgroup": ("uint3", "make_uint3(blockDim.x, blockDim.y, blockDim.z)"),
    "threadgroups_per_grid": ("uint3", "make_uint3(gridDim.x, gridDim.y, gridDim.z)"),
    "threads_per_grid": ("uint3", f"make_uint3({GRID_INPUT}[0], {GRID_INPUT}[1], {GRID_INPUT}[2])"),
    "grid_size": ("uint3", f"make_uint3({GRID_INPUT}[0], {GRID_INPUT}[1], {GRID_INPUT}[2])"),
    "grid_origin": ("uint3", "make_uint3(0u, 0u, 0u)"),
    "thread_index_in_threadgroup": ("uint32_t", _TID),
    "thread_index_in_simdgroup": ("uint32_t", f"{_TID} & 31u"),
    "simdgroup_index_in_threadgroup": ("uint32_t", f"{_TID} >> 5"),
    "threads_per_simdgroup": ("uint32_t", "32u"),
    "thread_execution_width": ("uint32_t", "32u"),
    "simdgroups_per_threadgroup": ("uint32_t", f"({_ACTUAL} + 31u) / 32u"),
    "dispatch_simdgroups_per_threadgroup": ("uint32_t", f"({_DISPATCH} + 31u) / 32u"),
    "thread_index_in_quadgroup": ("uint32_t", f"{_TID} & 3u"),
    "quadgroup_index_in_threadgroup": ("uint32_t", f"{_TID} >> 2"),
    "quadgroups_per_threadgroup": ("uint32_t", f"({_ACTUAL} + 3u) / 4u"),
    "dispatch_quadgroups_per_threadgroup": ("uint32_t", f"({_DISPATCH} + 3u) / 4u"),
}


# When the grid is a whole number of threadgroups in every dimension, MLX's launch is
# exactly Metal's: no thread to guard against and no partial threadgroup, so the grid
# need not be passed in (its load would sit before every thread's first access).
_EXACT_OVERRIDES = {
    "threads_per_threadgroup": ("uint3", "make_uint3(blockDim.x, blockDim.y, blockDim.z)"),
    "threads_per_grid": ("uint3", "make_uint3(gridDim.x * blockDim.x, gridDim.y * blockDim.y, "
                         "gridDim.z * blockDim.z)"),
    "grid_size": ("uint3", "make_uint3(gridDim.x * blockDim.x, gridDim.y * blockDim.y, gridDim.z * blockDim.z)"),
}
ATTRIBUTES_EXACT = {a: _EXACT_OVERRIDES.get(a, (ty, ex.replace(_TID, "mb_tid()").replace(_ACTUAL, _DISPATCH)))
                    for a, (ty, ex) in ATTRIBUTES.items()}
assert not any(GRID_INPUT in ex for _, ex in ATTRIBUTES_EXACT.values())


# unsigned / and % by an array's length (the same for every thread, so the branch never
# diverges; often a power of two: a shift or a mask instead of a 20-instruction division)
_LEN_DIV = """// unsigned / and % by an array length: a shift or a mask when it is a power of two;
// x / 0 and x % 0 are 0 (metalbench.scalar)
template <class T> __device__ inline T mb_udiv_len(T a, T b) {
    if ((b & (b - T(1))) == T(0))
        return b == T(0) ? T(0) : static_cast<T>(a >> (sizeof(T) > 4 ? __ffsll(static_cast<long long>(b)) - 1
                                                                        : __ffs(static_cast<int>(b)) - 1));
    return a / b;
}
template <class T> __device__ inline T mb_umod_len(T a, T b) {
    if ((b & (b - T(1))) == T(0)) return b == T(0) ? T(0) : static_cast<T>(a & (b - T(1)));
    return a % b;
}"""

_VLOAD = """\
// A vector view's n consecutive elements as one access: the aligned 64/128-bit path when
// the address is a multiple of the vector's size (views of offset buffers may not be).
template <class T, int N> struct alignas(sizeof(T) * N) mb_packet { T v[N]; };
template <class T, int N> __device__ inline bool mb_vaccess_aligned(const T* p) {
    return (reinterpret_cast<unsigned long long>(p) & (sizeof(T) * N - 1)) == 0ull;
}
template <class T, int N> __device__ inline mb_vec<T, N> mb_vload(const T* p) {
    mb_vec<T, N> r;
    if (mb_vaccess_aligned<T, N>(p)) {
        const mb_packet<T, N> q = *reinterpret_cast<const mb_packet<T, N>*>(p);
        for (int i = 0; i < N; ++i) r[i] = q.v[i];
    } else {
        for (int i = 0; i < N; ++i) r[i] = p[i];
    }
    return r;
}
template <class T, int N> __device__ inline void mb_vstore(T* p, const mb_vec<T, N>& a) {
    if (mb_vaccess_aligned<T, N>(p)) {
        mb_packet<T, N> q;
        for (int i = 0; i < N; ++i) q.v[i] = a[i];
        *reinterpret_cast<mb_packet<T, N>*>(p) = q;
    } else {
        for (int i = 0; i < N; ++i) p[i] = a[i];
    }
}"""


class CUDAPrinter(ReadGuardMixin, VectorAccessMixin, CUDAMatrixMixin, IntegerVectorMixin, CPrinter):
    """The CUDA dialect's non-tabular parts. ``exact_grid=True`` prints the variant for
    grids that are whole threadgroups (no launch guard, no ``mb_grid`` input)."""

    dialect = CUDA

    def __init__(self, kernel: ir.KernelIR, exact_grid: bool = False, facts: LaunchFacts | None = None):
        super().__init__(kernel)
        self.exact_grid = exact_grid
        self.facts = facts or LaunchFacts(exact_grid=exact_grid)
        self.uses_vectors = False
        self._parent_swizzle = False
        # SIMD-group calls that run on full warps (passes/warps.py): the builtins print
        # them without __activemask() when ``self.full_warp`` is set
        self.converged = converged_calls(kernel, self.facts)
        self.full_warp = False
        self._facts_cache: dict = {}
        # scalar arguments read once at the top (MLX passes them as pointers, and a load
        # through a pointer cannot move past a store the compiler must assume aliases it)
        self.hoisted = {p.name for p in kernel.params if p.kind == "scalar"} & \
            {n.name for n in ir.walk(kernel.body) if isinstance(n, ir.Var)}

    # -- vector views (codegen/vector_access.py)
    def vector_load(self, buf, first, t) -> str:
        self._vectors()
        self.need("mb_vload", _VLOAD)
        return self.guarded_vload(buf, first, t) or \
            f"mb_vload<{self.tname(t.elem)}, {t.n}>({self.pointer_to(buf, first)})"

    def vector_store(self, buf, first, t, value) -> str:
        self._vectors()
        self.need("mb_vload", _VLOAD)
        return f"mb_vstore<{self.tname(t.elem)}, {t.n}>({self.pointer_to(buf, first)}, {self.expr(value, ASSIGN)});"

    # -- 64-bit indices: x[base + j] as the hand-written kernel's row pointer xr[j]
    def index_text(self, buf: str, index) -> str:
        """``x[base + j]`` (``uint`` base, ``j`` stepping with a loop counter) prints as
        ``x[static_cast<uint64_t>(base) + j]`` when the ranges (``passes/ranges.py``)
        prove the 32-bit sum never wraps: the same element, and the compiler can step a
        pointer instead of widening a fresh 32-bit index for every load (softmax's rows:
        36 fewer 64-bit multiplies in the SASS). A sum that may wrap keeps MSL's 32 bits;
        indices into threadgroup arrays and inside device functions are left as they are."""
        e, p = index, self.k.param(buf) if self.in_function is None else None
        if not (isinstance(e, ir.BinOp) and e.op == "+" and e.type == T.uint32 and p is not None
                and p.kind == "buffer"):       # device buffers (threadgroup arrays: 32-bit addresses)
            return self.expr(index)
        ranges, counters = self._index_facts()
        ra, rb = ranges.of(e.a), ranges.of(e.b)
        steps_a, steps_b = _reads(e.a, counters), _reads(e.b, counters)
        if steps_a == steps_b or not (isinstance(ra, tuple) and isinstance(rb, tuple)) or \
                ra[1] + rb[1] > 0xFFFFFFFF:
            return self.expr(index)
        base, step = (e.b, e.a) if steps_a else (e.a, e.b)
        if isinstance(step, ir.Cast) and step.value.type == T.int32 and isinstance(ranges.of(step.value), tuple) \
                and ranges.of(step.value)[0] >= 0:
            step = step.value          # a non-negative int counter: sign and zero extension agree
        return f"{self.cast_text(T.uint64, self.expr(base))} + {self.expr(step, ADD + 1)}"

    def _index_facts(self):
        """(Ranges, loop counter names) of the body being printed (kernel or function)."""
        key = self.in_function.name if self.in_function is not None else None
        got = self._facts_cache.get(key)
        if got is None:
            body = self.in_function.body if self.in_function is not None else self.k.body
            counters = {n.var.name for n in ir.walk(body) if isinstance(n, ir.For)}
            counters |= {c[0].name for n in ir.walk(body) if isinstance(n, ir.CFor)
                         for c in [canonical_cfor(n)] if c is not None}
            got = self._facts_cache[key] = (Ranges(body, self.facts), counters)
        return got

    def tname(self, t) -> str:
        if isinstance(t, T.VectorType):
            self._vectors()
        return super().tname(t)

    def _vectors(self):
        if not self.uses_vectors:
            self.uses_vectors = True
            self.need("mb_vec", _VEC)
            self.need("mb_vec_types", _VEC_TYPES)

    def attr_type(self, a: str) -> str:
        return ATTRIBUTES[a][0]

    def s_Print(self, s, ind, out):
        from .printf import cuda_print
        out.extend(ind + line for line in cuda_print(self, s))

    # -- values
    def e_Var(self, e):
        if self.in_function is None and e.name in self.scalar_params:
            if e.name in self.hoisted:
                return f"mb_arg_{self.name(e.name)}", POSTFIX
            return f"{self.name(e.name)}[0]", POSTFIX      # MLX passes 0-d inputs as pointers
        return super().e_Var(e)

    def e_ThreadAttr(self, e):
        if isinstance(e.type, T.VectorType) and not self._parent_swizzle:
            self._vectors()
            return f"mb_uint3({e.name}.x, {e.name}.y, {e.name}.z)", POSTFIX
        return e.name, POSTFIX

    def e_Swizzle(self, e):
        if self.wide_component(e):
            return super().e_Swizzle(e)             # VectorAccessMixin: v[k] of a wide vector
        if len(e.components) == 1:
            self._parent_swizzle = isinstance(e.value, ir.ThreadAttr)
            try:
                return f"{self.expr(e.value, POSTFIX)}.{e.components}", POSTFIX
            finally:
                self._parent_swizzle = False
        self._vectors()
        idx = ", ".join(str(T.COMPONENTS.index(c)) for c in e.components)
        return f"mb_swizzle<{idx}>({self.expr(e.value, ASSIGN)})", POSTFIX

    def e_VecCons(self, e):
        self._vectors()
        n = e.type.n
        if all(isinstance(a.type, T.ScalarType) for a in e.args) and len(e.args) in (1, n):
            return super().e_VecCons(e)
        return f"mb_make<{self.tname(e.type)}>({', '.join(self.expr(a, ASSIGN) for a in e.args)})", POSTFIX

    def e_Select(self, e):
        if not isinstance(e.cond.type, T.VectorType) and eager_select(e):
            # a shuffle on one side: every lane runs it, as on Metal and the simulator
            self.need("mb_sel", _EAGER_SELECT)
            return (f"mb_sel<{self.tname(e.type)}>({self.expr(e.cond, ASSIGN)}, {self.expr(e.a, ASSIGN)}, "
                    f"{self.expr(e.b, ASSIGN)})"), POSTFIX
        return super().e_Select(e)

    def vector_select(self, e):
        return f"mb_select({self.expr(e.cond, ASSIGN)}, {self.expr(e.a, ASSIGN)}, {self.expr(e.b, ASSIGN)})"

    # -- C arithmetic with the scalar table's answers where CUDA's differ (metalbench.scalar):
    # PTX clamps shift counts (x << 33 is 0) where the table masks them (x << 1), and
    # integer division by zero gives -1 where the table gives 0
    def e_BinOp(self, e):
        if e.op == "*" and e.type is T.float64:
            return self.float64_product(e.a, e.b), POSTFIX
        t = e.a.type
        if isinstance(t, T.ScalarType) and t.is_int and isinstance(e.type, T.ScalarType):
            b = e.b
            if e.op in ("<<", ">>") and not (isinstance(b, ir.Const) and 0 <= int(b.value) < t.bits):
                return (f"{self.expr(e.a, MUL)} {e.op} ({self.expr(b, UNARY)} & {t.bits - 1})",
                        BINARY_PREC[e.op])
            if length_division(e):
                self.need("mb_len_div", _LEN_DIV)
                fn = "mb_udiv_len" if e.op == "/" else "mb_umod_len"
                return f"{fn}<{self.tname(t)}>({self.expr(e.a, ASSIGN)}, {self.expr(b, ASSIGN)})", POSTFIX
            if e.op in ("/", "%") and not (isinstance(b, ir.Const) and int(b.value) not in (0, -1)):
                # the type spelled out: int64_t is `long` to nvcc on Linux and `1ll` is
                # `long long`, so deduction from two int64 operands can fail there
                fn = self.need("mb_idiv" if e.op == "/" else "mb_imod", IDIV if e.op == "/" else IMOD)
                return f"{fn}<{self.tname(t)}>({self.expr(e.a, ASSIGN)}, {self.expr(b, ASSIGN)})", POSTFIX
        return super().e_BinOp(e)

    # -- float64: exact, and carried through MLX as its bits (runtime.carrier)
    def float64_product(self, a, b) -> str:
        """``a * b`` in double, never fused into an FMA with a following add (NVRTC
        contracts by default and MLX passes no ``--fmad=false``): the simulator, like
        NumPy, rounds the product and the sum separately."""
        return f"__dmul_rn({self.expr(a, ASSIGN)}, {self.expr(b, ASSIGN)})"

    def assign_text(self, s: ir.Assign) -> str:
        v = s.value
        if isinstance(v, ir.BinOp) and v.op == "*" and v.type is T.float64:
            return f"{self.name(s.var.name)} = {self.float64_product(v.a, v.b)}"   # not *=
        return super().assign_text(s)

    def param_aliases(self, lines: list[str]) -> list[str]:
        """``lines`` (the kernel body) with the parameters MLX declares with another type
        than the IR reads them as, under their own names in a nested block (so the body
        prints unchanged and ``x_shape``/``x_strides`` stay MLX's):

        - float64 as double: MLX refuses float64 arrays on the GPU, so they arrive as
          uint64 (their bits; MLX declares ``const uint64_t* x``);
        - complex64 as float: MLX declares ``const mlx::core::cu::complex64_t* x``
          (``cuda::std::complex<float>``, ``mlx/backend/cuda/device/complex.cuh``), two
          floats (real, imaginary) per element, which is the storage the IR reads
          (``ir.Param.complex``): the complex arithmetic of the MSL body (MLX's Metal
          ``complex64_t``) is already real arithmetic in the IR, as on the simulator."""
        params = [p for p in self.k.params if p.type is T.float64 or p.complex]
        if not params:
            return lines
        out, inner = [], []
        if any(p.type is T.float64 for p in params):
            out.append("// MLX carries float64 as its bits (uint64_t): read them as double")
        if any(p.complex for p in params):
            out.append("// MLX passes complex64 as complex64_t (cuda::std::complex<float>): read its parts as floats")
        for p in params:
            n, c = self.name(p.name), "" if p.is_output else "const "
            if p.complex:
                out.append(f"{c}complex64_t* mb_cplx_{n} = {n};")
                inner.append(f"{c}float* {n} = reinterpret_cast<{c}float*>(mb_cplx_{n});")
            else:
                out.append(f"{c}uint64_t* mb_bits_{n} = {n};")
                inner.append(f"{c}double* {n} = reinterpret_cast<{c}double*>(mb_bits_{n});")
        ind = self.d.indent
        return out + ["{"] + [ind + x for x in inner] + [ind + x if x else x for x in lines] + ["}"]

    def cast(self, t, value) -> str:
        src = value.type
        inner = self.expr(value)
        if isinstance(t, T.ScalarType) and isinstance(src, T.ScalarType) and src.is_float and t.is_int \
                and t.bits < 32:
            # cvt saturates to 32 bits; narrower types saturate to their own range (table)
            fn = self.need("mb_f2narrow", F2NARROW)
            lo, hi = (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.is_signed else (0, (1 << t.bits) - 1)
            x = inner if src.name in ("float32", "float64") else f"static_cast<float>({inner})"
            return f"{fn}<{self.tname(t)}>({x}, {lo}, {hi})"
        if isinstance(t, T.ScalarType) and isinstance(src, T.ScalarType):
            halfish = {"float16", "bfloat16"}
            if src.name == "float64" and t.name in halfish:
                # one rounding, as the simulator's (through float would round twice)
                return f"__double2{'half' if t.name == 'float16' else 'bfloat16'}({inner})"
            if (t.name in halfish or src.name in halfish) and "float32" not in (t.name, src.name):
                inner = f"static_cast<float>({inner})"
        return self.cast_text(t, inner)

    # -- calls: the builtin's declaration spells it
    def call(self, e: ir.Call) -> str:
        saved, self.full_warp = self.full_warp, id(e) in self.converged
        try:
            return self.call_text(e.name, e.args, e.type)
        finally:
            self.full_warp = saved

    def call_text(self, name, args, t) -> str:
        return registry.get(name).cuda(self, args, t)

    # -- atomics
    def atomic(self, e: ir.Atomic) -> str:
        t = e.type
        check_atomic(e.op, t, e.span, wide=True)
        p = f"&{self.name(e.buf)}[{self.expr(e.index)}]"
        a = [self.expr(x, ASSIGN) for x in e.args]
        f = t.is_float
        if e.op == "load":
            self.need("mb_atomic_load", _ATOMIC_LOAD)
            return f"mb_atomic_load({p})"
        if t.bits == 64:
            return self.atomic64(e.op, t, p, a)
        if e.op in ("store", "exchange"):
            return f"atomicExch({p}, {a[0]})"
        if e.op == "add":
            return f"atomicAdd({p}, {a[0]})"
        if e.op == "sub":
            return f"atomicAdd({p}, -{self.expr(e.args[0], 15)})" if f else f"atomicSub({p}, {a[0]})"
        if e.op in ("min", "max"):
            if f:
                fn = f"mb_atomic_{e.op}_float"
                self.need(fn, _FLOAT_ATOMIC.format(op=e.op, cmp="<" if e.op == "min" else ">"))
                return f"{fn}({p}, {a[0]})"
            return f"atomic{e.op.capitalize()}({p}, {a[0]})"
        if e.op in ("and", "or", "xor"):
            return f"atomic{e.op.capitalize()}({p}, {a[0]})"
        if e.op == "cas":
            if f:
                self.need("mb_atomic_cas_float", _FLOAT_CAS)
                return f"mb_atomic_cas_float({p}, {a[0]}, {a[1]})"
            return f"atomicCAS({p}, {a[0]}, {a[1]})"
        raise KernelTypeError(f"unknown atomic operation {e.op}", e.span)

    def atomic64(self, op: str, t, p: str, a: list) -> str:
        """A 64-bit atomic: CUDA's overloads take ``unsigned long long`` (``long long``
        for signed min/max, ``double`` for add), while ``int64_t`` is ``long`` on Linux,
        so the pointer and the values are cast to them and the old value back."""
        u, tn = "unsigned long long", self.tname(t)
        up = f"reinterpret_cast<{u}*>({p})"
        if t is T.float64:
            if op in ("add", "sub"):
                return f"atomicAdd({p}, {a[0] if op == 'add' else f'-({a[0]})'})"
            if op in ("store", "exchange"):
                return (f"__longlong_as_double(static_cast<long long>(atomicExch({up}, "
                        f"static_cast<{u}>(__double_as_longlong({a[0]})))))")
            if op == "cas":
                self.need("mb_atomic_cas_double", _DOUBLE_CAS)
                return f"mb_atomic_cas_double({p}, {a[0]}, {a[1]})"
            fn = f"mb_atomic_{op}_double"
            self.need(fn, _DOUBLE_ATOMIC.format(op=op, cmp="<" if op == "min" else ">"))
            return f"{fn}({p}, {a[0]})"
        if op in ("min", "max") and t.is_signed:
            return f"static_cast<{tn}>(atomic{op.capitalize()}(reinterpret_cast<long long*>({p}), " \
                   f"static_cast<long long>({a[0]})))"
        fn = {"add": "atomicAdd", "sub": "atomicAdd", "store": "atomicExch", "exchange": "atomicExch",
              "cas": "atomicCAS"}.get(op) or f"atomic{op.capitalize()}"
        vals = [f"static_cast<{u}>({x})" for x in a]
        if op == "sub":
            vals = [f"0ull - {vals[0]}"]        # wraps as the two's complement subtraction does
        return f"static_cast<{tn}>({fn}({up}, {', '.join(vals)}))"

    def param_decl(self, p: ir.FuncParam, fn: ir.Function) -> str:
        if p.space is None:
            return f"{self.tname(p.type)} {self.name(p.name)}"
        return f"{'const ' if p.const else ''}{self.tname(p.type)}* {self.name(p.name)}"

    def global_decl(self, g: ir.ArrayDecl) -> str:
        # a __constant__ array is initialised statically: static_cast<__half>(x) is a call
        # NVRTC refuses there ('dynamic initialization is not supported'); the raw-bits
        # constructor is constexpr
        e = g.elem
        if getattr(e, "name", None) not in ("float16", "bfloat16"):
            return super().global_decl(g)
        raw, np_t = ("__half_raw", np.float16) if e.name == "float16" else ("__nv_bfloat16_raw", ml_dtypes.bfloat16)
        bits = [int(np.array(S.value(v, e), dtype=np.float32).astype(np_t).view(np.uint16))
                for v in _flat_values(g.init or [])]
        vals = ", ".join(f"{self.tname(e)}({raw}{{0x{b:04X}u}})" for b in bits)
        return f"{self.d.global_prefix}{self.tname(e)} {self.name(g.name)}[{g.size}] = {{{vals}}};"

    def bitcast(self, e: ir.Bitcast) -> str:
        self.need("mb_as_type", _AS_TYPE)
        return f"mb_as_type<{self.tname(e.type)}>({self.expr(e.value, ASSIGN)})"

    def prelude(self) -> list[str]:
        g = GRID_INPUT
        if self.exact_grid:
            out, table = ["// The grid is whole threadgroups: every launched thread exists on Metal too."], \
                ATTRIBUTES_EXACT
        else:
            out = ["// MLX launches whole blocks; threads past the grid do not exist on Metal.",
                   f"if (blockIdx.x * blockDim.x + threadIdx.x >= {g}[0] || "
                   f"blockIdx.y * blockDim.y + threadIdx.y >= {g}[1] ||",
                   f"        blockIdx.z * blockDim.z + threadIdx.z >= {g}[2]) {{",
                   "    return;", "}"]
            table = ATTRIBUTES
        used = set(ir.attributes_used(self.k))
        tg = self.facts.threadgroup
        for a in ir.THREAD_ATTRIBUTES:
            if a in used:
                ty, ex = table[a]
                if tg is not None:
                    ex = _with_block(ex, tg)
                out.append(f"const {ty} {a} = {ex};")
        for p in self.k.params:
            if p.name in self.hoisted:
                out.append(f"const {self.tname(p.type)} mb_arg_{self.name(p.name)} = {self.name(p.name)}[0];")
        return out



# as_type<T>(x): the bytes of x read as T. memcpy is the defined way in C++ and the one
# NVRTC (MLX's cuda_kernel compiler) knows without headers: __builtin_memcpy is nvcc/gcc
# only and fails there. (The front end has checked that the sizes agree, as Metal requires.)
# Bits of a half/bfloat value pass through one PTX mov per 16-bit word: ptxas of CUDA 13.0
# turns "cvt.rn.f16.f32 h; st.u8 [p], h" (a byte of the half's bits) into a float->u8
# conversion (F2I.U8.F16.TRUNC), so uchar(as_type<ushort>(half(x))) stored 0 on the H200
# (GGUF Q4_0 packing: the scale's low byte); the mov is opaque to that rewrite (same for
# bfloat and packed half2 -> uint, checked in SASS).
_AS_TYPE = """template <class U> struct mb_bits_of_half { static constexpr bool value = mb_is_half<U>::value; };
template <class H, int N> struct mb_bits_of_half<mb_vec<H, N>> { static constexpr bool value = mb_is_half<H>::value; };
template <class T, class U> __device__ inline T mb_as_type(U u) {
    T t;
#ifdef __CUDA_ARCH__
    if constexpr (mb_bits_of_half<U>::value && sizeof(T) % 2 == 0) {
        unsigned short w[sizeof(T) / 2];
        memcpy(w, &u, sizeof(T));
#pragma unroll
        for (unsigned i = 0; i < sizeof(T) / 2; ++i) asm("mov.b16 %0, %1;" : "=h"(w[i]) : "h"(w[i]));
        memcpy(&t, w, sizeof(T));
        return t;
    }
#endif
    memcpy(&t, &u, sizeof(T));
    return t;
}"""

def _reads(e, names) -> bool:
    return any(isinstance(n, ir.Var) and n.name in names for n in ir.walk(e))


def _with_block(ex: str, tg) -> str:
    """An attribute expression with the launch's block size written in: the compiler can
    then fold the thread index (``threadIdx.x`` alone for a 1-D threadgroup) and know
    loop strides."""
    x, y, z = (int(d) for d in tg)
    if y == 1 and z == 1:
        tid = "threadIdx.x"
    elif z == 1:
        tid = f"(threadIdx.x + {x}u * threadIdx.y)"
    else:
        tid = f"(threadIdx.x + {x}u * (threadIdx.y + {y}u * threadIdx.z))"
    ex = ex.replace("mb_tid()", tid)
    for c, v in zip("xyz", (x, y, z)):
        ex = ex.replace(f"blockDim.{c}", f"{v}u")
    return ex


def render(kernel: ir.KernelIR, exact_grid: bool = False, threadgroup=None, lengths=()) -> Rendered:
    """Prints ``kernel`` as an MLX CUDA kernel (body, header, names).

    Pass ``mx.fast.cuda_kernel(name=r.name, input_names=r.input_names,
    output_names=r.output_names, source=r.body, header=r.header)`` and call it with the
    user's inputs followed by ``r.extra_inputs(grid, threadgroup)``. With
    ``exact_grid=True`` (only for grids that are a multiple of the threadgroup in every
    dimension) the kernel has no launch guard and needs no ``mb_grid``. With
    ``threadgroup`` (the launch's, a 3-tuple) the kernel is specialised for it: the
    block size is written into the thread attributes, and with an exact grid and a
    multiple of 32 threads, SIMD-group calls under uniform control flow use full-warp
    shuffles (``passes/warps.py``). Unsigned loop counters that provably stay below
    ``INT_MAX`` print as ``int`` (``passes/ranges.py``). ``lengths``, pairs
    ``((buffer, dim), value)``, are array lengths the kernel is compiled for
    (``passes/lengths.py``: a launch binds those it divides by).

    >>> from metalbench import ir, types as T
    >>> k = ir.KernelIR("k", [ir.Param("o", "buffer", T.float32, is_output=True)],
    ...     [ir.ExprStmt(ir.Atomic("max", "o", ir.Const(0, T.uint32), [ir.Const(1.5, T.float32)], T.float32))])
    >>> render(k).body.splitlines()[-1]
    'mb_atomic_max_float(&o[0u], 1.5f);'
    """
    facts = LaunchFacts(tuple(int(d) for d in threadgroup) if threadgroup is not None else None, exact_grid)
    guard = guard_enabled(kernel)
    kernel = bind_lengths(kernel, dict(lengths))
    kernel = lower_matrices(kernel)      # a simdgroup matrix is each thread's two elements
    kernel = signed_loops(kernel, facts)
    p = CUDAPrinter(kernel, exact_grid, facts)
    p.setup_guard(kernel, guard)
    lines = p.body_lines()    # printing decides the helpers and extra inputs
    r = render_with(p, kernel, p.param_aliases(p.prelude() + p.guard_prelude() + lines),
                    extra_items=[] if exact_grid else [(GRID_INPUT, "grid", "")])
    r.header = base_prelude(r.header + r.body) + "\n\n" + r.header      # first: the rest uses it
    if facts.threadgroup is not None:
        r.header += launch_bounds(facts.group_threads)
    return mlx_facing_types(r, kernel)

