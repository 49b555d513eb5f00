"""Shared memory as Numba programs use it: arrays declared in device functions (one per
specialisation, passed down through nested calls), shapes from compile-time arguments
(a tuple literal, a local constant), dynamic shared memory sized by the launch's fourth
item (slices of it, one array for every ``cuda.shared.array(0, ...)``). Each program runs on
metalbench against the values written here and, where the Numba venv exists, against
Numba's own simulator (tests/numba_oracle.py)."""
import numpy as np
import pytest

from numba_oracle import Oracle, assert_same, run_metalbench, program_registry

PROGRAMS, EXPECTED, program = program_registry()


program("device_shared", {"out": [189.0 - 3 * k for k in range(8)] + [0.0] * 56,
                          "hist": [8] * 64})('''
import numpy as np
from numba import cuda
from numba import float32, uint32

@cuda.jit(device=True)
def mirror(v):
    s = cuda.shared.array(64, float32)
    s[cuda.threadIdx.x] = v
    cuda.syncthreads()
    r = s[63 - cuda.threadIdx.x]
    cuda.syncthreads()
    return r

@cuda.jit(device=True)
def twice(v):
    return mirror(v) + mirror(v * float32(2))

@cuda.jit(device=True)
def histogram(dt, shape, binop):
    tx = cuda.threadIdx.x
    sm = cuda.shared.array(shape, dt)
    if tx < shape[0]:
        for j in range(shape[1]):
            sm[tx, j] = 0
    cuda.syncthreads()
    binop(sm, (tx % shape[0], tx % shape[1]), 1)
    cuda.syncthreads()
    return sm[tx % shape[0], tx % shape[1]]

@cuda.jit
def k(x, out, hist):
    i = cuda.grid(1)
    v = twice(x[i])
    if i < 8:
        out[i] = v
    hist[i] = histogram(uint32, (4, 8), cuda.atomic.add)

x = np.arange(64, dtype=np.float32)
out = np.zeros(64, np.float32)
hist = np.zeros(64, np.uint32)
k[1, 64](x, out, hist)
RESULT = {"out": out, "hist": hist}
''')

program("local_constant_shape", {"ary": list(range(100))})('''
import numpy as np
from numba import cuda
from numba import int32

@cuda.jit
def k(ary):
    N = 100
    sm = cuda.shared.array(N, int32)
    i = cuda.grid(1)
    if i == 0:
        for j in range(N):
            sm[j] = j
    cuda.syncthreads()
    ary[i] = sm[i]

ary = np.zeros(100, np.int32)
k[1, 100](ary)
RESULT = {"ary": ary}
''')

program("dynamic_shared", {"x": [1, 2, 2, 3, 4], "y": list(range(64)), "z": [2.0 * k for k in range(50)]})('''
import numpy as np
from numba import cuda
from numba import int32, float32

@cuda.jit
def overlap(x):
    dyn = cuda.shared.array(0, dtype=int32)
    a = dyn[0:2]
    b = dyn[1:4]
    for j in range(4):
        dyn[j] = j + 1
    x[0] = a[0]
    x[1] = a[1]
    x[2] = b[0]
    x[3] = b[1]
    x[4] = b[2]

@cuda.jit
def chunks(x, y, chunk):
    dyn = cuda.shared.array(0, dtype=int32)
    lo = dyn[0:chunk]
    hi = dyn[chunk:chunk * 2]
    tx = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + tx
    if tx < chunk:
        lo[tx] = x[i]
    else:
        hi[tx - chunk] = x[i]
    cuda.syncthreads()
    if tx == 0:
        for j in range(chunk):
            y[cuda.blockIdx.x * cuda.blockDim.x + j] = lo[j]
            y[cuda.blockIdx.x * cuda.blockDim.x + j + chunk] = hi[j]

@cuda.jit
def two_names(z):
    a = cuda.shared.array(0, dtype=float32)
    b = cuda.shared.array(0, dtype=float32)     # the same memory as a, as in CUDA
    i = cuda.threadIdx.x
    a[i] = i
    cuda.syncthreads()
    z[i] = 2 * b[i]

x = np.zeros(5, np.int32)
overlap[1, 1, 0, 20](x)
y = np.zeros(64, np.int32)
chunks[4, 16, 0, 16 * 4](np.arange(64, dtype=np.int32), y, 8)
z = np.zeros(50, np.float32)
two_names[1, 50, 0, 200](z)
RESULT = {"x": x, "y": y, "z": z}
''')

ORACLE = Oracle(PROGRAMS)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_written_values(name):
    got = run_metalbench(PROGRAMS[name], name)
    for k, w in EXPECTED[name].items():
        np.testing.assert_array_equal(got[k], np.array(w, dtype=got[k].dtype).reshape(got[k].shape),
                                      err_msg=f"{name}: {k}")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_against_numba_simulator(name):
    assert_same(run_metalbench(PROGRAMS[name], name), ORACLE[name])


def _launch_error(text, cfg):
    from metalbench import cuda
    from metalbench.errors import KernelSyntaxError
    import os
    import runpy
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "m.py")
        with open(p, "w") as f:
            f.write(text)
        k = runpy.run_path(p)["k"]
        cuda.set_backend("sim")
        try:
            with pytest.raises(KernelSyntaxError) as e:
                k[cfg](np.zeros(4, np.float32))
        finally:
            cuda.set_backend(None)
    return str(e.value)


def test_dynamic_shared_without_bytes_names_the_fourth_item():
    msg = _launch_error("from metalbench import cuda\nfrom metalbench.cuda import float32\n@cuda.jit\n"
                        "def k(x):\n    d = cuda.shared.array(0, float32)\n    x[0] = d[0]\n", (1, 1))
    assert "dynamic shared memory, and this launch gives it 0 bytes" in msg and "line 5" in msg
    assert "kernel[blocks, threads, 0, nbytes]" in msg


def test_dynamic_shared_of_two_dtypes_is_an_error():
    msg = _launch_error("from metalbench import cuda\nfrom metalbench.cuda import float32, int32\n@cuda.jit\n"
                        "def k(x):\n    d = cuda.shared.array(0, float32)\n    e = cuda.shared.array(0, int32)\n"
                        "    x[0] = d[0] + e[0]\n", (1, 1, 0, 16))
    assert "two dtypes (float32 and int32)" in msg and "line 6" in msg


_PRINTED = """
import numpy as np
from metalbench import cuda
from metalbench.cuda import float32

@cuda.jit(device=True)
def mirror(v):
    s = cuda.shared.array((4, 16), float32)
    s[0, cuda.threadIdx.x] = v
    cuda.syncthreads()
    return s[0, 63 - cuda.threadIdx.x]

@cuda.jit(device=True)
def twice(v):
    return mirror(v) + mirror(v * float32(2))

@cuda.jit
def k(x, out):
    i = cuda.grid(1)
    out[i] = twice(x[i])
"""


@pytest.mark.parametrize("backend", ["cuda", "metal"])
def test_device_function_shared_arrays_are_kernel_arrays_passed_down(backend):
    """The printed code declares the function's array in the kernel and passes it through
    the calling function (one array per specialisation of the function)."""
    import os
    import runpy
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "m.py")
        with open(p, "w") as f:
            f.write(_PRINTED)
        k = runpy.run_path(p)["k"]
        x = np.zeros(64, np.float32)
        text = k.specialization(k.bind_inplace((x, x.copy()), {})).source(backend)
    tg = "__shared__" if backend == "cuda" else "threadgroup"
    assert text.count(f"{tg} float mirror_s") == 1, text
    assert "twice(float v, " in text and "mirror_s)" in text.replace(", thread_position_in_threadgroup", "")
