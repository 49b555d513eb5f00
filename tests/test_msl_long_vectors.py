"""``vec<T, n>`` past 4 components (clang ext vectors, which Metal's ``vec`` is) as kernels use
them: per-thread register tiles (``vec<float, NA>`` with NA a template parameter, indexed by
``[m]``, whole-vector arithmetic), and through pointers, where such a vector takes the next power
of two in memory (``vec<float, 5>`` is 32 bytes, as a ``float3`` takes 16): ``p[1]`` starts 8
floats in, not 5 (before, the simulator stepped by 5: a wrong answer without an error). The MSL
printer spells components past ``w`` as ``v[k]``; longer than 16 is refused with the type named."""
from __future__ import annotations

import numpy as np
import pytest

import metalbench as mb
from metalbench import msl_check
from metalbench import types as T
from metalbench.codegen import msl
from metalbench.errors import MetalbenchError

translate_kernel = pytest.importorskip("metalbench.frontend.msl").translate_kernel

HEADER = """
template <int NA>
inline void rows_dot(const device float* x, const device ushort* q, device float* out, uint i) {
    typedef vec<float, NA> VF;
    VF acc = VF(0.0f);
    VF sums = VF(0.0f);
    for (int j = 0; j < 4; j++) {
        VF a;
        for (int m = 0; m < NA; m++) {
            a[m] = x[(i * NA + m) * 4 + j];
            sums[m] += a[m];
        }
        acc += a * ((q[i * 4 + j] >> 4) & 0x000f) + 0.5f * sums;
    }
    for (int m = 0; m < NA; m++) { out[i * NA + m] = acc[m]; }
}
"""
SOURCE = """
    uint i = thread_position_in_grid.x;
    rows_dot<NA>(x, q, out, i);
"""


def _ref(x, q, na):
    n = q.shape[0] // 4
    xs = x.reshape(n, na, 4).astype(np.float64)
    out = np.zeros((n, na))
    sums = np.zeros((n, na))
    for j in range(4):
        sums += xs[:, :, j]
        out += xs[:, :, j] * ((q.reshape(n, 4)[:, j] >> 4) & 0xF)[:, None] + 0.5 * sums
    return out.reshape(-1)


@pytest.mark.parametrize("na", [5, 7, 8, 16])
def test_long_vector_tiles_vs_numpy(na):
    rng = np.random.default_rng(na)
    n = 6
    x = rng.standard_normal(n * na * 4).astype(np.float32)
    q = rng.integers(0, 1 << 16, n * 4).astype(np.uint16)
    k = mb.metal_kernel(name=f"long_vec_{na}", input_names=["x", "q"], output_names=["out"],
                        source=SOURCE, header=HEADER)
    (out,) = k(inputs=[x, q], template=[("NA", na)], grid=(n, 1, 1), threadgroup=(n, 1, 1),
               output_shapes=[(n * na,)], output_dtypes=[np.float32], backend="sim")
    np.testing.assert_allclose(np.asarray(out), _ref(x, q, na), rtol=1e-5, atol=1e-4)


def test_long_vector_runtime_index_and_scalar_ops():
    src = """
        uint i = thread_position_in_grid.x;
        vec<int, 6> v = vec<int, 6>(0);
        for (int m = 0; m < 6; m++) { v[m] = inp[i * 6 + m]; }
        v = v * 3 - 1;
        int k = inp[i * 6] & 3;           // a component picked at run time
        out[i] = v[k] + v[5];
    """
    x = np.arange(24, dtype=np.int32)
    k = mb.metal_kernel(name="long_vec_rt", input_names=["inp"], output_names=["out"], source=src)
    (out,) = k(inputs=[x], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
               output_dtypes=[np.int32], backend="sim")
    v = x.reshape(4, 6) * 3 - 1
    want = v[np.arange(4), x.reshape(4, 6)[:, 0] & 3] + v[:, 5]
    np.testing.assert_array_equal(np.asarray(out), want)


def test_msl_printer_spells_long_components_by_index():
    ir_ = translate_kernel("lv", SOURCE, HEADER,
                           inputs=[("x", T.float32, 1), ("q", T.uint16, 1)], outputs=[("out", T.float32, 1)],
                           template=[("NA", 5)], atomic_outputs=False)
    r = msl.render(ir_)
    text = r.header + r.body          # the helper is printed into the header
    assert "vec<float, 5>" in text and "[4]" in text, text
    assert msl_check.check(r) == [], r.body


def test_vectors_past_16_are_refused_with_the_type_named():
    src = """
        vec<float, 17> v = vec<float, 17>(0.0f);
        out[0] = v[0];
    """
    k = mb.metal_kernel(name="long_vec_17", input_names=["inp"], output_names=["out"], source=src)
    with pytest.raises(MetalbenchError, match=r"vec<float, 17>.*17 components"):
        k(inputs=[np.zeros(1, np.float32)], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1,)],
          output_dtypes=[np.float32], backend="sim")


@pytest.mark.parametrize("n,stride", [(8, 8), (5, 8), (6, 8), (12, 16)])
def test_long_vectors_through_device_pointers_take_their_padded_size(n, stride):
    # clang lays an ext vector out at the next power of two (vec<float, 5> is 32 bytes), as a
    # float3 takes 16: p[1] starts `stride` floats in
    src = f"""
        using V = vec<float, {n}>;
        const device V* v = (const device V*)x;
        uint i = thread_position_in_grid.x;
        V a = v[i];
        out[i] = a[0] + 10.0f * a[{n - 1}];
    """
    x = np.arange(3 * stride, dtype=np.float32)
    k = mb.metal_kernel(name=f"long_vec_ptr_{n}", input_names=["x"], output_names=["out"], source=src)
    (out,) = k(inputs=[x], grid=(3, 1, 1), threadgroup=(3, 1, 1), output_shapes=[(3,)],
               output_dtypes=[np.float32], backend="sim")
    base = np.arange(3) * stride
    np.testing.assert_array_equal(np.asarray(out), base + 10.0 * (base + n - 1))
