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

import enum
import inspect
import math

import numpy as np

from .. import ir
from .. import launch as L
from .. import runtime
from .. import types as T
from ..scalar import value as scalar_value
from ..errors import (KernelLaunchError, KernelSyntaxError, KernelTypeError, MetalbenchError, trim_traceback,
                      user_facing)
from ..frontend import python as F
from .record_args import bind_record, check_record_alignment, record_layouts, record_matches, record_uses, write_back_records
from ..kernel import Func, Kernel, _spec_key
from ..protocol import _ENV_KEY, MISS, BoundLaunch, Specialization, arg_signature, backend_token, signatures
from ..semantics import NUMBA
from ..thin import is_numpy_number, remember_launch
from . import inplace, metal64
from .complexarg import (bind_complex_scalar, complex_storage, declare_complex_scalars, matches_complex,
                         refuse_complex, refuse_metal_library, spec_text)
from .datetimearg import datetime_marker, datetime_storage
from . import nbtypes as nbt
from .devicearray import DeviceNDArray
from .launcher import LaunchConfigError, LaunchConfigTypeError, _dims, _Launcher  # noqa: F401
from .captures import bind_written_captures
from .devicefunc import DeviceFunction  # noqa: F401  (public here too: cuda/__init__.py, extending.py)
from .dispatcher import ArgHint, CompiledKernel, DispatcherAPI, unwrap
from .intrinsics import DYNSHARED, attach_const_arrays
from .sigmatch import SignatureMismatch, _match, _tuple_structure, as_bound_type, sign_reinterpret  # noqa: F401  (SignatureMismatch: public)

_state = {"backend": None, "checked": None}
# Bumped by every change of a launch setting (set_backend, a kernel's configure or its
# _backend/_checked): a launcher's front compares one number instead of each setting.
_SETTINGS = [0]


def set_backend(name: str | None) -> None:
    """Pick the backend of every later ``cuda.jit`` launch: ``"metal"``, ``"cuda"``,
    ``"sim"`` or ``"auto"``/``None`` (``METALBENCH_BACKEND``, else the best available).

    >>> set_backend("sim"); set_backend(None)
    """
    if name not in (None, "auto") and name not in L.BACKENDS:
        raise KernelLaunchError(f"unknown backend {name!r}", hint="use one of 'auto', 'metal', 'cuda', 'sim'")
    _state["backend"] = name
    _SETTINGS[0] += 1


def get_backend() -> str:
    """The backend a ``cuda.jit`` launch would run on now."""
    return L.resolve_backend(_state["backend"] or "auto")


def _host_array(v, name):
    """(NumPy storage the kernel reads and writes, ScalarType it has on the device)."""
    return (datetime_storage(v, name) if datetime_marker(v) else _host_array_kind(v, name))[:2]


def _host_array_kind(v, name):
    """``_host_array`` and whether the array is complex (its storage then the real parts)."""
    if isinstance(v, DeviceNDArray):
        a = v._host if v._host is not None else v._kmeta    # device mode: its layout (never read)
    elif isinstance(v, np.ndarray):
        a = v
    else:
        a = runtime.to_numpy(v)
    if isinstance(a, np.ndarray) and a.dtype.kind == "c":
        return (*complex_storage(a, name), True)
    try:
        return a, T.from_numpy(a.dtype), False
    except T.TypeError_ as e:
        raise KernelLaunchError(f"array argument {name!r}: {e}", hint=f"for example {name}.astype(np.float32)")


def _scalar_type(v, name):
    """A scalar argument's type as ``numba.typeof`` gives it: int64, float64, bool, or
    the NumPy scalar's dtype."""
    if isinstance(v, (bool, np.bool_)):
        return T.bool_
    if isinstance(v, (int, np.integer)) and not isinstance(v, np.generic):
        return T.int64 if -(2**63) <= int(v) < 2**63 else T.uint64
    if isinstance(v, float):
        return T.float64
    if isinstance(v, np.generic):
        try:
            return T.from_numpy(v.dtype)
        except T.TypeError_:
            pass
    if isinstance(v, complex) or isinstance(v, np.complexfloating):
        raise KernelLaunchError(f"argument {name!r}: complex numbers are not supported")
    raise KernelLaunchError(f"argument {name!r} is a {type(v).__name__}; kernels take arrays (NumPy, device "
                            "arrays, mx.array) and numbers", hint="convert it with np.asarray(...)")


class _SignatureFunctions(dict):
    """Number of arguments -> a function computing the thin-path signature of a launch's
    arguments, unrolled, device arrays first (``protocol.signatures`` for the rest)."""

    def __missing__(self, n):
        from ..protocol import arg_signature
        names = [f"a{i}" for i in range(n)]
        items = [f"({a}._sig if type({a}) is dna else float if type({a}) is float else sig({a}))" for a in names]
        src = (f"def signatures_{n}(args):\n" + (f"    {', '.join(names)}, = args\n" if n else "")
               + f"    return ({', '.join(items)}{',' if n == 1 else ''})\n")
        env = {"dna": DeviceNDArray, "sig": arg_signature}
        exec(compile(src, f"<metalbench cuda.jit signatures_{n}>", "exec"), env)
        f = self[n] = env[f"signatures_{n}"]
        return f


_SIGS = _SignatureFunctions()


def _signatures(args):
    return _SIGS[len(args)](args)


class CUDAKernel(DispatcherAPI, Kernel):
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

    # the launchers by configuration: a slot, read on every k[blocks, threads] (an attribute
    # in the instance dict of a partial subclass is a generic lookup)
    __slots__ = ("_launchers",)

    @property
    def _backend(self):
        return self.__dict__.get("_backend_v")

    @_backend.setter
    def _backend(self, value):
        self.__dict__["_backend_v"] = value
        _SETTINGS[0] += 1

    @property
    def _checked(self):
        return self.__dict__.get("_checked_v")

    @_checked.setter
    def _checked(self, value):
        self.__dict__["_checked_v"] = value
        _SETTINGS[0] += 1

    def __init__(self, fn, backend=None, checked=None, sigs=None):
        super().__init__(fn)
        for p in self.params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise KernelSyntaxError(f"@cuda.jit kernel {self.name}: *args/**kwargs parameters are not supported")
        self._backend = backend
        self._checked = checked
        self.signatures = [nbt.parse_signature(s) for s in (sigs or [])]
        self._device = None
        for sig in self.signatures:
            if len(sig.args) != len(self.params):
                raise KernelLaunchError(f"@cuda.jit signature {sig} has {len(sig.args)} argument(s); "
                                        f"{self.name} takes {len(self.params)}")
        for sig in self.signatures:
            self._compile_signature(sig)

    def _compile_signature(self, sig):
        """Numba compiles a kernel with declared signatures when it is decorated, so a
        typing error (Numba's TypingError) is raised by the decorator: here too. Other
        errors (a source that cannot be read, an unsupported feature) still come at the
        first launch, as before."""
        args = []
        for at in sig.args:
            check_record_alignment(at, self.name)
            if isinstance(at, nbt.Array):
                t = nbt.scalar_of(at.dtype)
                if t is None:
                    return
                args.append(np.zeros((1,) * max(1, at.ndim), t.np))
            else:
                t = nbt.scalar_of(at)
                if t is None:
                    return
                args.append(t.np.type(0))
        try:
            sp = self.specialization(self.bind_inplace(tuple(args), {}))
            self.overloads.setdefault(tuple(sig.args), CompiledKernel(self, tuple(sig.args), sp))
        except KernelTypeError as e:
            raise trim_traceback(e)
        except MetalbenchError:
            pass

    @property
    def py_func(self):
        """The Python function (Numba's ``.py_func``)."""
        return self.fn

    def as_device_function(self) -> "DeviceFunction":
        """This kernel's function as a device function (what a call from a kernel means)."""
        if self._device is None:
            sig = self.signatures[0] if len(self.signatures) == 1 else None
            self._device = DeviceFunction(self.fn, sig=sig)
        return self._device

    def __repr__(self) -> str:
        return f"<metalbench.cuda kernel {self.name}({', '.join(p.name for p in self.params)})>"

    def parsed(self) -> F.ParsedFunction:
        """The parsed body, translated under Numba's language rules (metalbench.semantics.NUMBA)."""
        p = super().parsed()
        p.rules = NUMBA
        return p

    def configure(self, backend=None, checked=None) -> "CUDAKernel":
        """Set this kernel's backend (``"metal"``, ``"cuda"``, ``"sim"``, ``"auto"``) and
        simulator checking; returns the kernel so ``k.configure(backend="sim")[g, b](...)`` works."""
        if backend is not None:
            self._backend = backend
        if checked is not None:
            self._checked = checked
        return self

    def __getitem__(self, config) -> "_Launcher":
        try:        # k[blocks, threads] in a loop: made once (a slot: the cheapest attribute)
            return self._launchers[config]
        except (AttributeError, KeyError, TypeError):     # none yet, a new one, lists in it
            pass
        launchers = getattr(self, "_launchers", None)
        if launchers is None:
            launchers = self._launchers = {}
        cfg = config if isinstance(config, tuple) else (config,)
        if not 2 <= len(cfg) <= 4:
            raise LaunchConfigError(f"launch configuration must be [griddim, blockdim] (optionally with stream "
                                    f"and sharedmem), got {len(cfg)} item(s)")
        return remember_launch(launchers, config, _Launcher(self, cfg[0], cfg[1], cfg[3] if len(cfg) > 3 else 0))

    def forall(self, ntasks, tpb=0, stream=0, sharedmem=0) -> "_Launcher":
        """Numba's ``k.forall(n)(*args)``: enough 1-D blocks to cover ``n`` threads."""
        if ntasks < 0:
            raise ValueError("Can't create ForAll with negative task count")
        tpb = tpb or 128
        return _Launcher(self, max(1, math.ceil(ntasks / tpb)), tpb, sharedmem)

    @property
    def __metalbench_intrinsic__(self):
        def hook(tr, call):
            # As in numba-cuda, a @cuda.jit function called from a kernel is a device function.
            return tr.device_call(self.as_device_function(), call)
        return hook

    # -- binding -----------------------------------------------------------------------
    def _bind(self, args, kwargs):
        """(values by name as ``(given, NumPy storage, device type)``, front-end specs)."""
        try:
            ba = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise KernelLaunchError(f"{self.name}(): {e}")
        ba.apply_defaults()
        values, specs = {}, []
        records = record_layouts(ba.arguments)
        used = record_uses(self, records) if records else None
        for name, v in ba.arguments.items():
            if name in records:
                bind_record(name, v, records[name], used, values, specs, _host_array_kind)
            elif runtime.is_array(v) or isinstance(v, DeviceNDArray):
                # (a datetime64/timedelta64 array: its int64 storage, the marker as spec value)
                a, t, cplx = datetime_storage(v, name) if datetime_marker(v) else _host_array_kind(v, name)
                values[name] = (v, a, t)
                specs.append(F.ArgSpec(name, "buffer", t, max(1, a.ndim),
                                       value="complex" if cplx is True else cplx or None,
                                       zero_d=a.ndim == 0))
            elif isinstance(v, enum.Enum):
                # an Enum member: a compile-time constant, one specialisation per member (== and `is` as Python's)
                values[name] = (v, None, None)
                specs.append(F.ArgSpec(name, "constexpr", None, 0, value=v))
            elif v is None:
                # an optional argument left None: a compile-time constant (`x is None` folds)
                values[name] = (None, None, None)
                specs.append(F.ArgSpec(name, "constexpr", None, 0, value=None))
            elif isinstance(v, tuple):
                # a tuple (or namedtuple) of numbers: one uniform scalar parameter per item
                leaves: list = []
                structure = _tuple_structure(name, v, leaves)
                values[name] = (v, None, None)
                specs.append(F.ArgSpec(name, "tuple", None, 0, value=structure))
                for leaf, lv in leaves:
                    if runtime.is_array(lv) or isinstance(lv, DeviceNDArray):
                        a, t, cplx = _host_array_kind(lv, leaf)
                        if cplx:
                            raise KernelLaunchError(f"argument {name!r}: a complex or datetime array in a tuple is not "
                                                    "supported", hint="pass it as its own argument")
                        if a.size == 0:
                            raise KernelLaunchError(f"argument {name!r}: an item is empty (shape {a.shape})")
                        values[leaf] = (lv, a, t)
                        specs.append(F.ArgSpec(leaf, "buffer", t, max(1, a.ndim)))
                        continue
                    t = _scalar_type(lv, name)
                    values[leaf] = (lv, None, t)
                    specs.append(F.ArgSpec(leaf, "scalar", t, 0))
            elif isinstance(v, (complex, np.complexfloating)):
                bind_complex_scalar(name, v, values, specs)     # complexarg.py
            else:
                t = T.int64 if datetime_marker(v) else _scalar_type(v, name)     # (a datetime: its int64)
                values[name] = (v, None, t)
                specs.append(F.ArgSpec(name, "scalar", t, 0, value=datetime_marker(v)))
        if self.signatures:
            self._apply_signature(values, specs)
        bind_written_captures(self, values, specs, _host_array_kind)    # captured device arrays it writes
        return values, specs

    def _apply_signature(self, values, specs):
        """With ``@cuda.jit(signature)``: scalars take the signature's types (as Numba
        converts them); arrays must have its dtype and dimensions. Several signatures:
        the first that matches exactly, else the first the arguments convert to."""
        best = None
        for sig in self.signatures:
            score = _match(sig, specs)
            if score is not None and (best is None or score < best[0]):
                best = (score, sig)
        if best is None and len(self.signatures) == 1:
            best = sign_reinterpret(self.signatures[0], specs, values)     # sigmatch.py
        if best is None:
            got = ", ".join(spec_text(s) for s in specs)
            raise SignatureMismatch(
                f"{self.name}: no signature matches the arguments ({got}); declared: "
                + "; ".join(str(s) for s in self.signatures),
                hint="pass arrays of the declared dtypes, or drop the signature to specialise on the arguments")
        sig = best[1]
        declare_complex_scalars(sig, specs, values)
        if any(s.kind in ("tuple", "record", "complex") for s in specs):
            return          # tuple items keep their own types
        for k, (spec, at) in enumerate(zip(specs, sig.args)):
            t = nbt.scalar_of(at)
            if spec.kind == "scalar" and t is not None and t != spec.type:
                specs[k] = F.ArgSpec(spec.name, "scalar", t, 0)
                v = values[spec.name]
                values[spec.name] = (v[0], None, t)

    def bind(self, *args, grid=None, threadgroup=None, backend=None, checked=None, **kwargs) -> BoundLaunch:
        """MLX-style binding (what check, bench and sweep use): the launch runs on copies
        of the array arguments and returns the arrays the kernel writes."""
        copies = tuple(_copy(a) for a in args)
        kw = {k: _copy(v) for k, v in kwargs.items()}
        return self.bind_inplace(copies, kw, grid, threadgroup, backend, checked, reusable=False)

    def bind_inplace(self, args, kwargs, grid=None, threadgroup=None, backend=None, checked=None,
                     reusable=True, sharedmem=0) -> BoundLaunch:
        """Numba-style binding: the launch updates the array arguments in place.
        ``sharedmem``: the bytes of dynamic shared memory (the launch's fourth item), a
        compile-time value that sizes ``cuda.shared.array(0, dtype)`` (intrinsics.py)."""
        host, specs = self._bind(args, kwargs)
        if sharedmem:
            specs = specs + [F.ArgSpec(DYNSHARED, "constexpr", None, 0, value=int(sharedmem))]
        g, t = L.normalize(grid, threadgroup) if grid is not None else (None, None)
        given = {k: v for k, v in (("grid", grid), ("threadgroup", threadgroup)) if v is not None}
        return BoundLaunch(self, _spec_key(specs), {n: h[0] for n, h in host.items()}, [], g, t,
                           self.resolve_backend(backend), self._checked_default(checked), None, None,
                           specs=specs, args=tuple(args), kwargs=dict(kwargs), given=given,
                           reusable=reusable, data=host)

    def resolve_backend(self, backend=None) -> str:
        # "auto" from a caller (check/bench pass it) defers to the kernel's and the global choice.
        pick = [b for b in (backend, self._backend, _state["backend"]) if b not in (None, "auto")]
        return L.resolve_backend(pick[0] if pick else "auto")

    def _checked_default(self, checked):
        return L.checked_default(checked if checked is not None else
                                 (self._checked if self._checked is not None else _state["checked"]))

    def _specialization_for(self, key, specs) -> Specialization:
        sp = super()._specialization_for(key, specs)
        attach_const_arrays(sp.ir)
        for g in sp.ir.globals:
            obj = getattr(g, "captured", None)
            if obj is not None:          # a device array of the Python scope (views.global_array)
                self.__dict__.setdefault("_captures", []).append((obj, g.elem.np, np.asarray(g.init)))
        return InplaceSpecialization(key, sp.ir, specs, name=self.name)

    def _captures_changed(self) -> bool:
        """Whether a device array read from the Python scope changed since it was compiled
        in (Numba reads it through its pointer at every launch); if so the compiled
        specialisations are dropped, and the launch compiles the new contents in."""
        for obj, dt, seen in self._captures:
            now = np.asarray(obj.copy_to_host() if hasattr(obj, "copy_to_host") else
                             _captured_host(obj)).astype(dt).reshape(-1)
            if now.shape != seen.shape or not np.array_equal(now, seen, equal_nan=dt.kind == "f"):
                self._captures = []
                self.__dict__.get("_cache", {}).clear()
                self._thin_cache.clear()
                return True
        return False

    @user_facing
    def source(self, *args, backend: str = "metal", **kwargs) -> str:
        """The generated source for these arguments; for the GPU backends, after the
        in-place pass (:mod:`metalbench.numba_compat.inplace`)."""
        return self.specialization_of(*args, **kwargs).source(backend)

    @user_facing
    def specialization_of(self, *args, **kwargs) -> Specialization:
        """The specialisation (IR plus cached backend artifacts) for these arguments.
        (``specialize`` is Numba's: a kernel fixed to argument types.)"""
        return self.specialization(self.bind_inplace(args, kwargs))

    @user_facing
    def specialize(self, *args):
        """Numba's ``specialize``: this kernel fixed to the types of ``args`` (Numba
        types, or values), one per distinct types (``specializations``)."""
        return DispatcherAPI.specialize(self, *args)

    def ir(self, *args, **kwargs) -> ir.KernelIR:
        """The IR for these arguments (``print(ir.dump(k.ir(...)))`` to read it)."""
        return self.specialization_of(*args, **kwargs).ir

    # -- launching ---------------------------------------------------------------------
    def launch_inplace(self, args, kwargs, grid3, tg3, backend=None, checked=None, sharedmem=0):
        """Run with ``grid3`` threads in threadgroups of ``tg3``, updating arrays in place.
        A repeated launch with the same argument signature skips binding."""
        ext = self.__dict__.get("_extensions")
        if ext:     # Numba's dispatcher extensions: prepare the arguments, then run their callbacks
            args, retr = self._prepare_args(args, ext)
            try:
                self._launch_inplace(args, kwargs, grid3, tg3, backend, checked, sharedmem)
            finally:
                for r in retr:
                    r()
            return None
        # (returns the entry's front when it has one, ``ThinDeviceLaunch.front``: the launcher's next calls go there)
        return self._launch_inplace(args, kwargs, grid3, tg3, backend, checked, sharedmem)

    def _launch_inplace(self, args, kwargs, grid3, tg3, backend=None, checked=None, sharedmem=0):
        if self.__dict__.get("_captures"):
            self._captures_changed()
        key = None
        if not kwargs and backend is None and checked is None:
            key = (_signatures(args), grid3, tg3, self._backend, _state["backend"], self._checked,
                   _state["checked"], backend_token(None), sharedmem)
            try:
                hit = self._thin_cache.get(key)
            except TypeError:           # an argument of another type: bind
                hit = key = None
            if hit is not None:
                sp, bound = hit
                thin = bound.thin
                if thin is not None and thin(args):
                    self.last_launch = bound.last
                    if thin.front is not None:      # the key holds the settings: they are the entry's again
                        thin.front.__globals__["g_settings"] = _SETTINGS[0]
                    return thin.front
                host = {}
                for (name, (_, _, t)), v in zip(bound.data.items(), args):
                    host[name] = (v, *as_bound_type(_host_array(v, name), t)) if t is not None and \
                        (runtime.is_array(v) or isinstance(v, DeviceNDArray)) else (v, None, t)
                self.last_launch = bound.last
                self.last_stats = sp.run_inplace(host, bound.grid, bound.threadgroup, bound.backend,
                                                 bound.checked)
                return
        hinted = any(isinstance(a, ArgHint) for a in args)
        if hinted:
            args = tuple(unwrap(a) for a in args)
        bound = self.bind_inplace(args, kwargs, grid3, tg3, backend, checked, sharedmem=sharedmem)
        if bound.key not in self.__dict__.get("_cache", ()):
            self._compile_hook(args, kwargs, grid3, tg3, sharedmem=sharedmem)    # Numba's compile step, in its launch config
        self.launch(bound)
        write_back_records(bound.data)
        if key is not None and len(bound.data) == len(args):
            bound.last = self.last_launch
            sp = self.specialization(bound)
            bound.thin = _thin_device_launch(sp, self.name, bound, args,
                                             None if hinted else self._launch_guard(args, bound.last))
            self._thin_cache.put(key, (sp, bound))
            return bound.thin.front if bound.thin is not None else None
        return None

    def _launch_guard(self, args, last):
        """(lines, env) checking, in a launcher's ``guarded(args)``, that a call has the
        key ``args`` gave here: the kernel's and the global backend/checked settings (and
        ``METALBENCH_BACKEND`` when neither names a backend), no dispatcher extensions, and
        each argument's signature. The launcher's own grid, block and sharedmem are the
        rest of the key."""
        self.__dict__.setdefault("_extensions", [])     # (read by the guard as kd['_extensions'])
        env = {"k": self, "kd": self.__dict__, "dna": DeviceNDArray, "sig": arg_signature,
               "MISS": MISS, "box": self._last, "last": last, "settings": _SETTINGS, "g_settings": _SETTINGS[0],
               "envf": L.env_fast, "g_env": backend_token(None)[1]}
        lines = ["    if settings[0] != g_settings or kd['_extensions']: return MISS\n"]
        if all(b in (None, "auto") for b in (self._backend, _state["backend"])):
            lines.append(f"    if envf({_ENV_KEY!r}) != g_env: return MISS\n")
        conds = []
        for i, a in enumerate(args):
            if type(a) is DeviceNDArray:
                env[f"g_sig{i}"] = a._sig
                conds.append(f"type(a{i}) is dna and a{i}._sig == g_sig{i}")
            elif type(a) is float:
                conds.append(f"type(a{i}) is float")
            elif is_numpy_number(a):         # np.float32(...) etc.: the type is the signature
                env[f"g_t{i}"] = type(a)
                conds.append(f"type(a{i}) is g_t{i}")
            else:
                env[f"g_sig{i}"] = arg_signature(a)
                conds.append(f"sig(a{i}) == g_sig{i}")
        unpack = ", ".join(f"a{i}" for i in range(len(args)))
        # (the count by len(): a front's miss must not run inside an except block)
        lines += [f"    if len(args) != {len(args)}: return MISS\n", f"    {unpack}, = args\n",
                  f"    if not ({' and '.join(conds)}): return MISS\n"] if args else ["    if args: return MISS\n"]
        return lines, env

    @user_facing
    def __call__(self, *args, grid=None, threadgroup=None, backend=None, checked=None, print_threads=None,
                 **kwargs):
        """MLX-style launch on copies of the array arguments; returns the written arrays
        (NumPy; a tuple if several), leaving the caller's arrays untouched."""
        if print_threads is not None:
            from ..sim.printing import print_threads as selected
            with selected(print_threads):
                return self(*args, grid=grid, threadgroup=threadgroup, backend=backend, checked=checked, **kwargs)
        if grid is None and self.host_function() is not None:      # numba.jit's meaning (dispatcher.py)
            return self.fn(*args, **kwargs)
        if grid is None:
            raise LaunchConfigError(f"launch configuration was not specified for kernel {self.name}",
                                    hint="launch it Numba's way, kernel[griddim, blockdim](*args), or give "
                                         "grid= (threads) and threadgroup=")
        outs = self.launch(self.bind(*args, grid=grid, threadgroup=threadgroup, backend=backend, checked=checked,
                                     **kwargs))
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)


def _thin_device_launch(sp, name, bound, args, guard=None):
    """The prepared launch of repeated calls whose arrays are all device arrays on the
    device (:class:`~metalbench.numba_compat.device_launch.ThinDeviceLaunch`), or None."""
    if bound.backend == "sim" or bound.checked or any(s.value == "complex" for s in sp.specs or ()):
        return None     # complex arrays go through run_inplace (complexarg.refuse_complex)
    arrays = [v for v, a, t in bound.data.values() if a is not None]
    if not arrays or not all(isinstance(v, DeviceNDArray) and v._host is None for v in arrays):
        return None
    from .device_launch import ThinDeviceLaunch
    return ThinDeviceLaunch(sp, name, bound.data, bound.grid, bound.threadgroup, bound.backend, list(bound.data),
                            guard)


def _copy(a):
    if isinstance(a, DeviceNDArray):
        return a._host_copy()
    if runtime.is_array(a):
        return np.array(runtime.to_numpy(a), copy=True)
    return a


class InplaceSpecialization(Specialization):
    """A ``cuda.jit`` specialisation: launches update the array arguments in place, as
    Numba does. The simulator runs on the arguments' storage directly; the GPU
    backends run the functionalized kernel (fresh outputs) and merge its results into
    the arguments (:mod:`metalbench.numba_compat.inplace`)."""

    @property
    def output_names(self) -> list[str]:
        """The parameters the kernel writes (what an MLX-style call returns)."""
        return inplace.written_params(self.ir)

    def launch(self, bound: BoundLaunch, backend=None, checked=None, init_value=None) -> list:
        if bound.grid is None:
            L.normalize(None, None)
        bound.stats = self.run_inplace(bound.data, bound.grid, bound.threadgroup, backend or bound.backend,
                                       bound.checked if checked is None else checked)
        return [bound.data[n][1] for n in self.output_names]

    def run_inplace(self, host: dict, grid, tg, backend, checked):
        """Run on ``host`` (name -> (given, NumPy storage, type)); returns SimStats or None."""
        if backend == "sim":
            return _run_sim_inplace(self, host, grid, tg, checked)
        refuse_complex(self, backend, host)
        if backend == "metal":
            refuse_metal_library(self.ir)
        for n, (_, a, _t) in host.items():
            if a is not None and getattr(a, "size", 1) == 0:
                # the simulator runs kernels over empty arrays (their loops run no iteration);
                # the GPU launch path (functionalised kernel, merge) is not checked with them
                raise KernelLaunchError(f"argument {n!r} is empty (shape {a.shape}); empty arrays are supported "
                                        f"on the sim backend only, not on {backend} yet",
                                        hint="skip the launch for empty data")
        from .device_launch import run_functional
        run_functional(self, self.name, host, grid, tg, backend)
        return None

    def merge_plans(self):
        """(the functionalized specialisation for Metal, merge plans): what export prints."""
        return _functional(self, self.name, "metal")

    # What MLX receives on a GPU backend is the functionalized kernel.
    def rendered(self, backend: str, exact_grid: bool = False, threadgroup=None):
        if backend == "metal":
            refuse_metal_library(self.ir)
        with _numba_double_hint(backend):
            return _functional(self, self.name, backend)[0].rendered(backend, exact_grid, threadgroup)

    def source(self, backend: str = "metal") -> str:
        if backend == "sim":
            return super().source("sim")
        if backend == "metal":
            refuse_metal_library(self.ir)
        with _numba_double_hint(backend):
            return _functional(self, self.name, backend)[0].source(backend)


class _numba_double_hint:
    """On metal, the no-double error of a Numba kernel says where float64 comes from."""

    def __init__(self, backend):
        self.backend = backend

    def __enter__(self):
        return self

    def __exit__(self, et, e, tb):
        if self.backend == "metal" and isinstance(e, KernelTypeError) and "float64" in e.message \
                and not getattr(e, "_numba_hint", False):
            e.hint = ("Numba types Python floats, float literals and float() as float64: write float32(...) "
                      "(float32(0.5), float32(x)) and pass float32 arrays to compute in float32 on Metal, or "
                      "run on backend='sim' or 'cuda', where float64 is exact")
            e._numba_hint = True
            e.args = (e._format(),)
        return False


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
            args[p.name] = scalar_value(v, p.type) if type(v) is int else p.type.np.type(v)   # C's conversion
            continue
        device = isinstance(v, DeviceNDArray) and v._host is None   # a device-mode array on the simulator
        if device:
            a = v._kernel_copy()
        s, same = _storage(a, t)
        if not same or device:
            copy_back.append((v, a, s))
        args[p.name] = runtime.sim_buffer(s, Buffer)
    stats = sp.sim().run(args, grid, tg, checked=checked)
    for v, a, s in copy_back:
        _write_back(v, a, s)
    return stats


def _write_back(v, a: np.ndarray, new: np.ndarray):
    """Put ``new`` into the caller's array ``v`` (whose NumPy storage is ``a``)."""
    new = new.reshape(a.shape)
    if isinstance(v, DeviceNDArray) and v._host is None:
        from .devicearray import _to_mlx
        v._write(_to_mlx(new.astype(v._kmeta.dtype, copy=False), v._mx_dtype()))
        return
    if isinstance(v, DeviceNDArray):
        a = v._host
    if isinstance(v, (np.ndarray, DeviceNDArray)):
        if a.flags.writeable:
            np.copyto(a, new, casting="unsafe")
            return
        raise KernelLaunchError("a read-only NumPy array was written by the kernel")
    if type(v).__module__.startswith("mlx"):
        v[...] = runtime.to_mlx(new.astype(a.dtype, copy=False))
        return
    np.copyto(a, new, casting="unsafe")


def _functional(sp: Specialization, name: str, backend: str | None = None):
    """(the functionalized specialisation, merge plans); see
    :func:`metalbench.numba_compat.device_launch.functional`."""
    from .device_launch import functional
    return functional(sp, name, frozenset(), backend)


def run_functional(sp: Specialization, name: str, values: dict, grid, tg, backend: str):
    """See :func:`metalbench.numba_compat.device_launch.run_functional`."""
    from .device_launch import run_functional as run
    run(sp, name, values, grid, tg, backend)


_JIT_OPTIONS = {"device", "inline", "debug", "opt", "fastmath", "cache", "lineinfo", "link", "max_registers",
                "forceinline", "lto", "boundscheck", "extensions", "backend", "checked"}


def jit(func_or_sig=None, device=False, **options):
    """Numba's ``cuda.jit``: ``@cuda.jit``, ``@cuda.jit("void(float32[:], int32)")`` (also a
    signature object, ``void(float32[:], int32)``, or a list of them), ``@cuda.jit(device=True)``.
    Without a signature a kernel specialises lazily on its arguments' types; with one,
    scalars take the declared types and arrays must match. ``backend=``/``checked=``
    choose where it runs.

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

    sigs = None
    if func_or_sig is not None and nbt.is_signature(func_or_sig):
        sigs = list(func_or_sig) if isinstance(func_or_sig, list) else [func_or_sig]
        sigs = [nbt.parse_signature(s) for s in sigs]

    def wrap(fn):
        if isinstance(fn, (CUDAKernel, DeviceFunction)):
            fn = fn.fn
        if device:
            return DeviceFunction(fn, sig=sigs)
        return CUDAKernel(fn, backend=backend, checked=checked, sigs=sigs)
    if callable(func_or_sig) and not isinstance(func_or_sig, (str, list, tuple)) \
            and inspect.isfunction(func_or_sig):
        return wrap(func_or_sig)
    return wrap


def _captured_host(obj):
    """The contents of a wrapper of a metalbench device array (``__cuda_array_interface__``)."""
    from .devicearray import from_interface
    d = from_interface(obj)
    return d.copy_to_host() if d is not None else np.zeros(0)

