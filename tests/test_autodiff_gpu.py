"""Generated VJPs on the NVIDIA machine (marker gpu; skipped without MLX's CUDA backend).

The sim tests of test_autodiff*.py run there too with METALBENCH_TEST_BACKEND=cuda; these
add what only a GPU backend does: mx.grad / mx.value_and_grad / mx.compile through
k.mlx_function, and a small training loop whose one layer is a metalbench kernel."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.dsl import *  # noqa: F401,F403
from test_autodiff import branches, branches_mx, gelu, gelu_mx, lerp, lerp_mx, row_lse, saxpy

pytestmark = pytest.mark.gpu


def close(a, b, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(np.array(a), np.array(b), rtol=rtol, atol=atol)


def test_mlx_function_grad_and_compile_on_cuda():
    x = mx.random.normal((4096,))
    f = gelu.mlx_function(grid=lambda x: x.size, threadgroup=256, backend="cuda")
    g = mx.grad(lambda a: (f(a) * mx.cos(a)).sum())(x)
    close(g, mx.grad(lambda a: (gelu_mx(a) * mx.cos(a)).sum())(x))
    gc = mx.compile(mx.grad(lambda a: (f(a) * mx.cos(a)).sum()))(x)      # traced: no host round trip
    close(gc, g)
    w = mx.array([0.8, 1.0])
    v, (gx, gw) = mx.value_and_grad(lambda a, b: branches.mlx_function(grid=4096, backend="cuda")(a, b).sum(),
                                    argnums=(0, 1))(x, w)
    wv, (wx, ww) = mx.value_and_grad(lambda a, b: branches_mx(a, b).sum(), argnums=(0, 1))(x, w)
    close(v, wv, rtol=1e-4, atol=1e-2)
    close(gx, wx)
    close(gw, ww, rtol=1e-3, atol=1e-1)


def test_gather_logsumexp_and_scalar_on_cuda():
    x = mx.random.normal((100,))
    pos = mx.random.uniform(-2, 102, (5000,))
    f = lerp.mlx_function(grid=lambda x, pos: pos.size, backend="cuda")
    gx, gp = mx.grad(lambda a, p: (f(a, p) ** 2).sum(), argnums=(0, 1))(x, pos)
    wx, wp = mx.grad(lambda a, p: (lerp_mx(a, p) ** 2).sum(), argnums=(0, 1))(x, pos)
    close(gx, wx, rtol=1e-3, atol=1e-3)
    close(gp, wp, rtol=1e-3, atol=1e-4)
    m = mx.random.normal((512, 300))
    g = mx.grad(lambda a: row_lse.mlx_function(grid=512, backend="cuda")(a).sum())(m)
    close(g, mx.grad(lambda a: mx.logsumexp(a, axis=1).sum())(m))
    y = mx.random.normal((100,))
    ga, gx2, gy = saxpy.vjp(1.5, x, y, cotangents=mx.ones((100,)), grid=100, backend="cuda")
    close(ga, (x + y * np.exp(1.5)).sum(), rtol=1e-4, atol=1e-3)


def test_training_with_a_kernel_layer_on_cuda():
    @mb.kernel
    def dense_tanh(x, w, b, out: mb.Out(shape=lambda x, w, b: (x.shape[0], w.shape[1]))):
        t = thread_position_in_grid.x
        n = t // w.shape[1]
        j = t % w.shape[1]
        if n < x.shape[0]:
            acc = b[j]
            for k in range(x.shape[1]):
                acc += x[n, k] * w[k, j]
            out[t] = metal.tanh(acc)

    rng = np.random.default_rng(0)
    xs = mx.array(rng.uniform(-1, 1, (256, 1)).astype(np.float32))
    ys = mx.sin(3 * xs)
    layer = dense_tanh.mlx_function(grid=lambda x, w, b: x.shape[0] * w.shape[1], backend="cuda")
    params = {"w": mx.array(rng.standard_normal((1, 32)).astype(np.float32)), "b": mx.zeros((32,)),
              "v": mx.array(rng.standard_normal((32, 1)).astype(np.float32) * 0.1)}

    def loss(p):
        return mx.mean((layer(xs, p["w"], p["b"]) @ p["v"] - ys) ** 2)
    step = mx.value_and_grad(loss)
    losses = []
    for _ in range(200):
        val, g = step(params)
        params = {k: params[k] - 0.1 * g[k] for k in params}
        losses.append(float(val))
    assert losses[-1] < 0.2 * losses[0]


def test_grid_sample_benchmark_agrees_on_cuda():
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import autodiff_gpu
    assert autodiff_gpu.main(["--backend", "cuda", "--quick", "--repeats", "2"]) == 0
