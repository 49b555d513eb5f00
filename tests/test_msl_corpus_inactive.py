"""benchmarks/msl_corpus.py's verdict on ``checked="inactive"`` (issue 13): a real kernel whose
SIMD shuffle reads a lane that does not execute it (``(lane == 0) ? 1.0f : simd_shuffle_up(x, 1)``,
as in a selective-scan kernel of mlx-lm) is ``expected`` under ``--checked`` only when the
checked simulator reports the inactive-lane read, ``missed-inactive`` when it does not; the
unchecked run judges the numbers as usual."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CASE = textwrap.dedent('''
    import mlx.core as mx
    import numpy as np

    # an exclusive shift whose conditional keeps lane 0 out of the shuffle lane 1 reads
    SRC_TERNARY = """
        uint i = thread_position_in_grid.x;
        uint lane = thread_index_in_simdgroup;
        float v = x[i];
        float prev = (lane == 0) ? 0.0f : simd_shuffle_up(v, 1);
        out[i] = prev;
    """
    # the same with the shuffle before the branch: every lane takes part
    SRC_OK = """
        uint i = thread_position_in_grid.x;
        uint lane = thread_index_in_simdgroup;
        float v = x[i];
        float up = simd_shuffle_up(v, 1);
        out[i] = (lane == 0) ? 0.0f : up;
    """
    tern = mx.fast.metal_kernel(name="tern", input_names=["x"], output_names=["out"], source=SRC_TERNARY)
    ok = mx.fast.metal_kernel(name="ok", input_names=["x"], output_names=["out"], source=SRC_OK)
    x = mx.array(np.arange(64, dtype=np.float32))

    def launch(k):
        return k(inputs=[x], grid=(64, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(64,)],
                 output_dtypes=[mx.float32])[0]

    def ref():
        r = np.roll(np.arange(64, dtype=np.float32), 1)
        r[::32] = 0
        return mx.array(r)

    CASES = [
        dict(name="ternary", run=lambda: launch(tern), ref=ref, checked="inactive", why="lane 0 skips the shuffle"),
        dict(name="shuffle-first", run=lambda: launch(ok), ref=ref, checked="inactive",
             why="marked wrongly on purpose"),
    ]
''')


def _run(tmp_path, *flags):
    (tmp_path / "cases").mkdir(exist_ok=True)
    (tmp_path / "cases" / "ours__inactive.py").write_text(CASE)
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "msl_corpus.py"), str(tmp_path), "--jobs", "1",
                        *flags], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    name = "msl_report" + ("_checked" if "--checked" in flags else "")
    rows = json.loads((tmp_path / f"{name}.json").read_text())["results"]
    return {r["case"]: r for r in rows if r["status"] != "meta"}


def test_checked_inactive_is_expected_only_when_reported(tmp_path):
    r = _run(tmp_path, "--checked")
    assert r["ternary"]["status"] == "expected"
    assert "inactive" in r["ternary"]["msg"]
    assert r["shuffle-first"]["status"] == "missed-inactive"


def test_unchecked_run_judges_the_numbers(tmp_path):
    r = _run(tmp_path)
    assert r["ternary"]["status"] == "pass"
    assert r["shuffle-first"]["status"] == "pass"
