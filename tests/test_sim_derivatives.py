"""Simulator launches under MLX's transformations behave as MLX's custom kernels do.

On a GPU a launch is a ``CustomKernel`` primitive: it has no VJP or JVP, so ``mx.grad``
through a bare launch raises, and a ``mx.custom_function`` around it supplies the
derivative (MLX's docs do this for grid_sample). The simulator's outputs are computed on
the host; they must not pass for constants (a zero gradient, silently).
"""
import numpy as np
import pytest

mx = pytest.importorskip("mlx.core")
import metalbench as mb  # noqa: E402
from metalbench.runtime import KernelGradientError  # noqa: E402

# out = w * x * x (my own test kernel), and its adjoint dx = 2 * w * x * cot
SQUARE = mb.metal_kernel(name="wsq", input_names=["x", "w"], output_names=["out"], source="""
    uint i = thread_position_in_grid.x;
    if (i < n) out[i] = w[i] * x[i] * x[i];
""")
SQUARE_ADJ = mb.metal_kernel(name="wsq_adj", input_names=["x", "w", "cot"], output_names=["dx"], source="""
    uint i = thread_position_in_grid.x;
    if (i < n) dx[i] = 2.0f * w[i] * x[i] * cot[i];
""")


def square(x, w):
    return SQUARE(inputs=[x, w], template=[("n", x.size)], grid=(x.size, 1, 1), threadgroup=(32, 1, 1),
                  output_shapes=[x.shape], output_dtypes=[x.dtype], backend="sim")[0]


@mx.custom_function
def square_fn(x, w):
    return square(x, w)


@square_fn.vjp
def _square_vjp(primals, cot, _out):
    x, w = primals
    dx = SQUARE_ADJ(inputs=[x, w, cot], template=[("n", x.size)], grid=(x.size, 1, 1), threadgroup=(32, 1, 1),
                    output_shapes=[x.shape], output_dtypes=[x.dtype], backend="sim")[0]
    return dx, mx.zeros_like(w)


def _data(n=77, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(np.float32)
    x[:5] = [0.0, -0.0, 1.0, -3.5, 1e-20]                 # edge values
    return x, rng.uniform(-2, 2, n).astype(np.float32)


def test_forward_values_unchanged():
    x, w = _data()
    np.testing.assert_allclose(np.array(square(mx.array(x), mx.array(w))), w * x * x, rtol=1e-6)


@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "vjp"])
def test_derivative_through_a_bare_launch_raises_as_mlx(transform):
    x, w = map(mx.array, _data())
    loss = lambda x: square(x, w).sum()   # noqa: E731
    with pytest.raises(ValueError, match=r"\[Primitive::vjp\] Not implemented for CustomKernel") as e:
        if transform == "vjp":
            mx.vjp(lambda x: square(x, w), [x], [mx.ones_like(x)])
        else:
            getattr(mx, transform)(loss)(x)
    assert isinstance(e.value, KernelGradientError) and "'wsq'" in str(e.value)
    assert "custom_function" in e.value.hint


def test_jvp_through_a_bare_launch_raises_as_mlx():
    x, w = map(mx.array, _data())
    with pytest.raises(ValueError, match=r"\[Primitive::jvp\] Not implemented for CustomKernel"):
        mx.jvp(lambda x: square(x, w), [x], [mx.ones_like(x)])


def test_launch_off_the_gradient_path_is_fine():
    # d/dx sum(x * k(w)) needs no derivative of the launch: as on a GPU, no error
    x, w = _data(seed=1)
    g = mx.grad(lambda x: (x * square(mx.array(w), mx.array(w))).sum())(mx.array(x))
    np.testing.assert_allclose(np.array(g), w * w * w, rtol=1e-6)
    g = mx.grad(lambda x: (x + mx.stop_gradient(square(x, mx.array(w)))).sum())(mx.array(x))
    np.testing.assert_array_equal(np.array(g), np.ones_like(x))


@pytest.mark.parametrize("n,seed", [(77, 0), (1, 1), (256, 2)])
def test_custom_function_vjp_around_launches(n, seed):
    x, w = _data(max(n, 5), seed)
    x, w = x[:n], w[:n]
    cot = np.random.default_rng(seed + 10).standard_normal(n).astype(np.float32)
    out, (dx,) = mx.vjp(lambda x: square_fn(x, mx.array(w)), [mx.array(x)], [mx.array(cot)])
    np.testing.assert_allclose(np.array(out[0]), w * x * x, rtol=1e-6)
    np.testing.assert_allclose(np.array(dx), 2 * w * x * cot, rtol=1e-6, atol=1e-30)
    g = mx.grad(lambda x: square_fn(x, mx.array(w)).sum())(mx.array(x))
    np.testing.assert_allclose(np.array(g), 2 * w * x, rtol=1e-6, atol=1e-30)


def test_dsl_kernel_bare_launch_raises_and_mlx_function_differentiates():
    from metalbench.dsl import thread_position_in_grid

    @mb.kernel
    def cube(x, out: mb.Out):
        i = thread_position_in_grid.x
        out[i] = x[i] * x[i] * x[i]
    x = np.array([1.0, -2.0, 0.5, 0.0], np.float32)
    with pytest.raises(KernelGradientError, match="'cube'"):
        mx.grad(lambda a: cube(a, grid=4, backend="sim").sum())(mx.array(x))
    f = cube.mlx_function(grid=lambda a: a.size, backend="sim")
    np.testing.assert_allclose(np.array(mx.grad(lambda a: f(a).sum())(mx.array(x))), 3 * x * x, rtol=1e-6)


def test_compiled_launch_explains_itself_and_runs_with_compile_disabled():
    x, w = map(mx.array, _data())
    f = mx.compile(lambda x: square(x, w) + 1)
    with pytest.raises(mb.KernelLaunchError, match="traced by an MLX transformation"):
        f(x)
    mx.disable_compile()
    try:
        np.testing.assert_allclose(np.array(mx.compile(lambda x: square(x, w) + 1)(x)),
                                   np.array(w) * np.array(x) ** 2 + 1, rtol=1e-5, atol=1e-6)
    finally:
        mx.enable_compile()


def test_chained_launches_read_values_and_still_refuse_derivatives():
    # the chain stays tied: a gradient through it raises
    x, w = _data(seed=3)
    xa, wa = mx.array(x), mx.array(w)
    y = square(square(xa, wa), wa)
    np.testing.assert_allclose(np.array(y), w * (w * x * x) ** 2, rtol=1e-5)
    with pytest.raises(KernelGradientError):
        mx.grad(lambda x: square(square(x, wa), wa).sum())(xa)


def test_a_launch_reads_an_output_updated_in_place_since():
    # y += v and y[a:b] = v keep the Python object and change its values: the next launch
    # must read the new ones (it once read the simulator's array behind the tie: stale)
    x, w = _data(seed=4)
    xa, wa = mx.array(x), mx.array(w)
    y = square(xa, wa)
    y += 10
    np.testing.assert_allclose(np.array(square(y, wa)), w * (w * x * x + 10) ** 2, rtol=1e-5)
    y2 = square(xa, wa)
    y2[1:3] = 5.0
    want = w * x * x
    want[1:3] = 5.0
    np.testing.assert_allclose(np.array(square(y2, wa)), w * want ** 2, rtol=1e-5)
