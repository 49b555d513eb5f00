"""Reads outside an input give 0 in the printed CUDA of MSL kernels (codegen/cuda_guard.py).

MLX's documented grid_sample reads past ``x`` before masking the value; on the H200 that
read killed the CUDA context. The CUDA printer guards the input reads of MSL kernels
whose index depends on data or may be negative (passes/data_dependence.py): the extent
comes from MLX's ``x_shape``/``x_strides``, the read is predicated on it.

Checked here: which reads are guarded (gathers, grid_sample's neighbours, stencils
reaching below 0, binary searches; not thread-indexed reads, outputs, DSL/Numba kernels
unless asked), the helpers' arithmetic compiled with g++ against NumPy's idea of the
addressable elements (negative and zero strides, empty arrays, negative and huge
indices), whole printed kernels run on the host with g++ and AddressSanitizer (an
out-of-range gather gives 0, and an unguarded one is caught), the guarded kernels
compile with NVRTC (when installed), and on a GPU (``-m gpu``) grid_sample at the size
that faulted matches its reference.
"""
from __future__ import annotations

import shutil
import subprocess

import mlx.core as mx
import numpy as np
import pytest

import cuda_host
import metalbench as mb
import nvrtc
from metalbench import ir
from metalbench import types as T
from metalbench.codegen import cuda, cuda_guard
from metalbench.dsl import thread_position_in_grid
from test_metal_kernel import GRID_SAMPLE, grid_sample_ref

NV = nvrtc.find()

OFFSET_READ = """
    uint i = thread_position_in_grid.x;
    out[i] = x[i + 3] + x[i - 2];
"""

GATHER = """
    uint i = thread_position_in_grid.x;
    int j = idx[i];
    out[i] = x[j] + x[i];
"""

BYTE_VIEW_READ = """
    uint i = thread_position_in_grid.x;
    const device uchar* b = (const device uchar*)x;
    out[i] = float(b[i + 1]);
"""

VIEW_GATHER = """
    uint i = thread_position_in_grid.x;
    float4 v = ((const device float4*)x)[idx[i]];
    out[i] = v.x + v.w;
"""

VIEW_READ = """
    uint i = thread_position_in_grid.x;
    float4 v = ((const device float4*)x)[i];
    out[i] = v.x + v.w;
"""


def _msl_spec(source, inputs, out_shape, grid, names=("x",), ensure_row_contiguous=True, header=""):
    k = mb.metal_kernel(name="g", input_names=list(names), output_names=["out"], source=source, header=header,
                        ensure_row_contiguous=ensure_row_contiguous)
    b = k.bind(inputs=inputs, grid=grid, threadgroup=(32, 1, 1), output_shapes=[out_shape],
               output_dtypes=[mx.float32], template=[("T", mx.float32)])
    return k, b, k.specialization(b)


def test_msl_input_reads_are_guarded_outputs_and_dsl_are_not():
    _, _, sp = _msl_spec(OFFSET_READ, [np.zeros(8, np.float32)], (8,), (8, 1, 1))
    assert sp.ir.read_guard == "rows"
    body = sp.rendered("cuda").body
    # x[i + 3] is launch-determined and non-negative: plain; x[i - 2] wraps below 0: guarded,
    # a 32-bit compare against the last element
    assert "x[i + 3u] + mb_gload32(x, i - 2u, mb_e32_x, mb_all32_x)" in body
    assert "const unsigned long long mb_n_x = mb_extent_rows(x_shape, 1);" in body
    assert "mb_lo_x" not in body                     # only the 64-bit helpers need the lowest element
    assert "out[i] = " in body                       # writes are plain
    # without ensure_row_contiguous MLX passes the input's own strides: the extent reads them
    _, _, sp = _msl_spec(OFFSET_READ, [np.zeros((4, 6), np.float32)[:, ::2]], (8,), (8, 1, 1),
                         ensure_row_contiguous=False)
    assert sp.ir.read_guard == "strided"
    body = sp.rendered("cuda").body
    assert "mb_extent(x_shape, x_strides, 2, mb_lo_x)" in body and "mb_gload(x, i - 2u, mb_lo_x, mb_n_x)" in body

    @mb.kernel
    def dsl(x, out: mb.Out):
        i = thread_position_in_grid.x
        out[i] = x[i - 1]
    dsp = dsl.specialization(dsl.bind(np.zeros(8, np.float32), grid=(7, 1, 1), threadgroup=(32, 1, 1)))
    assert not dsp.ir.read_guard and "mb_gload" not in dsp.rendered("cuda").body


# representative MSL bodies: (source, inputs, the reads printed plain, the reads guarded)
_ROW = np.zeros((4, 8), np.float32)
_KINDS = {
    # a thread-indexed read, a row read in a loop through a pointer: plain
    "thread_indexed": ("""
        uint i = thread_position_in_grid.x;
        const device float* row = x + i * 8;
        float s = 0.0f;
        for (uint j = 0; j < 8; ++j) { s += row[j]; }
        out[i] = s + x[i] * scale[0];
     """, {"x": _ROW, "scale": np.ones(1, np.float32)}, ["x[row_off + ", "x[i]", "scale[0]"], []),
    # a gather by a loaded index: guarded; the index read itself: plain
    "gather": (GATHER, {"x": np.zeros(8, np.float32), "idx": np.zeros(8, np.int32)},
               ["idx[i]", "x[i]"], ["mb_gload32(x, static_cast<uint32_t>(j), mb_e31_x, false)"]),
    # an index chosen under a condition on data (control dependence): guarded
    "branch": ("""
        uint i = thread_position_in_grid.x;
        uint j = i;
        if (x[i] > 0.0f) { j = i + 1000; }
        out[i] = x[j];
     """, {"x": np.zeros(8, np.float32)}, ["x[i] > 0.0f"], ["mb_gload32(x, j, mb_e32_x, mb_all32_x)"]),
    # a binary search: the loop's bounds move with the data
    "search": ("""
        uint i = thread_position_in_grid.x;
        int lo = 0, hi = 7;
        float v = x[i];
        while (lo < hi) { int mid = (lo + hi) / 2; if (x[mid] < v) lo = mid + 1; else hi = mid; }
        out[i] = x[lo];
     """, {"x": np.zeros(8, np.float32)}, ["x[i]"],
        ["mb_gload32(x, static_cast<uint32_t>(mid), mb_e31_x, false)",
         "mb_gload32(x, static_cast<uint32_t>(lo), mb_e31_x, false)"]),
    # indices staged in threadgroup memory: loaded values are data; thread ids are not
    "threadgroup": ("""
        uint i = thread_position_in_grid.x;
        uint l = thread_position_in_threadgroup.x;
        threadgroup int ids[32];
        threadgroup uint mine[32];
        ids[l] = idx[i];
        mine[l] = i;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[i] = x[ids[l]] + x[mine[l]];
     """, {"x": np.zeros(8, np.float32), "idx": np.zeros(8, np.int32)}, ["x[mine[l]]"],
        ["mb_gload32(x, static_cast<uint32_t>(ids[l]), mb_e31_x, false)"]),
}


@pytest.mark.parametrize("kind", sorted(_KINDS))
def test_which_reads_are_guarded(kind):
    src, ins, plain, guarded = _KINDS[kind]
    names = list(ins)
    _, _, sp = _msl_spec(src, [ins[n] for n in names], (8,), (8, 1, 1), names=names)
    body = sp.rendered("cuda").body
    for p in plain:
        assert p in body, (kind, p, body)
    for g in guarded:
        assert g in body, (kind, g, body)
    assert body.count("mb_gload") == len(guarded), body
    if not guarded:                                  # no extent computed when nothing is guarded
        assert "mb_extent" not in body and "mb_n_" not in body


def test_grid_sample_guards_its_four_neighbours_only():
    ins = [np.zeros((1, 4, 4, 4), np.float32), np.zeros((1, 4, 4, 2), np.float32)]
    _, _, sp = _msl_spec(GRID_SAMPLE, ins, (1, 4, 4, 4), (64, 1, 1), names=("x", "grid"))
    body = sp.rendered("cuda").body
    assert body.count("mb_gload32(x, static_cast<uint32_t>(base_idx + i") == 4
    assert "grid[grid_idx]" in body and "grid[grid_idx + 1u]" in body     # thread-indexed: plain
    assert "mb_n_grid" not in body


def test_environment_switch_overrides_the_kernel(monkeypatch):
    x = ir.Param("x", "buffer", T.float32)
    o = ir.Param("o", "buffer", T.float32, is_output=True)
    five = ir.Load("x", ir.Const(5, T.uint32), T.float32)        # launch-determined
    body = [ir.Store("o", ir.Const(0, T.uint32), ir.Load("x", ir.Cast(T.uint32, five), T.float32))]  # data
    plain = ir.KernelIR("k", [x, o], body)
    msl = ir.KernelIR("k", [x, o], body, read_guard="rows")
    assert cuda.render(msl).body.count("mb_gload") == 1 and "mb_gload" not in cuda.render(plain).body
    monkeypatch.setenv(cuda_guard.GUARD_ENV, "1")          # every read of every kernel
    assert cuda.render(plain).body.count("mb_gload") == 2
    assert cuda.render(msl).body.count("mb_gload") == 2
    monkeypatch.setenv(cuda_guard.GUARD_ENV, "data")       # every kernel, the default scope
    assert cuda.render(plain).body.count("mb_gload") == 1
    monkeypatch.setenv(cuda_guard.GUARD_ENV, "0")
    assert "mb_gload" not in cuda.render(msl).body


def test_views_and_vector_reads_are_guarded_by_the_viewed_input(monkeypatch):
    _, _, sp = _msl_spec(VIEW_READ, [np.zeros(16, np.float32)], (4,), (4, 1, 1))
    assert "mb_vload_g" not in sp.rendered("cuda").body        # thread-indexed: plain by default
    _, _, sp = _msl_spec(VIEW_GATHER, [np.zeros(16, np.float32), np.zeros(4, np.int32)], (4,), (4, 1, 1),
                         names=("x", "idx"))
    body = sp.rendered("cuda").body
    assert "mb_vload_g<float, 4>(x, idx[i] * 4, mb_lo_x, mb_n_x)" in body, body
    monkeypatch.setenv(cuda_guard.GUARD_ENV, "1")
    _, _, sp = _msl_spec(VIEW_READ, [np.zeros(16, np.float32)], (4,), (4, 1, 1))
    body = sp.rendered("cuda").body
    assert "mb_vload_g<float, 4>(x, i * 4u, mb_lo_x, mb_n_x)" in body
    assert "x[" not in body
    _, _, sp = _msl_spec(BYTE_VIEW_READ, [np.zeros(4, np.float32)], (16,), (16, 1, 1))
    body = sp.rendered("cuda").body
    assert "mb_n_x_as_uchar = mb_n_x * sizeof(float) / sizeof(uint8_t)" in body
    assert "mb_gload(x_as_uchar, b_off + static_cast<int64_t>(i + 1u), mb_lo_x_as_uchar, mb_n_x_as_uchar)" in body


# ----------------------------------------------------------------------------- the helpers, run with g++
_DRIVER = r"""
#include <cstdio>
#include <cstdint>
#define __device__
%s
%s
%s
int main() {
    long long shape[4], strides[4]; int nd; long long idx;
    float data[64]; for (int k = 0; k < 64; ++k) data[k] = k + 1;
    while (scanf("%%d", &nd) == 1) {
        for (int d = 0; d < nd; ++d) scanf("%%lld %%lld", &shape[d], &strides[d]);
        scanf("%%lld", &idx);
        long long lo; unsigned long long n = mb_extent(shape, strides, nd, lo);
        // the pointer is the middle of data, so negative offsets stay in the C array
        const float* p = data + 32;
        bool inside = (unsigned long long)(idx - lo) < n;
        float v = inside ? mb_gload(p, idx, lo, n) : mb_gload(p, idx, lo, n);
        // a row-contiguous array of this shape: its element count
        long long cnt = 1; for (int d = 0; d < nd; ++d) cnt *= shape[d];
        if (mb_extent_rows(shape, nd) != (unsigned long long)cnt) { printf("rows wrong\n"); return 1; }
        printf("%%lld %%llu %%g\n", lo, n, v);
    }
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")
def test_extent_and_guarded_read_against_numpy(tmp_path):
    src = tmp_path / "g.cpp"
    src.write_text(_DRIVER % (cuda_guard._EXTENT, cuda_guard._ROWS, cuda_guard._GLOAD))
    exe = tmp_path / "g"
    subprocess.run(["g++", "-std=c++17", "-O1", "-o", str(exe), str(src)], check=True)
    rng = np.random.default_rng(5)
    cases, want = [], []
    for _ in range(300):
        nd = int(rng.integers(1, 4))
        shape = [int(rng.integers(0, 4)) if rng.random() < 0.1 else int(rng.integers(1, 4)) for _ in range(nd)]
        strides = [int(rng.integers(-3, 4)) for _ in range(nd)]
        idx = int(rng.choice([rng.integers(-12, 13), -(1 << 40), (1 << 62), 0]))
        # NumPy's view: every element offset the array addresses
        if 0 in shape:
            offs = set()
        else:
            grid = np.indices(shape).reshape(nd, -1).T
            offs = {int(np.dot(g, strides)) for g in grid}
        lo = min(offs) if offs else 0
        n = (max(offs) - lo + 1) if offs else 0
        inside = lo <= idx < lo + n
        cases.append(f"{nd} " + " ".join(f"{s} {t}" for s, t in zip(shape, strides)) + f" {idx}")
        want.append((lo, n, float(idx + 33) if inside else 0.0))
    out = subprocess.run([str(exe)], input="\n".join(cases), capture_output=True, text=True, check=True).stdout
    got = [tuple(float(v) for v in line.split()) for line in out.splitlines()]
    for c, g, w in zip(cases, got, want):
        assert g == tuple(float(v) for v in w), c


_DRIVER32 = r"""
#include <cstdio>
#include <cstdint>
#define __device__
%s
int main() {
    unsigned long long n; long long i;
    while (scanf("%%llu %%lld", &n, &i) == 2) {
        const unsigned long long mb_n_x = n;
        %s
        %s
        printf("%%d %%d\n", (int)mb_in32(static_cast<uint32_t>(static_cast<int32_t>(i)), mb_e31_x, false),
               (int)mb_in32(static_cast<uint32_t>(i), mb_e32_x, mb_all32_x));
    }
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")
def test_32_bit_bounds_against_python(tmp_path):
    # the bounds as the printer writes them, for an int and a uint index into one input
    src = """
        uint i = thread_position_in_grid.x;
        out[i] = x[idx[i]] + x[uint(idx[i]) + 1u];
    """
    _, _, sp = _msl_spec(src, [np.zeros(8, np.float32), np.zeros(8, np.int32)], (8,), (8, 1, 1), names=("x", "idx"))
    body = sp.rendered("cuda").body
    e31 = next(ln for ln in body.splitlines() if ln.startswith("const uint32_t mb_e31_x"))
    e32 = next(ln for ln in body.splitlines() if ln.startswith("const uint32_t mb_e32_x"))
    (tmp_path / "b.cpp").write_text(_DRIVER32 % (cuda_guard._GLOAD32, e31, e32))
    subprocess.run(["g++", "-std=c++17", "-O1", "-o", str(tmp_path / "b"), str(tmp_path / "b.cpp")], check=True)
    cases = [(n, i) for n in (0, 1, 8, (1 << 31) - 1, 1 << 31, (1 << 31) + 5, (1 << 32) - 1, 1 << 32, 1 << 40)
             for i in (0, 1, 7, 8, n - 1, n, n + 1, (1 << 31) - 1, 1 << 31, (1 << 32) - 1, -1, -(1 << 31))
             if -(1 << 31) <= i < (1 << 32)]
    out = subprocess.run([str(tmp_path / "b")], input="\n".join(f"{n} {i}" for n, i in cases),
                         capture_output=True, text=True, check=True).stdout.split("\n")
    for (n, i), line in zip(cases, out):
        as_int = i - (1 << 32) if i >= (1 << 31) else i         # the int index's value
        as_uint = i % (1 << 32)                                  # the uint index's value
        assert line.split() == [str(int(0 <= as_int < n)), str(int(as_uint < n))], (n, i, line)


# ----------------------------------------------------------------------------- NVRTC
@pytest.mark.skipif(NV is None, reason="NVRTC not installed (tests/nvrtc.py says how)")
@pytest.mark.parametrize("case", ["offset", "gather", "view", "bytes", "strided", "grid_sample", "half", "double"])
def test_guarded_kernels_compile_with_nvrtc(case, monkeypatch):
    src, ins, shape, grid, names, erc = OFFSET_READ, [np.zeros(8, np.float32)], (8,), (8, 1, 1), ("x",), True
    if case in ("view", "bytes"):
        monkeypatch.setenv(cuda_guard.GUARD_ENV, "1")         # thread-indexed: guarded only when asked
    if case == "gather":
        src, ins, names = GATHER, [np.zeros(8, np.float32), np.zeros(8, np.int32)], ("x", "idx")
    elif case == "view":
        src, ins, shape, grid = VIEW_READ, [np.zeros(16, np.float32)], (4,), (4, 1, 1)
    elif case == "bytes":
        src, ins, shape, grid = BYTE_VIEW_READ, [np.zeros(4, np.float32)], (16,), (16, 1, 1)
    elif case == "strided":
        erc, ins = False, [np.zeros((4, 6), np.float32)[:, ::2]]
    elif case == "grid_sample":
        src, names, grid = GRID_SAMPLE, ("x", "grid"), (64, 1, 1)
        ins, shape = [np.zeros((1, 4, 4, 4), np.float32), np.zeros((1, 4, 4, 2), np.float32)], (1, 4, 4, 4)
    elif case == "half":
        ins = [np.zeros(8, np.float16)]
    elif case == "double":
        ins = [np.zeros(8, np.float64)]
    _, _, sp = _msl_spec(src, ins, shape, grid, names, erc)
    for exact in (False, True):
        r = sp.rendered("cuda", exact, (32, 1, 1))
        assert "mb_gload" in r.body or "mb_vload_g" in r.body
        text = cuda.full_source(r, [("T", mx.float32)])
        ok, log = NV.compile(text)
        assert ok, f"{case}: {log}\n{text}"


# ----------------------------------------------------------------------------- on the GPU
@pytest.mark.gpu
def test_grid_sample_at_the_size_that_faulted_matches_on_cuda():
    rng = np.random.default_rng(0)
    B, H, W, C, gH, gW = 8, 256, 256, 32, 256, 256
    x = rng.standard_normal((B, H, W, C)).astype(np.float32)
    g = rng.uniform(-1.2, 1.2, size=(B, gH, gW, 2)).astype(np.float32)     # past the border too
    k = mb.metal_kernel(name="grid_sample_guard", input_names=["x", "grid"], output_names=["out"],
                        source=GRID_SAMPLE)
    out = k(inputs=[mx.array(x), mx.array(g)], template=[("T", mx.float32)], grid=(B * gH * gW * C, 1, 1),
            threadgroup=(256, 1, 1), output_shapes=[(B, gH, gW, C)], output_dtypes=[mx.float32],
            backend="cuda")[0]
    ref = grid_sample_ref(x[:1], g[:1])
    np.testing.assert_allclose(np.array(out)[:1], ref, rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
def test_reads_past_an_input_give_zero_on_cuda(monkeypatch):
    monkeypatch.setenv(cuda_guard.GUARD_ENV, "1")     # x[i + 3] is launch-determined: guarded when asked
    x = np.arange(1, 9, dtype=np.float32)
    k = mb.metal_kernel(name="past_end", input_names=["x"], output_names=["out"], source=OFFSET_READ)
    out = k(inputs=[mx.array(x)], grid=(8, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(8,)],
            output_dtypes=[mx.float32], backend="cuda")[0]
    with pytest.warns(mb.OutOfBoundsWarning):
        ref = k(inputs=[x], grid=(8, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(8,)],
                output_dtypes=[mx.float32], backend="sim")[0]
    np.testing.assert_array_equal(np.array(out), np.array(ref))


@pytest.mark.gpu
def test_out_of_range_gather_gives_zero_on_cuda():
    x = np.arange(1, 9, dtype=np.float32)
    idx = np.array([0, 7, 8, -1, 1 << 30, -(1 << 31), 3, 1 << 20], np.int32)
    k = mb.metal_kernel(name="gather_guard", input_names=["x", "idx"], output_names=["out"], source=GATHER)
    out = k(inputs=[mx.array(x), mx.array(idx)], grid=(8, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(8,)],
            output_dtypes=[mx.float32], backend="cuda")[0]
    np.testing.assert_array_equal(np.array(out), _gather_ref(x, idx))


# ----------------------------------------------------------------------------- whole kernels, g++ on the host
def _gather_ref(x, idx):
    inside = (idx >= 0) & (idx < x.size)
    return np.where(inside, x[np.clip(idx, 0, x.size - 1)], 0).astype(np.float32) + x


def _host(src, ins: dict, out_shape, grid, tmp_path, names=None):
    names = list(names or ins)
    _, _, sp = _msl_spec(src, [ins[n] for n in names], out_shape, grid, names=names)
    r = sp.rendered("cuda", False, (32, 1, 1))
    return cuda_host.run(r, ins, {"out": out_shape}, grid, (32, 1, 1), tmp_path)["out"], sp


@pytest.mark.skipif(not cuda_host.HAVE_GXX, reason="g++ not installed")
def test_out_of_range_gather_gives_zero_with_gcc(tmp_path, monkeypatch):
    x = np.arange(1, 9, dtype=np.float32)
    idx = np.array([0, 7, 8, -1, 1 << 30, -(1 << 31), 3, 100000], np.int32)
    got, _ = _host(GATHER, {"x": x, "idx": idx}, (8,), (8, 1, 1), tmp_path)
    np.testing.assert_array_equal(got, _gather_ref(x, idx))
    with pytest.warns(mb.OutOfBoundsWarning):              # the simulator agrees (unchecked: 0)
        sim = GATHER_KERNEL()(inputs=[x, idx], grid=(8, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(8,)],
                              output_dtypes=[mx.float32], backend="sim")[0]
    np.testing.assert_array_equal(np.array(sim), got)
    # the harness does catch a read outside: the same kernel unguarded
    monkeypatch.setenv(cuda_guard.GUARD_ENV, "0")
    with pytest.raises(AssertionError, match="heap-buffer-overflow"):
        _host(GATHER, {"x": x, "idx": idx}, (8,), (8, 1, 1), tmp_path / "unguarded")


def GATHER_KERNEL():
    return mb.metal_kernel(name="gather_sim", input_names=["x", "idx"], output_names=["out"], source=GATHER)


@pytest.mark.skipif(not cuda_host.HAVE_GXX, reason="g++ not installed")
def test_masked_reads_past_the_input_with_gcc(tmp_path):
    # MLX's grid_sample reads every neighbour, inside x or not, then masks: right answers
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 5, 3)).astype(np.float32)
    g = rng.uniform(-1.3, 1.3, size=(1, 3, 4, 2)).astype(np.float32)
    g[0, 0, 0] = [-1.3, -1.3]                              # the top-left neighbour before x's start
    g[0, 2, 3] = [1.3, 1.3]                                # the bottom-right one past its end
    shape = (1, 3, 4, 3)
    got, _ = _host(GRID_SAMPLE, {"x": x, "grid": g}, shape, (int(np.prod(shape)), 1, 1), tmp_path,
                   names=("x", "grid"))
    np.testing.assert_allclose(got, grid_sample_ref(x, g), rtol=1e-5, atol=1e-5)
    # a stencil reading its left neighbour (below 0 at i = 0) and masking it
    st = """
        uint i = thread_position_in_grid.x;
        float left = x[i - 1];
        out[i] = i > 0 ? x[i] - left : 0.0f;
    """
    x1 = np.arange(1, 10, dtype=np.float32) ** 2
    got, sp = _host(st, {"x": x1}, (9,), (9, 1, 1), tmp_path / "stencil")
    assert "mb_gload32(x, i - 1u" in sp.rendered("cuda", False, (32, 1, 1)).body
    np.testing.assert_array_equal(got, np.concatenate([[0], np.diff(x1)]).astype(np.float32))
