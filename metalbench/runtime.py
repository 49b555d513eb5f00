"""Moving arrays between MLX, NumPy and the simulator, and running a kernel's IR on it.

Every kernel object (DSL, ``metal_kernel``, ``cuda.jit``) launches on the simulator
through :func:`run_sim`, so output allocation, poisoning and conversion live here once.

    >>> import numpy as np
    >>> a = to_numpy(np.arange(3, dtype=np.float32)); a.dtype.name
    'float32'
"""
from __future__ import annotations

import numpy as np

from . import scalar
from . import types as T
from .errors import KernelLaunchError

# Poison for outputs nobody initialised: NaN for floats, 0xCD.. for integers, so
# unwritten elements show up in comparisons. The NaNs carry the 0xCD payload: a kernel
# that writes NaN (0/0, a NaN input) writes another bit pattern, so the launch's
# coverage check (sim/coverage.py) tells written from unwritten exactly for floats.
_POISON_BYTE = 0xCD
_NAN_BITS = {2: 0x7ECD, 4: 0x7FC0CDCD, 8: 0x7FF8CDCDCDCDCDCD}   # float16/bfloat16 get their own below
_BF16_BITS = 0x7FCD
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def poison_bits(t: T.ScalarType, alt: bool = False) -> int:
    """The bit pattern of ``t``'s poison (``alt``: the second poison, 0x5A.. / False, that
    the coverage check uses to tell integers written with the poison value from unwritten).

    >>> hex(poison_bits(T.float32)), hex(poison_bits(T.int16)), poison_bits(T.bool_)
    ('0x7fc0cdcd', '0xcdcd', 1)
    """
    key = (t.name, alt)
    bits = _BITS.get(key)
    if bits is None:
        bits = _BITS[key] = _poison_bits(t, alt)
    return bits


_BITS: dict = {}


def _poison_bits(t: T.ScalarType, alt: bool) -> int:
    if t.is_bool:
        return 0 if alt else 1
    n = t.itemsize
    if t.is_float and not alt:
        return _BF16_BITS if t == T.bfloat16 else _NAN_BITS[n]
    return int.from_bytes(bytes([0x5A if alt else _POISON_BYTE]) * n, "little")


def to_numpy(x) -> np.ndarray:
    """A NumPy view or copy of an ``mx.array``, NumPy array or array-like (bfloat16 kept)."""
    if isinstance(x, np.ndarray):
        return x
    mod = type(x).__module__
    if mod.startswith("mlx"):
        import mlx.core as mx
        if x.dtype == mx.bfloat16:
            import ml_dtypes
            return np.asarray(x.view(mx.uint16)).view(ml_dtypes.bfloat16)
        return np.asarray(x)
    return np.asarray(x)


def to_mlx(a: np.ndarray):
    """An ``mx.array`` holding the NumPy array ``a`` (bfloat16 and float64 kept: MLX
    would make float32 of a float64 array unless told)."""
    import mlx.core as mx
    if a.dtype == T.bfloat16.np:
        return mx.array(a.view(np.uint16)).view(mx.bfloat16)
    if a.dtype == np.float64:
        return mx.array(a, dtype=mx.float64)
    return mx.array(a)


# ----------------------------------------------------------------------------- no derivatives
class KernelGradientError(KernelLaunchError, ValueError):
    """A derivative asked through a kernel launch; a ``ValueError`` too, as MLX raises."""


def no_derivatives(outs: list, inputs, kernel_name: str = "") -> list:
    """The simulator's outputs ``outs`` tied to the launch's MLX ``inputs`` (an iterable of
    arguments) through an ``mx.custom_function`` whose VJP and JVP raise, as MLX's do.

    On a GPU a launch is a ``CustomKernel`` primitive, which has no derivatives: ``mx.grad``
    through it raises ``[Primitive::vjp] Not implemented for CustomKernel.``. The simulator
    computes on the host and hands back fresh arrays, which MLX would take for constants:
    a gradient through them would be zeros, silently. A ``mx.custom_function`` with its
    own VJP around the launch (MLX's grid_sample example, ``k.mlx_function``) supplies the
    derivative and never reaches these.

    >>> import mlx.core as mx
    >>> x = mx.array([1.0, 2.0])
    >>> f = lambda x: no_derivatives([mx.array([3.0, 4.0])], [x], "k")[0].sum()
    >>> f(x).item()
    7.0
    >>> mx.grad(f)(x)
    Traceback (most recent call last):
    metalbench.runtime.KernelGradientError: [Primitive::vjp] Not implemented for CustomKernel (kernel 'k' on the simulator...
    """
    import mlx.core as mx
    arrays = [v for v in inputs if isinstance(v, mx.array)]
    if not arrays:
        return outs
    fn = mx.custom_function(lambda *_: outs)

    def refuse(which):
        def raiser(*_):
            raise KernelGradientError(
                f"[Primitive::{which}] Not implemented for CustomKernel (kernel {kernel_name!r} on the simulator, "
                f"as on a GPU: MLX's custom kernels have no derivatives; outputs taken as constants "
                f"would give a zero gradient)",
                hint="wrap the launch in mx.custom_function and give it a .vjp (MLX's docs: 'Grid Sample "
                     "VJP'); for a DSL kernel, k.mlx_function(...) has a generated VJP")
        return raiser
    fn.vjp(refuse("vjp"))
    fn.jvp(refuse("jvp"))
    # A later launch reading a tied output evaluates it (an MLX eval, ~40 us on a CPU). It
    # must: remembering the simulator's array behind it would be stale after an in-place
    # update (``y += 1`` and ``y[a:b] = v`` keep the Python object and change its values).
    with mx.stream(mx.cpu):     # the primitive only hands ``outs`` on; float64 exists on the CPU alone
        return list(fn(*arrays))


# ----------------------------------------------------------------------------- float64 across MLX
# MLX refuses float64 in every primitive on a GPU stream (mlx/array.cpp: "float64 is not
# supported on the GPU"), so a float64 value crosses MLX's CUDA backend as its bit
# pattern, a uint64 (the printed CUDA reinterprets the pointer as double*). Views
# between the two run on the CPU stream, where float64 is allowed; MLX's View shares
# the buffer when the item sizes agree (View::eval_cpu -> copy_shared_buffer): no copy.

def carrier(t: T.ScalarType, backend: str) -> T.ScalarType:
    """The type MLX holds a kernel value of type ``t`` as on ``backend``: uint64 for
    float64 on cuda (its bits), ``t`` itself otherwise.

    >>> carrier(T.float64, "cuda").name, carrier(T.float64, "sim").name, carrier(T.float32, "cuda").name
    ('uint64', 'float64', 'float32')
    """
    return T.uint64 if t is T.float64 and backend == "cuda" else t


def float64_bits(v):
    """The uint64 ``mx.array`` holding float64 data ``v``'s bits: an ``mx.array`` is
    viewed on the CPU stream (lazy, shares its buffer: no copy; another dtype is
    converted there first); NumPy and array-likes are copied into MLX once, as any
    NumPy input is.

    >>> import mlx.core as mx
    >>> float64_bits(np.array([1.0, -2.0])).tolist() == np.array([1.0, -2.0]).view(np.uint64).tolist()
    True
    >>> float64_bits(mx.array([0.5], dtype=mx.float64)).dtype
    mlx.core.uint64
    """
    import mlx.core as mx
    if type(v) is Float64Bits:
        return v.bits
    if type(v) is mx.array:
        if v.dtype != mx.float64:
            v = v.astype(mx.float64, stream=mx.cpu)
        return mx.view(v, mx.uint64, stream=mx.cpu)
    a = np.ascontiguousarray(to_numpy(v), dtype=np.float64)
    return mx.array(a.view(np.uint64))


class Float64Bits:
    """float64 data already held as its bits (``bits``: a uint64 ``mx.array``), as a
    float64 device array lives on cuda: :func:`float64_bits` passes it on untouched.

    >>> import mlx.core as mx
    >>> b = mx.array(np.array([1.5]).view(np.uint64))
    >>> float64_bits(Float64Bits(b)) is b
    True
    """
    __slots__ = ("bits",)

    def __init__(self, bits):
        self.bits = bits


def float64_init_value(init_value, types: list):
    """The ``init_value`` MLX must be given so that outputs of ``types`` (as the kernel
    sees them) start at ``init_value``, where float64 outputs are held as uint64 bits on
    cuda: MLX fills every output with ``init_value`` converted to its dtype, and takes a
    float32. Zero is zero in every type; another value works only when every output is
    float64 and its float64 bit pattern is a float32 integer (1.0, -2.0, 0.5, inf, NaN).

    >>> float64_init_value(1.0, [T.float64]) == float(np.float64(1.0).view(np.uint64))
    True
    >>> float64_init_value(0, [T.float64, T.float32])
    0
    """
    if init_value is None or init_value == 0 and not np.signbit(init_value):
        return init_value
    from .errors import KernelLaunchError
    if any(t is not T.float64 for t in types):
        raise KernelLaunchError(
            f"init_value={init_value!r} with float64 and other outputs on cuda: MLX holds float64 outputs as "
            "their bits (uint64) there and fills every output with one value",
            hint="use init_value=0, or write the start value in the kernel")
    bits = int(np.float64(np.float32(init_value)).view(np.uint64))
    if float(np.float32(bits)) != bits:
        raise KernelLaunchError(
            f"init_value={init_value!r} for a float64 output on cuda: MLX holds it as its bits (uint64) and "
            f"takes init_value as a float32, which cannot hold the bit pattern {bits:#x}",
            hint="use init_value=0, or write the start value in the kernel")
    return float(bits)


def float64_scalar_bits(v):
    """A 0-d uint64 ``mx.array`` holding the bits of the number ``v`` as a float64.

    >>> float64_scalar_bits(1.0).item() == 0x3FF0000000000000
    True
    """
    import mlx.core as mx
    if type(v) is mx.array:
        return float64_bits(mx.reshape(v, (), stream=mx.cpu))      # MLX reshapes float64 on the CPU only
    return mx.array(np.array(v, dtype=np.float64).reshape(()).view(np.uint64))


def bits_float64(a):
    """The float64 ``mx.array`` whose bits the uint64 ``mx.array`` ``a`` holds: a view
    on the CPU stream (lazy, no copy). It lives on the CPU device as far as MLX is
    concerned (MLX computes with float64 only there); ``np.asarray`` reads it without
    a copy, and passing it to a cuda kernel views it back to bits, again without a copy.

    >>> import mlx.core as mx
    >>> bits_float64(mx.array(np.array([2.5]).view(np.uint64))).tolist()
    [2.5]
    """
    import mlx.core as mx
    return mx.view(a, mx.float64, stream=mx.cpu)


def is_array(x) -> bool:
    """True for ``mx.array``, NumPy arrays and other array-likes with a dtype and shape."""
    return hasattr(x, "shape") and hasattr(x, "dtype") and not np.isscalar(x) and getattr(x, "ndim", 1) >= 0 \
        and not isinstance(x, np.generic)


def poisoned(shape, t: T.ScalarType, alt: bool = False) -> np.ndarray:
    """A fresh array of ``shape`` filled with poison (NaN / 0xCD bytes / True; see
    :func:`poison_bits`)."""
    key = (t.name, alt)
    v = _FILL.get(key)
    if v is None:     # the poison as a scalar of t (np.full copies its bits: the NaN payload stays)
        v = _FILL[key] = np.array(poison_bits(t, alt), _UINT[t.itemsize]).view(t.np)[()] if not t.is_bool \
            else np.bool_(not alt)
    return np.full(shape, v, dtype=t.np)


_FILL: dict = {}


def new_output(shape, t: T.ScalarType, init_value=None) -> np.ndarray:
    """An output array: poisoned, or filled with ``init_value`` when given (MLX semantics)."""
    if t is T.complex64:        # MLX fills complex64(init_value): imaginary parts 0
        if init_value is None:
            return poisoned(tuple(shape) + (2,), T.float32).view(np.complex64).reshape(shape)
        return np.full(shape, init_value, dtype=np.complex64)
    if init_value is None:
        return poisoned(shape, t)
    return np.full(shape, init_value, dtype=t.np)


def run_sim(sim_kernel, ir, inputs: dict, outputs: list, grid, threadgroup,
            init_value=None, checked: bool = False, keep_strides: bool = False, kernel_name: str = ""):
    """Run ``ir`` (compiled as ``sim_kernel``) on the simulator.

    ``inputs`` maps each input parameter name to an array (any kind) or a scalar;
    ``outputs`` is a list of ``(name, shape, ScalarType)``. ``keep_strides``: a strided
    input keeps its strides (``metal_kernel(..., ensure_row_contiguous=False)``).
    Returns the outputs as a list of ``mx.array`` and the simulator's stats.
    """
    from .sim import Buffer

    args = {}
    for p in ir.inputs:
        v = inputs[p.name]
        if p.kind == "scalar":
            args[p.name] = sim_scalar(v, p.type, p.name, kernel_name)
            continue
        a = host_array(v, p.name, kernel_name)
        want = T.complex64.np if p.complex else p.type.np
        if a.dtype != want:
            a = a.astype(want)
        args[p.name] = strided_buffer(a, Buffer) if keep_strides else sim_buffer(a, Buffer)
        if p.complex:
            args[p.name] = complex_storage(args[p.name], Buffer)
    outs = []
    for name, shape, t in outputs:
        a = new_output(shape, t, init_value)
        outs.append(a)
        args[name] = sim_buffer(a, Buffer)
        if a.dtype.kind == "c":
            args[name] = complex_storage(args[name], Buffer)
    # fresh outputs are poisoned: the launch checks it wrote them (CoverageWarning); on a GPU
    # they hold garbage, so the checked simulator reports reads (atomic updates included) of
    # elements no thread wrote first
    fresh = [n for n, _, _ in outputs] if init_value is None else None
    stats = sim_kernel.run(args, grid, threadgroup, checked=checked, coverage=fresh,
                           uninitialised=fresh or ())
    return [to_mlx(a) for a in outs], stats


def complex_storage(b, Buffer):
    """A complex64 simulator buffer as the kernel's IR reads it (``ir.Param.complex``): its
    storage as float32 (real, imag) pairs, written in place; shape and strides still count
    complex elements (``x_shape``, ``x_strides`` are MLX's)."""
    return Buffer(b.data.view(np.float32), b.shape, b.strides)


def host_array(v, name: str = "", kernel_name: str = "") -> np.ndarray:
    """``v`` as NumPy for the simulator. Inside ``mx.compile``/``mx.vmap``/
    ``mx.export_function`` an MLX input has no value yet: that raises a
    :class:`KernelLaunchError` saying so (the simulator computes on the host)."""
    try:
        return to_numpy(v)
    except ValueError as e:
        if "transformation" not in str(e) and "[eval]" not in str(e):
            raise
        raise _tracing_error(name, kernel_name) from None


def _tracing_error(name, kernel_name):
    from .errors import KernelLaunchError
    what = f"kernel {kernel_name!r}" if kernel_name else "this kernel"
    return KernelLaunchError(
        f"{what} runs on the simulator (backend 'sim'), which computes on the host, but its input "
        f"{name!r} is being traced by an MLX transformation (mx.compile, mx.vmap, mx.export_function "
        f"or a gradient): a traced array has no value to simulate with",
        hint="call the kernel eagerly, outside the transformation (for mx.compile: mx.disable_compile() "
             "runs compiled functions eagerly), or launch it on a GPU backend (backend='metal' or 'cuda'), "
             "where it is an MLX primitive that transformations trace")


def sim_scalar(v, t: T.ScalarType, name: str = "", kernel_name: str = ""):
    """A scalar argument (number, NumPy scalar or 0-d array) as a NumPy scalar of ``t``."""
    if type(v) is int:                  # C's conversion: 0xFFFFFFFF as int32 is -1
        return scalar.value(v, t)
    if isinstance(v, (bool, int, float)):
        return t.np.type(v)
    if isinstance(v, np.generic):
        return v.astype(t.np)
    return host_array(v, name, kernel_name).astype(t.np).reshape(())[()]


def strided_buffer(a: np.ndarray, Buffer):
    """A simulator buffer that keeps ``a``'s real strides, as MLX hands a strided input
    over without ``ensure_row_contiguous``: the kernel sees the storage and ``x_strides``.
    Arrays MLX would copy anyway (negative or unaligned strides) become contiguous."""
    if a.ndim == 0 or a.flags.c_contiguous or any(s < 0 for s in a.strides) \
            or any(s % a.itemsize for s in a.strides):
        return sim_buffer(np.ascontiguousarray(a), Buffer)
    st = tuple(s // a.itemsize for s in a.strides)
    span = 1 + sum((n - 1) * s for n, s in zip(a.shape, st)) if a.size else 1
    storage = np.lib.stride_tricks.as_strided(a, shape=(span,), strides=(a.itemsize,))
    return Buffer(np.array(storage), tuple(a.shape), st)


def sim_buffer(a: np.ndarray, Buffer):
    """A row-contiguous simulator buffer over ``a``: the flat storage, shape and element
    strides (a strided view is copied; ``mlx_compat`` keeps real strides itself when
    ``ensure_row_contiguous=False``)."""
    if a.ndim == 0:
        return Buffer(a.reshape(1), (), ())
    a = np.ascontiguousarray(a)   # no copy when already contiguous: outputs are written in place
    return Buffer(a.reshape(-1), tuple(a.shape), tuple(int(s) // a.itemsize for s in a.strides))
