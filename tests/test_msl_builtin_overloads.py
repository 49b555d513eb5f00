"""Header functions that overload Metal's builtin names. A kernel sees both its header's
functions and Metal's (``using namespace metal``), and C++ overload resolution picks per
call: a header ``max(float4, float)`` takes ``max(float4(v), 0.25f)`` while ``max(x, 0.25f)``
stays Metal's; a two-argument ``exp(a, b)`` template leaves ``exp(x)`` to Metal;
``metal::f`` sees only what the header puts in namespace metal. Before, any header function
named like a builtin hid the builtin from every call, ``metal::`` ones included ("no
overload of 'exp' takes 1 argument(s)", or the header's float4 result where a float was
meant). Against NumPy, through the round trip and (on a GPU) the printed CUDA."""
import mlx.core as mx
import numpy as np

import metalbench as mb
from msl_cases import MSLCase, three_ways

HEADER = """
inline float4 max(float4 a, float b) {
    return float4(max(a.x, b), max(a.y, b), max(a.z, b), max(a.w, b)) + 1.0f;
}
template <typename T> inline T exp(T a, T b) { return a * b; }
namespace metal {
inline int abs(int a, int b) { return metal::abs(a) + metal::abs(b); }
}
"""

BODY = """
uint i = thread_position_in_grid.x;
float4 m = max(float4(x[i]), 0.25f);
float s = max(x[i], 0.25f);
float e = exp(x[i], 3.0f) + exp(x[i]) + metal::exp(0.5f);
int a = metal::abs(k[i], 3) + metal::abs(k[i]) + abs(k[i]);
f[i] = m.x + m.w + s + e;
n[i] = a;
"""

RNG = np.random.default_rng(14)
X = RNG.standard_normal(64).astype(np.float32)
K = RNG.integers(-40, 40, 64).astype(np.int32)


def _ref(x, k):
    mx_ = np.maximum(x, np.float32(0.25))
    return [3 * mx_ + 2 + 3 * x + np.exp(x) + np.exp(np.float32(0.5)), 3 * np.abs(k) + 3]


OVERLOADS = MSLCase("builtin_overloads", BODY, {"x": X, "k": K},
                    [("f", (64,), np.float32), ("n", (64,), np.int32)], _ref, grid=(64, 1, 1), header=HEADER,
                    atol=1e-5)

test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways([OVERLOADS])


def _run(header, body):
    k = mb.metal_kernel(name="overload_probe", input_names=["x"], output_names=["out"], source=body, header=header)
    return np.asarray(k(inputs=[mx.array(X)], grid=(64, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(64,)],
                        output_dtypes=[mx.float32], backend="sim")[0])


def test_qualified_metal_call_skips_a_global_header_function():
    # metal::max is Metal's even where the header defines a global max of the same types
    got = _run("inline float max(float a, float b) { return 99.0f; }",
               "uint i = thread_position_in_grid.x; out[i] = metal::max(x[i], 0.0f);")
    np.testing.assert_array_equal(got, np.maximum(X, 0))


def test_header_function_of_exact_types_is_taken():
    # a non-template header function matching exactly (MLX-style own erf) is the one called
    got = _run("inline float erf(float a) { return a + 42.0f; }",
               "uint i = thread_position_in_grid.x; out[i] = erf(x[i]);")
    np.testing.assert_allclose(got, X + 42, rtol=1e-6)


def test_argument_with_a_call_keeps_the_header_function():
    # arguments with calls are not typed ahead (they may have effects): the header function
    # of the right arity is taken, as before
    got = _run("inline float4 max(float4 a, float b) { return a + b; }\ninline float twice(float v) { return 2 * v; }",
               "uint i = thread_position_in_grid.x; out[i] = max(float4(twice(x[i])), 1.0f).y;")
    np.testing.assert_allclose(got, 2 * X + 1, rtol=1e-6)
