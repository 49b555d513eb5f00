"""C++'s alternative tokens in MSL bodies and headers (``and``, ``or``, ``not``, ``bitand``, ``bitor``,
``xor``, ``compl``, ``not_eq``, ``and_eq``, ``or_eq``, ``xor_eq``): they are the operators they spell,
``and``/``or`` short-circuit, and names that merely contain them (``or_``, ``band``) stay names.
Each kernel: simulator vs NumPy (unchecked and checked), round trip, printed MSL/CUDA checks."""
import numpy as np

from msl_cases import MSLCase, three_ways

RNG = np.random.default_rng(5)
X = RNG.standard_normal(32).astype(np.float32)

BITS = MSLCase(
    "alt_bits",
    """
    uint i = thread_position_in_grid.x;
    int a = int(i) bitand 7;
    int b = compl a;
    int c = a bitor 16;
    c xor_eq 5;
    c and_eq 29;
    c or_eq 64;
    out[i] = float(a xor 3) + float(b) * 100.0f + float(c) * 1000.0f + ((a not_eq 2) ? 0.5f : 0.25f);
    """,
    {"x": X},
    [("out", (32,), np.float32)],
    lambda x: [((lambda a: (a ^ 3) + (~a) * 100 + ((((a | 16) ^ 5) & 29) | 64) * 1000
                 + np.where(a != 2, 0.5, 0.25))(np.arange(32) & 7)).astype(np.float32)])

# the right side of `and` reads x[i] only where i < n: 40 threads over 32 elements, checked clean
LOGIC = MSLCase(
    "alt_logic",
    """
    uint i = thread_position_in_grid.x;
    float or_ = 0.5f;                      // a name, not the operator
    bool band = i < n and x[i] > 0.0f;
    bool far = i >= n or not (x[i] > -1.0f and x[i] < 1.0f);
    out[i] = (band ? 1.0f : 0.0f) + (far ? 10.0f : 0.0f) + or_;
    """,
    {"x": X, "n": np.uint32(32)},
    [("out", (40,), np.float32)],
    lambda x, n: [np.concatenate([(x > 0) + 10.0 * (np.abs(x) >= 1) + 0.5, np.full(8, 10.5)]).astype(np.float32)],
    grid=(40, 1, 1), tg=(40, 1, 1))

HEADER = MSLCase(
    "alt_header",
    """
    uint i = thread_position_in_grid.x;
    out[i] = outside(x[i], 1.0f) ? 1.0f : 0.0f;
    """,
    {"x": X},
    [("out", (32,), np.float32)],
    lambda x: [(np.abs(x) > 1).astype(np.float32)],
    header="inline bool outside(float v, float lim) { return v < -lim or v > lim; }")

CASES = [BITS, LOGIC, HEADER]
test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)
