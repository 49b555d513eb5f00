"""Simulator throughput on the target kernels (threads/s), compile time and launch overhead.

    .venv/bin/python benchmarks/sim_speed.py            # all
    .venv/bin/python benchmarks/sim_speed.py matmul     # one

Targets (2-core machine): vector add 4M float32 >= 5e7 threads/s; 256-thread block
reduction with barriers over 1M >= 5e6; 16x16-tile shared-memory matmul 256x256 >= 5e5;
compile <= 20 ms; cached launch overhead <= 100 us. A comparison with Numba's CUDA
simulator goes here later.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from metalbench import types as T
from metalbench.sim import Buffer, compile_kernel
from metalbench.sim.irbuild import KernelBuilder, attr, c, select, tid_x


def vector_add():
    kb = KernelBuilder("vadd")
    x, y = kb.buf("x", T.float32), kb.buf("y", T.float32)
    out = kb.buf("out", T.float32, out=True)
    i = kb.let("i", tid_x())
    with kb.if_(i < kb.size(x)):
        kb.store(out, i, kb.load(x, i) + kb.load(y, i))
    n = 1 << 22
    r = np.random.default_rng(0)
    args = {"x": r.standard_normal(n, dtype=np.float32), "y": r.standard_normal(n, dtype=np.float32),
            "out": np.zeros(n, np.float32)}
    return kb, args, (n, 1, 1), (256, 1, 1), 5e7


def reduction():
    tg = 256
    kb = KernelBuilder("reduce")
    x = kb.buf("x", T.float32)
    out = kb.buf("out", T.float32, out=True)
    sh = kb.tg_array("sh", T.float32, tg)
    tid = kb.let("tid", attr("thread_index_in_threadgroup"))
    i = kb.let("i", tid_x())
    kb.store(sh, tid, select(i < kb.size(x), kb.load(x, i), c(0.0, T.float32)))
    kb.barrier()
    s = kb.let("s", attr("threads_per_threadgroup").x / 2)
    with kb.while_(s > 0):
        with kb.if_(tid < s):
            kb.store(sh, tid, kb.load(sh, tid) + kb.load(sh, tid + s))
        kb.barrier()
        kb.set(s, s >> c(1, T.uint32))
    with kb.if_(tid.eq(0)):
        kb.store(out, attr("threadgroup_position_in_grid").x, kb.load(sh, c(0, T.uint32)))
    n = 1 << 20
    args = {"x": np.random.default_rng(0).standard_normal(n, dtype=np.float32),
            "out": np.zeros(n // tg, np.float32)}
    return kb, args, (n, 1, 1), (tg, 1, 1), 5e6


def matmul():
    n, TILE = 256, 16
    kb = KernelBuilder("matmul")
    a, b = kb.buf("a", T.float32), kb.buf("b", T.float32)
    out = kb.buf("c", T.float32, out=True)
    ta = kb.tg_array("ta", T.float32, TILE * TILE)
    tb = kb.tg_array("tb", T.float32, TILE * TILE)
    p = attr("thread_position_in_grid")
    q = attr("thread_position_in_threadgroup")
    col, row = kb.let("col", p.x), kb.let("row", p.y)
    tx, ty = kb.let("tx", q.x), kb.let("ty", q.y)
    N = c(n, T.uint32)
    acc = kb.let("acc", c(0.0, T.float32))
    with kb.for_("k0", 0, n, TILE, t=T.uint32) as k0:
        kb.store(ta, ty * TILE + tx, kb.load(a, row * N + k0 + tx))
        kb.store(tb, ty * TILE + tx, kb.load(b, (k0 + ty) * N + col))
        kb.barrier()
        with kb.for_("kk", 0, TILE, t=T.uint32) as kk:
            kb.set(acc, acc + kb.load(ta, ty * TILE + kk) * kb.load(tb, kk * TILE + tx))
        kb.barrier()
    kb.store(out, row * N + col, acc)
    r = np.random.default_rng(0)
    args = {"a": r.standard_normal(n * n, dtype=np.float32), "b": r.standard_normal(n * n, dtype=np.float32),
            "c": np.zeros(n * n, np.float32)}
    return kb, args, (n, n, 1), (TILE, TILE, 1), 5e5


CASES = {"vector_add": vector_add, "reduction": reduction, "matmul": matmul}


def bench(name, repeat=5):
    kb, args, grid, tg, target = CASES[name]()
    ir_ = kb.build()
    t0 = time.perf_counter()
    k = compile_kernel(ir_)
    t_compile = time.perf_counter() - t0
    bufs = {n: Buffer(v) for n, v in args.items()}
    k.run(bufs, grid, tg)  # warm
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        k.run(bufs, grid, tg)
        times.append(time.perf_counter() - t0)
    threads = grid[0] * grid[1] * grid[2]
    best = min(times)
    rate = threads / best
    # launch overhead: the same kernel on one threadgroup
    small = {n: Buffer(v[: max(tg[0] * tg[1] * tg[2], 1)]) for n, v in args.items()}
    if name == "matmul":
        small = bufs
    ov = []
    for _ in range(50):
        t0 = time.perf_counter()
        k.run(small, tg, tg)
        ov.append(time.perf_counter() - t0)
    print(f"{name:12s} {threads:>9d} threads  {best * 1e3:8.1f} ms  {rate:10.3g} threads/s "
          f"(target {target:.0e}: {'ok' if rate >= target else 'MISSED'})  "
          f"compile {t_compile * 1e3:5.1f} ms  one-group launch {np.median(ov) * 1e6:7.0f} us")
    return rate


if __name__ == "__main__":
    for nme in (sys.argv[1:] or list(CASES)):
        bench(nme)
