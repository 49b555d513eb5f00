"""notebooks/debugging.ipynb end to end: its cells assert each step (the coverage warning,
the findings, the trace, the access map, the fixed kernel); here the outputs a reader sees."""
import json
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NB = Path(__file__).resolve().parent.parent / "notebooks" / "debugging.ipynb"
WIDGET = "application/vnd.jupyter.widget-view+json"


def test_debugging_notebook_runs_and_shows_each_step(tmp_path, monkeypatch):
    monkeypatch.setenv("METALBENCH_CACHE_DIR", str(tmp_path))
    raw = json.loads(NB.read_text())
    assert all(not c.get("outputs") for c in raw["cells"] if c["cell_type"] == "code"), "commit without outputs"
    nb = nbformat.read(NB, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(NB.parent)}}).execute()
    streams, htmls, widgets = [], [], 0
    for c in nb.cells:
        for o in c.get("outputs", []):
            assert o.output_type != "error", f"{o.get('ename')}: {o.get('evalue')}"
            if o.output_type == "stream":
                streams.append(o.text)
            data = o.get("data", {})
            htmls.append(data.get("text/html", ""))
            widgets += WIDGET in data
    text = "\n".join(streams)
    assert "CoverageWarning: kernel 'blur' wrote 4 of the 256 elements" in text
    assert "`grid` counts threads, not threadgroups" in text
    assert "out-of-bounds read of device buffer 'x'" in text and "tile[0] = x[i - 1]" in text
    assert "[thread 63] right halo: x[64] = " in text and "[thread 255]" in text
    assert "data race on threadgroup array 'tile'" in text
    assert "blur_fixed [sim]: match" in text
    html = "\n".join(htmls)
    assert "mb-trace" in html and "access map of blur2" in html and "data:image/png;base64" in html
    assert widgets == 2


def test_memory_tab_shows_findings_before_the_scrolling_access_map():
    import numpy as np
    import metalbench as mb
    from metalbench.dsl import thread_position_in_grid
    from metalbench.notebook.panel import Workbench

    @mb.kernel
    def shifted(x, out: mb.Out):
        i = thread_position_in_grid.x
        out[i] = x[i + 1]
    wb = Workbench(shifted, (np.zeros(64, np.float32),), dict(grid=64, threadgroup=32, backend="sim"))
    assert wb.check_memory() is None
    box = wb.tabs.children[5]
    assert list(box.children) == [wb.memory_view, wb.findings_view, wb.map_view]
    assert "1 finding(s)" in wb.memory_view.value and "<details>" in wb.memory_view.value
    buttons = wb.findings_view.children[0].children[0].children[1].children
    assert [b.description for b in buttons] == ["Inspect (63, 0, 0)"]
    assert "access map of shifted" in wb.map_view.value and wb.map_view.layout.max_height == "300px"
    with pytest.warns(mb.OutOfBoundsWarning):      # the trace runs unchecked, as a GPU would
        buttons[0].click()
    tr = wb.inspector.tr
    assert wb.tabs.selected_index == 7 and tr.threads == [(63, 0, 0)] and tr.rows[-1].name == "out[63]"
