"""``print`` in Numba kernels: tuples print as Python prints them, and kernels defined in a
``python -c`` program (whose text Python keeps only in ``sys.orig_argv``) compile. The
output is compared with Numba's simulator running the same program."""
import os
import subprocess
import sys

import pytest

from numba_oracle import NUMBA_PY, have_numba

PROGRAMS = {
    "tuples": """\
from numba import cuda

@cuda.jit
def k(t, u, v):
    print(t)
    print(u, v)
    print((t[0], 2.5), (t[1],))

k[1, 1]((1, ((2, 4), 3.0), (4,), 5), (7,), ())
cuda.synchronize()
""",
    "scalars": """\
from numba import cuda

@cuda.jit
def k(x):
    i = cuda.grid(1)
    print(i, "x", x == 0, 0.25)
    print()

k[1, 1](0)
k[1, 1](1)
cuda.synchronize()
""",
}
EXPECTED = {
    "tuples": "(1, ((2, 4), 3.0), (4,), 5)\n(7,) ()\n(1, 2.5) (((2, 4), 3.0),)\n",
    "scalars": "0 x True 0.25\n\n0 x False 0.25\n\n",
}


def _run(python, text, env):
    cp = subprocess.run([str(python), "-c", text], capture_output=True, text=True, timeout=300, env=env)
    assert cp.returncode == 0, cp.stderr[-2000:]
    return cp.stdout


def _metalbench(text):
    text = text.replace("from numba import cuda", "from metalbench import cuda")
    env = dict(os.environ, METALBENCH_BACKEND="sim")
    return _run(sys.executable, text, env)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_print_in_python_c_program(name):
    """One thread per launch: Numba's simulator runs threads as Python threads, whose
    prints of several items interleave."""
    got = _metalbench(PROGRAMS[name])
    assert sorted(got.splitlines()) == sorted(EXPECTED[name].splitlines())
    if have_numba():
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
        env.pop("PYTHONPATH", None)
        want = _run(NUMBA_PY, PROGRAMS[name], env)
        assert sorted(got.splitlines()) == sorted(want.splitlines())


def test_python_c_text_that_is_not_the_function_is_not_taken():
    """A ``-c`` program whose kernel comes from an exec'd string of the same pseudo-file
    name: the ``-c`` text does not compile to that function, so the error stands."""
    prog = ("ns = {}\nexec('def k(a):\\n    a[0] = 1\\n', ns)\nimport numpy as np\nfrom metalbench import cuda\n"
            "try:\n    cuda.jit(ns['k'])[1, 1](np.zeros(1))\nexcept Exception as e:\n    print(type(e).__name__, e)\n")
    out = _metalbench(prog)
    assert "cannot read the source of 'k'" in out


def test_more_than_32_items_print_the_raw_format_with_numbas_warning():
    """Numba's CUDA target: vprintf takes at most 32 items, so the kernel prints its format
    string (one conversion per item, as Numba chooses them) and compiling warns."""
    prog = ("import numpy as np\nfrom metalbench import cuda\n\n@cuda.jit\ndef k(r, f):\n"
            "    print(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13],\n"
            "          r[14], r[15], r[16], r[17], r[18], r[19], r[20], r[21], r[22], r[23], r[24], r[25],\n"
            "          r[26], r[27], r[28], r[29], 'x', f[0], f[0] > 0, cuda.threadIdx)\n\n"
            "k[1, 1](np.arange(30), np.ones(1))\n")
    cp = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=300,
                        env=dict(os.environ, METALBENCH_BACKEND="sim"))
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout == " ".join(["%lld"] * 30 + ["%s", "%f", "%s", "(%d, %d, %d)"]) + "\n"
    assert "CUDA print() cannot print more than 32 items" in cp.stderr
