"""The thinnest launch path: a repeated call runs the last thin-path entry's generated
guard (``protocol.launch_guard``), which checks the call against that entry's key and
launches in one frame. A guard may only ever be stricter than the key: every change a
key would see (array dtype or shape, even made in place on the same ``mx.array``;
scalar type; grid; threadgroup; backend, including ``METALBENCH_BACKEND`` under
"auto"; output shapes and dtypes; template) must reach a launch prepared for it.

``mx.fast.cuda_kernel`` is a stand-in recording which prepared kernel each call reached
and computing saxpy with MLX ops (no GPU needed); results are checked against NumPy."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench import launch as L
from metalbench.dsl import thread_position_in_grid

RNG = np.random.default_rng(18)


class Recorder:
    """A stand-in ``mx.fast.cuda_kernel`` object: remembers the calls it received."""

    def __init__(self, made, **kw):
        self.kw, self.calls, self.calls_seen = kw, [], 0
        made.append(self)

    def __call__(self, *, inputs, grid, threadgroup, output_shapes, output_dtypes, init_value=None,
                 template=None, verbose=False, stream=None):
        self.calls.append((list(inputs), grid, threadgroup))
        by = dict(zip(self.kw["input_names"], inputs))
        out = by["a"].reshape(-1)[0] * by["x"] + by["y"]     # (a kernel reads a scalar's element 0)
        return [out.reshape(output_shapes[0]).astype(output_dtypes[0])]


@pytest.fixture
def made(monkeypatch):
    made = []
    monkeypatch.setattr(mx.fast, "cuda_kernel", lambda **kw: Recorder(made, **kw))
    monkeypatch.setattr(L, "cuda_available", lambda: True)
    monkeypatch.delenv("METALBENCH_BACKEND", raising=False)
    return made


def dsl():
    @mb.kernel
    def saxpy(a: float, x, y, out: mb.Out):
        i = thread_position_in_grid.x
        if i < x.size:
            out[i] = a * x[i] + y[i]
    return saxpy


def msl():
    return mb.metal_kernel("saxpy_guard", ["a", "x", "y"], ["out"],
                           "uint i = thread_position_in_grid.x;\nif (i < x_shape[0]) { out[i] = a * x[i] + y[i]; }")


def call(kind, k, a, x, y, grid=None, tg=64, backend="cuda", **kw):
    n = x.shape[0]
    if kind == "dsl":
        return k(a, x, y, grid=grid or n, threadgroup=tg, backend=backend, **kw)
    return k(inputs=[a, x, y], grid=(grid or n, 1, 1), threadgroup=(tg, 1, 1), output_shapes=[x.shape],
             output_dtypes=[mx.float32], backend=backend, **kw)[0]


def arr(n, dtype=np.float32):
    return mx.array(RNG.standard_normal(n).astype(dtype))


def check(out, a, x, y):
    want = np.float32(a) * np.asarray(x).astype(np.float32) + np.asarray(y).astype(np.float32)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("kind", ["dsl", "msl"])
def test_repeated_calls_take_the_guard_and_match_numpy(made, kind):
    k = dsl() if kind == "dsl" else msl()
    x, y = arr(256), arr(256)
    for a in (2.0, 2.0, -0.0, 0.0, 3.5, 2.0):        # zero: the sign of -0.0 is not a cache key
        out = call(kind, k, a, x, y)
        check(out, a, x, y)
        assert np.signbit(np.asarray(made[-1].calls[-1][0][0]).reshape(-1)[0]) == np.signbit(a)
    assert k._guard is not None and len(made) == 1 and len(made[0].calls) == 6
    assert k.last_launch == dict(grid=(256, 1, 1), threadgroup=(64, 1, 1), backend="cuda")


@pytest.mark.parametrize("kind", ["dsl", "msl"])
def test_every_key_change_reaches_its_own_launch(made, kind):
    k = dsl() if kind == "dsl" else msl()
    x, y = arr(256), arr(256)
    call(kind, k, 2.0, x, y)
    call(kind, k, 2.0, x, y)
    # another dtype (same shape): another prepared kernel
    xh = mx.array(np.asarray(x).astype(np.float16))
    check(call(kind, k, 2.0, xh, y), 2.0, xh, y)
    kernels = {id(r) for r in made if r.calls and r.calls[-1][0][1] is xh}
    assert kernels and all(id(r) != id(made[0]) for r in made if r.calls and r.calls[-1][0][1] is xh)
    # another shape, grid and threadgroup: the launch says so
    x2, y2 = arr(512), arr(512)
    check(call(kind, k, 2.0, x2, y2), 2.0, x2, y2)
    assert k.last_launch["grid"] == (512, 1, 1)
    check(call(kind, k, 2.0, x2, y2, tg=128), 2.0, x2, y2)
    assert k.last_launch["threadgroup"] == (128, 1, 1)
    # back to the first call: its launch again, and last_launch follows
    check(call(kind, k, 2.0, x, y), 2.0, x, y)
    assert k.last_launch == dict(grid=(256, 1, 1), threadgroup=(64, 1, 1), backend="cuda")
    # another backend
    check(call(kind, k, 2.0, x, y, backend="sim"), 2.0, x, y)
    assert k.last_launch["backend"] == "sim"
    check(call(kind, k, 2.0, x, y), 2.0, x, y)
    assert k.last_launch["backend"] == "cuda"


@pytest.mark.parametrize("kind", ["dsl", "msl"])
def test_an_array_changed_in_place_is_a_new_signature(made, kind):
    # MLX's in-place operators rebind the same Python object to a new dtype or shape
    k = dsl() if kind == "dsl" else msl()
    x, y = mx.array(np.arange(256, dtype=np.int32)), arr(256)
    call(kind, k, 2.0, x, y)
    first = made[-1]
    call(kind, k, 2.0, x, y)
    x += 0.5                                           # int32 -> float32, same object
    assert x.dtype == mx.float32
    check(call(kind, k, 2.0, x, y), 2.0, x, y)
    assert made[-1] is not first and made[-1].calls[-1][0][1] is x


def test_auto_backend_follows_the_environment(made, monkeypatch):
    k = dsl()
    x, y = arr(64), arr(64)
    for _ in range(2):
        check(call("dsl", k, 2.0, x, y, backend="auto"), 2.0, x, y)
    assert k.last_launch["backend"] == "cuda"
    monkeypatch.setenv("METALBENCH_BACKEND", "sim")
    check(call("dsl", k, 2.0, x, y, backend="auto"), 2.0, x, y)
    assert k.last_launch["backend"] == "sim"
    monkeypatch.delenv("METALBENCH_BACKEND")
    check(call("dsl", k, 2.0, x, y, backend=None), 2.0, x, y)
    assert k.last_launch["backend"] == "cuda"


def test_scalar_type_and_argument_count_changes_bind_again(made):
    k = dsl()
    x, y = arr(64), arr(64)
    call("dsl", k, 2.0, x, y)
    call("dsl", k, 2.0, x, y)
    check(call("dsl", k, 3, x, y), 3, x, y)              # an int: another signature
    check(call("dsl", k, np.float32(1.5), x, y), 1.5, x, y)
    with pytest.raises(mb.MetalbenchError):
        k(2.0, x, grid=64, threadgroup=64, backend="cuda")   # a missing argument: still the binding's error
    with pytest.raises(mb.MetalbenchError):
        k(2.0, x, y, x, grid=64, threadgroup=64, backend="cuda")


def test_metal_kernel_options_and_bad_keywords(made):
    k = msl()
    x, y = arr(64), arr(64)
    call("msl", k, 2.0, x, y)
    check(call("msl", k, 2.0, x, y, init_value=0.0), 2.0, x, y)     # an option: the keyed path
    check(call("msl", k, 2.0, x, y, stream=mx.default_stream(mx.default_device())), 2.0, x, y)
    out = k(inputs=[2.0, x, y], grid=(64, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(8, 8)],
            output_dtypes=[mx.float32], backend="cuda")[0]
    assert out.shape == (8, 8)                       # other output shapes: not the guard's launch
    out = k(inputs=[2.0, x, y], grid=(64, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(64,)],
            output_dtypes=[mx.float16], backend="cuda")[0]
    assert out.dtype == mx.float16
    with pytest.raises(TypeError, match=r"__call__\(\) got an unexpected keyword argument 'colour'"):
        k(inputs=[2.0, x, y], grid=(64, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(64,)],
          output_dtypes=[mx.float32], backend="cuda", colour=1)
    with pytest.raises(TypeError, match="inputs"):
        k(grid=(64, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(64,)], output_dtypes=[mx.float32])


# ----------------------------------------------------------------------------- cuda.jit
# A launcher (k[blocks, threads]) takes the front of its last launch on device arrays
# (ThinDeviceLaunch.front, with the launcher as its first argument); the kernel's and the
# global settings are part of its key.


def takes_a_front(launcher) -> bool:
    """The launcher's calls go to an entry's check-and-launch (not its general front)."""
    return launcher.args[:1] == (launcher,)

@pytest.fixture
def simcuda(monkeypatch):
    import simcuda as S
    from metalbench.numba_compat import host
    S.install(monkeypatch)
    monkeypatch.delenv("METALBENCH_BACKEND", raising=False)
    host.set_backend(None)      # (a test before may have left another global backend)
    yield
    host.set_backend(None)


def jit_saxpy():
    from metalbench import cuda

    @cuda.jit
    def saxpy(a, x, y, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a * x[i] + y[i]
    return saxpy


def launch_jit(k, a, x, y, dtype=np.float32, n=256):
    from metalbench import cuda
    d = [cuda.to_device(np.asarray(v).astype(dtype)) for v in (x, y)]
    out = cuda.device_array(n, dtype)
    launcher = k[n // 64, 64]
    launcher(a, *d, out)
    return launcher, d, out


def test_cuda_jit_repeated_launches_take_the_guard_and_match_numpy(simcuda):
    k = jit_saxpy()
    k.configure(backend="cuda")
    x, y = RNG.standard_normal(256), RNG.standard_normal(256)
    launcher, (dx, dy), out = launch_jit(k, 2.0, x, y)
    assert takes_a_front(launcher)
    for a in (2.0, -1.5, 0.0, 3.25):
        launcher(a, dx, dy, out)
        check(out.copy_to_host(), a, x.astype(np.float32), y.astype(np.float32))
        assert k.last_launch["backend"] == "cuda"
    launcher(np.float32(0.5), dx, dy, out)          # another scalar type: the keyed path, still right
    check(out.copy_to_host(), 0.5, x.astype(np.float32), y.astype(np.float32))


def test_cuda_jit_guard_follows_settings_and_signatures(simcuda, monkeypatch):
    from metalbench import cuda
    from metalbench.numba_compat import host
    k = jit_saxpy()
    x, y = RNG.standard_normal(256), RNG.standard_normal(256)
    launcher, (dx, dy), out = launch_jit(k, 2.0, x, y)
    launcher(2.0, dx, dy, out)
    assert k.last_launch["backend"] == "cuda" and takes_a_front(launcher)
    monkeypatch.setenv("METALBENCH_BACKEND", "sim")       # auto follows the environment
    launcher(1.0, dx, dy, out)
    assert k.last_launch["backend"] == "sim"
    check(out.copy_to_host(), 1.0, x.astype(np.float32), y.astype(np.float32))
    monkeypatch.delenv("METALBENCH_BACKEND")
    launcher(2.0, dx, dy, out)
    assert k.last_launch["backend"] == "cuda"
    host.set_backend("sim")                               # the global setting
    launcher(2.0, dx, dy, out)
    assert k.last_launch["backend"] == "sim"
    host.set_backend(None)
    launcher(2.0, dx, dy, out)
    k.configure(backend="sim")                            # the kernel's own setting
    launcher(3.0, dx, dy, out)
    assert k.last_launch["backend"] == "sim"
    check(out.copy_to_host(), 3.0, x.astype(np.float32), y.astype(np.float32))
    k.configure(backend="cuda")
    launcher(2.0, dx, dy, out)
    # device arrays of another dtype: another launch, in float64
    dx64, dy64, out64 = cuda.to_device(x), cuda.to_device(y), cuda.device_array(256, np.float64)
    launcher(2.0, dx64, dy64, out64)
    np.testing.assert_allclose(out64.copy_to_host(), 2.0 * x + y, rtol=1e-12)
    # a host array in place of a device array: the general path (written back in place)
    hout = np.zeros(256, np.float32)
    launcher(2.0, dx, dy, hout)
    check(hout, 2.0, x.astype(np.float32), y.astype(np.float32))
    with pytest.raises(mb.MetalbenchError):
        launcher(2.0, dx, dy)                             # one argument short: the binding's error


def test_cuda_jit_guard_steps_aside_for_dispatcher_extensions(simcuda):
    k = jit_saxpy()
    k.configure(backend="cuda")
    x, y = RNG.standard_normal(256), RNG.standard_normal(256)
    launcher, (dx, dy), out = launch_jit(k, 2.0, x, y)
    launcher(2.0, dx, dy, out)
    seen = []

    class Ext:
        def prepare_args(self, ty, val, stream=None, retr=None):
            seen.append(val)
            return ty, val
    k.extensions.append(Ext())
    launcher(2.0, dx, dy, out)
    assert len(seen) == 4
    check(out.copy_to_host(), 2.0, x.astype(np.float32), y.astype(np.float32))


def test_float64_results_through_the_guard_stay_exact(simcuda):
    # float64 crosses MLX as uint64 bits on cuda: the guard's launch views them back
    k = dsl()
    x, y = RNG.standard_normal(128), RNG.standard_normal(128)
    mx_x, mx_y = mx.array(x.view(np.uint64)).view(mx.float64), mx.array(y.view(np.uint64)).view(mx.float64)
    for a in (2.0, 0.1, 2.0):
        out = k(a, mx_x, mx_y, grid=128, threadgroup=64, backend="cuda")
        assert out.dtype == mx.float64
        want = np.float64(np.float32(a)) * x + y         # a: float is float32 (MSL float)
        np.testing.assert_array_equal(np.asarray(out.view(mx.uint64)).view(np.float64), want)
    assert k._guard is not None


def test_computed_output_shapes_key_arrays_by_shape_not_value():
    """An Out(shape=lambda x: ...) puts every argument in the thin-path key: two mx.arrays
    of the same shape (x[:10], x[1:]) must not be compared elementwise (that raised
    ValueError on the second call), and each call gives its own array's result."""
    import mlx.core as mx
    from metalbench.dsl import thread_position_in_grid

    @mb.kernel
    def pair_sums(x, out: mb.Out(shape=lambda x: (x.size // 2,), dtype=mb.float32)):
        i = thread_position_in_grid.x
        out[i] = x[2 * i] + x[2 * i + 1]

    x = mx.array(np.random.default_rng(3).standard_normal(11).astype(np.float32))
    for arr in (x[:10], x[1:], x[:10], x[1:], x[:8]):
        a = np.asarray(arr)
        got = np.asarray(pair_sums(arr, grid=a.size // 2, threadgroup=1, backend="sim"))
        np.testing.assert_array_equal(got, a[0::2] + a[1::2])


# ----------------------------------------------------------------------------- values in the key
# Constexprs (by keyword or position) and the arguments an output shape is computed from
# are in the key by value: the guard must check those values, not only their types.

class Head:
    """A stand-in kernel object for ``head`` below: out = x[:len(out)] * scale."""

    def __init__(self, made, **kw):
        self.kw, self.calls = kw, []
        made.append(self)

    def __call__(self, *, inputs, grid, threadgroup, output_shapes, output_dtypes, init_value=None,
                 template=None, verbose=False, stream=None):
        self.calls.append((list(inputs), grid, threadgroup, output_shapes))
        by = dict(zip(self.kw["input_names"], inputs))
        n = output_shapes[0][0]
        scale = by["s"].reshape(-1)[0] if "s" in by else 1.0
        return [(by["x"][:n] * scale).astype(output_dtypes[0])]


@pytest.fixture
def heads(monkeypatch):
    made = []
    monkeypatch.setattr(mx.fast, "cuda_kernel", lambda **kw: Head(made, **kw))
    monkeypatch.setattr(L, "cuda_available", lambda: True)
    return made


def test_constexpr_keywords_take_the_guard_by_value(heads):
    @mb.kernel
    def head(x, out: mb.Out(shape=lambda K, **_: (K,)), K: mb.constexpr = 4):
        i = thread_position_in_grid.x
        if i < K:
            out[i] = x[i]
    x = arr(64)
    seen = []
    for K in (8, 8, 16, 8, 16, 16, 3):
        out = head(x, grid=64, threadgroup=32, backend="cuda", K=K)
        np.testing.assert_array_equal(np.asarray(out), np.asarray(x)[:K])
        seen.append(len(heads))
    assert head._guard_kw is not None
    assert seen == [1, 1, 2, 2, 2, 2, 3]          # one prepared kernel per value of K
    # an option is no constexpr: the keyed path, still right
    out = head(x, grid=64, threadgroup=32, backend="cuda", K=16, init_value=0.0)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(x)[:16])
    assert heads[1].calls[-1][3] == [(16,)]
    # the same value with another type is another key (8 vs 8.0), launched as its binding says
    out = head(x, grid=64, threadgroup=32, backend="cuda", K=8.0)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(x)[:8])
    out = head(x, grid=64, threadgroup=32, backend="cuda", K=3)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(x)[:3])


def test_constexpr_keywords_are_the_fronts_own_parameters(heads):
    # the front takes the key's keywords as named parameters (no dict per call); a call
    # that gives fewer, more, reordered or positional ones goes the general path, rightly
    import inspect

    @mb.kernel
    def head(x, out: mb.Out(shape=lambda K, J, **_: (K + J,)), K: mb.constexpr = 4, J: mb.constexpr = 1):
        i = thread_position_in_grid.x
        if i < K + J:
            out[i] = x[i]
    x = arr(64)
    for kw, n in ((dict(K=8, J=2), 10), (dict(K=8, J=2), 10), (dict(K=8), 9), (dict(J=2, K=8), 10),
                  (dict(J=3), 7), (dict(K=8, J=2), 10), ({}, 5)):
        out = head(x, grid=64, threadgroup=32, backend="cuda", **kw)
        np.testing.assert_array_equal(np.asarray(out), np.asarray(x)[:n])
        if len(heads) == 1:     # the first entry's front, built at its first call
            assert {"K", "J"} <= set(inspect.signature(head.func).parameters)
    out = head(x, 8, 2, grid=64, threadgroup=32, backend="cuda")        # by position
    np.testing.assert_array_equal(np.asarray(out), np.asarray(x)[:10])
    out = head(x, grid=64, threadgroup=32, backend="cuda", K=8, J=2, init_value=0.0)   # and an option
    np.testing.assert_array_equal(np.asarray(out), np.asarray(x)[:10])

    @mb.kernel
    def clash(x, out: mb.Out(shape=lambda outs, **_: (outs,)), outs: mb.constexpr = 4):
        i = thread_position_in_grid.x
        if i < outs:
            out[i] = x[i]
    for n in (6, 6, 3, 6):      # a keyword named as the front's own local: the dict front
        np.testing.assert_array_equal(np.asarray(clash(x, grid=64, threadgroup=32, backend="cuda", outs=n)),
                                      np.asarray(x)[:n])
    assert "outs" not in inspect.signature(clash.func).parameters


def test_computed_output_shape_reads_positional_values_through_the_guard(heads):
    @mb.kernel
    def head(x, n: int, s: float, out: mb.Out(shape=lambda x, n, **_: (n,))):
        i = thread_position_in_grid.x
        if i < n:
            out[i] = x[i] * s
    x = arr(64)
    for n, s in ((8, 2.0), (8, 2.0), (16, 2.0), (8, -1.0), (16, 0.5), (5, 0.5)):
        out = head(x, n, s, grid=64, threadgroup=32, backend="cuda")
        assert out.shape == (n,)
        np.testing.assert_allclose(np.asarray(out), np.asarray(x)[:n] * np.float32(s), rtol=1e-6)
    assert head._guard is not None
    xs = arr(32)                                     # another shape of x: another key
    out = head(xs, 5, 1.0, grid=32, threadgroup=32, backend="cuda")
    np.testing.assert_allclose(np.asarray(out), np.asarray(xs)[:5], rtol=1e-6)


def test_metal_kernel_with_a_template_takes_the_guard_per_template(made):
    k = mb.metal_kernel("saxpy_tmpl", ["a", "x", "y"], ["out"],
                        "uint i = thread_position_in_grid.x;\nif (i < N) { out[i] = a * x[i] + y[i]; }")
    x, y = arr(64), arr(64)

    def go(n, **kw):
        return k(inputs=[2.0, x, y], grid=(64, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(64,)],
                 output_dtypes=[mx.float32], backend="cuda", template=[("N", n)], **kw)[0]
    reached = []
    for n in (64, 64, 32, 64, 32, 32):
        check(go(n), 2.0, x, y)
        reached.append(next(r for r in made if r.calls and r.calls[-1][0][1] is x and r.calls_seen != len(r.calls)))
        for r in made:
            r.calls_seen = len(r.calls)
    assert k._guard_t is not None
    # one prepared kernel per template value, and each call reached its own
    assert reached[0] is reached[1] is reached[3] and reached[2] is reached[4] is reached[5]
    assert reached[0] is not reached[2]
    check(go(64, init_value=0.0), 2.0, x, y)          # another option: the keyed path


def test_arrays_and_scalars_by_keyword_take_the_keyword_guard(made):
    k = dsl()
    x, y, x2 = arr(256), arr(256), arr(256)
    for a, xx in ((2.0, x), (2.0, x), (-1.5, x2), (3, x), (0.5, x2)):
        out = k(a=a, x=xx, y=y, grid=256, threadgroup=64, backend="cuda")
        check(out, a, xx, y)
        assert made[-1].calls[-1][0][1] is xx                # the array reaches MLX untouched
    assert k._guard_kw is not None
    xh = mx.array(np.asarray(x).astype(np.float16))       # another dtype by keyword: another kernel
    check(k(a=2.0, x=xh, y=y, grid=256, threadgroup=64, backend="cuda"), 2.0, xh, y)
    check(k(2.0, x=x, y=y, grid=256, threadgroup=64, backend="cuda"), 2.0, x, y)   # mixed


@pytest.mark.parametrize("kind", ["dsl", "msl"])
def test_numpy_scalars_take_the_guard_by_type(made, kind):
    # a NumPy scalar's type is its signature: the same type repeats the launch (its value,
    # -0.0 included, reaches the kernel), another NumPy type is another signature
    k = dsl() if kind == "dsl" else msl()
    x, y = arr(128), arr(128)
    for a in (np.float32(2.0), np.float32(-0.0), np.float32(0.0), np.float32(-3.25), np.float32(2.0)):
        check(call(kind, k, a, x, y, tg=32), a, x, y)
        assert np.signbit(np.asarray(made[-1].calls[-1][0][0]).reshape(-1)[0]) == np.signbit(a)
    assert len(made) == 1 and k._guard is not None
    for a in (np.float16(1.5), np.int32(3), np.bool_(True), 0.5, np.float32(0.25)):
        check(call(kind, k, a, x, y, tg=32), float(a), x, y)


def test_cuda_jit_numpy_scalar_types_reach_their_own_launch(simcuda):
    from metalbench import cuda

    @cuda.jit
    def scale(a, x, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] * a
    x = RNG.standard_normal(128)
    dx, out = cuda.to_device(x), cuda.device_array(128, np.float64)
    launcher = scale[2, 64]
    for a in (np.float32(0.1), np.float32(0.1), np.float64(0.1), np.int32(-7), np.int64(2**40), np.bool_(True),
              np.float32(-0.0), np.uint8(200), np.float64(0.1)):
        launcher(a, dx, out)
        # Numba's typing: float32 * float64 -> float64 with the float32 value; ints exactly
        np.testing.assert_array_equal(out.copy_to_host(), x * np.float64(a), err_msg=repr(a))
    assert takes_a_front(launcher)


def test_cuda_jit_accumulating_into_an_unread_array_through_the_guard(simcuda):
    # hits only takes atomic adds: the kernel does not read it (no kernel input, so MLX's
    # graph does not chain each launch after the last merge), and repeated launches on
    # device arrays still accumulate in place as Numba's do
    from metalbench import cuda
    from metalbench.numba_compat import device_launch as DL

    @cuda.jit
    def count(x, thr, hits, step):
        i = cuda.grid(1)
        if i < x.size and x[i] < thr:
            cuda.atomic.add(hits, step, 1)
    x = RNG.random(256).astype(np.float32)
    dx, hits = cuda.to_device(x), cuda.to_device(np.array([3, 0, 0, 0, 0], np.int32))
    launcher = count[4, 64]
    want = np.array([3, 0, 0, 0, 0], np.int64)
    for s, thr in enumerate((0.5, 0.25, 0.5, 1.0, 0.0)):
        launcher(dx, np.float32(thr), hits, np.int32(s % 3))
        want[s % 3] += np.sum(x < np.float32(thr))
    assert np.array_equal(hits.copy_to_host(), want) and takes_a_front(launcher)
    (sp,) = [v for v in count._cache.values() if hasattr(v, "ir")]
    fsp, plans = DL.functional(sp, "count", frozenset(), "cuda")
    assert [p.name for p in fsp.ir.inputs] == ["x", "thr", "step"] and plans[0].scheme == "acc"


@pytest.mark.parametrize("kind", ["dsl", "msl"])
@pytest.mark.parametrize("zero", [0.0, np.float32(0.0), np.float16(-0.0), -0.0])
def test_a_zero_scalar_is_one_cached_array_and_keeps_its_sign(made, kind, zero):
    # a zero passed on every launch reuses one MLX array (a fresh one is an upload the GPU
    # waits for on every launch), and the sign of zero reaches the kernel all the same
    k = dsl() if kind == "dsl" else msl()
    x, y = arr(128), arr(128)
    for _ in range(3):
        check(call(kind, k, zero, x, y, tg=32), zero, x, y)
    firsts = [c[0][0] for c in made[-1].calls[-3:]]
    assert firsts[1] is firsts[2]             # (the first launch's is a one-off: thin.scalar_array)
    assert all(np.signbit(np.asarray(f)).all() == np.signbit(zero) for f in firsts)
    other = -zero
    check(call(kind, k, other, x, y, tg=32), other, x, y)
    assert np.signbit(np.asarray(made[-1].calls[-1][0][0]).reshape(-1)[0]) == np.signbit(other)


def test_cuda_jit_zero_scalars_are_cached_per_sign(simcuda):
    from metalbench import cuda
    from metalbench import thin

    @cuda.jit
    def shift(a, x, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] + a
    from metalbench import types as T
    x = np.full(64, -0.0, np.float32)          # -0.0 + a has a's sign
    dx, out = cuda.to_device(x), cuda.device_array(64, np.float32)
    for a in (np.float32(0.0), np.float32(-0.0), np.float32(0.0), 0.0, -0.0):
        shift[1, 64](a, dx, out)
        assert np.all(np.signbit(out.copy_to_host()) == np.signbit(a)), repr(a)
    assert thin.value_key(np.float32(-0.0)) != thin.value_key(np.float32(0.0))
    assert thin.scalar_array(np.float32(0.0), T.float32) is thin.scalar_array(np.float32(0.0), T.float32)
    assert np.signbit(np.asarray(thin.scalar_array(-0.0, T.float32)))


@pytest.mark.parametrize("t", ["float32", "float16", "bfloat16", "int32", "uint8", "int64", "bool"])
def test_a_repeated_cuda_scalar_is_padded_past_mlxs_small_pool(t, monkeypatch):
    # MLX's CUDA allocator keeps allocations of <= 8 bytes in a managed pool the GPU reads
    # from host memory; a value's first conversion is one element, a repeated one gets a kept
    # vector of more than 8 bytes, every element the value
    from metalbench import thin
    from metalbench import types as T
    monkeypatch.setattr(thin, "_ONCE", {})             # (values other tests converted)
    monkeypatch.setattr(thin, "_SCALARS", {})
    st = T.BY_NAME[t]
    v = {"bool": True, "uint8": 300, "int64": -(2 ** 40)}.get(t, 1.0 + RNG.integers(1 << 20) / 64)
    first, again, third = (thin.scalar_array(v, st, vector=True) for _ in range(3))
    want = np.asarray(np.asarray(v).astype(np.int64).astype(st.np) if t == "uint8" else v).astype(st.np)
    assert first.shape == (1,) and not thin.is_kept(first)
    assert again is third and thin.is_kept(again) and again.nbytes > 8
    for a in (first, again):
        np.testing.assert_array_equal(np.asarray(a.astype(mx.float32) if t == "bfloat16" else a),
                                      np.full(a.shape, want).astype(np.float32 if t == "bfloat16" else st.np))
    assert thin.scalar_array(v, st).shape == ()           # Metal's 0-d scalars are unchanged


def test_cuda_jit_python_floats_cross_as_float64_bits_vectors(simcuda, monkeypatch):
    # Numba types a Python float as float64; on cuda it crosses as its uint64 bits, a
    # one-element vector the first time, padded past 8 bytes once the value repeats
    from metalbench import cuda
    from metalbench import thin
    monkeypatch.setattr(thin, "_ONCE", {})
    monkeypatch.setattr(thin, "_SCALARS", {})
    seen = []
    real = thin.scalar_array

    def spy(v, t, vector=False, bits=False):
        a = real(v, t, vector, bits)
        seen.append((v, a))
        return a
    monkeypatch.setattr(thin, "scalar_array", spy)

    @cuda.jit
    def axpy(a, x, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a * x[i]
    x = RNG.standard_normal(64)
    dx, out = cuda.to_device(x), cuda.device_array(64, np.float64)
    for a in (0.1, 0.1, 0.1, 1e300, -0.0, 1e300, 1 / 3):
        axpy[1, 64](a, dx, out)
        np.testing.assert_array_equal(out.copy_to_host(), a * x)
    sizes = [(v, a.dtype, a.size) for v, a in seen]
    assert sizes[:2] == [(0.1, mx.uint64, 1), (0.1, mx.uint64, 2)]
    assert all(np.asarray(a).view(np.float64).tolist() == [v] * a.size for v, a in seen)
