"""A pointer into one of two buffers chosen at run time, ``(c ? A : B) + off``, followed
by collectives (barriers, SIMD-group and quad-group functions, in the body or in a
header function or lambda). The front end translates the rest of the block once per
buffer under ``if (c)``; that is exact only where ``c`` is the same on every thread of
the group the collective spans (``frontend/msl/buffer_choice.py``). Each kernel here:
the simulator (unchecked and checked) against NumPy, the round trip through printed MSL,
and on a GPU machine the printed CUDA; a ``c`` that may differ within the group must be
an error naming the choice's line and the collective's, never a wrong answer."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench import ir
from metalbench.builtins import registry
from metalbench.errors import MetalbenchError
from metalbench.passes.collectives import collectives, scope_of
from msl_cases import MSLCase, three_ways

RNG = np.random.default_rng(71)
N = 256
X = RNG.standard_normal(N).astype(np.float32)
Y = RNG.standard_normal(N).astype(np.float32)


def _groups(v, width):
    """Each element replaced by the sum of its group of ``width`` consecutive elements."""
    return np.repeat(v.reshape(-1, width).sum(axis=1), width)


def _flag_case(flag):
    return MSLCase(
        f"flag_choice_{flag}",
        """
        uint i = thread_position_in_grid.x;
        float before = simd_sum(1.0f);             // a collective before the choice is untouched
        device const float* p = (flag[0] != 0 ? x : y) + i;
        float s = simd_sum(p[0]);
        out[i] = s + p[0] * before;
        """,
        {"x": X, "y": Y, "flag": np.array([flag], np.int32)},
        [("out", (N,), np.float32)],
        lambda x, y, flag: [_groups(x if flag[0] else y, 32) + 32 * (x if flag[0] else y)],
        grid=(N, 1, 1), tg=(64, 1, 1), atol=1e-5)


def _tg_ref(x, y):
    out = np.empty(N, np.float32)
    for g in range(N // 64):
        tile = (x if g % 2 == 0 else y)[64 * g:64 * g + 64]
        t = np.arange(64)
        rev = tile[63 - t]
        out[64 * g + t] = _groups(rev, 32) + tile[(t + 1) % 64]
    return [out]


TG_BARRIER = MSLCase(
    "tg_choice_barrier",
    """
    // the choice depends on the threadgroup only: barriers and simd_sum after it are fine
    uint i = thread_position_in_grid.x;
    uint t = thread_position_in_threadgroup.x;
    uint g = threadgroup_position_in_grid.x;
    threadgroup float tile[64];
    device const float* p = (g % 2 == 0 ? x : y) + g * threads_per_threadgroup.x;
    tile[t] = p[t];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float s = simd_sum(tile[63 - t]);
    out[i] = s + tile[(t + 1) % 64];
    """,
    {"x": X, "y": Y}, [("out", (N,), np.float32)], _tg_ref, grid=(N, 1, 1), tg=(64, 1, 1), atol=1e-5)


def _simd_ref(x, y):
    i = np.arange(N)
    v = np.where((i // 32) % 2 == 0, x, y)
    return [np.cumsum(v.reshape(-1, 32), axis=1).reshape(-1) + _groups(v, 32)]


SIMD_CHOICE = MSLCase(
    "simd_choice",
    """
    // one choice per SIMD-group: its collectives see all of its lanes on one side
    uint i = thread_position_in_grid.x;
    device const float* p = (simdgroup_index_in_threadgroup % 2 == 0 ? x : y) + i;
    out[i] = simd_prefix_inclusive_sum(*p) + simd_sum(*p);
    """,
    {"x": X, "y": Y}, [("out", (N,), np.float32)], _simd_ref, grid=(N, 1, 1), tg=(64, 1, 1), atol=1e-4)


def _quad_ref(x, y):
    v = np.where((np.arange(N) // 4) % 2 == 0, x, y)
    return [_groups(v, 4)]


QUAD_CHOICE = MSLCase(
    "quad_choice",
    """
    // one choice per quad-group: quad_sum needs no more
    uint i = thread_position_in_grid.x;
    device const float* p = (quadgroup_index_in_threadgroup % 2 == 0 ? x : y) + i;
    out[i] = quad_sum(p[0]);
    """,
    {"x": X, "y": Y}, [("out", (N,), np.float32)], _quad_ref, grid=(N, 1, 1), tg=(64, 1, 1), atol=1e-5)


HEADER_SCALAR = MSLCase(
    "header_scalar_choice",
    """
    // a scalar argument chooses; the collective is in a header function
    uint i = thread_position_in_grid.x;
    device const float* p = (which == 1 ? x : y) + i;
    out[i] = lane_total(p[0]);
    """,
    {"x": X, "y": Y, "which": np.array(1, np.int32)}, [("out", (N,), np.float32)],
    lambda x, y, which: [_groups(x if which == 1 else y, 32)],
    header="float lane_total(float v) { return simd_sum(v); }", grid=(N, 1, 1), tg=(64, 1, 1), atol=1e-5)


def _partial_ref(x, y, flag):
    v = x if flag[0] else y
    lane = np.arange(N) % 32
    live = np.where(lane < 20, v, 0).reshape(-1, 32).sum(axis=1)
    return [np.where(lane < 20, np.repeat(live, 32), -1.0)]


UNDER_DIVERGENT_IF = MSLCase(
    "uniform_choice_in_divergent_if",
    """
    // a uniform choice inside a divergent branch: simd_sum over the lanes that are there
    uint i = thread_position_in_grid.x;
    if (thread_index_in_simdgroup < 20) {
        device const float* p = (flag[0] != 0 ? x : y) + i;
        out[i] = simd_sum(p[0]);
    } else {
        out[i] = -1.0f;
    }
    """,
    {"x": X, "y": Y, "flag": np.array([0], np.int32)}, [("out", (N,), np.float32)], _partial_ref,
    grid=(N, 1, 1), tg=(64, 1, 1), atol=1e-5)


# ----------------------------------------------------------------------------- joined: c may differ in the group
# The sides of a split agree everywhere but where the pointer is read, so they are joined
# (buffer_merge.py): the collectives run once, on every thread, the choice only around reads.

_T = np.arange(N) % 64                       # thread position in its threadgroup of 64


def _tiles_ref(x, y):
    v = np.where(_T // 32 == 0, x, y)        # simdgroup_index_in_threadgroup == 0: x
    tiles = (2 * v).reshape(-1, 64)
    acc = np.zeros(N, np.float32)
    for k in range(2):
        acc += tiles[np.arange(N) // 64, (_T + 1 + k) % 64] + v
    return [acc]


JOINED_TILES = MSLCase(
    "joined_choice_around_barriers",
    """
    // a choice per SIMD-group, then threadgroup barriers and a shared tile (MoE-style paired weights)
    uint i = thread_position_in_grid.x;
    uint t = thread_position_in_threadgroup.x;
    device const float* p = (simdgroup_index_in_threadgroup == 0 ? x : y) + i;
    threadgroup float tile[64];
    float scale = p[0] * 2.0f;
    tile[t] = scale;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float acc = 0.0f;
    for (int k = 0; k < 2; k++) {
        acc += tile[(t + 1 + k) % 64] + p[0];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    out[i] = acc;
    """,
    {"x": X, "y": Y}, [("out", (N,), np.float32)], _tiles_ref, grid=(N, 1, 1), tg=(64, 1, 1), atol=1e-5)

JOINED_QUAD = MSLCase(
    "joined_choice_before_a_quad_shuffle",
    """
    uint i = thread_position_in_grid.x;
    device const float* p = (flag[i] > 3 ? x : y) + i;
    float a = p[0];
    out[i] = quad_shuffle_xor(a, 1u);
    """,
    {"x": X, "y": Y, "flag": np.arange(N, dtype=np.int32)}, [("out", (N,), np.float32)],
    lambda x, y, flag: [np.where(flag > 3, x, y)[np.arange(N) ^ 1]], grid=(N, 1, 1), tg=(64, 1, 1))

JOINED_LAMBDA = MSLCase(
    "joined_choice_into_a_lambda_with_simd_max",
    """
    uint i = thread_position_in_grid.x;
    device const float* p = (i < 7 ? x : y) + i;
    auto red = [&](float v) { return simd_max(v); };
    out[i] = red(p[0]);
    """,
    {"x": X, "y": Y}, [("out", (N,), np.float32)],
    lambda x, y: [np.repeat(np.where(np.arange(N) < 7, x, y).reshape(-1, 32).max(axis=1), 32)],
    grid=(N, 1, 1), tg=(64, 1, 1))

CASES = [_flag_case(0), _flag_case(3), TG_BARRIER, SIMD_CHOICE, QUAD_CHOICE, HEADER_SCALAR, UNDER_DIVERGENT_IF,
         JOINED_TILES, JOINED_QUAD, JOINED_LAMBDA]
test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)


# ----------------------------------------------------------------------------- refused: c may differ in the group

def _error(source, header="", inputs=("x", "y", "flag")):
    k = mb.metal_kernel(name="choice", input_names=list(inputs), output_names=["out"], source=source, header=header)
    arrays = {"x": mx.array(X), "y": mx.array(Y), "flag": mx.arange(N, dtype=mx.int32)}
    with pytest.raises(MetalbenchError) as ei:
        k(inputs=[arrays[n] for n in inputs], grid=(N, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(N,)],
          output_dtypes=[mx.float32], backend="sim")
    return str(ei.value)


_LANE = "uint i = thread_position_in_grid.x;\n"


@pytest.mark.parametrize("src,header,words", [
    # the silent wrong answer this guards against: each side summed its own lanes (the
    # collective's own operand differs between the sides, so they cannot be joined)
    (_LANE + "device const float* p = (i % 2 == 0 ? x : y) + i;\nout[i] = simd_sum(p[0]);",
     "", ["simd_sum at line 3", "SIMD-group"]),
    (_LANE + "device const float* p = (flag[i] > 3 ? x : y) + i;\nout[i] = quad_shuffle_xor(p[0], 1u);",
     "", ["quad_shuffle_xor at line 3", "quad-group"]),
    (_LANE + "device const float* p = (simdgroup_index_in_threadgroup == 0 ? x : y) + i;\n"
     "for (int k = 0; k < int(p[0]); k++) { threadgroup_barrier(mem_flags::mem_none); }\nout[i] = 0.0f;",
     "", ["threadgroup_barrier at line 3", "wait at different barriers"]),
    # collectives the text of the block does not show: in a header function, in a lambda
    (_LANE + "device const float* p = (i < 7 ? x : y) + i;\nout[i] = spread(p[0]);",
     "float spread(float v) {\n    return simd_broadcast(v, 3u);\n}",
     ["simd_broadcast (line 2 of choice header), reached through the call at line 3"]),
    (_LANE + "device const float* p = (i < 7 ? x : y) + i;\nout[i] = settle(p[0]);",
     "float settle(float v) {\n    threadgroup_barrier(mem_flags::mem_device);\n    return v;\n}",
     ["threadgroup_barrier (line 2 of choice header), reached through the call at line 3"]),
])
def test_choice_that_may_differ_in_the_group_is_refused(src, header, words):
    msg = _error(src, header)
    assert "depending on a run-time condition" in msg and "(line 2)" in msg, msg
    assert "    2 | device const float* p" in msg, msg          # the caret excerpt at the choice
    for w in words:
        assert w in msg, msg
    assert "index both buffers under the condition" in msg


def test_uniform_choice_in_a_header_function_needs_uniform_parameters():
    # inside a device function its parameters count as differing per thread: refused,
    # though on this launch the caller passes a threadgroup-uniform value
    msg = _error("uint i = thread_position_in_grid.x;\nout[i] = pick(x, y, threadgroup_position_in_grid.x, i);",
                 header="float pick(device const float* a, device const float* b, uint g, uint i) {\n"
                        "    device const float* p = (g == 0 ? a : b) + i;\n"
                        "    return simd_sum(p[0]);\n}", inputs=("x", "y"))
    assert "simd_sum at line 3" in msg and "choice header, line 2" in msg, msg


def test_choice_without_collectives_still_splits_per_thread():
    k = mb.metal_kernel(name="per_thread", input_names=["x", "y"], output_names=["out"], source="""
        uint i = thread_position_in_grid.x;
        device const float* p = (i % 3 == 0 ? x : y) + i;
        out[i] = p[0] * 2.0f;
    """)
    got = k(inputs=[mx.array(X), mx.array(Y)], grid=(N, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(N,)],
            output_dtypes=[mx.float32], backend="sim", checked=True)[0]
    np.testing.assert_array_equal(np.array(got), np.where(np.arange(N) % 3 == 0, X, Y) * 2)


# ----------------------------------------------------------------------------- the registry's collectives

def test_every_simd_and_quad_builtin_is_a_collective():
    for b in registry.all():
        if b.kind == "simd":
            assert b.collective in ("simdgroup", "quadgroup"), b.name
            assert scope_of(ir.Call(b.name, [], None)) == b.collective
        elif b.group in ("Float math", "Integer", "Atomics"):
            assert b.collective is None, b.name
    assert registry.get("quad_broadcast").collective == "quadgroup"
    assert registry.get("simdgroup_multiply_accumulate").collective == "simdgroup"
    assert registry.get("atomic_thread_fence").collective is None     # a fence waits for nobody


def test_collectives_follow_device_function_calls_once():
    s = ir.Call("simd_sum", [], None)
    f = ir.Function("f", [], None, [ir.ExprStmt(s), ir.Barrier(scope="simdgroup")])
    call1, call2 = ir.FuncCall("f", [], None), ir.FuncCall("f", [], None)
    found = collectives([ir.ExprStmt(call1), ir.ExprStmt(call2)], {"f": f})
    assert [(n, scope, site) for n, scope, site in found] == [(s, "simdgroup", call1),
                                                              (f.body[1], "simdgroup", call1)]
    unknown = ir.FuncCall("g", [], None)
    assert collectives([ir.ExprStmt(unknown)], {}) == [(unknown, "threadgroup", unknown)]
