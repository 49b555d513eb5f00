"""``p->x`` on a pointer to a vector (clang, hence Metal, reads it as ``(*p).x``): loads and
stores of components through device, thread and reinterpreted pointers, against NumPy,
through the round trip and (on a GPU) the printed CUDA; and passing a lambda to a header
function is refused by name instead of "use of undeclared identifier"."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import MetalbenchError
from msl_cases import MSLCase, three_ways

X = np.random.default_rng(3).standard_normal(64).astype(np.float32)

ARROWS = MSLCase(
    "vector_arrow",
    """
    uint i = thread_position_in_grid.x;                                  // one pair per thread
    const device float2* p2 = (const device float2*)(x) + i;
    device float2* q = (device float2*)(out) + i;
    q->x = 3.0f * p2->x;
    q->x -= p2->x;
    q->y = 3.0f * p2->y;
    float4 v = float4(p2->y, 1.0f, 2.0f, 5.0f);
    thread float4* pv = &v;
    pv->w += 1.0f;
    side[i] = pv->x + pv->w + (p2 + 1)->x * 0.0f;
    """,
    {"x": X},
    [("out", (64,), np.float32), ("side", (32,), np.float32)],
    lambda x: [np.where(np.arange(64) % 2 == 1, 3 * x, 2 * x), x[1::2] + 6.0],
    grid=(31, 1, 1), tg=(31, 1, 1), atol=1e-6, init_value=0.0)


def _ref_arrows(x):
    # 31 threads: (p2 + 1) stays inside x; the last pair and side[31] keep init_value
    out = np.where(np.arange(64) % 2 == 1, 3 * x, 2 * x)
    out[62:] = 0.0
    side = x[1::2] + 6.0
    side[31] = 0.0
    return [out, side]


ARROWS.ref = _ref_arrows

test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways([ARROWS])


@pytest.mark.parametrize("call", ["apply(add)", "apply([&](int k) { s += float(k); })"])
def test_a_lambda_passed_to_a_header_function_is_refused_by_name(call):
    k = mb.metal_kernel(name="lam", input_names=["x"], output_names=["out"],
                        header="template <typename F> inline void apply(thread F& f) { f(1); }",
                        source="uint i = thread_position_in_grid.x;\nfloat s = 0.0f;\n"
                               "auto add = [&](int k) { s += float(k) * x[i]; };\n" + call + ";\nout[i] = s;")
    with pytest.raises(MetalbenchError) as e:
        k(inputs=[mx.array(X)], grid=(64, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(64,)],
          output_dtypes=[mx.float32], backend="sim")
    assert "passing a lambda to the function 'apply'" in str(e.value)
    assert "line 4" in str(e.value)
