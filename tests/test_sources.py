"""Kernels defined where there is no source file: standard input, exec of a string, the
interactive prompt (IPython; the 3.13+ prompt's code cache), and mb.kernel(source=...)."""
import linecache
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import metalbench as mb
from metalbench.dsl import *  # noqa: F401,F403

KERNEL = """
import numpy as np
import metalbench as mb
from metalbench.dsl import *

@mb.kernel
def twice(x, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = 2.0 * x[i]

print(np.asarray(twice(np.arange(4, dtype=np.float32), grid=4)).tolist())
"""


def py(args, stdin=None):
    return subprocess.run([sys.executable, *args], input=stdin, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "METALBENCH_BACKEND": "sim"})


def test_stdin_says_what_to_do():
    r = py(["-"], KERNEL)
    assert r.returncode == 1
    assert "cannot read the source of 'twice'" in r.stderr and "standard input" in r.stderr
    assert "mb.kernel(source=" in r.stderr


def test_stdin_with_source_text_runs():
    script = textwrap.dedent('''
        import numpy as np
        import metalbench as mb
        from metalbench.dsl import *
        k = 3.0
        scale = mb.func(source="def scale(v):\\n    return v * k\\n")
        f = mb.kernel(source="""
        def f(x, out: mb.Out):
            i = thread_position_in_grid.x
            out[i] = scale(x[i]) + 1.0
        """)
        print(f.name, np.asarray(f(np.arange(4, dtype=np.float32), grid=4)).tolist())
        ''')
    r = py(["-"], script)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "f [1.0, 4.0, 7.0, 10.0]"


def test_source_text_errors_point_at_its_lines():
    with pytest.raises(mb.KernelNameError) as e:
        k = mb.kernel(source="def k(x, out: mb.Out):\n    i = thread_position_in_grid.x\n    out[i] = zz\n")
        k(np.ones(4, np.float32), grid=4, backend="sim")
    assert "kernel source, line 3" in str(e.value) and "zz" in str(e.value)
    with pytest.raises(mb.KernelSyntaxError, match="invalid Python syntax"):
        mb.kernel(source="def k(x, out: mb.Out)\n    pass\n")


def test_source_text_sees_the_callers_locals():
    def make(c):
        return mb.kernel(source="def addc(x, out: mb.Out):\n"
                                "    i = thread_position_in_grid.x\n"
                                "    out[i] = x[i] + c\n")
    k = make(5.0)
    assert np.asarray(k(np.zeros(3, np.float32), grid=3, backend="sim")).tolist() == [5.0] * 3


def test_exec_of_a_string(monkeypatch):
    src = KERNEL.replace("print(", "result = (")
    ns = {}
    # as before metalbench.cuda is imported (which keeps compiled strings: test_numba_exec.py)
    from metalbench import sources
    monkeypatch.setattr(sources, "_COMPILED", [])
    monkeypatch.setattr(sources, "_busy", True)
    with pytest.raises(mb.KernelSyntaxError) as e:
        exec(compile(src, "<string>", "exec"), ns)
    assert "exec()" in str(e.value) and "linecache.cache[name]" in e.value.hint
    name = "<metalbench-test-exec>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    try:
        ns = {}
        exec(compile(src, name, "exec"), ns)
        assert np.asarray(ns["result"]).tolist() == [0.0, 2.0, 4.0, 6.0]
    finally:
        linecache.cache.pop(name, None)


def test_interactive_prompt_313_code_cache(monkeypatch):
    """Python 3.13's prompt keeps each input in linecache._interactive_cache, read back with
    linecache._getlines_from_code(code): what metalbench asks when inspect finds nothing."""
    src = ("import metalbench as mb\nfrom metalbench.dsl import *\n\n@mb.kernel\n"
           "def twice(x, out: mb.Out):\n    i = thread_position_in_grid.x\n    out[i] = 2.0 * x[i]\n")
    code = compile(src, "<python-input-7>", "exec")
    kept = {}

    def getlines_from_code(c):
        return kept.get((c.co_filename, c.co_firstlineno), [])
    monkeypatch.setattr(linecache, "_getlines_from_code", getlines_from_code, raising=False)
    for c in code.co_consts:
        if hasattr(c, "co_filename"):
            kept[(c.co_filename, c.co_firstlineno)] = src.splitlines(True)
    ns = {}
    exec(code, ns)
    out = ns["twice"](np.arange(3, dtype=np.float32), grid=3, backend="sim")
    assert np.asarray(out).tolist() == [0.0, 2.0, 4.0]
    assert "2.0f * x[i]" in ns["twice"].source(np.arange(3, dtype=np.float32))


def test_ipython_cells():
    IPython = pytest.importorskip("IPython")
    from IPython.testing.globalipapp import get_ipython
    ip = get_ipython()                   # the test session's one shell (started if needed)
    r = ip.run_cell(KERNEL.replace("print(", "res = ("))
    assert r.success, r.error_in_exec
    assert np.asarray(ip.user_ns["res"]).tolist() == [0.0, 2.0, 4.0, 6.0]
    del IPython
