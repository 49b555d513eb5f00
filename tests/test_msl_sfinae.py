"""Overloads chosen by enable_if in header function templates (SFINAE): a substitution
failure in a template's signature -- a defaulted type parameter, an unnamed
`enable_if_t<c, bool> = true` parameter, the return type, `enable_if<c>::type` -- drops that
overload, and the call takes the next; every spelling against NumPy, with float and int
data, through the round trip and (on a GPU) the printed CUDA. Before, the first overload was
taken or the call failed ("enable_if_t<false, ...>: no such type", an internal error for an
unnamed parameter)."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import MetalbenchError
from msl_cases import MSLCase, three_ways

HEADER = """
// integers: x * 100, floating point: x + x, in four spellings of the same dispatch
template <typename T, typename = metal::enable_if_t<metal::is_integral_v<T>>>
inline T by_default(T v) { return v * T(100); }
template <typename T, typename = metal::enable_if_t<!metal::is_integral_v<T>>, typename = void>
inline T by_default(T v) { return v + v; }

template <typename T, metal::enable_if_t<is_integral_v<T>, bool> = true>
inline T by_flag(T v) { return v * T(100); }
template <typename T, metal::enable_if_t<is_floating_point_v<T>, bool> = true>
inline T by_flag(T v) { return v + v; }

template <typename T>
inline metal::enable_if_t<metal::is_integral_v<T>, T> by_return(T v) { return v * T(100); }
template <typename T>
inline metal::enable_if_t<!metal::is_integral_v<T>, T> by_return(T v) { return v + v; }

template <typename T, typename = typename metal::enable_if<metal::is_integral_v<T>>::type>
inline T by_member(T v) { return v * T(100); }
template <typename T, typename = typename metal::enable_if<!metal::is_integral_v<T>>::type, int = 0>
inline T by_member(T v) { return v + v; }
"""

BODY = """
uint i = thread_position_in_grid.x;
f[i] = by_default(x[i]) + by_flag(x[i]) + by_return(x[i]) + by_member(x[i]);
n[i] = by_default(k[i]) + by_flag(k[i]) + by_return(k[i]) + by_member(k[i]);
"""

RNG = np.random.default_rng(5)
X = RNG.standard_normal(32).astype(np.float32)
K = RNG.integers(-50, 50, 32).astype(np.int32)

DISPATCH = MSLCase("sfinae_dispatch", BODY, {"x": X, "k": K},
                   [("f", (32,), np.float32), ("n", (32,), np.int32)],
                   lambda x, k: [8 * x, 400 * k], header=HEADER, atol=1e-5)

test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways([DISPATCH])


def _launch(header, body):
    k = mb.metal_kernel(name="sfinae_err", input_names=["x"], output_names=["out"], source=body, header=header)
    return k(inputs=[mx.array(X)], grid=(32, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(32,)],
             output_dtypes=[mx.float32], backend="sim")[0]


def test_no_viable_overload_is_an_error_naming_enable_if():
    header = "template <typename T, typename = metal::enable_if_t<metal::is_integral_v<T>>> T f(T v) { return v; }"
    with pytest.raises(MetalbenchError) as e:
        _launch(header, "uint i = thread_position_in_grid.x;\nout[i] = f(x[i]);")
    assert "no matching overload of 'f'" in str(e.value) and "enable_if" in str(e.value)


def test_enable_if_false_in_a_body_stays_an_error():
    # outside a signature a failed enable_if is no substitution failure: a hard error
    header = "template <typename T> T f(T v) { metal::enable_if_t<metal::is_integral_v<T>, T> w = v; return w; }"
    with pytest.raises(MetalbenchError) as e:
        _launch(header, "uint i = thread_position_in_grid.x;\nout[i] = f(x[i]);")
    assert "enable_if_t<false" in str(e.value)


def test_a_qualified_class_template_reads_its_arguments_where_it_is_written():
    # typename ns::Id<T>::type inside a function template: T is the caller's (it used to
    # be looked up inside ns: "unknown type 'T'")
    header = """namespace ns { template <typename U> struct Id { using type = U; }; }
    template <typename T> inline typename ns::Id<T>::type twice(T v) { typename ns::Id<T>::type w = v; return w + w; }"""
    np.testing.assert_array_equal(np.asarray(_launch(header, "uint i = thread_position_in_grid.x;\nout[i] = twice(x[i]);")),
                                  2 * X)


MEMBER_HEADER = """
struct Pick {
  // return type
  template <typename T>
  metal::enable_if_t<metal::is_integral_v<T>, T> by_return(T v) thread { return v * T(100); }
  template <typename T>
  metal::enable_if_t<!metal::is_integral_v<T>, T> by_return(T v) thread { return v + v; }
  // a defaulted type parameter
  template <typename T, typename = metal::enable_if_t<metal::is_integral_v<T>>>
  T by_default(T v) thread { return v * T(100); }
  template <typename T, typename = metal::enable_if_t<!metal::is_integral_v<T>>, typename = void>
  T by_default(T v) thread { return v + v; }
  // a value parameter of an enable_if type (MLX's DEFINE_SIMD_REDUCE), calling operator() by name
  template <typename T, metal::enable_if_t<sizeof(T) < 8, bool> = true>
  T by_size(T v) thread { return operator()(v, v); }
  template <typename T, metal::enable_if_t<sizeof(T) == 8, bool> = true>
  T by_size(T v) thread { return v * T(1000); }
  template <typename T> T operator()(T a, T b) thread { return a + b + T(1); }
};
"""

MEMBER_BODY = """
uint i = thread_position_in_grid.x;
Pick p;
f[i] = p.by_return(x[i]) + p.by_default(x[i]) + p.by_size(x[i]);
n[i] = p.by_return(k[i]) + p.by_default(k[i]) + int(p.by_size(int64_t(k[i])));
"""

MEMBERS = MSLCase("sfinae_members", MEMBER_BODY, {"x": X, "k": K},
                  [("f", (32,), np.float32), ("n", (32,), np.int32)],
                  lambda x, k: [6 * x + 1, 1200 * k], header=MEMBER_HEADER, atol=1e-5)

test_members_sim, test_members_round_trip, test_members_printed_cuda = three_ways([MEMBERS])
