"""Generated VJPs (k.vjp) against mx.vjp of the same function written with MLX ops.

METALBENCH_TEST_BACKEND=cuda runs the adjoint kernels on the GPU (the device run)."""
import os

import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.dsl import *  # noqa: F401,F403

BACKEND = os.environ.get("METALBENCH_TEST_BACKEND", "sim")


def mlx_vjp(fn, primals, cotangents):
    _, g = mx.vjp(fn, [mx.array(p) for p in primals], [mx.array(c) for c in cotangents])
    return [np.array(x) for x in g]


def close(got, want, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(np.array(got, dtype=np.float64), np.array(want, dtype=np.float64), rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------- the five kernels of issue 17

@mb.kernel
def gelu(x, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        v = x[i]
        out[i] = 0.5 * v * (1.0 + metal.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))


def gelu_mx(x):
    return 0.5 * x * (1.0 + mx.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


@pytest.mark.parametrize("n", [1, 37, 1000])
def test_gelu(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32) * 3
    ct = rng.standard_normal(n).astype(np.float32)
    gx, = gelu.vjp(x, cotangents=ct, grid=n, threadgroup=64, backend=BACKEND)
    want, = mlx_vjp(lambda a: [gelu_mx(a)], [x], [ct])
    close(gx, want)


@mb.kernel
def lerp(x, pos, out: mb.Out(shape="pos")):
    i = thread_position_in_grid.x
    if i < pos.size:
        p = pos[i]
        j = int(metal.floor(p))
        t = p - float(j)
        lo = x[j] if j >= 0 and j < x.size else 0.0
        hi = x[j + 1] if j + 1 >= 0 and j + 1 < x.size else 0.0
        out[i] = lo * (1.0 - t) + hi * t


def lerp_mx(x, pos):
    n = x.shape[0]
    j = mx.stop_gradient(mx.floor(pos).astype(mx.int32))
    t = pos - mx.floor(pos)
    valid_lo = (j >= 0) & (j < n)
    valid_hi = (j + 1 >= 0) & (j + 1 < n)
    lo = mx.where(valid_lo, mx.take(x, mx.clip(j, 0, n - 1)), 0.0)
    hi = mx.where(valid_hi, mx.take(x, mx.clip(j + 1, 0, n - 1)), 0.0)
    return lo * (1.0 - t) + hi * t


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_linear_interpolation_gather(seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(20).astype(np.float32)
    pos = rng.uniform(-2, 22, 300).astype(np.float32)     # some outside: their reads are skipped
    ct = rng.standard_normal(300).astype(np.float32)
    gx, gpos = lerp.vjp(x, pos, cotangents=ct, grid=300, threadgroup=32, backend=BACKEND)
    wx, wpos = mlx_vjp(lambda a, p: [lerp_mx(a, p)], [x, pos], [ct])
    close(gx, wx, atol=1e-4)      # many cotangents scatter into each x: summation order
    close(gpos, wpos)


@mb.kernel
def row_lse(x, out: mb.Out(shape=lambda x: (x.shape[0],))):
    r = thread_position_in_grid.x
    if r >= x.shape[0]:
        return
    m = -1e30
    for j in range(x.shape[1]):
        m = max(m, x[r, j])
    s = 0.0
    for j in range(x.shape[1]):
        s += metal.exp(x[r, j] - m)
    out[r] = m + metal.log(s)


@pytest.mark.parametrize("shape", [(5, 7), (33, 1), (8, 64)])
def test_row_logsumexp(shape):
    rng = np.random.default_rng(shape[1])
    x = rng.standard_normal(shape).astype(np.float32) * 2
    ct = rng.standard_normal(shape[0]).astype(np.float32)
    gx, = row_lse.vjp(x, cotangents=ct, grid=shape[0], threadgroup=32, backend=BACKEND)
    want, = mlx_vjp(lambda a: [mx.logsumexp(a, axis=1)], [x], [ct])
    close(gx, want)


@mb.kernel
def sum_squares(x, out: mb.Out(shape=(1,))):
    i = thread_position_in_grid.x
    if i < x.size:
        atomic_add(out, 0, x[i] * x[i])


def test_sum_of_squares_through_atomic_add():
    rng = np.random.default_rng(5)
    x = rng.standard_normal(1000).astype(np.float32)
    fwd = sum_squares(x, grid=1000, threadgroup=128, init_value=0, backend=BACKEND)
    close(fwd, [np.sum(x.astype(np.float64) ** 2)], rtol=1e-4)
    gx, = sum_squares.vjp(x, cotangents=np.array([0.75], np.float32), grid=1000, threadgroup=128,
                          backend=BACKEND)
    want, = mlx_vjp(lambda a: [mx.sum(a * a, keepdims=True)], [x], [np.array([0.75], np.float32)])
    close(gx, want)


@mb.kernel
def saxpy(a: float, x, y, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = a * x[i] + y[i] * metal.exp(a)


@pytest.mark.parametrize("n", [5, 300])
def test_float_scalar_argument(n):
    rng = np.random.default_rng(n)
    x, y, ct = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    ga, gx, gy = saxpy.vjp(1.5, x, y, cotangents=ct, grid=n, threadgroup=64, backend=BACKEND)
    wa, wx, wy = mlx_vjp(lambda a, p, q: [a * p + q * mx.exp(a)], [np.float32(1.5), x, y], [ct])
    assert ga.shape == () and ga.dtype == mx.float32
    close(ga, wa, rtol=1e-4, atol=1e-4)
    close(gx, wx)
    close(gy, wy)


# ----------------------------------------------------------------------------- control flow

@mb.func
def softclip(v, lim):
    if v > lim:
        return lim + metal.log(1.0 + v - lim)
    return v


@mb.kernel
def branches(x, w, out: mb.Out):
    i = thread_position_in_grid.x
    if i >= x.size:
        return
    v = x[i]
    acc = 0.0
    if v > 0.0:
        acc = v * w[0]
    elif v < -1.0:
        acc = metal.sin(v)
    else:
        acc = v * v
    acc = softclip(acc, 0.5)
    out[i] = acc if w[1] > 0.0 else -acc


def branches_mx(x, w):
    acc = mx.where(x > 0, x * w[0], mx.where(x < -1, mx.sin(x), x * x))
    acc = mx.where(acc > 0.5, 0.5 + mx.log(1.0 + acc - 0.5), acc)
    return mx.where(w[1] > 0, acc, -acc)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_if_else_early_return_and_device_function(sign):
    rng = np.random.default_rng(7)
    x = rng.uniform(-3, 3, 200).astype(np.float32)
    w = np.array([0.8, sign], np.float32)
    ct = rng.standard_normal(200).astype(np.float32)
    gx, gw = branches.vjp(x, w, cotangents=ct, grid=256, threadgroup=64, backend=BACKEND)
    wx, ww = mlx_vjp(lambda a, b: [branches_mx(a, b)], [x, w], [ct])
    close(gx, wx)
    close(gw, ww, rtol=1e-4, atol=1e-3)


@mb.kernel
def poly_rows(x, c, out: mb.Out(shape=lambda x, **_: (x.shape[0],)), K: mb.constexpr = 6):
    # Horner's rule with a loop-carried value whose derivative needs its old value
    r = thread_position_in_grid.x
    if r < x.shape[0]:
        acc = 0.0
        for k in range(K):
            if k % 2 == 1:
                continue
            acc = acc * x[r] + c[k] * metal.cos(acc)
        out[r] = acc


def poly_rows_mx(x, c, K=6):
    acc = mx.zeros_like(x)
    for k in range(0, K, 2):
        acc = acc * x + c[k] * mx.cos(acc)
    return acc


@mb.kernel
def poly_rows_dyn(x, c, out: mb.Out(shape=lambda x, **_: (x.shape[0],))):
    r = thread_position_in_grid.x
    if r < x.shape[0]:
        acc = 0.0
        for k in range(c.size):
            if k % 2 == 1:
                continue
            acc = acc * x[r] + c[k] * metal.cos(acc)
        out[r] = acc


@pytest.mark.parametrize("K", [6, 3000])   # a thread-local tape (constant trip count), a device tape (too long)
def test_loop_carried_values_on_tapes(K):
    rng = np.random.default_rng(3)
    x = rng.uniform(-0.9, 0.9, 40).astype(np.float32)
    c = rng.standard_normal(K).astype(np.float32) * 0.3
    ct = rng.standard_normal(40).astype(np.float32)
    gx, gc, _ = poly_rows.vjp(x, c, K, cotangents=ct, grid=40, threadgroup=32, backend=BACKEND)
    wx, wc = mlx_vjp(lambda a, b: [poly_rows_mx(a, b, K)], [x, c], [ct])
    close(gx, wx, rtol=1e-3, atol=1e-4)
    close(gc, wc, rtol=1e-3, atol=1e-4)
    gx, gc = poly_rows_dyn.vjp(x, c, cotangents=ct, grid=40, threadgroup=32, backend=BACKEND)
    close(gx, wx, rtol=1e-3, atol=1e-4)
    close(gc, wc, rtol=1e-3, atol=1e-4)


@mb.kernel
def nested(x, out: mb.Out(shape=lambda x: (x.shape[0],))):
    r = thread_position_in_grid.x
    if r < x.shape[0]:
        acc = 1.0
        for a in range(x.shape[1]):
            inner = 0.0
            for b in range(a + 1):
                inner = inner * 0.5 + metal.sin(x[r, b] * acc)
            acc = acc + inner * inner * 0.1
        out[r] = acc


def nested_mx(x):
    acc = mx.ones((x.shape[0],))
    for a in range(x.shape[1]):
        inner = mx.zeros((x.shape[0],))
        for b in range(a + 1):
            inner = inner * 0.5 + mx.sin(x[:, b] * acc)
        acc = acc + inner * inner * 0.1
    return acc


def test_nested_loops_with_dynamic_trip_counts():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((6, 5)).astype(np.float32)
    ct = rng.standard_normal(6).astype(np.float32)
    gx, = nested.vjp(x, cotangents=ct, grid=6, threadgroup=32, backend=BACKEND)
    want, = mlx_vjp(lambda a: [nested_mx(a)], [x], [ct])
    close(gx, want, rtol=1e-3, atol=1e-4)


@mb.kernel
def two_outputs(x, i_scale, lo: mb.Out, hi: mb.Out, idx: mb.Out(dtype=mb.int32)):
    i = thread_position_in_grid.x
    v = x[i] * float(i_scale)
    lo[i] = metal.fmin(v, 0.0) * v
    hi[i] = metal.sqrt(metal.fmax(v, 0.0) + 1.0)
    idx[i] = int(v)


def test_several_outputs_and_integer_arguments():
    rng = np.random.default_rng(2)
    x = rng.standard_normal(64).astype(np.float32)
    c1, c2, c3 = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32), \
        np.zeros(64, np.int32)
    gx, gi = two_outputs.vjp(x, 3, cotangents=(c1, c2, c3), grid=64, backend=BACKEND)
    assert gi is None

    def f(a):
        v = a * 3.0
        return [mx.minimum(v, 0.0) * v, mx.sqrt(mx.maximum(v, 0.0) + 1.0)]
    want, = mlx_vjp(f, [x], [c1, c2])
    close(gx, want)
    gx2, _ = two_outputs.vjp(x, 3, cotangents={"hi": c2}, grid=64, backend=BACKEND)   # missing: zero
    want2, = mlx_vjp(lambda a: [mx.sqrt(mx.maximum(a * 3.0, 0.0) + 1.0)], [x], [c2])
    close(gx2, want2)


@mb.kernel
def halfk(x, y, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = x[i] * metal.exp(float(y[i]))


def test_half_input_gradient_has_its_dtype():
    x = np.linspace(-1, 1, 16, dtype=np.float32).astype(np.float16)
    y = np.linspace(0, 1, 16, dtype=np.float32)
    gx, gy = halfk.vjp(x, y, cotangents=np.ones(16, np.float16), grid=16, backend=BACKEND)
    assert gx.dtype == mx.float16 and gy.dtype == mx.float32
    close(gx, np.exp(y.astype(np.float16)), rtol=1e-2, atol=1e-2)
    close(gy, x.astype(np.float32) * np.exp(y), rtol=1e-2, atol=1e-2)


def test_unread_float_argument_gets_zeros():
    @mb.kernel
    def first(x, y, out: mb.Out):
        i = thread_position_in_grid.x
        out[i] = x[i] * 2.0

    x = np.ones(8, np.float32)
    gx, gy = first.vjp(x, x, cotangents=np.ones(8, np.float32), grid=8, backend=BACKEND)
    assert np.array(gx).tolist() == [2.0] * 8 and np.array(gy).tolist() == [0.0] * 8


# ----------------------------------------------------------------------------- threadgroup memory, phases

@mb.kernel
def blur3(x, out: mb.Out):
    # a tile with a halo in threadgroup memory; the barrier splits loading from computing
    tile = threadgroup_array(66, float32)
    i = thread_position_in_grid.x
    l = thread_position_in_threadgroup.x
    n = x.size
    tile[l + 1] = x[i] if i < n else 0.0
    if l == 0:
        tile[0] = x[i - 1] if i >= 1 and i - 1 < n else 0.0
    if l == 63:
        tile[65] = x[i + 1] if i + 1 < n else 0.0
    threadgroup_barrier()
    if i < n:
        out[i] = 0.25 * tile[l] + 0.5 * metal.sin(tile[l + 1]) + 0.25 * tile[l + 2] * tile[l]


def blur3_mx(x):
    p = mx.pad(x, [(1, 1)])
    return 0.25 * p[:-2] + 0.5 * mx.sin(p[1:-1]) + 0.25 * p[2:] * p[:-2]


@mb.kernel
def block_norms(x, w: float, out: mb.Out(shape=(1,))):
    # three phases: squares into threadgroup memory, a tree step, one thread sums with a loop
    part = threadgroup_array(64, float32)
    i = thread_position_in_grid.x
    l = thread_position_in_threadgroup.x
    part[l] = x[i] * x[i] * w if i < x.size else 0.0
    threadgroup_barrier()
    half = 0.0
    if l < 32:
        half = part[l] + metal.exp(-part[l + 32])
    threadgroup_barrier()
    if l < 32:
        part[l] = half
    threadgroup_barrier()
    if l == 0:
        s = 0.0
        for k in range(32):
            s += metal.sqrt(part[k] + 1.0)
        atomic_add(out, 0, s)


def block_norms_mx(x, w):
    n = x.shape[0]
    p = mx.pad(x * x * w, [(0, (-n) % 64)]).reshape(-1, 64)
    half = p[:, :32] + mx.exp(-p[:, 32:])
    return mx.sum(mx.sqrt(half + 1.0), keepdims=True).reshape(1)


@pytest.mark.parametrize("n", [64, 200])
def test_threadgroup_memory_phases(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    ct = rng.standard_normal(n).astype(np.float32)
    g = -(-n // 64) * 64
    gx, = blur3.vjp(x, cotangents=ct, grid=g, threadgroup=64, backend=BACKEND)
    want, = mlx_vjp(lambda a: [blur3_mx(a)], [x], [ct])
    close(gx, want)
    fwd = block_norms(x, 0.7, grid=g, threadgroup=64, init_value=0, backend=BACKEND)
    close(fwd, block_norms_mx(mx.array(x), 0.7), rtol=1e-4)
    gx, gw = block_norms.vjp(x, 0.7, cotangents=np.array([1.5], np.float32), grid=g, threadgroup=64,
                             backend=BACKEND)
    wx, ww = mlx_vjp(lambda a, w: [block_norms_mx(a, w)], [x, np.float32(0.7)], [np.array([1.5], np.float32)])
    close(gx, wx)
    close(gw, ww, rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- mlx_function

def test_mlx_function_grad_on_sim():
    f = gelu.mlx_function(grid=lambda x: x.size, threadgroup=64, backend="sim")
    x = mx.array(np.linspace(-3, 3, 50, dtype=np.float32))
    g = mx.grad(lambda a: (f(a) * mx.cos(a)).sum())(x)
    want = mx.grad(lambda a: (gelu_mx(a) * mx.cos(a)).sum())(x)
    close(g, want)
    val, (gx, gw) = mx.value_and_grad(lambda a, b: branches.mlx_function(grid=256, backend="sim")(a, b).sum(),
                                      argnums=(0, 1))(x, mx.array([0.8, 1.0]))
    wv, (wx, ww) = mx.value_and_grad(lambda a, b: branches_mx(a, b).sum(), argnums=(0, 1))(x, mx.array([0.8, 1.0]))
    close(val, wv)
    close(gx, wx)
    close(gw, ww, atol=1e-3)


def test_mlx_function_fixed_scalar_and_int_array():
    f = saxpy.mlx_function(a=2.0, grid=lambda x, y: x.size, backend="sim")
    x, y = mx.array([1.0, 2.0]), mx.array([3.0, 4.0])
    gx, gy = mx.grad(lambda p, q: f(p, q).sum(), argnums=(0, 1))(x, y)
    assert np.array(gx).tolist() == [2.0, 2.0]
    close(gy, [np.exp(2.0)] * 2)


def test_mlx_function_inside_compile_on_sim_says_what_to_do():
    f = gelu.mlx_function(grid=lambda x: x.size, backend="sim")
    with pytest.raises(mb.MetalbenchError, match="simulator") as e:
        mx.compile(mx.grad(lambda a: f(a).sum()))(mx.array([1.0, 2.0]))
    assert "k.vjp" in str(e.value) or "vjp" in str(e.value)


# ----------------------------------------------------------------------------- GPU path without a GPU

class FakeKernel:
    """Stands in for an ``mx.fast.cuda_kernel`` object: checks that only ``mx.array`` inputs
    arrive (no host round trip, so MLX can trace) and returns outputs that depend on them."""

    def __init__(self, made, **kw):
        self.kw = kw
        self.calls = []
        made.append(self)

    def __call__(self, *, inputs, grid, threadgroup, output_shapes, output_dtypes, init_value=None,
                 template=None, verbose=False, stream=None):
        assert all(type(a) is mx.array for a in inputs), [type(a) for a in inputs]
        self.calls.append(self.kw["name"])
        s = sum(mx.sum(a.astype(mx.float32)) for a in inputs)
        return [mx.zeros(sh, dtype=dt) + 0 * s.astype(dt) for sh, dt in zip(output_shapes, output_dtypes)]


def test_mlx_function_traces_on_gpu_backends(monkeypatch):
    from metalbench import launch as L
    made = []
    monkeypatch.setattr(mx.fast, "cuda_kernel", lambda **kw: FakeKernel(made, **kw))
    monkeypatch.setattr(L, "cuda_available", lambda: True)
    k = mb.kernel(row_lse.fn)                    # fresh caches (their MLX kernels are stand-ins)
    f = k.mlx_function(grid=lambda x: x.shape[0], backend="cuda")
    x = mx.array(np.random.default_rng(0).standard_normal((8, 40)).astype(np.float32))
    g = mx.compile(mx.grad(lambda a: f(a).sum()))(x)      # raises if anything evaluates while tracing
    assert g.shape == x.shape
    names = [c for m in made for c in m.calls]
    assert any("row_lse_vjp" in n for n in names) and any(n.startswith("row_lse_") and "vjp" not in n for n in names)


def test_repeated_calls_reuse_the_prepared_vjp_with_new_values():
    rng = np.random.default_rng(9)
    for a in (1.5, -0.25, 2.0):                      # one signature: the second call takes the thin path
        x, y, ct = (rng.standard_normal(64).astype(np.float32) for _ in range(3))
        ga, gx, gy = saxpy.vjp(a, x, y, cotangents=ct, grid=64, backend=BACKEND)
        wa, wx, wy = mlx_vjp(lambda s, p, q: [s * p + q * mx.exp(s)], [np.float32(a), x, y], [ct])
        close(ga, wa, atol=1e-4)
        close(gx, wx)
        close(gy, wy)
    x = rng.uniform(-0.9, 0.9, 40).astype(np.float32)
    c = rng.standard_normal(8).astype(np.float32)
    for K in (4, 8, 4):                              # constexpr values are part of the signature
        gx, gc, _ = poly_rows.vjp(x, c, K, cotangents=np.ones(40, np.float32), grid=40, backend=BACKEND)
        wx, wc = mlx_vjp(lambda p, q: [poly_rows_mx(p, q, K)], [x, c], [np.ones(40, np.float32)])
        close(gx, wx, rtol=1e-3, atol=1e-4)
        close(gc, wc, rtol=1e-3, atol=1e-4)


@mb.kernel
def overwrite(x, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = x[i] * 10.0              # overwritten below: contributes nothing
    out[i] = x[i] * x[i]
    safe = x[i] / (x[i] - 1.0) if x[i] != 1.0 else 0.0   # lazy: the division is not taken at 1
    if i == 0:
        out[i] = safe


def test_overwritten_store_and_lazy_select_with_a_division():
    x = np.array([1.0, 2.0, 3.0, 0.5], np.float32)
    gx, = overwrite.vjp(x, cotangents=np.ones(4, np.float32), grid=4, backend=BACKEND)
    # out[0] = 0 (x = 1 takes the else side: no NaN from 1/0), out[i] = x^2 elsewhere
    close(gx, [0.0, 4.0, 6.0, 1.0])


@mb.kernel
def overwrites(x, out: mb.Out):
    i = thread_position_in_grid.x
    v = x[i]
    if v > 0.5:
        out[i] = v * 3.0              # overwritten by the unconditional store below
    out[i] = v * v
    if i % 2 == 0:
        out[i] = metal.sin(v)         # overwrites it for even threads
    for k in range(3):
        if v < -0.5:
            out[i] = v * float(k)     # the last iteration's store wins


def overwrites_np(x):
    g = 2 * x
    even = np.arange(x.size) % 2 == 0
    g = np.where(even, np.cos(x), g)
    return np.where(x < -0.5, 2.0, g)


def test_stores_that_overwrite_stores():
    x = np.random.default_rng(4).uniform(-1, 1, 64).astype(np.float32)
    gx, = overwrites.vjp(x, cotangents=np.ones(64, np.float32), grid=64, backend=BACKEND)
    close(gx, overwrites_np(x))
