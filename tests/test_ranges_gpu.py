"""passes/ranges.py and passes/warps.py on the GPU: printed CUDA with int loop counters and
full-warp SIMD-group calls computes what the simulator computes (marker gpu; skips here)."""
import numpy as np
import pytest

import metalbench as mb
from metalbench.dsl import *  # noqa: F401,F403


@mb.kernel
def _warp_mix(x, out: mb.Out, TG: mb.constexpr = 64):
    # a full-warp reduction, a reduction after a divergent early return, and int counters
    red = threadgroup_array(32, float32)
    i = thread_position_in_grid.x
    s = 0.0
    for j in range(thread_index_in_threadgroup, TG * 4, TG):
        s += x[threadgroup_position_in_grid.x * TG * 4 + j]
    s = simd_sum(s)
    if thread_index_in_simdgroup == 0:
        red[simdgroup_index_in_threadgroup] = s
    threadgroup_barrier()
    t = simd_sum(red[thread_index_in_simdgroup] if thread_index_in_simdgroup < TG // 32 else 0.0)
    if x[i] > 0.5:
        return
    out[i] = t + simd_max(x[i])


@pytest.mark.gpu
@pytest.mark.parametrize("tg, groups, extra", [(64, 8, 0), (96, 5, 0), (64, 8, 17), (128, 3, 0)])
def test_full_warp_and_signed_loops_on_cuda_match_sim(tg, groups, extra):
    """Exact grids of multiple-of-32 threadgroups take the full-warp path; ``extra`` threads
    past the last whole threadgroup (an inexact grid) the partial-warp one."""
    rng = np.random.default_rng(tg + extra)
    x = rng.random(tg * 4 * (groups + 1)).astype(np.float32)
    n = tg * groups + extra
    kw = dict(grid=n, threadgroup=tg, TG=tg, init_value=0)
    got = np.asarray(_warp_mix(x, backend="cuda", **kw))
    exp = np.asarray(_warp_mix(x, backend="sim", **kw))
    np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-5)


@mb.kernel
def _warp_reduce_typed(x, out: mb.Out):
    # one full-warp simd_sum/simd_max per lane of x's dtype (the scalar butterfly on cuda
    # for 32/64-bit, half and bfloat; small integers through mb_shfl_xor_full)
    i = thread_position_in_grid.x
    out[i] = simd_sum(x[i]) + simd_max(x[i])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "int32", "uint32", "int64", "uint64", "float16", "bfloat16",
                                   "int16", "uint8"])
def test_full_warp_reductions_of_every_shuffle_type_match_sim(dtype):
    import mlx.core as mx
    rng = np.random.default_rng(7)
    vals = rng.integers(0, 5, 256).astype(np.float32)      # small integers: exact in every dtype
    x = mx.array(vals).astype(getattr(mx, dtype))
    got = _warp_reduce_typed(x, grid=256, threadgroup=64, backend="cuda")
    exp = _warp_reduce_typed(x, grid=256, threadgroup=64, backend="sim")
    assert got.dtype == exp.dtype
    np.testing.assert_array_equal(np.asarray(got.astype(mx.float32)), np.asarray(exp.astype(mx.float32)))
    w = vals.reshape(-1, 32)
    np.testing.assert_array_equal(np.asarray(exp.astype(mx.float32)).reshape(-1, 32),
                                  np.broadcast_to(w.sum(1, keepdims=True) + w.max(1, keepdims=True), w.shape))
