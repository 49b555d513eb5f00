"""Device arrays on the device (issue 14's GPU paragraph, issue 18 item 7).

Without a GPU, the "cuda" backend is emulated: ``L.cuda_available`` says yes and each
MLX kernel object is replaced by a stand-in that runs the kernel's IR on the simulator
and returns ``mx.array``s, as ``mx.fast.cuda_kernel`` would. Everything metalbench does
around it is the real GPU path: device arrays hold ``mx.array``s, launches run the
functionalized kernel and rebind or merge on the device, transfers go through the
driver. Results are compared with the same kernels run in place on the simulator.
"""
import mlx.core as mx
import numpy as np
import pytest

from metalbench import cuda
from metalbench import launch as L
from metalbench.numba_compat import devicearray as DA
from metalbench.numba_compat import inplace
from metalbench.numba_compat.runtime_stubs import driver
from metalbench.protocol import Specialization
from simcuda import kernel_values  # noqa: E402

RNG = np.random.default_rng(11)


class SimStandIn:
    """An ``mx.fast.cuda_kernel`` object computing with the simulator."""
    launches = []

    def __init__(self, spec):
        self.spec = spec

    def __call__(self, *, inputs, grid, threadgroup, output_shapes, output_dtypes, init_value=None, **kw):
        names = [n for n, _, _ in self.spec.inputs]
        assert len(inputs) >= len(names)
        vals = kernel_values(self.spec, inputs)
        outs = [(p.name, tuple(s), p.type) for p, s in zip(self.spec.ir.outputs, output_shapes)]
        SimStandIn.launches.append((self.spec, init_value, [o[0] for o in outs]))
        res, _ = self.spec.launch_sim(vals, outs, grid, threadgroup, False, init_value)
        return res


@pytest.fixture
def gpu(monkeypatch):
    monkeypatch.setattr(L, "cuda_available", lambda: True)
    monkeypatch.setattr(Specialization, "mlx_kernel", lambda self, backend, exact_grid=False, threadgroup=None, lengths=(): SimStandIn(self))
    SimStandIn.launches.clear()
    cuda.set_backend("cuda")
    yield
    cuda.set_backend(None)


@pytest.fixture
def transfers(monkeypatch):
    """Counts of host-to-device and device-to-host copies."""
    n = {"h2d": 0, "d2h": 0}
    h2d, d2h = driver.cuMemcpyHtoD, driver.cuMemcpyDtoH

    def count_h2d(*a):
        n["h2d"] += 1
        return h2d(*a)

    def count_d2h(*a):
        n["d2h"] += 1
        return d2h(*a)
    monkeypatch.setattr(driver, "cuMemcpyHtoD", count_h2d, raising=False)
    monkeypatch.setattr(driver, "cuMemcpyDtoH", count_d2h, raising=False)
    return n


def r(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


# ----------------------------------------------------------------------------- kernels

@cuda.jit
def step(p, v, dt):
    i = cuda.grid(1)
    if i < p.size:
        v[i] -= dt * p[i]
        p[i] += dt * v[i]


@cuda.jit
def scale_n(a, n, f):
    i = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
    if i >= n:
        return
    a[i] = a[i] * f


@cuda.jit
def shift_left(a, b):
    i = cuda.grid(1)
    if i < a.size - 1:
        a[i] = b[i + 1]


@cuda.jit
def fill2d(a, c):
    i, j = cuda.grid(2)
    if i < a.shape[0] and j < a.shape[1]:
        a[i, j] = a[i, j] + c * i + j


@cuda.jit
def neighbours(src, dst):
    i = cuda.grid(1)
    n = src.size
    if i < n:
        left = src[(i + n - 1) % n]
        right = src[(i + 1) % n]
        dst[i] = 0.5 * (left + right) - src[i]


@cuda.jit
def hist(x, bins):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(bins, x[i] % bins.size, 1)


@cuda.jit
def self_neighbour(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] = a[i] + 1
        if i > 0:
            a[i - 1] = a[i - 1] + 0


def sim_reference(kernel, griddim, blockdim, *args):
    """The kernel run in place on the simulator, on host copies."""
    host = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    kernel.configure(backend="sim")
    try:
        kernel[griddim, blockdim](*host)
    finally:
        kernel._backend = None
    return host


# ----------------------------------------------------------------------------- tests

def test_device_mode_arrays_hold_mlx_arrays(gpu, transfers):
    a = r(100)
    d = cuda.to_device(a)
    assert d.on_device and isinstance(d._read(), mx.array)
    assert transfers == {"h2d": 1, "d2h": 0}
    e = cuda.device_array(100, np.float32)
    f = cuda.device_array_like(d)
    assert e.on_device and f.on_device and transfers["h2d"] == 1
    np.testing.assert_array_equal(d.copy_to_host(), a)
    assert transfers["d2h"] == 1
    # records have no MLX dtype: host mode, still a device array
    rec = cuda.device_array(3, np.dtype([("x", np.int32), ("y", np.float32)]))
    assert not rec.on_device and rec.copy_to_host()["x"].tolist() == [0, 0, 0]


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("mode", ["sim", "gpu"])
def test_layout_views_and_writes_follow_numpy(order, mode, request):
    if mode == "gpu":
        request.getfixturevalue("gpu")
    host = np.asarray(r(6, 8), order=order)
    d = cuda.to_device(host)
    assert d.shape == host.shape and d.strides == host.strides
    assert d.flags["C_CONTIGUOUS"] == host.flags.c_contiguous
    assert d.flags["F_CONTIGUOUS"] == host.flags.f_contiguous
    for key in [(slice(None, None, 2), slice(1, None)), 3, (slice(1, 4), 2), (Ellipsis, 1)]:
        v, hv = d[key], host[key]
        assert v.shape == hv.shape and v.strides == hv.strides
        np.testing.assert_array_equal(v.copy_to_host(), hv)
    t = d.T
    assert t.strides == host.T.strides
    np.testing.assert_array_equal(t.copy_to_host(), host.T)
    # writes through views reach the parent
    d[::2, 1:3] = 7.0
    host[::2, 1:3] = 7.0
    v = d[1]
    v[2:4] = -1.0
    host[1, 2:4] = -1.0
    d.T[0] = 3.0
    host.T[0] = 3.0
    np.testing.assert_array_equal(d.copy_to_host(), host)
    assert d[2, 3] == host[2, 3]
    like = cuda.device_array_like(d[::2, ::2].T)
    assert like.strides == np.zeros_like(host[::2, ::2].T).strides
    np.testing.assert_array_equal(np.asarray(cuda.to_device(np.arange(6)).reshape(2, 3)),
                                  np.arange(6).reshape(2, 3))
    assert [s.copy_to_host().tolist() for s in cuda.to_device(np.arange(5)).split(2)] == [[0, 1], [2, 3], [4]]


def test_copy_to_host_into_array_and_copy_to_device(gpu, transfers):
    a = r(10)
    d = cuda.device_array_like(a)
    d.copy_to_device(a)
    out = np.zeros_like(a)
    assert d.copy_to_host(out, stream=cuda.stream()) is out
    np.testing.assert_array_equal(out, a)
    assert transfers == {"h2d": 1, "d2h": 1}
    d2 = cuda.device_array_like(a)
    d2.copy_to_device(d)                     # device to device: no transfer
    assert transfers == {"h2d": 1, "d2h": 1}
    np.testing.assert_array_equal(d2.copy_to_host(), a)


def test_transfers_can_be_watched_and_refused(gpu):
    d = cuda.to_device(r(4))

    def refuse(*a, **k):
        raise cuda.cudadrv.driver.CudaAPIError(999, "Transfer not allowed") if hasattr(cuda, "cudadrv") \
            else RuntimeError("Transfer not allowed")
    old = driver.cuMemcpyDtoH, driver.cuMemcpyHtoD
    driver.cuMemcpyDtoH = driver.cuMemcpyHtoD = refuse
    try:
        with pytest.raises(Exception, match="Transfer not allowed"):
            d.copy_to_host()
        with pytest.raises(Exception, match="Transfer not allowed"):
            cuda.to_device([1])
        scale_n[1, 32](d, 4, np.float32(2))     # a launch on device arrays transfers nothing
    finally:
        driver.cuMemcpyDtoH, driver.cuMemcpyHtoD = old


KERNEL_CASES = [
    ("step", step, 4, 256, lambda: (r(1000), r(1000), np.float32(0.01))),
    ("scale_n", scale_n, 4, 256, lambda: (r(1000), 1000, np.float32(3))),
    ("scale_n_partial", scale_n, 4, 256, lambda: (r(1000), 700, np.float32(3))),
    ("shift_left", shift_left, 1, 64, lambda: (r(50), r(50))),
    ("fill2d", fill2d, (2, 3), (8, 4), lambda: (r(13, 11), np.float32(0.5))),
    ("fill2d_short_grid", fill2d, (1, 1), (8, 4), lambda: (r(13, 11), np.float32(0.5))),
    ("neighbours", neighbours, 2, 128, lambda: (r(200), r(200))),
    ("hist", hist, 2, 128, lambda: (RNG.integers(0, 1000, 200).astype(np.int32), np.zeros(16, np.int32))),
    ("self_neighbour", self_neighbour, 1, 64, lambda: (r(40),)),
]


@pytest.mark.parametrize("name,kernel,griddim,blockdim,make", KERNEL_CASES, ids=[c[0] for c in KERNEL_CASES])
def test_launches_on_device_arrays_match_the_simulator(gpu, transfers, name, kernel, griddim, blockdim, make):
    args = make()
    want = sim_reference(kernel, griddim, blockdim, *args)
    want = sim_reference(kernel, griddim, blockdim, *want)      # twice: the thin path's second call
    dev = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    h2d = transfers["h2d"]
    for _ in range(2):
        kernel[griddim, blockdim](*dev)
    assert transfers["h2d"] == h2d and transfers["d2h"] == 0, "a launch on device arrays copied to or from the host"
    for d, w in zip(dev, want):
        if isinstance(w, np.ndarray):
            np.testing.assert_allclose(d.copy_to_host(), w, rtol=1e-6, atol=1e-6)


def test_covered_writes_need_no_mask_and_no_merge(gpu):
    p, v = cuda.to_device(r(1000)), cuda.to_device(r(1000))
    step[4, 256](p, v, np.float32(0.1))
    spec, init_value, outs = SimStandIn.launches[-1]
    assert sorted(outs) == ["p__out", "v__out"] and init_value is None
    step[4, 256](p, v, np.float32(0.1))            # the thin path: the arrays ARE the kernel's outputs
    assert len(SimStandIn.launches) == 2
    # a grid too short for the array: not covered, the mask scheme keeps the unwritten tail
    scale_n[1, 256](p, 1000, np.float32(2))
    assert any(o.endswith("__mask") for o in SimStandIn.launches[-1][2])


@cuda.jit
def ramp(out, f):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = i * f


def test_an_array_only_stored_to_and_measured_is_no_input(gpu, transfers):
    # covered: the kernel writes every element and reads only out.size, so the old
    # contents are not passed (no wait on the array's producer, as a raw kernel's fresh output)
    d = cuda.to_device(r(1000))
    for f in (0.5, 0.25):
        ramp[4, 256](d, np.float32(f))
        spec = SimStandIn.launches[-1][0]
        assert [p.name for p in spec.ir.inputs] == ["f"] and [p.name for p in spec.ir.outputs] == ["out__out"]
        np.testing.assert_allclose(d.copy_to_host(), np.arange(1000) * np.float32(f), rtol=1e-6)
    ramp[1, 256](d, np.float32(1))          # a short grid: not covered, the old tail is kept
    want = np.arange(1000) * np.float32(0.25)
    want[:256] = np.arange(256)
    np.testing.assert_allclose(d.copy_to_host(), want, rtol=1e-6)
    assert "out" in [p.name for p in SimStandIn.launches[-1][0].ir.inputs]


def test_coverage_bound_by_a_scalar_is_checked_per_call(gpu):
    a0 = r(300)
    d = cuda.to_device(a0)
    scale_n[2, 256](d, 300, np.float32(2))          # covered
    scale_n[2, 256](d, 300, np.float32(2))          # thin path
    scale_n[2, 256](d, 100, np.float32(2))          # same signature, other bound: only 100 written
    want = a0 * 4
    want[:100] *= 2
    np.testing.assert_allclose(d.copy_to_host(), want, rtol=1e-6)


def test_mixed_host_and_device_arguments(gpu):
    src, dst = r(64), np.zeros(64, np.float32)
    d_src = cuda.to_device(src)
    neighbours[1, 64](d_src, dst)                   # NumPy output updated in place
    want = sim_reference(neighbours, 1, 64, src, np.zeros(64, np.float32))[1]
    np.testing.assert_allclose(dst, want, rtol=1e-6)
    m = mx.array(np.zeros(64, np.float32))
    neighbours[1, 64](d_src, m)                     # an mx.array output updated in place
    np.testing.assert_allclose(np.asarray(m), want, rtol=1e-6)


def test_views_and_f_order_arrays_as_kernel_arguments(gpu):
    host = np.asarray(r(13, 11), order="F")
    d = cuda.to_device(host)
    fill2d[(2, 3), (8, 4)](d, np.float32(1))
    want = sim_reference(fill2d, (2, 3), (8, 4), np.ascontiguousarray(host), np.float32(1))[0]
    np.testing.assert_allclose(d.copy_to_host(), want, rtol=1e-6)
    assert d.copy_to_host().flags.f_contiguous
    base = r(100)
    dbase = cuda.to_device(base)
    view = dbase[10:60]
    scale_n[1, 64](view, 50, np.float32(2))
    want = base.copy()
    want[10:60] *= 2
    np.testing.assert_allclose(dbase.copy_to_host(), want, rtol=1e-6)


def test_device_arrays_on_the_simulator_stay_exact_in_place():
    cuda.set_backend("sim")
    try:
        a = r(100)
        d = cuda.to_device(a)
        assert not d.on_device
        self_neighbour[1, 128](d)
        want = sim_reference(self_neighbour, 1, 128, a)[0]
        np.testing.assert_array_equal(d.copy_to_host(), want)
        view = d[::2]
        scale_n[1, 64](view, 50, np.float32(2))
        want[::2] *= 2
        np.testing.assert_array_equal(d.copy_to_host(), want)
    finally:
        cuda.set_backend(None)


def test_synchronize_evaluates_pending_launches(gpu):
    p, v = cuda.to_device(r(256)), cuda.to_device(r(256))
    from metalbench.numba_compat import runtime_stubs
    for _ in range(3):
        step[1, 256](p, v, np.float32(0.1))
    assert runtime_stubs._pending
    s = cuda.stream()
    with s.auto_synchronize():
        step[1, 256, s](p, v, np.float32(0.1))
    assert not runtime_stubs._pending
    e0, e1 = cuda.event(), cuda.event()
    e0.record()
    step[1, 256](p, v, np.float32(0.1))
    e1.record()
    e1.synchronize()
    assert e0.elapsed_time(e1) >= 0 and cuda.event_elapsed_time(e0, e1) >= 0


def test_coverage_analysis_on_ir():
    cuda.set_backend("sim")
    try:
        p, v = np.ones(10, np.float32), np.ones(10, np.float32)
        c = inplace.coverage(step.ir(p, v, 0.1))
        assert set(c) == {"p", "v"} and len(c["v"].after_loads) == 1 and not c["p"].after_loads
        assert set(inplace.coverage(shift_left.ir(p, v))) == {"a"}
        assert c["p"].holds((16, 1, 1), {"p": (10,), "v": (10,)}, {}) is True
        assert c["p"].holds((8, 1, 1), {"p": (10,), "v": (10,)}, {}) is False
        assert inplace.coverage(self_neighbour.ir(p)) == {}
        assert inplace.coverage(hist.ir(np.ones(4, np.int32), np.ones(4, np.int32))) == {}
        c2 = inplace.coverage(fill2d.ir(np.ones((3, 4), np.float32), 1.0))
        assert [a for a, _ in c2["a"].axes] == [0, 1]
        assert c2["a"].holds((3, 4, 1), {"a": (3, 4)}, {"c": 1.0})
        assert not c2["a"].holds((4, 3, 1), {"a": (3, 4)}, {"c": 1.0})
    finally:
        cuda.set_backend(None)


def test_merge_device_matches_host_merge():
    orig = np.arange(6, dtype=np.int32)
    outs = {"x__out": np.array([9, 9, 9, 9, 9, 9], np.int32), "x__mask": np.array([1, 0, 1, 0, 0, 1], np.uint8),
            "x__acc": np.array([1, 2, 3, 4, 5, 6], np.int32)}
    for plan in [inplace.Plan("x", "mask", ["x__out", "x__mask"]), inplace.Plan("x", "acc", ["x__acc"], "+"),
                 inplace.Plan("x", "acc", ["x__acc"], "^"), inplace.Plan("x", "cover", ["x__out"])]:
        host = inplace.merge(plan, orig, outs)
        dev = inplace.merge_device(plan, mx.array(orig), {k: mx.array(v) for k, v in outs.items()})
        np.testing.assert_array_equal(np.asarray(dev), host)


def test_launch_configuration_errors_name_the_problem():
    with pytest.raises(ValueError, match=r"griddim must be a sequence of 1, 2 or 3 integers, got \[1, 2, 3, 4\]"):
        step[(1, 2, 3, 4), (5, 6)]
    with pytest.raises(TypeError, match=r"blockdim must be a sequence of integers, got \[3.0\]"):
        step[2, 3.0]
    assert step[4, 256] is step[4, 256]             # made once per configuration


def test_devicearray_helpers():
    d, copied = DA.auto_device(2)
    assert copied and d.copy_to_host() == np.array(2)
    with pytest.raises(ValueError, match="contiguous"):
        DA.auto_device(np.arange(10.0)[:-1:2][::-1][::2])
    assert cuda.device_array(()).shape == ()
    assert cuda.pinned_array_like(np.zeros((3, 4), order="F")).flags.f_contiguous
    assert isinstance(cuda.mapped_array(4), np.ndarray)
    assert cuda.is_cuda_array(cuda.to_device(np.ones(2))) and not cuda.is_cuda_array(np.ones(2))
    host = cuda.to_device(np.arange(4.0))
    if host._host is None:
        # on a GPU backend the array lives in MLX, which gives no device pointer: the
        # interface must say so, not hand out a host pointer a CUDA library would misuse
        with pytest.raises(AttributeError, match="expose no device pointer"):
            host.__cuda_array_interface__
    else:
        assert host.__cuda_array_interface__["shape"] == (4,)
