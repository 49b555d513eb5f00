"""The kernel debugger (issue 16): print in kernels, per-thread traces, access maps and
launch coverage, on DSL kernels, metal_kernel bodies and cuda.jit kernels."""
import contextlib
import io
import re
import warnings

import numpy as np
import pytest

import metalbench as mb
from metalbench import cuda
from metalbench.dsl import (float32, thread_position_in_grid, thread_position_in_threadgroup, threadgroup_array,
                            threadgroup_barrier)

RNG = np.random.default_rng(16)


def captured(fn, *args, **kwargs) -> list[str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn(*args, **kwargs)
    return buf.getvalue().splitlines()


@mb.kernel
def show(x, out: mb.Out):
    i = thread_position_in_grid.x
    print(i, x[i])
    out[i] = x[i] * 2


# ----------------------------------------------------------------------------- print

def test_print_threads_gives_exactly_the_selected_threads_lines():
    x = RNG.standard_normal(256).astype(np.float32)
    lines = captured(show, x, grid=256, threadgroup=64, backend="sim", print_threads=[0, 5, (200,), 77])
    assert lines == [f"[thread {i}] {i} {x[i]}" for i in (0, 5, 77, 200)]


def test_print_of_a_4096_thread_launch_is_bounded():
    x = np.arange(4096, dtype=np.float32)
    lines = captured(show, x, grid=4096, threadgroup=256, backend="sim")
    assert 10 <= len(lines) <= 100
    assert lines[:3] == ["[thread 0] 0 0.0", "[thread 1] 1 1.0", "[thread 2] 2 2.0"]
    assert "more" in lines[-1] and "print_threads" in lines[-1]


def test_print_in_thread_order_with_position_tuples_on_a_2d_grid():
    @mb.kernel
    def p2(x, out: mb.Out):
        c = thread_position_in_grid.x
        r = thread_position_in_grid.y
        if (r + c) % 3 == 0:
            print(f"v={x[r, c]:.2f}", "%d/%d" % (r, c))
        out[r, c] = x[r, c]
    x = RNG.standard_normal((6, 5)).astype(np.float32)
    lines = captured(p2, x, grid=(5, 6), threadgroup=(4, 4), backend="sim", print_threads=[(3, 0), (1, 2), (2, 1)])
    # (3, 0): 3 % 3 == 0 prints; (1, 2) prints; (2, 1) prints -- thread order is linear (x fastest)
    assert lines == [f"[thread (3, 0)] v={x[0, 3]:.2f} 0/3", f"[thread (2, 1)] v={x[1, 2]:.2f} 1/2",
                     f"[thread (1, 2)] v={x[2, 1]:.2f} 2/1"]


def test_print_formats_values_as_python_does():
    @mb.kernel
    def fmt(x, n: int, out: mb.Out):
        i = thread_position_in_grid.x
        print("{:>6.3f}|{}".format(x[i], n), f"{i:03d}", i < 2, sep=";", end="!\n")
        out[i] = x[i]
    x = np.array([1.5, -0.25, 3.0], np.float32)
    lines = captured(fmt, x, 7, grid=3, threadgroup=4, backend="sim", print_threads=[0, 1, 2])
    assert lines == [f"[thread {i}] {x[i]:>6.3f}|7;{i:03d};{i < 2}!" for i in range(3)]


def test_print_is_captured_even_when_the_launch_fails():
    @mb.kernel
    def bad(x, out: mb.Out):
        i = thread_position_in_grid.x
        print("before", i)
        out[i] = x[i + 1]
    with pytest.raises(mb.KernelCheckError):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            bad(np.zeros(8, np.float32), grid=8, threadgroup=8, backend="sim", checked=True, print_threads=[7])
    assert buf.getvalue().splitlines() == ["[thread 7] before 7"]


def test_print_threads_outside_the_grid_select_nothing():
    x = np.arange(8, dtype=np.float32)
    lines = captured(show, x, grid=8, threadgroup=8, backend="sim", print_threads=[8, (3, 1), 2, (5,)])
    assert lines == ["[thread 2] 2 2.0", "[thread 5] 5 5.0"]


def test_print_with_a_bad_format_points_at_the_line():
    @mb.kernel
    def badfmt(x, out: mb.Out):
        i = thread_position_in_grid.x
        print(f"{x[i]:d}")
        out[i] = x[i]
    with pytest.raises(mb.KernelSyntaxError) as e:
        badfmt(np.zeros(4, np.float32), grid=4, backend="sim")
    assert 'print(f"{x[i]:d}")' in str(e.value)


def test_msl_printf_and_os_log_print_on_the_simulator():
    k = mb.metal_kernel("logk", ["x"], ["y"], """
uint i = thread_position_in_grid.x;
os_log_default.log("x=%.2f at %u", x[i], i);
metal::os_log_default.log_info("%{public}d", int(i) - 3);
printf("hex %x\\n", i + 250);
logger.log_debug("dbg");
y[i] = x[i];
""", header='constant metal::os_log logger("mb", "debug");')
    x = np.arange(8, dtype=np.float32) * 1.5
    lines = captured(k, inputs=[x], grid=(8, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(8,)],
                     output_dtypes=[np.float32], backend="sim", print_threads=[1, 6])
    assert lines == ["[thread 1] x=1.50 at 1", "[thread 1] -2", "[thread 1] hex fb", "[thread 1] dbg",
                     "[thread 6] x=9.00 at 6", "[thread 6] 3", "[thread 6] hex 100", "[thread 6] dbg"]


def test_string_literals_print_through_percent_s_in_both_front_ends():
    @mb.kernel
    def tagged(x, out: mb.Out):
        i = thread_position_in_grid.x
        print("%-4s|%d|%s" % ("ok", i, "100%"), "{}:{:>3}".format("a", "b"))
        out[i] = x[i]
    x = np.zeros(4, np.float32)
    assert captured(tagged, x, grid=4, backend="sim", print_threads=[2]) == ["[thread 2] ok  |2|100% a:  b"]
    cu = [ln for ln in tagged.source(x, backend="cuda").splitlines() if "printf" in ln]
    assert len(cu) == 1 and '"[thread (%u, %u, %u)] ok  |%lld|100%% a:  b\\n"' in cu[0]
    k = mb.metal_kernel("named", ["x"], ["y"], """
uint i = thread_position_in_grid.x;
printf("%s=%5s|%u\\n", "name", "ab", i);
os_log_default.log("%{public}s", "done");
y[i] = x[i];
""")
    lines = captured(k, inputs=[x], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
                     output_dtypes=[np.float32], backend="sim", print_threads=[3])
    assert lines == ["[thread 3] name=   ab|3", "[thread 3] done"]
    bad = mb.metal_kernel("bad", ["x"], ["y"], 'uint i = thread_position_in_grid.x; printf("%d", "no"); y[i] = x[i];')
    with pytest.raises(mb.MetalbenchError, match="prints with %s"):
        bad(inputs=[x], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)], output_dtypes=[np.float32],
            backend="sim")


def test_prints_are_compiled_out_on_metal_and_printf_on_cuda():
    x = np.zeros(4, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        msl = show.source(x, backend="metal")
    assert "print" in msl and "compiled out" in msl and "printf" not in msl
    cu = show.source(x, backend="cuda")
    assert re.search(r'printf\("\[thread \(%u, %u, %u\)\] %llu %g\\n", thread_position_in_grid\.x', cu)


def test_msl_with_prints_is_not_sent_verbatim_to_metal():
    k = mb.metal_kernel("lg", ["x"], ["y"], 'uint i = thread_position_in_grid.x; printf("%d", i); y[i] = x[i];')
    b = k.bind(np.zeros(4, np.float32), grid=4, output_shapes=[(4,)], output_dtypes=[np.float32], backend="sim")
    sp = k.specialization(b)
    assert sp.verbatim is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert "printf" not in sp.rendered("metal").body


def test_numba_print_goes_to_stdout_untagged_in_thread_order():
    @cuda.jit
    def cuhello():
        i = cuda.grid(1)
        print(i, 999)
        print(-42)

    @cuda.jit
    def printdim3():
        print(cuda.threadIdx)

    @cuda.jit
    def printmix(x):
        print(True, x == 0, "hop!", 34.75)

    lines = captured(cuhello.configure(backend="sim")[2, 3])
    assert sorted(lines) == ["-42"] * 6 + [f"{i} 999" for i in range(6)]
    assert lines[:2] == ["0 999", "-42"]
    lines = captured(printdim3.configure(backend="sim")[1, (2, 2, 2)])
    assert sorted(lines) == sorted(str(i) for i in np.ndindex(2, 2, 2))
    assert captured(printmix.configure(backend="sim")[1, 1], 0) == ["True True hop! 34.75"]


def test_vjp_of_a_printing_kernel_does_not_print():
    @mb.kernel
    def sq(x, out: mb.Out):
        i = thread_position_in_grid.x
        v = x[i] * x[i]
        print(v)
        out[i] = v
    x = np.arange(4, dtype=np.float32)
    got = []
    lines = captured(lambda: got.append(sq.vjp(x, cotangents=np.ones(4, np.float32), grid=4, backend="sim")))
    assert lines == []
    np.testing.assert_allclose(got[0][0], 2 * x)


# ----------------------------------------------------------------------------- trace

@mb.kernel
def running_sum(x, out: mb.Out):
    i = thread_position_in_grid.x
    acc = 0.0
    for j in range(5):
        acc += x[i] * j
    out[i] = acc


def test_trace_of_one_thread_through_a_loop_lists_the_accumulator_in_order():
    x = RNG.standard_normal(64).astype(np.float32)
    tr = running_sum.trace(x, thread=5, grid=64, threadgroup=32)
    expected, acc = [np.float32(0)], np.float32(0)
    for j in range(5):
        acc = np.float32(acc + x[5] * np.float32(j))
        expected.append(acc)
    assert tr.values("acc") == expected
    assert [r.value for r in tr.rows if r.name == "j"] == list(range(5))
    assert [r.line for r in tr.rows if r.name == "acc"] == [running_sum.parsed().source.first_line + k
                                                            for k in (3, 5, 5, 5, 5, 5)]
    assert tr.rows[-1].name == "out[5]" and tr.rows[-1].value == expected[-1]
    assert all(r.thread == (5, 0, 0) for r in tr.rows)
    assert "<table" in tr._repr_html_()


def test_trace_takes_a_position_tuple_and_follows_divergent_branches():
    @mb.kernel
    def branchy(x, out: mb.Out):
        c = thread_position_in_grid.x
        r = thread_position_in_grid.y
        v = x[r, c]
        if v > 0:
            v = v * 2
        else:
            v = -v
        out[r, c] = v
    x = RNG.standard_normal((4, 8)).astype(np.float32)
    for (c, r) in [(3, 2), (0, 1), (7, 3)]:
        tr = branchy.trace(x, thread=(c, r), grid=(8, 4), threadgroup=(4, 2))
        v = x[r, c]
        want = [v, v * 2 if v > 0 else -v]
        assert tr.values("v") == want
        assert tr.rows[-1].name == f"out[{r * 8 + c}]"


def test_trace_of_a_threadgroup_is_a_table_of_threads_by_steps():
    x = np.arange(16, dtype=np.float32)
    tr = running_sum.trace(x, group=1, grid=16, threadgroup=4)
    t = tr.table
    assert t.threads == [(i, 0, 0) for i in range(4, 8)]
    assert t.values.shape[0] == 4 and len(t.steps) == t.values.shape[1]
    last = [row[-1] for row in t.values]
    assert last == [np.float32(10 * x[i]) for i in range(4, 8)]
    assert "<table" in tr._repr_html_()


def test_trace_of_a_loop_over_an_array_records_the_values_not_the_hidden_index():
    @mb.kernel
    def total(x, out: mb.Out):
        i = thread_position_in_grid.x
        s = 0.0
        for v in x:
            s += v
        out[i] = s
    x = RNG.standard_normal(5).astype(np.float32)
    tr = total.trace(x, thread=(3,), grid=5, threadgroup=5)
    assert {r.name for r in tr.rows} == {"i", "s", "v", "out[3]"}
    assert tr.values("v") == list(x)
    assert tr.values("s") == [np.float32(0)] + list(np.cumsum(x, dtype=np.float32))


def test_trace_prints_as_a_text_table():
    x = np.arange(16, dtype=np.float32)
    tr = running_sum.trace(x, thread=6, grid=16, threadgroup=4)
    lines = str(tr).splitlines()
    assert lines[0] == repr(tr) == f"<Trace of 'running_sum', thread (6, 0, 0): {len(tr.rows)} records>"
    assert lines[1].split() == ["step", "line", "name", "value", "source"]
    assert lines[-1].split()[2:5] == ["out[6]", str(np.float32(60.0)), "out[i]"]
    tg = running_sum.trace(x, group=1, grid=16, threadgroup=4)
    assert repr(tg).startswith("<Trace of 'running_sum', 4 threads:")
    text = repr(tg.table).splitlines()
    assert text[0].split()[:3] == ["thread", "i@" + str(tr.rows[0].line), "acc@" + str(tr.rows[1].line)]
    assert [ln.split(")")[0] + ")" for ln in text[1:]] == [str((i, 0, 0)) for i in range(4, 8)]


def test_trace_works_for_metal_kernel_and_cuda_jit():
    k = mb.metal_kernel("acc", ["x"], ["y"], """
uint i = thread_position_in_grid.x;
float acc = 0.0f;
for (int j = 0; j < 3; ++j) {
    acc += x[i];
}
y[i] = acc;
""")
    x = np.arange(8, dtype=np.float32)
    tr = k.trace(x, thread=3, grid=8, threadgroup=4, output_shapes=[(8,)], output_dtypes=[np.float32])
    assert tr.values("acc") == [0, 3, 6, 9]
    assert [r.line for r in tr.rows if r.name == "acc"] == [3, 5, 5, 5]

    @cuda.jit
    def inc(a):
        i = cuda.grid(1)
        if i < a.size:
            v = a[i] + 1
            a[i] = v
    tr = inc.trace(x, thread=6, grid=8, threadgroup=4)
    assert tr.values("v") == [7] and tr.rows[-1].name == "a[6]"
    assert x[6] == 6        # the trace ran on a copy, as MLX-style cuda.jit calls do
    # Numba's spelling, kernel[blocks, threads]
    tr = inc[2, 4].trace(x, thread=6)
    assert tr.values("v") == [7] and x[6] == 6
    am = inc[2, 4].access_map(x)
    assert am.reads["a"].tolist() == [1] * 8 and am.writes["a"].tolist() == [1] * 8


def test_trace_thread_outside_the_grid_is_an_error():
    with pytest.raises(mb.KernelLaunchError, match="outside the grid"):
        running_sum.trace(np.zeros(8, np.float32), thread=8, grid=8, threadgroup=8)


# ----------------------------------------------------------------------------- access maps

@mb.kernel
def stencil3(x, out: mb.Out):
    i = thread_position_in_grid.x
    if i > 0 and i < x.size - 1:
        out[i] = x[i - 1] + x[i] + x[i + 1]


def test_three_point_stencil_read_and_write_counts():
    n = 37
    am = stencil3.access_map(np.zeros(n, np.float32), grid=n, threadgroup=8, init_value=0)
    assert am.reads["x"].tolist() == [1, 2] + [3] * (n - 4) + [2, 1]
    assert am.writes["out"].tolist() == [0] + [1] * (n - 2) + [0]
    assert am.writes["x"].sum() == 0 and am.reads["out"].sum() == 0
    g = am.groups["x"]
    assert g[0] == 0 and g[8] == -2 and g[12] == 1 and g[n - 1] == n // 8


def test_access_maps_are_shaped_like_the_buffers_and_match_a_numpy_model():
    @mb.kernel
    def gather(x, idx, out: mb.Out(shape="idx")):
        r = thread_position_in_grid.y
        c = thread_position_in_grid.x
        out[r, c] = x[idx[r, c] // 7, idx[r, c] % 7]
    x = RNG.standard_normal((5, 7)).astype(np.float32)
    idx = RNG.integers(0, 35, (6, 9)).astype(np.int32)
    am = gather.access_map(x, idx, grid=(9, 6), threadgroup=(4, 4))
    want = np.bincount(idx.reshape(-1), minlength=35).reshape(5, 7)
    np.testing.assert_array_equal(am.reads["x"], want)
    assert am.reads["idx"].shape == (6, 9) and (am.reads["idx"] == 2).all()
    np.testing.assert_array_equal(am.writes["out"], np.ones((6, 9), int))


def test_transposed_read_is_uncoalesced_and_the_row_read_is_not():
    @mb.kernel
    def transpose(a, out: mb.Out(shape=lambda a: (a.shape[1], a.shape[0]))):
        c = thread_position_in_grid.x
        r = thread_position_in_grid.y
        out[r, c] = a[c, r]
    am = transpose.access_map(np.zeros((64, 96), np.float32), grid=(64, 96), threadgroup=(32, 4))
    bad = am.uncoalesced()
    assert [(s.buffer, s.access) for s in bad] == [("a", "read")]
    read = bad[0]
    assert read.requests == 64 * 96 // 32 and read.transactions == 32 * read.requests
    write = next(s for s in am.lines if s.buffer == "out")
    assert write.coalesced and write.coalescing == 1.0


def test_threadgroup_array_with_stride_32_has_bank_conflicts():
    @mb.kernel
    def strided(x, out: mb.Out, stride: mb.constexpr = 32):
        t = threadgroup_array(1024, float32)
        i = thread_position_in_threadgroup.x
        t[i] = x[i]
        threadgroup_barrier()
        out[i] = t[(i * stride) % 1024]
    x = np.arange(64, dtype=np.float32)
    am = strided.access_map(x, grid=64, threadgroup=64)
    by = {(s.buffer, s.access): s for s in am.lines if s.space == "threadgroup"}
    assert by[("t", "write")].conflicts == 0
    assert by[("t", "read")].max_ways == 32 and by[("t", "read")].conflicts == 2 * 31
    assert [s.access for s in am.bank_conflicts()] == ["read"]
    am1 = strided.access_map(x, 1, grid=64, threadgroup=64)
    assert not am1.bank_conflicts()
    assert am.reads["t"].sum() == 64 and am.writes["t"].tolist()[:64] == [1] * 64


def test_access_map_keeps_counts_and_the_finding_of_a_racy_kernel():
    @mb.kernel
    def racy(x, out: mb.Out):
        t = threadgroup_array(32, float32)
        i = thread_position_in_threadgroup.x
        t[i] = x[i]
        out[i] = t[(i + 1) % 32]
    am = racy.access_map(np.zeros(32, np.float32), grid=32, threadgroup=32)
    assert am.error is not None and {f.kind for f in am.findings} >= {"data race"}
    assert am.reads["x"].tolist() == [1] * 32 and "access map" in am._repr_html_()


# ----------------------------------------------------------------------------- coverage

@mb.kernel
def twice(x, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = 2 * x[i]


def _coverage_warnings(fn, *args, **kwargs):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn(*args, **kwargs)
    return [x for x in w if issubclass(x.category, mb.CoverageWarning)]


def test_grid_passed_in_threadgroups_warns_with_the_likely_cause():
    x = np.zeros(4096, np.float32)
    w = _coverage_warnings(twice, x, grid=4096 // 256, threadgroup=256, backend="sim")
    assert len(w) == 1 and issubclass(mb.CoverageWarning, UserWarning)
    msg = str(w[0].message)
    assert "wrote 16 of the 4096 elements of output 'out'" in msg
    assert "`grid` counts threads, not threadgroups" in msg and "grid=(4096, 1, 1)" in msg
    assert w[0].filename == __file__


def test_correct_and_init_value_launches_do_not_warn():
    x = np.zeros(4096, np.float32)
    assert _coverage_warnings(twice, x, grid=4096, threadgroup=256, backend="sim") == []
    assert _coverage_warnings(twice, x, grid=16, threadgroup=256, backend="sim", init_value=0) == []
    assert _coverage_warnings(twice, x, grid=4096, threadgroup=100, backend="sim") == []
    k = mb.metal_kernel("t", ["x"], ["y"], "uint i = thread_position_in_grid.x; y[i] = x[i];")
    kw = dict(output_shapes=[(64,)], output_dtypes=[np.float32], backend="sim")
    assert _coverage_warnings(k, inputs=[x[:64]], grid=(64, 1, 1), threadgroup=(32, 1, 1), **kw) == []
    w = _coverage_warnings(k, inputs=[x[:64]], grid=(2, 1, 1), threadgroup=(32, 1, 1), **kw)
    assert len(w) == 1 and "wrote 2 of the 64" in str(w[0].message)


def test_a_launch_too_small_for_its_output_names_both_likely_causes():
    # one thread per row of a (8, 5) output whose shape defaulted to the input's: neither
    # grid * threadgroup covers it nor is the fix "grid=(40, 1, 1)"
    @mb.kernel
    def rowsum(m, out: mb.Out):
        r = thread_position_in_grid.x
        s = 0.0
        for k in range(m.shape[1]):
            s += m[r, k]
        out[r] = s
    m = RNG.random((8, 5)).astype(np.float32)
    w = _coverage_warnings(rowsum, m, grid=8, threadgroup=4, backend="sim")
    msg = str(w[0].message)
    assert "wrote 8 of the 40 elements" in msg and "ran 8 threads" in msg and "for 40 elements" in msg
    assert "mb.Out(shape=" in msg and "grid=(40, 1, 1)" not in msg
    # a 2-D grid given in threadgroups: the suggestion is grid * threadgroup
    w = _coverage_warnings(twice2d, np.zeros((100, 60), np.float32), grid=(4, 7), threadgroup=(16, 16),
                           backend="sim")
    msg = str(w[0].message)
    assert "wrote 28 of the 6000" in msg and "threads, not threadgroups" in msg and "grid=(64, 112, 1)" in msg
    assert _coverage_warnings(twice2d, np.zeros((100, 60), np.float32), grid=(64, 112), threadgroup=(16, 16),
                              backend="sim") == []


@mb.kernel
def twice2d(a, out: mb.Out):
    c = thread_position_in_grid.x
    r = thread_position_in_grid.y
    if r < a.shape[0] and c < a.shape[1]:
        out[r, c] = 2 * a[r, c]


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.bool_, np.float16, np.float32])
def test_coverage_is_exact_when_the_kernel_writes_the_poison_value(dtype):
    poison = {np.uint8: 0xCD, np.int16: -0x3233, np.int32: -0x32323233, np.bool_: True,
              np.float16: np.nan, np.float32: np.nan}[dtype]

    @mb.kernel
    def scatter(src, perm, out: mb.Out):
        i = thread_position_in_grid.x
        if i % 3 != 1:
            out[perm[i]] = src[i]
    n = 300
    src = np.full(n, poison, dtype)
    perm = RNG.permutation(n).astype(np.int32)
    w = _coverage_warnings(scatter, src, perm, grid=n, threadgroup=64, backend="sim")
    written = sum(1 for i in range(n) if i % 3 != 1)
    assert len(w) == 1 and f"wrote {written} of the {n}" in str(w[0].message)

    @mb.kernel
    def copy_all(src, perm, out: mb.Out):
        i = thread_position_in_grid.x
        out[perm[i]] = src[i]
    assert _coverage_warnings(copy_all, src, perm, grid=n, threadgroup=64, backend="sim") == []


@pytest.mark.parametrize("seed", range(4))
def test_coverage_counts_scattered_and_contiguous_writes_exactly(seed):
    # contiguous stores (ranges) and scattered ones (the scan) into the same output
    @mb.kernel
    def scatter(x, idx, m, out: mb.Out(shape=lambda x, **_: (2 * x.size,), dtype=mb.float32)):
        i = thread_position_in_grid.x
        out[i] = x[i]                   # the first half, contiguous
        if m[i] != 0:
            out[idx[i]] = x[i] + 1.0    # anywhere
    rng = np.random.default_rng(seed)
    n = 1024
    x = rng.standard_normal(n).astype(np.float32)
    idx = rng.integers(0, 2 * n, n).astype(np.int32)
    m = (rng.random(n) < rng.random()).astype(np.int32)
    written = set(range(n)) | set(idx[m != 0].tolist())
    w = _coverage_warnings(scatter, x, idx, m, grid=n, threadgroup=128, backend="sim")
    n *= 2
    if len(written) == n:
        assert w == []
    else:
        assert len(w) == 1 and f"wrote {len(written)} of the {n} elements" in str(w[0].message)


def test_coverage_of_outputs_written_through_device_functions_and_atomics():
    @mb.func
    def put(out, i, v):
        out[i] = v

    @mb.kernel
    def via_func(x, out: mb.Out):
        i = thread_position_in_grid.x
        if i < 10:
            put(out, i, x[i])
    w = _coverage_warnings(via_func, np.zeros(40, np.float32), grid=40, threadgroup=8, backend="sim")
    assert len(w) == 1 and "wrote 10 of the 40" in str(w[0].message)


def test_cuda_jit_in_place_launches_have_no_coverage_check():
    @cuda.jit
    def half(a):
        i = cuda.grid(1)
        if i < a.size // 2:
            a[i] = 0
    x = np.ones(64, np.float32)
    assert _coverage_warnings(half.configure(backend="sim")[2, 32], x) == []
