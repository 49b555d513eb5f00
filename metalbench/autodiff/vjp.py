"""``k.vjp``: run a DSL kernel's generated adjoint on any backend.

    >>> import numpy as np, metalbench as mb
    >>> from metalbench.dsl import *
    >>> @mb.kernel
    ... def square(x, out: mb.Out):
    ...     i = thread_position_in_grid.x
    ...     out[i] = x[i] * x[i]
    >>> x = np.array([1.0, 2.0, 3.0], np.float32)
    >>> gx, = square.vjp(x, cotangents=np.ones(3, np.float32), grid=3, backend="sim")
    >>> gx.tolist()
    [2.0, 4.0, 6.0]
"""
from __future__ import annotations

import math

import numpy as np

from .. import ir
from .. import launch as L
from .. import runtime
from .. import types as T
from ..errors import KernelLaunchError
from .reverse import Adjoint, generate


def adjoint_of(spec, aggregate: bool = True, device_tapes: bool = True, backend: str = "sim"):
    """(Adjoint, its Specialization) for a forward specialisation, built once and kept
    in its artifacts. On GPU backends float64 gradients accumulate in float32 (their
    atomics are 32-bit); on the simulator in float64."""
    wide = backend == "sim"
    key = ("adjoint", aggregate, device_tapes, wide)
    hit = spec.artifacts.get(key)
    if hit is None:
        adj = generate(spec.ir, aggregate=aggregate, device_tapes=device_tapes, wide_atomics=wide)
        hit = spec.artifacts[key] = (adj, _specialization(adj.ir, spec))
    return hit


def _specialization(kir: ir.KernelIR, forward_spec):
    from ..protocol import Specialization
    return Specialization(("adjoint", forward_spec.key), kir, name=kir.name)


class Bound:
    """One vjp call bound to its kernel (the protocol's ``BoundLaunch``), its forward
    specialisation and the kernel's non-output parameters in order."""

    def __init__(self, kernel, args, kwargs, grid, threadgroup, backend, out=None, checked=None):
        self.launch = kernel.bind(*args, grid=grid, threadgroup=threadgroup, backend=backend, out=out,
                                  checked=checked, **kwargs)
        if self.launch.grid is None:
            L.normalize(None, None)                          # "no grid given", with its hint
        self.spec = kernel.specialization(self.launch)
        self.values = self.launch.values
        self.outputs = self.launch.outputs                  # [(name, shape, ScalarType)]
        self.grid, self.threadgroup = self.launch.grid, self.launch.threadgroup
        self.backend = self.launch.backend
        self.checked = self.launch.checked
        self.params = list(kernel._in_params)
        self.kinds = {p.name: kind for p, (kind, _) in zip(kernel.params, kernel.kinds)}


def run_adjoint(adj: Adjoint, adj_spec, values: dict, outputs: list, grid, threadgroup, backend: str,
                checked: bool = False) -> list:
    """Launch an adjoint kernel (its outputs start at zero); returns its outputs."""
    if backend == "sim":
        outs, _ = adj_spec.launch_sim(values, outputs, grid, threadgroup, checked, 0)
        return outs
    from ..protocol import BoundLaunch
    b = BoundLaunch(None, adj_spec.key, values, outputs, grid, threadgroup, backend)
    return adj_spec.gpu_plan(b, backend)(values, 0)


# A device tape holds (trip count x threads) values; beyond this many elements the VJP refuses.
MAX_TAPE_ELEMENTS = 1 << 28


def trip_counts(adj: Adjoint, adj_spec, values: dict) -> list[int]:
    """The trip counts of the loops whose carried values go to device tapes (the sizer
    kernel on the simulator: it reads scalar arguments and shapes, never array data)."""
    from ..sim import Buffer, compile_kernel
    k = adj_spec.artifacts.get("sizer")
    if k is None:
        k = adj_spec.artifacts["sizer"] = compile_kernel(adj.sizer)
    args = {}
    for p in adj.sizer.inputs:
        v = values[p.name]
        if p.kind == "scalar":
            args[p.name] = p.type.np.type(v) if not runtime.is_array(v) else runtime.to_numpy(v).astype(p.type.np)[()]
        else:
            shape = tuple(int(s) for s in v.shape) or (1,)
            strides = tuple(int(math.prod(shape[i + 1:])) for i in range(len(shape)))
            args[p.name] = Buffer(np.zeros(1, p.type.np), shape, strides)
    out = adj.sizer.outputs[0]
    n = 1 + max(loop for _, _, loop in adj.tapes)
    counts = np.zeros(n, np.int64)
    args[out.name] = Buffer(counts, (n,), (1,))
    k.run(args, (1, 1, 1), (1, 1, 1))
    return [int(c) for c in counts]


def tape_outputs(adj: Adjoint, adj_spec, b) -> list:
    """The adjoint kernel's tape outputs for this launch: (name, shape, type)."""
    if not adj.tapes:
        return []
    counts = trip_counts(adj, adj_spec, b.values)
    threads = math.prod(-(-g // t) * t for g, t in zip(b.grid, b.threadgroup))
    out = []
    for name, tt, loop in adj.tapes:
        n = max(1, counts[loop] * threads)
        if n > MAX_TAPE_ELEMENTS:
            raise KernelLaunchError(
                f"{adj.forward.name}.vjp: a loop's carried values need a tape of {n} elements "
                f"({counts[loop]} iterations x {threads} threads)",
                hint="launch fewer threads per call, or make the trip count a constexpr of at most 1024")
        out.append((name, (n,), tt))
    return out


def cotangent_dict(cotangents, outputs: list, kernel_name: str) -> dict:
    """The cotangents by output name, checked against the outputs' shapes."""
    names = [n for n, _, _ in outputs]
    if isinstance(cotangents, dict):
        cts = dict(cotangents)
    elif isinstance(cotangents, (list, tuple)) and not runtime.is_array(cotangents):
        if len(cotangents) != len(names):
            raise KernelLaunchError(f"{kernel_name}.vjp: {len(cotangents)} cotangents for {len(names)} outputs "
                                    f"({', '.join(names)})", hint="pass one cotangent array per output, in order")
        cts = dict(zip(names, cotangents))
    else:
        if len(names) != 1:
            raise KernelLaunchError(f"{kernel_name}.vjp: the kernel has {len(names)} outputs "
                                    f"({', '.join(names)}); cotangents= takes one array per output",
                                    hint="pass cotangents=(ct_a, ct_b, ...) or a dict by output name")
        cts = {names[0]: cotangents}
    for name, shape, _ in outputs:
        c = cts.get(name)
        if c is None:
            continue
        cs = tuple(int(s) for s in getattr(c, "shape", ()))
        if math.prod(cs) != math.prod(shape):
            raise KernelLaunchError(f"{kernel_name}.vjp: the cotangent of {name!r} has shape {cs}, "
                                    f"the output has shape {tuple(shape)}")
    return cts


class VJPCall:
    """Everything a vjp call needs besides the argument values: the adjoint, its outputs,
    how results map back to the arguments. Built by the first call of a signature, then
    reused (``k.vjp``'s thin path) when the adjoint needs no tape sized at launch."""

    def __init__(self, kernel, b: Bound, aggregate: bool):
        self.kernel = kernel
        self.adj, self.adj_spec = adjoint_of(b.spec, aggregate, backend=b.backend)
        adj = self.adj
        self.grid, self.threadgroup, self.backend, self.checked = b.grid, b.threadgroup, b.backend, b.checked
        self.outputs = b.outputs
        self.defaults = dict(b.values)
        self.zeros = {}                    # cotangent name -> (shape, type) for a missing cotangent
        for o, ct_name in adj.cotangents.items():
            shape, t = next((s, t) for n, s, t in b.outputs if n == o)
            self.zeros[ct_name] = (shape, t)
        self.grad_outputs = []
        tape_names = {name for name, _, _ in adj.tapes}
        for p in adj.ir.outputs:
            if p.name in tape_names:
                continue
            fwd_name = next(n for n, g in adj.grads.items() if g == p.name)
            fwd_p = b.spec.ir.param(fwd_name)
            shape = tuple(int(s) for s in b.values[fwd_name].shape) if fwd_p.kind == "buffer" else (1,)
            self.grad_outputs.append((p.name, shape or (1,), p.type))
        self.results = []                  # per non-output parameter: how its entry is made
        for prm in b.params:
            fp = b.spec.ir.param(prm.name)
            if b.kinds[prm.name] == "constexpr" or fp is None or not fp.type.is_float:
                self.results.append(None)
                continue
            mt = T.to_mlx(fp.type)
            shape = () if fp.kind == "scalar" else tuple(b.values[prm.name].shape)
            self.results.append((adj.grads.get(prm.name), shape, mt))
        self.reusable = not adj.tapes
        self.plan = None

    def __call__(self, values: dict, cotangents, outputs=None) -> tuple:
        import mlx.core as mx
        cts = cotangent_dict(cotangents, self.outputs, self.kernel.name)
        values = dict(values)
        for o, ct_name in self.adj.cotangents.items():
            c = cts.get(o)
            if c is None:
                shape, t = self.zeros[ct_name]
                c = np.zeros(shape, t.np)
            values[ct_name] = c
        outputs = self.grad_outputs + (outputs or [])
        outs = []
        if outputs:
            if self.backend == "sim":
                outs, _ = self.adj_spec.launch_sim(values, outputs, self.grid, self.threadgroup, self.checked, 0)
            else:
                plan = self.plan if self.reusable else None
                if plan is None:
                    from ..protocol import BoundLaunch
                    bl = BoundLaunch(None, self.adj_spec.key, values, outputs, self.grid, self.threadgroup,
                                     self.backend)
                    plan = self.adj_spec.gpu_plan(bl, self.backend)
                    if self.reusable:
                        self.plan = plan
                outs = plan(values, 0)
        by_name = {n: o for (n, _, _), o in zip(outputs, outs)}
        result = []
        for r in self.results:
            if r is None:
                result.append(None)
                continue
            gname, shape, mt = r
            g = by_name.get(gname)
            if g is None:
                result.append(mx.zeros(shape, dtype=mt))
            else:
                g = g.reshape(shape)
                result.append(g if g.dtype == mt else g.astype(mt))
        return tuple(result)


def _thin_key(kernel, args, kwargs, cotangents, grid, threadgroup, backend, out, checked, aggregate):
    """A hashable signature of a vjp call: array dtypes and shapes, scalar types, constexpr
    values, cotangent signatures and the launch settings (None when some argument has none)."""
    from ..protocol import arg_signature, backend_token
    if out is not None:
        return None
    consts = kernel.__dict__.get("_vjp_consts")
    if consts is None:
        consts = kernel._vjp_consts = {p.name for p, (k, _) in zip(kernel.params, kernel.kinds) if k == "constexpr"}
    key = []
    for name, a in list(zip([p.name for p in kernel._in_params], args)) + sorted(kwargs.items()):
        sig = ("const", repr(a)) if name in consts else arg_signature(a)
        if sig is None:
            return None
        key.append((name, sig))
    if isinstance(cotangents, dict):
        cts = tuple((n, arg_signature(c)) for n, c in sorted(cotangents.items()))
    else:
        cts = tuple(arg_signature(c) for c in (cotangents if isinstance(cotangents, (tuple, list)) else (cotangents,)))
    key = (tuple(key), cts, grid, threadgroup, backend_token(backend), checked, aggregate)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def vjp(kernel, *args, cotangents=None, grid=None, threadgroup=None, backend="auto", out=None,
        checked=None, aggregate: bool = True, **kwargs):
    """The vector-Jacobian product of ``kernel`` at ``args`` with ``cotangents``, by its
    generated adjoint kernel; one entry per (non-output) parameter: an array for float
    arrays, a 0-d array for float scalars, ``None`` for integer arguments and constexprs."""
    if cotangents is None:
        raise KernelLaunchError(f"{kernel.name}.vjp needs cotangents=", hint="one array per output, shaped like it")
    thin = kernel.__dict__.setdefault("_vjp_thin", {})
    key = _thin_key(kernel, args, kwargs, cotangents, grid, threadgroup, backend, out, checked, aggregate)
    call = thin.get(key) if key is not None else None
    if call is not None:
        values = dict(call.defaults)
        values.update(zip([p.name for p in kernel._in_params], args))
        values.update(kwargs)
        return call(values, cotangents)
    b = Bound(kernel, args, kwargs, grid, threadgroup, backend, out, checked)
    call = VJPCall(kernel, b, aggregate)
    if key is not None and call.reusable:
        if len(thin) > 64:
            thin.clear()
        thin[key] = call
    return call(b.values, cotangents, tape_outputs(call.adj, call.adj_spec, b))


def vjp_source(kernel, *args, backend: str = "metal", aggregate: bool = True, out=None, **kwargs) -> str:
    """The generated adjoint kernel for these arguments, as ``backend`` compiles it (MSL
    body for ``metal``, CUDA for ``cuda``, the IR for ``sim``), with how its loops are
    reversed as comments first.

    >>> print(vjp_source(square, x, backend="sim"))        # doctest: +SKIP
    """
    bound = kernel.bind(*args, out=out, **kwargs)
    adj, adj_spec = adjoint_of(kernel.specialization(bound), aggregate, backend=backend)
    notes = "".join(f"// note: {n}\n" for n in adj.notes)
    return notes + adj_spec.source(backend)
