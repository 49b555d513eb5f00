"""SIMD-group matrices in the DSL (``simdgroup_float8x8``, ``simdgroup_load``,
``simdgroup_multiply_accumulate``, ``simdgroup_store``): GEMMs of 8x8, 16x16 and 32x32
tiles against NumPy on the simulator (checked), the printed MSL through the Metal
syntax check, the printed CUDA through the CUDA check; on a GPU, CUDA against the
simulator bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

import metalbench as mb
from metalbench import msl_check
from metalbench.codegen import cuda_check
from metalbench.dsl import *  # noqa: F401,F403
from metalbench.errors import KernelSyntaxError, KernelTypeError

RNG = np.random.default_rng(19)


def _mat(shape, dtype=np.float32):
    return (RNG.standard_normal(shape) * 2).astype(dtype)


def _exact_matmul(a, b, out_dtype=np.float32):
    """What the simulator computes: exact products summed over k in float64 per 8-chunk of
    k... rounded to float32 after every 8x8 multiply-accumulate."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k0 in range(0, a.shape[1], 8):
        acc = (acc.astype(np.float64) + a64[:, k0:k0 + 8] @ b64[k0:k0 + 8]).astype(np.float32)
    return acc.astype(out_dtype)


@mb.kernel
def gemm8(a, b, out: mb.Out(shape=(8, 8), dtype=mb.float32)):
    ma = simdgroup_float8x8()
    mb_ = simdgroup_float8x8()
    c = simdgroup_float8x8(0)
    simdgroup_load(ma, a, 8, (0, 0))
    simdgroup_load(mb_, b, 8)
    simdgroup_multiply_accumulate(c, ma, mb_, c)
    simdgroup_store(c, out, 8, (0, 0))


def test_an_8x8_simdgroup_matrix_gemm():
    a, b = _mat((8, 8)), _mat((8, 8))
    got = np.asarray(gemm8(a, b, grid=32, threadgroup=32, backend="sim", checked=True))
    np.testing.assert_array_equal(got, _exact_matmul(a, b))
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("elem,mt", [(np.float16, simdgroup_half8x8), (None, simdgroup_bfloat8x8)])
def test_half_and_bfloat_matrices(elem, mt):
    import mlx.core as mx

    @mb.kernel
    def mm(a, b, out: mb.Out(shape=(8, 8), dtype=mb.float32), MT: mb.constexpr = simdgroup_half8x8):
        x = MT()
        y = MT()
        acc = simdgroup_float8x8(0)
        simdgroup_load(x, a, 8)
        simdgroup_load(y, b, 8, transpose=True)
        simdgroup_multiply_accumulate(acc, x, y, acc)
        simdgroup_store(acc, out, 8)

    a32, b32 = _mat((8, 8)), _mat((8, 8))
    if elem is None:
        a, b = mx.array(a32).astype(mx.bfloat16), mx.array(b32).astype(mx.bfloat16)
        an, bn = np.array(a.astype(mx.float32)), np.array(b.astype(mx.float32))
    else:
        a, b = a32.astype(elem), b32.astype(elem)
        an, bn = a.astype(np.float32), b.astype(np.float32)
    got = np.asarray(mm(a, b, grid=32, threadgroup=32, backend="sim", checked=True, MT=mt))
    np.testing.assert_array_equal(got, _exact_matmul(an, bn.T))


def test_identity_from_the_diagonal_constructor_and_filled_matrices():
    @mb.kernel
    def ident(x, out: mb.Out(shape=(8, 8), dtype=mb.float32)):
        one = simdgroup_float8x8(1.0)
        twos = make_filled_simdgroup_matrix(2.0, simdgroup_float8x8)
        m = simdgroup_float8x8()
        d = simdgroup_float8x8()
        simdgroup_load(m, x, 8)
        simdgroup_multiply(d, m, one)                    # m @ I = m
        simdgroup_multiply_accumulate(d, one, twos, d)   # + 2
        simdgroup_store(d, out, 8)

    x = _mat((8, 8))
    np.testing.assert_array_equal(np.asarray(ident(x, grid=32, threadgroup=32, backend="sim")), x + 2)


@mb.kernel
def tiled_gemm(a, b, out: mb.Out(shape=lambda a, b: (a.shape[0], b.shape[1])),
               BM: mb.constexpr = 32, BN: mb.constexpr = 32, BK: mb.constexpr = 16,
               WM: mb.constexpr = 2, WN: mb.constexpr = 2):
    # WM x WN SIMD-groups per threadgroup, each computing a (BM/WM) x (BN/WN) block of
    # 8x8 accumulators from threadgroup tiles of A and B.
    TM = BM // WM // 8
    TN = BN // WN // 8
    K = a.shape[1]
    N = b.shape[1]
    As = threadgroup_array((BM, BK), float32)
    Bs = threadgroup_array((BK, BN), float32)
    tid = thread_index_in_threadgroup
    sg = simdgroup_index_in_threadgroup
    sm = sg // WN
    sn = sg % WN
    row0 = threadgroup_position_in_grid.y * BM
    col0 = threadgroup_position_in_grid.x * BN
    acc = local_array((TM, TN), simdgroup_float8x8)
    for i in static_range(TM):
        for j in static_range(TN):
            acc[i, j] = simdgroup_float8x8(0)
    NT = WM * WN * 32
    for k0 in range(0, K, BK):
        for e in range(tid, BM * BK, NT):
            As[e // BK, e % BK] = a[row0 + e // BK, k0 + e % BK]
        for e in range(tid, BK * BN, NT):
            Bs[e // BN, e % BN] = b[k0 + e // BN, col0 + e % BN]
        threadgroup_barrier()
        for kk in static_range(0, BK, 8):
            fa = local_array(TM, simdgroup_float8x8)
            fb = local_array(TN, simdgroup_float8x8)
            for i in static_range(TM):
                simdgroup_load(fa[i], As, BK, (kk, sm * TM * 8 + i * 8))
            for j in static_range(TN):
                simdgroup_load(fb[j], Bs, BN, (sn * TN * 8 + j * 8, kk))
            for i in static_range(TM):
                for j in static_range(TN):
                    simdgroup_multiply_accumulate(acc[i, j], fa[i], fb[j], acc[i, j])
        threadgroup_barrier()
    for i in static_range(TM):
        for j in static_range(TN):
            simdgroup_store(acc[i, j], out, N, (col0 + sn * TN * 8 + j * 8, row0 + sm * TM * 8 + i * 8))


@pytest.mark.parametrize("bm,bn,wm,wn", [(16, 16, 1, 1), (16, 16, 2, 2), (32, 32, 2, 2), (32, 32, 1, 2)])
def test_tiled_simdgroup_gemm(bm, bn, wm, wn):
    M, K, N = 64, 48, 64
    a, b = _mat((M, K)), _mat((K, N))
    got = np.asarray(tiled_gemm(a, b, grid=(N // bn * 32 * wm * wn, M // bm, 1), threadgroup=(32 * wm * wn, 1, 1),
                                backend="sim", checked=True, BM=bm, BN=bn, WM=wm, WN=wn))
    np.testing.assert_array_equal(got, _exact_matmul(a, b))


def test_simdgroup_load_from_a_row_view_and_with_a_vector_origin():
    @mb.kernel
    def from_rows(x, out: mb.Out(shape=(8, 8), dtype=mb.float32), R: mb.constexpr = 3):
        m = simdgroup_float8x8()
        simdgroup_load(m, x[R], 16, uint2(4, 0))       # rows R.. of x, columns 4..11
        simdgroup_store(m, out[0:], 8)

    x = _mat((16, 16))
    got = np.asarray(from_rows(x.reshape(1, 16, 16)[0], grid=32, threadgroup=32, backend="sim", checked=True))
    np.testing.assert_array_equal(got, x.reshape(-1)[3 * 16:3 * 16 + 8 * 16].reshape(8, 16)[:, 4:12])


def _rendered(k, *args, backend="metal", **kw):
    return k.specialize(*args, **kw).rendered(backend)


def test_printed_msl_spells_simdgroup_matrix_and_passes_the_metal_check():
    a, b = _mat((64, 48)), _mat((48, 64))
    r = _rendered(tiled_gemm, a, b)
    assert "simdgroup_float8x8 acc[4];" in r.body and "simdgroup_multiply_accumulate(acc[" in r.body
    assert msl_check.check(r) == []
    assert msl_check.check(_rendered(gemm8, _mat((8, 8)), _mat((8, 8)))) == []


def test_printed_cuda_type_checks():
    a, b = _mat((64, 48)), _mat((48, 64))
    r = _rendered(tiled_gemm, a, b, backend="cuda")
    assert "mb_simdgroup_mma<float>(" in r.body
    assert cuda_check.check(r, use_nvcc=False) == []


@pytest.mark.parametrize("body,exc,msg", [
    ("m = simdgroup_float8x8()\n    simdgroup_load(m, h, 8)", KernelTypeError, "needs an array of float32"),
    ("m = simdgroup_float8x8()\n    out[0] = m", KernelTypeError, "cannot convert simdgroup_float8x8"),
    ("f = 1.0\n    simdgroup_multiply(f, f, f)", KernelTypeError, "takes simdgroup matrices"),
    ("m = simdgroup_float8x8()\n    simdgroup_load(m, x, 8, (0, 0), x[0] > 0)", KernelTypeError,
     "transpose is a compile-time bool"),
    ("m = simdgroup_float8x8()\n    simdgroup_load(m, x, 8, 0)", KernelTypeError, "origin is .column, row."),
    ("t = threadgroup_array(4, simdgroup_float8x8)", KernelTypeError, "declare an array of them with local_array"),
    ("m = simdgroup_float8x8()\n    simdgroup_load(m)", KernelTypeError, "is missing array"),
    ("m = simdgroup_float8x8()\n    simdgroup_load(x[0], x, 8)", KernelTypeError, "takes simdgroup matrices"),
    ("m = simdgroup_float8x8()\n    simdgroup_load(m + 1, x, 8)", KernelSyntaxError, "writes its first argument"),
])
def test_misuse_is_named_at_its_line(body, exc, msg):
    src = f"def bad(x, h, out: mb.Out):\n    i = thread_position_in_grid.x\n    {body}\n"
    k = mb.kernel(source=src, env={"mb": mb, **{n: globals()[n] for n in dir() if False}, **_dsl_env()})
    with pytest.raises(exc, match=msg) as ei:
        k(_mat(64), _mat(64, np.float16), grid=32, backend="sim")
    assert "line 3" in str(ei.value) or "line 4" in str(ei.value)


def _dsl_env():
    import metalbench.dsl as d
    return {n: getattr(d, n) for n in d.__all__}


# ----------------------------------------------------------------------------- on the GPU

@pytest.mark.gpu
def test_cuda_tiled_gemm_equals_the_simulator_bit_for_bit():
    a, b = _mat((64, 48)), _mat((48, 64))
    kw = dict(grid=(2 * 128, 2, 1), threadgroup=(128, 1, 1))
    sim = np.asarray(tiled_gemm(a, b, backend="sim", **kw))
    gpu = np.asarray(tiled_gemm(a, b, backend="cuda", **kw))
    np.testing.assert_array_equal(gpu, sim)


@pytest.mark.gpu
def test_cuda_8x8_gemm_equals_numpy():
    a, b = _mat((8, 8)), _mat((8, 8))
    np.testing.assert_array_equal(np.asarray(gemm8(a, b, grid=32, threadgroup=32, backend="cuda")),
                                  _exact_matmul(a, b))
