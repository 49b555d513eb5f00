"""Whole-array reductions in Numba kernels (``a.sum()``, ``np.nanmax(a)``, ...), checked
against Numba's simulator where NumPy and Numba's compiled loops agree (small float64
arrays, integers), and against Numba's own algorithm -- one accumulator, C order -- where
they do not (NumPy sums long float arrays pairwise; Numba's CUDA target does not)."""
import numpy as np
import pytest

from metalbench import cuda
from metalbench.cuda.misc.special import literal_unroll
from metalbench.errors import KernelTypeError
from numba_oracle import Oracle, assert_same, program_registry, run_metalbench

PROGRAMS, EXPECTED, program = program_registry()

NAMES = ["sum", "prod", "min", "max", "mean", "var", "std", "all", "any", "argmin", "argmax"]

program("methods_1d", {"f": [2.25, -0.0, -2.0, 2.0, 0.45, 1.9600000000000002, 1.4000000000000001, 0.0, 1.0, 2.0, 4.0],
                       "g": [np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, 1.0, 1.0, 1.0, 1.0]})("""
import numpy as np
from numba import cuda

@cuda.jit
def k(a, b, f, g):
    f[0] = a.sum(); f[1] = a.prod(); f[2] = a.min(); f[3] = a.max(); f[4] = a.mean()
    f[5] = a.var(); f[6] = a.std(); f[7] = a.all(); f[8] = a.any(); f[9] = a.argmin(); f[10] = a.argmax()
    g[0] = b.sum(); g[1] = b.prod(); g[2] = b.min(); g[3] = b.max(); g[4] = b.mean()
    g[5] = b.var(); g[6] = b.std(); g[7] = b.all(); g[8] = b.any(); g[9] = b.argmin(); g[10] = b.argmax()

a = np.array([0.75, 1.5, -2.0, 0.0, 2.0])
b = np.array([1.0, np.nan, -3.0, np.inf])
f = np.zeros(11); g = np.zeros(11)
k[1, 1](a, b, f, g)
RESULT = {"f": f, "g": g}
""")

program("nan_functions", {"r": [0.0, 0.0, -1.5, 1.5, 0.0, 1.5, 1.224744871391589, 3.0]})("""
import numpy as np
from numba import cuda

@cuda.jit
def k(a, r):
    r[0] = np.nansum(a); r[1] = np.nanprod(a); r[2] = np.nanmin(a); r[3] = np.nanmax(a)
    r[4] = np.nanmean(a); r[5] = np.nanvar(a); r[6] = np.nanstd(a); r[7] = np.count_nonzero(a)

a = np.array([[np.nan, 1.5, -1.5], [2.0, np.nan, -0.0]])[:, ::-1]
r = np.zeros(8)
k[1, 1](a[:, :2].copy(), r)
RESULT = {"r": r}
""")

program("integers", {"s": [7, 5, -4, 5, 0, 1, 5], "u": [260, 255, 0, 2, 0, 0, 1]})("""
import numpy as np
from numba import cuda

@cuda.jit
def k(a, b, s, u):
    s[0] = a.sum(); s[1] = a.max(); s[2] = a.min(); s[3] = np.count_nonzero(a)
    s[4] = np.all(a); s[5] = np.any(a); s[6] = a.argmax()
    u[0] = b.sum(); u[1] = b.max(); u[2] = b.min(); u[3] = np.count_nonzero(b)
    u[4] = b.all(); u[5] = b.argmin(); u[6] = b.argmax()

a = np.array([[3, -4, 0], [2, 1, 5]], dtype=np.int32)
b = np.array([0, 255, 5], dtype=np.uint8)
s = np.zeros(7, np.int64); u = np.zeros(7, np.int64)
k[1, 1](a, b, s, u)
RESULT = {"s": s, "u": u}
""")

program("captured_and_unrolled", {"r": [6.0, 0.0, 1.0, 2.0, 0.0]})("""
import numpy as np
from numba import cuda
from numba import literal_unroll

cases = (np.float64([1.0, 2.0, 3.0]), np.float64([]), np.array(1.0), np.int64([[0, 3], [4, 0]]),
         np.zeros((2, 0)))

@cuda.jit
def k(r):
    i = 0
    for c in literal_unroll(cases):
        r[i] = np.count_nonzero(c) if i != 0 else c.sum()
        i += 1

r = np.zeros(5)
k[1, 1](r)
RESULT = {"r": r}
""")

ORACLE = Oracle(PROGRAMS)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_reductions_against_numba_simulator(name):
    got = run_metalbench(PROGRAMS[name], name)
    assert_same(got, {k: np.asarray(v) for k, v in EXPECTED[name].items()})
    assert_same(got, ORACLE[name])


# -- Numba's algorithm, where NumPy's differs ------------------------------------------------
def _numba_sum(a, acc):
    c = acc.type(0)
    for v in a.reshape(-1):
        c = acc.type(c + acc.type(v))
    return c


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", range(3))
def test_long_float_sums_add_in_order_in_the_element_type(dtype, seed):
    """Numba's sum/mean/var loop with one accumulator of the element type (NumPy adds
    pairwise); mean and var divide in float64, as Numba types ``c / a.size``."""
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((37, 5)) * 10.0 ** rng.integers(-3, 4, (37, 5))).astype(dtype)

    @cuda.jit
    def k(a, out):
        out[0] = a.sum()
        out[1] = a.mean()
        out[2] = a.var()
        out[3] = np.std(a)
        out[4] = a[3:, ::2].sum()

    out = np.zeros(5)
    cuda.set_backend("sim")
    try:
        k[1, 1](a, out)
    finally:
        cuda.set_backend(None)
    s = _numba_sum(a, np.dtype(dtype))
    mean = np.float64(s) / np.float64(a.size)
    d = a.reshape(-1).astype(np.float64) - mean
    ssd = np.float64(0)
    for x in d:
        ssd = ssd + x * x
    var = ssd / a.size
    want = [s, mean, var, np.sqrt(var), _numba_sum(a[3:, ::2], np.dtype(dtype))]
    np.testing.assert_array_equal(out, np.array(want, dtype=np.float64))


def test_float32_prod_and_integer_sums_keep_numba_types():
    """prod of float32 multiplies in float32; an int8 sum is an int64 sum (no wrap)."""
    a = np.array([1.1, 3.3, 7.7, 0.9], np.float32)
    b = np.array([100, 100, 100], np.int8)

    @cuda.jit
    def k(a, b, f, i):
        f[0] = a.prod()
        i[0] = b.sum()
        i[1] = np.nansum(b)

    f, i = np.zeros(1), np.zeros(2, np.int64)
    cuda.set_backend("sim")
    try:
        k[1, 1](a, b, f, i)
    finally:
        cuda.set_backend(None)
    want = np.float32(1)
    for x in a:
        want = np.float32(want * x)
    assert f[0] == np.float64(want)
    assert i.tolist() == [300, 300]


# -- errors ----------------------------------------------------------------------------------
def test_min_of_an_empty_constant_array_is_an_error_at_its_line():
    empty = np.zeros(0)

    @cuda.jit
    def k(r):
        r[0] = empty.min()

    with pytest.raises(KernelTypeError, match="zero-size array to reduction operation minimum") as e:
        k[1, 1](np.zeros(1))
    assert "r[0] = empty.min()" in str(e.value)


def test_axis_is_an_error_naming_it():
    @cuda.jit
    def k(a, r):
        r[0] = np.sum(a, axis=0)

    with pytest.raises(KernelTypeError, match="axis=") as e:
        k[1, 1](np.zeros((2, 2)), np.zeros(1))
    assert "np.sum(a, axis=0)" in str(e.value)


def test_literal_unroll_is_the_identity_outside_kernels():
    assert literal_unroll((1, 2.0)) == (1, 2.0)


def test_reductions_compile_for_cuda():
    """The loops print as CUDA C++ that NVRTC compiles (views, captured arrays, float64)."""
    import nvrtc
    from metalbench.codegen import cuda as cuda_codegen
    nv = nvrtc.find()
    if nv is None:
        pytest.skip("NVRTC not installed (tests/nvrtc.py says how)")
    table = np.array([[1.0, -2.0], [np.nan, 4.0]])

    @cuda.jit
    def k(a, b, r):
        r[0] = a.sum() + a[1:, ::2].mean() + np.nanstd(a) + table.max() + np.argmin(b)
        r[1] = np.count_nonzero(b) + b.all() + np.nanprod(b) + b.var()

    sp = k.specialization_of(np.zeros((3, 4), np.float32), np.arange(5, dtype=np.int32), np.zeros(2))
    src = cuda_codegen.full_source(sp.rendered("cuda", False), None)
    ok, log = nv.compile(src)
    assert ok, f"{log}\n{src}"
