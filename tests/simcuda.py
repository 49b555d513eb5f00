"""backend="cuda" without a GPU: MLX's ``cuda_kernel`` replaced by the simulator.

The stand-in is fed exactly what ``mx.fast.cuda_kernel`` would be fed (the rendered
kernel's inputs in order, float64 as its uint64 bits, scalars as one-element vectors, the extra
``mb_grid``/shape inputs) and returns what MLX would return (float64 outputs as bits,
``init_value`` applied as MLX applies it, to the output's MLX dtype). So the whole host
side of the cuda backend -- launch plans, converters, thin calls, device arrays, in-place
merges -- runs here, and the kernels MLX would compile (one NVRTC compile per distinct
name and template) are counted (and, with ``SIMCUDA_NVRTC=1``, compiled with NVRTC).

In a test::

    def test_x(monkeypatch):
        simcuda.install(monkeypatch)

As a pytest plugin over whole suites (counts compiles per test file into ``SIMCUDA_OUT``)::

    PYTHONPATH=tests METALBENCH_TEST_BACKEND=cuda SIMCUDA_OUT=/tmp/compiles.json \\
        .venv/bin/python -m pytest -p simcuda tests/test_numba_compat.py
"""
from __future__ import annotations

import collections
import json
import os

import mlx.core as mx
import numpy as np
import pytest

SEEN: dict = {}                     # kernel name (+ template) -> the test that compiled it first
PER_FILE: collections.Counter = collections.Counter()
CURRENT = {"node": None}


def _fake_mlx_kernel(self, backend, exact_grid=False, *args, **kwargs):
    from metalbench import runtime
    from metalbench import types as T
    if backend != "cuda":
        raise RuntimeError(f"simcuda stands in for cuda only, not {backend}")
    r = self.rendered(backend, exact_grid, *args, **kwargs)
    spec = self
    ins = [spec.ir.param(n) for n, _, _ in spec.launch_inputs(backend)]
    outs_ir = spec.ir.outputs

    def call(inputs, output_shapes, output_dtypes, grid, threadgroup, template=None, init_value=None,
             stream=None, **_):
        key = r.name + "".join(f"_{v}" for _, v in (template or []))
        if key not in SEEN:
            SEEN[key] = CURRENT["node"]
            PER_FILE[(CURRENT["node"] or "?").split("::")[0]] += 1
            if os.environ.get("SIMCUDA_NVRTC"):
                _nvrtc_check(r, template, key)
        assert len(inputs) == len(r.input_names), (r.input_names, len(inputs))
        values = {}
        for p, v in zip(ins, inputs):                      # the user's inputs come first, in order
            assert v.dtype == T.to_mlx(_mlx_type(p)), (p.name, v.dtype, p.type)
            a = runtime.to_numpy(v)
            if p.type is T.float64:
                a = a.view(np.float64)
            values[p.name] = a.reshape(-1)[0] if p.kind == "scalar" else a
        outs = []
        for p, s, d in zip(outs_ir, output_shapes, output_dtypes):
            assert d == T.to_mlx(_mlx_type(p)), (p.name, d, p.type)
            outs.append((p.name, tuple(s), T.complex64 if p.complex else p.type))
        iv = init_value
        if iv and any(t is T.float64 for _, _, t in outs):
            # MLX fills the uint64 it holds a float64 output as with the float32 init_value
            # (runtime.float64_init_value made it the bits wanted); other outputs then are
            # float64 too (it refuses a mix)
            iv = float(np.uint64(np.float32(iv)).view(np.float64))
        res, _ = spec.launch_sim(values, outs, tuple(grid), tuple(threadgroup), False, iv)
        return [mx.array(runtime.to_numpy(o).view(np.uint64)) if t is T.float64 else o
                for (_, _, t), o in zip(outs, res)]
    return call


def _mlx_type(p):
    """The type MLX holds parameter ``p`` as on cuda: float64 as its bits, a complex64 buffer
    (``ir.Param.complex``, float32 storage in the IR) as complex64."""
    from metalbench import runtime
    from metalbench import types as T
    return T.complex64 if p.complex else runtime.carrier(p.type, "cuda")


NVRTC_FAILED: dict = {}


def _nvrtc_check(r, template, key) -> None:
    """With ``SIMCUDA_NVRTC=1``: compile the source MLX would build with NVRTC (tests/nvrtc.py)."""
    import nvrtc
    from metalbench.codegen import cuda
    nv = nvrtc.find()
    if nv is None:
        raise RuntimeError("SIMCUDA_NVRTC=1 but NVRTC is not installed (tests/nvrtc.py says how)")
    tmpl = [(n, v) for n, v in template] if template else None
    ok, log = nv.compile(cuda.full_source(r, tmpl))
    if not ok:
        NVRTC_FAILED[key] = (CURRENT["node"], log[:2000])


def install(monkeypatch) -> None:
    """Make backend="cuda" run on the simulator for the rest of the test."""
    from metalbench import launch, protocol
    monkeypatch.setattr(launch, "cuda_available", lambda: True)
    monkeypatch.setattr(protocol.Specialization, "mlx_kernel", _fake_mlx_kernel)


# ----------------------------------------------------------------------------- as a plugin
def pytest_configure(config):
    mp = pytest.MonkeyPatch()
    install(mp)
    config._simcuda_patch = mp


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    CURRENT["node"] = item.nodeid
    yield


def pytest_sessionfinish(session):
    out = os.environ.get("SIMCUDA_OUT")
    if out:
        per_test = collections.Counter(SEEN.values())
        with open(out, "w") as f:
            json.dump({"total": len(SEEN), "per_file": PER_FILE.most_common(),
                       "per_test": per_test.most_common(80), "nvrtc_failed": NVRTC_FAILED}, f, indent=1)


def kernel_values(spec, inputs) -> dict:
    """What a stand-in of an MLX kernel object built for ``spec`` hands the simulator: its
    inputs by name, a scalar as the value a kernel reads (on cuda scalars cross as vectors,
    of which the printed kernel reads element 0; ``thin.scalar_array``)."""
    return {n: (v.reshape(-1)[0] if kind == "scalar" and v.ndim else v)
            for (n, kind, _), v in zip(spec.inputs, inputs)}
