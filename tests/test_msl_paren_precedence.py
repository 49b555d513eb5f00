"""A parenthesised variable before + - * &: tree-sitter reads `(a) + b` as a cast of `+b` to a
type `a`, which binds tighter than every binary operator, so `(a) + b * c` came out as
`((a) + b) * c`. The MSL front end parses such a chain again with C++'s precedence. Found in
natten-mlx's window macros: `int _end = (START) + (K) * (DIL);` with START a variable."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb

CHAINS = ["(A) + A * 3", "(A) - A * A + 1", "(A) & A + 1", "(A) - 2 << 1", "(A) + (B) * (A)",
          "(A) * B + A", "(A) - B * 2 - A % 5", "((A & (A * A)) - A * 2)", "(int(A) & A) + A * 2",
          "(A) + B * 2 > A ? 1 : 0", "(B) - A * B * 2"]


@pytest.mark.parametrize("expr", CHAINS)
def test_chain_after_parenthesised_variable_keeps_cpp_precedence(expr):
    a = np.array([3, -5, 7, 1000, -77, 12], np.int32)
    src = f"uint i = thread_position_in_grid.x;\nint A = a[i];\nint B = A / 2 + 1;\nauto r = {expr};\nout[i] = r;\n"
    k = mb.metal_kernel("chain", ["a"], ["out"], src)
    out = k(inputs=[mx.array(a)], grid=(a.size, 1, 1), threadgroup=(a.size, 1, 1), output_shapes=[a.shape],
            output_dtypes=[mx.int32], backend="sim")[0]
    A = a.astype(np.int64)
    B = np.trunc(A / 2).astype(np.int64) + 1            # C++ division truncates
    py = expr.replace("int(A)", "A")
    if "?" in py:                                       # c ? x : y
        cond, rest = py.split("?")
        py = f"np.where({cond}, {rest.split(':')[0]}, {rest.split(':')[1]})"
    want = eval(py.replace("A % 5", "np.fmod(A, 5)"), {"A": A, "B": B, "np": np})
    np.testing.assert_array_equal(np.array(out), np.asarray(want, np.int64).astype(np.int32))


def test_window_macro_with_parenthesised_parameters():
    """A do/while(0) macro writing `(OUT) = ...` and reading `(START) + (K) * (DIL)`, its
    arguments variables: the shape of neighbourhood-attention window helpers."""
    src = r"""
#define WIN_END(OUT, START, LEN, K, DIL) do { \
    int _end = (START) + (K) * (DIL);         \
    if (_end > (LEN)) _end = (LEN);           \
    (OUT) = _end;                             \
} while(0)
uint i = thread_position_in_grid.x;
int start = int(i) - 1;
int len = 40;
int k = 5;
int dil = int(d[i]);
int e = 0;
WIN_END(e, start, len, k, dil);
out[i] = e;
"""
    d = np.array([1, 2, 3, 4, 1, 7, 2, 9], np.int32)
    kern = mb.metal_kernel("win", ["d"], ["out"], src)
    out = kern(inputs=[mx.array(d)], grid=(d.size, 1, 1), threadgroup=(d.size, 1, 1),
               output_shapes=[d.shape], output_dtypes=[mx.int32], backend="sim")[0]
    i = np.arange(d.size)
    np.testing.assert_array_equal(np.array(out), np.minimum(i - 1 + 5 * d, 40))


def test_float_chain_after_parenthesised_variable():
    x = np.linspace(-2, 3, 7).astype(np.float32)
    src = "uint i = thread_position_in_grid.x;\nfloat v = x[i];\nfloat w = 0.5f;\nout[i] = (v) - w * v * 2.0f;\n"
    k = mb.metal_kernel("fchain", ["x"], ["out"], src)
    out = k(inputs=[mx.array(x)], grid=(x.size, 1, 1), threadgroup=(x.size, 1, 1), output_shapes=[x.shape],
            output_dtypes=[mx.float32], backend="sim")[0]
    np.testing.assert_allclose(np.array(out), x - 0.5 * x * 2.0, rtol=1e-6)


# the misread group in the middle of a chain (after `k *`, `k -`), compound groups, several
# in one chain, one inside another's parentheses; `%` only where both sides are >= 0
MIDDLE = ["k * (A & (A * A)) + A * 2", "k - (A & (A * A)) - A * 2", "k * (int(A) & A) + A * 2",
          "k * ((A) - (B) * 2) + (A) * 3", "(A & (A * A)) - (B) * 2 + (A) * 5", "k * (A & (A * A)) * (B) + A",
          "k * (A & (k * k)) + (k) - 2 * (A) + k % 2"]


@pytest.mark.parametrize("expr", MIDDLE)
def test_parenthesised_group_in_the_middle_of_a_chain(expr):
    a = np.array([3, -5, 7, 1000, -77, 12], np.int32)
    src = (f"uint i = thread_position_in_grid.x;\nint A = a[i];\nint B = A / 2 + 1;\nint k = 3;\n"
           f"int r = {expr};\nout[i] = r;\n")
    k = mb.metal_kernel("mid", ["a"], ["out"], src)
    out = k(inputs=[mx.array(a)], grid=(a.size, 1, 1), threadgroup=(a.size, 1, 1), output_shapes=[a.shape],
            output_dtypes=[mx.int32], backend="sim")[0]
    A = a.astype(np.int64)
    want = eval(expr.replace("int(A)", "A"), {"A": A, "B": np.trunc(A / 2).astype(np.int64) + 1, "k": 3})
    np.testing.assert_array_equal(np.array(out), np.asarray(want).astype(np.int32))


def test_misread_groups_in_every_context():
    """for / while / do-while conditions, ?:, switch, a header function's return and a
    #define macro: each reads a parenthesised value before + - * that C++ also reads as a cast."""
    header = "int mid(int s, int g) { return s * (g & (g * g)) + g * 2; }\n"
    src = r"""
#define MID(S, G, X) ((S) * (G & (G * G)) + (X) * 2)
uint i = thread_position_in_grid.x;
int A = a[i];
int k = 3;
int n_for = 0;
for (int j = (A & 1) - 1; j < k * (A & (k * k)) + (k) - 2; ++j) n_for += 1;
int w = 0;
while (w * (A & (k * k)) + w * 2 < 20 && w < 50) ++w;
int d = 0;
do { ++d; } while ((d) - k * 2 < 0);
int t = A > 0 ? k * (A & (k * k)) + A * 2 : (A) - k * 2;
int sw = 0;
switch ((k) - A * 0 + 1) { case 4: sw = 1; break; default: sw = 2; }
out[i * 7 + 0] = n_for;
out[i * 7 + 1] = w;
out[i * 7 + 2] = d;
out[i * 7 + 3] = t;
out[i * 7 + 4] = sw;
out[i * 7 + 5] = mid(k, A);
out[i * 7 + 6] = MID(k, A, A);
"""
    a = np.array([3, -5, 7, 9, -77, 12, 0, 6], np.int32)
    kern = mb.metal_kernel("ctx", ["a"], ["out"], src, header=header)
    out = np.array(kern(inputs=[mx.array(a)], grid=(a.size, 1, 1), threadgroup=(a.size, 1, 1),
                        output_shapes=[(a.size * 7,)], output_dtypes=[mx.int32], backend="sim")[0]).reshape(-1, 7)
    A, k = a.astype(np.int64), 3
    want = np.zeros((a.size, 7), np.int64)
    want[:, 0] = np.maximum(k * (A & (k * k)) + k - 2 - ((A & 1) - 1), 0)
    want[:, 1] = [next(w for w in range(51) if not (w * (x & 9) + w * 2 < 20 and w < 50)) for x in A]
    want[:, 2] = 2 * k
    want[:, 3] = np.where(A > 0, k * (A & (k * k)) + A * 2, A - k * 2)
    want[:, 4] = 1
    want[:, 5] = want[:, 6] = k * (A & (A * A)) + A * 2
    np.testing.assert_array_equal(out, want)


def test_real_casts_before_parentheses_stay_casts():
    # (float)(i) + 1 is float(i) + 1 and (uint)(n * m) casts the product: the type is a type
    src = ("uint i = thread_position_in_grid.x;\nint n = a[i];\nint m = -3;\n"
           "out[i] = (float)(n) / 2 + 1 + float((uint)(n * m) % 7u) + (float)(-n) * (float)(m);\n")
    a = np.array([3, -5, 7, 1000, -77, 12], np.int32)
    k = mb.metal_kernel("casts", ["a"], ["out"], src)
    out = k(inputs=[mx.array(a)], grid=(a.size, 1, 1), threadgroup=(a.size, 1, 1), output_shapes=[a.shape],
            output_dtypes=[mx.float32], backend="sim")[0]
    n = a.astype(np.int64)
    want = n / 2 + 1 + ((n * -3) % 2**32 % 7) + (-n) * -3.0
    np.testing.assert_allclose(np.array(out), want.astype(np.float32), rtol=1e-6)


def test_group_over_several_lines():
    # the hole standing for the group is an identifier on its first line, then blanks
    src = ("uint i = thread_position_in_grid.x;\nint A = a[i];\nint k = 3;\n"
           "int r = k * (A &\n   (A * A)) + A * 2;\nout[i] = r;\n")
    a = np.array([3, -5, 7, 1000, -77, 12], np.int32)
    k = mb.metal_kernel("lines", ["a"], ["out"], src)
    out = k(inputs=[mx.array(a)], grid=(a.size, 1, 1), threadgroup=(a.size, 1, 1), output_shapes=[a.shape],
            output_dtypes=[mx.int32], backend="sim")[0]
    A = a.astype(np.int64)
    np.testing.assert_array_equal(np.array(out), (3 * (A & (A * A)) + A * 2).astype(np.int32))
