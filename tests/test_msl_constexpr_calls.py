"""A call of a ``constexpr`` header function with constant arguments is a constant
expression (C++): it initialises ``static constexpr`` class members, sizes threadgroup
arrays and feeds template arguments, as in MLX's quantised block loaders. Our own kernels,
against NumPy, on the simulator (checked too)."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import KernelTypeError

HEADER = """
template <int bits, int wsize = 8>
inline constexpr short per_word() {
  return (bits == 3 || bits == 5) ? 8 : (bits == 6 ? 4 : wsize / bits);
}
template <int bits>
METAL_FUNC constexpr int word_bytes() {
  constexpr int pow2 = (bits & (bits - 1)) == 0;
  int b = 3;
  if (pow2) {
    b = 1;
  } else if (bits == 5) {
    b = 5;
  }
  return b;
}
template <int bits>
struct Unpack {
  static constant constexpr const short n = per_word<bits, 8>();
  static constant constexpr const short bytes = word_bytes<bits>();
  static constant constexpr const short cols = 64 / n;
};
template <int N>
inline float scaled(float x) { return x * N; }
"""

SOURCE = """
uint i = thread_position_in_grid.x;
threadgroup float stage[Unpack<BITS>::cols];          // sized by a constexpr call
constexpr int n = per_word<BITS>();                   // a constexpr local from a call
if (i < Unpack<BITS>::cols) stage[i] = x[i] * n;
threadgroup_barrier(mem_flags::mem_threadgroup);
if (i < Unpack<BITS>::cols)
  out[i] = scaled<word_bytes<BITS>()>(stage[i]) + Unpack<BITS>::bytes * 1000.0f;
"""


def _ref(x, bits):
    n = {3: 8, 5: 8, 6: 4}.get(bits, 8 // bits)
    b = 1 if bits & (bits - 1) == 0 else (5 if bits == 5 else 3)
    cols = 64 // n
    return (x[:cols] * n * b + b * 1000).astype(np.float32), cols


@pytest.mark.parametrize("bits", [2, 3, 4, 5, 6, 8])
@pytest.mark.parametrize("checked", [False, True])
def test_constexpr_calls_are_constants(bits, checked):
    x = np.random.default_rng(bits).standard_normal(64).astype(np.float32)
    k = mb.metal_kernel(name="unpack", input_names=["x"], output_names=["out"], source=SOURCE, header=HEADER)
    ref, cols = _ref(x, bits)
    out = k(inputs=[mx.array(x)], grid=(64, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(cols,)],
            output_dtypes=[mx.float32], template=[("BITS", bits)], init_value=0, backend="sim", checked=checked)[0]
    np.testing.assert_allclose(np.array(out), ref, rtol=1e-6)


def test_a_call_it_cannot_evaluate_is_named_at_its_line():
    # a loop in the body: not evaluated while translating, so it cannot size the member
    hdr = """
    inline constexpr int log2c(int v) { int r = 0; while (v > 1) { v >>= 1; r++; } return r; }
    struct S { static constant constexpr const int k = log2c(16); };
    """
    k = mb.metal_kernel(name="loop", input_names=["x"], output_names=["out"],
                        source="out[0] = x[0] + S::k;", header=hdr)
    with pytest.raises(KernelTypeError, match=r"static member 'k' is not a compile-time constant") as e:
        k(inputs=[mx.zeros(1)], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1,)],
          output_dtypes=[mx.float32], backend="sim")
    assert "line 3" in str(e.value)


def test_runtime_arguments_still_call_the_function():
    hdr = "inline constexpr int twice(int v) { return 2 * v; }"
    k = mb.metal_kernel(name="rt", input_names=["x"], output_names=["out"],
                        source="uint i = thread_position_in_grid.x; out[i] = twice(int(x[i])) + twice(3);",
                        header=hdr)
    x = np.arange(8, dtype=np.float32)
    out = k(inputs=[mx.array(x)], grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(8,)],
            output_dtypes=[mx.float32], backend="sim")[0]
    np.testing.assert_array_equal(np.array(out), 2 * x + 6)
