"""Metal's named constants (issue 13): the half constants (MAXHALF, HALF_MIN, HALF_EPSILON,
HUGE_VALH, M_*_H) with half type, the narrow integer limits (CHAR_BIT, UCHAR_MAX, SHRT_MAX ...),
the float/half characteristics (FLT_MANT_DIG, HALF_MAX_EXP ...), LONG_MAX/ULONG_MAX, on the
simulator vs NumPy (unchecked and checked), a round trip through the printed MSL, the libclang
checks, and the printed CUDA on a GPU machine."""
import math

import numpy as np

from msl_cases import MSLCase, three_ways

RNG = np.random.default_rng(62)

HALF_CONSTS = MSLCase(
    "half_consts",
    """
    uint i = thread_position_in_grid.x;
    half h = half(x[i]);
    // a half times a half constant stays half: rounds to half, as on the GPU
    auto r = h * M_SQRT2_H;
    out[i] = float(r) + float(clamp(h, -MAXHALF, MAXHALF)) * 0.0f
           + (h > HALF_MIN ? 1.0f : 0.0f) + float(HALF_EPSILON) * 1024.0f
           + (isinf(HUGE_VALH) ? 100.0f : 0.0f) + float(M_PI_H) * 0.0f;
    """,
    {"x": RNG.uniform(-2, 2, 32).astype(np.float32)},
    [("out", (32,), np.float32)],
    lambda x: [(x.astype(np.float16) * np.float16(math.sqrt(2))).astype(np.float32)
               + (x.astype(np.float16) > np.float16(2.0 ** -14)) + 1.0 + 100.0],
    atol=1e-6)

LIMITS = MSLCase(
    "int_limits",
    """
    uint i = thread_position_in_grid.x;
    int v = int(w[i]) - 300;
    int c = clamp(v, int(SCHAR_MIN), int(SCHAR_MAX)) + clamp(v, 0, int(UCHAR_MAX)) * 1000;
    out[i] = c + CHAR_BIT + (SHRT_MAX - SHRT_MIN == USHRT_MAX ? 1 : 0) + FLT_MANT_DIG + HALF_MAX_EXP
           + (ULONG_MAX == 0xffffffffffffffffUL ? 1 : 0) + (LONG_MIN < 0 ? 1 : 0);
    """,
    {"w": RNG.integers(0, 700, 32).astype(np.int32)},
    [("out", (32,), np.int32)],
    lambda w: [np.clip(w - 300, -128, 127) + np.clip(w - 300, 0, 255) * 1000 + 8 + 1 + 24 + 16 + 1 + 1],
    atol=0)

test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways([HALF_CONSTS, LIMITS])
