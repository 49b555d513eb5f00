"""The in-place pass for the MLX backends (numba_compat.inplace.functionalize), verified by
execution: the functionalized kernel runs ON THE SIMULATOR with fresh zero-initialised
outputs (what MLX gives with init_value=0), the host merges, and the result must equal
the direct in-place run."""
import math

import numpy as np
import pytest

from metalbench import cuda, ir
from metalbench.errors import KernelLaunchError
from metalbench.numba_compat import inplace
from metalbench.numba_compat.host import run_functional

pytest.importorskip("metalbench.sim")
import test_numba_compat as P  # noqa: E402  (the ported Numba programs)


@pytest.fixture(autouse=True)
def _sim_backend():
    cuda.set_backend("sim")
    yield
    cuda.set_backend(None)


rng = np.random.default_rng(7)


def copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def run_both(kernel, griddim, blockdim, *args, exact=True):
    direct = copies(args)
    kernel[griddim, blockdim](*direct)
    func = copies(args)
    values, specs = kernel._bind(func, {})
    sp = kernel._specialization(specs)
    from metalbench.numba_compat.host import _dims
    gd, bd = _dims(griddim, "griddim"), _dims(blockdim, "blockdim")
    run_functional(sp, kernel.name, values, tuple(a * b for a, b in zip(gd, bd)), bd, "sim")
    for d, f in zip(direct, func):
        if isinstance(d, np.ndarray):
            if exact:
                np.testing.assert_array_equal(f, d)
            else:
                np.testing.assert_allclose(f, d, rtol=1e-5, atol=1e-5)
    return direct, func


def r(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_functional_add_map():
    run_both(P.add_k, 2, 256, r(300), r(300), r(300))


def test_functional_partial_writes_keep_originals():
    a = r(40)
    out = r(40)
    direct, func = run_both(P.shift_left, 2, 32, a, out)
    assert func[1][0] == out[0]


def test_functional_read_modify_write_in_place():
    run_both(P.scale_2d_stride, (2, 2), (4, 8), r(50, 70), 3.0)


def test_functional_puzzles_and_2d():
    run_both(P.map_2d_guard, 1, (8, 8), r(5, 5), r(5, 5), 5)
    run_both(P.grid2d, (5, 3), (8, 8), r(37, 21), r(37, 21))


def test_functional_shared_memory_kernels():
    run_both(P.pooling, 4, P.TPB, r(30), r(30), 30)
    run_both(P.dot, 4, P.THREADS, r(3000), r(3000), r(4))
    n = 40
    bpg = math.ceil(n / P.TILE)
    run_both(P.matmul_tiled, (bpg, bpg), (P.TILE, P.TILE), r(n, n), r(n, n), r(n, n))


def test_functional_device_function_and_local_array():
    run_both(P.apply_sigmoid, 2, 256, r(500), r(500))
    run_both(P.first_k_above, 3, 32, r(70, 20), 0.8, r(70, 4))


def test_functional_atomic_histogram_accumulates_onto_existing():
    x = rng.uniform(-3, 3, 10000).astype(np.float32)
    hist = rng.integers(1, 50, 16).astype(np.int32)
    run_both(P.histogram, 8, 128, x, hist, -2.0, 0.25)


@cuda.jit
def atomic_ticket(counter, tickets, hist):
    i = cuda.grid(1)
    if i < tickets.size:
        # The old value an atomic returns must be the in-place one: original + delta so far.
        t = cuda.atomic.add(counter, 0, 1)
        tickets[i] = t
        cuda.atomic.sub(hist, i % 4, 3)
        v = hist[0]


def test_functional_atomic_old_values_and_mixed_with_stores_elsewhere():
    counter = np.array([1000], np.int32)
    tickets = rng.integers(1, 9, 50).astype(np.int32)
    hist = rng.integers(10, 90, 4).astype(np.uint32)
    direct, func = run_both(atomic_ticket, 1, 64, counter, tickets, hist, exact=False)
    assert sorted(func[1].tolist()) == list(range(1000, 1050))
    assert func[0][0] == 1050
    np.testing.assert_array_equal(func[2], direct[2])


@cuda.jit
def or_flags(flags, x):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.or_(flags, i % 2, 1 << (x[i] % 31))


def test_functional_atomic_or():
    run_both(or_flags, 1, 64, rng.integers(1, 1 << 20, 2).astype(np.uint32),
             rng.integers(0, 1000, 60).astype(np.int32))


def test_functional_ir_shape():
    kir = P.add_k.ir(r(8), r(8), r(8))
    new, plans = inplace.functionalize(kir)
    assert [p.param for p in plans] == ["out"]
    assert [p.name for p in new.inputs] == ["a", "b", "out"]
    assert [p.name for p in new.outputs] == ["out__out", "out__mask"]
    text = ir.dump(new)
    assert "out__mask[i] = 1" in text
    assert not any(isinstance(n, (ir.Store, ir.Atomic)) and n.buf == "out" for n in ir.walk(new.body))
    # The original IR is untouched.
    assert not kir.outputs


@cuda.jit
def max_in_place(m, x):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.max(m, 0, x[i])


@cuda.jit
def atomic_and_store(h, x):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(h, 0, x[i])
        h[1] = x[i]


@cuda.jit(device=True)
def put(arr, i, v):
    arr[i] = v


@cuda.jit
def via_device_fn(out, x):
    i = cuda.grid(1)
    if i < x.size:
        put(out, i, x[i])


@cuda.jit
def half_written_with_atomic(h, y, x):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(h, 0, x[i])
        y[i] = 1


@pytest.mark.parametrize("kernel, args, what", [
    (max_in_place, lambda: (np.array([1], np.int32), rng.integers(1, 9, 8).astype(np.int32)), "atomic max"),
    (atomic_and_store, lambda: (np.array([1, 2], np.int32), rng.integers(1, 9, 8).astype(np.int32)),
     "both atomically and by plain stores"),
    (via_device_fn, lambda: (r(8), r(8)), "device function"),
    (half_written_with_atomic, lambda: (np.array([1], np.int32), np.ones(8, np.float16),
                                        rng.integers(1, 9, 8).astype(np.int32)), "every output atomic"),
])
def test_functional_refusals_name_the_parameter(kernel, args, what):
    a = args()
    values, specs = kernel._bind(a, {})
    sp = kernel._specialization(specs)
    with pytest.raises(KernelLaunchError, match=what) as e:
        inplace.functionalize(sp.ir, kernel.name)
    assert kernel.name in str(e.value)
    assert "array argument" in str(e.value)


def test_merge_helper():
    p = inplace.Plan("h", "acc", ["h__acc"], "+")
    got = inplace.merge(p, np.array([1, 2], np.uint32), {"h__acc": np.array([np.uint32(2**32 - 1), 3], np.uint32)})
    assert got.tolist() == [0, 5]


# ----------------------------------------------------------------------------- real GPU backends

def _gpu_backends():
    from metalbench import launch as L
    return [b for b, ok in (("metal", L.metal_available()), ("cuda", L.cuda_available())) if ok]


@pytest.mark.gpu
@pytest.mark.parametrize("case", ["add", "stride2d", "dot", "matmul", "hist", "local"])
def test_gpu_backend_matches_sim(case):
    backends = _gpu_backends()
    if not backends:
        pytest.skip("no Metal or CUDA backend here")
    n = 40
    bpg = math.ceil(n / P.TILE)
    kernel, g, b, args, exact = {
        "add": (P.add_k, 2, 256, (r(300), r(300), r(300)), True),
        "stride2d": (P.scale_2d_stride, (2, 2), (4, 8), (r(50, 70), 3.0), True),
        "dot": (P.dot, 4, P.THREADS, (r(3000), r(3000), r(4)), False),
        "matmul": (P.matmul_tiled, (bpg, bpg), (P.TILE, P.TILE), (r(n, n), r(n, n), r(n, n)), False),
        "hist": (P.histogram, 8, 128, (rng.uniform(-3, 3, 10000).astype(np.float32),
                                       rng.integers(1, 50, 16).astype(np.int32), -2.0, 0.25), True),
        "local": (P.first_k_above, 3, 32, (r(70, 20), 0.8, r(70, 4)), True),
    }[case]
    ref = copies(args)
    kernel[g, b](*ref)                       # sim (fixture)
    for be in backends:
        got = copies(args)
        kernel.configure(backend=be)
        try:
            kernel[g, b](*got)
        finally:
            kernel.configure(backend="auto")
        for x, y in zip(got, ref):
            if isinstance(x, np.ndarray):
                if exact:
                    np.testing.assert_array_equal(x, y)
                else:
                    np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-4)
