"""MSL pointers and views (issue 13): pointer variables, advanced kernel parameters,
``*p``/``p[i]``/``*(p + i)``, pointer arithmetic and comparison, pointers into
threadgroup and thread arrays, pointer parameters of header functions, rows of 2-D
arrays, reinterpreting pointer casts (bytes, halves of words) and vector loads/stores
through cast pointers. Each kernel: simulator vs NumPy (unchecked and checked), a round
trip through the printed MSL, the libclang checks of the printed MSL and CUDA, and (GPU
machine) the printed CUDA."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import MetalbenchError
from msl_cases import MSLCase, three_ways

RNG = np.random.default_rng(13)
B, TT, D = 3, 5, 32

ADVANCE = MSLCase(
    "advance",
    """
    uint b = thread_position_in_grid.y;
    uint d = thread_position_in_grid.x;
    auto x_ = x + b * TT * D;          // a pointer variable into x: [B, TT, D]
    out += b * D;                      // advancing an output parameter
    float acc = 0.0f;
    for (int t = 0; t < TT; ++t) {
        acc += x_[d] * w[t];
        x_ += D;                       // advanced in the loop
    }
    out[d] = acc;
    """,
    {"x": RNG.standard_normal((B, TT, D)).astype(np.float32), "w": RNG.standard_normal(TT).astype(np.float32)},
    [("out", (B, D), np.float32)],
    lambda x, w: [np.einsum("btd,t->bd", x, w)],
    grid=(D, B, 1), tg=(D, 1, 1), template=[("TT", TT), ("D", D)], atol=1e-5)

DEREF = MSLCase(
    "deref",
    """
    uint i = thread_position_in_grid.x;
    const device float* p = &x[i * 4];
    const device float* end = p + 4;
    float s = 0.0f;
    for (const device float* q = p; q < end; q++) {
        s += *q;
    }
    float a = *(p + 1);
    long n = end - p;
    device float* o = out + i * 2;
    *o = s;
    o[1] = a * n + (p != end ? 1.0f : 0.0f);
    o -= 1;
    """,
    {"x": RNG.standard_normal(64).astype(np.float32)},
    [("out", (32,), np.float32)],
    lambda x: [np.stack([x.reshape(16, 4).sum(1), x.reshape(16, 4)[:, 1] * 4 + 1], 1).reshape(-1)],
    grid=(16, 1, 1), tg=(16, 1, 1), atol=1e-5)

HEADER_PTRS = MSLCase(
    "header_ptrs",
    """
    uint i = thread_position_in_grid.x;
    float rows[2][4];
    fill(rows[0], 1.0f, 4);
    fill(rows[1], 2.0f, 4);
    out[i] = dot_n(x + i * 4, rows[i % 2], 4);
    """,
    {"x": RNG.standard_normal(64).astype(np.float16)},
    [("out", (16,), np.float32)],
    lambda x: [(x.reshape(16, 4).astype(np.float32)
                * (np.arange(1, 5) * np.where(np.arange(16) % 2, 2.0, 1.0)[:, None])).sum(1)],
    grid=(16, 1, 1), tg=(16, 1, 1), atol=1e-5,
    header="""
    template <typename T>
    float dot_n(const device T* a, thread const float* b, int n) {
        float s = 0.0f;
        for (int k = 0; k < n; ++k) {
            s += float(*a) * b[k];
            a++;                         // a pointer parameter advanced in the function
        }
        return s;
    }
    void fill(thread float* row, float v, int n) {
        for (int k = 0; k < n; ++k) row[k] = v * (k + 1);
    }
    """)

TG_PTRS = MSLCase(
    "tg_ptrs",
    """
    threadgroup float tile[64];
    uint l = thread_position_in_threadgroup.x;
    uint g = thread_position_in_grid.x;
    threadgroup float* upper = tile + 32;
    tile[l] = x[g];
    upper[l] = 2.0f * x[g];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    threadgroup float* mine = &tile[31 - l];
    float loc[3] = {1.0f, 2.0f, 3.0f};
    thread float* lp = loc + 1;
    out[g] = *mine + upper[31 - l] + lp[1];
    """,
    {"x": RNG.standard_normal(64).astype(np.float32)},
    [("out", (64,), np.float32)],
    lambda x: [(x.reshape(2, 32)[:, ::-1] * 3 + 3).reshape(-1)],
    grid=(64, 1, 1), tg=(32, 1, 1), atol=1e-5)

def _tg_views_ref(x):
    # halves staged in float storage come back in order (the 8x8 matrix loaded from the view is
    # x[:64] itself); the loop-declared array keeps iteration 0's values into iteration 1
    t = x.astype(np.float32)
    return [t[:64], np.roll(t[:32], -1)]


TG_VIEWS = MSLCase(
    "tg_views",
    """
    threadgroup float smem[2 * 64];            // float storage, read and written as halves
    uint l = thread_index_in_simdgroup;
    threadgroup float* base = smem + 16;
    threadgroup half* h = (threadgroup half*)base;
    h[l] = x[l];
    h[l + 32] = x[l + 32];
    simdgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_matrix<half, 8, 8> m;
    simdgroup_load(m, h, 8);
    simdgroup_matrix<float, 8, 8> f = simdgroup_matrix<float, 8, 8>(1.0f);
    simdgroup_multiply(f, m, f);
    simdgroup_store(f, mat, 8);
    float acc = 0.0f;
    for (int it = 0; it < 2; ++it) {
        threadgroup float keep[32];            // one allocation: it outlives the iteration
        if (it == 1) acc += keep[(l + 1) % 32];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        keep[l] = float(x[l]) * float(it + 1);
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    carried[l] = acc + keep_last(l);
    """,
    {"x": RNG.standard_normal(64).astype(np.float16)},
    [("mat", (64,), np.float32), ("carried", (32,), np.float32)],
    _tg_views_ref, grid=(32, 1, 1), tg=(32, 1, 1), atol=1e-3,
    header="inline float keep_last(uint l) { return 0.0f * float(l); }")

def _packed_ref(p3, ph):
    # Particle: packed_float3 pos at 0, float w at 12 (16 bytes); Tag: half c, packed_half4 v at
    # 2, half b at 10 (12 bytes); sizes as Metal lays them out; as_type of a constant
    pr = p3.reshape(-1, 4)
    moved = pr.copy()
    moved[:, 1] += 1.0
    t = ph.reshape(-1, 6).astype(np.float32)
    return [pr[:, 3] + 10 * pr[:, 1], moved.reshape(-1), t[:, 5] + 10 * t[:, 2],
            np.array([16, 12, 12, 8, 16, 2.0, 1.0, 4], np.float32)]


PACKED = MSLCase(
    "packed_members",
    """
    uint i = thread_position_in_grid.x;
    const device Particle* p = (const device Particle*)p3;
    device Particle* q = (device Particle*)moved;
    w_plus_y[i] = p[i].w + 10.0f * p[i].pos.y;
    q[i].pos = p[i].pos + float3(0.0f, 1.0f, 0.0f);
    q[i].w = p[i].w;
    const device Tag* t = (const device Tag*)ph;
    tag[i] = float(t[i].b) + 10.0f * float(t[i].v.y);
    if (i == 0) {
        sizes[0] = sizeof(Particle); sizes[1] = sizeof(Tag); sizes[2] = sizeof(packed_float3);
        sizes[3] = sizeof(packed_half4); sizes[4] = sizeof(float3);
        half2 h = as_type<half2>(0x3C004000u);         // a constant's bits as a vector
        sizes[5] = float(h.x); sizes[6] = float(h.y); sizes[7] = float(as_type<uchar4>(0x01020304u).x);
    }
    """,
    {"p3": RNG.standard_normal(4 * 8).astype(np.float32), "ph": RNG.standard_normal(6 * 8).astype(np.float16)},
    [("w_plus_y", (8,), np.float32), ("moved", (32,), np.float32), ("tag", (8,), np.float32),
     ("sizes", (8,), np.float32)],
    _packed_ref, grid=(8, 1, 1), tg=(8, 1, 1), atol=1e-5,
    header="struct Particle { packed_float3 pos; float w; };\nstruct Tag { half c; packed_half4 v; half b; };")

BYTES = MSLCase(
    "bytes",
    """
    uint i = thread_position_in_grid.x;
    const device uint8_t* wb = (const device uint8_t*)w + i * 4;
    const device uint16_t* wh = (const device uint16_t*)(w + i);
    out[i] = float(wb[0]) + 256.0f * float(wb[3]) + float(wh[1]) * 0.5f;
    """,
    {"w": RNG.integers(0, 2**32, 16, dtype=np.uint64).astype(np.uint32)},
    [("out", (16,), np.float32)],
    lambda w: [w.view(np.uint8).reshape(16, 4)[:, 0] + 256.0 * w.view(np.uint8).reshape(16, 4)[:, 3]
               + w.view(np.uint16).reshape(16, 2)[:, 1] * 0.5],
    grid=(16, 1, 1), tg=(16, 1, 1))

BYTE_STORES = MSLCase(
    "byte_stores",
    """
    uint i = thread_position_in_grid.x;
    device uchar* ob = (device uchar*)out;
    ob[4 * i] = uchar(i);
    ob[4 * i + 1] = 7;
    device ushort* oh = (device ushort*)(ob + 4 * i + 2);
    *oh = ushort(x[i]);
    """,
    {"x": RNG.integers(0, 60000, 16).astype(np.float32)},
    [("out", (16,), np.uint32)],
    lambda x: [np.arange(16, dtype=np.uint32) | (7 << 8) | (x.astype(np.uint32) << 16)],
    grid=(16, 1, 1), tg=(16, 1, 1))

VECTORS = MSLCase(
    "vector_views",
    """
    uint i = thread_position_in_grid.x;
    float4 v = *(const device float4*)(x + 4 * i);
    ((device float4*)out)[i] = v * 2.0f + float4(1.0f, 2.0f, 3.0f, 4.0f);
    device float2* o2 = (device float2*)(out2) + i;
    *o2 = v.xy + v.zw;
    const device half4* h4 = (const device half4*)h;
    out2[32 + i] = float(h4[i].w);
    """,
    {"x": RNG.standard_normal(64).astype(np.float32), "h": RNG.standard_normal(64).astype(np.float16)},
    [("out", (64,), np.float32), ("out2", (48,), np.float32)],
    lambda x, h: [(x.reshape(16, 4) * 2 + np.array([1, 2, 3, 4])).reshape(-1),
                  np.concatenate([(x.reshape(16, 2, 2)[:, 0] + x.reshape(16, 2, 2)[:, 1]).reshape(-1),
                                  h.reshape(16, 4)[:, 3].astype(np.float32)])],
    grid=(16, 1, 1), tg=(16, 1, 1), atol=1e-5)

POST_INCREMENT = MSLCase(
    "post_increment",
    """
    uint i = thread_position_in_grid.x;
    const device float* p = x + i * 4;
    const device float* end = p + 4;
    float s = 0.0f;
    while (p < end) { s += *p++; }      // C's *p++
    device float* o = out + i * 2;
    *o++ = s;
    --p;
    *o = *p;
    thread uint count = 0u;
    count++;
    out[i * 2 + 1] += float(count);
    """,
    {"x": RNG.standard_normal(64).astype(np.float32)},
    [("out", (32,), np.float32)],
    lambda x: [np.stack([x.reshape(16, 4).sum(1), x.reshape(16, 4)[:, 3] + 1], 1).reshape(-1)],
    grid=(16, 1, 1), tg=(16, 1, 1), atol=1e-5)

REFERENCES = MSLCase(
    "references",
    """
    uint i = thread_position_in_grid.x;
    float acc = 0.0f;
    for (int j = 0; j < 3; ++j) accumulate(acc, x[i]);   // a local variable by reference
    int n = 0;
    float r = twice_and_count(acc, n);
    float loc[2] = {1.0f, 5.0f};
    swap2(loc[0], loc[1]);                               // array elements by reference
    out[i] = 0.0f;
    bump(out[i], r + float(n) + loc[0]);                 // a buffer element by reference
    device float& o = out[i];                            // reference variables
    o += 1.0f;
    float& alias = acc;
    alias = 0.5f;
    o += acc;
    """,
    {"x": RNG.standard_normal(32).astype(np.float32)},
    [("out", (32,), np.float32)],
    lambda x: [12 * x + 7.5],
    header="""
    void accumulate(thread float& acc, float v) { acc += v * 2.0f; }
    template <typename T> void bump(device T& slot, T by) { slot = slot + by; }
    inline float twice_and_count(thread float& a, thread int& n) { n++; a *= 2.0f; return a; }
    void swap2(thread float& a, thread float& b) { float t = a; a = b; b = t; }
    """, atol=1e-5)

VECTOR_REFS = MSLCase(
    "vector_refs",
    """
    uint i = thread_position_in_grid.x;
    float4 v = float4(x[i], 1.0f, 2.0f, 3.0f);
    scale_zw(v, 2.0f);                                   // v.zw *= s through the reference
    set_y(v, x[i] * 3.0f);                               // v.y = ... through the reference
    float3 p = float3(1.0f, x[i], 4.0f);
    reverse3(p);                                         // a whole float3 assigned
    half2 h = half2(1.0h, 2.0h);
    halve(h);
    thread float4& r = v;
    r.x += 10.0f;                                        // a reference variable's member
    out[i] = v.x + v.y + 10.0f * v.z + 100.0f * v.w + 1000.0f * p.x + p.z + float(h.y);
    """,
    {"x": RNG.standard_normal(32).astype(np.float32)},
    [("out", (32,), np.float32)],
    lambda x: [(x + 10) + 3 * x + 10 * 4 + 100 * 6 + 1000 * 4 + 1 + 1],
    header="""
    inline void scale_zw(thread float4& v, float s) { v.zw *= s; }
    inline void set_y(thread float4& v, float y) { v.y = y; }
    inline void reverse3(thread float3& p) { p = p.zyx; }
    inline void halve(thread half2& h) { h = h * 0.5h; }
    """, atol=1e-4)

TG_SCALAR = MSLCase(
    "tg_scalar",
    """
    uint t = thread_position_in_threadgroup.x;
    uint g = threadgroup_position_in_grid.y;
    threadgroup float row_max;            // one value shared by the threadgroup
    threadgroup int hits;
    if (t == 0) { row_max = -INFINITY; hits = 0; }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float v = x[g * 32 + t];
    float m = simd_max(v);
    if (t == 0) { row_max = m; }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (v == row_max) { hits += 1; }       // one thread per row holds the maximum
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[g * 32 + t] = v - row_max + float(hits);
    """,
    {"x": RNG.standard_normal((4, 32)).astype(np.float32)},
    [("out", (4, 32), np.float32)],
    lambda x: [x - x.max(1, keepdims=True) + 1],
    grid=(32, 4, 1), tg=(32, 1, 1), atol=1e-6)

ATOMIC_CASTS = MSLCase(
    "atomic_casts",
    """
    uint i = thread_position_in_grid.x;
    // plain (non-atomic) outputs updated through pointers cast to atomic types
    atomic_fetch_add_explicit((device atomic<float>*)&hist[i % 8], x[i], memory_order_relaxed);
    device atomic_uint* c = (device atomic_uint*)counts;
    atomic_fetch_add_explicit(c + (i % 4), 1u, memory_order_relaxed);
    add_float(&sums[i % 2], x[i]);
    add_bits<float>(&sums[2], 1.0f);
    """,
    {"x": (RNG.integers(-40, 40, 128) * 0.25).astype(np.float32)},
    [("hist", (8,), np.float32), ("counts", (4,), np.uint32), ("sums", (3,), np.float32)],
    lambda x: [x.reshape(-1, 8).sum(0), np.full(4, 32, np.uint32),
               np.concatenate([x.reshape(-1, 2).sum(0), [128.0]]).astype(np.float32)],
    grid=(128, 1, 1), tg=(64, 1, 1), init_value=0,
    header="""
    // a float add by compare-and-swap on the bits (the condition has the side effect)
    inline void add_float(device float* address, float val) {
        device atomic_uint* bits = (device atomic_uint*)address;
        uint old = atomic_load_explicit(bits, memory_order_relaxed);
        uint next;
        do {
            next = as_type<uint>(as_type<float>(old) + val);
        } while (!atomic_compare_exchange_weak_explicit(bits, &old, next, memory_order_relaxed,
                                                        memory_order_relaxed));
    }
    template <typename T>
    inline void add_bits(device void* p, T v) {        // an untyped pointer, cast inside
        device atomic_uint* a = (device atomic_uint*)p;
        uint e = atomic_load_explicit(a, memory_order_relaxed);
        while (!atomic_compare_exchange_weak_explicit(a, &e, as_type<uint>(as_type<T>(e) + v),
                                                      memory_order_relaxed, memory_order_relaxed)) {}
    }
    """)

NBLK = 12
_blocks = RNG.integers(0, 256, (NBLK, 18)).astype(np.uint8)
_blocks[:, :2] = np.frombuffer(RNG.uniform(0.5, 2, NBLK).astype(np.float16).tobytes(), np.uint8).reshape(NBLK, 2)


def _misaligned_ref(blocks):
    raw = blocks.tobytes()
    blocks = blocks.reshape(NBLK, 18)
    d = np.frombuffer(raw, np.float16)[::9].astype(np.float32)          # the half at byte 18 i
    q = np.stack([blocks[:, 2:] & 15, blocks[:, 2:] >> 4], 2).reshape(NBLK, 32).astype(np.float32) - 8
    # nibble order of the 4 words: word k, nibble n = byte 4k + n // 2, low nibble first
    deq = (d[:, None] * q).sum(1)
    word = [np.frombuffer(raw[18 * i + 1 + i % 3:18 * i + 5 + i % 3], np.uint32)[0] for i in range(NBLK)]
    h2 = np.stack([np.frombuffer(raw[18 * i + 1:18 * i + 5], np.float16).astype(np.float32) for i in range(NBLK)])
    st = np.zeros(5 * NBLK, np.uint8)
    for i in range(NBLK):
        st[5 * i + 1:5 * i + 5] = np.frombuffer(np.uint32(word[i] ^ 0xA5A5A5A5).tobytes(), np.uint8)
    return [deq, np.array(word, np.uint32), h2.sum(1), st]


MISALIGNED = MSLCase(
    "misaligned",
    """
    // reinterpreting casts at byte offsets that are not multiples of the new type's size
    // read (and write) the bytes addressed: GGUF-style 18-byte blocks (a half scale, then
    // 16 bytes of nibbles read as 4 uints at byte 2 of the block)
    uint i = thread_position_in_grid.x;
    device const uchar* blk = blocks + 18 * i;
    float d = float(*(device const half*)blk);
    device const uint* qs = (device const uint*)(blk + 2);
    float s = 0.0f;
    for (int k = 0; k < 4; ++k) {
        uint w = qs[k];
        for (int n = 0; n < 8; ++n) {
            s += d * (float((w >> (4 * n)) & 15u) - 8.0f);
        }
    }
    deq[i] = s;
    uint w1 = *(device const uint*)(blk + 1 + (i % 3));
    words[i] = w1;
    half2 h = *(device const half2*)(blk + 1);
    hsum[i] = float(h.x) + float(h.y);
    *(device uint*)((device uchar*)bytes_out + 5 * i + 1) = w1 ^ 0xA5A5A5A5u;
    """,
    {"blocks": _blocks.reshape(-1)},
    [("deq", (NBLK,), np.float32), ("words", (NBLK,), np.uint32), ("hsum", (NBLK,), np.float32),
     ("bytes_out", (5 * NBLK,), np.uint8)],
    _misaligned_ref, grid=(NBLK, 1, 1), tg=(NBLK, 1, 1), init_value=0, atol=1e-3)

def _buffer_choice_ref(A, B, S, T2):
    i = np.arange(8)
    acc = sum(np.where((i + t) % 2 == 0, (A & 0xff) + 1000.0, B & 0xff) for t in range(2))
    return [acc + np.where(i < 4, S[i], T2[i + 1]), np.where(i % 3 == 0, A, B).astype(np.uint32)]


BUFFER_CHOICE = MSLCase(
    "buffer_choice",
    """
    // a pointer into one of two buffers chosen at run time (a quantised projection's
    // weights: (proj == 0 ? FBW : GBW) + row): the rest of the block runs once per side
    uint i = thread_position_in_grid.x;
    float acc = 0.0f;
    for (uint t = 0; t < 2; ++t) {
        const bool first = (i + t) % 2 == 0;
        device const uchar* wb = (device const uchar*)(first ? A : B) + 4 * i;
        device const uint* w = (device const uint*)wb;
        uint k = 0;                                // declared after the split, in both sides
        acc += float(w[k] & 0xffu) + (first ? 1000.0f : 0.0f);
    }
    const device float* s = i < 4 ? S : T2 + 1;
    device uint* o = (device uint*)words;
    o[i] = (i % 3 == 0 ? A : B)[i];
    out[i] = acc + s[i];
    """,
    {"A": (np.arange(8) * 3 + 7).astype(np.uint32), "B": (np.arange(8) * 5 + 100).astype(np.uint32),
     "S": (np.arange(8) * 0.5).astype(np.float32), "T2": (np.arange(9) * 0.25).astype(np.float32)},
    [("out", (8,), np.float32), ("words", (8,), np.uint32)],
    _buffer_choice_ref, grid=(8, 1, 1), tg=(8, 1, 1))


def _small_inputs_ref(box, pos, scale):
    d = pos[:, 0, :] - pos[:, 1, :]
    d = d - box * np.rint(d / box)
    return [(d * d).sum(-1) * scale[0] + scale[1] * 10 + pos[:, 0, 0]]


# MLX binds an input array of fewer than 8 elements as 'const constant T*' (box, scale), the
# rest as 'const device T*': helpers overloaded on the address space pick by it
SMALL_INPUTS = MSLCase(
    "small_inputs_constant",
    """
    uint i = thread_position_in_grid.x;
    float3 d = gap(pos, 6 * i, box);
    out[i] = dot(d, d) * first(scale) + 10.0f * scale[1] + first(pos + 6 * i);
    """,
    {"box": np.array([2.0, 2.5, 3.0], np.float32),
     "pos": (RNG.random((16, 2, 3)) * 3).astype(np.float32),
     "scale": np.array([0.5, 4.0], np.float32)},
    [("out", (16,), np.float32)], _small_inputs_ref, grid=(16, 1, 1), tg=(16, 1, 1),
    header="""
    float first(constant const float* p) { return p[0]; }
    float first(device const float* p) { return p[0]; }
    float3 gap(device const float* p, int at, constant const float* box) {
        float3 d = float3(p[at] - p[at + 3], p[at + 1] - p[at + 4], p[at + 2] - p[at + 5]);
        return d - float3(box[0], box[1], box[2]) * rint(d / float3(box[0], box[1], box[2]));
    }
    """, atol=1e-5)


def _vector_ptr_args_ref(x, y):
    f, y4 = x.reshape(8, 3), y.reshape(10, 4)
    w = [1 - f, f, f * f]
    d = [w[j] * 2 + j for j in range(3)]
    return [w[0][:, 0] + w[1][:, 1] * 10 + w[2][:, 2] * 100 + d[2][:, 0] * 1000 + (y4[:8, 3] + y4[1:9, 3])
            + d[1][:, 2]]


# a thread array of float3 and a cast device float4 pointer passed to vector pointer parameters
VECTOR_PTR_ARGS = MSLCase(
    "vector_ptr_args",
    """
    uint i = thread_position_in_grid.x;
    float3 f = float3(x[3 * i], x[3 * i + 1], x[3 * i + 2]);
    float3 w[3];
    float3 d[3];
    fill3(f, w, d);
    float4 v = pair_sum((device const float4*)y, i);
    out[i] = w[0].x + w[1].y * 10.0f + w[2].z * 100.0f + d[2].x * 1000.0f + v.w + tail(d + 1);
    """,
    {"x": RNG.random(24).astype(np.float32), "y": RNG.standard_normal(40).astype(np.float32)},
    [("out", (8,), np.float32)], _vector_ptr_args_ref, grid=(8, 1, 1), tg=(8, 1, 1),
    header="""
    inline void fill3(float3 f, thread float3* w, thread float3* d) {
        w[0] = float3(1.0f) - f;
        w[1] = f;
        w[2] = f * f;
        for (int j = 0; j < 3; j++) d[j] = w[j] * 2.0f + float3(float(j));
    }
    inline float4 pair_sum(device const float4* p, uint i) { return p[i] + p[i + 1]; }
    inline float tail(thread const float3* p) { return p[0].z; }
    """, atol=1e-4)


def _vector_components_ref(x):
    n = x.shape[0]
    out = np.zeros(n, np.float32)
    for i in range(n):
        a = np.array([[x[i], 1.0], [2.0, 3.0]], np.float32)     # Tile's v
        a[:, 0] *= 2.0                                          # scale_by(2): v[j][0] *= s
        a[:, 1] += 2.0                                          #              v[j][1] += s
        a[i % 2][1] += 8.0                                      # t.frag(i % 2)[1] += 8
        a[1][0] = 7.0                                           # t.frag(1)[0] = 7
        a[0][1] -= 0.5                                          # t.frag(0).y -= 0.5
        w = np.array([x[i], x[i] + 1, x[i] + 2, x[i] + 3], np.float32)
        w[i % 4] = -w[i % 4]                                    # sh[lid][lid % 4] = -...
        out[i] = a[0, 0] + 10 * a[0, 1] + 100 * a[1, 0] + 1000 * a[1, 1] + w[(i + 1) % 4] + 3 * w[i % 4]
    return [out]


# components of vector elements: of a member array (v[j][0] *= s), through a method returning
# a reference (frag(j)[k] = x, frag(j).y -= x) and of a threadgroup array with run-time indices
VECTOR_COMPONENTS = MSLCase(
    "vector_components",
    """
    uint i = thread_position_in_grid.x;
    uint lid = thread_position_in_threadgroup.x;
    Tile<2> t;
    t.v[0] = float2(x[i], 1.0f);
    t.v[1] = float2(2.0f, 3.0f);
    t.scale_by(2.0f);
    t.frag(i % 2)[1] += 8.0f;
    t.frag(1)[0] = 7.0f;
    t.frag(0).y -= 0.5f;
    threadgroup float4 sh[16];
    sh[lid] = float4(x[i], x[i] + 1.0f, x[i] + 2.0f, x[i] + 3.0f);
    sh[lid][lid % 4] = -sh[lid][lid % 4];
    out[i] = t.v[0][0] + 10.0f * t.v[0][1] + 100.0f * t.v[1][0] + 1000.0f * t.v[1][1]
             + sh[lid][(lid + 1) % 4] + 3.0f * sh[lid][lid % 4];
    """,
    {"x": RNG.standard_normal(16).astype(np.float32)},
    [("out", (16,), np.float32)], _vector_components_ref, grid=(16, 1, 1), tg=(16, 1, 1),
    header="""
    template <int N>
    struct Tile {
        float2 v[N];
        void scale_by(float s) {
            for (short j = 0; j < N; ++j) { v[j][0] *= s; v[j][1] += s; }
        }
        thread float2& frag(const short j) { return v[j]; }
    };
    """, atol=1e-4)



def _component_reads_ref(x):
    n = x.shape[0]
    i = np.arange(n)
    v0 = np.stack([x, x + 1], 1)                      # t.v[0]
    v1 = np.stack([2 * x, x - 1], 1)                  # t.v[1]
    c = i % 2
    frag = np.where((i % 2 == 0)[:, None], v0, v1)    # t.frag(i % 2)
    w = np.stack([x, 2 * x, 3 * x, 4 * x], 1)         # s.w
    return [frag[i, c] + 10 * v1[i, 1 - c] + 100 * w[i, (i + 1) % 4] + 1000 * v0[i, 0]]


# reading a component of a vector value by a (run-time) index: through a method returning a
# vector reference (t.frag(j)[k], as steel's Stile.frag_at(i, j)[jj]), of a vector member
# (s.w[k]) and of a parenthesised vector ((t.v[0])[0])
VECTOR_COMPONENT_READS = MSLCase(
    "vector_component_reads",
    """
    uint i = thread_position_in_grid.x;
    Tile<2> t;
    t.v[0] = float2(x[i], x[i] + 1.0f);
    t.v[1] = float2(2.0f * x[i], x[i] - 1.0f);
    Wide s;
    s.w = float4(x[i], 2.0f * x[i], 3.0f * x[i], 4.0f * x[i]);
    short k = short(i % 2);
    out[i] = t.frag(k)[k] + 10.0f * t.frag(1)[1 - k] + 100.0f * s.w[(i + 1) % 4] + 1000.0f * (t.v[0])[0];
    """,
    {"x": RNG.standard_normal(16).astype(np.float32)},
    [("out", (16,), np.float32)], _component_reads_ref, grid=(16, 1, 1), tg=(16, 1, 1),
    header="""
    template <int N>
    struct Tile {
        float2 v[N];
        thread float2& frag(const short j) { return v[j]; }
    };
    struct Wide { float4 w; };
    """, atol=1e-3)

CASES = [ADVANCE, DEREF, HEADER_PTRS, TG_PTRS, TG_VIEWS, PACKED, VECTOR_REFS, BYTES, BYTE_STORES, VECTORS,
         POST_INCREMENT, REFERENCES, TG_SCALAR, ATOMIC_CASTS, MISALIGNED, BUFFER_CHOICE, SMALL_INPUTS,
         VECTOR_PTR_ARGS, VECTOR_COMPONENTS, VECTOR_COMPONENT_READS]
test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)


def test_checked_reports_out_of_bounds_through_a_pointer():
    k = mb.metal_kernel(name="oob_ptr", input_names=["x"], output_names=["out"], source="""
        uint i = thread_position_in_grid.x;
        auto p = x + 8;
        out[i] = p[i];
    """)
    x = mx.arange(16, dtype=mx.float32)
    with pytest.raises(MetalbenchError, match="out-of-bounds read of device buffer 'x'"):
        k(inputs=[x], grid=(16, 1, 1), threadgroup=(16, 1, 1), output_shapes=[(16,)],
          output_dtypes=[mx.float32], backend="sim", checked=True)


def test_checked_reports_a_misaligned_read_past_the_end():
    # thread 2 reads bytes 7..10 of a 10-byte buffer: the assembled read reaches past it
    k = mb.metal_kernel(name="misaligned_oob", input_names=["x"], output_names=["out"], source="""
        uint i = thread_position_in_grid.x;
        out[i] = *(device const uint*)(x + 1 + 3 * i);
    """)
    x = mx.arange(10, dtype=mx.uint8)
    with pytest.raises(MetalbenchError, match="out-of-bounds read of device buffer 'x'"):
        k(inputs=[x], grid=(3, 1, 1), threadgroup=(3, 1, 1), output_shapes=[(3,)],
          output_dtypes=[mx.uint32], backend="sim", checked=True)
    got = k(inputs=[x], grid=(2, 1, 1), threadgroup=(2, 1, 1), output_shapes=[(2,)],
            output_dtypes=[mx.uint32], backend="sim", checked=True)[0]
    assert np.array(got).tolist() == [int.from_bytes(bytes([1 + 3 * i + j for j in range(4)]), "little")
                                      for i in range(2)]


def _error(source, header=""):
    k = mb.metal_kernel(name="bad", input_names=["x", "y"], output_names=["out"], source=source, header=header)
    x = mx.zeros((8,))
    with pytest.raises(MetalbenchError) as ei:
        k(inputs=[x, x], grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(8,)],
          output_dtypes=[mx.float32], backend="sim")
    return str(ei.value)


@pytest.mark.parametrize("src,line,words", [
    ("uint i = thread_position_in_grid.x;\nauto p = i < 4 ? x : y;\nout[i] = simd_sum(p[i]);", 2,
     "depending on a run-time condition"),
    ("uint i = thread_position_in_grid.x;\nfor (int k = 0; k < 2; ++k) out[i] = (k == 0 ? x : y)[i];", 2,
     "depending on a run-time condition"),
    ("uint i = thread_position_in_grid.x;\nauto p = x;\np = y;\nout[i] = p[i];", 3, "cannot be made to point into"),
    ("uint i = thread_position_in_grid.x;\nfloat a = 1.0f;\nthread float* p = &a;\nout[i] = *(device float*)p;", 4,
     "points to thread memory, not device"),
    ("uint i = thread_position_in_grid.x;\nfloat loc[4] = {0};\nthread uint* u = (thread uint*)loc;\n"
     "out[i] = u[0];", 3, "thread-local array"),
    ("uint i = thread_position_in_grid.x;\nout[i] = x + 1;", 2, "is a pointer, not a value"),
    ("uint i = thread_position_in_grid.x;\nthreadgroup float t[2] = {1.0f, 2.0f};\nout[i] = t[i % 2];", 2,
     "threadgroup arrays cannot have initialisers"),
    ("uint i = thread_position_in_grid.x;\nx[i] = 1.0f;", 2, "read-only"),
    ("uint i = thread_position_in_grid.x;\nuint e = 0;\ndo { if (i > 2) continue; e += 1; }\n"
     "while (!atomic_compare_exchange_weak_explicit((device atomic_uint*)out, &e, e + 1, memory_order_relaxed, "
     "memory_order_relaxed));", 4, "do-while condition of a loop with 'continue'"),
])
def test_unsupported_pointer_uses_name_the_construct_and_line(src, line, words):
    msg = _error(src)
    assert words in msg
    assert f"line {line}" in msg or f":{line}:" in msg or f" {line} |" in msg, msg


# ----------------------------------------------------------------------------- random pointer programs

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_OPS = st.lists(st.tuples(st.sampled_from(["+=", "-=", "read", "read_neg", "write", "cast_read", "inc"]),
                          st.integers(0, 5)), min_size=1, max_size=12)


def _program(ops):
    """An MSL body that walks a pointer over x (and one over out) with the ops, and the
    NumPy model of what it computes; every access stays in bounds."""
    lines = ["uint t = thread_position_in_grid.x;", "auto p = x + 8 * t + 8;", "device float* o = out + 4 * t;",
             "float acc = 0.0f;"]
    pos, model, writes = 8, [], 0
    for op, k in ops:
        if op == "+=" and pos + k < 16:
            lines.append(f"p += {k};")
            pos += k
        elif op == "-=" and pos - k >= 0:
            lines.append(f"p -= {k}u;")
            pos -= k
        elif op == "inc" and pos + 1 < 16:
            lines.append("p++;")
            pos += 1
        elif op == "read" and pos + k < 16:
            lines.append(f"acc += p[{k}];")
            model.append(("r", pos + k))
        elif op == "read_neg" and pos - k >= 0:
            lines.append(f"acc += *(p - {k});")
            model.append(("r", pos - k))
        elif op == "cast_read" and pos % 2 == 0 and pos + 2 <= 16:
            lines.append("acc += ((const device float2*)p)[0].y;")
            model.append(("r", pos + 1))
        elif op == "write" and writes < 3:
            lines.append(f"*o++ = acc + {k}.0f;")
            model.append(("w", k))
            writes += 1
    lines.append("*o = acc;")
    return "\n".join(lines), model


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_OPS)
def test_random_pointer_walks_match_a_model(ops):
    src, model = _program(ops)
    x = np.arange(8 * 4 + 16, dtype=np.float32) * 0.5
    want = np.full((4, 4), np.nan, np.float32)
    for t in range(4):
        acc, w = 0.0, 0
        for kind, v in model:
            if kind == "r":
                acc += x[8 * t + v]
            else:
                want[t, w] = acc + v
                w += 1
        want[t, w] = acc
    k = mb.metal_kernel(name="walk", input_names=["x"], output_names=["out"], source=src)
    (out,) = k(inputs=[mx.array(x)], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(16,)],
               output_dtypes=[mx.float32], init_value=float("nan"), backend="sim", checked=True)
    np.testing.assert_allclose(np.array(out).reshape(4, 4), want, rtol=1e-6)


def test_a_device_pointer_at_a_small_input_says_why_it_is_constant():
    # Metal refuses it too: an input of 3 elements is 'const constant float*' in MLX's signature
    k = mb.metal_kernel(name="small_dev", input_names=["x"], output_names=["out"], source="""
        uint i = thread_position_in_grid.x;
        const device float* p = x;
        out[i] = p[i];
    """)
    with pytest.raises(MetalbenchError, match=r"(?s)device pointer at constant memory.*fewer than 8 elements.*line 3"):
        k(inputs=[mx.arange(3, dtype=mx.float32)], grid=(3, 1, 1), threadgroup=(3, 1, 1),
          output_shapes=[(3,)], output_dtypes=[mx.float32], backend="sim")
    got = k(inputs=[mx.arange(8, dtype=mx.float32)], grid=(8, 1, 1), threadgroup=(8, 1, 1),
            output_shapes=[(8,)], output_dtypes=[mx.float32], backend="sim")[0]
    assert np.array(got).tolist() == list(range(8))


def test_a_pointer_moved_by_an_unsigned_64_bit_offset_into_a_function():
    # size_t offsets: the callee adds its own int64 offsets (the simulator crashed in NumPy:
    # uint64 + int64 is float64). From an EXL3 trellis decoder (harvested).
    header = ("inline uint rd(device const ushort* p, uint j) {\n"
              "    device const uint* w = reinterpret_cast<device const uint*>(p);\n    return w[j];\n}")
    k = mb.metal_kernel(name="u64off", input_names=["inp"], output_names=["out"], header=header,
                        source="uint i = thread_position_in_grid.x;\nsize_t off = size_t(i) * 4;\n"
                               "out[i] = rd(inp + off, 1u) + rd(inp + ulong(2 * i), 0u);")
    x = np.arange(16, dtype=np.uint16)
    o = k(inputs=[mx.array(x)], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
          output_dtypes=[mx.uint32], backend="sim")[0]
    words = x.view(np.uint32)
    np.testing.assert_array_equal(np.array(o), words[2 * np.arange(4) + 1] + words[np.arange(4)])
