"""The fast path of repeated launches (thin.FastCall fronts): a kernel object's call goes
straight to the last entry's generated check-and-launch, which must take exactly the
calls with that entry's key (dtypes, shapes, scalar types, constexpr and template
values, grid, threadgroup, backend, no options) and hand every other call to the
general path. Each test changes one part of the key after a repeated call and checks
the launch against a fresh ``bind`` (the specialisation it chooses) and NumPy.

The GPU is emulated: ``Specialization.mlx_kernel`` returns a stand-in that records the
call (which specialisation, output shapes/dtypes, grid, init_value) and computes it with
the simulator, so a launch through a stale entry shows as the wrong specialisation,
shape or dtype, or as wrong values.
"""
import copy
import inspect
import traceback

import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench import cuda
from metalbench import launch as L
from metalbench.dsl import *  # noqa: F401,F403
from metalbench.errors import _PACKAGE_DIR
from metalbench.protocol import Specialization
from metalbench.thin import FastCall
from simcuda import kernel_values  # noqa: E402

RNG = np.random.default_rng(18)


def rand(n, dtype=np.float32):
    return RNG.standard_normal(n).astype(dtype)


class StandIn:
    """An ``mx.fast.cuda_kernel`` object: records each call, computes it on the simulator."""

    def __init__(self, spec, log):
        self.spec, self.log = spec, log

    def __call__(self, *, inputs, grid, threadgroup, output_shapes, output_dtypes, init_value=None,
                 template=None, **kw):
        self.log.append(dict(key=self.spec.key, inputs=list(inputs), shapes=[tuple(s) for s in output_shapes],
                             dtypes=list(output_dtypes), grid=grid, threadgroup=threadgroup, init_value=init_value))
        vals = kernel_values(self.spec, inputs)
        outs = [(p.name, tuple(s), p.type) for p, s in zip(self.spec.ir.outputs, output_shapes)]
        return self.spec.launch_sim(vals, outs, grid, threadgroup, False, init_value)[0]


@pytest.fixture
def gpu(monkeypatch):
    """The cuda backend, emulated; yields the log of MLX kernel calls."""
    log = []
    monkeypatch.setattr(L, "cuda_available", lambda: True)
    monkeypatch.setattr(L, "metal_available", lambda: False)
    monkeypatch.setattr(Specialization, "mlx_kernel",
                        lambda self, backend, exact_grid=False, threadgroup=None, lengths=(): StandIn(self, log))
    yield log


def saxpy_fn(a: float, x, y, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = a * x[i] + y[i]


def halves_fn(x, k, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = x[i] + k // 2         # k = 3: 1; k = 1.5: 0.0


def scale_fn(x, out: mb.Out, K: mb.constexpr = 2):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = x[i] * K


def served_by_bind(k, *args, **kw):
    """The specialisation key a full bind of this call chooses."""
    return k.bind(*args, backend="cuda", **kw).key


def check_repeats(k, log, args, expect, **kw):
    """Three calls with ``args``: each launches the specialisation bind chooses, with
    ``expect``'s shape and dtype and values."""
    key = served_by_bind(k, *args, **{n: v for n, v in kw.items() if n not in ("grid", "threadgroup")})
    for _ in range(3):
        out = k(*args, backend="cuda", **kw)
        assert log[-1]["key"] == key
        assert out.shape == expect.shape and out.dtype == mx.array(expect).dtype
        np.testing.assert_allclose(np.asarray(out), expect, rtol=1e-3)


def test_repeated_calls_go_through_the_front_without_binding(gpu, monkeypatch):
    k = mb.kernel(saxpy_fn)
    x, y = mx.array(rand(64)), mx.array(rand(64))
    k(2.0, x, y, grid=64, threadgroup=32, backend="cuda")
    assert k.func.__code__.co_filename.startswith("<metalbench thin call")    # the entry's front
    monkeypatch.setattr(k, "_call", lambda *a, **kw: pytest.fail("a repeated call reached the general path"))
    out = k(3.0, y, x, grid=64, threadgroup=32, backend="cuda")
    np.testing.assert_allclose(np.asarray(out), 3 * np.asarray(y) + np.asarray(x), rtol=1e-6)
    assert k.last_launch["grid"] == (64, 1, 1) and len(gpu) == 2


def test_another_shape_is_another_launch(gpu):
    k = mb.kernel(saxpy_fn)
    for n in (64, 40, 64, 40):
        x, y = rand(n), rand(n)
        check_repeats(k, gpu, (2.0, mx.array(x), mx.array(y)), 2 * x + y, grid=n, threadgroup=32)


def test_another_dtype_is_another_launch(gpu):
    k = mb.kernel(saxpy_fn)
    for dt in (np.float32, np.float16, np.float32):
        x, y = rand(48, dt), rand(48, dt)
        check_repeats(k, gpu, (2.0, mx.array(x), mx.array(y)), (2 * x + y).astype(dt), grid=48, threadgroup=16)


def test_an_array_changed_in_place_is_checked_again(gpu):
    """MLX's in-place operators replace an array's contents, shape and dtype on the same
    object (x += a 2-D array broadcasts x; an int array += a float becomes float): the
    front checks the object, never remembers it."""
    k = mb.kernel(saxpy_fn)
    x, y = mx.zeros(16), mx.array(rand(16))
    check_repeats(k, gpu, (2.0, x, y), np.asarray(y), grid=16, threadgroup=16)
    x += mx.array(rand(16, np.float16))                 # same shape and dtype: the same launch
    check_repeats(k, gpu, (2.0, x, y), 2 * np.asarray(x) + np.asarray(y), grid=16, threadgroup=16)
    y += mx.zeros((2, 16))                              # y is now (2, 16): another launch
    assert y.shape == (2, 16)
    key = served_by_bind(k, 2.0, x, y)
    k(2.0, x, y, grid=16, threadgroup=16, backend="cuda")
    assert gpu[-1]["key"] == key
    xi, yi = mx.zeros(16, dtype=mx.int32), mx.zeros(16, dtype=mx.int32)
    check_repeats(k, gpu, (2.0, xi, yi), np.zeros(16, np.int32), grid=16, threadgroup=16)
    xi += mx.array(1.5)                                 # an int32 array, now float32
    assert xi.dtype == mx.float32
    key = served_by_bind(k, 2.0, xi, yi)
    out = k(2.0, xi, yi, grid=16, threadgroup=16, backend="cuda")
    assert gpu[-1]["key"] == key and out.dtype == mx.float32 and np.asarray(out).tolist() == [3.0] * 16


def test_another_scalar_type_is_another_launch(gpu):
    k = mb.kernel(halves_fn)
    x = rand(32)
    for kv, add in ((1.5, 0.0), (3, 1.0), (1.5, 0.0), (3, 1.0), (2 ** 40, 2 ** 39), (True, 0), (1, 0), (3.0, 1.0)):
        check_repeats(k, gpu, (mx.array(x), kv), x + add, grid=32, threadgroup=32)   # (each its own type: the key)


def test_another_constexpr_value_is_another_launch(gpu):
    k = mb.kernel(scale_fn)
    x = rand(32)
    for K in (2, 3, 2, 3):
        check_repeats(k, gpu, (mx.array(x),), x * K, grid=32, threadgroup=32, K=K)
    check_repeats(k, gpu, (mx.array(x),), x * 2, grid=32, threadgroup=32)          # the default, positionally absent
    check_repeats(k, gpu, (mx.array(x),), x * 3, grid=32, threadgroup=32, K=3)     # alternating with keywords
    check_repeats(k, gpu, (mx.array(x), 5), x * 5, grid=32, threadgroup=32)       # by position


def test_another_grid_threadgroup_or_backend_is_another_launch(gpu):
    k = mb.kernel(saxpy_fn)
    x, y = mx.array(rand(64)), mx.array(rand(64))
    ref = 2 * np.asarray(x) + np.asarray(y)
    for grid, tg in ((64, 32), (64, 64), (32, 32), (64, 32)):
        out = k(2.0, x, y, grid=grid, threadgroup=tg, backend="cuda")
        assert gpu[-1]["grid"] == (grid, 1, 1) and gpu[-1]["threadgroup"] == (tg, 1, 1)
        np.testing.assert_allclose(np.asarray(out)[:grid], ref[:grid], rtol=1e-6)
    n = len(gpu)
    out = k(2.0, x, y, grid=64, threadgroup=32, backend="sim")
    assert len(gpu) == n and k.last_launch["backend"] == "sim"       # the simulator, not the GPU entry
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-6)


def test_launch_options_take_the_general_path(gpu):
    k = mb.kernel(saxpy_fn)
    x, y = mx.array(rand(64)), mx.array(rand(64))
    for _ in range(2):
        k(2.0, x, y, grid=64, threadgroup=32, backend="cuda")
    k(2.0, x, y, grid=64, threadgroup=32, backend="cuda", init_value=7)      # the same key, and an option
    assert gpu[-1]["init_value"] == 7
    out = k(2.0, x, y, grid=40, threadgroup=32, backend="cuda", init_value=7)
    assert gpu[-1]["init_value"] == 7 and np.asarray(out)[40:].tolist() == [7.0] * 24
    s = mb.kernel(scale_fn)                # an entry keyed by keywords: another keyword misses it
    for _ in range(2):
        s(x, K=3, grid=64, threadgroup=32, backend="cuda")
    s(x, K=3, grid=64, threadgroup=32, backend="cuda", init_value=7)
    assert gpu[-1]["init_value"] == 7


def test_grid_launch_is_the_call_with_grid_and_threadgroup(gpu):
    k = mb.kernel(saxpy_fn)
    assert k[64, 32] is k[64, 32] and k[64] is not k[64, 32]
    x, y = rand(64), rand(64)
    for n, tg in ((64, 32), (64, 32), (40, 8), (64, 32)):
        out = k[n, tg](2.0, mx.array(x), mx.array(y), backend="cuda")
        assert gpu[-1]["grid"] == (n, 1, 1) and gpu[-1]["threadgroup"] == (tg, 1, 1)
        np.testing.assert_allclose(np.asarray(out)[:n], (2 * x + y)[:n], rtol=1e-6)
    launch = k[64, 32]
    launch._miss = lambda *a: pytest.fail("the launcher's front did not take the call")
    try:                                 # the entry's launcher front, one frame
        out = launch(3.0, mx.array(x), mx.array(y), backend="cuda")
    finally:
        del launch._miss
    np.testing.assert_allclose(np.asarray(out), 3 * x + y, rtol=1e-6)
    x2, y2 = rand(80), rand(80)          # another shape under the same launcher
    np.testing.assert_allclose(np.asarray(k[64, 32](2.0, mx.array(x2), mx.array(y2), backend="cuda"))[:64],
                               (2 * x2 + y2)[:64], rtol=1e-6)
    assert gpu[-1]["shapes"] == [(80,)]
    s = mb.kernel(scale_fn)
    np.testing.assert_allclose(np.asarray(s[32, 32](mx.array(x[:32]), K=4, backend="cuda")), 4 * x[:32], rtol=1e-6)
    with pytest.raises(mb.KernelLaunchError, match="a grid and a threadgroup"):
        k[1, 2, 3]


def test_a_miss_raises_with_the_users_frame_only(gpu):
    k = mb.kernel(saxpy_fn)
    x = mx.array(rand(8))
    k(2.0, x, x, grid=8, threadgroup=8, backend="cuda")
    with pytest.raises(mb.KernelLaunchError) as e:
        k(2.0, [1, 2], x, grid=8, threadgroup=8, backend="cuda")
    files = [f.filename for f in traceback.extract_tb(e.value.__traceback__)]
    assert files[0] == __file__ and sum(f.startswith(_PACKAGE_DIR) for f in files) <= 1, files
    shown = "".join(traceback.format_exception(e.value))
    assert "During handling" not in shown and "ValueError" not in shown, shown     # nothing chained to it


def test_metal_kernel_front_misses_on_each_part_of_the_key(gpu):
    src = "uint i = thread_position_in_grid.x;\nif (i < x_shape[0]) { out[i] = T(a) * x[i] + y[i]; }"
    k = mb.metal_kernel("saxpy_t", ["a", "x", "y"], ["out"], src)

    def call(x, y, n, dt=mx.float32, shape=None, T=mx.float32):
        return k(inputs=[2.0, mx.array(x), mx.array(y)], template=[("T", T)], grid=(n, 1, 1),
                 threadgroup=(8, 1, 1), output_shapes=[shape or (n,)], output_dtypes=[dt], backend="cuda")[0]
    x, y = rand(16), rand(16)
    keys = []
    # each change right after the same call without it (the front is that call's entry)
    for case in ("f32", "f32", "f16 inputs", "f32", "out f16", "f32", "out 2-D", "f32", "T=f16", "f32"):
        xi, yi = (x.astype(np.float16), y.astype(np.float16)) if case == "f16 inputs" else (x, y)
        kw = {"out f16": dict(dt=mx.float16), "out 2-D": dict(shape=(4, 4)), "T=f16": dict(T=mx.float16)}.get(case, {})
        out = call(xi, yi, 16, **kw)
        keys.append(gpu[-1]["key"])
        assert gpu[-1]["shapes"] == [kw.get("shape", (16,))] and out.shape == kw.get("shape", (16,))
        assert out.dtype == kw.get("dt", mx.float32)
        ref = 2 * xi.astype(np.float32) + yi
        np.testing.assert_allclose(np.asarray(out).reshape(-1).astype(np.float32), ref, rtol=2e-3, atol=2e-3)
    assert len({keys[i] for i in (0, 1, 3, 5, 7, 9)}) == 1 and len({keys[0], keys[2], keys[8]}) == 3
    n = len(gpu)
    k(inputs=[2.0, mx.array(x), mx.array(y)], template=[("T", mx.float32)], grid=(16, 1, 1), threadgroup=(8, 1, 1),
      output_shapes=[(16,)], output_dtypes=[mx.float32], backend="sim")   # another backend after the same call
    assert len(gpu) == n


def test_cuda_jit_launcher_front_misses_on_signature_and_settings(gpu):
    @cuda.jit
    def axpy(a, x, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a * x[i]
    x = rand(64)
    d_x, d_out = cuda.to_device(x), cuda.device_array(64, np.float32)
    axpy.configure(backend="cuda")
    for a in map(np.float32, (2.0, 3.0, 2.0)):          # (a Python float is a float64: here its bits)
        axpy[2, 32](a, d_x, d_out)
        np.testing.assert_allclose(d_out.copy_to_host(), a * x, rtol=1e-6)
    launcher = axpy[2, 32]
    assert launcher.args == (launcher,)                   # the entry's front took over
    d_h = cuda.to_device(x.astype(np.float16))          # another dtype
    d_oh = cuda.device_array(64, np.float16)
    axpy[2, 32](np.float32(2.0), d_h, d_oh)
    np.testing.assert_allclose(d_oh.copy_to_host().astype(np.float32), 2 * x, rtol=2e-3, atol=2e-3)
    d_s, d_os = cuda.to_device(x[:32]), cuda.device_array(32, np.float32)   # another shape
    axpy[2, 32](np.float32(4.0), d_s, d_os)
    np.testing.assert_allclose(d_os.copy_to_host(), 4 * x[:32], rtol=1e-6)
    axpy[2, 32](np.float32(2.0), d_x, d_out)
    n = len(gpu)
    axpy.configure(backend="sim")                        # another backend: not the GPU entry
    axpy[2, 32](np.float32(5.0), d_x, d_out)
    assert len(gpu) == n
    np.testing.assert_allclose(d_out.copy_to_host(), 5 * x, rtol=1e-6)
    axpy._backend = None                                 # "auto": the GPU again (no configure)
    axpy[2, 32](np.float32(2.0), d_x, d_out)
    assert len(gpu) == n + 1
    cuda.set_backend("sim")                              # the global setting
    try:
        axpy[2, 32](np.float32(6.0), d_x, d_out)
    finally:
        cuda.set_backend(None)
    assert len(gpu) == n + 1
    np.testing.assert_allclose(d_out.copy_to_host(), 6 * x, rtol=1e-6)
    axpy[2, 32](np.float32(2.0), d_x, d_out)            # the GPU entry again: its front takes the next call
    launcher._miss = lambda *a: pytest.fail("the front did not take the call")
    try:
        axpy[2, 32](np.float32(2.0), d_x, d_out)
    finally:
        del launcher._miss

    class Counting:                                      # a Numba dispatcher extension, added in place
        seen = 0

        def prepare_args(self, ty, val, stream=0, retr=None):
            Counting.seen += 1
            return ty, val
    axpy.extensions.append(Counting())
    axpy[2, 32](np.float32(2.0), d_x, d_out)
    assert Counting.seen == 3


def test_kernel_objects_stay_kernels():
    k = mb.kernel(saxpy_fn)
    assert isinstance(k, FastCall) and "grid" in inspect.signature(k).parameters

    class Holder:
        kern = k
    assert Holder().kern is k                            # not bound as a method
    x = rand(8)
    c = copy.copy(k)
    np.testing.assert_allclose(np.asarray(c(2.0, x, x, grid=8, backend="sim")), 3 * x, rtol=1e-6)
    assert repr(k).startswith("<metalbench kernel saxpy_fn(")
