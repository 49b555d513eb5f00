"""Two things real kernels write that clang accepts: ``#ifdef A || B`` (extra tokens after the
macro name: clang warns and tests A alone) and a const reference bound to something that is
no variable or element -- a thread attribute's component (``const uint& n =
threads_per_threadgroup.y``) or a temporary (``const float& s = a * b``, kept alive as a copy).
A const reference to a component of a local vector may change with it: still refused, as is a
non-const reference to a thread attribute. Our own kernels vs NumPy."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import KernelSyntaxError


def _run(src, header="", x=None, tg=(4, 2, 1)):
    x = np.arange(8, dtype=np.float32) if x is None else x
    k = mb.metal_kernel("k", ["x"], ["out"], src, header=header)
    return k(inputs=[mx.array(x)], grid=(4, 2, 1), threadgroup=tg, output_shapes=[(8,)],
             output_dtypes=[mx.float32], backend="sim")[0]


@pytest.mark.parametrize("defined", [True, False])
def test_ifdef_extra_tokens_tests_the_first_name(defined):
    header = "#define FLAG 0\n" if defined else ""
    src = """uint i = thread_position_in_grid.y * 4 + thread_position_in_grid.x;
#ifdef FLAG || FLAG
out[i] = x[i] + 1.0f;
#else
out[i] = x[i] - 1.0f;
#endif // FLAG
#ifndef FLAG && OTHER
out[i] *= 2.0f;
#endif
"""
    x = np.arange(8, dtype=np.float32)
    want = x + 1 if defined else (x - 1) * 2
    np.testing.assert_array_equal(np.array(_run(src, header)), want)


def test_ifdef_without_a_name_still_refused():
    with pytest.raises(KernelSyntaxError, match="needs a macro name"):
        _run("#ifdef || A\nout[0] = 1.0f;\n#endif\n")


def test_const_reference_to_thread_attribute_component():
    src = """thread const uint& rows = threads_per_threadgroup.y;
const uint& lane = thread_position_in_threadgroup.x;
uint i = thread_position_in_grid.y * 4 + lane;
const float& twice = x[i] * 2.0f;      // a temporary: kept alive as a copy
out[i] = twice + float(rows * 10);
"""
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(np.array(_run(src, x=x)), x * 2 + 20)


def test_const_reference_through_checked():
    src = """const uint& w = threads_per_threadgroup.x;
uint i = thread_position_in_grid.y * w + thread_position_in_grid.x;
out[i] = x[i] + float(w);
"""
    k = mb.metal_kernel("k", ["x"], ["out"], src)
    x = np.arange(8, dtype=np.float32)
    out = k(inputs=[mx.array(x)], grid=(4, 2, 1), threadgroup=(4, 1, 1), output_shapes=[(8,)],
            output_dtypes=[mx.float32], backend="sim", checked=True)[0]
    np.testing.assert_array_equal(np.array(out), x + 4)


@pytest.mark.parametrize("src", [
    # a component of a local vector: the reference would follow later writes, a copy would not
    "float2 v = float2(1.0f, 2.0f);\nconst float& r = v.y;\nv.y = 5.0f;\nout[0] = r;\n",
    # a non-const reference to a thread attribute
    "uint& n = threads_per_threadgroup.y;\nout[0] = float(n);\n",
])
def test_references_that_would_need_aliasing_are_refused(src):
    with pytest.raises(KernelSyntaxError, match="reference to something"):
        _run(src)
