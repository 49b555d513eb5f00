"""Smaller Numba-layer features of issue 14, each against Numba's simulator or NumPy:
``round(x, ndigits)`` with a run-time ``ndigits``, Python ints for declared narrower
integers, ``alignment=`` on local/shared arrays, Enum members as kernel arguments,
empty ``cuda.const.array_like`` arrays, ``forall`` of a negative count."""
import math
import os

import numpy as np
import pytest

from metalbench import cuda

from numba_oracle import Oracle, assert_same, run_metalbench


@pytest.fixture(autouse=True)
def _backend():
    cuda.set_backend(os.environ.get("METALBENCH_TEST_BACKEND", "sim"))
    yield
    cuda.set_backend(None)


ROUND_RUNTIME = '''
import numpy as np
from numba import cuda

@cuda.jit
def k(out, x, nd):
    i = cuda.grid(1)
    if i < x.size:
        for j in range(nd.size):
            out[i, j] = round(x[i], nd[j])

rng = np.random.default_rng(7)
x = np.concatenate([rng.random(40) * 10.0 ** rng.integers(-6, 6, 40),
                    [0.3425, 2.5, -2.5, 0.125, -1e-300, np.inf, -np.inf, np.nan, 0.0, -0.0, 123456.5, 1e300]])
nd = np.arange(-9, 9, dtype=np.int32)
o64 = np.zeros((x.size, nd.size), np.float64)
k[2, 32](o64, x, nd.astype(np.int64))
RESULT = {"o64": o64}
'''

ENUMS_AND_EMPTY_CONST = '''
import numpy as np
from enum import Enum, IntEnum
from numba import cuda

class Color(Enum):
    red = 1
    green = 2

class Flavour(Enum):
    mint = 1
    lemon = (2.5, 3)

class Size(IntEnum):
    small = 2
    large = 500

class Other(IntEnum):
    two = 2

@cuda.jit
def k(a, b, out):
    out[0] = a == b
    out[1] = a != b
    out[2] = a is b
    out[3] = a is not b

pairs = [(Color.red, Color.red), (Color.red, Color.green), (Color.red, Flavour.mint), (Flavour.lemon, Flavour.lemon),
         (Size.small, Other.two), (Size.small, Size.large)]
res = np.zeros((len(pairs), 4), np.bool_)
for j, (a, b) in enumerate(pairs):
    out = np.zeros(4, np.bool_)
    k[1, 1](a, b, out)
    res[j] = out

@cuda.jit
def g(x, s, out):
    out[0] = x + s
    out[1] = x > Size.large

o2 = np.zeros(2, np.int64)
g[1, 1](7, Size.large, o2)
EMPTY = np.array([], np.float64)

@cuda.jit
def e(out):
    c = cuda.const.array_like(EMPTY)
    out[0] = len(c)
    out[1] = c.size

o3 = np.full(2, -1, np.int64)
e[1, 1](o3)
RESULT = {"res": res, "o2": o2, "o3": o3}
'''

CONST_RECORDS = '''
import numpy as np
from numba import cuda

REC = np.array([(1.0, 2), (3.0, 4), (-0.5, -7)], dtype=[("x", float), ("y", int)])
ALIGN = np.array([(1, 2, 3, 0xDEADBEEF, 8), (4, 5, 6, 0xBEEFDEAD, 10)],
                 dtype=np.dtype([("a", np.uint8), ("b", np.uint8), ("x", np.uint8), ("y", np.uint32), ("z", np.uint8)], align=True))
NEST = np.zeros(3, dtype=[("p", [("u", np.int32), ("v", np.float32)]), ("h", np.float64, (2,))])
NEST["p"]["u"] = [5, 6, 7]; NEST["p"]["v"] = [0.5, 1.5, 2.5]; NEST["h"] = [[1, 2], [3, 4], [5, 6]]
EMPTY = np.array([], dtype=[("x", float), ("y", int)])

@cuda.jit
def k(A, B, C, D):
    c = cuda.const.array_like(REC)
    z = cuda.const.array_like(ALIGN)
    n = cuda.const.array_like(NEST)
    e = cuda.const.array_like(EMPTY)
    i = cuda.grid(1)
    if i < len(c):
        A[i] = c[i]["x"] + c[i]["y"]
        B[i] = n[i]["p"]["u"] * n[i]["p"]["v"] + n[i]["h"][1]
    if i < z.size:
        C[i] = z[i]["y"] + z[i]["z"]
    D[0] = len(e)

A = np.zeros(3); B = np.zeros(3); C = np.zeros(2, np.int64); D = np.full(1, -1, np.int64)
k[1, 4](A, B, C, D)
RESULT = {"A": A, "B": B, "C": C, "D": D}
'''

SHARED_RECORDS = '''
import numpy as np
from numba import cuda

rt = np.dtype([("i", np.int32), ("f", np.float64), ("u", np.int16)], align=True)
NT = 16

@cuda.jit
def k(x, y, z):
    sm = cuda.shared.array(NT, dtype=rt)
    tx = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + tx
    if i < len(x):
        sm[tx] = x[i]
    cuda.syncthreads()
    if i < len(x):
        y[i] = sm[NT - 1 - tx]
        z[i] = sm[tx]["f"] + sm[tx]["u"]

x = np.recarray(32, dtype=rt)
x["u"] = 0
x["i"] = np.arange(32); x["f"] = np.arange(32) / 8
x["u"] = np.arange(32) * 3
y = np.recarray(32, dtype=rt)
y["i"] = 0; y["f"] = 0; y["u"] = 0
z = np.zeros(32)
k[2, NT](x, y, z)
RESULT = {"yi": y["i"], "yf": y["f"], "yu": y["u"], "z": z}
'''

PROGRAMS = {"round_runtime": ROUND_RUNTIME, "enums": ENUMS_AND_EMPTY_CONST, "const_records": CONST_RECORDS,
            "shared_records": SHARED_RECORDS}
ORACLE = Oracle(PROGRAMS)


def test_round_runtime_ndigits_matches_numba_simulator():
    assert_same(run_metalbench(ROUND_RUNTIME), ORACLE["round_runtime"])


def _numba_cuda_round(x, n):
    """numba-cuda's round_ndigits (cudaimpl.round_to_impl) in Python: y in float64."""
    xd = float(x)
    if math.isinf(xd) or math.isnan(xd):
        return x
    if n >= 0:
        pow1, pow2 = (10.0 ** (n - 22), 1e22) if n > 22 else (10.0 ** n, 1.0)
        y = (xd * pow1) * pow2
        if math.isinf(y):
            return x
        return type(x)((float(np.rint(y)) / pow2) / pow1)
    pow1 = 10.0 ** -n
    return type(x)(float(np.rint(xd / pow1)) * pow1)


def test_round_float32_rounds_in_float64_as_numba_cuda():
    """float32 x: y = x * 10**n is float64 (Numba's typing), so round(float32(0.3425), 3)
    is 0.343 (Python's answer too), where NumPy's float32 rounding gives 0.342."""
    @cuda.jit
    def k(out, x, nd):
        i = cuda.grid(1)
        if i < x.size:
            for j in range(nd.size):
                out[i, j] = round(x[i], nd[j])

    rng = np.random.default_rng(11)
    x = np.concatenate([rng.random(60) * 10.0 ** rng.integers(-4, 6, 60), [0.3425, 0.5425, 2.5, -0.125]])
    x = x.astype(np.float32)
    nd = np.arange(-6, 14, dtype=np.int32)
    out = np.zeros((x.size, nd.size), np.float32)
    k[2, 32](out, x, nd)
    want = np.array([[_numba_cuda_round(v, int(n)) for n in nd] for v in x], np.float32)
    np.testing.assert_array_equal(out, want)
    assert out[60, 9] == np.float32(0.343)


def test_round_runtime_ndigits_equals_constant_ndigits():
    """The run-time path computes what the constant path does, also where the power of
    ten is large (n > 22: two factors; an infinite product: x itself)."""
    digits = (-30, -5, 0, 3, 9, 23, 30, 310)

    @cuda.jit
    def runtime(out, x, nd):
        i = cuda.grid(1)
        if i < x.size:
            for j in range(nd.size):
                out[i, j] = round(x[i], nd[j])

    @cuda.jit
    def constant(out, x):
        i = cuda.grid(1)
        if i < x.size:
            out[i, 0] = round(x[i], -30)
            out[i, 1] = round(x[i], -5)
            out[i, 2] = round(x[i], 0)
            out[i, 3] = round(x[i], 3)
            out[i, 4] = round(x[i], 9)
            out[i, 5] = round(x[i], 23)
            out[i, 6] = round(x[i], 30)
            out[i, 7] = round(x[i], 310)

    rng = np.random.default_rng(3)
    for dt in (np.float32, np.float64):
        x = np.concatenate([rng.standard_normal(30) * 1e4, [0.5, 1.5, 1e30, -3e-20]]).astype(dt)
        a = np.zeros((x.size, len(digits)), dt)
        b = np.zeros_like(a)
        runtime[1, 64](a, x, np.array(digits, np.int32))
        constant[1, 64](b, x)
        np.testing.assert_array_equal(a, b)
        if dt is np.float64:        # (x * 10**288) * 1e22 overflows: x unchanged
            np.testing.assert_array_equal(a[-3:-1, 7], x[-3:-1])


def test_round_ndigits_must_be_an_integer():
    from metalbench.errors import KernelTypeError

    @cuda.jit
    def k(out, x, nd):
        out[0] = round(x[0], nd[0])

    with pytest.raises(KernelTypeError, match="integer ndigits"):
        k[1, 1](np.zeros(1), np.ones(1), np.ones(1))


def test_declared_scalar_types_convert_python_ints_as_c():
    """A Python int passed for a declared int32 converts as C (and Numba's ctypes
    argument) does: 0xFFFFFFFF is -1, 2**31 is -2**31; uint8 keeps the low byte."""
    @cuda.jit("void(int64[:], int32, uint8)")
    def k(out, a, b):
        out[0] = a
        out[1] = b
        out[2] = cuda.ffs(a)

    out = np.zeros(3, np.int64)
    for a, b in ((0xFFFFFFFF, 300), (2 ** 31, -1), (0x00100000, 7)):
        k[1, 1](out, a, b)
        wa, wb = np.array(a).astype(np.int32), np.array(b).astype(np.uint8)
        want_ffs = (int(wa) & -int(wa)).bit_length()
        np.testing.assert_array_equal(out, [wa, wb, want_ffs])


def test_array_alignment_runs_and_is_printed():
    """``alignment=`` on cuda.local.array / cuda.shared.array (Numba's CUDA target; its
    simulator refuses it): the kernel computes as without it, and the printed CUDA/MSL
    declare the arrays aligned (__align__ / alignas)."""
    @cuda.jit
    def k(out):
        i = cuda.grid(1)
        loc = cuda.local.array(4, dtype=np.uint8, alignment=16)
        sh = cuda.shared.array(shape=(2, 8), dtype=np.float32, alignment=64)
        loc[0] = i
        sh[1, i] = loc[0] * 2
        cuda.syncthreads()
        out[i] = sh[1, 7 - i]

    out = np.zeros(8, np.float32)
    k[1, 8](out)
    np.testing.assert_array_equal(out, 2 * (7 - np.arange(8)))
    sp = k.specialization(k.bind(out, grid=(8, 1, 1), threadgroup=(8, 1, 1)))
    cu, msl = sp.source("cuda"), sp.source("metal")
    assert "__align__(16) uint8_t" in cu and "__align__(64) __shared__ float" in cu
    assert "alignas(16) uchar" in msl and "alignas(64) threadgroup float" in msl


@pytest.mark.parametrize("alignment, cls, msg", [
    (3, ValueError, "Alignment must be a power of 2"),
    (0, ValueError, "Alignment must be positive"),
    (-16, ValueError, "Alignment must be positive"),
    (4, ValueError, "Alignment must be a multiple of 8"),
    (1.5, Exception, "RequireLiteralValue: .*alignment must be a constant integer"),
    ("16", Exception, "RequireLiteralValue: .*alignment must be a constant integer"),
])
def test_invalid_alignment_is_refused(alignment, cls, msg):
    from metalbench.errors import KernelTypeError

    @cuda.jit
    def k(out):
        s = cuda.shared.array(4, np.float32, alignment=alignment)
        s[0] = 1
        out[0] = s[0]

    with pytest.raises(KernelTypeError, match=msg) as e:
        k[1, 1](np.zeros(1, np.float32))
    assert isinstance(e.value, cls)
    assert "alignment=alignment" in str(e.value)          # the line, with a caret


def test_enum_arguments_and_empty_const_match_numba_simulator():
    """Enum members as arguments compare as in Python (==, !=, is: class and value; an
    IntEnum also computes as its int); an empty const array has len 0."""
    want = ORACLE["enums"]
    got = run_metalbench(ENUMS_AND_EMPTY_CONST)
    assert_same(got, want)
    np.testing.assert_array_equal(got["res"][4], [True, False, False, True])   # Size.small vs Other.two
    np.testing.assert_array_equal(got["o2"], [507, 0])


def test_forall_refuses_a_negative_count():
    @cuda.jit
    def k(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] += 1

    with pytest.raises(ValueError, match="negative task count"):
        k.forall(-1)
    a = np.zeros(5)
    k.forall(5)(a)
    np.testing.assert_array_equal(a, 1)


def test_signature_kernels_have_a_typemap_and_refuse_bad_dtype_strings():
    """With a declared signature the kernel compiles at decoration: its overload's
    ``_type_annotation.typemap`` types the body's names (a shared array of Numba, NumPy
    or string dtype is an int32 array); an unknown dtype string fails there, in Numba's words."""
    from metalbench.cuda import int32, void
    from metalbench.errors import KernelTypeError
    for dt in (int32, np.int32, "int32"):
        @cuda.jit(void(int32[::1]))
        def f(x):
            s = cuda.shared.array(10, dtype=dt)
            s[0] = x[0]
            t = s[0] * 2
            x[0] = t
        tm = next(iter(f.overloads.values()))._type_annotation.typemap
        assert tm["s"].dtype == int32 and tm["s"].ndim == 1
        assert str(tm["x"]) == "array(int32, 1d, A)" and tm["t"] == cuda.int64
        x = np.array([21], np.int32)
        f[1, 1](x)
        assert x[0] == 42
    with pytest.raises(KernelTypeError, match="Invalid NumPy dtype specified: 'int33'"):
        @cuda.jit(void(int32[::1]))
        def g(x):
            s = cuda.shared.array(10, dtype="int33")
            s[0] = x[0]


def test_undefined_name_in_a_device_function_is_an_error():
    """A name the module does not define is a NameError in Python and a typing error in
    Numba; the Numba layer does not fall back to the DSL's names (floor was silently
    Metal's floor)."""
    from metalbench.errors import KernelNameError
    src = ("from metalbench import cuda\n"
           "@cuda.jit(device=True)\n"
           "def dev(x):\n"
           "    return floor(x)\n"
           "@cuda.jit\n"
           "def k(o):\n"
           "    o[0] = dev(1.5)\n")
    import linecache
    linecache.cache["<undef>"] = (len(src), None, src.splitlines(True), "<undef>")
    ns = {}
    exec(compile(src, "<undef>", "exec"), ns)
    with pytest.raises(KernelNameError, match="name 'floor' is not defined") as e:
        ns["k"][1, 1](np.zeros(1))
    assert "from math import floor" in str(e.value) and "o[0] = dev(1.5)" in str(e.value)


def test_const_record_arrays_match_numba_simulator():
    """cuda.const.array_like of structured arrays (aligned, nested, sub-array fields, empty):
    fields read per element, as Numba's constant memory gives them."""
    got = run_metalbench(CONST_RECORDS)
    assert_same(got, ORACLE["const_records"])
    np.testing.assert_array_equal(got["C"], [0xDEADBEEF + 8, 0xBEEFDEAD + 10])


REC = np.array([(1.5, 2, (7, 8)), (3.0, -4, (9, 10))], dtype=[("x", "f4"), ("y", "i2"), ("h", "i4", (2,))])


def test_const_record_attribute_access_and_misuse():
    @cuda.jit
    def k(out):
        c = cuda.const.array_like(REC)
        i = cuda.grid(1)
        if i < c.size:
            out[i] = c[i].x * c[i].y + c[i].h[1]

    out = np.zeros(2)
    k[1, 2](out)
    np.testing.assert_array_equal(out, REC["x"] * REC["y"] + REC["h"][:, 1])

    from metalbench.errors import KernelTypeError

    @cuda.jit
    def whole(out):
        c = cuda.const.array_like(REC)
        out[0] = c[0]

    with pytest.raises(KernelTypeError, match="record array") as e:
        whole[1, 1](out)
    assert "out[0] = c[0]" in str(e.value)


def test_single_signature_reads_other_signedness_as_declared():
    """One declared signature: Numba launches without checking array dtypes and the
    kernel reads the bytes as declared. A uint32 array for int32[:] is read as int32
    (two's complement), in place, on the first and on repeated (thin-path) launches;
    other mismatches stay errors."""
    from metalbench.numba_compat.sigmatch import SignatureMismatch

    @cuda.jit("void(int32[:], int32[:])")
    def k(a, n):
        i = cuda.grid(1)
        if i < a.size:
            a[i] = a[i] // 2 - (1 if a[i] < 0 else 0)
            cuda.atomic.sub(n, 0, 1)

    for _ in range(2):
        a = np.array([10, 0xFFFFFFF0, 7, 0x80000000], np.uint32)
        n = np.zeros(1, np.uint32)
        s = a.view(np.int32).astype(np.int64)
        k[1, 4](a, n)
        np.testing.assert_array_equal(a.view(np.int32), s // 2 - (s < 0))
        assert n[0] == 2 ** 32 - 4 and n.view(np.int32)[0] == -4
    with pytest.raises(SignatureMismatch):
        k[1, 4](np.zeros(4, np.float32), n)
    with pytest.raises(SignatureMismatch):
        k[1, 4](np.zeros(4, np.int64), n)


def test_grid_ndim_must_be_a_literal():
    from metalbench.cuda import int32, void
    from metalbench.errors import KernelTypeError

    def g(x):
        cuda.grid(x)

    with pytest.raises(KernelTypeError, match="RequireLiteralValue: cuda.grid\\(ndim\\) must be a constant") as e:
        cuda.jit(void(int32))(g)
    assert "cuda.grid(x)" in str(e.value)


def test_shared_record_arrays_match_numba_simulator():
    assert_same(run_metalbench(SHARED_RECORDS), ORACLE["shared_records"])


RT = np.dtype([("i", np.int32), ("j", np.float32, (3, 2)), ("p", [("u", np.int16), ("v", np.float64)])])


def test_shared_and_local_record_arrays_nested_and_subarray_fields():
    """cuda.shared.array / cuda.local.array of a record dtype (nested records, sub-array
    fields): whole records copied in and out, fields read and written (checked with NumPy;
    Numba's simulator cannot copy such records)."""
    @cuda.jit
    def k(x, y, z):
        sm = cuda.shared.array(16, dtype=RT)
        loc = cuda.local.array(2, RT)
        tx = cuda.threadIdx.x
        i = cuda.blockIdx.x * cuda.blockDim.x + tx
        if i < len(x):
            sm[tx] = x[i]
            loc[0] = x[i]
            loc[1]["i"] = tx
            loc[1].p.v = 0.25 * tx
        cuda.syncthreads()
        if i < len(x):
            y[i] = sm[15 - tx]
            z[i] = loc[0]["j"][2, 1] + loc[1]["i"] + loc[1]["p"]["v"] + sm[tx].p.u

    x = np.zeros(32, dtype=RT)
    x["i"] = np.arange(32)
    x["j"] = np.arange(32 * 6, dtype=np.float32).reshape(32, 3, 2)
    x["p"]["u"] = np.arange(32) * 3
    x["p"]["v"] = np.arange(32) / 8
    y = np.zeros_like(x)
    z = np.zeros(32)
    k[2, 16](x, y, z)
    src = np.concatenate([np.arange(15, -1, -1), np.arange(31, 15, -1)])
    assert (y == x[src]).all()
    tx = np.arange(32) % 16
    np.testing.assert_array_equal(z, x["j"][:, 2, 1] + tx + 0.25 * tx + x["p"]["u"])
