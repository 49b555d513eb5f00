"""The metalbench command."""
from metalbench import cli


def test_demo_writes_report_and_summary(tmp_path, capsys):
    assert cli.main(["demo", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "quickstart.html").stat().st_size > 10_000
    assert "saxpy" in out and "match" in out and "backend" in out


def test_check_msl(tmp_path, capsys):
    good = tmp_path / "good.metal"
    good.write_text("uint i = thread_position_in_grid.x;\nout[i] = inp[i];\n")
    bad = tmp_path / "bad.metal"
    bad.write_text("uint i = thread_position_in_grid.x;\nout[i] = inp[i]\n")
    assert cli.main(["check-msl", str(good)]) == 0
    assert cli.main(["check-msl", str(bad)]) == 1
    assert "line 2" in capsys.readouterr().out


def test_notebooks_command_copies_the_examples(tmp_path, capsys):
    assert cli.main(["notebooks", str(tmp_path / "nbs")]) == 0
    names = sorted(p.name for p in (tmp_path / "nbs").glob("*.ipynb"))
    assert "quickstart.ipynb" in names and "msl_cells.ipynb" in names
    (tmp_path / "nbs" / "quickstart.ipynb").write_text("mine")
    assert cli.main(["notebooks", str(tmp_path / "nbs")]) == 0
    assert (tmp_path / "nbs" / "quickstart.ipynb").read_text() == "mine"     # never overwritten
    assert "kept" in capsys.readouterr().out


def test_report_without_nbconvert(monkeypatch):
    """The demo's HTML report needs no nbconvert (a wheel install may lack it)."""
    import builtins
    import nbformat
    real_import = builtins.__import__

    def no_nbconvert(name, *a, **k):
        if name.startswith("nbconvert"):
            raise ImportError(name)
        return real_import(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_nbconvert)
    v4 = nbformat.v4
    nb = v4.new_notebook(cells=[v4.new_markdown_cell("# Title <b>"), v4.new_code_cell("print('x < y')")])
    nb.cells[1].outputs = [v4.new_output("stream", text="x < y\n"),
                           v4.new_output("display_data", data={"text/html": "<table id='t'></table>"})]
    page = cli._html_report(nb)
    assert "&lt;b&gt;" in page and "x &lt; y" in page and "<table id='t'>" in page


def test_version_has_one_source():
    """The version lives in extension/package.json; the installed metadata carries it."""
    import json
    from pathlib import Path
    import metalbench
    pkg = json.loads((Path(cli.__file__).parent.parent / "extension" / "package.json").read_text())
    assert metalbench.__version__ == pkg["version"]
