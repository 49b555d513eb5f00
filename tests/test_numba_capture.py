"""Arrays of the Python scope read by Numba kernels: NumPy arrays and metalbench device
arrays, and objects that only expose a metalbench device array's
``__cuda_array_interface__`` (numba-cuda's ForeignArray wrapper). Foreign pointers are
never followed."""

import numpy as np
import pytest

from metalbench import cuda
from metalbench.errors import KernelTypeError


@pytest.fixture(autouse=True)
def _sim():
    cuda.set_backend("sim")      # the interface is a host pointer on the simulator only
    yield
    cuda.set_backend(None)


class Wrapper:
    """Hides a device array behind its interface, as numba-cuda's ForeignArray does."""

    def __init__(self, arr):
        self._arr = arr
        self.__cuda_array_interface__ = arr.__cuda_array_interface__


def test_wrapped_device_array_read_in_kernel_and_device_function():
    host = np.array([7.0, 8.0, 9.0], np.float32)
    g = Wrapper(cuda.to_device(host))
    h = Wrapper(cuda.to_device(np.arange(6, dtype=np.int64).reshape(2, 3)))

    @cuda.jit(device=True)
    def pick(i):
        return h[1, i]

    @cuda.jit
    def k(out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = g[i] + pick(i)

    out = np.zeros(3, np.float32)
    k[1, 4](out)
    np.testing.assert_array_equal(out, host + np.array([3, 4, 5], np.float32))


class Foreign:
    """An interface whose pointer metalbench did not hand out (another library's memory)."""

    def __init__(self):
        self._keep = np.zeros(3, np.float32)
        self.__cuda_array_interface__ = {"shape": (3,), "typestr": "<f4", "data": (self._keep.ctypes.data + 4096,
                                                                                    False), "version": 3}


def test_foreign_memory_is_not_followed():
    f = Foreign()

    @cuda.jit
    def k(out):
        out[0] = f[0]

    with pytest.raises(KernelTypeError, match="'f'"):
        k[1, 1](np.zeros(1, np.float32))


def test_device_array_of_the_scope_is_read_as_it_is_at_each_launch():
    """Numba reads a captured device array through its pointer: a host update between
    launches is seen (metalbench recompiles when the contents changed)."""
    prices = cuda.to_device(np.array([10.0, 25.0, 5.0], np.float32))
    wrapped = Wrapper(prices)

    @cuda.jit
    def totals(q, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = q[i] * prices[i] + wrapped[i]

    q = np.ones(3, np.float32)
    out = np.zeros(3, np.float32)
    totals[1, 4](q, out)
    np.testing.assert_array_equal(out, [20.0, 50.0, 10.0])
    prices.copy_to_device(np.array([1.0, 2.0, 3.0], np.float32))
    totals[1, 4](q, out)
    np.testing.assert_array_equal(out, [2.0, 4.0, 6.0])
    totals[1, 4](q, out)                       # unchanged since: the cached kernel
    np.testing.assert_array_equal(out, [2.0, 4.0, 6.0])


def test_numpy_arrays_of_the_scope_cannot_be_written_device_arrays_can():
    """A NumPy array of the Python scope is a constant (Numba's too); a device array is
    captured by reference, so the kernel's writes land in it (numba-cuda's test_mutability)."""
    g = np.zeros(4, np.float32)
    d = cuda.to_device(np.zeros(4, np.float32))

    @cuda.jit
    def write_numpy():
        g[cuda.grid(1)] = 1.0

    @cuda.jit
    def write_device():
        i = cuda.grid(1)
        d[i] = d[i] + i + 1.0

    with pytest.raises(KernelTypeError, match="'g' is an array of the Python scope, a constant in the "
                                              "kernel: it cannot be written"):
        write_numpy[1, 4]()
    write_device[1, 4]()
    write_device[1, 4]()
    np.testing.assert_array_equal(d.copy_to_host(), 2 * (np.arange(4) + 1.0))


def test_zero_dimensional_arrays_index_with_an_empty_tuple():
    g = cuda.to_device(np.array(42.0, np.float32))

    @cuda.jit
    def k(out, h):
        out[()] = g[()] * 2.0 + h[()]

    out = cuda.device_array((), np.float32)
    k[1, 1](out, np.array(0.5))
    assert out.copy_to_host() == 84.5
    one = np.ones(3, np.float32)        # a 1-d array keeps Numba's error for x[()] of it (a view)
    with pytest.raises(KernelTypeError, match="1 dimension"):
        k[1, 1](out, one)
