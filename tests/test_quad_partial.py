"""Quad-group functions on partial quads, against a NumPy model.

A quad is 4 consecutive lanes of a SIMD-group (``thread_index_in_threadgroup // 4``
within a threadgroup). When only part of a quad is active -- a divergent branch, or
the end of a partial threadgroup -- the reductions and scans combine the *active*
lanes (as the ``simd_*`` ones do over a partial SIMD-group, and as Metal specifies),
on the simulator unchecked and checked alike; shuffles read the source lane's value
(0 past the threads of the threadgroup), and reading an inactive lane is a finding in
checked mode. Random data, random active masks, random grid and threadgroup sizes.
"""
import warnings

import mlx.core as mx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import metalbench as mb

from findings import findings as checked_findings

REDUCTIONS = ["quad_sum", "quad_product", "quad_max", "quad_min", "quad_prefix_inclusive_sum",
              "quad_prefix_exclusive_sum", "quad_prefix_inclusive_product", "quad_prefix_exclusive_product"]
BITWISE = ["quad_and", "quad_or", "quad_xor"]
K = len(REDUCTIONS) + len(BITWISE)

REDUCE_SRC = "uint i = thread_position_in_grid.x;\nif (act[i] != 0) {\n    float v = x[i];\n    int w = xi[i];\n" + \
    "".join(f"    out[i * {K} + {k}] = {f}(v);\n" for k, f in enumerate(REDUCTIONS)) + \
    "".join(f"    out[i * {K} + {len(REDUCTIONS) + k}] = float({f}(w));\n" for k, f in enumerate(BITWISE)) + "}\n"

SHUFFLES = ["quad_shuffle", "quad_broadcast", "quad_shuffle_xor", "quad_shuffle_up", "quad_shuffle_down",
            "quad_shuffle_rotate_up", "quad_shuffle_rotate_down"]
SHUFFLE_SRC = "uint i = thread_position_in_grid.x;\nfloat v = x[i];\nif (act[i] != 0) {\n" + \
    "".join(f"    out[i * {len(SHUFFLES)} + {k}] = {f}(v, d);\n" for k, f in enumerate(SHUFFLES)) + "}\n"


def quads(n, tg):
    """Each thread's quad: the thread indices of its quad's 4 lanes (-1: no such thread)."""
    i = np.arange(n)
    first = (i // tg) * tg + ((i % tg) // 4) * 4
    lanes = first[:, None] + np.arange(4)[None, :]
    end = np.minimum((i // tg + 1) * tg, n)
    return np.where(lanes < end[:, None], lanes, -1)


def reduce_model(x, xi, act, tg):
    """What every active lane should see, per REDUCTIONS + BITWISE (NaN: inactive lane)."""
    n = x.size
    q = quads(n, tg)
    out = np.full((n, K), np.nan)
    for i in np.flatnonzero(act):
        lanes = [j for j in q[i] if j >= 0 and act[j]]
        before, upto = [j for j in lanes if j < i], [j for j in lanes if j <= i]
        v, w = x[lanes].astype(np.float64), xi[lanes]
        out[i] = [v.sum(), v.prod(), v.max(), v.min(), x[upto].sum(), x[before].sum(), x[upto].prod(),
                  x[before].prod(), np.bitwise_and.reduce(w), np.bitwise_or.reduce(w), np.bitwise_xor.reduce(w)]
    return out


def shuffle_model(x, act, tg, d):
    """Each active lane's value of every SHUFFLES entry; sources are quad lanes."""
    n = x.size
    q = quads(n, tg)
    out = np.full((n, len(SHUFFLES)), np.nan)
    for i in np.flatnonzero(act):
        me = (i % tg) % 4

        def at(lane):
            j = q[i][lane]
            return x[j] if j >= 0 else 0.0
        up = at(me - d) if me >= d else x[i]
        down = at(me + d) if me + d < 4 else x[i]
        out[i] = [at(d % 4), at(d % 4), at(me ^ (d % 4)), up, down, at((me - d) % 4), at((me + d) % 4)]
    return out


def launch(name, src, inputs, n, tg, width, checked=False, backend="sim"):
    k = mb.metal_kernel(name, list(inputs), ["out"], src)
    kw = {"checked": checked} if backend == "sim" else {}
    return np.asarray(k(inputs=[mx.array(v) for v in inputs.values()], grid=(n, 1, 1), threadgroup=(tg, 1, 1),
                        output_shapes=[(n * width,)], output_dtypes=[mx.float32], init_value=0, backend=backend,
                        **kw)[0]).reshape(n, width)


def findings(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [f.kind for f in checked_findings(fn)]


# small integers as floats: sums and products of four are exact in float32
data = st.integers(1, 200).flatmap(lambda n: st.tuples(
    st.just(n), st.sampled_from([4, 6, 8, 13, 32, 40, 64]),
    st.lists(st.integers(-4, 4).filter(bool), min_size=n, max_size=n),
    st.lists(st.integers(0, 255), min_size=n, max_size=n),
    st.lists(st.booleans(), min_size=n, max_size=n)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data)
def test_quad_reductions_combine_the_active_lanes(case):
    n, tg, xs, ws, acts = case
    x = np.array(xs, np.float32)
    xi = np.array(ws, np.int32)
    act = np.array(acts, np.uint32)
    inputs = {"x": x, "xi": xi, "act": act}
    want = reduce_model(x, xi, act, tg)
    on = act != 0
    for checked in (False, True):
        got = launch("quad_reduce", REDUCE_SRC, inputs, n, tg, K, checked)
        np.testing.assert_array_equal(got[on], want[on].astype(np.float32))
    assert findings(lambda: launch("quad_reduce", REDUCE_SRC, inputs, n, tg, K, True)) == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data, st.integers(0, 5))
def test_quad_shuffles_read_lanes_of_the_quad(case, d):
    n, tg, xs, _, acts = case
    x = np.array(xs, np.float32)
    act = np.array(acts, np.uint32)
    inputs = {"x": x, "act": act, "d": np.array(d, np.uint32)}
    got = launch("quad_shuffles", SHUFFLE_SRC, inputs, n, tg, len(SHUFFLES))
    on = act != 0
    np.testing.assert_array_equal(got[on], shuffle_model(x, act, tg, d)[on].astype(np.float32))


@pytest.mark.parametrize("act, finding", [([1, 1, 0, 1], True), ([1, 0, 1, 0], False), ([1, 1, 1, 1], False)])
def test_a_quad_shuffle_reading_an_inactive_lane_is_a_finding(act, finding):
    """quad_shuffle_xor(v, 2) reads lane ^ 2: with lanes 0, 1, 3 active, lane 1 reads
    lane 3 (fine) and lane 0 reads lane 2 (inactive: undefined on the GPU)."""
    x = np.arange(1, 9, dtype=np.float32)
    inputs = {"x": x, "act": np.array(act * 2, np.uint32), "d": np.array(2, np.uint32)}
    kinds = findings(lambda: launch("quad_shuffles", SHUFFLE_SRC.replace("(v, d)", "(v, 2u)", 3)
                                    .replace("quad_shuffle(", "quad_shuffle_xor(").replace("quad_broadcast(",
                                                                                             "quad_shuffle_xor("),
                                    inputs, 8, 8, len(SHUFFLES), True))
    assert ("inactive lane read" in kinds) == finding, kinds


def test_quad_functions_print_as_metal_names():
    """A printed kernel calls Metal's quad functions (no lowering to simd_shuffle_xor)."""
    from metalbench import types as T
    from metalbench.codegen import msl
    from metalbench.frontend.msl import translate_kernel
    kir = translate_kernel("quad_reduce", REDUCE_SRC, "", inputs=[("x", T.float32, 1), ("xi", T.int32, 1),
                                                                  ("act", T.uint32, 1)],
                           outputs=[("out", T.float32, 1)], scalars=[], template=[])
    body = msl.render(kir).body
    assert "quad_max(" in body and "quad_prefix_exclusive_product(" in body and "simd_shuffle" not in body


@pytest.mark.gpu
@pytest.mark.parametrize("n, tg", [(13, 6), (200, 64), (77, 40), (64, 32)])
def test_quad_functions_on_cuda_match_the_model(n, tg):
    """The printed CUDA (``mb_quad_reduce``/``mb_quad_scan``, shuffles within the quad)
    on the GPU, against the same models."""
    rng = np.random.default_rng(n * tg)
    x = (rng.integers(1, 5, n) * rng.choice([-1, 1], n)).astype(np.float32)
    xi = rng.integers(0, 256, n).astype(np.int32)
    act = (rng.random(n) < 0.6).astype(np.uint32)
    on = act != 0
    got = launch("quad_reduce", REDUCE_SRC, {"x": x, "xi": xi, "act": act}, n, tg, K, backend="cuda")
    np.testing.assert_array_equal(got[on], reduce_model(x, xi, act, tg)[on].astype(np.float32))
    for d in (0, 1, 3, 5):
        got = launch("quad_shuffles", SHUFFLE_SRC.replace("float v = x[i];\nif (act[i] != 0) {",
                                                          "float v = x[i];\nif (true) {"),
                     {"x": x, "act": act, "d": np.array(d, np.uint32)}, n, tg, len(SHUFFLES), backend="cuda")
        # every lane active, lanes of whole quads (reading a lane that is not there is undefined on the GPU)
        whole = (quads(n, tg) >= 0).all(axis=1)
        want = shuffle_model(x, np.ones(n, np.uint32), tg, d).astype(np.float32)
        np.testing.assert_array_equal(got[whole], want[whole])
