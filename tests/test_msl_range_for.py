"""Range-based for loops by reference (``for (thread float& v : vals) v *= s;``,
``for (auto& v : vals)``, ``for (const thread auto& v : vals)``): the loop variable is the
element itself, so writes through it reach the array; over thread, threadgroup and vector
arrays. Our own kernels vs NumPy, round trip, printed CUDA."""
import numpy as np
import pytest

import metalbench as mb
import mlx.core as mx
from metalbench.errors import KernelTypeError
from msl_cases import MSLCase, three_ways

RNG = np.random.default_rng(15)

SCALE_IN_PLACE = MSLCase(
    "range_for_ref",
    """
    uint i = thread_position_in_grid.x;
    float v[4];
    for (int k = 0; k < 4; ++k) v[k] = x[4 * i + k];
    for (thread float& a : v) a = a * 2.0f + 1.0f;      // writes reach v
    for (auto& a : v) a -= x[4 * i];
    float s = 0.0f, m = -INFINITY;
    for (const thread auto& a : v) { s += a; m = max(m, a); }
    int n = 0;
    for (const auto& a : v) { if (a > 1.0f) continue; n++; if (n == 3) break; }
    out[i] = s + 100.0f * m + 1000.0f * float(n);
    """,
    {"x": RNG.standard_normal(128).astype(np.float32)},
    [("out", (32,), np.float32)],
    lambda x: [_scale_ref(x)],
    atol=1e-4)


def _scale_ref(x):
    v = x.reshape(32, 4) * 2.0 + 1.0
    v = v - x.reshape(32, 4)[:, :1]
    n = np.array([_count_until(r) for r in v])     # elements <= 1 in order, stopping at 3
    return v.sum(1) + 100.0 * v.max(1) + 1000.0 * n


def _count_until(row):
    n = 0
    for a in row:
        if a > 1.0:
            continue
        n += 1
        if n == 3:
            break
    return n


SHARED_AND_VECTORS = MSLCase(
    "range_for_ref_shared",
    """
    uint l = thread_position_in_threadgroup.x;
    threadgroup float tile[8];
    if (l == 0) {
        for (int k = 0; k < 8; ++k) tile[k] = x[k];
        for (threadgroup float& t : tile) t = t * t;      // the thread 0 squares the tile
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float4 q[2] = {float4(x[l]), float4(1.0f, 2.0f, 3.0f, 4.0f)};
    for (thread float4& e : q) e = e * 0.5f + tile[l % 8];
    float acc = 0.0f;
    for (auto e : q) acc += e.x + e.w;
    out[l] = acc;
    """,
    {"x": RNG.standard_normal(32).astype(np.float32)},
    [("out", (32,), np.float32)],
    lambda x: [(lambda t: (x * 0.5 + t) * 2 + (0.5 + t) + (2.0 + t))((x[:8] ** 2)[np.arange(32) % 8])],
    atol=1e-5)

CASES = [SCALE_IN_PLACE, SHARED_AND_VECTORS]
test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)


def test_a_reference_of_another_type_is_named():
    k = mb.metal_kernel(name="rf_bad", input_names=["x"], output_names=["out"],
                        source="float v[2] = {x[0], 1.0f};\nfor (thread int& a : v) a = 0;\nout[0] = v[0];")
    with pytest.raises(KernelTypeError, match=r"int& cannot refer to float data(.|\n)*line 2"):
        k(inputs=[mx.zeros(4)], output_shapes=[(1,)], output_dtypes=[mx.float32], grid=(1, 1, 1),
          threadgroup=(1, 1, 1), backend="sim")
