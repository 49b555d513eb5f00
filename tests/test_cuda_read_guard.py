"""Reads outside an input give 0 in the printed CUDA of MSL kernels (codegen/cuda_guard.py).

MLX's documented grid_sample reads past ``x`` before masking the value; on the H200 that
read killed the CUDA context. The CUDA printer guards input reads of MSL kernels: the
extent comes from MLX's ``x_shape``/``x_strides``, the read is predicated on it.

Checked here: which reads are guarded (MSL inputs; not outputs, not DSL/Numba kernels
unless asked), the helpers' arithmetic compiled with g++ against NumPy's idea of the
addressable elements (negative and zero strides, empty arrays, negative and huge
indices), the guarded kernels compile with NVRTC (when installed), and on a GPU
(``-m gpu``) grid_sample at the size that faulted matches its reference.
"""
from __future__ import annotations

import shutil
import subprocess

import mlx.core as mx
import numpy as np
import pytest

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

BYTE_VIEW_READ = """
    uint i = thread_position_in_grid.x;
    const device uchar* b = (const device uchar*)x;
    out[i] = float(b[i + 1]);
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
    assert "mb_gload(x, i + 3u, mb_lo_x, mb_n_x)" in body and "mb_gload(x, i - 2u, mb_lo_x, mb_n_x)" in body
    assert "const long long mb_lo_x = 0; const unsigned long long mb_n_x = mb_extent_rows(x_shape, 1);" in body
    assert "out[i] = " in body                       # writes are plain
    # without ensure_row_contiguous MLX passes the input's own strides: the extent reads them
    _, _, sp = _msl_spec(OFFSET_READ, [np.zeros((4, 6), np.float32)[:, ::2]], (8,), (8, 1, 1),
                         ensure_row_contiguous=False)
    assert sp.ir.read_guard == "strided"
    assert "mb_extent(x_shape, x_strides, 2, mb_lo_x)" in sp.rendered("cuda").body

    @mb.kernel
    def dsl(x, out: mb.Out):
        i = thread_position_in_grid.x
        out[i] = x[i + 1]
    dsp = dsl.specialization(dsl.bind(np.zeros(8, np.float32), grid=(7, 1, 1), threadgroup=(32, 1, 1)))
    assert not dsp.ir.read_guard and "mb_gload" not in dsp.rendered("cuda").body


def test_environment_switch_overrides_the_kernel(monkeypatch):
    x = ir.Param("x", "buffer", T.float32)
    o = ir.Param("o", "buffer", T.float32, is_output=True)
    body = [ir.Store("o", ir.Const(0, T.uint32), ir.Load("x", ir.Const(5, T.uint32), T.float32))]
    plain = ir.KernelIR("k", [x, o], body)
    msl = ir.KernelIR("k", [x, o], body, read_guard="rows")
    assert "mb_gload" in cuda.render(msl).body and "mb_gload" not in cuda.render(plain).body
    monkeypatch.setenv(cuda_guard.GUARD_ENV, "1")
    assert "mb_gload" in cuda.render(plain).body
    monkeypatch.setenv(cuda_guard.GUARD_ENV, "0")
    assert "mb_gload" not in cuda.render(msl).body


def test_views_and_vector_reads_are_guarded_by_the_viewed_input():
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


# ----------------------------------------------------------------------------- NVRTC
@pytest.mark.skipif(NV is None, reason="NVRTC not installed (tests/nvrtc.py says how)")
@pytest.mark.parametrize("case", ["offset", "view", "bytes", "strided", "grid_sample", "half", "double"])
def test_guarded_kernels_compile_with_nvrtc(case):
    src, ins, shape, grid, names, erc = OFFSET_READ, [np.zeros(8, np.float32)], (8,), (8, 1, 1), ("x",), True
    if case == "view":
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
def test_reads_past_an_input_give_zero_on_cuda():
    x = np.arange(1, 9, dtype=np.float32)
    k = mb.metal_kernel(name="past_end", input_names=["x"], output_names=["out"], source=OFFSET_READ)
    out = k(inputs=[mx.array(x)], grid=(8, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(8,)],
            output_dtypes=[mx.float32], backend="cuda")[0]
    with pytest.warns(mb.OutOfBoundsWarning):
        ref = k(inputs=[x], grid=(8, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(8,)],
                output_dtypes=[mx.float32], backend="sim")[0]
    np.testing.assert_array_equal(np.array(out), np.array(ref))
