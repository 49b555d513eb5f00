"""``metal_kernel``: the drop-in for ``mx.fast.metal_kernel`` that runs everywhere.

Same arguments, same call, same result (a list of ``mx.array``), plus ``backend=``
and ``checked=``. On ``metal`` the user's text goes to MLX verbatim; on ``sim`` the
body is parsed into IR (``frontend/msl.py``) and simulated; on ``cuda`` the IR is
printed as CUDA for ``mx.fast.cuda_kernel``::

    >>> import mlx.core as mx
    >>> k = metal_kernel(name="twice", input_names=["inp"], output_names=["out"],
    ...                  source="uint i = thread_position_in_grid.x; out[i] = 2 * inp[i];")
    >>> a = mx.arange(4, dtype=mx.float32)
    >>> (out,) = k(inputs=[a], grid=(4, 1, 1), threadgroup=(4, 1, 1),
    ...            output_shapes=[a.shape], output_dtypes=[a.dtype], backend="sim")
    >>> out.tolist()
    [0.0, 2.0, 4.0, 6.0]
"""
from __future__ import annotations

import operator

import numpy as np

from . import ir
from . import launch
from . import runtime
from . import types as T
from .codegen.c_like import Rendered
from .mlx_signature import MAX_CONSTANT_ARRAY_SIZE
from .errors import KernelLaunchError, KernelTypeError, MetalbenchError, trim_traceback, user_facing
from .protocol import (_SIGNATURES, MISS, BoundLaunch, KernelBase, Specialization, ThinCache, _np_arg, backend_token,
                       launch_guard, thin_gpu_call)
from .thin import Front, named, with_named


class MetalKernelValueError(KernelLaunchError, ValueError):
    """A bad ``metal_kernel`` call; a ``ValueError`` too, as MLX raises."""


class MetalKernelTypeError(KernelLaunchError, TypeError):
    """A ``metal_kernel`` argument of the wrong kind; a ``TypeError`` too, as MLX raises."""


@user_facing
def metal_kernel(name, input_names, output_names, source, header="", ensure_row_contiguous=True,
                 atomic_outputs=False, compile_options=None) -> "MetalKernel":
    """A kernel from an MSL body, called exactly like ``mx.fast.metal_kernel``'s.

    >>> k = metal_kernel("myexp", ["inp"], ["out"],
    ...                  "uint i = thread_position_in_grid.x; out[i] = metal::exp(inp[i]);")
    >>> k.name
    'myexp'
    """
    input_names = list(input_names)
    output_names = list(output_names)
    if not output_names:
        raise MetalKernelValueError("[metal_kernel] Must specify at least one output.")
    for n in input_names + output_names:
        if not isinstance(n, str) or not n.isidentifier():
            raise MetalKernelValueError(f"[metal_kernel] {n!r} is not a valid parameter name.")
    dup = {n for n in input_names + output_names if (input_names + output_names).count(n) > 1}
    if dup:
        raise MetalKernelValueError(f"[metal_kernel] Duplicate parameter name(s): {sorted(dup)}.")
    _math_mode(compile_options)
    return MetalKernel(name, input_names, output_names, source, header, ensure_row_contiguous,
                       atomic_outputs, compile_options)


def _math_mode(compile_options) -> str:
    """MLX's ``compile_options``, validated as MLX does: a dict whose only key is
    ``math_mode``, one of "safe" (MLX's default), "relaxed", "fast"."""
    if compile_options is None:
        return "safe"
    if not isinstance(compile_options, dict):
        raise MetalKernelValueError("[metal_kernel] Expected `compile_options` to be a dict.")
    mode = "safe"
    for key, value in compile_options.items():
        if key != "math_mode":
            raise MetalKernelValueError(f"[metal_kernel] Unknown compile option `{key}`.")
        if value not in ("safe", "relaxed", "fast"):
            raise MetalKernelValueError("[metal_kernel] Expected math_mode to be 'safe', 'relaxed', or 'fast'.")
        mode = value
    return mode


class MetalKernel(KernelBase):
    """A kernel built by :func:`metal_kernel`. Call it with MLX's keyword arguments."""

    def __init__(self, name, input_names, output_names, source, header="",
                 ensure_row_contiguous=True, atomic_outputs=False, compile_options=None):
        self.name = name
        self.input_names = list(input_names)
        self.output_names = list(output_names)
        self.source = source
        self.header = header or ""
        self.ensure_row_contiguous = bool(ensure_row_contiguous)
        self.atomic_outputs = bool(atomic_outputs)
        self.compile_options = compile_options
        self._cache: dict = {}
        self._thin_cache = ThinCache()
        self._guard = None      # the last thin-path entry's ``guarded`` launch (thin.thin_gpu_call)
        self._guard_t = None    # likewise for calls whose only option is ``template=``
        self.last_stats = None
        self._set_front(self._generic_front())

    def __repr__(self):
        return (f"MetalKernel(name={self.name!r}, input_names={self.input_names}, "
                f"output_names={self.output_names})")

    def user_source(self) -> tuple[str, str]:
        text = self.source
        if self.header:
            text = "// header\n" + self.header.rstrip() + "\n\n// body\n" + text
        return text, "metal"

    def signature_text(self) -> str:
        return ", ".join(self.input_names) + " -> " + ", ".join(self.output_names)

    def sweepable_constants(self, launch: dict) -> dict:
        return template_ints(launch)

    def set_constant(self, launch: dict, name: str, value) -> None:
        # Template values live in the template list (MLX's call has no other place).
        tmpl = dict(_template_items(launch.get("template")))
        tmpl[name] = value
        launch["template"] = list(tmpl.items())

    # ------------------------------------------------------------------ call
    # A call goes to the front (thin.FastCall): the last thin-path entry's generated
    # check-and-launch, or without one _generic_front; what it does not take goes to
    # _miss (the other guard: calls with template= keep their own), then _call. The
    # options are _call's, since each keyword-only parameter of the front costs every call.
    def _generic_front(self):
        miss = self._miss

        def __call__(*, inputs, output_shapes, output_dtypes, grid, threadgroup, backend="auto", **options):
            """Launch; returns a list of ``mx.array`` (one per output), as MLX does.

            ``backend``: "auto" (metal, else cuda, else sim; ``METALBENCH_BACKEND``
            overrides), "metal", "cuda" or "sim". ``checked`` (sim only): bounds, race
            and uninitialised-read checks. ``print_threads`` (sim only): the threads whose
            ``printf``/``os_log`` lines are printed (linear positions or position tuples).
            The other options are MLX's: ``template``, ``init_value``, ``verbose``, ``stream``.
            """
            try:    # user_facing, inlined (one metalbench frame in a traceback: this one)
                return miss(inputs, output_shapes, output_dtypes, grid, threadgroup, backend, options)
            except MetalbenchError as e:
                raise trim_traceback(e)
        return named(__call__, "MetalKernel.__call__")

    def _miss(self, inputs, output_shapes, output_dtypes, grid, threadgroup, backend, options, tried=None):
        # ``tried``: the kind of guard the calling front already was (0: no options, 1: template=)
        try:
            if not options:
                guard = self._guard
                if guard is not None and tried != 0:
                    r = guard(inputs, output_shapes, output_dtypes, grid, threadgroup, backend)
                    if r is not MISS:
                        return r
            else:       # template= only (MLX's usual call): the guard compares the options
                guard = self._guard_t
                if guard is not None and tried != 1:
                    r = guard(inputs, output_shapes, output_dtypes, grid, threadgroup, backend, options)
                    if r is not MISS:
                        return r
            return self._call(inputs=inputs, output_shapes=output_shapes, output_dtypes=output_dtypes, grid=grid,
                              threadgroup=threadgroup, backend=backend, **options)
        except MetalbenchError as e:
            raise trim_traceback(e)

    def _call(self, *, inputs, output_shapes, output_dtypes, grid, threadgroup, template=None,
              init_value=None, verbose=False, stream=None, backend="auto", checked=None, print_threads=None):
        if print_threads is not None:
            from .sim.printing import print_threads as selected
            with selected(print_threads):
                return self._call(inputs=inputs, output_shapes=output_shapes, output_dtypes=output_dtypes,
                                  grid=grid, threadgroup=threadgroup, template=template, init_value=init_value,
                                  verbose=verbose, stream=stream, backend=backend, checked=checked)
        try:    # user_facing, inlined: a decorator's extra call costs more than the thin path
            key = None
            if not verbose:
                # The thin path: the same input dtypes and shapes, outputs, grid, threadgroup,
                # template and backend as an earlier call reuse its prepared MLX call.
                key = (_SIGNATURES[len(inputs)](inputs), tuple(output_shapes), tuple(output_dtypes), grid,
                       threadgroup, tuple(template) if template else None,
                       backend if backend != "auto" and backend is not None else backend_token(backend))
                last = self._thin_cache.last
                if key == last[0]:      # the same signature as the last call: no hashing
                    return last[1](inputs, None, init_value, checked, stream)
                try:
                    fast = self._thin_cache.get(key)
                except TypeError:           # shapes as lists, or other unhashable arguments
                    try:
                        key = (key[0], tuple(map(tuple, output_shapes))) + key[2:]
                        fast = self._thin_cache.get(key)
                    except TypeError:       # arguments of other types: bind
                        fast = key = None
                if fast is not None:
                    self._thin_cache.last = (key, fast)
                    self._set_guard(fast, template)
                    return fast(inputs, None, init_value, checked, stream)
            bound = self.bind(inputs=inputs, output_shapes=output_shapes, output_dtypes=output_dtypes, grid=grid,
                              threadgroup=threadgroup, template=template, init_value=init_value, stream=stream,
                              backend=backend, checked=checked, _mlx_call=True)
            if verbose:
                print(self.full_source(bound.values.values(), output_dtypes, template))
            outs = self.launch(bound)
            if key is not None:
                fast = self._thin_entry(bound, (inputs, output_shapes, output_dtypes, grid, threadgroup, template,
                                                backend))
                self._thin_cache.put(key, fast)
                self._set_guard(fast, template)
            return list(outs)
        except MetalbenchError as e:
            raise trim_traceback(e)   # metalbench's frames dropped (METALBENCH_TRACEBACK=full shows them)
    _call.__qualname__ = "MetalKernel.__call__"     # what a TypeError about its keywords names

    def _set_guard(self, fast, template):
        # the entry's guard becomes the thinnest path of calls shaped like this one, and
        # its front the object's (without one: the general front)
        if template:
            self._guard_t = getattr(fast, "guarded", None)
        else:
            self._guard = getattr(fast, "guarded", None)
        front = getattr(fast, "front", None)
        self._set_front(front if front is not None else self._generic_front())

    def _thin_entry(self, bound: BoundLaunch, given=None):
        sp = self.specialization(bound)
        last = dict(grid=bound.grid, threadgroup=bound.threadgroup, backend=bound.backend)
        names = list(self.input_names)
        if bound.backend == "sim":
            def sim_call(inputs, kwargs, init_value, checked, stream):
                outs, self.last_stats = sp.launch_sim(dict(zip(names, inputs)), bound.outputs, bound.grid,
                                                      bound.threadgroup, launch.checked_default(checked), init_value)
                self.last_launch = last
                return outs
            return sim_call
        plan = sp.gpu_plan(bound, bound.backend)
        pos = {n: i for i, n in enumerate(names)}
        guard = front = None
        # the call's own arguments: f.guarded checks a later call against them (shapes given
        # as tuples: a list comparison then compares plain values). With a template, the
        # call that reaches the guard gives exactly {"template": <equal list>} as options
        # (template values: ints, bools, Dtypes -- compared by value).
        if given is not None and all(type(s) is tuple for s in given[1]):
            inputs, shapes, dtypes, grid, tg, template, backend = given
            conds = ["output_shapes == g_shapes", "output_dtypes == g_dtypes"]
            genv = {"g_shapes": list(shapes), "g_dtypes": list(dtypes)}
            params = "inputs, output_shapes, output_dtypes, grid, threadgroup, backend"
            if template:
                conds.append("options == g_options")
                genv["g_options"] = {"template": template}
                params += ", options"
            g = launch_guard(inputs, grid, tg, backend, "inputs", conds, genv)
            guard = g and (params, *g, len(names))
            if g:
                g[1]["miss"] = self._miss
                head = "*, inputs, output_shapes, output_dtypes, grid, threadgroup, backend='auto'"
                front = Front(head + ", **options",
                              "miss(inputs, output_shapes, output_dtypes, grid, threadgroup, backend, options, "
                              f"{1 if template else 0})", "MetalKernel.__call__", None if template else "options")
                if template:
                    # template= as the front's own parameter: no options dict per call
                    genv["g_template"] = template
                    conds[-1] = "template == g_template"
                    fl, fenv = launch_guard(inputs, grid, tg, backend, "inputs", conds, genv)
                    g[1].update(fenv, kwd=with_named)
                    front = Front(head + ", template=MISS, **options",
                                  "miss(inputs, output_shapes, output_dtypes, grid, threadgroup, backend, "
                                  "kwd(options, template=template), 1)", "MetalKernel.__call__", "options",
                                  lines=fl)
        return thin_gpu_call(plan, [pos[n] for n in plan.names], [bound.values[n] for n in plan.names], None,
                             self, last, None, guard, front)

    def bind(self, *args, inputs=None, output_shapes=None, output_dtypes=None, grid=None, threadgroup=None,
             template=None, init_value=None, verbose=False, stream=None, backend="auto", checked=None,
             _mlx_call=False, **template_values) -> BoundLaunch:
        """Bind MLX's call arguments (inputs also positionally; extra keywords are template
        arguments, as sweeps over template values pass them).

        >>> import numpy as np
        >>> k = metal_kernel("cp", ["x"], ["y"], "y[0] = x[0];")
        >>> b = k.bind(np.zeros(2, np.float32), output_shapes=[(2,)], output_dtypes=[np.float32])
        >>> b.values["x"].shape, b.outputs[0][1], b.grid
        ((2,), (2,), None)
        """
        if args:
            if inputs is not None:
                raise MetalKernelValueError("give a metal_kernel's inputs either positionally or as inputs=[...], "
                                            "not both")
            inputs = args
        inputs = list(inputs if inputs is not None else [])
        if len(inputs) != len(self.input_names):
            raise MetalKernelValueError(
                f"[metal_kernel] Expected `inputs` to have size {len(self.input_names)} "
                f"but got size {len(inputs)}.")
        if output_shapes is None or output_dtypes is None:
            first = next((a for a in inputs if runtime.is_array(a)), None)
            if first is None:
                raise MetalKernelValueError("[metal_kernel] output_shapes= and output_dtypes= are required",
                                            hint="pass output_shapes=[(n,)], output_dtypes=[mx.float32]")
            output_shapes = output_shapes or [tuple(first.shape)] * len(self.output_names)
            output_dtypes = output_dtypes or [first.dtype] * len(self.output_names)
        output_shapes = _output_shapes(output_shapes)
        output_dtypes = list(output_dtypes)
        if len(output_shapes) != len(self.output_names):
            raise MetalKernelValueError(
                f"[metal_kernel] Expected `output_shapes` to have size {len(self.output_names)} "
                f"but got size {len(output_shapes)}.")
        if len(output_dtypes) != len(self.output_names):
            raise MetalKernelValueError(
                f"[metal_kernel] Expected `output_dtypes` to have size {len(self.output_names)} "
                f"but got size {len(output_dtypes)}.")
        given = {}
        grid3 = tg3 = None
        if grid is not None:
            if threadgroup is None and not _mlx_call:
                threadgroup = launch.normalize(grid, None)[1]     # MLX requires one; the DSL default
            grid3, tg3 = _launch_dims(grid, threadgroup)
            given = {"grid": grid, "threadgroup": threadgroup}
        raw = dict(_template_items(template))
        raw.update(template_values)
        tmpl = _template(list(raw.items()))
        if template is not None or template_values:
            given["template"] = list(raw.items())
        facts = [(n, *_input_fact(x, n)) for n, x in zip(self.input_names, inputs)]
        out_types = [_dtype(d) for d in output_dtypes]
        tk = tuple((k, v.name if isinstance(v, T.ScalarType) else (type(v).__name__, v)) for k, v in tmpl)
        # MLX binds an input array of fewer than 8 elements in the constant address space
        # (mlx_signature.InputSpec.space): a helper taking 'constant const float*' accepts it
        small = tuple(n for (n, _, nd), x in zip(facts, inputs)
                      if nd > 0 and _size(x) < MAX_CONSTANT_ARRAY_SIZE)
        key = (tuple((t.name, nd) for _, t, nd in facts), tuple((t.name, len(s)) for s, t in zip(output_shapes, out_types)),
               tk, self.ensure_row_contiguous, small)
        doubles = backend == "metal"         # refuse before checking the device is there
        backend = self.resolve_backend(backend)
        if doubles or backend == "metal":
            _no_double([(n, t) for n, t, _ in facts] + list(zip(self.output_names, out_types))
                       + [(k, v) for k, v in tmpl if isinstance(v, T.ScalarType)])
        return BoundLaunch(self, key, dict(zip(self.input_names, inputs)),
                           [(n, s, t) for n, s, t in zip(self.output_names, output_shapes, out_types)],
                           grid3, tg3, backend, launch.checked_default(checked), init_value,
                           stream, specs=facts, template=tuple(tmpl), args=tuple(inputs), given=given,
                           data=small)

    def reference_args(self, bound: BoundLaunch) -> tuple[list, dict]:
        return [_np_arg(a) for a in bound.args], {}

    def launch_config(self, bound: BoundLaunch) -> dict:
        return dict(bound.given)

    # ------------------------------------------------------------------ specialising
    def _build(self, bound: BoundLaunch) -> Specialization:
        facts = bound.specs
        outs = [(n, t, len(s)) for n, s, t in bound.outputs]
        tmpl = list(bound.template)

        def build_ir():
            from .frontend.msl import translate_kernel
            kir = translate_kernel(self.name, self.source, self.header, inputs=facts, outputs=outs,
                                   scalars=[n for n, _, nd in facts if nd == 0], template=tmpl,
                                   constant_inputs=bound.data or (),
                                   atomic_outputs=self.atomic_outputs,
                                   math_mode=_math_mode(self.compile_options))
            kir.read_guard = "rows" if self.ensure_row_contiguous else "strided"   # codegen/cuda_guard.py
            launch.check_threadgroup_memory(ir.threadgroup_bytes(kir))
            return kir
        verbatim = Rendered(name=self.name, body=self.source, header=self.header,
                            input_names=list(self.input_names), output_names=list(self.output_names),
                            atomic_outputs=self.atomic_outputs,
                            input_types=[(t, nd) for _, t, nd in facts], output_types=[t for _, t, _ in outs])
        opts = {"compile_options": self.compile_options} if self.compile_options is not None else {}
        from .frontend.msl.printing import has_log_calls
        if has_log_calls(self.source + "\n" + self.header):
            verbatim = None     # prints are compiled out on metal: MLX gets the printed kernel
        return Specialization(bound.key, build=build_ir, name=self.name, output_names=self.output_names,
                              verbatim=verbatim, mlx_options=opts,
                              verbatim_inputs=[(n, "scalar" if nd == 0 else "buffer", t) for n, t, nd in facts],
                              ensure_row_contiguous=self.ensure_row_contiguous)

    # ------------------------------------------------------------------ IR
    @user_facing
    def ir(self, inputs, output_shapes, output_dtypes, template=None) -> ir.KernelIR:
        """The IR of one specialisation (what the simulator and the CUDA printer run).

        >>> import mlx.core as mx
        >>> k = metal_kernel("cp", ["x"], ["y"], "y[0] = x[0];")
        >>> print(ir.dump(k.ir([mx.zeros(2)], [(2,)], [mx.float32]).body))
        y[0] = x[0]
        """
        b = self.bind(inputs=inputs, output_shapes=output_shapes, output_dtypes=output_dtypes, template=template)
        return self.specialization(b).ir

    # ------------------------------------------------------------------ source
    @user_facing
    def full_source(self, inputs, output_dtypes, template=None) -> str:
        """The complete kernel source MLX compiles for these inputs (what ``verbose=True``
        prints), via :mod:`metalbench.mlx_signature`."""
        inputs = list(inputs)
        tmpl = _template(template)
        from . import mlx_signature as ms
        ins = []
        for n, a in zip(self.input_names, inputs):
            t, nd = _input_fact(a, n)
            ins.append(ms.InputSpec(n, t, nd, _size(a)))
        outs = [ms.OutputSpec(n, _dtype(d)) for n, d in zip(self.output_names, output_dtypes)]
        text = ms.full_source(name=self.name, body=self.source, header=self.header, inputs=ins,
                              outputs=outs, template=tmpl or None,
                              atomic_outputs=self.atomic_outputs)
        return f"Generated source code for `{self.name}`:\n```\n{text}\n```"


# ----------------------------------------------------------------------------- helpers

def _output_shapes(shapes) -> list[tuple]:
    """MLX's ``output_shapes``: a list of shapes of ints (``operator.index``, as MLX's int
    parameters take them: a 0-d integer array is a size; a float, a float array or a
    1-element vector is not, where ``int()`` truncated silently).

    >>> _output_shapes([(2, 3), [4]])
    [(2, 3), (4,)]
    """
    out = []
    for s in shapes:
        try:
            out.append(tuple(operator.index(d) for d in s))
        except TypeError as e:
            raise MetalKernelValueError(f"[metal_kernel] output_shapes must be a list of shapes of ints, got {s!r} "
                                        f"in {shapes!r}: {e}", hint="sizes are ints: an integer division is //") from None
    return out


def _launch_dims(grid, threadgroup):
    try:
        grid3, tg3 = launch.normalize(grid, threadgroup)
    except KernelLaunchError as e:
        if "threads; at most" in e.message:
            t = launch._dims(threadgroup, "threadgroup")
            raise MetalKernelValueError(
                f"Thread group size ({t[0] * t[1] * t[2]}) is greater than  the maximum allowed "
                f"threads per threadgroup ({launch.MAX_THREADS_PER_THREADGROUP}).",
                hint=e.hint) from None
        raise MetalKernelValueError(e.message, hint=e.hint) from None
    # Metal dispatches threadgroups of min(threadgroup, grid) per dimension (as MLX does)
    tg3 = tuple(min(t, g) for t, g in zip(tg3, grid3))
    return grid3, tg3


def _template(template):
    if template is None:
        return []
    if isinstance(template, dict):
        template = list(template.items())
    out = []
    for item in template:
        if not (isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str)):
            raise MetalKernelTypeError(
                f"[metal_kernel] template entries are (name, value) pairs, got {item!r}")
        k, v = item
        if isinstance(v, (bool, np.bool_)):
            out.append((k, bool(v)))
        elif isinstance(v, (int, np.integer)):
            out.append((k, int(v)))
        elif isinstance(v, str) or v is float:
            # as MLX: a dtype object, not a name ("float" would be NumPy's float64)
            raise MetalKernelTypeError(f"[metal_kernel] template argument {k}={v!r} must be a Dtype "
                                       "(mx.float32 ...), an int or a bool")
        else:
            try:
                out.append((k, _dtype(v)))
            except (MetalKernelTypeError, T.TypeError_) as e:
                raise MetalKernelTypeError(
                    f"[metal_kernel] template argument {k}={v!r} must be a Dtype, an int or a "
                    f"bool ({e})") from None
    return out


def _dtype(d) -> T.ScalarType:
    if isinstance(d, T.ScalarType):
        return d
    try:
        if type(d).__module__.startswith("mlx"):
            return T.from_mlx(d, complex_ok=True)
        return T.from_numpy(d, complex_ok=True)
    except (T.TypeError_, TypeError) as e:
        raise MetalKernelTypeError(f"[metal_kernel] unsupported dtype {d!r}: {e}") from None


def _no_double(named_types):
    """float64 inputs, outputs and template types are errors on the metal backend."""
    for name, t in named_types:
        if t == T.float64:
            raise MetalKernelTypeError(f"[metal_kernel] '{name}' is float64, but {T.NO_DOUBLE}",
                                       hint="float64 runs exactly on backend='sim' and backend='cuda'")


def _input_fact(x, name) -> tuple[T.ScalarType, int]:
    """(type, ndim) of an input without touching its data: MLX arrays keep their dtype,
    Python scalars follow MLX's rule (bool, int32, float32), NumPy scalars become 0-d
    int32/float32 (bool kept), NumPy arrays keep their dtype."""
    if isinstance(x, (bool, np.bool_)):
        return T.bool_, 0
    if isinstance(x, (int, np.integer)):
        return T.int32, 0
    if isinstance(x, (float, np.floating)):
        return T.float32, 0
    if runtime.is_array(x):
        try:
            t = T.from_mlx(x.dtype, True) if type(x).__module__.startswith("mlx") else T.from_numpy(x.dtype, True)
        except T.TypeError_ as e:
            raise MetalKernelTypeError(f"[metal_kernel] input '{name}': {e}") from None
        return t, len(x.shape)
    raise MetalKernelTypeError(f"[metal_kernel] inputs must be arrays or scalars, got {type(x).__name__}")


def template_ints(launch: dict) -> dict:
    """The int template arguments of ``launch["template"]`` (what a sweep can vary).

    >>> template_ints({"template": [("T", "float32"), ("TILE", 8)]})
    {'TILE': 8}
    """
    return {name: v for name, v in _template_items(launch.get("template"))
            if isinstance(v, int) and not isinstance(v, bool)}


def _size(x) -> int:
    return int(getattr(x, "size", 1))


def _template_items(t):
    if t is None:
        return []
    if isinstance(t, dict):
        return list(t.items())
    return [tuple(x) for x in t]


_ = KernelTypeError  # re-exported error kinds users may catch
