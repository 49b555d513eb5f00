"""Objects in expressions: ``c ? a : b`` of objects (only the side taken is evaluated),
member calls chained through returned references (``acc.add(v).add(w).scale(s)``, ``return
*this;``; also a member object's reference, ``o.inner().bump()``), and static ``constexpr``
member functions as constants (``float v[Cfg::n()]``). Our own kernels vs NumPy, round trip,
printed CUDA."""
import numpy as np

from msl_cases import MSLCase, three_ways

RNG = np.random.default_rng(1503)

HEADER = """
struct P { float a, b; };
P counted(thread int& n, float v) { n += 1; return P{v, 2.0f * v}; }
float total(P p) { return p.a + p.b; }

template <typename T> struct Acc {
  T v; int n;
  thread Acc& add(T a) { v += a; n++; return *this; }
  thread Acc& scale(T s) { v *= s; return *this; }
  T mean() const { return v / T(n); }
};
struct Inner { float w; thread Inner& bump(float d) { w += d; return *this; } };
struct Outer { Inner in; thread Inner& inner() { return in; } };
struct Cfg {
  static constexpr int n() { return 4; }
  static constexpr int twice(int k) { int r = 2 * k; return r; }
};
"""

SELECT = MSLCase(
    "object_select",
    """
    uint i = thread_position_in_grid.x;
    int calls = 0;
    P r = (x[i] > 0.0f) ? counted(calls, x[i]) : counted(calls, -x[i]);   // one call, not two
    P p{1.0f, 2.0f}, q{3.0f, 4.0f}, s{5.0f, 6.0f};
    P t{0.0f, 0.0f};
    t = i < 8 ? p : (i < 20 ? q : s);
    auto u = (i % 2) ? P{x[i], 1.0f} : q;
    out[i] = r.b + 100.0f * float(calls) + 1000.0f * total(t) + ((i % 3) ? p : s).b * u.a;
    """,
    {"x": RNG.standard_normal(32).astype(np.float32)},
    [("out", (32,), np.float32)],
    lambda x: [_select_ref(x)],
    header=HEADER, atol=1e-3)


def _select_ref(x):
    i = np.arange(32)
    r_b = 2.0 * np.abs(x)
    t = np.where(i < 8, 3.0, np.where(i < 20, 7.0, 11.0))
    u_a = np.where(i % 2 == 1, x, 3.0)
    side_b = np.where(i % 3 != 0, 2.0, 6.0)
    return r_b + 100.0 + 1000.0 * t + side_b * u_a


CHAINS = MSLCase(
    "member_chains",
    """
    uint i = thread_position_in_grid.x;
    Acc<float> a{0.0f, 0};
    a.add(x[i]).add(1.0f).scale(2.0f);
    Acc<float> b{0.0f, 0};
    float m = b.add(x[i]).add(3.0f).mean();
    Outer o{{x[i]}};
    o.inner().bump(1.0f).bump(0.5f);
    float v[Cfg::n()];
    for (int k = 0; k < Cfg::n(); ++k) v[k] = float(k);
    constexpr int M = Cfg::twice(3);
    threadgroup float tile[M * 32];
    tile[M * thread_index_in_threadgroup + M - 1] = v[3];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = a.v + 100.0f * float(a.n) + 1000.0f * m + o.in.w + tile[M * thread_index_in_threadgroup + 5];
    """,
    {"x": RNG.standard_normal(32).astype(np.float32)},
    [("out", (32,), np.float32)],
    lambda x: [(x + 1.0) * 2.0 + 200.0 + 1000.0 * (x + 3.0) / 2.0 + x + 1.5 + 3.0],
    header=HEADER, atol=1e-2)

CASES = [SELECT, CHAINS]
test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)
