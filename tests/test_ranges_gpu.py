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
