"""Metal's simd_shuffle_and_fill_down/up(data, filling, delta[, modulo]) in MSL bodies: lanes
past a segment's end (before its start) take ``filling`` from the segment's other end. Our own
kernels against NumPy models of Metal's rule, sim plain and checked."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import KernelTypeError


def _model(x, fill, fn, d, m):
    out = np.zeros_like(x)
    for lane_g in range(x.size):
        sg, ln = lane_g - lane_g % 32, lane_g % 32
        li, base = ln % m, sg + ln - ln % m
        j = li + d if fn == "down" else li - d
        out[lane_g] = x[base + j] if 0 <= j < m else fill[base + (j - m if fn == "down" else j + m)]
    return out


@pytest.mark.parametrize("fn,d,m", [("down", 3, None), ("up", 5, None), ("down", 1, 8), ("up", 2, 4),
                                    ("down", 16, 16), ("up", 0, 32)])
@pytest.mark.parametrize("checked", [False, True])
def test_shuffle_and_fill_matches_metals_rule(fn, d, m, checked):
    args = f"x[i], y[i], {d}" + (f", {m}" if m else "")
    k = mb.metal_kernel(name="fill", input_names=["x", "y"], output_names=["out"],
                        source=f"uint i = thread_position_in_grid.x;\nout[i] = simd_shuffle_and_fill_{fn}({args});")
    rng = np.random.default_rng(d)
    x, y = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    out = k(inputs=[mx.array(x), mx.array(y)], grid=(64, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(64,)],
            output_dtypes=[mx.float32], backend="sim", checked=checked)[0]
    np.testing.assert_array_equal(np.array(out), _model(x, y, fn, d, m or 32))


def test_warp_sum_with_zero_fill_and_vectors():
    # a tree reduction that pulls zeros in past the end (lane 0 ends with the sum), on a float2
    hdr = """
    inline float2 warp_sum(float2 v) {
        for (ushort off = 16; off > 0; off /= 2) v += simd_shuffle_and_fill_down(v, float2(0.), off);
        return v;
    }"""
    src = """uint i = thread_position_in_grid.x;
    float2 s = warp_sum(float2(x[i], 2.0f * x[i]));
    if (thread_index_in_simdgroup == 0) { out[2 * (i / 32)] = s.x; out[2 * (i / 32) + 1] = s.y; }"""
    k = mb.metal_kernel(name="wsum", input_names=["x"], output_names=["out"], source=src, header=hdr)
    x = np.random.default_rng(0).standard_normal(96).astype(np.float32)
    for checked in (False, True):
        out = np.array(k(inputs=[mx.array(x)], grid=(96, 1, 1), threadgroup=(96, 1, 1), output_shapes=[(6,)],
                         output_dtypes=[mx.float32], backend="sim", checked=checked)[0])
        want = np.stack([x.reshape(3, 32).sum(1), 2 * x.reshape(3, 32).sum(1)], 1).reshape(-1)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_wrong_arity_names_the_call():
    k = mb.metal_kernel(name="bad", input_names=["x"], output_names=["out"],
                        source="out[0] = simd_shuffle_and_fill_up(x[0], 1.0f);")
    with pytest.raises(KernelTypeError, match=r"simd_shuffle_and_fill_up\(data, filling_data, delta\[, modulo\]\)"):
        k(inputs=[mx.zeros(1)], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1,)],
          output_dtypes=[mx.float32], backend="sim")
