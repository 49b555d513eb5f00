"""Arrays that one pointer points into in turn (issue 13): threadgroup and thread-local
ping-pong buffers (``src = dst; dst = tmp;``), ``c ? a : b`` over threadgroup arrays, row
pointers of 2-D arrays moved between arrays (frontend/msl/array_pools.py lays such arrays
out in one pool).
Each kernel: simulator vs NumPy (unchecked and checked), printed-MSL round trip, libclang
checks, and the printed CUDA on a GPU machine; checked-mode findings name the array the
kernel declared, with its own index."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import KernelCheckError, MetalbenchError
from msl_cases import MSLCase, three_ways

RNG = np.random.default_rng(31)

# Hillis-Steele inclusive scan over a threadgroup of 32, reading one buffer and writing the
# other each step, the two swapped through a third pointer
PING_PONG = MSLCase(
    "ping_pong_scan",
    """
    uint lid = thread_position_in_threadgroup.x;
    uint gid = thread_position_in_grid.x;
    threadgroup float buf_a[32];
    threadgroup float buf_b[32];
    buf_a[lid] = x[gid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    threadgroup float* src = buf_a;
    threadgroup float* dst = buf_b;
    for (uint s = 1; s < 32; s <<= 1) {
        dst[lid] = lid >= s ? src[lid] + src[lid - s] : src[lid];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        threadgroup float* t = src;
        src = dst;
        dst = t;
    }
    out[gid] = src[lid];
    """,
    {"x": RNG.standard_normal(96).astype(np.float32)},
    [("out", (96,), np.float32)],
    lambda x: [np.cumsum(x.reshape(3, 32), axis=1).reshape(-1)],
    grid=(96, 1, 1), tg=(32, 1, 1), atol=1e-5)

# a pointer chosen per thread between two threadgroup arrays, and row pointers of 2-D
# arrays moved from one array's row to the other's
CHOICE_AND_ROWS = MSLCase(
    "tg_choice_rows",
    """
    uint lid = thread_position_in_threadgroup.x;
    uint gid = thread_position_in_grid.x;
    threadgroup float lo[16];
    threadgroup float hi[16];
    threadgroup float ra[4][8];
    threadgroup float rb[4][8];
    lo[lid] = x[gid];
    hi[lid] = 2.0f * x[gid];
    ra[lid / 4][lid % 4] = x[gid] + 1.0f;
    rb[lid / 4][lid % 4] = x[gid] - 1.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    threadgroup float* p = (lid & 1) ? hi : lo;
    threadgroup float* r = ra[lid % 4];
    float v = p[15 - lid] + r[lid / 4];
    r = rb[lid % 4];
    out[gid] = v + r[lid / 4];
    """,
    {"x": RNG.standard_normal(32).astype(np.float32)},
    [("out", (32,), np.float32)],
    None,
    grid=(32, 1, 1), tg=(16, 1, 1), atol=1e-5)


def _choice_ref(x):
    out = np.zeros(32, np.float32)
    for g in range(2):
        xs = x[g * 16:(g + 1) * 16]
        ra, rb = (xs + 1).reshape(4, 4), (xs - 1).reshape(4, 4)
        for lid in range(16):
            p = 2 * xs if lid & 1 else xs
            out[g * 16 + lid] = p[15 - lid] + ra[lid % 4, lid // 4] + rb[lid % 4, lid // 4]
    return [out]


CHOICE_AND_ROWS.ref = _choice_ref

# per-thread ping-pong over two register arrays (with initialisers, one of them partly run-time),
# declared in a loop body so the pool is declared where the first of them is, each iteration
THREAD_PING_PONG = MSLCase(
    "thread_ping_pong",
    """
    uint i = thread_position_in_grid.x;
    float acc = 0.0f;
    for (int rep = 0; rep < 2; ++rep) {
        float s0[4] = {x[i], 2.0f * x[i], 0.5f, 1.0f};
        float s1[4] = {0.0f};
        thread float* src = s0;
        thread float* dst = s1;
        for (int it = 0; it < 3 + rep; ++it) {
            for (int k = 0; k < 4; ++k) dst[k] = src[k] + src[(k + 1) % 4] * 0.5f;
            thread float* t = src;
            src = dst;
            dst = t;
        }
        acc += src[0] + s1[3];
    }
    out[i] = acc;
    """,
    {"x": RNG.standard_normal(40).astype(np.float32)},
    [("out", (40,), np.float32)],
    None,
    grid=(40, 1, 1), tg=(8, 1, 1), atol=1e-5)


def _thread_ref(x):
    out = np.zeros_like(x)
    for i, v in enumerate(x.astype(np.float64)):
        acc = 0.0
        for rep in range(2):
            bufs = [[v, 2 * v, 0.5, 1.0], [0.0] * 4]
            s = 0
            for _ in range(3 + rep):
                bufs[1 - s] = [bufs[s][k] + bufs[s][(k + 1) % 4] * 0.5 for k in range(4)]
                s = 1 - s
            acc += bufs[s][0] + bufs[1][3]
        out[i] = acc
    return [out]


THREAD_PING_PONG.ref = _thread_ref
CASES = [PING_PONG, CHOICE_AND_ROWS, THREAD_PING_PONG]

test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)


def _run(source, n=32, checked=True):
    k = mb.metal_kernel(name="pools", input_names=["x"], output_names=["out"], source=source)
    return k(inputs=[mx.arange(n, dtype=mx.float32)], grid=(n, 1, 1), threadgroup=(n, 1, 1),
             output_shapes=[(n,)], output_dtypes=[mx.float32], backend="sim", checked=checked)


SWAP = """
    uint lid = thread_position_in_threadgroup.x;
    threadgroup float a[32];
    threadgroup float b[32];
    threadgroup float* p = a;
    p = b;
"""


def test_a_race_on_a_pooled_array_names_it_with_its_own_index():
    src = SWAP + "    b[lid] = x[lid];\n    out[lid] = b[(lid + 1) % 32] + p[0];\n"
    with pytest.raises(KernelCheckError) as ei:
        _run(src)
    msg = str(ei.value)
    assert "threadgroup array 'b' at index" in msg and "_tg_pool" not in msg, msg


def test_out_of_bounds_past_a_pool_names_its_last_array():
    src = SWAP + ("    b[lid] = x[lid];\n    threadgroup_barrier(mem_flags::mem_threadgroup);\n"
                  "    out[lid] = p[lid + 1];\n")
    with pytest.raises(KernelCheckError) as ei:
        _run(src)
    msg = str(ei.value)
    assert "out-of-bounds" in msg.lower() or "out of bounds" in msg.lower(), msg
    assert "'b'" in msg and "32" in msg and "_tg_pool" not in msg, msg


def test_arrays_of_other_element_types_are_not_pooled_and_the_error_says_where():
    src = ("uint lid = thread_position_in_threadgroup.x;\nthreadgroup float a[32];\nthreadgroup int b[32];\n"
           "threadgroup float* p = a;\np = (threadgroup float*)b;\nout[lid] = p[lid];")
    with pytest.raises(MetalbenchError) as ei:
        _run(src, checked=False)
    msg = str(ei.value)
    assert "cannot be made to point into" in msg and "line 5" in msg, msg


def test_out_of_bounds_in_a_thread_pool_names_the_declared_array():
    src = ("uint i = thread_position_in_grid.x;\nfor (int r = 0; r < 1; ++r) {\n  float a[4] = {0};\n  float b[4] = {0};\n"
           "  thread float* p = a;\n  p = b;\n  out[i] = p[i + 2];\n}")
    with pytest.raises(KernelCheckError) as ei:
        _run(src, n=4)
    msg = str(ei.value)
    assert "'b'" in msg and "_pool" not in msg, msg
