"""devices.py: the device table, per-device launch limits, and the roofline model, checked
against hand counts and against the simulator running the counted kernels."""
import dataclasses

import numpy as np
import pytest

import metalbench as mb
from metalbench import devices as D
from metalbench.dsl import *  # noqa: F401,F403
from metalbench.errors import KernelLaunchError


def test_table_covers_the_families_and_h200():
    for gen in ("M1", "M2", "M3", "M4"):
        for tier in ("", " Pro", " Max") + ((" Ultra",) if gen != "M4" else ()):
            d = D.DEVICES[gen + tier]
            assert d.vendor == "apple" and d.simd_width == 32 and d.max_threads == 1024
            assert d.threadgroup_memory == 32 * 1024 and d.bandwidth_gbs > 60 and d.fp32_tflops > 2
    # within a generation, bandwidth and compute grow with the tier
    for gen in ("M1", "M2", "M3"):
        tiers = [D.DEVICES[gen + t] for t in ("", " Pro", " Max", " Ultra")]
        assert [t.bandwidth_gbs for t in tiers] == sorted(t.bandwidth_gbs for t in tiers)
        assert [t.fp32_tflops for t in tiers] == sorted(t.fp32_tflops for t in tiers)
    # Apple's own published figures, where it gave them
    for name, tf in (("M1", 2.6), ("M1 Max", 10.4), ("M2", 3.6), ("M2 Ultra", 27.2)):
        assert D.DEVICES[name].fp32_tflops == pytest.approx(tf, rel=0.03)
    h = D.DEVICES["H200"]
    assert (h.bandwidth_gbs, h.threadgroup_memory, h.max_threads) == (4800.0, 48 * 1024, 1024)


@pytest.mark.parametrize("text,name", [("Apple M2 Ultra", "M2 Ultra"), ("metal:Apple M3 Pro", "M3 Pro"),
                                       ("cuda:NVIDIA H200", "H200"), ("m4 max", "M4 Max"), ("Apple M1", "M1")])
def test_lookup(text, name):
    assert D.lookup(text).name == name


def test_lookup_unknown_names_the_table():
    with pytest.raises(KeyError, match="M2 Max"):
        D.lookup("NVIDIA A100")


def test_limits_before_launch():
    m2u = D.DEVICES["M2 Ultra"]
    with pytest.raises(KernelLaunchError, match="M2 Ultra allows at most 1024"):
        D.check_launch(m2u, (32, 64, 1))
    with pytest.warns(RuntimeWarning, match="896"):
        D.check_launch(m2u, (1024, 1, 1))
    D.check_launch(m2u, (896, 1, 1))     # at the pipeline limit: silent


@mb.kernel
def tile_k(x, out: mb.Out):
    t = threadgroup_array(8000, float32)            # 32000 bytes: within every device's limit
    i = thread_position_in_grid.x
    t[thread_index_in_threadgroup] = x[i]
    threadgroup_barrier()
    out[i] = t[thread_index_in_threadgroup]


def test_threadgroup_memory_per_device():
    x = np.ones(64, np.float32)
    sp = tile_k.specialization(tile_k.bind(x, grid=64, threadgroup=64))
    assert D.threadgroup_memory(sp.ir) == 32000
    D.check_launch(D.DEVICES["M1"], (64, 1, 1), sp.ir)
    D.check_launch(D.DEVICES["H200"], (64, 1, 1), sp.ir)
    # a part with less (the contract's 32 KiB is checked when the kernel is built; a
    # device's own figure is checked again at launch)
    small = dataclasses.replace(D.DEVICES["M1"], name="small", threadgroup_memory=16384)
    with pytest.raises(KernelLaunchError, match="32000 bytes of threadgroup memory; small has 16384"):
        D.check_launch(small, (64, 1, 1), sp.ir)


@mb.kernel
def saxpy_k(a: float, x, y, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = a * x[i] + y[i]


@mb.kernel
def rowsum_k(x, out: mb.Out(shape=lambda x, **_: (x.shape[0],), dtype=mb.float32), NC: mb.constexpr = 64):
    r = thread_position_in_grid.x
    s = 0.0
    for j in range(NC):
        s += x[r * NC + j] * 2.0
    out[r] = s


def test_work_counts_bytes_and_flops():
    n = 1 << 16
    x = np.ones(n, np.float32)
    nbytes, flops, exact = D.work(saxpy_k, 2.0, x, x, grid=n)
    assert (nbytes, flops, exact) == (3 * 4 * n, 2 * n, True)
    xs = np.ones((32, 64), np.float32)
    nbytes, flops, exact = D.work(rowsum_k, xs, grid=32, threadgroup=32, NC=64)
    assert (nbytes, flops, exact) == (xs.nbytes + 32 * 4, 32 * 64 * 2, True)
    out = np.asarray(rowsum_k(xs, grid=32, threadgroup=32, NC=64, backend="sim"))
    assert np.allclose(out, 2 * xs.sum(1))       # the counted kernel computes what was counted


def test_estimate_roofline_and_bounds():
    m1 = D.DEVICES["M1"]
    e = D.estimate(m1, nbytes=68.25e9, flops=1.0)
    assert e.seconds == pytest.approx(1.0) and e.bound == "memory"
    e = D.estimate("M1", nbytes=1.0, flops=m1.fp32_tflops * 1e12 * 2)
    assert e.seconds == pytest.approx(2.0) and e.bound == "compute"
    # the same launch is modelled faster on a bigger part of the family
    x = np.ones(1 << 16, np.float32)
    times = [D.estimate_launch(saxpy_k, 2.0, x, x, grid=x.size, device=d).seconds
             for d in ("M1", "M1 Pro", "M1 Max", "M1 Ultra")]
    assert times == sorted(times, reverse=True)
    assert "modelled M1" in str(D.estimate_launch(saxpy_k, 2.0, x, x, grid=x.size, device="M1"))
    fig = D.roofline([("saxpy", e, 3.0)], "M1")
    assert fig._repr_png_()[:4] == b"\x89PNG"


def test_chosen_device_from_environment(monkeypatch):
    monkeypatch.setenv("METALBENCH_DEVICE", "M3 Max")
    assert D.chosen().name == "M3 Max"
    monkeypatch.delenv("METALBENCH_DEVICE")
    assert D.chosen().name == D.DEFAULT_DEVICE


def test_gpu_plan_checks_the_current_device(monkeypatch):
    """A GPU launch plan checks the GPU it runs on before anything reaches MLX."""
    from metalbench.protocol import MLXLaunch
    x = np.ones(1024, np.float32)
    sp = saxpy_k.specialization(saxpy_k.bind(2.0, x, x, grid=1024, threadgroup=1024, backend="sim"))
    tiny = dataclasses.replace(D.DEVICES["M2 Ultra"], name="tiny", max_threads=512)
    monkeypatch.setattr(D, "current", lambda backend: tiny)
    with pytest.raises(KernelLaunchError, match="tiny allows at most 512"):
        MLXLaunch(sp, "metal", (1024, 1, 1), (1024, 1, 1), [("out", (1024,), mb.float32)])
