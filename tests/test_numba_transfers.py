"""What each transfer of the Numba layer costs (issue 18 item 7), counted, not timed.

``cuda.to_device`` costs one copy, ``copy_to_host`` one copy (into ``ary=`` when given,
with no temporary), ``device_array`` and launches on device arrays none; on Apple's
unified memory (``metal``) ``copy_to_host()`` is a read-only view of MLX's buffer.

Without a GPU the backends are emulated as in ``test_numba_host_device.py``: the MLX
kernel object is a stand-in that runs the kernel on the simulator and returns
``mx.array`` s. Everything around it is the real GPU path. What is counted:

- host bytes NumPy allocates (``tracemalloc`` sees every NumPy buffer) and bytes MLX
  allocates (``mx.get_peak_memory`` over the active memory at the start): a copy into a
  new buffer shows up as one array's bytes in one of them;
- calls of ``np.copyto`` in the layer (a copy into an existing buffer allocates nothing);
- transfers through ``driver.cuMemcpyHtoD/DtoH``, kernel calls of the stand-in, and the
  MLX primitives a launch leaves in the graph (``mx.export_to_dot``).
"""
import contextlib
import io
import re
import tracemalloc

import mlx.core as mx
import numpy as np
import pytest

from metalbench import cuda
from metalbench import launch as L
from metalbench.numba_compat import devicearray as DA
from metalbench.numba_compat.runtime_stubs import driver
from metalbench.protocol import Specialization
from simcuda import kernel_values  # noqa: E402

N = 1 << 16            # elements: 256 KiB of float32, far above any bookkeeping allocation
NB = N * 4


class StandIn:
    """An ``mx.fast.cuda_kernel``/``metal_kernel`` object computing with the simulator.
    Its own NumPy work is left out of the host bytes counted: the peak before it is
    kept (``peak``) and the peak reset after it."""
    calls = 0
    peak = 0

    def __init__(self, spec):
        self.spec = spec

    def __call__(self, *, inputs, grid, threadgroup, output_shapes, output_dtypes, init_value=None, **kw):
        StandIn.calls += 1
        StandIn.peak = max(StandIn.peak, tracemalloc.get_traced_memory()[1])
        vals = kernel_values(self.spec, inputs)
        outs = [(p.name, tuple(s), p.type) for p, s in zip(self.spec.ir.outputs, output_shapes)]
        # tie=False: a GPU kernel's outputs are its primitive's own (what the tests count)
        res, _ = self.spec.launch_sim(vals, outs, grid, threadgroup, False, init_value, tie=False)
        if tracemalloc.is_tracing():
            tracemalloc.reset_peak()
        return res


@pytest.fixture(params=["cuda", "metal"])
def gpu(request, monkeypatch):
    """The GPU backend ``request.param``, emulated."""
    monkeypatch.setattr(L, "cuda_available", lambda: request.param == "cuda")
    monkeypatch.setattr(L, "metal_available", lambda: request.param == "metal")
    monkeypatch.setattr(Specialization, "mlx_kernel",
                        lambda self, backend, exact_grid=False, threadgroup=None, lengths=(): StandIn(self))
    cuda.set_backend(request.param)
    yield request.param
    cuda.set_backend(None)


class Counts(dict):
    """What the block counted: ``numpy_bytes``, ``mlx_bytes``, ``copyto``, ``h2d``,
    ``d2h``, ``kernels``."""


@contextlib.contextmanager
def counted(monkeypatch):
    c = Counts(numpy_bytes=0, mlx_bytes=0, copyto=0, h2d=0, d2h=0, kernels=0)
    real_copyto, h2d, d2h = np.copyto, driver.cuMemcpyHtoD, driver.cuMemcpyDtoH

    def copyto(*a, **k):
        c["copyto"] += 1
        return real_copyto(*a, **k)

    def count(key, f):
        def g(*a):
            c[key] += 1
            return f(*a)
        return g
    monkeypatch.setattr(np, "copyto", copyto)
    monkeypatch.setattr(driver, "cuMemcpyHtoD", count("h2d", h2d), raising=False)
    monkeypatch.setattr(driver, "cuMemcpyDtoH", count("d2h", d2h), raising=False)
    calls0, StandIn.peak = StandIn.calls, 0
    mx.reset_peak_memory()              # (the peak restarts at 0, below the active memory)
    mlx0 = mx.get_active_memory()
    tracemalloc.start()
    try:
        yield c
    finally:
        c["numpy_bytes"] = max(StandIn.peak, tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        c["mlx_bytes"] = max(0, mx.get_peak_memory() - mlx0)
        c["kernels"] = StandIn.calls - calls0
        monkeypatch.setattr(np, "copyto", real_copyto)
        monkeypatch.setattr(driver, "cuMemcpyHtoD", h2d, raising=False)
        monkeypatch.setattr(driver, "cuMemcpyDtoH", d2h, raising=False)


def copies(nbytes: int) -> int:
    """Whole copies of an ``NB``-byte array in ``nbytes`` allocated bytes (bookkeeping
    allocations are far below one array)."""
    return round(nbytes / NB)


def primitives(*arrays) -> list:
    """The MLX primitives still to run for ``arrays`` (the graph a launch left)."""
    f = io.StringIO()
    mx.export_to_dot(f, *arrays)
    return sorted(re.findall(r'label ="(\w+)", shape=rectangle', f.getvalue()))


def host(seed=0):
    return np.random.default_rng(seed).standard_normal(N).astype(np.float32)


@cuda.jit
def axpy(a, x, y, n):
    i = cuda.grid(1)
    if i < n:
        y[i] = a * x[i] + y[i]


@cuda.jit
def count_positive(x, hits, lo, n):
    i = cuda.grid(1)
    if i < n and x[i] > lo:
        cuda.atomic.add(hits, 0, 1)


# ----------------------------------------------------------------------------- the counts

def test_to_device_is_one_copy_into_mlx(gpu, monkeypatch):
    a = host()
    with counted(monkeypatch) as c:
        d = cuda.to_device(a)
    assert (copies(c["numpy_bytes"]), copies(c["mlx_bytes"]), c["copyto"], c["h2d"]) == (0, 1, 0, 1), c
    a[:] = 0                                    # a copy: later host writes do not reach it
    np.testing.assert_array_equal(d.copy_to_host(), host())


def test_copy_to_host_copies_once_on_cuda_and_is_a_view_on_metal(gpu, monkeypatch):
    d = cuda.to_device(host())
    with counted(monkeypatch) as c:
        h = d.copy_to_host()
    if gpu == "metal":
        assert (copies(c["numpy_bytes"]), c["copyto"], c["d2h"]) == (0, 0, 0), c
        assert not h.flags.writeable and np.shares_memory(h, np.asarray(d._dev))
        with pytest.raises(ValueError, match="read-only"):
            h[0] = 1
    else:
        assert (copies(c["numpy_bytes"]), c["copyto"], c["d2h"]) == (1, 1, 1), c
        assert h.flags.writeable and not np.shares_memory(h, np.asarray(d._dev))
    assert copies(c["mlx_bytes"]) == 0, c
    np.testing.assert_array_equal(h, host())


def test_copy_to_host_into_ary_has_no_temporary(gpu, monkeypatch):
    d = cuda.to_device(host())
    ary = np.empty(N, np.float32)
    with counted(monkeypatch) as c:
        got = d.copy_to_host(ary)
    assert got is ary
    assert (copies(c["numpy_bytes"]), copies(c["mlx_bytes"]), c["copyto"], c["d2h"]) == (0, 0, 1, 1), c
    np.testing.assert_array_equal(ary, host())


def test_device_array_and_launches_transfer_nothing(gpu, monkeypatch):
    x, y0 = host(1), host(2)
    with counted(monkeypatch) as c:
        d_out = cuda.device_array(N, np.float32)
    assert (copies(c["numpy_bytes"]), c["h2d"], c["d2h"]) == (0, 0, 0), c
    d_x, d_y = cuda.to_device(x), cuda.to_device(y0)
    hits = cuda.to_device(np.zeros(1, np.int32))
    a = np.float32(0.5)
    axpy[N // 256, 256](a, d_x, d_y, np.int32(N))        # the first launch compiles
    count_positive[N // 256, 256](d_x, hits, np.float32(0), np.int32(N))
    cuda.synchronize()
    with counted(monkeypatch) as c:
        for k in range(3):
            axpy[N // 256, 256](a, d_x, d_y, np.int32(N))
            assert primitives(d_y._dev) == []           # covered: the kernel's output itself
            count_positive[N // 256, 256](d_x, hits, np.float32(0), np.int32(N))
            # the atomics' sums onto the old counts, one per launch since the synchronisation
            # (the kernel does not read hits, so it does not wait for the last sum)
            # (on cuda each atomic output is one int32 padded past MLX's small pool and sliced
            # back: protocol.small_atomic_outputs)
            assert primitives(hits._dev) == ["Add"] * (k + 1) + ["Slice"] * (k + 1) * (gpu == "cuda")
        cuda.synchronize()
    # one output per launch (MLX kernels write fresh outputs), nothing through the host
    assert (copies(c["numpy_bytes"]), c["copyto"], c["h2d"], c["d2h"], c["kernels"]) == (0, 0, 0, 0, 6), c
    want = y0
    for _ in range(4):
        want = a * x + want
    np.testing.assert_allclose(d_y.copy_to_host(), want, rtol=1e-5)
    assert d_out.copy_to_host().tolist() == [0.0] * N
    assert hits.copy_to_host()[0] == 4 * int((x > 0).sum())


def test_metal_view_is_a_snapshot(gpu, monkeypatch):
    """The read-back view of a device array stays what it was when later launches write
    the array (they rebind it to new MLX buffers), and keeps MLX's buffer alive."""
    x, y0 = host(1), host(2)
    d_x, d_y = cuda.to_device(x), cuda.to_device(y0)
    before = d_y.copy_to_host()
    axpy[N // 256, 256](np.float32(2), d_x, d_y, np.int32(N))
    after = d_y.copy_to_host()
    del d_y
    np.testing.assert_array_equal(before, y0)
    np.testing.assert_allclose(after, 2 * x + y0, rtol=1e-6)


def test_views_and_float64_read_back(gpu):
    """Slices, transposes and (on cuda) float64 held as its bits read back right through
    the view of MLX's buffer."""
    m = np.random.default_rng(3).standard_normal((6, 5)).astype(np.float32)
    d = cuda.to_device(m)
    np.testing.assert_array_equal(d[1:5:2].copy_to_host(), m[1:5:2])
    np.testing.assert_array_equal(d.T.copy_to_host(), m.T)
    np.testing.assert_array_equal(np.asarray(d[:, 2]), m[:, 2])
    buf = np.zeros((5, 6), np.float32)
    np.testing.assert_array_equal(d.T.copy_to_host(buf), m.T)
    if gpu == "cuda":
        f = np.random.default_rng(4).standard_normal(7)
        df = cuda.to_device(f)
        got = df.copy_to_host()
        assert got.dtype == np.float64 and got.flags.writeable
        np.testing.assert_array_equal(got, f)
