"""%%metal --grad and the panel's Gradient tab."""
import numpy as np
import pytest

import metalbench as mb
from metalbench.dsl import *  # noqa: F401,F403

IPython = pytest.importorskip("IPython")

SOFTPLUS = """def softplus(x, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = metal.log(1.0 + metal.exp(x[i]))
"""
WRONG = """def bad(x, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = metal.floor(x[i] * 4.0) + x[i]
"""


@pytest.fixture(scope="module")
def ip():
    from IPython.testing.globalipapp import get_ipython
    shell = get_ipython()
    shell.run_cell("import numpy as np, metalbench as mb\nfrom metalbench.dsl import *\n%load_ext metalbench\n"
                   "x = np.linspace(-2, 2, 64, dtype=np.float32)\n")
    return shell


def test_grad_option_runs_check_grad(ip):
    from metalbench.notebook.magic import last_result
    ip.run_cell_magic("metal", "--grid x.size --grad --backend sim --no-widget", SOFTPLUS)
    r = last_result()
    assert r.error is None and r.grad is not None and r.grad.ok and r.grad.rows[0].name == "x"


def test_grad_option_shows_a_mismatch(ip):
    # floor's derivative is zero where it exists; finite differences straddle its jumps
    from metalbench.notebook.magic import last_result
    ip.run_cell_magic("metal", "--grid x.size --grad --backend sim --no-widget", WRONG)
    assert not last_result().grad.ok


def test_grad_of_msl_body_says_it_needs_the_dsl(ip):
    with pytest.raises(mb.MetalbenchError, match="DSL kernel"):
        ip.run_cell_magic("metal", "--grid x.size --grad --backend sim --no-widget --inputs x --outputs out",
                          "uint i = thread_position_in_grid.x; out[i] = x[i];")


def test_panel_gradient_tab():
    pytest.importorskip("ipywidgets")
    from metalbench.notebook.panel import Workbench
    k = mb.kernel(source=SOFTPLUS)
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    wb = Workbench(k, (x,), dict(grid=64, threadgroup=32, backend="sim"))
    assert wb.tabs.get_title(6) == "Gradient" and "Check gradient" in wb.grad_view.value
    wb.grad_button.click()
    assert wb.grad_result.ok and "check_grad(softplus): OK" in wb.grad_view.value
    assert wb.tabs.selected_index == 6


def test_autodiff_notebook_runs(tmp_path, monkeypatch):
    """notebooks/autodiff.ipynb end to end (its cells assert the comparisons and the falling loss)."""
    import json
    from pathlib import Path
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    from test_notebooks import execute, texts
    monkeypatch.setenv("METALBENCH_CACHE_DIR", str(tmp_path))
    path = Path(__file__).resolve().parent.parent / "notebooks" / "autodiff.ipynb"
    raw = json.loads(path.read_text())
    assert all(not c.get("outputs") for c in raw["cells"] if c["cell_type"] == "code"), "commit without outputs"
    nb = execute(nbformat.read(path, as_version=4))
    out = "\n".join(texts(c) for c in nb.cells if c.cell_type == "code")
    assert "generated vs hand-written" in out and "loss" in out and "@mx.custom_function" in out
