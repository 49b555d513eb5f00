"""export_mlx of a differentiable kernel: forward + adjoint kernels + mx.custom_function glue,
run with the stand-in mx.fast.metal_kernel (the exported MSL on the simulator), against mx.grad
of MLX ops."""
import mlx.core as mx
import numpy as np

import metalbench as mb
from metalbench.dsl import *  # noqa: F401,F403
from test_autodiff import lerp, lerp_mx, row_lse, saxpy
from test_export import _run


def test_export_saxpy_grad_through_custom_function(monkeypatch):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(50).astype(np.float32), rng.standard_normal(50).astype(np.float32)
    code = saxpy.export_mlx(1.5, x, y, grid=50, threadgroup=32)
    assert "saxpy_vjp_kernel = mx.fast.metal_kernel(" in code and "atomic_outputs=True" in code
    ns = _run(code, monkeypatch)
    f = ns["saxpy_differentiable"]
    x2, y2 = rng.standard_normal(80).astype(np.float32), rng.standard_normal(80).astype(np.float32)  # other size
    ga, gx, gy = mx.grad(lambda a, p, q: (f(a, p, q) ** 2).sum(), argnums=(0, 1, 2))(
        mx.array(0.5), mx.array(x2), mx.array(y2))
    wa, wx, wy = mx.grad(lambda a, p, q: ((a * p + q * mx.exp(a)) ** 2).sum(), argnums=(0, 1, 2))(
        mx.array(0.5), mx.array(x2), mx.array(y2))
    np.testing.assert_allclose(np.array(gx), np.array(wx), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.array(gy), np.array(wy), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(float(ga), float(wa), rtol=1e-4)


def test_export_gather_and_loops(monkeypatch):
    rng = np.random.default_rng(1)
    x, pos = rng.standard_normal(20).astype(np.float32), rng.uniform(-1, 21, 64).astype(np.float32)
    ns = _run(lerp.export_mlx(x, pos, grid=64, threadgroup=32), monkeypatch)
    ct = rng.standard_normal(64).astype(np.float32)
    gx, gpos = ns["lerp_vjp"](x, pos, ct)
    _, (wx, wpos) = mx.vjp(lambda a, p: [lerp_mx(a, p)], [mx.array(x), mx.array(pos)], [mx.array(ct)])
    np.testing.assert_allclose(np.array(gx), np.array(wx), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.array(gpos), np.array(wpos), rtol=1e-4, atol=1e-5)
    xm = rng.standard_normal((6, 9)).astype(np.float32)
    code = row_lse.export_mlx(xm, grid=6, threadgroup=32)
    ns = _run(code, monkeypatch)
    xm2 = mx.array(rng.standard_normal((10, 13)).astype(np.float32))
    g = mx.grad(lambda a: ns["row_lse_differentiable"](a).sum())(xm2)
    w = mx.grad(lambda a: mx.logsumexp(a, axis=1).sum())(xm2)
    np.testing.assert_allclose(np.array(g), np.array(w), rtol=1e-4, atol=1e-6)


def test_export_of_a_kernel_outside_the_subset_says_why(monkeypatch):
    @mb.kernel
    def wl(x, out: mb.Out):
        i = thread_position_in_grid.x
        s = x[i]
        while s > 1.0:
            s = s * 0.5
        out[i] = s
    code = wl.export_mlx(np.ones(4, np.float32), grid=4)
    assert "# No VJP exported: a while loop is not supported" in code
    assert "wl_vjp" not in code.replace("No VJP", "")
    assert "vjp" not in wl.export_mlx(np.ones(4, np.float32), grid=4, vjp=False).lower()
