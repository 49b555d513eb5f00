"""Round trip: DSL -> IR -> MSL (codegen.msl) -> MSL front end -> IR -> sim must equal
DSL -> IR -> sim. The printed MSL goes through mb.metal_kernel exactly as a user's
body would."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
import metalbench.sim as _sim
from metalbench import ir
from metalbench.dsl import *  # noqa: F401,F403  (the kernels' vocabulary)
from metalbench.frontend.msl import translate_kernel
from metalbench.mlx_compat import metal_kernel

msl = pytest.importorskip("metalbench.codegen.msl")
needs_sim = pytest.mark.skipif(not hasattr(_sim, "compile_kernel"), reason="simulator not built yet")

RNG = np.random.default_rng(3)


@mb.kernel
def saxpy(a: float, x, y, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = a * x[i] + y[i]


@mb.kernel
def clamp_scale(x, out: mb.Out, S: mb.constexpr = 3):
    i = thread_position_in_grid.x
    v = x[i] * S
    out[i] = v if v < 2.0 and v > -2.0 else metal.tanh(v)


@mb.kernel
def loops(x, out: mb.Out):
    i = thread_position_in_grid.x
    acc = 0.0
    k = 0
    while k < 8:
        k += 1
        if k == 3:
            continue
        if k > 6:
            break
        acc += x[i] * k
    for j in range(2, 10, 3):
        acc -= j
    out[i] = acc


@mb.kernel
def block_sum(x, out: mb.Out(shape=(4,))):
    tg = threadgroup_array(32, mb.float32)
    l = thread_position_in_threadgroup.x
    tg[l] = x[thread_position_in_grid.x]
    threadgroup_barrier()
    s = 16
    while s > 0:
        if l < s:
            tg[l] += tg[l + s]
        threadgroup_barrier()
        s //= 2
    if l == 0:
        out[threadgroup_position_in_grid.x] = tg[0]


@mb.kernel
def ints(x, out: mb.Out):
    i = thread_position_in_grid.x
    v = x[i]
    out[i] = (v * 7 + 3) % 11 ^ (v >> 1) | (v << 2) & 255


@mb.kernel
def simd_red(x, out: mb.Out(shape=(2,))):
    i = thread_position_in_grid.x
    s = simd_sum(x[i])
    if thread_index_in_simdgroup == 0:
        out[i // 32] = s


@mb.kernel
def hist(x, h: mb.Out(shape=(8,), dtype=mb.int32)):
    i = thread_position_in_grid.x
    atomic_add(h, x[i] % 8, 1)


@mb.kernel
def vec_views(x, h, out: mb.Out):
    # float4/half2 views print as packed-vector loads and stores (codegen/msl.py)
    i = thread_position_in_grid.x
    t = threadgroup_array(32, float4)
    t[i] = x.view(float4)[i] * 2.0
    threadgroup_barrier()
    v = t[31 - i]
    hv = h.view(half2)[i]
    v.y += float(hv.x) - float(hv.y)
    out.view(float4)[i] = v


CASES = [
    ("saxpy", saxpy, lambda: (2.5, RNG.standard_normal(40).astype(np.float32),
                              RNG.standard_normal(40).astype(np.float32)), 64, 32, {}),
    ("clamp_scale", clamp_scale, lambda: (RNG.standard_normal(32).astype(np.float32),), 32, 32, {}),
    ("loops", loops, lambda: (RNG.standard_normal(16).astype(np.float32),), 16, 16, {}),
    ("block_sum", block_sum, lambda: (RNG.standard_normal(128).astype(np.float32),), 128, 32, {}),
    ("ints", ints, lambda: (RNG.integers(0, 1000, 16).astype(np.int32),), 16, 16, {}),
    ("simd_red", simd_red, lambda: (RNG.standard_normal(64).astype(np.float32),), 64, 64, {}),
    ("vec_views", vec_views, lambda: (RNG.standard_normal(128).astype(np.float32),
                                      RNG.standard_normal(64).astype(np.float16)), 32, 32, {}),
    ("hist", hist, lambda: (RNG.integers(0, 100, 64).astype(np.int32),), 64, 32, {"init_value": 0}),
]


def _reparse(kir):
    r = msl.render(kir)
    ins = [(p.name, p.type, p.ndim if p.kind == "buffer" else 0) for p in kir.inputs]
    outs = [(p.name, p.type, p.ndim) for p in kir.outputs]
    scalars = [p.name for p in kir.inputs if p.kind == "scalar"]
    return r, translate_kernel(r.name, r.body, r.header, inputs=ins, outputs=outs, scalars=scalars,
                               atomic_outputs=r.atomic_outputs)


@pytest.mark.parametrize("name,kern,args,grid,tg,kw", CASES, ids=[c[0] for c in CASES])
def test_printed_msl_parses_back(name, kern, args, grid, tg, kw):
    kir = kern.ir(*args())
    r, back = _reparse(kir)
    assert [p.name for p in back.params] == [p.name for p in kir.params]
    assert ir.attributes_used(back) == ir.attributes_used(kir)
    assert ir.threadgroup_bytes(back) == ir.threadgroup_bytes(kir)


@needs_sim
@pytest.mark.parametrize("name,kern,args,grid,tg,kw", CASES, ids=[c[0] for c in CASES])
def test_roundtrip_matches_dsl_on_sim(name, kern, args, grid, tg, kw):
    a = args()
    direct = kern(*a, grid=grid, threadgroup=tg, backend="sim", **kw)
    direct = list(direct) if isinstance(direct, tuple) else [direct]
    kir = kern.ir(*a)
    r = msl.render(kir)
    by_name = {}
    arrays = iter(a)
    for p in kir.inputs:
        by_name[p.name] = next(arrays)
    inputs = []
    for p in kir.inputs:
        v = by_name[p.name]
        inputs.append(mx.array(np.asarray(v, dtype=p.type.np)) if p.kind == "scalar" else mx.array(v))
    k = metal_kernel(name=r.name, input_names=r.input_names, output_names=r.output_names,
                     source=r.body, header=r.header, atomic_outputs=r.atomic_outputs)
    back = k(inputs=inputs, grid=(grid, 1, 1), threadgroup=(tg, 1, 1),
             output_shapes=[o.shape for o in direct], output_dtypes=[o.dtype for o in direct],
             backend="sim", **kw)
    for d, b in zip(direct, back):
        np.testing.assert_allclose(np.array(b), np.array(d), rtol=1e-6, atol=1e-6)
