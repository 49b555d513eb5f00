"""Vector types in the DSL (constructors, arithmetic, swizzles, component stores, arrays
of vectors, SIMD-group operations on vectors) and array views (``x.view(float4)[i]``
loads and stores, reinterpreting views, ``x[i:]``, rows ``x[r]`` passed to ``@mb.func``),
against NumPy on the simulator; printed MSL through the Metal syntax check."""
from __future__ import annotations

import numpy as np
import pytest

import metalbench as mb
from metalbench import msl_check
from metalbench.dsl import *  # noqa: F401,F403
from metalbench.errors import KernelSyntaxError, KernelTypeError

RNG = np.random.default_rng(4)


def _x(n=64, dtype=np.float32):
    return RNG.standard_normal(n).astype(dtype)


# ----------------------------------------------------------------------------- vector values

@mb.kernel
def vec_arith(x, y, out: mb.Out):
    i = thread_position_in_grid.x
    a = float4(x[4 * i], x[4 * i + 1], x[4 * i + 2], x[4 * i + 3])
    b = float4(y[4 * i], float2(y[4 * i + 1], y[4 * i + 2]), y[4 * i + 3])
    c = a * b + 2.0 - a / float4(4.0)
    d = float4(c.xy + c.zw, c.yx * 3)        # swizzles
    e = max(d, float4(0.0)) + abs(a).wzyx
    out[4 * i] = e.x
    out[4 * i + 1] = e.y
    out[4 * i + 2] = e.z
    out[4 * i + 3] = e.w


def test_vector_arithmetic_and_swizzles():
    x, y = _x(64), _x(64)
    got = np.asarray(vec_arith(x, y, grid=16, threadgroup=16, backend="sim")).reshape(-1, 4)
    a, b = x.reshape(-1, 4), y.reshape(-1, 4)
    c = a * b + np.float32(2) - a / np.float32(4)
    d = np.concatenate([c[:, :2] + c[:, 2:], c[:, [1, 0]] * np.float32(3)], axis=1)
    want = np.maximum(d, 0) + np.abs(a)[:, ::-1]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_integer_and_half_vectors():
    @mb.kernel
    def ints(x, out: mb.Out(shape=(32, 4), dtype=mb.int32)):
        i = thread_position_in_grid.x
        u = uint2(i, i * 3)
        v = int4(int32(i), -2, 7, int32(x[i] > 0))
        h = half4(float32(i) * 0.5)
        w = v * 2 + int4(int2(u.yx), 1, 1) - (v >> 1) + int4(h) % 3
        out[i, 0] = w.x
        out[i, 1] = w.y
        out[i, 2] = w.z
        out[i, 3] = w.w

    x = _x(32)
    got = np.asarray(ints(x, grid=32, threadgroup=32, backend="sim"))
    i = np.arange(32)
    v = np.stack([i, np.full(32, -2), np.full(32, 7), (x > 0).astype(int)], 1)
    w = v * 2 + np.stack([i * 3, i, np.ones(32, int), np.ones(32, int)], 1) - (v >> 1) \
        + np.trunc(i * 0.5).astype(int)[:, None] % 3
    np.testing.assert_array_equal(got, w)


def test_component_stores_and_vector_arrays():
    @mb.kernel
    def comps(x, out: mb.Out):
        i = thread_position_in_grid.x
        t = threadgroup_array(16, float3)
        v = float3(0.0)
        v.x = x[i]
        v.yz = float2(1.0, 2.0)
        v.z += 10
        t[i] = v
        t[i].y = 5.0
        t[i].xy *= 2
        threadgroup_barrier()
        w = t[15 - i]
        out[i] = w.x + w.y * 100 + w.z * 10000

    x = _x(16)
    got = np.asarray(comps(x, grid=16, threadgroup=16, backend="sim", checked=True))
    np.testing.assert_allclose(got, 2 * x[::-1] + 1000 + 120000, rtol=1e-6)


def test_simd_operations_on_vectors():
    @mb.kernel
    def sv(x, out: mb.Out(shape=(64, 2))):
        i = thread_position_in_grid.x
        v = float2(x[i], x[i] * x[i])
        s = simd_sum(v)
        p = simd_prefix_exclusive_sum(v)
        m = simd_max(v)
        sh = simd_shuffle_down(v, 1)
        out[i, 0] = s.x + p.x + m.x * 0 + sh.y * 0
        out[i, 1] = s.y + m.y

    x = _x(64)
    got = np.asarray(sv(x, grid=64, threadgroup=64, backend="sim"))
    g = x.reshape(2, 32)
    s, s2 = np.repeat(g.sum(1), 32), np.repeat((g * g).sum(1), 32)
    pre = np.concatenate([np.concatenate([[0], np.cumsum(r)[:-1]]) for r in g])
    np.testing.assert_allclose(got[:, 0], s + pre, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[:, 1], s2 + np.repeat((g * g).max(1), 32), rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- vector views

@mb.kernel
def scale4(x, out: mb.Out, s: float):
    i = thread_position_in_grid.x
    if i < x.size // 4:
        v = x.view(float4)[i]
        out.view(float4)[i] = v * s + float4(0.0, 1.0, 2.0, 3.0)


def test_vector_loads_and_stores_through_a_view():
    x = _x(256)
    got = np.asarray(scale4(x, 3.0, grid=64, threadgroup=64, backend="sim", checked=True))
    np.testing.assert_allclose(got, (x * 3).reshape(-1, 4) .__add__(np.arange(4, dtype=np.float32)).reshape(-1),
                               rtol=1e-6)
    r = scale4.specialize(x, 3.0).rendered("metal")
    assert msl_check.check(r) == []


def test_view_names_half_vectors_and_aug_assign():
    @mb.kernel
    def h2(x, out: mb.Out):
        i = thread_position_in_grid.x
        xv = x.view(half2)
        ov = out.view(half2)
        n = xv.size
        if i < n:
            ov[i] = xv[i].yx
            ov[i] += half2(1.0, 2.0)

    x = _x(64, np.float16)
    got = np.asarray(h2(x, grid=32, threadgroup=32, backend="sim", checked=True)).reshape(-1, 2)
    want = x.reshape(-1, 2)[:, ::-1] + np.array([1, 2], np.float16)
    np.testing.assert_array_equal(got, want)


def test_a_view_of_another_type_reinterprets_the_bytes():
    @mb.kernel
    def bits(x, out: mb.Out(shape=lambda x: x.shape, dtype=mb.uint32)):
        i = thread_position_in_grid.x
        out[i] = x.view(uint32)[i] ^ 0x80000000
        if i == 0:
            out.view(uint16)[1] = uint16(0xABCD)

    x = _x(32)
    got = np.asarray(bits(x, grid=32, threadgroup=32, backend="sim"))
    want = x.view(np.uint32) ^ np.uint32(0x80000000)
    want.view(np.uint16)[1] = 0xABCD
    np.testing.assert_array_equal(got, want)


# ----------------------------------------------------------------------------- slices and rows

@mb.func
def dot3(p, q):
    return p[0] * q[0] + p[1] * q[1] + p[2] * q[2]


@mb.func
def row_sum(r, n):
    s = 0.0
    for k in range(n):
        s += r[k]
    return s


def test_slices_and_rows_as_views_passed_to_functions():
    @mb.kernel
    def views(x, m, out: mb.Out):
        i = thread_position_in_grid.x
        if i + 3 <= x.size:
            out[i] = dot3(x[i:], x[i:i + 3]) + row_sum(m[i % 4], m.shape[1]) + x[i:].size
        else:
            out[i] = -1.0

    x, m = _x(16), _x(20).reshape(4, 5)
    got = np.asarray(views(x, m, grid=16, threadgroup=16, backend="sim", checked=True))
    i = np.arange(16)
    want = np.full(16, -1.0, np.float32)
    for k in range(14):
        want[k] = np.dot(x[k:k + 3], x[k:k + 3]) + m[k % 4].sum() + (16 - k)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    del i


def test_a_row_bound_to_a_name_is_a_view_and_one_index_as_a_value_stays_linear():
    @mb.kernel
    def rows(m, out: mb.Out(shape=lambda m: (m.shape[0],))):
        r = thread_position_in_grid.x
        row = m[r]                    # indexed below: a view of row r
        lin = m[r]                    # used as a value: the linear element r
        out[r] = row[1] + lin * 1000 + row.size * 0

    m = _x(12).reshape(3, 4)
    got = np.asarray(rows(m, grid=3, threadgroup=3, backend="sim", checked=True))
    np.testing.assert_allclose(got, m[:, 1] + m.reshape(-1)[:3] * 1000, rtol=1e-6)


def test_a_view_keeps_the_offset_it_had_when_bound():
    @mb.kernel
    def keep(x, out: mb.Out):
        i = thread_position_in_grid.x
        j = i
        p = x[j:]
        j = j + 1                     # p still starts at x[i]
        out[i] = p[0] + x[j:][0] * 0 if j < x.size else p[0]

    x = _x(8)
    np.testing.assert_array_equal(np.asarray(keep(x, grid=8, threadgroup=8, backend="sim")), x)


def test_two_dimensional_slices_and_rows_of_threadgroup_arrays():
    @mb.kernel
    def tg(x, out: mb.Out(shape=(4, 8))):
        t = thread_position_in_threadgroup.x
        tile = threadgroup_array((4, 8), float32)
        tile[t // 8, t % 8] = x[t]
        threadgroup_barrier()
        below = tile[1:]              # rows 1..3
        r = t // 8
        out[r, t % 8] = below[r - 1][t % 8] if r >= 1 else row_sum(tile[0], 8)

    x = _x(32)
    got = np.asarray(tg(x, grid=32, threadgroup=32, backend="sim", checked=True))
    want = x.reshape(4, 8).copy()
    want[0] = x[:8].sum()
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_view_misuse_errors():
    with pytest.raises(KernelTypeError, match="is not a type a view can have"):
        @mb.kernel
        def bad2(x, out: mb.Out):
            out[0] = x.view(3)[0]
        bad2(_x(), grid=1, backend="sim")


@mb.kernel
def _geometry(x, out: mb.Out(shape=lambda x: (x.size // 4,), dtype=mb.float32)):
    i = thread_position_in_grid.x
    v = x.view(float4)[i]
    u = v.xyz
    c = cross(u, float3(v.w, 1.0, -2.0))
    out[i] = dot(v, v) + length(u) + normalize(u).x + c.x * 3.0 + c.y * 5.0 + c.z + distance(u, float3(1.0))


def test_geometric_functions_on_vector_views():
    x = np.random.default_rng(7).standard_normal(64).astype(np.float32)
    got = np.asarray(_geometry(x, grid=16, backend="sim", checked=True))
    v = x.reshape(16, 4).astype(np.float64)
    u = v[:, :3]
    c = np.cross(u, np.stack([v[:, 3], np.ones(16), -2 * np.ones(16)], 1))
    n = np.linalg.norm(u, axis=1)
    exp = (v * v).sum(1) + n + u[:, 0] / n + c[:, 0] * 3 + c[:, 1] * 5 + c[:, 2] + np.linalg.norm(u - 1, axis=1)
    np.testing.assert_allclose(got, exp, rtol=2e-6, atol=2e-5)


@mb.kernel
def _vec_copy(x, out: mb.Out(shape=lambda x: (x.size // 4 * 4,), dtype=mb.float32)):
    i = thread_position_in_grid.x
    v = x.view(float4)[i]
    out.view(float4)[i] = v.wzyx * 2.0


@pytest.mark.gpu
def test_vector_view_accesses_on_the_gpu_equal_the_simulator():
    """One 128-bit access where the address is aligned, element accesses where it is not
    (a view of an offset buffer: x[1:])."""
    import mlx.core as mx
    x = mx.array(np.random.default_rng(8).standard_normal(1025).astype(np.float32))
    for arr in (x[:1024], x[1:]):
        sim = np.asarray(_vec_copy(np.array(arr), grid=256, threadgroup=64, backend="sim"))
        np.testing.assert_array_equal(np.asarray(_vec_copy(arr, grid=256, threadgroup=64)), sim)
