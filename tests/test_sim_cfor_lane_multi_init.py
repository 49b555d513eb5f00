"""A C ``for`` declaring two counters, one of them the lane (``for (int i = 0, d = lane; i < K;
i++, d += 32)``), with the bounds guard inside the body (``if (d < Dim)``) or as the loop test,
on a 1-D launch: the lane-linear analysis must not keep ``d`` = offset + lane after the step,
else the guard is a scalar True on every iteration (a silent wrong sum of padding elements, or
a runaway loop when ``d < Dim`` is the test -- TurboQuant's value-dim loops in mlx-vlm).
Against NumPy, plain and checked, with Dim a multiple of 32 and not, and a thread-local array
filled by the same loop form."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb

BODY = """
auto lane = thread_position_in_grid.x;
float acc = 0.0f;
for (int i = 0, d = lane; i < PER_LANE; i++, d += 32) {
    if (d < Dim) acc += x[d];
}
guarded[lane] = acc;
float vals[PER_LANE] = {};
int count = 0;
for (int i = 0, d = lane; d < Dim; i++, d += 32) {
    vals[i] = x[d] * 2.0f;
    count++;
}
float s = 0.0f;
for (int i = 0; i < PER_LANE; i++) s += vals[i];
tested[lane] = s + 1000.0f * float(count);
"""


@pytest.mark.parametrize("checked", [False, True])
@pytest.mark.parametrize("dim", [96, 160, 80, 19])
def test_two_counter_lane_c_for(monkeypatch, checked, dim):
    monkeypatch.setenv("METALBENCH_MAX_STEPS", "20000")   # the bug would be a runaway, not a hang
    per_lane = (dim + 31) // 32 + 2                          # more slots than dims: the guard matters
    x = np.random.default_rng(dim).standard_normal(per_lane * 32).astype(np.float32)
    k = mb.metal_kernel(name="cfor_two_counters", input_names=["x"], output_names=["guarded", "tested"],
                        source=BODY)
    guarded, tested = k(inputs=[mx.array(x)], template=[("Dim", dim), ("PER_LANE", per_lane)], grid=(32, 1, 1),
                        threadgroup=(32, 1, 1), output_shapes=[(32,), (32,)], output_dtypes=[mx.float32] * 2,
                        checked=checked, backend="sim")
    want = np.array([x[l:dim:32].sum() for l in range(32)], np.float32)
    np.testing.assert_allclose(np.asarray(guarded), want, rtol=1e-5, atol=1e-6)
    count = np.array([len(range(l, dim, 32)) for l in range(32)], np.float32)
    np.testing.assert_allclose(np.asarray(tested), 2 * want + 1000 * count, rtol=1e-5, atol=1e-5)
