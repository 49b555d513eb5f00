"""Kernel objects: ``@mb.kernel`` and ``@mb.func``.

A :class:`Kernel` binds a call's arguments, specialises the DSL function on their
dtypes, ndims and constexpr values (cached, as in Numba), and launches the result on
a backend::

    import metalbench as mb
    from metalbench.dsl import *

    @mb.kernel
    def saxpy(a: float, x, y, out: mb.Out):
        i = thread_position_in_grid.x
        if i < x.size:
            out[i] = a * x[i] + y[i]

    out = saxpy(2.0, x, y, grid=x.size, threadgroup=256)            # mx.array
    print(saxpy.source(2.0, x, y, backend="metal"))                  # the MSL MLX receives
"""
from __future__ import annotations

import functools
import inspect
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import ir
from . import launch as L
from . import runtime
from . import types as T
from .errors import KernelLaunchError, KernelTypeError, MetalbenchError, user_facing
from .frontend import python as F


class KernelBase:
    """What every kernel object offers besides launching: check, bench, sweep, autotune.

    Subclasses implement ``_launch_for_tools(args, kwargs)``-style calls through
    ``__call__``; the tools live in ``check.py`` and ``bench.py``.
    """

    #: ``sim.SimStats`` of the last simulator launch (access counts when it was checked)
    last_stats = None

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
        """Sweep, remember the best configuration on disk, and return it.

        >>> best = saxpy.autotune(2.0, x, y, grid=n, threadgroup=[64, 256]) # doctest: +SKIP
        """
        from .bench import autotune_kernel
        return autotune_kernel(self, *args, **kwargs)

    @user_facing
    def export_mlx(self, *args, **kwargs) -> str:
        """Standalone Python calling ``mx.fast.metal_kernel`` with the final MSL and this
        launch configuration (no metalbench import).

        >>> print(saxpy.export_mlx(2.0, x, y, grid=n, threadgroup=256))  # doctest: +SKIP
        """
        from .export import export_mlx
        return export_mlx(self, *args, **kwargs)


@dataclass
class Specialization:
    """One compiled form of a kernel: its IR and, lazily, each backend's artifact."""
    key: tuple
    ir: ir.KernelIR
    specs: list
    artifacts: dict = field(default_factory=dict)

    def sim(self):
        k = self.artifacts.get("sim")
        if k is None:
            from .sim import compile_kernel
            k = self.artifacts["sim"] = compile_kernel(self.ir)
        return k

    def rendered(self, backend: str, exact_grid: bool = False):
        """The printed kernel for ``backend``; for cuda, ``exact_grid`` selects the variant
        for grids of whole threadgroups (no launch guard)."""
        exact_grid = exact_grid and backend == "cuda"
        key = ("rendered", backend, exact_grid)
        r = self.artifacts.get(key)
        if r is None:
            if backend == "metal":
                from .codegen.msl import render
                r = render(self.ir)
            else:
                from .codegen.cuda import render
                r = render(self.ir, exact_grid=exact_grid)
            r.name = unique_name(r)
            self.artifacts[key] = r
        return r


def _kind_of_param(fn_param: inspect.Parameter):
    ann = fn_param.annotation
    if isinstance(ann, F.OutSpec):
        return "out", ann
    if isinstance(ann, F.ConstExpr):
        return "constexpr", None
    if isinstance(ann, str):
        a = ann.replace(" ", "")
        if a in ("mb.Out", "Out", "metalbench.Out"):
            return "out", F.Out
        if a in ("mb.constexpr", "constexpr", "metalbench.constexpr"):
            return "constexpr", None
    return "arg", ann


def scalar_type_of(value, annotation=inspect.Parameter.empty) -> T.ScalarType:
    """The type a scalar argument gets: the annotation's if it names one, else Python
    float → float32, int → int32 (int64 if large), bool → bool, NumPy scalars keep
    their dtype (float64 becomes float32: Metal has no double).

    >>> scalar_type_of(2.0).name, scalar_type_of(3).name, scalar_type_of(np.uint8(1)).name
    ('float32', 'int32', 'uint8')
    """
    if annotation is not inspect.Parameter.empty and annotation is not None:
        t = F.resolve_dtype(annotation)
        if t is not None:
            return t
    if isinstance(value, (bool, np.bool_)):
        return T.bool_
    if isinstance(value, np.generic):
        if value.dtype == np.float64:
            return T.float32
        return T.from_numpy(value.dtype)
    if isinstance(value, int):
        return T.literal_int_type(value)
    if isinstance(value, float):
        return T.float32
    raise TypeError(type(value).__name__)


class Kernel(KernelBase):
    """A DSL kernel: ``@mb.kernel`` on a Python function (or source text from a cell).

    Call it with the non-output arguments and launch keywords:
    ``k(*args, grid=, threadgroup=256, backend="auto", out=None, init_value=None,
    checked=None)``. Returns an ``mx.array``, or a tuple for several outputs.
    """

    def __init__(self, fn=None, *, source: str | None = None, env: dict | None = None,
                 first_line: int | None = None, source_name: str | None = None, name: str | None = None):
        self.fn = fn
        self._source_text = source
        self._env = env
        self._first_line = first_line
        self._source_name = source_name
        self._parsed = None
        self._cache: dict[tuple, Specialization] = {}
        self._fast: dict = {}
        if fn is not None:
            self.__name__ = name or fn.__name__
            self.__doc__ = fn.__doc__
            try:  # string annotations (from __future__ import annotations) name mb.Out etc.
                self.signature = inspect.signature(fn, eval_str=True)
            except Exception:
                self.signature = inspect.signature(fn)
        else:
            parsed = self.parsed()
            self.__name__ = name or parsed.name
            self.signature = _signature_from_ast(parsed.fdef, parsed.env)
        self.name = self.__name__
        self.params = list(self.signature.parameters.values())
        self.kinds = [_kind_of_param(p) for p in self.params]
        self.last_launch: dict | None = None

    def __repr__(self) -> str:
        args = ", ".join(p.name for p, (k, _) in zip(self.params, self.kinds) if k != "out")
        return f"<metalbench kernel {self.name}({args})>"

    def parsed(self) -> F.ParsedFunction:
        if self._parsed is None:
            p = F.parse_function(self.fn, self._source_text, self._first_line, self._source_name)
            if self._env is not None:
                p.env = dict(self._env)
            self._parsed = p
        return self._parsed

    # -- binding -------------------------------------------------------------------------
    def bind(self, args, kwargs, out=None):
        """Bind call arguments: returns (values by name, specs, output shapes)."""
        # parameter lists are fixed at decoration: computed once, not per launch
        pk = self.__dict__.get("_param_lists")
        if pk is None:
            pk = self._param_lists = ([p for p, (k, _) in zip(self.params, self.kinds) if k != "out"],
                                      [(p, extra) for p, (k, extra) in zip(self.params, self.kinds) if k == "out"])
        in_params = pk[0]
        if len(args) > len(in_params):
            raise KernelLaunchError(
                f"{self.name}() takes {len(in_params)} argument(s) ({', '.join(p.name for p in in_params)}), "
                f"got {len(args)}", hint="outputs (mb.Out) are created by the kernel and not passed")
        values: dict[str, Any] = {}
        for p, a in zip(in_params, args):
            values[p.name] = a
        for k, v in kwargs.items():
            if k not in self.signature.parameters:
                raise KernelLaunchError(f"{self.name}() got an unexpected keyword argument {k!r}",
                                        hint="launch options are grid=, threadgroup=, backend=, out=, "
                                             "init_value=, checked=")
            if k in values:
                raise KernelLaunchError(f"{self.name}() got multiple values for argument {k!r}")
            values[k] = v
        specs: list[F.ArgSpec] = []
        first_array = None
        for p, (kind, extra) in zip(self.params, self.kinds):
            if kind == "out":
                continue
            if p.name not in values:
                if p.default is not inspect.Parameter.empty:
                    values[p.name] = p.default
                else:
                    missing = [q.name for q, (kk, _) in zip(self.params, self.kinds)
                               if kk != "out" and q.name not in values and q.default is inspect.Parameter.empty]
                    raise KernelLaunchError(f"{self.name}() is missing argument(s): {', '.join(missing)}",
                                            hint=f"call it as {self.name}({', '.join(q.name for q in in_params)}, "
                                                 "grid=..., threadgroup=...)")
            v = values[p.name]
            if kind == "constexpr":
                specs.append(F.ArgSpec(p.name, "constexpr", value=_hashable_const(v, p.name)))
            elif runtime.is_array(v):
                if extra is not inspect.Parameter.empty and extra is not None and len(v.shape) \
                        and F.resolve_dtype(extra) is not None:
                    raise KernelLaunchError(
                        f"{self.name}(): argument {p.name!r} is declared as a scalar "
                        f"({p.name}: {getattr(extra, '__name__', extra)}) but got an array of shape "
                        f"{tuple(v.shape)}",
                        hint=f"pass a number for {p.name}, or drop the annotation to take an array")
                t = _array_type(v, p.name)
                shape = tuple(int(s) for s in v.shape)
                if math.prod(shape) == 0:
                    raise KernelLaunchError(f"argument {p.name!r} is empty (shape {shape})",
                                            hint="kernels need at least one element; skip the launch for empty inputs")
                specs.append(F.ArgSpec(p.name, "buffer", t, max(1, len(shape))))
                if first_array is None:
                    first_array = (shape, t)
            else:
                try:
                    t = scalar_type_of(v, extra)
                except (TypeError, T.TypeError_):
                    raise KernelLaunchError(f"argument {p.name!r} is a {type(v).__name__}; kernels take arrays "
                                            "(mx.array or NumPy) and numbers", hint="convert it with np.asarray(...)")
                specs.append(F.ArgSpec(p.name, "scalar", t, 0))
        outs = pk[1]
        out_specs = []
        out_overrides = _out_overrides(out, [p.name for p, _ in outs])
        for p, spec in outs:
            shape, dtype = out_overrides.get(p.name, (spec.shape, spec.dtype))
            if callable(shape):
                shape = shape(**values)
            elif isinstance(shape, str):
                if shape not in values or not runtime.is_array(values[shape]):
                    raise KernelLaunchError(f"output {p.name!r} takes its shape from {shape!r}, which is not an "
                                            "array argument")
                shape = tuple(values[shape].shape)
            if shape is None:
                if first_array is None:
                    raise KernelLaunchError(f"output {p.name!r} has no shape: there is no array argument to copy it from",
                                            hint=f"declare it as {p.name}: mb.Out(shape=(n,), dtype=mb.float32) "
                                                 f"or pass out=((n,), mb.float32)")
                shape = first_array[0]
            if isinstance(shape, (int, np.integer)):
                shape = (int(shape),)
            shape = tuple(int(s) for s in shape)
            if dtype is None:
                t = first_array[1] if first_array else T.float32
            else:
                t = F.resolve_dtype(dtype)
                if t is None:
                    raise KernelLaunchError(f"output {p.name!r}: unsupported dtype {dtype!r}",
                                            hint="Metal has no float64; use float32")
            if any(s <= 0 for s in shape):
                raise KernelLaunchError(f"output {p.name!r} would be empty (shape {shape})")
            out_specs.append((p.name, shape, t))
        # Outputs keep their place among the parameters for the front end.
        all_specs = []
        it = iter(specs)
        for p, (kind, _) in zip(self.params, self.kinds):
            if kind == "out":
                o = next(o for o in out_specs if o[0] == p.name)
                all_specs.append(F.ArgSpec(p.name, "buffer", o[2], len(o[1]), is_output=True))
            else:
                all_specs.append(next(it))
        return values, all_specs, out_specs

    @user_facing
    def specialize(self, *args, out=None, **kwargs) -> Specialization:
        """The specialisation (IR plus cached backend artifacts) for these arguments."""
        _, specs, _ = self.bind(args, kwargs, out)
        return self._specialization(specs)

    def _specialization(self, specs) -> Specialization:
        key = tuple((s.kind, s.type.name if s.type else None, s.ndim, s.is_output,
                     _key_value(s.value)) for s in specs)
        sp = self._cache.get(key)
        if sp is None:
            kir = F.translate_kernel(self.parsed(), specs, name=self.name)
            L.check_threadgroup_memory(ir.threadgroup_bytes(kir), _first_tg_span(kir))
            sp = self._cache[key] = Specialization(key, kir, specs)
        return sp

    @user_facing
    def ir(self, *args, out=None, **kwargs) -> ir.KernelIR:
        """The IR for these arguments (``print(ir.dump(k.ir(...)))`` to read it)."""
        return self.specialize(*args, out=out, **kwargs).ir

    @user_facing
    def source(self, *args, backend: str = "metal", out=None, **kwargs) -> str:
        """The generated source for these arguments: for ``metal``, exactly the header and
        body ``mx.fast.metal_kernel`` receives; likewise for ``cuda``."""
        sp = self.specialize(*args, out=out, **kwargs)
        if backend == "sim":
            return ir.dump(sp.ir)
        r = sp.rendered(backend)
        parts = []
        if r.header:
            parts.append("// header\n" + r.header.rstrip())
        parts.append("// body\n" + r.body.rstrip())
        return "\n\n".join(parts) + "\n"

    # -- launching -------------------------------------------------------------------------
    @user_facing
    def __call__(self, *args, grid=None, threadgroup=None, backend="auto", out=None, init_value=None,
                 checked=None, **kwargs):
        # A repeated launch with the same argument signature (NumPy dtypes and shapes,
        # scalar types and values, grid, threadgroup) reuses the checked binding: the
        # launch overhead of a small cached launch is mostly argument validation.
        fk = _fast_key(args, kwargs, grid, threadgroup) if out is None else None
        hit = self._fast.get(fk) if fk is not None else None
        if hit is not None:
            names, defaults, out_specs, g, t, sp = hit
            values = dict(defaults)
            values.update(zip(names, args))
            values.update(kwargs)
        else:
            values, specs, out_specs = self.bind(args, kwargs, out)
            g, t = L.normalize(grid, threadgroup)
            sp = self._specialization(specs)
            # An output shape given as a function is evaluated once per signature: it must
            # depend on array shapes, dtypes and scalar values, not on array contents.
            if fk is not None:
                if len(self._fast) > 64:
                    self._fast.clear()
                names = [p.name for p, (k, _) in zip(self.params, self.kinds) if k != "out"][:len(args)]
                defaults = {n: v for n, v in values.items() if n not in names}
                self._fast[fk] = (names, defaults, out_specs, g, t, sp)
        be = L.resolve_backend(backend)
        chk = L.checked_default(checked)
        self.last_launch = dict(grid=g, threadgroup=t, backend=be)
        inputs = values  # run_sim and _launch_gpu read the inputs by name
        if be == "sim":
            outs, stats = runtime.run_sim(sp.sim(), sp.ir, inputs, out_specs, g, t, init_value, chk)
            self.last_stats = stats
        else:
            outs = _launch_gpu(sp, be, inputs, out_specs, g, t, init_value)
        return outs[0] if len(outs) == 1 else tuple(outs)


def unique_name(r) -> str:
    """``r.name`` with a short hash of its source: MLX caches compiled custom kernels by
    name (plus template arguments), so two specialisations of one kernel (other dtypes,
    constexprs, or CUDA's exact-grid variant) must not share a name."""
    import hashlib
    digest = hashlib.sha1((r.header + "\0" + r.body).encode()).hexdigest()[:10]
    return f"{r.name}_{digest}"


def _launch_gpu(sp: Specialization, backend: str, inputs: dict, out_specs, grid, threadgroup, init_value):
    """Launch a specialisation through ``mx.fast.metal_kernel`` or ``mx.fast.cuda_kernel``.

    Everything that depends only on the launch's shape (the MLX kernel object, the
    printer's extra inputs such as the grid guard, output shapes and dtypes) is built
    once per (backend, grid, threadgroup, output shapes) and reused: a repeated launch
    then costs little more than MLX's own call.
    """
    import mlx.core as mx

    plan_key = ("plan", backend, grid, threadgroup, tuple(s for _, s, _ in out_specs))
    plan = sp.artifacts.get(plan_key)
    if plan is None:
        exact = all(g % t == 0 for g, t in zip(grid, threadgroup))
        r = sp.rendered(backend, exact_grid=exact)
        key = ("mlx", backend, exact and backend == "cuda")
        k = sp.artifacts.get(key)
        if k is None:
            common = dict(name=r.name, input_names=r.input_names, output_names=r.output_names,
                          source=r.body, header=r.header, ensure_row_contiguous=True)
            # mx.fast.cuda_kernel has no atomic_outputs: CUDA atomics work on plain pointers.
            k = sp.artifacts[key] = (mx.fast.metal_kernel(**common, atomic_outputs=r.atomic_outputs)
                                     if backend == "metal" else mx.fast.cuda_kernel(**common))
        extra = getattr(r, "extra_inputs", None)
        extra_arrays = list(extra(grid, threadgroup, [s for _, s, _ in out_specs])) if extra else []
        if extra_arrays:
            mx.eval(*extra_arrays)
        ins = [(p.name, p.kind, p.type, T.to_mlx(p.type)) for p in sp.ir.inputs]
        plan = sp.artifacts[plan_key] = (k, ins, extra_arrays, [s for _, s, _ in out_specs],
                                         [T.to_mlx(t) for _, _, t in out_specs])
    k, ins, extra_arrays, out_shapes, out_dtypes = plan
    arrays = []
    for name, kind, t, mt in ins:
        v = inputs[name]
        if kind == "scalar":
            arrays.append(_scalar_array(v, t))
            continue
        if type(v) is not mx.array:
            v = runtime.to_mlx(np.ascontiguousarray(runtime.to_numpy(v)))
        if v.dtype != mt:
            v = v.astype(mt)
        arrays.append(v)
    arrays.extend(extra_arrays)
    return k(inputs=arrays, grid=grid, threadgroup=threadgroup, output_shapes=out_shapes,
             output_dtypes=out_dtypes, init_value=init_value)


_SCALARS: dict = {}


def _scalar_array(v, t: T.ScalarType):
    """A 0-d MLX array holding scalar ``v`` as ``t``; recent values are kept, so a kernel
    launched in a loop with the same scalars does not allocate and copy them each time."""
    import mlx.core as mx
    try:
        key = (t.name, v.item() if isinstance(v, np.generic) else v)
        a = _SCALARS.get(key)
    except TypeError:
        key, a = None, None
    if a is None:
        a = (mx.array(float(v), dtype=mx.bfloat16) if t == T.bfloat16
             else mx.array(np.asarray(v, dtype=t.np)))
        if key is not None:
            if len(_SCALARS) > 256:
                _SCALARS.clear()
            _SCALARS[key] = a
    return a


@functools.lru_cache(maxsize=None)
def _mx_array():
    import mlx.core as mx
    return mx.array


def _arg_key(a):
    ta = type(a)
    if ta is np.ndarray:
        return (a.dtype.str, a.shape)
    if ta is _mx_array():
        return (a.dtype, tuple(a.shape))
    if ta in (int, float, bool) or isinstance(a, np.generic):
        return (ta, a)
    return None


def _fast_key(args, kwargs, grid, threadgroup):
    """A hashable signature of launch arguments (array dtypes and shapes, scalar and
    constexpr values, grid, threadgroup), or None when some argument is not a NumPy or
    MLX array or a plain number (then every launch binds from scratch)."""
    key = []
    for a in args:
        k = _arg_key(a)
        if k is None:
            return None
        key.append(k)
    for name in sorted(kwargs):
        k = _arg_key(kwargs[name])
        if k is None:
            return None
        key.append((name, k))
    try:
        return (tuple(key), grid, threadgroup, hash((grid, threadgroup)))
    except TypeError:
        return None


def _first_tg_span(kir):
    for n in ir.walk(kir.body):
        if isinstance(n, ir.ArrayDecl) and n.space == "threadgroup":
            return n.span
    return None


def _array_type(v, name) -> T.ScalarType:
    try:
        if type(v).__module__.startswith("mlx"):
            return T.from_mlx(v.dtype)
        return T.from_numpy(v.dtype)
    except T.TypeError_ as e:
        raise KernelLaunchError(f"argument {name!r}: {e}",
                                hint=f"for example {name}.astype(np.float32)")


def _hashable_const(v, name):
    if isinstance(v, (bool, int, float, str, np.generic)) or v is None:
        return v
    t = F.resolve_dtype(v)
    if t is not None:
        return v
    if isinstance(v, tuple):
        return v
    raise KernelLaunchError(f"constexpr {name!r} must be a number, bool, dtype or tuple; got {type(v).__name__}")


def _key_value(v):
    if isinstance(v, np.generic):
        return (v.dtype.str, v.item())
    if isinstance(v, float):
        return ("f", v)
    try:
        hash(v)
        return (type(v).__name__, v)
    except TypeError:
        return repr(v)


def _out_overrides(out, names):
    if out is None:
        return {}
    if isinstance(out, dict):
        return {k: _shape_dtype(v) for k, v in out.items()}
    if len(names) == 1 and isinstance(out, tuple) and len(out) == 2:
        return {names[0]: _shape_dtype(out)}
    if isinstance(out, (list, tuple)) and len(out) == len(names):
        return {n: _shape_dtype(o) for n, o in zip(names, out)}
    raise KernelLaunchError(f"out= must be (shape, dtype) or one (shape, dtype) per output {names}")


def _shape_dtype(o):
    if not (isinstance(o, (tuple, list)) and len(o) == 2):
        raise KernelLaunchError(f"out= entries are (shape, dtype) pairs, got {o!r}")
    return o[0], o[1]


def _signature_from_ast(fdef, env) -> inspect.Signature:
    """A signature for a kernel given as text (a notebook cell): annotations evaluated
    in the cell's namespace, so ``mb.Out`` and ``mb.constexpr`` work as in a file."""
    import ast
    params = []
    args = fdef.args
    defaults = [None] * (len(args.args) - len(args.defaults)) + list(args.defaults)
    for a, d in zip(args.args, defaults):
        ann = inspect.Parameter.empty
        if a.annotation is not None:
            try:
                ann = eval(compile(ast.Expression(a.annotation), "<annotation>", "eval"), dict(env))
            except Exception:
                ann = ast.unparse(a.annotation)
        default = inspect.Parameter.empty
        if d is not None:
            try:
                default = eval(compile(ast.Expression(d), "<default>", "eval"), dict(env))
            except Exception as e:
                raise KernelTypeError(f"cannot evaluate the default of {a.arg!r}: {e}")
        params.append(inspect.Parameter(a.arg, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default,
                                        annotation=ann))
    return inspect.Signature(params)


class Func:
    """A device function (``@mb.func``): callable from kernels, specialised per argument
    types and printed as a real MSL/CUDA function::

        @mb.func
        def gelu(v):
            return 0.5 * v * (1.0 + metal.tanh(0.79788456 * (v + 0.044715 * v * v * v)))
    """

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self._parsed = None

    def parsed(self) -> F.ParsedFunction:
        if self._parsed is None:
            self._parsed = F.parse_function(self.fn)
        return self._parsed

    def __call__(self, *args, **kwargs):
        raise MetalbenchError(f"@mb.func {self.__name__} can only be called from a kernel",
                              hint="call it inside an @mb.kernel body")

    def __repr__(self) -> str:
        return f"<metalbench device function {self.__name__}>"


@user_facing
def kernel(fn=None, *, name: str | None = None):
    """Decorator: turn a DSL function into a :class:`Kernel`::

        @mb.kernel
        def add(x, y, out: mb.Out):
            i = thread_position_in_grid.x
            out[i] = x[i] + y[i]
    """
    if fn is None:
        return lambda f: Kernel(f, name=name)
    return Kernel(fn, name=name)


def func(fn):
    """Decorator: turn a Python function into a device function callable from kernels::

        @mb.func
        def square(v):
            return v * v
    """
    return Func(fn)
