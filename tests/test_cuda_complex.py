"""MLX ``complex64`` buffers in MSL bodies on ``backend="cuda"``: the printed CUDA.

MLX's ``cuda_kernel`` declares a complex64 array ``const mlx::core::cu::complex64_t* x``
(``cuda::std::complex<float>``, ``mlx/backend/cuda/device/complex.cuh``, which the JIT
includes through ``utils.cuh``). The MSL body's complex arithmetic (MLX's Metal
``complex64_t``) is real arithmetic in the IR already (``semantics/complexval.py``), so
the printed kernel reads the buffer as floats under the parameter's own name
(``CUDAPrinter.param_aliases``) and computes what the simulator computes.

Each kernel here (our own: complex multiply, conjugate, magnitude, an FFT in threadgroup
memory, complex/scalar mixes, comparisons, header functions, a gather past the end) runs

* on the simulator (checked) against NumPy;
* as printed CUDA compiled by g++ and run on the CPU (``tests/hostcuda``), against the
  simulator -- bit for bit where the kernel is + - * / only (g++ with
  ``-ffp-contract=off`` rounds every operation as the simulator does);
* through ``backend="cuda"`` on a GPU against NumPy (marker ``gpu``; skips here).
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field

import mlx.core as mx
import numpy as np
import pytest

import hostcuda
import metalbench as mb
from metalbench import types as T
from metalbench.codegen import cuda, cuda_check
from metalbench.errors import MetalbenchError
from test_msl_complex import _FORMS, X16

RNG = np.random.default_rng(13)


def crand(*shape) -> np.ndarray:
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


@dataclass
class Case:
    name: str
    source: str
    inputs: dict                      # name -> NumPy array (0-d: a scalar input)
    outputs: dict                     # name -> (shape, mx dtype)
    ref: object                       # inputs dict -> {output: NumPy array}
    grid: tuple
    tg: tuple
    header: str = ""
    exact: bool = True                # + - * / only: host CUDA == simulator bit for bit
    rtol: float = 2e-5
    template: list = field(default_factory=list)
    checked: bool = True              # False: the kernel reads past an input on purpose (0 there)
    contiguous: bool = True           # ensure_row_contiguous


N = 200          # not a multiple of the threadgroup: the launch guard matters
A, B, S = crand(N), crand(N), np.float32(2.5)
IDX = RNG.integers(0, N, N).astype(np.int32)
IDX[:4] = [N - 1, N - 2, 0, N]     # the last two elements (a guard counting complex elements, not floats,
#                                    would zero them), the first, one past the end (0 on every backend)
X64 = crand(6, 64)
M2 = crand(5, 7)

FFT_HEADER = """
inline uint rev6(uint v) {
    uint r = 0;
    for (int b = 0; b < 6; b++) { r = (r << 1) | ((v >> b) & 1u); }
    return r;
}
"""
# a radix-2 FFT of each 64-element row in threadgroup memory: 32 threads, one butterfly each per stage
FFT = """
uint row = threadgroup_position_in_grid.x;
uint t = thread_position_in_threadgroup.x;
threadgroup complex64_t buf[64];
const device complex64_t* xr = x + row * 64;
buf[rev6(t)] = xr[t];
buf[rev6(t + 32)] = xr[t + 32];
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint half = 1; half < 64; half <<= 1) {
    uint k = t % half;
    uint j = (t / half) * half * 2 + k;
    float ang = -3.14159265358979f * float(k) / float(half);
    complex64_t w = complex64_t(metal::cos(ang), metal::sin(ang));
    complex64_t a = buf[j];
    complex64_t b = buf[j + half] * w;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    buf[j] = a + b;
    buf[j + half] = a - b;
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
out[row * 64 + t] = buf[t];
out[row * 64 + t + 32] = buf[t + 32];
"""

HELPERS = """
inline complex64_t cmul_conj(complex64_t a, complex64_t b) { return a * complex64_t(b.real, -b.imag); }
inline float norm2(complex64_t a) { return a.real * a.real + a.imag * a.imag; }
template <typename T> T twice(T a) { return a + a; }
"""

GUARD = "uint i = thread_position_in_grid.x;\nif (i >= a_shape[0]) return;\n"


def _cmp_ref(d):
    a, b = d["a"], d["b"]
    lt = (a.real < b.real) | ((a.real == b.real) & (a.imag < b.imag))
    eq = a == b
    return {"out": np.where(lt, a, b).astype(np.complex64), "flags": (lt * 2 + eq).astype(np.float32)}


CASES = [
    Case("multiply", GUARD + "out[i] = a[i] * b[i];", {"a": A, "b": B}, {"out": ((N,), mx.complex64)},
         lambda d: {"out": d["a"] * d["b"]}, (N, 1, 1), (64, 1, 1)),
    Case("conj", GUARD + "complex64_t z = a[i];\nout[i] = complex64_t(z.real, -z.imag);", {"a": A},
         {"out": ((N,), mx.complex64)}, lambda d: {"out": np.conj(d["a"])}, (N, 1, 1), (32, 1, 1)),
    Case("magnitude", GUARD + "complex64_t z = a[i];\nout[i] = metal::sqrt(z.real * z.real + z.imag * z.imag);",
         {"a": A}, {"out": ((N,), mx.float32)}, lambda d: {"out": np.abs(d["a"]).astype(np.float32)},
         (N, 1, 1), (64, 1, 1), exact=False),
    Case("divide_and_scalars", GUARD + """
complex64_t c = a[i];
complex64_t d = b[i];
complex64_t e = (c - 2.0f) / d + (1.5f - c) + 3;
e += complex64_t(s, 0.0f);
e.imag = e.imag + c.real;
out[i] = -e + 2.0f / d;""", {"a": A, "b": B, "s": S}, {"out": ((N,), mx.complex64)},
         lambda d: {"out": -(((d["a"] - 2) / d["b"] + (1.5 - d["a"]) + 3 + d["s"]) + 1j * d["a"].real)
                    + 2 / d["b"]}, (N, 1, 1), (64, 1, 1), rtol=1e-4),
    Case("conversions", GUARD + """
complex64_t z = a[i];
float re = z;                       // complex64_t -> float: the real part
float2 parts = z;                   // -> float2: (real, imag)
bool nz = z;
out[i] = complex64_t(parts.y + re, nz ? parts.x : -1.0f);
mag[i] = static_cast<float>(b[i]) + a[i].imag;""", {"a": A, "b": B},
         {"out": ((N,), mx.complex64), "mag": ((N,), mx.float32)},
         lambda d: {"out": (d["a"].imag + d["a"].real + 1j * np.where(d["a"].real != 0, d["a"].real, -1)
                            ).astype(np.complex64), "mag": (d["b"].real + d["a"].imag).astype(np.float32)},
         (N, 1, 1), (64, 1, 1)),
    Case("compare", GUARD + """
complex64_t x = a[i], y = b[i];
out[i] = x < y ? x : y;
flags[i] = float(x < y) * 2.0f + float(x == y);""", {"a": A, "b": np.where(np.arange(N) % 5 == 0, A, B)},
         {"out": ((N,), mx.complex64), "flags": ((N,), mx.float32)}, _cmp_ref, (N, 1, 1), (64, 1, 1)),
    Case("header_functions", GUARD + "out[i] = cmul_conj(a[i], b[i]) + twice(a[i]);\nmag[i] = norm2(b[i]);",
         {"a": A, "b": B}, {"out": ((N,), mx.complex64), "mag": ((N,), mx.float32)},
         lambda d: {"out": d["a"] * np.conj(d["b"]) + 2 * d["a"], "mag": (np.abs(d["b"]) ** 2).astype(np.float32)},
         (N, 1, 1), (64, 1, 1), header=HELPERS),
    Case("gather_past_the_end", GUARD + "out[i] = a[idx[i]] * complex64_t(0.0f, 1.0f);", {"a": A, "idx": IDX},
         {"out": ((N,), mx.complex64)},
         lambda d: {"out": np.where(d["idx"] < N, d["a"][np.minimum(d["idx"], N - 1)] * 1j, 0).astype(np.complex64)},
         (N, 1, 1), (64, 1, 1), checked=False),
    Case("gather_strided", """
uint i = thread_position_in_grid.x;
if (i >= idx_shape[0]) return;
int j = idx[i];
out[i] = a[j * a_strides[0]] + complex64_t(float(a_ndim), 0.0f);""", {"a": A, "idx": IDX},
         {"out": ((N,), mx.complex64)},
         lambda d: {"out": (np.where(d["idx"] < N, d["a"][np.minimum(d["idx"], N - 1)], 0) + 1).astype(np.complex64)},
         (N, 1, 1), (64, 1, 1), checked=False, contiguous=False),
    Case("fft64", FFT, {"x": X64}, {"out": ((6 * 64,), mx.complex64)},
         lambda d: {"out": np.fft.fft(d["x"].astype(np.complex128), axis=1).reshape(-1).astype(np.complex64)},
         (6 * 32, 1, 1), (32, 1, 1), header=FFT_HEADER, exact=False, rtol=1e-4),
    Case("rows_2d", """
uint2 p = thread_position_in_grid.xy;
if (p.x >= m_shape[1] || p.y >= m_shape[0]) return;
complex64_t z = m[p.y * m_strides[0] + p.x * m_strides[1]];
T w = T(float(p.x), 1.0f);
out[p.y * m_shape[1] + p.x] = z * w - m[p.y * m_shape[1]];""", {"m": M2}, {"out": ((5 * 7,), mx.complex64)},
         lambda d: {"out": (d["m"] * (np.arange(7) + 1j)[None, :] - d["m"][:, :1]).reshape(-1)},
         (7, 5, 1), (4, 2, 1), template=[("T", mx.complex64)]),
]


def _kernel(c: Case):
    return mb.metal_kernel(name=f"cplx_{c.name}", input_names=list(c.inputs), output_names=list(c.outputs),
                           source=c.source, header=c.header, ensure_row_contiguous=c.contiguous)


def _launch_kw(c: Case, backend: str) -> dict:
    kw = dict(inputs=[mx.array(v) for v in c.inputs.values()], grid=c.grid, threadgroup=c.tg,
              output_shapes=[s for s, _ in c.outputs.values()], output_dtypes=[d for _, d in c.outputs.values()],
              backend=backend)
    if c.template:
        kw["template"] = c.template
    return kw


def _sim(c: Case) -> dict:
    outs = _kernel(c)(**_launch_kw(c, "sim"), checked=c.checked)
    return {n: np.array(o) for n, o in zip(c.outputs, outs)}


def _host(c: Case) -> dict:
    """The printed CUDA of ``c`` (what MLX's cuda_kernel compiles) run by g++ on the CPU, fed
    what MLX feeds it: the complex64 arrays as they are, then the extra inputs."""
    k = _kernel(c)
    kw = _launch_kw(c, "sim")
    sp = k.specialization(k.bind(**kw))
    exact = all(g % t == 0 for g, t in zip(c.grid, c.tg))
    r = sp.rendered("cuda", exact, c.tg)
    call = hostcuda._fake_mlx_kernel(sp, "cuda", exact, c.tg)
    ins = kw["inputs"] + list(r.extra_inputs(c.grid, c.tg, kw["output_shapes"]) if r.extra_inputs else [])
    outs = call(ins, kw["output_shapes"], kw["output_dtypes"], c.grid, c.tg, template=c.template or None)
    return {n: np.array(o) for n, o in zip(c.outputs, outs)}


def _close(got: dict, want: dict, rtol: float, atol: float = 1e-5):
    for n, w in want.items():
        assert got[n].dtype == np.asarray(w).dtype or np.asarray(w).dtype == np.complex128, (n, got[n].dtype)
        np.testing.assert_allclose(got[n], w, rtol=rtol, atol=atol, err_msg=n)


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_simulator_against_numpy(c):
    _close(_sim(c), c.ref(c.inputs), c.rtol)


@pytest.mark.skipif(not hostcuda.HAVE_GXX, reason="needs g++")
@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_printed_cuda_on_the_host_against_the_simulator(c):
    got, want = _host(c), _sim(c)
    for n in c.outputs:
        if c.exact:     # the same float operations, each rounded once, on both
            np.testing.assert_array_equal(got[n].view(np.uint32 if got[n].dtype == np.float32 else np.uint64),
                                          want[n].view(np.uint32 if want[n].dtype == np.float32 else np.uint64),
                                          err_msg=n)
        else:           # libm's sin/cos/sqrt against the simulator's (float64, rounded once)
            np.testing.assert_allclose(got[n], want[n], rtol=c.rtol, atol=1e-5, err_msg=n)
    _close(got, c.ref(c.inputs), c.rtol)


def _rendered(c: Case, exact=False, tg=None):
    k = _kernel(c)
    sp = k.specialization(k.bind(**_launch_kw(c, "sim")))
    return sp.rendered("cuda", exact, tg)


def test_mlx_declares_complex64_t_and_the_body_reads_floats():
    c = CASES[0]
    r = _rendered(c)
    assert [t.name for t, _ in r.input_types] == ["complex64", "complex64", "uint32"], r.input_types
    assert [t.name for t in r.output_types] == ["complex64"]
    src = cuda.full_source(r)
    # MLX's build_kernel: dtype_to_cuda_type(complex64) is "mlx::core::cu::complex64_t"
    assert "    const mlx::core::cu::complex64_t* a,\n" in src and "    mlx::core::cu::complex64_t* out) {" in src
    assert "const complex64_t* mb_cplx_a = a;" in r.body
    assert "float* out = reinterpret_cast<float*>(mb_cplx_out);" in r.body


def test_a_complex_template_type_is_mlxs_spelling():
    c = next(c for c in CASES if c.template)
    src = cuda.full_source(_rendered(c), [("T", T.complex64)])
    assert "__global__ void custom_kernel_" in src and "_complex64_t(" in src
    assert "  using T = mlx::core::cu::complex64_t;\n" in src


def test_the_guard_counts_floats():
    # a data-dependent read of a complex input: its extent in floats is twice MLX's shape
    r = _rendered(next(c for c in CASES if c.name == "gather_past_the_end"))
    assert "mb_n_a = 2ull * mb_extent_rows(a_shape, 1);" in r.body, r.body
    r = _rendered(next(c for c in CASES if c.name == "gather_strided"))
    assert "mb_n_a = 2ull * mb_extent(a_shape, a_strides, 1, mb_lo_a); mb_lo_a *= 2;" in r.body, r.body


# the C++ forms of test_msl_complex (pointers, references, float2 views, constant tables,
# templates, lambdas, auto, sizeof, conversions, pointer walks, header functions taking pointers)
@pytest.mark.skipif(not hostcuda.HAVE_GXX, reason="needs g++")
@pytest.mark.parametrize("body, header, dtype, want", _FORMS, ids=[f[0][:30] for f in _FORMS])
def test_cxx_forms_on_the_host(body, header, dtype, want):
    c = Case("form", "uint i = thread_position_in_grid.x;\n" + body, {"x": X16}, {"out": ((16,), dtype)},
             None, (16, 1, 1), (16, 1, 1), header=header)
    got, sim = _host(c)["out"], _sim(c)["out"]
    assert got.dtype == sim.dtype
    np.testing.assert_array_equal(got.view(np.uint8), sim.view(np.uint8))
    np.testing.assert_allclose(got, np.asarray(want).astype(got.dtype), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_printed_cuda_compiles(c):
    # libclang against the shim (cuda_shim.h: its complex64_t), every kernel
    _compiles(c, use_nvcc=False)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("name", ["rows_2d", "gather_strided"])
def test_printed_cuda_compiles_with_nvcc(name):
    # nvcc against CCCL's cuda::std::complex, as MLX's utils.cuh brings it (codegen/cuda_shim):
    # complex64 inputs and outputs, a complex64 template type, a guarded strided read
    _compiles(next(c for c in CASES if c.name == name), use_nvcc=True)


def _compiles(c, use_nvcc):
    r = _rendered(c, tg=c.tg)
    tmpl = [(n, T.complex64) for n, _ in c.template] or None
    try:
        diags = cuda_check.check(r, tmpl, use_nvcc=use_nvcc)
    except ImportError:
        pytest.skip("no libclang")
    assert diags == [], [d.message for d in diags]


def test_the_printed_msl_still_refuses_complex64():
    from metalbench.codegen import msl
    c = CASES[0]
    k = _kernel(c)
    sp = k.specialization(k.bind(**_launch_kw(c, "sim")))
    with pytest.raises(MetalbenchError, match="'a' is a complex64 buffer.*as MSL"):
        msl.render(sp.ir)


# -- backend="cuda" end to end (converters, launch plan, thin calls) --------------------------
def test_complex_inputs_reach_mlx_as_complex64():
    """A launch hands complex64 inputs to MLX as complex64 (``Specialization.inputs`` gives
    the MLX type of an ``ir.Param.complex``), not converted to the IR's float32 storage."""
    c = CASES[0]
    k = _kernel(c)
    sp = k.specialization(k.bind(**_launch_kw(c, "sim")))
    assert sp.launch_inputs("cuda")[0][2] is T.complex64


@pytest.mark.skipif(not hostcuda.HAVE_GXX, reason="needs g++")
@pytest.mark.parametrize("c", CASES[:3] + CASES[-2:], ids=[c.name for c in CASES[:3] + CASES[-2:]])
def test_backend_cuda_on_the_host(c, monkeypatch):
    hostcuda.install(monkeypatch)
    k = _kernel(c)
    for _ in range(2):          # the second call takes the thin path
        outs = k(**_launch_kw(c, "cuda"))
        _close({n: np.array(o) for n, o in zip(c.outputs, outs)}, c.ref(c.inputs), c.rtol)


def test_backend_cuda_with_numpy_inputs_and_init_value(monkeypatch):
    hostcuda.install(monkeypatch)
    k = mb.metal_kernel(name="cplx_init", input_names=["a"], output_names=["out"],
                        source="uint i = thread_position_in_grid.x;\nif (i % 2 == 0) out[i] = a[i] * a[i];")
    a = crand(64)
    (out,) = k(inputs=[a], grid=(64, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(64,)],
               output_dtypes=[mx.complex64], init_value=1.5, backend="cuda")
    np.testing.assert_allclose(np.array(out), np.where(np.arange(64) % 2 == 0, a * a, 1.5), rtol=2e-5, atol=1e-5)


# -- on a GPU -------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_backend_cuda_on_the_gpu(c):
    k = _kernel(c)
    for _ in range(2):
        outs = k(**_launch_kw(c, "cuda"))
        got = {n: np.array(o) for n, o in zip(c.outputs, outs)}
        _close(got, c.ref(c.inputs), max(c.rtol, 1e-4), atol=1e-4)   # NVRTC contracts a*b+c into FMAs
    want = _sim(c)
    for n in c.outputs:
        np.testing.assert_allclose(got[n], want[n], rtol=1e-4, atol=1e-4, err_msg=n)


@pytest.mark.gpu
def test_backend_cuda_on_the_gpu_large():
    # a million complex products, the grid not a multiple of the threadgroup
    n = (1 << 20) + 3
    a, b = crand(n), crand(n)
    k = mb.metal_kernel(name="cplx_big", input_names=["a", "b"], output_names=["out", "mag"], source=GUARD + """
complex64_t z = a[i] * b[i];
out[i] = z;
mag[i] = z.real * z.real + z.imag * z.imag;""")
    out, mag = k(inputs=[mx.array(a), mx.array(b)], grid=(n, 1, 1), threadgroup=(256, 1, 1),
                 output_shapes=[(n,), (n,)], output_dtypes=[mx.complex64, mx.float32], backend="cuda")
    np.testing.assert_allclose(np.array(out), a * b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.array(mag), np.abs(a * b) ** 2, rtol=1e-4, atol=1e-4)
