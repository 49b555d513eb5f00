"""Functions defined outside the scope that declares them: ``float ns::f(float v) { ... }``
(a namespace's function, also ``a::b::g``) is that namespace's function and sees its names;
a member function defined outside its class (``float S::get() const { ... }``, MLX's
``fft/readwrite.h`` specialising ``ReadWriter<float, float2>::load``) is not read -- the header
is still accepted, and a call of that member is an error naming it (it was taken for a free
function of the member's name). Our own kernels vs NumPy."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import KernelSyntaxError
from mlx_headers import mlx_header


def _run(source, header, x=(2.0,)):
    k = mb.metal_kernel(name="outside", input_names=["x"], output_names=["out"], source=source, header=header)
    return np.array(k(inputs=[mx.array(list(x))], output_shapes=[(1,)], output_dtypes=[mx.float32],
                      grid=(1, 1, 1), threadgroup=(1, 1, 1), backend="sim")[0])


def test_namespace_functions_defined_outside_the_namespace():
    hdr = """namespace ns { float f(float); constant float K = 3.0f; namespace inner { float g(float); } }
float ns::f(float v) { return v * K; }
float ns::inner::g(float v) { return v + K; }"""
    assert _run("out[0] = ns::f(x[0]) + 10.0f * ns::inner::g(x[0]);", hdr)[0] == 2.0 * 3.0 + 10.0 * 5.0


@pytest.mark.parametrize("header, source, what, line", [
    ("struct S { float a; float get() const; };\nfloat S::get() const { return a; }",
     "S s{x[0]};\nout[0] = s.get();", "'get' of S, a member function defined outside its class", 2),
    ("struct S { float a; S(float v); };\nS::S(float v) : a(v) {}",
     "S s(x[0]);\nout[0] = s.a;", "the constructor of S, a member function defined outside its class", 1),
])
def test_calling_a_member_defined_outside_its_class_is_named(header, source, what, line):
    with pytest.raises(KernelSyntaxError) as e:
        _run(source, header)
    assert what in str(e.value).splitlines()[0] and f"source, line {line}:" in str(e.value)


def test_unused_members_defined_outside_their_class_do_not_stop_the_header():
    hdr = "struct S { float a; float get() const; };\nfloat S::get() const { return a; }\n" \
          "inline float get(float v) { return v + 1.0f; }"
    assert _run("S s{x[0]};\nout[0] = s.a + get(x[0]);", hdr)[0] == 5.0      # the free get, not S::get


def test_mlx_fft_readwrite_header_is_accepted():
    assert _run("out[0] = x[0] * 2.0f;", mlx_header("fft/readwrite.h"))[0] == 4.0
