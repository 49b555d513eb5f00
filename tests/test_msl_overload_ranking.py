"""Header overloads chosen as C++ chooses them: an exact argument type over a conversion,
a non-template over a template on a tie, a vector overload for a vector. Before, the
first overload that could take the arguments was taken -- a silent wrong answer when
``h(float)`` came before ``h(int)`` and the call was ``h(int(i))``. Against NumPy, round
trip, printed CUDA on a GPU."""
import numpy as np

from msl_cases import MSLCase, three_ways

HEADER = """
inline float h(float v) { return v * 2.0f; }
inline int h(int v) { return v * 3; }
inline half h(half v) { return v * 4.0h; }
inline float2 h(float2 v) { return v * 5.0f; }
template <typename T> inline T g(T v) { return v * T(7); }
inline float g(float v) { return v * 8.0f; }
inline float k(float v) { return v + 0.5f; }
inline uint k(uint v) { return v + 1u; }
inline float p(float a, int j) { return a * float(j); }
inline float p(const device float* a, int j) { return a[j]; }
"""

BODY = """
uint i = thread_position_in_grid.x;
a[i] = float(h(int(i)));               // h(int): 3 i
b[i] = h(x[i]);                        // h(float): 2 x
c[i] = float(h(half(x[i])));           // h(half): 4 x (in half)
d[i] = h(float2(x[i], 1.0f)).x;        // h(float2): 5 x
e[i] = g(x[i]) + float(g(int(i)));     // g(float) non-template 8 x; g<int> 7 i
f[i] = float(k(i)) + p(x, 1) + p(x[i], 2);   // k(uint): i + 1; p(pointer): x[1]; p(float): 2 x
"""

X = np.random.default_rng(11).uniform(-4, 4, 64).astype(np.float32)


def _ref(x):
    i = np.arange(64)
    return [3.0 * i, 2 * x, (x.astype(np.float16) * np.float16(4)).astype(np.float32), 5 * x, 8 * x + 7.0 * i,
            i + 1.0 + x[1] + 2 * x]


CASE = MSLCase("overload_ranking", BODY, {"x": X}, [(n, (64,), np.float32) for n in "abcdef"], _ref,
               grid=(64, 1, 1), header=HEADER, atol=1e-5)

test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways([CASE])


MEMBER_HEADER = """
struct S {
  float h(float v) thread { return v * 2.0f; }
  int h(int v) thread { return v * 3; }
  half h(half v) thread { return v * 4.0h; }
  template <typename T> T g(T v) thread { return v * T(7); }
  float g(float v) thread { return v * 8.0f; }
  static float st(float v) { return v + 1.0f; }
  static int st(int v) { return v + 2; }
};
"""

MEMBER_BODY = """
uint i = thread_position_in_grid.x;
S s;
a[i] = float(s.h(int(i)));
b[i] = s.h(x[i]);
c[i] = float(s.h(half(x[i])));
d[i] = s.g(x[i]) + float(s.g(int(i)));     // the non-template g(float) on a tie with g<float>
e[i] = S::st(x[i]) + float(S::st(int(i)));
"""


def _member_ref(x):
    i = np.arange(64)
    return [3.0 * i, 2 * x, (x.astype(np.float16) * np.float16(4)).astype(np.float32), 8 * x + 7.0 * i,
            x + 1 + i + 2]


MEMBERS = MSLCase("member_overload_ranking", MEMBER_BODY, {"x": X}, [(n, (64,), np.float32) for n in "abcde"],
                  _member_ref, grid=(64, 1, 1), header=MEMBER_HEADER, atol=1e-5)

test_members_sim, test_members_round_trip, test_members_printed_cuda = three_ways([MEMBERS])


TEMPLATE_HEADER = """
template <typename T> inline T f(T v) { return v * T(2); }
template <typename T> inline vec<T, 4> f(vec<T, 4> v) { return v * T(3); }
template <typename T, typename U> inline float m(T a, U b) { return float(a) + float(b) * 10.0f; }
template <typename T> inline float m(T a, T b) { return 999.0f; }
"""

TEMPLATE_BODY = """
uint i = thread_position_in_grid.x;
a[i] = f(float4(x[i])).x + f(x[i]) * 100.0f;     // the vec<T, 4> overload is more specialised
b[i] = m(1, x[i]) + m(x[i], x[i]) * 1000.0f;     // m(T, T) cannot take (int, float); takes (float, float)
"""

TEMPLATES = MSLCase("template_partial_ordering", TEMPLATE_BODY, {"x": X}, [("a", (64,), np.float32),
                                                                         ("b", (64,), np.float32)],
                    lambda x: [203 * x, 1 + 10 * x + 999000], grid=(64, 1, 1), header=TEMPLATE_HEADER, atol=1e-3)

test_templates_sim, test_templates_round_trip, test_templates_printed_cuda = three_ways([TEMPLATES])


SPEC_HEADER = """
template <typename T> inline float f(T v) { return 1.0f; }
template <> inline float f<float>(float v) { return 2.0f; }
template <> inline float f(int v) { return 3.0f; }
template <typename U, typename T> inline U cv(T v) { return static_cast<U>(v); }
template <> inline bool cv<bool, float>(float v) { return v > 0.5f; }
template <typename T> struct S { static constexpr constant int v = 1; };
template <typename T> struct S<vec<T, 4>> { static constexpr constant int v = 2; };
template <> struct S<float4> { static constexpr constant int v = 3; };
template <typename T, int N> struct W { static constexpr constant int v = 1; };
template <typename T> struct W<T, 4> { static constexpr constant int v = 2; };
template <> struct W<float, 4> { static constexpr constant int v = 4; };
"""

SPEC_BODY = """
uint i = thread_position_in_grid.x;
a[i] = f(x[i]) * 100.0f + f(int(i)) * 10.0f + f(half(1.0h));     // the specialisations, then the primary
b[i] = float(cv<bool>(x[i])) + float(cv<bool>(int(i))) * 10.0f;   // cv<bool, float>: x > 0.5
c[i] = float(S<float4>::v * 100 + S<half4>::v * 10 + S<float>::v + W<float, 4>::v * 1000 + W<half, 4>::v * 10000);
"""

SPECS = MSLCase("explicit_specialisations", SPEC_BODY, {"x": X}, [(n, (64,), np.float32) for n in "abc"],
                lambda x: [np.full(64, 231.0), (x > 0.5) + 10.0 * (np.arange(64) != 0), np.full(64, 24321.0)],
                grid=(64, 1, 1), header=SPEC_HEADER, atol=1e-5)

test_specs_sim, test_specs_round_trip, test_specs_printed_cuda = three_ways([SPECS])


CONST_HEADER = """
struct C {
  float v;
  float get() thread { return v * 2.0f; }
  float get() const thread { return v * 3.0f; }
  float only_const() const thread { return v + 1.0f; }
};
"""

CONST_BODY = """
uint i = thread_position_in_grid.x;
C c{x[i]};
const C d{x[i]};
a[i] = c.get() + d.get() * 10.0f;                 // the const object calls the const overload
b[i] = c.only_const() + d.only_const();
"""

CONSTS = MSLCase("const_member_overloads", CONST_BODY, {"x": X}, [("a", (64,), np.float32), ("b", (64,), np.float32)],
                 lambda x: [2 * x + 30 * x, 2 * x + 2], grid=(64, 1, 1), header=CONST_HEADER, atol=1e-4)

test_const_sim, test_const_round_trip, test_const_printed_cuda = three_ways([CONSTS])
