"""A parenthesised value before a binary ``+ - * &``: tree-sitter sometimes reads
``s * (N) + i % 4`` as ``s * ((N)(+i)) % 4`` -- a C cast of ``+i`` to a type ``N`` -- when
``N`` is a template value or a variable. The MSL front end parses such a statement again
with those parentheses blanked, so the operators bind as C binds them (an EXL3 GEMV
indexed ``y[(size_t)slot * (size_t)(ODIM) + ot * TILE + lid]``); real casts stay casts."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb

N = 8


def _run(src, template=(), header="", dtype=mx.int32, x=None):
    x = np.arange(N, dtype=np.int32) if x is None else x
    k = mb.metal_kernel(name="vp", input_names=["x"], output_names=["out"], source=src, header=header)
    return np.array(k(inputs=[mx.array(x)], template=list(template), grid=(N, 1, 1), threadgroup=(N, 1, 1),
                      output_shapes=[(N,)], output_dtypes=[dtype], backend="sim")[0])


# each expression is C and Python alike on non-negative ints (i, K >= 0)
EXPRS = ["i * (K) + i % 4", "(i) * (K) + i % 4", "i * (K) - i % 3 + (K) * 2", "i * (K) & i % 4",
         "i + (K) * i % 5", "(K) + i % 3 * (K)"]


@pytest.mark.parametrize("expr", EXPRS)
def test_local_variable_in_parentheses(expr):
    src = f"int i = int(thread_position_in_grid.x);\nint K = 3;\nint r = {expr};\nout[i] = r;\n"
    i, K = np.arange(N), 3
    np.testing.assert_array_equal(_run(src), eval(expr))


@pytest.mark.parametrize("expr", EXPRS)
def test_template_value_in_parentheses_as_an_index(expr):
    # the value is used as an output index: a wrong binding would write other elements
    src = f"int i = int(thread_position_in_grid.x);\nout[({expr}) % {N}] = x[i];\n"
    i, K = np.arange(N), 5
    want = np.full(N, -1)
    want[eval(expr) % N] = np.arange(N)
    k = mb.metal_kernel(name="vp", input_names=["x"], output_names=["out"], source=src)
    got = np.array(k(inputs=[mx.arange(N, dtype=mx.int32)], template=[("K", 5)], grid=(N, 1, 1),
                     threadgroup=(N, 1, 1), output_shapes=[(N,)], output_dtypes=[mx.int32], init_value=-1,
                     backend="sim")[0])
    np.testing.assert_array_equal(got, want)


def test_size_t_casts_around_a_template_value():
    src = ("uint t = thread_position_in_grid.x;\nuint slot = t / 4;\n"
           "out[(size_t)slot * (size_t)(ODIM) + t % 4] = x[t] * 10;\n")
    np.testing.assert_array_equal(_run(src, [("ODIM", 4)]), np.arange(N) * 10)


def test_in_a_header_function_with_a_template_value():
    header = ("template <int K>\nint f(int i) {\n  int r = i * (K) + i % 4;\n  return r;\n}\n")
    src = "int i = int(thread_position_in_grid.x);\nout[i] = f<3>(i);\n"
    i = np.arange(N)
    np.testing.assert_array_equal(_run(src, header=header), i * 3 + i % 4)


def test_real_casts_stay_casts():
    # (T) -x with T a template type, (half) -x, (uint) +x: casts, not subtractions
    src = ("uint i = thread_position_in_grid.x;\nfloat v = float(x[i]);\n"
           "out[i] = float((T) -v) + float((half) -v) + float((uint) +x[i]);\n")
    x = np.arange(N, dtype=np.int32)
    got = _run(src, [("T", mx.float32)], dtype=mx.float32, x=x)
    np.testing.assert_array_equal(got, -x - x + x)
