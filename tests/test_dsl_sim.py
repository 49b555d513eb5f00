"""Every zoo kernel on the simulator against its NumPy reference, on random data."""
import os

import numpy as np
import pytest

from metalbench.runtime import to_numpy
from zoo import CASES


def run_case(c, backend, seed=1, **extra):
    rng = np.random.default_rng(seed)
    args = c.make_args(rng)
    out = c.kernel(*args, backend=backend, **c.launch, **extra)
    outs = out if isinstance(out, tuple) else (out,)
    return args, [to_numpy(o) for o in outs]


def assert_matches(got, want, c):
    want = want if isinstance(want, (list, tuple)) else [want]
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        if np.issubdtype(w.dtype, np.integer) or w.dtype == np.bool_:
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=c.rtol, atol=c.atol)


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
@pytest.mark.parametrize("seed", [1, 2])
def test_zoo_on_sim(c, seed):
    rng = np.random.default_rng(seed)
    args = c.make_args(rng)
    _, got = run_case(c, os.environ.get("METALBENCH_TEST_BACKEND", "sim"), seed)
    assert_matches(got, c.ref(*args), c)


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_zoo_generates_msl(c):
    args = c.make_args(np.random.default_rng(0))
    extra = {k: v for k, v in c.launch.items() if k not in ("grid", "threadgroup", "init_value")}
    src = c.kernel.source(*args, backend="metal", **extra)
    assert "thread_position_in_grid" in src or "threadgroup_position_in_grid" in src
