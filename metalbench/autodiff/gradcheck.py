"""``mb.check_grad``: the generated VJP against central finite differences.

Like ``torch.autograd.gradcheck``: for random cotangents ``c`` the scalar
``L(args) = sum(c * kernel(args))`` is differentiated numerically, element by element
(all elements of small arguments, a random sample of large ones) and along one
random direction through all elements, and compared with the generated VJP. Both
run on the simulator, in float64 when the kernel specialises for it, else in
float32 with a larger step::

    >>> import numpy as np, metalbench as mb
    >>> from metalbench.dsl import *
    >>> @mb.kernel
    ... def softplus(x, out: mb.Out):
    ...     i = thread_position_in_grid.x
    ...     out[i] = metal.log(1.0 + metal.exp(x[i]))
    >>> r = mb.check_grad(softplus, np.linspace(-2, 2, 16, dtype=np.float32), grid=16)
    >>> r.ok
    True
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field

import numpy as np

from .. import runtime
from ..errors import KernelLaunchError, MetalbenchError


@dataclass
class GradRow:
    """The comparison for one argument."""
    name: str
    kind: str                  # "array" or "scalar"
    checked: int               # elements compared one by one
    max_abs_err: float
    max_rel_err: float
    worst_index: int | None
    numeric: float             # at the worst element
    analytic: float
    direction_err: float       # relative error of the directional derivative (all elements)
    ok: bool


@dataclass
class GradCheckResult:
    """``mb.check_grad``'s answer: one :class:`GradRow` per differentiable argument."""
    kernel: str
    rows: list
    dtype: str
    eps: float
    atol: float
    rtol: float
    notes: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)

    def row(self, name: str) -> GradRow:
        return next(r for r in self.rows if r.name == name)

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        head = (f"check_grad({self.kernel}): {'OK' if self.ok else 'MISMATCH'} "
                f"({self.dtype}, step {self.eps:g}, atol {self.atol:g}, rtol {self.rtol:g})")
        lines = [head]
        for r in self.rows:
            lines.append(f"  {r.name:>10}: {'ok ' if r.ok else 'BAD'} {r.checked:5d} elements  max abs err "
                         f"{r.max_abs_err:.3g}  max rel err {r.max_rel_err:.3g}  direction err "
                         f"{r.direction_err:.3g}" + ("" if r.ok or r.worst_index is None else
                                                     f"  worst at [{r.worst_index}]: numeric {r.numeric:.6g}, "
                                                     f"VJP {r.analytic:.6g}"))
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        color = "#1a7f37" if self.ok else "#cf222e"
        rows = "".join(
            f"<tr><td><code>{html.escape(r.name)}</code></td><td style='color:{'#1a7f37' if r.ok else '#cf222e'}'>"
            f"{'ok' if r.ok else 'mismatch'}</td><td>{r.checked}</td><td>{r.max_abs_err:.3g}</td>"
            f"<td>{r.max_rel_err:.3g}</td><td>{r.direction_err:.3g}</td>"
            f"<td>{'' if r.worst_index is None else f'[{r.worst_index}] {r.numeric:.6g} vs {r.analytic:.6g}'}"
            "</td></tr>" for r in self.rows)
        notes = "".join(f"<div style='color:#57606a'>{html.escape(n)}</div>" for n in self.notes)
        return (f"<div><b style='color:{color}'>check_grad({html.escape(self.kernel)}): "
                f"{'OK' if self.ok else 'MISMATCH'}</b> <span style='color:#57606a'>{self.dtype}, finite-difference "
                f"step {self.eps:g}, atol {self.atol:g}, rtol {self.rtol:g}</span>"
                "<table><tr><th>argument</th><th></th><th>elements</th><th>max abs err</th><th>max rel err</th>"
                f"<th>direction err</th><th>worst: numeric vs VJP</th></tr>{rows}</table>{notes}</div>")


def _float_args(kernel, args, kwargs):
    """Names and values of the float arguments (arrays and scalars), and the binding."""
    in_params = [p for p, (k, _) in zip(kernel.params, kernel.kinds) if k != "out"]
    kinds = {p.name: k for p, (k, _) in zip(kernel.params, kernel.kinds)}
    values = {p.name: a for p, a in zip(in_params, args)}
    values.update(kwargs)
    order = [p.name for p in in_params if p.name in values]
    return values, order, kinds


def _is_float(v) -> bool:
    if runtime.is_array(v):
        return np.issubdtype(np.asarray(runtime.to_numpy(v)).dtype, np.floating) or \
            str(getattr(v, "dtype", "")).endswith(("bfloat16", "float16", "float32"))
    return isinstance(v, (float, np.floating))


def _as(v, dt):
    if runtime.is_array(v):
        return np.array(runtime.to_numpy(v), dtype=np.float64).astype(dt)
    return dt(v)


def check_grad(kernel, *args, grid=None, threadgroup=None, cotangents=None, eps: float | None = None,
               atol: float | None = None, rtol: float | None = None, samples: int = 32, seed: int = 0,
               out=None, **kwargs) -> GradCheckResult:
    """Compare ``kernel``'s generated VJP with central finite differences on the simulator.

    ``samples`` elements of each float array argument (all of them when it has no
    more) are checked one by one, plus one random direction through all elements.
    Returns a :class:`GradCheckResult` (``.ok``, ``.rows``, a table in notebooks).
    """
    if grid is None:
        raise KernelLaunchError("check_grad needs grid=", hint="the grid you launch the kernel with")
    values, order, kinds = _float_args(kernel, args, kwargs)
    diff = [n for n in order if kinds.get(n) == "arg" and _is_float(values[n])]
    dt, notes = np.float64, []
    probe = {n: (_as(values[n], np.float64) if n in diff else values[n]) for n in order}
    try:
        kernel(**probe, grid=grid, threadgroup=threadgroup, backend="sim", out=out)
    except MetalbenchError:
        dt = np.float32
        notes.append("float64 did not specialise on the simulator: finite differences in float32 "
                     "(larger step and tolerances)")
    eps = eps if eps is not None else (1e-6 if dt == np.float64 else 1e-2)
    atol = atol if atol is not None else (1e-5 if dt == np.float64 else 2e-3)
    rtol = rtol if rtol is not None else (1e-4 if dt == np.float64 else 2e-2)
    base = {n: (_as(values[n], dt) if n in diff else values[n]) for n in order}
    rng = np.random.default_rng(seed)

    def run(vals):
        o = kernel(**vals, grid=grid, threadgroup=threadgroup, backend="sim", out=out)
        return [np.array(runtime.to_numpy(a), dtype=np.float64) for a in (o if isinstance(o, tuple) else (o,))]

    outs0 = run(base)
    if cotangents is None:
        cts = [rng.standard_normal(o.shape) for o in outs0]
    else:
        cts = [np.asarray(runtime.to_numpy(c), np.float64) for c in
               (cotangents if isinstance(cotangents, (tuple, list)) else (cotangents,))]

    def objective_delta(vals_p, vals_m):
        # differences per output element first: unchanged elements cancel exactly
        return sum(float(np.sum(c * (a - b))) for c, a, b in zip(cts, run(vals_p), run(vals_m)))

    ct_arg = tuple(c.astype(dt) for c in cts) if len(cts) > 1 else cts[0].astype(dt)
    grads = kernel.vjp(**base, cotangents=ct_arg, grid=grid, threadgroup=threadgroup, backend="sim", out=out)
    by_name = dict(zip([p.name for p, (k, _) in zip(kernel.params, kernel.kinds) if k != "out"], grads))
    rows = []
    for name in diff:
        v = base[name]
        g = by_name.get(name)
        ana = np.zeros(np.shape(v)) if g is None else np.array(runtime.to_numpy(g), dtype=np.float64)
        is_arr = runtime.is_array(v)
        flat = np.asarray(v).reshape(-1) if is_arr else None
        size = flat.size if is_arr else 1
        idx = np.arange(size) if size <= samples else np.sort(rng.choice(size, samples, replace=False))
        errs, rels, nums = [], [], []
        for k in idx:
            if is_arr:
                p, m = flat.copy(), flat.copy()
                h = eps * max(1.0, abs(float(flat[k])))
                p[k] += h
                m[k] -= h
                hp, hm = float(p[k]) - float(flat[k]), float(flat[k]) - float(m[k])
                vp, vm = dict(base), dict(base)
                vp[name], vm[name] = p.reshape(np.shape(v)), m.reshape(np.shape(v))
                a = float(ana.reshape(-1)[k])
            else:
                h = eps * max(1.0, abs(float(v)))
                vp, vm = dict(base), dict(base)
                vp[name], vm[name] = dt(float(v) + h), dt(float(v) - h)
                hp, hm = float(vp[name]) - float(v), float(v) - float(vm[name])
                a = float(ana)
            num = objective_delta(vp, vm) / (hp + hm)
            err = abs(num - a)
            errs.append(err)
            rels.append(err / max(abs(num), abs(a), 1e-30))
            nums.append((num, a, int(k)))
        worst = int(np.argmax([e - (atol + rtol * abs(n[0])) for e, n in zip(errs, nums)])) if errs else None
        ok = all(e <= atol + rtol * abs(n[0]) for e, n in zip(errs, nums))
        dir_err = 0.0
        if is_arr and size > 1:
            d = rng.standard_normal(size)
            d /= np.linalg.norm(d)
            h = eps * max(1.0, float(np.max(np.abs(flat))) if size else 1.0)
            vp, vm = dict(base), dict(base)
            p, m = (flat + h * d).astype(flat.dtype), (flat - h * d).astype(flat.dtype)
            vp[name], vm[name] = p.reshape(np.shape(v)), m.reshape(np.shape(v))
            step = (p.astype(np.float64) - m.astype(np.float64)) / 2
            num = objective_delta(vp, vm) / 2
            a = float(np.dot(ana.reshape(-1), step))
            dir_err = abs(num - a) / max(abs(num), abs(a), 1e-30)
            ok = ok and abs(num - a) <= atol + 4 * rtol * abs(num)
        rows.append(GradRow(name, "array" if is_arr else "scalar", len(idx),
                            max(errs) if errs else 0.0, max(rels) if rels else 0.0,
                            None if worst is None else nums[worst][2],
                            nums[worst][0] if worst is not None else 0.0,
                            nums[worst][1] if worst is not None else 0.0, dir_err, ok))
    return GradCheckResult(kernel.name, rows, np.dtype(dt).name, eps, atol, rtol, notes)


def check_grad_for_launch(kernel, args, launch: dict) -> GradCheckResult:
    """``check_grad`` with a cell's or panel's launch keywords (backend and the like are
    dropped: the comparison runs on the simulator). A kernel without a VJP (an MSL body)
    is an error saying so."""
    if not hasattr(kernel, "vjp"):
        raise MetalbenchError(f"{kernel.name}: --grad needs a DSL kernel (a Python def); MSL bodies have no "
                              "generated VJP", hint="write the kernel in the Python DSL to differentiate it")
    kw = {k: v for k, v in launch.items() if k not in ("backend", "checked", "init_value", "stream")}
    return check_grad(kernel, *args, **kw)
