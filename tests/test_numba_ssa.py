"""Names that change what they denote, as Numba's SSA allows: a tuple parameter rebound
to one of its items under a compile-time condition, a loop variable rebound to an array
for the rest of the loop body; a rebinding Numba would refuse (a run-time branch that
leaves the name with two types) stays an error at its line; a function returning None on
some paths has an Optional result, tested with `is None` (Numba's SSA issues)."""
import numpy as np
import pytest

from metalbench import cuda
from metalbench.errors import MetalbenchError
from numba_oracle import Oracle, assert_same, program_registry, run_metalbench

PROGRAMS, EXPECTED, program = program_registry()

program("tuple_param_rebound", {"r": [5, 2, 7]})("""
import numpy as np
from numba import cuda

FIRST = True

@cuda.jit(device=True)
def pick(b, k):
    if FIRST:
        b = b[0]
    return b + k

@cuda.jit
def k(r, t, u):
    r[0] = pick(t, 3)
    r[1] = pick(u, 0)
    r[2] = pick((7, 1), 0)

r = np.zeros(3, np.int64)
k[1, 1](r, (2, 9), (2,))
RESULT = {"r": r}
""")

program("loop_variable_rebound_to_array", {"res": [6.0]})("""
import numpy as np
from numba import cuda

B = np.array([2.0, 5.0])

@cuda.jit
def k(res, m, n):
    for t in range(1, m):
        for idx in range(n):
            t = B
            if idx == 0:
                res[0] = t[0]
            else:
                res[0] += t[0] * (idx % 2)

res = np.zeros(1)
k[1, 1](res, 3, 4)
RESULT = {"res": res}
""")




ORACLE = Oracle(PROGRAMS)


@pytest.mark.parametrize("name", ["tuple_param_rebound", "loop_variable_rebound_to_array", "optional_results"])
def test_rebinding_against_numba_simulator(name):
    got = run_metalbench(PROGRAMS[name], name)
    assert_same(got, {k: np.asarray(v) for k, v in EXPECTED[name].items()})
    assert_same(got, ORACLE[name])


def test_rebinding_a_tuple_in_a_run_time_branch_is_an_error():
    @cuda.jit(device=True)
    def pick(b, k):
        if k > 0:
            b = b[0]
        return b

    @cuda.jit
    def k(r, t, x):
        r[0] = pick(t, x)

    with pytest.raises(MetalbenchError) as e:
        k[1, 1](np.zeros(1, np.int64), (1, 2), 1)
    assert "b = b[0]" in str(e.value)


program("optional_results", {"r": [0, -1, 1, -1, 2, -1], "s": [0.0, 0.0, 1.5, 0.0, 3.0, 0.0]})("""
import numpy as np
from numba import cuda

@cuda.jit(device=True)
def half(x):
    if x % 2 == 0:
        return x // 2
    return None

@cuda.jit(device=True)
def scaled(x):
    if x % 2 == 1:
        return
    return x * 0.75

@cuda.jit
def k(r, s, a):
    i = cuda.grid(1)
    if i < a.size:
        v = half(a[i])
        if v is None:
            r[i] = -1
        else:
            r[i] = v
        w = scaled(a[i])
        if w is not None:
            s[i] = w

a = np.arange(6)
r = np.zeros(6, np.int64); s = np.zeros(6)
k[1, 8](r, s, a)
RESULT = {"r": r, "s": s}
""")
