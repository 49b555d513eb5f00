"""CUDA vector types in Numba kernels (``cuda.float32x4``, ``cuda.short2`` ...;
metalbench/numba_compat/vectors.py): construction from scalars and smaller vectors,
component reads, locals, loops over tuples of vectors, device functions taking and
returning them. Checked against values written out and Numba's simulator."""
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


BUILD = '''
import numpy as np
from numba import cuda

@cuda.jit(device=True)
def swap(v):
    return cuda.float64x2(v.y, v.x)

@cuda.jit(device=True)
def dot3(a, b):
    return a.x * b.x + a.y * b.y + a.z * b.z

@cuda.jit
def k(out, x):
    i = cuda.grid(1)
    if i < x.size:
        a = cuda.float64x2(x[i], 2 * x[i])
        b = swap(a)
        c = cuda.float64x3(b, x[i] + 1)
        d = cuda.double4(1.0, c)
        out[i, 0] = d.x
        out[i, 1] = d.y
        out[i, 2] = d.z
        out[i, 3] = d.w
        out[i, 4] = dot3(c, c)
        s = 0.0
        for v in (a, b):
            s += v.x - v.y
        out[i, 5] = s
        e = cuda.int32x1(i)
        f = cuda.int32x4(e, e, cuda.int2(7, -3))
        out[i, 6] = f.x + f.y + f.z * 10 + f.w * 100

x = np.linspace(-2.0, 3.0, 9)
out = np.zeros((9, 7))
k[3, 4](out, x)
RESULT = {"out": out}
'''

PROGRAMS = {"build": BUILD}
ORACLE = Oracle(PROGRAMS)


def _expected_build():
    x = np.linspace(-2.0, 3.0, 9)
    i = np.arange(9)
    c = np.stack([2 * x, x, x + 1], 1)
    return np.stack([np.ones(9), 2 * x, x, x + 1, (c * c).sum(1), (x - 2 * x) + (2 * x - x),
                     2 * i + 7 * 10 - 300], 1)


def test_build_and_read():
    got = run_metalbench(BUILD)
    np.testing.assert_allclose(got["out"], _expected_build(), rtol=1e-15)


def test_build_and_read_matches_numba_simulator():
    assert_same(run_metalbench(BUILD), ORACLE["build"])


def test_elements_convert_as_c_casts():
    """Each element converts to the base type as C's cast does (a GPU stores the base
    type; Numba's simulator keeps Python numbers, so this is checked against NumPy).
    Float -> integer saturates, integer -> integer wraps (metalbench's scalar rules)."""
    @cuda.jit
    def k(out, f):
        v = cuda.char2(f[0], f[1])
        w = cuda.ushort3(f[2], cuda.ushort2(v.x, v.y))
        x = cuda.float32x1(f[3])
        out[0] = v.x
        out[1] = v.y
        out[2] = w.x
        out[3] = w.y
        out[4] = w.z
        out[5] = x.x

    f = np.array([-1.7, 100.9, 70000.0, 0.1])
    out = np.zeros(6)
    k[1, 1](out, f)
    c = np.int8(np.trunc(f[0])), np.int8(np.trunc(f[1]))
    want = [c[0], c[1], 65535,   # float -> uint16 saturates (CUDA's cvt.rzi.sat)
             np.uint16(np.int64(c[0]) & 0xFFFF), c[1],
            np.float32(f[3])]
    np.testing.assert_array_equal(out, np.array(want, dtype=np.float64))


def test_aliases_are_the_same_objects():
    assert cuda.float4 is cuda.float32x4 and cuda.double2 is cuda.float64x2
    assert cuda.short2 is cuda.int16x2 and cuda.ulonglong1 is cuda.uint64x1 and cuda.long3 is cuda.int64x3
    from metalbench.cuda.simulator.vector_types import vector_types
    assert len(vector_types) == 40
    assert vector_types["uint8x3"].aliases == ["uchar3"]
    assert vector_types["int64x2"].aliases == ["long2", "longlong2"]


@pytest.mark.parametrize("body, msg", [
    ("v = cuda.float32x3(1.0, 2.0)", "needs 3 elements in all, got 2"),
    ("v = cuda.float32x2(cuda.int32x2(1, 2))", "takes float32 values and float32 vectors"),
    ("v = cuda.float32x2(1.0, 2.0)\n    out[0] = v.w", "no field 'w'"),
])
def test_errors_name_the_construct(body, msg):
    src = f"def k(out):\n    {body}\n"
    ns = {"cuda": cuda}
    exec(compile(src, "<vec>", "exec"), ns)
    import linecache
    linecache.cache["<vec>"] = (len(src), None, src.splitlines(True), "<vec>")
    k = cuda.jit(ns["k"])
    with pytest.raises(KernelTypeError, match=msg) as e:
        k[1, 1](np.zeros(1, np.float32))
    assert "line" in str(e.value) or "<vec>" in str(e.value)
