"""An input's ``x_shape``/``x_strides`` passed to a header function, as MLX declares them
(``const constant int*``, ``const constant int64_t*``): helpers that turn an element index
into a location take them as pointer parameters (also deduced, ``constant const S*``, and
passed on to another helper). Before: "'x_shape' is an array; index it". Against NumPy on a
transposed (strided) input, through the round trip and (on a GPU) the printed CUDA."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import KernelTypeError
from msl_cases import MSLCase, three_ways

HEADER = """
inline int64_t loc_of(uint e, constant const int* shape, constant const int64_t* strides, int nd) {
    int64_t loc = 0;
    for (int d = nd - 1; d >= 0; --d) {
        loc += int64_t(e % uint(shape[d])) * strides[d];
        e /= uint(shape[d]);
    }
    return loc;
}
template <typename S>
inline S total(constant const S* v, int n) {
    S p = 1;
    for (int d = 0; d < n; ++d) { p *= v[d]; }
    return p;
}
inline int64_t via(uint e, constant const int* shape, constant const int64_t* strides, int nd) {
    return loc_of(e, shape, strides, nd) + elem_to_loc(e, shape, strides, nd) - elem_to_loc(e, shape, strides, nd);
}
"""

BODY = """
uint i = thread_position_in_grid.x;
out[i] = x[via(i, x_shape, x_strides, x_ndim)] + 1000.0f * float(total(x_shape, x_ndim));
"""

BASE = np.arange(48, dtype=np.float32).reshape(6, 8)


class _Transposed(MSLCase):
    """The input transposed in MLX (strides (1, 8)), read without a copy."""

    def launch(self, k, backend="sim", **kw):
        outs = k(inputs=[mx.array(BASE).T], grid=self.grid, threadgroup=self.tg,
                 output_shapes=[o[1] for o in self.outputs], output_dtypes=[mx.float32], backend=backend, **kw)
        return [np.asarray(o) for o in outs]

    def kernel(self, source=None, header=None):
        return mb.metal_kernel(name=self.name, input_names=["x"], output_names=["out"],
                               source=self.source if source is None else source,
                               header=self.header if header is None else header, ensure_row_contiguous=False)


CASE = _Transposed("shape_args", BODY, {"x": BASE.T.copy()}, [("out", (48,), np.float32)],
                   lambda x: [BASE.T.reshape(-1) + 48000.0], grid=(48, 1, 1), tg=(16, 1, 1), header=HEADER)


def test_shape_and_strides_passed_to_header_functions():
    np.testing.assert_array_equal(CASE.launch(CASE.kernel())[0], BASE.T.reshape(-1) + 48000.0)


def test_a_shape_needs_a_constant_int_pointer_parameter():
    k = mb.metal_kernel(name="shape_bad", input_names=["x"], output_names=["out"],
                        source="uint i = thread_position_in_grid.x; out[i] = first(x_strides);",
                        header="inline float first(constant const int* v) { return float(v[0]); }")
    with pytest.raises(KernelTypeError, match="constant const int64_t"):
        k(inputs=[mx.zeros((4,))], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
          output_dtypes=[mx.float32], backend="sim")


test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways([CASE])
