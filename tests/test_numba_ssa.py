"""Names that change what they denote, as Numba's SSA allows: a tuple parameter rebound
to one of its items under a compile-time condition, a loop variable rebound to an array
for the rest of the loop body; a rebinding Numba would refuse (a run-time branch that
leaves the name with two types) stays an error at its line."""
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


@pytest.mark.parametrize("name", sorted(PROGRAMS))
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
