"""Metal's ``frexp(x, e)`` and ``modf(x, ip)`` in MSL bodies, one composition shared with the
Numba layer's ``math.frexp``/``math.modf`` (``semantics.float_parts``): against NumPy on
normal, subnormal, signed-zero, infinite and NaN inputs (signs of zero included), through the
round trip and, on a GPU, the printed CUDA."""
import mlx.core as mx
import numpy as np

import metalbench as mb
from msl_cases import MSLCase, three_ways

VALS = np.array([0.1, -3.75, 1e-40, -2.5e-39, 0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 6e37, -2.0,
                 0.5, 123456.789, -7.0, 3.0e-45], np.float32)
X = np.concatenate([VALS, np.random.default_rng(2).standard_normal(16).astype(np.float32) * 1e3])

BODY = """
uint i = thread_position_in_grid.x;
int ex;
m[i] = frexp(x[i], ex);
e[i] = isfinite(x[i]) ? ex : 0;
float whole;
fr[i] = modf(x[i], whole);
ip[i] = whole;
"""


def _ref(x):
    m, e = np.frexp(x)
    fr, ip = np.modf(x)
    return [m, np.where(np.isfinite(x), e, 0).astype(np.int32), fr, ip]


PARTS = MSLCase("float_parts", BODY, {"x": X},
                [("m", (32,), np.float32), ("e", (32,), np.int32), ("fr", (32,), np.float32),
                 ("ip", (32,), np.float32)], _ref, atol=0)

test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways([PARTS])


def test_signs_of_zero_follow_c():
    # modf(-2.0) is -0.0 (C keeps x's sign on the fraction), frexp(-0.0) is -0.0
    k = mb.metal_kernel(name="float_parts_signs", input_names=["x"], output_names=["m", "e", "fr", "ip"], source=BODY)
    outs = k(inputs=[mx.array(X)], grid=(32, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(32,)] * 4,
             output_dtypes=[mx.float32, mx.int32, mx.float32, mx.float32], backend="sim")
    m, _, fr, ip = (np.asarray(o) for o in outs)
    want = _ref(X)
    for got, w in ((m, want[0]), (fr, want[2]), (ip, want[3])):
        np.testing.assert_array_equal(np.signbit(got), np.signbit(w))
