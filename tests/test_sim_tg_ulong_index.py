"""Threadgroup arrays indexed by a 64-bit unsigned expression (``red[(size_t)sg * N + i]``,
a ``size_t`` loop counter, an atomic on ``tg + (size_t)j``): the simulator adds each index to
its lane's group base, and NumPy makes int64 + uint64 a float64 -- no array takes that as an
address (an IndexError inside the simulator, found with MTPLX's hyper-read GEMV). Against
NumPy, plain and checked, in and out of loops (the hoisted fast path)."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb

BODY = """
uint tid = thread_position_in_threadgroup.x;
uint sg = tid / 32;
uint lane = tid % 32;
uint g = threadgroup_position_in_grid.x;
threadgroup float red[4 * 3];
threadgroup float tile[128];
threadgroup atomic_uint hits[8];
if (tid < 8) atomic_store_explicit(&hits[(size_t)tid], 0u, memory_order_relaxed);
tile[(size_t)tid] = x[g * 128 + tid];
threadgroup_barrier(mem_flags::mem_threadgroup);
for (int o = 0; o < 3; ++o) {
    float v = simd_sum(tile[(size_t)((tid + 7 * o) % 128)] * float(o + 1));
    if (lane == 0) red[(size_t)sg * 3 + o] = v;
}
atomic_fetch_add_explicit(&hits[(size_t)(tid % 8)], 1u, memory_order_relaxed);
threadgroup_barrier(mem_flags::mem_threadgroup);
if (tid < 3) {
    float tot = 0.0f;
    for (size_t s = 0; s < 4; ++s) tot += red[s * 3 + tid];
    out[g * 4 + tid] = tot;
}
if (tid == 3) {
    out[g * 4 + 3] = float(atomic_load_explicit(&hits[(size_t)5], memory_order_relaxed));
}
"""


def reference(x):
    t = x.reshape(-1, 128).astype(np.float64)
    r = np.zeros((t.shape[0], 4))
    for o in range(3):
        r[:, o] = t[:, (np.arange(128) + 7 * o) % 128].sum(1) * (o + 1)
    r[:, 3] = 16
    return r.reshape(-1)


@pytest.mark.parametrize("checked", [False, True])
def test_ulong_indices_into_threadgroup_arrays(checked):
    groups = 3
    x = np.random.default_rng(3).standard_normal(128 * groups).astype(np.float32)
    k = mb.metal_kernel(name="tg_ulong_index", input_names=["x"], output_names=["out"], source=BODY)
    out = k(inputs=[mx.array(x)], grid=(128 * groups, 1, 1), threadgroup=(128, 1, 1),
            output_shapes=[(4 * groups,)], output_dtypes=[mx.float32], checked=checked)[0]
    np.testing.assert_allclose(np.asarray(out), reference(x), rtol=1e-5, atol=1e-5)
