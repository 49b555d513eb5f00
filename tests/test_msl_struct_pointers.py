"""Pointers to structs in memory in the forms real kernels write them (GGUF/GGML-style
quantised blocks): ``reinterpret_cast<const device Blk*>(w)`` and ``static_cast`` through a
``void*`` as the C cast is read; a cast used directly (``((const device P*)a + i)->y``,
``auto p = (P*)a;``) -- these raised an internal error --; a struct pointer passed to a
header function (as a variable, a cast or moved by ``+``; the callee may move its copy);
a threadgroup struct pointer over a threadgroup array; a member's address (``&p[i].y``,
``&local.x``) and ``c ? p : q`` of struct pointers into one buffer; components and
subscripts of a vector member in memory (``o[i].v.x = a``, ``o[i].v[1]``, ``(*w).x += b``). Our own kernels vs NumPy, round
trip, printed CUDA."""
import numpy as np
import pytest

import metalbench as mb
import mlx.core as mx

from msl_cases import MSLCase, three_ways

RNG = np.random.default_rng(1605)
N = 16
A = RNG.standard_normal(4 * N).astype(np.float32)      # N records of {float x, y; float2 v}

HEADER = """
struct P { float x, y; };
struct Rec { float x; float y; float2 v; };
inline float gety(const device P* p, uint i) { return p[i].y; }
inline float after(const device Rec* r) { r++; return r->v.y; }
"""

CASTS = MSLCase(
    "struct_pointer_casts",
    """
    uint i = thread_position_in_grid.x;
    const device Rec* r = reinterpret_cast<const device Rec*>(a);
    const device P* p = static_cast<const device P*>(static_cast<const device void*>(a));
    auto q = (const device Rec*)a;
    float s = ((const device Rec*)a + i)->v.x;
    out[i] = r[i].x + 10.0f * p[2 * i + 1].y + 100.0f * q[i].y + 1000.0f * s;
    """,
    {"a": A}, [("out", (N,), np.float32)],
    lambda a: [a[0::4] + 10 * a[3::4] + 100 * a[1::4] + 1000 * a[2::4]],
    header=HEADER, grid=(N, 1, 1), tg=(N, 1, 1), atol=1e-3)

CALLS = MSLCase(
    "struct_pointers_passed_to_functions",
    """
    uint i = thread_position_in_grid.x;
    const device P* p = (const device P*)a;
    float last = i + 1 < 16 ? after((const device Rec*)a + i) : 0.0f;
    out[i] = gety(p, 2 * i) + 10.0f * gety((const device P*)a + 1, 2 * i) + 100.0f * last;
    """,
    {"a": A}, [("out", (N,), np.float32)],
    lambda a: [a[1::4] + 10 * a[3::4] + 100 * np.append(a[7::4], 0.0)],
    header=HEADER, grid=(N, 1, 1), tg=(N, 1, 1), atol=1e-3)

THREADGROUP = MSLCase(
    "threadgroup_struct_pointer",
    """
    uint i = thread_position_in_grid.x;
    threadgroup float tg[2 * 16];
    tg[2 * i] = a[2 * i];
    tg[2 * i + 1] = a[2 * i + 1];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    threadgroup P* p = (threadgroup P*)tg;
    out[i] = p[15 - i].y;
    """,
    {"a": A[:2 * N]}, [("out", (N,), np.float32)],
    lambda a: [a[1::2][::-1]],
    header=HEADER, grid=(N, 1, 1), tg=(N, 1, 1), atol=1e-6)

MEMBERS = MSLCase(
    "member_addresses_and_pointer_choices",
    """
    uint i = thread_position_in_grid.x;
    const device Rec* r = (const device Rec*)a;
    const device float* py = &r[i].y;                  // a member's address
    const device float2* pv = &(r + i)->v;
    const device Rec* pick = (i % 2 == 0 ? r : r + 1);  // a choice of struct pointers into one buffer
    Rec local = r[i];
    thread float* lx = &local.x;
    *lx += 1.0f;
    out[i] = *py + 10.0f * pv->y + 100.0f * pick[i % 8].x + 1000.0f * local.x;
    """,
    {"a": A}, [("out", (N,), np.float32)],
    lambda a: [a[1::4] + 10 * a[3::4] + 100 * a[0::4][np.arange(N) % 8 + np.arange(N) % 2]
               + 1000 * (a[0::4] + 1)],
    header=HEADER, grid=(N, 1, 1), tg=(N, 1, 1), atol=2e-3)

VECTOR_MEMBERS = MSLCase(
    "vector_members_in_memory_by_component",
    """
    uint i = thread_position_in_grid.x;
    uint t = thread_index_in_threadgroup;
    device Rec* o = (device Rec*)out;
    o[i].x = a[i];
    o[i].v.x = 1.0f;                    // a component of a vector member in memory
    (o + i)->v.y = 2.0f;
    o[i].v.y += a[i];
    o[i].y = o[i].v[1] * 10.0f;          // a subscript of one
    threadgroup Rec s[16];
    s[t].v = float2(0.0f);
    s[t].v[0] = a[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    device float2* w = &o[i].v;
    (*w).x += s[15 - t].v.x;
    """,
    {"a": A[:N]}, [("out", (4 * N,), np.float32)],
    lambda a: [np.stack([a, (2 + a) * 10, 1 + a[::-1], 2 + a], axis=1).reshape(4 * N)],
    header=HEADER, grid=(N, 1, 1), tg=(N, 1, 1), atol=1e-5)

CASES = [CASTS, CALLS, THREADGROUP, MEMBERS, VECTOR_MEMBERS]
test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)


def test_a_struct_pointer_of_another_class_is_no_match():
    k = mb.metal_kernel(name="wrong", input_names=["a"], output_names=["out"], header=HEADER,
                        source="uint i = thread_position_in_grid.x;\nout[i] = gety((const device Rec*)a, i);")
    with pytest.raises(mb.KernelTypeError, match=r"'p' points to P, got Rec data"):
        k(inputs=[mx.array(A)], output_shapes=[(N,)], output_dtypes=[mx.float32], grid=(N, 1, 1),
          threadgroup=(N, 1, 1), backend="sim")


ATOMIC_HEADER = "struct C { atomic_uint cnt; uint last; };\nstruct L { atomic_uint n; };"


@pytest.mark.parametrize("checked", [False, True])
def test_an_atomic_member_of_a_struct_in_memory(checked):
    # struct C { atomic_uint cnt; ... } over a uint output: &cc[i].cnt updates atomically
    k = mb.metal_kernel(name="atomic_member", input_names=["x"], output_names=["out"], header=ATOMIC_HEADER,
                        source="uint i = thread_position_in_grid.x;\ndevice C* cc = (device C*)out;\n"
                               "atomic_fetch_add_explicit(&cc[i % 4].cnt, x[i], memory_order_relaxed);\n"
                               "if (i < 4) cc[i].last = 7u;")
    x = (np.arange(64) % 5).astype(np.uint32)
    o = k(inputs=[mx.array(x)], grid=(64, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(8,)],
          output_dtypes=[mx.uint32], init_value=0, backend="sim", checked=checked)[0]
    want = np.zeros((4, 2), np.uint32)
    np.add.at(want[:, 0], np.arange(64) % 4, x)
    want[:, 1] = 7
    np.testing.assert_array_equal(np.array(o).reshape(4, 2), want)


def test_an_atomic_member_of_a_local_object_is_refused_by_name():
    k = mb.metal_kernel(name="atomic_local", input_names=["x"], output_names=["out"], header=ATOMIC_HEADER,
                        source="uint i = thread_position_in_grid.x;\nL l;\nout[i] = x[i];")
    with pytest.raises(mb.KernelSyntaxError, match=r"the atomic member 'n' of a local L"):
        k(inputs=[mx.zeros(2)], output_shapes=[(2,)], output_dtypes=[mx.float32], grid=(2, 1, 1),
          threadgroup=(2, 1, 1), backend="sim")


@pytest.mark.gpu
def test_an_atomic_member_of_a_struct_in_memory_on_cuda():
    k = mb.metal_kernel(name="atomic_member_gpu", input_names=["x"], output_names=["out"], header=ATOMIC_HEADER,
                        source="uint i = thread_position_in_grid.x;\ndevice C* cc = (device C*)out;\n"
                               "atomic_fetch_add_explicit(&cc[i % 4].cnt, x[i], memory_order_relaxed);")
    x = (np.arange(256) % 5).astype(np.uint32)
    o = k(inputs=[mx.array(x)], grid=(256, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(8,)],
          output_dtypes=[mx.uint32], init_value=0, backend="cuda")[0]
    want = np.zeros(4, np.uint32)
    np.add.at(want, np.arange(256) % 4, x)
    np.testing.assert_array_equal(np.array(o).reshape(4, 2)[:, 0], want)
