"""Array methods in Numba kernels besides reductions: ``a.copy()``/``np.copy(a)`` (a
thread-local C-contiguous copy of an array whose shape is known at compile time) and
``a[i:j].view(dtype)`` at a run-time offset (the offset rescaled in whole elements),
against Numba's simulator."""
import os

import numpy as np
import pytest

from metalbench import cuda
from metalbench.errors import KernelLaunchError, KernelTypeError
from numba_oracle import Oracle, assert_same, program_registry, run_metalbench

PROGRAMS, EXPECTED, program = program_registry()

program("copies", {"out": [103.0, 4.0, 2.0, 5.0, 1.0, 15.0]})("""
import numpy as np
from numba import cuda

val = np.array([1, 2, 3])[::-1]
grid = np.arange(6.0).reshape(2, 3).T

@cuda.jit
def k(out):
    q = val.copy()
    w = np.copy(val)
    w[0] = 100
    g = grid.copy()
    for i in range(3):
        out[i] = q[i] + w[i]
    out[3] = g[2, 1]
    out[4] = g[1, 0]
    out[5] = g.sum()

out = np.zeros(6)
k[1, 1](out)
RESULT = {"out": out}
""")

program("reinterpret_slices", {"out": [50462976, 117835012, 185207048, -66052]})("""
import numpy as np
from numba import cuda

@cuda.jit
def k(b, starts, out):
    i = cuda.grid(1)
    if i < starts.size:
        s = starts[i]
        out[i] = b[s:s + 4].view(np.int32)[0]

b = np.arange(256, dtype=np.uint8)
out = np.zeros(4, np.int32)
k[1, 4](b, np.array([0, 4, 8, 252]), out)
RESULT = {"out": out}
""")




ORACLE = Oracle(PROGRAMS)


@pytest.mark.parametrize("name", ["copies", "reinterpret_slices", "empty_arguments", "zero_d_captured"])
def test_array_methods_against_numba_simulator(name):
    if name == "empty_arguments" and os.environ.get("METALBENCH_TEST_BACKEND", "sim") != "sim":
        # empty arrays run on sim only so far: a GPU backend refuses them at launch, naming them
        with pytest.raises(KernelLaunchError, match="'arr' is empty"):
            run_metalbench(PROGRAMS[name], name)
        return
    got = run_metalbench(PROGRAMS[name], name)
    assert_same(got, {k: np.asarray(v) for k, v in EXPECTED[name].items()})
    assert_same(got, ORACLE[name])


def test_copy_of_an_array_with_a_run_time_shape_is_an_error_naming_it():
    @cuda.jit
    def k(a, out):
        c = a.copy()
        out[0] = c[0]

    with pytest.raises(KernelTypeError, match="shape must be known at compile time") as e:
        k[1, 1](np.ones(4), np.zeros(1))
    assert "c = a.copy()" in str(e.value)


program("empty_arguments", {"got": [0.0, 0.0, 0.0], "shape": [1, 0, 2]})("""
import numpy as np
from numba import cuda

@cuda.jit
def k(arr, got, shape):
    y = arr.reshape((1, 0, 2))
    shape[0] = y.shape[0]
    shape[1] = y.shape[1]
    shape[2] = y.shape[2]
    for i in range(y.shape[0]):
        for j in range(y.shape[1]):
            got[j] = y[i, j, 0]
    got[0] = arr.size
    got[1] = arr.sum()
    got[2] = np.count_nonzero(arr)

got = np.zeros(3); shape = np.zeros(3, np.int64)
k[1, 1](np.zeros(0), got, shape)
RESULT = {"got": got, "shape": shape}
""")


program("zero_d_captured", {"out": [3.5, 4.5, 0.0]})("""
import numpy as np
from numba import cuda

z = np.array(3.5)
c = np.array(0)

@cuda.jit
def k(out):
    out[0] = z[()]
    out[1] = z.sum() + z.ndim + z.size
    out[2] = np.count_nonzero(c) + c.max() + z.argmax()

out = np.zeros(3)
k[1, 1](out)
RESULT = {"out": out}
""")
