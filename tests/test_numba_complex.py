"""Complex arrays in the Numba layer (issue 14): a complex64/complex128 argument's ``.real``
and ``.imag`` are strided views of the caller's storage (read, written, given to atomics,
as numba-cuda's TestAtomicOnComplexComponents does), on random and edge-case data (inf,
nan, signed zeros). Each program runs on metalbench against NumPy's answer computed in the
program itself and, where the Numba venv exists, against Numba's own simulator
(tests/numba_oracle.py). Results are split into real parts, imaginary parts and sign bits
so that NaN payload-free and signed-zero comparisons are exact. Complex values themselves
(``z[i]``, complex scalars, cmath) are tested in tests/test_numba_complex_values.py.
"""
import numpy as np
import pytest

from metalbench.errors import KernelLaunchError, KernelTypeError
from numba_oracle import Oracle, assert_same, run_metalbench

_DATA = '''
import numpy as np
from numba import cuda
rng = np.random.default_rng(7)
edge = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -3.5, 2.0])
def data(dt, n=16):
    z = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
    z.real[:8], z.imag[:8] = edge, edge[::-1]
    return z
def split(out, tag, z):
    out[tag + "_re"], out[tag + "_im"] = z.real.copy(), z.imag.copy()
    out[tag + "_sre"], out[tag + "_sim"] = np.signbit(z.real), np.signbit(z.imag)
'''

PROGRAMS = {
    "atomic_parts": _DATA + '''
@cuda.jit
def add_re(values):
    i = cuda.grid(1)
    cuda.atomic.add(values.real, i, 1)

@cuda.jit
def add_im(values, k):
    i = cuda.grid(1)
    cuda.atomic.add(values.imag, i % k, 1)

out = {}
for dt, tag in ((np.complex64, "c8"), (np.complex128, "c16")):
    a = data(dt)
    b = a.copy(); add_re[1, 16](b); split(out, tag + "_re", b)
    b = a.copy(); add_im[2, 16](b, 4); split(out, tag + "_im", b)
RESULT = out
''',
    "read_write_parts": _DATA + '''
@cuda.jit
def parts(z, re, im):
    i = cuda.grid(1)
    if i < z.real.shape[0]:
        re[i] = z.real[i]
        im[i] = z.imag[i]
        z.imag[i] = z.real[i] * 2
        z.real[i] = -z.real[i]

out = {}
for dt, tag in ((np.complex64, "c8"), (np.complex128, "c16")):
    z = data(dt)
    re = np.zeros(16, z.real.dtype); im = np.zeros(16, z.real.dtype)
    parts[1, 32](z, re, im)
    split(out, tag, z)
    out[tag + "_readre"], out[tag + "_readim"] = re, im
    out[tag + "_readsre"], out[tag + "_readsim"] = np.signbit(re), np.signbit(im)
RESULT = out
''',
    "two_dim_and_device_array": _DATA + '''
@cuda.jit
def diff(z, out):
    i, j = cuda.grid(2)
    if i < z.imag.shape[0] and j < z.imag.shape[1]:
        out[i, j] = z.imag[i, j] - z.real[i, j]
        z.real[i, j] += 1.0

out = {}
z = data(np.complex128, 12).reshape(3, 4)
o = np.zeros((3, 4))
diff[(1, 1), (4, 4)](z, o)
split(out, "host", z)
out["diff"] = o
d = cuda.to_device(data(np.complex64, 12).reshape(3, 4))
do = cuda.to_device(np.zeros((3, 4), np.float32))
diff[(1, 1), (4, 4)](d, do)
diff[(1, 1), (4, 4)](d, do)
split(out, "dev", d.copy_to_host())
out["ddiff"] = do.copy_to_host()
RESULT = out
''',
}

ORACLE = Oracle(PROGRAMS)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_against_numba_simulator(name):
    assert_same(run_metalbench(PROGRAMS[name], name, backend="sim"), ORACLE[name])


def test_against_numpy():
    """The same programs checked against NumPy's answer, without the Numba venv."""
    got = run_metalbench(PROGRAMS["atomic_parts"], "atomic_parts", backend="sim")
    ns: dict = {}
    exec(_DATA.replace("from numba import cuda", ""), ns)
    for dt, tag in ((np.complex64, "c8"), (np.complex128, "c16")):
        a = ns["data"](dt)
        want_re, want_im = a.real + 1, a.imag.copy()
        want_im[:4] += 8                      # 32 threads add 1 to element i % 4
        np.testing.assert_array_equal(got[tag + "_re_re"], want_re)
        np.testing.assert_array_equal(got[tag + "_re_im"], a.imag)
        np.testing.assert_array_equal(got[tag + "_re_sim"], np.signbit(a.imag))
        np.testing.assert_array_equal(got[tag + "_im_im"], want_im)
        np.testing.assert_array_equal(got[tag + "_im_sre"], np.signbit(a.real))
    got = run_metalbench(PROGRAMS["read_write_parts"], "read_write_parts", backend="sim")
    exec(_DATA.replace("from numba import cuda", ""), ns)       # a fresh generator, as the program has
    for dt, tag in ((np.complex64, "c8"), (np.complex128, "c16")):
        z = ns["data"](dt)
        np.testing.assert_array_equal(got[tag + "_readre"], z.real)
        np.testing.assert_array_equal(got[tag + "_readsim"], np.signbit(z.imag))
        np.testing.assert_array_equal(got[tag + "_re"], -z.real)
        np.testing.assert_array_equal(got[tag + "_sre"], np.signbit(-z.real))
        np.testing.assert_array_equal(got[tag + "_im"], z.real * 2)


def test_complex_scalars_and_strided_arrays():
    from metalbench import cuda

    @cuda.jit
    def k(z, out):
        out[0] = z.real * 2 + z.imag

    out = np.zeros(1)
    k[1, 1](1 + 2j, out)                    # a complex argument: its parts (complex values: test_numba_complex_values.py)
    assert out[0] == 4

    # a strided complex view (every other element, a record's complex field) is its real
    # storage read with the view's strides: the caller's elements, not a copy
    base = np.arange(8) * (1 + 2j)

    @cuda.jit
    def strided(z, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = z.real[i] + 10 * z.imag[i]
            z.imag[i] = -z.real[i]

    out = np.zeros(4)
    strided[1, 4](base[::2], out)
    np.testing.assert_array_equal(out, np.arange(0, 8, 2) * 21.0)
    np.testing.assert_array_equal(base.imag, [0, 2, -2, 6, -4, 10, -6, 14])


def test_gpu_backends_take_numpy_complex_arrays_only():
    """On the GPU backends a complex NumPy array's real-part storage goes to MLX (the printed
    kernels see float pairs); complex device arrays there are an error naming the argument."""
    from metalbench import cuda

    @cuda.jit
    def k(z):
        z[0] = z[1] * 2j

    sp = k.specialization(k.bind_inplace((np.zeros(2, np.complex64),), {}, (1, 1, 1), (1, 1, 1), "sim", None))
    for backend in ("metal", "cuda"):
        assert "float" in sp.source(backend)
    bound = k.bind_inplace((cuda.to_device(np.zeros(2, np.complex64)),), {}, (1, 1, 1), (1, 1, 1), "sim", None)
    with pytest.raises(KernelLaunchError, match="'z'.*passed as NumPy arrays"):
        k.specialization(bound).run_inplace(bound.data, bound.grid, bound.threadgroup, "cuda", False)


def test_declared_complex_signatures():
    from metalbench import cuda
    from metalbench.numba_compat.host import SignatureMismatch

    @cuda.jit("void(complex64[:], float32[:])")
    def k(z, out):
        i = cuda.grid(1)
        out[i] = z.imag[i]

    z = np.array([1 + 2j, 3 - 4j], np.complex64)
    out = np.zeros(2, np.float32)
    k[1, 2](z, out)
    np.testing.assert_array_equal(out, z.imag)
    with pytest.raises(SignatureMismatch, match=r"\(complex128\[:\], float32\[:\]\)"):
        k[1, 2](z.astype(np.complex128), out)
    with pytest.raises(SignatureMismatch):
        k[1, 2](np.zeros((2, 2), np.float32), out)    # the real-part storage is not a complex array
