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

import numpy as np

from . import ir
from . import launch
from . import runtime
from . import types as T
from .errors import KernelLaunchError, KernelTypeError, user_facing
from .kernel import KernelBase, unique_name


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
    return MetalKernel(name, input_names, output_names, source, header, ensure_row_contiguous,
                       atomic_outputs, compile_options)


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
        self._mlx_kernel = None
        self._sim_cache: dict = {}
        self._cuda_cache: dict = {}
        self.last_stats = None

    def __repr__(self):
        return (f"MetalKernel(name={self.name!r}, input_names={self.input_names}, "
                f"output_names={self.output_names})")

    # ------------------------------------------------------------------ call
    @user_facing
    def __call__(self, *, inputs, output_shapes, output_dtypes, grid, threadgroup, template=None,
                 init_value=None, verbose=False, stream=None, backend="auto", checked=None):
        """Launch; returns a list of ``mx.array`` (one per output), as MLX does.

        ``backend``: "auto" (metal, else cuda, else sim; ``METALBENCH_BACKEND``
        overrides), "metal", "cuda" or "sim". ``checked`` (sim only): bounds, race
        and uninitialised-read checks.
        """
        inputs = list(inputs)
        if len(inputs) != len(self.input_names):
            raise MetalKernelValueError(
                f"[metal_kernel] Expected `inputs` to have size {len(self.input_names)} "
                f"but got size {len(inputs)}.")
        output_shapes = [tuple(int(d) for d in s) for s in output_shapes]
        output_dtypes = list(output_dtypes)
        if len(output_shapes) != len(self.output_names):
            raise MetalKernelValueError(
                f"[metal_kernel] Expected `output_shapes` to have size {len(self.output_names)} "
                f"but got size {len(output_shapes)}.")
        if len(output_dtypes) != len(self.output_names):
            raise MetalKernelValueError(
                f"[metal_kernel] Expected `output_dtypes` to have size {len(self.output_names)} "
                f"but got size {len(output_dtypes)}.")
        grid3, tg3 = _launch_dims(grid, threadgroup)
        tmpl = _template(template)
        backend = launch.resolve_backend(backend)
        if verbose:
            print(self.full_source(inputs, output_dtypes, template))
        if backend == "metal":
            return self._run_metal(inputs, output_shapes, output_dtypes, grid3, tg3, template,
                                   init_value, stream)
        arrays = [_as_input(x) for x in inputs]
        out_types = [_dtype(d) for d in output_dtypes]
        if backend == "cuda":
            return self._run_cuda(arrays, output_shapes, out_types, grid3, tg3, tmpl, init_value,
                                  stream)
        return self._run_sim(arrays, output_shapes, out_types, grid3, tg3, tmpl, init_value,
                             launch.checked_default(checked))

    # ------------------------------------------------------------------ metal
    def _run_metal(self, inputs, output_shapes, output_dtypes, grid3, tg3, template, init_value,
                   stream):
        import mlx.core as mx
        if self._mlx_kernel is None:
            kw = {}
            if self.compile_options is not None:
                kw["compile_options"] = self.compile_options
            self._mlx_kernel = mx.fast.metal_kernel(
                name=self.name, input_names=self.input_names, output_names=self.output_names,
                source=self.source, header=self.header,
                ensure_row_contiguous=self.ensure_row_contiguous,
                atomic_outputs=self.atomic_outputs, **kw)
        inputs = [runtime.to_mlx(x) if isinstance(x, np.ndarray) else x for x in inputs]
        return self._mlx_kernel(inputs=inputs, template=template, grid=grid3, threadgroup=tg3,
                                output_shapes=output_shapes, output_dtypes=output_dtypes,
                                init_value=init_value, verbose=False, stream=stream)

    # ------------------------------------------------------------------ IR
    @user_facing
    def ir(self, inputs, output_shapes, output_dtypes, template=None) -> ir.KernelIR:
        """The IR of one specialisation (what the simulator and the CUDA printer run).

        >>> import mlx.core as mx
        >>> k = metal_kernel("cp", ["x"], ["y"], "y[0] = x[0];")
        >>> print(ir.dump(k.ir([mx.zeros(2)], [(2,)], [mx.float32]).body))
        y[0] = x[0]
        """
        arrays = [_as_input(x) for x in inputs]
        return self._specialise(arrays, [tuple(s) for s in output_shapes],
                                [_dtype(d) for d in output_dtypes], _template(template))[0]

    def _spec_key(self, arrays, output_shapes, out_types, tmpl):
        ins = tuple((a.dtype.str, a.ndim) for a in arrays)
        outs = tuple((t.name, len(s)) for s, t in zip(output_shapes, out_types))
        tk = tuple((k, v.name if isinstance(v, T.ScalarType) else (type(v).__name__, v))
                   for k, v in tmpl)
        return ins, outs, tk, self.ensure_row_contiguous

    def _specialise(self, arrays, output_shapes, out_types, tmpl):
        key = self._spec_key(arrays, output_shapes, out_types, tmpl)
        hit = self._sim_cache.get(key)
        if hit is not None:
            return hit
        from .frontend.msl import translate_kernel
        ins = []
        scalars = []
        for n, a in zip(self.input_names, arrays):
            try:
                t = T.from_numpy(a.dtype)
            except T.TypeError_ as e:
                raise MetalKernelTypeError(f"[metal_kernel] input '{n}': {e}") from None
            ins.append((n, t, a.ndim))
            if a.ndim == 0:
                scalars.append(n)
        outs = [(n, t, len(s)) for n, t, s in zip(self.output_names, out_types, output_shapes)]
        kir = translate_kernel(self.name, self.source, self.header, inputs=ins, outputs=outs,
                               scalars=scalars, template=tmpl, atomic_outputs=self.atomic_outputs)
        launch.check_threadgroup_memory(ir.threadgroup_bytes(kir))
        entry = [kir, None]
        self._sim_cache[key] = entry
        return entry

    # ------------------------------------------------------------------ sim
    def _run_sim(self, arrays, output_shapes, out_types, grid3, tg3, tmpl, init_value, checked):
        from . import sim
        entry = self._specialise(arrays, output_shapes, out_types, tmpl)
        kir = entry[0]
        if entry[1] is None:
            entry[1] = sim.compile_kernel(kir)
        sk = entry[1]
        args = {}
        for p, a in zip(kir.inputs, arrays):
            if p.kind == "scalar":
                args[p.name] = a.astype(p.type.np).reshape(())[()]
            else:
                args[p.name] = self._sim_buffer(a, sim.Buffer)
        outs = []
        for p, shape, t in zip(kir.outputs, output_shapes, out_types):
            o = runtime.new_output(shape, t, init_value)
            outs.append(o)
            args[p.name] = runtime.sim_buffer(o, sim.Buffer)
        self.last_stats = sk.run(args, grid3, tg3, checked=checked)
        return [runtime.to_mlx(o) for o in outs]

    def _sim_buffer(self, a: np.ndarray, Buffer):
        if self.ensure_row_contiguous or a.flags.c_contiguous or any(s < 0 for s in a.strides) \
                or any(s % a.itemsize for s in a.strides):
            return runtime.sim_buffer(np.ascontiguousarray(a), Buffer)
        # MLX hands a strided input over as is: the kernel sees the storage and the real
        # strides (x_strides), so reproduce exactly that.
        st = tuple(s // a.itemsize for s in a.strides)
        span = 1 + sum((n - 1) * s for n, s in zip(a.shape, st)) if a.size else 1
        storage = np.lib.stride_tricks.as_strided(a, shape=(span,), strides=(a.itemsize,))
        return Buffer(np.array(storage), tuple(a.shape), st)

    # ------------------------------------------------------------------ cuda
    def _run_cuda(self, arrays, output_shapes, out_types, grid3, tg3, tmpl, init_value, stream):
        import mlx.core as mx
        from .codegen import cuda as cg
        entry = self._specialise(arrays, output_shapes, out_types, tmpl)
        kir = entry[0]
        # Grids of whole threadgroups get the printer's variant without the launch guard.
        exact = all(g % t == 0 for g, t in zip(grid3, tg3))
        key = (self._spec_key(arrays, output_shapes, out_types, tmpl), exact)
        cached = self._cuda_cache.get(key)
        if cached is None:
            r = cg.render(kir, exact_grid=exact)
            r.name = unique_name(r)   # templates are substituted in the IR, not passed to MLX
            ck = mx.fast.cuda_kernel(name=r.name, input_names=list(r.input_names),
                                     output_names=list(r.output_names), source=r.body,
                                     header=r.header,
                                     ensure_row_contiguous=self.ensure_row_contiguous)
            cached = self._cuda_cache[key] = (ck, r)
        ck, r = cached
        by_name = dict(zip(self.input_names, arrays))
        ins = [runtime.to_mlx(by_name[p.name]) for p in kir.inputs]
        if r.extra_inputs:
            # The launch guard needs the grid (MLX's CUDA launch rounds up to whole blocks).
            ins.extend(r.extra_inputs(grid3, tg3, list(output_shapes)))
        return ck(inputs=ins, grid=grid3, threadgroup=tg3, output_shapes=output_shapes,
                  output_dtypes=[T.to_mlx(t) for t in out_types], init_value=init_value,
                  stream=stream)

    # ------------------------------------------------------------------ source
    @user_facing
    def full_source(self, inputs, output_dtypes, template=None) -> str:
        """The complete kernel source MLX compiles for these inputs (what ``verbose=True``
        prints), via :mod:`metalbench.mlx_signature`."""
        arrays = [_as_input(x) for x in inputs]
        tmpl = _template(template)
        try:
            from . import mlx_signature as ms
        except ImportError:
            return _fallback_source(self, inputs, output_dtypes, template)
        ins = [ms.InputSpec(n, T.from_numpy(a.dtype), a.ndim, int(a.size))
               for n, a in zip(self.input_names, arrays)]
        outs = [ms.OutputSpec(n, _dtype(d)) for n, d in zip(self.output_names, output_dtypes)]
        text = ms.full_source(name=self.name, body=self.source, header=self.header, inputs=ins,
                              outputs=outs, template=tmpl or None,
                              atomic_outputs=self.atomic_outputs)
        return f"Generated source code for `{self.name}`:\n```\n{text}\n```"


# ----------------------------------------------------------------------------- helpers

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
            return T.from_mlx(d)
        return T.from_numpy(d)
    except (T.TypeError_, TypeError) as e:
        raise MetalKernelTypeError(f"[metal_kernel] unsupported dtype {d!r}: {e}") from None


def _as_input(x) -> np.ndarray:
    """An input as NumPy, with MLX's rule for Python scalars (0-d arrays)."""
    if isinstance(x, (bool, np.bool_)):
        return np.array(bool(x))
    if isinstance(x, (int, np.integer)) and not isinstance(x, np.ndarray):
        return np.array(x, dtype=np.int32)
    if isinstance(x, (float, np.floating)) and not isinstance(x, np.ndarray):
        return np.array(x, dtype=np.float32)
    if runtime.is_array(x) or isinstance(x, np.ndarray):
        a = runtime.to_numpy(x)
        if a.dtype == np.float64:
            raise MetalKernelTypeError(
                "[metal_kernel] float64 inputs are not supported (Metal has no double)",
                hint="convert with .astype(np.float32)")
        return a
    raise MetalKernelTypeError(f"[metal_kernel] inputs must be arrays or scalars, got {type(x).__name__}")


_MLX_TYPE = {"float32": "float", "float16": "float16_t", "bfloat16": "bfloat16_t", "bool": "bool",
             "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "uint16": "uint16_t",
             "int32": "int32_t", "uint32": "uint32_t", "int64": "int64_t", "uint64": "uint64_t"}


def _fallback_source(k: MetalKernel, inputs, output_dtypes, template) -> str:
    """MLX's generated source (its ``write_signature``), used until mlx_signature lands."""
    arrays = [_as_input(x) for x in inputs]
    tmpl = _template(template)
    kname = "custom_kernel_" + k.name
    tdef = ""
    if tmpl:
        vals = [(_MLX_TYPE[v.name] if isinstance(v, T.ScalarType) else str(int(v))) for _, v in tmpl]
        tdef = "<" + ", ".join(vals) + ">"
        kname += "_" + tdef.replace("<", "_").replace(">", "_").replace(", ", "_")[1:-1]
    lines = [k.header]
    if tmpl:
        kinds = ["typename" if isinstance(v, T.ScalarType) else ("bool" if isinstance(v, bool) else "int")
                 for _, v in tmpl]
        lines.append("template <" + ", ".join(f"{kd} {n}" for kd, (n, _) in zip(kinds, tmpl)) + ">")
    params = []
    idx = 0
    for n, a in zip(k.input_names, arrays):
        loc = "constant" if a.size < 8 else "device"
        ref = "&" if a.ndim == 0 else "*"
        params.append(f"  const {loc} {_MLX_TYPE[T.from_numpy(a.dtype).name]}{ref} {n} [[buffer({idx})]]")
        idx += 1
        if a.ndim > 0:
            for suffix, decl in (("_shape", "const constant int*"), ("_strides", "const constant int64_t*"),
                                 ("_ndim", "const constant int&")):
                if n + suffix in k.source:
                    params.append(f"  {decl} {n}{suffix} [[buffer({idx})]]")
                    idx += 1
    for n, d in zip(k.output_names, output_dtypes):
        ts = _MLX_TYPE[_dtype(d).name]
        ts = f"atomic<{ts}>" if k.atomic_outputs else ts
        params.append(f"  device {ts}* {n} [[buffer({idx})]]")
        idx += 1
    for a, t in ir.THREAD_ATTRIBUTES.items():
        if a in k.source:
            params.append(f"  {t} {a} [[{a}]]")
    lines.append(f"[[kernel]] void {kname}(\n" + ",\n".join(params) + ") {\n" + k.source + "\n}\n")
    if tmpl:
        lines.append(f'template [[host_name("{kname}")]] [[kernel]] decltype({kname}{tdef}) '
                     f"{kname}{tdef};\n")
    return (f"Generated source code for `{k.name}`:\n```\n" + "".join(lines) + "\n```")


_ = KernelTypeError  # re-exported error kinds users may catch
