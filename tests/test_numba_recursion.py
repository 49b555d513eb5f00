"""Recursive device functions, as CUDA (and Numba) allow them: self and mutual recursion
with per-thread depths, typed by the declared signature or by the non-recursive
``return``; runaway recursion is Numba's typing error; Metal refuses recursion by name."""
import numpy as np
import pytest

from metalbench import cuda
from metalbench.errors import KernelTypeError
from numba_oracle import Oracle, assert_same, program_registry, run_metalbench

PROGRAMS, EXPECTED, program = program_registry()

program("fib_and_parity", {"f": [0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610],
                           "p": [1, 0] * 8, "g": [1.0, 1.0, 2.0, 6.0, 24.0, 120.0, 720.0, 5040.0] * 2})("""
import numpy as np
from numba import cuda

@cuda.jit("i8(i8)", device=True)
def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)

@cuda.jit(device=True)
def is_even(n):
    if n == 0:
        return 1
    return is_odd(n - 1)

@cuda.jit(device=True)
def is_odd(n):
    if n == 0:
        return 0
    return is_even(n - 1)

@cuda.jit(device=True)
def fact(x):
    if x <= 1.0:
        return 1.0
    return x * fact(x - 1.0)

@cuda.jit
def k(n, f, p, g):
    i = cuda.grid(1)
    if i < n.size:
        f[i] = fib(n[i])
        p[i] = is_even(n[i])
        g[i] = fact(n[i] % 8)

n = np.arange(16)
f = np.zeros(16, np.int64); p = np.zeros(16, np.int64); g = np.zeros(16)
k[2, 8](n, f, p, g)
RESULT = {"f": f, "p": p, "g": g}
""")

ORACLE = Oracle(PROGRAMS)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_recursion_against_numba_simulator(name):
    got = run_metalbench(PROGRAMS[name], name)
    assert_same(got, {k: np.asarray(v) for k, v in EXPECTED[name].items()})
    assert_same(got, ORACLE[name])


def test_runaway_recursion_is_numbas_typing_error():
    @cuda.jit(device=True)
    def forever(x):
        return forever(x)

    with pytest.raises(KernelTypeError, match="cannot type infer runaway recursion") as e:
        @cuda.jit("void()")
        def k():
            forever(1)
    assert "return forever(x)" in str(e.value)


def test_recursion_with_a_constant_argument_does_not_specialise_forever():
    @cuda.jit(device=True)
    def tri(n):
        if n <= 0:
            return 0
        return n + tri(n - 1)

    @cuda.jit
    def k(r):
        r[0] = tri(100)

    r = np.zeros(1, np.int64)
    cuda.set_backend("sim")
    try:
        k[1, 1](r)
    finally:
        cuda.set_backend(None)
    assert r[0] == 5050


def test_metal_refuses_recursion_naming_the_function():
    @cuda.jit(device=True)
    def down(n):
        if n <= 0:
            return 0
        return down(n - 1)

    @cuda.jit
    def k(r):
        r[0] = down(r[0])

    sp = k.specialization_of(np.zeros(1, np.int32))
    with pytest.raises(KernelTypeError, match="calls itself .recursion., which Metal does not support"):
        sp.source("metal")
