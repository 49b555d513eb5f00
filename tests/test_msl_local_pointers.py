"""Pointers to scalar and vector locals (``(thread uchar*)&u``, ``(thread half*)&w`` of a
``uint``/``uint2``/``uint4``): the bytes, halves and nibbles of a packed word read (and
written) through a reinterpreting pointer, with constant and run-time indices and pointer
arithmetic. Each kernel: simulator vs NumPy (unchecked and checked), a round trip through
the printed MSL with the libclang checks of the printed MSL and CUDA, and (GPU machine or
``-p hostcuda``) the printed CUDA."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import MetalbenchError
from msl_cases import MSLCase, three_ways

RNG = np.random.default_rng(29)
N = 32
W1 = RNG.integers(0, 2**32, N, dtype=np.uint32)
W1[:4] = [0, 0xFFFFFFFF, 0x80008000, 0x3C00BC00]          # edges: zero, all ones, sign bits, halves 1 and -1
W2 = RNG.integers(0, 2**32, (N, 2), dtype=np.uint32)
W4 = RNG.integers(0, 2**32, (N, 4), dtype=np.uint32)
HALVES = RNG.standard_normal((N, 2)).astype(np.float16).view(np.uint32).reshape(N)


def _nibbles_ref(w):
    b = w.view(np.uint8).reshape(N, 4)
    h = w.view(np.uint16).reshape(N, 2)
    k = np.arange(N) % 4
    nib = (b[np.arange(N), k // 2] >> (4 * (k % 2))) & 15
    return [np.stack([h[:, 1], h[np.arange(N), k % 2], b[:, 0], b[np.arange(N), k], nib,
                      (b[:, 2] & 15) * 16 + (h[:, 0] >> 12)], 1).astype(np.uint32)]


# a uint local read as halves and bytes: constant and run-time indices, nibbles of the bytes
NIBBLES = MSLCase(
    "local_nibbles",
    """
    uint i = thread_position_in_grid.x;
    uint packed = w[i];
    const thread uint16_t* hs = (const thread uint16_t*)&packed;
    const thread uchar* bs = (const thread uchar*)&packed;
    uint k = i % 4;
    device uint* o = out + i * 6;
    o[0] = hs[1];
    o[1] = hs[k % 2];
    o[2] = *bs;
    o[3] = bs[k];
    o[4] = (bs[k / 2] >> (4 * (k % 2))) & 0xf;
    o[5] = (((thread uchar*)&packed)[2] & 15) * 16 + (hs[0] >> 12);
    """,
    {"w": W1}, [("out", (N, 6), np.uint32)], _nibbles_ref)


def _vectors_ref(w2, w4):
    i = np.arange(N)
    h2 = w2.view(np.uint16).reshape(N, 4)
    b2 = w2.view(np.uint8).reshape(N, 8)
    b4 = w4.view(np.uint8).reshape(N, 16)
    h4 = w4.view(np.uint16).reshape(N, 8)
    return [np.stack([h2[i, i % 4], b2[:, 5], b4[i, i % 16], b4[i, (3 * i + 1) % 16], h4[:, 7],
                      b4[i, 2 + i % 8], w4[:, 2]], 1).astype(np.uint32)]


# uint2 and uint4 locals: halves and bytes by run-time index, pointer arithmetic on them
VECTORS = MSLCase(
    "local_vectors",
    """
    uint i = thread_position_in_grid.x;
    uint2 a = uint2(w2[2 * i], w2[2 * i + 1]);
    uint4 b = uint4(w4[4 * i], w4[4 * i + 1], w4[4 * i + 2], w4[4 * i + 3]);
    thread ushort* ha = (thread ushort*)&a;
    thread uchar* bb = (thread uchar*)&b;
    device uint* o = out + i * 7;
    o[0] = ha[i % 4];
    o[1] = ((thread uchar*)&a)[5];
    o[2] = bb[i % 16];
    o[3] = *(bb + (3 * i + 1) % 16);
    o[4] = ((const thread ushort*)&b)[7];
    thread uchar* q = bb + 2;
    q += i % 8;
    o[5] = *q++;
    o[6] = ((thread uint*)&b)[2];
    """,
    {"w2": W2, "w4": W4}, [("out", (N, 7), np.uint32)], _vectors_ref)


def _halves_ref(w):
    h = w.view(np.float16).reshape(N, 2).astype(np.float32)
    return [np.stack([h[:, 0], h[:, 1], h[np.arange(N), np.arange(N) % 2] * 2.0], 1)]


# a half read from a uint (the bits reinterpreted), and the same through a half2 pointer
HALVES_CASE = MSLCase(
    "local_halves",
    """
    uint i = thread_position_in_grid.x;
    uint packed = w[i];
    const thread half* hp = (const thread half*)&packed;
    half2 both = *(const thread half2*)&packed;
    out[i * 3 + 0] = float(hp[0]);
    out[i * 3 + 1] = float(both.y);
    out[i * 3 + 2] = float(hp[i % 2]) * 2.0f;
    """,
    {"w": HALVES}, [("out", (N, 3), np.float32)], _halves_ref)


def _stores_ref(w, w2):
    i = np.arange(N)
    b = w.view(np.uint8).reshape(N, 4).copy()
    b[:, 0] = 0xAB
    b[i, (i + 1) % 4] = (i * 7) & 0xFF
    h2 = w2.view(np.uint16).reshape(N, 4).copy()
    h2[i, i % 4] = np.arange(N, dtype=np.float16).view(np.uint16)
    h2[:, 3] += 1
    f = (np.arange(N) * 0.5).astype(np.float32)
    return [b.view(np.uint32).reshape(N), h2.view(np.uint32).reshape(N, 2), f + 1]


# stores through pointers into locals: a uchar into a uint (constant and run-time index),
# a half into a uint2 by run-time index, a compound assignment; the local's own type
STORES = MSLCase(
    "local_stores",
    """
    uint i = thread_position_in_grid.x;
    uint u = w[i];
    thread uchar* p = (thread uchar*)&u;
    p[0] = 0xAB;
    p[(i + 1) % 4] = uchar(i * 7);
    out[i] = u;
    uint2 v = uint2(w2[2 * i], w2[2 * i + 1]);
    ((thread half*)&v)[i % 4] = half(i);
    thread ushort* hv = (thread ushort*)&v;
    hv[3] += 1;
    out2[2 * i] = v.x;
    out2[2 * i + 1] = v.y;
    float f = float(i) * 0.5f;
    *(&f) += 1.0f;
    out3[i] = *(thread float*)&f;
    """,
    {"w": W1, "w2": W2}, [("out", (N,), np.uint32), ("out2", (N, 2), np.uint32), ("out3", (N,), np.float32)],
    _stores_ref)


def _wide_ref(w):
    return [np.stack([w, np.full_like(w, 0xFFFFFFFF)], 1)]


# wider words from narrower components: a uint from a uchar4, a uint2 view of a half4
WIDE = MSLCase(
    "local_wide",
    """
    uint i = thread_position_in_grid.x;
    uint packed = w[i];
    uchar4 bytes = uchar4(packed & 0xff, (packed >> 8) & 0xff, (packed >> 16) & 0xff, packed >> 24);
    half4 hh = as_type<half4>(uint2(packed, ~packed));
    uint2 back = *(thread uint2*)&hh;
    out[2 * i] = *(thread uint*)&bytes;
    out[2 * i + 1] = back.y ^ back.x;
    """,
    {"w": W1}, [("out", (N, 2), np.uint32)], _wide_ref)

CASES = [NIBBLES, VECTORS, HALVES_CASE, STORES, WIDE]
test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)


def test_an_index_outside_the_local_reads_0_and_a_store_there_is_dropped():
    k = mb.metal_kernel(name="local_oob", input_names=["w"], output_names=["out"], source="""
        uint i = thread_position_in_grid.x;
        uint u = w[i];
        thread uchar* p = (thread uchar*)&u;
        int k = int(i) - 4;            // -4 .. 11: only 0 .. 3 are inside u
        p[k] = 0x11;
        out[i * 2] = p[k];
        out[i * 2 + 1] = u;
    """)
    w = np.full(16, 0x44332211 * 2, np.uint32)
    got = np.array(k(inputs=[mx.array(w)], grid=(16, 1, 1), threadgroup=(16, 1, 1), output_shapes=[(32,)],
                     output_dtypes=[mx.uint32], backend="sim")[0]).reshape(16, 2)
    b = w.view(np.uint8).reshape(16, 4).copy()
    inside = (np.arange(16) >= 4) & (np.arange(16) < 8)
    b[np.arange(16)[inside], np.arange(16)[inside] - 4] = 0x11
    assert got[:, 0].tolist() == [0x11 if x else 0 for x in inside]
    assert got[:, 1].tolist() == b.view(np.uint32).reshape(16).tolist()


def _error(source):
    k = mb.metal_kernel(name="bad_local", input_names=["x"], output_names=["out"], source=source)
    with pytest.raises(MetalbenchError) as ei:
        k(inputs=[mx.zeros((8,), dtype=mx.uint32)], grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(8,)],
          output_dtypes=[mx.uint32], backend="sim")
    return str(ei.value)


@pytest.mark.parametrize("src,line,words", [
    ("uint i = thread_position_in_grid.x;\nuint u = x[i];\n"
     "out[i] = atomic_fetch_add_explicit((thread atomic_uint*)&u, 1u, memory_order_relaxed);", 3,
     "pointer to the local variable 'u'"),
    ("uint i = thread_position_in_grid.x;\nushort h = ushort(x[i]);\nout[i] = *(thread uint*)&h;", 3,
     "do not tile it"),
    ("uint i = thread_position_in_grid.x;\nuint2 u = uint2(x[i]);\nout[i] = *(thread uint*)((thread uchar*)&u + 1);",
     3, "not a whole number of uint elements"),
    ("uint i = thread_position_in_grid.x;\nuint u = x[i];\nout[i] = *(device uint*)&u;", 3,
     "points to thread memory, not device"),
])
def test_unsupported_uses_name_the_construct_and_line(src, line, words):
    msg = _error(src)
    assert words in msg, msg
    assert f"line {line}" in msg or f":{line}:" in msg or f" {line} |" in msg, msg
