"""The kernel protocol: one way to bind, specialise, cache and launch every kernel object.

DSL kernels (``@mb.kernel``), ``mb.metal_kernel`` objects and ``cuda.jit`` kernels all
implement it, and the tools (check, bench, sweep, export, the notebook panel) use
nothing else::

    bound = k.bind(*args, grid=n, threadgroup=256, backend="sim")   # BoundLaunch
    spec = k.specialization(bound)        # Specialization: IR + per-backend artifacts, cached
    outs = k.launch(bound)                # spec.launch(bound) + last_launch / last_stats
    spec.ir, spec.source("metal"), spec.rendered("cuda"), spec.sim(), spec.output_names
    bound.reference_args(), bound.config()

Each kind keeps its calling convention in ``bind``: a DSL kernel takes its function's
arguments, a ``metal_kernel`` MLX's keywords, a ``cuda.jit`` kernel Numba's arguments.
A kernel's ``__call__`` is ``bind`` + ``launch`` with a thin path in front: a repeated
call with the same argument signature goes straight to the prepared MLX call
(:class:`MLXLaunch`) without binding again.

    >>> import numpy as np, metalbench as mb
    >>> k = mb.metal_kernel("twice", ["x"], ["y"], "uint i = thread_position_in_grid.x; y[i] = 2 * x[i];")
    >>> b = k.bind(np.arange(4, dtype=np.float32), grid=4, output_shapes=[(4,)],
    ...            output_dtypes=[np.float32], backend="sim")
    >>> k.launch(b)[0].tolist(), k.specialization(b).output_names
    ([0.0, 2.0, 4.0, 6.0], ['y'])
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from . import ir as IR
from . import launch as L
from . import runtime
from . import types as T
from .errors import user_facing

# Keywords every kind's bind understands (the rest are kernel arguments or templates).
LAUNCH_KEYS = ("grid", "threadgroup", "backend", "checked", "init_value", "stream")


@dataclass(eq=False)
class BoundLaunch:
    """One call's arguments bound to a kernel's parameters, with the launch settings.

    ``values`` maps each parameter name to the value as given (arrays untouched);
    ``key`` is the specialisation key (dtypes, ndims, constexpr and template values);
    ``outputs`` lists the fresh outputs ``[(name, shape, ScalarType)]``; ``grid`` and
    ``threadgroup`` are normalised 3-tuples (None when not given: enough to
    specialise, not to launch); ``backend`` is resolved ("metal", "cuda" or "sim").
    """
    kernel: Any
    key: tuple
    values: dict
    outputs: list
    grid: tuple | None = None
    threadgroup: tuple | None = None
    backend: str = "sim"
    checked: bool = False
    init_value: Any = None
    stream: Any = None
    specs: list | None = None          # front-end ArgSpecs (DSL, cuda.jit)
    template: tuple = ()               # metal_kernel template arguments ((name, ScalarType|int|bool), ...)
    args: tuple = ()                   # the call's positional arguments, as given
    kwargs: dict = field(default_factory=dict)   # its other keywords (constexprs, ...), as given
    given: dict = field(default_factory=dict)    # its launch keywords, as given (for tables)
    reusable: bool = True              # False when a launch changes the bound values (cuda.jit)
    data: Any = None                   # what this kind's launch needs besides values (cuda.jit: storage)
    stats: Any = None                  # sim.SimStats after a simulator launch

    def reference_args(self) -> tuple[list, dict]:
        """What a NumPy reference receives: (positional NumPy inputs, keyword inputs)."""
        return self.kernel.reference_args(self)

    def config(self) -> dict:
        """The launch keywords that describe this configuration (for tables and sweeps)."""
        return self.kernel.launch_config(self)

    def input_bytes(self) -> int:
        """Bytes of the array inputs (for bandwidth figures)."""
        return int(sum(getattr(v, "nbytes", 0) or 0 for v in self.values.values() if runtime.is_array(v)))


class Specialization:
    """One compiled form of a kernel: its IR (built lazily), each backend's artifacts
    (simulator program, printed MSL/CUDA, MLX kernel objects, launch plans), and the
    one launch path for ``sim``, ``cuda`` and ``metal``.

    ``ir`` may be a ``KernelIR`` or built on first use by ``build()``; ``verbatim`` is
    a ``Rendered`` the metal backend receives unchanged (``metal_kernel``: the user's
    text, so that backend never needs the IR), with its inputs ``verbatim_inputs``
    (as :attr:`inputs`) and ``mlx_options`` for its constructor (``compile_options``).
    """

    def __init__(self, key, ir=None, specs=None, *, build: Callable | None = None, name: str = "",
                 output_names: list | None = None, verbatim=None, verbatim_inputs: list | None = None,
                 mlx_options: dict | None = None, ensure_row_contiguous: bool = True):
        self.key = key
        self._ir = ir
        self._build = build
        self.specs = specs
        self.name = name
        self._output_names = output_names
        self._inputs = None
        self.verbatim = verbatim
        self.verbatim_inputs = verbatim_inputs
        self.mlx_options = dict(mlx_options or {})
        self.ensure_row_contiguous = ensure_row_contiguous
        self.artifacts: dict = {}

    def __repr__(self) -> str:
        return f"<Specialization {self.name or '?'} {self.key!r:.80}>"

    @property
    def ir(self) -> IR.KernelIR:
        if self._ir is None:
            self._ir = self._build()
        return self._ir

    @property
    def output_names(self) -> list[str]:
        """Names of what a launch returns, in order."""
        if self._output_names is None:
            self._output_names = [p.name for p in self.ir.outputs]
        return list(self._output_names)

    @property
    def inputs(self) -> list[tuple[str, str, T.ScalarType]]:
        """``[(name, "buffer"|"scalar", ScalarType)]``: the user's inputs in MLX order."""
        if self._inputs is None:
            self._inputs = [(p.name, p.kind, p.type) for p in self.ir.inputs]
        return self._inputs

    def merge_plans(self):
        """For kernels that update their arguments in place (cuda.jit): the
        functionalized specialisation MLX runs and its merge plans; None otherwise."""
        return None

    def launch_inputs(self, backend: str) -> list[tuple[str, str, T.ScalarType]]:
        """:attr:`inputs` as ``backend``'s kernel receives them."""
        if backend == "metal" and self.verbatim is not None:
            return self.verbatim_inputs
        return self.inputs

    # -- artifacts --------------------------------------------------------------------
    def sim(self):
        """The simulator program (``sim.SimKernel``)."""
        k = self.artifacts.get("sim")
        if k is None:
            from .sim import compile_kernel
            k = self.artifacts["sim"] = compile_kernel(self.ir)
        return k

    def rendered(self, backend: str, exact_grid: bool = False, threadgroup=None):
        """The kernel ``mx.fast.metal_kernel`` (``backend="metal"``) or ``cuda_kernel``
        receives; for cuda, ``exact_grid`` selects the variant for grids of whole
        threadgroups (no launch guard) and ``threadgroup`` (a 3-tuple) the variant
        specialised for that block size (``codegen.cuda.render``)."""
        if backend == "metal" and self.verbatim is not None:
            return self.verbatim
        exact_grid = exact_grid and backend == "cuda"
        threadgroup = tuple(threadgroup) if threadgroup is not None and backend == "cuda" else None
        key = ("rendered", backend, exact_grid, threadgroup)
        r = self.artifacts.get(key)
        if r is None:
            if backend == "metal":
                from .codegen.msl import render
                r = render(self.ir)
            elif backend == "cuda":
                from .codegen.cuda import render
                r = render(self.ir, exact_grid=exact_grid, threadgroup=threadgroup)
            else:
                raise ValueError(f"no printed source for backend {backend!r} (use 'metal' or 'cuda')")
            r.name = unique_name(r)
            self.artifacts[key] = r
        return r

    def source(self, backend: str = "metal") -> str:
        """What ``backend`` compiles, as text: header and body for metal/cuda, the IR for sim."""
        if backend == "sim":
            return IR.dump(self.ir)
        r = self.rendered(backend)
        parts = ["// header\n" + r.header.rstrip()] if r.header else []
        parts.append("// body\n" + r.body.rstrip())
        return "\n\n".join(parts) + "\n"

    def mlx_kernel_args(self, backend: str, exact_grid: bool = False, threadgroup=None) -> dict:
        """The keyword arguments of ``mx.fast.metal_kernel`` / ``cuda_kernel`` for this kernel."""
        r = self.rendered(backend, exact_grid, threadgroup)
        kw = dict(name=r.name, input_names=list(r.input_names), output_names=list(r.output_names),
                  source=r.body, header=r.header or "", ensure_row_contiguous=self.ensure_row_contiguous)
        if backend == "metal":
            # mx.fast.cuda_kernel has no atomic_outputs: CUDA atomics work on plain pointers.
            kw["atomic_outputs"] = bool(r.atomic_outputs)
            if self.verbatim is not None:
                kw.update(self.mlx_options)
        return kw

    def mlx_kernel(self, backend: str, exact_grid: bool = False, threadgroup=None):
        """The MLX kernel object (built once per backend, grid variant and, for cuda,
        threadgroup size)."""
        exact_grid = exact_grid and backend == "cuda"
        threadgroup = tuple(threadgroup) if threadgroup is not None and backend == "cuda" else None
        key = ("mlx", backend, exact_grid, threadgroup)
        k = self.artifacts.get(key)
        if k is None:
            import mlx.core as mx
            make = mx.fast.metal_kernel if backend == "metal" else mx.fast.cuda_kernel
            k = self.artifacts[key] = make(**self.mlx_kernel_args(backend, exact_grid, threadgroup))
        return k

    def gpu_plan(self, bound: BoundLaunch, backend: str) -> "MLXLaunch":
        """The prepared MLX call for ``bound``'s grid, threadgroup, output shapes and
        template: built once, then every launch of that shape reuses it."""
        out_shapes = tuple(s for _, s, _ in bound.outputs)
        tmpl = bound.template if (backend == "metal" and self.verbatim is not None) else ()
        key = ("plan", backend, bound.grid, bound.threadgroup, out_shapes, tmpl)
        plan = self.artifacts.get(key)
        if plan is None:
            plan = self.artifacts[key] = MLXLaunch(self, backend, bound.grid, bound.threadgroup,
                                                   bound.outputs, tmpl)
        return plan

    # -- launching --------------------------------------------------------------------
    def launch(self, bound: BoundLaunch, backend: str | None = None, checked: bool | None = None,
               init_value=None) -> list:
        """Run on ``backend`` (default ``bound.backend``); returns the outputs as a list
        (``mx.array``; on sim the stats land in ``bound.stats``)."""
        be = backend or bound.backend
        if bound.grid is None:
            L.normalize(None, None)          # raises "no grid given" with its hint
        iv = bound.init_value if init_value is None else init_value
        if be == "sim":
            outs, bound.stats = self.launch_sim(bound.values, bound.outputs, bound.grid, bound.threadgroup,
                                                bound.checked if checked is None else checked, iv)
            return outs
        return self.gpu_plan(bound, be)(bound.values, iv, bound.stream)

    def launch_sim(self, values: dict, outputs: list, grid, threadgroup, checked=False, init_value=None):
        """Run on the simulator: inputs by parameter name, fresh outputs
        ``[(name, shape, ScalarType)]`` (poisoned unless ``init_value``); returns
        (outputs as ``mx.array``, SimStats)."""
        return runtime.run_sim(self.sim(), self.ir, values, outputs, grid, threadgroup, init_value, checked,
                               keep_strides=not self.ensure_row_contiguous, kernel_name=self.name)


def unique_name(r) -> str:
    """``r.name`` with a short hash of its source: MLX caches compiled custom kernels by
    name (plus template arguments), so two specialisations of one kernel (other dtypes,
    constexprs, or CUDA's exact-grid variant) must not share a name."""
    import hashlib
    digest = hashlib.sha1((r.header + "\0" + r.body).encode()).hexdigest()[:10]
    return f"{r.name}_{digest}"


class MLXLaunch:
    """A prepared ``mx.fast.metal_kernel`` / ``cuda_kernel`` call: the MLX kernel object,
    the extra inputs the printed code needs (``mb_grid``, output shapes), output shapes
    and dtypes, template, and one converter per input. Calling it costs one MLX call
    plus the input list: ``mx.array`` inputs of the right dtype reach MLX untouched
    (so ``mx.compile``/``vmap``/``export_function`` trace through it), NumPy inputs are
    converted once, scalars become (cached) 0-d arrays.

    float64 on cuda crosses MLX as its bits (``runtime.carrier``): float64 inputs are
    viewed as uint64 and the uint64 outputs viewed back as float64, both on the CPU
    stream without a copy; :meth:`call_raw` returns the outputs as MLX holds them.
    """

    def __init__(self, spec: Specialization, backend: str, grid, threadgroup, outputs, template=()):
        # this GPU's own limits (threads, threadgroup memory, SIMD width), once per plan; the
        # threadgroup memory when the IR exists (a verbatim MSL body is not parsed for it)
        from . import devices
        dev = devices.current(backend)
        if dev is not None:
            devices.check_launch(dev, threadgroup, spec._ir)
        import mlx.core as mx
        exact = all(g % t == 0 for g, t in zip(grid, threadgroup))
        if exact and ("mlx", backend, False, tuple(threadgroup) if backend == "cuda" else None) in spec.artifacts:
            exact = False   # the guarded kernel, built already, runs exact grids too: no second NVRTC compile
        # CUDA specialises the printed kernel for the block size (constant thread
        # indices, full-warp SIMD-group functions): one compile per threadgroup size
        r = spec.rendered(backend, exact, threadgroup)
        self.kernel = spec.mlx_kernel(backend, exact, threadgroup)
        self.extra = list(r.extra_inputs(grid, threadgroup, [s for _, s, _ in outputs])) if r.extra_inputs else []
        if self.extra:
            mx.eval(*self.extra)
        self.kernel_name = spec.name
        self.backend = backend
        self.spec_inputs = spec.launch_inputs(backend)
        self.names = [n for n, _, _ in self.spec_inputs]
        self.converters = [_converter(kind, t, backend) for _, kind, t in self.spec_inputs]
        self.kwargs = dict(grid=tuple(grid), threadgroup=tuple(threadgroup),
                           output_shapes=[tuple(s) for _, s, _ in outputs],
                           output_dtypes=[T.to_mlx(runtime.carrier(t, backend)) for _, _, t in outputs])
        # outputs MLX holds as bits (float64 on cuda), viewed back by call()
        self.bits_outputs = [i for i, (_, _, t) in enumerate(outputs) if runtime.carrier(t, backend) is not t]
        self.output_types = [t for _, _, t in outputs]
        if template:
            self.kwargs["template"] = [(n, T.to_mlx(v) if isinstance(v, T.ScalarType) else v) for n, v in template]

    def inputs(self, values: dict) -> list:
        """The MLX input list for values by parameter name."""
        return [c(values[n]) for n, c in zip(self.names, self.converters)] + self.extra

    def __call__(self, values: dict, init_value=None, stream=None) -> list:
        return self.call(self.inputs(values), init_value, stream)

    def call(self, inputs: list, init_value=None, stream=None) -> list:
        """Launch with the MLX input list; returns the outputs (float64 ones as float64)."""
        outs = self.call_raw(inputs, init_value, stream)
        for i in self.bits_outputs:
            outs[i] = runtime.bits_float64(outs[i])
        return outs

    def call_raw(self, inputs: list, init_value=None, stream=None) -> list:
        """Launch; returns the outputs as MLX holds them (float64 on cuda: uint64 bits)."""
        if self.bits_outputs:
            init_value = runtime.float64_init_value(init_value, self.output_types)
        if stream is None:
            return self.kernel(inputs=inputs, init_value=init_value, **self.kwargs)
        return self.kernel(inputs=inputs, init_value=init_value, stream=stream, **self.kwargs)


def _converter(kind: str, t: T.ScalarType, backend: str = ""):
    """value -> what MLX receives for an input of ``kind`` and type ``t`` on ``backend``
    (float64 on cuda: its bits, ``runtime.carrier``)."""
    if runtime.carrier(t, backend) is not t:
        return runtime.float64_scalar_bits if kind == "scalar" else runtime.float64_bits
    mt = T.to_mlx(t)
    mx_array = mlx_array_type()

    def buffer(v):
        if type(v) is mx_array:
            return v if v.dtype == mt else v.astype(mt)
        a = runtime.to_mlx(np.ascontiguousarray(runtime.to_numpy(v)))   # NumPy: the one copy
        return a if a.dtype == mt else a.astype(mt)

    def scalar(v):
        if type(v) is mx_array:
            return v if v.dtype == mt else v.astype(mt)
        return scalar_array(v, t)
    return scalar if kind == "scalar" else buffer


_SCALARS: dict = {}


def scalar_array(v, t: T.ScalarType):
    """A 0-d MLX array holding scalar ``v`` as ``t``; recent values are kept, so a kernel
    launched in a loop with the same scalars does not allocate and copy them each time."""
    import mlx.core as mx
    try:
        key = (t.name, v.item() if isinstance(v, (np.generic, np.ndarray)) else v)
        if not key[1] and isinstance(key[1], float):
            key = None                               # -0.0 == 0.0: the sign is not in the key
        a = _SCALARS.get(key)
    except (TypeError, ValueError):
        key, a = None, None
    if a is None:
        if isinstance(v, np.ndarray):
            v = v.reshape(())[()]
        a = (mx.array(float(v), dtype=T.to_mlx(t)) if t in (T.bfloat16, T.float64)
             else mx.array(np.asarray(v, dtype=t.np)))
        if key is not None:
            if len(_SCALARS) > 256:
                _SCALARS.clear()
            _SCALARS[key] = a
    return a


@functools.lru_cache(maxsize=None)
def mlx_array_type():
    import mlx.core as mx
    return mx.array


# ----------------------------------------------------------------------------- thin path

_INT32 = (-(2 ** 31), 2 ** 31)
_UNKEYED = []     # in a key, makes it unhashable: that call binds from scratch
_MXA = None       # mx.array (set on first use)
_DTYPE_KEY = None  # how a dtype enters keys


def _mx_facts():
    global _MXA, _DTYPE_KEY
    import mlx.core as mx
    # MLX hashes a Dtype to its enum value: a unique small int, cheaper to hash and
    # compare than the Dtype object (a new wrapper on every ``a.dtype``). Checked, not assumed.
    dts = [getattr(mx, n) for n in ("bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
                                     "int64", "float16", "float32", "float64", "bfloat16")]
    _DTYPE_KEY = hash if len({hash(d) for d in dts}) == len(dts) else (lambda d: d)
    _MXA = mx.array


def arg_signature(a):
    """A hashable description of one argument for the thin-path key: dtype and shape of
    arrays, the type of scalars (ints: whether they fit int32, which decides their
    type), or an unhashable marker for anything else (that call then binds from scratch).

    >>> import numpy as np
    >>> arg_signature(np.zeros((2, 3), np.float32)), arg_signature(2.0), arg_signature(3)
    (('<f4', (2, 3)), <class 'float'>, (<class 'int'>, True))
    """
    if _MXA is None:
        _mx_facts()
    ta = type(a)
    if ta is _MXA:
        return (_DTYPE_KEY(a.dtype), a.shape)
    if ta is float or ta is bool:
        return ta
    if ta is np.ndarray:
        return (a.dtype.str, a.shape)
    if ta is int:
        return (int, _INT32[0] <= a < _INT32[1])
    if isinstance(a, np.generic):
        return a.dtype.str
    sig = getattr(ta, "__metalbench_signature__", None)     # device arrays and other array types
    return sig(a) if sig is not None else _UNKEYED


def signatures(args) -> tuple:
    """``arg_signature`` of each argument.

    >>> signatures([1.5, True])
    (<class 'float'>, <class 'bool'>)
    """
    return _SIGNATURES[len(args)](args)


class _SignatureFunctions(dict):
    """Number of arguments -> a function computing their signatures, generated unrolled
    (``mx.array`` and float inline): a comprehension's frame and loop cost as much as
    the attribute reads themselves, and this runs on every kernel call."""

    def __missing__(self, n):
        if _MXA is None:
            _mx_facts()
        names = [f"a{i}" for i in range(n)]
        items = [f"((dk({a}.dtype), {a}.shape) if type({a}) is mxa else float if type({a}) is float "
                 f"else sig({a}))" for a in names]
        src = (f"def signatures_{n}(args):\n" + (f"    {', '.join(names)}, = args\n" if n else "")
               + f"    return ({', '.join(items)}{',' if n == 1 else ''})\n")
        env = {"mxa": _MXA, "dk": _DTYPE_KEY, "sig": arg_signature}
        exec(compile(src, f"<metalbench signatures_{n}>", "exec"), env)
        f = self[n] = env[f"signatures_{n}"]
        return f


_SIGNATURES = _SignatureFunctions()


_ENV_KEY = b"METALBENCH_BACKEND"


def backend_token(backend):
    """What the thin-path key needs of ``backend``: the name, or for "auto" the
    ``METALBENCH_BACKEND`` setting it resolves with (read cheaply: no re-resolution).

    >>> backend_token("sim")
    'sim'
    """
    if backend is None or backend == "auto":
        return ("auto", L.env_fast(_ENV_KEY))
    return backend


class ThinCache(dict):
    """Per-kernel map from a call signature to its prepared launch (bounded), plus the
    last hit: ``last = (key, entry)``, compared before hashing (calls in a loop repeat
    one signature). Only hashable keys are ever stored, so an unhashable one (an
    argument of an unknown type) never equals ``last[0]``."""

    _NONE = (object(), None)

    def __init__(self):
        super().__init__()
        self.last = self._NONE

    def put(self, key, entry):
        if len(self) > 64:
            self.clear()
        self[key] = entry
        self.last = (key, entry)

    def clear(self):
        super().clear()
        self.last = self._NONE


# ----------------------------------------------------------------------------- KernelBase

class KernelBase:
    """What every kernel object is: the protocol (``bind``, ``specialization``,
    ``launch``) and the tools built on it (``check``, ``bench``, ``sweep``,
    ``autotune``, ``export_mlx``).

    A kind implements ``bind(*args, **launch) -> BoundLaunch`` (its calling
    convention) and ``_build(bound) -> Specialization``; the cache, the launch and
    the tools are shared.
    """

    name = "kernel"
    #: ``sim.SimStats`` of the last simulator launch (access counts when it was checked)
    last_stats = None
    #: ``dict(grid=, threadgroup=, backend=)`` of the last launch
    last_launch = None

    # -- the protocol -----------------------------------------------------------------
    def bind(self, *args, **launch) -> BoundLaunch:
        """Bind a call's arguments and launch keywords (this kind's calling convention)."""
        raise NotImplementedError

    def _build(self, bound: BoundLaunch) -> Specialization:
        raise NotImplementedError

    def specialization(self, bound: BoundLaunch) -> Specialization:
        """The cached :class:`Specialization` for ``bound.key`` (built on first use)."""
        cache = self.__dict__.get("_cache")
        if cache is None:
            cache = self._cache = {}
        sp = cache.get(bound.key)
        if sp is None:
            sp = cache[bound.key] = self._build(bound)
        return sp

    def launch(self, bound: BoundLaunch) -> list:
        """Run ``bound`` on its backend; returns the outputs as a list."""
        sp = self.specialization(bound)
        self.last_launch = dict(grid=bound.grid, threadgroup=bound.threadgroup, backend=bound.backend)
        outs = sp.launch(bound)
        if bound.stats is not None:
            self.last_stats = bound.stats
        return outs

    def resolve_backend(self, backend=None) -> str:
        """The backend a launch with ``backend=`` (None/"auto" allowed) runs on."""
        return L.resolve_backend(backend or "auto")

    def reference_args(self, bound: BoundLaunch) -> tuple[list, dict]:
        """(positional, keyword) NumPy inputs for a reference, in the call's order."""
        consts = set(getattr(self, "_constexpr_names", ()))
        return ([_np_arg(a) for a in bound.args],
                {k: _np_arg(v) for k, v in bound.kwargs.items() if k not in consts})

    def launch_config(self, bound: BoundLaunch) -> dict:
        """Launch keywords describing ``bound`` (grid, threadgroup, constexprs ...)."""
        return {**bound.given, **bound.kwargs}

    def user_source(self) -> tuple[str, str]:
        """(text, language) of what the user wrote: "python" or "metal"."""
        return repr(self), "python"

    def signature_text(self) -> str:
        """``"a, x, y -> out"``: inputs and outputs, for messages."""
        return self.name

    def sweepable_constants(self, launch: dict) -> dict:
        """Compile-time constants a sweep can vary (DSL constexprs, a metal_kernel's int
        template arguments), with their values in ``launch`` (launch keywords)."""
        return {}

    def set_constant(self, launch: dict, name: str, value) -> None:
        """Set compile-time constant ``name`` in the launch keywords ``launch``."""
        launch[name] = value

    def declared_output_shapes(self) -> dict:
        """Output name -> its declared shape rule (DSL ``mb.Out(shape=...)``: None for
        "like the first array", an argument name, a tuple or a function); {} when
        outputs are given per call."""
        return {}

    # -- the tools ----------------------------------------------------------------------
    @user_facing
    def check(self, ref, *args, **kwargs):
        """Run the kernel and compare its outputs with ``ref(*args)`` (a NumPy reference).

        >>> r = saxpy.check(lambda a, x, y: a * x + y, 2.0, x, y, grid=n)   # doctest: +SKIP
        >>> r.ok, r.max_abs_err                                             # doctest: +SKIP
        """
        from .check import check_kernel
        return check_kernel(self, ref, *args, **kwargs)

    @user_facing
    def bench(self, *args, **kwargs):
        """Time the kernel: median and IQR over repeats after warm-up.

        >>> t = saxpy.bench(2.0, x, y, grid=n, threadgroup=256)             # doctest: +SKIP
        """
        from .bench import bench_kernel
        return bench_kernel(self, *args, **kwargs)

    @user_facing
    def sweep(self, *args, **kwargs):
        """Time (and optionally check) the kernel over launch configurations and constexprs.

        >>> s = saxpy.sweep(2.0, x, y, grid=n, threadgroup=[64, 128, 256])  # doctest: +SKIP
        """
        from .bench import sweep_kernel
        return sweep_kernel(self, *args, **kwargs)

    @user_facing
    def autotune(self, *args, **kwargs):
        """Sweep, remember the best configuration on disk (per device), and return it.

        >>> best = saxpy.autotune(2.0, x, y, grid=n, threadgroup=[64, 256]) # doctest: +SKIP
        """
        from .bench import autotune_kernel
        return autotune_kernel(self, *args, **kwargs)

    @user_facing
    def trace(self, *args, thread=None, group=None, **launch):
        """Run once on the simulator and record, for the chosen thread(s), every assignment
        in execution order (locals, stores, loop variables): ``tr.rows`` are records with
        ``.line`` (the user's line), ``.name``, ``.value``. ``thread`` is a linear
        position, a position tuple or a list of them; ``group`` traces a whole
        threadgroup (``tr.table``: threads x steps). See :mod:`metalbench.sim.trace`.

        >>> tr = saxpy.trace(2.0, x, y, thread=5, grid=n, threadgroup=256)   # doctest: +SKIP
        >>> tr.values("out[5]")                                               # doctest: +SKIP
        """
        from .sim.trace import trace_kernel
        return trace_kernel(self, *args, thread=thread, group=group, **launch)

    @user_facing
    def access_map(self, *args, **launch):
        """Run once on the checked simulator and count, per element of every buffer, the
        reads and writes (``am.reads["x"]``, ``am.writes["out"]``, shaped like the
        buffers), which threadgroup touched it, per-simdgroup coalescing and threadgroup
        bank conflicts per access line. See :mod:`metalbench.sim.access_map`.

        >>> am = saxpy.access_map(2.0, x, y, grid=n, threadgroup=256)   # doctest: +SKIP
        >>> am.reads["x"].max(), am.writes["out"].sum()                 # doctest: +SKIP
        """
        from .sim.access_map import access_map_kernel
        return access_map_kernel(self, *args, **launch)

    @user_facing
    def export_mlx(self, *args, **kwargs) -> str:
        """Standalone Python calling ``mx.fast.metal_kernel`` with the final MSL and this
        launch configuration (no metalbench import).

        >>> print(saxpy.export_mlx(2.0, x, y, grid=n, threadgroup=256))  # doctest: +SKIP
        """
        from .export import export_mlx
        return export_mlx(self, *args, **kwargs)

    # -- the thin path ------------------------------------------------------------------
    @property
    def _thin(self) -> ThinCache:
        c = self.__dict__.get("_thin_cache")
        if c is None:
            c = self._thin_cache = ThinCache()
        return c


def _np_arg(v):
    if runtime.is_array(v):
        return np.array(runtime.to_numpy(v))
    return v


def unwrap(outs):
    """A kernel call's result: the output, or a tuple of them."""
    return outs[0] if len(outs) == 1 else tuple(outs)


def thin_gpu_call(plan: MLXLaunch, sources: list, first_values: list, single: bool, owner=None,
                  last=None, fixed: tuple | None = None, guard: tuple | None = None):
    """A function ``f(args, kwargs, init_value, checked, stream)`` launching ``plan``
    with the inputs taken by position from ``vec`` (``args``, or with ``fixed`` given,
    ``args + tuple(kwargs.values()) + fixed``), and setting ``owner.last_launch = last``.

    ``sources[i]`` is the position in ``vec`` of MLX input ``i``; ``first_values`` are
    the values of the call that built the plan: inputs that were ``mx.array``s of the
    kernel's dtype need no converter (the thin key guarantees the same dtype later),
    scalars get a per-input cache of their 0-d arrays. The function is generated for
    its inputs (no loop, no ``**kwargs``): it is the whole host cost of a repeated call.

    With ``guard = (params, lines, env, nargs)`` (:func:`launch_guard`), ``f.guarded(params)``
    is the same launch (without init_value or stream) for the kernel's own arguments, after
    ``lines`` (which return :data:`MISS` unless the call has this entry's key).
    """
    mx_array = mlx_array_type()
    env = {"kernel": plan.kernel, "owner": owner, "last": last, "MISS": MISS}
    env.update(("k_" + k, v) for k, v in plan.kwargs.items())
    items, gitems = [], []
    nargs = guard[3] if guard is not None else 0
    for j, ((name, kind, t), c, v, i) in enumerate(zip(plan.spec_inputs, plan.converters, first_values, sources)):
        a = f"a{i}" if i < nargs else f"fixed[{i - nargs}]"
        if type(v) is mx_array and v.dtype == T.to_mlx(t) and c is not runtime.float64_bits:
            items.append(f"vec[{i}]")
            gitems.append(a)
        elif kind == "scalar" and not runtime.is_array(v):
            env[f"c{j}"] = cs = _cached_scalar(t, plan.backend)
            env[f"sc{j}"] = cs.cache
            items.append(f"c{j}(vec[{i}])")
            # the cache inlined (a call costs more than the lookup); zero: the sign is not in the key
            gitems.append(f"(s if {a} and (s := sc{j}.get({a})) is not None else c{j}({a}))"
                          if type(v) in (float, int, bool) and i < nargs else f"c{j}({a})")
        else:
            env[f"c{j}"] = c
            items.append(f"c{j}(vec[{i}])")
            gitems.append(f"c{j}({a})")
    for j, e in enumerate(plan.extra):
        env[f"e{j}"] = e
        items.append(f"e{j}")
        gitems.append(f"e{j}")
    kws = ", ".join(f"{k}=k_{k}" for k in plan.kwargs)
    env["v64"] = runtime.bits_float64
    env["init64"] = functools.partial(runtime.float64_init_value, types=plan.output_types)
    ret = "outs" if single is None else "outs[0]" if single else "tuple(outs)"   # None: MLX's list
    views = "".join(f"    outs[{k}] = v64(outs[{k}])\n" for k in plan.bits_outputs)   # float64 results
    env["fixed"] = fixed

    def body(items, options=True):     # options=False: no init_value, no stream (MLX's defaults)
        ins = f"inputs=[{', '.join(items)}], {kws}" + (", init_value=init_value" if options or plan.bits_outputs else "")
        return ((f"    init_value = init64({'init_value' if options else None})\n" if plan.bits_outputs else "")
                + ("    owner.last_launch = last\n" if owner is not None else "")
                + (f"    if stream is None:\n        outs = kernel({ins})\n"
                   f"    else:\n        outs = kernel({ins}, stream=stream)\n" if options else
                   f"    outs = kernel({ins})\n") + views + f"    return {ret}\n")
    src = ("def call(vec, kwargs, init_value, checked, stream):\n"
           + ("    vec = vec + tuple(kwargs.values()) + fixed\n" if fixed is not None else "") + body(items))
    if guard is not None:
        params, lines, genv, _ = guard
        env.update(genv)
        src += f"def guarded({params}):\n" + "".join(lines) + body(gitems, False)
    exec(compile(src, f"<metalbench thin call {plan.kernel_name}>", "exec"), env)
    if guard is not None:
        env["call"].guarded = env["guarded"]
    return env["call"]


MISS = object()     # what a thin-path guard returns for a call without its entry's key


def launch_guard(args, grid, threadgroup, backend, name="args", extra=(), extra_env=None):
    """``(lines, env)``: source returning :data:`MISS` unless a call's arguments (``name``,
    unpacked to ``a0``..), grid, threadgroup and backend give the key these do and
    ``extra`` holds (None: no signature). Stricter than the key is fine; looser never.

    >>> lines, env = launch_guard((1.5,), 8, None, "sim")
    >>> print(lines[-1].strip())
    if not (type(a0) is float): return MISS
    """
    if _MXA is None:
        _mx_facts()
    env = {"mxa": _MXA, "dk": _DTYPE_KEY, "sig": arg_signature, "MISS": MISS, "g_grid": grid,
           "g_grid_t": type(grid), "g_tg": threadgroup, "g_tg_t": type(threadgroup), **(extra_env or {})}
    conds = []
    for i, a in enumerate(args):
        s = arg_signature(a)
        if s is _UNKEYED:
            return None
        if type(a) is _MXA:
            env[f"g_s{i}"], env[f"g_d{i}"] = a.shape, a.dtype      # (Dtype == Dtype: by value)
            conds.append(f"type(a{i}) is mxa and a{i}.shape == g_s{i} and a{i}.dtype == g_d{i}")
        elif type(a) in (float, bool):
            conds.append(f"type(a{i}) is {type(a).__name__}")
        else:
            env[f"g_sig{i}"] = s
            conds.append(f"sig(a{i}) == g_sig{i}")
    if backend is None or backend == "auto":
        env["envf"], env["g_env"] = L.env_fast, L.env_fast(_ENV_KEY)
        bcheck = f"(backend != 'auto' and backend is not None) or envf({_ENV_KEY!r}) != g_env"
    else:
        env["g_backend"] = backend
        bcheck = "backend != g_backend"
    lines = ["    if not (grid is g_grid or (type(grid) is g_grid_t and grid == g_grid)): return MISS\n",
             "    if not (threadgroup is g_tg or (type(threadgroup) is g_tg_t and threadgroup == g_tg)): return MISS\n",
             f"    if {bcheck}: return MISS\n"]
    lines += [f"    if not ({c}): return MISS\n" for c in extra]
    unpack = f"{', '.join(f'a{i}' for i in range(len(args)))}, = {name}\n"
    if name == "args" and args:     # a tuple: unpacking checks the count (a try is free until it catches)
        lines += ["    try:\n", "        " + unpack, "    except ValueError:\n", "        return MISS\n"]
    else:                           # any sequence (unpacking would take an iterator's items)
        lines += [f"    if len({name}) != {len(args)}: return MISS\n"] + (["    " + unpack] if args else [])
    lines += [f"    if not ({' and '.join(conds)}): return MISS\n"] if args else []
    return lines, env


def _cached_scalar(t: T.ScalarType, backend: str = ""):
    """value -> a 0-d MLX array of ``t`` (as ``backend`` carries it), remembered per
    value (bounded)."""
    cache: dict = {}
    convert = _converter("scalar", t, backend)

    def scalar(v):
        a = cache.get(v)
        if a is None or (type(v) is float and not v):     # -0.0 == 0.0: the sign is not in the key
            a = convert(v)
            if len(cache) > 64:
                cache.clear()
            cache[v] = a
        return a
    scalar.cache = cache
    return scalar
