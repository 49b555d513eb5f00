"""Barrier flags and fences in the race checker (DESIGN.md, "Semantics contract"; the
rules are in metalbench/sim/sync_checks.py).

A barrier orders the memory its mem_flags name: ``mem_none`` nothing, ``mem_threadgroup``
threadgroup memory only, ``mem_device`` device memory only (within the threadgroup), both
flags both. The DSL's ``threadgroup_barrier()`` is ``mem_threadgroup``. A device-scope
``atomic_thread_fence`` publishes writes to other threadgroups (a look-back scan).
"""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench import cuda
from metalbench.dsl import *  # noqa: F403 - the names a kernel author has (mem_flags included)
from metalbench.errors import KernelTypeError

from findings import races

RNG = np.random.default_rng(7)
X = RNG.standard_normal(256).astype(np.float32)


def checked(k, *args, **kw):
    return lambda: k(*args, backend="sim", checked=True, **kw)


# ----------------------------------------------------------------------------- DSL names

def test_mem_flags_names_after_star_import():
    assert mem_flags.mem_threadgroup == "mem_threadgroup" and mem_none == "mem_none"  # noqa: F405
    both = mem_flags.mem_device | mem_flags.mem_threadgroup  # noqa: F405
    assert tuple(both) == ("mem_device", "mem_threadgroup")
    assert tuple(mem_flags.mem_none | mem_flags.mem_device) == ("mem_device",)  # noqa: F405
    assert "mem_flags" in __import__("metalbench.dsl").dsl.__all__


# ----------------------------------------------------------------------------- device memory across a barrier

@mb.kernel
def dev_exchange(x, out: mb.Out, FLAGS: mb.constexpr = 0):
    # each thread writes out[i], then reads its neighbour's out[i ^ 1] after a barrier
    i = thread_position_in_grid.x  # noqa: F405
    out[i] = x[i]
    if FLAGS == 0:
        threadgroup_barrier()  # noqa: F405
    elif FLAGS == 1:
        threadgroup_barrier(mem_flags.mem_device)  # noqa: F405
    elif FLAGS == 2:
        threadgroup_barrier(mem_flags.mem_device | mem_flags.mem_threadgroup)  # noqa: F405
    elif FLAGS == 3:
        threadgroup_barrier(mem_flags.mem_none)  # noqa: F405
    else:
        threadgroup_barrier(mem_device, mem_threadgroup)  # noqa: F405
    v = out[i ^ 1]
    threadgroup_barrier(mem_flags.mem_device)  # noqa: F405
    out[i] = v + 1.0


@pytest.mark.parametrize("flags, race", [(0, True), (1, False), (2, False), (3, True), (4, False)])
def test_device_memory_is_ordered_by_mem_device_only(flags, race):
    found = races(checked(dev_exchange, X, grid=256, threadgroup=64, FLAGS=flags), "device")
    assert bool(found) == race, found
    if race:
        f = found[0]
        assert f.buffer == "out" and f.extra["same_group"] and sorted(f.accesses) == ["read", "write"]
    got = np.asarray(dev_exchange(X, grid=256, threadgroup=64, FLAGS=flags, backend="sim"))
    np.testing.assert_array_equal(got, X[np.arange(256) ^ 1] + 1)  # the simulator's lockstep order


@mb.kernel
def tg_exchange(x, out: mb.Out, FLAGS: mb.constexpr = 0):
    sh = threadgroup_array(64, float32)  # noqa: F405
    t = thread_position_in_threadgroup.x  # noqa: F405
    i = thread_position_in_grid.x  # noqa: F405
    sh[t] = x[i]
    if FLAGS == 0:
        threadgroup_barrier()  # noqa: F405
    elif FLAGS == 1:
        threadgroup_barrier(mem_flags.mem_device)  # noqa: F405
    elif FLAGS == 2:
        threadgroup_barrier(mem_flags.mem_device | mem_flags.mem_threadgroup)  # noqa: F405
    else:
        threadgroup_barrier(mem_flags.mem_none)  # noqa: F405
    out[i] = sh[t ^ 1]


@pytest.mark.parametrize("flags, race", [(0, False), (1, True), (2, False), (3, True)])
def test_threadgroup_memory_is_ordered_by_mem_threadgroup_only(flags, race):
    found = races(checked(tg_exchange, X, grid=256, threadgroup=64, FLAGS=flags), "threadgroup")
    assert bool(found) == race, found
    if race:
        assert found[0].buffer == "sh" and sorted(found[0].lines)[0] < sorted(found[0].lines)[1]


MEM_NONE_MSL = """
    threadgroup float part[2];
    uint l = thread_position_in_threadgroup.x;
    uint i = thread_position_in_grid.x;
    float v = simd_sum(in0[i]);
    if (thread_index_in_simdgroup == 0) { part[simdgroup_index_in_threadgroup] = v; }
    threadgroup_barrier(mem_flags::FLAGS);
    out[i] = part[0] + part[1];
"""


@pytest.mark.parametrize("flags, race", [("mem_none", True), ("mem_device", True), ("mem_threadgroup", False),
                                         ("mem_device | mem_flags::mem_threadgroup", False)])
def test_msl_barrier_flags(flags, race):
    # the mlx-lm KL-loss pattern: per-simdgroup partial sums published through a barrier
    k = mb.metal_kernel(name="two_sums", input_names=["in0"], output_names=["out"],
                        source=MEM_NONE_MSL.replace("FLAGS", flags))

    def launch(checked=True):
        return k(inputs=[mx.array(X)], grid=(256, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(256,)],
                 output_dtypes=[mx.float32], backend="sim", checked=checked)

    found = races(launch, "threadgroup")
    assert bool(found) == race, found
    got = np.asarray(launch(checked=False)[0])
    np.testing.assert_allclose(got, np.repeat(X.reshape(4, 64).sum(1), 64), rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- simdgroup barriers

SIMD_MSL = """
    threadgroup float tile[64];
    uint i = thread_position_in_grid.x;
    uint l = thread_position_in_threadgroup.x;
    tile[l] = in0[i];
    out[i] = in0[i];
    simdgroup_barrier(mem_flags::FLAGS);
    res[i] = WHAT;
"""


@pytest.mark.parametrize("flags, what, race", [
    ("mem_threadgroup", "tile[l ^ 1]", None),               # same simdgroup: ordered
    ("mem_none", "tile[l ^ 1]", "threadgroup"),              # orders nothing
    ("mem_device", "tile[l ^ 1]", "threadgroup"),            # not threadgroup memory
    ("mem_threadgroup", "tile[(l + 32) % 64]", "threadgroup"),  # another simdgroup
    ("mem_device", "out[i ^ 1] + 1.0f", None),               # device memory, same simdgroup
    ("mem_threadgroup", "out[i ^ 1] + 1.0f", "device"),
    ("mem_device", "out[i ^ 32] + 1.0f", "device"),          # another simdgroup
])
def test_simdgroup_barrier_flags(flags, what, race):
    k = mb.metal_kernel(name="simd_bar", input_names=["in0"], output_names=["out", "res"],
                        source=SIMD_MSL.replace("FLAGS", flags).replace("WHAT", what))
    found = races(lambda: k(inputs=[mx.array(X)], grid=(256, 1, 1), threadgroup=(64, 1, 1),
                            output_shapes=[(256,), (256,)], output_dtypes=[mx.float32] * 2, backend="sim",
                            checked=True))
    assert [f.space for f in found] == ([race] if race else []), found


@cuda.jit
def numba_exchange(x, out):
    i = cuda.grid(1)
    out[i] = x[i]
    cuda.syncthreads()  # __syncthreads() orders global and shared memory
    v = out[i ^ 1]
    cuda.syncthreads()
    out[i] = v


def test_numba_syncthreads_orders_device_memory(monkeypatch):
    out = np.zeros(256, np.float32)
    monkeypatch.setenv("METALBENCH_CHECKED", "1")   # every simulator launch checked
    numba_exchange[4, 64](X, out)                   # no finding
    np.testing.assert_array_equal(out, X[np.arange(256) ^ 1])


# ----------------------------------------------------------------------------- fences: a look-back scan

@mb.kernel
def lookback_scan(x, out: mb.Out, agg: mb.Out(shape=lambda x, FENCE: (x.size // 64,)),
                  flag: mb.Out(shape=lambda x, FENCE: (x.size // 64,), dtype=mb.int32), FENCE: mb.constexpr = 1):
    # each threadgroup scans its 64-element tile, publishes the tile's total (agg, then a
    # flag), and adds the totals of the tiles before it, read once their flags are set
    sh = threadgroup_array(64, float32)  # noqa: F405
    pre = threadgroup_array(1, float32)  # noqa: F405
    t = thread_position_in_threadgroup.x  # noqa: F405
    g = threadgroup_position_in_grid.x  # noqa: F405
    i = thread_position_in_grid.x  # noqa: F405
    sh[t] = x[i]
    threadgroup_barrier()  # noqa: F405
    off = uint32(1)  # noqa: F405
    while off < 64:
        v = sh[t - off] if t >= off else 0.0
        threadgroup_barrier()  # noqa: F405
        sh[t] += v
        threadgroup_barrier()  # noqa: F405
        off *= 2
    if t == 0:
        agg[g] = sh[63]
        if FENCE:
            atomic_thread_fence(mem_flags.mem_device, memory_order_seq_cst, thread_scope_device)  # noqa: F405
        atomic_store(flag, g, 1)  # noqa: F405
        total = 0.0
        j = int32(g) - 1  # noqa: F405
        while j >= 0:
            while atomic_load(flag, j) == 0:  # noqa: F405
                pass
            if FENCE:
                atomic_thread_fence(mem_flags.mem_device, memory_order_seq_cst, thread_scope_device)  # noqa: F405
            total += agg[j]
            j -= 1
        pre[0] = total
    threadgroup_barrier()  # noqa: F405
    out[i] = sh[t] + pre[0]


def test_lookback_scan_with_fences_is_clean_and_without_them_races():
    x = RNG.standard_normal(64 * 40).astype(np.float32)
    kw = dict(grid=x.size, threadgroup=64, backend="sim", init_value=0)
    out, agg, flag = (np.asarray(a) for a in lookback_scan(x, checked=True, **kw))
    np.testing.assert_allclose(out, np.cumsum(x.astype(np.float64)), rtol=1e-4, atol=1e-4)
    assert (flag == 1).all()
    found = races(lambda: lookback_scan(x, FENCE=0, checked=True, **kw), "device")
    assert found and found[0].buffer == "agg" and not found[0].extra["same_group"]
    msl = lookback_scan.source(x, grid=x.size, threadgroup=64, backend="metal")
    assert msl.count("atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);") == 2
    cu = lookback_scan.source(x, grid=x.size, threadgroup=64, backend="cuda")
    assert cu.count("__threadfence();") == 2


FENCE_MSL = """
    uint g = threadgroup_position_in_grid.x;
    uint t = thread_position_in_threadgroup.x;
    if (t == 0) {
        atomic_store_explicit(&data[g], in0[g] * 2.0f, memory_order_relaxed);
        atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);
        atomic_store_explicit(&ready[g], 1.0f, memory_order_relaxed);
        if (g > 0) {
            while (atomic_load_explicit(&ready[g - 1], memory_order_relaxed) == 0.0f) {}
            atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst);
            atomic_store_explicit(&out[g], atomic_load_explicit(&data[g - 1], memory_order_relaxed),
                                  memory_order_relaxed);
        }
    }
"""


def test_msl_fences_run_and_print():
    # MLX's atomic_outputs makes every output atomic: the fences order atomics here
    k = mb.metal_kernel(name="publish", input_names=["in0"], output_names=["data", "ready", "out"],
                        source=FENCE_MSL, atomic_outputs=True)
    kw = dict(inputs=[mx.array(X[:8])], grid=(8 * 32, 1, 1), threadgroup=(32, 1, 1),
              output_shapes=[(8,)] * 3, output_dtypes=[mx.float32] * 3, init_value=0, backend="sim")
    data, ready, out = (np.asarray(a) for a in k(**kw, checked=True))
    np.testing.assert_array_equal(out[1:], 2 * X[:7])
    sp = k.specialization(k.bind(**kw))
    cu = sp.source("cuda")
    assert cu.count("__threadfence();") == 2
    assert sp.source("sim")  # the simulator's program was generated


def test_fence_argument_errors_name_the_line():
    @mb.kernel
    def bad_order(x, out: mb.Out):
        atomic_thread_fence(mem_flags.mem_device, "memory_order_whatever")  # noqa: F405
        out[0] = x[0]

    with pytest.raises(KernelTypeError, match="unknown memory order") as e:
        bad_order(X, grid=1, threadgroup=1, backend="sim")
    assert "atomic_thread_fence(mem_flags.mem_device" in str(e.value)


def test_printed_fences_pass_the_metal_syntax_check():
    from metalbench import mlx_signature as sig
    from metalbench import msl_check
    from metalbench import types as T
    body = """uint g = threadgroup_position_in_grid.x;
out[g] = inp[g];
atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);
atomic_thread_fence(mem_flags::mem_device | mem_flags::mem_threadgroup, memory_order_relaxed);
threadgroup_barrier(mem_flags::mem_none);"""
    found = msl_check.check(body=body, header="", name="k", inputs=[sig.InputSpec("inp", T.float32, 1, 64)],
                            outputs=[sig.OutputSpec("out", T.float32)])
    assert found == []
