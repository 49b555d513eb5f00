"""A zoo of DSL kernels with random inputs and NumPy references.

Shared by the simulator tests (sim vs NumPy), the GPU tests (cuda vs sim), the MSL
round trip (DSL → MSL → MSL front end → sim) and the benchmarks. Each case is
``Case(name, kernel, make_args(rng), launch, ref)`` where ``ref(*args)`` returns the
expected output(s) as NumPy arrays and ``launch`` holds grid/threadgroup/out.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import ml_dtypes
import numpy as np

import metalbench as mb
from metalbench.dsl import *  # noqa: F401,F403


@dataclass
class Case:
    name: str
    kernel: Any
    make_args: Callable
    launch: dict
    ref: Callable
    rtol: float = 1e-5
    atol: float = 1e-6
    # Outputs compared only where this returns True (e.g. unordered atomics).
    tags: set = field(default_factory=set)


CASES: list[Case] = []


def case(name, make_args, launch, ref, **kw):
    def deco(k):
        CASES.append(Case(name, k, make_args, launch, ref, **kw))
        return k
    return deco


# --- saxpy with a partial last threadgroup ------------------------------------------------
N_SAXPY = 1000


@case("saxpy_partial",
      lambda r: (np.float32(1.5), r.standard_normal(N_SAXPY, dtype=np.float32),
                 r.standard_normal(N_SAXPY, dtype=np.float32)),
      dict(grid=N_SAXPY, threadgroup=256),
      lambda a, x, y: a * x + y)
@mb.kernel
def saxpy(a: float, x, y, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = a * x[i] + y[i]


# --- threadgroup tree reduction with barriers in a while loop -----------------------------
N_RED, TG_RED = 4096, 256


@case("tree_reduction",
      lambda r: (r.standard_normal(N_RED, dtype=np.float32),),
      dict(grid=N_RED, threadgroup=TG_RED),
      lambda x: x.reshape(-1, TG_RED).sum(1), rtol=1e-4, atol=1e-4)
@mb.kernel
def block_sum(x, out: mb.Out(shape=lambda x, **_: (x.size // 256,), dtype=mb.float32), TG: mb.constexpr = 256):
    buf = threadgroup_array(TG, float32)
    tid = thread_position_in_threadgroup.x
    buf[tid] = x[thread_position_in_grid.x]
    threadgroup_barrier(mem_threadgroup)
    s = TG // 2
    while s > 0:
        if tid < s:
            buf[tid] += buf[tid + s]
        threadgroup_barrier(mem_threadgroup)
        s //= 2
    if tid == 0:
        out[threadgroup_position_in_grid.x] = buf[0]


# --- simdgroup sum feeding an atomic add ----------------------------------------------------
N_SIMD = 3000


@case("simd_sum_atomic",
      lambda r: (r.standard_normal(N_SIMD, dtype=np.float32),),
      dict(grid=N_SIMD, threadgroup=128, init_value=0),
      lambda x: np.array([x.sum()], dtype=np.float32), rtol=1e-4, atol=1e-3)
@mb.kernel
def simd_total(x, out: mb.Out(shape=(1,), dtype=mb.float32)):
    i = thread_position_in_grid.x
    v = x[i] if i < x.size else 0.0
    s = simd_sum(v)
    if thread_index_in_simdgroup == 0:
        atomic_add(out, 0, s)


# --- integer atomic histogram ---------------------------------------------------------------
N_HIST, BINS = 5000, 16


@case("atomic_histogram",
      lambda r: (r.integers(0, 1 << 20, N_HIST, dtype=np.uint32),),
      dict(grid=N_HIST, threadgroup=256, init_value=0),
      lambda x: np.bincount(x % BINS, minlength=BINS).astype(np.int32))
@mb.kernel
def histogram(x, hist: mb.Out(shape=(16,), dtype=mb.int32)):
    i = thread_position_in_grid.x
    if i < x.size:
        atomic_add(hist, x[i] % 16, 1)


# --- tiled matmul: constexpr tile size, 2-D threadgroup arrays ------------------------------
M, K, N = 48, 40, 56


@case("tiled_matmul",
      lambda r: (r.standard_normal((M, K), dtype=np.float32), r.standard_normal((K, N), dtype=np.float32)),
      dict(grid=(64, 48), threadgroup=(16, 16), TILE=16),  # whole tiles: every thread loads its element
      lambda a, b: a @ b, rtol=1e-4, atol=1e-4)
@mb.kernel
def matmul(a, b, c: mb.Out(shape=lambda a, b, **_: (a.shape[0], b.shape[1]), dtype=mb.float32),
           TILE: mb.constexpr = 16):
    ta = threadgroup_array((TILE, TILE), float32)
    tb = threadgroup_array((TILE, TILE), float32)
    col = thread_position_in_grid.x
    row = thread_position_in_grid.y
    tx = thread_position_in_threadgroup.x
    ty = thread_position_in_threadgroup.y
    n_k = a.shape[1]
    acc = 0.0
    for k0 in range(0, n_k, TILE):
        ta[ty, tx] = a[row, k0 + tx] if row < a.shape[0] and k0 + tx < n_k else 0.0
        tb[ty, tx] = b[k0 + ty, col] if k0 + ty < n_k and col < b.shape[1] else 0.0
        threadgroup_barrier()
        for kk in range(TILE):
            acc += ta[ty, kk] * tb[kk, tx]
        threadgroup_barrier()
    if row < c.shape[0] and col < c.shape[1]:
        c[row, col] = acc


# --- device function on a 2-D float16 input -------------------------------------------------
@mb.func
def gelu(v):
    return 0.5 * v * (1.0 + metal.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))


def _gelu_ref(x):
    v = x.astype(np.float32)
    return (0.5 * v * (1 + np.tanh(0.7978845608 * (v + 0.044715 * v ** 3)))).astype(np.float16)


@case("gelu_2d_f16",
      lambda r: (r.standard_normal((33, 20)).astype(np.float16),),
      dict(grid=(20, 33), threadgroup=(8, 8)),
      _gelu_ref, rtol=2e-3, atol=2e-3)
@mb.kernel
def gelu2d(x, out: mb.Out):
    i = thread_position_in_grid.y
    j = thread_position_in_grid.x
    out[i, j] = gelu(x[i, j])


# --- unsigned wrap-around -------------------------------------------------------------------
@case("uint_wraparound",
      lambda r: (r.integers(0, 1 << 32, 777, dtype=np.uint64).astype(np.uint32),),
      dict(grid=777, threadgroup=64),
      lambda x: ((x.astype(np.uint64) * 2654435761 + 12345 - (1 << 31)) % (1 << 32)).astype(np.uint32))
@mb.kernel
def hash32(x, out: mb.Out):
    i = thread_position_in_grid.x
    h = x[i] * uint32(2654435761) + 12345
    out[i] = h - uint32(2147483648)


# --- local array with break, every dtype through casts --------------------------------------
@case("local_array_break",
      lambda r: (r.integers(-50, 50, (300, 8), dtype=np.int32),),
      dict(grid=300, threadgroup=32),
      lambda x: _first_neg_prefix(x))
@mb.kernel
def prefix_until_negative(x, out: mb.Out(shape=lambda x, **_: (x.shape[0],), dtype=mb.int32)):
    i = thread_position_in_grid.x
    tmp = local_array(8, int32)
    n = 0
    for j in range(8):
        if x[i, j] < 0:
            break
        tmp[n] = x[i, j]
        n += 1
    s = 0
    for j in range(n):
        s += tmp[j]
    out[i] = s


def _first_neg_prefix(x):
    out = np.zeros(x.shape[0], np.int32)
    for r in range(x.shape[0]):
        for v in x[r]:
            if v < 0:
                break
            out[r] += v
    return out


# --- bfloat16 and int8 casts, C division and modulo -----------------------------------------
@case("casts_and_c_division",
      lambda r: (r.integers(-1000, 1000, 512, dtype=np.int32), r.integers(1, 17, 512, dtype=np.int32)),
      dict(grid=512, threadgroup=128),
      lambda a, b: (np.trunc(a / b).astype(np.int32) + np.fmod(a, b) + a.astype(np.int8)).astype(np.int32))
@mb.kernel
def cdiv(a, b, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = a[i] // b[i] + a[i] % b[i] + int8(a[i])


def _bf16_ref(x):
    y = x.astype(np.float32) * 3.0
    return y.astype(ml_dtypes.bfloat16)


@case("bfloat16_scale",
      lambda r: (r.standard_normal(300).astype(ml_dtypes.bfloat16),),
      dict(grid=300, threadgroup=64),
      _bf16_ref, rtol=1e-2, atol=1e-2)
@mb.kernel
def bf16_scale(x, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = x[i] * 3.0
