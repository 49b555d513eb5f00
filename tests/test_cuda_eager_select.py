"""``c ? a : b`` with a shuffle on one side, printed for CUDA with both sides evaluated.

Real scans shift by one lane with ``(lane == 0) ? 0.0f : simd_shuffle_up(v, 1)`` (an mlx-lm
selective-scan kernel does): lane 1 reads lane 0, which does not take the shuffle's side.
Undefined in MSL, right on Macs (the compiler selects), and on the simulator (the shuffle
reads the source lane's value wherever it is). Printed as a branch, CUDA's ``__shfl_sync``
read lane 0 out of its mask (garbage on the H200, session 10); ``passes/warps.eager_select``
marks such a ``?:`` and the CUDA printer evaluates both sides (``mb_sel``). A side with a
reduction (``simd_sum`` over the lanes that take it) keeps its branch.
"""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench import types as T
from metalbench.codegen import cuda, cuda_check
from metalbench.frontend.msl import translate_kernel

SHIFT = """
uint i = thread_position_in_grid.x;
uint lane = thread_index_in_simdgroup;
float v = x[i];
float prev = (lane == 0) ? 0.0f : simd_shuffle_up(v, 1);
float next = lane < 31 ? simd_shuffle_down(v * 2.0f, 1u) : -1.0f;
out[i] = prev + 1000.0f * next;
"""
# a reduction under the condition: the lanes that take the side are the ones summed
PARTIAL = """
uint i = thread_position_in_grid.x;
uint lane = thread_index_in_simdgroup;
out[i] = (lane < 16) ? simd_sum(x[i]) : 0.0f;
"""


def _render(src):
    k = translate_kernel("k", src, "", inputs=[("x", T.float32, 1)], outputs=[("out", T.float32, 1)])
    return cuda.render(k)


def _reference_shift(x):
    v = x.reshape(-1, 32)
    prev = np.concatenate([np.zeros((len(v), 1), np.float32), v[:, :-1]], axis=1)
    nxt = np.concatenate([2 * v[:, 1:], -np.ones((len(v), 1), np.float32)], axis=1)
    return (prev + 1000.0 * nxt).reshape(-1)


def test_a_shuffle_side_is_evaluated_on_every_lane():
    r = _render(SHIFT)
    assert r.body.count("mb_sel<float>(") == 2, r.body
    assert "template <class T> __device__ inline T mb_sel" in r.header
    assert cuda_check.check(r, use_nvcc=False) == [], r.body


def test_a_reduction_side_keeps_its_branch():
    r = _render(PARTIAL)
    assert "mb_sel" not in r.body and " ? " in r.body, r.body


@pytest.mark.parametrize("n", [32, 96, 256])
def test_the_simulator_reads_the_skipped_lane(n):
    # the meaning the CUDA print follows: lane 1 gets lane 0's value
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    k = mb.metal_kernel("shift_sim", ["x"], ["out"], SHIFT)
    out, = k(inputs=[mx.array(x)], grid=(n, 1, 1), threadgroup=(min(n, 128), 1, 1),
             output_shapes=[(n,)], output_dtypes=[mx.float32], backend="sim")
    np.testing.assert_allclose(np.asarray(out), _reference_shift(x), rtol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [32, 4096, 1 << 20])
def test_the_shift_on_the_gpu(n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    k = mb.metal_kernel("shift_gpu", ["x"], ["out"], SHIFT)
    for tg in (32, 256):
        out, = k(inputs=[mx.array(x)], grid=(n, 1, 1), threadgroup=(min(n, tg), 1, 1),
                 output_shapes=[(n,)], output_dtypes=[mx.float32], backend="cuda")
        np.testing.assert_allclose(np.asarray(out), _reference_shift(x), rtol=1e-6)
    p = mb.metal_kernel("partial_gpu", ["x"], ["out"], PARTIAL)
    out, = p(inputs=[mx.array(x)], grid=(n, 1, 1), threadgroup=(min(n, 256), 1, 1),
             output_shapes=[(n,)], output_dtypes=[mx.float32], backend="cuda")
    v = x.reshape(-1, 32)
    want = np.where(np.arange(32) < 16, v[:, :16].sum(1, keepdims=True), 0).reshape(-1)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-5)
