"""benchmarks/msl_corpus.py's verdicts on a tiny corpus of our own kernels (issue 13): a case
marked ``checked="barrier"`` is ``expected`` under ``--checked`` only when the checked
simulator reports the divergent barrier, and ``missed-barrier`` when it does not; unchecked,
the same kernel's genuine bug is its ``expect="mismatch"``."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CASE = textwrap.dedent('''
    import mlx.core as mx
    import numpy as np

    # threads past n leave before the barrier; the reversal then misses the slots only they
    # would have written (a genuine bug: the case says so)
    SRC_EARLY = """
        uint i = thread_position_in_threadgroup.x;
        threadgroup float buf[64];
        if (i >= n) return;
        buf[i] = x[i] * 2.0f;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[i] = buf[n - 1 - i];
    """
    SRC_OK = """
        uint i = thread_position_in_threadgroup.x;
        threadgroup float buf[64];
        if (i < n) buf[i] = x[i] * 2.0f;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (i < n) out[i] = buf[n - 1 - i];
    """
    early = mx.fast.metal_kernel(name="early", input_names=["x", "n"], output_names=["out"], source=SRC_EARLY)
    ok = mx.fast.metal_kernel(name="ok", input_names=["x", "n"], output_names=["out"], source=SRC_OK)
    x = mx.array(np.random.default_rng(0).standard_normal(24).astype(np.float32))

    def launch(k, n, tg):
        return k(inputs=[x[:n], mx.array(n, dtype=mx.uint32)], grid=(tg, 1, 1), threadgroup=(tg, 1, 1),
                 output_shapes=[(n,)], output_dtypes=[mx.float32], init_value=0)[0]

    ref = lambda n: (x[:n] * 2)[::-1]
    CASES = [
        dict(name="fits", run=lambda: launch(early, 24, 24), ref=lambda: ref(24)),
        dict(name="early-return", run=lambda: launch(early, 16, 24), ref=lambda: ref(16) * 0 + 1,
             expect="mismatch", checked="barrier", why="threads past n skip the barrier"),
        dict(name="no-barrier-bug", run=lambda: launch(ok, 16, 24), ref=lambda: ref(16) * 0 + 1,
             expect="mismatch", checked="barrier", why="marked wrongly on purpose"),
    ]
''')


def _run(tmp_path, *flags):
    (tmp_path / "cases").mkdir(exist_ok=True)
    (tmp_path / "cases" / "ours__barrier.py").write_text(CASE)
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "msl_corpus.py"), str(tmp_path), "--jobs", "1",
                        *flags], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    name = "msl_report" + ("_checked" if "--checked" in flags else "")
    rows = json.loads((tmp_path / f"{name}.json").read_text())["results"]
    return {r["case"]: r for r in rows if r["status"] != "meta"}


def test_checked_barrier_is_expected_only_when_reported(tmp_path):
    r = _run(tmp_path, "--checked")
    assert r["fits"]["status"] == "pass"
    assert r["early-return"]["status"] == "expected"
    assert "divergent barrier" in r["early-return"]["msg"]
    assert r["no-barrier-bug"]["status"] == "missed-barrier"


def test_unchecked_run_judges_the_mismatch(tmp_path):
    r = _run(tmp_path)
    assert r["fits"]["status"] == "pass"
    # the reference is deliberately wrong for both marked cases: only a mismatch is expected
    assert r["early-return"]["status"] == "expected"
    assert r["no-barrier-bug"]["status"] == "expected"


DATACLASS_CASE = textwrap.dedent('''
    from __future__ import annotations

    from dataclasses import dataclass

    import mlx.core as mx


    @dataclass(frozen=True)
    class Launch:          # model code's config objects: a dataclass with string annotations
        n: int
        scale: float


    k = mx.fast.metal_kernel(name="scale", input_names=["x"], output_names=["out"],
                             source="uint i = thread_position_in_grid.x; out[i] = x[i] * 3.0f;")
    cfg = Launch(8, 3.0)
    x = mx.arange(cfg.n, dtype=mx.float32)
    CASES = [dict(name="dataclass", run=lambda: k(inputs=[x], grid=(cfg.n, 1, 1), threadgroup=(8, 1, 1),
                                                 output_shapes=[(cfg.n,)], output_dtypes=[mx.float32])[0],
                  ref=lambda: x * cfg.scale)]
''')


def test_case_file_with_dataclasses_imports(tmp_path):
    # a dataclass under `from __future__ import annotations` looks its module up in sys.modules
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "ours__dataclass.py").write_text(DATACLASS_CASE)
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "msl_corpus.py"), str(tmp_path), "--jobs", "1"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    rows = json.loads((tmp_path / "msl_report.json").read_text())["results"]
    assert [r["status"] for r in rows if r["status"] != "meta"] == ["pass"]
