"""Metal's matrix types (``float4x4``, ``half3x3``, ``float4x3``, ``matrix<float, 2, 3>``)
in MSL bodies: construction (columns, column-major scalars, a diagonal), columns and
elements (read and assigned, constant and run-time indices), ``m * v``, ``v * m``, ``a * b``,
``m * s``, ``a + b``, ``-m``, compound assignments, ``transpose``, ``determinant``,
constant matrices, arrays of matrices, matrices in device memory through pointers and
references (a float3 column takes 16 bytes), matrices passed to and returned by header
functions and lambdas, threadgroup matrices, matrix members of structs (local and in device
memory) -- on the simulator (unchecked and checked) against
NumPy on random and edge data, and round-tripped through the printed MSL and CUDA."""
from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import MetalbenchError
from msl_cases import MSLCase, three_ways

RNG = np.random.default_rng(29)
N = 32


def _mats(x, cols, rows, at):
    """The matrices thread i builds from x[i, at:], column by column: shape (N, rows, cols)."""
    flat = x[:, at:at + cols * rows]
    return flat.reshape(N, cols, rows).transpose(0, 2, 1)


def _store(out, v):
    """v (N, k) into out (N, 16) from column 0."""
    out[:, :v.shape[1]] = v


# -- 4x4: every operator, assignments of columns and elements, m = m * m -------------------
OPS4 = MSLCase(
    "mat4_ops",
    """
    uint i = thread_position_in_grid.x;
    device const float* r = x + 32 * i;
    float4x4 a = float4x4(float4(r[0], r[1], r[2], r[3]), float4(r[4], r[5], r[6], r[7]),
                          float4(r[8], r[9], r[10], r[11]), float4(r[12], r[13], r[14], r[15]));
    float4x4 b(r[16], r[17], r[18], r[19], r[20], r[21], r[22], r[23],
               r[24], r[25], r[26], r[27], r[28], r[29], r[30], r[31]);
    float4x4 id = float4x4(2.0f);             // 2 on the diagonal
    float4 v = float4(r[0], r[5], r[10], r[15]);
    float4x4 c = a * b + id - transpose(b) * 0.5f;
    c[1] = c[1] + v;                          // a column, assigned
    c[2][3] = r[7];                           // an element, assigned
    c[3].y += 1.0f;
    c = c * a;                                // reads the old c throughout
    c *= 2.0f;
    c += -a;
    float4 mv = c * v;
    float4 vm = v * c;
    device float* o = out + 16 * i;
    for (int k = 0; k < 4; ++k) { o[k] = mv[k]; o[4 + k] = vm[k]; o[8 + k] = c[k][k]; }
    o[12] = determinant(a);
    o[13] = determinant(b * 0.25f);
    o[14] = c[i & 3][(i >> 2) & 3];           // run-time column and row
    o[15] = (id * v).w;
    """,
    {"x": RNG.uniform(-2, 2, (N, 32)).astype(np.float32)},
    [("out", (N, 16), np.float32)],
    None, atol=2e-4)


def _ops4_ref(x):
    a, b = _mats(x, 4, 4, 0).astype(np.float64), _mats(x, 4, 4, 16).astype(np.float64)
    ident = 2 * np.eye(4)
    v = x[:, [0, 5, 10, 15]].astype(np.float64)
    c = a @ b + ident - b.transpose(0, 2, 1) * 0.5
    c[:, :, 1] += v
    c[:, 3, 2] = x[:, 7]
    c[:, 1, 3] += 1
    c = c @ a
    c = c * 2 - a
    out = np.zeros((N, 16))
    out[:, 0:4] = np.einsum("nrc,nc->nr", c, v)
    out[:, 4:8] = np.einsum("nr,nrc->nc", v, c)
    out[:, 8:12] = np.diagonal(c, axis1=1, axis2=2)
    out[:, 12] = np.linalg.det(a)
    out[:, 13] = np.linalg.det(b * 0.25)
    i = np.arange(N)
    out[:, 14] = c[i, (i >> 2) & 3, i & 3]
    out[:, 15] = 2 * v[:, 3]
    return [out]


OPS4.ref = _ops4_ref

# -- non-square and 2x2/3x3: the shapes of products, float3 columns -------------------------
SHAPES = MSLCase(
    "mat_shapes",
    """
    uint i = thread_position_in_grid.x;
    device const float* r = x + 32 * i;
    float2x3 a = float2x3(float3(r[0], r[1], r[2]), float3(r[3], r[4], r[5]));   // 2 columns of 3
    float3x2 b = float3x2(r[6], r[7], r[8], r[9], r[10], r[11]);                  // 3 columns of 2
    float3x3 ab = a * b;                      // 3x3
    float2x2 ba = b * a;                      // 2x2
    metal::float3x3 s = ab - transpose(ab);
    matrix<float, 2, 3> t = transpose(b) * 3.0f;
    float3 u = a * float2(r[12], r[13]);
    float2 w = float3(r[14], r[15], r[16]) * a;
    auto p = ab * ab;
    device float* o = out + 16 * i;
    o[0] = u.x; o[1] = u.y; o[2] = u.z; o[3] = w.x; o[4] = w.y;
    o[5] = determinant(ba); o[6] = determinant(ab + float3x3(1.0f)); o[7] = s[0][1] + s[1][0];
    o[8] = t[1].z; o[9] = p[2][1]; o[10] = ba[1][0];
    float3x3 m3 = float3x3(0.0f);
    m3[0] = float3(r[17], r[18], r[19]);
    m3[1].z = r[20];
    o[11] = (m3 * float3(1.0f, 2.0f, 3.0f)).z;
    o[12] = determinant(float2x2());
    o[13] = (a * b)[1].y + (ba * 2.0f)[i & 1].x;    // a column of a computed matrix
    float2x2 sel = (i & 1) ? ba : ba * -1.0f;
    o[14] = sel[1].y;
    o[15] = float(sizeof(float3x3) + sizeof(half4x2) + sizeof(sel) + sizeof(metal::float4x3));
    """,
    {"x": RNG.uniform(-2, 2, (N, 32)).astype(np.float32)},
    [("out", (N, 16), np.float32)],
    None, atol=2e-4, init_value=0.0)


def _shapes_ref(x):
    x64 = x.astype(np.float64)
    a, b = _mats(x64, 2, 3, 0), _mats(x64, 3, 2, 6)
    ab, ba = a @ b, b @ a
    s = ab - ab.transpose(0, 2, 1)
    t = b.transpose(0, 2, 1) * 3
    u = np.einsum("nrc,nc->nr", a, x64[:, 12:14])
    w = np.einsum("nr,nrc->nc", x64[:, 14:17], a)
    p = ab @ ab
    out = np.zeros((N, 16))
    out[:, 0:3], out[:, 3:5] = u, w
    out[:, 5] = np.linalg.det(ba)
    out[:, 6] = np.linalg.det(ab + np.eye(3))
    out[:, 7] = s[:, 1, 0] + s[:, 0, 1]
    out[:, 8] = t[:, 2, 1]
    out[:, 9] = p[:, 1, 2]
    out[:, 10] = ba[:, 0, 1]
    out[:, 11] = x64[:, 19] + 2 * x64[:, 20]
    out[:, 13] = ab[:, 1, 1] + 2 * ba[np.arange(N), 0, np.arange(N) & 1]
    out[:, 14] = np.where(np.arange(N) & 1, 1, -1) * ba[:, 1, 1]
    out[:, 15] = 48 + 16 + 16 + 64
    return [out]


SHAPES.ref = _shapes_ref

# -- half matrices, a constant matrix in the header and one in the body, arrays of matrices --
CONSTS = MSLCase(
    "mat_consts",
    """
    uint i = thread_position_in_grid.x;
    constant float2x2 ROT = float2x2(float2(0.0f, 1.0f), float2(-1.0f, 0.0f));
    half3x3 h = half3x3(half3(x[i], 1.0h, 0.0h), half3(0.0h, 2.0h, 0.0h), half3(0.0h, 0.0h, 0.5h));
    half3 hv = h * half3(1.0h, 1.0h, 2.0h);
    float3 yuv = YUV * float3(x[i], 0.5f, -0.25f);
    float2x2 ms[4];
    for (int k = 0; k < 4; ++k) ms[k] = float2x2(float(k + 1)) * ROT;
    ms[i & 3][1][0] = x[i];
    float2 q = ms[i & 3] * float2(1.0f, 2.0f);
    out[4 * i] = float(hv.x) + float(hv.z);
    out[4 * i + 1] = yuv.x + yuv.y + yuv.z;
    out[4 * i + 2] = q.x;
    out[4 * i + 3] = q.y;
    """,
    {"x": np.concatenate([RNG.uniform(-4, 4, N - 4), [0.0, -0.0, 1e-30, 1024.0]]).astype(np.float32)},
    [("out", (4 * N,), np.float32)],
    None,
    header="""
    constant float3x3 YUV = float3x3(float3(0.299f, -0.147f, 0.615f), float3(0.587f, -0.289f, -0.515f),
                                     float3(0.114f, 0.436f, -0.100f));
    """, atol=2e-3)


def _consts_ref(x):
    x64 = x.astype(np.float64)
    yuv = np.array([[0.299, 0.587, 0.114], [-0.147, -0.289, 0.436], [0.615, -0.515, -0.100]])
    out = np.zeros((N, 4))
    out[:, 0] = x64 + 1
    out[:, 1] = (yuv @ np.stack([x64, np.full(N, 0.5), np.full(N, -0.25)])).sum(0)
    k = (np.arange(N) & 3) + 1
    # (k I) @ ROT = [[0, -k], [k, 0]] (rows), then element [1][0] (column 1, row 0) = x
    m01 = x64                                 # row 0, column 1
    out[:, 2] = 0 * 1 + m01 * 2
    out[:, 3] = k * 1 + 0 * 2
    return [out.reshape(-1)]


CONSTS.ref = _consts_ref

# -- matrices in device memory: a float3x3 takes 3 columns of 16 bytes, a float4x4 64 -----
DEVICE = MSLCase(
    "mat_device",
    """
    uint i = thread_position_in_grid.x;
    device const float3x3* R = (device const float3x3*)mats;          // 12 floats apiece
    const device float4x4& P = *reinterpret_cast<const device float4x4*>(proj);
    float3 p = float3(pts[3 * i], pts[3 * i + 1], pts[3 * i + 2]);
    const device float3x3& r = R[i % 4];
    float4 h = P * float4(r * p, 1.0f);
    device float3x3* O = (device float3x3*)out_m;
    O[i] = transpose(R[i % 4]) * 2.0f;
    O[i][2][1] = h.w;                         // column 2, row 1 in memory
    O[i][0].z += P[3][3];
    float2x2 d = *((device const float2x2*)proj + 1);     // floats 4..7 as a 2x2
    out_p[4 * i] = h.x / h.w;
    out_p[4 * i + 1] = h.y / h.w;
    out_p[4 * i + 2] = determinant(d) + r[1].y;
    out_p[4 * i + 3] = float(sizeof(*R) + sizeof(r) + sizeof(R));
    """,
    {"mats": RNG.uniform(-1, 1, 4 * 12).astype(np.float32),
     "proj": np.array([1.5, 0.1, 0, 0.2, -0.1, 1.2, 0.3, 0.1, 0.0, 0.2, 0.9, 0.4, 0.3, -0.2, 0.1, 5.0], np.float32),
     "pts": RNG.uniform(-3, 3, 3 * N).astype(np.float32)},
    [("out_m", (N * 12,), np.float32), ("out_p", (4 * N,), np.float32)],
    None, atol=1e-4, init_value=0.0)


def _device_ref(mats, proj, pts):
    cols = mats.astype(np.float64).reshape(4, 3, 4)[:, :, :3]      # [k, column, row]; the 4th lane is padding
    R = cols.transpose(0, 2, 1)
    P = proj.astype(np.float64).reshape(4, 4).T
    p = pts.astype(np.float64).reshape(N, 3)
    k = np.arange(N) % 4
    q = np.einsum("nrc,nc->nr", R[k], p)
    h = np.einsum("rc,nc->nr", P, np.concatenate([q, np.ones((N, 1))], 1))
    O = np.zeros((N, 3, 4))                                          # [i, column, row incl. padding]
    O[:, :, :3] = 2 * R[k]                 # column j of transpose(R) is row j of R
    O[:, 2, 1] = h[:, 3]
    O[:, 0, 2] += P[3, 3]
    d = proj.astype(np.float64)[4:8]
    out_p = np.stack([h[:, 0] / h[:, 3], h[:, 1] / h[:, 3],
                      np.full(N, d[0] * d[3] - d[2] * d[1]) + R[k][:, 1, 1], np.full(N, 48.0 + 48 + 8)], 1)
    return [O.reshape(-1), out_p.reshape(-1)]


DEVICE.ref = _device_ref

# -- matrices passed to and returned by header functions (by value and by reference) --------
FUNCS = MSLCase(
    "mat_funcs",
    """
    uint i = thread_position_in_grid.x;
    float3x3 r = rot_z(a[i]);
    float3 p = apply(r, float3(b[i], 1.0f, 0.0f));
    float3x3 s = r;
    shear(s, a[i]);                              // through a reference: s changes
    auto f = [](float2x2 m, float2 v) { return m * v; };
    float2 q = f(float2x2(a[i], b[i], 0.0f, 1.0f), float2(1.0f, 2.0f));
    out[4 * i] = p.x + p.y;
    out[4 * i + 1] = s[1].x + s[2][2] + determinant(compose(r, s));
    out[4 * i + 2] = q.x + q.y;
    out[4 * i + 3] = pick(b[i])[0].x;
    """,
    {"a": np.concatenate([RNG.uniform(-np.pi, np.pi, N - 2), [0.0, np.pi / 2]]).astype(np.float32),
     "b": np.concatenate([RNG.uniform(-3, 3, N - 2), [0.0, 5.0]]).astype(np.float32)},
    [("out", (4 * N,), np.float32)],
    None,
    header="""
    float3x3 rot_z(float t) {
      float c = cos(t), s = sin(t);
      return float3x3(float3(c, s, 0.0f), float3(-s, c, 0.0f), float3(0.0f, 0.0f, 1.0f));
    }
    inline float3 apply(const thread float3x3& m, float3 v) { return m * v; }
    void shear(thread float3x3& m, float k) { m[1].x += k; m[2][2] = 2.0f; }
    float3x3 compose(float3x3 a, float3x3 b) { return a * b; }
    float2x2 pick(float v) {
      if (v > 2.0f) { return float2x2(-1.0f); }      // an early return
      return float2x2(v);
    }
    """, atol=1e-4)


def _funcs_ref(a, b):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    c, s = np.cos(a64), np.sin(a64)
    px, py = c * b64 - s, s * b64 + c
    # shear: column 1's x (row 0) += a, element [2][2] = 2; det(r * s) = det(r) det(s),
    # det(r) = 1, det(s) = 2 (c * c - s * (a - s)) = 2 (1 - a s)
    s10 = -s + a64
    out = np.stack([px + py, s10 + 2 + 2 * (1 - a64 * s), (a64 + 0) + (b64 + 2), np.where(b64 > 2, -1.0, b64)], 1)
    return [out.reshape(-1)]


FUNCS.ref = _funcs_ref

# -- matrices in loops, matrix<half, 3, 3>, nested calls ------------------------------------
MISC = MSLCase(
    "mat_misc",
    """
    uint i = thread_position_in_grid.x;
    float2x2 acc = float2x2(1.0f);
    float2x2 step = float2x2(1.0f, 1.0f, 0.0f, 1.0f);      // columns (1, 1), (0, 1)
    for (uint k = 0; k < i % 8; ++k) { acc = acc * step; }
    matrix<half, 3, 3> h = matrix<half, 3, 3>(half(x[i]));
    half3 hv = h * half3(1.0h, 2.0h, 3.0h) * 2.0h;
    h *= 0.5h;
    float2x2 a = float2x2(x[i], 1.0f, 2.0f, 3.0f);
    out[4 * i] = acc[0][1];
    out[4 * i + 1] = float(hv.x) + float(h[0][0]);
    out[4 * i + 2] = determinant(transpose(a * a) - float2x2(1.0f));
    out[4 * i + 3] = float(sizeof(h) + alignof(matrix<half, 3, 3>));
    """,
    {"x": np.concatenate([RNG.uniform(-2, 2, N - 3), [0.0, -1.0, 2.0]]).astype(np.float32)},
    [("out", (4 * N,), np.float32)],
    None, atol=5e-3)


def _misc_ref(x):
    x64 = x.astype(np.float64)
    xh = x.astype(np.float16).astype(np.float64)
    out = np.stack([np.arange(N) % 8, 2 * xh + 0.5 * xh, 8 * x64**2 - 12 * x64 - 8, np.full(N, 24.0 + 8)], 1)
    return [out.reshape(-1)]


MISC.ref = _misc_ref

# -- threadgroup matrices: written by some threads, read by all after a barrier ------------
TGROUP = MSLCase(
    "mat_threadgroup",
    """
    uint i = thread_position_in_grid.x;
    uint t = thread_position_in_threadgroup.x;
    threadgroup float2x2 shared;
    threadgroup float3x3 many[2];
    if (t == 0) { shared = float2x2(x[i], 2.0f, 3.0f, 4.0f); }
    if (t < 2) { many[t] = float3x3(float(t + 1)); many[t][2].x = x[i]; }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float2 v = shared * float2(x[i], 1.0f);
    out[4 * i] = v.x;
    out[4 * i + 1] = v.y;
    out[4 * i + 2] = determinant(many[t & 1]);
    out[4 * i + 3] = many[1][2][0];
    """,
    {"x": RNG.uniform(-2, 2, N).astype(np.float32)},
    [("out", (4 * N,), np.float32)],
    None, tg=(8, 1, 1), atol=1e-5)


def _tgroup_ref(x):
    x64 = x.astype(np.float64)
    first = x64[(np.arange(N) // 8) * 8]           # thread 0 of each threadgroup
    second = x64[(np.arange(N) // 8) * 8 + 1]
    out = np.stack([first * x64 + 3, 2 * x64 + 4, np.where(np.arange(N) & 1, 8.0, 1.0), second], 1)
    return [out.reshape(-1)]


TGROUP.ref = _tgroup_ref

# -- matrix members: a local object with methods, copies and {} / {...} initialisation; a struct
# in device memory read and written through pointers (members at C's offsets) --------------
MEMBERS = MSLCase(
    "mat_members",
    """
    uint i = thread_position_in_grid.x;
    Xf xf;
    xf.t = float3(1.0f, 2.0f, 3.0f);
    xf.spin(a[i]);
    xf.rot[2].z = 2.0f;
    xf.pair[0] = float2x2(a[i]);
    xf.pair[1] = xf.pair[0] * 3.0f;
    float3 p = xf.apply(float3(1.0f, 0.0f, 1.0f));
    Xf copy = xf;
    copy.rot *= 2.0f;
    Plain pl = {float4x4(a[i]), 1.0f};
    Plain zero = {};
    device const Rec* r = (device const Rec*)recs;
    device Rec* o = (device Rec*)out_r;
    float3 c = r[i & 1].m * float3(1.0f);
    o[i].m = transpose(r[i & 1].m);
    o[i].k = c.x + r->ms[1][0].y + determinant(r->ms[0]);
    o[i].ms[1] = r->ms[1] * 2.0f;
    o[i].ms[0][1].x = float(sizeof(Rec));
    out[4 * i] = p.x + p.z;
    out[4 * i + 1] = copy.rot[0][0] + xf.rot[0][0];
    out[4 * i + 2] = xf.pair[1][1][1] + determinant(pl.m) + zero.m[3][3] + float(sizeof(Xf));
    out[4 * i + 3] = (copy.rot * float3(1.0f)).y + float(sizeof(Plain));
    """,
    {"a": np.concatenate([RNG.uniform(-2, 2, N - 2), [0.0, np.pi]]).astype(np.float32),
     "recs": RNG.uniform(-2, 2, 2 * 24).astype(np.float32)},
    [("out", (4 * N,), np.float32), ("out_r", (24 * N,), np.float32)],
    None,
    header="""
    struct Xf {
      float3x3 rot = float3x3(1.0f);
      float3 t;
      float2x2 pair[2];
      float3 apply(float3 p) const { return rot * p + t; }
      void spin(float a) thread {
        rot = rot * float3x3(float3(cos(a), sin(a), 0.0f), float3(-sin(a), cos(a), 0.0f), float3(0.0f, 0.0f, 1.0f));
      }
    };
    struct Plain { float4x4 m; float k; };
    struct Rec { float k; float3x3 m; float2x2 ms[2]; };      // k at 0, m at 16 bytes, ms at 64: 96 bytes
    """, atol=1e-4, init_value=0.0)


def _members_ref(a, recs):
    a64 = a.astype(np.float64)
    c, s = np.cos(a64), np.sin(a64)
    out = np.stack([c + 1 + 2 + 3, 2 * c + c, 3 * a64 + a64**4 + 0 + 96, 2 * (s + c) + 80], 1)
    rec = recs.astype(np.float64).reshape(2, 24)
    m = rec[:, 4:16].reshape(2, 3, 4)[:, :, :3]          # [rec, column, row]
    ms = rec[:, 16:24].reshape(2, 2, 2, 2)                # [rec, matrix, column, row]
    o = np.zeros((N, 24))
    k = np.arange(N) & 1
    o[:, 4:16] = np.pad(m[k].transpose(0, 2, 1), ((0, 0), (0, 0), (0, 1))).reshape(N, 12)
    det0 = ms[0, 0, 0, 0] * ms[0, 0, 1, 1] - ms[0, 0, 1, 0] * ms[0, 0, 0, 1]
    o[:, 0] = m[k].sum(1)[:, 0] + ms[0, 1, 0, 1] + det0
    o[:, 20:24] = 2 * ms[0, 1].reshape(4)
    o[:, 18] = 96
    return [out.reshape(-1), o.reshape(-1)]


MEMBERS.ref = _members_ref

# -- function templates over matrices: matrix<T, C, R> parameters deduce T, C and R; a template
# parameter deduced as a matrix type, returned -----------------------------------------------
TEMPLATES = MSLCase(
    "mat_templates",
    """
    uint i = thread_position_in_grid.x;
    float3x3 m = float3x3(x[i]);
    m[2][2] = 5.0f;
    float2x2 t = twice(float2x2(x[i], 1.0f, 2.0f, 3.0f));
    out[4 * i] = trace(float2x2(x[i]));
    out[4 * i + 1] = diag(m).x + diag(m).z + float(diag(half2x2(2.0h)).y);
    out[4 * i + 2] = t[1][0] + twice(m)[2].z;
    out[4 * i + 3] = trace(t * t);
    """,
    {"x": RNG.uniform(-2, 2, N).astype(np.float32)},
    [("out", (4 * N,), np.float32)],
    None,
    header="""
    template <typename T> T trace(matrix<T, 2, 2> m) { return m[0][0] + m[1][1]; }
    template <typename T, int N> vec<T, N> diag(const thread matrix<T, N, N>& m) {
      vec<T, N> d;
      for (int k = 0; k < N; ++k) { d[k] = m[k][k]; }
      return d;
    }
    template <typename M> M twice(M m) { return m * 2.0f; }
    """, atol=1e-4)


def _templates_ref(x):
    x64 = x.astype(np.float64)
    t = 2 * np.stack([np.stack([x64, np.ones(N)], 1), np.stack([np.full(N, 2.0), np.full(N, 3.0)], 1)], 2)
    tt = t @ t                                  # t[n, row, column]
    out = np.stack([2 * x64, x64 + 5 + 2, t[:, 0, 1] + 10, tt[:, 0, 0] + tt[:, 1, 1]], 1)
    return [out.reshape(-1)]


TEMPLATES.ref = _templates_ref

CASES = [OPS4, SHAPES, CONSTS, DEVICE, FUNCS, MISC, TGROUP, MEMBERS, TEMPLATES]
test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)


@pytest.mark.parametrize("src,words", [
    ("threadgroup float2x2 m = float2x2(1.0f); out[0] = 0.0f;", "threadgroup variables cannot have initialisers"),
    ("float2x2 m = float2x2(1.0f); out[0] = dot(m, m);", "a float2x2 value here"),
    ("float2x2 m = float2x2(1.0f); out[0] = float(m);", "a float2x2 value here"),
    ("float2x2 m = float2x2(1.0f, 2.0f, 3.0f); out[0] = m[0].x;", "a float2x2 is made from"),
    ("float2x3 m = float2x3(1.0f); out[0] = (m * m)[0].x;", "the left's columns must match"),
    ("float2x3 m = float2x3(1.0f); out[0] = determinant(m);", "the matrix must be square"),
    ("float2x2 m = float2x2(1.0f); float3x3 n = m; out[0] = 0.0f;", "a float3x3 needs a float3x3 value"),
])
def test_misuse_names_the_construct(src, words):
    k = mb.metal_kernel(name="bad_mats", input_names=["x"], output_names=["out"], source=src)
    with pytest.raises(MetalbenchError) as ei:
        k(inputs=[mx.zeros((4,))], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(4,)],
          output_dtypes=[mx.float32], backend="sim")
    assert words in str(ei.value) and "line 1" in str(ei.value), str(ei.value)


def test_a_headers_own_matrix_template_wins():
    """A header that declares its own ``matrix<T, R, C>`` class gets it, not Metal's."""
    k = mb.metal_kernel(name="own_matrix", input_names=["x"], output_names=["out"],
                        header="template <typename T, int R, int C> struct matrix { T v[R * C]; "
                               "matrix(T a) { for (int k = 0; k < R * C; ++k) v[k] = a + k; } };",
                        source="uint i = thread_position_in_grid.x; matrix<float, 2, 3> m(x[i]); out[i] = m.v[5];")
    x = RNG.uniform(-2, 2, 8).astype(np.float32)
    (out,) = k(inputs=[mx.array(x)], grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(8,)],
               output_dtypes=[mx.float32], backend="sim")
    np.testing.assert_allclose(np.array(out), x + 5, rtol=1e-6)
