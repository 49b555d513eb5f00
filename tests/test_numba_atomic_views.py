"""Atomics as Numba programs use them on views (``compare_and_swap(res[i:], ...)``: the
view's offset is part of the index) and on 64-bit integers. Each program runs on
metalbench against the values written here and, where the Numba venv exists, against
Numba's own simulator (tests/numba_oracle.py)."""
import os

import numpy as np
import pytest

from numba_oracle import Oracle, assert_same, run_metalbench, program_registry

PROGRAMS, EXPECTED, program = program_registry()


program("cas_views_and_64bit", {"res32": [1, -1, 3, -1, 5, -1, 7, -1], "old32": [-99, -1] * 4,
                                "res64": [1, -1, 3, -1, 5, -1, 7, -1], "old64": [-99, -1] * 4,
                                "resu": [1, 2**64 - 1, 3, 2**64 - 1, 5, 2**64 - 1, 7, 2**64 - 1]})('''
import numpy as np
from numba import cuda

@cuda.jit
def cas_view(res, old, ary, fill):
    i = cuda.grid(1)
    if i < res.size:
        old[i] = cuda.atomic.compare_and_swap(res[i:], fill, ary[i])

@cuda.jit
def cas_index(res, ary, fill):
    i = cuda.grid(1)
    if i < res.size:
        cuda.atomic.cas(res, i, fill, ary[i])

out = {}
for dt, tag in ((np.int32, "32"), (np.int64, "64")):
    res = np.array([-99, -1] * 4, dt)
    old = np.zeros_like(res)
    cas_view[2, 4](res, old, np.arange(1, 9).astype(dt), dt(-99))
    out["res" + tag], out["old" + tag] = res, old
resu = np.array([5, 2**64 - 1] * 4, np.uint64)
cas_index[2, 4](resu, np.arange(1, 9).astype(np.uint64), np.uint64(5))
out["resu"] = resu
RESULT = out
''')

ORACLE = Oracle(PROGRAMS)
# On metal an in-place cas on an argument is refused (numba_compat/inplace.py: only
# add/sub/or/xor start from a fresh output), so there these run on the simulator; cuda runs
# them through a private copy (numba_compat/inplace_copy.py).
_BACKEND = "sim" if os.environ.get("METALBENCH_TEST_BACKEND", "sim") == "metal" else \
    os.environ.get("METALBENCH_TEST_BACKEND", "sim")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_written_values(name):
    got = run_metalbench(PROGRAMS[name], name, backend=_BACKEND)
    for k, w in EXPECTED[name].items():
        np.testing.assert_array_equal(got[k], np.array(w, dtype=got[k].dtype).reshape(got[k].shape),
                                      err_msg=f"{name}: {k}")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_against_numba_simulator(name):
    assert_same(run_metalbench(PROGRAMS[name], name, backend=_BACKEND), ORACLE[name])
