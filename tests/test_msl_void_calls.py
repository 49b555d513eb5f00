"""Errors that were internal errors, found by mutating real kernels (a ``;`` turned into
``>``, ``struct`` into ``uint``, a template parameter's name dropped): a void call where a
value is needed (``f(r) + 1.0f``, ``x = f(r)``, ``f(r) > y``) is an error naming the function
and its line, and ``c ? f(a) : g(b);`` as a statement runs the side ``c`` picks, as an ``if``;
a header's ``uint win { ... };``, a function without a return type, ``v[]``, GNU's ``c ?: b`` and
an unnamed template parameter are named. Our own kernels
vs NumPy."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import KernelNameError, KernelSyntaxError, KernelTypeError
from msl_cases import MSLCase, three_ways

HEADER = """
void set_one(thread float& a) { a = 1.0f; }
void set_two(thread float& a) { a = 2.0f; }
"""

TERNARY_STATEMENT = MSLCase(
    "ternary_statement",
    """
    uint i = thread_position_in_grid.x;
    float r = 0.0f;
    (i % 2) ? set_one(r) : set_two(r);
    int k = 0;
    i > 4 ? k++ : k--;
    out[i] = r + 10.0f * float(k) + x[i];
    """,
    {"x": np.arange(32, dtype=np.float32)},
    [("out", (32,), np.float32)],
    lambda x: [np.where(np.arange(32) % 2 == 1, 1.0, 2.0) + 10.0 * np.where(np.arange(32) > 4, 1.0, -1.0) + x],
    header=HEADER)

CASES = [TERNARY_STATEMENT]
test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)


@pytest.mark.parametrize("use, line", [("float q = set_one(r) + 1.0f;\nout[0] = q;", 2),
                                       ("float q = 0;\nout[0] = set_one(r);", 3),
                                       ("float q = 0;\nset_one(r) > out[0];", 3)])
def test_a_void_call_used_as_a_value_is_named(use, line):
    k = mb.metal_kernel(name="void_value", input_names=["x"], output_names=["out"], source="float r;\n" + use,
                        header=HEADER)
    with pytest.raises(KernelTypeError) as e:
        k(inputs=[mx.zeros(4)], output_shapes=[(1,)], output_dtypes=[mx.float32], grid=(1, 1, 1),
          threadgroup=(1, 1, 1), backend="sim")
    msg = str(e.value)
    assert "'set_one' returns nothing (void)" in msg.splitlines()[0] and "internal" not in msg
    assert f"line {line}:" in msg


@pytest.mark.parametrize("header, source, err, what", [
    # found by mutating real kernels: each was an internal error
    ("template <typename>\ninline T g(T x) { return x; }", "out[0] = g(x[0]);", KernelNameError,
     "unknown type 'T'"),
    ("uint win { uint i0; uint i1; };", "out[0] = 1.0f;", KernelSyntaxError,
     "'uint win { uint i0; uint i1; }' is neither a function definition nor a struct"),
    ("inline dec(uchar raw) { return exp2(float(int(raw) - 127)); }", "out[0] = dec(3);", KernelSyntaxError,
     "'dec(uchar raw)' has no return type"),
    ("", "int q = x_shape[];\nout[0] = q;", KernelSyntaxError, "an index is missing between [ and ]"),
    ("", "float v[2] = {x[0], 1.0f};\nout[0] = v[];", KernelSyntaxError, "an index is missing between [ and ]"),
    ("", "float a = x[0];\nout[0] = (a > 0) ?: a * 2;", KernelSyntaxError, "GNU's 'c ?: b' (no middle operand"),
])
def test_malformed_code_is_named_at_its_line(header, source, err, what):
    k = mb.metal_kernel(name="bad_header", input_names=["x"], output_names=["out"], source=source, header=header)
    with pytest.raises(err) as e:
        k(inputs=[mx.zeros(4)], output_shapes=[(1,)], output_dtypes=[mx.float32], grid=(1, 1, 1),
          threadgroup=(1, 1, 1), backend="sim")
    assert what in str(e.value).splitlines()[0] and ("header, line" if header else "source, line") in str(e.value)


def test_an_unnamed_template_parameter_is_a_parameter():
    hdr = "template <typename, int N = 2>\ninline float twice(float v) { return v * N; }"
    k = mb.metal_kernel(name="unnamed_tparam", input_names=["x"], output_names=["out"],
                        source="out[0] = twice<int>(x[0]);", header=hdr)
    out = k(inputs=[mx.array([1.5])], output_shapes=[(1,)], output_dtypes=[mx.float32], grid=(1, 1, 1),
            threadgroup=(1, 1, 1), backend="sim")[0]
    assert float(out[0]) == 3.0
