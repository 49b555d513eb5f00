"""Checked-mode semantics: an array passed as two arguments is one buffer; writes of the
same value by several threads are a warning, not an error; atomics into outputs without
``init_value``; SIMD shuffles reading inactive lanes."""
import warnings

import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench import cuda
from metalbench.dsl import (atomic_add, atomic_exchange, atomic_max, atomic_store, float32, mem_flags, simd_broadcast,
                            simd_shuffle, simd_shuffle_down, simd_shuffle_up, simd_shuffle_xor,
                            thread_index_in_simdgroup, thread_position_in_grid, thread_position_in_threadgroup,
                            threadgroup_array, threadgroup_barrier, threadgroup_position_in_grid)
from metalbench.errors import KernelCheckError

RNG = np.random.default_rng(11)


def outcome(fn):
    """(findings of a KernelCheckError or [], the KernelCheckWarnings) of ``fn()``."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            fn()
            errs = []
        except KernelCheckError as e:
            errs = e.findings
    return errs, [x for x in w if issubclass(x.category, mb.KernelCheckWarning)]


# ----------------------------------------------------------------------------- one array, two names

@cuda.jit
def copy(x, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i]


@pytest.mark.parametrize("blocks, tpb, shift", [(1, 64, 1), (2, 32, 32), (4, 16, 3)])
def test_overlapping_views_are_one_buffer(monkeypatch, blocks, tpb, shift):
    monkeypatch.setenv("METALBENCH_CHECKED", "1")
    n = blocks * tpb
    a = np.arange(n + shift, dtype=np.float32)
    b = a.copy()
    copy[blocks, tpb](a[shift:], b[:-shift])          # distinct arrays: no finding
    np.testing.assert_array_equal(b[:-shift], a[shift:])
    errs, _ = outcome(lambda: copy[blocks, tpb](a[shift:], a[:-shift]))   # out[i] = x[i] is a[i] = a[i + shift]
    races = [f for f in errs if f.kind == "data race"]
    assert races, errs
    f = races[0]
    assert {f.buffer} | set(f.extra["aliases"]) == {"x", "out"}
    assert "the same array as" in str(f)
    assert sorted(f.accesses) == ["read", "write"]
    if blocks == 1 or shift >= tpb:  # only within a threadgroup / only between threadgroups
        assert f.extra["same_group"] == (blocks == 1)


def test_same_array_same_element_is_no_race(monkeypatch):
    monkeypatch.setenv("METALBENCH_CHECKED", "1")
    c = np.arange(64, dtype=np.float32)
    errs, _ = outcome(lambda: copy[2, 32](c, c))
    assert errs == []


# ----------------------------------------------------------------------------- same-value writes

@mb.kernel
def flags_per_group(x, flag: mb.Out(shape=lambda x, V: (x.size // 64,), dtype=mb.int32), V: mb.constexpr = 0):
    g = threadgroup_position_in_grid.x
    i = thread_position_in_grid.x
    if V == 0:
        flag[g] = 1                      # every thread of the group writes 1
    else:
        flag[g] = int(i % 2)             # different values: a real race


def test_same_value_device_writes_warn_and_different_values_raise():
    x = np.zeros(256, np.float32)
    errs, w = outcome(lambda: flags_per_group(x, backend="sim", checked=True, grid=256, threadgroup=64))
    assert errs == [] and len(w) == 1
    msg = str(w[0].message)
    assert "several threads write the same value to device buffer 'flag'" in msg and "line" in msg
    assert w[0].filename == __file__
    got = np.asarray(flags_per_group(x, backend="sim", grid=256, threadgroup=64))
    np.testing.assert_array_equal(got, 1)
    errs, _ = outcome(lambda: flags_per_group(x, V=1, backend="sim", checked=True, grid=256, threadgroup=64))
    assert [f.kind for f in errs] == ["data race"]


@mb.kernel
def tg_same(x, out: mb.Out, V: mb.constexpr = 0):
    sh = threadgroup_array(2, float32)
    t = thread_position_in_threadgroup.x
    i = thread_position_in_grid.x
    if t < 2:
        sh[t] = 0.0
    threadgroup_barrier()
    if V == 0:
        sh[0] = 5.0                       # one statement, every thread, one value
        sh[1] = x[0] * 0.0 + float32("nan")  # NaN equals NaN bit for bit
    else:
        sh[0] = x[i]
    threadgroup_barrier()
    out[i] = sh[0]


def test_same_value_threadgroup_writes_warn():
    x = RNG.standard_normal(128).astype(np.float32)
    errs, w = outcome(lambda: tg_same(x, backend="sim", checked=True, grid=128, threadgroup=64))
    assert errs == [] and len(w) == 1 and "threadgroup array 'sh'" in str(w[0].message)
    assert np.all(np.asarray(tg_same(x, backend="sim", grid=128, threadgroup=64)) == 5)
    errs, _ = outcome(lambda: tg_same(x, V=1, backend="sim", checked=True, grid=128, threadgroup=64))
    assert errs and errs[0].kind == "data race"


ACROSS_GROUPS = {
    # one store, lanes of two threadgroups on each element: same values warn, different ones race
    "same": ("out[i % 4] = x[i % 4];", "warning"),
    "different": ("out[i % 4] = x[i];", "race"),
    # the element held another value (an earlier store) before two threadgroups agree on a new one
    "after another value": ("if (i == 0) { out[1] = 7.0f; } out[i % 4] = x[i % 4];", "race"),
}


@pytest.mark.parametrize("case", list(ACROSS_GROUPS))
def test_same_value_writes_from_several_threadgroups_in_one_store(case):
    body, want = ACROSS_GROUPS[case]
    k = mb.metal_kernel(name="groups", input_names=["x"], output_names=["out"],
                        source="uint i = thread_position_in_grid.x;\n" + body)
    x = mx.array(np.arange(1, 9, dtype=np.float32))
    errs, w = outcome(lambda: k(inputs=[x], grid=(8, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
                                output_dtypes=[mx.float32], backend="sim", checked=True))
    if want == "warning":
        assert errs == [] and len(w) == 1 and "same value to device buffer 'out'" in str(w[0].message)
    else:
        assert [f.kind for f in errs] == ["data race"] and errs[0].buffer == "out"


SAME_MSL = """
    uint i = thread_position_in_grid.x;
    if (i % 32 == 5) { y[i / 32] = 0.0f; }   // a lane's write, then
    if (i % 32 == 9) { y[i / 32] = VALUE; }   // another lane's, same interval
"""


@pytest.mark.parametrize("value, kind", [("0.0f", "warning"), ("1.0f", "race")])
def test_same_value_across_statements(value, kind):
    k = mb.metal_kernel(name="twice", input_names=["x"], output_names=["y"], source=SAME_MSL.replace("VALUE", value))
    errs, w = outcome(lambda: k(inputs=[mx.zeros((64,))], grid=(64, 1, 1), threadgroup=(64, 1, 1),
                                output_shapes=[(2,)], output_dtypes=[mx.float32], backend="sim", checked=True))
    if kind == "warning":
        assert errs == [] and len(w) == 1 and "lines 3 and 4" in str(w[0].message)
    else:
        assert [f.kind for f in errs] == ["data race"] and w == []


# ----------------------------------------------------------------------------- atomics into outputs without init_value

@mb.kernel
def histogram(x, hist: mb.Out(shape=16, dtype=mb.int32), INIT: mb.constexpr = 0):
    i = thread_position_in_grid.x
    if INIT:
        if i < 16:
            atomic_store(hist, i, 0)     # the kernel defines its output first...
        threadgroup_barrier(mem_flags.mem_device)  # noqa: F405 - (one threadgroup)
    atomic_add(hist, int(x[i]) % 16, 1)


def test_atomic_add_into_an_output_without_init_value_is_reported():
    x = RNG.integers(0, 64, 64).astype(np.float32)
    errs, _ = outcome(lambda: histogram(x, backend="sim", checked=True, grid=64, threadgroup=64))
    f = errs[0]
    assert f.kind == "uninitialised read" and f.buffer == "hist" and f.accesses == ["atomic"]
    assert "launched without init_value" in str(f)
    assert f.count == len(np.unique(x.astype(int) % 16))      # once per element
    with pytest.raises(KernelCheckError, match="init_value"):
        histogram(x, backend="sim", checked=True, grid=64, threadgroup=64)
    # with init_value, or when the kernel writes the element first: clean and right
    for kw in (dict(init_value=0), dict(INIT=1)):
        errs, _ = outcome(lambda: histogram(x, backend="sim", checked=True, grid=64, threadgroup=64, **kw))
        assert errs == []
        got = np.asarray(histogram(x, backend="sim", grid=64, threadgroup=64, **kw))
        np.testing.assert_array_equal(got, np.bincount(x.astype(int) % 16, minlength=16))


@mb.kernel
def read_own_output(x, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = out[i] + x[i]       # garbage + x without init_value


@mb.kernel
def max_exchange(x, out: mb.Out(shape=4, dtype=mb.int32)):
    i = thread_position_in_grid.x
    if i < 4:
        atomic_exchange(out, i, 0)   # defines the element (its old value is not used)
    threadgroup_barrier(mem_flags.mem_device)  # noqa: F405
    atomic_max(out, i % 4, int(x[i]))


def test_reads_of_undefined_output_elements():
    x = RNG.standard_normal(64).astype(np.float32)
    errs, _ = outcome(lambda: read_own_output(x, backend="sim", checked=True, grid=64, threadgroup=32))
    assert [f.kind for f in errs] == ["uninitialised read"] and errs[0].accesses == ["read"] and errs[0].count == 64
    assert outcome(lambda: read_own_output(x, backend="sim", checked=True, grid=64, threadgroup=32,
                                           init_value=0))[0] == []
    xi = RNG.integers(0, 100, 64).astype(np.float32)
    assert outcome(lambda: max_exchange(xi, backend="sim", checked=True, grid=64, threadgroup=64))[0] == []
    got = np.asarray(max_exchange(xi, backend="sim", grid=64, threadgroup=64))
    np.testing.assert_array_equal(got, xi.astype(int).reshape(16, 4).max(0))


ATOMIC_MSL = """
    uint i = thread_position_in_grid.x;
    atomic_fetch_add_explicit(&out[i % 8], 1, memory_order_relaxed);
"""


def test_msl_atomic_outputs_without_init_value():
    k = mb.metal_kernel(name="counts", input_names=["x"], output_names=["out"], source=ATOMIC_MSL,
                        atomic_outputs=True)
    kw = dict(inputs=[mx.zeros((64,))], grid=(64, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(8,)],
              output_dtypes=[mx.int32], backend="sim", checked=True)
    errs, _ = outcome(lambda: k(**kw))
    assert [f.kind for f in errs] == ["uninitialised read"] and errs[0].count == 8
    assert outcome(lambda: k(**kw, init_value=0))[0] == []
    np.testing.assert_array_equal(np.asarray(k(**kw, init_value=0)[0]), 8)


# ----------------------------------------------------------------------------- shuffles reading inactive lanes

@mb.kernel
def divergent_shuffle(x, out: mb.Out, CASE: mb.constexpr = 0):
    i = thread_position_in_grid.x
    lane = thread_index_in_simdgroup
    v = x[i]
    if CASE == 0:
        if lane < 16:
            v = simd_shuffle_down(v, 8)        # lanes 8..15 read lanes 16..23: inactive
    elif CASE == 1:
        if lane < 16:
            v = simd_broadcast(v, 20)           # every active lane reads lane 20
    elif CASE == 2:
        if lane < 16:
            v = simd_shuffle_xor(v, 1)          # pairs inside 0..15: fine
    elif CASE == 3:
        if lane < 16:
            v = simd_shuffle_up(v, 4)           # lanes 0..3 keep their own value: fine
    elif CASE == 4:
        w = simd_shuffle_down(v, 8)             # every lane active: fine
        if lane < 16:
            v = w
    elif CASE == 5:
        v = simd_shuffle(v, (lane + 1) % 32)    # a partial SIMD-group: lane 15 reads lane 16
    out[i] = v


@pytest.mark.parametrize("case, bad_lanes, tg", [(0, 8, 64), (1, 16, 64), (2, 0, 64), (3, 0, 64), (4, 0, 64),
                                                (5, 0, 64), (5, 1, 48)])
def test_shuffles_reading_inactive_lanes(case, bad_lanes, tg):
    x = RNG.standard_normal(96).astype(np.float32)
    errs, _ = outcome(lambda: divergent_shuffle(x, CASE=case, backend="sim", checked=True, grid=96, threadgroup=tg))
    if not bad_lanes:
        assert errs == []
        return
    f = errs[0]
    assert f.kind == "inactive lane read" and f.count == bad_lanes * (96 // 32 if tg == 64 else 2)
    assert "undefined on Metal" in str(f) and f.line is not None
    name = {0: "simd_shuffle_down", 1: "simd_broadcast", 5: "simd_shuffle"}[case]
    assert str(f).startswith(name)
