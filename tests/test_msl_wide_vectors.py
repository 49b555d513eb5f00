"""Metal's ``vec<T, 8>`` and ``vec<T, 16>`` (clang's ext_vector_type, as real kernels use to
load 8 halves at a time): loads and stores through reinterpreted device and threadgroup
pointers, ``v[j]`` with a variable ``j``, element-wise arithmetic and comparisons with vectors
and scalars, construction and conversion, locals and arrays. Own kernels, against NumPy, the
round trip through printed MSL/CUDA, the host-compiled CUDA, and (marked gpu) the H200."""
from __future__ import annotations

import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import MetalbenchError
from msl_cases import MSLCase, three_ways

rng = np.random.default_rng(8)
X16 = (rng.standard_normal(32 * 8) * 2).astype(np.float16)
F16 = rng.standard_normal(32 * 16).astype(np.float32)


def _dot8(x):
    xs = x.astype(np.float32).reshape(32, 8)
    a = (xs * np.float32(2) + xs).astype(np.float16).astype(np.float32)     # half arithmetic
    return [(a * np.arange(8, dtype=np.float32)).sum(1)]


def _convert_select(x):
    f = x.astype(np.float32)
    g = f * f - np.float32(1)
    return [np.where(g > f, g, f).astype(np.float32)]


def _ints(x):
    i = np.arange(32, dtype=np.int32)
    j = np.arange(8, dtype=np.int32)
    a = i[:, None] + j[None, :]
    b = np.broadcast_to(j, (32, 8))
    c = np.broadcast_to(np.array([1, 1, 1, 1, 2, 3, 4, 5], np.int32), (32, 8))
    v = ((a & 7) + ((b << 1) ^ c)).astype(np.float32)
    return [v.sum(1) + np.roll(v, -1, axis=0)[:, 3] + x[:32].astype(np.float32) * 0]


def _sum16(y):
    v = -y.reshape(32, 16) * np.float32(0.5)
    return [v.sum(1, dtype=np.float32) + v[:, 15] * 0 + np.float32(1) * (v[:, 9] > 0)]


def _mixed(x):
    a = x.reshape(32, 8).astype(np.float32)
    b = np.roll(a, -1, axis=0)
    c = (a + np.float32(1)) * b                                          # compound ops
    d = np.maximum(np.exp(c * np.float32(0.25)), np.float32(1.5))
    loc = np.concatenate([a, b], axis=1)                                 # float loc[16]
    dot = (a * a).sum(1)
    pos = (c > np.float32(0.5)).any(1)
    return [d.sum(1) + 2 * c[:, 6] + loc[:, 8 + 5] + dot + pos.astype(np.float32)]


def _five(x):
    a = x.reshape(32, 8)[:, :5].astype(np.float32) * np.float32(2)
    return [a[:, 0] + a[:, 2] + np.float32(3) * a[:, 4]]


CASES = [
    MSLCase("vec5_accumulator", """
        uint i = thread_position_in_grid.x;
        vec<float, 5> acc = vec<float, 5>(0.0f);
        for (int j = 0; j < 5; ++j) acc[j] += float(x[i * 8 + j]) * 2.0f;
        vec<float, 5> b = vec<float, 5>(float4(1.0f), 3.0f);
        acc = acc * b;
        out[i] = acc[0] + acc[4] + acc[2];
    """, {"x": X16}, [("out", (32,), np.float32)], _five, atol=1e-5),
    MSLCase("vec8_half_dot", """
        using V8 = vec<half, 8>;
        const device V8* xv = (const device V8*)x;
        uint i = thread_position_in_grid.x;
        V8 a = xv[i];
        a = a * 2.0h + a;
        float acc = 0.0f;
        for (int j = 0; j < 8; ++j) acc += float(a[j]) * float(j);
        out[i] = acc;
    """, {"x": X16}, [("out", (32,), np.float32)], _dot8, atol=2e-3),
    MSLCase("vec8_convert_select", """
        typedef vec<float, 8> F8;
        uint i = thread_position_in_grid.x;
        vec<half, 8> h = ((const device vec<half, 8>*)x)[i];
        F8 f = F8(h);
        F8 g = f * f - 1.0f;
        vec<bool, 8> m = g > f;
        F8 r = select(f, g, m);
        device F8* ov = (device F8*)out;
        ov[i] = r;
    """, {"x": X16}, [("out", (256,), np.float32)], _convert_select, atol=1e-5),
    MSLCase("vec8_int_locals_threadgroup", """
        threadgroup float tg[256];
        uint i = thread_position_in_grid.x;
        uint l = thread_position_in_threadgroup.x;
        vec<int, 8> a = vec<int, 8>(int(i));
        vec<int, 8> b = vec<int, 8>(0, 1, 2, 3, 4, 5, 6, 7);
        vec<int, 8> c = vec<int, 8>(int4(1), int4(2, 3, 4, 5));
        for (int j = 0; j < 8; ++j) a[j] += j;
        vec<int, 8> arr[2];
        arr[0] = a & 7;
        arr[1] = (b << 1) ^ c;
        threadgroup vec<float, 8>* tv = (threadgroup vec<float, 8>*)tg;
        tv[l] = vec<float, 8>(arr[0] + arr[1]);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float s = 0.0f;
        for (int j = 0; j < 8; ++j) s += tg[l * 8 + j];
        out[i] = s + tv[(l + 1) % 32][3] + x[i] * 0.0h;
    """, {"x": X16}, [("out", (32,), np.float32)], _ints, atol=1e-6),
    MSLCase("vec8_mixed", """
        uint i = thread_position_in_grid.x;
        uint l = thread_position_in_threadgroup.x;
        threadgroup vec<float, 8> buf[32];
        buf[l] = vec<float, 8>(((const device vec<half, 8>*)x)[i]);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        vec<float, 8> a = buf[l];
        vec<float, 8> b = buf[(l + 1) % 32];
        vec<float, 8> c = a;
        c += 1.0f;
        c *= b;
        vec<float, 8> twice;
        float s = scaled_sum(c, twice) + twice[6];
        float loc[16];
        for (int j = 0; j < 8; ++j) { loc[j] = a[j]; loc[8 + j] = buf[(l + 1) % 32][j]; }
        thread vec<float, 8>* lv = (thread vec<float, 8>*)loc;
        out[i] = s + lv[1][5] + dot(a, a) + (any(c > 0.5f) ? 1.0f : 0.0f);
    """, {"x": X16}, [("out", (32,), np.float32)], _mixed, atol=1e-4, header="""
        inline float scaled_sum(vec<float, 8> v, thread vec<float, 8>& twice) {
            twice = v * 2.0f;
            vec<float, 8> e = max(exp(v * 0.25f), 1.5f);
            float s = 0.0f;
            for (int j = 0; j < 8; ++j) s += e[j];
            return s;
        }"""),
    MSLCase("vec16_float_sum", """
        uint i = thread_position_in_grid.x;
        vec<float, 16> v = -((const device vec<float, 16>*)y)[i] * 0.5f;
        float s = 0.0f;
        for (uint j = 0; j < 16; ++j) s += v[j];
        vec<bool, 16> pos = v > 0.0f;
        out[i] = s + v[15] * 0.0f + (pos[9] ? 1.0f : 0.0f);
    """, {"y": F16}, [("out", (32,), np.float32)], _sum16, atol=1e-5),
]

test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_host_compiled_cuda_matches_numpy(c, monkeypatch):
    hostcuda = pytest.importorskip("hostcuda")
    if not hostcuda.HAVE_GXX:
        pytest.skip("no g++")
    hostcuda.install(monkeypatch)
    c.check(c.launch(c.kernel(), backend="cuda"))


@pytest.mark.parametrize("src, words", [
    ("vec<float, 32> v = vec<float, 32>(0.0f); out[0] = v[0];", "the type 'vec<float, 32>'"),
    ("vec<float, 8> v = vec<float, 8>(x[0]); out[0] = v.lo.x;", "vec<float, 8> has no component 'lo'"),
    ("vec<float, 8> v = vec<float, 8>(x[0]); out[0] = v.s7;", "vec<float, 8> has no component 's7'"),
    ("vec<float, 8> v = vec<float, 8>(x[0], x[1]); out[0] = v[0];", "needs 8 components, got 2"),
])
def test_wide_vector_misuse_names_the_construct(src, words):
    k = mb.metal_kernel(name="bad_wide", input_names=["x"], output_names=["out"], source=src)
    with pytest.raises(MetalbenchError, match="line") as e:
        k(inputs=[np.ones(4, np.float32)], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1,)],
          output_dtypes=[np.float32], backend="sim")
    assert words in str(e.value)
