"""Python constructs in kernels: for loops over enumerate/zip/arrays/tuples and stepped
ranges (negative, run-time, over unsigned bounds), array slices and views (steps, rows,
columns, reshape), views and shapes in device functions. Numba programs are checked
against values written out and, with the Numba venv, Numba's simulator; the DSL cases
against NumPy (and the printers against the simulator where the range fix matters)."""
import os

import numpy as np
import pytest

import metalbench as mb
from metalbench import cuda
from metalbench.dsl import *  # noqa: F401,F403

from numba_oracle import Oracle, assert_same, run_metalbench

LOOPS = '''
import numpy as np
from numba import cuda

@cuda.jit
def k(r, a, b, n, step):
    s = 0
    for i in range(n - 1, -1, -1):      # n is uint32: counts down to 0
        s = s * 10 + i
    r[0] = s
    c = 0
    for i in range(10, 0, step):        # a run-time negative step
        c += i
    r[1] = c
    c = 0
    for i in range(1, 9, -step):        # a run-time positive step
        c += i
    r[2] = c
    t = 0.0
    for i, x in enumerate(a):
        t += i * x
    r[3] = t
    u = 0.0
    for x, y in zip(a, b):              # the shorter one
        u += x * y
    r[4] = u
    v = 0
    for q in (1, 2, 3):
        v += q
    r[5] = v
    w = 0.0
    for q in (1, 2.5):                  # mixed types: unrolled
        w += q
    r[6] = w
    e = 0
    for i, (x, y) in enumerate(zip(a, b), 10):
        e += i
    r[7] = e
    z = 0
    for i in range(5, 5):
        z += 1
    for i in range(3, 0, 2):
        z += 1
    r[8] = z

a = np.arange(5, dtype=np.float64)
b = np.ones(4)
r = np.zeros(9)
k[1, 1](r, a, b, np.uint32(3), -3)
RESULT = {"r": r}
'''

VIEWS = '''
import numpy as np
from numba import cuda

@cuda.jit(device=True)
def dsum(x):
    s = 0.0
    for i in range(len(x)):
        s += x[i]
    return s

@cuda.jit(device=True)
def msum(m):
    s = 0.0
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            s += m[i, j]
    return s

@cuda.jit
def k(r, a, m):
    tail = a[2:]
    r[0] = tail[0] + len(tail)
    r[1] = a[-1]
    sl = a[1:4:2]
    r[2] = sl[1] + sl.size
    r[3] = dsum(a[::2])
    r[4] = dsum(m[1])
    r[5] = msum(m[:, 1:])
    col = m[:, 2]
    r[6] = col[0] + col[2] + col.shape[0]
    loc = cuda.local.array(6, np.float64)
    for i in range(6):
        loc[i] = i
    m2 = loc.reshape((2, 3))
    r[7] = m2[1, 2] + m2.shape[0]
    row = m2[1]
    r[8] = row[0]
    r[9] = dsum(a[10:])                 # clipped: empty
    r[10] = len(a[-2:])
    a[1:3][0] = 100.0                   # writes through a view
    r[11] = a[1]

a = np.arange(5, dtype=np.float64)
m = np.arange(12.0).reshape(3, 4)
r = np.zeros(12)
k[1, 1](r, a, m)
RESULT = {"r": r, "a": a}
'''

ORACLE = Oracle({"loops": LOOPS, "views": VIEWS})
WANT = {"loops": {"r": [210, 22, 12, 30, 6, 6, 3.5, 10 + 11 + 12 + 13, 0]},
        "views": {"r": [5, 4, 5, 6, 22, 54, 2 + 10 + 3, 7, 3, 0, 2, 100], "a": [0, 100, 2, 3, 4]}}


@pytest.fixture(autouse=True)
def _backend():
    cuda.set_backend(os.environ.get("METALBENCH_TEST_BACKEND", "sim"))
    yield
    cuda.set_backend(None)


@pytest.mark.parametrize("name", ["loops", "views"])
def test_written_values(name):
    got = run_metalbench({"loops": LOOPS, "views": VIEWS}[name], name)
    assert_same(got, {k: np.array(v, np.float64) for k, v in WANT[name].items()})


@pytest.mark.parametrize("name", ["loops", "views"])
def test_against_numba_simulator(name):
    got = run_metalbench({"loops": LOOPS, "views": VIEWS}[name], name)
    assert_same(got, ORACLE[name])


# ----------------------------------------------------------------------------- the DSL (issue 19)

@mb.kernel
def countdown(n, step, out: mb.Out(shape=(4,), dtype=mb.int32)):
    s = 0
    for i in range(n - 1, -1, -1):              # n is a uint: the loop still runs n times
        s = s * 10 + int32(i)
    out[0] = s
    c = 0
    for i in range(10, 0, step):                # a run-time step, either sign
        c += i
    out[1] = c
    d = 0
    for i in range(n, 0, -2):
        d += 1
    out[2] = d
    e = 0
    for i in range(0, 9, -step):
        e += i
    out[3] = e


@pytest.mark.parametrize("backend", ["sim"])
def test_dsl_ranges_with_negative_and_runtime_steps(backend):
    out = np.asarray(countdown(np.uint32(4), -3, grid=1, backend=backend))
    assert out.tolist() == [3210, 22, 2, 0 + 3 + 6]


def test_dsl_range_printers_count_down_in_a_signed_type():
    src = countdown.source(np.uint32(4), -3, backend="cuda")
    assert "for (int64_t" in src or "for (long" in src or "for (int " in src
    msl = countdown.source(np.uint32(4), -3, backend="metal")
    assert "uint i" not in msl.split("// body")[-1] if "// body" in msl else True


def test_dsl_zip_enumerate_over_arrays():
    @mb.kernel
    def k(x, y, out: mb.Out(shape=(2,), dtype=mb.float32)):
        s = 0.0
        for i, v in enumerate(x):
            s += float32(i) * v
        out[0] = s
        t = 0.0
        for a, b in zip(x, y):
            t += a * b
        out[1] = t
    x = np.arange(1, 6, dtype=np.float32)
    y = np.full(3, 2.0, np.float32)
    out = np.asarray(k(x, y, grid=1, backend="sim"))
    np.testing.assert_array_equal(out, [float(np.dot(np.arange(5), x)), 2.0 * (1 + 2 + 3)])


def test_reversed_slices():
    @cuda.jit
    def rev(r, a):
        b = a[::-1]
        r[0] = b[0]
        r[1] = len(b)
    r = np.zeros(2)
    rev[1, 1](r, np.arange(3.0))
    assert list(r) == [2.0, 3.0]
