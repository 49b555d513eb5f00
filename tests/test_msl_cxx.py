"""C++ in MSL headers and bodies: structs, class templates with members, static members,
member types, references, namespaces, templates' metaprogramming, arrays of structs --
each run on the simulator against NumPy, printed back to Metal (syntax-checked and run
again) and to CUDA (compiled)."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench import msl_check
from metalbench import types as T
from metalbench.codegen import cuda, cuda_check, msl
from metalbench.errors import KernelSyntaxError, KernelTypeError, MetalbenchError
from metalbench.frontend.msl import translate_kernel

RNG = np.random.default_rng(5)


def run(header, body, inputs, out_shape, out_dtype=np.float32, template=(), grid=None, tg=None, checked=True,
        backend="sim"):
    names = [f"x{i}" if not isinstance(a, tuple) else a[0] for i, a in enumerate(inputs)]
    arrays = [a if not isinstance(a, tuple) else a[1] for a in inputs]
    k = mb.metal_kernel(name="cxx", input_names=names, output_names=["out"], source=body, header=header)
    n = int(np.prod(out_shape))
    (o,) = k(inputs=arrays, template=list(template), grid=grid or (n, 1, 1), threadgroup=tg or (min(n, 32), 1, 1),
             output_shapes=[out_shape], output_dtypes=[mx.array(np.zeros(1, out_dtype)).dtype], backend=backend,
             checked=checked)
    return np.array(o)


def printed_again(header, body, inputs, outputs, template=(), scalars=()):
    """The kernel's IR printed as Metal (checked by the Metal shim) and CUDA (compiled)."""
    kir = translate_kernel("cxx", body, header, inputs=inputs, outputs=outputs, template=template, scalars=scalars)
    r = msl.render(kir)
    assert msl_check.check(r) == [], msl_check.check(r)
    rc = cuda.render(kir)
    assert cuda_check.check(rc, use_nvcc=False) == []
    return r


# ----------------------------------------------------------------------------- structs

POINT = """
struct Point {
  float x;
  float y = 2.0f;
  float2 scaled(float s) const thread { return float2(x * s, y * s); }
  thread Point& shift(float d) thread { x += d; this->y += d; return *this; }
};
"""


def test_struct_fields_defaults_methods_and_aggregate_init():
    body = """
    uint i = thread_position_in_grid.x;
    Point p;
    p.x = x0[i];
    Point q = {x0[i] + 1.0f};            // y from its default member initialiser
    Point r{3.0f, x0[i]};
    float2 s = p.scaled(2.0f);
    q.shift(1.0f);
    Point c = r;                         // a copy
    c.x = 0.0f;
    out[i] = s.x + 10.0f * s.y + 100.0f * q.x + 1000.0f * q.y + r.x + r.y + c.x + c.y;
    """
    x = RNG.standard_normal(32).astype(np.float32)
    o = run(POINT, body, [x], (32,))
    want = 2 * x + 10 * 4 + 100 * (x + 2) + 1000 * 3 + 3 + x + 0 + x
    np.testing.assert_allclose(o, want, rtol=1e-5, atol=1e-3)
    printed_again(POINT, body, [("x0", T.float32, 1)], [("out", T.float32, 1)])


CLASS_TEMPLATE = """
namespace lib {
template <typename T, int N, int STRIDE = N * 2>
struct Window {
  static constant constexpr const int size = N;
  static constant constexpr const int stride = STRIDE;
  typedef T value_type;
  using acc_t = float;

  const device T* src;
  acc_t acc[N] = {0};

  METAL_FUNC Window(const device T* p, int start) thread : src(p + start) {}

  METAL_FUNC void load(int k) thread {
    for (int j = 0; j < N; ++j) {
      acc[j] += static_cast<acc_t>(src[k * stride + j]);
    }
  }
  METAL_FUNC acc_t total() const thread {
    acc_t s = 0;
    for (int j = 0; j < size; ++j) {
      s += this->acc[j];
    }
    return s;
  }
  METAL_FUNC void next() thread { src += stride * 2; }
};
}  // namespace lib
using namespace lib;
"""


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_class_template_with_members_statics_and_a_moving_pointer(dtype):
    body = """
    uint i = thread_position_in_grid.x;
    using W = lib::Window<T, 3>;
    thread W w(x0, int(i));
    w.load(0);
    w.next();
    w.load(1);
    typename W::value_type first = x0[i];
    out[i] = w.total() + float(W::size) * 100.0f + float(first) * 0.0f + float(decltype(w)::stride);
    """
    x = RNG.standard_normal(64).astype(dtype)
    o = run(CLASS_TEMPLATE, body, [x], (8,), template=[("T", mx.array(x[:1]).dtype)])
    xf = x.astype(np.float64)
    want = [xf[i:i + 3].sum() + xf[i + 12 + 6:i + 12 + 9].sum() + 300 + 6 for i in range(8)]
    np.testing.assert_allclose(o, want, rtol=1e-5, atol=1e-4)
    printed_again(CLASS_TEMPLATE, body, [("x0", T.lookup(np.dtype(dtype).name), 1)], [("out", T.float32, 1)],
                  template=[("T", T.lookup(np.dtype(dtype).name))])


METAPROGRAMMING = """
template <typename T, T v>
struct integral_constant {
  static constexpr constant T value = v;
  using value_type = T;
  using type = integral_constant;
  METAL_FUNC constexpr operator value_type() const thread noexcept { return value; }
};
template <int val>
using Int = integral_constant<int, val>;

template <typename T, int A, int B>
struct Pick { static_assert(A > 0, "A must be positive"); static constant constexpr const int v = A; };
template <typename T, int A>
struct Pick<T, A, 8> { static constant constexpr const int v = 8 * A; };

template <typename StrX, typename StrY>
METAL_FUNC float gather(const device float* src, StrX sx, StrY sy, int i, int j) {
  return src[i * sx + j * sy];
}
"""


def test_integral_constants_partial_specialisation_and_deduced_templates():
    body = """
    uint i = thread_position_in_grid.x;
    float a = gather(x0, Int<4>{}, Int<1>{}, int(i) / 4, int(i) % 4);   // integral_constant arguments
    float b = gather(x0, 4, 1, int(i) / 4, int(i) % 4);                  // int arguments
    constexpr int s = Int<3>::value + Pick<float, 2, 8>::v + Pick<half, 5, 1>::v;
    out[i] = a + b + float(s) + float(Int<7>{});
    """
    x = RNG.standard_normal(16).astype(np.float32)
    o = run(METAPROGRAMMING, body, [x], (16,))
    np.testing.assert_allclose(o, 2 * x + 3 + 16 + 5 + 7, rtol=1e-6)


def test_static_assert_failing_names_its_message_and_line():
    with pytest.raises(KernelTypeError, match="static_assert failed: \"?A must be positive") as e:
        translate_kernel("k", "out[0] = Pick<float, 0, 1>::v;", METAPROGRAMMING, inputs=[],
                         outputs=[("out", T.int32, 1)])
    assert "header, line 13" in str(e.value) and "source, line 1" in str(e.value)


REFERENCES = """
struct Acc {
  float v[4];
  thread float& at(int k) thread { return v[k]; }
  const thread float& at(int k) const thread { return v[k]; }
  thread float* data() thread { return reinterpret_cast<thread float*>(v); }
};
template <typename T>
METAL_FUNC void add_to(thread T& dst, T value) { dst += value; }
METAL_FUNC void twice(thread Acc& a) {
  for (int k = 0; k < 4; ++k) {
    a.at(k) *= 2.0f;
  }
}
"""


def test_references_to_members_elements_and_objects():
    body = """
    uint i = thread_position_in_grid.x;
    Acc a = {{x0[i], 1.0f, 2.0f, 3.0f}};
    a.at(1) = x0[i] * 3.0f;
    add_to(a.at(2), 5.0f);
    thread float& r = a.v[3];
    r = 7.0f;
    twice(a);
    a.data()[0] += 1.0f;
    out[i] = a.at(0) + 10.0f * a.at(1) + 100.0f * a.at(2) + 1000.0f * a.data()[3];
    """
    x = RNG.standard_normal(32).astype(np.float32)
    o = run(REFERENCES, body, [x], (32,))
    np.testing.assert_allclose(o, (2 * x + 1) + 10 * 6 * x + 100 * 14 + 1000 * 14, rtol=1e-5, atol=1e-2)
    printed_again(REFERENCES, body, [("x0", T.float32, 1)], [("out", T.float32, 1)])


EARLY_RETURN = """
struct Finder {
  const device float* data;
  int n;
  int first_above(float t) const thread {
    for (int k = 0; k < n; ++k) {
      if (data[k] > t) {
        return k;
      }
    }
    return -1;
  }
};
"""


def test_a_member_function_returning_from_inside_a_loop():
    body = """
    uint i = thread_position_in_grid.x;
    Finder f = {x0, 16};
    out[i] = f.first_above(x1[i]);
    """
    x = RNG.standard_normal(16).astype(np.float32)
    t = np.sort(RNG.standard_normal(32).astype(np.float32))
    o = run(EARLY_RETURN, body, [x, t], (32,), out_dtype=np.int32)
    want = [next((k for k in range(16) if x[k] > tt), -1) for tt in t]
    np.testing.assert_array_equal(o, want)
    printed_again(EARLY_RETURN, body, [("x0", T.float32, 1), ("x1", T.float32, 1)], [("out", T.int32, 1)])


FP8 = """
struct E4M3 {                      // an 8-bit float wrapper with several conversion operators
  operator half() const thread {
    ushort v = (bits & 127) << 7;
    half c = as_type<half>(v) * half(256.0);
    return (bits & 128) ? -c : c;
  }
  operator float() const thread { return static_cast<float>(this->operator half()) + 1000.0f; }
  operator bool() const thread { return (bits & 127) != 0; }
  uchar bits;
};
inline float widened(E4M3 e) { return e; }           // return converts through operator float
inline float as_fp8(uchar v) { return float(*(thread E4M3*)(&v)); }   // a local's bits as the struct
inline uchar flipped(uchar v) { ((thread E4M3*)&v)->bits ^= 128; return v; }   // written through it
"""


def test_conversion_operators_are_chosen_by_target_type_and_callable_explicitly():
    body = """
    uint i = thread_position_in_grid.x;
    E4M3 e;
    e.bits = x0[i];
    float y = e;                        // operator float
    bool b = e;                         // operator bool
    half h = e.operator half();         // an explicit call
    out[i] = float(e) + static_cast<float>(e) + (float)e + y + widened(e) + (b ? 0.5f : 0.0f)
             + 10000.0f * float(h) + as_fp8(x0[i]) - as_fp8(flipped(flipped(x0[i])));
    """
    x = np.arange(256, dtype=np.uint8)
    mag = ((x & 127).astype(np.uint16) << 7).view(np.float16).astype(np.float32) * 256
    h = np.where(x & 128, -mag, mag).astype(np.float16).astype(np.float32)
    want = 5 * (h + 1000) + 0.5 * ((x & 127) != 0) + 10000 * h
    o = run(FP8, body, [x], (256,))
    np.testing.assert_allclose(o, want.astype(np.float32), rtol=1e-6)
    printed_again(FP8, body, [("x0", T.uint8, 1)], [("out", T.float32, 1)])
    flip = "uint i = thread_position_in_grid.x; out[i] = float(as_fp8(flipped(x0[i])));"
    o = run(FP8, flip, [x], (256,))
    np.testing.assert_allclose(o, np.where(x & 128, mag, -mag).astype(np.float16).astype(np.float32) + 1000)
    two = FP8 + "struct Pair { uchar lo; uchar hi; };"
    with pytest.raises(MetalbenchError, match=r"reading the local variable 'v' as a Pair through a pointer cast"):
        run(two, "ushort v = x0[thread_position_in_grid.x]; out[thread_position_in_grid.x] = (*(thread Pair*)&v).lo;",
            [x], (256,))


ARRAYS = """
struct Cell {
  float v;
  int count = 0;
  float2 g;
};
"""


def test_arrays_of_structs_in_thread_and_threadgroup_memory():
    body = """
    uint i = thread_position_in_grid.x;
    uint l = thread_position_in_threadgroup.x;
    threadgroup Cell shared[32];
    shared[l].v = x0[i];
    shared[l].count = int(l);
    shared[l].g = float2(1.0f, 2.0f);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    Cell mine[2];
    mine[0] = shared[(l + 1) % 32];
    mine[1].v = 5.0f;
    out[i] = mine[0].v + 10.0f * float(mine[0].count) + mine[0].g.y + mine[1].v + float(mine[1].count);
    """
    x = RNG.standard_normal(64).astype(np.float32)
    o = run(ARRAYS, body, [x], (64,))
    l = np.arange(64) % 32
    nb = (l + 1) % 32
    want = x[(np.arange(64) // 32) * 32 + nb] + 10 * nb + 2 + 5
    np.testing.assert_allclose(o, want, rtol=1e-6)
    printed_again(ARRAYS, body, [("x0", T.float32, 1)], [("out", T.float32, 1)])


def test_a_struct_copied_through_reinterpreted_pointers_copies_its_bytes():
    header = """
template <typename T, int N>
struct Mover {
  struct alignas(N * sizeof(T)) Chunk { uint8_t v[sizeof(T) * N]; };
  METAL_FUNC static void copy(threadgroup T* dst, const device T* src) {
    *((threadgroup Chunk*)(dst)) = *((const device Chunk*)(src));
  }
};
"""
    body = """
    uint l = thread_position_in_threadgroup.x;
    threadgroup half tile[64];
    Mover<half, 4>::copy(tile + 4 * l, x0 + 4 * l);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[l] = tile[63 - l];
    """
    x = RNG.standard_normal(64).astype(np.float16)
    o = run(header, body, [x], (16,), out_dtype=np.float16, tg=(16, 1, 1))
    np.testing.assert_array_equal(o, x[63 - np.arange(16)])


SIMD_TILE = """
template <typename T>
struct Tile8 {
  simdgroup_matrix<float, 8, 8> acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  METAL_FUNC void mma(const device T* a, const device T* b, int lda, int ldb) thread {
    simdgroup_matrix<T, 8, 8> ma, mb;
    simdgroup_load(ma, a, lda);
    simdgroup_load(mb, b, ldb);
    simdgroup_multiply_accumulate(acc, ma, mb, acc);
  }
  METAL_FUNC void store(device float* d, int ldd) const thread { simdgroup_store(acc, d, ldd); }
};
"""


def test_simdgroup_matrices_as_members_of_a_class_template():
    body = """
    Tile8<T> t;
    for (int k = 0; k < K; k += 8) {
      t.mma(x0 + k, x1 + k * 8, K, 8);
    }
    t.store(out, 8);
    """
    K = 24
    a = RNG.standard_normal((8, K)).astype(np.float32)
    b = RNG.standard_normal((K, 8)).astype(np.float32)
    o = run(SIMD_TILE, body, [a, b], (8, 8), template=[("T", mx.float32), ("K", K)], grid=(32, 1, 1),
            tg=(32, 1, 1))
    np.testing.assert_allclose(o, a @ b, rtol=1e-5, atol=1e-5)


MISC = """
namespace geo {
enum Axis { X = 1, Y, Z = 7 };
enum class Mode : uint { Near, Far = 3 };
constant constexpr int scale = 10;
struct Base { float b = 1.5f; static float twice(float v) { return 2.0f * v; } };
struct Derived : Base {
  float d = 0.25f;
  float sum() const thread { return b + d; }
};
template <int N>
float pick(float v) {
  if constexpr (N > 2) {
    return v * N;
  } else {
    return not_declared_anywhere(v);     // discarded for N > 2, as C++ discards it
  }
}
float scaled(float v) { return v * scale; }
}  // namespace geo
"""


def test_enums_inheritance_static_members_if_constexpr_and_namespaced_functions():
    body = """
    uint i = thread_position_in_grid.x;
    geo::Derived d;
    d.d = x0[i];
    float e = float(geo::Y) + 10.0f * float(geo::Z) + 100.0f * float(uint(geo::Mode::Far));
    out[i] = d.sum() + geo::Base::twice(d.b) + geo::pick<3>(x0[i]) + geo::scaled(1.0f) + e + float(geo::scale);
    """
    x = RNG.standard_normal(32).astype(np.float32)
    o = run(MISC, body, [x], (32,))
    np.testing.assert_allclose(o, (1.5 + x) + 3.0 + 3 * x + 10 + (2 + 70 + 300) + 10, rtol=1e-5)


# ----------------------------------------------------------------------------- unsupported C++, named

@pytest.mark.parametrize("header,body,exc,words", [
    ("struct B { virtual float f() { return 1.0f; } };", "B b; out[0] = b.f();", KernelSyntaxError,
     "a virtual function is not supported"),
    ("struct R { thread float& r; };", "float a = 1.0f; R x = {a}; out[0] = 0.0f;", KernelSyntaxError,
     "the reference member 'r' of R"),
    ("struct P { float x; };", "P a, b; out[0] = (a + b).x;", KernelTypeError, "is a P, not a value"),
    ("struct P { float x; };", "P a; out[0] = a.y;", KernelTypeError, "P has no member 'y'"),
    ("struct P { float x; P(float v) thread : x(v) {} };", "P a(1.0f, 2.0f); out[0] = a.x;", KernelTypeError,
     "no overload of 'P::P' matches"),
    ("template <typename... Ts> float sum(Ts... xs) { return 0.0f; }", "out[0] = sum(1.0f, 2.0f);",
     KernelSyntaxError, "variadic"),
    ("struct N { int f(int k) thread { return k <= 0 ? 0 : f(k - 1); } };", "N n; out[0] = n.f(3);",
     KernelSyntaxError, "the recursive function 'f'"),
    ("struct P { float x; };", "device P* p = nullptr; out[0] = 0.0f;", KernelSyntaxError,
     "a pointer to a struct"),
    ("template <typename T> struct S { T x; };", "S s; out[0] = 0.0f;", KernelTypeError,
     "is a class template: give its arguments"),
    ("union U { float f; uint u; };", "U u; out[0] = 0.0f;", KernelSyntaxError, r"the union 'U' \(.*as_type.*\) is not supported"),
    ("using W = union { float f; uint u; };", "W w; out[0] = 0.0f;", KernelSyntaxError, "an unnamed union .* is not supported"),
    ("struct P { float x; P operator+(P o) const { return P{x + o.x}; } };", "P a{1.0f}, b{2.0f}; out[0] = a - b;",
     KernelTypeError, "no operator function takes a P here"),
    ("template <template <typename> class C> struct W { int x; };", "W<float> w; out[0] = 0.0f;",
     KernelSyntaxError, "the template template parameter"),
])
def test_unsupported_or_wrong_cxx_is_named_at_its_line(header, body, exc, words):
    with pytest.raises(exc, match=words):
        translate_kernel("k", body, header, inputs=[], outputs=[("out", T.float32, 1)])


def test_errors_inside_a_member_function_show_the_call_site():
    header = "struct Q { float f(float v) thread { return v + missing; } };"
    with pytest.raises(MetalbenchError) as e:
        translate_kernel("k", "Q q;\nout[0] = q.f(1.0f);", header, inputs=[], outputs=[("out", T.float32, 1)])
    text = str(e.value)
    assert "missing" in text and "called from" in text and "line 2" in text


# ----------------------------------------------------------------------------- structs in buffers

RECORDS = """
typedef struct { half h; ushort s; } Inner;               // 4 bytes, 2-aligned
struct Rec {                                              // 24 bytes: a@0 in@4 v@8 tag@16
  float a;
  Inner in;
  half4 v;
  uint8_t tag[3];
  float total() const device { return a + float(in.h) + float(v.w) + tag[2]; }
};
struct Params { uint n; float scale; };
"""


def _records(n):
    raw = np.zeros((n, 24), np.uint8)
    a = RNG.standard_normal(n).astype(np.float32)
    h = RNG.standard_normal(n).astype(np.float16)
    s = RNG.integers(0, 60000, n).astype(np.uint16)
    v = RNG.standard_normal((n, 4)).astype(np.float16)
    tag = RNG.integers(0, 256, (n, 3)).astype(np.uint8)
    raw[:, 0:4] = a.view(np.uint8).reshape(n, 4)
    raw[:, 4:6] = h.view(np.uint8).reshape(n, 2)
    raw[:, 6:8] = s.view(np.uint8).reshape(n, 2)
    raw[:, 8:16] = v.view(np.uint8).reshape(n, 8)
    raw[:, 16:19] = tag
    return raw.reshape(-1), a, h, s, v, tag


def test_structs_in_device_memory_through_pointers():
    # GGML-style blocks and parameter structs: struct pointers cast from byte buffers,
    # p[i].m, p->m, references, copies, nested structs, vector and array members, moving
    # pointers, a member function of an object in memory, stores through a struct pointer
    body = """
    uint i = thread_position_in_grid.x;
    const device Params* P = (const device Params*)params;
    device const Rec* r = (device const Rec*)recs;
    const device Rec& me = r[i];
    Rec copy = *(r + i);
    device const Rec* p = r;
    p += i;
    float got = me.a * P->scale + float(copy.in.s) + float(p->v.y) + float(me.tag[1]) + me.total();
    device Rec* o = (device Rec*)outrec;
    o[i].a = got;
    o[i].in.h = half(float(i));
    (o + i)->tag[2] = uint8_t(P->n);
    out[i] = got;
    """
    n = 5
    raw, a, h, s, v, tag = _records(n)
    params = np.array([7, np.float32(2.5).view(np.uint32)], np.uint32)
    k = mb.metal_kernel(name="recs", input_names=["params", "recs"], output_names=["out", "outrec"],
                        source=body, header=RECORDS)
    for checked in (False, True):
        o, orec = k(inputs=[mx.array(params), mx.array(raw)], grid=(n, 1, 1), threadgroup=(n, 1, 1),
                    output_shapes=[(n,), (n * 24,)], output_dtypes=[mx.float32, mx.uint8], init_value=0,
                    backend="sim", checked=checked)
        total = a + h.astype(np.float32) + v[:, 3].astype(np.float32) + tag[:, 2]
        want = a * 2.5 + s + v[:, 1].astype(np.float32) + tag[:, 1] + total
        np.testing.assert_allclose(np.array(o), want, rtol=1e-6)
        orec = np.array(orec).reshape(n, 24)
        np.testing.assert_array_equal(orec[:, 0:4].copy().view(np.float32)[:, 0], np.array(o))
        np.testing.assert_array_equal(orec[:, 4:6].copy().view(np.float16)[:, 0], np.arange(n, dtype=np.float16))
        np.testing.assert_array_equal(orec[:, 18], np.full(n, 7))
    ins = [("params", T.uint32, 1), ("recs", T.uint8, 1)]
    printed_again(RECORDS, body, ins, [("out", T.float32, 1), ("outrec", T.uint8, 1)])


def test_struct_pointer_misuse_is_named():
    with pytest.raises(MetalbenchError, match="is not a pointer into a buffer") as e:
        translate_kernel("bad", "device const Rec* r = (device const Rec*)0;\nout[0] = r[0].a;", RECORDS,
                         inputs=[("x0", T.float32, 1)], outputs=[("out", T.float32, 1)])
    assert "line 1" in str(e.value)


# ----------------------------------------------------------------------------- overloaded operators

OPERATORS = """
struct Complex {
    float re, im;
    Complex(float r = 0.0f, float i = 0.0f) : re(r), im(i) {}
    Complex operator+(thread const Complex& o) const { return Complex(re + o.re, im + o.im); }
    Complex operator*(thread const Complex& o) const {
        return Complex(re * o.re - im * o.im, re * o.im + im * o.re);
    }
    Complex operator*(float s) const { return Complex(re * s, im * s); }
    Complex operator-() const { return Complex(-re, -im); }
    bool operator==(thread const Complex& o) const { return re == o.re && im == o.im; }
};
struct Vec3 { float x, y, z; };
inline Vec3 operator-(thread const Vec3& u, thread const Vec3& v) { return Vec3{u.x - v.x, u.y - v.y, u.z - v.z}; }
inline Vec3 operator*(float t, thread const Vec3& v) { return Vec3{t * v.x, t * v.y, t * v.z}; }
inline Vec3 operator*(thread const Vec3& v, float t) { return t * v; }
inline float operator*(thread const Vec3& u, thread const Vec3& v) { return u.x * v.x + u.y * v.y + u.z * v.z; }
"""


def test_overloaded_operators_on_header_classes():
    # members and free functions, binary and unary, objects and values as results, overloads
    # chosen by the operands' types (Complex * Complex and Complex * float; Vec3 * Vec3 a dot)
    body = """
    uint i = thread_position_in_grid.x;
    Complex a(x0[i], 1.0f);
    Complex b = a * a + Complex(1.0f, 0.0f);
    Complex c = -(b * 0.5f);
    Vec3 u{x0[i], 2.0f, 3.0f};
    Vec3 v{1.0f, 1.0f, 1.0f};
    Vec3 w = 2.0f * (u - v) * 0.5f;
    float d = w * v;
    out[i] = c.re + 10.0f * c.im + 100.0f * d + ((a == a) ? 1000.0f : 0.0f);
    """
    x = RNG.standard_normal(32).astype(np.float32)
    o = run(OPERATORS, body, [x], (32,))
    b_re, b_im = x * x - 1 + 1, 2 * x
    want = -0.5 * b_re + 10 * (-0.5 * b_im) + 100 * ((x - 1) + 1 + 2) + 1000
    np.testing.assert_allclose(o, want, rtol=1e-5, atol=1e-4)
    printed_again(OPERATORS, body, [("x0", T.float32, 1)], [("out", T.float32, 1)])


def test_compound_assignment_operators_on_objects():
    # a op= b: a member operator (returning *this by reference, or void), else a free one
    header = OPERATORS + """
    struct Acc { float s, n; thread Acc& operator+=(float v) { s += v; n += 1.0f; return *this; } };
    inline void operator*=(thread Vec3& v, float t) { v.x *= t; v.y *= t; v.z *= t; }
    """
    body = """
    uint i = thread_position_in_grid.x;
    Acc a{0.0f, 0.0f};
    for (int k = 0; k < 3; ++k) a += x0[(i + k) % 32];
    Vec3 v{x0[i], 1.0f, 2.0f};
    v *= 3.0f;
    out[i] = a.s + 10.0f * a.n + 100.0f * v.x + 1000.0f * v.z;
    """
    x = RNG.standard_normal(32).astype(np.float32)
    o = run(header, body, [x], (32,))
    want = x + np.roll(x, -1) + np.roll(x, -2) + 30 + 300 * x + 6000
    np.testing.assert_allclose(o, want, rtol=1e-5, atol=1e-3)
    printed_again(header, body, [("x0", T.float32, 1)], [("out", T.float32, 1)])


FUNCTORS = """
struct Max { float operator()(float a, float b) const { return a > b ? a : b; }
             static constexpr constant float init = -1e30f; };
struct Add { template <typename T> T operator()(T a, T b) const { return a + b; } };
template <typename Op> float reduce4(const device float* x) {
    Op op;
    float acc = Op::init;
    for (int i = 0; i < 4; ++i) acc = op(acc, x[i]);
    return acc;
}
struct Window { float v[3];
                thread float& operator[](int i) { return v[i]; }
                float operator[](uint i) const { return v[i]; } };
"""


def test_function_objects_and_subscript_operators():
    # op(a, b) and Add()(a, b) call operator() (MLX's reduction functors); w[i] reads and writes
    # through operator[] returning a reference
    body = """
    uint i = thread_position_in_grid.x;
    Add add;
    Window w;
    for (int k = 0; k < 3; ++k) w[k] = x0[(4 * i + k) % 64];
    w[1] += 1.0f;
    out[i] = reduce4<Max>(x0 + 4 * i) + 10.0f * add(w[0], w[1]) + 100.0f * Add()(w[2], 1.0f);
    """
    x = RNG.standard_normal(64).astype(np.float32)
    o = run(FUNCTORS, body, [x], (16,))
    r = x.reshape(16, 4)
    want = r.max(1) + 10 * (r[:, 0] + r[:, 1] + 1) + 100 * (r[:, 2] + 1)
    np.testing.assert_allclose(o, want, rtol=1e-5, atol=1e-4)
    printed_again(FUNCTORS, body, [("x0", T.float32, 1)], [("out", T.float32, 1)])


MAKERS = """
struct P { float x, y; };
inline P make(float v) { P p; p.x = v; p.y = 2.0f * v; return p; }   // returns an object, takes none
P origin() { return P{0.0f, 1.0f}; }
template <int N = 3> float scaled(float v) { return N * v; }           // a default template value
template <typename T = int> T truncated(float v) { return T(v); }       // a default template type
"""


def test_functions_returning_objects_and_default_template_arguments():
    body = """
    uint i = thread_position_in_grid.x;
    P p = make(x0[i]);
    auto o = origin();
    out[i] = p.y + o.y + make(1.0f).x + scaled(x0[i]) + 10.0f * scaled<2>(1.0f) + 100.0f * float(truncated(2.7f))
             + float('\\n') * 1000.0f + float('\\x41') * 10000.0f;
    """
    x = RNG.standard_normal(32).astype(np.float32)
    o = run(MAKERS, body, [x], (32,))
    want = 2 * x + 1 + 1 + 3 * x + 20 + 200 + 10 * 1000 + 65 * 10000
    np.testing.assert_allclose(o, want, rtol=1e-5, atol=1e-3)
    printed_again(MAKERS, body, [("x0", T.float32, 1)], [("out", T.float32, 1)])


# ----------------------------------------------------------------------------- lambdas

def test_lambdas_in_the_body_capture_and_return():
    body = """
    uint i = thread_position_in_grid.x;
    float acc = 0.0f;
    const float k = 3.0f;
    auto add = [&](float v) { acc += v; };                  // void, writes a captured variable
    auto sq = [=](float v) -> float { return v * v * k; };  // trailing return type
    auto clampi = [](int a, int lo, int hi) { if (a < lo) return lo; return a > hi ? hi : a; };
    auto lane = [&]() { return thread_index_in_simdgroup; }; // a thread attribute inside
    for (int j = 0; j < 3; ++j) add(sq(x0[(i + j) % 32]));
    out[i] = acc + float(clampi(int(i) - 4, 0, 20)) + float(lane());
    """
    x = RNG.standard_normal(32).astype(np.float32)
    o = run("", body, [x], (32,))
    j = np.arange(32)
    want = 3 * (x ** 2 + np.roll(x, -1) ** 2 + np.roll(x, -2) ** 2) + np.clip(j - 4, 0, 20) + j
    np.testing.assert_allclose(o, want, rtol=1e-5)
    printed_again("", body, [("x0", T.float32, 1)], [("out", T.float32, 1)])


def test_lambdas_copy_what_they_capture_by_value_where_they_are_defined():
    # [=] and [k] copy at the definition: a later change to k does not reach the lambda; [&j]
    # and [&] see it. In a loop, each iteration's lambda copies that iteration's value.
    body = """
    uint i = thread_position_in_grid.x;
    float k = x0[i];
    float j = 1.0f;
    auto by_copy = [=](float v) { return v + k; };
    auto mixed = [k, &j](float v) { return v + k * j; };
    auto by_ref = [&](float v) { return v + k; };
    k = 100.0f;
    j = 2.0f;
    float acc = 0.0f;
    for (int t = 0; t < 3; ++t) {
        float w = float(t);
        auto twice = [=]() { return 2.0f * w; };
        w = -50.0f;
        acc += twice();
    }
    out[i] = by_copy(1.0f) + 10.0f * mixed(0.0f) + 1000.0f * by_ref(0.0f) + acc;
    """
    x = RNG.standard_normal(32).astype(np.float32)
    o = run("", body, [x], (32,))
    np.testing.assert_allclose(o, (x + 1) + 10 * (2 * x) + 1000 * 100 + 6, rtol=1e-5)
    printed_again("", body, [("x0", T.float32, 1)], [("out", T.float32, 1)])




# ----------------------------------------------------------------------------- qualified templates, explicit arguments

NESTED = """
#define HELPER inline
namespace outer {
namespace inner {
template <typename T, int N, int S = 1>
struct Scaled {
  T acc[N];
  HELPER Scaled(T v) thread { for (int i = 0; i < N; i++) acc[i] = v * T(S * (i + 1)); }
  HELPER T total() const thread { T t = 0; for (int i = 0; i < N; i++) t += acc[i]; return t; }
};
}  // namespace inner
}  // namespace outer

template <typename T, const bool twice, const int N = 2, const int S = 1>
HELPER void spread(device T* y, threadgroup T* tmp, const constant int& n, uint lid) {
  using acc_t = outer::
      inner::Scaled<T, N, S>;
  acc_t a(T(lid));
  tmp[lid] = a.total() * (twice ? T(2) : T(1));
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (int(lid) < n) y[lid] = tmp[n - 1 - int(lid)];
}
"""


def test_nested_qualified_class_templates_and_local_constants_as_explicit_template_arguments():
    # `ns1::\n ns2::S<T, N>` names a class template two namespaces down; `f<T, true, N, S>(...)` with
    # N, S local constexprs passes them as values (the grammar reads them as types)
    body = """
    constexpr int N = 3, S = 4;
    threadgroup float tmp[32];
    spread<float, /*twice=*/true, N, S>(out, tmp, n, thread_position_in_threadgroup.x);
    """
    o = run(NESTED, body, [np.zeros(32, np.float32), ("n", 32)], (32,), tg=(32, 1, 1))
    lid = np.arange(32)[::-1]
    np.testing.assert_allclose(o, 2.0 * lid * 4 * (1 + 2 + 3))
    kir_inputs = [("x0", T.float32, 1), ("n", T.int32, 0)]
    printed_again(NESTED, body, kir_inputs, [("out", T.float32, 1)], scalars=("n",))


BRACED = """
template <bool Twice> struct Mode {};
struct Pair { float a; float b = 3.0f; };
struct Ops {
  template <bool Twice>
  static float scale(float x, Mode<Twice> m = {}, int extra = {}) {
    (void)m;
    return (Twice ? 2.0f * x : x) + float(extra);
  }
  static float sum(Pair p) { return p.a + p.b; }
};
template <bool Twice>
float free_scale(float x, Mode<Twice> m = {}, int extra = {}) { return (Twice ? 2.0f * x : x) + float(extra); }
float free_sum(Pair p = {}) { return p.a + p.b; }
"""


def test_braced_list_arguments_and_defaults():
    # `Mode<T> m = {}` (a value-initialised class parameter, as steel's gemm_loop takes its
    # LoopAlignment), `int extra = {}`, an explicit `Mode<false>{}`, `{}` passed for a struct
    body = """
    uint i = thread_position_in_grid.x;
    float x = x0[i];
    out[i] = Ops::scale<true>(x) + Ops::scale(x, Mode<false>{}, 10) + Ops::sum({}) + Ops::scale<false>(x, {}, {})
             + 100.0f * (free_scale<true>(x) + free_sum() + free_scale<false>(x, {}, 2));
    """
    x = RNG.standard_normal(32).astype(np.float32)
    o = run(BRACED, body, [x], (32,))
    np.testing.assert_allclose(o, 2 * x + (x + 10) + 3.0 + x + 100 * (2 * x + 3 + x + 2), rtol=1e-5, atol=1e-4)
    printed_again(BRACED, body, [("x0", T.float32, 1)], [("out", T.float32, 1)])
    with pytest.raises(KernelSyntaxError, match=r"the braced list '\{x0\[0\], 1.0f\}' as an argument"):
        run(BRACED, "out[0] = Ops::sum({x0[0], 1.0f});", [x], (1,))
def test_a_local_constant_as_an_explicit_template_argument_of_a_header_function():
    # `constexpr int V = 4;` in the body, then f<V>(...): the grammar reads V as a type
    header = """
    template <int V, typename T>
    inline float dot_first(const device T* w, const thread float* x) {
        float a = 0.0f;
        for (int i = 0; i < V; ++i) a += x[i] * float(w[i]);
        return a;
    }
    namespace k { constexpr constant int W = 2; }
    """
    body = """
    constexpr int V = 4;
    uint i = thread_position_in_grid.x;
    float xs[V];
    for (int j = 0; j < V; ++j) xs[j] = float(j + 1);
    if constexpr (V > 3) {
        out[i] = dot_first<V, uchar>(x0 + V * i, xs) + 100.0f * dot_first<k::W, uchar>(x0 + V * i, xs);
    } else {
        out[i] = -1.0f;
    }
    """
    w = RNG.integers(0, 200, 32).astype(np.uint8)
    o = run(header, body, [w], (8,))
    wr = w.reshape(8, 4).astype(np.float32)
    np.testing.assert_allclose(o, (wr * [1, 2, 3, 4]).sum(1) + 100 * (wr[:, :2] * [1, 2]).sum(1))
    with pytest.raises(MetalbenchError, match="template argument 'n' is not a compile-time constant"):
        run(header, "int n = 4; float xs[4] = {1, 2, 3, 4}; out[0] = dot_first<n, uchar>(x0, xs);", [w], (8,))


def test_a_converted_member_of_a_struct_in_memory_is_evaluated_once():
    # float(b[k++].d): deciding whether the operand is an object must not translate it
    header = "struct Blk { half d; uchar q[6]; };"
    body = """
    device const Blk* b = (device const Blk*)x0;
    int k = 0;
    float a = float(b[k++].d);
    float c = (float)b[k++].d;
    float e = static_cast<float>(b[k++].q[1]);
    out[0] = a; out[1] = c; out[2] = e; out[3] = float(k);
    """
    w = np.zeros(32, np.uint8)
    w[:24] = np.frombuffer(np.array([1, 0, 0, 0, 2, 0, 0, 0, 0, 5, 0, 0], np.float16).tobytes(), np.uint8)
    o = run(header, body, [w], (4,))
    np.testing.assert_array_equal(o, [1, 2, w[16 + 2 + 1], 3])


def test_class_template_names_itself_with_other_arguments():
    # a member of type Self<N - 1> and Self<N - 1>::f() inside the template (the injected class
    # name with arguments names the template), ended by a full specialisation
    header = """
    template <int N> struct Pow { static float of(float v) { return v * Pow<N - 1>::of(v); } };
    template <> struct Pow<0> { static float of(float v) { return 1.0f; } };
    template <int N> struct Chain { Chain<N - 1> rest; float w = float(N); float sum() thread { return w + rest.sum(); } };
    template <> struct Chain<0> { float sum() thread { return 0.0f; } };
    """
    body = "uint i = thread_position_in_grid.x; Chain<4> c; out[i] = Pow<3>::of(x[i]) + c.sum();"
    x = np.random.default_rng(2).standard_normal(32).astype(np.float32)
    k = mb.metal_kernel(name="self_named", input_names=["x"], output_names=["out"], source=body, header=header)
    (out,) = k(inputs=[mx.array(x)], grid=(32, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(32,)],
               output_dtypes=[mx.float32], backend="sim")
    np.testing.assert_allclose(np.asarray(out), x ** 3 + 10, rtol=1e-5)


def test_a_syntax_error_in_a_struct_names_the_struct_without_calling_structs_unsupported():
    header = "struct Acc {\n  float s;\n  float add(float v) { return s + + ; }\n};\n"
    k = mb.metal_kernel(name="bad_struct", input_names=["x"], output_names=["out"],
                        source="uint i = thread_position_in_grid.x; out[i] = x[i];", header=header)
    with pytest.raises(KernelSyntaxError) as e:
        k(inputs=[mx.zeros((4,))], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
          output_dtypes=[mx.float32], backend="sim")
    msg = str(e.value)
    assert "struct 'Acc'" in msg and "line 3" in msg and "not supported" not in msg.split("hint")[0]


def test_a_value_converts_to_a_class_parameter_through_its_constructor():
    # C++'s converting constructor: use(x) with 'float use(F f)' builds F(x); an explicit
    # constructor does not convert
    header = """
    struct F { float v; F(float a) : v(a * 2.0f) {} };
    inline float use(F f) { return f.v; }
    struct E { float v; explicit E(float a) : v(a) {} };
    inline float take(E e) { return e.v; }
    """
    x = np.random.default_rng(3).standard_normal(16).astype(np.float32)

    def run(body):
        k = mb.metal_kernel(name="converting_ctor", input_names=["x"], output_names=["out"], source=body,
                            header=header)
        (out,) = k(inputs=[mx.array(x)], grid=(16, 1, 1), threadgroup=(16, 1, 1), output_shapes=[(16,)],
                   output_dtypes=[mx.float32], backend="sim")
        return np.asarray(out)
    np.testing.assert_allclose(run("uint i = thread_position_in_grid.x; out[i] = use(x[i]) + use(F(1.0f));"),
                               2 * x + 2, rtol=1e-6)
    np.testing.assert_allclose(run("uint i = thread_position_in_grid.x; out[i] = take(E(x[i]));"), x, rtol=1e-6)
    with pytest.raises(KernelTypeError, match="no overload of 'take'"):
        run("uint i = thread_position_in_grid.x; out[i] = take(x[i]);")


def test_free_operator_templates_on_a_class_template():
    # template <typename T> V<T> operator+(V<T>, V<T>): registered as the header's operator
    # (it was dropped), its result an object before T is bound
    header = """
    template <typename T> struct V { T a; };
    template <typename T> V<T> operator+(V<T> l, V<T> r) { return V<T>{l.a + r.a}; }
    template <typename T> V<T> operator*(V<T> l, T s) { return V<T>{l.a * s}; }
    """
    x = np.random.default_rng(4).standard_normal(16).astype(np.float32)
    k = mb.metal_kernel(name="op_templates", input_names=["x"], output_names=["out"], header=header,
                        source="uint i = thread_position_in_grid.x; V<float> p{x[i]}; V<float> q{1.0f};\n"
                               "V<float> s = (p + q) * 3.0f; out[i] = s.a + ((p + p) * 0.5f).a;")
    (out,) = k(inputs=[mx.array(x)], grid=(16, 1, 1), threadgroup=(16, 1, 1), output_shapes=[(16,)],
               output_dtypes=[mx.float32], backend="sim")
    np.testing.assert_allclose(np.asarray(out), (x + 1) * 3 + x, rtol=1e-6)
