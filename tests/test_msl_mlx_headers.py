"""MLX's own Metal kernel headers, as the installed ``mlx`` package ships them, pasted into a
``metal_kernel`` header the way model code reuses them -- and what MLX's ``utils.h`` (which
MLX puts before every custom kernel) gives a kernel: ``ConditionalType``, ``WorkPerThread``,
``cast_to``, ``MLX_MTL_PRAGMA_UNROLL``, ``elem_to_loc<IdxT>`` and ``elem_to_loc`` on shapes
in constant buffers (``metalbench/frontend/msl/mlx_prelude.py``).

The strongest check: a kernel calling ``quantized.h``'s ``qmv_impl``/``qmv_fast_impl``/
``qmm_t_impl`` unmodified matches ``mx.quantized_matmul`` on ``mx.quantize``'d weights.
Before, ``quantized.h`` stopped at ``ConditionalType<...>::type`` (a syntax error) and at its
``[[function_constant]]`` declarations."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import KernelSyntaxError
from mlx_headers import INCLUDE, KERNELS, mlx_header

needs_headers = pytest.mark.skipif(not (INCLUDE / KERNELS / "quantized.h").exists(),
                                   reason="this mlx package does not ship the Metal kernel headers")


def _double(header: str, backend="sim"):
    k = mb.metal_kernel(name="with_mlx_header", input_names=["x"], output_names=["out"],
                        source="uint i = thread_position_in_grid.x; out[i] = 2.0f * x[i];", header=header)
    x = np.arange(32, dtype=np.float32)
    (out,) = k(inputs=[mx.array(x)], grid=(32, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(32,)],
               output_dtypes=[mx.float32], backend=backend)
    np.testing.assert_array_equal(np.asarray(out), 2 * x)


@needs_headers
@pytest.mark.parametrize("files", [("softmax.h",), ("sort.h",), ("reduce.h",), ("sdpa_vector.h",),
                                   ("steel/gemm/gemm.h", "quantized.h"), ("atomic.h",), ("reduce_utils.h",),
                                   ("gemv.h",)])
def test_mlx_kernel_headers_are_accepted_as_a_header(files):
    _double(mlx_header(*files))


def _quantized(n, k, group_size, bits, rows=1, seed=0):
    rng = np.random.default_rng(seed)
    w = mx.array(rng.standard_normal((n, k)).astype(np.float32))
    wq, scales, biases = mx.quantize(w, group_size=group_size, bits=bits)
    x = mx.array(rng.standard_normal((rows, k)).astype(np.float32))
    want = np.asarray(mx.quantized_matmul(x, wq, scales, biases, transpose=True, group_size=group_size, bits=bits))
    return (wq, scales, biases, x), want


QMV = """
{fn}<T, GS, BITS>(w, scales, biases, x, y, K, N, threadgroup_position_in_grid,
                  simdgroup_index_in_threadgroup, thread_index_in_simdgroup);
"""


@needs_headers
@pytest.mark.parametrize("fn,k,n,group_size,bits", [("qmv_impl", 256, 40, 64, 4), ("qmv_impl", 128, 24, 32, 8),
                                                    ("qmv_fast_impl", 512, 16, 64, 4)])
def test_quantized_h_qmv_matches_mx_quantized_matmul(fn, k, n, group_size, bits):
    (wq, s, b, x), want = _quantized(n, k, group_size, bits)
    kern = mb.metal_kernel(name=fn, input_names=["w", "scales", "biases", "x", "K", "N"], output_names=["y"],
                           source=QMV.format(fn=fn), header=mlx_header("steel/gemm/gemm.h", "quantized.h"))
    (y,) = kern(inputs=[wq, s, b, x, mx.array(k, dtype=mx.int32), mx.array(n, dtype=mx.int32)],
                template=[("T", mx.float32), ("GS", group_size), ("BITS", bits)],
                grid=(32, 2 * ((n + 7) // 8), 1), threadgroup=(32, 2, 1), output_shapes=[(1, n)],
                output_dtypes=[mx.float32], backend="sim")
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-4, atol=1e-4)


def _qmm_t_body(header, call, biases):
    """A body calling MLX's ``qmm_t_impl``/``fp_qmm_t_impl`` (``call``: its name and template
    arguments) on 32x32x32 tiles in threadgroup memory; newer MLX gives it the K extent of a
    split-K part (K_eff) after M."""
    name = call.split("<")[0]
    k_eff = "K_eff" in header.split(f"void {name}")[1][:900]
    return f"""
        constexpr int BK_padded = (32 + 16 / sizeof(T));
        threadgroup T Xs[32 * BK_padded];
        threadgroup T Ws[32 * BK_padded];
        {call}(w, scales, {biases}, x, y, Xs, Ws, K, N, M, {"K, " * k_eff}
            threadgroup_position_in_grid, thread_index_in_threadgroup, simdgroup_index_in_threadgroup,
            thread_index_in_simdgroup);
    """


@needs_headers
@pytest.mark.parametrize("m,k,n,group_size,bits,aligned", [(40, 128, 64, 64, 4, True), (33, 64, 40, 32, 8, False)])
def test_quantized_h_qmm_t_matches_mx_quantized_matmul(m, k, n, group_size, bits, aligned, backend="sim"):
    header = mlx_header("steel/gemm/gemm.h", "quantized.h")
    body = _qmm_t_body(header, "qmm_t_impl<T, GS, BITS, ALIGNED>", "biases")
    (wq, s, b, x), want = _quantized(n, k, group_size, bits, rows=m, seed=1)
    kern = mb.metal_kernel(name="qmm_t", input_names=["w", "scales", "biases", "x", "K", "N", "M"],
                           output_names=["y"], source=body, header=header)
    (y,) = kern(inputs=[wq, s, b, x] + [mx.array(v, dtype=mx.int32) for v in (k, n, m)],
                template=[("T", mx.float32), ("GS", group_size), ("BITS", bits), ("ALIGNED", aligned)],
                grid=(32 * ((n + 31) // 32), 2 * ((m + 31) // 32), 2), threadgroup=(32, 2, 2),
                output_shapes=[(m, n)], output_dtypes=[mx.float32], backend=backend)
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-4, atol=1e-4)


@needs_headers
@pytest.mark.gpu
def test_quantized_h_qmv_on_cuda_matches_mx_quantized_matmul():
    (wq, s, b, x), want = _quantized(40, 256, 64, 4)
    kern = mb.metal_kernel(name="qmv_cuda", input_names=["w", "scales", "biases", "x", "K", "N"], output_names=["y"],
                           source=QMV.format(fn="qmv_impl"), header=mlx_header("steel/gemm/gemm.h", "quantized.h"))
    (y,) = kern(inputs=[wq, s, b, x, mx.array(256, dtype=mx.int32), mx.array(40, dtype=mx.int32)],
                template=[("T", mx.float32), ("GS", 64), ("BITS", 4)], grid=(32, 10, 1), threadgroup=(32, 2, 1),
                output_shapes=[(1, 40)], output_dtypes=[mx.float32], backend="cuda")
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-4, atol=1e-4)


@needs_headers
@pytest.mark.gpu
def test_quantized_h_qmm_t_on_cuda_matches_mx_quantized_matmul():
    test_quantized_h_qmm_t_matches_mx_quantized_matmul(33, 64, 40, 32, 8, False, backend="cuda")


# --- what utils.h gives a kernel (MLX includes it before every custom kernel) -------------------

X = np.random.default_rng(3).standard_normal(64).astype(np.float32)


def _run(body, header="", inputs=None, **kw):
    inputs = inputs or {"x": X}
    k = mb.metal_kernel(name="utils_probe", input_names=list(inputs), output_names=["out"], source=body, header=header,
                        **kw)
    (out,) = k(inputs=[mx.array(v) if isinstance(v, np.ndarray) else v for v in inputs.values()], grid=(64, 1, 1),
               threadgroup=(32, 1, 1), output_shapes=[(64,)], output_dtypes=[mx.float32], backend="sim")
    return np.asarray(out)


def test_conditional_type_work_per_thread_cast_to_and_unroll_pragma():
    header = """
    template <int B> inline float widen(float v) {
        using U = typename ConditionalType<B == 4, uint32_t, uint8_t>::type;
        return v + float(U(300));           // 300, or 300 mod 256 in a uint8_t
    }"""
    body = """
    uint i = thread_position_in_grid.x;
    float s = 0.0f;
    MLX_MTL_PRAGMA_UNROLL
    for (int j = 0; j < WorkPerThread<float>::n; j++) { s += x[i]; }        // 8 bytes: 2 floats
    out[i] = s + widen<4>(0.0f) + widen<2>(0.0f) + cast_to<float>(cast_to<bool>(x[i] > 0.0f)) * 1000.0f
             + float(WorkPerThread<half>::n);
    """
    np.testing.assert_allclose(_run(body, header), 2 * X + 300 + 44 + 1000 * (X > 0) + 4, rtol=1e-6)


def test_a_header_defining_a_utils_name_keeps_its_own():
    # code written for an MLX without ConditionalType defines it (here backwards, to tell)
    header = """
    template <bool c, typename A, typename B> struct ConditionalType { using type = A; };
    template <typename A, typename B> struct ConditionalType<true, A, B> { using type = B; };"""
    body = """uint i = thread_position_in_grid.x;
    using U = typename ConditionalType<true, float, int>::type;
    out[i] = float(U(x[i]));"""
    np.testing.assert_array_equal(_run(body, header), np.trunc(X))


def test_elem_to_loc_with_an_index_type_and_on_constant_buffers():
    # a transposed (strided) input read through its own strides, and through shape and
    # strides passed as small inputs (MLX binds those as constant buffers)
    base = np.arange(64, dtype=np.float32).reshape(8, 8)
    xt = mx.array(base).T
    body = """
    uint i = thread_position_in_grid.x;
    out[i] = x[elem_to_loc<int>(i, x_shape, x_strides, x_ndim)] + 1000.0f * x[elem_to_loc(i, shp, strd, 2)];
    """
    got = _run(body, inputs={"x": xt, "shp": mx.array([8, 8], dtype=mx.int32),
                             "strd": mx.array([1, 8], dtype=mx.int64)}, ensure_row_contiguous=False)
    np.testing.assert_array_equal(got, 1001 * base.T.reshape(-1))


def test_a_declared_function_constant_is_fine_until_read():
    header = "constant bool has_mask [[function_constant(20)]];"
    np.testing.assert_array_equal(_run("uint i = thread_position_in_grid.x; out[i] = x[i];", header), X)
    with pytest.raises(KernelSyntaxError, match="function constant 'has_mask'"):
        _run("uint i = thread_position_in_grid.x; out[i] = has_mask ? x[i] : 0.0f;", header)


def test_trait_logic_and_variable_templates_as_atomic_h_writes_them():
    # Metal's internal _disjunction (MLX's atomic.h: is_metal_atomic), conjunction, negation;
    # a variable template named in the body and in another template's arguments
    header = """
    template <typename T>
    constexpr constant bool plain_atomic = _disjunction<is_same<T, int>, is_same<T, uint>, is_same<T, float>>::value;
    template <typename T>
    constexpr constant bool real_float = conjunction_v<is_floating_point<T>, negation<is_same<T, half>>>;
    template <typename T, typename = void> struct Kind { static constexpr constant int v = 1; };
    template <typename T> struct Kind<T, enable_if_t<plain_atomic<T>>> { static constexpr constant int v = 2; };
    """
    body = """
    uint i = thread_position_in_grid.x;
    out[i] = x[i] + 10.0f * plain_atomic<float> + 100.0f * plain_atomic<half> + 1000.0f * real_float<float>
             + 10000.0f * real_float<half> + 100000.0f * Kind<uint>::v + 1000000.0f * Kind<short>::v;
    """
    np.testing.assert_allclose(_run(body, header), X + 10 + 1000 + 200000 + 1000000, rtol=1e-6)


def test_uniform_values():
    # Metal's uniform<T> (gemv.h: constexpr const uniform<int> loop_stride = make_uniform(blockN)) is a T
    body = """
    uint i = thread_position_in_grid.x;
    const uniform<int> step = make_uniform(3);
    metal::uniform<float> scale = make_uniform(0.5f);
    out[i] = x[i] * scale + float(step * 2);
    """
    np.testing.assert_allclose(_run(body), X * 0.5 + 6, rtol=1e-6)


@needs_headers
def test_quantized_h_qmv_round_trips_through_printed_metal_and_cuda():
    from metalbench import msl_check
    from metalbench import types as T
    from metalbench.codegen import cuda, cuda_check, msl
    from metalbench.frontend.msl import translate_kernel
    header = mlx_header("steel/gemm/gemm.h", "quantized.h")
    kir = translate_kernel("qmv", QMV.format(fn="qmv_impl"), header,
                           inputs=[("w", T.uint32, 2), ("scales", T.float32, 2), ("biases", T.float32, 2),
                                   ("x", T.float32, 2), ("K", T.int32, 0), ("N", T.int32, 0)],
                           outputs=[("y", T.float32, 2)], scalars=("K", "N"),
                           template=[("T", T.float32), ("GS", 64), ("BITS", 4)])
    r = msl.render(kir)
    assert msl_check.check(r) == []
    assert cuda_check.check(cuda.render(kir), use_nvcc=False) == []
    (wq, s, b, x), want = _quantized(40, 256, 64, 4)
    again = mb.metal_kernel(name="qmv_again", input_names=r.input_names, output_names=r.output_names, source=r.body,
                            header=r.header)
    (y,) = again(inputs=[wq, s, b, x, mx.array(256, dtype=mx.int32), mx.array(40, dtype=mx.int32)], grid=(32, 10, 1),
                 threadgroup=(32, 2, 1), output_shapes=[(1, 40)], output_dtypes=[mx.float32], backend="sim")
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-4, atol=1e-4)


def test_elem_to_loc_2_nd_and_3_nd_on_two_strided_inputs():
    # MLX's broadcasting binary/ternary helpers: one element's location in arrays of their own strides
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    b = np.arange(24, dtype=np.float32).reshape(4, 3, 2) * 10
    body = """
    uint n = thread_position_in_grid.x;
    uint3 e = uint3(n % 4, (n / 4) % 3, n / 12);
    auto l = elem_to_loc_2_nd<int64_t>(e, a_shape, a_strides, b_strides, a_ndim);
    auto m = elem_to_loc_3_nd(e, a_shape, a_strides, b_strides, a_strides, a_ndim);
    out[n] = a[l.x] + b[l.y] + 1000.0f * float(m.z == l.x && m.y == l.y);
    """
    k = mb.metal_kernel(name="nd_locs", input_names=["a", "b"], output_names=["out"], source=body,
                        ensure_row_contiguous=False)
    bt = mx.array(b).transpose(2, 1, 0)          # (2, 3, 4), strided
    (out,) = k(inputs=[mx.array(a), bt], grid=(24, 1, 1), threadgroup=(24, 1, 1), output_shapes=[(24,)],
               output_dtypes=[mx.float32], backend="sim")
    np.testing.assert_array_equal(np.asarray(out), (a + np.asarray(bt)).reshape(-1) + 1000)


def test_looped_elem_to_loc_walks_a_strided_array():
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    at = mx.array(a).transpose(2, 0, 1)          # (5, 3, 4), strides (1, 20, 5)
    body = """
    if (thread_position_in_grid.x == 0) {
        LoopedElemToLoc<2, int64_t, true> step(3);
        for (int j = 0; j < 60; j++) { out[j] = a[step.location()]; step.next(a_shape, a_strides); }
        LoopedElemToLoc<2, int64_t, true> jump(3);
        for (int j = 0; j < 20; j++) { every3[j] = a[jump.location()]; jump.next(3, a_shape, a_strides); }
        LoopedElemToLoc<1, int64_t, false> flat(1);
        for (int j = 0; j < 4; j++) { offs[j] = float(flat.location()); flat.next(2, a_shape, a_strides); }
    }
    """
    k = mb.metal_kernel(name="looped", input_names=["a"], output_names=["out", "every3", "offs"], source=body,
                        ensure_row_contiguous=False)
    out, every3, offs = k(inputs=[at], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(60,), (20,), (4,)],
                          output_dtypes=[mx.float32] * 3, backend="sim")
    flat = np.asarray(at).reshape(-1)
    np.testing.assert_array_equal(np.asarray(out), flat)
    np.testing.assert_array_equal(np.asarray(every3), flat[::3])
    np.testing.assert_array_equal(np.asarray(offs), [0, 2, 4, 6])


FP_QMV = """
fp_qmv_impl<T, GS, BITS>(w, scales, nullptr, x, y, K, N, threadgroup_position_in_grid,
                         simdgroup_index_in_threadgroup, thread_index_in_simdgroup);
"""


def _fp_quantized(mode, n, k, group_size, bits, rows, seed):
    rng = np.random.default_rng(seed)
    w = mx.array(rng.standard_normal((n, k)).astype(np.float32))
    wq, scales = mx.quantize(w, group_size=group_size, bits=bits, mode=mode)
    x = mx.array(rng.standard_normal((rows, k)).astype(np.float32))
    want = np.asarray(mx.quantized_matmul(x, wq, scales, transpose=True, group_size=group_size, bits=bits, mode=mode))
    return (wq, scales, x), want


@needs_headers
@pytest.mark.skipif(not (INCLUDE / KERNELS / "fp_quantized.h").exists(), reason="no fp_quantized.h in this mlx")
@pytest.mark.parametrize("mode,group_size,bits", [("mxfp4", 32, 4), ("mxfp8", 32, 8), ("nvfp4", 16, 4)])
def test_fp_quantized_h_qmv_matches_mx_quantized_matmul(mode, group_size, bits):
    # MLX's microscaling formats through its own fp_qmv_impl (a null global scale passed on;
    # `const device auto* sl = scales + ...` inside)
    (wq, s, x), want = _fp_quantized(mode, 40, 256, group_size, bits, 1, 4)
    kern = mb.metal_kernel(name="fp_qmv", input_names=["w", "scales", "x", "K", "N"], output_names=["y"],
                           source=FP_QMV, header=mlx_header("steel/gemm/gemm.h", "fp_quantized.h"))
    (y,) = kern(inputs=[wq, s, x, mx.array(256, dtype=mx.int32), mx.array(40, dtype=mx.int32)],
                template=[("T", mx.float32), ("GS", group_size), ("BITS", bits)], grid=(32, 10, 1),
                threadgroup=(32, 2, 1), output_shapes=[(1, 40)], output_dtypes=[mx.float32], backend="sim")
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-4, atol=1e-4)


@needs_headers
@pytest.mark.skipif(not (INCLUDE / KERNELS / "fp_quantized.h").exists(), reason="no fp_quantized.h in this mlx")
def test_fp_quantized_h_qmm_t_matches_mx_quantized_matmul():
    header = mlx_header("steel/gemm/gemm.h", "fp_quantized.h")
    body = _qmm_t_body(header, "fp_qmm_t_impl<T, 16, 4, false>", "nullptr")
    (wq, s, x), want = _fp_quantized("nvfp4", 40, 128, 16, 4, 33, 5)
    kern = mb.metal_kernel(name="fp_qmm_t", input_names=["w", "scales", "x", "K", "N", "M"], output_names=["y"],
                           source=body, header=header)
    (y,) = kern(inputs=[wq, s, x] + [mx.array(v, dtype=mx.int32) for v in (128, 40, 33)],
                template=[("T", mx.float32)], grid=(64, 4, 2), threadgroup=(32, 2, 2), output_shapes=[(33, 40)],
                output_dtypes=[mx.float32], backend="sim")
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-4, atol=1e-4)


def test_auto_pointer_with_an_address_space():
    body = """
    uint i = thread_position_in_grid.x;
    const device auto* row = x + (i / 8) * 8;
    device auto* dst = out + i;
    *dst = row[i % 8] + row[0];
    """
    base = X.reshape(8, 8)
    np.testing.assert_allclose(_run(body), (base + base[:, :1]).reshape(-1), rtol=1e-6)


@needs_headers
@pytest.mark.parametrize("arg", [False, True])
def test_sort_h_kernel_merge_sort_sorts_rows(arg):
    # MLX's own block merge sort (KernelMergeSort::block_sort): values, or their stable argsort
    body = """
    using sort_t = KernelMergeSort<float, OUT_T, ARG, 32, 4>;
    threadgroup float vals[sort_t::N_PER_BLOCK];
    threadgroup uint idxs[sort_t::N_PER_BLOCK];
    sort_t::block_sort(x, out, n, one, one, n, n, vals, idxs, threadgroup_position_in_grid,
                       thread_position_in_threadgroup);
    """
    x = np.random.default_rng(6).standard_normal((3, 100)).astype(np.float32)
    x[1, 10:20] = x[1, 30]                      # ties: the argsort is stable
    out_t = mx.uint32 if arg else mx.float32
    k = mb.metal_kernel(name="merge_sort", input_names=["x", "n", "one"], output_names=["out"], source=body,
                        header=mlx_header("sort.h"))
    (out,) = k(inputs=[mx.array(x), mx.array(100, dtype=mx.int32), mx.array(1, dtype=mx.int32)],
               template=[("OUT_T", out_t), ("ARG", arg)], grid=(32, 3, 1), threadgroup=(32, 1, 1),
               output_shapes=[(3, 100)], output_dtypes=[out_t], backend="sim")
    want = np.argsort(x, axis=1, kind="stable") if arg else np.sort(x, axis=1)
    np.testing.assert_array_equal(np.asarray(out), want)


@needs_headers
def test_hadamard_h_radix_func_with_clang_bit_builtins():
    # radix_func<R> sizes its loop with constexpr short logR = __builtin_ctz(R)
    body = """
    uint r = thread_position_in_grid.x;
    float v[16];
    for (int j = 0; j < 16; j++) { v[j] = x[r * 16 + j]; }
    radix_func<16>(v);
    for (int j = 0; j < 16; j++) { out[r * 16 + j] = v[j] + float(__builtin_popcount(r) * 1000 + __builtin_clz(1u)); }
    """
    x = np.random.default_rng(7).standard_normal((4, 16)).astype(np.float32)
    h = np.array([[1.0]])
    while h.shape[0] < 16:
        h = np.block([[h, h], [h, -h]])
    k = mb.metal_kernel(name="hadamard16", input_names=["x"], output_names=["out"], source=body,
                        header=mlx_header("hadamard.h"))
    (out,) = k(inputs=[mx.array(x)], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4, 16)],
               output_dtypes=[mx.float32], backend="sim")
    extra = np.array([bin(r).count("1") * 1000 + 31 for r in range(4)])[:, None]
    np.testing.assert_allclose(np.asarray(out), x @ h.T + extra, rtol=1e-5, atol=1e-4)


@needs_headers
def test_reduction_ops_h_simd_reduce_with_nan_and_64_bit_values():
    # MLX's Sum/Max/Min ops (reduction/ops.h): float Max/Min return NaN when a lane holds one
    # (the overload chosen by enable_if on the return type), 64-bit values reduce by shuffles
    # (chosen by enable_if_t<sizeof(T) == 8, bool>, calling operator() by name)
    body = """
    uint i = thread_position_in_grid.x;
    Sum<float> sum; Max<float> hi; Min<float> lo; Sum<int64_t> wide;
    float s = sum.simd_reduce(x[i]), h = hi.simd_reduce(x[i]), l = lo.simd_reduce(x[i]);
    int64_t w = wide.simd_reduce(int64_t(i) << 33);
    if (thread_index_in_simdgroup == 0) {
        uint g = i / 32;
        out[g * 4 + 0] = s; out[g * 4 + 1] = h; out[g * 4 + 2] = l; out[g * 4 + 3] = float(w >> 33);
    }
    """
    x = np.random.default_rng(8).standard_normal(64).astype(np.float32)
    x[40] = np.nan
    k = mb.metal_kernel(name="reduce_ops", input_names=["x"], output_names=["out"], source=body,
                        header=mlx_header("atomic.h", "reduction/ops.h"))
    (out,) = k(inputs=[mx.array(x)], grid=(64, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(8,)],
               output_dtypes=[mx.float32], backend="sim")
    got = np.asarray(out).reshape(2, 4)
    for g in range(2):
        seg = x[32 * g:32 * g + 32]
        np.testing.assert_allclose(got[g], [seg.sum(), seg.max(), seg.min(), sum(range(32 * g, 32 * g + 32))],
                                   rtol=1e-5)
    assert np.isnan(got[1, :3]).all()


@needs_headers
@pytest.mark.skipif(not (INCLUDE / KERNELS / "fp8.h").exists() or not hasattr(mx, "to_fp8"),
                    reason="no fp8.h / mx.to_fp8 in this mlx")
def test_fp8_and_fp4_structs_round_like_mlx_and_ml_dtypes():
    # fp8_e4m3(float) (bit manipulation through as_type, saturation), its float conversion
    # through half, and fp4_e2m1: bit for bit against mx.to_fp8/mx.from_fp8 and ml_dtypes
    import ml_dtypes
    body = """
    uint i = thread_position_in_grid.x;
    fp8_e4m3 v(x[i]);
    bits[i] = v.bits;
    back[i] = float(v);
    fp4_e2m1 f(x[i]);
    back4[i] = float(f);
    """
    rng = np.random.default_rng(9)
    x = np.concatenate([rng.standard_normal(200) * 50, rng.standard_normal(50) * 0.01,
                        [0.0, -0.0, 448, 500, -1000, 1e-9, 0.0019, 240.5, 5.5, -2.75]]).astype(np.float32)
    n = x.size
    k = mb.metal_kernel(name="fp8_fp4", input_names=["x"], output_names=["bits", "back", "back4"], source=body,
                        header=mlx_header("fp8.h", "fp4.h"))
    bits, back, back4 = k(inputs=[mx.array(x)], grid=(n, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(n,)] * 3,
                          output_dtypes=[mx.uint8, mx.float32, mx.float32], backend="sim")
    want = np.asarray(mx.to_fp8(mx.array(x)))
    np.testing.assert_array_equal(np.asarray(bits), want)
    np.testing.assert_array_equal(np.asarray(back), np.asarray(mx.from_fp8(mx.array(want), dtype=mx.float32)))
    if hasattr(ml_dtypes, "float4_e2m1fn"):
        np.testing.assert_array_equal(np.asarray(back4), x.astype(ml_dtypes.float4_e2m1fn).astype(np.float32))
