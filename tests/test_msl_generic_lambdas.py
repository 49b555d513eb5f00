"""Generic lambdas, ``[](auto v) { ... }``: each call deduces the ``auto`` parameters' types
from its arguments, as a template's call does (int arithmetic for an int, float for a float,
a vector's members for a vector), by value, ``thread auto&`` (writes reach the argument) and
``const thread auto&``, with captures. Our own kernels vs NumPy, round trip, printed CUDA."""
import numpy as np

from msl_cases import MSLCase, three_ways

RNG = np.random.default_rng(1505)

GENERIC = MSLCase(
    "generic_lambdas",
    """
    uint i = thread_position_in_grid.x;
    float s = 2.0f;
    auto half_of = [](auto v) { return v / 2; };             // int division for an int
    auto scaled = [&](auto a, auto b) { return a * b * s; };
    auto sum2 = [](const thread auto& v) { return v.x + v.y; };
    auto bump = [](thread auto& v) { v += 1; };
    float a = x[i];
    int n = int(i);
    bump(a);
    bump(n);
    out[i] = half_of(n) + half_of(x[i]) + scaled(x[i], 3) + sum2(float2(a, 10.0f)) + 100.0f * float(n);
    """,
    {"x": RNG.standard_normal(32).astype(np.float32)},
    [("out", (32,), np.float32)],
    lambda x: [(np.arange(32) + 1) // 2 + x / 2 + x * 3 * 2 + (x + 1 + 10) + 100.0 * (np.arange(32) + 1)],
    atol=1e-4)

CASES = [GENERIC]
test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)
