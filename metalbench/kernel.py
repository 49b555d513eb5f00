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

import inspect
import math
from typing import Any

import numpy as np

from . import ir
from . import launch as L
from . import runtime
from . import types as T
from .errors import KernelLaunchError, KernelTypeError, MetalbenchError, trim_traceback, user_facing
from .frontend import python as F
from .frontend.python.structs import flatten_struct, is_struct
from .protocol import (_SIGNATURES, MISS, BoundLaunch, KernelBase, ThinCache, arg_signature, backend_token,
                       launch_guard, thin_gpu_call, unwrap)
from .thin import Front, GridLaunch, grid_launch, keyword_front, named, named_keywords
from .protocol import Specialization, unique_name  # noqa: F401  (their home before protocol.py)


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

    Launch it with ``k(*args, grid=..., threadgroup=256, backend="auto")`` (or
    ``k[grid, threadgroup](*args)``, see :meth:`__getitem__`).

    ``args`` are the kernel's non-output parameters in order (arrays: NumPy, MLX, or
    anything ``np.asarray`` takes; scalars for ``a: float`` / ``n: int``; constexpr
    values, also by name). Launch keywords:

    - ``grid``: the number of *threads* per dimension (Metal's ``dispatchThreads``:
      threads, not threadgroups), an int or a tuple of up to 3;
    - ``threadgroup``: threads per threadgroup (default ``min(256, grid)`` in x);
    - ``backend``: ``"auto"`` (``METALBENCH_BACKEND``, else metal on Apple silicon,
      cuda with an NVIDIA GPU, else sim), ``"metal"``, ``"cuda"`` or ``"sim"``;
    - ``out``: arrays to write into instead of fresh outputs;
    - ``init_value``: fill fresh outputs first (else they are uninitialised, and the
      simulator warns with ``mb.CoverageWarning`` about elements left unwritten);
    - ``checked=True``: the checked simulator (bounds, races, uninitialised reads,
      divergent barriers) raising ``mb.KernelCheckError``;
    - ``print_threads``: on ``sim``, the threads whose ``print`` lines show (linear
      positions or position tuples; without it at most ~100 lines);
    - ``stream``: an MLX stream or device.

    Returns the output (an ``mx.array``), or a tuple of them.

    >>> import numpy as np, metalbench as mb
    >>> k = mb.kernel(source='''
    ... def twice(x, out: mb.Out):
    ...     out[thread_position_in_grid.x] = 2 * x[thread_position_in_grid.x]
    ... ''')
    >>> np.asarray(k(np.arange(4, dtype=np.float32), grid=4, backend="sim")).tolist()
    [0.0, 2.0, 4.0, 6.0]
    """

    # ``k[grid, threadgroup]``'s launchers by configuration: a slot, the cheapest attribute
    # (one in the instance dict of a partial subclass is a generic lookup)
    __slots__ = ("_grid_launches",)

    def __init__(self, fn=None, *, source: str | None = None, env: dict | None = None,
                 first_line: int | None = None, source_name: str | None = None, name: str | None = None):
        self.fn = fn
        self._source_text = source
        self._env = env
        self._first_line = first_line
        self._source_name = source_name
        self._parsed = None
        self._cache: dict[tuple, Specialization] = {}
        self._thin_cache = ThinCache()
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
        # Parameter lists are fixed at decoration: computed once, not per launch.
        self._in_params = [p for p, (k, _) in zip(self.params, self.kinds) if k != "out"]
        self._out_params = [(p, extra) for p, (k, extra) in zip(self.params, self.kinds) if k == "out"]
        self._constexpr_names = {p.name for p, (k, _) in zip(self.params, self.kinds) if k == "constexpr"}
        # Scalar arguments that size arrays (threadgroup_array(n, float32)): the kernel
        # specialises on their values, as on a constexpr's.
        self._size_names = self._size_parameters()
        # Which positional arguments' values (not just types) the thin-path key must hold:
        # constexprs always; every argument when an output shape is computed from them.
        computed = any(callable(extra.shape) for _, extra in self._out_params if extra is not None)
        self._value_positions = tuple(i for i, p in enumerate(self._in_params)
                                      if computed or p.name in self._constexpr_names or p.name in self._size_names)
        self._set_front(self._generic_front())

    #: the last thin-path entry's ``guarded`` launch (``thin.thin_gpu_call``), or None;
    #: ``_guard_kw`` likewise for calls with keyword arguments (constexprs)
    _guard = None
    _guard_kw = None

    def __repr__(self) -> str:
        return f"<metalbench kernel {self.name}({self.signature_text()})>"

    def _size_parameters(self) -> set:
        cands = {p.name for p, (k, _) in zip(self.params, self.kinds) if k == "arg"}
        if not cands:
            return set()
        try:
            fdef = self.parsed().fdef
        except Exception:           # no source yet: the launch reports it
            return set()
        return F.size_parameters(fdef, cands)

    def parsed(self) -> F.ParsedFunction:
        if self._parsed is None:
            p = F.parse_function(self.fn, self._source_text, self._first_line, self._source_name)
            if self._env is not None:
                p.env = dict(self._env)
            self._parsed = p
        return self._parsed

    def user_source(self) -> tuple[str, str]:
        try:
            return self.parsed().source.text, "python"
        except Exception:       # a kernel whose source cannot be read (built at run time)
            return repr(self), "python"

    def declared_output_shapes(self) -> dict:
        return {p.name: getattr(extra, "shape", None) for p, extra in self._out_params}

    def sweepable_constants(self, launch: dict) -> dict:
        return {p.name: launch.get(p.name, None if p.default is inspect.Parameter.empty else p.default)
                for p in self._in_params if p.name in self._constexpr_names}

    def signature_text(self) -> str:
        outs = [p.name for p, _ in self._out_params]
        ins = ", ".join(p.name for p in self._in_params)
        return ins + (" -> " + ", ".join(outs) if outs else "")

    # -- binding -------------------------------------------------------------------------
    def bind(self, *args, grid=None, threadgroup=None, backend="auto", out=None, init_value=None,
             checked=None, stream=None, **kwargs) -> BoundLaunch:
        """Bind a call: arguments by parameter, their specs and the output specs, grid and
        threadgroup (optional: a binding without a grid can specialise, not launch).

        >>> b = saxpy.bind(2.0, x, y, grid=n, backend="sim")      # doctest: +SKIP
        >>> b.outputs                                              # doctest: +SKIP
        [('out', (1024,), float32)]
        """
        values, specs, out_specs = self._bind_values(args, kwargs, out)
        g, t = L.normalize(grid, threadgroup) if grid is not None else (None, None)
        given = {k: v for k, v in (("grid", grid), ("threadgroup", threadgroup)) if v is not None}
        be = self.resolve_backend(backend)
        if be != "sim" and any(s.wide for s in specs):
            _check_gpu_extents(values, specs, out_specs)
        return BoundLaunch(self, _spec_key(specs), values, out_specs, g, t, be,
                           L.checked_default(checked), init_value, stream, specs=specs, args=tuple(args),
                           kwargs=dict(kwargs), given=given)

    def _bind_values(self, args, kwargs, out=None):
        """(values by name, specs of every parameter, output specs) for a call."""
        in_params = self._in_params
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
                                             "init_value=, checked=, print_threads=")
            if k in values:
                raise KernelLaunchError(f"{self.name}() got multiple values for argument {k!r}")
            values[k] = v
        specs: list[F.ArgSpec] = []
        leaf_specs: list[F.ArgSpec] = []     # struct arguments' fields, after every parameter
        first_array = None
        for p, (kind, extra) in zip(self.params, self.kinds):
            if kind == "out":
                continue
            if p.name not in values:
                if p.default is not inspect.Parameter.empty:
                    values[p.name] = p.default
                else:
                    missing = [q.name for q in in_params
                               if q.name not in values and q.default is inspect.Parameter.empty]
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
                specs.append(F.ArgSpec(p.name, "buffer", t, max(1, len(shape)), wide=math.prod(shape) >= WIDE))
                if first_array is None:
                    first_array = (shape, t)
            elif is_struct(v) and p.name not in self._size_names:
                # a tuple, NamedTuple or dataclass of arrays and numbers: one parameter per field
                leaves: list = []
                specs.append(F.ArgSpec(p.name, "struct", None, 0, value=flatten_struct(p.name, v, leaves)))
                for leaf, lv in leaves:
                    values[leaf] = lv
                    leaf_specs.append(_field_spec(leaf, lv))
            else:
                try:
                    t = scalar_type_of(v, extra)
                except (TypeError, T.TypeError_):
                    raise KernelLaunchError(f"argument {p.name!r} is a {type(v).__name__}; kernels take arrays "
                                            "(mx.array or NumPy) and numbers",
                                            hint="convert it with np.asarray(...)") from None
                if p.name in self._size_names:
                    # it sizes an array: specialised on its value (dynamic threadgroup memory)
                    specs.append(F.ArgSpec(p.name, "constexpr", value=_size_value(v, t, p.name)))
                    continue
                specs.append(F.ArgSpec(p.name, "scalar", t, 0))
        out_specs = []
        out_overrides = _out_overrides(out, [p.name for p, _ in self._out_params])
        for p, spec in self._out_params:
            shape, dtype = out_overrides.get(p.name, (spec.shape, spec.dtype))
            if callable(shape):
                shape = call_with_named(shape, values, f"the shape of output {p.name!r}")
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
            if any(s >= WIDE for s in shape):
                raise KernelLaunchError(f"output {p.name!r} would have a dimension of {max(shape)} elements: MLX "
                                        "arrays keep their dimensions in 32-bit ints (below 2**31)",
                                        hint="give the output two dimensions, e.g. shape=(n // 65536, 65536)")
            out_specs.append((p.name, shape, t))
        # Outputs keep their place among the parameters for the front end.
        all_specs = []
        it = iter(specs)
        for p, (kind, _) in zip(self.params, self.kinds):
            if kind == "out":
                o = next(o for o in out_specs if o[0] == p.name)
                all_specs.append(F.ArgSpec(p.name, "buffer", o[2], len(o[1]), is_output=True,
                                           wide=math.prod(o[1]) >= WIDE))
            else:
                all_specs.append(next(it))
        return values, all_specs + leaf_specs, out_specs

    # -- specialising --------------------------------------------------------------------
    def _build(self, bound: BoundLaunch) -> Specialization:
        return self._specialization_for(bound.key, bound.specs)

    def _specialization_for(self, key, specs) -> Specialization:
        kir = F.translate_kernel(self.parsed(), specs, name=self.name)
        L.check_threadgroup_memory(ir.threadgroup_bytes(kir), _first_tg_span(kir))
        return Specialization(key, kir, specs, name=self.name)

    def _specialization(self, specs) -> Specialization:
        """The cached specialisation for front-end ``specs`` (the one cache of
        :meth:`specialization`, keyed the same way)."""
        key = _spec_key(specs)
        sp = self._cache.get(key)
        if sp is None:
            sp = self._cache[key] = self._specialization_for(key, specs)
        return sp

    @user_facing
    def specialize(self, *args, out=None, **kwargs) -> Specialization:
        """The specialisation (IR plus cached backend artifacts) for these arguments."""
        return self.specialization(self.bind(*args, out=out, **kwargs))

    @user_facing
    def ir(self, *args, out=None, **kwargs) -> ir.KernelIR:
        """The IR for these arguments (``print(ir.dump(k.ir(...)))`` to read it)."""
        return self.specialize(*args, out=out, **kwargs).ir

    @user_facing
    def source(self, *args, backend: str = "metal", out=None, **kwargs) -> str:
        """The generated source for these arguments: for ``metal``, exactly the header and
        body ``mx.fast.metal_kernel`` receives; likewise for ``cuda``."""
        return self.specialize(*args, out=out, **kwargs).source(backend)

    # -- launching -------------------------------------------------------------------------
    # A call goes to the front (thin.FastCall, called by vectorcall): the last entry's
    # check-and-launch (thin_gpu_call's ``front``), else _generic_front. What it does not take
    # goes to _miss (the other guard, then _call: the keyed path, else bind + launch). The
    # options (out=, init_value=, ...) are _call's: each keyword-only parameter costs every call.
    def _generic_front(self):
        miss = self._miss

        def __call__(*args, grid=None, threadgroup=None, backend="auto", **kwargs):
            try:    # user_facing, inlined (one metalbench frame in a traceback: this one)
                return miss(args, kwargs, grid, threadgroup, backend)
            except MetalbenchError as e:
                raise trim_traceback(e)
        return named(__call__, "Kernel.__call__")

    def __getitem__(self, config) -> GridLaunch:
        """``k[grid, threadgroup]`` (or ``k[grid]``): the kernel with its launch grid bound,
        ``k[n, 256](2.0, x, y)`` is ``k(2.0, x, y, grid=n, threadgroup=256)`` (``grid``
        counts threads, as ``grid=`` does; a 2-D grid alone is ``k[(w, h), None]``).
        Made once per configuration (:class:`thin.GridLaunch`, whose example runs one).

        >>> out = saxpy[x.size, 256](2.0, x, y)                         # doctest: +SKIP
        """
        try:
            return self._grid_launches[config]
        except (AttributeError, KeyError, TypeError):      # none yet, a new one, lists in it
            return grid_launch(self, config)

    def _miss(self, args, kwargs, grid, threadgroup, backend, tried=None):
        # ``tried``: the guard the calling front already was (0: no keywords, 1: keywords)
        try:
            if not kwargs:
                guard = self._guard
                if guard is not None and tried != 0:
                    r = guard(args, grid, threadgroup, backend)
                    if r is not MISS:
                        return r
            else:       # constexprs by keyword (and no options: those miss, see launch_guard)
                guard = self._guard_kw
                if guard is not None and tried != 1:
                    r = guard(args, kwargs, grid, threadgroup, backend)
                    if r is not MISS:
                        return r
            return self._call(args, grid, threadgroup, backend, **kwargs)
        except MetalbenchError as e:
            raise trim_traceback(e)

    def _call(self, args, grid, threadgroup, backend, /, out=None, init_value=None, checked=None, stream=None,
              print_threads=None, **kwargs):
        if print_threads is not None:   # prints of these threads only (simulator): see sim/printing.py
            from .sim.printing import print_threads as selected
            with selected(print_threads):
                return self._call(args, grid, threadgroup, backend, out=out, init_value=init_value,
                                  checked=checked, stream=stream, **kwargs)
        # The thin path: a call with the signature of an earlier one (array dtypes and
        # shapes, scalar types, constexpr values, grid, threadgroup, backend) goes
        # straight to that call's prepared launch. (The try block is user_facing inlined:
        # a decorator's extra call would cost more than the thin path itself.)
        try:
            key = None
            if out is None:
                key = (_SIGNATURES[len(args)](args), grid, threadgroup,
                       backend if backend != "auto" and backend is not None else backend_token(backend))
                if kwargs or self._value_positions:
                    key = self._thin_key_more(key, args, kwargs)
                last = self._thin_cache.last
                if key == last[0]:      # the same signature as the last call: no hashing
                    return last[1](args, kwargs, init_value, checked, stream)
                try:
                    fast = self._thin_cache.get(key)
                except TypeError:       # an unhashable grid (a list), an unknown argument type
                    fast = key = None
                if fast is not None:
                    self._thin_cache.last = (key, fast)
                    self._set_guard(fast, kwargs)
                    return fast(args, kwargs, init_value, checked, stream)
            bound = self.bind(*args, grid=grid, threadgroup=threadgroup, backend=backend, out=out,
                              init_value=init_value, checked=checked, stream=stream, **kwargs)
            outs = self.launch(bound)
            if key is not None and not any(s.kind == "struct" for s in bound.specs):
                # (a struct argument's fields are bound by name: no thin path)
                fast = self._thin_entry(bound, len(args), list(kwargs), (grid, threadgroup, backend))
                self._thin_cache.put(key, fast)
                self._set_guard(fast, kwargs)
            return unwrap(outs)
        except MetalbenchError as e:
            raise trim_traceback(e)   # metalbench's frames dropped (METALBENCH_TRACEBACK=full shows them)
    _call.__qualname__ = "Kernel.__call__"      # what a TypeError about its keywords names

    def _set_guard(self, fast, kwargs):
        # the entry's guard becomes the thinnest path of calls shaped like this one, and
        # its front the object's (without one: the general front)
        if kwargs:
            self._guard_kw = getattr(fast, "guarded", None)
        else:
            self._guard = getattr(fast, "guarded", None)
        front = getattr(fast, "front", None)
        self._set_front(front if front is not None else self._generic_front())
        self._grid_front = getattr(fast, "grid_front", None)      # (k[grid, threadgroup]'s launchers take it)

    def _thin_key_more(self, key, args, kwargs):
        # The thin-path key (which may hold an unhashable marker for an argument of another
        # type: the lookup raises TypeError and the call binds from scratch), extended with
        # the values that matter (constexprs) and the keyword arguments.
        if self._value_positions:
            # arrays by dtype and shape (what an Out(shape=lambda x: ...) reads), never by
            # value: comparing two keys must not compare arrays elementwise
            key += (tuple(arg_signature(args[i]) if runtime.is_array(args[i]) else args[i]
                          for i in self._value_positions if i < len(args)),)
        if kwargs:
            key += (tuple((k, arg_signature(v)) if runtime.is_array(v) else (k, arg_signature(v), v)
                          for k, v in kwargs.items()),)
        return key

    def _thin_entry(self, bound: BoundLaunch, nargs: int, kwnames: list, given=None):
        """The prepared launch ``f(args, kwargs, init_value, checked, stream)`` for calls
        shaped like ``bound`` (``nargs`` positional arguments, then ``kwnames`` keywords;
        ``given``: the call's grid, threadgroup, backend, for ``f.guarded``)."""
        sp = self.specialization(bound)
        names = [p.name for p in self._in_params[:nargs]] + kwnames
        fixed_names = [n for n in bound.values if n not in names]
        fixed = tuple(bound.values[n] for n in fixed_names)
        last = dict(grid=bound.grid, threadgroup=bound.threadgroup, backend=bound.backend)
        if bound.backend == "sim":
            outputs, g, t = bound.outputs, bound.grid, bound.threadgroup

            def sim_call(args, kwargs, init_value, checked, stream):
                values = dict(zip(fixed_names, fixed))
                values.update(zip(names, args))
                values.update(kwargs)
                outs, self.last_stats = sp.launch_sim(values, outputs, g, t, L.checked_default(checked), init_value)
                self.last_launch = last
                return unwrap(outs)
            return sim_call
        plan = sp.gpu_plan(bound, bound.backend)
        pos = {n: i for i, n in enumerate(names + fixed_names)}
        guard = None
        if given is not None:
            # the guard checks what the key holds: values at _value_positions (constexprs,
            # arguments of a computed output shape) and the keywords (by name, into k0..)
            g = launch_guard(bound.args[:nargs], *given, values=self._value_positions,
                             kwargs={n: bound.kwargs[n] for n in kwnames})
            where = [f"a{i}" for i in range(nargs)] + [f"k{j}" for j in range(len(kwnames))]
            params = "args, kwargs, grid, threadgroup, backend" if kwnames else "args, grid, threadgroup, backend"
            guard = g and (params, *g, where)
            if g:
                g[1]["miss"] = self._miss
        front = Front("*args, grid=None, threadgroup=None, backend='auto', **kwargs",
                      f"miss(args, kwargs, grid, threadgroup, backend, {1 if kwnames else 0})", "Kernel.__call__",
                      None if kwnames else "kwargs",
                      "launch, grid, threadgroup, *args, backend='auto', **kwargs", "launch._miss(args, kwargs, backend)")
        if g and kwnames and named_keywords(kwnames, g[1]):      # no kwargs dict per call
            fl, fenv = launch_guard(bound.args[:nargs], *given, values=self._value_positions,
                                    kwargs={n: bound.kwargs[n] for n in kwnames}, named=True)
            front = keyword_front(kwnames, fl, g[1], fenv)
        return thin_gpu_call(plan, [pos[n] for n in plan.names], [bound.values[n] for n in plan.names],
                             len(bound.outputs) == 1, self, last,
                             fixed if (kwnames or fixed_names) else None, guard, front)

    # -- derivatives (metalbench.autodiff) ---------------------------------------------------
    @user_facing
    def vjp(self, *args, cotangents=None, grid=None, threadgroup=None, backend="auto", **launch):
        """Vector-Jacobian product by the generated adjoint kernel: one entry per (non-output)
        argument (array for float arrays, 0-d array for float scalars, None otherwise).

        >>> gx, = square.vjp(x, cotangents=ct, grid=n, threadgroup=256)   # doctest: +SKIP
        """
        from .autodiff.vjp import vjp
        return vjp(self, *args, cotangents=cotangents, grid=grid, threadgroup=threadgroup, backend=backend,
                   **launch)

    @user_facing
    def mlx_function(self, grid=None, threadgroup=None, backend="auto", **launch):
        """The kernel as an ``mx.custom_function`` of its array arguments, with the generated
        VJP: ``mx.grad``/``mx.vjp``/``mx.value_and_grad`` work through it.

        >>> f = square.mlx_function(grid=lambda x: x.size)                 # doctest: +SKIP
        >>> mx.grad(lambda x: f(x).sum())(x)                               # doctest: +SKIP
        """
        from .autodiff.mlx import mlx_function
        return mlx_function(self, grid=grid, threadgroup=threadgroup, backend=backend, **launch)


def call_with_named(fn, values: dict, what: str):
    """``fn`` called with the entries of ``values`` its parameters name (all of them if it
    takes ``**kwargs``), as ``mb.Out(shape=lambda x, n: ...)`` expects.

    >>> call_with_named(lambda x: x + 1, {"x": 1, "BM": 32}, "a shape")
    2
    """
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):          # a builtin without a signature: give everything
        return fn(**values)
    if any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return fn(**values)
    unknown = [n for n, p in params.items() if n not in values and p.default is inspect.Parameter.empty
               and p.kind not in (inspect.Parameter.VAR_POSITIONAL,)]
    if unknown:
        raise KernelLaunchError(f"{what} is computed by a function of {', '.join(unknown)}, which "
                                f"{'is' if len(unknown) == 1 else 'are'} not among the kernel's arguments "
                                f"({', '.join(values)})",
                                hint="name the function's parameters after the kernel's arguments")
    return fn(**{n: values[n] for n in params if n in values})


WIDE = 2 ** 31      # buffers of this many elements or more: shapes and index arithmetic in 64 bits


def _check_gpu_extents(values, specs, out_specs):
    """MLX hands GPU kernels their shapes as 32-bit ints: a dimension of 2**31 or more
    cannot reach one (the simulator takes it)."""
    shapes = [(s.name, tuple(values[s.name].shape)) for s in specs if s.wide and s.name in values]
    for name, shape in shapes + [(n, sh) for n, sh, _ in out_specs]:
        big = [d for d in shape if d >= WIDE]
        if big:
            shown = name.replace("__", ".")
            raise KernelLaunchError(
                f"array {shown!r} has a dimension of {big[0]} elements: MLX passes shapes to GPU kernels as "
                "32-bit ints, so a dimension must stay below 2**31 (arrays of more elements are fine)",
                hint=f"reshape it, e.g. {shown}.reshape(-1, 65536), and index it in two dimensions")


def _field_spec(leaf: str, v) -> F.ArgSpec:
    """The spec of field ``leaf`` (``p__x``) of a struct argument: a buffer or a scalar."""
    shown = leaf.replace("__", ".")
    if runtime.is_array(v):
        shape = tuple(int(s) for s in v.shape)
        if math.prod(shape) == 0:
            raise KernelLaunchError(f"field {shown!r} is empty (shape {shape})",
                                    hint="kernels need at least one element; skip the launch for empty inputs")
        return F.ArgSpec(leaf, "buffer", _array_type(v, shown), max(1, len(shape)), wide=math.prod(shape) >= WIDE)
    try:
        return F.ArgSpec(leaf, "scalar", scalar_type_of(v), 0)
    except (TypeError, T.TypeError_):
        raise KernelLaunchError(f"field {shown!r} is a {type(v).__name__}; struct fields are arrays, numbers "
                                "or structs", hint="convert it with np.asarray(...)") from None


def _spec_key(specs) -> tuple:
    return tuple((s.kind, s.type.name if s.type else None, s.ndim, s.is_output, _key_value(s.value), s.wide,
                  s.zero_d) for s in specs)


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


def _size_value(v, t: T.ScalarType, name: str):
    """A scalar argument that sizes an array, as the constant the kernel is specialised on."""
    if not (t.is_int and isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))):
        raise KernelLaunchError(f"argument {name!r} sizes an array, so it must be an integer; got {v!r}")
    return np.dtype(t.np).type(v)


def _hashable_const(v, name):
    if isinstance(v, list):         # lists are accepted where tuples are (compile-time sequences)
        v = tuple(v)
    if isinstance(v, tuple):
        return tuple(_hashable_const(e, name) for e in v)
    if isinstance(v, (bool, int, float, str, np.generic)) or v is None:
        return v
    t = F.resolve_dtype(v)
    if t is not None:
        return v
    from . import dsl
    if isinstance(v, (dsl.DSLObject, Func)) or (callable(v) and not isinstance(v, type)):
        return v        # a matrix type, a builtin, an @mb.func: specialised on the object itself
    raise KernelLaunchError(f"constexpr {name!r} must be a number, bool, dtype, tuple or function; "
                            f"got {type(v).__name__}")


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

    def __init__(self, fn=None, *, source: str | None = None, env: dict | None = None):
        self.fn = fn
        self._source_text = source
        self._env = env
        self._parsed = None
        if fn is None:      # given as text (mb.func(source=...)): the name comes from its def
            self.__name__, self.__doc__ = self.parsed().name, None
        else:
            self.__name__ = fn.__name__
            self.__doc__ = fn.__doc__

    def parsed(self) -> F.ParsedFunction:
        if self._parsed is None:
            p = F.parse_function(self.fn, self._source_text, 1 if self._source_text else None,
                                 "device function source" if self._source_text else None)
            if self._env is not None:
                p.env = dict(self._env)
            self._parsed = p
        return self._parsed

    def __call__(self, *args, **kwargs):
        raise MetalbenchError(f"@mb.func {self.__name__} can only be called from a kernel",
                              hint="call it inside an @mb.kernel body")

    def __repr__(self) -> str:
        return f"<metalbench device function {self.__name__}>"


@user_facing
def kernel(fn=None, *, name: str | None = None, source: str | None = None, env: dict | None = None):
    """Decorator: turn a DSL function into a :class:`Kernel`::

        @mb.kernel
        def add(x, y, out: mb.Out):
            i = thread_position_in_grid.x
            out[i] = x[i] + y[i]

    Where Python keeps no source (``python - <<EOF``, ``exec`` of a string, the
    interactive prompt before 3.13), give the text; its names resolve in the caller's
    namespace (or ``env``), as a decorated function's would:

    >>> import metalbench as mb
    >>> from metalbench.dsl import *
    >>> k = mb.kernel(source='''
    ... def twice(x, out: mb.Out):
    ...     i = thread_position_in_grid.x
    ...     out[i] = 2.0 * x[i]
    ... ''')
    >>> k.name, [float(v) for v in k(np.arange(3, dtype=np.float32), grid=3, backend="sim")]
    ('twice', [0.0, 2.0, 4.0])
    """
    if isinstance(fn, str) and source is None:
        fn, source = None, fn
    if source is not None:
        from .sources import caller_namespace
        ns = caller_namespace() if env is None else dict(env)
        return Kernel(source=source, env=ns, first_line=1, source_name="kernel source", name=name)
    if fn is None:
        return lambda f: Kernel(f, name=name)
    return Kernel(fn, name=name)


def func(fn=None, *, source: str | None = None, env: dict | None = None):
    """Decorator: turn a Python function into a device function callable from kernels::

        @mb.func
        def square(v):
            return v * v

    ``mb.func(source="def square(v): return v * v")`` takes the text instead (see
    :func:`kernel`).
    """
    if isinstance(fn, str) and source is None:
        fn, source = None, fn
    if source is not None:
        from .sources import caller_namespace
        return Func(source=source, env=caller_namespace() if env is None else dict(env))
    return Func(fn)
