"""Complex numbers as values in the Numba layer (issue 14): complex64/complex128 array
elements, complex scalar arguments, literals, arithmetic (+ - * / **, unary -, abs,
conjugate, == !=), conversions, device functions taking and returning complex numbers,
local arrays of them, and the ``cmath`` functions. Each program runs on metalbench and on
Numba's own simulator (tests/numba_oracle.py), compared part by part: exactly (NaN-aware,
signed zeros included) for arithmetic, within a few ulps for ``cmath`` and ``**``, as
numba-cuda's own tests compare with Python's ``cmath``. The cmath library is also checked
on the host against Python's ``cmath`` (hypothesis), and its printed CUDA compiles (NVRTC).
"""
import cmath
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from metalbench.errors import KernelTypeError
from numba_oracle import Oracle, run_metalbench

_DATA = '''
import cmath, math
import numpy as np
from numba import cuda
edge = [0.0, -0.0, 1.0, -1.0, 1.5, -3.5, math.pi, -math.pi, math.inf, -math.inf, math.nan]
def data(dt, seed=3, n=64):
    rng = np.random.default_rng(seed)
    z = (rng.standard_normal(n) * 3 + 1j * rng.standard_normal(n) * 3).astype(dt)
    grid = [complex(x, y) for x, y in __import__("itertools").product(edge, edge)]
    return np.concatenate([z, np.array(grid, dt)])
def split(out, tag, z):
    z = np.asarray(z)
    out[tag + "_re"], out[tag + "_im"] = z.real.copy(), z.imag.copy()
'''

PROGRAMS = {
    "arithmetic": _DATA + '''
@cuda.jit
def arith(a, b, add, sub, mul, div, neg, conj, absz, eq, ne, mix):
    i = cuda.grid(1)
    if i < a.shape[0]:
        x = a[i]
        y = b[i]
        add[i] = x + y
        sub[i] = x - y
        mul[i] = x * y
        div[i] = x / y
        neg[i] = -x
        conj[i] = x.conjugate()
        absz[i] = abs(x)
        eq[i] = x == y
        ne[i] = x != x
        mix[i] = (x * 2 - 1j) + y.real * x.imag + (3 + 0.5j)

out = {}
for dt, tag in ((np.complex64, "c8"), (np.complex128, "c16")):
    a, b = data(dt, 1), data(dt, 2)[::-1].copy()
    b[:5] = a[:5]
    n = a.size
    res = [np.zeros(n, dt) for _ in range(6)] + [np.zeros(n, a.real.dtype), np.zeros(n, np.bool_),
                                                 np.zeros(n, np.bool_), np.zeros(n, np.complex128)]
    arith[(n + 63) // 64, 64](a, b, *res)
    for k, r in zip(("add", "sub", "mul", "div", "neg", "conj", "abs", "eq", "ne", "mix"), res):
        # complex64 * 2 - 1j: NumPy 2's simulator keeps complex64 (Python numbers are weak),
        # Numba's typing gives complex128; only the complex128 case means the same in both
        if k != "mix" or tag == "c16":
            split(out, tag + k, r)
RESULT = out
''',
    "scalars_and_conversions": _DATA + '''
@cuda.jit
def scal(z, c, x, out64, out128, outf):
    i = cuda.grid(1)
    if i < z.shape[0]:
        w = z[i] * c + x
        out64[i] = w
        out128[i] = complex(z[i].imag, x) + 2j
        outf[i] = w.real - w.imag + z[i].imag.real

out = {}
z = data(np.complex128, 4)
n = z.size
o64, o128, of = np.zeros(n, np.complex64), np.zeros(n, np.complex128), np.zeros(n)
scal[(n + 31) // 32, 32](z, 1.5 - 2j, 0.25, o64, o128, of)
split(out, "a64", o64); split(out, "a128", o128); out["af"] = of
scal[(n + 31) // 32, 32](z.astype(np.complex64), np.complex64(-1j), np.float32(3), o64, o128, of)
split(out, "b64", o64); split(out, "b128", o128); out["bf"] = of
RESULT = out
''',
    "device_functions_and_local_arrays": _DATA + '''
@cuda.jit(device=True)
def rot(z, k):
    return z * 1j ** k

@cuda.jit("complex64(complex64, float32)", device=True)
def scale(z, s):
    return z * s

@cuda.jit
def dev(z, out, acc):
    i = cuda.grid(1)
    if i < z.shape[0]:
        loc = cuda.local.array(4, np.complex128)
        for k in range(4):
            loc[k] = rot(z[i], k)
        t = 0j
        for k in range(4):
            t += loc[k] * (k + 1)
        out[i] = t
        acc[i] = scale(np.complex64(z[i]), 0.5) + scale(1.0, 2.0)

out = {}
z = data(np.complex128, 5)
o, a = np.zeros(z.size, np.complex128), np.zeros(z.size, np.complex64)
dev[(z.size + 31) // 32, 32](z, o, a)
split(out, "sum", o); split(out, "acc", a)
RESULT = out
''',
    "locals_and_parameters": _DATA + '''
@cuda.jit
def acc(z, out, c, n):
    i = cuda.grid(1)
    if i < z.shape[0]:
        s = 0.0                      # a real local that becomes complex, as Numba unifies them
        for j in range(n):
            s += z[(i + j) % z.shape[0]] * (j + 1)
        c *= 2                       # a complex parameter reassigned
        w = s if abs(s) < 10 else c
        k = 0
        while w != 0 and k < 3:
            w = w * 0.5 - c
            k += 1
        out[i] = w + s.real

out = {}
z = data(np.complex128, 9)
o = np.zeros(z.size, np.complex128)
acc[(z.size + 31) // 32, 32](z, o, 0.5 - 1j, 4)
split(out, "acc", o)
RESULT = out
''',
    "ufuncs_exact": _DATA + '''
@cuda.jit
def uf(a, b, cmp, mx, lg, ar):
    i = cuda.grid(1)
    if i < a.shape[0]:
        x = a[i]
        y = b[i]
        cmp[0, i] = np.greater(x, y)
        cmp[1, i] = np.greater_equal(x, y)
        cmp[2, i] = np.less(x, y)
        cmp[3, i] = np.less_equal(x, y)
        cmp[4, i] = np.equal(x, y)
        cmp[5, i] = np.not_equal(x, y)
        mx[0, i] = np.maximum(x, y)
        mx[1, i] = np.minimum(x, y)
        lg[0, i] = np.logical_and(x, y)
        lg[1, i] = np.logical_or(x, y)
        lg[2, i] = np.logical_xor(x, y)
        lg[3, i] = np.logical_not(x)
        ar[0, i] = np.add(x, y)
        ar[1, i] = np.negative(x)
        ar[2, i] = np.conjugate(x)

out = {}
for dt, tag in ((np.complex64, "c8"), (np.complex128, "c16")):
    a = data(dt, 11)
    b = a.copy()
    b[::3] = data(dt, 12)[::3]          # equal elements, equal real parts, NaNs in either
    b[1::3] = a[1::3].real + 1j * data(dt, 13)[1::3].imag
    n = a.size
    cmp, mx = np.zeros((6, n), np.bool_), np.zeros((2, n), dt)
    lg, ar = np.zeros((4, n), np.bool_), np.zeros((3, n), dt)
    uf[(n + 31) // 32, 32](a, b, cmp, mx, lg, ar)
    out[tag + "cmp"], out[tag + "lg"] = cmp, lg
    split(out, tag + "mx", mx); split(out, tag + "ar", ar)    # (np.multiply: NumPy's loop fuses a multiply-add)
RESULT = out
''',
    "ufuncs_math": _DATA + '''
UFS = [np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.sinh, np.cosh, np.tanh, np.arcsinh,
       np.arccosh, np.arctanh, np.exp, np.log, np.log10, np.log2, np.sqrt]

def usecase(uf):
    ns = {"np": np}
    exec(f"def f(x, out):\\n    np.{uf.__name__}(x, out)\\n", ns)
    return cuda.jit(ns["f"])

out = {}
for dt, tag in ((np.complex64, "c8"), (np.complex128, "c16")):
    z = data(dt, 14)[:64] * 0.4
    for uf in UFS:
        o = np.zeros(z.size, dt)
        usecase(uf)[1, 1](z, o)                 # the array form: one thread loops
        split(out, tag + uf.__name__, o)
        o2 = np.zeros(1, dt)
        usecase(uf)[1, 1](z[5], o2)             # a complex scalar argument
        split(out, tag + uf.__name__ + "_s", o2)
    o = np.zeros(z.size, z.real.dtype)
    usecase(np.absolute)[1, 1](z, o)
    out[tag + "abs"] = o
RESULT = out
''',
    "global_and_const_arrays": _DATA + '''
G = (np.arange(6) * (1 - 2j)).reshape(2, 3).astype(np.complex64)
H = data(np.complex128, 15)[:8]

@cuda.jit
def k(out):
    i = cuda.grid(1)
    c = cuda.const.array_like(H)
    if i < 3:
        out[i] = G[1, i] + c[i + 2] * 1j + H[i]

out = {}
o = np.zeros(3, np.complex128)
k[1, 3](o)
split(out, "g", o)
RESULT = out
''',
    "device_function_arrays": _DATA + '''
@cuda.jit(device=True)
def get(z, i):
    # (no Python ints with complex64 here: NumPy 2's simulator keeps complex64 where Numba
    # widens to complex128)
    r = z[0] * 0
    if i < z.shape[0]:
        r = z[i] * z[i].real
    return r

@cuda.jit(device=True)
def put(z, i, v):
    z[i] = v

@cuda.jit(device=True)
def parts(z, i):
    return z.real[i] - z.imag[i]

@cuda.jit
def k(z, out, r, w):
    i = cuda.grid(1)
    if i < z.shape[0]:
        loc = cuda.local.array(3, np.complex64)
        put(loc, 1, z[i])
        put(out, i, get(z, i) + get(loc, 1))
        r[i] = parts(z, i)
        put(w, (i, 1), z[i].conjugate())

out = {}
z = data(np.complex128, 16)
o, r, w = np.zeros(z.size, np.complex128), np.zeros(z.size), np.zeros((z.size, 2), np.complex64)
k[(z.size + 31) // 32, 32](z, o, r, w)
split(out, "o", o); out["r"] = r; split(out, "w", w)
RESULT = out
''',
    "powers": _DATA + '''
@cuda.jit
def powers(a, b, p2, p3, pm1, pab, pinplace):
    i = cuda.grid(1)
    if i < a.shape[0]:
        p2[i] = a[i] ** 2
        p3[i] = pow(a[i], 3)
        pm1[i] = a[i] ** -1
        pab[i] = a[i] ** b[i]
        pinplace[i] = b[i]
        pinplace[i] **= 0.5

out = {}
for dt, tag in ((np.complex64, "c8"), (np.complex128, "c16")):
    a, b = data(dt, 6)[:64], data(dt, 7)[:64] * 0.3
    a[:3] = [0j, 1j, 0j]; b[:3] = [0j, 1.0, 2.0]
    res = [np.zeros(64, dt) for _ in range(5)]
    powers[1, 64](a, b, *res)
    for k, r in zip(("p2", "p3", "pm1", "pab", "pin"), res):
        split(out, tag + k, r)
RESULT = out
''',
    "cmath": _DATA + '''
NAMES = ["sqrt", "exp", "log", "log10", "cos", "sin", "tan", "acos", "asin", "atan", "cosh", "sinh",
         "tanh", "acosh", "asinh", "atanh"]

@cuda.jit
def funcs(z, out, ph, r, preds, rect, logb):
    i = cuda.grid(1)
    if i < z.shape[0]:
        w = z[i]
        out[0, i] = cmath.sqrt(w)
        out[1, i] = cmath.exp(w)
        out[2, i] = cmath.log(w)
        out[3, i] = cmath.log10(w)
        out[4, i] = cmath.cos(w)
        out[5, i] = cmath.sin(w)
        out[6, i] = cmath.tan(w)
        out[7, i] = cmath.acos(w)
        out[8, i] = cmath.asin(w)
        out[9, i] = cmath.atan(w)
        out[10, i] = cmath.cosh(w)
        out[11, i] = cmath.sinh(w)
        out[12, i] = cmath.tanh(w)
        out[13, i] = cmath.acosh(w)
        out[14, i] = cmath.asinh(w)
        out[15, i] = cmath.atanh(w)
        ph[i] = cmath.phase(w)
        m, a = cmath.polar(w)
        r[i] = m
        preds[0, i] = cmath.isnan(w)
        preds[1, i] = cmath.isinf(w)
        preds[2, i] = cmath.isfinite(w)
        rect[i] = cmath.rect(abs(w.real), w.imag)
        logb[i] = cmath.log(w, 2 + 1j)

out = {}
for dt, tag in ((np.complex128, "c16"), (np.complex64, "c8")):
    z = data(dt, 8)
    # where Python's cmath raises (log(0), exp(x + inf j)...) Numba's simulator does too:
    # those inputs are left out, as numba-cuda's tests leave them out
    ok = []
    for v in z:
        try:
            for n in NAMES:
                getattr(cmath, n)(complex(v))
            cmath.rect(abs(v.real), v.imag); cmath.log(complex(v), 2 + 1j)
            ok.append(v)
        except (ValueError, OverflowError):
            pass
    z = np.array(ok, dt)
    n = z.size
    o = np.zeros((16, n), dt)
    ph, r = np.zeros(n, z.real.dtype), np.zeros(n, z.real.dtype)
    preds, rect, logb = np.zeros((3, n), np.bool_), np.zeros(n, dt), np.zeros(n, dt)
    funcs[(n + 31) // 32, 32](z, o, ph, r, preds, rect, logb)
    for k, name in enumerate(NAMES):
        split(out, tag + name, o[k])
    out[tag + "phase"], out[tag + "polar_r"], out[tag + "preds"] = ph, r, preds
    split(out, tag + "rect", rect); split(out, tag + "logb", logb)
RESULT = out
''',
}

ORACLE = Oracle(PROGRAMS)
# cmath: the simulator's libm (NumPy's) and Python's differ by an ulp here and there, which
# tan/tanh's formula amplifies; powers: NumPy's complex64 power is its own algorithm
# ufuncs_math: NumPy's complex loops (the simulator's) are C99's csin & co., not CPython's
# algorithms: agreement within a few dozen ulps on finite arguments
_ULPS = {"device_function_arrays": 0, "global_and_const_arrays": 0, "ufuncs_exact": 0, "ufuncs_math": 64, "locals_and_parameters": 0, "arithmetic": 0, "scalars_and_conversions": 0, "device_functions_and_local_arrays": 0, "powers": 512,
         "cmath": 16}


def _ulp_distance(g: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per element: 0 when equal (NaN with NaN; signed zeros must agree), else the distance
    in units of the last place of the expected type."""
    g = g.astype(w.dtype)
    same = (g == w) & (np.signbit(g) == np.signbit(w)) | (np.isnan(g) & np.isnan(w))
    finite = np.isfinite(g) & np.isfinite(w)
    with np.errstate(all="ignore"):
        d = np.abs(g.astype(np.float64) - w.astype(np.float64)) / np.spacing(np.maximum(np.abs(w), np.abs(g)))
    return np.where(same, 0, np.where(finite, d, np.inf))


def assert_close(got: dict, want: dict, ulps: int):
    assert set(got) == set(want), (sorted(got), sorted(want))
    for k in want:
        g, w = np.asarray(got[k]), np.asarray(want[k])
        assert g.shape == w.shape, k
        if w.dtype.kind == "b" or ulps == 0:
            np.testing.assert_array_equal(g.astype(w.dtype), w, err_msg=k)
            if w.dtype.kind == "f":
                keep = ~np.isnan(w)             # a NaN's sign bit means nothing
                np.testing.assert_array_equal(np.signbit(g)[keep], np.signbit(w)[keep], err_msg=k + " (signs)")
            continue
        d = _ulp_distance(g, w)
        # log(z, base) divides two logs: a part that cancels magnifies their last-ulp differences
        bad = np.flatnonzero(d > ulps * (64 if "logb" in k else 1))
        assert bad.size == 0, f"{k}: {bad.size} elements differ by more than {ulps} ulps, e.g. index {bad[0]}: " \
                              f"{g.reshape(-1)[bad[0]]!r} vs {w.reshape(-1)[bad[0]]!r}"


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_against_numba_simulator(name):
    """On METALBENCH_TEST_BACKEND (sim by default; a GPU run: cuda, whose libm may need
    looser ulps for the cmath programs)."""
    assert_close(run_metalbench(PROGRAMS[name], name), ORACLE[name], _ULPS[name])


def _host_data(dt, seed):
    ns: dict = {}
    exec(_DATA.replace("from numba import cuda", ""), ns)
    return ns["data"](dt, seed)


def test_arithmetic_against_numpy():
    """Without the Numba venv: the arithmetic program against NumPy's complex scalars."""
    got = run_metalbench(PROGRAMS["arithmetic"], "arithmetic", backend="sim")
    for dt, tag in ((np.complex64, "c8"), (np.complex128, "c16")):
        a, b = _host_data(dt, 1), _host_data(dt, 2)[::-1].copy()
        b[:5] = a[:5]
        with np.errstate(all="ignore"):      # scalar by scalar, as Numba's simulator computes
            ops = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
                   "div": lambda x, y: x / y, "neg": lambda x, y: -x, "conj": lambda x, y: x.conjugate(),
                   "abs": lambda x, y: abs(x), "eq": lambda x, y: x == y, "ne": lambda x, y: x != x}
            want = {k: np.array([f(x, y) for x, y in zip(a, b)]) for k, f in ops.items()}
        for k, w in want.items():
            assert_close({"re": got[tag + k + "_re"], "im": got[tag + k + "_im"]},
                         {"re": np.real(w), "im": np.imag(w)}, 0)


def test_cmath_and_powers_against_python():
    """Without the Numba venv: the cmath program against Python's cmath, rounded to the type."""
    got = run_metalbench(PROGRAMS["cmath"], "cmath", backend="sim")
    names = ["sqrt", "exp", "log", "log10", "cos", "sin", "tan", "acos", "asin", "atan", "cosh", "sinh",
             "tanh", "acosh", "asinh", "atanh"]
    for dt, tag in ((np.complex128, "c16"), (np.complex64, "c8")):
        z = []
        for v in _host_data(dt, 8):
            try:
                for n in names:
                    getattr(cmath, n)(complex(v))
                cmath.rect(abs(v.real), v.imag)
                cmath.log(complex(v), 2 + 1j)
                z.append(v)
            except (ValueError, OverflowError):
                pass
        for n in names:
            w = np.array([getattr(cmath, n)(complex(v)) for v in z]).astype(dt)
            assert_close({"re": got[tag + n + "_re"], "im": got[tag + n + "_im"]},
                         {"re": w.real, "im": w.imag}, 16)
        np.testing.assert_array_equal(got[tag + "preds"][0], [cmath.isnan(v) for v in z])
    got = run_metalbench(PROGRAMS["powers"], "powers", backend="sim")
    a = _host_data(np.complex128, 6)[:64]
    a[:3] = [0j, 1j, 0j]
    np.testing.assert_allclose(got["c16p3_re"] + 1j * got["c16p3_im"], a ** 3, rtol=1e-14)


_FINITE = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
_ANY = st.one_of(_FINITE, st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan, 1e-310, 1e300, -1e300]))


@settings(max_examples=300, deadline=None)
@given(_ANY, _ANY, st.sampled_from(["sqrt", "exp", "log", "log10", "cos", "sin", "tan", "acos", "asin", "atan",
                                    "cosh", "sinh", "tanh", "acosh", "asinh", "atanh"]))
def test_cmath_library_on_the_host(x, y, name):
    """The library's algorithms (run as Python on float64 scalars with libm's functions)
    give Python's cmath within 2 ulps, infinities, NaNs and signed zeros included."""
    from metalbench.frontend.python.cmathlib import host_namespace
    try:
        want = getattr(cmath, name)(complex(x, y))
    except (ValueError, OverflowError):
        return
    got = _NS.setdefault("ns", host_namespace())[name](np.complex128(complex(x, y)))
    d = _ulp_distance(np.array(got), np.array([want.real, want.imag]))
    assert (d <= 2).all(), (name, x, y, got, want)


_NS: dict = {}


_BAD = {
    "out[i] = z[i]": "cannot convert complex64 to float32",
    "out[i] = z[i] < z[i]": "the < operator does not apply to complex numbers",
    "out[i] = abs(z[i] // z[i])": "the // operator does not apply to complex numbers",
    "out[i] = z[1:][i].real": "views and slices of complex arrays are not supported",
    "out[i] = math.floor(z[i])": "does not take complex numbers",
}


@pytest.mark.parametrize("line", sorted(_BAD))
def test_unsupported_uses_are_errors_at_the_line(line):
    from metalbench import cuda
    ns = {"cuda": cuda, "math": math}
    exec(f"def k(z, out):\n    i = cuda.grid(1)\n    {line}\n", ns)
    k = cuda.jit(ns["k"])
    with pytest.raises(KernelTypeError, match=_BAD[line]) as ei:
        k[1, 4](np.zeros(4, np.complex64), np.zeros(4, np.float32))
    assert "line 3" in str(ei.value)


def _cmath_kernel():
    from metalbench import cuda

    @cuda.jit
    def k(z, c, out):
        i = cuda.grid(1)
        if i < z.shape[0]:
            w = cmath.sqrt(z[i]) * c + cmath.atanh(z[i]) / z[i] - cmath.exp(z[i]) ** 2
            out[i] = w + cmath.acos(w) + abs(w) + (z[i] ** c).conjugate()
    return k


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_printed_cuda_compiles(dt):
    """The CUDA printed for complex arithmetic and cmath compiles with NVRTC (MLX's options)."""
    import nvrtc
    from metalbench.codegen import cuda as cg
    nv = nvrtc.find()
    if nv is None:
        pytest.skip("NVRTC not installed (tests/nvrtc.py says how)")
    k = _cmath_kernel()
    z = np.ones(8, dt)
    sp = k.specialization(k.bind_inplace((z, dt(1 + 1j), np.zeros(8, dt)), {}, (8, 1, 1), (8, 1, 1), "sim", None))
    src = cg.full_source(sp.rendered("cuda"))
    ok, log = nv.compile(src)
    assert ok, log


def test_complex64_arithmetic_prints_for_metal_as_float_pairs():
    """On Metal a complex64 is a pair of floats (no double); complex128 is Metal's float64 error."""
    from metalbench import cuda

    @cuda.jit
    def k(z, out):
        i = cuda.grid(1)
        out[i] = z[i] * z[i] / (z[i] + 1j) + abs(z[i])

    sp = k.specialization(k.bind_inplace((np.ones(4, np.complex64), np.zeros(4, np.complex64)), {},
                                         (4, 1, 1), (4, 1, 1), "sim", None))
    src = sp.source("metal")
    assert "double" not in src and "float" in src
    sp = k.specialization(k.bind_inplace((np.ones(4, np.complex128), np.zeros(4, np.complex128)), {},
                                         (4, 1, 1), (4, 1, 1), "sim", None))
    with pytest.raises(KernelTypeError, match="float64"):
        sp.source("metal")


def test_cmath_on_metal_is_an_error_at_the_call():
    """The cmath functions compute in float64: on Metal an error names the call and its line."""
    k = _cmath_kernel()
    z = np.ones(8, np.complex64)
    sp = k.specialization(k.bind_inplace((z, np.complex64(1j), np.zeros(8, np.complex64)), {}, (8, 1, 1), (8, 1, 1),
                                         "sim", None))
    with pytest.raises(KernelTypeError, match=r"cmath.sqrt computes in float64.*Metal has no double") as e:
        sp.source("metal")
    assert "w = cmath.sqrt(z[i]) * c" in str(e.value)


def test_elements_of_strided_complex_arrays():
    """Elements of a strided complex view (every other element, a record's complex field)
    are read and written in the caller's memory."""
    from metalbench import cuda

    @cuda.jit
    def k(z):
        i = cuda.grid(1)
        if i < z.shape[0]:
            z[i] = z[i] * 2j + 1

    base = np.arange(8) * (1 + 2j)
    want = base.copy()
    want[::2] = want[::2] * 2j + 1
    k[1, 4](base[::2])
    np.testing.assert_array_equal(base, want)
    rec = np.zeros(3, [("a", np.int8), ("c", np.complex64)])
    rec["c"] = [1j, 2, 3 + 1j]
    k[1, 4](rec["c"])
    np.testing.assert_array_equal(rec["c"], np.array([1j, 2, 3 + 1j], np.complex64) * 2j + 1)
    assert (rec["a"] == 0).all()
