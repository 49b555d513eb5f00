"""Arrays passed by reference, ``thread T (&v)[N]`` (MLX's sort.h ThreadSort / BlockMergeSort
pattern): writes reach the caller's array, N is the class's parameter or deduced from the
argument's extent; and a pointer declared with a constant ``?:`` whose other side is
nullptr (``ARG ? idx + off : nullptr``) is the side taken. Our own kernels vs NumPy."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import KernelTypeError

HEADER = """
template <typename T, short N>
struct Net {
  static METAL_FUNC void sort(thread T (&v)[N], thread uint (&ix)[N]) {   // odd-even transposition
    for (short i = 0; i < N; ++i)
      for (short j = i & 1; j < N - 1; j += 2)
        if (v[j + 1] < v[j]) { T w = v[j]; v[j] = v[j + 1]; v[j + 1] = w;
                               uint k = ix[j]; ix[j] = ix[j + 1]; ix[j + 1] = k; }
  }
};
template <typename T, int N>
METAL_FUNC T total(thread T (&v)[N]) { T s = 0; for (int i = 0; i < N; ++i) s += v[i]; return s; }
template <bool WITH_IDX>
METAL_FUNC float pick(const threadgroup float* vals, const threadgroup uint* idx, uint i) {
  return WITH_IDX ? float(idx[i]) : vals[i];
}
"""

SOURCE = """uint i = thread_position_in_grid.x;
float v[4];
uint ix[4];
for (int k = 0; k < 4; ++k) { v[k] = x[4 * i + k]; ix[k] = k; }
Net<float, 4>::sort(v, ix);
threadgroup float tv[64];
threadgroup uint ti[64];
for (int k = 0; k < 4; ++k) { tv[4 * i + k] = v[k]; ti[4 * i + k] = ix[k]; }
threadgroup_barrier(mem_flags::mem_threadgroup);
const threadgroup uint* idx = WITH_IDX ? ti + 4 * i : nullptr;
for (int k = 0; k < 4; ++k) out[4 * i + k] = pick<WITH_IDX>(tv + 4 * i, idx, k);
sums[i] = total(v);"""


@pytest.mark.parametrize("with_idx", [True, False])
@pytest.mark.parametrize("checked", [False, True])
def test_array_references_and_a_constant_null_choice(with_idx, checked):
    k = mb.metal_kernel(name="aref", input_names=["x"], output_names=["out", "sums"], source=SOURCE, header=HEADER)
    x = np.random.default_rng(3).standard_normal(64).astype(np.float32)
    out, sums = k(inputs=[mx.array(x)], grid=(16, 1, 1), threadgroup=(16, 1, 1), output_shapes=[(64,), (16,)],
                  output_dtypes=[mx.float32, mx.float32], template=[("WITH_IDX", with_idx)], backend="sim",
                  checked=checked)
    rows = x.reshape(16, 4)
    want = np.argsort(rows, axis=1, kind="stable").astype(np.float32) if with_idx else np.sort(rows, axis=1)
    np.testing.assert_array_equal(np.array(out).reshape(16, 4), want)
    np.testing.assert_allclose(np.array(sums), rows.sum(1), rtol=1e-6, atol=1e-6)


def test_an_extent_that_cannot_be_deduced_is_named():
    hdr = "template <int N> METAL_FUNC float first(thread float (&v)[N]) { return v[0]; }"
    src = "thread float* p = nullptr; float a[2] = {x[0], 1.0f}; out[0] = first(a) + first(p);"
    k = mb.metal_kernel(name="nd", input_names=["x"], output_names=["out"], source=src, header=hdr)
    with pytest.raises(KernelTypeError, match="deduce the template parameter 'N'"):
        k(inputs=[mx.zeros(1)], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1,)],
          output_dtypes=[mx.float32], backend="sim")


def test_an_ill_formed_side_of_a_constant_conditional_is_still_an_error():
    # C++ checks both sides of ?: even when the condition is a constant: ~ of a half is an
    # error whichever side runs (only a null pointer's use is left to the side that runs)
    import metalbench as mb
    import numpy as np
    from metalbench.errors import MetalbenchError
    body = "half h = x[0]; float a = 1.0f; out[0] = (!(0.5f < 3)) ? (~h) : a;"
    k = mb.metal_kernel("constant_select_ill_formed", ["x"], ["out"], body)
    with pytest.raises(MetalbenchError, match="~"):
        k(inputs=[np.ones(4, np.float16)], output_shapes=[(1,)], output_dtypes=[mb.float32],
          grid=(1, 1, 1), threadgroup=(1, 1, 1), backend="sim")
