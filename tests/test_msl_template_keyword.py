"""The ``template`` disambiguator of a dependent member template, ``Kernel::template f<...>()``
and ``obj.template g<...>()`` (C++ requires it when ``Kernel`` depends on a template parameter,
as in code built on MLX's steel GEMMKernel): it calls the same member as without the keyword."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import MetalbenchError

HEADER = """
template <typename T, int N>
struct Scale {
  template <bool neg>
  static METAL_FUNC T apply(T x) { return neg ? -x * T(N) : x * T(N); }
  template <int k>
  T add(T x) const { return x + T(k); }
  template <int k, typename U>
  static METAL_FUNC U cast_add(T x) { return static_cast<U>(x) + U(k); }
};
"""

BODY = """
    using S = Scale<T, M>;
    uint i = thread_position_in_grid.x;
    S s;
    T v = inp[i];
    out[i] = S::template apply<true>(v) + s.template add<2>(v)
           + Scale<T, 1>::template cast_add<5, T>(v) + S :: template apply<false>(v);
"""


def launch(x, m, checked=False):
    k = mb.metal_kernel(name="tkw", input_names=["inp"], output_names=["out"], header=HEADER, source=BODY)
    (o,) = k(inputs=[x], template=[("T", x.dtype), ("M", m)], grid=(x.size, 1, 1), threadgroup=(32, 1, 1),
             output_shapes=[x.shape], output_dtypes=[x.dtype], backend="sim", checked=checked)
    return np.array(o.astype(mx.float32))


@pytest.mark.parametrize("m,dtype", [(3, mx.float32), (7, mx.float16), (1, mx.int32)])
def test_scope_template_keyword_calls_the_member_template(m, dtype):
    rng = np.random.default_rng(m)
    x = rng.standard_normal(45) * 4 if dtype != mx.int32 else rng.integers(-50, 50, 45)
    x = np.concatenate([x, [0, -1, 1]])          # edges: zero and unit values
    xa = mx.array(x).astype(dtype)
    xv = np.array(xa.astype(mx.float32)).astype(np.float64)
    want = -xv * m + (xv + 2) + (xv + 5) + xv * m
    got = launch(xa, m, checked=True)
    # float16: each partial sum rounds to half (|terms| up to ~60, ulp 1/32)
    np.testing.assert_allclose(got, want, rtol=2e-3 if dtype == mx.float16 else 1e-6,
                               atol=0.1 if dtype == mx.float16 else 1e-5)


def test_the_keyword_does_not_make_an_unknown_member_known():
    k = mb.metal_kernel(name="tkw_bad", input_names=["inp"], output_names=["out"], header=HEADER,
                        source="out[0] = Scale<float, 2>::template missing<true>(inp[0]);")
    x = mx.ones((4,))
    with pytest.raises(MetalbenchError, match="no static member 'missing'"):
        k(inputs=[x], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype],
          backend="sim")
