"""Small usability defects (issue 15, item 8): names and messages that say what to do."""
import numpy as np
import pytest

import metalbench as mb
from metalbench.dsl import *  # noqa: F401,F403


@mb.kernel
def saxpy(a: float, x, y, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = a * x[i] + y[i]


def test_bad_reference_error_name_and_alias():
    from metalbench.check import ReferenceError_
    assert mb.BadReferenceError is ReferenceError_ and issubclass(mb.BadReferenceError, mb.MetalbenchError)
    x = np.ones(8, np.float32)
    with pytest.raises(mb.BadReferenceError, match="returned None"):
        saxpy.check(lambda a, x, y: None, 2.0, x, x, grid=8, backend="sim")


def test_bogus_backend_variable_is_named(monkeypatch):
    monkeypatch.setenv("METALBENCH_BACKEND", "bogus")
    with pytest.raises(mb.KernelLaunchError) as e:
        mb.resolve_backend()
    assert "METALBENCH_BACKEND='bogus'" in str(e.value) and "sim" in e.value.hint
    x = np.ones(8, np.float32)
    with pytest.raises(mb.KernelLaunchError, match="METALBENCH_BACKEND"):
        saxpy(2.0, x, x, grid=8)
    assert mb.resolve_backend("sim") == "sim"           # an explicit backend does not read it


@pytest.mark.parametrize("value", [np.ones(8, np.float32), np.ones((2, 3), np.float32)])
def test_array_for_a_scalar_parameter_blames_the_call(value):
    x = np.ones(8, np.float32)
    with pytest.raises(mb.KernelLaunchError) as e:
        saxpy(value, x, x, grid=8, backend="sim")
    msg = str(e.value)
    assert "argument 'a' is declared as a scalar (a: float)" in msg and str(value.shape) in msg
    assert "line" not in msg                            # not an error in the kernel body
    assert np.allclose(np.asarray(saxpy(np.float32(2.0), x, x, grid=8, backend="sim")), 3.0)
