"""The magic in a real Jupyter kernel (nbclient), and the shipped notebooks executed headless."""
import json
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parent.parent
WIDGET = "application/vnd.jupyter.widget-view+json"

SAXPY = """def saxpy(a: float, x, y, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = a * x[i] + y[i]"""


def execute(nb, path=ROOT / "notebooks", allow_errors=False):
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=allow_errors,
                            resources={"metadata": {"path": str(path)}}).execute()
    return nb


def error_text(cell):
    """The error a failing cell shows (what the front end prints), ANSI colours removed."""
    import re
    errs = [o for o in cell.outputs if o.output_type == "error"]
    assert errs, "the cell did not fail"
    return re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(errs[0].traceback))


def texts(cell):
    out = []
    prev = None
    for o in cell.outputs:
        assert o.output_type != "error", f"{o.get('ename')}: {o.get('evalue')}"
        if o.output_type == "stream" and prev == o.name:
            out[-1] += o.text       # one print's text can arrive in two messages on a busy machine
        elif o.output_type == "stream":
            out.append(o.text)
        else:
            out.append(str(o.get("data", {}).get("text/plain", "")))
        prev = o.name if o.output_type == "stream" else None
    return "\n".join(out)


def mimes(cell):
    return {m for o in cell.outputs for m in o.get("data", {})}


@pytest.fixture(scope="module")
def magic_nb():
    v4 = nbformat.v4
    cells = [
        "import numpy as np, mlx.core as mx, metalbench as mb\nfrom metalbench.dsl import *\n%load_ext metalbench\n"
        "n = 256\na = 2.0\nx = np.arange(n, dtype=np.float32)\ny = np.ones(n, dtype=np.float32)\ninp = x / n",
        "%%metal saxpy --grid n --threadgroup 64 --ref 'lambda a, x, y: a * x + y' --no-widget --backend sim\n" + SAXPY,
        "%%metal saxpy --grid n --threadgroup 64 --ref 'lambda a, x, y: a * x - y' --no-widget --backend sim\n" + SAXPY,
        "first = saxpy",
        "%%metal saxpy --grid n --no-widget --backend sim\n" + SAXPY.replace("a * x[i]", "a * undefined_thing[i]"),
        "print(saxpy is first)",
        "%%metal twice --grid (n, 1, 1) --threadgroup (64, 1, 1) --ref 'lambda inp: 2 * inp' --no-widget --backend sim\n"
        "uint i = thread_position_in_grid.x;\nout[i] = 2 * inp[i];",
        "print(type(twice).__name__, twice.input_names, twice.output_names)",
        "%%metal broken --grid (n, 1, 1) --backend sim\nuint i = thread_position_in_grid.x;\nout[i] = 2 * inp[i]\n",
        "%%metal saxpy --grid n --threadgroup 64 --ref 'lambda a, x, y: a * x + y' --backend sim\n" + SAXPY,
        "%%metal saxpy --grid n --ref 'lambda a, x, y: x[:3]' --no-widget --backend sim\n" + SAXPY,
        "%%metal saxpy --grid (n, 1 --no-widget --backend sim\n" + SAXPY,
        "print('still alive')",
    ]
    nb = v4.new_notebook(cells=[v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return execute(nb, allow_errors=True)


def test_right_reference_matches(magic_nb):
    assert "match (256 elements" in texts(magic_nb.cells[1])


def test_wrong_reference_reports_mismatches(magic_nb):
    t = texts(magic_nb.cells[2])
    assert "MISMATCH in 256 of 256" in t and "out[0]: got 1.0, expected -1.0" in t


def test_undefined_name_names_the_cell_line(magic_nb):
    t = error_text(magic_nb.cells[4])
    assert "undefined_thing" in t and "cell, line 5" in t and "^" in t and "Traceback" not in t
    assert "metalbench/" not in t and "File " not in t          # no internal frames


def test_previous_kernel_survives(magic_nb):
    assert texts(magic_nb.cells[5]).strip() == "True"


def test_msl_cell_defines_kernel(magic_nb):
    assert "match" in texts(magic_nb.cells[6])
    assert texts(magic_nb.cells[7]).strip() == "MetalKernel ['inp'] ['out']"


def test_msl_syntax_error_names_the_line(magic_nb):
    t = error_text(magic_nb.cells[8])
    assert "syntax error" in t and "cell, line 3" in t


def test_panel_is_a_widget(magic_nb):
    assert WIDGET in mimes(magic_nb.cells[9])
    assert WIDGET not in mimes(magic_nb.cells[1])


def test_bad_input_keeps_the_kernel_running(magic_nb):
    assert "shape (3,)" in error_text(magic_nb.cells[10])
    assert "does not evaluate" in error_text(magic_nb.cells[11])
    assert "still alive" in texts(magic_nb.cells[12])


def test_failing_cell_fails_the_execution(tmp_path):
    """Run All stops at a failing %%metal cell: nbclient raises, later cells do not run."""
    v4 = nbformat.v4
    nb = v4.new_notebook(cells=[v4.new_code_cell(c) for c in [
        "import numpy as np, metalbench as mb\n%load_ext metalbench\nx = np.ones(8, np.float32)",
        "%%metal k --grid 8 --backend sim --no-widget\ndef k(x, out: mb.Out)\n    out[0] = x[0]\n",
        "print('after')"]])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    with pytest.raises(nbclient.exceptions.CellExecutionError) as e:
        execute(nb, tmp_path)
    msg = str(e.value)
    assert "KernelSyntaxError" in msg and "invalid Python syntax" in msg and "cell, line 2" in msg
    assert "metalbench/" not in msg
    assert not nb.cells[2].outputs                                # Run All stopped


@pytest.mark.parametrize("name", ["quickstart.ipynb", "msl_cells.ipynb", "tuning.ipynb"])
def test_notebook_runs(name, tmp_path, monkeypatch):
    monkeypatch.setenv("METALBENCH_CACHE_DIR", str(tmp_path))
    path = ROOT / "notebooks" / name
    raw = json.loads(path.read_text())
    assert all(not c.get("outputs") for c in raw["cells"] if c["cell_type"] == "code"), "commit without outputs"
    nb = execute(nbformat.read(path, as_version=4))
    for c in nb.cells:
        if c.cell_type == "code" and "raises-exception" not in c.metadata.get("tags", []):
            texts(c)           # no error outputs
    if name != "msl_cells.ipynb":
        rows = [r for c in nb.cells for o in c.get("outputs", [])
                for r in o.get("data", {}).get("application/vnd.metalbench.summary+json", {}).get("rows", [])]
        assert rows and all(r["result"] == "match" for r in rows)
