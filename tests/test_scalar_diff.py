"""Differential property test of scalar semantics (issue 12): random expression trees over
every scalar type, every MSL cast spelling, special floats and integer edge values, on
both front ends; constant folding vs the simulator (uniform scalars and lane vectors) vs
C compiled by gcc. See tests/scalar_diff.py for the machinery.

    METALBENCH_SCALAR_CAMPAIGN=500 .venv/bin/python -m pytest -q tests/test_scalar_diff.py

runs a big randomised campaign (500 batches of 40 expressions, each on both front ends
and four evaluation modes) instead of the quick derandomised check CI runs.
"""
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scalar_diff as SD

pytestmark = pytest.mark.skipif(not SD.HAVE_GCC, reason="needs gcc (the oracle)")
CAMPAIGN = os.environ.get("METALBENCH_SCALAR_CAMPAIGN")
SETTINGS = dict(max_examples=int(CAMPAIGN) if CAMPAIGN else 6, derandomize=not CAMPAIGN, deadline=None,
                suppress_health_check=list(HealthCheck), database=None)
N_EXPRS = 40 if CAMPAIGN else 12


def _fail(bad):
    assert not bad, f"{len(bad)} mismatches; first ones:\n" + "\n".join(bad[:6])


@settings(**SETTINGS)
@given(st.data())
def test_folding_simulator_and_gcc_agree(data):
    _fail(SD.batch(SD.HypothesisDraw(data), n_exprs=N_EXPRS, max_depth=4))


@settings(**SETTINGS)
@given(st.data())
def test_single_operations_agree(data):
    """One operator or cast per expression: every edge value meets every operation often."""
    _fail(SD.batch(SD.HypothesisDraw(data), n_exprs=N_EXPRS, max_depth=1))


@settings(**{**SETTINGS, "max_examples": int(CAMPAIGN) if CAMPAIGN else 4})
@given(st.data())
def test_with_double_folding_simulator_and_gcc_agree(data):
    """float64 among the types (the simulator's; Metal has none): C's double is the oracle."""
    _fail(SD.batch(SD.HypothesisDraw(data), n_exprs=N_EXPRS, max_depth=3, types=SD.TYPES64))


def test_the_oracle_catches_a_wrong_rule(monkeypatch):
    """The comparison can fail: a simulator whose float -> int cast wraps is caught."""
    import random

    import numpy as np

    from metalbench import scalar as S
    from metalbench import types as T
    real = S.caster.__wrapped__

    def wrapping(src, dst):
        if src.is_float and dst.is_int:
            return lambda v: np.asarray(np.nan_to_num(np.trunc(np.asarray(v, np.float64)), nan=0.0)
                                        ).astype(np.int64).astype(dst.np)[()]
        return real(src, dst)
    monkeypatch.setattr(S, "caster", wrapping)
    gen_draw = SD.RandomDraw(random.Random(3))
    bad = []
    for _ in range(4):
        bad += SD.batch(gen_draw, n_exprs=20, max_depth=1, fronts=("msl",),
                        types=[T.float32, T.uint8, T.int32, T.int8])
    assert bad


@pytest.mark.gpu
@settings(max_examples=int(CAMPAIGN) if CAMPAIGN else 8, derandomize=not CAMPAIGN, deadline=None,
          suppress_health_check=list(HealthCheck), database=None)
@given(st.data())
def test_printed_cuda_agrees_with_gcc(data):
    """The printed CUDA on the GPU (MLX's CUDA backend) gives gcc's values too. Float
    ``a*b`` is never the direct operand of ``+``/``-`` here: GPUs contract that to an FMA.
    Few batches of many expressions: every batch is an NVRTC compile per front end (the
    cost of a GPU run), while the expressions are what the comparison covers (8 x 150 =
    the 40 x 30 of before)."""
    _fail(SD.batch(SD.HypothesisDraw(data), n_exprs=150, max_depth=4, backend="cuda", gpu_safe=True))
