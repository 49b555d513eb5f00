"""Direct initialisation, ``T x(args...);``, which is ``T(args...)``: every argument of a
vector's (``float3 p(a, b, c);`` gave ``float3(a)`` when the grammar read an argument list:
a silent wrong answer), in a body and in a header function, also where the grammar reads a
function declaration (C++'s most vexing parse, ``float3 p(x[i], y, z);``); and ``= {}`` on
a declarator followed by another (``float a[3] = {}, s = 2.0f;``), which was read as a
default argument. Our own kernels vs NumPy, round trip, printed CUDA."""
import numpy as np
import pytest

import metalbench as mb
import mlx.core as mx

from msl_cases import MSLCase, three_ways

RNG = np.random.default_rng(1602)
N = 32
X = RNG.standard_normal(3 * N).astype(np.float32)

BODY = MSLCase(
    "direct_init_in_a_body",
    """
    uint i = thread_position_in_grid.x;
    float3 lit(1.0f, 2.0f, 3.0f);                          // an argument list
    float3 p(x[3 * i], x[3 * i + 1], x[3 * i + 2]);        // read as a function declaration
    float a = x[3 * i], b = x[3 * i + 1];
    float2 q(a, b);                                        // names only: also read as one
    float4 v(q, lit.zy);                                   // vector parts
    float3 s(a);                                           // one scalar fills every component
    int n(i * 2u);
    const float2 c(2.0f, 4.0f);
    out[i] = lit.x * 1.0f + lit.y * 10.0f + lit.z * 100.0f + p.x + 2.0f * p.y + 3.0f * p.z
             + v.x * v.y + v.z - v.w + s.x + s.y + s.z + float(n) + c.y / c.x;
    """,
    {"x": X},
    [("out", (N,), np.float32)],
    lambda x: [321.0 + x[0::3] + 2 * x[1::3] + 3 * x[2::3] + x[0::3] * x[1::3] + 3.0 - 2.0 + 3 * x[0::3]
               + 2.0 * np.arange(N) + 2.0],
    atol=1e-4)

HEADER = MSLCase(
    "direct_init_in_a_header_function",
    """
    uint i = thread_position_in_grid.x;
    out[i] = f(x[3 * i], x[3 * i + 2]);
    """,
    {"x": X},
    [("out", (N,), np.float32)],
    lambda x: [x[0::3] * 2 + x[2::3] * 3 + 5],
    header="""
    inline float f(float a, float b) {
      float3 p(a, 0.0f, b);
      float3 w(2.0f, 1.0f, 3.0f);
      float2 k(p.y, 5.0f);
      return dot(p, w) + k.x + k.y;
    }
    """, atol=1e-5)

EMPTY_BRACES = MSLCase(
    "empty_braces_then_another_declarator",
    """
    uint i = thread_position_in_grid.x;
    float a[3] = {}, s = 2.0f;
    float g[2], h[4] = {};
    g[0] = 1.0f; g[1] = 1.0f;
    a[1] += x[i];
    out[i] = a[0] + a[1] + a[2] + s + h[3] + g[0] + g[1];
    """,
    {"x": X[:N]},
    [("out", (N,), np.float32)],
    lambda x: [x + 4.0], atol=1e-6)

CASES = [BODY, HEADER, EMPTY_BRACES]
test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)


def _run(source):
    k = mb.metal_kernel(name="direct_k", input_names=["x"], output_names=["out"], source=source)
    return k(inputs=[mx.zeros(8)], output_shapes=[(8,)], output_dtypes=[mx.float32], grid=(8, 1, 1),
             threadgroup=(8, 1, 1), backend="sim")


def test_a_scalar_takes_one_value():
    with pytest.raises(mb.KernelTypeError, match=r"a float is initialised from one value, got 2"):
        _run("uint i = thread_position_in_grid.x;\nfloat f(1.0f, 2.0f);\nout[i] = f;")


def test_a_buffer_is_no_vector_component():
    with pytest.raises(mb.KernelTypeError, match=r"'x' is not a value"):
        _run("uint i = thread_position_in_grid.x;\nfloat2 p(x, x);\nout[i] = p.x;")
