"""A template function specialised inside another one's body (``wide<IPG>`` inside
``body<M, IPG>``) gets its own IR function for every set of arguments. Before, the outer
body's name bookkeeping forgot the inner function's name, so a second ``body<3, 3>`` named its
``wide<3>`` like the first ``wide<2>``: both calls ran the last one, a wrong answer without an
error (MLX kernels dispatch widths this way: a switch over M calling f<M, IPG>)."""
from __future__ import annotations

import numpy as np
import pytest

import metalbench as mb

HEADER = """
template <int NA>
inline void wide(const device float* x, device float* y, int first) {
    for (int m = 0; m < NA; m++) { y[first + m] += x[first + m] * NA; }
}
template <int M, int IPG>
inline void body(const device float* x, device float* y, int gx) {
    constexpr int TAIL = M % IPG;
    const int first = gx * IPG;
    if (first >= M) { return; }
    if (TAIL == 0 || M - first >= IPG) { wide<IPG>(x, y, first); }
    else { wide<(TAIL >= 2 ? TAIL : 2)>(x, y, first); }
}
"""
SWITCH = """
    const int m = x_shape[0];
    const int gx = (int)thread_position_in_grid.x;
    switch (m) {
        case 2: body<2, 2>(x, y, gx); break;
        case 3: body<3, 3>(x, y, gx); break;
        case 7: body<7, 4>(x, y, gx); break;
        default: break;
    }
"""


def _ref(m, ipg, groups):
    y = np.zeros(m)
    for gx in range(groups):
        first = gx * ipg
        if first >= m:
            continue
        na = ipg if (m % ipg == 0 or m - first >= ipg) else max(m % ipg, 2)
        y[first:first + na] += na
    return y


@pytest.mark.parametrize("m,ipg,groups", [(2, 2, 1), (3, 3, 1), (7, 4, 2)])
def test_each_width_runs_its_own_specialisation(m, ipg, groups):
    k = mb.metal_kernel(name="nested_spec", input_names=["x"], output_names=["y"], source=SWITCH, header=HEADER)
    x = np.ones((m, 4), np.float32)
    (y,) = k(inputs=[x], grid=(groups, 1, 1), threadgroup=(groups, 1, 1), output_shapes=[(m,)],
             output_dtypes=[np.float32], init_value=0, backend="sim")
    np.testing.assert_array_equal(np.asarray(y), _ref(m, ipg, groups))


def test_two_outer_specialisations_in_one_body():
    hdr = """
    template <int NA> inline void add(device float* y) { y[0] += NA; }
    template <int M, int K> inline void outer(device float* y) { add<K>(y); add<M>(y); }
    """
    k = mb.metal_kernel(name="nested_two", input_names=["x"], output_names=["y"],
                        source="outer<2, 3>(y); outer<5, 7>(y); add<3>(y);", header=hdr)
    (y,) = k(inputs=[np.ones(8, np.float32)], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1,)],
             output_dtypes=[np.float32], init_value=0, backend="sim")
    assert float(np.asarray(y)[0]) == 2 + 3 + 5 + 7 + 3
