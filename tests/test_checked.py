"""The checked simulator on buggy kernels (DSL and MSL bodies): each bug gives a finding
of the right kind at the right line; correct variants give none."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
import metalbench.sim.kernel as simkernel
from metalbench.dsl import *  # noqa: F401,F403
from metalbench.errors import KernelCheckError
from metalbench.mlx_compat import metal_kernel
from metalbench.runtime import to_numpy

RNG = np.random.default_rng(11)
X = RNG.standard_normal(256).astype(np.float32)


def finding(call, kind):
    """Run ``call`` expecting a KernelCheckError whose first finding is ``kind``."""
    with pytest.raises(KernelCheckError) as e:
        call()
    err = e.value
    assert err.findings, str(err)
    kinds = [f.kind for f in err.findings]
    assert kind in kinds, (kinds, str(err))
    assert kind in str(err)
    return err, next(f for f in err.findings if f.kind == kind)


def sim(k, *args, **kw):
    kw.setdefault("backend", "sim")
    kw.setdefault("checked", True)
    return k(*args, **kw)


# ------------------------------------------------------------------ DSL: out of bounds


@mb.kernel
def store_past_end(x, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i + 1] = x[i]


@mb.kernel
def read_wrong_guard(x, y, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = x[i] + y[i]


def test_dsl_off_by_one_store():
    err, f = finding(lambda: sim(store_past_end, X, grid=256, threadgroup=64), "out-of-bounds")
    assert f.buffer == "out" and f.index == [256] and f.threads == [(255, 0, 0)]
    assert "out[i + 1] = x[i]" in str(err) and "write to" in str(err)


def test_dsl_read_guarded_on_wrong_index():
    y = X[:200]
    err, f = finding(lambda: sim(read_wrong_guard, X, y, grid=256, threadgroup=64), "out-of-bounds")
    assert f.buffer == "y" and f.index[0] == 200 and f.threads[0] == (200, 0, 0)
    assert "out[i] = x[i] + y[i]" in str(err)


# ------------------------------------------------------------------ DSL: threadgroup memory


@mb.kernel
def neighbour_no_barrier(x, out: mb.Out, TG: mb.constexpr = 64):
    tile = threadgroup_array(TG, float32)
    i = thread_position_in_grid.x
    l = thread_position_in_threadgroup.x
    tile[l] = x[i]
    out[i] = tile[(l + 1) % TG]


@mb.kernel
def neighbour_barrier(x, out: mb.Out, TG: mb.constexpr = 64):
    tile = threadgroup_array(TG, float32)
    i = thread_position_in_grid.x
    l = thread_position_in_threadgroup.x
    tile[l] = x[i]
    threadgroup_barrier(mem_threadgroup)
    out[i] = tile[(l + 1) % TG]


@mb.kernel
def half_written(x, out: mb.Out, TG: mb.constexpr = 64):
    tile = threadgroup_array(TG, float32)
    i = thread_position_in_grid.x
    l = thread_position_in_threadgroup.x
    if l < TG // 2:
        tile[l] = x[i]
    threadgroup_barrier(mem_threadgroup)
    out[i] = tile[l]


@mb.kernel
def barrier_in_if(x, out: mb.Out):
    i = thread_position_in_grid.x
    l = thread_position_in_threadgroup.x
    if l < 16:
        threadgroup_barrier(mem_threadgroup)
    out[i] = x[i]


@mb.kernel
def overwrite_in_place(x, out: mb.Out, TG: mb.constexpr = 64):
    tile = threadgroup_array(TG, float32)
    l = thread_position_in_threadgroup.x
    i = thread_position_in_grid.x
    tile[l] = x[i]
    threadgroup_barrier(mem_threadgroup)
    v = tile[TG - 1 - l]
    tile[l] = v * 2.0
    threadgroup_barrier(mem_threadgroup)
    out[i] = tile[l]


def test_dsl_neighbour_read_without_barrier_is_a_race():
    err, f = finding(lambda: sim(neighbour_no_barrier, X, grid=256, threadgroup=64), "data race")
    assert f.buffer == "tile" and f.space == "threadgroup"
    assert sorted(f.accesses) == ["read", "write"]
    text = str(err)
    assert "tile[l] = x[i]" in text and "out[i] = tile[(l + 1) % TG]" in text
    assert len(f.threads) == 2 and f.threads[0] != f.threads[1]
    assert f.count >= 64  # every element of every threadgroup, summarised in one finding


def test_dsl_neighbour_with_barrier_is_clean():
    got = to_numpy(sim(neighbour_barrier, X, grid=256, threadgroup=64))
    np.testing.assert_array_equal(got, np.roll(X.reshape(4, 64), -1, axis=1).reshape(-1))


def test_dsl_write_after_read_in_same_interval_is_a_race():
    err, f = finding(lambda: sim(overwrite_in_place, X, grid=128, threadgroup=64), "data race")
    assert f.buffer == "tile"
    assert "v = tile[TG - 1 - l]" in str(err) and "tile[l] = v * 2.0" in str(err)


def test_dsl_half_written_tile_is_an_uninitialised_read():
    err, f = finding(lambda: sim(half_written, X, grid=128, threadgroup=64), "uninitialised read")
    assert f.buffer == "tile" and f.index == [32] and f.threads[0] == (32, 0, 0)
    assert "out[i] = tile[l]" in str(err)
    assert f.count == 64  # 32 threads in each of 2 threadgroups


def test_dsl_barrier_inside_if_on_thread_index():
    err, f = finding(lambda: sim(barrier_in_if, X, grid=64, threadgroup=32), "divergent barrier")
    assert "threadgroup_barrier(mem_threadgroup)" in str(err) and f.line is not None


# ------------------------------------------------------------------ DSL: device memory races


@mb.kernel
def all_groups_one_element(x, out: mb.Out(shape=(4,), dtype=mb.float32)):
    i = thread_position_in_grid.x
    if thread_position_in_threadgroup.x == 0:
        out[0] = x[i]


@mb.kernel
def group_owned_element(x, out: mb.Out(shape=lambda x, **_: (x.size // 64,), dtype=mb.float32)):
    i = thread_position_in_grid.x
    if thread_position_in_threadgroup.x == 0:
        out[threadgroup_position_in_grid.x] = x[i]


@mb.kernel
def read_other_group(x, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = x[i]
    if i + 64 < x.size:
        out[i] = out[i + 64] + 1.0


@mb.kernel
def device_rw_same_group_barrier(x, out: mb.Out):
    i = thread_position_in_grid.x
    l = thread_position_in_threadgroup.x
    out[i] = x[i]
    threadgroup_barrier(mem_device)
    if l == 0:
        out[i] = out[i + 1] + 1.0


@mb.kernel
def atomic_and_plain_write(x, out: mb.Out(shape=(2,), dtype=mb.int32)):
    i = thread_position_in_grid.x
    atomic_add(out, 0, 1)
    if i == 70:
        out[0] = 0


def test_dsl_every_threadgroup_writes_the_same_element(monkeypatch):
    for lanes in (1 << 15, 64):  # one chunk, and one threadgroup per chunk
        monkeypatch.setattr(simkernel, "CHUNK_LANES", lanes)
        err, f = finding(lambda: sim(all_groups_one_element, X, grid=256, threadgroup=64), "data race")
        assert f.buffer == "out" and f.space == "device" and f.index == [0]
        assert f.accesses == ["write", "write"]
        assert "different threadgroups" in str(err) and "out[0] = x[i]" in str(err)
        assert {f.threads[0], f.threads[1]} <= {(0, 0, 0), (64, 0, 0), (128, 0, 0), (192, 0, 0)}


def test_dsl_one_element_per_threadgroup_is_clean():
    got = to_numpy(sim(group_owned_element, X, grid=256, threadgroup=64))
    np.testing.assert_array_equal(got, X[::64])


def test_dsl_read_of_another_groups_output_is_a_race(monkeypatch):
    for lanes in (1 << 15, 64):
        monkeypatch.setattr(simkernel, "CHUNK_LANES", lanes)
        err, f = finding(lambda: sim(read_other_group, X, grid=256, threadgroup=64), "data race")
        assert f.buffer == "out" and "out[i] = out[i + 64] + 1.0" in str(err)


def test_dsl_device_memory_after_a_barrier_in_one_group_is_clean():
    got = to_numpy(sim(device_rw_same_group_barrier, X[:128], grid=128, threadgroup=64))
    assert got[0] == X[1] + 1 and got[64] == X[65] + 1


def test_dsl_atomic_against_plain_write():
    err, f = finding(lambda: sim(atomic_and_plain_write, X, grid=128, threadgroup=64,
                                 init_value=0), "data race")
    assert sorted(f.accesses) == ["atomic", "write"] and "out[0] = 0" in str(err)


def test_dsl_atomics_alone_are_clean():
    from tests.zoo import histogram
    xs = RNG.integers(0, 1 << 20, 5000, dtype=np.uint32)
    got = to_numpy(sim(histogram, xs, grid=5000, threadgroup=256, init_value=0))
    np.testing.assert_array_equal(got, np.bincount(xs % 16, minlength=16))


# ------------------------------------------------------------------ DSL: loops and division


@mb.kernel
def forgot_increment(x, out: mb.Out):
    i = thread_position_in_grid.x
    j = 0
    acc = 0.0
    while j < 4:
        acc += x[i]
    out[i] = acc


@mb.kernel
def divide_by_lane(x, out: mb.Out(shape=lambda x, **_: x.shape, dtype=mb.int32)):
    i = thread_position_in_grid.x
    out[i] = 100 // int32(i % 8)


@mb.kernel
def guarded_divide(x, out: mb.Out(shape=lambda x, **_: x.shape, dtype=mb.int32)):
    i = thread_position_in_grid.x
    d = int32(i % 8)
    out[i] = 100 // d if d != 0 else -1


def test_dsl_runaway_loop(monkeypatch):
    monkeypatch.setenv("METALBENCH_MAX_STEPS", "1000")
    err, f = finding(lambda: sim(forgot_increment, X[:64], grid=64, threadgroup=64), "runaway loop")
    assert "while j < 4:" in str(err)
    # unchecked launches stop too (with twice the budget) instead of hanging
    err, f = finding(lambda: sim(forgot_increment, X[:64], grid=64, threadgroup=64, checked=False),
                     "runaway loop")


def test_dsl_division_by_zero_and_guarded_division():
    err, f = finding(lambda: sim(divide_by_lane, X[:64], grid=64, threadgroup=32), "division by zero")
    assert "100 // int32(i % 8)" in str(err) and f.threads[0] == (0, 0, 0) and f.count == 8
    got = to_numpy(sim(guarded_divide, X[:64], grid=64, threadgroup=32))
    d = np.arange(64) % 8
    np.testing.assert_array_equal(got, np.where(d == 0, -1, 100 // np.maximum(d, 1)))


def test_several_findings_are_summarised():
    @mb.kernel
    def many_bugs(x, out: mb.Out, TG: mb.constexpr = 64):
        tile = threadgroup_array(TG, float32)
        i = thread_position_in_grid.x
        l = thread_position_in_threadgroup.x
        if l < 8:
            tile[l] = x[i]
        out[i] = tile[(l + 1) % TG]
        out[0] = x[i]

    with pytest.raises(KernelCheckError) as e:
        sim(many_bugs, X, grid=256, threadgroup=64)
    kinds = {f.kind for f in e.value.findings}
    assert {"data race", "uninitialised read"} <= kinds
    assert len(e.value.findings) >= 3


def test_env_variable_turns_checking_on(monkeypatch):
    monkeypatch.setenv("METALBENCH_CHECKED", "1")
    with pytest.raises(KernelCheckError, match="data race"):
        neighbour_no_barrier(X, grid=256, threadgroup=64, backend="sim")


# ------------------------------------------------------------------ MSL bodies


def msl(src, out_shape=(256,), grid=256, tg=64, inputs=(X,), dtype=mx.float32, **kw):
    k = metal_kernel(name="bug", input_names=[f"in{j}" for j in range(len(inputs))],
                     output_names=["out"], source=src)
    return lambda: k(inputs=[mx.array(a) for a in inputs], grid=(grid, 1, 1), threadgroup=(tg, 1, 1),
                     output_shapes=[out_shape], output_dtypes=[dtype], backend="sim", checked=True, **kw)


def test_msl_off_by_one_store():
    src = """
        uint i = thread_position_in_grid.x;
        if (i < in0_shape[0]) {
            out[i + 1] = in0[i];
        }
    """
    err, f = finding(msl(src), "out-of-bounds")
    assert f.buffer == "out" and f.index == [256] and "out[i + 1] = in0[i];" in str(err) and f.line == 4


def test_msl_threadgroup_atomics_initialised_by_atomic_stores_are_clean():
    # atomic_store_explicit writes without reading: the fetch_add after the barrier reads
    # initialised memory (a histogram's usual zeroing)
    src = """
        uint l = thread_position_in_threadgroup.x;
        threadgroup atomic_uint bins[8];
        if (l < 8) atomic_store_explicit(&bins[l], 0u, memory_order_relaxed);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        atomic_fetch_add_explicit(&bins[l % 8], 1u, memory_order_relaxed);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[thread_position_in_grid.x] = float(atomic_load_explicit(&bins[l % 8], memory_order_relaxed));
    """
    np.testing.assert_array_equal(np.array(msl(src)()[0]), np.full(256, 8.0))
    missing = src.replace("if (l < 8) atomic_store_explicit(&bins[l], 0u, memory_order_relaxed);", "")
    finding(msl(missing), "uninitialised read")


def test_msl_read_guarded_on_wrong_index():
    src = """
        uint i = thread_position_in_grid.x;
        if (i < in0_shape[0]) out[i] = in0[i] + in1[i];
    """
    err, f = finding(msl(src, inputs=(X, X[:100])), "out-of-bounds")
    assert f.buffer == "in1" and f.index[0] == 100 and f.line == 3


def test_msl_neighbour_without_barrier():
    src = """
        threadgroup float tile[64];
        uint i = thread_position_in_grid.x;
        uint l = thread_position_in_threadgroup.x;
        tile[l] = in0[i];
        out[i] = tile[(l + 1) % 64];
    """
    err, f = finding(msl(src), "data race")
    assert f.buffer == "tile" and sorted(f.lines) == [5, 6]
    assert "tile[l] = in0[i];" in str(err) and "out[i] = tile[(l + 1) % 64];" in str(err)
    ok = src.replace("        out[i]", "        threadgroup_barrier(mem_flags::mem_threadgroup);\n        out[i]")
    got = np.array(msl(ok)()[0])
    np.testing.assert_array_equal(got, np.roll(X.reshape(4, 64), -1, axis=1).reshape(-1))


def test_msl_half_written_tile():
    src = """
        threadgroup float tile[64];
        uint i = thread_position_in_grid.x;
        uint l = thread_position_in_threadgroup.x;
        if (l < 32) tile[l] = in0[i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[i] = tile[l];
    """
    err, f = finding(msl(src), "uninitialised read")
    assert f.buffer == "tile" and f.line == 7 and f.threads[0] == (32, 0, 0)


def test_msl_barrier_inside_if():
    src = """
        uint i = thread_position_in_grid.x;
        if (thread_position_in_threadgroup.x < 16) {
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        out[i] = in0[i];
    """
    err, f = finding(msl(src), "divergent barrier")
    assert f.line == 4


def test_msl_every_threadgroup_writes_the_same_element():
    src = """
        uint i = thread_position_in_grid.x;
        if (thread_position_in_threadgroup.x == 0) out[0] = in0[i];
    """
    err, f = finding(msl(src, out_shape=(4,)), "data race")
    assert f.buffer == "out" and f.index == [0] and f.line == 3


def test_msl_last_stats_and_division_by_zero():
    src = """
        uint i = thread_position_in_grid.x;
        int d = int(i % 4);
        out[i] = 12 / d;
    """
    err, f = finding(msl(src, dtype=mx.int32), "division by zero")
    assert f.line == 4 and "12 / d" in str(err)


def test_msl_shift_counts_outside_the_width_are_warned_about():
    # x << (32 - s) with s == 0: undefined in MSL (PTX gives 0, the simulator x): a warning
    # naming the count, the line and the threads; counts in range and constant counts: none
    src = """
        uint i = thread_position_in_grid.x;
        uint s = i % 8u;
        out[i] = (0xF0u << (32u - s)) | (uint(i) >> s) | (1u << 31);
    """
    with pytest.warns(mb.KernelCheckWarning, match=r"shift by 32 \(<<\) of a 32-bit value") as w:
        o = msl(src, dtype=mx.uint32)()[0]
    msg = str(w[0].message)
    assert "line 4" in msg and "(0, 0, 0)" in msg and "PTX gives 0" in msg, msg
    i = np.arange(256, dtype=np.uint64)
    s = i % 8
    want = ((0xF0 << ((32 - s) % 32)) & 0xFFFFFFFF) | (i >> s) | (1 << 31)      # the count modulo 32
    np.testing.assert_array_equal(np.array(o), want.astype(np.uint32))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        msl(src.replace("32u - s", "31u - s"), dtype=mx.uint32)()


# ------------------------------------------------------------------ device functions, partial groups


@mb.func
def put(buf, j, v):
    buf[j] = v


@mb.func
def get(buf, j):
    return buf[j]


@mb.kernel
def via_functions(x, out: mb.Out, TG: mb.constexpr = 64):
    tile = threadgroup_array(TG, float32)
    i = thread_position_in_grid.x
    l = thread_position_in_threadgroup.x
    put(tile, l, x[i])
    out[i] = get(tile, (l + 1) % TG)


@mb.kernel
def via_functions_device(x, out: mb.Out):
    i = thread_position_in_grid.x
    put(out, 0, x[i])


def test_races_through_device_function_parameters():
    err, f = finding(lambda: sim(via_functions, X, grid=128, threadgroup=64), "data race")
    assert f.buffer == "tile"
    err, f = finding(lambda: sim(via_functions_device, X, grid=128, threadgroup=64), "data race")
    assert f.buffer == "out" and f.index == [0]


@mb.kernel
def partial_neighbour(x, out: mb.Out):
    tile = threadgroup_array(64, float32)
    i = thread_position_in_grid.x
    l = thread_position_in_threadgroup.x
    if i < x.size:
        tile[l] = x[i]
    threadgroup_barrier(mem_threadgroup)
    if i + 1 < x.size:
        out[i] = tile[l + 1] if l + 1 < 64 else 0.0


def test_partial_last_threadgroup():
    # grid 100 in groups of 64: the last group has 36 threads; reads stay in what they wrote
    got = to_numpy(sim(partial_neighbour, X[:100], grid=100, threadgroup=64))
    np.testing.assert_array_equal(got[:63], X[1:64])
    # a read one past the 36 written elements of the last group is uninitialised
    err, f = finding(lambda: sim(partial_neighbour, X[:101], grid=100, threadgroup=64),
                     "uninitialised read")
    assert f.threads == [(99, 0, 0)] and f.index == [36]


def test_simdgroup_barrier_orders_within_a_simdgroup_only():
    base = """
        threadgroup float tile[64];
        uint i = thread_position_in_grid.x;
        uint l = thread_position_in_threadgroup.x;
        tile[l] = in0[i];
        simdgroup_barrier(mem_flags::mem_threadgroup);
        out[i] = tile[NB];
    """
    got = np.array(msl(base.replace("NB", "l ^ 1"))()[0])  # a neighbour in the same simdgroup
    np.testing.assert_array_equal(got, X[np.arange(256) ^ 1])
    err, f = finding(msl(base.replace("NB", "(l + 32) % 64")), "data race")  # another simdgroup
    assert f.buffer == "tile" and sorted(f.lines) == [5, 7]


def test_race_example_prefers_threads_of_different_simdgroups():
    # every thread reads a broadcast value, then lane 0 overwrites it with no barrier between: the
    # first racing pair is (0, 1), lanes of one SIMD-group; the report names one from another
    # SIMD-group, where the race bites on a GPU too
    src = """
        threadgroup float tile[1];
        uint i = thread_position_in_grid.x;
        uint l = thread_position_in_threadgroup.x;
        if (l == 0) tile[0] = in0[i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float v = tile[0];
        if (l == 0) tile[0] = 2.0f * v;
        out[i] = v;
    """
    err, f = finding(msl(src), "data race")
    (ta, tb) = f.threads[:2]
    assert ta[0] // 32 != tb[0] // 32 and sorted(f.lines) == [7, 8]
    assert "SIMD-group" not in str(err).splitlines()[0]
    # a threadgroup of one SIMD-group: the pair is two lanes of it, and the message says why it races
    err, f = finding(msl(src, grid=64, tg=32, inputs=(X[:64],), out_shape=(64,)), "data race")
    assert {t[0] // 32 for t in f.threads[:2]} == {0}
    assert "lanes of one SIMD-group" in str(err) and "simdgroup_barrier" in str(err)


# ------------------------------------------------------------------ bounds in every address space


@mb.kernel
def tg_past_end(x, out: mb.Out):
    tile = threadgroup_array(32, float32)
    i = thread_position_in_grid.x
    l = thread_position_in_threadgroup.x
    tile[l] = x[i]
    threadgroup_barrier(mem_threadgroup)
    out[i] = tile[l]


@mb.kernel
def local_past_end(x, out: mb.Out):
    i = thread_position_in_grid.x
    acc = local_array((4,), float32)
    for j in range(4):
        acc[j] = x[i]
    out[i] = acc[i % 5]


def test_out_of_bounds_in_threadgroup_and_local_arrays():
    err, f = finding(lambda: sim(tg_past_end, X[:64], grid=64, threadgroup=64), "out-of-bounds")
    assert f.buffer == "tile" and f.space == "threadgroup" and f.index[0] == 32
    assert f.threads[0] == (32, 0, 0) and "tile[l] = x[i]" in str(err)
    err, f = finding(lambda: sim(local_past_end, X[:64], grid=64, threadgroup=32), "out-of-bounds")
    assert f.buffer == "acc" and f.space == "thread" and f.index[0] == 4
    assert f.threads[0] == (4, 0, 0) and "out[i] = acc[i % 5]" in str(err)


def test_msl_out_of_bounds_in_threadgroup_and_local_arrays():
    src = """
        threadgroup float tile[32];
        uint l = thread_position_in_threadgroup.x;
        tile[l] = in0[thread_position_in_grid.x];
    """
    err, f = finding(msl(src, grid=64, tg=64), "out-of-bounds")
    assert f.buffer == "tile" and f.line == 4 and f.index[0] == 32
    src = """
        float acc[4];
        uint i = thread_position_in_grid.x;
        for (int j = 0; j < 4; j++) acc[j] = in0[i];
        out[i] = acc[i % 5];
    """
    err, f = finding(msl(src, grid=64, tg=32), "out-of-bounds")
    assert f.buffer == "acc" and f.line == 5 and f.threads[0] == (4, 0, 0)


# ------------------------------------------------------------------ correct patterns stay clean


@mb.kernel
def tg_histogram(x, hist: mb.Out(shape=(16,), dtype=mb.int32)):
    h = threadgroup_array(16, int32)
    i = thread_position_in_grid.x
    l = thread_position_in_threadgroup.x
    if l < 16:
        h[l] = 0
    threadgroup_barrier(mem_threadgroup)
    if i < x.size:
        atomic_add(h, x[i] % 16, 1)
    threadgroup_barrier(mem_threadgroup)
    if l < 16:
        atomic_add(hist, l, h[l])


@mb.kernel
def scan(x, out: mb.Out, TG: mb.constexpr = 64):
    buf = threadgroup_array(TG, float32)
    i = thread_position_in_grid.x
    l = thread_position_in_threadgroup.x
    buf[l] = x[i]
    threadgroup_barrier(mem_threadgroup)
    off = 1
    while off < TG:
        v = buf[l - off] if l >= off else 0.0
        threadgroup_barrier(mem_threadgroup)
        buf[l] += v
        threadgroup_barrier(mem_threadgroup)
        off *= 2
    out[i] = buf[l]


def test_correct_patterns_have_no_findings():
    xs = RNG.integers(0, 1000, 1000, dtype=np.uint32)
    got = to_numpy(sim(tg_histogram, xs, grid=1024, threadgroup=128, init_value=0))
    np.testing.assert_array_equal(got, np.bincount(xs % 16, minlength=16))
    got = to_numpy(sim(scan, X, grid=256, threadgroup=64))
    np.testing.assert_allclose(got, np.cumsum(X.reshape(4, 64), axis=1).reshape(-1), rtol=1e-5, atol=1e-5)
    s = scan.last_stats
    assert s.max_threadgroup_writes_per_thread == 7 and s.threadgroup_reads > 0


def test_scan_without_the_middle_barrier_races():
    @mb.kernel
    def scan_bad(x, out: mb.Out, TG: mb.constexpr = 64):
        buf = threadgroup_array(TG, float32)
        i = thread_position_in_grid.x
        l = thread_position_in_threadgroup.x
        buf[l] = x[i]
        threadgroup_barrier(mem_threadgroup)
        off = 1
        while off < TG:
            v = buf[l - off] if l >= off else 0.0
            buf[l] += v
            threadgroup_barrier(mem_threadgroup)
            off *= 2
        out[i] = buf[l]

    err, f = finding(lambda: sim(scan_bad, X, grid=256, threadgroup=64), "data race")
    assert "v = buf[l - off] if l >= off else 0.0" in str(err) and "buf[l] += v" in str(err)


def test_long_interval_logs_are_compacted(monkeypatch):
    import metalbench.sim.checks as checks
    monkeypatch.setattr(checks, "LOG_LIMIT", 100)

    @mb.kernel
    def reread(x, out: mb.Out):
        i = thread_position_in_grid.x
        acc = 0.0
        out[i] = x[i]
        for j in range(20):
            acc += out[(i + j) % 64]
        out[i] = acc

    err, f = finding(lambda: sim(reread, X[:64], grid=64, threadgroup=64), "data race")
    assert f.buffer == "out" and "acc += out[(i + j) % 64]" in str(err)

    @mb.kernel
    def reread_own(x, out: mb.Out):
        i = thread_position_in_grid.x
        out[i] = x[i]
        for j in range(20):
            out[i] = out[i] + 1.0

    got = to_numpy(sim(reread_own, X[:64], grid=64, threadgroup=64))
    np.testing.assert_allclose(got, X[:64] + 20, rtol=1e-6)


def test_runaway_divergent_loop_and_msl_loop(monkeypatch):
    monkeypatch.setenv("METALBENCH_MAX_STEPS", "500")

    @mb.kernel
    def divergent_forever(x, out: mb.Out):
        i = thread_position_in_grid.x
        j = uint32(0)
        while j < i:
            out[i] = 1.0
        out[i] = 2.0

    err, f = finding(lambda: sim(divergent_forever, X[:64], grid=64, threadgroup=32, checked=False),
                     "runaway loop")
    assert "while j < i:" in str(err)
    src = """
        uint i = thread_position_in_grid.x;
        int n = 0;
        while (true) {
            if (n > 10) n = 0;
        }
        out[i] = in0[i];
    """
    err, f = finding(msl(src), "runaway loop")
    assert f.line == 4 and "while (true) {" in str(err)
