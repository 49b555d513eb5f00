"""``cuda.vectorize`` / ``cuda.guvectorize``: the same programs under Numba (its CPU
ufuncs: the simulator has no ufunc API, and the element semantics are the same) and on
metalbench's simulator, plus plain tests with NumPy's answers."""
import math

import numpy as np
import pytest

from metalbench import cuda
from metalbench.cuda import float32, float64, int32, void
from metalbench.numba_compat.ufunc import GUFuncEngine, guvectorize, vectorize
from numba_oracle import Oracle, assert_same, run_metalbench

HEAD = "import math\nimport numpy as np\nfrom numba import vectorize, guvectorize\n"

PROGRAMS = {
    "typed_dispatch": HEAD + '''
@vectorize(["int32(int32, int32)", "float32(float32, float32)", "float64(float64, float64)"])
def muladd(a, b):
    return a * b + a
x = np.arange(-5, 6)
RESULT = {"i": muladd(x.astype(np.int32), x.astype(np.int32)),
          "f": muladd(x.astype(np.float32) / 3, x.astype(np.float32)),
          "d": muladd(x / 3.0, x / 7.0),
          "scalar_array": muladd(x.astype(np.float32), np.float32(0.25)),
          "scalars": muladd(1.5, 2.25)}
''',
    "branches_and_math": HEAD + '''
@vectorize(["float32(float32)", "float64(float64)"])
def sinc(x):
    if x == 0.0:
        return 1.0
    return math.sin(x * math.pi) / (math.pi * x)
x = np.linspace(-3, 3, 61)
RESULT = {"d": sinc(x), "f": sinc(x.astype(np.float32))}
''',
    "dynamic_types": HEAD + '''
@vectorize
def erf(x):
    return math.erf(x)
RESULT = {"f32": erf(np.linspace(-2, 2, 9).astype(np.float32)), "f64": erf(np.linspace(-3, 3, 7))}
''',
    "broadcast_nd": HEAD + '''
@vectorize(["float64(float64, float64)"])
def sub(a, b):
    return a - b
a = np.arange(24.0).reshape(4, 3, 2)
b = np.arange(6.0).reshape(3, 2).T.copy().T
c = np.arange(4.0).reshape(4, 1, 1)
RESULT = {"ab": sub(a, b), "ac": sub(a, c), "f_order": sub(np.asfortranarray(a), a[::-1])}
''',
    "gufunc_matmul": HEAD + '''
@guvectorize(["void(float32[:, :], float32[:, :], float32[:, :])"], "(m,n),(n,p)->(m,p)")
def matmul(A, B, C):
    m, n = A.shape
    n, p = B.shape
    for i in range(m):
        for j in range(p):
            C[i, j] = 0
            for k in range(n):
                C[i, j] += A[i, k] * B[k, j]
A = (np.arange(6 * 2 * 4) % 7).astype(np.float32).reshape(6, 2, 4)
B = (np.arange(4 * 5) % 5).astype(np.float32).reshape(4, 5)
RESULT = {"C": matmul(A, B)}
''',
    "gufunc_scalar_out": HEAD + '''
@guvectorize(["void(int32[:], int32, int32[:])"], "(n),()->()")
def dot_plus(x, c, out):
    t = 0
    for i in range(x.shape[0]):
        t += x[i] * x[i]
    out[0] = t + c
x = np.arange(20, dtype=np.int32).reshape(4, 5)
RESULT = {"r": dot_plus(x, 3)}
''',
}

ORACLE = Oracle(PROGRAMS)


@pytest.fixture(autouse=True)
def _sim():
    cuda.set_backend("sim")
    yield
    cuda.set_backend(None)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_against_numba(name):
    got = run_metalbench(PROGRAMS[name], name)
    want = ORACLE[name]
    assert_same(got, want, exact=False, rtol=2e-6)
    for k in want:
        assert np.asarray(got[k]).dtype == np.asarray(want[k]).dtype, k


SIGS = [int32(int32, int32), float32(float32, float32), float64(float64, float64)]


def test_dtypes_follow_the_signature():
    @vectorize(SIGS)
    def add(a, b):
        return a + b
    for t in (np.float64, np.float32, np.int32):
        d = (np.arange(1001) % 17).astype(t)
        r = add(d, d)
        assert r.dtype == t
        np.testing.assert_array_equal(r, d + d)
    assert add(1.25, 2.5) == 3.75
    assert add.__name__ == "add"


def test_no_matching_signature_is_numbas_type_error():
    @vectorize([float32(float32, float32)])
    def add(a, b):
        return a + b
    with pytest.raises(TypeError, match="No matching version"):
        add(np.ones(3, np.int64), np.ones(3, np.int64))


def test_out_and_device_arrays():
    @vectorize(SIGS)
    def add(a, b):
        return a + b
    A = np.arange(10, dtype=np.float32)
    out = np.empty_like(A)
    assert add(A, A, out=out) is out
    np.testing.assert_array_equal(out, 2 * A)
    dx = cuda.to_device(np.arange(10, dtype=np.int32).reshape(2, 5))
    add(dx, dx, out=dx)
    np.testing.assert_array_equal(dx.copy_to_host(), 2 * np.arange(10).reshape(2, 5))
    r = add(np.arange(4, dtype=np.int32), cuda.to_device(np.arange(4, dtype=np.int32)))
    assert cuda.is_cuda_array(r) and r.copy_to_host().tolist() == [0, 2, 4, 6]
    np.testing.assert_array_equal(add((1.0, 2.0), (3.0, 4.0)), [4.0, 6.0])


def test_reduce():
    @vectorize(SIGS)
    def add(a, b):
        return a + b
    for n in (1, 8, 100, 1025):
        x = np.arange(n, dtype=np.int32)
        r = add.reduce(x)
        assert r == x.sum() and r.dtype == np.int32
        assert add.reduce(cuda.to_device(x)) == x.sum()


def test_options():
    with pytest.raises(KeyError, match="Unrecognized options"):
        vectorize([float32(float32)], target="cuda", nonexistent=2)(lambda x: x)
    with pytest.warns(RuntimeWarning, match="nopython kwarg for cuda target is redundant"):
        vectorize([float32(float32)], target="cuda", nopython=True)
    with pytest.raises(TypeError, match="caching is not supported"):
        vectorize([float32(float32)], cache=True)


def test_vectorize_calls_device_functions():
    @cuda.jit(float32(float32, float32, float32), device=True)
    def fn(x, y, z):
        return x ** y / z

    def core(x, y, z):
        return fn(x, y, z)
    uf = vectorize([float32(float32, float32, float32)], target="cuda")(core)
    X, Y, Z = (np.linspace(0.1, 1, 50, dtype=np.float32) for _ in range(3))
    np.testing.assert_allclose(uf(X, Y, Z + 0.1), X ** Y / (Z + 0.1), rtol=1e-5)


def test_gufunc_outputs_positional_keyword_and_device():
    @guvectorize([void(float32[:], float32[:], float32[:])], "(n)->(n),()")
    def scale_and_sum(x, y, s):
        t = 0.0
        for i in range(x.shape[0]):
            y[i] = 2 * x[i]
            t += x[i]
        s[0] = t
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y, s = scale_and_sum(x)
    np.testing.assert_array_equal(y, 2 * x)
    np.testing.assert_array_equal(s, x.sum(1))
    y2, s2 = np.zeros_like(x), np.zeros(3, np.float32)
    scale_and_sum(x, y2, s2)
    np.testing.assert_array_equal(y2, 2 * x)
    dy, ds = scale_and_sum(cuda.to_device(x))
    np.testing.assert_array_equal(dy.copy_to_host(), 2 * x)
    with pytest.raises(TypeError, match="accepts 1 positional argument"):
        scale_and_sum(x, y2)


def test_gufunc_errors():
    with pytest.raises(TypeError, match="guvectorized functions cannot return values"):
        guvectorize([int32(int32[:], int32[:])], "(m)->(m)")(lambda x, y: None)

    with pytest.raises(Exception, match="used whole"):
        @guvectorize([void(float32[:], float32[:])], "(n)->()")
        def whole(x, r):
            r[0] = len(x) + helper(x)


def helper(x):      # pragma: no cover - never reached
    return 0


@pytest.mark.parametrize("sig,shapes,want", [
    ("(m,n),(n,p)->(m,p)", [(100, 4, 5), (1, 5, 7)], dict(ishapes=[(4, 5), (5, 7)], oshapes=[(4, 7)],
                                                          loopdims=(100,), pinned=[False, True])),
    ("(m,n),(n,p)->(m,p)", [(12, 34, 4, 5), (12, 34, 5, 7)], dict(loopdims=(12, 34), pinned=[False, False])),
    ("(m,n),(n,p)->(m,p)", [(4, 5), (5, 7)], dict(loopdims=(), pinned=[False, False])),
    ("(),()->()", [(5,), ()], dict(ishapes=[(), ()], oshapes=[()], loopdims=(5,), pinned=[False, True])),
])
def test_gufunc_schedule(sig, shapes, want):
    s = GUFuncEngine.from_signature(sig).schedule(shapes)
    for k, v in want.items():
        assert getattr(s, k) == v, k


def test_gufunc_schedule_errors():
    with pytest.raises(ValueError, match="mismatch"):
        GUFuncEngine.from_signature("(n),(n)->()").schedule([(3, 4), (3, 5)])
    with pytest.raises(NameError, match="undefined output symbols: q"):
        GUFuncEngine.from_signature("(n)->(q)")


def test_math_in_ufunc_matches_python():
    @vectorize([float64(float64)])
    def lg(x):
        return math.lgamma(x)
    x = np.array([0.5, 1.0, 2.0, 3.5, 10.0])
    np.testing.assert_allclose(lg(x), [math.lgamma(v) for v in x], rtol=1e-12)


def test_guvectorize_unsupported_options_are_listed():
    from metalbench.cuda import guvectorize, void
    with pytest.raises(TypeError, match="The following target options are not supported: 'what1', 'ever2'"):
        guvectorize([void(float32[:], float32[:])], "(x)->(x)", target="cuda", what1=True, ever2=False)(
            lambda a, b: None)


def test_gufunc_called_from_a_kernel_is_an_error_at_its_line():
    from metalbench import cuda
    from metalbench.cuda import guvectorize, void, int32
    from metalbench.errors import MetalbenchError

    @guvectorize([void(int32[:], int32[:])], "(n)->(n)", target="cuda")
    def copy_n(a, b):
        for i in range(a.shape[0]):
            b[i] = a[i]

    @cuda.jit
    def k(a, b):
        return copy_n(a, b)

    with pytest.raises(MetalbenchError, match="Untyped global name 'copy_n'") as e:
        k.configure(backend="sim")[1, 1](np.zeros(4, np.int32), np.zeros(4, np.int32))
    assert "return copy_n(a, b)" in str(e.value)
