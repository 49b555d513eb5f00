"""simdgroup_matrix<T, 8, 8>: the IR nodes, the thread-element layout, the simulator
(against NumPy), the MSL front end, the printers (Metal syntax check, nvcc/libclang)
and, on a GPU, CUDA against the simulator bit for bit."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench import ir, msl_check
from metalbench import types as T
from metalbench.codegen import cuda, cuda_check, msl
from metalbench.errors import KernelSyntaxError, KernelTypeError
from metalbench.frontend.msl import translate_kernel
from metalbench.passes.simdgroup_matrix import lane_coord, lower
from metalbench.sim import Buffer, compile_kernel

F32, F16, BF16 = T.float32, T.float16, T.bfloat16
RNG = np.random.default_rng(11)


def mma_reference(a, b, c, out_dtype):
    """d = a @ b + c as metalbench defines it: exact products, the sum over k in order in
    float64 from c, rounded to float32, then to the result type."""
    acc = c.astype(np.float64) if c is not None else np.zeros((8, 8))
    with np.errstate(all="ignore"):
        return _reference_sum(acc, a, b, out_dtype)


def _reference_sum(acc, a, b, out_dtype):
    a, b = a.astype(np.float64), b.astype(np.float64)
    for k in range(8):
        acc = acc + a[:, k:k + 1] * b[k:k + 1, :]
    return acc.astype(np.float32).astype(out_dtype)


# ----------------------------------------------------------------------------- layout

def test_each_lane_holds_two_adjacent_elements_and_the_lanes_cover_the_matrix():
    seen = set()
    for lane in range(32):
        r, c = lane_coord(lane)
        assert c % 2 == 0
        seen |= {(r, c), (r, c + 1)}
    assert seen == {(r, c) for r in range(8) for c in range(8)}


def test_layout_is_the_one_mlx_steel_uses():
    # BaseMMAFrag<T, 8, 8>::get_coord in mlx/backend/metal/kernels/steel/gemm/mma.h, in bits:
    # row = 4*bit4 + 2*bit2 + bit1, column = 4*bit3 + 2*bit0
    for lane in range(32):
        bit = [(lane >> i) & 1 for i in range(5)]
        assert lane_coord(lane) == (4 * bit[4] + 2 * bit[2] + bit[1], 4 * bit[3] + 2 * bit[0])


# ----------------------------------------------------------------------------- IR on the simulator

def _run_ir(kernel, arrays, out_size, out_dtype, checked=False, tg=32):
    args = {n: Buffer(a.reshape(-1), a.shape, (1,)) for n, a in arrays.items()}
    out = np.zeros(out_size, out_dtype)
    args["out"] = Buffer(out, (out_size,), (1,))
    compile_kernel(kernel).run(args, (tg, 1, 1), (tg, 1, 1), checked=checked)
    return out


def _mma_kernel(ta, tb, tc, td, transpose_b=False, accumulate=True, stride=8):
    Ma, Mb, Mc, Md = (T.MatrixType(t) for t in (ta, tb, tc, td))
    a, b, c, d = ir.Var("a", Ma), ir.Var("b", Mb), ir.Var("c", Mc), ir.Var("d", Md)
    L = lambda v: ir.Const(v, T.int64)  # noqa: E731
    body = [ir.Decl(a, ir.MatrixLoad("x", L(0), L(stride), Ma)),
            ir.Decl(b, ir.MatrixLoad("y", L(0), L(stride), Mb, transpose=transpose_b)),
            ir.Decl(c, ir.MatrixLoad("z", L(0), L(stride), Mc)),
            ir.Decl(d, ir.MatrixMul(a, b, c if accumulate else None, Md)),
            ir.MatrixStore(d, "out", L(0), L(8))]
    params = [ir.Param("x", "buffer", ta), ir.Param("y", "buffer", tb), ir.Param("z", "buffer", tc),
              ir.Param("out", "buffer", td, is_output=True)]
    return ir.KernelIR("mma", params, body)


@pytest.mark.parametrize("ta,tb,tc,td", [(F32, F32, F32, F32), (F16, F16, F32, F32), (F16, F16, F16, F16),
                                         (BF16, BF16, F32, F32), (BF16, BF16, BF16, BF16), (F32, F16, F32, F16)])
@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("accumulate", [False, True])
def test_multiply_accumulate_matches_its_definition_bit_for_bit(ta, tb, tc, td, transpose_b, accumulate):
    stride = 11   # rows of the source are longer than the matrix
    src = {n: (RNG.standard_normal((8, stride)) * 3).astype(t.np) for n, t in (("x", ta), ("y", tb), ("z", tc))}
    out = _run_ir(_mma_kernel(ta, tb, tc, td, transpose_b, accumulate, stride), src, 64, td.np)
    a, b, c = (src[n][:, :8] for n in "xyz")
    want = mma_reference(a, b.T if transpose_b else b, c if accumulate else None, td.np)
    np.testing.assert_array_equal(out.reshape(8, 8).view(np.uint8), want.view(np.uint8))


def test_special_values_propagate():
    x = np.ones((8, 8), np.float32)
    x[2, 3] = np.inf
    x[5, 0] = np.nan
    z = np.zeros((8, 8), np.float32)
    out = _run_ir(_mma_kernel(F32, F32, F32, F32), {"x": x, "y": np.eye(8, dtype=np.float32), "z": z}, 64,
                  np.float32).reshape(8, 8)
    want = mma_reference(x, np.eye(8, dtype=np.float32), z, np.float32)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    np.testing.assert_array_equal(out[~np.isnan(out)], want[~np.isnan(want)])


@pytest.mark.parametrize("diagonal", [False, True])
def test_fill_and_diagonal_constructor(diagonal):
    M = T.MatrixType(F32)
    m = ir.Var("m", M)
    k = ir.KernelIR("fill", [ir.Param("out", "buffer", F32, is_output=True)],
                    [ir.Decl(m, ir.MatrixFill(ir.Const(2.5, F32), M, diagonal=diagonal)),
                     ir.MatrixStore(m, "out", ir.Const(0, T.int64), ir.Const(8, T.int64))])
    out = _run_ir(k, {}, 64, np.float32).reshape(8, 8)
    np.testing.assert_array_equal(out, 2.5 * np.eye(8) if diagonal else np.full((8, 8), 2.5))


def test_thread_elements_are_the_documented_layout():
    # thread l writes its two elements as 100 * l + k: the stored matrix shows who holds what
    M = T.MatrixType(F32)
    m = ir.Var("m", M)
    lane = ir.Cast(F32, ir.ThreadAttr("thread_index_in_simdgroup", T.uint32))
    e0 = ir.BinOp("*", lane, ir.Const(100.0, F32), F32)
    e1 = ir.BinOp("+", e0, ir.Const(1.0, F32), F32)
    k = ir.KernelIR("who", [ir.Param("out", "buffer", F32, is_output=True)],
                    [ir.Decl(m), ir.Assign(m, ir.MatrixFromElements(ir.VecCons(T.VECTORS["float2"], [e0, e1]), M)),
                     ir.MatrixStore(m, "out", ir.Const(0, T.int64), ir.Const(8, T.int64))])
    out = _run_ir(k, {}, 64, np.float32).reshape(8, 8)
    for lane in range(32):
        r, c = lane_coord(lane)
        assert (out[r, c], out[r, c + 1]) == (100 * lane, 100 * lane + 1)


def test_lowering_leaves_kernels_without_matrices_alone():
    k = ir.KernelIR("k", [ir.Param("out", "buffer", F32, is_output=True)],
                    [ir.Store("out", ir.Const(0, T.uint32), ir.Const(1.0, F32))])
    assert lower(k) is k


# ----------------------------------------------------------------------------- MSL bodies

TILED = r"""
    const uint lane = thread_index_in_simdgroup;
    const int tile_row = threadgroup_position_in_grid.y * 16;
    const int tile_col = threadgroup_position_in_grid.x * 16;
    const short quad = lane / 4;
    const short fragment_row = (quad & 4) + ((lane / 2) % 4);
    const short fragment_column = (quad & 2) * 2 + (lane % 2) * 2;
    metal::simdgroup_matrix<float, 8, 8> acc[2][2];
    for (short r = 0; r < 2; ++r) {
        for (short c = 0; c < 2; ++c) {
            acc[r][c] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
        }
    }
    for (int k = 0; k < K; k += 8) {
        simdgroup_matrix<T, 8, 8> a[2];
        simdgroup_matrix<T, 8, 8> b[2];
        for (short t = 0; t < 2; ++t) {
            for (short e = 0; e < 2; ++e) {
                a[t].thread_elements()[e] = x[(tile_row + t * 8 + fragment_row) * K + k + fragment_column + e];
            }
            simdgroup_load(b[t], w, K, ulong2(k, tile_col + t * 8), true);
        }
        for (short r = 0; r < 2; ++r) {
            for (short c = 0; c < 2; ++c) {
                metal::simdgroup_matrix<float, 8, 8> result;
                simdgroup_multiply_accumulate(result, a[r], b[c], acc[r][c]);
                acc[r][c] = result;
            }
        }
    }
    for (short r = 0; r < 2; ++r) {
        for (short c = 0; c < 2; ++c) {
            simdgroup_store(acc[r][c], out, N, ulong2(tile_col + c * 8, tile_row + r * 8));
        }
    }
"""


def _tiled(M, K, N, dtype, backend="sim", checked=False, inputs=None):
    k = mb.metal_kernel(name="tiled_gemm", input_names=["x", "w"], output_names=["out"], source=TILED)
    x, w = inputs or ((RNG.standard_normal((M, K))).astype(dtype), (RNG.standard_normal((N, K))).astype(dtype))
    (o,) = k(inputs=[x, w], template=[("T", mx.float32 if dtype == np.float32 else mx.float16), ("K", K), ("N", N)],
             grid=(N // 16 * 32, M // 16, 1), threadgroup=(32, 1, 1), output_shapes=[(M, N)],
             output_dtypes=[mx.float32], backend=backend, checked=checked)
    return x, w, np.array(o)


@pytest.mark.parametrize("M,K,N", [(16, 8, 16), (32, 24, 48), (48, 64, 16)])
def test_tiled_gemm_16x16_of_an_msl_body_matches_numpy(M, K, N):
    x, w, o = _tiled(M, K, N, np.float32)
    np.testing.assert_allclose(o, x.astype(np.float64) @ w.T.astype(np.float64), rtol=1e-5, atol=1e-5)


def test_tiled_gemm_half_inputs_float_accumulators_checked():
    x, w, o = _tiled(32, 16, 32, np.float16, checked=True)
    np.testing.assert_allclose(o, x.astype(np.float64) @ w.T.astype(np.float64), rtol=1e-5, atol=1e-4)


CONSTRUCTED = r"""
    // the type templates called as constructors: a zero accumulator, a diagonal, a vector
    simdgroup_matrix<float, 8, 8> acc = simdgroup_matrix<float, 8, 8>(0);
    metal::simdgroup_matrix<float, 8, 8> two = metal::simdgroup_matrix<float, 8, 8>(2.0f);
    vec<float, 2> shift = vec<float, 2>(x[0], 1.0f);
    simdgroup_matrix<float, 8, 8> a;
    simdgroup_load(a, x, 8);
    simdgroup_multiply_accumulate(acc, a, two, acc);
    simdgroup_store(acc, out, 8);
    if (thread_index_in_simdgroup == 0) { out[64] = shift.x + shift.y; out[65] = metal::vec<float, 3>(7.0f).z; }
"""


def test_type_templates_called_as_constructors():
    # simdgroup_matrix<float, 8, 8>(0) is a zero matrix (v on the diagonal), vec<T, n>(...) a vector
    k = mb.metal_kernel(name="ctor", input_names=["x"], output_names=["out"], source=CONSTRUCTED)
    x = RNG.standard_normal((8, 8)).astype(np.float32)
    (o,) = k(inputs=[x], grid=(32, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(66,)],
             output_dtypes=[mx.float32], backend="sim")
    o = np.array(o)
    np.testing.assert_allclose(o[:64].reshape(8, 8), x @ (2 * np.eye(8, dtype=np.float32)), rtol=1e-6)
    assert o[64] == x[0, 0] + 1.0 and o[65] == 7.0


STAGED = r"""
    threadgroup float xs[8 * 8];
    threadgroup float ws[8 * 8];
    const uint lane = thread_index_in_simdgroup;
    simdgroup_float8x8 acc = simdgroup_float8x8(0.0f);
    for (int k = 0; k < K; k += 8) {
        for (uint i = lane; i < 64; i += 32) {
            xs[i] = x[(i / 8) * K + k + i % 8];
            ws[i] = w[(k + i / 8) * 8 + i % 8];
        }
        BARRIER;
        simdgroup_float8x8 a, b;
        simdgroup_load(a, xs, 8);
        simdgroup_load(b, ws, 8);
        simdgroup_multiply_accumulate(acc, a, b, acc);
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    simdgroup_store(acc, out, 8);
"""


def _staged(barrier, checked):
    K = 24
    k = mb.metal_kernel(name="staged", input_names=["x", "w"], output_names=["out"],
                        source=STAGED.replace("BARRIER", barrier))
    x = RNG.standard_normal((8, K)).astype(np.float32)
    w = RNG.standard_normal((K, 8)).astype(np.float32)
    (o,) = k(inputs=[x, w], template=[("K", K)], grid=(32, 1, 1), threadgroup=(32, 1, 1),
             output_shapes=[(8, 8)], output_dtypes=[mx.float32], backend="sim", checked=checked)
    return x, w, np.array(o)


def test_simdgroup_load_from_threadgroup_memory_is_checked_like_any_access():
    x, w, o = _staged("threadgroup_barrier(mem_flags::mem_threadgroup)", checked=True)
    np.testing.assert_allclose(o, x @ w, rtol=1e-5, atol=1e-5)


def test_a_missing_barrier_before_simdgroup_load_is_a_race():
    with pytest.raises(mb.KernelCheckError, match="race"):
        _staged("", checked=True)


def test_header_functions_take_and_return_matrices():
    header = r"""
simdgroup_float8x8 square(simdgroup_float8x8 m) {
    simdgroup_float8x8 d;
    simdgroup_multiply(d, m, m);
    return d;
}
"""
    src = r"""
    simdgroup_float8x8 m;
    simdgroup_load(m, x, 8);
    simdgroup_float8x8 s = square(m);
    simdgroup_store(s, out, 8);
"""
    k = mb.metal_kernel(name="sq", input_names=["x"], output_names=["out"], source=src, header=header)
    x = RNG.standard_normal((8, 8)).astype(np.float32)
    (o,) = k(inputs=[x], grid=(32, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(8, 8)],
             output_dtypes=[mx.float32], backend="sim")
    np.testing.assert_array_equal(np.array(o), mma_reference(x, x, None, np.float32))


def test_element_writes_with_compound_assignment_and_reads():
    src = r"""
    simdgroup_float8x8 m = make_filled_simdgroup_matrix<float, 8, 8>(1.0f);
    m.thread_elements()[1] += 2.0f;
    float2 e = m.thread_elements();
    out[thread_index_in_simdgroup] = e.x + 10.0f * m.thread_elements()[1];
"""
    k = mb.metal_kernel(name="el", input_names=[], output_names=["out"], source=src)
    (o,) = k(inputs=[], grid=(32, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(32,)],
             output_dtypes=[mx.float32], backend="sim")
    np.testing.assert_array_equal(np.array(o), np.full(32, 31.0))



ELEMENT_REFS = r"""
    uint lane = thread_index_in_simdgroup;
    simdgroup_float8x8 acc[3];
    for (int f = 0; f < 3; ++f) {
        simdgroup_load(acc[f], x + f * 64, 8);
    }
    for (int f = 0; f < 3; ++f) {
        thread auto& e = acc[f].thread_elements();   // bound to acc[f] now
        e[0] *= s[f];
        e[1] += float(f);
    }
    int j = 1;
    thread auto& g = acc[j].thread_elements();
    j = 2;
    g[1] = -5.0f;                                    // acc[1], not acc[2]
    simdgroup_float8x8 one = simdgroup_float8x8(1.0f);
    thread auto& d = one.thread_elements();
    float2 both = d;
    d[1] = both.x + 3.0f * both.y;
    for (int f = 0; f < 3; ++f) {
        simdgroup_store(acc[f], out + f * 64, 8);
    }
    simdgroup_store(one, out + 192, 8);
"""


def test_references_to_thread_elements_read_and_write_the_matrix():
    # thread auto& e = m.thread_elements(): e[0], e[1] and e itself are m's two elements
    # (an array element's index is fixed when the reference is bound)
    x = RNG.standard_normal((3, 8, 8)).astype(np.float32)
    s = np.array([2.0, -1.0, 0.5], np.float32)
    k = mb.metal_kernel(name="elref", input_names=["x", "s"], output_names=["out"], source=ELEMENT_REFS)
    (o,) = k(inputs=[mx.array(x), mx.array(s)], grid=(32, 1, 1), threadgroup=(32, 1, 1),
             output_shapes=[(256,)], output_dtypes=[mx.float32], backend="sim")
    want = x.copy()
    want[:, :, 0::2] *= s[:, None, None]               # element 0 of each lane: even columns
    want[:, :, 1::2] += np.arange(3, dtype=np.float32)[:, None, None]
    want[1, :, 1::2] = -5.0
    eye = np.eye(8, dtype=np.float32)
    eye[:, 1::2] = eye[:, 0::2] + 3 * eye[:, 1::2]
    got = np.array(o)
    np.testing.assert_array_equal(got[:192].reshape(3, 8, 8), want)
    np.testing.assert_array_equal(got[192:].reshape(8, 8), eye)

# ----------------------------------------------------------------------------- printers

def _tiled_ir():
    return translate_kernel("tiled", TILED, inputs=[("x", F16, 2), ("w", F16, 2)], outputs=[("out", F32, 2)],
                            template=[("T", F16), ("K", 16), ("N", 32)])


def test_printed_msl_spells_metal_and_passes_the_metal_syntax_check():
    r = msl.render(_tiled_ir())
    assert "simdgroup_multiply_accumulate(result, a[" in r.body
    assert "simdgroup_float8x8 acc[4];" in r.body and "simdgroup_half8x8 a[2];" in r.body
    assert msl_check.check(r) == []


def test_round_trip_through_printed_msl_gives_the_same_bits():
    x, w, o1 = _tiled(32, 16, 32, np.float16)
    r = msl.render(_tiled_ir())
    k = mb.metal_kernel(name="again", input_names=r.input_names, output_names=r.output_names, source=r.body,
                        header=r.header)
    (o2,) = k(inputs=[x, w], grid=(64, 2, 1), threadgroup=(32, 1, 1), output_shapes=[(32, 32)],
              output_dtypes=[mx.float32], backend="sim")
    np.testing.assert_array_equal(o1, np.array(o2))


def test_printed_msl_of_value_forms_uses_helpers_that_type_check():
    M = T.MatrixType(F32)
    a = ir.Var("a", M)
    L = lambda v: ir.Const(v, T.int64)  # noqa: E731
    k = ir.KernelIR("k", [ir.Param("x", "buffer", F32), ir.Param("out", "buffer", F32, is_output=True)], [
        ir.MatrixStore(ir.MatrixMul(ir.MatrixLoad("x", L(8), L(16), M), ir.MatrixFill(ir.Const(1.0, F32), M, True),
                                    None, M), "out", L(0), L(8), transpose=True),
        ir.Decl(a, ir.MatrixFromElements(ir.MatrixElements(ir.MatrixLoad("x", L(0), L(8), M)), M)),
        ir.MatrixStore(a, "out", L(64), L(8))])
    r = msl.render(k)
    assert "mb_simdgroup_mul<float>(mb_simdgroup_load<float>(x + 8l, 16l, false)" in r.body
    assert msl_check.check(r) == []


@pytest.mark.parametrize("dt,nvcc", [(F32, False), (F16, None), (BF16, False)])
def test_printed_cuda_compiles(dt, nvcc):
    # nvcc (where installed) once; libclang against the CUDA shim for the other types
    kir = translate_kernel("tiled", TILED, inputs=[("x", dt, 2), ("w", dt, 2)], outputs=[("out", F32, 2)],
                           template=[("T", dt), ("K", 16), ("N", 32)])
    r = cuda.render(kir)
    assert "mb_simdgroup_mma<float>(" in r.body
    assert cuda_check.check(r, use_nvcc=nvcc) == []


def test_tensor_core_variant_compiles(monkeypatch):
    monkeypatch.setenv("METALBENCH_CUDA_TENSOR_CORES", "1")
    for dt in (F16, BF16):
        kir = translate_kernel("tiled", TILED, inputs=[("x", dt, 2), ("w", dt, 2)], outputs=[("out", F32, 2)],
                               template=[("T", dt), ("K", 16), ("N", 32)])
        r = cuda.render(kir)
        assert "mb_simdgroup_mma_tc(" in r.body and "mma.sync.aligned.m16n8k8" in r.header
        assert cuda_check.check(r, use_nvcc=None if dt == F16 else False) == []


# ----------------------------------------------------------------------------- errors

def _err(src, header=""):
    return translate_kernel("bad", src, header, inputs=[("x", F32, 1), ("h", F16, 1)],
                            outputs=[("out", F32, 1)])


@pytest.mark.parametrize("src,exc,msg", [
    ("simdgroup_matrix<float, 4, 4> m;", KernelTypeError, "only 8x8"),
    ("simdgroup_matrix<int, 8, 8> m;", KernelTypeError, "hold float, half or bfloat"),
    ("simdgroup_float8x8 m; simdgroup_load(m, h, 8);", KernelTypeError, "needs a pointer to float"),
    ("simdgroup_float8x8 a, b; simdgroup_float8x8 c = a + b;", KernelTypeError, "no arithmetic operators"),
    ("simdgroup_float8x8 a; out[0] = a.thread_elements()[2];", KernelTypeError, "two elements"),
    ("thread auto& e = make_filled_simdgroup_matrix<float, 8, 8>(1.0f).thread_elements(); out[0] = e[0];",
     KernelSyntaxError, "thread_elements.. of this matrix expression"),
    ("simdgroup_float8x8 a; simdgroup_load(a, x, 8, 0, out[0] > 0);", KernelSyntaxError, "transpose flag"),
    ("simdgroup_float8x8 a; out[0] = a;", KernelTypeError, "cannot convert simdgroup_float8x8 to float"),
    ("float f; simdgroup_multiply(f, f, f);", KernelTypeError, "takes simdgroup matrices"),
    ("simdgroup_float8x8 a; float y = simdgroup_load(a, x);", KernelTypeError, "returns nothing"),
])
def test_misuse_is_named_at_its_line(src, exc, msg):
    with pytest.raises(exc, match=msg) as ei:
        _err("uint i = 0;\n" + src)
    assert "line 2" in str(ei.value)


# ----------------------------------------------------------------------------- on the GPU

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_cuda_equals_the_simulator_bit_for_bit(dtype):
    x, w, sim = _tiled(32, 32, 48, dtype)
    _, _, gpu = _tiled(32, 32, 48, dtype, backend="cuda", inputs=(x, w))
    np.testing.assert_array_equal(gpu, sim)


@pytest.mark.gpu
def test_tensor_cores_on_cuda_match_numpy(monkeypatch):
    monkeypatch.setenv("METALBENCH_CUDA_TENSOR_CORES", "1")
    x, w, gpu = _tiled(32, 64, 48, np.float16, backend="cuda")
    np.testing.assert_allclose(gpu, x.astype(np.float64) @ w.T.astype(np.float64), rtol=1e-4, atol=1e-3)


@pytest.mark.gpu
def test_cuda_mma_of_every_type_combination_equals_the_simulator():
    for ta, tb, tc, td in [(F32, F32, F32, F32), (F16, F16, F32, F16), (BF16, BF16, BF16, BF16)]:
        kir = _mma_kernel(ta, tb, tc, td, transpose_b=True)
        src = {n: (RNG.standard_normal((8, 8)) * 3).astype(t.np) for n, t in (("x", ta), ("y", tb), ("z", tc))}
        want = _run_ir(kir, src, 64, td.np)
        r = cuda.render(kir, exact_grid=True)
        kern = mx.fast.cuda_kernel(name=r.name, input_names=r.input_names, output_names=r.output_names,
                                   source=r.body, header=r.header)
        (o,) = kern(inputs=[mx.array(src[n].reshape(-1)) for n in "xyz"], grid=(32, 1, 1), threadgroup=(32, 1, 1),
                    output_shapes=[(64,)], output_dtypes=[T.to_mlx(td)], stream=mx.gpu)
        got = np.array(o.astype(mx.float32)).astype(td.np)
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))

