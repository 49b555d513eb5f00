"""Structs, classes, enums and typedefs defined inside a kernel body or a header function's
body (C++ local classes), as top-k and online-softmax kernels write their small records:
declared as the header's are, visible from their definition on. Our own kernels against
NumPy, sim plain and checked."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb


def _run(src, x, hdr="", n=32, checked=False):
    k = mb.metal_kernel(name="local", input_names=["x"], output_names=["out"], source=src, header=hdr)
    return np.array(k(inputs=[mx.array(x)], grid=(n, 1, 1), threadgroup=(n, 1, 1), output_shapes=[(n,)],
                      output_dtypes=[mx.float32], backend="sim", checked=checked)[0])


X = np.random.default_rng(1).standard_normal(32).astype(np.float32)


@pytest.mark.parametrize("checked", [False, True])
def test_local_struct_with_a_method_and_a_threadgroup_array_of_it(checked):
    src = """uint i = thread_position_in_grid.x;
    struct Best {
        float v; int at;
        void take(float w, int j) { if (w > v) { v = w; at = j; } }
    };
    threadgroup Best tg[32];
    Best b = {-INFINITY, -1};
    for (int j = 0; j < 4; j++) b.take(x[(i + j) % 32], int((i + j) % 32));
    tg[i] = b;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = tg[31 - i].v + 100.0f * float(tg[31 - i].at);"""
    out = _run(src, X, checked=checked)
    win = np.stack([np.roll(X, -j) for j in range(4)])          # win[j, i] = x[(i + j) % 32]
    at = (np.arange(32) + np.argmax(win, axis=0)) % 32
    want = (X[at] + 100 * at)[::-1]
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_struct_with_a_variable_enum_and_typedef_in_a_body():
    src = """uint i = thread_position_in_grid.x;
    enum Mode { ADD = 2, MUL = 3 };
    typedef struct { float lo; float hi; } Range;
    struct Pair { float a; float b; } p = {x[i], 2.0f};
    Range r = {-1.0f, 1.0f};
    out[i] = clamp(p.a * p.b, r.lo, r.hi) + float(MUL) * (i % 2 ? 1.0f : 0.0f);"""
    out = _run(src, X)
    np.testing.assert_allclose(out, np.clip(2 * X, -1, 1) + 3 * (np.arange(32) % 2), rtol=1e-6)


def test_local_struct_in_a_header_function():
    hdr = """
    inline float softmax_sum(const device float* x, uint n) {
        struct State { float m; float s; };
        State st = {-INFINITY, 0.0f};
        for (uint j = 0; j < n; j++) {
            float m = max(st.m, x[j]);
            st.s = st.s * exp(st.m - m) + exp(x[j] - m);
            st.m = m;
        }
        return st.m + log(st.s);
    }"""
    out = _run("uint i = thread_position_in_grid.x; out[i] = softmax_sum(x, i + 1);", X, hdr=hdr)
    want = np.array([np.log(np.exp(X[:i + 1].astype(np.float64)).sum()) for i in range(32)])
    np.testing.assert_allclose(out, want, rtol=1e-5)
