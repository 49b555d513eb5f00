"""``cuda.jit`` and kernel launches ``kernel[griddim, blockdim](*args)``, Numba-style.

A launch converts Numba's blocks to MLX's thread grid (``grid = griddim * blockdim``,
``threadgroup = blockdim``) and updates array arguments in place, as Numba does::

    from metalbench import cuda
    import numpy as np

    @cuda.jit
    def scale(x, a):
        i = cuda.grid(1)
        if i < x.size:
            x[i] *= a

    x = np.random.rand(1000).astype(np.float32)
    scale[4, 256](x, 2.0)            # x is doubled in place

Backends: ``kernel.configure(backend="sim")``, ``cuda.set_backend("sim")`` or
``METALBENCH_BACKEND``; ``auto`` picks metal, else cuda, else the simulator.
"""
from __future__ import annotations

import inspect
import math
import warnings

import numpy as np

from .. import ir
from .. import launch as L
from .. import runtime
from .. import types as T
from ..errors import KernelLaunchError, KernelSyntaxError, user_facing
from ..frontend import python as F
from ..kernel import Func, Kernel, Specialization
from . import inplace
from .devicearray import DeviceNDArray
from .intrinsics import attach_const_arrays

_state = {"backend": None, "checked": None}


def set_backend(name: str | None) -> None:
    """Pick the backend of every later ``cuda.jit`` launch: ``"metal"``, ``"cuda"``,
    ``"sim"`` or ``"auto"``/``None`` (``METALBENCH_BACKEND``, else the best available).

    >>> set_backend("sim"); set_backend(None)
    """
    if name not in (None, "auto") and name not in L.BACKENDS:
        raise KernelLaunchError(f"unknown backend {name!r}", hint="use one of 'auto', 'metal', 'cuda', 'sim'")
    _state["backend"] = name


def get_backend() -> str:
    """The backend a ``cuda.jit`` launch would run on now."""
    return L.resolve_backend(_state["backend"] or "auto")


class _Float64Warning(UserWarning):
    pass


def _host_array(v, name):
    """(NumPy storage the kernel reads and writes, ScalarType it has on the device)."""
    if isinstance(v, DeviceNDArray):
        a = v._data
    elif isinstance(v, np.ndarray):
        a = v
    else:
        a = runtime.to_numpy(v)
    if a.dtype == np.float64:
        warnings.warn(f"array argument {name!r} is float64; it runs as float32 (Metal has no double) and the "
                      "results are converted back", _Float64Warning, stacklevel=4)
        return a, T.float32
    try:
        return a, T.from_numpy(a.dtype)
    except T.TypeError_ as e:
        raise KernelLaunchError(f"array argument {name!r}: {e}", hint=f"for example {name}.astype(np.float32)")


def _scalar_type(v, name):
    if isinstance(v, (bool, np.bool_)):
        return T.bool_
    if isinstance(v, (int, np.integer)) and not isinstance(v, np.generic):
        return T.literal_int_type(int(v))
    if isinstance(v, float):
        return T.float32
    if isinstance(v, np.generic):
        if v.dtype == np.float64:
            return T.float32
        try:
            return T.from_numpy(v.dtype)
        except T.TypeError_:
            pass
    if isinstance(v, complex) or isinstance(v, np.complexfloating):
        raise KernelLaunchError(f"argument {name!r}: complex numbers are not supported")
    raise KernelLaunchError(f"argument {name!r} is a {type(v).__name__}; kernels take arrays (NumPy, device "
                            "arrays, mx.array) and numbers", hint="convert it with np.asarray(...)")


def _dims(v, what):
    if isinstance(v, (tuple, list)):
        d = tuple(int(x) for x in v)
    else:
        d = (int(v),)
    if not 1 <= len(d) <= 3 or any(x <= 0 for x in d):
        raise KernelLaunchError(f"{what} must be a positive int or a tuple of 1 to 3 positive ints, got {v!r}")
    return d + (1,) * (3 - len(d))


class CUDAKernel(Kernel):
    """A ``@cuda.jit`` kernel. Launch it Numba's way, ``k[griddim, blockdim](*args)``
    (also ``[griddim, blockdim, stream, sharedmem]``), or MLX's way with
    ``k(*args, grid=threads, threadgroup=tg)`` which runs on copies of the arrays and
    returns the arrays the kernel writes (that is what ``check``/``bench``/``sweep`` use).

    >>> @jit                                        # doctest: +SKIP
    ... def inc(x):
    ...     i = cuda.grid(1)
    ...     if i < x.size:
    ...         x[i] += 1
    >>> inc[1, 32](x)                               # doctest: +SKIP
    """

    def __init__(self, fn, backend=None, checked=None):
        super().__init__(fn)
        for p in self.params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise KernelSyntaxError(f"@cuda.jit kernel {self.name}: *args/**kwargs parameters are not supported")
        self._backend = backend
        self._checked = checked

    def __repr__(self) -> str:
        return f"<metalbench.cuda kernel {self.name}({', '.join(p.name for p in self.params)})>"

    def configure(self, backend=None, checked=None) -> "CUDAKernel":
        """Set this kernel's backend (``"metal"``, ``"cuda"``, ``"sim"``, ``"auto"``) and
        simulator checking; returns the kernel so ``k.configure(backend="sim")[g, b](...)`` works."""
        if backend is not None:
            self._backend = backend
        if checked is not None:
            self._checked = checked
        return self

    def __getitem__(self, config) -> "_Launcher":
        if not isinstance(config, tuple):
            config = (config,)
        if not 2 <= len(config) <= 4:
            raise KernelLaunchError(f"launch configuration must be [griddim, blockdim] (optionally with stream "
                                    f"and sharedmem), got {len(config)} item(s)")
        return _Launcher(self, config[0], config[1], config[3] if len(config) > 3 else 0)

    def forall(self, ntasks, tpb=0, stream=0, sharedmem=0) -> "_Launcher":
        """Numba's ``k.forall(n)(*args)``: enough 1-D blocks to cover ``n`` threads."""
        tpb = tpb or 128
        return _Launcher(self, max(1, math.ceil(ntasks / tpb)), tpb, sharedmem)

    @property
    def __metalbench_intrinsic__(self):
        def hook(tr, call):
            raise KernelSyntaxError(f"launching or calling the kernel {self.name} from a kernel is not supported "
                                    "(recursion or dynamic parallelism)", tr.span(call),
                                    hint="call @cuda.jit(device=True) functions from kernels")
        return hook

    # -- binding -----------------------------------------------------------------------
    def _bind(self, args, kwargs):
        try:
            ba = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise KernelLaunchError(f"{self.name}(): {e}")
        ba.apply_defaults()
        values, specs = {}, []
        for name, v in ba.arguments.items():
            if runtime.is_array(v) or isinstance(v, DeviceNDArray):
                a, t = _host_array(v, name)
                if a.size == 0:
                    raise KernelLaunchError(f"argument {name!r} is empty (shape {a.shape})")
                values[name] = (v, a, t)
                specs.append(F.ArgSpec(name, "buffer", t, max(1, a.ndim)))
            else:
                t = _scalar_type(v, name)
                values[name] = (v, None, t)
                specs.append(F.ArgSpec(name, "scalar", t, 0))
        return values, specs

    def _specialization(self, specs) -> Specialization:
        sp = super()._specialization(specs)
        if not sp.artifacts.get("numba_ready"):
            attach_const_arrays(sp.ir)
            sp.artifacts["numba_ready"] = True
        return sp

    @user_facing
    def specialize(self, *args, **kwargs) -> Specialization:
        _, specs = self._bind(args, kwargs)
        return self._specialization(specs)

    def ir(self, *args, **kwargs) -> ir.KernelIR:
        """The IR for these arguments (``print(ir.dump(k.ir(...)))`` to read it)."""
        return self.specialize(*args, **kwargs).ir

    @user_facing
    def source(self, *args, backend: str = "metal", **kwargs) -> str:
        """The generated source for these arguments; for the GPU backends, after the
        in-place pass (:mod:`metalbench.numba_compat.inplace`)."""
        sp = self.specialize(*args, **kwargs)
        if backend == "sim":
            return ir.dump(sp.ir)
        fsp, _ = _functional(sp, self.name)
        r = fsp.rendered(backend)
        return ("// header\n" + r.header.rstrip() + "\n\n" if r.header else "") + "// body\n" + r.body.rstrip() + "\n"

    # -- launching ---------------------------------------------------------------------
    @user_facing
    def launch(self, args, kwargs, grid3, tg3, backend=None, checked=None):
        """Run with ``grid3`` threads in threadgroups of ``tg3``, updating arrays in place."""
        values, specs = self._bind(args, kwargs)
        sp = self._specialization(specs)
        g, t = L.normalize(grid3, tg3)
        # "auto" from a caller (check/bench pass it) defers to the kernel's and the global choice.
        pick = [b for b in (backend, self._backend, _state["backend"]) if b not in (None, "auto")]
        be = L.resolve_backend(pick[0] if pick else "auto")
        chk = L.checked_default(checked if checked is not None else
                                (self._checked if self._checked is not None else _state["checked"]))
        self.last_launch = dict(grid=g, threadgroup=t, backend=be)
        if be == "sim":
            self.last_stats = _run_sim_inplace(sp, values, g, t, chk)
        else:
            _run_gpu_inplace(sp, self.name, values, g, t, be)

    @user_facing
    def __call__(self, *args, grid=None, threadgroup=None, backend=None, checked=None, **kwargs):
        """MLX-style launch on copies of the array arguments; returns the written arrays
        (NumPy; a tuple if several), leaving the caller's arrays untouched."""
        copies = [np.array(runtime.to_numpy(a._data if isinstance(a, DeviceNDArray) else a), copy=True)
                  if (runtime.is_array(a) or isinstance(a, DeviceNDArray)) else a for a in args]
        kw = {k: (np.array(runtime.to_numpy(v), copy=True) if runtime.is_array(v) else v) for k, v in kwargs.items()}
        self.launch(copies, kw, grid, threadgroup, backend, checked)
        values, specs = self._bind(copies, kw)
        sp = self._specialization(specs)
        names = inplace.written_params(sp.ir)
        outs = [values[n][1] for n in names]
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)


class _Launcher:
    """``kernel[griddim, blockdim]``: call it with the kernel's arguments."""

    def __init__(self, kernel: CUDAKernel, griddim, blockdim, sharedmem=0):
        self.kernel = kernel
        self.griddim = _dims(griddim, "griddim")
        self.blockdim = _dims(blockdim, "blockdim")
        self.sharedmem = sharedmem

    @user_facing
    def __call__(self, *args, **kwargs):
        g = tuple(a * b for a, b in zip(self.griddim, self.blockdim))
        self.kernel.launch(args, kwargs, g, self.blockdim)
        return None


def _storage(a: np.ndarray, t: T.ScalarType):
    """(contiguous storage of dtype ``t`` the simulator can write, whether it is ``a`` itself)."""
    if a.dtype == t.np and a.flags.c_contiguous:
        return a, True
    return np.ascontiguousarray(a).astype(t.np), False


def _run_sim_inplace(sp: Specialization, values: dict, grid, tg, checked):
    """Run on the simulator directly on the caller's storage: in-place is exact."""
    from ..sim import Buffer
    args, copy_back = {}, []
    for p in sp.ir.params:
        v, a, t = values[p.name]
        if p.kind == "scalar":
            args[p.name] = p.type.np.type(v)
            continue
        s, same = _storage(a, t)
        if not same:
            copy_back.append((v, a, s))
        args[p.name] = runtime.sim_buffer(s, Buffer)
    stats = sp.sim().run(args, grid, tg, checked=checked)
    for v, a, s in copy_back:
        _write_back(v, a, s)
    return stats


def _write_back(v, a: np.ndarray, new: np.ndarray):
    """Put ``new`` into the caller's array ``v`` (whose NumPy storage is ``a``)."""
    new = new.reshape(a.shape)
    if isinstance(v, (np.ndarray, DeviceNDArray)):
        if a.flags.writeable:
            np.copyto(a, new, casting="unsafe")
            return
        raise KernelLaunchError("a read-only NumPy array was written by the kernel")
    if type(v).__module__.startswith("mlx"):
        v[...] = runtime.to_mlx(new.astype(a.dtype, copy=False))
        return
    np.copyto(a, new, casting="unsafe")


def _functional(sp: Specialization, name: str):
    got = sp.artifacts.get("numba_functional")
    if got is None:
        kir2, plans = inplace.functionalize(sp.ir, name)
        fsp = Specialization(sp.key + ("functional",), kir2, sp.specs)
        got = sp.artifacts["numba_functional"] = (fsp, plans)
    return got


def run_functional(sp: Specialization, name: str, values: dict, grid, tg, backend: str):
    """Launch the functionalized kernel (``backend`` is "metal", "cuda", or "sim" to
    verify the GPU scheme by execution) and write merged results into the arguments."""
    fsp, plans = _functional(sp, name)
    inputs = {}
    for p in fsp.ir.inputs:
        v, a, t = values[p.name]
        inputs[p.name] = v if p.kind == "scalar" else (a if a.dtype == t.np else a.astype(t.np))
    out_specs = [(p.name, tuple(values[pl.param][1].shape) or (1,), p.type)
                 for pl in plans for p in fsp.ir.outputs if p.name in pl.outputs]
    out_specs.sort(key=lambda o: [p.name for p in fsp.ir.outputs].index(o[0]))
    if not out_specs:
        if backend == "sim":
            runtime.run_sim(fsp.sim(), fsp.ir, inputs, [], grid, tg, None, False)
        else:
            from ..kernel import _launch_gpu
            _launch_gpu(fsp, backend, inputs, [], grid, tg, None)
        return
    if backend == "sim":
        outs, _ = runtime.run_sim(fsp.sim(), fsp.ir, inputs, out_specs, grid, tg, 0, False)
    else:
        from ..kernel import _launch_gpu
        outs = _launch_gpu(fsp, backend, inputs, out_specs, grid, tg, 0)
    by_name = {o[0]: runtime.to_numpy(x) for o, x in zip(out_specs, outs)}
    for pl in plans:
        v, a, t = values[pl.param]
        orig = a if a.dtype == t.np else a.astype(t.np)
        _write_back(v, a, inplace.merge(pl, orig, by_name))


def _run_gpu_inplace(sp, name, values, grid, tg, backend):
    run_functional(sp, name, values, grid, tg, backend)


class DeviceFunction(Func):
    """``@cuda.jit(device=True)``: a device function callable from kernels (like ``@mb.func``)."""

    def __repr__(self) -> str:
        return f"<metalbench.cuda device function {self.__name__}>"


_JIT_OPTIONS = {"device", "inline", "debug", "opt", "fastmath", "cache", "lineinfo", "link", "max_registers",
                "forceinline", "lto", "boundscheck", "extensions", "backend", "checked"}


def jit(func_or_sig=None, device=False, **options):
    """Numba's ``cuda.jit``: ``@cuda.jit``, ``@cuda.jit("void(float32[:])")``,
    ``@cuda.jit(device=True)``. Signatures are accepted and ignored (kernels specialise
    lazily on the argument dtypes); ``backend=``/``checked=`` choose where it runs.

    >>> @jit(device=True)
    ... def sq(v):
    ...     return v * v
    >>> sq
    <metalbench.cuda device function sq>
    """
    bad = set(options) - _JIT_OPTIONS
    if bad:
        raise TypeError(f"cuda.jit() got unexpected option(s): {', '.join(sorted(bad))}")
    backend = options.get("backend")
    checked = options.get("checked")

    def wrap(fn):
        if device:
            return DeviceFunction(fn)
        return CUDAKernel(fn, backend=backend, checked=checked)
    if callable(func_or_sig) and not isinstance(func_or_sig, (str, list, tuple)) \
            and inspect.isfunction(func_or_sig):
        return wrap(func_or_sig)
    return wrap
