"""Names a Numba kernel resolves at its first launch, not at decoration (a closure
variable or global bound after ``@cuda.jit`` ran, as numba-cuda's Monte Carlo example
does), and ``numba.jit`` read as ``cuda.jit`` by ported code (a function that returns a
value, called on the host, runs as Python, as Numba's CPU jit would)."""
import numpy as np
import pytest

from metalbench import cuda
from metalbench.errors import MetalbenchError


def test_closure_name_bound_after_the_decorator():
    @cuda.jit
    def k(out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = late(i + 1.0)

    @cuda.jit
    def late(x):
        return 1.0 / x

    out = np.zeros(5)
    k.configure(backend="sim")[1, 8](out)
    np.testing.assert_array_equal(out, 1.0 / np.arange(1.0, 6.0))


def test_unbound_name_is_still_an_error_at_its_line():
    @cuda.jit
    def k(out):
        out[0] = never_bound_anywhere_xyz(1.0)

    with pytest.raises(MetalbenchError, match="never_bound_anywhere_xyz.*not defined") as e:
        k.configure(backend="sim")[1, 1](np.zeros(1))
    assert "out[0] = never_bound_anywhere_xyz(1.0)" in str(e.value)


def test_jit_function_returning_a_value_runs_on_the_host():
    import metalbench.cuda as numba

    @numba.jit
    def logic(x, y):
        return 4 * y * (2 * x - y / 2 * np.pi)

    assert logic(1, 2) == 4 * 2 * (2 * 1 - 2 / 2 * np.pi)

    @cuda.jit
    def k(res, x, y):
        i = cuda.grid(1)
        if i < res.size:
            res[i] = logic(x[i], y[i])

    x, y = np.array([1, 10, 234]), np.array([2, 2, 4014])
    res = np.zeros(3)
    k.configure(backend="sim")[1, 4](res, x, y)
    np.testing.assert_array_equal(res, [logic(a, b) for a, b in zip(x, y)])


def test_a_kernel_without_a_launch_configuration_is_still_an_error():
    @cuda.jit
    def k(out):
        out[0] = 1

    with pytest.raises(MetalbenchError, match="launch configuration was not specified"):
        k(np.zeros(1))
