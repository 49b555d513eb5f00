"""The MSL front end alone: MSL body + header -> IR (checked with ir.dump), and its errors."""
import pytest

from metalbench import ir, types as T
from metalbench.errors import KernelNameError, KernelSyntaxError, KernelTypeError
from metalbench.frontend.msl import translate_kernel


def k1(src, header="", ins=(("x", T.float32, 1),), outs=(("out", T.float32, 1),), **kw):
    return translate_kernel("k", src, header, inputs=list(ins), outputs=list(outs), **kw)


def body(src, **kw):
    return ir.dump(k1(src, **kw).body)


def test_map_with_template():
    d = body("uint i = thread_position_in_grid.x;\nT v = x[i];\nout[i] = metal::exp(v);",
             template=[("T", T.float16)])
    assert d.splitlines() == ["uint32 i = thread_position_in_grid.x", "float16 v = float16(x[i])",
                              "out[i] = float32(exp(v))"]


def test_usual_arithmetic_conversions_are_explicit():
    d = body("int a = -1; uint b = 2; out[0] = a < b; half h = 1.0h; out[1] = h * 2;")
    assert "(uint32(a) < b)" in d
    assert "(h * 2.0)" in d or "(h * float16(2))" in d or "h * 2.0" in d


def test_threadgroup_2d_and_header_constants():
    k = k1("threadgroup float t[N][N];\nuint2 p = thread_position_in_threadgroup.xy;\n"
           "t[p.y][p.x] = x[p.x];\nthreadgroup_barrier(mem_flags::mem_threadgroup);\nout[p.x] = t[p.x][p.y];",
           header="constant uint N = 4;\n")
    a = k.body[0]
    assert isinstance(a, ir.ArrayDecl) and a.space == "threadgroup" and a.shape == (4, 4)
    assert any(isinstance(s, ir.Barrier) for s in k.body)
    assert ir.threadgroup_bytes(k) == 64


def test_header_function_template_specialised_per_type():
    k = k1("out[0] = sq(x[0]) + sq(2);", header="template <typename T> T sq(T v) { return v * v; }")
    assert [f.ret.name for f in k.functions] == ["float32", "int32"]
    assert len({f.name for f in k.functions}) == 2


def test_pointer_params_get_bufargs():
    k = k1("out[0] = sum3(x + 1);",
           header="float sum3(const device float* a) { return a[0] + a[1] + a[2]; }")
    call = k.body[0].value
    assert isinstance(call, ir.FuncCall) and isinstance(call.args[0], ir.BufArg)
    assert k.functions[0].params[0].space == "device"


def test_atomics_and_cas():
    k = k1("atomic_fetch_add_explicit(&out[0], x[0], memory_order_relaxed);\n"
           "float e = atomic_load_explicit(&out[1], memory_order_relaxed);\n"
           "while (!atomic_compare_exchange_weak_explicit(&out[2], &e, e + 1.0f, memory_order_relaxed, memory_order_relaxed)) {}",
           atomic_outputs=True)
    ops = [n.op for n in ir.walk(k.body) if isinstance(n, ir.Atomic)]
    assert ops == ["add", "load", "cas"]
    assert k.outputs[0].atomic


def test_vectors_swizzles_and_casts():
    d = body("float4 v = float4(1.0f);\nv.xy = float2(x[0], 2);\nuint3 g = uint3(1, 2, 3);\n"
             "out[0] = v.y + (float)g.z + static_cast<float>(g.x) + float(v.w);")
    assert "float4 v = float4(1.0)" in d
    assert "float32(g.z)" in d


def test_control_flow():
    d = body("int s = 0;\nfor (int i = 0; i < 4; i++) { if (i == 2) continue; s += i; }\n"
             "while (s > 0) { s--; if (s == 1) break; }\ndo { s++; } while (s < 3);\n"
             "out[0] = s > 1 && x[0] > 0 ? 1.0f : 0.0f;")
    assert "for (int32 i = 0; (i < 3" in d or "for (int32 i = 0; (i < 4); i = (i + 1)):" in d
    assert "do-while" in d and "continue" in d and "break" in d
    assert "&&" in d


def test_elem_to_loc_uses_static_ndim():
    k = k1("uint e = thread_position_in_grid.x;\nout[e] = x[elem_to_loc(e, x_shape, x_strides, x_ndim)];",
           ins=[("x", T.float32, 2)])
    shapes = {n.dim for n in ir.walk(k.body) if isinstance(n, ir.ShapeOf)}
    assert shapes == {0, 1}
    assert k.inputs[0].uses_shape and k.inputs[0].uses_strides and k.inputs[0].uses_ndim


def test_scalar_inputs_are_scalar_params():
    k = k1("out[0] = a * x[0];", ins=[("a", T.float32, 0), ("x", T.float32, 1)], scalars=["a"])
    assert k.inputs[0].kind == "scalar"


def test_syntax_error_points_at_body_line():
    with pytest.raises(KernelSyntaxError) as e:
        k1("uint i = 0;\nout[i] = x[i] +;\n")
    assert e.value.span.line == 2
    assert "^" in str(e.value)


def test_text_that_is_not_msl_is_named_at_its_first_line():
    # (MLX's test_eval passes "this is not metal code {": the whole body fails to parse)
    with pytest.raises(KernelSyntaxError) as e:
        k1("\n  this is not metal code {")
    assert e.value.span.line == 2 and e.value.span.col == 2
    assert "near 'this is not metal code {'" in str(e.value) and "__body" not in str(e.value)


def test_missing_semicolon():
    with pytest.raises(KernelSyntaxError) as e:
        k1("uint i = 0\nout[i] = 1;\n")
    assert e.value.span.line in (1, 2)


def test_unknown_name_and_template_hint():
    with pytest.raises(KernelNameError) as e:
        k1("\nT v = x[0];\nout[0] = v;")
    assert e.value.span.line == 2 and "template" in str(e.value)


def test_unsupported_construct_names_metal():
    with pytest.raises(KernelSyntaxError) as e:
        k1("goto done;\ndone: out[0] = 1;")
    assert "goto" in str(e.value) and "metal" in str(e.value)


def test_goto_and_labels_are_named_at_their_line():
    src = "for (int k = 0; k < 4; ++k) {\n  if (x[k] > 2.0f) {\n    goto found;\n  }\n}\nfound:\nout[0] = 1;"
    with pytest.raises(KernelSyntaxError) as e:
        k1(src)
    assert "'goto found' (goto)" in str(e.value) and e.value.span.line == 3 and "^" in str(e.value)
    with pytest.raises(KernelSyntaxError) as e:
        k1("out[0] = 0;\nretry:\nout[0] = 1;")
    assert "the label 'retry:' (a goto target)" in str(e.value) and e.value.span.line == 2


def test_write_to_input_is_an_error():
    with pytest.raises(KernelTypeError):
        k1("x[0] = 1;")


def test_header_errors_point_at_header():
    with pytest.raises(KernelSyntaxError) as e:
        k1("out[0] = 1;", header="float f(float a) { return a +; }")
    assert "header" in str(e.value)


def test_less_than_is_not_a_template():
    d = body("float v = x[0];\nint n = 3;\nout[0] = v < 2.0f && v > -2.0f ? v : 0.0f;\n"
             "if (n<4 && n>1) out[1] = 1;\nn <<= 1;\nout[2] = n <= 6;",
             header="template <typename T> T one() { return T(1); }")
    assert "((v < 2.0) && (v > -2.0))" in d
    assert "((n < 4) && (n > 1))" in d
    assert "(n << 1)" in d and "(n <= 6)" in d


def test_literals():
    from metalbench.frontend.msl import _literal
    assert _literal("-3") == (-3, T.int32)
    assert _literal("-1u") == (2**32 - 1, T.uint32)
    assert _literal("0xFFFFFFFF") == (2**32 - 1, T.uint32)
    assert _literal("2.5f") == (2.5, T.float32) and _literal("1.5h") == (1.5, T.float16)
    assert _literal("10ul") == (10, T.uint64)
    d = body("int q = abs(-3);\nout[0] = q;")
    assert "int32 q = abs(-3)" in d
