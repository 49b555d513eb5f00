"""Tuples as values (compile-time aggregates of IR values, metalbench.semantics.tuples):
in Numba kernels and in the DSL. Values written out are Python's; the Numba programs
also run on Numba's simulator when the Numba venv exists."""
import os
from collections import namedtuple

import numpy as np
import pytest

import metalbench as mb
from metalbench import cuda
from metalbench.dsl import *  # noqa: F401,F403

from numba_oracle import Oracle, assert_same, run_metalbench


@pytest.fixture(autouse=True)
def _backend():
    cuda.set_backend(os.environ.get("METALBENCH_TEST_BACKEND", "sim"))
    yield
    cuda.set_backend(None)


GRID2 = '''
import numpy as np
from numba import cuda

@cuda.jit
def k(a, hits):
    ij = cuda.grid(2)
    if ij[0] < a.shape[0] and ij[1] < a.shape[1]:
        a[ij] = ij[0] * 100 + ij[1]
        cuda.atomic.add(hits, (ij[0] % 2, ij[1] % 3), 1)
    x, y = cuda.grid(2)
    if x == 0 and y == 0:
        w, h = cuda.gridsize(2)
        hits[1, 2] += w * 1000 + h * 100000

a = np.zeros((5, 7), np.int64)
hits = np.zeros((2, 3), np.int64)
k[(2, 3), (4, 4)](a, hits)
RESULT = {"a": a, "hits": hits}
'''

DEVICE_TUPLES = '''
import numpy as np
from numba import cuda

@cuda.jit(device=True)
def divmod2(a, b):
    return a // b, a % b

@cuda.jit(device=True)
def rotate(t):
    return t[1], t[2], t[0]

@cuda.jit(device=True)
def total(t):
    s = 0
    for k in range(len(t)):
        s += t[k]
    return s

@cuda.jit
def k(r, x, pair):
    q, m = divmod2(x[0], 4)
    r[0] = q
    r[1] = m
    t = (x[1], x[2], x[3])
    t = rotate(t)
    r[2] = t[0]
    r[3] = total(t)
    a, b = pair
    a, b = b, a
    r[4] = a - b
    nested = ((1, 2), (3, (4, 5)))
    r[5] = nested[1][1][0]
    r[6] = pair[0] * pair[1]

r = np.zeros(7, np.int64)
k[1, 1](r, np.array([-17, 10, 20, 30], np.int64), (3, 8))
RESULT = {"r": r}
'''

ORACLE = Oracle({"grid2": GRID2, "device_tuples": DEVICE_TUPLES})


def _grid2_want():
    a = np.add.outer(np.arange(5) * 100, np.arange(7))
    hits = np.zeros((2, 3), np.int64)
    for i in range(5):
        for j in range(7):
            hits[i % 2, j % 3] += 1
    hits[1, 2] += 8 * 1000 + 12 * 100000
    return {"a": a, "hits": hits}


def test_grid2_tuple_indexes_arrays_and_atomics():
    got = run_metalbench(GRID2, "grid2")
    assert_same(got, _grid2_want())


def test_device_function_tuples_and_tuple_arguments():
    got = run_metalbench(DEVICE_TUPLES, "device_tuples")
    assert_same(got, {"r": np.array([-5, 3, 20, 60, 5, 4, 24])})


@pytest.mark.parametrize("name", ["grid2", "device_tuples"])
def test_against_numba_simulator(name):
    got = run_metalbench({"grid2": GRID2, "device_tuples": DEVICE_TUPLES}[name], name)
    assert_same(got, ORACLE[name])


Pair = namedtuple("Pair", ["lo", "hi"])


@cuda.jit(device=True)
def widen(p, by):
    return Pair(p.lo - by, hi=p.hi + by)


@cuda.jit
def uses_namedtuples(r, p, scale):
    w = widen(p, 1.5)
    r[0] = w.lo
    r[1] = w[1] * scale[0] + scale[1]
    r[2] = len(w)


def test_namedtuples_arguments_fields_and_construction():
    r = np.zeros(3)
    uses_namedtuples[1, 1](r, Pair(2.0, 5.0), (2, 0.25))
    np.testing.assert_array_equal(r, [0.5, 13.25, 2])


def test_tuple_errors_name_the_line():
    @cuda.jit
    def bad(r):
        t = (1, 2)
        r[0] = t + 1
    with pytest.raises(mb.MetalbenchError, match="Tuple.*not a number") as e:
        bad[1, 1](np.zeros(1))
    assert "r[0] = t + 1" in str(e.value)

    @cuda.jit
    def bad2(r):
        t = (1, 2)
        x, y, z = t
    with pytest.raises(mb.MetalbenchError, match="unpack a tuple of 2 items into 3"):
        bad2[1, 1](np.zeros(1))


# ----------------------------------------------------------------------------- the DSL

@mb.func
def minmax(a, b):
    return min(a, b), max(a, b)


@mb.kernel
def dsl_tuples(x, out: mb.Out):
    i = thread_position_in_grid.x
    if i + 1 < x.size:
        lo, hi = minmax(x[i], x[i + 1])
        t = (lo, hi, hi - lo)
        out[i] = t[2] + t[0] * 0.0
    else:
        out[i] = 0.0


def test_dsl_tuples():
    x = np.random.default_rng(3).standard_normal(64).astype(np.float32)
    out = np.asarray(dsl_tuples(x, grid=64, threadgroup=32, backend="sim"))
    want = np.append(np.abs(np.diff(x)), 0.0).astype(np.float32)
    np.testing.assert_allclose(out, want, rtol=1e-6)
