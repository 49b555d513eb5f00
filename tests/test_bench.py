"""bench.py: timing, sweeps (failures per row, constexpr axes, best), autotune cache."""
import json

import numpy as np
import pytest

import metalbench as mb
from metalbench import bench
from metalbench.bench import Timing, threadgroup_shapes
from metalbench.dsl import *  # noqa: F401,F403


@mb.kernel
def scale(x, out: mb.Out, K: mb.constexpr = 2):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = x[i] * K


N = 256
X = np.arange(N, dtype=np.float32)


def test_timing_stats():
    t = Timing([0.001, 0.002, 0.003, 0.004], backend="sim", nbytes=4_000_000)
    assert t.median == pytest.approx(0.0025) and t.iqr == pytest.approx(0.0015)
    assert t.gbps == pytest.approx(1.6) and "median" in str(t)


def test_bench_kernel():
    t = scale.bench(X, grid=N, threadgroup=64, backend="sim", repeats=3)
    assert len(t.runs) == 3 and t.backend == "sim" and t.median > 0
    assert t.nbytes == 2 * X.nbytes and t.gbps > 0


def test_threadgroup_shapes_capped():
    assert threadgroup_shapes(1) == [(32,), (64,), (128,), (256,), (512,), (1024,)]
    assert all(a * b <= 1024 for a, b in threadgroup_shapes(2))
    assert all(a * b * c <= 1024 for a, b, c in threadgroup_shapes(3))


def test_sweep_rows_failures_and_best():
    s = scale.sweep(X, grid=N, threadgroup=[32, 64, 2048], K=[2, 3], backend="sim",
                    ref=lambda x: 2 * x, progress=False, repeats=1)
    assert len(s.rows) == 6
    bad = [r for r in s.rows if r["threadgroup"] == 2048]
    assert all("1024" in r["error"] for r in bad)
    assert [r["ok"] for r in s.rows if r["error"] is None and r["K"] == 3] == [False, False]
    assert s.best["K"] == 2 and s.best["threadgroup"] in (32, 64)
    out = scale(X, **s.best, backend="sim")
    assert np.allclose(np.asarray(out), 2 * X)
    assert "best" in s.table()
    fig = s.plot()
    assert fig._repr_png_()[:4] == b"\x89PNG"
    assert "<table" in s._repr_html_()


def test_sweep_progress_callback():
    seen = []
    scale.sweep(X, grid=N, threadgroup=[32, 64], backend="sim", repeats=1,
                progress=lambda done, total, row: seen.append((done, total)))
    assert seen == [(1, 2), (2, 2)]


def test_autotune_remembers(tmp_path, monkeypatch):
    monkeypatch.setenv("METALBENCH_CACHE_DIR", str(tmp_path))
    best = scale.autotune(X, grid=N, threadgroup=[32, 64], backend="sim", repeats=1, progress=False)
    assert best["threadgroup"] in (32, 64)
    db = json.loads((tmp_path / "autotune.json").read_text())
    assert len(db) == 1

    def boom(*a, **k):
        raise AssertionError("should read the cache")
    monkeypatch.setattr(bench, "sweep_kernel", boom)
    assert scale.autotune(X, grid=N, threadgroup=[32, 64], backend="sim", repeats=1, progress=False) == best
    # Other shapes are tuned afresh.
    with pytest.raises(AssertionError):
        scale.autotune(X[:128], grid=128, threadgroup=[32, 64], backend="sim", repeats=1, progress=False)
