"""GPU tests: every zoo kernel on `cuda` equals the simulator (run on an NVIDIA machine
with MLX's CUDA build; skipped elsewhere)."""
import numpy as np
import pytest

from test_dsl_sim import assert_matches, run_case
from zoo import CASES


@pytest.mark.gpu
@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_zoo_cuda_matches_sim(c):
    _, sim = run_case(c, "sim", seed=3)
    args, gpu = run_case(c, "cuda", seed=3)
    assert_matches(gpu, sim, c)
    assert_matches(gpu, c.ref(*args), c)
