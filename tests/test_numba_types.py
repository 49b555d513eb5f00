"""Numba's type names and signatures in metalbench.cuda: the import line alone is enough.

Typed signatures, types used as values in kernels (casts, array dtypes), types, atomics
and device functions passed as arguments, ``@cuda.jit`` functions called as device
functions. Values are checked against what Numba computes (written out; the same
programs run on Numba's simulator in test_numba_semantics.py's style where noted).
"""
import os

import numpy as np
import pytest

from metalbench import cuda
from metalbench.cuda import float32, float64, int8, int32, int64, uint8, uint32, void
from metalbench.cuda import types
from metalbench.numba_compat.host import SignatureMismatch
from metalbench.numba_compat import nbtypes


@pytest.fixture(autouse=True)
def _backend():
    cuda.set_backend(os.environ.get("METALBENCH_TEST_BACKEND", "sim"))
    yield
    cuda.set_backend(None)


def test_names_and_types_module():
    from metalbench.cuda.types import (boolean, complex64, complex128, double, intp, uintp, b1, f4,  # noqa: F401
                                       i8, u4, CPointer, NoneType)
    assert types.float32 is float32 and types.intp is int64 and double is float64 and f4 is float32
    assert str(float32[:]) == "array(float32, 1d, A)"
    assert float32[:, ::1] == types.Array(float32, 2, "C") and float32[::1, :].layout == "F"
    assert types.Tuple((int32, int32)) == types.UniTuple(int32, 2)
    assert types.void is types.none and isinstance(types.none, NoneType)
    assert int32 in types.integer_domain and float64 in types.real_domain
    assert types.Optional(int64).type is int64
    assert float32(1.25) == np.float32(1.25) and type(uint8(7)) is np.uint8
    assert nbtypes.typeof(1) is int64 and nbtypes.typeof(np.zeros((2, 2), np.float32)) == float32[:, ::1]
    assert nbtypes.from_dtype(np.dtype("u4")) is uint32


def test_signatures():
    sig = void(float32[:], int32)
    assert sig.return_type is types.none and sig.args == (float32[:], int32)
    assert nbtypes.parse_signature("void(float32[:], int32)") == sig
    assert nbtypes.parse_signature("float64(int32[:, ::1], f4)").args[1] is float32
    assert nbtypes.parse_signature("(int32,)").args == (int32,)
    assert nbtypes.parse_signature((int32, float32)).args == (int32, float32)
    with pytest.raises(TypeError, match="signature"):
        nbtypes.parse_signature("void(nosuchtype)")


@cuda.jit("void(float32[:], int32)")
def scale_int(x, k):
    i = cuda.grid(1)
    if i < x.size:
        x[i] = x[i] * k


@cuda.jit([void(int32[:], int32), void(float64[:], float64)])
def add_one(x, v):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += v + 1


def test_typed_kernel_converts_scalars_and_checks_arrays():
    x = np.arange(5, dtype=np.float32)
    scale_int[1, 8](x, 3)
    np.testing.assert_array_equal(x, np.arange(5) * 3)
    with pytest.raises(SignatureMismatch, match="no signature matches"):
        scale_int[1, 8](np.zeros(4, np.float64), 3)
    with pytest.raises(TypeError):          # Numba raises a TypeError here too
        scale_int[1, 8](np.zeros(4, np.int32), 3)
    a = np.zeros(3, np.int32)
    add_one[1, 4](a, 2)
    b = np.zeros(3, np.float64)
    add_one[1, 4](b, 0.25)
    np.testing.assert_array_equal(a, [3, 3, 3])
    np.testing.assert_array_equal(b, [1.25, 1.25, 1.25])


@cuda.jit("int32(float64, float64)", device=True)
def trunc_sum(a, b):
    return a + b                   # float64 result, converted to the declared int32


@cuda.jit(device=True)
def apply2(op, a, b):
    return op(a, b)


@cuda.jit(device=True)
def cast_with(ty, v):
    return ty(v)


@cuda.jit(device=True)
def atomically(fn, arr, i, v):
    return fn(arr, i, v)


@cuda.jit
def plain_kernel_used_as_device(a, b):
    return a * b + 1


@cuda.jit
def uses_values(r, ri, x):
    r[0] = trunc_sum(1.75, 2.5)               # 4.25 -> 4
    r[1] = apply2(trunc_sum, 0.5, 0.75)       # a device function passed as a value
    r[2] = cast_with(uint8, x[0])             # a type passed as a value: uint8(300.0) wraps? (float->uint8)
    r[3] = cast_with(int8, ri[1])             # int -> int8 wraps
    r[4] = uint32(-1)
    r[5] = float32(x[1])                      # float64 -> float32 rounds
    r[6] = plain_kernel_used_as_device(3, 4)
    atomically(cuda.atomic.add, ri, 0, 5)
    old = atomically(cuda.atomic.max, ri, 1, 7)
    r[7] = old
    tmp = cuda.local.array(4, int8)          # a Numba type as a local array's dtype
    tmp[0] = 200
    r[8] = tmp[0]
    sh = cuda.shared.array(shape=(2, 3), dtype=float32)
    sh[1, 2] = 0.1
    r[9] = sh[1, 2]


def test_types_functions_and_atomics_as_values():
    r = np.zeros(10, np.float64)
    ri = np.array([1, 300], np.int64)
    x = np.array([65.0, 0.1])
    uses_values[1, 1](r, ri, x)
    want = [4, 1, 65, 44, 4294967295, float(np.float32(0.1)), 13, 300, -56, float(np.float32(0.1))]
    np.testing.assert_array_equal(r, want)
    np.testing.assert_array_equal(ri, [6, 300])


def test_py_func_and_device_function_repr():
    assert scale_int.py_func.__name__ == "scale_int"
    assert trunc_sum.py_func(1.0, 2.0) == 3.0
    assert "device function" in repr(trunc_sum)


def test_kernel_with_signature_object_decorator_and_reuse():
    k = cuda.jit(void(float64[:]))(lambda_free_kernel)
    a = np.zeros(4)
    k[1, 4](a)
    np.testing.assert_array_equal(a, [0.0, 0.5, 1.0, 1.5])


def lambda_free_kernel(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] = i / 2


def test_python_casts_are_numba_types():
    @cuda.jit
    def k(r, x):
        r[0] = float(x[0]) / 3          # float64
        r[1] = int(x[1] * 2.5)          # int64, truncates
        r[2] = int(-2.5)
    r = np.zeros(3)
    k[1, 1](r, np.array([1, 3], np.int32))
    np.testing.assert_array_equal(r, [1 / 3, 7, -2])
