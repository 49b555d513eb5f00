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
_PRODUCTS = tuple(f"{g}_{k}" for g in ("simd", "quad")
                  for k in ("product", "prefix_inclusive_product", "prefix_exclusive_product"))
_SUMS = tuple(f"{g}_{k}" for g in ("simd", "quad") for k in ("sum", "prefix_inclusive_sum", "prefix_exclusive_sum"))
_FRACT_TINY = [-2.0 ** -24, -2.0 ** -14, -2.0 ** -12, -2.0 ** -9, -1e-30, -1e-300, -2.0 ** -60, -0.0]
_F32_MIN, _F32_MAX = float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).max)


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
            elif b.name in _PRODUCTS and e.is_float:
                # Metal leaves the order of a reduction open (fast math reassociates, MSL 8.4),
                # and where a partial product overflows or underflows depends on it: factors
                # in [0.8, 1.25] keep 32 of them inside half's normal range
                cols = [R.N.out(rng.uniform(0.8, 1.25, lanes) * rng.choice([-1.0, 1.0], lanes), e.np)
                        for _ in range(n)]
            else:
                cols = [R._values(e, k, len(types), rng)[:lanes] for _ in range(n)]
                if b.name == "fract" and e.is_float:
                    # tiny negative x: x - floor(x) rounds to 1 unless clamped below 1 in the
                    # RESULT type (half and bfloat compute in float on CUDA)
                    with np.errstate(over="ignore", under="ignore"):
                        tiny = R.N.out(np.array(_FRACT_TINY), e.np)
                    for col in cols:
                        col[-len(tiny):] = tiny
            inputs[f"a{s}_{k}"] = np.stack(cols, axis=1).reshape(-1).copy()
        outputs[f"o{s}"] = (lanes * R._ncomp(sig.result), T.elem_of(sig.result).np)
    tg = (R.TG, 1, 1) if simd else (64, 1, 1)
    return G.Case(f"reg_{b.name}", lambda b=b: R._kernel(b), (lanes, 1, 1), tg, inputs, outputs, exact=False)


def _args(b, c, s) -> list:
    """Sample ``s``'s arguments as (lanes, components) arrays, converted to the parameter
    types (float64 for floats, Python ints for integers)."""
    types = b.rule.samples[s]
    sig = b.typecheck(list(types))
    out = []
    for k, t in enumerate(types):
        e, pe, n = T.elem_of(t), T.elem_of(sig.params[k]), R._ncomp(t)
        a = c.inputs[f"a{s}_{k}"]
        cols = [R._wide(R._convert(a[j::n], e, pe), pe) for j in range(n)]
        out.append(np.stack(cols, axis=1))
    return out


def _scope(b, c, s, rt, nr):
    """Where the GPU must agree with the simulator, and by how much more than the ulp
    tolerance: ``(domain, slack)``, both (lanes, result components). Each rule is where Metal
    leaves the result undefined or its evaluation order open, or where CUDA's libm documents
    a larger error; everywhere else the comparison stays exact to the declared ulps."""
    A = _args(b, c, s)
    lanes = A[0].shape[0] if A else c.grid[0]
    dom, slack = np.ones((lanes, nr), bool), np.zeros((lanes, nr))
    eps = float(np.finfo(np.float32).eps) if rt.name == "bfloat16" or not rt.is_float else \
        float(np.finfo(rt.np).eps)
    with np.errstate(all="ignore"):
        if b.name == "mix":
            # MSL Table 6.1: mix is x + (y - x) * a or (1 - a) * x + a * y, undefined for a
            # outside [0, 1]; either form rounds 3 times in the type (nvcc also contracts
            # to an fma): within 2 ulps of max(|x|, |y|), whatever the cancellation
            x, y, a = A
            dom = (a >= 0) & (a <= 1)
            slack = 2 * R._ulp(np.maximum(np.abs(x), np.abs(y)), rt)
        elif b.name == "extract_bits":
            # MSL Table 6.2: offset + bits beyond the width is undefined
            width = 8 * np.dtype(rt.np).itemsize
            dom = np.broadcast_to(np.array([int(o) + int(n) <= width for o, n in zip(A[1][:, 0], A[2][:, 0])])[:, None],
                                  dom.shape)
        elif b.name == "lgamma":
            # CUDA Math API: lgammaf within 6 ulps outside (-10.001, -2.264), lgamma within 4
            # outside (-11.0001, -2.2637), "larger inside" (the zeros of lgamma lie there);
            # Metal has no lgamma
            lo, hi = (-11.0001, -2.2637) if rt.name == "float64" else (-10.001, -2.264)
            dom = ~((A[0] > lo) & (A[0] < hi))
        elif b.name == "dot":
            # the GPU sums the products in float, in an order Metal leaves open (fast math
            # reassociates, MSL 8.4): error up to n eps sum|x_i y_i| (the simulator is exact)
            x, y = A
            slack = (x.shape[1] * float(np.finfo(np.float32).eps) * np.abs(x * y).sum(axis=1))[:, None]
        elif b.name in ("length", "distance", "normalize"):
            # MSL Table 6.11 defines these by sqrt(x[0]^2 + x[1]^2 + ...): the GPU forms the
            # squared sum as a float, which underflows (to a denormal or 0: MSL 8.1 and 8.5 let
            # Metal flush it) or overflows where the simulator's float64 does not
            d = A[0] - A[1] if b.name == "distance" else A[0]
            ss = (d * d).sum(axis=1)
            bad = ((ss > 0) & (ss < _F32_MIN)) | ((ss > _F32_MAX) & np.isfinite(ss))
            dom = np.broadcast_to(~bad[:, None], dom.shape)
        elif b.name in _SUMS and rt.is_float:
            # the order of a SIMD-group sum is open (butterfly, scan tree or loop; MSL 8.4): up
            # to n eps sum|x| over the group (half rounds every step on CUDA)
            x = np.abs(A[0]).astype(np.float64)
            lay = R._simd_layout()
            if b.name.startswith("quad_"):      # the group is the lane's quad (4 lanes)
                lay = lay.reshape(-1, 4)
            for row in lay:
                ids = row[row >= 0]
                slack[ids] = len(ids) * eps * x[ids].sum(axis=0)
    return dom, slack


def _close(b, got, want, dt, dom, slack) -> np.ndarray:
    if not np.issubdtype(np.dtype(dt), np.floating) and np.dtype(dt).name != "bfloat16":
        return (got == want) | ~dom
    t = {"float32": T.float32, "float16": T.float16, "bfloat16": T.bfloat16, "float64": T.float64}[np.dtype(dt).name]
    g, w = got.astype(np.float64), want.astype(np.float64)
    # fract is exact on both (one rounding of x - floor(x), MSL 8.4: correctly rounded): a
    # result of 1.0 for a half must not pass as "within 4 ulps" of the largest half below 1
    tol = 0.0 if b.name == "fract" else max(b.tol_ulp, 4.0)
    with np.errstate(invalid="ignore"):
        near = np.abs(g - w) <= tol * R._ulp(w, t) + slack
    return (g == w) | (np.isnan(g) & np.isnan(w)) | near | ~dom


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
            s = int(name[1:])
            rt = T.elem_of(b.typecheck(list(b.rule.samples[s])).result)
            nr = size // c.grid[0]
            dom, slack = _scope(b, c, s, rt, nr)
            ok = _close(b, got, want[name], dt, dom.reshape(-1), slack.reshape(-1))
            if not ok.all():
                i = int(np.flatnonzero(~ok)[0])
                problems.append(f"{b.name} {name}: {int((~ok).sum())} differ, first [{i}] gpu={got[i]!r} "
                                f"sim={want[name][i]!r}")
    assert problems == [], "\n".join(problems)
