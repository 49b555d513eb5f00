"""The workbench panel, driven through its widget objects."""
import numpy as np
import pytest

import metalbench as mb
from metalbench.dsl import *  # noqa: F401,F403
from metalbench.notebook.panel import Workbench, static_html

pytest.importorskip("ipywidgets")


@mb.kernel
def saxpy(a: float, x, y, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = a * x[i] + y[i]


N = 128
X = np.arange(N, dtype=np.float32)
Y = np.ones(N, dtype=np.float32)


def make(ref=lambda a, x, y: a * x + y):
    return Workbench(saxpy, (2.0, X, Y), dict(grid=N, threadgroup=(64, 1, 1), backend="sim"), ref)


def test_sliders_are_powers_of_two_capped_at_1024():
    wb = make()
    assert wb.threadgroup == (64, 1, 1)
    assert list(wb.tg[0].options) == [1 << i for i in range(11)]
    wb.tg[1].value = 32                         # 64 x 32 = 2048 > 1024: x is halved
    assert wb.threadgroup == (32, 32, 1)
    wb.tg[2].value = 4                          # 32 x 32 x 4: the largest other is halved
    assert np.prod(wb.threadgroup) <= 1024 and wb.threadgroup[2] == 4
    assert "threads per threadgroup" in wb.threads.value


def test_run_button_checks_and_times():
    wb = make()
    wb.tg[0].value = 32
    wb.run_button.click()
    assert wb.result is not None and wb.result.ok
    assert wb.timing is not None and wb.timing.config["threadgroup"] == (32, 1, 1)
    assert "match" in wb.status.value and "median" in wb.timing_view.value


def test_run_reports_mismatch_and_bad_grid():
    wb = make(ref=lambda a, x, y: a * x)
    wb.run()
    assert not wb.result.ok and "mismatch" in wb.status.value and "index" in wb.diff_view.value
    wb.grid.value = "(12, oops"
    assert wb.run() is None and "not a number" in wb.message.value


def test_sweep_button_sets_best():
    wb = make()
    wb.sweep_button.click()
    s = wb.last_sweep
    assert s is not None and len(s.rows) == 6 and s.best is not None
    assert wb.threadgroup == tuple(s.best["threadgroup"]) + (1, 1)
    assert wb.progress.value == 6 and "<table" in wb.sweep_view.value


def test_export_button():
    wb = make()
    wb.export_button.click()
    assert "mx.fast.metal_kernel" in wb.export_view.value and "threadgroup=(64, 1, 1)" in wb.export_view.value


def test_export_button_for_a_2d_kernel(monkeypatch):
    """The Export button works for kernels indexing outputs in 2-D; its code runs on MLX alone."""
    import mlx.core as mx
    from test_export import _run, _blur_ref, blur
    img = np.random.default_rng(1).standard_normal((20, 30)).astype(np.float32)
    wb = Workbench(blur, (img,), dict(grid=(30, 20), threadgroup=(8, 8), backend="sim"), _blur_ref)
    wb.export_button.click()
    code = wb.export_view.value
    assert wb.message.value == "" and "def blur(x, *, grid=None, threadgroup=(8, 8, 1))" in code
    other = np.random.default_rng(2).standard_normal((9, 14)).astype(np.float32)
    got = np.asarray(_run(code, monkeypatch)["blur"](mx.array(other)))
    assert np.allclose(got, _blur_ref(other), atol=1e-5)


def test_static_summary():
    r = saxpy.check(lambda a, x, y: a * x, 2.0, X, Y, grid=N, backend="sim")
    h = static_html("saxpy", "sim", r, None, None, "uint i;", "metal")
    assert "mismatch" in h and "<span" in h


def test_metal_lexer_registered():
    from pygments.lexers import get_lexer_by_name
    from pygments.token import Keyword, Name
    lx = get_lexer_by_name("metal")
    toks = dict((v, t) for t, v in lx.get_tokens("kernel void k(device float4* a [[buffer(0)]]) "
                                                "{ threadgroup_barrier(mem_flags::mem_threadgroup); }"))
    assert toks["kernel"] in Keyword and toks["device"] in Keyword and toks["float4"] in Keyword.Type
    assert toks["[[buffer(0)]]"] in Name.Decorator and toks["threadgroup_barrier"] in Name.Builtin


@mb.kernel
def shifted(x, out: mb.Out):
    # Reads one past the end: the last thread's x[i + 1] is out of bounds.
    i = thread_position_in_grid.x
    out[i] = x[i + 1]


def test_check_memory_button_shows_stats_then_findings():
    wb = make()
    wb.debug_button.click()
    assert "no findings" in wb.memory_view.value
    assert "read" in wb.memory_view.value.lower()          # the access statistics table
    assert wb.tabs.selected_index == 5
    x = np.random.default_rng(2).standard_normal(N).astype(np.float32)
    bad = Workbench(shifted, (x,), dict(grid=N, threadgroup=64, backend="sim"))
    bad.debug_button.click()
    assert "out-of-bounds" in bad.memory_view.value and "x[i + 1]" in bad.memory_view.value


def test_timing_tab_models_a_gpu_beside_simulator_time():
    from metalbench import devices
    wb = make()
    wb.run()
    v = wb.timing_view.value
    assert "simulator time" in v and "modelled M" in v and "memory-bound" in v
    wb.model_device.value = "H200"
    h200 = wb.timing_view.value
    assert "modelled H200" in h200
    est = wb.model_estimate()
    assert est.device.name == "H200" and est.nbytes == devices.work(
        wb.kernel, *wb.args, **{k: v for k, v in wb.launch_kwargs().items() if k != "backend"})[0]
    assert h200.count("<img") == 1                 # the run times only
    wb.roofline_button.click()
    assert wb.timing_view.value.count("<img") == 2   # and the roofline
