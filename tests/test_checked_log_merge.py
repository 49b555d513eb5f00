"""The checked simulator's log of a long barrier interval (a loop reading threadgroup memory
without barriers): when the distinct (element, thread) pairs alone exceed its merge limit,
merging must not happen again at every read (that re-sorted the whole log each time:
quadratic, minutes for a 1024-thread attention tile reading 4096 elements); results and
race findings stay what they were."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.sim import checks

# every thread sums the whole threadgroup array, REPS times, in one barrier interval
SRC_SUM = """
    uint t = thread_position_in_threadgroup.x;
    threadgroup float buf[64];
    buf[t] = x[thread_position_in_grid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float acc = 0.0f;
    for (int r = 0; r < REPS; r++) {
        for (int j = 0; j < 64; j++) {
            acc += buf[j];
        }
    }
    out[thread_position_in_grid.x] = acc;
"""
# the same with thread 0 rewriting an element the others read in that interval: a race
SRC_RACE = SRC_SUM.replace("    float acc = 0.0f;", "    if (t == 0) buf[5] = 1.0f;\n    float acc = 0.0f;")


def _launch(src, x, reps):
    k = mb.metal_kernel(name="sum_all", input_names=["x"], output_names=["out"], source=src)
    return k(inputs=[mx.array(x)], template=[("REPS", reps)], grid=(x.size, 1, 1), threadgroup=(64, 1, 1),
             output_shapes=[x.shape], output_dtypes=[mx.float32], backend="sim", checked=True)[0]


@pytest.fixture
def merges(monkeypatch):
    """A small merge limit, and the number of merges the launch does."""
    monkeypatch.setattr(checks, "LOG_LIMIT", 512)
    count = [0]
    orig = checks.Checker._log

    def counting(self, st, entry):
        before = st.nlog + entry[0].size
        orig(self, st, entry)
        count[0] += st.nlog < before
    monkeypatch.setattr(checks.Checker, "_log", counting)
    return count


def test_long_interval_merges_a_few_times(merges):
    x = np.random.default_rng(0).standard_normal(128).astype(np.float32)
    out = np.array(_launch(SRC_SUM, x, 8))
    want = np.repeat([x[:64].sum(), x[64:].sum()], 64) * 8
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)
    # 2 x 8 x 64 reads of 128 threads into 8192 distinct pairs: merging at every read past the
    # limit was ~1000 merges; waiting for the log to double, a handful
    assert 0 < merges[0] < 40


def test_race_still_reported_after_merges(merges):
    x = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    with pytest.raises(mb.KernelCheckError, match=r"race"):
        _launch(SRC_RACE, x, 8)
    assert merges[0] > 0
