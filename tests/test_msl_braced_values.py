"""A braced list whose type comes from where it goes (C++'s copy-list-initialisation):
``return {a, b};`` from a function returning a vector, a scalar, a struct or a
``complex64_t``; ``v = {x, y};`` and ``p = {p.b, p.a};`` (a temporary first: the list may
read what it is assigned to). These were refused ("a {...} list needs a declared type
here"). Our own kernels vs NumPy, round trip, printed CUDA."""
import numpy as np
import pytest

import metalbench as mb
import mlx.core as mx

from msl_cases import MSLCase, three_ways

RNG = np.random.default_rng(1603)
N = 32
X = RNG.standard_normal(N).astype(np.float32)

RETURNS = MSLCase(
    "braced_returns",
    """
    uint i = thread_position_in_grid.x;
    float2 v = pair(x[i]);
    P p = make(x[i]);
    Q q = wrap(x[i]);
    out[i] = v.x + 10.0f * v.y + sq(x[i]) + p.a - p.b + q.v.y + float(q.n);
    """,
    {"x": X},
    [("out", (N,), np.float32)],
    lambda x: [np.where(x > 1, 0, x + 10) + x * x + (2 * x - 3) + x + 3],
    header="""
    struct P { float a; float b; };
    struct Q { float2 v; int n; };
    inline float2 pair(float a) { if (a > 1.0f) return {}; return {a, 1.0f}; }
    inline float sq(float a) { return {a * a}; }
    inline P make(float a) { return {2.0f * a, 3.0f}; }
    inline Q wrap(float a) { return {float2(1.0f, a), 3}; }
    """, atol=1e-5)

ASSIGNS = MSLCase(
    "braced_assignments",
    """
    uint i = thread_position_in_grid.x;
    float2 v;
    v = {x[i], 2.0f};
    float4 w = float4(1.0f);
    w = {v, v.yx};
    P p = {x[i], 5.0f};
    p = {p.b, p.a};                 // reads p: a temporary first
    out[i] = v.x + w.y * w.z + 100.0f * p.a + p.b;
    """,
    {"x": X},
    [("out", (N,), np.float32)],
    lambda x: [x + 2 * 2 + 500 + x],
    header="struct P { float a; float b; };", atol=1e-4)

CASES = [RETURNS, ASSIGNS]
test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)


def _run(source, header=""):
    k = mb.metal_kernel(name="braced_k", input_names=["x"], output_names=["out"], source=source, header=header)
    x = mx.array(X[:8])
    return np.array(k(inputs=[x], output_shapes=[(8,)], output_dtypes=[mx.float32], grid=(8, 1, 1),
                      threadgroup=(8, 1, 1), backend="sim")[0])


def test_a_complex_value_returned_as_a_braced_list():
    o = _run("uint i = thread_position_in_grid.x;\ncomplex64_t c = mk(x[i]);\nout[i] = c.real + 10 * c.imag;",
             "inline complex64_t mk(float a) { return {a, 2.0f}; }")
    np.testing.assert_allclose(o, X[:8] + 20, rtol=1e-6)


def test_a_list_too_long_for_a_scalar_is_an_error():
    with pytest.raises(mb.KernelTypeError, match=r"a \{\.\.\.\} list of 2 values cannot initialise a float"):
        _run("uint i = thread_position_in_grid.x;\nout[i] = f(x[i]);", "inline float f(float a) { return {a, a}; }")
