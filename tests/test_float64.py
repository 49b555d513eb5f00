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


def test_cuda_prints_double_exactly(monkeypatch):
    monkeypatch.setenv("METALBENCH_CUDA_GUARD_READS", "0")     # the reads plain (codegen/cuda_guard.py)
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


# ----------------------------------------------------------------------------- float64 on cuda
# MLX refuses float64 on the GPU: it crosses MLX's CUDA backend as its bits (uint64).
# The conversions run here on MLX's CPU backend; tests marked gpu run the kernels.

def test_float64_crosses_mlx_as_bits_and_back():
    from metalbench import runtime
    x = np.array([0.1, -0.0, np.inf, np.nan, 5e-324, -1e300])
    b = runtime.float64_bits(x)
    assert b.dtype == mx.uint64 and np.array_equal(np.asarray(b), x.view(np.uint64))
    b2 = runtime.float64_bits(mx.array(x, dtype=mx.float64))             # an mx.array: a view
    assert np.array_equal(np.asarray(b2), x.view(np.uint64))
    f = x[:5].astype(np.float32)
    assert runtime.float64_bits(f).tolist() == f.astype(np.float64).view(np.uint64).tolist()   # converted first
    back = runtime.bits_float64(b)
    assert back.dtype == mx.float64 and np.asarray(back).tobytes() == x.tobytes()
    assert runtime.float64_scalar_bits(-0.0).item() == 1 << 63
    bits = runtime.Float64Bits(b)
    assert runtime.float64_bits(bits) is b                                # held as bits: untouched


def test_cuda_launch_plan_carries_float64_as_bits(monkeypatch):
    """What MLX receives for a float64 kernel on cuda, without a GPU: the converters and
    output dtypes of the launch plan, the printed signature."""
    from metalbench import protocol
    monkeypatch.setattr(protocol.Specialization, "mlx_kernel", lambda self, *a, **k: None)
    sp = axpy64.specialize(np.float64(0.5), X, Y)
    plan = protocol.MLXLaunch(sp, "cuda", (100, 1, 1), (32, 1, 1), [("out", X.shape, T.float64)])
    assert plan.kwargs["output_dtypes"] == [mx.uint64] and plan.bits_outputs == [0]
    ins = plan.inputs({"a": np.float64(1 / 3), "x": X, "y": mx.array(Y, dtype=mx.float64)})
    assert [a.dtype for a in ins[:3]] == [mx.uint64] * 3
    assert ins[0].item() == np.float64(1 / 3).view(np.uint64)
    assert np.asarray(ins[1]).tobytes() == X.tobytes() and np.asarray(ins[2]).tobytes() == Y.tobytes()
    assert "double* out = reinterpret_cast<double*>(mb_bits_out);" in sp.rendered("cuda").body


def test_float64_init_value_on_cuda_is_its_bits():
    from metalbench import runtime
    for v in (1.0, -2.0, 0.5, float("inf"), float("-inf"), -0.0):
        bits = runtime.float64_init_value(v, [T.float64])
        assert np.uint64(np.float32(bits)) == np.float64(v).view(np.uint64)   # as MLX fills it
    assert runtime.float64_init_value(0, [T.float64, T.int32]) == 0
    assert runtime.float64_init_value(None, [T.float64]) is None
    with pytest.raises(mb.KernelLaunchError, match="one value"):
        runtime.float64_init_value(1.0, [T.float64, T.float32])
    with pytest.raises(mb.KernelLaunchError, match="bit pattern"):
        runtime.float64_init_value(0.1, [T.float64])


def test_device_arrays_hold_float64_bits_on_cuda(monkeypatch):
    """metalbench.cuda device arrays on cuda: float64 lives in MLX as uint64 bits; the
    transfers, views, element assignment and merges keep the values exact."""
    from metalbench.numba_compat import devicearray as da
    from metalbench.numba_compat import inplace
    monkeypatch.setattr(da, "gpu_backend", lambda: "cuda")
    x = RNG.standard_normal(12)
    d = da.to_device(x)
    assert d.on_device and d.dtype == np.float64 and d._read().dtype == mx.uint64
    assert d.copy_to_host().tobytes() == x.tobytes() and np.asarray(d[3:5]).tolist() == x[3:5].tolist()
    d[2] = 7.25
    d[4:6] = da.to_device(np.array([1, 2], np.int32))                  # values convert as in NumPy
    x[2], x[4:6] = 7.25, [1.0, 2.0]
    assert d.copy_to_host().tolist() == x.tolist() and d[2] == 7.25
    assert d.view(np.int64).copy_to_host().tolist() == x.view(np.int64).tolist()
    z = da.device_array(3)                                                # Numba's default dtype
    assert z._read().dtype == mx.uint64 and z.copy_to_host().tolist() == [0.0] * 3
    m = da.to_device(mx.array(x, dtype=mx.float64))
    assert m._read().dtype == mx.uint64 and m.copy_to_host().tolist() == x.tolist()
    # merges on the bits: a mask selects them, an atomic accumulator adds in float64
    orig, new = da.to_device(x[:4])._read(), da.to_device(np.array([0.5, 0.25, 3.0, 4.0]))._read()
    mask = inplace.Plan("x", "mask", ["o", "m"])
    r = inplace.merge_device(mask, orig, {"o": new, "m": mx.array([1, 0, 1, 0], dtype=mx.uint8)},
                             float64_bits=True)
    assert np.asarray(r).view(np.float64).tolist() == [0.5, x[1], 3.0, x[3]]
    acc = inplace.Plan("x", "acc", ["a"], "+")
    r = inplace.merge_device(acc, orig, {"a": new}, float64_bits=True)
    assert r.dtype == mx.uint64 and np.asarray(r).view(np.float64).tolist() == (x[:4] + [0.5, 0.25, 3.0, 4.0]).tolist()


def test_64_bit_atomics_on_the_simulator_and_not_on_metal():
    @mb.kernel
    def atom(x, acc: mb.Out(shape=(4,), dtype=mb.float64), cnt: mb.Out(shape=(3,), dtype=mb.int64)):
        i = thread_position_in_grid.x
        atomic_add(acc, 0, x[i])
        atomic_max(acc, 1, x[i])
        atomic_min(acc, 2, x[i])
        atomic_compare_exchange(acc, 3, 0.0, x[i])
        atomic_add(cnt, 0, 1)
        cnt[1 + i % 2] = atomic_compare_exchange(cnt, 2, 0, 2**40 + i)

    from metalbench.dsl import atomic_add, atomic_compare_exchange, atomic_max, atomic_min  # noqa: F401
    x = RNG.standard_normal(64)
    acc, cnt = (np.asarray(o) for o in atom(x, grid=64, threadgroup=32, backend="sim", init_value=0))
    np.testing.assert_allclose(acc[0], x.sum(), rtol=1e-13)
    assert acc[1] == x.max() and acc[2] == x.min() and acc[3] in x
    assert cnt[0] == 64 and 2**40 <= cnt[2] < 2**40 + 64

    @mb.kernel
    def count(x, cnt: mb.Out(shape=(1,), dtype=mb.int64)):
        atomic_compare_exchange(cnt, 0, 0, 5)

    with pytest.raises(mb.KernelTypeError, match="Metal has no 64-bit atomics") as e:
        count.source(x.astype(np.float32), backend="metal")
    assert "atomic_compare_exchange(cnt, 0, 0, 5)" in str(e.value)


@pytest.mark.gpu
def test_float64_everywhere_on_cuda():
    """DSL, metal_kernel and metalbench.cuda kernels with float64 arrays and scalars,
    inputs and outputs, mx.arrays, device arrays and 64-bit atomics, bit for bit against
    the simulator (products are never fused into FMAs)."""
    float64_everywhere()


def test_float64_everywhere_on_simulated_cuda(monkeypatch):
    """The same on the cuda backend's host side with the simulator standing in for MLX's
    cuda_kernel (tests/simcuda.py): everything MLX receives and returns is checked
    (float64 as uint64 bits), so CI covers the float64 launch path without a GPU."""
    import simcuda
    simcuda.install(monkeypatch)
    float64_everywhere()


def float64_everywhere():
    from metalbench import cuda
    from metalbench.dsl import atomic_add, atomic_compare_exchange  # noqa: F401
    a = np.float64(1 / 3)
    for xs in (X, mx.array(X, dtype=mx.float64)):
        out = np.asarray(axpy64(a, xs, Y, grid=100, threadgroup=32, backend="cuda"))
        assert out.tobytes() == (a * X + Y).tobytes()
    f = RNG.standard_normal(100).astype(np.float32)
    for g, s in zip(mixed(X, f, grid=100, threadgroup=32, backend="cuda"),
                    mixed(X, f, grid=100, threadgroup=32, backend="sim")):
        np.testing.assert_allclose(np.asarray(g), np.asarray(s), rtol=1e-15)
    k = mb.metal_kernel(name="d", input_names=["a", "s"], output_names=["o"],
                        source="uint i = thread_position_in_grid.x;\no[i] = a[i] * s + 1.0;")
    got, want = (k(inputs=[X, mx.array(0.1, dtype=mx.float64)], grid=(100, 1, 1), threadgroup=(32, 1, 1),
                   output_shapes=[X.shape], output_dtypes=[mx.float64], backend=be, init_value=1.0)[0]
                 for be in ("cuda", "sim"))
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes() == (X * 0.1 + 1.0).tobytes()

    @cuda.jit
    def step(v, p, dt, acc):
        i = cuda.grid(1)
        if i < v.size:
            v[i] -= dt * p[i]
            p[i] += dt * v[i]
            cuda.atomic.add(acc, 0, p[i])

    cuda.set_backend("cuda")
    try:
        v0, p0 = RNG.standard_normal(1000), RNG.standard_normal(1000)
        dv, dp, dacc = cuda.to_device(v0), cuda.to_device(p0), cuda.to_device(np.zeros(1))
        for _ in range(3):
            step[8, 128](dv, dp, 0.01, dacc)
        v, p, acc = v0.copy(), p0.copy(), 0.0
        for _ in range(3):
            v -= 0.01 * p
            p += 0.01 * v
            acc += p.sum()
        assert dv.copy_to_host().tobytes() == v.tobytes() and dp.copy_to_host().tobytes() == p.tobytes()
        np.testing.assert_allclose(dacc.copy_to_host()[0], acc, rtol=1e-12)
        hv, hp = v0.copy(), p0.copy()                       # NumPy arguments, written back
        step[8, 128](hv, hp, 0.01, np.zeros(1))
        assert hv.tobytes() == (v0 - 0.01 * p0).tobytes()

        @cuda.jit
        def cas(a, out):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = cuda.atomic.cas(a, 0, 0, i + 1)

        for dt in (np.int64, np.uint64):     # in place through a private copy (numba_compat/inplace_copy.py)
            cnt, out = np.zeros(1, dt), np.zeros(64, dt)
            cas[2, 32](cnt, out)
            won = np.flatnonzero(out == 0)
            assert len(won) == 1 and cnt[0] == won[0] + 1 and (np.delete(out, won) == cnt[0]).all()
    finally:
        cuda.set_backend(None)      # (not "sim": later tests in this process would inherit it)


def test_numba_64_bit_compare_and_swap_and_accumulators():
    """cuda.atomic.cas on int64/uint64 runs on the simulator (the old value back, the swap
    only where it matched); 64-bit accumulators print for CUDA (atomicAdd on double, on
    unsigned long long for int64), and in-place cas through a private copy (metal refuses it)."""
    from metalbench import cuda

    @cuda.jit
    def cas(a, out):
        i = cuda.grid(1)
        if i < a.size:
            out[i] = cuda.atomic.cas(a, i, 7, 2**40 + i)

    @cuda.jit
    def acc(s, n, x):
        i = cuda.grid(1)
        if i < x.size:
            cuda.atomic.add(s, 0, x[i])
            cuda.atomic.add(n, 0, 1)

    for dt in (np.int64, np.uint64):
        a = np.arange(16, dtype=dt)
        a[::3] = 7
        before, out = a.copy(), np.zeros(16, dt)
        cas[1, 16](a, out)
        assert out.tolist() == before.tolist()
        assert a.tolist() == [2**40 + i if v == 7 else v for i, v in enumerate(before.tolist())]
    src = acc.source(np.zeros(1), np.zeros(1, np.int64), X, backend="cuda")
    assert "atomicAdd(&s__acc[" in src and "atomicAdd(reinterpret_cast<unsigned long long*>(&n__acc[" in src
    src = cas.source(np.zeros(4, np.int64), np.zeros(4, np.int64), backend="cuda")   # through a private copy
    assert "atomicCAS(reinterpret_cast<unsigned long long*>(&a__w[" in src
    with pytest.raises(mb.KernelLaunchError, match="atomic cas"):
        cas.source(np.zeros(4, np.int64), np.zeros(4, np.int64), backend="metal")
