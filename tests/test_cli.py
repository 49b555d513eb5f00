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
