"""datetime64/timedelta64 arrays and scalars in Numba kernels (semantics/datetimes.py,
numba_compat/datetimearg.py): NumPy's arithmetic and comparisons, units combined in the
finer one, NaT, checked against Numba's simulator; what is not supported fails at its line."""
import linecache
import os

import numpy as np
import pytest

from metalbench import cuda
from metalbench.errors import KernelTypeError

from numba_oracle import Oracle, assert_same, run_metalbench


@pytest.fixture(autouse=True)
def _backend():
    cuda.set_backend(os.environ.get("METALBENCH_TEST_BACKEND", "sim"))
    yield
    cuda.set_backend(None)


ARITH = '''
import numpy as np
from numba import cuda

@cuda.jit
def k(d, h, td, target, step, out_td, out_h, out_d, cmp):
    i = cuda.grid(1)
    if i < d.size:
        out_td[i, 0] = d[i] - d[0]
        out_td[i, 1] = -(td[i] * 3) + td[i]
        out_h[i, 0] = d[i] - h[i]
        out_h[i, 1] = (h[i] + td[i]) - h[0]
        out_h[i, 2] = td[i]
        out_d[i, 0] = d[i] - step
        out_d[i, 1] = step * 2 + d[i]
        out_td[i, 2] = td[i] - step
        cmp[i, 0] = d[i] == target
        cmp[i, 1] = d[i] != target
        cmp[i, 2] = d[i] < h[i]
        cmp[i, 3] = d[i] <= h[i]
        cmp[i, 4] = td[i] > step
        cmp[i, 5] = td[i] >= step
        cmp[i, 6] = d[i] != d[i]
        cmp[i, 7] = d[i] == d[i]

rng = np.random.default_rng(5)
n = 40
d = np.datetime64("2020-01-01") + rng.integers(-400, 400, n).astype("timedelta64[D]")
h = np.datetime64("2020-01-01T00", "h") + rng.integers(-9000, 9000, n).astype("timedelta64[h]")
td = rng.integers(-50, 50, n).astype("timedelta64[D]")
h[3] = d[3]
d[5] = np.datetime64("NaT")
h[7] = np.datetime64("NaT")
td[9] = np.timedelta64("NaT")
d[11] = d[12]
target = d[12]
step = np.timedelta64(3, "D")
out_td = np.zeros((n, 3), "timedelta64[D]")
out_h2 = np.zeros((n, 3), "timedelta64[h]")
out_d = np.zeros((n, 2), "datetime64[D]")
cmp = np.zeros((n, 8), np.bool_)
k[2, 32](d, h, td, target, step, out_td, out_h2, out_d, cmp)
RESULT = {"out_td": out_td.view(np.int64), "out_h": out_h2.view(np.int64), "out_d": out_d.view(np.int64), "cmp": cmp}
'''

ORACLE = Oracle({"arith": ARITH})


def test_datetime_arithmetic_matches_numba_simulator():
    assert_same(run_metalbench(ARITH), ORACLE["arith"])


def test_datetime_arithmetic_matches_numpy():
    """The same program's results written out from NumPy (also without the Numba venv)."""
    got = run_metalbench(ARITH)
    rng = np.random.default_rng(5)
    n = 40
    d = np.datetime64("2020-01-01") + rng.integers(-400, 400, n).astype("timedelta64[D]")
    h = np.datetime64("2020-01-01T00", "h") + rng.integers(-9000, 9000, n).astype("timedelta64[h]")
    td = rng.integers(-50, 50, n).astype("timedelta64[D]")
    h[3] = d[3]
    d[5] = np.datetime64("NaT")
    h[7] = np.datetime64("NaT")
    td[9] = np.timedelta64("NaT")
    d[11] = d[12]
    step = np.timedelta64(3, "D")
    want_td = np.stack([d - d[0], -(td * 3) + td, td - step], 1)
    want_h = np.stack([d - h, (h + td) - h[0], td.astype("timedelta64[h]")], 1)
    want_d = np.stack([d - step, step * 2 + d], 1)
    cmp = np.stack([d == d[12], d != d[12], d < h, d <= h, td > step, td >= step, d != d, d == d], 1)
    np.testing.assert_array_equal(got["out_td"], want_td.view(np.int64))
    np.testing.assert_array_equal(got["out_h"], want_h.view(np.int64))
    np.testing.assert_array_equal(got["out_d"], want_d.view(np.int64))
    np.testing.assert_array_equal(got["cmp"], cmp)
    assert cmp[5].tolist() == [False, True, False, False, False, False, True, False]     # NaT


def test_in_place_on_the_callers_array():
    @cuda.jit
    def shift(d, by):
        i = cuda.grid(1)
        if i < d.size:
            d[i] = d[i] + by

    d = np.arange("2024-02-25", "2024-03-05", dtype="datetime64[D]")
    want = d + np.timedelta64(2, "D")
    shift[1, 16](d, np.timedelta64(2, "D"))
    np.testing.assert_array_equal(d, want)


@pytest.mark.parametrize("body, msg", [
    ("x = a[i]\n    f[i] = 1", "cannot be kept in a local variable"),
    ("a[i] = a[i] + a[i]", r"datetime64\[D\] \+ datetime64\[D\] is not defined"),
    ("f[i] = a[i] * 2", "is not supported"),
    ("f[i] = a[i]", r"cannot convert datetime64\[D\] to float64"),
    ("a[i] = 5", r"cannot convert int64 to datetime64\[D\]"),
    ("a[i] = a[i] + td[i] * 1.5", "is not supported"),
    ("td[i] = a[i] - m[i]", "no common unit"),
    ("tdd[i] = td[i]", "would lose precision"),
])
def test_unsupported_datetime_uses_fail_at_their_line(body, msg):
    src = f"def k(a, f, td, m, tdd):\n    i = cuda.grid(1)\n    {body}\n"
    fn = f"<dt {body}>"
    linecache.cache[fn] = (len(src), None, src.splitlines(True), fn)
    ns = {"cuda": cuda}
    exec(compile(src, fn, "exec"), ns)
    a = np.arange("2005-02", "2005-03", dtype="datetime64[D]")
    m = np.arange("2005-02", "2005-03", dtype="datetime64[M]")[:1].repeat(a.size)
    with pytest.raises(KernelTypeError, match=msg) as e:
        cuda.jit(ns["k"])[1, a.size](a, np.zeros(a.size), a - a[0], m, np.zeros(a.size, "timedelta64[W]"))
    assert body.splitlines()[0].strip() in str(e.value)
