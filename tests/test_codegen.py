"""The MSL and CUDA generators: golden output, precedence, literals, names, MLX
conventions; every generated MSL kernel passes msl_check, every CUDA kernel nvcc."""
from __future__ import annotations

import re
import shutil
import subprocess
import textwrap

import numpy as np
import pytest

from metalbench import ir, mlx_signature as sig, msl_check
from metalbench import types as T
from metalbench.codegen import cuda, msl
from metalbench.codegen.c_like import atomic_buffers
from metalbench.errors import KernelTypeError

from test_codegen_kernels import KERNELS, A, C, V, X, bin, buf, gid, scalar, f32, u32, i32, b


def golden(s: str) -> str:
    return textwrap.dedent(s).strip("\n")


# ----------------------------------------------------------------------------- every kernel

@pytest.mark.parametrize("name", sorted(KERNELS))
def test_msl_renders_and_checks_clean(name):
    r = msl.render(KERNELS[name]())
    diags = msl_check.check(r)
    assert diags == [], "\n".join(str(d) for d in diags) + "\n" + r.header + "\n" + r.body


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_msl_checks_clean_with_small_constant_inputs(name):
    # MLX puts inputs below 8 elements in the constant address space; device functions
    # must still accept them (they take input pointers by template)
    r = msl.render(KERNELS[name]())
    specs = [sig.InputSpec(n, t, nd, 1 if nd == 0 else 4) for n, (t, nd) in zip(r.input_names, r.input_types)]
    assert msl_check.check(r, inputs=specs) == []


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_cuda_renders(name):
    r = cuda.render(KERNELS[name]())
    assert r.input_names[-1] == "mb_grid" and r.extra_inputs == ["mb_grid"]
    assert r.body.startswith("// MLX launches whole blocks")
    assert r.atomic_outputs is False


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_cuda_compiles_with_nvcc(tmp_path):
    # one translation unit, each kernel in its own namespace (MLX compiles them one by one)
    parts = ['#include "mlx/backend/cuda/device/utils.cuh"\n#include <cooperative_groups.h>\n'
             "using mlx::core::cu::Shape;\nusing mlx::core::cu::Strides;\n"]
    for name, f in sorted(KERNELS.items()):
        parts.append(f"namespace mbk_{name} {{\n{cuda.full_source(cuda.render(f()))}\n}}\n")
    src = tmp_path / "all.cu"
    src.write_text("".join(parts))
    p = subprocess.run(["nvcc", "--ptx", "-std=c++17", "-arch=sm_90", "-I", cuda.SHIM_INCLUDE, str(src),
                        "-o", str(tmp_path / "all.ptx")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-6000:]


# ----------------------------------------------------------------------------- golden MSL

def test_golden_saxpy():
    r = msl.render(KERNELS["saxpy"]())
    assert r.header == ""
    assert r.body == golden("""
        uint i = thread_position_in_grid.x;
        if (i < n) {
            out[i] = a * x[i] + y[i];
        }""")
    assert (r.name, r.input_names, r.output_names, r.atomic_outputs) == ("saxpy", ["a", "x", "y", "n"], ["out"], False)


def test_golden_saxpy_full_source_like_mlx():
    r = msl.render(KERNELS["saxpy"]())
    assert sig.full_source(r) == golden("""
        #include <metal_stdlib>
        #include "mlx/backend/metal/kernels/utils.h"
        using namespace metal;
        [[kernel]] void custom_kernel_saxpy_floats_float_float_uint32_ts_float(
          const constant float& a [[buffer(0)]],
          const device float* x [[buffer(1)]],
          const device float* y [[buffer(2)]],
          const constant uint32_t& n [[buffer(3)]],
          device float* out [[buffer(4)]],
          uint3 thread_position_in_grid [[thread_position_in_grid]]) {
        uint i = thread_position_in_grid.x;
        if (i < n) {
            out[i] = a * x[i] + y[i];
        }
        }
        """) + "\n"


def test_golden_threadgroup_reduce():
    assert msl.render(KERNELS["tg_reduce"]()).body == golden("""
        threadgroup float partial[256];
        uint tid = thread_index_in_threadgroup;
        partial[tid] = x[thread_position_in_grid.x];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        uint s = threads_per_threadgroup.x / 2u;
        while (s > 0u) {
            if (tid < s) {
                partial[tid] = partial[tid] + partial[tid + s];
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
            s >>= 1u;
        }
        if (tid == 0u) {
            out[threadgroup_position_in_grid.x] = partial[0u];
        }""")


def test_golden_histogram_atomics():
    r = msl.render(KERNELS["histogram"]())
    assert r.atomic_outputs is True
    assert r.body == golden("""
        threadgroup atomic<uint> local_hist[256];
        uint tid = thread_index_in_threadgroup;
        atomic_store_explicit(&local_hist[tid], 0u, memory_order_relaxed);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        uint bin = x[thread_position_in_grid.x] % nbins;
        atomic_fetch_add_explicit(&local_hist[bin], 1u, memory_order_relaxed);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (tid < nbins) {
            atomic_fetch_add_explicit(&hist[tid], atomic_load_explicit(&local_hist[tid], memory_order_relaxed), memory_order_relaxed);
        }""")


def test_golden_device_functions():
    r = msl.render(KERNELS["device_function"]())
    assert r.header == golden("""
        template <typename mb_src_ptr>
        inline float load_or_zero(mb_src_ptr src, uint i, uint n, uint3 threads_per_grid);
        inline void bump(device atomic<uint>* dst, uint i);

        template <typename mb_src_ptr>
        inline float load_or_zero(mb_src_ptr src, uint i, uint n, uint3 threads_per_grid) {
            if (i >= n) {
                return 0.0f;
            }
            return src[i] * static_cast<float>(threads_per_grid.x);
        }

        inline void bump(device atomic<uint>* dst, uint i) {
            atomic_fetch_add_explicit(&dst[i], 1u, memory_order_relaxed);
            return;
        }
        """) + "\n"
    # one atomic output makes all outputs atomic (MLX's atomic_outputs), so plain
    # stores to `out` become atomic stores; the attribute the function reads is passed
    # from the body, where MLX's substring test sees it
    assert r.body == golden("""
        uint j = thread_position_in_grid.x;
        atomic_store_explicit(&out[j], load_or_zero(x, j, n, threads_per_grid) * 2.0f, memory_order_relaxed);
        bump(count, 0u);""")
    assert r.atomic_outputs
    assert sig.attributes(r.body) == ["thread_position_in_grid", "threads_per_grid"]


def test_golden_cuda_simd_atomic():
    r = cuda.render(KERNELS["simd_atomic_sum"]())
    assert r.body == golden("""
        // MLX launches whole blocks; threads past the grid do not exist on Metal.
        if (blockIdx.x * blockDim.x + threadIdx.x >= mb_grid[0] || blockIdx.y * blockDim.y + threadIdx.y >= mb_grid[1] ||
                blockIdx.z * blockDim.z + threadIdx.z >= mb_grid[2]) {
            return;
        }
        const uint3 thread_position_in_grid = make_uint3(blockIdx.x * blockDim.x + threadIdx.x, blockIdx.y * blockDim.y + threadIdx.y, blockIdx.z * blockDim.z + threadIdx.z);
        float v = mb_simd_reduce(x[thread_position_in_grid.x], [](float a, float b) { return a + b; });
        if (mb_simd_is_first()) {
            atomicAdd(&total[0u], v);
        }""")
    assert "__shfl_sync" in r.header and "__activemask()" in r.header


def test_golden_cuda_saxpy_scalars_are_pointers():
    r = cuda.render(KERNELS["saxpy"]())
    # scalars are read once at the top (a load cannot pass a store that may alias it)
    assert r.body.splitlines()[-6:] == ["const float mb_arg_a = a[0];", "const uint32_t mb_arg_n = n[0];",
                                        "uint32_t i = thread_position_in_grid.x;", "if (i < mb_arg_n) {",
                                        "    out[i] = mb_arg_a * x[i] + y[i];", "}"]
    assert r.input_types[-1] == (T.uint32, 1)
    src = cuda.full_source(r)
    assert "__global__ void custom_kernel_saxpy(\n    const float* a,\n" in src
    assert "    const uint32_t* mb_grid,\n    float* out) {\n" in src


# ----------------------------------------------------------------------------- expressions

def P():
    return msl.MSLPrinter(ir.KernelIR("k", [], []))


@pytest.mark.parametrize("build, text", [
    (lambda: bin("*", bin("+", V("a"), V("b")), V("c")), "(a + b) * c"),
    (lambda: bin("+", V("a"), bin("*", V("b"), V("c"))), "a + b * c"),
    (lambda: bin("-", V("a"), bin("-", V("b"), V("c"))), "a - (b - c)"),
    (lambda: bin("-", bin("-", V("a"), V("b")), V("c")), "a - b - c"),
    (lambda: bin("/", V("a"), bin("/", V("b"), V("c"))), "a / (b / c)"),
    (lambda: bin("<<", V("a"), bin("+", V("b"), C(1))), "a << (b + 1u)"),
    (lambda: bin("&", V("a"), bin("==", V("b"), V("c"))), "a & (b == c)"),
    (lambda: bin("|", bin("&", V("a"), V("b")), V("c")), "(a & b) | c"),
    (lambda: bin("&", bin("&", V("a"), V("b")), V("c")), "a & b & c"),
    (lambda: ir.UnOp("-", ir.UnOp("-", V("a", i32), i32), i32), "-(-a)"),
    (lambda: ir.UnOp("-", bin("+", V("a"), V("b")), u32), "-(a + b)"),
    (lambda: ir.UnOp("!", bin("<", V("a"), V("b")), b), "!(a < b)"),
    (lambda: ir.Logical("or", ir.Logical("and", V("p", b), V("q", b), b), V("r", b), b), "(p && q) || r"),
    (lambda: ir.Logical("and", V("p", b), ir.Logical("or", V("q", b), V("r", b), b), b), "p && (q || r)"),
    (lambda: ir.Select(V("p", b), ir.Select(V("q", b), V("a"), V("b"), u32), V("c"), u32), "p ? (q ? a : b) : c"),
    (lambda: bin("+", ir.Select(V("p", b), V("a"), V("b"), u32), V("c")), "(p ? a : b) + c"),
    (lambda: ir.Cast(f32, bin("+", V("a"), V("b"))), "static_cast<float>(a + b)"),
    (lambda: ir.Load("x", bin("+", V("i"), C(1)), f32), "x[i + 1u]"),
    (lambda: bin("%", V("f", f32), V("g", f32)), "metal::fmod(f, g)"),
    (lambda: bin("*", C(-2.0, f32), V("f", f32)), "-2.0f * f"),
    (lambda: bin("-", V("f", f32), C(-2.0, f32)), "f - -2.0f"),
])
def test_precedence(build, text):
    assert P().expr(build()) == text


def test_compound_assignment_only_for_arithmetic():
    p = P()
    assert p.assign_text(ir.Assign(V("s"), bin("+", V("s"), C(2)))) == "s += 2u"
    assert p.assign_text(ir.Assign(V("s"), bin("<<", V("s"), C(2)))) == "s <<= 2u"
    assert p.assign_text(ir.Assign(V("q", b), bin("==", V("q", b), V("r", b)))) == "q = q == r"
    assert p.assign_text(ir.Assign(V("f", f32), bin("%", V("f", f32), C(2.0, f32)))) == "f = metal::fmod(f, 2.0f)"


@pytest.mark.parametrize("value", [0.1, 1 / 3, 3.4028234663852886e38, 1e-45, 1.17549435e-38, 16777217.0,
                                   -0.0, 123456.789, 2.0 ** -20])
def test_float_literals_round_trip(value):
    text = P().literal(value, f32)
    assert text.endswith("f")
    assert np.float32(float(text[:-1])) == np.float32(value)
    if value == -0.0:
        assert text.startswith("-")


@pytest.mark.parametrize("value, t, text", [
    (float("inf"), f32, "INFINITY"), (float("-inf"), f32, "-INFINITY"), (float("nan"), f32, "NAN"),
    (3, u32, "3u"), (-1, u32, "4294967295u"), (-2147483648, i32, "(-2147483647 - 1)"), (7, T.int64, "7l"),
    (7, T.uint64, "7ul"), (1.5, T.float16, "1.5h"), (2.0, T.bfloat16, "static_cast<bfloat>(2.0f)"),
    (float("inf"), T.float16, "static_cast<half>(INFINITY)"), (5, T.int8, "static_cast<char>(5)"),
    (True, b, "true"), (1.0, f32, "1.0f"), (1e20, f32, "1e+20f"),
])
def test_literals_msl(value, t, text):
    assert P().literal(value, t) == text


def test_literals_cuda():
    p = cuda.CUDAPrinter(ir.KernelIR("k", [], []))
    assert p.literal(7, T.int64) == "7ll"
    assert p.literal(7, T.uint64) == "7ull"
    assert p.literal(1.5, T.float16) == "static_cast<__half>(1.5f)"
    assert p.literal(-5, T.int8) == "static_cast<int8_t>(-5)"


def test_identifiers_renamed_deterministically():
    r = msl.render(KERNELS["keywords"]())
    assert r.input_names == ["float_", "thread_"] and r.output_names == ["device_"]
    assert "float half_ = float_[kernel_];" in r.body
    assert "metal::min(half_, thread_)" in r.body
    assert msl.render(KERNELS["keywords"]()).body == r.body
    rc = cuda.render(KERNELS["keywords"]())
    assert rc.input_names[:2] == ["float_", "thread_"] and "thread_[0]" in rc.body


def test_user_names_never_take_generated_ones():
    k = ir.KernelIR("k", [buf("x"), buf("out", out=True)], [
        ir.Decl(V("x_shape"), C(1)), ir.Decl(V("mb_grid"), C(2)), ir.Decl(V("inf", f32), C(1.0, f32)),
        ir.Store("out", V("x_shape"), ir.Cast(f32, V("mb_grid"))),
    ])
    r = msl.render(k)
    # a whole-word x_shape would clash with the parameter MLX adds (a longer name only
    # makes MLX pass an unused parameter)
    assert not re.search(r"\bx_shape\b", r.body) and not re.search(r"\bmb_grid\b", r.body)
    assert msl_check.check(r) == []
    rc = cuda.render(k)
    assert "inf " not in rc.body and "u_mb_grid" in rc.body


# ----------------------------------------------------------------------------- MLX conventions

def test_shape_strides_ndim_names():
    r = msl.render(KERNELS["shapes"]())
    assert "x_shape[1]" in r.body and "x_strides[0]" in r.body and "x_ndim" in r.body
    params = sig.signature_params(r.body, [sig.InputSpec("x", T.float32, 2, 100)], [sig.OutputSpec("out", f32)])
    assert params[:4] == ["  const device float* x [[buffer(0)]]", "  const constant int* x_shape [[buffer(1)]]",
                          "  const constant int64_t* x_strides [[buffer(2)]]", "  const constant int& x_ndim [[buffer(3)]]"]
    assert params[4] == "  device float* out [[buffer(4)]]"
    assert "__grid_constant__ Shape x_shape" in cuda.full_source(cuda.render(KERNELS["shapes"]()))


def test_all_attributes_are_passed_by_name():
    r = msl.render(KERNELS["all_attributes"]())
    assert sig.attributes(r.body) == list(ir.THREAD_ATTRIBUTES)
    full = sig.full_source(r)
    for a, t in ir.THREAD_ATTRIBUTES.items():
        assert f"  {t} {a} [[{a}]]" in full
    rc = cuda.render(KERNELS["all_attributes"]())
    for a in ir.THREAD_ATTRIBUTES:
        assert re.search(rf"^const \w+ {a} = ", rc.body, re.M), a


def test_atomic_outputs_make_every_output_atomic():
    kernel_set, funcs = atomic_buffers(KERNELS["device_function"]())
    assert kernel_set == {"out", "count"} and funcs["bump"] == {"dst"}
    full = sig.full_source(msl.render(KERNELS["atomics_all"]()))
    assert "device atomic<int32_t>* ai" in full and "device atomic<float>* af" in full


def test_template_and_kernel_name_like_mlx():
    src = sig.full_source(name="myexp", body="uint elem = thread_position_in_grid.x;\nT tmp = inp[elem];\n"
                          "out[elem] = metal::exp(tmp);", inputs=[sig.InputSpec("inp", T.float16, 2, 64)],
                          outputs=[sig.OutputSpec("out", T.float16)], template=[("T", T.float32), ("N", 3), ("B", True)])
    assert "template <typename T, int N, bool B>\n[[kernel]] void custom_kernel_myexp__float_3_1_float16_t_float16_t(" in src
    assert src.endswith('template [[host_name("custom_kernel_myexp__float_3_1_float16_t_float16_t")]] [[kernel]] '
                        'decltype(custom_kernel_myexp__float_3_1_float16_t_float16_t<float, 3, 1>) '
                        'custom_kernel_myexp__float_3_1_float16_t_float16_t<float, 3, 1>;\n')
    assert "const device float16_t* inp [[buffer(0)]]" in src
    small = sig.full_source(name="k", body="o[0] = c[0];", inputs=[sig.InputSpec("c", T.int32, 1, 3)],
                            outputs=[sig.OutputSpec("o", T.int32)])
    assert "const constant int32_t* c [[buffer(0)]]" in small and "custom_kernel_k_int32_tc_int32_t" in small


def test_cuda_extra_input_makes_grid_array():
    r = cuda.render(KERNELS["saxpy"]())
    (g,) = r.extra_inputs((100, 2, 1), (32, 1, 1))
    assert g.tolist() == [100, 2, 1] and str(g.dtype) == "mlx.core.uint32"


# ----------------------------------------------------------------------------- errors

def test_metal_rejects_atomics_on_half():
    k = ir.KernelIR("k", [buf("o", T.float16, out=True)],
                    [ir.ExprStmt(ir.Atomic("add", "o", C(0), [C(1.0, T.float16)], T.float16))])
    with pytest.raises(KernelTypeError, match="int32, uint32 or float32 elements, not float16"):
        msl.render(k)
    with pytest.raises(KernelTypeError):
        cuda.render(k)


def test_metal_rejects_initialised_threadgroup_array():
    k = ir.KernelIR("k", [buf("o", out=True)], [ir.ArrayDecl("t", "threadgroup", f32, (2,), init=[1.0, 2.0])])
    with pytest.raises(KernelTypeError, match="threadgroup arrays cannot have initial values"):
        msl.render(k)


def test_metal_rejects_threadgroup_array_in_device_function():
    f = ir.Function("f", [], None, [ir.ArrayDecl("t", "threadgroup", f32, (4,))])
    k = ir.KernelIR("k", [buf("o", out=True)], [ir.ExprStmt(ir.FuncCall("f", [], None))], functions=[f])
    with pytest.raises(KernelTypeError, match="threadgroup arrays only in the kernel"):
        msl.render(k)


def test_missing_metal_math_gets_helpers():
    r = msl.render(KERNELS["math_all"]())
    for fn in ("mb_erf", "mb_erfc", "mb_log1p", "mb_expm1", "mb_cbrt", "mb_hypot", "mb_lgamma", "mb_tgamma"):
        assert f"inline float {fn}(" in r.header
    assert "static_cast<half>(mb_erf(static_cast<float>(h)))" in r.body
    assert "static_cast<bfloat>(metal::exp(static_cast<float>(bb)))" in r.body
    assert "metal::exp(h)" in r.body


def test_simd_ballot_spelling():
    r = msl.render(KERNELS["simd_all"]())
    assert "static_cast<ulong>(static_cast<simd_vote::vote_t>(simd_ballot(x > 0.5f)))" in r.body
    assert "simd_shuffle_down(static_cast<half>(x), 1u)" in r.body


# ----------------------------------------------------------------------------- cuda_check

from metalbench.codegen import cuda_check  # noqa: E402


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_cuda_parses_clean_with_libclang_shim(name):
    r = cuda.render(KERNELS[name]())
    diags = cuda_check.check(r, use_nvcc=False)
    assert diags == [], "\n".join(map(str, diags))


@pytest.mark.parametrize("use_nvcc", [False, pytest.param(True, marks=pytest.mark.skipif(
    shutil.which("nvcc") is None, reason="nvcc not installed"))])
def test_cuda_check_maps_errors_to_body_and_header(use_nvcc):
    r = cuda.render(KERNELS["saxpy"]())
    r.body = r.body.replace("mb_arg_a * x[i]", "mb_arg_a * xx[i]")
    (d,) = cuda_check.check(r, use_nvcc=use_nvcc)
    assert (d.where, d.line, d.kind) == ("body", 11, "name") and "xx" in d.message
    r = cuda.render(KERNELS["math_all"]())
    r.header = r.header.replace("return x + (y - x) * a;", "return x + (y - x) * aa;")
    (d,) = cuda_check.check(r, use_nvcc=use_nvcc)
    assert d.where == "header" and "mb_mix" in r.header.splitlines()[d.line - 1]


def test_verbose_source_is_full_source_without_preamble():
    r = msl.render(KERNELS["saxpy"]())
    assert sig.full_source(r) == sig.PREAMBLE + sig.verbose_source(r)
    assert sig.verbose_source(r).startswith("[[kernel]] void custom_kernel_saxpy_")
