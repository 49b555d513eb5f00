"""The generated CUDA compiles with NVRTC, as MLX's ``cuda_kernel`` compiles it (no GPU needed).

Runs where NVRTC is installed (see ``tests/nvrtc.py``: the pip packages in this Python or in
``METALBENCH_NVRTC_SITE``) and no GPU is (there the cuda suites compile through MLX); skips
otherwise (CI does not install NVRTC). Covers float64 end to
end (double arithmetic, float64 carried through MLX as uint64 bits, 64-bit atomics) and a
set of representative DSL, ``metal_kernel`` and Numba kernels. The first failure prints
the generated source with NVRTC's log.
"""
from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
import nvrtc
from metalbench import cuda as nb
from metalbench.codegen import cuda
from metalbench.dsl import (atomic_add, atomic_compare_exchange, atomic_max, atomic_min, float64, metal,
                            simd_sum, thread_position_in_grid)

NV = nvrtc.find()
pytestmark = [pytest.mark.skipif(NV is None, reason="NVRTC not installed (tests/nvrtc.py says how)"),
              # with a GPU, MLX compiles these kernels itself in the cuda suites: no second compile
              pytest.mark.skipif(mb.launch.cuda_available(), reason="a CUDA GPU is here: the gpu tests compile")]
RNG = np.random.default_rng(3)
X64 = RNG.standard_normal(64)


def compile_ok(sp, template=None, label=""):
    """Every variant MLX may compile (guarded grid, exact grid) compiles; returns the source."""
    for exact in (False, True):
        src = cuda.full_source(sp.rendered("cuda", exact), template)
        ok, log = NV.compile(src)
        assert ok, f"{label} (exact_grid={exact}) does not compile:\n{log}\n{src}"
    return src


# ----------------------------------------------------------------------------- float64
@mb.kernel
def axpy64(a: mb.float64, x, y, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = a * x[i] + y[i]


@mb.kernel
def double_math(x, f, out: mb.Out, n: mb.Out(shape=lambda x, f, **_: x.shape, dtype=mb.int64)):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = metal.exp(x[i] * 1e-3) + float64(f[i]) / 3 + simd_sum(x[i]) + metal.fma(x[i], x[i], 1.0)
        n[i] = mb.dsl.int64(x[i] * 1e3)


@mb.kernel
def atomics64(x, acc: mb.Out(shape=(4,), dtype=mb.float64), cnt: mb.Out(shape=(2,), dtype=mb.int64)):
    i = thread_position_in_grid.x
    atomic_add(acc, 0, x[i])
    atomic_max(acc, 1, x[i])
    atomic_min(acc, 2, x[i])
    atomic_compare_exchange(acc, 3, 0.0, x[i])
    atomic_add(cnt, 0, 1)
    atomic_compare_exchange(cnt, 1, 0, 7)


def test_dsl_float64_compiles_with_bits_parameters():
    src = compile_ok(axpy64.specialize(np.float64(0.5), X64, X64), label="axpy64")
    assert "const uint64_t* a," in src and "const uint64_t* x," in src and "uint64_t* out)" in src
    assert "__dmul_rn(" in src                           # no FMA contraction of a * x[i] + y[i]
    compile_ok(double_math.specialize(X64, X64.astype(np.float32)), label="double_math")


def test_64_bit_atomics_compile():
    src = compile_ok(atomics64.specialize(X64), label="atomics64")
    assert "atomicAdd(&acc[0], x[i])" in src and "mb_atomic_cas_double" in src and "atomicCAS(reinterpret_cast<" in src


def test_metal_kernel_double_compiles():
    k = mb.metal_kernel(name="d", input_names=["a", "s"], output_names=["o"],
                        source="uint i = thread_position_in_grid.x;\n"
                               "o[i] = a[i] * s + static_cast<double>(1) / 3 + double(int(a[i]));")
    b = k.bind(inputs=[X64, np.float64(2.5)], output_shapes=[X64.shape], output_dtypes=[mx.float64],
               grid=(64, 1, 1), threadgroup=(32, 1, 1), backend="sim")
    compile_ok(k.specialization(b), label="metal_kernel double")


@nb.jit
def numba_axpy(a, x, y, out):
    i = nb.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]


@nb.jit
def numba_atomics(acc, cnt, x):
    i = nb.grid(1)
    if i < x.size:
        nb.atomic.add(acc, 0, x[i])
        nb.atomic.add(cnt, 0, 1)


@nb.jit
def numba_cas(a, out):
    i = nb.grid(1)
    if i < a.size:
        out[i] = nb.atomic.cas(a, i, 0, i + 1)


def test_numba_float64_and_64_bit_atomics_compile():
    compile_ok(numba_axpy.specialization_of(1.5, X64, X64, np.zeros(64)), label="numba axpy")
    compile_ok(numba_atomics.specialization_of(np.zeros(1), np.zeros(1, np.int64), X64), label="numba atomics")


def test_int64_cas_prints_for_cuda():
    from metalbench import ir
    from metalbench import types as T
    for t in (T.int64, T.uint64):
        k = ir.KernelIR("cas64", [ir.Param("o", "buffer", t, is_output=True)],
                        [ir.Store("o", ir.Const(1, T.uint32),
                                  ir.Atomic("cas", "o", ir.Const(0, T.uint32), [ir.Const(0, t), ir.Const(5, t)], t))])
        src = cuda.full_source(cuda.render(k))
        ok, log = NV.compile(src)
        assert ok, log + src


# ----------------------------------------------------------------------------- representative kernels
def _zoo():
    from zoo import CASES
    return CASES


@pytest.mark.parametrize("c", _zoo(), ids=[c.name for c in _zoo()])
def test_zoo_kernels_compile(c):
    args = c.make_args(np.random.default_rng(0))
    kw = {k: v for k, v in c.launch.items() if k == "out"}
    compile_ok(c.kernel.specialize(*args, **kw), label=c.name)


def _msl_cases():
    import test_msl_constants
    import test_msl_pointers
    import test_msl_types
    return test_msl_types.CASES + test_msl_pointers.CASES + test_msl_constants.CASES


@pytest.mark.parametrize("c", _msl_cases(), ids=[c.name for c in _msl_cases()])
def test_msl_kernels_compile(c):
    k = c.kernel()
    b = k.bind(inputs=[mx.array(v) for v in c.inputs.values()], template=c.template, grid=c.grid,
               threadgroup=c.tg, output_shapes=[o[1] for o in c.outputs],
               output_dtypes=[getattr(mx, np.dtype(o[2]).name) for o in c.outputs], backend="sim")
    tmpl = [(n, v) for n, v in c.template]
    compile_ok(k.specialization(b), template=tmpl or None, label=c.name)
