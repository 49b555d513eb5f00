"""SIMD-group and quad-group functions order memory between the lanes that run them
(the rule is in metalbench/sim/sync_checks.py, ``simd_sync``).

``simd_sum``, ``simd_shuffle*``, ``simd_ballot`` & co. combine values of every active lane
of the SIMD-group, so the lanes all arrive there: an access a lane makes before the call
happens before an access another lane of the same SIMD-group makes after it, in
threadgroup and device memory alike. ``quad_*`` functions order the lanes of their
quad-group. Lanes of other SIMD-groups stay unordered: they need a threadgroup_barrier.
"""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.dsl import *  # noqa: F403 - the names a kernel author has
from metalbench.errors import KernelCheckError

from findings import races

RNG = np.random.default_rng(11)
X = RNG.standard_normal(256).astype(np.float32)


def msl(src, tg, n=None, name="simd_order"):
    n = n or tg
    k = mb.metal_kernel(name=name, input_names=["x"], output_names=["o"], source=src)
    return lambda checked=True: k(inputs=[mx.array(X[:n])], grid=(n, 1, 1), threadgroup=(tg, 1, 1),
                                  output_shapes=[(n,)], output_dtypes=[mx.float32], backend="sim",
                                  checked=checked)


def sg(thread):
    return thread[0] // 32


# --------------------------------------------------------------- read, simd_sum, overwrite (GroupNorm's pattern)

BROADCAST_THEN_OVERWRITE = """
    uint l = thread_index_in_threadgroup;
    threadgroup float s[1];
    if (l == 0) s[0] = x[0];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float m = s[0];                          // every thread reads s[0]
    float t = REDUCE;
    if (l == WRITER) s[0] = t;               // then one thread overwrites it
    threadgroup_barrier(mem_flags::mem_threadgroup);
    o[l] = s[0] + m;
"""


def broadcast_then_overwrite(tg, reduce="simd_sum(x[l] - m)", writer="0"):
    return msl(BROADCAST_THEN_OVERWRITE.replace("REDUCE", reduce).replace("WRITER", writer), tg)


def test_simd_sum_orders_the_reads_before_it_with_a_write_after_it():
    launch = broadcast_then_overwrite(32)
    assert races(launch) == []
    got = np.asarray(launch()[0])
    np.testing.assert_allclose(got, (X[:32] - X[0]).sum() + X[0], rtol=1e-5, atol=1e-5)


def test_without_the_simd_function_it_is_a_race():
    with pytest.raises(KernelCheckError) as e:
        broadcast_then_overwrite(32, reduce="x[l] - m")()
    f = e.value.findings[0]
    assert f.kind == "data race" and all(sg(t) == 0 for t in f.threads[:2])
    assert "lanes of one SIMD-group" in str(e.value) and "SIMD-group function" in str(e.value)


def test_lanes_of_another_simdgroup_are_not_ordered():
    # 64 threads: SIMD-group 1's first lane overwrites s[0] that SIMD-group 0 read; each
    # SIMD-group ran simd_sum, but nothing orders one SIMD-group with the other
    found = races(broadcast_then_overwrite(64, writer="32"))
    assert len(found) == 1, found
    f = found[0]
    assert f.buffer == "s" and sorted(f.accesses) == ["read", "write"]
    assert sg(f.threads[0]) != sg(f.threads[1]) and not f.extra["same_simd"]
    # lane 0 writing: SIMD-group 1's reads still race with it
    found = races(broadcast_then_overwrite(64, writer="0"))
    assert found and {sg(t) for t in found[0].threads[:2]} == {0, 1}


def test_partial_simdgroup_counts_its_existing_lanes():
    # 48 threads: SIMD-group 1 has 16 lanes, all of which run simd_sum
    assert races(broadcast_then_overwrite(48, writer="32")) != []      # across SIMD-groups
    src = BROADCAST_THEN_OVERWRITE.replace("REDUCE", "simd_sum(x[l] - m)").replace("if (l == WRITER)",
                                                                                   "if (l == 32 && x[0] > -1e30f)")
    src = src.replace("float m = s[0];", "float m = l >= 32 ? s[0] : 0.0f;")
    assert races(msl(src, 48)) == []


@pytest.mark.parametrize("reduce", ["simd_broadcast(m, 5)", "simd_shuffle_xor(m, 3)", "simd_prefix_exclusive_sum(m)",
                                    "simd_max(m)", "(float)simd_ballot(m > 0.0f)", "(float)simd_all(m > 0.0f)",
                                    "simd_broadcast_first(m)"])
def test_every_simd_function_orders(reduce):
    assert races(broadcast_then_overwrite(32, reduce=reduce)) == []


# --------------------------------------------------------------- a shuffle alone orders neighbours' tiles

SHUFFLE_ONLY = """
    uint l = thread_index_in_threadgroup;
    threadgroup float tile[64];
    tile[l] = x[l];
    o[l] = x[l];
    float v = SYNC;                          // a value nobody needs from memory
    float r = READ + 0.0f * v;
    v = SYNC;                                // (orders the reads of o before the stores)
    o[l] = r + 0.0f * v;
"""


@pytest.mark.parametrize("sync, read, race", [
    ("simd_shuffle_xor(x[l], 1)", "tile[l ^ 1]", None),          # same SIMD-group: ordered
    ("simd_shuffle_down(x[l], 1)", "tile[l ^ 31]", None),
    ("x[l]", "tile[l ^ 1]", "threadgroup"),                       # no collective
    ("simd_shuffle_xor(x[l], 1)", "tile[l ^ 32]", "threadgroup"),  # another SIMD-group
    ("quad_shuffle_xor(x[l], 1)", "tile[l ^ 3]", None),           # same quad-group
    ("quad_sum(x[l])", "tile[l ^ 4]", "threadgroup"),             # another quad-group
    ("simd_shuffle_xor(x[l], 1)", "o[l ^ 1]", None),              # device memory, same SIMD-group
    ("simd_shuffle_xor(x[l], 1)", "o[l ^ 32]", "device"),
    ("quad_sum(x[l])", "o[l ^ 2]", None),
    ("quad_sum(x[l])", "o[l ^ 8]", "device"),
])
def test_shuffle_orders_the_lanes_it_joins(sync, read, race):
    found = races(msl(SHUFFLE_ONLY.replace("SYNC", sync).replace("READ", read), 64))
    assert all(f.extra["same_simd"] == ("32" not in read) for f in found), found
    assert [f.space for f in found] == ([race] if race else []), found


def test_divergent_simd_function_orders_only_the_lanes_that_ran_it():
    # lanes 0..15 run simd_sum: they are ordered among themselves (whole quad-groups); lanes
    # 16..31 did not run it and still race with each other
    src = """
        uint l = thread_index_in_threadgroup;
        threadgroup float tile[32];
        tile[l] = x[l];
        float v = 0.0f;
        if (l < 16) v = simd_sum(x[l]);
        o[l] = tile[l ^ 1] + 0.0f * v;
    """
    found = races(msl(src, 32))
    assert len(found) == 1 and all(t[0] >= 16 for t in found[0].threads[:2]), found
    # lanes 0..5 run it: quad-group 0 is whole, quad-group 1 is not (lanes 4, 5 stay unordered)
    found = races(msl(src.replace("l < 16", "l < 6"), 32))
    assert found and all(t[0] >= 4 for t in found[0].threads[:2]), found


def test_simdgroup_barrier_in_one_simdgroup_orders_only_it():
    # SIMD-group 0 alone runs a simdgroup_barrier: SIMD-group 1's lanes stay unordered
    src = """
        uint l = thread_index_in_threadgroup;
        threadgroup float tile[64];
        tile[l] = x[l];
        if (l < 32) simdgroup_barrier(mem_flags::mem_threadgroup);
        o[l] = tile[l ^ 1];
    """
    found = races(msl(src, 64))
    assert len(found) == 1 and all(sg(t) == 1 for t in found[0].threads[:2]), found


# --------------------------------------------------------------- the DSL: the same rule (one checker)

@mb.kernel
def dsl_broadcast(x, o: mb.Out, WRITER: mb.constexpr = 0, SUM: mb.constexpr = 1):
    s = threadgroup_array(1, float32)  # noqa: F405
    l = thread_index_in_threadgroup  # noqa: F405
    if l == 0:
        s[0] = x[0]
    threadgroup_barrier()  # noqa: F405
    m = s[0]
    t = x[l] - m
    if SUM:
        t = simd_sum(t)  # noqa: F405
    if l == WRITER:
        s[0] = t
    threadgroup_barrier()  # noqa: F405
    o[l] = s[0] + m


@pytest.mark.parametrize("tg, writer, total, race", [(32, 0, 1, False), (32, 0, 0, True), (64, 32, 1, True)])
def test_dsl_simd_sum(tg, writer, total, race):
    found = races(lambda: dsl_broadcast(X[:tg], grid=tg, threadgroup=tg, WRITER=writer, SUM=total,
                                        backend="sim", checked=True))
    assert bool(found) == race, found
    if tg == 64:
        assert sg(found[0].threads[0]) != sg(found[0].threads[1])


@mb.kernel
def dsl_shuffle(x, o: mb.Out, FAR: mb.constexpr = 0):
    tile = threadgroup_array(64, float32)  # noqa: F405
    l = thread_index_in_threadgroup  # noqa: F405
    tile[l] = x[l]
    v = simd_shuffle_xor(x[l], 1)  # noqa: F405
    o[l] = tile[l ^ (32 if FAR else 1)] + 0.0 * v


def test_dsl_shuffle_orders_its_simdgroup_only():
    assert races(lambda: dsl_shuffle(X[:64], grid=64, threadgroup=64, backend="sim", checked=True)) == []
    found = races(lambda: dsl_shuffle(X[:64], grid=64, threadgroup=64, FAR=1, backend="sim", checked=True))
    assert len(found) == 1 and found[0].space == "threadgroup"


@mb.kernel
def dsl_matrix_product(x, o: mb.Out, FAR: mb.constexpr = 0):
    # the 8x8 product is a SIMD-group function too: it orders the tile between its lanes
    tile = threadgroup_array(64, float32)  # noqa: F405
    l = thread_index_in_threadgroup  # noqa: F405
    tile[l] = x[l]
    c = simdgroup_float8x8(0)  # noqa: F405
    a = simdgroup_float8x8(1)  # noqa: F405
    simdgroup_multiply_accumulate(c, a, a, c)  # noqa: F405
    o[l] = tile[l ^ (32 if FAR else 1)]


def test_dsl_matrix_product_orders_its_simdgroup_only():
    assert races(lambda: dsl_matrix_product(X[:64], grid=64, threadgroup=64, backend="sim", checked=True)) == []
    found = races(lambda: dsl_matrix_product(X[:64], grid=64, threadgroup=64, FAR=1, backend="sim", checked=True))
    assert len(found) == 1 and found[0].space == "threadgroup"
