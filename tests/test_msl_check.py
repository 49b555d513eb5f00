"""msl_check: libclang + the Metal shim catch bad MSL and point at the body line;
typical MLX custom kernels and everything the generators print are accepted."""
from __future__ import annotations

import pytest

from metalbench import msl_check, mlx_signature as sig
from metalbench import types as T
from metalbench.errors import KernelNameError, KernelSyntaxError, KernelTypeError

IN = [sig.InputSpec("inp", T.float32, 2, 64)]
OUT = [sig.OutputSpec("out", T.float32)]

EXP = """uint elem = thread_position_in_grid.x;
T tmp = inp[elem];
out[elem] = metal::exp(tmp);"""

EXP_STRIDED = """uint elem = thread_position_in_grid.x;
// Utils from `mlx/backend/metal/kernels/utils.h` are automatically included
uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
T tmp = inp[loc];
out[elem] = metal::exp(tmp);"""


def check(body, header="", **kw):
    kw.setdefault("inputs", IN)
    kw.setdefault("outputs", OUT)
    return msl_check.check(body=body, header=header, name="k", **kw)


# ----------------------------------------------------------------------------- accepted

@pytest.mark.parametrize("body", [EXP, EXP_STRIDED])
@pytest.mark.parametrize("t", [T.float32, T.float16, T.bfloat16])
def test_mlx_doc_examples_accepted(body, t):
    assert check(body, template=[("T", t)]) == []


def test_typical_msl_accepted():
    body = """
    uint3 gid = thread_position_in_grid;
    threadgroup float tile[16][16];
    float4 v = float4(inp[gid.x], 1.0h, 2, 3.0f);
    float2 w = v.xy + v.zw * 0.5f;
    half h = half(w.x) * 2.0h;
    int4 q = int4(v);
    bool4 m = v > 0.0f;
    tile[gid.y % 16][gid.x % 16] = select(0.0f, v.x, m.x) + float(q.w) + float(h);
    threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device);
    float s = simd_sum(tile[0][thread_index_in_simdgroup]);
    s += simd_shuffle_down(s, 1);
    ulong ballot = static_cast<ulong>(static_cast<simd_vote::vote_t>(simd_ballot(s > 0)));
    if (simd_is_first() && ballot != 0) {
        out[gid.x] = metal::precise::exp(s) + fast::sin(s) + metal::max(s, 0.0f) + INFINITY;
    }
    for (int i = 0; i < 4; ++i) { s += as_type<float>(uint(i)); }
    """
    assert check(body) == []


def test_atomic_outputs_accepted():
    body = """uint i = thread_position_in_grid.x;
atomic_fetch_add_explicit(&out[i % 4], inp[i], memory_order_relaxed);
float old = atomic_exchange_explicit(&out[0], 1.0f, memory_order_relaxed);
float expected = 0.0f;
atomic_compare_exchange_weak_explicit(&out[1], &expected, old, memory_order_relaxed, memory_order_relaxed);"""
    assert check(body, atomic_outputs=True) == []
    hist = [sig.OutputSpec("out", T.uint32)]
    assert check("atomic_fetch_max_explicit(&out[0], 3, memory_order_relaxed);", outputs=hist,
                 atomic_outputs=True) == []


def test_header_helpers_and_scalars_accepted():
    header = "constant uint TILE = 4;\ninline float sq(float x) { return x * x; }\n"
    body = "out[thread_position_in_grid.x] = sq(a) * TILE;"
    ins = [sig.InputSpec("a", T.float32, 0, 1)]
    assert check(body, header, inputs=ins) == []


def test_mlx_kernels_from_the_metal_kernel_tests_accepted():
    mk = pytest.importorskip("test_metal_kernel")
    x4 = sig.InputSpec("x", T.float32, 4, 384)
    g4 = sig.InputSpec("grid", T.float32, 4, 48)
    assert check(mk.GRID_SAMPLE, inputs=[x4, g4], template=[("T", T.float32)]) == []
    cot = sig.InputSpec("cotangent", T.float32, 4, 72)
    outs = [sig.OutputSpec("x_grad", T.float32), sig.OutputSpec("grid_grad", T.float32)]
    assert check(mk.GRID_SAMPLE_VJP, inputs=[x4, g4, cot], outputs=outs, template=[("T", T.float32)],
                 atomic_outputs=True) == []
    ab = [sig.InputSpec("a", T.float32, 2, 42), sig.InputSpec("b", T.float32, 2, 35)]
    assert check(mk.MATMUL, mk.MATMUL_HEADER, inputs=ab) == []


# ----------------------------------------------------------------------------- rejected

def test_undeclared_identifier_points_at_body_line():
    body = "uint i = thread_position_in_grid.x;\nfloat y = inp[i];\nout[i] = y + undefined_thing;"
    (d,) = check(body)
    assert (d.where, d.line, d.col, d.kind) == ("body", 3, 13, "name")
    with pytest.raises(KernelNameError) as e:
        msl_check.validate(body=body, name="k", inputs=IN, outputs=OUT)
    msg = str(e.value)
    assert "use of undeclared identifier 'undefined_thing'" in msg
    assert "    3 | out[i] = y + undefined_thing;" in msg
    assert "      |              ^^^^^^^^^^^^^^^" in msg


def test_float4_into_float_is_a_type_error():
    body = "float4 v = float4(1.0f);\nfloat x = v;\nout[0] = x;"
    (d,) = check(body)
    assert (d.line, d.kind) == (2, "type") and "float4" in d.message
    with pytest.raises(KernelTypeError):
        msl_check.validate(body=body, name="k", inputs=IN, outputs=OUT)


def test_syntax_error():
    body = "uint i = thread_position_in_grid.x\nout[i] = inp[i];"
    diags = check(body)
    assert diags and diags[0].kind == "syntax" and diags[0].where == "body" and diags[0].line == 1
    with pytest.raises(KernelSyntaxError, match="expected ';'"):
        msl_check.validate(body=body, name="k", inputs=IN, outputs=OUT)


def test_errors_in_template_instantiations_are_found():
    # dependent code is only type-checked once T is known (a scalar converts to a
    # vector implicitly in MSL, but not the other way round)
    body = "T v = inp[0];\nfloat w = float4(v);\nout[0] = w;"
    (d,) = check(body, template=[("T", T.float32)])
    assert d.line == 2 and d.kind == "type"


def test_first_line_offsets_and_header_errors():
    (d,) = check("out[0] = nope;", first_line=2)
    assert d.line == 2 and "2 | out[0] = nope;" in str(d)
    (h,) = check("out[0] = helper(1.0f);", header="inline float helper(float x) {\n  return x + y;\n}\n")
    assert (h.where, h.line) == ("header", 2)


def test_float_atomic_min_is_rejected():
    body = "atomic_fetch_min_explicit(&out[0], 1.0f, memory_order_relaxed);"
    (d,) = check(body, atomic_outputs=True)
    assert d.kind == "type"


def test_full_source_text_is_accepted_and_mapped():
    full = sig.full_source(name="k", body="uint i = thread_position_in_grid.x;\nout[i] = inp[j];",
                           inputs=IN, outputs=OUT, template=[("T", T.float32)])
    (d,) = msl_check.check(full)
    assert (d.where, d.line) == ("body", 2)


def test_check_metal_kernel_takes_mlx_arguments():
    import numpy as np
    ok = msl_check.check_metal_kernel("myexp", ["inp"], ["out"], EXP, inputs=[np.zeros((4, 16), np.float16)],
                                      output_dtypes=[np.float16], template=[("T", np.float32)])
    assert ok == []
    (d,) = msl_check.check_metal_kernel("k", ["a", "inp"], ["out"], "out[0] = a * inp[1] + b;",
                                        inputs=[2.0, np.zeros(3, np.float32)], output_dtypes=[np.float32])
    assert d.kind == "name" and "'b'" in d.message


def test_metal_headers_and_qualified_types_accepted():
    header = "#include <metal_stdlib>\n#include <metal_simdgroup>\nusing namespace metal;\n"
    body = "metal::half h = 1.0h;\nmetal::float4 v = metal::float4(h);\nout[0] = v.x;\n" \
           "atomic_thread_fence(mem_flags::mem_device, memory_order_relaxed);"
    assert check(body, header) == []
