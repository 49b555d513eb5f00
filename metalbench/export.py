"""Taking a kernel out of the notebook: standalone MLX code, no metalbench import.

    code = blur.export_mlx(img, grid=(W, H), threadgroup=(16, 16))
    print(code)               # import mlx.core as mx; blur_kernel = mx.fast.metal_kernel(...); def blur(x, ...)
    open("blur_mlx.py", "w").write(code)

The generated module defines ``<name>_kernel`` (the ``mx.fast.metal_kernel`` object)
and a function ``<name>(<inputs>, *, grid=None, threadgroup=...)`` that takes the
kernel's inputs as parameters and launches it. Output shapes and the default grid are
read from the inputs (``x.shape``, ``x.size``) as the exported launch relates them, so
the function works for other sizes too; what cannot be related to an input is fixed
at its exported value (the docstring says which). Everything the generated MSL needs
beyond the inputs (an output's shape for ``out[r, c]``) is computed there too.
"""
from __future__ import annotations

import numpy as np

from . import launch as L
from . import runtime
from . import types as T
from .errors import user_facing

_MX_DTYPE = {t.name: f"mx.{t.name}" for t in T.ALL_SCALARS}
_MX_DTYPE["bool"] = "mx.bool_"
_POW2 = [1 << i for i in range(1, 11)]


def _mx_dtype_name(d) -> str:
    if isinstance(d, T.ScalarType):
        return _MX_DTYPE[d.name]
    name = str(d).replace("mlx.core.", "")
    if type(d).__module__.startswith("mlx"):
        t = T.from_mlx(d)
    else:
        t = T.from_numpy(np.dtype(name) if name != "bfloat16" else T.bfloat16.np)
    return _MX_DTYPE[t.name]


def _template_code(tmpl) -> str:
    items = []
    for k, v in tmpl:
        if isinstance(v, bool) or isinstance(v, (int, np.integer)):
            items.append(f"({k!r}, {v!r})")
        else:
            items.append(f"({k!r}, {_mx_dtype_name(v)})")
    return "[" + ", ".join(items) + "]"


# ----------------------------------------------------------------------------- sizes from inputs

class _Inputs:
    """The exported function's inputs: ``(name, shape)`` of each array, ``(name, value)``
    of each integer scalar, in parameter order; turns sizes into expressions over them."""

    def __init__(self, arrays, ints):
        self.arrays = [(n, tuple(int(d) for d in s)) for n, s in arrays]
        self.ints = [(n, int(v)) for n, v in ints]

    def dim(self, d: int, prefer_axis: int | None = None, tg: int | None = None) -> str | None:
        """An expression equal to ``d`` now: an input's dimension (the preferred axis of
        the first array first), size, an int argument, a dimension times ``tg`` (one
        threadgroup per row), rounded up to ``tg``, or times a power of two."""
        if self.arrays and prefer_axis is not None:
            n, s = self.arrays[0]
            a = len(s) - 1 - prefer_axis if prefer_axis >= 0 else None
            if a is not None and 0 <= a < len(s) and s[a] == d:
                return f"{n}.size" if len(s) == 1 else f"{n}.shape[{a}]"
        for n, s in self.arrays:
            if len(s) == 1 and s[0] == d:
                return f"{n}.size"
            for a, x in enumerate(s):
                if x == d:
                    return f"{n}.shape[{a}]"
            if int(np.prod(s)) == d:
                return f"{n}.size"
        for n, v in self.ints:
            if v == d:
                return f"int({n})"
        for n, s in self.arrays:
            for a, x in enumerate(s):
                e = f"{n}.shape[{a}]" if len(s) > 1 else f"{n}.size"
                if tg and tg > 1 and x * tg == d:
                    return f"{e} * {tg}"
                if tg and tg > 1 and x % tg and -(-x // tg) * tg == d:
                    return f"-(-{e} // {tg}) * {tg}"
        for n, s in self.arrays:
            for a, x in enumerate(s):
                e = f"{n}.shape[{a}]" if len(s) > 1 else f"{n}.size"
                for k in _POW2:
                    if x * k == d:
                        return f"{e} * {k}"
        return None

    def shape(self, shape, fixed: bool = False) -> tuple[str, bool]:
        """(expression, read from inputs?) of an output shape."""
        shape = tuple(int(d) for d in shape)
        if not fixed:
            for n, s in self.arrays:
                if s == shape:
                    return f"tuple({n}.shape)", True
            dims = [self.dim(d, prefer_axis=len(shape) - 1 - j) for j, d in enumerate(shape)]
            if all(e is not None for e in dims):
                return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")", True
        return repr(shape), False

    def grid(self, grid, tg) -> tuple[str, bool]:
        parts = []
        ok = True
        for i, (g, t) in enumerate(zip(grid, tg)):
            if g == 1:
                parts.append("1")
                continue
            e = self.dim(g, prefer_axis=i, tg=t)
            ok = ok and e is not None
            parts.append(e if e is not None else str(g))
        return "(" + ", ".join(parts) + ")", ok


# ----------------------------------------------------------------------------- the module

def _module(*, name, fname, input_names, output_names, source, header, atomic, ensure_rc, params,
            conv, out_shapes, out_dtypes, extra, grid, threadgroup, template, notes,
            init_value=None, epilogue=None, returns=None, kernel_params=None) -> str:
    # kernel_params: the parameters the kernel takes, when not all of ``params`` (a written
    # argument the kernel never reads is only merged with, see inplace.functionalize)
    outs = "outs[0]" if len(output_names) == 1 else "tuple(outs)"
    ret = epilogue or [f"    return {outs}"]
    tmpl = f"\n        template={_template_code(template)}," if template else ""
    sig = ", ".join(params + ["*", "grid=None", f"threadgroup={tuple(threadgroup)!r}"])
    shape_lines = [f"    {o}_shape = {expr}" for o, (expr, _) in zip(output_names, out_shapes)]
    grid_expr, _ = grid
    ins = ", ".join(list(params if kernel_params is None else kernel_params) + [e for _, e in extra])
    doc = [f'    """Launch {fname}; returns {returns or ", ".join(output_names)}.', ""]
    doc += [f"    {line}" for line in notes]
    doc += ['    """']
    needs_strides = any("_strides(" in e for _, e in extra)
    lines = [
        f'"""{fname}: exported from metalbench (standalone MLX; needs only mlx)."""',
        "import mlx.core as mx",
        "",
        f"SOURCE = {source!r}" if "\n" not in source else f'SOURCE = """{_tq(source)}"""',
        f"HEADER = {header!r}" if "\n" not in header else f'HEADER = """{_tq(header)}"""',
        "",
        f"{fname}_kernel = mx.fast.metal_kernel(",
        f"    name={name!r},",
        f"    input_names={list(input_names)!r},",
        f"    output_names={list(output_names)!r},",
        "    source=SOURCE,",
        "    header=HEADER,",
        f"    ensure_row_contiguous={bool(ensure_rc)!r},",
        f"    atomic_outputs={bool(atomic)!r},",
        ")",
        "",
    ]
    if needs_strides:
        lines += ["", "def _strides(shape):",
                  "    out, acc = [], 1",
                  "    for d in reversed(shape):",
                  "        out.append(acc)",
                  "        acc *= d",
                  "    return out[::-1]", ""]
    lines += [
        "",
        f"def {fname}({sig}):",
        *doc,
        *conv,
        *shape_lines,
        "    if grid is None:",
        f"        grid = {grid_expr}",
        f"    outs = {fname}_kernel(",
        f"        inputs=[{ins}],{tmpl}",
        "        grid=grid,",
        "        threadgroup=threadgroup,",
        f"        output_shapes=[{', '.join(f'{o}_shape' for o in output_names)}],",
        f"        output_dtypes=[{', '.join(_mx_dtype_name(d) for d in out_dtypes)}],",
        *([f"        init_value={init_value!r},"] if init_value is not None else []),
        "    )",
        *ret,
        "",
    ]
    return "\n".join(lines)


def _tq(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')


def _notes(inputs: _Inputs, grid, grid3, out_names, out_shapes, fixed_reasons=()) -> list[str]:
    g_expr, g_ok = grid
    notes = [f"grid (threads) defaults to {g_expr}"
             + ("" if g_ok else f" (fixed: the exported launch's grid {grid3} is not a size of the inputs)")
             + "; pass grid= for another launch."]
    for o, (expr, ok) in zip(out_names, out_shapes):
        notes.append(f"{o}: shape {expr}" + ("" if ok else " (fixed at export)"))
    notes += list(fixed_reasons)
    return notes


@user_facing
def export_mlx(kernel, *args, grid=None, threadgroup=None, **kwargs) -> str:
    """Standalone Python (``import mlx.core as mx`` only) that builds the kernel with
    ``mx.fast.metal_kernel`` from its final MSL and defines a function taking the
    kernel's inputs, with output shapes and grid read from them.

    DSL kernels take the same arguments as a launch (they pick the specialisation:
    dtypes, ndims, constexpr values); ``metal_kernel`` objects take MLX's keywords
    (``inputs=``, ``output_shapes=`` ...). A differentiable DSL kernel also gets its
    generated VJP kernel, ``<name>_vjp(...)`` and ``<name>_differentiable`` (an
    ``mx.custom_function``); ``vjp=False`` leaves them out.

    >>> code = export_mlx(saxpy, 2.0, x, y, grid=n, threadgroup=256)      # doctest: +SKIP
    >>> ns = {}; exec(code, ns); out = ns["saxpy"](2.0, x, y)             # doctest: +SKIP
    """
    for k in ("backend", "checked", "init_value"):
        kwargs.pop(k, None)
    with_vjp = kwargs.pop("vjp", True)
    out = kwargs.pop("out", None)
    if out is not None:
        kwargs["out"] = out
    # The kernel protocol: the kernel binds its own call; the specialisation says what
    # MLX receives (the user's text as is, printed IR, or an in-place kernel's
    # functionalized form and merge plans).
    bound = kernel.bind(*args, grid=grid, threadgroup=threadgroup, **kwargs)
    if bound.grid is None:
        L.normalize(None, None)          # raises "no grid given" with its hint
    sp = kernel.specialization(bound)
    if sp.verbatim is not None:
        return _export_msl(sp, bound)
    if sp.merge_plans() is not None:
        return _export_numba(kernel, sp, bound)
    values, specs, out_specs = bound.values, bound.specs, bound.outputs
    g, t = bound.grid, bound.threadgroup
    r = sp.rendered("metal")
    params = [p for p in sp.ir.inputs]
    arrays = [(p.name, values[p.name].shape) for p in params if p.kind != "scalar"]
    ints = [(p.name, values[p.name]) for p in params if p.kind == "scalar"
            and isinstance(values[p.name], (int, np.integer)) and not isinstance(values[p.name], bool)]
    inputs = _Inputs(arrays, ints)
    conv = []
    for p in params:
        mt = _MX_DTYPE[p.type.name]
        n = p.name
        if p.kind == "scalar":
            conv.append(f"    {n} = {n}.astype({mt}) if isinstance({n}, mx.array) else mx.array({n}, dtype={mt})")
        else:
            conv += _array_conv(n, mt, len(values[n].shape))
    # Shapes: an mb.Out without a shape (or naming an argument) follows that argument;
    # a fixed mb.Out(shape=(...)) stays fixed; a shape function is matched to the inputs.
    declared = kernel.declared_output_shapes()
    out_exprs = []
    for o, shape, _ in out_specs:
        s = declared.get(o)
        if out is None and isinstance(s, str) and s in values:
            out_exprs.append((f"tuple({s}.shape)", True))
        elif out is None and s is None and arrays:
            out_exprs.append((f"tuple({arrays[0][0]}.shape)", True))
        else:
            fixed = out is None and isinstance(s, (tuple, list, int))
            out_exprs.append(inputs.shape(shape, fixed=fixed))
    extra = _extra_exprs(r)
    gexpr = inputs.grid(g, t)
    names = [o for o, _, _ in out_specs]
    consts = [f"{s.name}={s.value!r}" for s in specs if s.kind == "constexpr"]
    notes = _notes(inputs, gexpr, g, names, out_exprs,
                   [f"compiled for constexpr {', '.join(consts)}" + "; export again for other values."]
                   if consts else [])
    fname = kernel.name if kernel.name.isidentifier() else "kernel"
    code = _module(name=r.name, fname=fname, input_names=r.input_names, output_names=r.output_names,
                   source=r.body, header=r.header or "", atomic=r.atomic_outputs, ensure_rc=True,
                   params=[p.name for p in params], conv=conv, out_shapes=out_exprs,
                   out_dtypes=[ty for _, _, ty in out_specs], extra=extra, grid=gexpr, threadgroup=t,
                   template=None, notes=notes)
    if with_vjp:        # (autodiff) the generated adjoint and the mx.custom_function glue
        from .autodiff.export import vjp_module
        code += vjp_module(sp, bound, fname=fname, params=[p.name for p in params], conv=conv, out_names=names,
                           grid_expr=gexpr[0], threadgroup=t)
    return code


def _export_msl(sp, bound) -> str:
    """A ``metal_kernel``: the user's text as MLX receives it, inputs unconverted."""
    k = sp.mlx_kernel_args("metal")
    names = k["input_names"]
    inputs = list(bound.args)
    shapes = [s for _, s, _ in bound.outputs]
    dtypes = [t for _, _, t in bound.outputs]
    g, t = bound.grid, bound.threadgroup
    tmpl = list(bound.template)
    arrays = [(n, v.shape) for n, v in zip(names, inputs) if runtime.is_array(v) and len(v.shape)]
    ints = [(n, v) for n, v in zip(names, inputs)
            if isinstance(v, (int, np.integer)) and not isinstance(v, bool)]
    ins = _Inputs(arrays, ints)
    out_exprs = [ins.shape(s) for s in shapes]
    gexpr = ins.grid(g, t)
    conv = [f"    {n} = {n} if isinstance({n}, mx.array) else mx.array({n})" for n in names]
    fname = sp.name if sp.name.isidentifier() else "kernel"
    notes = _notes(ins, gexpr, g, list(k["output_names"]), out_exprs,
                   [f"template {_template_code(tmpl)} is fixed at export."] if tmpl else [])
    return _module(name=k["name"], fname=fname, input_names=names, output_names=k["output_names"],
                   source=k["source"], header=k["header"], atomic=k["atomic_outputs"],
                   ensure_rc=k["ensure_row_contiguous"], params=list(names), conv=conv,
                   out_shapes=out_exprs, out_dtypes=list(dtypes), extra=[], grid=gexpr, threadgroup=t,
                   template=tmpl, notes=notes)


def _extra_exprs(r) -> list[tuple[str, str]]:
    """(name, expression) of each input the printed code needs after the user's: an
    output's shape or strides (MLX passes shapes of inputs only), the grid (CUDA's guard)."""
    out = []
    for ename, kind, which in list(r.extra_inputs.items if r.extra_inputs is not None else []):
        if kind == "grid":
            out.append((ename, "mx.array((list(grid) + [1, 1])[:3], dtype=mx.uint32)"))
        elif kind == "shape":
            out.append((ename, f"mx.array(list({which}_shape) or [1], dtype=mx.int32)"))
        else:
            out.append((ename, f"mx.array(_strides({which}_shape) or [1], dtype=mx.int64)"))
    return out


def _array_conv(n: str, mt: str, nd: int) -> list[str]:
    return [f"    {n} = {n} if isinstance({n}, mx.array) else mx.array({n})",
            f"    {n} = {n} if {n}.dtype == {mt} else {n}.astype({mt})",
            f"    if {n}.ndim != {nd}:",
            f"        raise ValueError(f\"{n}: exported for {nd}-D arrays, got {{{n}.ndim}}-D\")"]


def _export_numba(k, sp, bound) -> str:
    """A ``cuda.jit`` kernel: MLX arrays are immutable, so the exported function returns
    the new values of the arguments the kernel writes (merged from the in-place pass's
    outputs exactly as metalbench's own GPU launch merges them)."""
    fsp, plans = sp.merge_plans()
    values = bound.values
    r = fsp.rendered("metal")
    g, t = bound.grid, bound.threadgroup
    # the function takes every argument; the kernel, those it reads (a written argument
    # it never reads is an input of the merge only)
    kernel_params = [p.name for p in fsp.ir.inputs]
    params = [p for p in sp.ir.inputs if p.name in kernel_params or any(pl.param == p.name for pl in plans)]
    arrays = [(p.name, values[p.name].shape) for p in params if p.kind != "scalar"]
    ints = [(p.name, values[p.name]) for p in params if p.kind == "scalar"
            and isinstance(values[p.name], (int, np.integer)) and not isinstance(values[p.name], bool)]
    inputs = _Inputs(arrays, ints)
    conv = []
    for p in params:
        mt = _MX_DTYPE[p.type.name]
        if p.kind == "scalar":
            conv.append(f"    {p.name} = {p.name}.astype({mt}) if isinstance({p.name}, mx.array) "
                        f"else mx.array({p.name}, dtype={mt})")
        else:
            conv += _array_conv(p.name, mt, len(values[p.name].shape))
    owner = {o: pl.param for pl in plans for o in pl.outputs}
    outs = [p for p in fsp.ir.outputs]
    out_shapes = [(f"tuple({owner[p.name]}.shape)", True) for p in outs]
    epilogue = ["    res = dict(zip(" + repr([p.name for p in outs]) + ", outs))"]
    for pl in plans:
        n = pl.param
        if pl.scheme == "mask":
            epilogue.append(f"    {n} = mx.where(res[{pl.outputs[1]!r}].reshape({n}.shape) != 0, "
                            f"res[{pl.outputs[0]!r}].reshape({n}.shape), {n})")
        else:
            epilogue.append(f"    {n} = ({n} {pl.combine} res[{pl.outputs[0]!r}].reshape({n}.shape))"
                            f".astype({n}.dtype)")
    extra = _extra_exprs(r)
    written = [pl.param for pl in plans]
    epilogue.append("    return " + ("None" if not written else written[0] if len(written) == 1
                                     else "(" + ", ".join(written) + ")"))
    gexpr = inputs.grid(g, t)
    notes = [f"grid (threads) defaults to {gexpr[0]}"
             + ("" if gexpr[1] else f" (fixed: the exported launch's grid {g} is not a size of the inputs)")
             + "; pass grid= for another launch.",
             "MLX arrays are immutable: the arguments the kernel writes come back as new arrays."]
    return _module(name=r.name, fname=k.name if k.name.isidentifier() else "kernel",
                   input_names=r.input_names, output_names=r.output_names, source=r.body,
                   header=r.header or "", atomic=r.atomic_outputs, ensure_rc=True,
                   params=[p.name for p in params], kernel_params=kernel_params, conv=conv, out_shapes=out_shapes,
                   out_dtypes=[p.type for p in outs], extra=extra, grid=gexpr, threadgroup=t, template=None,
                   notes=notes, init_value=0, epilogue=epilogue,
                   returns=", ".join(written) + " (new values)" if written else "None")
