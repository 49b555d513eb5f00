"""The GPU launch path without host copies: ``mx.array`` inputs reach MLX untouched, so
``mx.compile``, ``mx.vmap`` and ``mx.export_function`` trace through metalbench kernels
as through the raw MLX kernel.

Without a GPU, ``mx.fast.cuda_kernel`` is replaced by a stand-in that records what it
receives and computes the kernel with MLX ops (traceable, as the real primitive is).
The ``gpu``-marked tests at the end run the real thing (on the NVIDIA machine)."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench import cuda
from metalbench import launch as L
from metalbench.dsl import *  # noqa: F401,F403

RNG = np.random.default_rng(5)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@mb.kernel
def saxpy(a: float, x, y, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = a * x[i] + y[i]


SAXPY_MSL = "uint i = thread_position_in_grid.x;\nif (i < x_shape[0]) { out[i] = a * x[i] + y[i]; }"


class FakeCudaKernel:
    """Stands in for an ``mx.fast.cuda_kernel`` object: checks the call as MLX would
    receive it and computes saxpy with MLX ops."""

    def __init__(self, made, **kw):
        self.kw = kw
        self.calls = []
        made.append(self)

    def __call__(self, *, inputs, grid, threadgroup, output_shapes, output_dtypes, init_value=None,
                 template=None, verbose=False, stream=None):
        assert all(type(a) is mx.array for a in inputs), [type(a) for a in inputs]
        assert len(inputs) == len(self.kw["input_names"])
        self.calls.append(list(inputs))
        by = dict(zip(self.kw["input_names"], inputs))
        a, x, y = (by.get(n, inputs[j]) for j, n in enumerate("axy"))    # (or by position)
        out = a.reshape(-1)[0] * x + y     # (a kernel reads a scalar's element 0)
        return [out.astype(output_dtypes[0]).reshape(output_shapes[0])]


@pytest.fixture
def fake_cuda(monkeypatch):
    made = []
    monkeypatch.setattr(mx.fast, "cuda_kernel", lambda **kw: FakeCudaKernel(made, **kw))
    monkeypatch.setattr(L, "cuda_available", lambda: True)
    return made


def msl_kernel():
    return mb.metal_kernel("saxpy_msl", ["a", "x", "y"], ["out"], SAXPY_MSL)


def call_msl(k, a, x, y, **kw):
    n = x.shape[0]
    return k(inputs=[a, x, y], grid=(n, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(n,)],
             output_dtypes=[mx.float32], **kw)[0]


def call_dsl(k, a, x, y, **kw):
    return k(a, x, y, grid=x.shape[0], threadgroup=64, **kw)


# Fresh kernel objects per test: their caches hold MLX kernel objects (here, stand-ins).
CALLS = {"dsl": (lambda: mb.kernel(saxpy.fn), call_dsl), "msl": (msl_kernel, call_msl)}


@pytest.mark.parametrize("kind", CALLS)
def test_mx_inputs_reach_mlx_untouched(fake_cuda, kind):
    make, call = CALLS[kind]
    k = make()
    x, y = mx.array(rand(256)), mx.array(rand(256))
    for _ in range(2):                              # the binding call, then the thin path
        out = call(k, 2.0, x, y, backend="cuda")
    calls = fake_cuda[-1].calls
    assert len(calls) == 2
    for ins in calls:
        assert ins[1] is x and ins[2] is y           # the caller's arrays themselves: no copy
        # the scalar: float32, on cuda a vector (one element, padded past 8 bytes once the value
        # repeats: thin.scalar_array), every element the value
        assert ins[0].dtype == mx.float32 and ins[0].ndim == 1 and np.all(np.asarray(ins[0]) == 2.0)
    np.testing.assert_allclose(np.asarray(out), 2 * np.asarray(x) + np.asarray(y), rtol=1e-6)


@pytest.mark.parametrize("kind", CALLS)
def test_numpy_inputs_are_converted_once(fake_cuda, kind):
    make, call = CALLS[kind]
    k = make()
    x, y = rand(128), rand(128)
    out = call(k, 0.5, x, y, backend="cuda")
    out = call(k, 0.5, y, x, backend="cuda")
    ins = fake_cuda[-1].calls[-1]
    np.testing.assert_array_equal(np.asarray(ins[1]), y)
    np.testing.assert_allclose(np.asarray(out), 0.5 * y + x, rtol=1e-6)


@pytest.mark.parametrize("kind", CALLS)
def test_mx_compile_traces_through(fake_cuda, kind):
    make, call = CALLS[kind]
    k = make()
    f = mx.compile(lambda x, y: call(k, 3.0, x, y, backend="cuda") * 2)
    for n in (256, 256, 64):
        x, y = mx.array(rand(n)), mx.array(rand(n))
        np.testing.assert_allclose(np.asarray(f(x, y)), 2 * (3 * np.asarray(x) + np.asarray(y)), rtol=1e-5)


@pytest.mark.parametrize("kind", CALLS)
def test_mx_vmap_traces_through(fake_cuda, kind):
    make, call = CALLS[kind]
    k = make()
    xs, ys = mx.array(rand(4, 64)), mx.array(rand(4, 64))
    got = mx.vmap(lambda x, y: call(k, 1.5, x, y, backend="cuda"))(xs, ys)
    np.testing.assert_allclose(np.asarray(got), 1.5 * np.asarray(xs) + np.asarray(ys), rtol=1e-6)


@pytest.mark.parametrize("kind", CALLS)
def test_mx_export_function_traces_through(fake_cuda, kind, tmp_path):
    make, call = CALLS[kind]
    k = make()
    x, y = mx.array(rand(64)), mx.array(rand(64))
    path = str(tmp_path / "saxpy.mlxfn")
    mx.export_function(path, lambda x, y: call(k, 2.0, x, y, backend="cuda"), x, y)
    f = mx.import_function(path)
    x2, y2 = mx.array(rand(64)), mx.array(rand(64))
    (got,) = f(x2, y2)
    np.testing.assert_allclose(np.asarray(got), 2 * np.asarray(x2) + np.asarray(y2), rtol=1e-6)


def test_scalar_inputs_follow_mlx_rules(fake_cuda):
    """Python scalars become int32/float32/bool arrays, as MLX converts them; a 0-d
    mx.array keeps its dtype and value and reaches MLX untouched (the very object), unless
    MLX would pass that input's shape argument (its name + ``_shape`` in the CUDA body):
    MLX 0.32's CUDA kernels mismatch a 0-d input's shape parameter, so such an input
    crosses as a one-element vector (thin._converter, mlx_signature.shape_infos)."""
    k = mb.metal_kernel("sc", ["a", "x", "y"], ["out"], SAXPY_MSL)
    x = mx.array(rand(32))
    call_msl(k, 2, x, x, backend="cuda")
    assert fake_cuda[-1].calls[-1][0].dtype == mx.int32
    s = mx.array(1.5, dtype=mx.float16)
    for _ in range(3):                              # the binding call, then the thin path
        call_msl(k, s, x, x, backend="cuda")
        a = fake_cuda[-1].calls[-1][0]
        assert a is s                                # no reshape: an MLX op per launch
    body = fake_cuda[-1].kw["source"]
    assert "a_shape" not in body and "x_shape" in body
    # a scalar whose name ends another input's shape name in the body ("ka" in "xka_shape")
    src = "uint i = thread_position_in_grid.x;\nif (i < xka_shape[0]) { out[i] = ka * xka[i] + y[i]; }"
    k2 = mb.metal_kernel("sc2", ["ka", "xka", "y"], ["out"], src)
    for _ in range(3):
        out = k2(inputs=[s, x, x], grid=(32, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(32,)],
                 output_dtypes=[mx.float32], backend="cuda")
        a = fake_cuda[-1].calls[-1][0]
        assert a.dtype == mx.float16 and a.shape == (1,) and a.item() == 1.5   # the user's array, reshaped


def test_launch_guard_input_is_prepared_once(fake_cuda):
    """A grid that is not whole threadgroups needs CUDA's launch guard (mb_grid): built
    with the plan, the same array on every call."""
    x = mx.array(rand(100))
    k = mb.kernel(saxpy.fn)
    for _ in range(3):
        k(2.0, x, x, grid=100, threadgroup=64, backend="cuda")
    k = fake_cuda[-1]
    assert "mb_grid" in k.kw["input_names"]
    guards = [ins[k.kw["input_names"].index("mb_grid")] for ins in k.calls]
    assert guards[0].tolist() == [100, 1, 1] and all(g is guards[0] for g in guards)


# ----------------------------------------------------------------------------- the real GPU

def _raw_saxpy():
    return mx.fast.cuda_kernel(name="raw_saxpy", input_names=["a", "x", "y"], output_names=["out"],
                               source="unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                      "if (i < x_shape[0]) { out[i] = a[0] * x[i] + y[i]; }")


def _outcome(fn):
    try:
        return "ok", np.asarray(fn())
    except Exception as e:  # noqa: BLE001 — compared with the raw kernel's outcome
        return "error", type(e).__name__


@pytest.mark.gpu
@pytest.mark.parametrize("kind", CALLS)
@pytest.mark.parametrize("transform", ["eager", "compile", "vmap", "export"])
def test_transformations_on_cuda_behave_as_the_raw_kernel(kind, transform, tmp_path):
    make, call = CALLS[kind]
    k, raw = make(), _raw_saxpy()
    n = 4096
    x, y = mx.array(rand(n)), mx.array(rand(n))
    a = mx.array(2.0)

    def mine(x, y):
        return call(k, 2.0, x, y, backend="cuda")

    def theirs(x, y):
        return raw(inputs=[a, x, y], grid=(x.shape[0], 1, 1), threadgroup=(64, 1, 1),
                   output_shapes=[x.shape], output_dtypes=[mx.float32])[0]

    def run(f):
        if transform == "eager":
            return f(x, y)
        if transform == "compile":
            return mx.compile(f)(x, y)
        if transform == "vmap":
            return mx.vmap(f)(mx.stack([x, y]), mx.stack([y, x]))
        path = str(tmp_path / f"{f.__name__}.mlxfn")
        mx.export_function(path, f, x, y)
        return mx.import_function(path)(x, y)[0]
    got, want = _outcome(lambda: run(mine)), _outcome(lambda: run(theirs))
    assert got[0] == want[0], (got, want)
    if got[0] == "ok":
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6)


@pytest.mark.gpu
def test_cuda_jit_on_device_arrays_matches_numpy():
    x, y = rand(1000), rand(1000)
    out = np.zeros_like(x)

    @cuda.jit
    def k(a, x, y, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a * x[i] + y[i]
    d_x, d_y, d_out = cuda.to_device(x), cuda.to_device(y), cuda.to_device(out)
    k.configure(backend="cuda")
    for _ in range(2):
        k[4, 256](2.0, d_x, d_y, d_out)
    np.testing.assert_allclose(d_out.copy_to_host(), 2 * x + y, rtol=1e-6)


@pytest.mark.gpu
def test_a_0d_input_named_like_the_end_of_another_inputs_shape():
    # vmlx's codebook kernels: a 0-d input ``k`` and a data-dependent read of ``codebook``,
    # whose read guard puts ``codebook_shape`` in the CUDA body; MLX 0.32 then passed a
    # shape argument for ``k`` its signature lacks, and the kernel wrote to a wrong address
    src = ("uint i = thread_position_in_grid.x;\n"
           "out[i] = codebook[(uint)idx[i] * (uint)k + 1] * (float)k;")
    kern = mb.metal_kernel("cb_k", ["codebook", "idx", "k"], ["out"], src)
    cb, idx = rand(64), RNG.integers(0, 20, 32).astype(np.uint16)
    for _ in range(2):
        out = kern(inputs=[mx.array(cb), mx.array(idx), mx.array(3, dtype=mx.uint32)], grid=(32, 1, 1),
                   threadgroup=(32, 1, 1), output_shapes=[(32,)], output_dtypes=[mx.float32], backend="cuda")[0]
        np.testing.assert_allclose(np.asarray(out), cb[idx.astype(np.int64) * 3 + 1] * 3, rtol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.int32])
def test_a_0d_scalar_crosses_untouched_on_cuda(dtype):
    """A 0-d ``mx.array`` scalar whose name MLX finds with no ``_shape`` in the body goes to
    the CUDA kernel as the user's 0-d array (no reshape): MLX's signature and arguments
    agree for it, and the kernel reads its element; eager, repeated (the thin path) and
    under ``mx.compile``."""
    src = "uint i = thread_position_in_grid.x;\nif (i < x_shape[0]) { out[i] = float(a) * x[i] + y[i]; }"
    k = mb.metal_kernel("scalar0d", ["a", "x", "y"], ["out"], src)
    n = 1000
    x, y = mx.array(rand(n)), mx.array(rand(n))
    for v in (3, -2, 5):
        a = mx.array(v, dtype=dtype)

        def f(x, y):
            return k(inputs=[a, x, y], grid=(n, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(n,)],
                     output_dtypes=[mx.float32], backend="cuda")[0]
        want = v * np.asarray(x) + np.asarray(y)
        for _ in range(2):
            np.testing.assert_allclose(np.asarray(f(x, y)), want, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(np.asarray(mx.compile(f)(x, y)), want, rtol=1e-6, atol=1e-6)
