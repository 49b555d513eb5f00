"""``cuda.random`` (xoroshiro128+) and ``cuda.Reduce``: the same programs on Numba's
simulator and on metalbench; states and uniform draws must be bit-identical."""
import math

import numpy as np
import pytest

from metalbench import cuda
from metalbench.numba_compat import random as R
from numba_oracle import Oracle, run_metalbench

RNG_PROGRAM = '''
import numpy as np
from numba import cuda
from numba.cuda.random import (create_xoroshiro128p_states, xoroshiro128p_uniform_float32,
                               xoroshiro128p_uniform_float64, xoroshiro128p_normal_float32,
                               xoroshiro128p_normal_float64, xoroshiro128p_next, init_xoroshiro128p_states)

@cuda.jit
def draw(states, u32, u64, n32, n64, raw):
    i = cuda.grid(1)
    if i < u32.shape[0]:
        for j in range(u32.shape[1]):
            u32[i, j] = xoroshiro128p_uniform_float32(states, i)
            u64[i, j] = xoroshiro128p_uniform_float64(states, i)
            n32[i, j] = xoroshiro128p_normal_float32(states, i)
            n64[i, j] = xoroshiro128p_normal_float64(states, i)
            raw[i, j] = xoroshiro128p_next(states, i)

n, k = 37, 5
st = create_xoroshiro128p_states(n, seed=12345)
first = st.copy_to_host()
u32 = np.zeros((n, k), np.float32)
u64 = np.zeros((n, k))
n32 = np.zeros((n, k), np.float32)
n64 = np.zeros((n, k))
raw = np.zeros((n, k), np.uint64)
draw[2, 32](st, u32, u64, n32, n64, raw)
sub = create_xoroshiro128p_states(6, seed=2**63 + 5, subsequence_start=5).copy_to_host()
re = cuda.device_array(4, dtype=first.dtype)
init_xoroshiro128p_states(re, 99, subsequence_start=2)
RESULT = {"first": first.view(np.uint64), "after": st.copy_to_host().view(np.uint64), "u32": u32, "u64": u64,
          "n32": n32, "n64": n64, "raw": raw, "sub": sub.view(np.uint64), "re": re.copy_to_host().view(np.uint64)}
'''

REDUCE_PROGRAM = '''
import numpy as np
from numba import cuda
sum_reduce = cuda.Reduce(lambda a, b: a + b)
max_reduce = cuda.Reduce(lambda a, b: max(a, b))
A = (np.arange(1000) % 37 - 11).astype(np.float64)
res = cuda.to_device(np.zeros(1))
sum_reduce(A, res=res, init=2)
RESULT = {"sum": sum_reduce(A), "max": max_reduce(A, init=-100),
          "init": sum_reduce(A, init=3), "res": res.copy_to_host(), "ints": sum_reduce(np.arange(50, dtype=np.int32)),
          "empty": sum_reduce(np.zeros(0), init=4)}
'''

ORACLE = Oracle({"rng": RNG_PROGRAM, "reduce": REDUCE_PROGRAM})


def mb_program(text, name):
    return run_metalbench(text.replace("from numba.cuda.random", "from metalbench.cuda.random"), name)


def test_random_bit_identical_to_numba():
    got, want = mb_program(RNG_PROGRAM, "rng"), ORACLE["rng"]
    for k in ("first", "after", "u32", "u64", "raw", "sub", "re"):
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)
        assert got[k].dtype == want[k].dtype
    # Box-Muller: the kernel's float type (numba-cuda on a GPU); Numba's simulator uses Python floats
    np.testing.assert_allclose(got["n32"], want["n32"], rtol=0, atol=1e-6)
    np.testing.assert_allclose(got["n64"], want["n64"], rtol=0, atol=1e-6)


def test_reduce_matches_numba():
    got, want = run_metalbench(REDUCE_PROGRAM, "reduce"), ORACLE["reduce"]
    for k in want:
        np.testing.assert_array_equal(np.asarray(got[k]), want[k], err_msg=k)
        if k != "empty":    # numba-cuda converts init to the array's dtype; its simulator returns it as given
            assert np.asarray(got[k]).dtype == want[k].dtype, k


@pytest.fixture(autouse=True)
def _sim():
    cuda.set_backend("sim")
    yield
    cuda.set_backend(None)


def test_states_reproducible_and_subsequences_line_up():
    s1 = cuda.random.create_xoroshiro128p_states(10, seed=1).copy_to_host()
    assert s1.dtype == R.xoroshiro128p_dtype and len(np.unique(s1)) == 10
    s2 = cuda.random.create_xoroshiro128p_states(10, seed=1, subsequence_start=3).copy_to_host()
    np.testing.assert_array_equal(s1[3:], s2[:-3])
    np.testing.assert_array_equal(cuda.random.create_xoroshiro128p_states(10, seed=1, stream=cuda.stream())
                                  .copy_to_host(), s1)
    # the known first state: SplitMix64 of the seed, in both words
    z = R._splitmix(1)
    assert int(s1[0]["s0"]) == z == int(s1[0]["s1"]) == 10451216379200822465


def test_vectorised_jump_equals_the_reference_jump():
    rng = np.random.default_rng(3)
    s0, s1 = rng.integers(0, 2**63, 20, dtype=np.uint64) * 2 + 1, rng.integers(0, 2**63, 20, dtype=np.uint64)
    r0, r1 = R._apply(R._jump_matrix(), s0, s1)
    for a, b, c, d in zip(s0, s1, r0, r1):
        assert R._jump_scalar(int(a), int(b)) == (int(c), int(d))
    p0, p1 = R._apply(R._power(3), s0[:3], s1[:3])
    for a, b, c, d in zip(s0[:3], s1[:3], p0, p1):
        x = (int(a), int(b))
        for _ in range(3):
            x = R._jump_scalar(*x)
        assert x == (int(c), int(d))


@cuda.jit
def uniform_kernel(states, out, count):
    i = cuda.grid(1)
    for j in range(count):
        out[i * count + j] = cuda.random.xoroshiro128p_uniform_float32(states, i)


def test_uniform_statistics():
    states = cuda.random.create_xoroshiro128p_states(64, seed=1)
    out = np.zeros(64 * 32, np.float32)
    uniform_kernel[2, 32](states, out, 32)
    assert abs(out.mean() - 0.5) < 1.5e-2 and abs(out.std() - 1 / (2 * math.sqrt(3))) < 6e-3
    assert out.min() >= 0 and out.max() <= 1


def test_reduce_plain():
    s = cuda.Reduce(lambda a, b: a + b)
    for n in (1, 15, 16, 17, 1025, 34567):
        a = np.arange(n, dtype=np.float64) + 1
        assert s(a) == a.sum()
        assert s(cuda.to_device(a)) == a.sum()
    assert cuda.reduce(lambda a, b: a * b)(np.arange(1, 8, dtype=np.float64), init=1) == 5040
    assert s(np.arange(100.0), size=10) == 45.0
    with pytest.raises(TypeError, match="only support 1D array"):
        s(np.zeros((2, 2)))
