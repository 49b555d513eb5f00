"""export_mlx: standalone MLX code, run with mx.fast.metal_kernel patched to mb.metal_kernel (sim)."""
import mlx.core as mx
import numpy as np

import metalbench as mb
from metalbench.dsl import *  # noqa: F401,F403
from metalbench.export import export_mlx


@mb.kernel
def saxpy(a: float, x, y, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = a * x[i] + y[i]


def _run(code, monkeypatch):
    assert "metalbench" not in code.replace("exported from metalbench", "")
    monkeypatch.setattr(mx.fast, "metal_kernel", mb.metal_kernel, raising=False)
    monkeypatch.setenv("METALBENCH_BACKEND", "sim")
    ns = {}
    exec(compile(code, "<exported>", "exec"), ns)
    return ns


def test_export_dsl_kernel(monkeypatch):
    x = np.arange(100, dtype=np.float32)
    y = np.ones(100, dtype=np.float32)
    code = saxpy.export_mlx(2.0, x, y, grid=100, threadgroup=32)
    assert "mx.fast.metal_kernel(" in code and "grid=(100, 1, 1)" in code
    ns = _run(code, monkeypatch)
    out = ns["saxpy"](2.0, mx.array(x), mx.array(y))
    assert np.allclose(np.asarray(out), 2 * x + y)


def test_export_metal_kernel(monkeypatch):
    k = mb.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"],
                        source="uint i = thread_position_in_grid.x;\nout[i] = metal::exp(inp[i]);\n")
    a = np.linspace(-1, 1, 64, dtype=np.float32)
    code = export_mlx(k, inputs=[a], grid=(64, 1, 1), threadgroup=(32, 1, 1), output_shapes=[a.shape],
                      output_dtypes=[mx.float32])
    ns = _run(code, monkeypatch)
    out = ns["myexp"](mx.array(a))
    assert np.allclose(np.asarray(out), np.exp(a), rtol=1e-5)
