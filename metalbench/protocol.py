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
from .codegen.c_like import compact
from .errors import user_facing
from .mlx_signature import shape_infos
# The thin path lives in thin.py; its names stay importable from here.
from .thin import (_ENV_KEY, _SIGNATURES, MISS, MLX_SMALL_POOL_BYTES, FastCall, ThinCache, _cached_scalar, _converter,  # noqa: F401
                   arg_signature, backend_token, launch_guard, mlx_array_type, padded_length, scalar_array, signatures,
                   thin_gpu_call)

# Keywords every kind's bind understands (the rest are kernel arguments or templates).
LAUNCH_KEYS = ("grid", "threadgroup", "backend", "checked", "init_value", "stream")
# Distinct sets of array lengths one specialisation compiles in per backend
# (Specialization.lengths); later ones share the kernel that tests lengths at run time.
MAX_LENGTH_VARIANTS = 8


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
            self._inputs = [(p.name, p.kind, T.complex64 if p.complex else p.type) for p in self.ir.inputs]
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

    def rendered(self, backend: str, exact_grid: bool = False, threadgroup=None, lengths=()):
        """The kernel ``mx.fast.metal_kernel`` (``backend="metal"``) or ``cuda_kernel``
        receives; for cuda, ``exact_grid`` selects the variant for grids of whole
        threadgroups (no launch guard) and ``threadgroup`` (a 3-tuple) the variant
        specialised for that block size (``codegen.cuda.render``); ``lengths`` (from
        :meth:`lengths`) the array lengths compiled in."""
        if backend == "metal" and self.verbatim is not None:
            return self.verbatim
        exact_grid = exact_grid and backend == "cuda"
        threadgroup = tuple(threadgroup) if threadgroup is not None and backend == "cuda" else None
        lengths = tuple(lengths)
        key = ("rendered", backend, exact_grid, threadgroup) + ((lengths,) if lengths else ())
        r = self.artifacts.get(key)
        if r is None:
            if backend == "metal":
                from .codegen.msl import render
                r = render(self.ir, lengths=lengths)
            elif backend == "cuda":
                from .codegen.cuda import render
                r = render(self.ir, exact_grid=exact_grid, threadgroup=threadgroup, lengths=lengths)
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

    def mlx_kernel_args(self, backend: str, exact_grid: bool = False, threadgroup=None, lengths=()) -> dict:
        """The keyword arguments of ``mx.fast.metal_kernel`` / ``cuda_kernel`` for this kernel."""
        r = self.rendered(backend, exact_grid, threadgroup, lengths)
        kw = dict(name=r.name, input_names=list(r.input_names), output_names=list(r.output_names),
                  source=r.body, header=r.header or "", ensure_row_contiguous=self.ensure_row_contiguous)
        if backend == "metal":
            # mx.fast.cuda_kernel has no atomic_outputs: CUDA atomics work on plain pointers.
            kw["atomic_outputs"] = bool(r.atomic_outputs)
            if self.verbatim is not None:
                kw.update(self.mlx_options)
        return kw

    def mlx_kernel(self, backend: str, exact_grid: bool = False, threadgroup=None, lengths=()):
        """The MLX kernel object (built once per backend, grid variant and, for cuda,
        threadgroup size; per compiled-in lengths)."""
        exact_grid = exact_grid and backend == "cuda"
        threadgroup = tuple(threadgroup) if threadgroup is not None and backend == "cuda" else None
        lengths = tuple(lengths)
        key = ("mlx", backend, exact_grid, threadgroup) + ((lengths,) if lengths else ())
        k = self.artifacts.get(key)
        if k is None:
            import mlx.core as mx
            make = mx.fast.metal_kernel if backend == "metal" else mx.fast.cuda_kernel
            kw = self.mlx_kernel_args(backend, exact_grid, threadgroup, lengths)
            if backend == "cuda" or self.verbatim is None:       # printed here, not the user's text
                kw["source"], kw["header"] = compact(kw["source"]), compact(kw["header"])
            k = self.artifacts[key] = make(**kw)
        return k

    def lengths(self, values: dict, outputs: list, backend: str) -> tuple:
        """``(((buffer, dim), value), ...)``: the array lengths the kernel divides by
        (``passes/lengths.py``) as the arguments ``values`` (by parameter) and fresh
        ``outputs`` ``[(name, shape, type)]`` have them; a GPU launch compiles them in
        (``i % bias.size`` prints as ``i % 4096u``, as a hand-written kernel's ``i % C``).
        Empty when there are none, when an array or its shape is not at hand, or after
        :data:`MAX_LENGTH_VARIANTS` sets of values (then the printed kernel tests for a
        power of two at run time, one compile for all lengths)."""
        if backend not in ("metal", "cuda") or (backend == "metal" and self.verbatim is not None):
            return ()
        pairs = self.artifacts.get("length_pairs")
        if pairs is None:
            from .passes.lengths import divisor_lengths
            pairs = self.artifacts["length_pairs"] = divisor_lengths(self.ir)
        if not pairs:
            return ()
        shapes = {n: s for n, s, _ in outputs}
        out = []
        for buf, dim in pairs:
            v = values.get(buf)
            shape = shapes.get(buf) if v is None else getattr(v, "shape", None)
            p = self.ir.param(buf)
            if v is not None and getattr(v, "dtype", None) not in (p.type.np, T.to_mlx(p.type)):
                return ()           # converted at launch (complex storage, other dtypes): not assumed
            if shape is None or dim >= len(shape):
                return ()
            out.append(((buf, dim), int(shape[dim])))
        out = tuple(out)
        seen = self.artifacts.setdefault(("length_variants", backend), set())
        if out not in seen:
            if len(seen) >= MAX_LENGTH_VARIANTS:
                return ()
            seen.add(out)
        return out

    def launch_rendered(self, bound: BoundLaunch, backend: str = "cuda"):
        """The printed kernel a ``backend`` launch of ``bound`` compiles, for tools that
        compile or time it outside a launch (``benchmarks/sass_compare.py``,
        ``gpu_probe.py``): its grid variant, threadgroup and lengths."""
        exact = all(g % t == 0 for g, t in zip(bound.grid, bound.threadgroup))
        return self.rendered(backend, exact, bound.threadgroup, self.lengths(bound.values, bound.outputs, backend))

    def gpu_plan(self, bound: BoundLaunch, backend: str) -> "MLXLaunch":
        """The prepared MLX call for ``bound``'s grid, threadgroup, output shapes,
        template and compiled-in lengths (:meth:`lengths`): built once, then every
        launch of that shape reuses it."""
        out_shapes = tuple(s for _, s, _ in bound.outputs)
        tmpl = bound.template if (backend == "metal" and self.verbatim is not None) else ()
        lengths = self.lengths(bound.values, bound.outputs, backend)
        key = ("plan", backend, bound.grid, bound.threadgroup, out_shapes, tmpl, lengths)
        plan = self.artifacts.get(key)
        if plan is None:
            plan = self.artifacts[key] = MLXLaunch(self, backend, bound.grid, bound.threadgroup,
                                                   bound.outputs, tmpl, lengths)
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

    def launch_sim(self, values: dict, outputs: list, grid, threadgroup, checked=False, init_value=None,
                   tie=True):
        """Run on the simulator: inputs by parameter name, fresh outputs
        ``[(name, shape, ScalarType)]`` (poisoned unless ``init_value``); returns
        (outputs as ``mx.array``, SimStats). ``tie``: the outputs are tied to the MLX inputs
        so that a derivative through the launch raises, as through MLX's custom kernels
        (``runtime.no_derivatives``; the Numba layer's device arrays, never differentiated,
        skip it)."""
        outs, stats = runtime.run_sim(self.sim(), self.ir, values, outputs, grid, threadgroup, init_value, checked,
                                      keep_strides=not self.ensure_row_contiguous, kernel_name=self.name)
        if tie:
            outs = runtime.no_derivatives(outs, values.values(), self.name)
        return outs, stats


def unique_name(r) -> str:
    """``r.name`` with a short hash of what MLX compiles: MLX caches compiled custom kernels
    by name (plus template arguments) -- in memory, and for CUDA in its PTX cache on disk,
    across processes -- so two specialisations of one kernel (other dtypes, constexprs, or
    CUDA's exact-grid variant) must not share a name. The hash covers the header, the body
    and the signature MLX builds around them from the arrays (input types and ranks,
    output types): a copy kernel prints the same body for half and bfloat16, and the second
    would run the first one's compiled code on its bytes.

    >>> from metalbench.codegen.c_like import Rendered
    >>> from metalbench import types as T
    >>> a = Rendered("k", "o[0] = x[0];", "", ["x"], ["o"], False, [(T.float16, 1)], [T.float16])
    >>> b = Rendered("k", "o[0] = x[0];", "", ["x"], ["o"], False, [(T.bfloat16, 1)], [T.bfloat16])
    >>> unique_name(a) != unique_name(b)
    True
    """
    import hashlib
    sig = ",".join(f"{t.name}:{nd}" for t, nd in (r.input_types or [])) + "->" + \
        ",".join(t.name for t in (r.output_types or []))
    digest = hashlib.sha1((r.header + "\0" + r.body + "\0" + sig).encode()).hexdigest()[:10]
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

    def __init__(self, spec: Specialization, backend: str, grid, threadgroup, outputs, template=(), lengths=()):
        # this GPU's own limits (threads, threadgroup memory, SIMD width), once per plan; the
        # threadgroup memory when the IR exists (a verbatim MSL body is not parsed for it)
        from . import devices
        dev = devices.current(backend)
        if dev is not None:
            devices.check_launch(dev, threadgroup, spec._ir)
        import mlx.core as mx
        exact = all(g % t == 0 for g, t in zip(grid, threadgroup))
        guarded = ("mlx", backend, False, tuple(threadgroup) if backend == "cuda" else None)
        if exact and guarded + ((tuple(lengths),) if lengths else ()) in spec.artifacts:
            exact = False   # the guarded kernel, built already, runs exact grids too: no second NVRTC compile
        # CUDA specialises the printed kernel for the block size (constant thread
        # indices, full-warp SIMD-group functions): one compile per threadgroup size
        r = spec.rendered(backend, exact, threadgroup, lengths)
        # (lengths only when there are some: stand-ins of mlx_kernel in tests may predate them)
        self.kernel = spec.mlx_kernel(backend, exact, threadgroup, *((lengths,) if lengths else ()))
        self.extra = list(r.extra_inputs(grid, threadgroup, [s for _, s, _ in outputs])) if r.extra_inputs else []
        if self.extra:
            mx.eval(*self.extra)
        self.kernel_name = spec.name
        self.backend = backend
        self.spec_inputs = spec.launch_inputs(backend)
        self.names = [n for n, _, _ in self.spec_inputs]
        # which inputs MLX passes shape arguments for (a 0-d scalar of those crosses as a vector)
        body = getattr(r, "body", None)
        self.shaped = [True] * len(self.names) if body is None else \
            [any(f) for f in shape_infos(body, self.names)]
        self.converters = [_converter(kind, t, backend, shaped)
                           for (_, kind, t), shaped in zip(self.spec_inputs, self.shaped)]
        self.kwargs = dict(grid=tuple(grid), threadgroup=tuple(threadgroup),
                           output_shapes=[tuple(s) for _, s, _ in outputs],
                           output_dtypes=[T.to_mlx(runtime.carrier(t, backend)) for _, _, t in outputs])
        # tiny atomic outputs on cuda, allocated padded and sliced back (small_atomic_outputs)
        self.padded = small_atomic_outputs(spec, backend, outputs)
        for i, shape, n in self.padded:
            self.kwargs["output_shapes"][i] = (padded_length(_itemsize(outputs[i][2], backend)),)
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
            outs = self.kernel(inputs=inputs, init_value=init_value, **self.kwargs)
        else:
            outs = self.kernel(inputs=inputs, init_value=init_value, stream=stream, **self.kwargs)
        for i, shape, n in self.padded:
            outs[i] = unpad(outs[i], shape, n)
        return outs

    def unpad_source(self, outs: str = "outs", indent: str = "    ") -> str:
        """The lines that slice this launch's padded outputs (``self.padded``) in list
        ``outs`` back to their shapes, for the generated launches (``thin``, the Numba
        layer's device launch); the helper they call is ``unpad``."""
        return "".join(f"{indent}{outs}[{i}] = unpad({outs}[{i}], {tuple(shape)!r}, {n})\n"
                       for i, shape, n in self.padded)


def _itemsize(t: T.ScalarType, backend: str) -> int:
    """Bytes of an element of ``t`` as MLX holds it on ``backend``."""
    return np.dtype(runtime.carrier(t, backend).np).itemsize


def small_atomic_outputs(spec, backend: str, outputs) -> list:
    """``[(index, shape, elements)]``: the outputs the kernel updates atomically whose MLX
    allocation would be at most 8 bytes, on cuda. MLX's CUDA allocator serves those from one
    pool of managed memory that the GPU reaches in host memory, so every atomic crosses the
    bus: on the H200 a kernel of 1M threads adding to a one-element output took 35 ms a
    launch, 41 us with the output four elements long (benchmarks/RESULTS.md, session 10).
    Such an output is allocated longer and sliced back (a view, no copy).

    >>> import metalbench as mb
    >>> k = mb.metal_kernel("count", ["x"], ["n"], "if (x[thread_position_in_grid.x] > 0) atomic_fetch_add_explicit(&n[0], 1, memory_order_relaxed);", atomic_outputs=True)
    >>> import numpy as np
    >>> b = k.bind(inputs=[np.ones(4, np.float32)], output_shapes=[(1,)], output_dtypes=[mb.int32], grid=(4, 1, 1), threadgroup=(4, 1, 1), backend="sim")
    >>> small_atomic_outputs(k.specialization(b), "cuda", [("n", (1,), T.int32)])
    [(0, (1,), 1)]
    """
    if backend != "cuda":          # (Metal's memory is unified; the simulator has no allocator)
        return []
    small = [(i, tuple(s), t) for i, (_, s, t) in enumerate(outputs)
             if int(np.prod(s, dtype=np.int64)) * _itemsize(t, backend) <= MLX_SMALL_POOL_BYTES]
    if not small:
        return []
    from .codegen.c_like import atomic_buffers
    atomic = atomic_buffers(spec.ir, outputs_together=False)[0]
    return [(i, s, int(np.prod(s, dtype=np.int64))) for i, s, t in small if outputs[i][0] in atomic]


def unpad(a, shape: tuple, n: int):
    """Padded output ``a`` as ``shape`` (its first ``n`` elements; a view)."""
    a = a[:n]
    return a if shape == (n,) else a.reshape(shape)



# ----------------------------------------------------------------------------- KernelBase

class KernelBase(FastCall):
    """What every kernel object is: the protocol (``bind``, ``specialization``,
    ``launch``) and the tools built on it (``check``, ``bench``, ``sweep``,
    ``autotune``, ``export_mlx``). Calling one calls its front (``thin.FastCall``):
    each kind's ``__init__`` installs its general front (``_generic_front``).

    A kind implements ``bind(*args, **launch) -> BoundLaunch`` (its calling
    convention) and ``_build(bound) -> Specialization``; the cache, the launch and
    the tools are shared.
    """

    name = "kernel"
    #: ``sim.SimStats`` of the last simulator launch (access counts when it was checked)
    last_stats = None

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        # the last launch, in a cell: the generated fronts store into it (``box[0] = last``),
        # which costs less than an attribute of the object
        self._last = [None]
        return self

    @property
    def last_launch(self):
        """``dict(grid=, threadgroup=, backend=)`` of the last launch (None before one)."""
        return self._last[0]

    @last_launch.setter
    def last_launch(self, value):
        self._last[0] = value

    def __setstate__(self, state) -> None:       # copy.copy: a cell of its own
        super().__setstate__(state)
        self._last = list(state.get("_last", [None]))

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
