"""NumPy ufuncs called inside Numba kernels (frontend/python/npufuncs.py): on arrays with an
output (``np.sin(x, out)``, broadcasting, F-order and 3-D arrays) and on scalars
(comparisons including int64 against uint64, logical and bitwise ufuncs, deg2rad & co.,
maximum/minimum with NaN). Each program checks itself against NumPy (``want_*``) and,
where the Numba venv exists, against Numba's own simulator."""
import numpy as np
import pytest

from metalbench.errors import MetalbenchError
from numba_oracle import Oracle, assert_same, run_metalbench

PROGRAMS = {}

PROGRAMS["array_forms"] = '''
import numpy as np
from numba import cuda

@cuda.jit
def unary(x, r):
    np.sin(x, r)

@cuda.jit
def binary(a, b, r):
    np.arctan2(a, b, out=r)

@cuda.jit
def hyp(a, b, r):
    np.hypot(a, b, r)

rng = np.random.default_rng(7)
out = {}
for shape in [(7,), (3, 4), (2, 3, 4)]:
    for dt in (np.float32, np.float64):
        x = rng.standard_normal(shape).astype(dt)
        r = np.zeros(shape, dt)
        unary[1, 1](x, r)
        tag = f"{len(shape)}{np.dtype(dt).char}"
        out["sin" + tag] = r
        out["want_sin" + tag] = np.sin(x)
xf = np.asfortranarray(rng.standard_normal((4, 5)))
rf = np.zeros((4, 5))
unary[1, 1](xf, rf)
out["sinF"], out["want_sinF"] = rf, np.sin(xf)
a = rng.standard_normal((3, 4)); b = rng.standard_normal(4); r = np.zeros((3, 4))
binary[1, 1](a, b, r)                  # b broadcasts along the rows
out["atan2_bc"], out["want_atan2_bc"] = r, np.arctan2(a, b)
c = rng.standard_normal((3, 1)); r2 = np.zeros((3, 4))
binary[1, 1](c, b, r2)                 # (3, 1) against (4,): both repeat
out["atan2_bc2"], out["want_atan2_bc2"] = r2, np.arctan2(c, b)
r3 = np.zeros(1)
hyp[1, 1](np.float64(3.0), np.float64(4.0), r3)   # scalars into a one-element output
out["hyp"], out["want_hyp"] = r3, np.hypot(np.float64(3.0), np.float64(4.0)).reshape(1)
RESULT = out
'''

PROGRAMS["compare_logical_bitwise"] = '''
import numpy as np
from numba import cuda

def make(uf):
    @cuda.jit
    def k(a, b, r):
        i = cuda.grid(1)
        if i < r.size:
            r[i] = uf(a[i], b[i])
    return k

out = {}
ints = [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64]
rng = np.random.default_rng(3)
for uf in (np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal,
           np.logical_and, np.logical_or, np.logical_xor):
    k = make(uf)
    for ta, tb in [(np.int64, np.uint64), (np.uint64, np.int64), (np.float32, np.int32), (np.int8, np.uint16)]:
        a = np.array([-1, 0, 1, 5, 2**31 - 1, -7], np.int64).astype(ta)
        b = np.array([0, 0, 1, 4, 2**31 - 1, 9], np.int64).astype(tb)
        r = np.zeros(6, np.bool_)
        k[1, 8](a, b, r)
        name = f"{uf.__name__}_{np.dtype(ta).char}{np.dtype(tb).char}"
        out[name], out["want_" + name] = r, uf(a, b)
for uf in (np.bitwise_and, np.bitwise_or, np.bitwise_xor):
    k = make(uf)
    for t in ints:
        a = rng.integers(0, 100, 8).astype(t); b = rng.integers(0, 100, 8).astype(t)
        r = np.zeros(8, t)
        k[1, 8](a, b, r)
        name = f"{uf.__name__}_{np.dtype(t).char}"
        out[name], out["want_" + name] = r, uf(a, b)
RESULT = out
'''

PROGRAMS["unary_scalars"] = '''
import numpy as np
from numba import cuda

def make(uf):
    @cuda.jit
    def k(a, r):
        i = cuda.grid(1)
        if i < r.size:
            r[i] = uf(a[i])
    return k

out = {}
for uf in (np.invert, np.bitwise_not, np.logical_not, np.negative):
    k = make(uf)
    for t in (np.bool_, np.int8, np.uint16, np.int32, np.uint64):
        if uf is np.negative and t is np.bool_:
            continue
        a = np.array([0, 1, 1, 0, 1, 0, 0, 1], t) if t is np.bool_ else np.arange(8).astype(t) * 3
        r = np.zeros(8, t)
        k[1, 8](a, r)
        name = f"{uf.__name__}_{np.dtype(t).char}"
        out[name], out["want_" + name] = r, uf(a).astype(t)
for uf in (np.deg2rad, np.rad2deg, np.degrees, np.radians, np.square):
    k = make(uf)
    for t in (np.float32, np.float64):
        a = np.linspace(-400, 400, 9).astype(t)
        r = np.zeros(9, t)
        k[1, 16](a, r)
        name = f"{uf.__name__}_{np.dtype(t).char}"
        out[name], out["want_" + name] = r, uf(a)
RESULT = out
'''

PROGRAMS["maximum_minimum_nan"] = '''
import numpy as np
from numba import cuda

@cuda.jit
def k(a, b, mx, mn):
    np.maximum(a, b, mx)
    np.minimum(a, b, mn)

a = np.array([1.0, np.nan, 3.0, np.nan, -0.0, 2.0])
b = np.array([np.nan, 2.0, 1.0, np.nan, 0.0, 2.0])
mx, mn = np.zeros(6), np.zeros(6)
k[1, 1](a, b, mx, mn)
ai, bi = np.array([3, -4, 5], np.int32), np.array([-3, 4, 5], np.int32)
mxi, mni = np.zeros(3, np.int32), np.zeros(3, np.int32)
k[1, 1](ai, bi, mxi, mni)
RESULT = {"mx": mx, "mn": mn, "want_mx": np.maximum(a, b), "want_mn": np.minimum(a, b),
          "mxi": mxi, "mni": mni, "want_mxi": np.maximum(ai, bi), "want_mni": np.minimum(ai, bi)}
'''

ORACLE = Oracle(PROGRAMS)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_against_numpy(name):
    got = run_metalbench(PROGRAMS[name], name)
    wants = [k for k in got if k.startswith("want_")]
    assert wants
    for k in wants:
        g, w = got[k[5:]], got[k]
        assert g.dtype == w.dtype or w.dtype.kind == "f", (k, g.dtype, w.dtype)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=0, err_msg=f"{name}: {k[5:]}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{name}: {k[5:]}")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_against_numba_simulator(name):
    got = run_metalbench(PROGRAMS[name], name)
    want = ORACLE[name]
    assert_same({k: v for k, v in got.items() if not k.startswith("want_")},
                {k: v for k, v in want.items() if not k.startswith("want_")}, exact=False)


@pytest.mark.parametrize("body, match", [
    ("np.sin(x)", "cannot allocate"),
    ("y = np.sin(x, r)", "statement"),
    ("np.sin(x, r, where=True)", "where="),
    ("np.modf(x, r, r)", "one output"),
])
def test_unsupported_forms_are_errors_at_their_line(body, match):
    from metalbench import cuda
    src = f"import numpy as np\nfrom metalbench import cuda\n@cuda.jit\ndef k(x, r):\n    {body}\n"
    import runpy, tempfile, os
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "prog.py")
        open(p, "w").write(src + "k.configure(backend='sim')[1, 1](np.ones(3), np.zeros(3))\n")
        with pytest.raises(MetalbenchError, match=match) as e:
            runpy.run_path(p)
    assert "line 5" in str(e.value), str(e.value)
