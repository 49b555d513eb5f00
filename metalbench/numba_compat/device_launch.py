"""``cuda.jit`` launches on the GPU backends: the functionalized kernel, merged on the device.

MLX kernels write fresh outputs; a Numba kernel writes its arguments. A launch runs the
kernel :func:`~metalbench.numba_compat.inplace.functionalize` made and puts each written
argument's new contents back:

* a device array in device mode (an ``mx.array``) is rebound to the merged result,
  computed with MLX ops on the device (nothing crosses to the host), or to the
  kernel's output itself where the writes provably cover the array
  (:func:`~metalbench.numba_compat.inplace.coverage`: ``i = cuda.grid(1)``,
  ``if i < n: a[i] = ...`` over a grid of at least ``n`` threads) -- then the
  launch is one kernel, with no mask and no zero-filled outputs;
* an ``mx.array`` argument is updated in place (``a[...] = merged``);
* a NumPy array (or a host-mode device array) is merged on the host, after one copy
  in and one copy out.

What depends only on the launch's shapes (the functionalized kernel per covered set,
the prepared MLX call, output specs) is built once per (backend, grid, threadgroup,
shapes) and kept in the specialisation's artifacts. Repeated launches on device arrays
take :class:`ThinDeviceLaunch`, a prepared call whose host cost is the MLX call itself.
"""
from __future__ import annotations

import contextlib

import numpy as np

from .. import runtime
from .. import types as T
from ..protocol import BoundLaunch, Specialization
from ..thin import front_source, named
from . import inplace, inplace_copy, metal64
from .devicearray import DeviceNDArray
from .runtime_stubs import note_pending


def coverage(sp: Specialization) -> dict:
    """The kernel's :class:`~metalbench.numba_compat.inplace.Cover` proofs (cached)."""
    c = sp.artifacts.get("numba_coverage")
    if c is None:
        c = sp.artifacts["numba_coverage"] = inplace.coverage(sp.ir)
    return c


def covered(sp: Specialization, values: dict, grid) -> frozenset:
    """The written parameters whose coverage proof holds for this launch."""
    proofs = coverage(sp)
    if not proofs:
        return frozenset()
    shapes = {n: tuple(a.shape) for n, (_, a, _) in values.items() if a is not None}
    scalars = {n: v for n, (v, a, _) in values.items() if a is None}
    return frozenset(n for n, c in proofs.items() if c.holds(grid, shapes, scalars))


def functional(sp: Specialization, name: str, cover: frozenset = frozenset(), backend: str | None = None):
    """(functionalized Specialization, merge plans) for the covered set ``cover``; for
    ``metal``, with float64 scalars computed in float32 (:mod:`.metal64`; float64 data
    is an error there)."""
    key = ("numba_functional", cover, backend == "cuda")
    got = sp.artifacts.get(key)
    if got is None:
        proofs = {n: c for n, c in coverage(sp).items() if n in cover} if cover else None
        kir2, plans = inplace.functionalize(sp.ir, name, proofs, backend)
        fsp = Specialization(sp.key + ("functional", tuple(sorted(cover))), kir2, sp.specs, name=name)
        got = sp.artifacts[key] = (fsp, plans)
    if backend != "metal" or not metal64.uses_float64(got[0].ir):
        return got
    mkey = ("numba_functional_metal", cover)
    metal = sp.artifacts.get(mkey)
    if metal is None:
        kir3, where = metal64.demote_float64(got[0].ir)
        metal = sp.artifacts[mkey] = (Specialization(got[0].key + ("metal",), kir3, sp.specs, name=name), got[1])
        metal64.warn_demoted(name, where)
    return metal


def _is_device(v) -> bool:
    return isinstance(v, DeviceNDArray) and v._host is None


def _holds_bits(v) -> bool:
    """A device-mode float64 array held as its bits (uint64) on cuda (``runtime.carrier``)."""
    return v.dtype == np.float64 and v._mx_dtype() != T_to_mlx(T.float64)


def _as_float64(outs: dict, types: dict) -> dict:
    """The kernel's raw outputs with float64 ones (uint64 bits on cuda) viewed as float64."""
    return {k: runtime.bits_float64(x) if types[k] is T.float64 and x.dtype != T_to_mlx(T.float64) else x
            for k, x in outs.items()}


def _prepare(sp, name, values, grid, tg, backend, cover):
    from .host import _numba_double_hint
    with _numba_double_hint(backend):
        fsp, plans = functional(sp, name, cover, backend)
    key = ("functional launch", backend, grid, tg, cover, tuple(values[pl.param][1].shape for pl in plans))
    prepared = sp.artifacts.get(key)
    if prepared is None:
        order = [p.name for p in fsp.ir.outputs]
        out_specs = sorted(((p.name, (1,) if pl.scheme == "copy" else tuple(values[pl.param][1].shape) or (1,),
                             p.type) for pl in plans for p in fsp.ir.outputs if p.name in pl.outputs),
                           key=lambda o: order.index(o[0]))
        init_value = 0 if any(pl.scheme in ("mask", "acc") for pl in plans) else None
        bound = BoundLaunch(None, fsp.key, {}, out_specs, grid, tg, backend, False, init_value)
        mlx_call = fsp.gpu_plan(bound, backend) if backend != "sim" else None
        prepared = sp.artifacts[key] = (fsp, plans, out_specs, mlx_call, init_value)
    return prepared


def run_functional(sp: Specialization, name: str, values: dict, grid, tg, backend: str):
    """Launch the functionalized kernel (``backend`` is "metal", "cuda", or "sim" to
    verify the GPU scheme by execution) and put the merged results into the arguments.

    ``values`` maps each parameter to ``(given, storage, ScalarType)``: the argument as
    given, its NumPy storage (for a device-mode device array its layout only), its type.
    """
    cover = covered(sp, values, grid)
    fsp, plans, out_specs, mlx_call, init_value = _prepare(sp, name, values, grid, tg, backend, cover)
    inputs = {}
    private = {pl.param for pl in plans if pl.scheme == "copy"}
    for p in fsp.ir.inputs:
        v, a, t = values[p.name]
        if p.kind == "scalar":
            inputs[p.name] = v
        elif p.name in private:
            inputs[p.name] = _private(v, a, t, mlx_call, backend)
        elif _is_device(v):
            # the mx.array: no copy (float64 on cuda: its bits, passed on as they are)
            inputs[p.name] = runtime.Float64Bits(v._read()) if mlx_call is not None and _holds_bits(v) \
                else v._read()
        else:
            inputs[p.name] = a if a.dtype == t.np else a.astype(t.np)
    if mlx_call is None:
        outs, _ = fsp.launch_sim(inputs, out_specs, grid, tg, False, init_value, tie=False)
    else:
        outs = mlx_call.call_raw(mlx_call.inputs(inputs), init_value)   # float64 on cuda: bits
    if private:
        _put_private(plans, values, inputs, outs, mlx_call is not None)
    if not out_specs:
        return
    by_name = {o[0]: x for o, x in zip(out_specs, outs)}
    types = {o[0]: o[2] for o in out_specs}
    written = []
    for pl in plans:
        if pl.scheme == "copy":
            continue
        v, a, t = values[pl.param]
        if _is_device(v):
            bits = _holds_bits(v)
            new = inplace.merge_device(pl, v._read(), by_name if bits else _as_float64(by_name, types),
                                       float64_bits=bits)
            v._write(new)
            written.append(new)
        elif type(v).__module__.startswith("mlx"):
            import mlx.core as mx
            f64 = _as_float64(by_name, types)
            # MLX computes float64 only on the CPU stream
            f64_math = mx.float64 in (v.dtype, f64[pl.outputs[0]].dtype)
            with mx.stream(mx.cpu) if f64_math else contextlib.nullcontext():
                orig = v if v.dtype == f64[pl.outputs[0]].dtype else v.astype(f64[pl.outputs[0]].dtype)
                new = inplace.merge_device(pl, orig, f64)
                v[...] = new if new.dtype == v.dtype else new.astype(v.dtype)
        else:
            from .host import _write_back
            host = {k: runtime.to_numpy(x) for k, x in _as_float64(by_name, types).items() if k in pl.outputs}
            orig = a if a.dtype == t.np else a.astype(t.np)
            _write_back(v, a, inplace.merge(pl, orig, host))
    if written:
        note_pending(written)


def _private(v, a, t, mlx_call, backend):
    """The private copy a "copy"-scheme parameter's kernel writes through
    (:mod:`.inplace_copy`): on the GPU a fresh copy kernel output (float64 on cuda as its
    bits, as the kernel receives it), on the simulator a NumPy copy."""
    if mlx_call is None:
        return np.array(a.astype(t.np, copy=False), copy=True)
    if _is_device(v):
        src = v._read()
    elif type(v).__module__.startswith("mlx"):
        src = v
    else:
        src = runtime.to_mlx(a.astype(t.np, copy=False))
    if t is T.float64 and backend == "cuda":
        src = src if src.dtype == T_to_mlx(T.uint64) else runtime.float64_bits(src)
        return runtime.Float64Bits(inplace_copy.private_copy(src, backend).reshape(a.shape))
    if src.dtype != T_to_mlx(t):
        src = src.astype(T_to_mlx(t))
    return inplace_copy.private_copy(src, backend).reshape(a.shape)


def _put_private(plans, values, inputs, outs, gpu: bool):
    """Each "copy"-scheme parameter's new contents: its private copy, written by the kernel
    (on the GPU a value that depends on the launch, :func:`.inplace_copy.finish`)."""
    written = []
    for pl in plans:
        if pl.scheme != "copy":
            continue
        v, a, t = values[pl.param]
        c = inputs[pl.param]
        if not gpu:                                   # the simulator wrote the NumPy copy
            from .host import _write_back
            _write_back(v, a, c.reshape(a.shape))
            continue
        bits = isinstance(c, runtime.Float64Bits)
        new = inplace_copy.finish(c.bits if bits else c, outs)
        if _is_device(v):
            v._write(new if bits == _holds_bits(v) else runtime.bits_float64(new))
            written.append(new)
        elif type(v).__module__.startswith("mlx"):
            new = runtime.bits_float64(new) if bits else new
            v[...] = new if new.dtype == v.dtype else new.astype(v.dtype)
        else:
            from .host import _write_back
            _write_back(v, a, runtime.to_numpy(runtime.bits_float64(new) if bits else new).reshape(a.shape))
    if written:
        note_pending(written)


class ThinDeviceLaunch:
    """A prepared launch for arguments that are device-mode device arrays and scalars,
    on a GPU backend: a function generated for the kernel's inputs builds the MLX input
    list by position, calls the MLX kernel and rebinds the written arrays to its outputs
    (merged on the device when not covered). Valid while the call's signature (dtypes,
    shapes, scalar types) stays the same; scalars that bound a coverage proof are
    compared on every call (another value: the caller takes the general path)."""

    def __init__(self, sp, name, values, grid, tg, backend, arg_names, guard=None):
        from ..protocol import _cached_scalar, unpad
        from ..thin import is_numpy_number
        from . import runtime_stubs
        cover = covered(sp, values, grid)
        fsp, plans, out_specs, mlx_call, init_value = _prepare(sp, name, values, grid, tg, backend, cover)
        if any(pl.scheme == "copy" for pl in plans):
            self.launch = self.front = None        # a private copy per launch: the general path
            return
        pos = {n: i for i, n in enumerate(arg_names)}
        env = {"kernel": mlx_call.kernel, "init_value": init_value, "merge": inplace.merge_device,
               "pending": runtime_stubs._pending, "flush": runtime_stubs.note_pending,
               "MAXP": runtime_stubs._PENDING_MAX, "unpad": unpad}
        env.update(("k_" + k, v) for k, v in mlx_call.kwargs.items())
        items, in_pos, inline = [], {}, {}

        def current(i):     # argument i's contents: an owner's mx.array, a view's read
            return f"(a{i}._dev if a{i}._base is None else a{i}._read())"
        for j, (n, kind, t) in enumerate(mlx_call.spec_inputs):
            i = pos[n]
            if kind == "scalar":
                env[f"c{j}"] = cs = _cached_scalar(t, backend)
                items.append(f"c{j}(a{i})")
                if type(values[n][0]) in (float, int, bool) or is_numpy_number(values[n][0]):  # (a guard keeps the type)
                    env[f"sc{j}"] = cs.cache
                    inline[items[-1]] = f"(s if a{i} and (s := sc{j}.get(a{i})) is not None else c{j}(a{i}))"
            else:
                in_pos[i] = j
                items.append(current(i))
        for j, e in enumerate(mlx_call.extra):
            env[f"e{j}"] = e
            items.append(f"e{j}")
        out_pos = {o[0]: k for k, o in enumerate(out_specs)}
        n_args = len(arg_names)
        lines = [f"def launch(args):", f"    {', '.join(f'a{i}' for i in range(n_args))}, = args"]
        # Scalars a coverage proof reads (``if i < n``): another value is another launch.
        names = {v.name for c in coverage(sp).values() if c.param in cover
                 for _, bounds in c.axes for b in bounds for v in _vars(b)}
        for n in sorted(names):
            if n in pos and values[n][1] is None:
                env[f"b_{n}"] = values[n][0]
                lines.append(f"    if a{pos[n]} != b_{n}: return False")
        lines.append(f"    ins = [{', '.join(items)}]")
        kws = ", ".join(f"{k}=k_{k}" for k in mlx_call.kwargs)
        init = ", init_value=init_value" if init_value is not None else ""     # None: MLX's default
        lines.append(f"    outs = kernel(inputs=ins, {kws}{init})")
        lines += mlx_call.unpad_source().splitlines()
        for pl in plans:
            i = pos[pl.param]
            if pl.scheme == "cover":
                lines.append(f"    new = outs[{out_pos[pl.outputs[0]]}]")
            else:
                env[f"pl{i}"] = pl
                outs_d = ", ".join(f"{o!r}: outs[{out_pos[o]}]" for o in pl.outputs)
                bits = values[pl.param][0].dtype == np.float64 and backend == "cuda"
                orig = f"ins[{in_pos[i]}]" if i in in_pos else current(i)     # (not a kernel input)
                lines.append(f"    new = merge(pl{i}, {orig}, {{{outs_d}}}, float64_bits={bits})")
            lines.append(f"    if a{i}._base is None: a{i}._dev = new")
            lines.append(f"    else: a{i}._write(new)")
            lines.append("    pending.append(new)")
        lines += ["    if len(pending) >= MAXP: flush(())", "    return True"]
        src = "\n".join(lines) + "\n"
        if guard is not None:
            # ``front(launcher, *args, **kwargs)``: the launcher's calls (``launcher._Launcher``,
            # a FastCall): ``guard``'s checks (lines, env: the call's key) and this launch in
            # one frame; a call without the key goes to ``launcher._miss``
            body = "\n".join(lines[2:]) + "\n"
            for call, cached in inline.items():     # the scalar cache inlined: a call costs more
                body = body.replace(call, cached)
            body = body.replace("return False", "return MISS").replace("return True", "box[0] = last")
            src += front_source("launcher, *args, **kwargs", guard[0], body, "launcher._miss(args, kwargs)", env,
                                "kwargs")
            env.update(guard[1])
        exec(compile(src, f"<metalbench cuda.jit launch {name}>", "exec"), env)
        self.launch = env["launch"]
        self.front = env.get("__call__") and named(env["__call__"], "_Launcher.__call__")
        # The outputs rebind the arrays only if they have the arrays' MLX dtype and shape.
        for pl in plans:
            v = values[pl.param][0]
            spec = next(o for o in out_specs if o[0] == pl.outputs[0])
            if tuple(spec[1]) != (tuple(v._kmeta.shape) or (1,)) or \
                    v._mx_dtype() != T_to_mlx(runtime.carrier(spec[2], backend)):
                self.launch = self.front = None

    def __call__(self, args) -> bool:
        """Launch; False when this prepared launch does not apply (the general path runs)."""
        return self.launch is not None and self.launch(args)


def T_to_mlx(t):
    return T.to_mlx(t)


def _vars(e):
    from .. import ir
    return [n for n in ir.walk(e) if isinstance(n, ir.Var)]
