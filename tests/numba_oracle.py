"""Run one Numba program on metalbench and on Numba's own CUDA simulator, and compare.

A *program* is the text of a script written for ``from numba import cuda`` that leaves
its results in a dict ``RESULT`` (name -> array or number). :func:`run_metalbench` runs
it here with the import swapped to ``metalbench`` (from a file, so the kernels' source is
readable); :func:`run_numba_sim` runs the unchanged text under ``NUMBA_ENABLE_CUDASIM=1``
in the throwaway venv ``benchmarks/.venv-numba`` (made by ``benchmarks/numba_suite.py``),
many programs per subprocess. Without that venv the oracle is skipped; the tests that
use it also assert the expected values written out, which CI checks.
"""
from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
NUMBA_PY = REPO / "benchmarks" / ".venv-numba" / "bin" / "python"

_DRIVER = r'''
import json, os, runpy, sys, traceback
import numpy as np
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
out = {}
for name, path in json.loads(sys.argv[1]).items():
    try:
        g = runpy.run_path(path, run_name="__main__")
        res = {}
        for k, v in g["RESULT"].items():
            a = np.asarray(v)
            res[k] = {"dtype": a.dtype.str, "shape": list(a.shape),
                      "data": [repr(x) for x in a.reshape(-1).tolist()]}
        out[name] = {"ok": True, "result": res}
    except BaseException as e:
        out[name] = {"ok": False, "error": f"{type(e).__name__}: {e}", "tb": traceback.format_exc()[-2000:]}
json.dump(out, open(sys.argv[2], "w"))
'''


def have_numba() -> bool:
    return NUMBA_PY.exists()


def _write(text: str, directory: str, name: str) -> str:
    path = os.path.join(directory, f"{name}.py")
    with open(path, "w") as f:
        f.write(text)
    return path


def program_registry(with_exact: bool = False):
    """``(PROGRAMS, EXPECTED, program)`` for a test file of Numba programs: ``@program(name,
    expected)`` (a decorator over the program's text) records both; with ``with_exact``,
    ``program(name, expected, exact=True)`` records ``(expected, exact)``.

    >>> PROGRAMS, EXPECTED, program = program_registry()
    >>> _ = program("p", {"r": [1]})("RESULT = {}")
    >>> PROGRAMS["p"], EXPECTED["p"]
    ('RESULT = {}', {'r': [1]})
    """
    programs, expected = {}, {}

    def program(name, want, exact=True):
        def deco(text):
            programs[name] = text
            expected[name] = (want, exact) if with_exact else want
            return text
        return deco
    return programs, expected, program


def run_metalbench(program: str, name: str = "prog", backend: str | None = None) -> dict:
    """``RESULT`` of ``program`` with ``from numba import cuda`` read as metalbench's."""
    from metalbench import cuda
    text = program.replace("from numba import", "from metalbench.cuda import") \
                  .replace("from metalbench.cuda import cuda", "from metalbench import cuda")
    cuda.set_backend(backend or os.environ.get("METALBENCH_TEST_BACKEND", "sim"))
    try:
        with tempfile.TemporaryDirectory() as d:
            g = runpy.run_path(_write(text, d, name), run_name="__main__")
    finally:
        cuda.set_backend(None)
    return {k: np.asarray(v) for k, v in g["RESULT"].items()}


def run_numba_sim(programs: dict[str, str]) -> dict:
    """name -> ``RESULT`` (dict of arrays) under Numba's simulator, or the error text."""
    with tempfile.TemporaryDirectory() as d:
        paths = {n: _write(p, d, n) for n, p in programs.items()}
        out = os.path.join(d, "out.json")
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
        env.pop("PYTHONPATH", None)
        subprocess.run([str(NUMBA_PY), "-c", _DRIVER, json.dumps(paths), out], env=env, check=True,
                       timeout=600, capture_output=True)
        raw = json.load(open(out))
    res = {}
    for n, r in raw.items():
        if not r["ok"]:
            res[n] = r["error"]
            continue
        res[n] = {k: np.array([_val(x) for x in v["data"]], dtype=np.dtype(v["dtype"])).reshape(v["shape"])
                  for k, v in r["result"].items()}
    return res


def _val(text):
    return eval(text, {"nan": float("nan"), "inf": float("inf")})


class Oracle:
    """Numba-simulator results for a module's programs, computed once (one subprocess)."""

    def __init__(self, programs: dict[str, str]):
        self.programs = programs
        self._results = None

    def __getitem__(self, name):
        if not have_numba():
            pytest.skip("no Numba venv (benchmarks/.venv-numba; python benchmarks/numba_suite.py makes it)")
        if self._results is None:
            self._results = run_numba_sim(self.programs)
        r = self._results[name]
        if isinstance(r, str):
            raise AssertionError(f"program {name!r} failed on Numba's simulator: {r}")
        return r


def assert_same(got: dict, want: dict, exact: bool = True, rtol=1e-6):
    """Every result of ``want`` equals (bitwise NaN-aware, or within ``rtol``) ``got``'s."""
    assert set(got) == set(want), (sorted(got), sorted(want))
    for k in want:
        g, w = np.asarray(got[k]), np.asarray(want[k])
        assert g.shape == w.shape, (k, g.shape, w.shape)
        if exact:
            np.testing.assert_array_equal(g.astype(w.dtype) if w.dtype.kind != "b" else g, w, err_msg=k)
        else:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, err_msg=k)


if __name__ == "__main__":      # a quick manual check: python tests/numba_oracle.py prog.py
    src = open(sys.argv[1]).read()
    print(run_metalbench(src))
    print(run_numba_sim({"p": src}))
