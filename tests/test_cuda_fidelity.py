"""MSL kernels whose printed CUDA must mean what the simulator means (issue 13): the
semantics where C++ on an NVIDIA GPU and MSL part ways silently -- integer vector
division by 0 and shift counts past the width, float -> narrow integer conversions,
uchar/char/ushort promotions, half and bfloat rounding, views of bytes at offsets that
are no multiple of the wider type (GGUF's 18-byte Q4_0 blocks, threadgroup uchar arrays),
bf16 attention with SIMD-group reductions and threadgroup memory (an MLA-style decode
kernel), and MLX's kernel cache keyed by name.

Every kernel is our own. Each runs three ways against its NumPy reference:

* the simulator (unchecked and checked);
* the printed CUDA compiled by g++ and run on the CPU (``hostcuda``: the device side
  modelled, a misaligned access, a shift past the width and a division by 0 stop it);
* the printed CUDA on an NVIDIA GPU through MLX (marker ``gpu``; skips elsewhere).

On the H200::

    .venv/bin/python -m pytest -q -m gpu tests/test_cuda_fidelity.py
"""
from __future__ import annotations

import ml_dtypes
import mlx.core as mx
import numpy as np
import pytest

import hostcuda
import metalbench as mb
from metalbench.errors import MetalbenchError
from msl_cases import MSLCase

RNG = np.random.default_rng(13)
BF16 = ml_dtypes.bfloat16
needs_gxx = pytest.mark.skipif(not hostcuda.HAVE_GXX, reason="needs g++ (the host harness for printed CUDA)")


# ----------------------------------------------------------------------------- integer vectors
_I = RNG.integers(-60, 60, 128).astype(np.int32)
_I[::5] = 0
_I[3], _I[4], _I[8], _I[11] = -2 ** 31, -1, -2 ** 31, -1
_U = RNG.integers(0, 2 ** 32, 128, dtype=np.uint64).astype(np.uint32)
_N = RNG.integers(0, 64, 128).astype(np.uint32)


def _idiv(a, b):
    a, b = int(a), int(b)
    if b == 0:
        return 0
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return (q + 2 ** 31) % 2 ** 32 - 2 ** 31          # INT_MIN / -1 wraps to INT_MIN


def _imod(a, b):
    a, b = int(a), int(b)
    return 0 if b in (0, -1) else a - b * _idiv(a, b)


def _vec_int_ref(i32, u32, n):
    a, b = i32.reshape(-1, 4), i32.reshape(-1, 4)[:, ::-1]
    q = np.array([[_idiv(x, y) for x, y in zip(r, s)] for r, s in zip(a, b)], np.int32)
    m = np.array([[_imod(x, y) for x, y in zip(r, s)] for r, s in zip(a, b)], np.int32)
    u, c = u32.reshape(-1, 4).astype(np.uint64), n.reshape(-1, 4).astype(np.uint64)
    shl = ((u << (c & 31)) & 0xFFFFFFFF).astype(np.uint32)
    shr = (u >> (c & 31)).astype(np.uint32)
    sar = (a.astype(np.int64) >> (c.astype(np.int64) & 31)).astype(np.int32)
    ub = (u & 0xFF).astype(np.uint8)
    b8 = ((ub.astype(np.uint32) << (c & 7)) & 0xFF).astype(np.uint8)       # a uchar4 shifts in 8 bits
    return [q, m, shl, shr, sar, b8]


VEC_INT = MSLCase(
    "vec_int",
    """
    // integer vector / and % with zero and -1 divisors, shifts with counts past the width
    uint i = thread_position_in_grid.x;
    int4 a = int4(i32[4 * i], i32[4 * i + 1], i32[4 * i + 2], i32[4 * i + 3]);
    uint4 u = uint4(u32[4 * i], u32[4 * i + 1], u32[4 * i + 2], u32[4 * i + 3]);
    uint4 c = uint4(n[4 * i], n[4 * i + 1], n[4 * i + 2], n[4 * i + 3]);
    int4 q = a / a.wzyx;
    int4 m = a % a.wzyx;
    uint4 l = u << c;
    uint4 r = u >> c;
    int4 s = a >> int4(c);
    uchar4 b = uchar4(u) << uchar4(c);
    for (int k = 0; k < 4; ++k) {
        quot[4 * i + k] = q[k]; rem[4 * i + k] = m[k]; shl[4 * i + k] = l[k];
        shr[4 * i + k] = r[k]; sar[4 * i + k] = s[k]; b8[4 * i + k] = b[k];
    }
    """,
    {"i32": _I, "u32": _U, "n": _N},
    [("quot", (128,), np.int32), ("rem", (128,), np.int32), ("shl", (128,), np.uint32),
     ("shr", (128,), np.uint32), ("sar", (128,), np.int32), ("b8", (128,), np.uint8)],
    _vec_int_ref, atol=0)


# ----------------------------------------------------------------------------- float -> narrow integers
_F = np.concatenate([RNG.normal(0, 300, 96), [300.5, -129.5, 255.5, -0.7, 127.99, 32767.5, 65535.5, -32768.9,
                                               1e10, -1e10, np.nan, np.inf, -np.inf, 0.0, -0.0, 70000.0] * 2]
                    ).astype(np.float32)


def _sat(x, lo, hi, dt):
    x = np.asarray(x, np.float64)
    r = np.where(np.isnan(x), 0, np.clip(np.trunc(np.nan_to_num(x, posinf=hi, neginf=lo)), lo, hi))
    return r.astype(dt)


def _narrow_ref(x):
    f = x
    with np.errstate(over="ignore"):
        h = f.astype(np.float16).astype(np.float64)
    return [_sat(f, 0, 255, np.uint8), _sat(f, -128, 127, np.int8), _sat(f, -32768, 32767, np.int16),
            _sat(f, 0, 65535, np.uint16), _sat(h, 0, 255, np.uint8), _sat(h, -128, 127, np.int8)]


NARROW = MSLCase(
    "narrow",
    """
    // float and half vectors to char/short vectors saturate (NaN -> 0), as scalars do
    uint i = thread_position_in_grid.x;
    float4 f = float4(x[4 * i], x[4 * i + 1], x[4 * i + 2], x[4 * i + 3]);
    uchar4 a = uchar4(f); char4 b = char4(f); short4 c = short4(f); ushort4 d = ushort4(f);
    half4 h = half4(f);
    uchar4 e = uchar4(h); char4 g = char4(h);
    for (int k = 0; k < 4; ++k) {
        o_u8[4 * i + k] = a[k]; o_i8[4 * i + k] = b[k]; o_i16[4 * i + k] = c[k]; o_u16[4 * i + k] = d[k];
        o_hu8[4 * i + k] = e[k]; o_hi8[4 * i + k] = g[k];
    }
    """,
    {"x": _F},
    [("o_u8", (128,), np.uint8), ("o_i8", (128,), np.int8), ("o_i16", (128,), np.int16),
     ("o_u16", (128,), np.uint16), ("o_hu8", (128,), np.uint8), ("o_hi8", (128,), np.int8)],
    _narrow_ref, atol=0)


# ----------------------------------------------------------------------------- small-integer promotions
_B = RNG.integers(0, 256, 64).astype(np.uint8)
_S = RNG.integers(0, 65536, 64).astype(np.uint16)


def _promo_ref(u8, u16):
    a, b = u8[:32].astype(np.int64), u8[32:].astype(np.int64)
    c = u8[:32].view(np.int8).astype(np.int64)
    s, t = u16[:32].astype(np.int64), u16[32:].astype(np.int64)
    i = np.arange(32)
    cols = [a - b, (s * t), c >> 2, c, (a << 1) & 0xFF, a << 24, (a ^ 0xFF) >> 4, ~a, -a,
            (c < a).astype(np.int64), (a & 0x0F) - 8, (s + t) & 0xFFFF, (a >> (i % 11)) | (s << (i % 17))]
    return [(np.stack(cols, 1) % 2 ** 32).astype(np.uint32).reshape(-1)]


PROMO = MSLCase(
    "promotions",
    """
    // uchar, char and ushort operands are promoted to int (C++'s rules, MSL's too)
    uint i = thread_position_in_grid.x;
    uchar a = u8[i], b = u8[i + 32];
    char c = as_type<char>(u8[i]);
    ushort s = u16[i], t = u16[i + 32];
    uint k = 13 * i;
    o[k + 0] = a - b;
    o[k + 1] = s * t;
    o[k + 2] = c >> 2;
    o[k + 3] = c;
    o[k + 4] = uchar(a << 1);
    o[k + 5] = a << 24;
    o[k + 6] = (a ^ 0xFF) >> 4;
    o[k + 7] = ~a;
    o[k + 8] = -a;
    o[k + 9] = c < a ? 1 : 0;
    o[k + 10] = (a & 0x0F) - 8;
    o[k + 11] = ushort(s + t);
    o[k + 12] = (a >> (i % 11)) | (s << (i % 17));
    """,
    {"u8": _B, "u16": _S},
    [("o", (32 * 13,), np.uint32)],
    _promo_ref, atol=0)


# ----------------------------------------------------------------------------- half and bfloat16 rounding
_H = np.concatenate([RNG.normal(0, 40, 40), [65504, 65519.99, 65520, 1e-8, 2.0 ** -24, 3 * 2.0 ** -25, 1 + 2.0 ** -11,
                                              1 + 3 * 2.0 ** -11, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, -0.0, 1e30,
                                              3.3895314e38, 2.0 ** -133, -1 - 2.0 ** -8, 0.1,
                                              1 + 2.0 ** -8 + 2.0 ** -20, 12345.678, -7.0, 2.5, 0.33333334, 1e-3,
                                              6.1e-5, 1.0]]).astype(np.float32)


def _half_ref(x):
    with np.errstate(over="ignore"):
        h, b = x.astype(np.float16), x.astype(BF16)
        hh = (h.astype(np.float32) * h.astype(np.float32)).astype(np.float16)
        bb = (b.astype(np.float32) * b.astype(np.float32)).astype(BF16)
        return [h, b, hh, bb, b.astype(np.float32).astype(np.float16), h.astype(np.float32).astype(BF16)]


HALF = MSLCase(
    "half_bfloat",
    """
    // conversions round to nearest even; half/bfloat products round once
    uint i = thread_position_in_grid.x;
    float f = x[i];
    half h = half(f);
    bfloat b = bfloat(f);
    o_h[i] = h; o_b[i] = b;
    o_hh[i] = h * h; o_bb[i] = b * b;
    o_bh[i] = half(b); o_hb[i] = bfloat(h);
    """,
    {"x": _H},
    [("o_h", (64,), np.float16), ("o_b", (64,), BF16), ("o_hh", (64,), np.float16), ("o_bb", (64,), BF16),
     ("o_bh", (64,), np.float16), ("o_hb", (64,), BF16)],
    _half_ref, grid=(64, 1, 1), tg=(64, 1, 1), atol=0)


# ----------------------------------------------------------------------------- GGUF Q4_0 blocks
NB = 24
_X = RNG.normal(0, 2, NB * 32).astype(np.float32)
Q4_HEADER = """
struct q4_block { half scale; uchar nib[16]; };    // 18 bytes: GGUF's Q4_0 layout
"""


def _q4_pack_ref(x):
    x = x.reshape(NB, 32).astype(np.float32)
    j = np.argmax(np.abs(x), 1)
    m = x[np.arange(NB), j]
    d = (m / np.float32(-8.0)).astype(np.float32)
    inv = np.where(d != 0, np.float32(1) / np.where(d != 0, d, 1), 0).astype(np.float32)
    q = np.minimum(15, np.trunc(x * inv[:, None] + np.float32(8.5)).astype(np.int64)).astype(np.uint8)
    nib = (q[:, :16] | (q[:, 16:] << 4)).astype(np.uint8)
    out = np.zeros((NB, 18), np.uint8)
    out[:, :2] = d.astype(np.float16).view(np.uint8).reshape(NB, 2)
    out[:, 2:] = nib
    return [out.reshape(-1)]


Q4_PACK = MSLCase(
    "q4_pack",
    """
    // one 32-value block per thread: the half scale and the nibbles written as uints at
    // byte 2 + 4k of the 18-byte block (no multiple of 4 for odd blocks)
    uint b = thread_position_in_grid.x;
    float amax = 0.0f, m = 0.0f;
    for (int j = 0; j < 32; ++j) {
        float v = x[b * 32 + j];
        if (fabs(v) > amax) { amax = fabs(v); m = v; }
    }
    float d = m / -8.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    device uchar* blk = packed + 18 * b;
    *(device half*)blk = half(d);
    for (int k = 0; k < 4; ++k) {
        uint word = 0;
        for (int n = 0; n < 4; ++n) {
            int j = 4 * k + n;
            uchar q0 = uchar(min(15, int(x[b * 32 + j] * id + 8.5f)));
            uchar q1 = uchar(min(15, int(x[b * 32 + j + 16] * id + 8.5f)));
            uchar byte = q0 | (q1 << 4);
            word |= uint(byte) << (8 * n);
        }
        *(device uint*)(blk + 2 + 4 * k) = word;
    }
    """,
    {"x": _X}, [("packed", (NB * 18,), np.uint8)], _q4_pack_ref,
    grid=(NB, 1, 1), tg=(8, 1, 1), header=Q4_HEADER, atol=0)

_PACKED = _q4_pack_ref(_X)[0]


def _q4_dequant_ref(w):
    blk = w.reshape(NB, 18)
    d = blk[:, :2].copy().view(np.float16).astype(np.float32)            # (NB, 1)
    q = np.concatenate([blk[:, 2:] & 15, blk[:, 2:] >> 4], 1).astype(np.float32) - 8
    v = (d * q).reshape(-1)
    vh = (d.astype(np.float16) * q.astype(np.float16)).astype(np.float32).reshape(-1)
    return [v, v, vh]


Q4_DEQUANT = MSLCase(
    "q4_dequant",
    """
    // one value per thread, read three ways: the block struct, ushort and uint views of
    // the bytes (2 + 2k and 2 + 4k into an 18-byte block), and the scale from its bytes
    uint t = thread_position_in_grid.x;
    uint b = t / 32, j = t % 32;
    device const q4_block* blocks = (device const q4_block*)w;
    float d = float(blocks[b].scale);
    uchar q = blocks[b].nib[j % 16];
    int v = j < 16 ? (q & 0x0F) - 8 : (q >> 4) - 8;
    out[t] = d * v;
    device const uchar* raw = w + 18 * b;
    ushort h = *(device const ushort*)(raw + 2 + 2 * ((j % 16) / 2));
    uchar q2 = (j % 2 == 0) ? uchar(h & 0xFF) : uchar(h >> 8);
    uint word = *(device const uint*)(raw + 2 + 4 * ((j % 16) / 4));
    uchar q3 = uchar(word >> (8 * (j % 4)));
    half hd = as_type<half>(ushort(raw[0] | (raw[1] << 8)));
    out2[t] = float(hd) * float(j < 16 ? int(q2 & 15) - 8 : int(q2 >> 4) - 8);
    out3[t] = float(hd * half(j < 16 ? int(q3 & 15) - 8 : int(q3 >> 4) - 8));
    """,
    {"w": _PACKED}, [("out", (NB * 32,), np.float32), ("out2", (NB * 32,), np.float32),
                     ("out3", (NB * 32,), np.float32)], _q4_dequant_ref,
    grid=(NB * 32, 1, 1), tg=(64, 1, 1), header=Q4_HEADER, atol=0)


# ----------------------------------------------------------------------------- MLA-style bf16 decode attention
H, NK, DL, DR = 4, 37, 64, 16
_QN = RNG.normal(0, 1, (H, DL)).astype(BF16)
_QP = RNG.normal(0, 1, (H, DR)).astype(BF16)
_CKV = RNG.normal(0, 1, (NK, DL)).astype(BF16)
_KPE = RNG.normal(0, 1, (NK, DR)).astype(BF16)


def _mla_ref(q_nope, q_pe, ckv, kpe, n_keys):
    f = np.float64
    q_nope, q_pe = q_nope.reshape(H, DL).astype(f), q_pe.reshape(H, DR).astype(f)
    ckv, kpe = ckv.reshape(NK, DL).astype(f), kpe.reshape(NK, DR).astype(f)
    s = (q_nope @ ckv.T + q_pe @ kpe.T) * 0.125
    p = np.exp(s - s.max(1, keepdims=True))
    o = (p @ ckv) / p.sum(1, keepdims=True)
    return [o.reshape(-1), np.log(p.sum(1)) + s.max(1)]


MLA = MSLCase(
    "mla_decode",
    """
    // one threadgroup per head, 4 SIMD-groups; SIMD-group g takes keys g, g + 4, ...:
    // latent scores by simd_sum, an online softmax, the groups merged in threadgroup memory
    constexpr int DL = 64, DR = 16, NSG = 4;
    uint h = threadgroup_position_in_grid.x;
    uint sg = simdgroup_index_in_threadgroup, lane = thread_index_in_simdgroup;
    threadgroup float tg_m[NSG], tg_l[NSG];
    threadgroup float tg_acc[NSG][DL];
    float q0 = float(q_nope[h * DL + 2 * lane]), q1 = float(q_nope[h * DL + 2 * lane + 1]);
    float qr = lane < DR ? float(q_pe[h * DR + lane]) : 0.0f;
    float m = -INFINITY, l = 0.0f, a0 = 0.0f, a1 = 0.0f;
    for (uint n = sg; n < n_keys; n += NSG) {
        bfloat2 kv = *(device const bfloat2*)(ckv + n * DL + 2 * lane);
        float part = q0 * float(kv.x) + q1 * float(kv.y);
        if (lane < DR) part += qr * float(kpe[n * DR + lane]);
        float s = simd_sum(part) * 0.125f;
        float m_new = max(m, s);
        float corr = exp(m - m_new);
        float p = exp(s - m_new);
        l = l * corr + p;
        a0 = a0 * corr + p * float(kv.x);
        a1 = a1 * corr + p * float(kv.y);
        m = m_new;
    }
    if (lane == 0) { tg_m[sg] = simd_max(m); tg_l[sg] = l; }
    tg_acc[sg][2 * lane] = a0;
    tg_acc[sg][2 * lane + 1] = a1;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg == 0) {
        float mm = -INFINITY;
        for (int g = 0; g < NSG; ++g) mm = max(mm, tg_m[g]);
        float ll = 0.0f, o0 = 0.0f, o1 = 0.0f;
        for (int g = 0; g < NSG; ++g) {
            float c = tg_l[g] > 0.0f ? exp(tg_m[g] - mm) : 0.0f;
            ll += tg_l[g] * c; o0 += tg_acc[g][2 * lane] * c; o1 += tg_acc[g][2 * lane + 1] * c;
        }
        out[h * DL + 2 * lane] = bfloat(o0 / ll);
        out[h * DL + 2 * lane + 1] = bfloat(o1 / ll);
        if (lane == 0) lse[h] = mm + log(ll);
    }
    """,
    {"q_nope": _QN.reshape(-1), "q_pe": _QP.reshape(-1), "ckv": _CKV.reshape(-1), "kpe": _KPE.reshape(-1),
     "n_keys": np.array(NK, np.uint32)},
    [("out", (H * DL,), BF16), ("lse", (H,), np.float32)], _mla_ref,
    grid=(128 * H, 1, 1), tg=(128, 1, 1), atol=1e-2)

# ----------------------------------------------------------------------------- threadgroup bytes
_TB = RNG.integers(0, 256, 128).astype(np.uint8)


def _tg_bytes_ref(x):
    raw = x.tobytes()
    words = np.frombuffer(raw, np.uint32)
    halves = np.frombuffer(raw[2:66], np.uint16)
    odd = np.array([np.frombuffer(raw[1 + 3 * (i % 30):5 + 3 * (i % 30)], np.uint32)[0] for i in range(32)], np.uint32)
    return [words, halves, odd]


TG_BYTES = MSLCase(
    "tg_bytes",
    """
    // a threadgroup uchar array, declared after a statement, read as uint and ushort
    // (aligned and at odd byte offsets)
    uint i = thread_position_in_grid.x;
    threadgroup uchar tg[128];
    for (int k = 0; k < 4; ++k) tg[4 * i + k] = x[4 * i + k];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    words[i] = *(threadgroup uint*)(tg + 4 * i);
    threadgroup ushort* h = (threadgroup ushort*)(tg + 2);
    halves[i] = h[i];
    odd[i] = *(threadgroup uint*)(tg + 1 + 3 * (i % 30));
    """,
    {"x": _TB}, [("words", (32,), np.uint32), ("halves", (32,), np.uint16), ("odd", (32,), np.uint32)],
    _tg_bytes_ref, atol=0)

_HB = np.concatenate([RNG.normal(0, 3, 60), [0.3, -0.3, 1e-3, -65504.0]]).astype(np.float32)


def _half_bytes_ref(x):
    h = x.astype(np.float16).view(np.uint16)
    b = x.astype(BF16).view(np.uint16)
    with np.errstate(over="ignore"):      # -65504 * 3 is -inf in half, on every side
        h3 = (x * np.float32(3)).astype(np.float16).view(np.uint16)
    pair = h.astype(np.uint32) | (h3.astype(np.uint32) << 16)
    return [np.stack([h & 255, h >> 8, b & 255, b >> 8], 1).astype(np.uint8).reshape(-1),
            np.stack([pair & 255, (pair >> 16) & 255], 1).astype(np.uint8).reshape(-1)]


HALF_BYTES = MSLCase(
    "half_bytes",
    """
    // the bits of a half, a bfloat and a half2 stored byte by byte (GGUF's scale bytes):
    // ptxas of CUDA 13.0 turned the byte of a just-converted half into a float->u8
    // conversion (the low byte came out 0 on the H200)
    uint i = thread_position_in_grid.x;
    ushort hb = as_type<ushort>(half(x[i]));
    ushort bb = as_type<ushort>(bfloat(x[i]));
    bytes[4 * i] = uchar(hb & 255);
    bytes[4 * i + 1] = uchar(hb >> 8);
    bytes[4 * i + 2] = uchar(bb);
    bytes[4 * i + 3] = uchar(bb >> 8);
    uint pair = as_type<uint>(half2(half(x[i]), half(x[i] * 3.0f)));
    pairs[2 * i] = uchar(pair);
    pairs[2 * i + 1] = uchar(pair >> 16);
    """,
    {"x": _HB}, [("bytes", (4 * 64,), np.uint8), ("pairs", (2 * 64,), np.uint8)], _half_bytes_ref,
    grid=(64, 1, 1), tg=(32, 1, 1), atol=0)

CASES = [VEC_INT, NARROW, PROMO, HALF, Q4_PACK, Q4_DEQUANT, MLA, TG_BYTES, HALF_BYTES]
IDS = [c.name for c in CASES]


def _launch(c: MSLCase, backend: str, **kw) -> list:
    outs = c.kernel()(inputs=[mx.array(v.view(np.uint16)).view(mx.bfloat16) if v.dtype == BF16 else mx.array(v)
                              for v in c.inputs.values()],
                      grid=c.grid, threadgroup=c.tg, output_shapes=[o[1] for o in c.outputs],
                      output_dtypes=[mx.bfloat16 if np.dtype(o[2]) == BF16 else getattr(mx, np.dtype(o[2]).name)
                                     for o in c.outputs],
                      init_value=0, backend=backend, **kw)
    return [np.array(o.view(mx.uint16)).view(BF16) if o.dtype == mx.bfloat16 else np.array(o) for o in outs]


def _check(c: MSLCase, got: list) -> None:
    want = c.ref(**c.inputs)
    assert len(got) == len(want)
    for (name, _, _), g, w in zip(c.outputs, got, want):
        g, w = np.asarray(g).reshape(-1), np.asarray(w).reshape(-1)
        if c.atol == 0:     # bit for bit (NaNs included)
            assert g.dtype == w.dtype and g.tobytes() == w.tobytes(), (name, np.nonzero(g.view(np.uint8) != w.view(
                np.uint8))[0][:8], g[:8], w[:8])
        else:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), atol=c.atol, rtol=c.atol,
                                       err_msg=name)


def _same(a: list, b: list) -> None:
    for x, y in zip(a, b):
        assert x.tobytes() == y.tobytes() or np.allclose(x.astype(np.float64), y.astype(np.float64), rtol=1e-6,
                                                         atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_simulator_matches_numpy(c):
    _check(c, _launch(c, "sim"))


# VEC_INT divides by zero on purpose (the checked simulator reports it, below)
_CHECKED = [c for c in CASES if c is not VEC_INT]


@pytest.mark.parametrize("c", _CHECKED, ids=[c.name for c in _CHECKED])
def test_checked_simulator_matches_numpy(c):
    _check(c, _launch(c, "sim", checked=True))


def test_checked_simulator_reports_a_word_read_of_bytes_partly_written():
    """Bytes stored through a threadgroup uchar array initialise the uint view of them
    (TG_BYTES passes checked); a word with one byte never written is still reported."""
    k = mb.metal_kernel(name="partly_written", input_names=["x"], output_names=["o"], source="""
        uint i = thread_position_in_grid.x;
        threadgroup uchar tg[128];
        tg[4 * i] = x[i]; tg[4 * i + 1] = x[i]; tg[4 * i + 2] = x[i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        o[i] = *(threadgroup uint*)(tg + 4 * i);
    """)
    with pytest.raises(MetalbenchError, match="uninitialised read of threadgroup array 'tg_as_uint'"):
        k(inputs=[mx.zeros((32,), dtype=mx.uint8)], grid=(32, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(32,)],
          output_dtypes=[mx.uint32], backend="sim", checked=True)


def test_checked_simulator_reports_the_vector_division_by_zero():
    with pytest.raises(MetalbenchError, match=r"integer division by zero \(/\)"):
        _launch(VEC_INT, "sim", checked=True)


@needs_gxx
@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_printed_cuda_on_the_cpu_matches_numpy_and_the_simulator(c, monkeypatch):
    hostcuda.install(monkeypatch)
    got = _launch(c, "cuda")
    _check(c, got)
    _same(got, _launch(c, "sim"))


@pytest.mark.gpu
@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_printed_cuda_on_the_gpu_matches_numpy_and_the_simulator(c):
    got = _launch(c, "cuda")
    _check(c, got)
    _same(got, _launch(c, "sim"))


@needs_gxx
def test_the_host_harness_catches_the_vector_operators_printed_raw(monkeypatch):
    """The comparison can fail: ``int4 / int4`` printed as mb_vec's plain operator (the
    printer before the integer-vector helpers) divides by zero on the CPU as on the GPU."""
    from metalbench.codegen import cuda_ints
    hostcuda.install(monkeypatch)
    monkeypatch.setattr(cuda_ints.IntegerVectorMixin, "e_BinOp",
                        lambda self, e: super(cuda_ints.IntegerVectorMixin, self).e_BinOp(e))
    with pytest.raises(hostcuda.HostCudaError, match="divides an integer by zero|shifts by"):
        _launch(VEC_INT, "cuda")


# ----------------------------------------------------------------------------- MLX's kernel cache
COPY = """
uint i = thread_position_in_grid.x;
out[i] = x[i];
"""
_COPY_DTYPES = [mx.float16, mx.bfloat16, mx.float32, mx.int16, mx.uint32]


def _copies(backend):
    """One kernel launched for several dtypes in turn (its printed body is the same text for
    each): every launch must copy its own data."""
    k = mb.metal_kernel(name="fidelity_copy", input_names=["x"], output_names=["out"], source=COPY)
    for dt in _COPY_DTYPES:
        x = (mx.arange(40) * 3 - 7).astype(dt)
        out = k(inputs=[x], grid=(40, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(40,)], output_dtypes=[dt],
                backend=backend)[0]
        assert out.dtype == dt
        assert np.array(out.astype(mx.float32)).tolist() == np.array(x.astype(mx.float32)).tolist(), dt


@needs_gxx
def test_each_dtype_gets_its_own_mlx_kernel(monkeypatch):
    """MLX keys its compiled custom kernels by name (and template values) only, in memory and
    in its PTX cache on disk: the printed kernel's name must change with every part of the
    source MLX compiles, the signature's types included (hostcuda refuses a second source
    under one name, as MLX would silently run the first)."""
    hostcuda.install(monkeypatch)
    monkeypatch.setattr(hostcuda, "MLX_NAMES", {})
    _copies("cuda")


@pytest.mark.gpu
def test_each_dtype_gets_its_own_mlx_kernel_on_the_gpu():
    _copies("cuda")


def test_blocks_of_more_than_256_threads_bound_the_registers():
    """A launch of more than 256 threads per block prints __launch_bounds__ of its size for
    MLX's __global__ line: without it ptxas may use more registers than the block can have
    (96 x 1024 > 65536 on the H200: the launch failed, MLX did not report it, and the outputs
    stayed unwritten). With nvcc here, the PTX carries the bound."""
    import shutil
    import subprocess

    from metalbench.codegen import cuda
    k = mb.metal_kernel(name="big_block", input_names=["x"], output_names=["o"],
                        source="uint i = thread_position_in_grid.x; o[i] = x[i] * 2.0f;")
    x = mx.arange(2048, dtype=mx.float32)
    kir = k.ir([x], [(2048,)], [mx.float32])
    assert "__launch_bounds__" not in cuda.render(kir, exact_grid=True, threadgroup=(256, 1, 1)).header
    r = cuda.render(kir, exact_grid=True, threadgroup=(32, 32, 1))
    assert "__launch_bounds__(1024)" in r.header
    np.testing.assert_array_equal(np.array(k(inputs=[x], grid=(2048, 1, 1), threadgroup=(1024, 1, 1),
                                             output_shapes=[(2048,)], output_dtypes=[mx.float32], backend="sim")[0]),
                                  np.arange(2048, dtype=np.float32) * 2)
    if shutil.which("nvcc") is None:
        return
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as d:
        src = Path(d, "k.cu")
        src.write_text(cuda.full_source(r))
        p = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-ptx", f"-I{cuda.SHIM_INCLUDE}", "-o",
                            str(Path(d, "k.ptx")), str(src)], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr[-2000:]
        assert ".maxntid 1024, 1, 1" in Path(d, "k.ptx").read_text()
