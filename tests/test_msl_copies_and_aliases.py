"""C++'s copy and reference rules where the simulator got them wrong silently (found probing
real kernels' constructs): a lambda capturing a pointer, an array or an object by copy
(``[=]``, ``[p]``) keeps its own copy -- later changes on either side stay on that side; one
local passed to two reference parameters (``g(v, v)``) is one variable inside the call, also
when one of them is ``const``; a pointer passed by reference that the callee moves is
refused by name (the caller's pointer would have to move too). Our own kernels vs NumPy,
round trip, printed CUDA."""
import numpy as np
import pytest

import metalbench as mb
import mlx.core as mx

from msl_cases import MSLCase, three_ways

RNG = np.random.default_rng(1606)
N = 32
X = RNG.standard_normal(N).astype(np.float32)

CAPTURES = MSLCase(
    "lambda_captures_by_copy",
    """
    uint i = thread_position_in_grid.x;
    const device float* p = x + i;
    float a[2] = {x[i], 1.0f};
    S s{x[i]};
    auto f = [=]() { return *p + 10.0f * a[0] + 100.0f * s.a; };
    auto g = [p, a]() mutable { a[1] = -7.0f; p = x; return *p + a[1]; };
    p = x + (i + 1) % 32;        // the copies keep what they were given
    a[0] = -1.0f;
    s.a = -1.0f;
    float r = g();               // and the caller keeps what it has
    out[i] = f() + 1000.0f * (*p) + a[1] + r;
    """,
    {"x": X}, [("out", (N,), np.float32)],
    lambda x: [111 * x + 1000 * np.roll(x, -1) + 1.0 + x[0] - 7.0],
    header="struct S { float a; };", atol=2e-3)

ALIASES = MSLCase(
    "one_local_for_two_references",
    """
    uint i = thread_position_in_grid.x;
    float v = x[i];
    two(v, v);                    // (v + 1) * 2
    int n = int(i);
    float w = x[i];
    float old = bump_and_read(w, w);
    out[i] = v + 100.0f * (old - w) + 1000.0f * float(twice(n, n));
    """,
    {"x": X}, [("out", (N,), np.float32)],
    lambda x: [(x + 1) * 2 + 0.0 + 1000.0 * (np.arange(N) + 1) * 2],
    header="""
    inline void two(thread float& a, thread float& b) { a += 1.0f; b *= 2.0f; }
    inline float bump_and_read(thread float& w, const thread float& r) { w += 1.0f; return r; }
    inline int twice(thread int& a, thread int& b) { a += 1; b *= 2; return a; }
    """, atol=1e-3)

CONST_TWICE = MSLCase(
    "one_input_for_two_const_references",
    """
    // a scalar input passed to two const references: read-only, so no copy to write back
    // (a first version wrote the copy back to the input: the printed CUDA did not compile)
    uint i = thread_position_in_grid.x;
    out[i] = add2(n, n) + x[i];
    """,
    {"x": X, "n": np.array(5, np.int32)}, [("out", (N,), np.float32)],
    lambda x, n: [x + 10.0],
    header="inline int add2(const constant int& a, const constant int& b) { return a + b; }", atol=1e-6)

CASES = [CAPTURES, ALIASES, CONST_TWICE]
test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)


def test_moving_a_pointer_passed_by_reference_is_refused_by_name():
    k = mb.metal_kernel(name="ptrref", input_names=["x"], output_names=["out"],
                        header="inline void adv(const device float* thread& p, uint n) { p += n; }",
                        source="uint i = thread_position_in_grid.x;\nconst device float* p = x;\nadv(p, i);\nout[i] = *p;")
    with pytest.raises(mb.KernelSyntaxError, match=r"moving 'p', a pointer passed by reference"):
        k(inputs=[mx.zeros(16)], output_shapes=[(16,)], output_dtypes=[mx.float32], grid=(16, 1, 1),
          threadgroup=(16, 1, 1), backend="sim")
