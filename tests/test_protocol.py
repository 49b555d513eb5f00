"""The kernel protocol: DSL kernels, metal_kernel objects and cuda.jit kernels bind,
specialise (one cache) and launch the same way; the thin path of repeated calls; the
simulator inside MLX transformations; the tools use only the protocol."""
import inspect

import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench import check, bench, cuda, export
from metalbench.dsl import *  # noqa: F401,F403
from metalbench.errors import KernelLaunchError
from metalbench.notebook import panel
from metalbench.protocol import BoundLaunch, KernelBase, Specialization

RNG = np.random.default_rng(11)


def rand(n):
    return RNG.standard_normal(n).astype(np.float32)


@mb.kernel
def saxpy(a: float, x, y, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = a * x[i] + y[i]


SAXPY_MSL = "uint i = thread_position_in_grid.x;\nif (i < x_shape[0]) { out[i] = a * x[i] + y[i]; }"
saxpy_msl = mb.metal_kernel("saxpy_msl", ["a", "x", "y"], ["out"], SAXPY_MSL)


@cuda.jit
def saxpy_numba(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


def bound_of(kind, a, x, y, **launch):
    n = x.shape[0]
    if kind == "dsl":
        return saxpy.bind(a, x, y, grid=n, threadgroup=32, backend="sim", **launch)
    if kind == "msl":
        return saxpy_msl.bind(inputs=[a, x, y], grid=(n, 1, 1), threadgroup=(32, 1, 1), output_shapes=[x.shape],
                              output_dtypes=[mx.float32], backend="sim", **launch)
    return saxpy_numba.bind(a, x, y, np.zeros(n, np.float32), grid=n, threadgroup=32, backend="sim", **launch)


KINDS = ["dsl", "msl", "numba"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_binds_specialises_and_launches_alike(kind):
    x, y = rand(70), rand(70)
    b = bound_of(kind, 1.5, x, y)
    k = b.kernel
    assert isinstance(k, KernelBase) and isinstance(b, BoundLaunch)
    assert b.grid == (70, 1, 1) and b.threadgroup == (32, 1, 1) and b.backend == "sim"
    sp = k.specialization(b)
    assert isinstance(sp, Specialization)
    assert k.specialization(bound_of(kind, 2.5, rand(70), rand(70))) is sp       # one cache, by types
    assert k.specialization(bound_of(kind, 2.5, rand(70).astype(np.float16), rand(70))) is not sp
    (out,) = k.launch(b)[-1:]
    # (numba computes in float64 and rounds once, the reference in float32: an ulp apart near 0)
    np.testing.assert_allclose(np.asarray(out), 1.5 * x + y, rtol=1e-6, atol=1e-7)
    assert k.last_launch == dict(grid=(70, 1, 1), threadgroup=(32, 1, 1), backend="sim")
    assert k.last_stats is not None
    assert "thread_position_in_grid" in sp.source("metal") and sp.source("cuda")
    assert sp.ir.outputs or kind == "numba"
    assert sp.output_names == ["out"]


@pytest.mark.parametrize("kind", KINDS)
def test_tools_run_every_kind_through_the_protocol(kind):
    x, y = rand(64), rand(64)
    b = bound_of(kind, 2.0, x, y)
    args = b.args if kind != "msl" else ()
    kw = dict(b.given, backend="sim")
    if kind == "msl":
        kw.update(inputs=[2.0, x, y], output_shapes=[x.shape], output_dtypes=[mx.float32])
    k = b.kernel
    ref = (lambda a, x, y: a * x + y) if kind != "numba" else (lambda a, x, y, out: a * x + y)
    r = k.check(ref, *args, **kw)
    assert r.ok and r.outputs[0].name == "out", r
    assert k.bench(*args, repeats=2, **kw).runs
    s = k.sweep(*args, **{**kw, "threadgroup": [16, 64]}, ref=ref, progress=False)
    assert [row["error"] for row in s.rows] == [None, None] and s.best is not None
    text, lang = panel.kernel_source(k, args, kw)
    assert lang == "metal" and "thread_position_in_grid" in text


def test_tools_hold_no_kind_checks():
    """check, bench, export and the panel ask the kernel, not its class."""
    for mod in (check, bench, export, panel):
        src = inspect.getsource(mod)
        for word in ("is_msl_kernel", "MetalKernel", "CUDAKernel", "hasattr(kernel", "hasattr(k,",
                     "getattr(kernel", "input_names\")", ".kinds"):
            assert word not in src, (mod.__name__, word)


@pytest.mark.parametrize("kind", KINDS)
def test_export_runs_every_kind_through_the_protocol(kind, monkeypatch):
    """The exported code, run with mx.fast.metal_kernel pointed at mb.metal_kernel (sim)."""
    x, y = rand(64), rand(64)
    b = bound_of(kind, 2.0, x, y)
    kw = dict(b.given)
    if kind == "msl":
        kw.update(inputs=[2.0, x, y], output_shapes=[x.shape], output_dtypes=[mx.float32])
    code = b.kernel.export_mlx(*(b.args if kind != "msl" else ()), **kw)
    monkeypatch.setattr(mx.fast, "metal_kernel", mb.metal_kernel, raising=False)
    monkeypatch.setenv("METALBENCH_BACKEND", "sim")
    ns = {}
    exec(compile(code, "<exported>", "exec"), ns)
    fn = ns[b.kernel.name]
    got = fn(2.0, mx.array(x), mx.array(y)) if kind != "numba" else fn(2.0, x, y, np.zeros(64, np.float32))
    np.testing.assert_allclose(np.asarray(got), 2 * x + y, rtol=1e-6)


def test_metal_kernel_on_metal_needs_no_ir():
    """The metal backend receives the user's text: specialising for it parses nothing."""
    k = mb.metal_kernel("odd", ["x"], ["y"], "this is not MSL the front end knows;")
    b = k.bind(inputs=[rand(4)], output_shapes=[(4,)], output_dtypes=[mx.float32], grid=4)
    sp = k.specialization(b)
    assert "this is not MSL" in sp.source("metal") and sp.mlx_kernel_args("metal")["name"] == "odd"
    with pytest.raises(mb.MetalbenchError):
        sp.ir


# ----------------------------------------------------------------------------- thin path

def _no_bind(monkeypatch, k):
    def bind(*a, **kw):
        raise AssertionError("the thin path must not bind")
    monkeypatch.setattr(k, "bind", bind)


def test_dsl_thin_path_skips_binding_and_uses_new_values(monkeypatch):
    k = mb.kernel(saxpy.fn)
    x, y = rand(50), rand(50)
    np.testing.assert_allclose(np.asarray(k(2.0, x, y, grid=50, threadgroup=32, backend="sim")), 2 * x + y,
                               rtol=1e-6)
    _no_bind(monkeypatch, k)
    x2, y2 = rand(50), rand(50)
    np.testing.assert_allclose(np.asarray(k(-3.0, x2, y2, grid=50, threadgroup=32, backend="sim")),
                               -3 * x2 + y2, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(k(0.5, y2, x2, grid=50, threadgroup=32, backend="sim")),
                               0.5 * y2 + x2, rtol=1e-6)
    with pytest.raises(AssertionError, match="thin path"):     # another shape binds afresh
        k(0.5, x2[:40], y2[:40], grid=40, threadgroup=32, backend="sim")
    with pytest.raises(AssertionError, match="thin path"):     # so does an mx.array for a NumPy array
        k(0.5, mx.array(x2), y2, grid=50, threadgroup=32, backend="sim")


def test_thin_path_keys_on_constexpr_values_and_the_backend_setting(monkeypatch):
    @mb.kernel
    def scale(x, out: mb.Out, K: mb.constexpr = 2):
        i = thread_position_in_grid.x
        if i < x.size:
            out[i] = x[i] * K
    x = rand(40)
    for K in (2, 3, 2):
        np.testing.assert_allclose(np.asarray(scale(x, K=K, grid=40)), K * x, rtol=1e-6)
    monkeypatch.setenv("METALBENCH_BACKEND", "cuda")    # "auto" now means cuda: not the cached sim entry
    with pytest.raises(mb.BackendUnavailableError):
        scale(x, K=2, grid=40)


def test_thin_path_int_scalar_type_follows_the_value():
    @mb.kernel
    def addk(x, k, out: mb.Out):
        i = thread_position_in_grid.x
        out[i] = x[i] + k
    x = np.zeros(4, np.int64)
    assert np.asarray(addk(x, 1, grid=4)).tolist() == [1] * 4
    assert np.asarray(addk(x, 2 ** 40, grid=4)).tolist() == [2 ** 40] * 4    # int64 scalar: specialised anew


def test_metal_kernel_thin_path(monkeypatch):
    k = mb.metal_kernel("saxpy_msl2", ["a", "x", "y"], ["out"], SAXPY_MSL)
    x, y = rand(33), rand(33)
    kw = dict(grid=(33, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(33,)], output_dtypes=[mx.float32],
              backend="sim")
    (o,) = k(inputs=[2.0, x, y], **kw)
    np.testing.assert_allclose(np.asarray(o), 2 * x + y, rtol=1e-6)
    _no_bind(monkeypatch, k)
    (o,) = k(inputs=[4.0, y, x], **kw)
    np.testing.assert_allclose(np.asarray(o), 4 * y + x, rtol=1e-6)


def test_cuda_jit_thin_path_updates_in_place(monkeypatch):
    x, y, out = rand(40), rand(40), np.zeros(40, np.float32)
    cuda.set_backend("sim")
    try:
        saxpy_numba[2, 32](1.0, x, y, out)
        np.testing.assert_allclose(out, x + y, rtol=1e-6)
        d_out = cuda.to_device(np.zeros(40, np.float32))
        saxpy_numba[2, 32](2.0, y, x, d_out)
        monkeypatch.setattr(saxpy_numba, "bind_inplace", lambda *a, **k: (_ for _ in ()).throw(AssertionError()))
        saxpy_numba[2, 32](2.0, y, x, out)
        f64 = np.float64       # Numba computes a * x[i] + y[i] in float64 (a Python float is a double)
        np.testing.assert_allclose(out, (2 * y.astype(f64) + x).astype(np.float32), rtol=1e-6)
        saxpy_numba[2, 32](3.0, x, y, d_out)
        np.testing.assert_allclose(d_out.copy_to_host(), (3 * x.astype(f64) + y).astype(np.float32), rtol=1e-6)
        with pytest.raises(AssertionError):               # another shape binds
            saxpy_numba[2, 32](2.0, y[:30], x[:30], out[:30])
    finally:
        cuda.set_backend(None)


# ----------------------------------------------------------------------------- sim under transformations

@pytest.mark.parametrize("transform", ["compile", "vmap", "export"])
def test_sim_inside_a_transformation_says_so(transform, tmp_path):
    x = mx.array(rand(32))

    def f(x):
        return saxpy(2.0, x, x, grid=32, threadgroup=32, backend="sim")
    with pytest.raises(KernelLaunchError) as e:
        if transform == "compile":
            mx.compile(f)(x)
        elif transform == "vmap":
            mx.vmap(f)(mx.stack([x, x]))
        else:
            mx.export_function(str(tmp_path / "f.mlxfn"), f, x)
    msg = str(e.value)
    assert "simulator" in msg and "traced" in msg and "eagerly" in msg and "backend='metal' or 'cuda'" in msg
    assert "[eval]" not in msg


def test_metal_kernel_sim_inside_compile_says_so():
    x = mx.array(rand(8))
    with pytest.raises(KernelLaunchError, match="traced"):
        mx.compile(lambda x: saxpy_msl(inputs=[1.0, x, x], grid=(8, 1, 1), threadgroup=(8, 1, 1),
                                       output_shapes=[(8,)], output_dtypes=[mx.float32], backend="sim")[0])(x)


def test_thin_path_tells_int_float_and_bool_constexprs_apart():
    @mb.kernel
    def fill(x, out: mb.Out, V: mb.constexpr = 1):
        i = thread_position_in_grid.x
        out[i] = x[i] * 0 + V
    x = np.zeros(4, np.float32)
    for v in (3, 3.0, True, 1, 3):
        assert np.asarray(fill(x, V=v, grid=4)).tolist() == [float(v)] * 4
    assert len(fill._thin_cache) == 4 and len(fill._cache) == 4      # 3 == 3.0 == ... but not alike


def test_thin_path_with_arguments_of_other_types_binds_each_time():
    k = mb.kernel(saxpy.fn)
    x = rand(8)
    for _ in range(2):
        with pytest.raises(KernelLaunchError, match="is a list"):
            k(2.0, [1, 2], x, grid=8)
    assert np.allclose(np.asarray(k(2.0, x, x, grid=8)), 3 * x)


def test_signatures_of_every_arity():
    from metalbench.protocol import arg_signature, signatures
    vals = [mx.zeros((2, 3)), np.zeros(4, np.int16), 1.5, 7, 2 ** 40, True, np.float16(1)]
    for n in range(len(vals) + 1):
        assert signatures(tuple(vals[:n])) == tuple(arg_signature(v) for v in vals[:n])
    assert signatures((mx.zeros(3),)) != signatures((mx.zeros(3, dtype=mx.int32),))
    assert signatures((mx.zeros(3),)) != signatures((mx.zeros((3, 1)),))


def test_host_overhead_benchmark_runs():
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import host_overhead
    fast, cuda_kernel, metal_kernel = mx.fast, mx.fast.cuda_kernel, mx.fast.metal_kernel
    from metalbench import launch
    available = launch.cuda_available
    try:
        res = host_overhead.measure(number=20, repeats=1)
    finally:
        fast.cuda_kernel, fast.metal_kernel, launch.cuda_available = cuda_kernel, metal_kernel, available
    assert len(res) == 11 and all(v > 0 for v in res.values())
