"""A C ``for`` whose init starts at the lane (``for (uint t = lane; t < n; t += 32u)``) on a
1-D launch: the simulator's lane-linear analysis (``i`` = offset + lane makes ``i < n`` one
scalar test and ``out[i]`` a slice) took the init as the variable's value inside the loop
too, so the guard stayed true after the update (a runaway loop: Inkling's MoE router writing
its shared-expert weights, found in mlx-vlm) and accesses went to ``out[lane]`` on every
step. Against NumPy, plain and checked, with a break that ends the loop early."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb

BODY = """
uint lane = thread_position_in_grid.x;
float acc = 0.0f;
for (uint t = lane; t < N; t += 32u) {
    out[t] = x[t] * 2.0f + float(lane);
    acc += x[t];
}
part[lane] = acc;
for (uint t = lane; t < N; t += 32u) {
    if (t >= STOP) break;
    cut[t] = float(t);
}
"""


@pytest.mark.parametrize("checked", [False, True])
@pytest.mark.parametrize("n,stop", [(200, 70), (32, 5), (19, 100)])
def test_lane_started_c_for(monkeypatch, checked, n, stop):
    monkeypatch.setenv("METALBENCH_MAX_STEPS", "20000")   # the old bug: a runaway, not a hang
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    k = mb.metal_kernel(name="cfor_lane_var", input_names=["x"], output_names=["out", "part", "cut"], source=BODY)
    out, part, cut = k(inputs=[mx.array(x)], template=[("N", n), ("STOP", stop)], grid=(32, 1, 1),
                       threadgroup=(32, 1, 1), output_shapes=[(n,), (32,), (n,)],
                       output_dtypes=[mx.float32] * 3, init_value=-1.0, checked=checked, backend="sim")
    t = np.arange(n)
    np.testing.assert_allclose(np.asarray(out), x * 2 + t % 32, rtol=1e-6)
    want = np.array([x[i::32].sum() for i in range(32)], np.float32)
    np.testing.assert_allclose(np.asarray(part), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(cut), np.where(t < stop, t, -1).astype(np.float32))
