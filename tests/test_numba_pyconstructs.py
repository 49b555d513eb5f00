"""Python constructs in Numba kernels that fold at compile time: ``x is None`` on an
optional argument (kernel and device function), module-level NumPy arrays read as
constants, tuple comparisons, tuples of tuples and of arrays as arguments, code after a
``return`` in a compile-time branch. Each
program runs on metalbench against the values written here and, where the Numba venv
exists, against Numba's own simulator (tests/numba_oracle.py)."""
import numpy as np
import pytest

from numba_oracle import Oracle, assert_same, run_metalbench, program_registry

PROGRAMS, EXPECTED, program = program_registry()


program("is_none", {"r": [3.0, 7.0, 1.0, 0.0, 5.0, 1.0]})('''
import numpy as np
from numba import cuda

@cuda.jit(device=True)
def pick(a, b):
    if b is None:
        return a
    return a + b

@cuda.jit
def k(r, x, y):
    i = cuda.grid(1)
    if i == 0:
        if y is None:
            r[0] = pick(x[0], None)
            r[2] = 1.0
        else:
            r[1] = pick(x[0], y[0])
            r[3] = y is None
        r[5] = y is not None or x is not None

r = np.zeros(6)
k[1, 4](r, np.array([3.0]), None)
k[1, 4](r, np.array([3.0]), np.array([4.0]))
r[4] = 5.0
RESULT = {"r": r}
''')

program("global_array", {"out": [10.0, 21.0, 32.0, 43.0], "n": [4, 4, 4, 4]})('''
import numpy as np
from numba import cuda

PRICES = np.array([10.0, 20.0, 30.0, 40.0])
TABLE = np.arange(6, dtype=np.int32).reshape(2, 3)

@cuda.jit
def k(out, n):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = PRICES[i] + i
        n[i] = PRICES.size + TABLE[0, 0]

out = np.zeros(4)
n = np.zeros(4, np.int64)
k[1, 4](out, n)
RESULT = {"out": out, "n": n}
''')

program("tuple_compare", {"r": [1, 0, 0, 1]})('''
import numpy as np
from numba import cuda

@cuda.jit
def k(r, a, b):
    t = (a, b)
    r[0] = t == (a, b)
    r[1] = t != (a, b)
    r[2] = (a, b) == (b, a)
    r[3] = (a, b + 1) != (a, b)

r = np.zeros(4, np.int64)
k[1, 1](r, 2, 3)
RESULT = {"r": r}
''')

program("len_of_tuple_items", {"r": [3, 0, 2, 3, 5, 6, 8, 9, 10, 2, 3, 4, 7]})('''
import numpy as np
from numba import cuda

@cuda.jit
def k(r, x, y):
    r[0] = len(x)
    r[1] = len(x[0])
    r[2] = len(x[1])
    r[3] = len(x[2])
    r[4] = x[1][0]
    r[5] = x[1][1]
    r[6] = x[2][0]
    r[7] = x[2][1]
    r[8] = x[2][2]
    r[9] = len(y)
    r[10] = len(y[0])
    r[11] = y[0][2]
    r[12] = y[1]

r = np.zeros(13, np.int64)
k[1, 1](r, ((), (5, 6), (8, 9, 10)), ((6, 5, 4), 7))
RESULT = {"r": r}
''')

program("tuple_of_arrays", {"x0": [4.0] * 10, "r": [0, 2, 10, 4, 3]})('''
import numpy as np
from numba import cuda

@cuda.jit
def add(x):
    i = cuda.grid(1)
    if i < len(x[0]):
        x[0][i] = x[1][i] + x[2][i]

@cuda.jit
def mixed(r, x):
    r[0] = x[0][0]
    r[1] = x[0][1]
    r[2] = x[1]
    r[3] = x[2][0]
    r[4] = x[2][1]

x0 = np.zeros(10)
x1 = np.ones_like(x0)
add[1, 16]((x0, x1, x1 * 3))
r = np.zeros(5, np.int64)
mixed[1, 1](r, (2 * np.arange(2, dtype=np.int64), 10, (4, 3)))
RESULT = {"x0": x0, "r": r}
''')

program("reshape_run_time_minus_one", {"a": list(range(25)), "b": list(range(25)), "c": list(range(24))})('''
import numpy as np
from numba import cuda

@cuda.jit
def flat(arr, newshape, got):
    y = arr.reshape(newshape)
    for i in range(y.shape[0]):
        got[i] = y[i]

@cuda.jit
def three(arr, newshape, got):
    y = arr.reshape(newshape)
    for i in range(y.shape[0]):
        for j in range(y.shape[1]):
            for k in range(y.shape[2]):
                got[i, j, k] = y[i, j, k]

arr = np.arange(25).reshape(5, 5)
a = np.zeros(25, np.int64)
flat[1, 1](arr, -1, a)
b = np.zeros((5, 1, 5), np.int64)
three[1, 1](arr, (5, -1, 5), b)
c = np.zeros((2, 3, 4), np.int64)
three[1, 1](np.arange(24), (-1, 3, 4), c)
RESULT = {"a": a, "b": b.ravel(), "c": c.ravel()}
''')

program("is_true_false", {"a": [1, 1, 5, 7], "b": [0, 666, 5, 0]})('''
import numpy as np
from numba import cuda

FLAG = True

@cuda.jit
def k(pred, stack):
    i = 0
    if pred is True:
        stack[i] = 1
        i += 1
        stack[i] = 1
    if FLAG is True:
        stack[2] = 5
    if pred is not False:
        stack[3] = 7

a = np.array([0, 666, 0, 0])
k[1, 1](True, a)
b = np.array([0, 666, 0, 0])
k[1, 1](False, b)
RESULT = {"a": a, "b": b}
''')

program("enum_members", {"a": [0, 0, 1, 1, 1], "o": [146, 301]})('''
import enum
import numpy as np
from numba import cuda

class Color(enum.Enum):
    red = 1
    green = 2

class Shape(enum.IntEnum):
    circle = 1

class RequestError(enum.IntEnum):
    not_found = 404
    internal_error = 500

@cuda.jit(device=True)
def inner(pred):
    return Color.red if pred else Color.green

@cuda.jit
def k(a, pred):
    a[0] = Color.red == Color.green
    a[1] = Color["red"] == Color["green"]
    a[2] = Color.red == Color.red
    a[3] = inner(pred) == Color.red
    a[4] = inner(not pred) == Color.green

@cuda.jit
def coerce(x, out, j):
    if x > RequestError.internal_error:
        out[j] = x - RequestError.not_found
    else:
        out[j] = x + Shape.circle

a = np.zeros(5, np.bool_)
k[1, 1](a, True)
o = np.zeros(2, np.int32)
coerce[1, 1](550, o, 0)
coerce[1, 1](300, o, 1)
RESULT = {"a": a, "o": o}
''')

ORACLE = Oracle(PROGRAMS)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_written_values(name):
    got = run_metalbench(PROGRAMS[name], name)
    for k, w in EXPECTED[name].items():
        np.testing.assert_array_equal(got[k], np.array(w, dtype=got[k].dtype), err_msg=f"{name}: {k}")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_against_numba_simulator(name):
    assert_same(run_metalbench(PROGRAMS[name], name), ORACLE[name])


def test_is_with_a_number_is_an_error_naming_it():
    from metalbench import cuda
    from metalbench.errors import KernelSyntaxError

    @cuda.jit
    def k(r, x):
        if x is 3:  # noqa: F632
            r[0] = 1

    cuda.set_backend("sim")
    try:
        with pytest.raises(KernelSyntaxError, match="`is` compares with None, True or False only") as e:
            k[1, 1](np.zeros(1), 2)
        assert "if x is 3" in str(e.value)
    finally:
        cuda.set_backend(None)


def test_tuple_ordering_is_an_error_naming_it():
    from metalbench import cuda
    from metalbench.errors import KernelTypeError

    @cuda.jit
    def k(r, a, b):
        r[0] = (a, b) < (b, a)

    cuda.set_backend("sim")
    try:
        with pytest.raises(KernelTypeError, match="tuples compare with == and != here, not <") as e:
            k[1, 1](np.zeros(1, np.int64), 1, 2)
        assert "r[0] = (a, b) < (b, a)" in str(e.value)
    finally:
        cuda.set_backend(None)


def test_global_array_changed_after_compile_keeps_the_compiled_values():
    """Numba freezes a global array at compile time; so does metalbench (per specialisation)."""
    from metalbench import cuda
    import textwrap
    import tempfile
    import runpy
    import os
    src = textwrap.dedent('''
        import numpy as np
        from metalbench import cuda
        TABLE = np.array([1.0, 2.0])

        @cuda.jit
        def k(out):
            out[0] = TABLE[1]
        ''')
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "m.py")
        open(p, "w").write(src)
        m = runpy.run_path(p)
        cuda.set_backend("sim")
        try:
            out = np.zeros(1)
            m["k"][1, 1](out)
            assert out[0] == 2.0
            m["TABLE"][1] = 9.0
            m["k"][1, 1](out)
            assert out[0] == 2.0
        finally:
            cuda.set_backend(None)


def test_slices_with_negative_steps_against_numpy():
    """x[hi:lo:step] with negative steps (and default bounds) reads what NumPy's view holds,
    and writing through a reversed view lands where NumPy's would."""
    import itertools
    from metalbench import cuda

    @cuda.jit
    def read(x, out, lo, hi):
        v = x[hi:lo:-3]
        w = x[::-2]
        out[0] = len(v)
        for j in range(len(v)):
            out[j + 1] = v[j]
        out[20] = len(w)
        for j in range(len(w)):
            out[21 + j] = w[j]

    @cuda.jit
    def write(x):
        v = x[7:1:-2]
        for j in range(len(v)):
            v[j] = 100 + j

    x = np.arange(20)
    cuda.set_backend("sim")
    try:
        for lo, hi in itertools.product((-30, -5, 0, 3, 19, 25), (-30, -1, 0, 4, 17, 30)):
            out = np.full(40, -7)
            read[1, 1](x, out, lo, hi)
            v, w = x[hi:lo:-3], x[::-2]
            assert out[0] == len(v) and list(out[1:1 + len(v)]) == list(v), (lo, hi)
            assert out[20] == len(w) and list(out[21:21 + len(w)]) == list(w)
        y = np.zeros(10, np.int64)
        write[1, 1](y)
        want = np.zeros(10, np.int64)
        want[7:1:-2] = 100 + np.arange(3)
        np.testing.assert_array_equal(y, want)
    finally:
        cuda.set_backend(None)

