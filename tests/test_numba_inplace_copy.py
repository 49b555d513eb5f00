"""In-place updates fresh MLX outputs cannot express, on cuda: the kernel writes through a
private copy (numba_compat/inplace_copy.py, issue 14).

``cuda.atomic.max``/``min``/``cas``/``exch``/``inc``/``dec`` on an existing array, atomics
mixed with plain stores, device functions writing their array argument: Numba's kernel sees
the array's old contents and its atomics act on them. Checked three ways against the
simulator's direct in-place run (which the Numba suites check against Numba's own simulator):

* the scheme by execution on the simulator (``run_functional(..., "sim")``: the kernel writes
  a NumPy copy);
* the whole cuda host path with MLX's ``cuda_kernel`` replaced by the simulator
  (``tests/simcuda.py``): device arrays, NumPy and ``mx.array`` arguments, repeated launches,
  compiled with NVRTC when it is installed (``SIMCUDA_NVRTC``);
* on a GPU (``-m gpu``), the same kernels on the real cuda backend, also followed at once
  by other launches that read the result (the CUDA-graph ordering ``inplace_copy.finish``
  relies on).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import nvrtc
import simcuda
from metalbench import cuda, ir
from metalbench.errors import KernelLaunchError
from metalbench.numba_compat import inplace
from metalbench.numba_compat.host import _dims, run_functional

rng = np.random.default_rng(11)


# ----------------------------------------------------------------------------- kernels
@cuda.jit
def running_max(m, x):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.max(m, i % 3, x[i])


@cuda.jit
def running_min_old(m, old, x):
    i = cuda.grid(1)
    if i < x.size:
        old[i] = cuda.atomic.min(m, 0, x[i])       # the old value: m's before, or an earlier thread's


@cuda.jit
def cas_claim(slots, owner, x):
    i = cuda.grid(1)
    if i < x.size:
        owner[i] = cuda.atomic.compare_and_swap(slots[x[i]:], -1, i)


@cuda.jit
def exch_and_read(a, got):
    i = cuda.grid(1)
    if i < a.size:
        got[i] = cuda.atomic.exch(a, i, a[i] * 2)


@cuda.jit
def inc_wrap(a, n):
    i = cuda.grid(1)
    if i < n:
        cuda.atomic.inc(a, i % a.size, 5)


@cuda.jit
def nan_max(m, x):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.max(m, 0, x[i])


@cuda.jit
def atomic_then_store(h, x):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(h, 0, x[i])
        if i == 0:
            h[1] = h[1] + 100


@cuda.jit(device=True)
def bump(arr, i, v):
    arr[i] = arr[i] + v


@cuda.jit
def via_device_function(a, x):
    i = cuda.grid(1)
    if i < x.size:
        bump(a, i, x[i])


@cuda.jit
def float64_max(m, x):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.max(m, 0, x[i])


def i32(*vals):
    return np.array(vals, np.int32)


CASES = {
    "max": (running_max, 2, 32, lambda: (i32(5, 100, -7), rng.integers(-50, 50, 40).astype(np.int32))),
    "min old values": (running_min_old, 1, 32, lambda: (i32(3), np.zeros(20, np.int32),
                                                         rng.integers(-5, 9, 20).astype(np.int32))),
    "cas": (cas_claim, 1, 64, lambda: (i32(-1, 7, -1, -1, -1), np.zeros(30, np.int32),
                                       rng.integers(0, 5, 30).astype(np.int32))),
    "exch": (exch_and_read, 1, 32, lambda: (rng.standard_normal(17).astype(np.float32), np.zeros(17, np.float32))),
    "inc": (inc_wrap, 2, 64, lambda: (np.array([0, 3, 5, 1], np.uint32), 100)),
    "nan max": (nan_max, 1, 32, lambda: (np.array([np.nan], np.float32),
                                         np.array([1, np.nan, 3, -2], np.float32))),
    "atomic + store": (atomic_then_store, 1, 32, lambda: (i32(1, 2), rng.integers(1, 9, 16).astype(np.int32))),
    "device function": (via_device_function, 1, 32, lambda: (rng.standard_normal(24).astype(np.float32),
                                                             rng.standard_normal(24).astype(np.float32))),
    "float64 max": (float64_max, 1, 32, lambda: (np.array([0.25]), rng.standard_normal(30))),
}


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _direct(kernel, g, b, args):
    """The reference: the simulator, in place on the arguments."""
    cuda.set_backend("sim")
    try:
        out = _copies(args)
        kernel[g, b](*out)
        return out
    finally:
        cuda.set_backend(None)


def _same(got, want, label):
    for x, y in zip(got, want):
        if isinstance(y, np.ndarray):
            np.testing.assert_array_equal(np.asarray(x), y, err_msg=label)


# ----------------------------------------------------------------------------- the pass
def test_cuda_gets_a_writable_view_metal_keeps_the_refusal():
    values, specs = running_max._bind([i32(1), i32(2, 3)], {})
    sp = running_max._specialization(specs)
    kir, plans = inplace.functionalize(sp.ir, "running_max", None, "cuda")
    assert [(p.param, p.scheme) for p in plans] == [("m", "copy")]
    views = [n for n in ir.walk(kir.body) if isinstance(n, ir.ViewDecl)]
    assert [(v.name, v.buf, v.const) for v in views] == [("m__w", "m", False)]
    assert [p.name for p in kir.inputs] == ["m", "x"] and [p.name for p in kir.outputs] == ["mb_done"]
    assert not any(getattr(n, "buf", None) == "m" for n in ir.walk(kir.body) if not isinstance(n, ir.ViewDecl))
    from metalbench.codegen import cuda as cg
    assert "int32_t* m__w = const_cast<int32_t*>(m);" in cg.render(kir).body
    with pytest.raises(KernelLaunchError, match="atomic max.*constant memory.*'cuda' and 'sim' run it"):
        inplace.functionalize(sp.ir, "running_max", None, "metal")


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_scheme_by_execution_on_the_simulator(case):
    kernel, g, b, make = CASES[case]
    args = make()
    want = _direct(kernel, g, b, args)
    got = _copies(args)
    cuda.set_backend("sim")
    try:
        values, specs = kernel._bind(got, {})
        sp = kernel._specialization(specs)
        gd, bd = _dims(g, "griddim"), _dims(b, "blockdim")
        run_functional(sp, kernel.name, values, tuple(x * y for x, y in zip(gd, bd)), bd, "sim")
    finally:
        cuda.set_backend(None)
    _same(got, want, case)


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_cuda_host_path_with_the_simulator_standing_in(case, monkeypatch):
    if nvrtc.find() is not None:
        monkeypatch.setenv("SIMCUDA_NVRTC", "1")       # every kernel MLX would compile, compiled
        simcuda.NVRTC_FAILED.clear()
    simcuda.install(monkeypatch)
    kernel, g, b, make = CASES[case]
    args = make()
    want = _direct(kernel, g, b, args)
    want2 = _direct(kernel, g, b, want)                 # a second launch on the first's results
    cuda.set_backend("cuda")
    try:
        dev = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
        kernel[g, b](*dev)
        _same([d.copy_to_host() if hasattr(d, "copy_to_host") else d for d in dev], want, case + " (device)")
        kernel[g, b](*dev)
        _same([d.copy_to_host() if hasattr(d, "copy_to_host") else d for d in dev], want2, case + " (twice)")
        host = _copies(args)
        kernel[g, b](*host)
        _same(host, want, case + " (NumPy)")
    finally:
        cuda.set_backend(None)
    assert not simcuda.NVRTC_FAILED, simcuda.NVRTC_FAILED


def test_an_mx_array_argument_is_updated(monkeypatch):
    import mlx.core as mx
    simcuda.install(monkeypatch)
    m, x = i32(5, 100, -7), rng.integers(-50, 50, 40).astype(np.int32)
    want = _direct(running_max, 2, 32, (m, x))
    mm = mx.array(m)
    keep = mm                                            # another holder of the same array
    cuda.set_backend("cuda")
    try:
        running_max[2, 32](mm, x)
    finally:
        cuda.set_backend(None)
    np.testing.assert_array_equal(np.array(mm), want[0])
    assert keep is mm


# ----------------------------------------------------------------------------- on the GPU
@pytest.mark.gpu
@pytest.mark.parametrize("case", sorted(CASES))
def test_on_cuda_matches_the_simulator(case):
    from metalbench import launch as L
    if not L.cuda_available():
        pytest.skip("no CUDA backend")
    kernel, g, b, make = CASES[case]
    args = make()
    want = _direct(kernel, g, b, args)
    cuda.set_backend("cuda")
    try:
        dev = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
        kernel[g, b](*dev)
        _same([d.copy_to_host() if hasattr(d, "copy_to_host") else d for d in dev], want, case)
        host = _copies(args)
        kernel[g, b](*host)
        _same(host, want, case + " (NumPy)")
    finally:
        cuda.set_backend(None)


@cuda.jit
def add_one(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] += 1


@pytest.mark.gpu
def test_on_cuda_later_launches_see_the_update():
    """Many rounds of (private-copy kernel, then kernels reading and writing its result),
    queued without synchronising: any reordering in MLX's CUDA graph shows as a wrong sum."""
    from metalbench import launch as L
    if not L.cuda_available():
        pytest.skip("no CUDA backend")
    n = 1 << 20
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    cuda.set_backend("cuda")
    try:
        m = cuda.to_device(np.full(3, -(1 << 30), np.int32))
        want = np.full(3, -(1 << 30), np.int32)
        for r in range(20):
            running_max[math.ceil(n / 256), 256](m, x + r if r % 2 else x)
            add_one[1, 32](m)
            xs = x + r if r % 2 else x
            for k in range(3):
                want[k] = max(want[k], xs[k::3].max()) + 1
        np.testing.assert_array_equal(m.copy_to_host(), want)
    finally:
        cuda.set_backend(None)
