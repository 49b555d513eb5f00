"""Device functions with several declared signatures: each call takes the signature
Numba's overload resolution picks (fewest unsafe, then safe conversions, then
promotions), and the arguments convert to it. The conversion table is checked against
Numba's own casting rules (numba.cuda.typeconv) in the oracle venv."""
import itertools
import json
import os
import subprocess

import numpy as np
import pytest

from metalbench import cuda
from metalbench import types as T
from metalbench.errors import KernelTypeError
from metalbench.numba_compat import conversions
from numba_oracle import NUMBA_PY, have_numba

NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
         "float64"]


def test_conversion_kinds_are_numbas():
    if not have_numba():
        pytest.skip("no Numba venv (benchmarks/.venv-numba)")
    prog = ("import json\nfrom numba.cuda.typeconv.rules import default_type_manager as tm\n"
            "from numba.cuda import types\n"
            f"names = {NAMES!r}\n"
            "t = lambda n: types.boolean if n == 'bool' else getattr(types, n)\n"
            "print(json.dumps({a + '>' + b: (None if tm.check_compatible(t(a), t(b)) is None else "
            "int(tm.check_compatible(t(a), t(b)))) for a in names for b in names}))\n")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    env.pop("PYTHONPATH", None)
    want = json.loads(subprocess.run([str(NUMBA_PY), "-c", prog], env=env, capture_output=True, text=True,
                                     check=True, timeout=300).stdout)
    for a, b in itertools.product(NAMES, NAMES):
        k = conversions.kind(getattr(T, "bool_" if a == "bool" else a), getattr(T, "bool_" if b == "bool" else b))
        w = want[a + ">" + b]
        assert (None if k is None else conversions.KINDS.index(k) + 1) == w, (a, b, k, w)


def add(x, y):
    return x + y


def _launch(sigs, r, x, y):
    dev = cuda.jit(sigs, device=True)(add)

    @cuda.jit
    def k(r, x, y):
        r[0] = dev(x, y)

    cuda.set_backend(os.environ.get("METALBENCH_TEST_BACKEND", "sim"))
    try:
        k[1, 1](r, x, y)
    finally:
        cuda.set_backend(None)
    return r[0]


@pytest.mark.parametrize("sigs, x, y, out, want", [
    (["(int64, int64)", "(float64, float64)"], 1, 2, np.int64, 3),
    (["(int64, int64)", "(float64, float64)"], 1.5, 2.5, np.float64, 4.0),
    # float32 exactly: 1 + 2**-25 rounds to 1 in float32
    (["(float32, float32)", "(float64, float64)"], np.float32(1), np.float32(2 ** -25), np.float64, 1.0),
    # int64 -> float32 is unsafe, -> float64 safe: the float64 signature
    (["(float32, float32)", "(float64, float64)"], 1, 2 ** -25, np.float64, 1.0000000298023224),
    # equal ratings: the first declared (float32(1.5) + 2.5)
    (["(float32, float64)", "(float64, float32)", "(int64, int64)"], 1.5, 2.5, np.float64, 4.0),
    # only unsafe conversions: they are made (truncation)
    (["(int64, int64)"], 1.5, 2.5, np.int64, 3),
    # int32 -> float64 is safe; float64 -> int64 unsafe
    (["(int64, int64)", "(float64, float64)"], np.int32(1), 2.5, np.float64, 3.5),
])
def test_the_best_declared_signature_is_taken(sigs, x, y, out, want):
    got = _launch(sigs, np.zeros(1, out), x, y)
    assert got == want and np.asarray(got).dtype == np.dtype(out)


def test_no_applicable_signature_is_an_error_at_the_call():
    def first(a, i):
        return a[i]
    dev = cuda.jit(["(int64[:], int64)", "(float64[:], int64)"], device=True)(first)

    @cuda.jit
    def k(r, a):
        r[0] = dev(a, 0)

    with pytest.raises(KernelTypeError, match="no declared signature") as e:
        k[1, 1](np.zeros(1), np.zeros(3, np.float32))
    assert "dev(a, 0)" in str(e.value)
