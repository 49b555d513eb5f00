"""Kernels made by ``exec`` of a string (numba-cuda's tests generate families of them):
Numba compiles them from bytecode; metalbench finds their text among the strings compiled
since ``metalbench.cuda`` was imported (sources.py), telling apart functions whose text
differs only in a name (``cuda.atomic.add`` / ``cuda.atomic.sub``)."""
import os
import subprocess
import sys
from textwrap import dedent

import numpy as np
import pytest

from metalbench import cuda
from metalbench.cuda import int32
from metalbench.errors import KernelSyntaxError


@pytest.fixture(autouse=True)
def _backend():
    cuda.set_backend(os.environ.get("METALBENCH_TEST_BACKEND", "sim"))
    yield
    cuda.set_backend(None)


def _family(func):
    text = dedent("""
    def atomic(res, ary):
        tx = cuda.threadIdx.x
        bx = cuda.blockIdx.x
        {func}(res, 0, ary[tx, bx])

    def atomic_shared(res, ary):
        tid = cuda.threadIdx.x
        sm = cuda.shared.array(32, int32)
        sm[tid] = ary[tid, 0]
        cuda.syncthreads()
        {func}(res, 0, sm[tid])
    """).format(func=func)
    ns = {}
    exec(text, {"cuda": cuda, "int32": int32}, ns)
    return ns["atomic"], ns["atomic_shared"]


def test_exec_kernels_that_differ_in_one_name():
    add, add_shared = _family("cuda.atomic.add")
    sub, sub_shared = _family("cuda.atomic.sub")      # the same lines, bytecode and layout as add's
    ary = np.random.default_rng(1).integers(-50, 50, (32, 2)).astype(np.int32)
    for f, want in ((add, 5 + ary.sum()), (add_shared, 5 + 2 * ary[:, 0].sum()),
                    (sub, 5 - ary.sum()), (sub_shared, 5 - 2 * ary[:, 0].sum())):
        res = np.array([5], np.int32)
        cuda.jit(f)[2, 32](res, ary)      # two blocks: the shared variants add column 0 twice
        assert res[0] == want, f.__name__


def test_exec_device_function_and_kernel():
    ns = {}
    exec("def twice(x):\n    return 2 * x\n\ndef k(a):\n    i = cuda.grid(1)\n    if i < a.size:\n"
         "        a[i] = twice(a[i]) + 1\n", {"cuda": cuda}, ns)
    ns["k"].__globals__["twice"] = cuda.jit(device=True)(ns["twice"])
    a = np.arange(5.0)
    cuda.jit(ns["k"])[1, 8](a)
    np.testing.assert_array_equal(a, 2 * np.arange(5.0) + 1)


def test_without_the_text_the_error_says_what_to_do():
    """Code compiled before metalbench.cuda was imported has no text: the error says so."""
    prog = ("ns = {}\nexec('def k(a):\\n    a[0] = 1\\n', ns)\nimport numpy as np\nfrom metalbench import cuda\n"
            "cuda.set_backend('sim')\ntry:\n    cuda.jit(ns['k'])[1, 1](np.zeros(1))\nexcept Exception as e:\n"
            "    print(type(e).__name__, e)\n")
    out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=300).stdout
    assert "KernelSyntaxError" in out and "cannot read the source of 'k'" in out and "linecache" in out


def test_an_unrelated_string_with_the_same_pseudo_file_is_not_taken():
    ns = {}
    exec("def k(a):\n    a[0] = 7\n", {"cuda": cuda}, ns)
    exec("def k(a):\n    a[0] = 8\n", {"cuda": cuda}, {})        # newer text, same name and lines
    a = np.zeros(1)
    cuda.jit(ns["k"])[1, 1](a)
    assert a[0] == 7
    assert KernelSyntaxError is not None


def test_found_after_many_other_strings_were_compiled():
    """A kernel exec'd at import and compiled at its first launch, after more strings
    were compiled (dataclasses, namedtuples, other exec calls) than the recent-text memory
    holds: the code object exec ran still leads to its text."""
    ns = {}
    exec("def late(a):\n    i = cuda.grid(1)\n    if i < a.size:\n        a[i] = 3 * i\n", {"cuda": cuda}, ns)
    for k in range(200):
        exec(f"x = {k}", {})
    a = np.zeros(6)
    cuda.jit(ns["late"])[1, 8](a)
    np.testing.assert_array_equal(a, 3 * np.arange(6.0))

