"""The exported VJP: the adjoint kernel and the ``mx.custom_function`` glue as plain MLX.

``export_mlx`` of a differentiable DSL kernel appends this to the forward module::

    saxpy_vjp_kernel = mx.fast.metal_kernel(...)        # the generated adjoint (atomic outputs)

    def saxpy_vjp(a, x, y, cotangents, *, grid=None, threadgroup=(256, 1, 1)):
        ...                                              # one gradient per input (None for ints)

    @mx.custom_function
    def saxpy_differentiable(*args):
        return saxpy(*args)

    @saxpy_differentiable.vjp
    def _saxpy_vjp_rule(primals, cotangents, outputs):
        ...

so ``mx.grad(lambda x: saxpy_differentiable(2.0, x, y).sum())(x)`` works with no
metalbench import. Loops whose carried values would need a tape sized at launch
recompute them instead (the export has no host-side sizing).
"""
from __future__ import annotations

from .prepare import NotDifferentiableError
from .vjp import adjoint_of


def vjp_module(sp, bound, *, fname: str, params: list, conv: list, out_names: list, grid_expr: str,
               threadgroup) -> str:
    """The text to append to an exported forward module (``""`` when the kernel has no
    float input to differentiate); a kernel outside the subset gets a comment saying why."""
    from ..export import _extra_exprs, _mx_dtype_name, _tq
    try:
        adj, adj_sp = adjoint_of(sp, aggregate=True, device_tapes=False, backend="metal")
    except NotDifferentiableError as e:
        first = str(e).splitlines()[0]
        return f"\n# No VJP exported: {first}\n"
    if not adj.grads:
        return ""
    r = adj_sp.rendered("metal")
    fwd = {p.name: p for p in sp.ir.params}
    grad_of = {g: n for n, g in adj.grads.items()}
    out_types = {p.name: p.type for p in sp.ir.outputs}
    lines = ["", "",
             f"VJP_SOURCE = {r.body!r}" if "\n" not in r.body else f'VJP_SOURCE = """{_tq(r.body)}"""',
             f"VJP_HEADER = {r.header!r}" if "\n" not in (r.header or "") else f'VJP_HEADER = """{_tq(r.header)}"""',
             "",
             f"{fname}_vjp_kernel = mx.fast.metal_kernel(",
             f"    name={r.name!r},",
             f"    input_names={list(r.input_names)!r},",
             f"    output_names={list(r.output_names)!r},",
             "    source=VJP_SOURCE,",
             "    header=VJP_HEADER,",
             "    ensure_row_contiguous=True,",
             f"    atomic_outputs={bool(r.atomic_outputs)!r},",
             ")", "", ""]
    sig = ", ".join(params + ["cotangents", "*", "grid=None", f"threadgroup={tuple(threadgroup)!r}"])
    lines += [f"def {fname}_vjp({sig}):",
              f'    """Gradients of {fname} at ({", ".join(params)}) for the cotangents of its outputs '
              f'({", ".join(out_names)}; an array, or one per output): one entry per input, float inputs '
              'only (None for the others)."""',
              *conv,
              "    if not isinstance(cotangents, (tuple, list)):",
              "        cotangents = (cotangents,)"]
    for k, o in enumerate(out_names):
        if o in adj.cotangents:
            c = adj.cotangents[o]
            lines.append(f"    {c} = cotangents[{k}] if isinstance(cotangents[{k}], mx.array) "
                         f"else mx.array(cotangents[{k}])")
            lines.append(f"    {c} = {c}.astype({_mx_dtype_name(out_types[o])})")
    shapes, dtypes = [], []
    for p in adj.ir.outputs:
        src = grad_of[p.name]
        shape = f"tuple({src}.shape)" if fwd[src].kind == "buffer" else "(1,)"
        lines.append(f"    {p.name}_shape = {shape}")
        shapes.append(f"{p.name}_shape")
        dtypes.append(_mx_dtype_name(p.type))
    extra = _extra_exprs(r)
    ins = [p.name for p in adj.ir.inputs] + [e for _, e in extra]
    lines += ["    if grid is None:",
              f"        grid = {grid_expr}",
              f"    outs = {fname}_vjp_kernel(",
              f"        inputs=[{', '.join(ins)}],",
              "        grid=grid,",
              "        threadgroup=threadgroup,",
              f"        output_shapes=[{', '.join(shapes)}],",
              f"        output_dtypes=[{', '.join(dtypes)}],",
              "        init_value=0,",
              "    )"]
    rets = []
    idx = {p.name: k for k, p in enumerate(adj.ir.outputs)}
    for n in params:
        g = adj.grads.get(n)
        if g is None:
            rets.append(f"mx.zeros_like({n})" if fwd[n].kind == "buffer" and fwd[n].type.is_float else "None")
        elif fwd[n].kind == "buffer":
            rets.append(f"outs[{idx[g]}].astype({n}.dtype)")
        else:
            rets.append(f"outs[{idx[g]}].reshape(()).astype({_mx_dtype_name(fwd[n].type)})")
    lines.append(f"    return ({', '.join(rets)}{',' if len(rets) == 1 else ''})")
    lines += ["", "",
              "@mx.custom_function",
              f"def {fname}_differentiable(*args):",
              f'    """{fname} for mx.grad / mx.vjp / mx.value_and_grad (same arguments)."""',
              f"    return {fname}(*args)",
              "", "",
              f"@{fname}_differentiable.vjp",
              f"def _{fname}_vjp_rule(primals, cotangents, outputs):",
              "    if not isinstance(primals, (tuple, list)):   # MLX passes a lone primal bare",
              "        primals = (primals,)",
              f"    grads = {fname}_vjp(*primals, cotangents)",
              "    return tuple((g if g is not None else mx.zeros_like(p)) if isinstance(p, mx.array) else None",
              "                 for p, g in zip(primals, grads))",
              ""]
    return "\n".join(lines)
