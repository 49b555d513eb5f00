"""Taking a kernel out of the notebook: standalone MLX code, no metalbench import.

    code = saxpy.export_mlx(2.0, x, y, grid=n, threadgroup=256)
    print(code)               # import mlx.core as mx; kernel = mx.fast.metal_kernel(...); def saxpy(...)
    open("saxpy_mlx.py", "w").write(code)

The generated module defines ``<name>_kernel`` (the ``mx.fast.metal_kernel`` object)
and a function ``<name>(<inputs>)`` that launches it with the exported configuration
(grid, threadgroup, output shapes and dtypes, template) and returns its output (a
tuple for several outputs).
"""
from __future__ import annotations

import numpy as np

from . import launch as L
from . import types as T
from .errors import MetalbenchError

_MX_DTYPE = {t.name: f"mx.{t.name}" for t in T.SCALARS}
_MX_DTYPE["bool"] = "mx.bool_"


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


def _module(name, input_names, output_names, source, header, atomic, ensure_rc, grid, threadgroup,
            out_shapes, out_dtypes, template, casts, params) -> str:
    fname = name if name.isidentifier() else "kernel"
    conv = []
    for n, c in zip(input_names, casts):
        if c is not None:
            conv.append(f"    {n} = mx.array({n}, dtype={c}) if not isinstance({n}, mx.array) "
                        f"else {n}.astype({c})")
        else:
            conv.append(f"    {n} = {n} if isinstance({n}, mx.array) else mx.array({n})")
    outs = "outs[0]" if len(output_names) == 1 else "tuple(outs)"
    tmpl = f"\n        template={_template_code(template)}," if template else ""
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
        "",
        f"def {fname}({', '.join(params)}):",
        f'    """Launch {name} with the configuration it was exported with."""',
        *conv,
        f"    outs = {fname}_kernel(",
        f"        inputs=[{', '.join(input_names)}],{tmpl}",
        f"        grid={tuple(grid)!r},",
        f"        threadgroup={tuple(threadgroup)!r},",
        f"        output_shapes={[tuple(s) for s in out_shapes]!r},",
        f"        output_dtypes=[{', '.join(_mx_dtype_name(d) for d in out_dtypes)}],",
        "    )",
        f"    return {outs}",
        "",
    ]
    return "\n".join(lines)


def _tq(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')


def export_mlx(kernel, *args, grid=None, threadgroup=None, **kwargs) -> str:
    """Standalone Python (``import mlx.core as mx`` only) that builds the kernel with
    ``mx.fast.metal_kernel`` from its final MSL and launches it with this configuration.

    DSL kernels take the same arguments as a launch (they pick the specialisation);
    ``metal_kernel`` objects take MLX's keywords (``inputs=``, ``output_shapes=`` ...).

    >>> code = export_mlx(saxpy, 2.0, x, y, grid=n, threadgroup=256)      # doctest: +SKIP
    >>> ns = {}; exec(code, ns); out = ns["saxpy"](2.0, x, y)             # doctest: +SKIP
    """
    from .check import is_msl_kernel
    if is_msl_kernel(kernel):
        return _export_msl(kernel, args, grid, threadgroup, kwargs)
    if not hasattr(kernel, "specialize"):
        raise MetalbenchError(f"cannot export {type(kernel).__name__} objects to MLX",
                              hint="export DSL kernels (@mb.kernel) or mb.metal_kernel objects")
    for k in ("backend", "checked", "init_value"):
        kwargs.pop(k, None)
    out = kwargs.pop("out", None)
    g, t = L.normalize(grid, threadgroup)
    _, specs, out_specs = kernel.bind(args, kwargs, out)
    sp = kernel._specialization(specs)
    r = sp.rendered("metal")
    if getattr(r, "extra_inputs", None):
        raise MetalbenchError(f"{kernel.name}: the generated Metal code needs extra inputs "
                              f"{r.extra_inputs}; export does not support that yet")
    by_name = {p.name: p for p in sp.ir.inputs}
    casts = []
    for n in r.input_names:
        p = by_name.get(n)
        casts.append(_MX_DTYPE[p.type.name] if p is not None else None)
    return _module(kernel.name, r.input_names, r.output_names, r.body, r.header or "", r.atomic_outputs, True,
                   g, t, [s for _, s, _ in out_specs], [ty for _, _, ty in out_specs], None, casts,
                   list(r.input_names))


def _export_msl(k, args, grid, threadgroup, kwargs) -> str:
    inputs = kwargs.get("inputs", list(args))
    shapes = kwargs.get("output_shapes")
    dtypes = kwargs.get("output_dtypes")
    if shapes is None or dtypes is None:
        if not inputs:
            raise MetalbenchError("export needs output_shapes= and output_dtypes= for a kernel without inputs")
        a = inputs[0]
        shapes = shapes or [tuple(a.shape)] * len(k.output_names)
        dtypes = dtypes or [a.dtype] * len(k.output_names)
    g, t = L.normalize(grid, threadgroup)
    from .check import _template_items
    tmpl = _template_items(kwargs.get("template"))
    casts = [None] * len(k.input_names)
    return _module(k.name, k.input_names, k.output_names, k.source, k.header or "", k.atomic_outputs,
                   k.ensure_row_contiguous, g, t, shapes, dtypes, tmpl, casts, list(k.input_names))
