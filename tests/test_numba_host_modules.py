"""numba.cuda's host-side modules under ``metalbench.cuda``: importable, working where
they can (overload, register_jitable, launch configuration, argument hints, dispatcher
attributes, typing helpers), and a clear error naming the feature where they cannot
(PTX, LLVM-level extensions)."""
import importlib
import threading

import numpy as np
import pytest

from metalbench import cuda
from metalbench.cuda import float32, int32, launchconfig, types
from metalbench.cuda.args import wrap_arg
from metalbench.cuda.extending import intrinsic, overload, register_jitable
from metalbench.errors import MetalbenchError


@pytest.fixture(autouse=True)
def _sim():
    cuda.set_backend("sim")
    yield
    cuda.set_backend(None)


@pytest.mark.parametrize("mod", [
    "metalbench.cuda.compiler", "metalbench.cuda.extending", "metalbench.cuda.launchconfig",
    "metalbench.cuda.args", "metalbench.cuda.np.numpy_support", "metalbench.cuda.typing",
    "metalbench.cuda.typing.typeof", "metalbench.cuda.cudadrv.driver", "metalbench.cuda.cudadrv.error",
    "metalbench.cuda.cudadrv.devicearray", "metalbench.cuda.core", "metalbench.cuda.misc.special"])
def test_modules_import(mod):
    importlib.import_module(mod)


@pytest.mark.parametrize("name", ["compile_ptx", "compile", "compile_ptx_for_current_device",
                                  "compile_for_current_device"])
def test_ptx_entry_points_say_why(name):
    from metalbench.cuda import compiler
    with pytest.raises(compiler.PTXNotAvailable, match="PTX is not available: metalbench compiles to MSL/CUDA"):
        getattr(compiler, name)(lambda x: None, "void(float32[:])")
    assert getattr(cuda, name) is getattr(compiler, name)


def test_llvm_extension_api_says_why():
    @intrinsic
    def my_intrinsic(typingctx, x):
        return None
    with pytest.raises(MetalbenchError, match="LLVM"):
        my_intrinsic(1)

    @cuda.jit
    def uses(a):
        a[0] = my_intrinsic(1)
    with pytest.raises(MetalbenchError, match="intrinsic") as e:
        uses[1, 1](np.zeros(1, np.int32))
    assert "line" in str(e.value) or "|" in str(e.value)


def clamp(x, lo, hi):
    return min(max(x, lo), hi)


calls = []


@overload(clamp)
def _clamp(x, lo, hi):
    calls.append((x, lo, hi))
    if isinstance(x, types.Integer):
        return lambda x, lo, hi: max(x, lo)           # a different body for ints: visibly chosen
    return lambda x, lo, hi: min(max(x, lo), hi)


def test_overload_chooses_by_argument_types():
    @cuda.jit
    def k(fo, io, f, i):
        fo[0] = clamp(f[0], 0.0, 1.0)
        io[0] = clamp(i[0], 0, 1)
    fo, io = np.zeros(1, np.float32), np.zeros(1, np.int32)
    k[1, 1](fo, io, np.array([2.5], np.float32), np.array([7], np.int32))
    assert fo[0] == 1.0 and io[0] == 7
    assert any(isinstance(c[0], types.Float) for c in calls) and any(isinstance(c[0], types.Integer) for c in calls)
    assert clamp(5, 0, 1) == 1          # still a Python function


def test_overload_returning_none_is_an_error_at_the_call():
    def nothing(x):
        return x

    @overload(nothing)
    def _nothing(x):
        return None

    @cuda.jit
    def k(a):
        a[0] = nothing(a[0])
    with pytest.raises(MetalbenchError, match="no @overload implementation of nothing"):
        k[1, 1](np.zeros(1, np.float32))


def test_register_jitable_in_kernels_and_python():
    @register_jitable
    def cube(x):
        return x * x * x

    @cuda.jit
    def k(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] = cube(a[i])
    a = np.arange(5, dtype=np.float32)
    k[1, 8](a)
    np.testing.assert_array_equal(a, np.arange(5, dtype=np.float32) ** 3)
    assert cube(3) == 27


def test_launch_config_during_compilation_only():
    @cuda.jit
    def f(x):
        x[0] = 1
    seen = {}
    orig = f._compile_for_args

    def wrapped(*args, **kws):
        seen["config"] = launchconfig.current_launch_config()
        return orig(*args, **kws)
    f._compile_for_args = wrapped
    arr = np.zeros(1, np.int32)
    assert launchconfig.current_launch_config() is None
    f[(2, 1), 4](arr)
    cfg = seen["config"]
    assert cfg.dispatcher is f and cfg.griddim == (2, 1, 1) and cfg.blockdim == (4, 1, 1) and cfg.args[0] is arr
    assert launchconfig.current_launch_config() is None
    with pytest.raises(RuntimeError):
        launchconfig.ensure_current_launch_config()
    seen.clear()
    f[(2, 1), 4](arr)                               # compiled already: no compilation, no config
    assert seen == {}


def test_capture_compile_config_restores_the_method():
    @cuda.jit
    def f(x):
        x[0] = 1
    original = f._compile_for_args
    with launchconfig.capture_compile_config(f) as cap:
        f[1, 1](np.zeros(1, np.int32))
    assert cap["config"].dispatcher is f and cap["config"].blockdim == (1, 1, 1)
    assert "_compile_for_args" not in f.__dict__
    assert f._compile_for_args.__func__ is original.__func__


def test_launch_config_is_thread_local():
    @cuda.jit
    def f(x):
        x[0] = 1
    barrier = threading.Barrier(2)
    seen, errors = [], []
    orig = f._compile_for_args

    def wrapped(*args, **kws):
        cfg = launchconfig.ensure_current_launch_config()
        barrier.wait(timeout=10)
        seen.append(id(cfg.args[0]))
        return orig(*args, **kws)
    f._compile_for_args = wrapped
    arrays = [np.zeros(1, np.int32), np.zeros(1, np.int32)]

    def run(a):
        try:
            f[1, 1](a)
        except BaseException as e:        # pragma: no cover - reported below
            errors.append(e)
    threads = [threading.Thread(target=run, args=(a,)) for a in arrays]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert not errors and sorted(seen) == sorted(id(a) for a in arrays)
    assert all(a[0] == 1 for a in arrays)


def test_overloads_and_specializations():
    @cuda.jit
    def f(a, out):
        i = cuda.grid(1)
        if i < a.size:
            out[i] = a[i] * 2
    a = np.ones(8)
    f[1, 8](a, np.zeros(8))
    f[1, 8](cuda.to_device(a), np.zeros(8))      # a device array of the same type: same compilation
    assert len(f.overloads) == 1
    f.mark_launch_config_sensitive()
    f[1, 8](a.astype(np.float32), np.zeros(8, np.float32))
    assert len(f.overloads) == 2 and any(k.launch_config_sensitive for k in f.overloads.values())

    @cuda.jit
    def g(x, y):
        pass
    assert len(g.specializations) == 0
    ga = g.specialize(float32[:], float32[:])
    gc = g.specialize(float32[::1], float32[::1])
    assert ga is not gc and len(g.specializations) == 2 and g.specialize(float32[::1], float32[::1]) is gc
    with pytest.raises(RuntimeError, match="Dispatcher already specialized"):
        gc.specialize(int32[::1])
    with pytest.raises(RuntimeError, match="Dispatcher already specialized"):
        cuda.jit("void(int32[::1])")(lambda x: None).specialize(int32[::1])


def set_first(a):
    a[0] = 3


def test_argument_hints():
    k = cuda.jit(set_first)
    h = np.zeros(1, np.int64)
    k[1, 1](cuda.In(h))
    assert h[0] == 0
    k[1, 1](cuda.InOut(h))
    assert h[0] == 3
    h[0] = 0
    k[1, 1](cuda.Out(h))
    assert h[0] == 3
    assert type(wrap_arg(h)).__name__ == "InOut" and type(wrap_arg(cuda.In(h))).__name__ == "In"

    class DefaultIn:
        def prepare_args(self, ty, val, **kwargs):
            return ty, wrap_arg(val, default=cuda.In)
    k2 = cuda.jit(set_first)
    k2.extensions.append(DefaultIn())
    h[0] = 0
    k2[1, 1](h)
    assert h[0] == 0


def test_calling_a_kernel_without_configuration():
    k = cuda.jit(set_first)
    with pytest.raises(ValueError, match="launch configuration was not specified"):
        k(np.zeros(1))


def test_typing_helpers():
    from metalbench.cuda.np import numpy_support
    from metalbench.cuda.typing import signature
    from metalbench.cuda.typing.typeof import typeof
    assert numpy_support.from_dtype(np.float32) == float32
    assert str(numpy_support.from_dtype(np.float32)[::1]) == "array(float32, 1d, C)"
    assert numpy_support.as_dtype(int32) == np.dtype(np.int32)
    assert str(typeof(np.zeros((2, 3), np.float64))) == "array(float64, 2d, C)"
    assert str(signature(int32, float32)) == "(float32) -> int32"


def test_mapped_and_pinned_context_managers():
    a = np.arange(4.0)
    with cuda.pinned(a):
        pass
    with cuda.mapped(a) as d:
        d[0] = 10.0
    assert a[0] == 10.0
