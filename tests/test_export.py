"""export_mlx: standalone MLX code, executed with a stand-in mx.fast.metal_kernel that runs
the exported body through mb.metal_kernel(..., backend="sim"), compared with the DSL kernel."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.dsl import *  # noqa: F401,F403
from metalbench.export import export_mlx

rng = np.random.default_rng(0)


@mb.kernel
def saxpy(a: float, x, y, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = a * x[i] + y[i]


@mb.kernel
def blur(x, out: mb.Out):
    c = thread_position_in_grid.x
    r = thread_position_in_grid.y
    H = x.shape[0]
    W = x.shape[1]
    if r < H and c < W:
        acc = 0.0
        for dr in range(-1, 2):
            for dc in range(-1, 2):
                rr = min(max(int32(r) + dr, 0), int32(H) - 1)
                cc = min(max(int32(c) + dc, 0), int32(W) - 1)
                acc += x[rr, cc]
        out[r, c] = acc / 9.0


@mb.kernel
def softmax(x, out: mb.Out, TG: mb.constexpr = 32):
    """One threadgroup (one SIMD-group) per row."""
    row = threadgroup_position_in_grid.x
    lane = thread_position_in_threadgroup.x
    n = x.shape[1]
    m = -3.0e38
    for j in range(lane, n, TG):
        m = max(m, x[row, j])
    m = simd_max(m)
    s = 0.0
    for j in range(lane, n, TG):
        s += exp(x[row, j] - m)
    s = simd_sum(s)
    for j in range(lane, n, TG):
        out[row, j] = exp(x[row, j] - m) / s


@mb.kernel
def row_sums(x, k: int, out: mb.Out(shape=lambda x, **_: (x.shape[0],))):
    r = thread_position_in_grid.x
    if r < x.shape[0]:
        acc = 0.0
        for j in range(x.shape[1]):
            acc += x[r, j]
        out[r] = acc * k


def _blur_ref(x):
    p = np.pad(x, 1, mode="edge")
    return sum(p[1 + dr:1 + dr + x.shape[0], 1 + dc:1 + dc + x.shape[1]]
               for dr in (-1, 0, 1) for dc in (-1, 0, 1)) / 9.0


def _stand_in(**kw):
    """mx.fast.metal_kernel as the exported module calls it, run on the simulator."""
    k = mb.metal_kernel(**kw)

    def call(**launch):
        return k(**launch, backend="sim")
    return call


def _run(code, monkeypatch):
    assert "metalbench" not in code.replace("exported from metalbench", "")
    assert "import mlx.core as mx" in code and code.count("import") == 1
    monkeypatch.setattr(mx.fast, "metal_kernel", _stand_in, raising=False)
    ns = {}
    exec(compile(code, "<exported>", "exec"), ns)
    return ns


def test_export_dsl_kernel(monkeypatch):
    x = np.arange(100, dtype=np.float32)
    y = np.ones(100, dtype=np.float32)
    code = saxpy.export_mlx(2.0, x, y, grid=100, threadgroup=32)
    assert "mx.fast.metal_kernel(" in code and "grid = (x.size, 1, 1)" in code
    f = _run(code, monkeypatch)["saxpy"]
    assert np.allclose(np.asarray(f(2.0, mx.array(x), mx.array(y))), 2 * x + y)
    x2, y2 = rng.standard_normal(300).astype(np.float32), rng.standard_normal(300).astype(np.float32)
    assert np.allclose(np.asarray(f(0.5, x2, y2)), 0.5 * x2 + y2)         # another size: read from x


@pytest.mark.parametrize("shape, other", [((48, 64), (40, 72)), ((16, 16), (7, 33))])
def test_export_2d_blur_reads_shapes_from_its_input(monkeypatch, shape, other):
    x = rng.standard_normal(shape).astype(np.float32)
    code = blur.export_mlx(x, grid=(shape[1], shape[0]), threadgroup=(16, 16))
    assert "def blur(x, *, grid=None" in code and "mb_out_shape" in code
    assert str(shape) not in code                                         # nothing baked in
    f = _run(code, monkeypatch)["blur"]
    for s in (shape, other):
        xs = rng.standard_normal(s).astype(np.float32)
        want = np.asarray(blur(xs, grid=(s[1], s[0]), threadgroup=(16, 16), backend="sim"))
        got = np.asarray(f(xs))
        assert got.shape == s and np.array_equal(got, want)
        assert np.allclose(got, _blur_ref(xs), atol=1e-5)
    with pytest.raises(ValueError, match="2-D"):
        f(np.ones(8, np.float32))


def test_export_row_softmax(monkeypatch):
    x = rng.standard_normal((24, 100)).astype(np.float32)
    code = softmax.export_mlx(x, grid=24 * 32, threadgroup=32)
    assert "grid = (x.shape[0] * 32, 1, 1)" in code and "TG=32" in code
    f = _run(code, monkeypatch)["softmax"]
    for rows, cols in ((24, 100), (5, 40)):
        xs = rng.standard_normal((rows, cols)).astype(np.float32)
        want = np.asarray(softmax(xs, grid=rows * 32, threadgroup=32, backend="sim"))
        got = np.asarray(f(mx.array(xs)))
        assert np.array_equal(got, want)
        e = np.exp(xs - xs.max(1, keepdims=True))
        assert np.allclose(got, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_export_shape_function_and_int_argument(monkeypatch):
    x = rng.standard_normal((12, 5)).astype(np.float32)
    code = row_sums.export_mlx(x, 3, grid=12, threadgroup=32)
    assert "out_shape = (x.shape[0],)" in code and "grid = (x.shape[0], 1, 1)" in code
    f = _run(code, monkeypatch)["row_sums"]
    xs = rng.standard_normal((30, 7)).astype(np.float32)
    got = np.asarray(f(xs, 2))
    assert got.shape == (30,) and np.allclose(got, 2 * xs.sum(1), rtol=1e-5, atol=1e-5)


def test_export_fixed_output_shape_stays_fixed(monkeypatch):
    @mb.kernel
    def first4(x, out: mb.Out(shape=(4,))):
        i = thread_position_in_grid.x
        out[i] = x[i] * 2.0
    x = np.arange(10, dtype=np.float32)
    code = first4.export_mlx(x, grid=4, threadgroup=4)
    assert "out_shape = (4,)" in code and "(fixed at export)" in code and "grid = (4, 1, 1)" in code
    assert np.array_equal(np.asarray(_run(code, monkeypatch)["first4"](x)), [0, 2, 4, 6])


def test_export_metal_kernel(monkeypatch):
    k = mb.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"],
                        source="uint i = thread_position_in_grid.x;\nout[i] = metal::exp(inp[i]);\n")
    a = np.linspace(-1, 1, 64, dtype=np.float32)
    code = export_mlx(k, inputs=[a], grid=(64, 1, 1), threadgroup=(32, 1, 1), output_shapes=[a.shape],
                      output_dtypes=[mx.float32])
    f = _run(code, monkeypatch)["myexp"]
    assert np.allclose(np.asarray(f(mx.array(a))), np.exp(a), rtol=1e-5)
    b = np.linspace(-2, 2, 96, dtype=np.float32)
    assert np.allclose(np.asarray(f(b)), np.exp(b), rtol=1e-5)


def test_export_metal_kernel_2d_with_template(monkeypatch):
    k = mb.metal_kernel(name="scale2d", input_names=["img"], output_names=["out"], source=(
        "uint2 p = thread_position_in_grid.xy;\n"
        "if (p.x < img_shape[1] && p.y < img_shape[0]) {\n"
        "    out[p.y * img_shape[1] + p.x] = T(K) * img[p.y * img_shape[1] + p.x];\n}\n"))
    img = rng.standard_normal((10, 20)).astype(np.float32)
    code = export_mlx(k, inputs=[img], grid=(20, 10, 1), threadgroup=(8, 8, 1), output_shapes=[img.shape],
                      output_dtypes=[mx.float32], template=[("T", mx.float32), ("K", 3)])
    assert "grid = (img.shape[1], img.shape[0], 1)" in code and "('K', 3)" in code
    f = _run(code, monkeypatch)["scale2d"]
    other = rng.standard_normal((13, 9)).astype(np.float32)
    assert np.allclose(np.asarray(f(other)), 3 * other)


def test_export_numba_kernel_returns_the_arrays_it_writes(monkeypatch):
    from metalbench import cuda

    @cuda.jit
    def matmul(A, B, C):
        sA = cuda.shared.array(shape=(8, 8), dtype=np.float32)
        sB = cuda.shared.array(shape=(8, 8), dtype=np.float32)
        x, y = cuda.grid(2)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        tmp = np.float32(0.)
        for i in range(cuda.gridDim.x):
            sA[ty, tx] = 0
            sB[ty, tx] = 0
            if y < A.shape[0] and (tx + i * 8) < A.shape[1]:
                sA[ty, tx] = A[y, tx + i * 8]
            if x < B.shape[1] and (ty + i * 8) < B.shape[0]:
                sB[ty, tx] = B[ty + i * 8, x]
            cuda.syncthreads()
            for j in range(8):
                tmp += sA[ty, j] * sB[j, tx]
            cuda.syncthreads()
        if y < C.shape[0] and x < C.shape[1]:
            C[y, x] = tmp

    n = 24
    A, B = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    C = np.full((n, n), 7.0, np.float32)
    code = matmul.export_mlx(A, B, C, grid=(n, n), threadgroup=(8, 8))
    assert "init_value=0" in code and "returns C (new values)" in code
    got = np.asarray(_run(code, monkeypatch)["matmul"](A, B, C))
    assert np.allclose(got, A @ B, rtol=1e-4, atol=1e-4)
    assert np.all(C == 7.0)                                      # the NumPy argument is untouched


def test_export_numba_kernel_whose_written_arrays_it_never_reads(monkeypatch):
    # hist only takes atomic adds and flags only stores: the kernel does not read them, so
    # they are no kernel inputs (inplace.functionalize), yet the exported function takes
    # them and returns them merged
    from metalbench import cuda

    @cuda.jit
    def tally(x, hist, flags):
        i = cuda.grid(1)
        if i < x.size:
            cuda.atomic.add(hist, int(x[i] > np.float32(0.5)), 1)
            if x[i] < np.float32(0.1):
                flags[i] = 1
    n = 300
    x = rng.random(n).astype(np.float32)
    hist, flags = np.array([5, 7], np.int32), np.full(n, 3, np.int32)
    code = tally.export_mlx(x, hist, flags, grid=n, threadgroup=64)
    assert "def tally(x, hist, flags, *" in code and "input_names=['x']" in code
    got_hist, got_flags = _run(code, monkeypatch)["tally"](x, hist, flags)
    assert np.array_equal(np.asarray(got_hist), [5 + np.sum(x <= 0.5), 7 + np.sum(x > 0.5)])
    assert np.array_equal(np.asarray(got_flags), np.where(x < 0.1, 1, 3))
