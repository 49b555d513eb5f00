"""Numba features metalbench does not support give an error naming the feature and the line."""
import inspect

import numpy as np
import pytest

from metalbench import cuda
from metalbench.errors import KernelLaunchError, KernelSyntaxError, KernelTypeError

pytest.importorskip("metalbench.sim")


@pytest.fixture(autouse=True)
def _sim_backend():
    cuda.set_backend("sim")
    yield
    cuda.set_backend(None)


rng = np.random.default_rng(5)
x = rng.standard_normal(64).astype(np.float32)


def line_of(fn, text):
    lines, first = inspect.getsourcelines(fn.fn)
    for k, l in enumerate(lines):
        if text in l:
            return first + k
    raise AssertionError(text)


def expect(kernel, cls, feature, marker, *args, cfg=(1, 64)):
    with pytest.raises(cls) as e:
        kernel[cfg](*(args or (x.copy(),)))
    err = e.value
    assert feature in str(err)
    assert err.span is not None and err.span.line == line_of(kernel, marker)
    assert marker.strip() in str(err)      # the user's line is shown
    return err


@cuda.jit
def grid_sync(a):
    g = cuda.cg.this_grid()
    g.sync()
    a[0] = 1


def test_grid_sync():
    expect(grid_sync, KernelSyntaxError, "cooperative groups grid", "g = cuda.cg.this_grid()")


@cuda.jit
def dyn_shared(a):
    s = cuda.shared.array(0, dtype=np.float32)
    s[cuda.threadIdx.x] = a[cuda.threadIdx.x]


def test_dynamic_shared_memory_without_bytes():
    """Dynamic shared memory runs (tests/test_numba_shared.py); a launch that gives it no
    bytes is an error at its line."""
    with pytest.raises(KernelSyntaxError, match="dynamic shared memory, and this launch gives it 0 bytes") as e:
        dyn_shared[1, 64](x.copy())
    assert e.value.span.line == line_of(dyn_shared, "cuda.shared.array(0")


@cuda.jit
def local_runtime(a, n):
    buf = cuda.local.array(n, dtype=np.float32)
    buf[0] = a[0]


def test_local_array_runtime_size():
    expect(local_runtime, KernelSyntaxError, "cuda.local.array with a runtime size", "cuda.local.array(n",
           x.copy(), 4)


@cuda.jit
def shared_runtime(a, n):
    buf = cuda.shared.array(n, dtype=np.float32)
    buf[0] = a[0]


def test_shared_array_runtime_size():
    expect(shared_runtime, KernelSyntaxError, "compile time", "cuda.shared.array(n", x.copy(), 4)


@cuda.jit(device=True)
def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)


@cuda.jit
def recursive(a):
    i = cuda.grid(1)
    a[i] = fact(i)


def test_recursion_runs_as_numba_runs_it():
    """Recursion is supported now (issue 14): int64 products wrap as Numba's do."""
    a = x.copy()
    recursive[1, 64](a)
    want = []
    for i in range(64):
        p = 1
        for k in range(2, i + 1):
            p = (p * k + 2**63) % 2**64 - 2**63          # int64 wrap-around
        want.append(np.float32(p))
    np.testing.assert_array_equal(a, np.array(want, np.float32))


@cuda.jit
def self_launch(a):
    self_launch[1, 1](a)


def test_kernel_launching_kernel():
    with pytest.raises((KernelSyntaxError, KernelTypeError)) as e:
        self_launch[1, 64](x.copy())
    assert "self_launch" in str(e.value)


@cuda.jit
def narrow_shfl(a):
    i = cuda.grid(1)
    a[i] = cuda.shfl_down_sync(0xFFFFFFFF, a[i], 1, 16)


def test_partial_warp_width():
    expect(narrow_shfl, KernelSyntaxError, "width=16", "shfl_down_sync")


@cuda.jit
def local_atomic(a):
    buf = cuda.local.array(4, np.int32)
    cuda.atomic.add(buf, 0, 1)
    a[0] = buf[0]


def test_atomic_on_local_array():
    expect(local_atomic, KernelTypeError, "local arrays", "cuda.atomic.add(buf",
           rng.integers(1, 5, 4).astype(np.int32))


@cuda.jit
def inc_signed(a):
    cuda.atomic.inc(a, 0, 3)


def test_atomic_inc_needs_unsigned():
    expect(inc_signed, KernelTypeError, "uint32", "cuda.atomic.inc", rng.integers(1, 5, 4).astype(np.int32))


@cuda.jit
def bad_grid_arg(a):
    i = cuda.grid(4)
    a[i] = 1


def test_grid_ndim():
    expect(bad_grid_arg, KernelTypeError, "1, 2 or 3", "cuda.grid(4)")


@cuda.jit
def syncc_in_device():
    pass


def test_bad_launch_configurations():
    with pytest.raises(KernelLaunchError, match="launch configuration"):
        syncc_in_device[1]()
    with pytest.raises(KernelLaunchError, match="griddim"):
        syncc_in_device[0, 32]()
    with pytest.raises(KernelLaunchError, match="1024"):
        syncc_in_device[1, 2048]()
    with pytest.raises(KernelLaunchError, match="argument"):
        syncc_in_device[1, 32](1)


def test_unknown_backend_and_jit_option():
    with pytest.raises(KernelLaunchError, match="unknown backend"):
        cuda.set_backend("opencl")
    with pytest.raises(TypeError, match="nonsense"):
        cuda.jit(nonsense=True)


def test_host_calls_of_device_objects_raise():
    with pytest.raises(RuntimeError, match="only be used inside"):
        cuda.syncthreads()
    with pytest.raises(Exception, match="only be called from a kernel"):
        fact(3)


def test_unsupported_dtype_argument():
    @cuda.jit
    def k(a):
        a[0] = 1
    with pytest.raises(KernelLaunchError, match="float16"):
        k[1, 1](np.array(["ab", "cd"]))          # (datetime64 arrays are arguments now: test_numba_datetime.py)
    # complex64 arrays are arguments, their elements values (tests/test_numba_complex*.py)
    z = np.ones(3, np.complex64) * 2j
    k[1, 1](z)
    assert z.tolist() == [1, 2j, 2j]


@cuda.jit
def grid_index(a):
    a[0] = cuda.grid(1)


def test_grid_over_32_bits_is_refused_before_it_runs():
    """numba-cuda's issue 9229 launches 22121216 x 256 threads; thread positions here are
    32-bit, so the launch is refused at once (not after minutes, not wrapped)."""
    a = np.zeros(1, np.uint64)
    with pytest.raises(KernelLaunchError, match="5663031296 threads in one dimension.*32 bits") as e:
        grid_index[22121216, 256](a)
    assert "grid-stride loop" in e.value.hint and a[0] == 0
    with pytest.raises(KernelLaunchError):
        grid_index.forall(2**32 + 5, 1024)(a)


def _vote(mask, predicate, result):
    i = cuda.grid(1)
    if i < result.shape[0]:
        result[i] = cuda.all_sync(mask[i], predicate[i])


@pytest.mark.parametrize("sig, msg", [("void(float32[:], int32[:], int32[:])", "Mask type must be an integer"),
                                      ("void(boolean[:], int32[:], int32[:])", "Mask type must be an integer"),
                                      ("void(int32[:], float64[:], int32[:])",
                                       "Predicate must be an integer or boolean")])
def test_typed_signature_compiles_when_decorated(sig, msg):
    """As in Numba, a kernel with a declared signature is typed at the decorator: a typing
    error is raised there, naming the line."""
    with pytest.raises(KernelTypeError, match=msg) as e:
        cuda.jit(sig)(_vote)
    assert e.value.span.line == line_of(cuda.jit(_vote), "cuda.all_sync")


def test_typed_signature_that_types_runs():
    k = cuda.jit("void(uint32[:], boolean[:], int32[:])")(_vote)
    r = np.zeros(32, np.int32)
    k[1, 32](np.full(32, 0xFFFFFFFF, np.uint32), np.ones(32, bool), r)
    assert (r == 1).all()


@cuda.jit(device=True)
def maybe(a):
    if a > 1:
        return
    return a


@cuda.jit
def optional_result(r, a):
    r[0] = maybe(a)


def test_an_optional_result_used_untested_is_an_error():
    """Numba types such a result as Optional (a kernel tests it with `is None`, which works,
    tests/test_numba_ssa.py); storing it untested is refused instead of giving 0 for None."""
    with pytest.raises(KernelTypeError, match="may be None here") as e:
        optional_result[1, 1](np.zeros(1), 3)
    assert "r[0] = maybe(a)" in str(e.value)
