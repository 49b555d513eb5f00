"""Header functions whose parameters carry Metal attributes, as MLX's own kernel helpers are
written (``uint3 tid [[threadgroup_position_in_grid]]`` in quantized.h's ``qmm_t_impl``, which
steel-GEMM users paste into ``header=``): the attribute documents what the caller passes, the
parameter is an ordinary parameter named by the declarator. Before, the name was read with the
attribute attached and the body's ``tid`` was 'use of undeclared identifier'."""
import mlx.core as mx
import numpy as np

import metalbench as mb

HEADER = """
template <typename T, const int BM = 4>
METAL_FUNC void tile_ids(
    device T* y,
    const constant int& base,
    uint3 tid [[threadgroup_position_in_grid]],
    uint lid [[thread_index_in_threadgroup]],
    ushort simd_lid [[thread_index_in_simdgroup]]) {
  y[tid.y * 16 + tid.x * BM + lid] = T(base + int(tid.y) * 1000 + int(tid.x) * 100 + int(lid) * 10 + simd_lid % 3);
}

void scaled(device float* out [[buffer(1)]], const device float* in [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i] = 2.0f * in[i];
}
"""


def _run(src, inputs, shape, grid, tg, dtype=mx.float32, template=()):
    k = mb.metal_kernel(name="attr", input_names=[n for n, _ in inputs], output_names=["y"], source=src,
                        header=HEADER)
    return np.array(k(inputs=[v for _, v in inputs], template=list(template), grid=grid, threadgroup=tg,
                      output_shapes=[shape], output_dtypes=[dtype], backend="sim")[0])


def test_template_function_with_attributed_thread_parameters():
    src = ("tile_ids<T>(y, base[0], threadgroup_position_in_grid, thread_index_in_threadgroup, "
           "thread_index_in_simdgroup);\n")
    got = _run(src, [("base", mx.array([7], dtype=mx.int32))], (32,), (16, 2, 1), (4, 1, 1),
               template=[("T", mx.float32)])
    want = np.zeros(32)
    for gy in range(2):
        for gx in range(4):
            for lid in range(4):
                want[gy * 16 + gx * 4 + lid] = 7 + gy * 1000 + gx * 100 + lid * 10 + lid % 3
    np.testing.assert_array_equal(got, want)


def test_attributed_pointer_parameters():
    x = np.arange(10, dtype=np.float32)
    got = _run("scaled(y, x, thread_position_in_grid.x);\n", [("x", mx.array(x))], (10,), (10, 1, 1), (10, 1, 1))
    np.testing.assert_array_equal(got, 2 * x)
