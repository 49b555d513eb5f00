"""float64 is a real type: exact on the simulator (against NumPy's float64), printed as
``double`` for CUDA, and a clear error on Metal (no double), for the DSL and MSL bodies."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench import scalar as S
from metalbench import types as T
from metalbench.dsl import float32, float64, int64, metal, thread_position_in_grid

RNG = np.random.default_rng(7)
X = RNG.standard_normal(100) * 1e3
Y = RNG.standard_normal(100)


@mb.kernel
def axpy64(a: mb.float64, x, y, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = a * x[i] + y[i]


@mb.kernel
def mixed(x, f, out: mb.Out, n: mb.Out(shape=lambda x, f, **_: x.shape, dtype=mb.int64),
          g: mb.Out(shape=lambda x, f, **_: x.shape, dtype=mb.float32)):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = x[i] * f[i] + metal.exp(x[i] * 1e-3) + float64(f[i]) / 3
        n[i] = int64(x[i] * 1e16)
        g[i] = float32(x[i])


def test_dsl_float64_arithmetic_is_numpy_float64():
    a = np.float64(1 / 3)
    out = np.asarray(axpy64(a, X, Y, grid=100, threadgroup=32, backend="sim"))
    assert out.dtype == np.float64
    assert np.array_equal(out, a * X + Y)          # bit for bit: no float32 anywhere


def test_float_with_double_gives_double_and_casts_follow_the_table():
    f = RNG.standard_normal(100).astype(np.float32)
    out, n, g = (np.asarray(o) for o in mixed(X, f, grid=100, threadgroup=32, backend="sim"))
    assert out.dtype == np.float64 and n.dtype == np.int64 and g.dtype == np.float32
    want = X * f.astype(np.float64) + np.exp(X * np.float64(np.float32(1e-3))) + f.astype(np.float64) / 3
    np.testing.assert_allclose(out, want, rtol=1e-15)
    # float -> long saturates at 2**63 - 1, like the GPU
    big = X * np.float64(np.float32(1e16))
    assert n.tolist() == [int(S.value(v, T.int64)) for v in big]
    assert n.max() == 2**63 - 1 and n.min() == -2**63
    assert np.array_equal(g, X.astype(np.float32))


def test_metal_kernel_float64_on_the_simulator():
    k = mb.metal_kernel(name="d", input_names=["a"], output_names=["o"],
                        source="uint i = thread_position_in_grid.x;\n"
                               "o[i] = a[i] * 2.0f + static_cast<double>(1) / 3 + double(int(a[i]));")
    (o,) = k(inputs=[X], grid=(100, 1, 1), threadgroup=(32, 1, 1), output_shapes=[X.shape],
             output_dtypes=[mx.float64], backend="sim")
    o = np.asarray(o)
    assert o.dtype == np.float64
    assert np.array_equal(o, X * 2 + 1 / 3 + np.trunc(X))


def test_metal_refuses_double_with_the_line_and_a_fix():
    with pytest.raises(mb.KernelTypeError) as e:
        axpy64.source(np.float64(2), X, Y, backend="metal")
    msg = str(e.value)
    assert "Metal has no double" in msg and "float32" in msg and "a * x[i] + y[i]" in msg


def test_metal_kernel_refuses_float64_on_metal(monkeypatch):
    from metalbench import mlx_compat
    k = mb.metal_kernel(name="d", input_names=["a"], output_names=["o"], source="o[0] = a[0];")
    monkeypatch.setattr(mlx_compat.MetalKernel, "resolve_backend", lambda self, b=None: "metal", raising=False)
    with pytest.raises(TypeError, match="'a' is float64, but Metal has no double"):
        k.bind(inputs=[X], output_shapes=[(1,)], output_dtypes=[mx.float32], grid=(1, 1, 1),
               threadgroup=(1, 1, 1), backend="metal")


def test_cuda_prints_double_exactly():
    src = mixed.source(X, RNG.standard_normal(100).astype(np.float32), backend="cuda")
    assert "double" in src
    assert " exp(" in src and "expf(" not in src               # the double function
    k = mb.metal_kernel(name="h", input_names=["a"], output_names=["o"],
                        source="o[0] = half(a[0]) + bfloat(a[0]) + 0.1f;")
    from metalbench.codegen import cuda
    r = cuda.render(k.ir([X], [(1,)], [mx.float64]))
    assert "__double2half(a[0])" in r.body and "__double2bfloat16(a[0])" in r.body


def test_double_literals_print_round_trip():
    from metalbench import ir
    from metalbench.codegen import cuda
    kir = ir.KernelIR("k", [ir.Param("o", "buffer", T.float64, is_output=True)],
                      [ir.Store("o", ir.Const(0, T.uint32), ir.Const(0.1, T.float64)),
                       ir.Store("o", ir.Const(1, T.uint32), ir.Const(-1e300, T.float64)),
                       ir.Store("o", ir.Const(2, T.uint32), ir.Const(float("inf"), T.float64))])
    body = cuda.render(kir).body
    assert "= 0.1;" in body and "= -1e+300;" in body and "static_cast<double>(INFINITY)" in body


def test_double_to_half_and_bfloat_round_once():
    x = np.array([1 + 2**-11 + 2**-40, 1 + 2**-8 + 2**-30, 65519.99, -2**-25 - 2**-50])
    assert S.cast(x, T.float64, T.float16).tolist() == [1 + 2**-10, 1 + 2**-8, 65504.0, -2**-24]
    assert S.cast(x, T.float64, T.bfloat16).astype(np.float64).tolist()[:2] == [1.0, 1 + 2**-7]


def test_numpy_float64_constants_stay_float32():
    """A float64 global or Python float is a compile-time constant of MSL's float type,
    like a literal (so float32 kernels stay float32, and run on Metal)."""
    C = np.float64(0.1)

    @mb.kernel
    def k(x, out: mb.Out):
        i = thread_position_in_grid.x
        out[i] = x[i] * C

    x = np.ones(4, np.float32)
    assert k.ir(x).params[1].type == T.float32
    assert np.asarray(k(x, grid=4, threadgroup=4, backend="sim")).tolist() == [float(np.float32(0.1))] * 4


@pytest.mark.gpu
def test_float64_on_the_gpu_is_numpy_float64():
    a = np.float64(1 / 3)
    out = np.asarray(axpy64(a, X, Y, grid=100, threadgroup=32, backend="cuda"))
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, a * X + Y)      # CUDA may contract a*x+y: then ulp-level


def test_simd_sums_of_doubles_stay_double():
    from metalbench.dsl import simd_prefix_inclusive_sum, simd_sum

    @mb.kernel
    def k(a, out: mb.Out, p: mb.Out):
        i = thread_position_in_grid.x
        out[i] = simd_sum(a[i])
        p[i] = simd_prefix_inclusive_sum(a[i])

    x = 2.0**40 + np.arange(64, dtype=np.float64)      # exact in double, not in float
    s, p = (np.asarray(o) for o in k(x, grid=64, threadgroup=64, backend="sim"))
    assert s.tolist() == [x[:32].sum()] * 32 + [x[32:].sum()] * 32
    assert p.tolist() == np.concatenate([np.cumsum(x[:32]), np.cumsum(x[32:])]).tolist()
