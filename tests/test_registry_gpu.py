"""Every registry builtin's printed CUDA on a real NVIDIA GPU against the simulator.

The kernels of ``test_registry`` (every builtin on every sample argument type, on
edge-case and random inputs) go through ``test_codegen_cuda_gpu``'s host program (nvcc,
launched as MLX launches them); the outputs are compared with the simulator's within the
builtin's declared tolerance (at least 4 ulps: CUDA's float math is not correctly
rounded). SIMD-group builtins run without divergence here (a shuffle from an inactive
lane is undefined on a GPU). Marker ``gpu``; skips without nvcc and a GPU.
"""
from __future__ import annotations

import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

import test_codegen_cuda_gpu as G
import test_registry as R
from metalbench import types as T
from metalbench.builtins import registry

BUILTINS = [b for b in registry.all() if b.kind in ("call", "simd")]


def _case(b):
    rng = np.random.default_rng(zlib.crc32(b.name.encode()))
    simd = b.kind == "simd"
    lanes = R.GRID if simd else R.LANES
    inputs, outputs = {}, {}
    for s, types in enumerate(b.rule.samples):
        sig = b.typecheck(list(types))
        for k, t in enumerate(types):
            e, n = T.elem_of(t), R._ncomp(t)
            if simd and k == 1:
                cols = [rng.integers(0, 40, lanes).astype(e.np) for _ in range(n)]
            else:
                cols = [R._values(e, k, len(types), rng)[:lanes] for _ in range(n)]
            inputs[f"a{s}_{k}"] = np.stack(cols, axis=1).reshape(-1).copy()
        outputs[f"o{s}"] = (lanes * R._ncomp(sig.result), T.elem_of(sig.result).np)
    tg = (R.TG, 1, 1) if simd else (64, 1, 1)
    return G.Case(f"reg_{b.name}", lambda b=b: R._kernel(b), (lanes, 1, 1), tg, inputs, outputs, exact=False)


def _close(b, got, want, dt) -> np.ndarray:
    if not np.issubdtype(np.dtype(dt), np.floating) and np.dtype(dt).name != "bfloat16":
        return got == want
    t = {"float32": T.float32, "float16": T.float16, "bfloat16": T.bfloat16, "float64": T.float64}[np.dtype(dt).name]
    g, w = got.astype(np.float64), want.astype(np.float64)
    tol = max(b.tol_ulp, 4.0)
    return (g == w) | (np.isnan(g) & np.isnan(w)) | (np.abs(g - w) <= tol * R._ulp(w, t))


@pytest.mark.gpu
@pytest.mark.skipif(not G._gpu_present(), reason="needs nvcc and an NVIDIA GPU")
def test_every_builtin_on_the_gpu_matches_the_simulator(tmp_path, monkeypatch):
    cases = [_case(b) for b in BUILTINS]
    monkeypatch.setattr(G, "cases", lambda: cases)
    exe = G.build(tmp_path)
    res = Path(tmp_path) / "results"
    res.mkdir()
    p = subprocess.run([str(exe), str(res)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    problems = []
    for b, c in zip(BUILTINS, cases):
        want = G.simulate(c)
        for name, (size, dt) in c.outputs.items():
            f = res / f"{c.name}.{name}.bin"
            if not f.exists():
                problems.append(f"{c.name}.{name}: no GPU result")
                continue
            got = np.frombuffer(f.read_bytes(), dtype=dt)
            ok = _close(b, got, want[name], dt)
            if not ok.all():
                i = int(np.flatnonzero(~ok)[0])
                problems.append(f"{b.name} {name}: {int((~ok).sum())} differ, first [{i}] gpu={got[i]!r} "
                                f"sim={want[name][i]!r}")
    assert problems == [], "\n".join(problems)
