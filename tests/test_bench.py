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
    entries = list((tmp_path / "autotune").glob("*.json"))
    assert len(entries) == 1
    entry = json.loads(entries[0].read_text())
    assert entry["describe"]["device"] == "sim" and entry["best"]["threadgroup"] == best["threadgroup"]

    def boom(*a, **k):
        raise AssertionError("should read the cache")
    monkeypatch.setattr(bench, "sweep_kernel", boom)
    assert scale.autotune(X, grid=N, threadgroup=[32, 64], backend="sim", repeats=1, progress=False) == best
    # Other shapes are tuned afresh.
    with pytest.raises(AssertionError):
        scale.autotune(X[:128], grid=128, threadgroup=[32, 64], backend="sim", repeats=1, progress=False)


def test_autotune_key_holds_the_device(tmp_path, monkeypatch):
    """The same kernel and shapes tuned on two GPU models are two entries."""
    monkeypatch.setenv("METALBENCH_CACHE_DIR", str(tmp_path))
    seen = []

    def fake_sweep(kernel, *args, **kwargs):
        s = bench.Sweep(kernel.name, "sim")
        s.rows.append({"config": "tg", "time": 1.0, "iqr": 0.0, "ok": None, "error": None})
        s.configs.append(bench.Config(threadgroup=len(seen) + 1))
        seen.append(1)
        return s
    monkeypatch.setattr(bench, "sweep_kernel", fake_sweep)
    for dev in ("M1 Max", "M3 Max", "M1 Max"):
        monkeypatch.setattr(bench, "device_name", lambda backend, d=dev: f"metal:{d}")
        bench.autotune_kernel(scale, X, grid=N, threadgroup=[32, 64], backend="sim")
    assert len(seen) == 2                          # the third call reads the M1 entry back
    assert len(list((tmp_path / "autotune").glob("*.json"))) == 2


def _tune_in_process(cache, k):
    import os
    os.environ["METALBENCH_CACHE_DIR"] = cache
    x = np.arange(32 * (k + 1), dtype=np.float32)
    return dict(scale.autotune(x, grid=x.size, threadgroup=[32], backend="sim", repeats=1, progress=False))


def test_concurrent_tuners_keep_each_others_entries(tmp_path):
    """Processes tuning at once (different shapes) must not overwrite each other's results."""
    import concurrent.futures as cf
    import multiprocessing as mp
    with cf.ProcessPoolExecutor(2, mp_context=mp.get_context("spawn")) as ex:
        bests = list(ex.map(_tune_in_process, [str(tmp_path)] * 6, range(6)))
    assert all(b["threadgroup"] == 32 for b in bests)
    entries = [json.loads(p.read_text()) for p in (tmp_path / "autotune").glob("*.json")]
    assert len(entries) == 6
    assert not list((tmp_path / "autotune").glob("*.tmp"))


def test_device_name():
    assert bench.device_name("sim") == "sim"


@pytest.mark.gpu
def test_device_name_on_the_gpu():
    name = bench.device_name("cuda")
    assert name.startswith("cuda:") and name != "cuda:unknown"


class _FakeGPULaunch:
    """A launch on a pretend GPU backend: counts launches and synchronisations."""

    def __init__(self):
        self.calls = self.syncs = 0

    class _Bound:
        backend = "cuda"
        reusable = True

        def input_bytes(self):
            return 400

        def config(self):
            return {"threadgroup": 64}

    def bind(self, **override):
        return self._Bound()

    def call(self, bound=None, **override):
        self.calls += 1
        return [np.zeros(100, np.float32)]

    def sync(self, outs, backend=None):
        self.syncs += 1


def test_gpu_timing_batches_launches_per_sync():
    fake = _FakeGPULaunch()
    t, first = bench.time_launch(fake, warmup=2, repeats=4)
    # 2 warm-up calls and 5 per-call runs sync each; the probe and 4 batches sync once each
    assert len(t.runs) == 4 and len(t.per_call_runs) == 5
    assert t.launches_per_sync > 1 and fake.syncs == 2 + 5 + 1 + 4
    assert fake.calls == 2 + 5 + 10 + 4 * t.launches_per_sync
    assert t.nbytes == 800 and t.backend == "cuda" and len(first) == 1
    q = t.quantiles
    assert q[0.2] <= q[0.5] <= q[0.8] and q[0.5] == pytest.approx(t.median)
    assert "launches per sync" in str(t) and "per call" in str(t)


@pytest.mark.parametrize("per_launch", [1e-7, 3e-6, 1e-4, 0.01, 1.0])
@pytest.mark.parametrize("budget", [0.01, 0.25, 2.0])
def test_plan_batches_bounds(per_launch, budget):
    inner, batches = bench.plan_batches(per_launch, budget)
    assert 1 <= inner <= 1000 and 5 <= batches <= 1000
    # a batch lasts about 2 ms unless a single launch is longer or the cap is reached
    assert inner == 1000 or inner * per_launch >= 2e-3 or inner == 1
    if batches > 5:     # more than the minimum only while they fit the budget
        assert batches * inner * per_launch <= budget * 1.0001
    assert bench.plan_batches(per_launch, budget, repeats=7)[1] == 7
    assert bench.plan_batches(per_launch, budget, out_bytes=1 << 30)[0] <= 2


def test_sim_timing_is_labelled_simulator_time():
    t = scale.bench(X, grid=N, threadgroup=64, backend="sim", repeats=2)
    assert "simulator time" in str(t) and t.launches_per_sync == 1 and len(t.per_call_runs) == 2
    s = scale.sweep(X, grid=N, threadgroup=[32, 64], backend="sim", repeats=1, progress=False)
    assert all(r["per_call"] > 0 and r["q20"] <= r["q80"] for r in s.rows)
    assert "per call" in s.table()


def test_autotune_concurrent_tuners_keep_every_entry(tmp_path, monkeypatch):
    """Notebooks tuning at once (threads here) each keep their entry: one file per entry,
    written to a private temporary file and renamed."""
    import threading
    monkeypatch.setenv("METALBENCH_CACHE_DIR", str(tmp_path))
    sizes = [64, 128, 192, 256]
    errors = []

    def tune(n):
        try:
            bench.autotune_kernel(scale, X[:n], grid=n, threadgroup=[32, 64], backend="sim", repeats=1,
                                  progress=False)
        except Exception as e:  # noqa: BLE001 — reported below
            errors.append(e)
    threads = [threading.Thread(target=tune, args=(n,)) for n in sizes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    entries = [json.loads(p.read_text()) for p in (tmp_path / "autotune").glob("*.json")]
    assert sorted(e["describe"]["args"][0][0][0] for e in entries) == sizes
    assert not list((tmp_path / "autotune").glob("*.tmp"))
