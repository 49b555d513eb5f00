"""What a kernel hoisted out of MLX's headers into a function does (a steel attention
kernel's ``[[kernel]]`` made a callee, its function constants ``constexpr`` flags), on our
own kernels:

* an ``if`` on a constant (``if (has_mask)`` with ``constexpr constant bool has_mask =
  false;``) translates only the side that runs, so the other may use what the launch
  does not have: a pointer parameter bound to ``nullptr`` (``(const device float*)nullptr``,
  ``NULL``), whose use is an error naming it where it does run;
* template arguments deduced through an alias template (``thread frag_t<A>& x`` with
  ``template <typename U> using frag_t = typename metal::vec<U, kN>;``), from
  ``vec<U, N>`` and from ``simdgroup_matrix<U, 8, 8>``.

Each kernel: simulator vs NumPy (unchecked and checked), a round trip through the printed
MSL and CUDA, and (GPU machine) the printed CUDA."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import MetalbenchError
from msl_cases import MSLCase, three_ways

RNG = np.random.default_rng(43)
N = 32
X = RNG.standard_normal(N).astype(np.float32)
M = RNG.standard_normal(N).astype(np.float32)

FLAGS = """
constexpr constant bool has_mask = {mask};
constexpr constant bool has_bias = {bias};
METAL_FUNC void apply(device float* out, const device float* x, const device float* mask,
                      const device float* bias, uint i) {{
  float v = x[i];
  if (has_mask) {{
    mask += i;
    v *= mask[0];
  }}
  if (!has_bias) {{
    v += 1.0f;
  }} else if (has_mask) {{
    v += bias[i];
  }} else {{
    v -= bias[i];
  }}
  out[i] = v;
}}
"""


def _flags_case(mask, bias, call):
    def ref(x, m, m2):
        v = x * m if mask else x.copy()
        return [v + 1 if not bias else v + m2 if mask else v - m2]
    return MSLCase(f"constant_if_mask{int(mask)}_bias{int(bias)}",
                   f"uint i = thread_position_in_grid.x;\n{call}\n", {"x": X, "m": M, "m2": 2 * M},
                   [("out", (N,), np.float32)], ref,
                   header=FLAGS.format(mask=str(mask).lower(), bias=str(bias).lower()), atol=1e-6)


CASES = [
    _flags_case(False, False, "apply(out, x, (const device float*)nullptr, NULL, i);"),
    _flags_case(True, False, "apply(out, x, m, nullptr, i);"),
    _flags_case(False, True, "apply(out, x, (const device float*)(0), m2, i);"),
    _flags_case(True, True, "apply(out, x, m, m2, i);"),
]

ALIAS_HEADER = """
template <typename T>
struct Frag {
  STEEL_CONST short kN = 2;
  template <typename U>
  using frag_t = typename metal::vec<U, kN>;
  template <typename U>
  using mat_t = simdgroup_matrix<U, 8, 8>;

  template <typename A, typename B>
  METAL_FUNC static constexpr void fma(thread vec<T, 2>& d, thread frag_t<A>& a, thread frag_t<B>& b) {
    d = d + vec<T, 2>(a) * vec<T, 2>(b);
  }
  template <typename A>
  METAL_FUNC static constexpr void mma(thread mat_t<T>& d, thread mat_t<A>& a, thread mat_t<A>& b) {
    simdgroup_multiply_accumulate(d, a, b, d);
  }
};
template <typename U, int K>
METAL_FUNC U total(vec<U, K> v) {
  U s = 0;
  for (int k = 0; k < K; ++k) s += v[k];
  return s;
}
"""
ALIAS_HEADER = "#define STEEL_CONST static constant constexpr const\n" + ALIAS_HEADER
ALIAS_BODY = """
    uint i = thread_position_in_grid.x;
    float2 d = float2(1.0f, 2.0f);
    half2 a = half2(x[i], 1.0h);
    float2 b = float2(2.0f, y[i]);
    Frag<float>::fma(d, a, b);
    out[i] = total(d) + total(float4(x[i]));
    simdgroup_matrix<float, 8, 8> ma, mb, md = simdgroup_matrix<float, 8, 8>(0);
    simdgroup_load(ma, p, 8);
    simdgroup_load(mb, q, 8);
    Frag<float>::mma(md, ma, mb);
    simdgroup_store(md, prod, 8);
"""
P = RNG.standard_normal((8, 8)).astype(np.float32)
Q = RNG.standard_normal((8, 8)).astype(np.float32)
Y = RNG.standard_normal(N).astype(np.float32)


def _alias_ref(x, y, p, q):
    h = x.astype(np.float16).astype(np.float32)
    return [1 + 2 * h + 2 + y + 4 * x, p @ q]


ALIAS = MSLCase("deduce_through_alias", ALIAS_BODY, {"x": X, "y": Y, "p": P, "q": Q},
                [("out", (N,), np.float32), ("prod", (8, 8), np.float32)], _alias_ref,
                header=ALIAS_HEADER, atol=1e-5)

test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES + [ALIAS])


def test_using_a_null_pointer_where_it_runs_names_it():
    k = mb.metal_kernel(name="null_used", input_names=["x"], output_names=["out"], header=FLAGS.format(
        mask="true", bias="false"), source="uint i = thread_position_in_grid.x;\napply(out, x, nullptr, nullptr, i);")
    with pytest.raises(MetalbenchError) as ei:
        k(inputs=[mx.array(X)], grid=(N, 1, 1), threadgroup=(N, 1, 1), output_shapes=[(N,)],
          output_dtypes=[mx.float32], backend="sim")
    msg = str(ei.value)
    assert "'mask' is a null pointer here (the argument for it at line 2 is nullptr)" in msg, msg
    assert "line 8" in msg, msg          # mask += i;
