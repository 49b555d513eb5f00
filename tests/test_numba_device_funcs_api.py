"""numba.cuda names a module may use only in some of its tests (cuda.CUSource,
cuda.compile_all): importable, and linking external code is an error that says why; a
device function launched as a kernel is Numba's RuntimeError."""
import numpy as np
import pytest

from metalbench import cuda
from metalbench.errors import MetalbenchError


def test_cu_source_is_importable_and_linking_says_why():
    from metalbench.cuda import CUSource, compile_all  # noqa: F401
    src = cuda.CUSource('extern "C" __device__ int times2(int *out, int a) { *out = a * 2; return 0; }')
    assert "times2" in src.data
    with pytest.raises(MetalbenchError, match="declare_device"):
        cuda.declare_device("times2", "int32(int32)", link=src)


def test_device_function_launched_as_a_kernel_is_a_runtime_error():
    @cuda.jit(device=True)
    def f():
        pass

    with pytest.raises(RuntimeError, match="Cannot compile a device function as a kernel"):
        f[1, 1]()


def test_typed_device_function_still_casts_its_arguments():
    @cuda.jit("int32(float32)", device=True)
    def trunc(x):
        return x

    @cuda.jit
    def k(out, x):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = trunc(x[i])

    x = np.array([1.7, -2.5, 3.2], np.float32)
    out = np.zeros(3)
    k.configure(backend="sim")[1, 4](out, x)
    np.testing.assert_array_equal(out, [1.0, -2.0, 3.0])
