"""MLX ``complex64`` buffers in MSL bodies (``mb.metal_kernel``) on the simulator.

MLX declares a complex64 input ``const device complex64_t* x`` and an output
``device complex64_t* out``; ``complex64_t`` is the struct of MLX's
``mlx/backend/metal/kernels/complex.h``: members ``real``/``imag``, constructors from a
scalar, two floats and a float2, conversions to scalars (the real part) and float2,
``+ -`` with complex or scalar operands, ``*`` of two complex values, ``/`` with a
complex divisor (the textbook quotient), unary ``-``, ``==`` and a lexicographic order.
The kernels here are our own, each checked against NumPy on random data; what MLX's
struct lacks (``c * 2.0f``, ``!=``, ``*=``) is an error naming the construct.
"""
from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import KernelTypeError, MetalbenchError

RNG = np.random.default_rng(7)


def crand(*shape) -> np.ndarray:
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


def run(source, inputs, out_shapes, out_dtypes, names=None, header="", grid=None, tg=(32, 1, 1), outs=("out",),
        template=None, checked=True, init_value=None):
    names = names or [f"x{i}" for i in range(len(inputs))]
    k = mb.metal_kernel(name="cplx", input_names=list(names), output_names=list(outs), source=source, header=header)
    n = int(np.prod(out_shapes[0]))
    grid = grid or (n, 1, 1)
    kw = {"template": template} if template else {}
    res = k(inputs=[mx.array(a) if isinstance(a, np.ndarray) else a for a in inputs], grid=grid,
            threadgroup=tg, output_shapes=out_shapes, output_dtypes=out_dtypes, backend="sim",
            checked=checked, init_value=init_value, **kw)
    return [np.array(r) for r in res]


def close(got, want, rtol=2e-5, atol=2e-5):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# -- element-wise arithmetic --------------------------------------------------------------
def test_elementwise_multiply():
    a, b = crand(100), crand(100)
    (out,) = run("uint i = thread_position_in_grid.x;\nif (i < x0_shape[0]) out[i] = x0[i] * x1[i];",
                 [a, b], [(100,)], [mx.complex64], grid=(128, 1, 1))
    close(out, a * b)


def test_add_sub_negate_and_scalars():
    a, b = crand(64), crand(64)
    src = """
    uint i = thread_position_in_grid.x;
    complex64_t c = x0[i];
    complex64_t d = x1[i];
    out[i] = -(c + d) - (c - 2.0f) + (1.5f - d) + (c + 3);
    """
    (out,) = run(src, [a, b], [(64,)], [mx.complex64])
    close(out, -(a + b) - (a - 2) + (1.5 - b) + (a + 3))


def test_division_textbook_quotient():
    a, b = crand(64), crand(64)
    src = """
    uint i = thread_position_in_grid.x;
    out[i] = x0[i] / x1[i];
    out2[i] = 2.0f / x1[i];
    """
    out, out2 = run(src, [a, b], [(64,), (64,)], [mx.complex64, mx.complex64], outs=("out", "out2"))
    close(out, a / b, rtol=1e-4)
    close(out2, (2 / b).astype(np.complex64), rtol=1e-4)
    # MLX divides by |b|^2 with no scaling: 1e30 / (1e30 + 0i) overflows to 0 there
    big = np.full(64, 1e30, np.complex64)
    (out3,) = run("uint i = thread_position_in_grid.x; out[i] = x0[i] / x1[i];", [big, big], [(64,)],
                  [mx.complex64])
    assert np.all(np.isnan(out3.real)) or np.all(out3 == 0)


def test_conjugate_and_members():
    a = crand(50)
    src = """
    uint i = thread_position_in_grid.x;
    if (i >= x0_shape[0]) return;
    complex64_t z = x0[i];
    out[i] = complex64_t(z.real, -z.imag);
    """
    (out,) = run(src, [a], [(50,)], [mx.complex64], grid=(64, 1, 1))
    close(out, np.conj(a))


def test_magnitude_to_float_output():
    a = crand(70)
    src = """
    uint i = thread_position_in_grid.x;
    if (i < x0_shape[0]) {
        complex64_t z = x0[i];
        out[i] = metal::sqrt(z.real * z.real + z.imag * z.imag);
        re[i] = z;                 // complex.h's operator float(): the real part
    }
    """
    out, re = run(src, [a], [(70,), (70,)], [mx.float32, mx.float32], outs=("out", "re"), grid=(96, 1, 1))
    close(out, np.abs(a).astype(np.float32), rtol=1e-5)
    close(re, a.real)


def test_member_writes():
    a = RNG.standard_normal(40).astype(np.float32)
    b = RNG.standard_normal(40).astype(np.float32)
    src = """
    uint i = thread_position_in_grid.x;
    out[i].real = x0[i];
    out[i].imag = x1[i];
    out[i].imag += 1.0f;
    complex64_t c;
    c.real = x1[i];
    c.imag = x0[i];
    c.real *= 2.0f;
    out2[i] = c;
    """
    out, out2 = run(src, [a, b], [(40,), (40,)], [mx.complex64, mx.complex64], outs=("out", "out2"))
    close(out, (a + 1j * (b + 1)).astype(np.complex64))
    close(out2, (2 * b + 1j * a).astype(np.complex64))


def test_mixed_float_input_and_complex_output():
    z = crand(33)
    w = RNG.standard_normal(33).astype(np.float32)
    src = """
    uint i = thread_position_in_grid.x;
    if (i < z_shape[0]) {
        complex64_t s = complex64_t(w[i], 0.0f);
        out[i] = z[i] * s + w[i];
    }
    """
    (out,) = run(src, [z, w], [(33,)], [mx.complex64], names=["z", "w"], grid=(64, 1, 1))
    close(out, z * w + w)


def test_constructors_and_conversions():
    a = RNG.standard_normal(32).astype(np.float32)
    src = """
    uint i = thread_position_in_grid.x;
    complex64_t a = x0[i];            // from a float: imaginary part 0
    complex64_t b(1.0f, x0[i]);
    complex64_t c = {x0[i], 2.0f};
    complex64_t d{};
    complex64_t e = complex64_t(float2(3.0f, x0[i]));
    float2 v = b;
    complex64_t f = 2;
    out[i] = a + b + c + d + e + complex64_t(v.y, v.x) + f;
    """
    (out,) = run(src, [a], [(32,)], [mx.complex64])
    want = a + (1 + 1j * a) + (a + 2j) + (3 + 1j * a) + (a + 1j) + 2
    close(out, want.astype(np.complex64))


def test_compare_and_select():
    a = crand(64)
    b = a.copy()
    b[::3] = crand(len(b[::3]))
    src = """
    uint i = thread_position_in_grid.x;
    complex64_t x = x0[i], y = x1[i];
    eq[i] = x == y;
    lt[i] = x < y;
    ge[i] = x >= y;
    out[i] = x > y ? x : y;
    """
    eq, lt, ge, out = run(src, [a, b], [(64,)] * 4, [mx.bool_, mx.bool_, mx.bool_, mx.complex64],
                          outs=("eq", "lt", "ge", "out"))
    key = lambda z: (z.real, z.imag)  # noqa: E731
    assert eq.tolist() == (a == b).tolist()
    assert lt.tolist() == [key(p) < key(q) for p, q in zip(a, b)]
    assert ge.tolist() == [key(p) >= key(q) for p, q in zip(a, b)]
    close(out, np.where([key(p) > key(q) for p, q in zip(a, b)], a, b))


# -- reductions ---------------------------------------------------------------------------
def test_dft_row_per_thread():
    n = 16
    x = crand(8, n)
    src = """
    uint row = thread_position_in_grid.x;
    uint k = thread_position_in_grid.y;
    int N = x_shape[1];
    complex64_t acc = 0;
    for (int t = 0; t < N; t++) {
        float ang = -2.0f * M_PI_F * float(k * t) / float(N);
        acc += x[row * N + t] * complex64_t(metal::cos(ang), metal::sin(ang));
    }
    out[row * N + k] = acc;
    """
    (out,) = run(src, [x], [(8, n)], [mx.complex64], names=["x"], grid=(8, n, 1), tg=(8, 4, 1))
    close(out, np.fft.fft(x, axis=1).astype(np.complex64), rtol=1e-4, atol=1e-4)


def test_threadgroup_reduction():
    x = crand(256)
    src = """
    threadgroup complex64_t part[64];
    uint l = thread_position_in_threadgroup.x;
    part[l] = x[thread_position_in_grid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = 32; s > 0; s >>= 1) {
        if (l < s) part[l] = part[l] + part[l + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (l == 0) out[threadgroup_position_in_grid.x] = part[0];
    """
    (out,) = run(src, [x], [(4,)], [mx.complex64], names=["x"], grid=(256, 1, 1), tg=(64, 1, 1))
    close(out, x.reshape(4, 64).sum(1).astype(np.complex64), rtol=1e-4, atol=1e-4)


def test_thread_array_and_header_helpers():
    x = crand(32, 4)
    hdr = """
    inline complex64_t cmul(complex64_t a, complex64_t b) {
        return {a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real};
    }
    inline float norm2(complex64_t a) { return a.real * a.real + a.imag * a.imag; }
    """
    src = """
    uint i = thread_position_in_grid.x;
    complex64_t v[4];
    for (int j = 0; j < 4; j++) v[j] = x[i * 4 + j];
    complex64_t p = complex64_t(1.0f, 0.0f);
    float n = 0.0f;
    for (int j = 0; j < 4; j++) { p = cmul(p, v[j]); n += norm2(v[j]); }
    out[i] = p;
    nrm[i] = n;
    """
    out, nrm = run(src, [x], [(32,), (32,)], [mx.complex64, mx.float32], names=["x"], header=hdr,
                   outs=("out", "nrm"))
    close(out, np.prod(x, axis=1).astype(np.complex64), rtol=1e-4, atol=1e-4)
    close(nrm, (np.abs(x) ** 2).sum(1).astype(np.float32), rtol=1e-5)


def test_pointer_to_complex_rows_and_float_view():
    x = crand(6, 10)
    src = """
    uint r = thread_position_in_grid.x;
    const device complex64_t* row = x + r * x_shape[1];
    const device float* f = (const device float*)row;
    complex64_t s = 0;
    float im = 0.0f;
    for (int j = 0; j < x_shape[1]; j++) { s += row[j]; im += f[2 * j + 1]; }
    out[r] = s;
    imag_sum[r] = im;
    """
    out, ims = run(src, [x], [(6,), (6,)], [mx.complex64, mx.float32], names=["x"], grid=(6, 1, 1), tg=(6, 1, 1),
                   outs=("out", "imag_sum"))
    close(out, x.sum(1).astype(np.complex64), rtol=1e-5, atol=1e-5)
    close(ims, x.imag.sum(1).astype(np.float32), rtol=1e-5, atol=1e-5)


def test_template_complex_type():
    x = crand(16)
    src = "uint i = thread_position_in_grid.x; T v = x[i]; out[i] = v * v;"
    (out,) = run(src, [x], [(16,)], [mx.complex64], names=["x"], template=[("T", mx.complex64)])
    close(out, x * x)


def test_init_value_fills_real_part():
    x = crand(8)
    (out,) = run("uint i = thread_position_in_grid.x; if (i < 4) out[i] = x[i];", [x], [(8,)], [mx.complex64],
                 names=["x"], init_value=1.5, checked=False)
    close(out, np.concatenate([x[:4], np.full(4, 1.5, np.complex64)]))


# -- what MLX's complex64_t lacks ---------------------------------------------------------
@pytest.mark.parametrize("expr, what", [
    ("x[i] * 2.0f", "complex64_t * float"),
    ("x[i] / 2.0f", "complex64_t / float"),
    ("complex64_t(x[i] != x[i])", "complex64_t != complex64_t"),
    ("complex64_t(x[i] == 1.0f)", "complex64_t == float"),
    ("+x[i]", "+complex64_t"),
    ("complex64_t(metal::abs(x[i]))", "abs"),
])
def test_missing_operators_are_errors(expr, what):
    x = crand(4)
    with pytest.raises(MetalbenchError) as e:
        run(f"uint i = thread_position_in_grid.x;\nout[i] = {expr};", [x], [(4,)], [mx.complex64], names=["x"],
            tg=(4, 1, 1))
    assert what in str(e.value) and "line 2" in str(e.value) or what in str(e.value), str(e.value)


def test_missing_compound_assignment_is_an_error():
    x = crand(4)
    with pytest.raises(KernelTypeError, match=r"\*="):
        run("uint i = thread_position_in_grid.x;\ncomplex64_t c = x[i];\nc *= x[i];\nout[i] = c;", [x], [(4,)],
            [mx.complex64], names=["x"], tg=(4, 1, 1))


# -- the C++ around it: pointers, references, casts, tables, functions, lambdas ----------------
X16 = crand(16)
_FORMS = [
    ("out[i] = x[i].real + x[i].imag;", "", mx.float32, X16.real + X16.imag),
    ("const device float2* v = (const device float2*)x; float2 a = v[i]; out[i] = complex64_t(a.y, a.x);", "",
     mx.complex64, X16.imag + 1j * X16.real),
    ("float2 a = x[i]; out[i] = float2(a.y, a.x);", "", mx.complex64, X16.imag + 1j * X16.real),
    ("const device complex64_t* p = x + i; out[i] = complex64_t(p->imag, p->real);", "", mx.complex64,
     X16.imag + 1j * X16.real),
    ("device complex64_t& o = out[i]; o = x[i]; o.real += 1.0f; o += complex64_t(0, 1);", "", mx.complex64,
     X16 + 1 + 1j),
    ("out[i] = x[i] * W[i % 4];", "constant complex64_t W[4] = {{1, 0}, {0, -1}, {-1, 0}, {0, 1}};", mx.complex64,
     X16 * np.array([1, -1j, -1, 1j])[np.arange(16) % 4]),
    ("out[i] = sq(x[i]) + twice(x[i]);",
     "template <typename T> T sq(T a) { return a * a; }\n"
     "inline complex64_t twice(const thread complex64_t& a) { return a + a; }", mx.complex64, X16 * X16 + 2 * X16),
    ("complex64_t acc = 0; acc_add(acc, x[i]); acc_add(acc, x[i]); out[i] = acc;",
     "inline void acc_add(thread complex64_t& a, complex64_t b) { a += b; }", mx.complex64, 2 * X16),
    ("auto f = [&](complex64_t a) { return a * a; }; out[i] = f(x[i]);", "", mx.complex64, X16 * X16),
    ("auto c = x[i]; auto d = c * c; out[i] = d;", "", mx.complex64, X16 * X16),
    ("out[i] = {x[i].imag, x[i].real};", "", mx.complex64, X16.imag + 1j * X16.real),
    ("constexpr complex64_t I(0.0f, 1.0f); out[i] = x[i] * I + I2;",
     "constant constexpr complex64_t I2 = complex64_t(0.0f, 2.0f);", mx.complex64, X16 * 1j + 2j),
    ("complex_t<float> c = complex_t<float>(1.0f, 2.0f); out[i] = x[i] + c;", "", mx.complex64, X16 + (1 + 2j)),
    ("out[i] = float(sizeof(complex64_t)) + float(alignof(complex64_t));", "", mx.float32, np.full(16, 12.0)),
    ("bool b = x[i]; float s = x[i]; out[i] = b ? s + static_cast<float>(x[i]) + (float)x[i] : -1.0f;", "",
     mx.float32, np.where(X16.real != 0, 3 * X16.real, -1)),
    ("if (i == 0) { for (int j = 0; j < 16; j++) { out[j] = *x; x++; } }", "", mx.complex64, X16),
    ("out[i] = getc(x, i) * getc(x, i); put(out, i);",
     "inline complex64_t getc(const device complex64_t* p, uint k) { return p[k]; }\n"
     "inline void put(device complex64_t* o, uint k) { o[k].imag += 1.0f; }", mx.complex64, X16 * X16 + 1j),
]


@pytest.mark.parametrize("body, header, dtype, want", _FORMS, ids=[f[0][:30] for f in _FORMS])
def test_cxx_forms(body, header, dtype, want):
    (out,) = run("uint i = thread_position_in_grid.x;\n" + body, [X16], [(16,)], [dtype], names=["x"], header=header,
                 tg=(16, 1, 1))
    close(out, np.asarray(want).astype(np.dtype(str(dtype).split(".")[-1])))


def test_complex_struct_members_are_refused():
    with pytest.raises(MetalbenchError, match="complex64_t member 'a'"):
        run("uint i = thread_position_in_grid.x;\nP p; p.a = x[i]; out[i] = p.a;", [X16], [(16,)], [mx.complex64],
            names=["x"], header="struct P { complex64_t a; float w; };", tg=(16, 1, 1))


def test_store_reads_the_old_element():
    # both parts of out[i] * c come from the element before the store overwrites its real part
    (out,) = run("uint i = thread_position_in_grid.x;\nout[i] = x[i];\nout[i] = out[i] * complex64_t(0.0f, 1.0f);",
                 [X16], [(16,)], [mx.complex64], names=["x"], tg=(16, 1, 1))
    close(out, X16 * 1j)


# -- other backends ---------------------------------------------------------------------------
def test_cuda_runs_complex64(monkeypatch):
    # the host side of backend="cuda" (simcuda: MLX's cuda_kernel replaced by the simulator);
    # the printed CUDA itself is tests/test_cuda_complex.py's
    import simcuda
    simcuda.install(monkeypatch)
    k = mb.metal_kernel(name="cm", input_names=["x"], output_names=["out"],
                        source="uint i = thread_position_in_grid.x; out[i] = x[i] * x[i];")
    for _ in range(2):
        (out,) = k(inputs=[mx.array(X16)], grid=(16, 1, 1), threadgroup=(16, 1, 1), output_shapes=[(16,)],
                   output_dtypes=[mx.complex64], backend="cuda")
        close(np.array(out), X16 * X16)


def test_printed_msl_refuses_complex64_output():
    # a float input and a complex64 output: the printed MSL (what a body with printf gets on
    # metal) would declare float storage where MLX declares complex64_t (the printed CUDA
    # reads it as floats under the parameter's name: tests/test_cuda_complex.py)
    k = mb.metal_kernel(name="cm", input_names=["x"], output_names=["out"],
                        source="uint i = thread_position_in_grid.x; out[i] = complex64_t(x[i], 1.0f);")
    x = np.ones(4, np.float32)
    b = k.bind(inputs=[x], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
               output_dtypes=[mx.complex64], backend="sim")
    from metalbench.codegen import msl
    with pytest.raises(KernelTypeError, match="'out' is a complex64 buffer.*as MSL"):
        msl.render(k.specialization(b).ir)
    (out,) = run("uint i = thread_position_in_grid.x; out[i] = complex64_t(x[i], 1.0f);", [x], [(4,)],
                 [mx.complex64], names=["x"], tg=(4, 1, 1))
    close(out, (x + 1j).astype(np.complex64))


def test_other_front_ends_still_refuse_complex_dtypes():
    # complex64 is a dtype of metal_kernel arguments only: the DSL's types stay real
    from metalbench import types as T
    with pytest.raises(T.TypeError_):
        T.from_numpy(np.complex64)
    with pytest.raises(T.TypeError_):
        T.from_mlx(mx.complex64)
    assert T.from_mlx(mx.complex64, complex_ok=True) is T.complex64
