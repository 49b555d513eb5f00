"""Printed kernels specialised for a launch (issue 18): array lengths a kernel divides by
compiled in (``passes/lengths.py``), and 64-bit row indices where the ranges prove the
32-bit sum never wraps (``CUDAPrinter.index_text``).

The printed CUDA runs on the CPU (``cuda_host``: g++ with AddressSanitizer, thread by
thread) against NumPy and the simulator, for power-of-two, other and zero lengths,
specialised and not."""
import numpy as np
import pytest

import cuda_host
import metalbench as mb
import simcuda
from metalbench import ir, protocol
from metalbench import types as T
from metalbench.dsl import thread_position_in_grid
from metalbench.passes.lengths import bind_lengths, divisor_lengths
from metalbench.passes.ranges import Ranges

needs_gxx = pytest.mark.skipif(not cuda_host.HAVE_GXX, reason="needs g++")


@mb.kernel
def bias_add(x, bias, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = x[i] + bias[i % bias.size] + i // bias.size


@mb.kernel
def by_length(x, e, out: mb.Out):
    # divides by the length of an array it never reads (so that array may be empty)
    i = thread_position_in_grid.x
    out[i] = x[i] + (i % e.size) * 1000 + i // e.size


def _printed(k, args, backend, tg=(256, 1, 1), specialised=True, n=None):
    b = k.bind(*args, grid=n, threadgroup=tg[0], backend="sim")
    sp = k.specialization(b)
    lengths = sp.lengths(b.values, b.outputs, backend) if specialised else ()
    return sp, b, lengths, sp.rendered(backend, True, tg, lengths)


@needs_gxx
@pytest.mark.parametrize("cols", [1, 3, 64, 100, 4096])
@pytest.mark.parametrize("specialised", [True, False])
def test_bias_by_length_printed_cuda_matches_numpy(cols, specialised):
    rng = np.random.default_rng(cols)
    n = 8192
    x, bias = rng.standard_normal(n).astype(np.float32), rng.standard_normal(cols).astype(np.float32)
    sp, b, lengths, r = _printed(bias_add, (x, bias), "cuda", specialised=specialised, n=n)
    body = r.body
    if specialised:
        assert lengths == ((("bias", 0), cols),)
        assert f"i % {cols}u" in body and f"i / {cols}u" in body and "mb_umod_len" not in body, body
        assert "bias_shape" not in body                 # the length is no longer read at run time
    else:
        assert "mb_umod_len<uint32_t>(i, " in body and "mb_udiv_len<uint32_t>(i, " in body, body
    i = np.arange(n)
    want = x + bias[i % cols] + (i // cols).astype(np.float32)
    got = cuda_host.run(r, {"x": x, "bias": bias}, {"out": (n,)}, (n, 1, 1), (256, 1, 1))["out"]
    np.testing.assert_array_equal(got, want)
    sim = np.asarray(bias_add(x, bias, grid=n, threadgroup=256, backend="sim"))
    np.testing.assert_array_equal(sim, want)


@needs_gxx
@pytest.mark.parametrize("m", [0, 5, 32])
def test_zero_and_other_lengths_of_an_unread_array(m):
    n = 512
    x, e = np.arange(n, dtype=np.float32), np.zeros(m, np.float32)
    i = np.arange(n)
    want = x + ((i % m) * 1000 + i // m if m else 0 * i).astype(np.float32)
    if m == 0:
        # DSL launches refuse empty arrays; the printed code must still give 0 for x % 0 and
        # x / 0 (metalbench.scalar), and a zero length is never compiled in
        sp = by_length.specialize(x, np.zeros(3, np.float32))
        r = sp.rendered("cuda", True, (256, 1, 1), ((("e", 0), 0),))
        assert r.body == sp.rendered("cuda", True, (256, 1, 1)).body
        assert "mb_umod_len" in r.body and "mb_udiv_len" in r.body, r.body
    else:
        sp, b, lengths, r = _printed(by_length, (x, e), "cuda", n=n)
        np.testing.assert_array_equal(np.asarray(by_length(x, e, grid=n, threadgroup=256, backend="sim")), want)
        assert f"% {m}u" in r.body and "mb_umod_len" not in r.body, r.body
    got = cuda_host.run(r, {"x": x, "e": e}, {"out": (n,)}, (n, 1, 1), (256, 1, 1))["out"]
    np.testing.assert_array_equal(got, want)


def test_printed_msl_has_the_length_as_a_constant():
    x, bias = np.zeros(1024, np.float32), np.zeros(96, np.float32)
    sp, b, lengths, r = _printed(bias_add, (x, bias), "metal", n=1024)
    assert "i % 96u" in r.body and "i / 96u" in r.body and "mb_umod_len" not in r.body, r.body
    assert "mb_umod_len" in sp.rendered("metal").body           # not specialised: the helper
    from metalbench import msl_check
    assert msl_check.check(r, warnings=True) == []


def test_only_divisor_lengths_are_bound():
    @mb.kernel
    def k(x, bias, out: mb.Out):
        i = thread_position_in_grid.x
        if i < x.size:                       # a bounds check: not a divisor, never compiled in
            out[i] = bias[i % bias.shape[0]]
    x, bias = np.zeros(64, np.float32), np.zeros(8, np.float32)
    sp = k.specialize(x, bias)
    assert divisor_lengths(sp.ir) == (("bias", 0),)
    body = sp.rendered("cuda", True, (64, 1, 1), ((("bias", 0), 8),)).body
    assert "x_shape[0]" in body and "i % 8u" in body, body


def test_bind_lengths_folds_products_with_wrap_and_leaves_the_input_alone():
    i = ir.ThreadAttr("thread_index_in_threadgroup", T.uint32)
    size = ir.Cast(T.uint32, ir.BinOp("*", ir.ShapeOf("b", 0, T.int32), ir.ShapeOf("b", 1, T.int32), T.int32))
    k = ir.KernelIR("k", [ir.Param("b", "buffer", T.float32, ndim=2),
                          ir.Param("o", "buffer", T.uint32, is_output=True)],
                    [ir.Store("o", i, ir.BinOp("%", i, size, T.uint32))])
    assert divisor_lengths(k) == (("b", 0), ("b", 1))
    k2 = bind_lengths(k, {("b", 0): 65536, ("b", 1): 65537})
    c = k2.body[0].value.b
    assert isinstance(c, ir.Const) and c.value == (65536 * 65537) % 2 ** 32, ir.dump(c)
    assert isinstance(k.body[0].value.b, ir.Cast)                 # the original is unchanged
    assert bind_lengths(k, {("b", 0): 0, ("b", 1): 0}) is k       # zero lengths: nothing bound


def test_gpu_launches_compile_each_length_once_and_stop_at_the_cap(monkeypatch):
    simcuda.install(monkeypatch)
    monkeypatch.setattr(protocol, "MAX_LENGTH_VARIANTS", 3)

    @mb.kernel
    def k(x, bias, out: mb.Out):
        i = thread_position_in_grid.x
        out[i] = x[i] * bias[i % bias.size]
    x = np.arange(256, dtype=np.float32)
    bodies = []
    for cols in (4, 7, 4, 16, 5, 6, 7):
        bias = np.arange(1, cols + 1, dtype=np.float32)
        out = np.asarray(k(x, bias, grid=256, threadgroup=64, backend="cuda"))
        np.testing.assert_array_equal(out, x * bias[np.arange(256) % cols])
        sp = k.specialize(x, bias)
        plan = [v for key, v in sp.artifacts.items() if key[0] == "plan" and key[-1] ==
                sp.lengths({"bias": bias}, [], "cuda")][0]
        bodies.append(sp.rendered("cuda", True, (64, 1, 1), sp.lengths({"bias": bias}, [], "cuda")).body)
        assert plan is not None
    assert "i % 4u" in bodies[0] and "i % 7u" in bodies[1] and "i % 16u" in bodies[3]
    assert bodies[2] == bodies[0]
    # three sets of lengths compiled in; later new ones share the kernel that tests at run time
    assert "mb_umod_len" in bodies[4] and "mb_umod_len" in bodies[5] and "i % 7u" in bodies[6]
    printed = {sp.artifacts[key].name for key in sp.artifacts if key[:2] == ("rendered", "cuda")}
    assert len(printed) == 4, printed                   # 4, 7, 16 and the run-time test


def test_a_launch_without_the_arrays_at_hand_is_not_specialised():
    x, bias = np.zeros(64, np.float32), np.zeros(8, np.float32)
    sp = bias_add.specialize(x, bias)
    assert sp.lengths({}, [], "cuda") == ()
    assert sp.lengths({"bias": bias}, [], "sim") == ()
    assert sp.lengths({"bias": bias.astype(np.complex64)}, [], "cuda") == ()   # converted at launch


# ----------------------------------------------------------------------------- 64-bit row indices

@mb.kernel
def row_scale(x, out: mb.Out, NC: mb.constexpr = 64):
    row = thread_position_in_grid.x
    base = row * NC
    for j in range(NC):
        out[base + j] = x[base + j] * 2.0 + j


@needs_gxx
@pytest.mark.parametrize("nc, widened", [(64, True), (4096, True), (100, False), (96, False)])
def test_row_indices_widen_only_where_the_sum_cannot_wrap(nc, widened):
    rows = 8
    x = np.random.default_rng(nc).standard_normal((rows, nc)).astype(np.float32)
    b = row_scale.bind(x, NC=nc, grid=rows, threadgroup=rows, backend="sim")
    r = row_scale.specialization(b).rendered("cuda", True, (rows, 1, 1))
    assert ("x[static_cast<uint64_t>(base) + j]" in r.body) is widened, r.body
    assert ("out[static_cast<uint64_t>(base) + j]" in r.body) is widened, r.body
    want = x * 2 + np.arange(nc, dtype=np.float32)
    got = cuda_host.run(r, {"x": x}, {"out": (rows, nc)}, (rows, 1, 1), (rows, 1, 1))["out"]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.asarray(row_scale(x, NC=nc, grid=rows, threadgroup=rows, backend="sim")), want)
    # the MSL keeps MSL's 32-bit index (Apple GPUs address with it; the twin does too)
    assert "static_cast<uint64_t>" not in row_scale.specialization(b).rendered("metal").body


def test_threadgroup_array_indices_stay_32_bit():
    from metalbench.dsl import threadgroup_array, threadgroup_barrier, float32, thread_position_in_threadgroup

    @mb.kernel
    def k(x, out: mb.Out, NC: mb.constexpr = 64):
        t = threadgroup_array(64, float32)
        tx = thread_position_in_threadgroup.x
        t[tx] = x[thread_position_in_grid.x]
        threadgroup_barrier()
        acc = 0.0
        for j in range(NC - tx):
            acc += t[tx + j]
        out[thread_position_in_grid.x] = acc
    x = np.arange(64, dtype=np.float32)
    body = k.specialize(x).rendered("cuda", True, (64, 1, 1)).body
    assert "static_cast<uint64_t>" not in body, body


def test_ranges_of_wrapping_products_keep_their_low_zero_bits():
    row = ir.Swizzle(ir.ThreadAttr("threadgroup_position_in_grid", T.uint3), "x", T.uint32)
    r = Ranges([])
    mul = lambda c: ir.BinOp("*", row, ir.Const(c, T.uint32), T.uint32)          # noqa: E731
    assert r.of(mul(4096)) == (0, 2 ** 32 - 4096)
    assert r.of(mul(1000)) == (0, 2 ** 32 - 8)           # 1000 = 8 * 125
    assert r.of(mul(7)) == (0, 2 ** 32 - 1)
    assert r.of(ir.BinOp("<<", row, ir.Const(5, T.uint32), T.uint32)) == (0, 2 ** 32 - 32)
    signed = ir.BinOp("*", ir.Cast(T.int32, row), ir.Const(4096, T.int32), T.int32)
    assert r.of(signed) == (-2 ** 31, 2 ** 31 - 1)       # a signed product that wraps: anything
    # every value row * 4096 (mod 2**32) takes is a multiple of 4096, so the bound is tight
    vals = (np.arange(0, 2 ** 20, 37, dtype=np.uint64) * 4096) % 2 ** 32
    assert vals.max() <= 2 ** 32 - 4096


@pytest.mark.gpu
@pytest.mark.parametrize("cols", [1, 3, 64, 100, 4096, 4095])
def test_length_specialised_and_widened_kernels_on_cuda_match_numpy(cols):
    """On the GPU: the launch compiles ``bias.size`` in (one kernel per length), the rows
    index in 64 bits; both agree with NumPy (x * 2 is exact: an FMA changes nothing)."""
    rng = np.random.default_rng(cols)
    n = 1 << 16
    x, bias = rng.standard_normal(n).astype(np.float32), rng.standard_normal(cols).astype(np.float32)
    i = np.arange(n)
    got = np.asarray(bias_add(x, bias, grid=n, threadgroup=256, backend="cuda"))
    np.testing.assert_array_equal(got, x + bias[i % cols] + (i // cols).astype(np.float32))
    rows = 64
    xs = rng.standard_normal((rows, 4096)).astype(np.float32)
    got = np.asarray(row_scale(xs, NC=4096, grid=rows, threadgroup=32, backend="cuda"))
    np.testing.assert_array_equal(got, xs * 2 + np.arange(4096, dtype=np.float32))


_MSL_ROWS = """
uint elem = thread_position_in_grid.x;
int C = x_shape[1];
uint row = elem / C;
uint col = elem % C;
out[elem] = x[elem] * 2.0f + float(row) + float(col) * 0.5f;
"""


@needs_gxx
@pytest.mark.parametrize("cols", [1, 64, 100])
def test_msl_shape_variables_divided_by_are_compiled_in(cols):
    """An MSL body's ``int C = x_shape[1]; elem / C``: the length reaches the division
    through a variable; the launch compiles ``C`` in (so nvcc folds the division helper
    into a shift or multiply-high) and the printed CUDA computes what the simulator does."""
    import mlx.core as mx
    rows = 8
    x = np.random.default_rng(cols).standard_normal((rows, cols)).astype(np.float32)
    k = mb.metal_kernel("rows_msl", ["x"], ["out"], _MSL_ROWS)
    b = k.bind(inputs=[mx.array(x)], output_shapes=[(rows * cols,)], output_dtypes=[mx.float32],
               grid=(rows * cols, 1, 1), threadgroup=(cols if cols > 1 else 8, 1, 1), backend="sim")
    sp = k.specialization(b)
    assert sp.lengths(b.values, b.outputs, "cuda") == ((("x", 1), cols),)
    r = sp.launch_rendered(b, "cuda")
    assert "x_shape[1]" not in r.body and f"C = {cols};" in r.body, r.body
    assert "x_shape[1]" in sp.rendered("cuda", True, b.threadgroup).body       # not specialised
    i = np.arange(rows * cols)
    want = x.reshape(-1) * 2 + (i // cols).astype(np.float32) + (i % cols).astype(np.float32) * 0.5
    np.testing.assert_array_equal(np.asarray(k.launch(b)[0]), want)
    got = cuda_host.run(r, {"x": x}, {"out": (rows * cols,)}, b.grid, b.threadgroup)["out"]
    np.testing.assert_array_equal(got, want)
