"""Header functions whose return type is ``auto``: a trailing ``-> R`` (also ``-> decltype(..)``
of the parameters) or deduced from the first return statement -- of scalars, vectors, on
member functions, void ones -- each against NumPy, through the round trip and, on a GPU, the
printed CUDA. Before, every such function crashed inside the simulator ("'str' object has
no attribute 'np'")."""
import numpy as np

from msl_cases import MSLCase, three_ways

RNG = np.random.default_rng(11)
X = RNG.standard_normal(64).astype(np.float32)


def _scaled(x):
    # y = 3x via the trailing return, + x^2 via decltype, then a deduced vector's z (2x) and a
    # deduced branchy scalar (x > 0: 4x, else -x)
    return [3 * x + x * x + 2 * x + np.where(x > 0, 4 * x, -x)]


TRAILING_AND_DEDUCED = MSLCase(
    "auto_returns",
    """
    uint i = thread_position_in_grid.x;
    float v = x[i];
    float4 w = twice4(float4(v, 0.0f, v, 1.0f));
    y[i] = thrice(v) + mul(v, v) + w.z + branchy(v);
    """,
    {"x": X},
    [("y", (64,), np.float32)],
    _scaled, grid=(64, 1, 1), tg=(32, 1, 1), atol=1e-5,
    header="""
    template <typename T> auto thrice(T v) -> T { return v * T(3); }
    template <typename T> inline auto mul(T a, T b) -> decltype(a * b) { return a * b; }
    inline auto twice4(float4 v) { return v * 2.0f; }
    inline auto branchy(float v) {
        if (v > 0.0f) return 4.0f * v;
        return -v;
    }
    """)


def _members(x, k):
    return [np.where(np.arange(64) % 2 == 0, 2 * x + k, -1.0).astype(np.float32)]


MEMBERS_AND_VOID = MSLCase(
    "auto_members",
    """
    uint i = thread_position_in_grid.x;
    Acc a{x[i]};
    clear(y, i);                 // a deduced void function
    if (i % 2 == 0) {
        y[i] = a.doubled() + a.plus(k);
    }
    """,
    {"x": X, "k": np.array(0.5, np.float32)},
    [("y", (64,), np.float32)],
    _members, grid=(64, 1, 1), tg=(32, 1, 1), atol=1e-5,
    header="""
    struct Acc {
        float v;
        auto doubled() const -> float { return v + v; }
        auto plus(float k) const { return k + 0.0f * v; }
    };
    inline auto clear(device float* p, uint j) { p[j] = -1.0f; }
    """)

CASES = [TRAILING_AND_DEDUCED, MEMBERS_AND_VOID]
test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)
