"""check.py: dtype-aware comparison, CheckResult, bad references."""
import numpy as np
import pytest

import metalbench as mb
from metalbench.check import BadReferenceError, ReferenceError_, check_kernel, compare
from metalbench.dsl import *  # noqa: F401,F403


@mb.kernel
def saxpy(a: float, x, y, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = a * x[i] + y[i]


@mb.kernel
def add_int(x, y, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = x[i] + y[i]


@mb.kernel
def ident2d(x, out: mb.Out):
    p = thread_position_in_grid
    if p.y < x.shape[0] and p.x < x.shape[1]:
        out[p.y, p.x] = x[p.y, p.x]


N = 64
X = np.arange(N, dtype=np.float32)
Y = np.ones(N, dtype=np.float32)


def test_compare_float32_tolerances_and_ulp():
    d = compare(np.float32([1, 2, 3]), np.array([1.0, 2.0 + 1e-6, 3.5]))
    assert d.mismatches == 1 and d.first_mismatches() == [((2,), 3.0, 3.5)]
    tiny = np.float32(1e-30)
    d = compare(np.array([tiny], np.float32), np.array([np.nextafter(tiny, np.float32(1))], np.float32))
    assert d.mismatches == 0 and d.max_ulp == 1


def test_compare_nan_inf_and_ints():
    d = compare(np.float32([np.nan, np.inf, 1.0, np.nan]), np.array([np.nan, np.inf, np.inf, 1.0]))
    assert d.mismatches == 2 and d.nan_inf_mismatches == 2
    d = compare(np.int32([1, 2, 3]), np.array([1, 2, 4]))
    assert d.mismatches == 1 and d.max_abs_err == 1
    assert compare(np.float16([1.0]), np.array([1.0005])).mismatches == 0
    assert compare(np.float16([1.0]), np.array([1.01])).mismatches == 1


def test_check_match_and_mismatch():
    r = saxpy.check(lambda a, x, y: a * x + y, 2.0, X, Y, grid=N, threadgroup=32, backend="sim")
    assert r.ok and r.mismatches == 0 and r.max_abs_err == 0 and "match" in r._repr_html_()
    r = check_kernel(saxpy, lambda a, x, y: a * x + 2 * y, 2.0, X, Y, grid=N, backend="sim")
    assert not r.ok and r.mismatches == N and r.mismatch_fraction == 1.0
    assert r.first_mismatches[0] == ("out", (0,), 1.0, 2.0)
    assert "MISMATCH" in repr(r)


def test_integer_outputs_are_exact():
    a = np.arange(N, dtype=np.int32)
    r = add_int.check(lambda x, y: x + y + (x == 5), a, a, grid=N, backend="sim")
    assert r.mismatches == 1 and r.first_mismatches[0][1] == (5,)


def test_2d_heatmap_in_html():
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    r = ident2d.check(lambda x: x.T, x, grid=(8, 8), threadgroup=(4, 4), backend="sim")
    assert not r.ok
    assert (3, 1) in [ix for _, ix, _, _ in r.first_mismatches] or r.first_mismatches[0][1] == (0, 1)
    assert "data:image/png;base64" in r._repr_html_()


@pytest.mark.parametrize("ref, words", [
    (3, "callable"),
    (lambda a, x: a * x, "raised TypeError"),
    (lambda a, x, y: x[:3], "shape (3,)"),
    (lambda a, x, y: None, "None"),
])
def test_bad_reference_messages(ref, words):
    with pytest.raises(BadReferenceError) as e:
        saxpy.check(ref, 2.0, X, Y, grid=N, backend="sim")
    assert words in str(e.value) and "\n" in str(e.value)    # message + hint, no traceback


def test_float_reference_for_int_output_is_an_error():
    a = np.arange(N, dtype=np.int32)
    with pytest.raises(ReferenceError_, match="integer output"):
        add_int.check(lambda x, y: (x + y) / 2, a, a, grid=N, backend="sim")


def test_metal_kernel_adapter():
    k = mb.metal_kernel(name="twice", input_names=["inp"], output_names=["out"],
                        source="uint i = thread_position_in_grid.x; out[i] = 2 * inp[i];")
    r = check_kernel(k, lambda inp: 2 * inp, inputs=[X], grid=(N, 1, 1), threadgroup=(32, 1, 1),
                     output_shapes=[X.shape], output_dtypes=[X.dtype], backend="sim")
    assert r.ok
    r = check_kernel(k, lambda inp: 3 * inp, X, grid=(N, 1, 1), output_shapes=[X.shape],
                     output_dtypes=[X.dtype], backend="sim")
    assert not r.ok
