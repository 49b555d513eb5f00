"""Checked-mode semantics: an array passed as two arguments is one buffer; writes of the
same value by several threads are a warning, not an error; atomics into outputs without
``init_value``; SIMD shuffles reading inactive lanes."""
import warnings

import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench import cuda
from metalbench.dsl import (atomic_add, atomic_exchange, atomic_max, atomic_store, float32, simd_broadcast,
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
