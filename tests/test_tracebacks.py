"""Errors outside notebooks: a plain script shows the user's frame and the message, not
metalbench's internal frames (tracebacks counted in a subprocess, as a user sees them)."""
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import metalbench as mb
from metalbench.errors import _PACKAGE_DIR, user_facing

HEAD = "import numpy as np\nimport metalbench as mb\nfrom metalbench.dsl import *\n"


def run_script(tmp_path, body, env=None):
    p = tmp_path / "user_script.py"
    p.write_text(HEAD + textwrap.dedent(body))
    r = subprocess.run([sys.executable, str(p)], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "METALBENCH_BACKEND": "sim", **(env or {})})
    assert r.returncode != 0
    frames = re.findall(r'^  File "([^"]+)", line (\d+)', r.stderr, re.M)
    internal = [f for f, _ in frames if f.startswith(_PACKAGE_DIR)]
    user = [int(n) for f, n in frames if f == str(p)]
    return r.stderr, internal, user


CASES = {
    "compile error": ("""
        @mb.kernel
        def k(x, out: mb.Out):
            i = thread_position_in_grid.x
            out[i] = x[i] * undefined_thing

        x = np.ones(8, np.float32)
        k(x, grid=8)
        """, "name 'undefined_thing' is not defined", 11),
    "syntax the DSL refuses": ("""
        @mb.kernel
        def k(x, out: mb.Out):
            try:
                out[0] = x[0]
            except Exception:
                pass

        k(np.ones(4, np.float32), grid=4)
        """, "KernelSyntaxError", 12),
    "launch error": ("""
        @mb.kernel
        def k(x, out: mb.Out):
            out[0] = x[0]

        k(np.ones(4, np.float32), grid=4, threadgroup=2048)
        """, "2048", 9),
    "source()": ("""
        @mb.kernel
        def k(x, out: mb.Out):
            out[0] = x[0] + 1.0 +
        print(k.source(np.ones(4, np.float32)))
        """, "invalid", 7),
    "metal_kernel body": ("""
        k = mb.metal_kernel(name="k", input_names=["x"], output_names=["out"],
                            source="uint i = thread_position_in_grid.x;\\nout[i] = x[i] * 2")
        x = np.ones(4, np.float32)
        k(inputs=[x], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype])
        """, "syntax error", 8),
    "check against a reference": ("""
        @mb.kernel
        def k(x, out: mb.Out):
            i = thread_position_in_grid.x
            out[i] = x[i]

        x = np.ones(4, np.float32)
        k.check(lambda x: None, x, grid=4)
        """, "returned None", 11),
}


@pytest.mark.parametrize("case", list(CASES))
def test_script_error_shows_the_user_frame_and_the_message(tmp_path, case):
    body, words, line = CASES[case]
    err, internal, user = run_script(tmp_path, body)
    assert words in err, err
    assert len(internal) <= 1, err            # at most the one re-raise at the entry point
    assert user and user[-1] == line, err
    assert "During handling" not in err


def test_full_tracebacks_on_request(tmp_path):
    err, internal, _ = run_script(tmp_path, CASES["compile error"][0], env={"METALBENCH_TRACEBACK": "full"})
    assert len(internal) > 3


def test_chained_causes_lose_their_internal_frames(tmp_path):
    """`raise MetalbenchError(...) from e` inside metalbench: the cause's message stays, its
    metalbench frames go (they would otherwise come back above 'direct cause')."""
    inner = ('def deep():\n    return {}["key"]\n\n'
             'def internal():\n    try:\n        deep()\n    except KeyError as e:\n'
             '        raise mb.KernelTypeError("wrapped") from e\n')
    err, internal, user = run_script(tmp_path, (
        "from metalbench.errors import user_facing\nns = {'mb': mb}\n"
        f"exec(compile({inner!r}, {_PACKAGE_DIR + 'fake_internal.py'!r}, 'exec'), ns)\n"
        "entry = user_facing(ns['internal'])\nentry()\n"))
    assert "KeyError: 'key'" in err and "direct cause" in err and "wrapped" in err
    assert len(internal) <= 1 and "fake_internal" not in err, err


def test_user_frames_called_by_metalbench_stay():
    def my_reference(x):
        raise mb.KernelTypeError("from the user's own code")

    @user_facing
    def entry():
        return my_reference(1)
    with pytest.raises(mb.KernelTypeError) as e:
        entry()
    names = [f.name for f in __import__("traceback").extract_tb(e.value.__traceback__)]
    assert names[-1] == "my_reference" and Path(__file__).name in e.value.__traceback__.tb_frame.f_code.co_filename
