"""backend="cuda" without a GPU, on the printed CUDA itself: g++ compiles it and the CPU runs it.

``simcuda`` stands MLX's ``cuda_kernel`` in with the simulator, so it checks the host side
of the cuda backend but never the printed CUDA. This stand-in compiles what MLX would
compile -- ``cuda.full_source`` of the rendered kernel, the user's template values
included -- with g++ against ``hostcuda/cuda_host.h``, a host model of the device side
(every GPU thread a fiber, warp shuffles and votes exchanged among the lanes of their
mask, ``__activemask`` from the lanes that arrive together, ``__half``/``__nv_bfloat16``
rounding as CUDA's; the header says what is not modelled), and the program calls the
kernel with what MLX would pass: pointers, ``Shape``/``Strides`` of each input whose name
the body uses, ``mb_grid`` and the output shapes, then the outputs. It runs in a child
process built with UBSan's alignment, shift and division checks: a misaligned access (an
NVIDIA GPU faults), a shift count past the width or an integer division by zero (both
undefined in CUDA, defined by MSL and the simulator) stops it with ``HostCudaError``.

So the semantics of the printed CUDA -- misaligned views, half/bfloat conversions,
integer promotions, shuffles in partial warps -- are tested here, against the simulator
and NumPy, before the H200 confirms them. In a test::

    def test_x(monkeypatch):
        hostcuda.install(monkeypatch)
        ... k(..., backend="cuda") ...

or over whole suites, as a plugin (slow: one g++ run per kernel variant, cached)::

    PYTHONPATH=tests .venv/bin/python -m pytest -p hostcuda tests/test_msl_types.py
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent / "hostcuda"
HAVE_GXX = shutil.which("g++") is not None
CACHE = Path(os.environ.get("HOSTCUDA_CACHE", Path(tempfile.gettempdir()) / f"metalbench-hostcuda-{os.getuid()}"))
FLAGS = ["-std=c++17", "-O1", "-ffp-contract=off", "-fwrapv", "-fno-strict-aliasing", "-w",
         "-fsanitize=alignment,shift-exponent,integer-divide-by-zero", "-fno-sanitize-recover=all"]
MAX_NDIM = 10
STATS = {"compiles": 0, "launches": 0, "undefined_reads": 0}
MLX_NAMES: dict = {}        # MLX's JIT cache key (kernel name + template) -> the source compiled under it


class HostCudaError(RuntimeError):
    """The printed CUDA did not compile with g++, or its launch deadlocked."""


def _main(r, template) -> str:
    """The host program calling the kernel as MLX's launch would: it reads ``args.bin``
    (per input: byte offset in its allocation, ndim, shape, strides, byte count, bytes;
    per output: byte count, initial bytes; grid blocks; block size), launches, and writes
    ``out<j>.bin``."""
    from metalbench.codegen import cuda
    name = "custom_kernel_" + r.name
    if template:
        name = cuda.full_source(r, template).split("__global__ void ", 1)[1].split("(", 1)[0]
    types = r.input_types or []
    args, pre = [], []
    for k, n in enumerate(r.input_names):
        t, nd = types[k]
        args.append(f"(const {cuda.CUDA_TYPES[t.name]}*)in[{k}].p")
        if nd > 0:
            for part in ("shape", "strides", "ndim"):
                if f"{n}_{part}" in r.body:
                    v = f"a{k}_{part}"
                    if part == "ndim":
                        pre.append(f"int {v} = in[{k}].nd;")
                    else:
                        ct, src = ("Shape", "sh") if part == "shape" else ("Strides", "st")
                        pre.append(f"{ct} {v}{{}}; for (int d = 0; d < {MAX_NDIM}; ++d) {v}[d] = in[{k}].{src}[d];")
                    args.append(v)
    for j, t in enumerate(r.output_types or []):
        args.append(f"({cuda.CUDA_TYPES[t.name]}*)out[{j}].p")
    nin, nout = len(r.input_names), len(r.output_types or [])
    body = "\n    ".join(pre)
    return f"""
#include <string>
struct MbhArg {{ char* base; char* p; long long n; int nd; long long sh[{MAX_NDIM}], st[{MAX_NDIM}]; }};
static void mbh_read(FILE* f, void* p, size_t n) {{ if (n && fread(p, 1, n, f) != n) {{ fprintf(stderr, "short args\\n"); exit(3); }} }}
static MbhArg mbh_alloc(long long n, long long off) {{
    MbhArg a{{}};   // 256-byte aligned, as device allocations are
    a.base = static_cast<char*>(aligned_alloc(256, ((n + off + 255) / 256 + 1) * 256));
    a.p = a.base + off; a.n = n;
    return a;
}}
int main(int argc, char** argv) {{
    using mlx::core::cu::Shape; using mlx::core::cu::Strides;
    std::string dir = argv[1];
    FILE* f = fopen((dir + "/args.bin").c_str(), "rb");
    MbhArg in[{max(1, nin)}], out[{max(1, nout)}];
    for (int k = 0; k < {nin}; ++k) {{
        long long off, n; int nd; long long sh[{MAX_NDIM}], st[{MAX_NDIM}];
        mbh_read(f, &off, 8); mbh_read(f, &nd, 4); mbh_read(f, sh, sizeof sh); mbh_read(f, st, sizeof st);
        mbh_read(f, &n, 8);
        in[k] = mbh_alloc(n, off); in[k].nd = nd;
        memcpy(in[k].sh, sh, sizeof sh); memcpy(in[k].st, st, sizeof st);
        mbh_read(f, in[k].p, n);
    }}
    for (int j = 0; j < {nout}; ++j) {{
        long long n; mbh_read(f, &n, 8);
        out[j] = mbh_alloc(n, 0); mbh_read(f, out[j].p, n);
    }}
    unsigned g[3], b[3];
    mbh_read(f, g, 12); mbh_read(f, b, 12);
    fclose(f);
    {body}
    unsigned long long undefined = 0;
    int rc = mbh::launch(dim3{{g[0], g[1], g[2]}}, dim3{{b[0], b[1], b[2]}},
                         [&]() {{ mlx::core::cu::{name}({", ".join(args)}); }}, &undefined);
    for (int j = 0; j < {nout}; ++j) {{
        FILE* o = fopen((dir + "/out" + std::to_string(j) + ".bin").c_str(), "wb");
        fwrite(out[j].p, 1, out[j].n, o); fclose(o);
    }}
    for (int k = 0; k < {nin}; ++k) {{     // inputs a kernel writes in place (Numba's in-place updates)
        FILE* o = fopen((dir + "/in" + std::to_string(k) + ".bin").c_str(), "wb");
        fwrite(in[k].p, 1, in[k].n, o); fclose(o);
    }}
    printf("undefined_reads %llu\\n", undefined);
    return rc;
}}
"""


def compile_source(source: str) -> Path:
    """The executable of ``source`` (full CUDA source plus host program), cached by content.
    Built with UBSan's alignment check: a misaligned load or store stops the program, as
    it faults on an NVIDIA GPU (Metal reads the bytes addressed)."""
    if "mma.sync" in source:
        raise HostCudaError("tensor-core mma (inline PTX) cannot run on the CPU")
    CACHE.mkdir(parents=True, exist_ok=True)
    header = (HERE / "cuda_host.h").read_text()
    key = hashlib.sha256((header + source + " ".join(FLAGS)).encode()).hexdigest()[:24]
    exe = CACHE / f"k_{key}"
    if not exe.exists():
        src = CACHE / f"k_{key}.cpp"
        src.write_text(source)
        tmp = CACHE / f"k_{key}.{os.getpid()}"
        p = subprocess.run(["g++", *FLAGS, "-include", str(HERE / "cuda_host.h"), "-I", str(HERE / "include"),
                            str(src), "-o", str(tmp)], capture_output=True, text=True)
        if p.returncode:
            raise HostCudaError(f"g++ failed on the printed CUDA ({src}):\n{p.stderr[-6000:]}")
        os.replace(tmp, exe)
        STATS["compiles"] += 1
    return exe


def _storage(a: np.ndarray):
    """(flat storage, index of element 0 in it, strides in elements) of ``a`` as MLX would
    hand it to a kernel: a strided array (``ensure_row_contiguous=False``) keeps its
    strides, negative ones included."""
    if a.flags.c_contiguous or a.size == 0:
        return np.ascontiguousarray(a).reshape(-1), 0, [s // a.itemsize if a.size else 0 for s in
                                                         np.ascontiguousarray(a).strides]
    st = [s // a.itemsize for s in a.strides]
    lo = sum(min(0, (n - 1) * t) for n, t in zip(a.shape, st))
    hi = sum(max(0, (n - 1) * t) for n, t in zip(a.shape, st))
    flat = np.zeros(hi - lo + 1, a.dtype)
    idx = sum(np.indices(a.shape)[k] * st[k] for k in range(a.ndim)) - lo
    flat[idx.reshape(-1)] = a.reshape(-1)
    return flat, -lo, st


def run_rendered(r, inputs: list, outputs: list, grid, threadgroup, template=None, offsets=None) -> list:
    """Launches rendered kernel ``r`` (``codegen.cuda.render``) on the CPU. ``inputs``: NumPy
    arrays in ``r.input_names`` order (0-d for scalars; ``mb_grid`` and shape inputs
    included), ``outputs``: NumPy arrays written in place (returned). ``offsets``: per
    input, the byte offset of its data in its allocation (an MLX array sliced from a
    larger one arrives so: ``x[1:]`` of a uint8 array is 1 byte past a 256-byte boundary)."""
    from metalbench.codegen import cuda
    exe = compile_source(cuda.full_source(r, template) + _main(r, template))
    offsets = offsets or [0] * len(inputs)
    with tempfile.TemporaryDirectory(prefix="hostcuda") as d:
        with open(os.path.join(d, "args.bin"), "wb") as f:
            for a, off in zip(inputs, offsets):
                data, first, strides = _storage(a)
                sh = np.zeros(MAX_NDIM, np.int64)
                st = np.zeros(MAX_NDIM, np.int64)
                sh[:a.ndim] = a.shape
                st[:a.ndim] = strides
                f.write(np.int64(off + first * a.itemsize).tobytes() + np.int32(a.ndim).tobytes() + sh.tobytes()
                        + st.tobytes())
                f.write(np.int64(data.nbytes).tobytes() + data.tobytes())
            for o in outputs:
                f.write(np.int64(o.nbytes).tobytes() + np.ascontiguousarray(o).tobytes())
            blocks = [-(-int(g) // int(t)) for g, t in zip(grid, threadgroup)]
            f.write(np.asarray(blocks, np.uint32).tobytes() + np.asarray(threadgroup, np.uint32).tobytes())
        p = subprocess.run([str(exe), d], capture_output=True, text=True, timeout=600)
        STATS["launches"] += 1
        if "misaligned address" in p.stderr:
            raise HostCudaError(f"the printed CUDA of {r.name} makes a misaligned access (an NVIDIA GPU "
                                f"faults there):\n{p.stderr[-3000:]}")
        if "shift exponent" in p.stderr:
            raise HostCudaError(f"the printed CUDA of {r.name} shifts by the type's width or more (an NVIDIA "
                                f"GPU clamps the count, C leaves it undefined, MSL masks it):\n{p.stderr[-3000:]}")
        if "division by zero" in p.stderr or p.returncode == -8:
            raise HostCudaError(f"the printed CUDA of {r.name} divides an integer by zero or INT_MIN by -1 "
                                f"(undefined in CUDA; the simulator gives 0 or wraps):\n{p.stderr[-3000:]}")
        if p.returncode == 2:
            raise HostCudaError(f"the printed CUDA of {r.name} deadlocked (a barrier or shuffle some threads "
                                "never reach)")
        if p.returncode:
            raise HostCudaError(f"the printed CUDA of {r.name} failed (exit {p.returncode}):\n{p.stderr[-3000:]}")
        STATS["undefined_reads"] += int(p.stdout.split()[-1])
        for j, o in enumerate(outputs):
            o.reshape(-1).view(np.uint8)[:] = np.fromfile(os.path.join(d, f"out{j}.bin"), np.uint8)
        for k, a in enumerate(inputs):      # written in place: into the array MLX passed, as on a GPU
            data, first, strides = _storage(a)
            got = np.fromfile(os.path.join(d, f"in{k}.bin"), np.uint8)
            if a.size and got.tobytes() != data.view(np.uint8).tobytes() and a.flags.writeable:
                flat = got.view(a.dtype)
                idx = sum(np.indices(a.shape)[q] * strides[q] for q in range(a.ndim)) + first if a.ndim else first
                a[...] = flat[idx]
    return outputs


def _mlx_cache_check(r, template) -> None:
    """MLX keys compiled custom kernels by name and template values alone (in memory, and
    in its PTX cache on disk): a second source under a name it has compiled would run the
    first one's code. Raise where that would happen."""
    from metalbench.codegen import cuda
    src = cuda.full_source(r, template)
    key = src.split("__global__ void ", 1)[1].split("(", 1)[0]
    seen = MLX_NAMES.setdefault(key, src)
    if seen != src:
        raise HostCudaError(f"MLX would run the kernel it compiled first as {key} for another source under the "
                            "same name (its JIT and PTX caches are keyed by name and template values)")


def _fake_mlx_kernel(self, backend, exact_grid=False, threadgroup=None, lengths=()):
    """``Specialization.mlx_kernel`` for cuda: a callable taking what ``mx.fast.cuda_kernel``'s
    kernel takes, running the printed CUDA on the CPU (with the launch's compiled-in
    ``lengths``, ``passes/lengths.py``)."""
    import mlx.core as mx

    from metalbench import runtime
    from metalbench import types as T
    if backend != "cuda":
        raise RuntimeError(f"hostcuda stands in for cuda only, not {backend}")
    r = self.rendered(backend, exact_grid, threadgroup, lengths)
    spec = self

    def call(inputs, output_shapes, output_dtypes, grid, threadgroup, template=None, init_value=None,
             stream=None, **_):
        ins = []
        for v in inputs:
            a = runtime.to_numpy(v)
            a = a.view(np.uint16) if a.dtype == T.bfloat16.np else a
            ins.append(np.ascontiguousarray(a) if spec.ensure_row_contiguous else a)   # MLX copies then
        outs = []
        for s, d in zip(output_shapes, output_dtypes):
            t = T.from_mlx(d, complex_ok=True)      # complex64: MLX's complex64_t (two floats)
            o = np.zeros(tuple(s), np.uint16 if t is T.bfloat16 else t.np)
            if init_value is not None:
                o[...] = np.asarray(init_value, np.float32).astype(t.np).view(o.dtype) if t is T.bfloat16 \
                    else init_value
            outs.append(o)
        tmpl = [(n, v) for n, v in template] if template else None
        _mlx_cache_check(r, tmpl)
        run_rendered(r, ins, outs, grid, threadgroup, tmpl)
        res = []
        for o, d in zip(outs, output_dtypes):
            res.append(mx.array(o).view(mx.bfloat16) if d == mx.bfloat16 else mx.array(o))
        return res
    return call


def install(monkeypatch) -> None:
    """Make backend="cuda" run the printed CUDA on the CPU for the rest of the test."""
    from metalbench import launch, protocol
    monkeypatch.setattr(launch, "cuda_available", lambda: True)
    monkeypatch.setattr(protocol.Specialization, "mlx_kernel", _fake_mlx_kernel)


# ----------------------------------------------------------------------------- as a plugin
def pytest_configure(config):
    import pytest
    mp = pytest.MonkeyPatch()
    install(mp)
    config._hostcuda_patch = mp
