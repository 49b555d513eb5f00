"""MLX's steel GEMM headers (``mlx/backend/metal/kernels/steel/gemm/gemm.h`` and what it
includes, as the installed ``mlx`` package ships them) used as a ``metal_kernel`` header,
the way model code pastes them: GEMMs built on ``GEMMKernel``/``BlockLoader``/``BlockMMA``
run unmodified on the simulator and match NumPy; printed back they pass the Metal check
and compile as CUDA; on a GPU, CUDA matches the simulator."""

import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench import msl_check
from metalbench import types as T
from metalbench.codegen import cuda, cuda_check, msl
from metalbench.frontend.msl import translate_kernel
from mlx_headers import INCLUDE, mlx_header

GEMM_H = "mlx/backend/metal/kernels/steel/gemm/gemm.h"

pytestmark = pytest.mark.skipif(not (INCLUDE / GEMM_H).exists(),
                                reason="this mlx package does not ship the Metal kernel headers")


def steel_header() -> str:
    """gemm.h with its ``#include "mlx/..."`` lines replaced by the files' text (each once)."""
    return mlx_header("steel/gemm/gemm.h") + "\nusing namespace metal;\nusing namespace mlx::steel;\n"


# A tile of C = A @ B (B given as (N, K) when TB, else (K, N)) per threadgroup, the steel way.
BODY = """
    using kernel_t = GEMMKernel<T, T, BM, BN, BK, WM, WN, false, TB, true, true, float>;
    typedef typename kernel_t::loader_a_t load_a;
    typedef typename kernel_t::loader_b_t load_b;
    const int row0 = int(threadgroup_position_in_grid.y) * BM;
    const int col0 = int(threadgroup_position_in_grid.x) * BN;
    threadgroup T a_tile[kernel_t::tgp_mem_size_a];
    threadgroup T b_tile[kernel_t::tgp_mem_size_b];
    thread load_a la(a + row0 * K, K, a_tile, simdgroup_index_in_threadgroup, thread_index_in_simdgroup);
    thread load_b lb(b + (TB ? col0 * K : col0), TB ? K : N, b_tile, simdgroup_index_in_threadgroup,
                     thread_index_in_simdgroup);
    thread typename kernel_t::mma_t mm(simdgroup_index_in_threadgroup, thread_index_in_simdgroup);
    for (int k = 0; k < K; k += BK) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
        la.load_unsafe();
        lb.load_unsafe();
        threadgroup_barrier(mem_flags::mem_threadgroup);
        mm.mma(a_tile, b_tile);
        la.next();
        lb.next();
    }
    mm.store_result(c + row0 * N + col0, N);
"""


def gemm(M, N, K, dtype, tb, tiles=(32, 32, 16, 2, 2), backend="sim", checked=False, inputs=None):
    BM, BN, BK, WM, WN = tiles
    k = mb.metal_kernel(name="steel_gemm", input_names=["a", "b"], output_names=["c"], source=BODY,
                        header=steel_header())
    rng = np.random.default_rng(M * 7 + N)
    if inputs is None:
        a = mx.array(rng.standard_normal((M, K)).astype(np.float32)).astype(dtype)
        b = mx.array((rng.standard_normal((N, K) if tb else (K, N)) * 0.1).astype(np.float32)).astype(dtype)
    else:
        a, b = inputs
    (c,) = k(inputs=[a, b], template=[("T", dtype), ("BM", BM), ("BN", BN), ("BK", BK), ("WM", WM), ("WN", WN),
                                      ("TB", tb), ("M", M), ("N", N), ("K", K)],
             grid=(N // BN * WM * WN * 32, M // BM, 1), threadgroup=(WM * WN * 32, 1, 1), output_shapes=[(M, N)],
             output_dtypes=[dtype], backend=backend, checked=checked)
    af = np.array(a.astype(mx.float32)).astype(np.float64)
    bf = np.array(b.astype(mx.float32)).astype(np.float64)
    return (a, b), np.array(c.astype(mx.float32)), af @ (bf.T if tb else bf)


@pytest.mark.parametrize("dtype,tb,tol", [(mx.float32, False, 1e-4), (mx.bfloat16, True, 2e-2),
                                          (mx.float16, True, 5e-3)])
def test_steel_gemm_runs_unmodified_and_matches_numpy(dtype, tb, tol):
    _, c, want = gemm(64, 64, 48, dtype, tb)
    np.testing.assert_allclose(c, want, rtol=tol, atol=tol)


def test_steel_gemm_is_clean_under_the_checked_simulator():
    _, c, want = gemm(32, 64, 32, mx.float32, True, tiles=(32, 64, 16, 2, 2), checked=True)
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)


def _ir():
    return translate_kernel("steel_gemm", BODY, steel_header(), inputs=[("a", T.float16, 2), ("b", T.float16, 2)],
                            outputs=[("c", T.float16, 2)],
                            template=[("T", T.float16), ("BM", 32), ("BN", 32), ("BK", 16), ("WM", 2), ("WN", 2),
                                      ("TB", True), ("M", 64), ("N", 64), ("K", 32)])


def test_steel_gemm_printed_as_metal_and_cuda():
    kir = _ir()
    r = msl.render(kir)
    assert "simdgroup_multiply_accumulate(" in r.body
    assert msl_check.check(r) == []
    assert cuda_check.check(cuda.render(kir), use_nvcc=False) == []


def test_steel_gemm_round_trips_through_printed_metal():
    (a, b), c1, _ = gemm(64, 64, 32, mx.float16, True)
    r = msl.render(_ir())
    k = mb.metal_kernel(name="again", input_names=r.input_names, output_names=r.output_names, source=r.body,
                        header=r.header)
    (c2,) = k(inputs=[a, b], grid=(256, 2, 1), threadgroup=(128, 1, 1), output_shapes=[(64, 64)],
              output_dtypes=[mx.float16], backend="sim")
    np.testing.assert_array_equal(c1, np.array(c2.astype(mx.float32)))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,tb", [(mx.float32, False), (mx.bfloat16, True)])
def test_steel_gemm_on_cuda_equals_the_simulator(dtype, tb):
    inputs, sim, want = gemm(64, 64, 48, dtype, tb)
    _, gpu, _ = gemm(64, 64, 48, dtype, tb, backend="cuda", inputs=inputs)
    np.testing.assert_array_equal(gpu, sim)


# Any M, N, K: full tiles through GEMMKernel::gemm_loop's unsafe loads, edge tiles through its
# safe loads and store_result_safe, as GEMMKernel::run does (gemm_kernel depends on T, so the
# member template is called as gemm_kernel::template gemm_loop<...>).
EDGE_BODY = """
    using gemm_kernel = GEMMKernel<T, T, 32, 32, 16, 2, 2, false, false, false, false, float>;
    threadgroup T As[gemm_kernel::tgp_mem_size_a];
    threadgroup T Bs[gemm_kernel::tgp_mem_size_b];
    const int row0 = int(threadgroup_position_in_grid.y) * 32;
    const int col0 = int(threadgroup_position_in_grid.x) * 32;
    thread typename gemm_kernel::loader_a_t la(a + row0 * K, K, As, simdgroup_index_in_threadgroup,
                                               thread_index_in_simdgroup);
    thread typename gemm_kernel::loader_b_t lb(b + col0, N, Bs, simdgroup_index_in_threadgroup,
                                               thread_index_in_simdgroup);
    thread typename gemm_kernel::mma_t mm(simdgroup_index_in_threadgroup, thread_index_in_simdgroup);
    const short bm = min(32, M - row0);
    const short bn = min(32, N - col0);
    const short lbk = K % 16;
    if (bm == 32 && bn == 32) {
        gemm_kernel::template gemm_loop<true, true, false>(As, Bs, K / 16, la, lb, mm, bm, bn, lbk);
        mm.store_result(c + row0 * N + col0, N);
    } else {
        gemm_kernel::template gemm_loop<false, false, false>(As, Bs, K / 16, la, lb, mm, bm, bn, lbk);
        mm.store_result_safe(c + row0 * N + col0, N, short2(bn, bm));
    }
"""


@pytest.mark.parametrize("M,N,K", [(33, 47, 20), (64, 40, 9), (5, 70, 37)])
def test_steel_gemm_loop_on_edge_tiles_matches_numpy_and_is_checked_clean(M, N, K):
    rng = np.random.default_rng(M + N + K)
    a = mx.array(rng.standard_normal((M, K)).astype(np.float32))
    b = mx.array(rng.standard_normal((K, N)).astype(np.float32))
    k = mb.metal_kernel(name="steel_edges", input_names=["a", "b"], output_names=["c"], source=EDGE_BODY,
                        header=steel_header())
    (c,) = k(inputs=[a, b], template=[("T", mx.float32), ("M", M), ("N", N), ("K", K)],
             grid=(128 * ((N + 31) // 32), (M + 31) // 32, 1), threadgroup=(128, 1, 1), output_shapes=[(M, N)],
             output_dtypes=[mx.float32], backend="sim", checked=True)
    want = np.array(a).astype(np.float64) @ np.array(b).astype(np.float64)
    np.testing.assert_allclose(np.array(c), want, rtol=1e-4, atol=1e-4)
