"""In-place array arguments on backends whose outputs are fresh arrays (MLX).

Numba kernels write into their array arguments; ``mx.fast.metal_kernel`` and
``mx.fast.cuda_kernel`` only read inputs and write fresh outputs. :func:`functionalize`
is an IR-to-IR pass that turns every written parameter ``p`` into outputs whose merge
with the original gives exactly what in-place execution gives:

* plain stores/loads: ``p`` stays an input (the original values); two outputs are added,
  ``p__out`` (the stored values) and ``p__mask`` (1 where stored). A store writes both;
  a load reads ``p__mask[j] ? p__out[j] : p[j]``. The host merges
  ``where(mask, out, p)``. Outputs start at 0 (``init_value=0``), so the mask is exact.
* atomics only, all ``add``/``sub`` (or all ``or``, or all ``xor``): one output
  ``p__acc`` starting at 0 (the identity of these operations) accumulates; an atomic
  evaluates to ``p[j] (+,|,^) old_acc`` (the old value in-place execution returns), a
  plain load to ``p[j] (+,|,^) atomic_load(acc[j])``. The host merges ``p (+,|,^) acc``.

MLX applies ``init_value`` to every output and ``atomic_outputs`` to every output, so
all added outputs are zero-initialised (which every scheme above wants) and, when any
is atomic, every access to every output is an atomic load/store (and needs 32-bit
elements). What fresh outputs cannot make exact -- atomics other than the above (max, min,
exch, cas, inc, dec), atomics mixed with plain stores on one parameter, a written parameter
passed to a device function, atomics on elements MLX cannot make atomic -- runs on
``cuda`` (and ``sim``, to verify) through a private copy the kernel writes through
(scheme "copy", :mod:`.inplace_copy`), and is refused on ``metal`` with
:class:`KernelLaunchError` naming the parameter, as is an index with side effects in a
load of a written parameter.

    kir2, plan = functionalize(kir)         # then launch kir2 with init_value=0
    merged = merge(plan, originals, outs)
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields

import numpy as np

from .. import ir
from .. import types as T
from ..builtins import ATOMIC_ELEMS, registry
from ..errors import KernelLaunchError
from . import inplace_copy
from .inplace_copy import COPY_BACKENDS

_HINT = "run it with backend='sim' (exact in-place semantics), or write the result to a separate array"
_COPY_NOTE = " (backend 'cuda' runs it through a private copy, numba_compat/inplace_copy.py)"
_COPY_NOTE_METAL = (" on metal (small inputs live in constant memory there, which a kernel cannot write; "
                    "backend 'cuda' and 'sim' run it)")
_COMBINE = {"add": "+", "sub": "+", "or": "|", "xor": "^"}
_ATOMIC_OK = tuple(ATOMIC_ELEMS)     # the element types Metal has atomics for (builtins/nodes.py)


@dataclass
class Usage:
    """How a kernel uses one buffer parameter."""
    stores: int = 0
    loads: int = 0
    atomics: set = field(default_factory=set)
    functions: set = field(default_factory=set)

    @property
    def written(self) -> bool:
        return bool(self.stores or self.atomics)


def _func_writes(kir: ir.KernelIR) -> dict[str, set[int]]:
    """For each device function, the indices of its buffer parameters it writes to
    (directly or through the functions it calls)."""
    funcs = {f.name: f for f in kir.functions}
    memo: dict[str, set[int]] = {}

    def visit(name):
        if name in memo:
            return memo[name]
        memo[name] = set()
        f = funcs[name]
        pnames = [p.name for p in f.params]
        out = set()
        for n in ir.walk(f.body):
            if isinstance(n, (ir.Store, ir.Atomic)) and n.buf in pnames:
                if not (isinstance(n, ir.Atomic) and n.op == "load"):
                    out.add(pnames.index(n.buf))
            if isinstance(n, ir.FuncCall) and n.func in funcs:
                inner = visit(n.func)
                for k, a in enumerate(n.args):
                    if isinstance(a, ir.BufArg) and k in inner and a.buf in pnames:
                        out.add(pnames.index(a.buf))
        memo[name] = out
        return out
    for f in kir.functions:
        visit(f.name)
    return memo


def usage(kir: ir.KernelIR) -> dict[str, Usage]:
    """How the kernel body uses each buffer parameter (by name).

    A parameter passed to a device function that writes it counts as stored.
    """
    fw = _func_writes(kir)
    u = {p.name: Usage() for p in kir.params if p.kind == "buffer"}
    for n in ir.walk(kir.body):
        if isinstance(n, ir.Store) and n.buf in u:
            u[n.buf].stores += 1
        elif isinstance(n, ir.Load) and n.buf in u:
            u[n.buf].loads += 1
        elif isinstance(n, ir.Atomic) and n.buf in u:
            if n.op == "load":
                u[n.buf].loads += 1
            else:
                u[n.buf].atomics.add(n.op)
        elif isinstance(n, ir.FuncCall):
            for k, a in enumerate(n.args):
                if isinstance(a, ir.BufArg) and a.buf in u:
                    u[a.buf].functions.add(n.func)
                    if k in fw.get(n.func, ()):
                        u[a.buf].stores += 1
    return u


def written_params(kir: ir.KernelIR) -> list[str]:
    """The buffer parameters the kernel may write, in parameter order."""
    u = usage(kir)
    return [p.name for p in kir.params if p.name in u and u[p.name].written]


@dataclass
class Plan:
    """What :func:`functionalize` did to one written parameter."""
    param: str
    scheme: str                 # "cover", "mask" or "acc"
    outputs: list[str]
    combine: str | None = None  # for "acc": "+", "|", "^"


def _pure(e) -> bool:
    for n in ir.walk(e):
        if isinstance(n, (ir.Atomic, ir.FuncCall)):
            return False
        if isinstance(n, ir.Call) and registry.get(n.name).kind == "simd":    # simd_*, quad_*
            return False
    return True


def functionalize(kir: ir.KernelIR, kernel_name: str | None = None,
                  cover: dict | None = None, backend: str | None = None) -> tuple[ir.KernelIR, list[Plan]]:
    """Rewrite ``kir`` so that no input parameter is written (see the module docstring).

    ``cover`` maps parameters to the :class:`Cover` proofs that hold for this launch:
    those get one output, ``p__out``, written where ``p`` is stored and read where the
    thread reads back its own stored element (scheme "cover"; the merge is the output).

    Returns the new kernel IR (``kir`` is not modified) and one :class:`Plan` per
    written parameter, in order. Raises :class:`KernelLaunchError` naming the parameter
    for what cannot be made exact. ``backend="cuda"`` also accumulates 64-bit elements
    (int64, uint64, float64: CUDA has those atomics; MLX's cuda_kernel makes no output atomic).
    """
    kname = kernel_name or kir.name
    atomic_ok = _ATOMIC_OK + ((T.int64, T.uint64, T.float64) if backend == "cuda" else ())
    cover = cover or {}
    after_loads = set().union(*(c.after_loads for c in cover.values())) if cover else set()
    u = usage(kir)
    plans: dict[str, Plan] = {}
    names = {p.name for p in kir.params}
    for n in ir.walk(kir.body):
        if isinstance(n, ir.Var):
            names.add(n.name)
        elif isinstance(n, ir.ArrayDecl):
            names.add(n.name)

    def unique(base):
        name, i = base, 1
        while name in names:
            name = f"{base}{i}"
            i += 1
        names.add(name)
        return name

    params = [p for p in kir.params if p.kind == "buffer" and not p.is_output and u[p.name].written]
    copies: dict[str, Plan] = {}       # written through a private copy (inplace_copy.py)
    can_copy = backend in COPY_BACKENDS

    def refuse(message, hint=_HINT):
        if can_copy:
            return True
        raise KernelLaunchError(message + (_COPY_NOTE if backend != "metal" else _COPY_NOTE_METAL), hint=hint)

    for p in params:
        us = u[p.name]
        where = f"in kernel {kname!r}, array argument {p.name!r}"
        if us.functions and refuse(
                f"{where} is written by the kernel and passed to device function(s) "
                f"{', '.join(sorted(us.functions))}; in-place updates through device functions are not "
                "supported on this backend"):
            copies[p.name] = Plan(p.name, "copy", [])
            continue
        if us.atomics:
            combos = {_COMBINE.get(op) for op in us.atomics}
            if us.stores and refuse(
                    f"{where} is updated both atomically and by plain stores; this cannot be made exact on this "
                    "backend, whose outputs are fresh arrays"):
                copies[p.name] = Plan(p.name, "copy", [])
                continue
            if (None in combos or len(combos) != 1):
                bad = sorted(op for op in us.atomics if op not in _COMBINE) or sorted(us.atomics)
                if refuse(f"{where} is updated with atomic {', '.join(bad)}; here in-place atomics are "
                          "supported only for add/sub (or only or, or only xor), which can start from zero in a "
                          "fresh output"):
                    copies[p.name] = Plan(p.name, "copy", [])
                    continue
            if p.type not in atomic_ok:
                if refuse(f"{where}: atomics need int32, uint32 or float32 elements, not "
                          f"{p.type.name}" + (" (64-bit ones work on cuda)" if p.type.bits == 64 else "")):
                    copies[p.name] = Plan(p.name, "copy", [])
                    continue
            plans[p.name] = Plan(p.name, "acc", [unique(p.name + "__acc")], combos.pop())
        elif p.name in cover:
            plans[p.name] = Plan(p.name, "cover", [unique(p.name + "__out")])
        else:
            plans[p.name] = Plan(p.name, "mask", [unique(p.name + "__out"), unique(p.name + "__mask")])

    atomic_mode = any(pl.scheme == "acc" for pl in plans.values()) or any(p.atomic for p in kir.outputs)
    if atomic_mode:
        for pl in plans.values():
            t = kir.param(pl.param).type
            if pl.scheme in ("mask", "cover") and t not in atomic_ok and can_copy:
                copies[pl.param] = Plan(pl.param, "copy", [])       # (its outputs would be atomic)
            elif pl.scheme in ("mask", "cover") and t not in atomic_ok:
                raise KernelLaunchError(
                    f"in kernel {kname!r}, array argument {pl.param!r} ({t.name}) is written while another "
                    "argument is updated atomically; MLX then makes every output atomic, which needs int32, "
                    "uint32 or float32 elements", hint=_HINT)
    for name in copies:
        plans.pop(name, None)
    mask_t = T.uint32 if atomic_mode else T.uint8

    new_params = []
    for p in kir.params:
        q = copy.copy(p)
        if p.name in plans:
            q.atomic = False
            if hasattr(q, "written"):
                q.written = False
        new_params.append(q)
    inputs = [q for q in new_params if not q.is_output]
    outputs = [q for q in new_params if q.is_output]
    for pl in plans.values():
        p = kir.param(pl.param)
        if pl.scheme == "cover":
            outputs.append(ir.Param(pl.outputs[0], "buffer", p.type, p.ndim, is_output=True, atomic=atomic_mode))
        elif pl.scheme == "mask":
            outputs.append(ir.Param(pl.outputs[0], "buffer", p.type, p.ndim, is_output=True, atomic=atomic_mode))
            outputs.append(ir.Param(pl.outputs[1], "buffer", mask_t, p.ndim, is_output=True, atomic=atomic_mode))
        else:
            outputs.append(ir.Param(pl.outputs[0], "buffer", p.type, p.ndim, is_output=True, atomic=True))
    if atomic_mode:
        for q in outputs:
            q.atomic = True

    decls: list[ir.Stmt] = []
    out_types = {q.name: q.type for q in outputs}

    def load_out(buf, idx, sp):
        t = out_types[buf]
        if atomic_mode:
            return ir.Atomic("load", buf, idx, [], t, span=sp)
        return ir.Load(buf, idx, t, span=sp)

    def store_out(buf, idx, value, sp):
        if atomic_mode:
            return ir.ExprStmt(ir.Atomic("store", buf, idx, [value], out_types[buf], span=sp), span=sp)
        return ir.Store(buf, idx, value, span=sp)

    def mexpr(e):
        if e is None or not isinstance(e, ir.Node):
            return e
        if isinstance(e, ir.Load) and e.buf in plans:
            pl = plans[e.buf]
            idx = mexpr(e.index)
            if not _pure(idx):
                raise KernelLaunchError(
                    f"in kernel {kname!r}, array argument {e.buf!r} is written by the kernel and read here with an "
                    f"index that has side effects (an atomic or a function call){_where(e)}; this is not "
                    "supported on the GPU backends", hint="compute the index into a variable first")
            orig = ir.Load(e.buf, idx, e.type, span=e.span)
            if pl.scheme == "cover":
                return load_out(pl.outputs[0], idx, e.span) if id(e) in after_loads else orig
            if pl.scheme == "mask":
                cond = ir.BinOp("!=", load_out(pl.outputs[1], idx, e.span), ir.Const(0, mask_t), T.bool_, span=e.span)
                return ir.Select(cond, load_out(pl.outputs[0], idx, e.span), orig, e.type, span=e.span)
            return ir.BinOp(pl.combine, orig, ir.Atomic("load", pl.outputs[0], idx, [], e.type, span=e.span),
                            e.type, span=e.span)
        if isinstance(e, (ir.ShapeOf, ir.NDimOf)) and e.buf in plans and plans[e.buf].scheme == "cover":
            # the output has the argument's shape: read it there, so that an argument the
            # kernel only stores to and measures (``if i < out.size: out[i] = ...``) is no
            # input at all (no copy of its old contents kept alive, no wait on its producer)
            n = copy.copy(e)
            n.buf = plans[e.buf].outputs[0]
            return n
        if isinstance(e, ir.Atomic) and e.buf in plans:
            pl = plans[e.buf]
            idx = mexpr(e.index)
            args = [mexpr(a) for a in e.args]
            if not _pure(idx):
                raise KernelLaunchError(
                    f"in kernel {kname!r}, an atomic on array argument {e.buf!r} has an index with side effects"
                    f"{_where(e)}; this is not supported on the GPU backends",
                    hint="compute the index into a variable first")
            if e.op == "load":
                return mexpr(ir.Load(e.buf, idx, e.type, span=e.span))
            old = ir.Atomic(e.op, pl.outputs[0], idx, args, e.type, span=e.span)
            return ir.BinOp(pl.combine, ir.Load(e.buf, idx, e.type, span=e.span), old, e.type, span=e.span)
        n = copy.copy(e)
        for f in fields(n):
            v = getattr(n, f.name)
            if isinstance(v, ir.Node):
                setattr(n, f.name, mexpr(v) if isinstance(v, ir.Expr) else v)
            elif isinstance(v, list) and any(isinstance(x, ir.Node) for x in v):
                setattr(n, f.name, [mexpr(x) for x in v])
        return n

    def mstmts(stmts):
        out = []
        for s in stmts:
            out.extend(mstmt(s))
        return out

    def mstmt(s) -> list:
        if isinstance(s, ir.Store) and s.buf in plans:
            pl = plans[s.buf]
            idx = mexpr(s.index)
            value = mexpr(s.value)
            if pl.scheme == "cover":
                return [store_out(pl.outputs[0], idx, value, s.span)]
            pre = []
            if not isinstance(idx, (ir.Var, ir.Const)):
                tmp = ir.Var(unique("_mb_ix"), idx.type)
                decls.append(ir.Decl(tmp))
                pre.append(ir.Assign(tmp, idx, span=s.span))
                idx = ir.Var(tmp.name, tmp.type)
            # Value first: it may read the mask/out of this very element (x[i] = x[i] + 1).
            vt = out_types[pl.outputs[0]]
            if not isinstance(value, (ir.Var, ir.Const)):
                tv = ir.Var(unique("_mb_v"), vt)
                decls.append(ir.Decl(tv))
                pre.append(ir.Assign(tv, value, span=s.span))
                value = ir.Var(tv.name, vt)
            return pre + [store_out(pl.outputs[0], idx, value, s.span),
                          store_out(pl.outputs[1], idx, ir.Const(1, mask_t), s.span)]
        if isinstance(s, ir.ExprStmt) and isinstance(s.expr, ir.Atomic) and s.expr.buf in plans \
                and s.expr.op != "load":
            # The old value is unused: only the accumulator is updated.
            e = s.expr
            idx = mexpr(e.index)
            acc = plans[e.buf].outputs[0]
            return [ir.ExprStmt(ir.Atomic(e.op, acc, idx, [mexpr(a) for a in e.args], e.type, span=e.span),
                                span=s.span)]
        n = copy.copy(s)
        for f in fields(n):
            v = getattr(n, f.name)
            if isinstance(v, ir.Stmt):
                r = mstmt(v)
                setattr(n, f.name, r[0] if len(r) == 1 else v)
            elif isinstance(v, ir.Expr):
                setattr(n, f.name, mexpr(v))
            elif isinstance(v, list) and v and all(isinstance(x, ir.Stmt) for x in v):
                setattr(n, f.name, mstmts(v))
            elif isinstance(v, list) and any(isinstance(x, ir.Expr) for x in v):
                setattr(n, f.name, [mexpr(x) for x in v])
        return [n]

    body = mstmts(kir.body)
    if copies:      # written through a writable view of a private copy (inplace_copy.py)
        decls[:0] = inplace_copy.declarations(kir, inplace_copy.rewrite(body, list(copies)))
        if not outputs:     # MLX wants an output; the result depends on it (inplace_copy.finish)
            done = unique(inplace_copy.DONE)
            outputs.append(ir.Param(done, "buffer", T.uint32, 1, is_output=True))
            copies[next(iter(copies))].outputs.append(done)
    # Threadgroup arrays stay first, as the IR's producers put them.
    k = 0
    while k < len(body) and isinstance(body[k], ir.ArrayDecl):
        k += 1
    funcs = inplace_copy.writable_functions(kir, _func_writes(kir)) if copies else kir.functions
    body = body[:k] + decls + body[k:]
    # A written argument the kernel no longer reads is no input: only the merge needs its
    # old contents. An input the kernel does not read still orders it after the input's
    # producer in MLX's CUDA graph, so a loop of launches accumulating into one array
    # (``cuda.atomic.add(hits, step, 1)``) would run kernel, merge, kernel, merge... one
    # at a time instead of letting the kernels overlap (4x slower at 64K elements).
    unread = set(plans) - _names_in(body, funcs)
    inputs = [q for q in inputs if q.name not in unread]
    new = ir.KernelIR(kir.name, inputs + outputs, body, functions=funcs, globals=kir.globals, source=kir.source)
    plans.update(copies)
    return new, [plans[p.name] for p in params]


def _names_in(body: list, functions) -> set:
    """Every buffer or variable name the statements ``body`` and the device functions
    refer to (any string field of a node: ``buf``, ``name``, a call's buffer arguments)."""
    names = set()
    for root in [body] + [f.body for f in functions]:
        for n in ir.walk(root):
            for f in fields(n):
                v = getattr(n, f.name)
                if isinstance(v, str):
                    names.add(v)
                elif isinstance(v, (list, tuple)):
                    names.update(x for x in v if isinstance(x, str))
    return names


def _where(node) -> str:
    return f" (line {node.span.line})" if getattr(node, "span", None) is not None else ""


def merge(plan: Plan, original: np.ndarray, outs: dict[str, np.ndarray]) -> np.ndarray:
    """The in-place result of ``plan.param`` from its original values and the outputs.

    >>> p = Plan("x", "mask", ["x__out", "x__mask"])
    >>> merge(p, np.array([1, 2, 3]), {"x__out": np.array([9, 0, 7]), "x__mask": np.array([1, 0, 1])}).tolist()
    [9, 2, 7]
    """
    if plan.scheme == "cover":
        return outs[plan.outputs[0]].reshape(original.shape).astype(original.dtype, copy=False)
    if plan.scheme == "mask":
        out = outs[plan.outputs[0]].reshape(original.shape)
        mask = outs[plan.outputs[1]].reshape(original.shape)
        return np.where(mask != 0, out, original).astype(original.dtype, copy=False)
    acc = outs[plan.outputs[0]].reshape(original.shape)
    with np.errstate(over="ignore"):
        if plan.combine == "+":
            return (original + acc).astype(original.dtype, copy=False)
        if plan.combine == "|":
            return original | acc
        return original ^ acc


# ----------------------------------------------------------------------------- coverage

@dataclass
class Cover:
    """A proof, up to launch facts, that every thread writes its own element of ``param``
    and that the launch's threads reach every element: ``axes`` lists, per dimension
    of the store's index, the grid axis (0, 1, 2) and the guard bounds on it. The
    proof holds for a launch when :meth:`holds` says so; the functionalized kernel
    then needs no mask and the merge is the output itself.

    ``after_loads`` are the loads of ``param`` (``id`` of IR nodes) that come after the
    thread's own store at the same index (they read the stored value); every other
    load comes before any store and reads the original.
    """
    param: str
    axes: list             # [(grid axis, [bound Expr, ...])] per index dimension (1 or 2)
    after_loads: set

    def holds(self, grid3, shapes: dict, scalars: dict) -> bool:
        shape = shapes[self.param]
        extents = (int(np.prod(shape)),) if len(self.axes) == 1 else tuple(shape)
        for (axis, bounds), ext in zip(self.axes, extents):
            if grid3[axis] < ext:
                return False
            for b in bounds:
                v = _eval_bound(b, shapes, scalars)
                if v is None or v < ext:
                    return False
        return True


def _eval_bound(e, shapes, scalars):
    if isinstance(e, ir.Const):
        return e.value
    if isinstance(e, ir.ShapeOf):
        s = shapes.get(e.buf)
        return None if s is None or e.dim >= len(s) else int(s[e.dim])
    if isinstance(e, ir.Var):
        v = scalars.get(e.name)
        return None if v is None else v
    if isinstance(e, ir.Cast):
        return _eval_bound(e.value, shapes, scalars)
    if isinstance(e, ir.BinOp) and e.op in ("*", "+", "-"):
        a, b = _eval_bound(e.a, shapes, scalars), _eval_bound(e.b, shapes, scalars)
        if a is None or b is None:
            return None
        return a * b if e.op == "*" else a + b if e.op == "+" else a - b
    return None


def _strip(e):
    while isinstance(e, ir.Cast) and isinstance(e.type, T.ScalarType) and e.type.is_int:
        e = e.value
    return e


def _attr_axis(e, name):
    e = _strip(e)
    if isinstance(e, ir.Swizzle) and len(e.components) == 1 and isinstance(e.value, ir.ThreadAttr) \
            and e.value.name == name:
        return "xyz".index(e.components)
    return None


def _axis_of(e):
    """The grid axis whose global thread position ``e`` is, or None."""
    e = _strip(e)
    a = _attr_axis(e, "thread_position_in_grid")
    if a is not None:
        return a
    if isinstance(e, ir.Swizzle) and len(e.components) == 1 and isinstance(e.value, ir.VecCons):
        k = "xyzw".index(e.components)
        return _axis_of(e.value.args[k]) if k < len(e.value.args) else None
    if isinstance(e, ir.BinOp) and e.op == "+":      # threadIdx.x + blockIdx.x * blockDim.x
        for tid, prod in ((e.a, e.b), (e.b, e.a)):
            prod = _strip(prod)
            t = _attr_axis(tid, "thread_position_in_threadgroup")
            if t is None or not (isinstance(prod, ir.BinOp) and prod.op == "*"):
                continue
            for g, b in ((prod.a, prod.b), (prod.b, prod.a)):
                if _attr_axis(g, "threadgroup_position_in_grid") == t and \
                        _attr_axis(b, "threads_per_threadgroup") == t:
                    return t
    return None


def _axis_vars(kir: ir.KernelIR) -> dict:
    """Variables assigned once in the whole kernel, to a global thread position: name -> axis."""
    count, value = {}, {}
    for n in ir.walk(kir.body):
        if isinstance(n, ir.Assign):
            count[n.var.name] = count.get(n.var.name, 0) + 1
            value[n.var.name] = n.value
        elif isinstance(n, ir.Decl) and n.init is not None:
            count[n.var.name] = count.get(n.var.name, 0) + 1
            value[n.var.name] = n.init
        elif isinstance(n, ir.For):
            count[n.var.name] = count.get(n.var.name, 0) + 2
    out = {}
    for name, c in count.items():
        if c == 1:
            a = _axis_of(value[name])
            if a is not None:
                out[name] = a
    return out


def _index_axis(e, axis_vars):
    e = _strip(e)
    if isinstance(e, ir.Var) and e.name in axis_vars:
        return axis_vars[e.name]
    return _axis_of(e)


def _bounds(cond, axis_vars, negate=False):
    """Guard ``cond`` (or its negation) as {axis: [bound, ...]}, or None when it is not a
    conjunction of ``position < bound`` comparisons."""
    out: dict = {}
    conj_op = "or" if negate else "and"
    if isinstance(cond, ir.Logical):
        if cond.op != conj_op:
            return None
        a, b = _bounds(cond.a, axis_vars, negate), _bounds(cond.b, axis_vars, negate)
        if a is None or b is None:
            return None
        for k, v in b.items():
            a.setdefault(k, []).extend(v)
        return a
    if not isinstance(cond, ir.BinOp):
        return None
    flip = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}
    op, lhs, rhs = cond.op, cond.a, cond.b
    if op not in flip:
        return None
    if _index_axis(lhs, axis_vars) is None:
        op, lhs, rhs = flip[op], rhs, lhs
    axis = _index_axis(lhs, axis_vars)
    if axis is None or any(isinstance(n, (ir.Load, ir.Atomic, ir.FuncCall, ir.Call)) for n in ir.walk(rhs)):
        return None
    if negate:      # not (i >= b) is i < b; not (i > b) is i <= b
        op = {">=": "<", ">": "<=", "<": None, "<=": None}[op]
    if op == "<":
        return {axis: [rhs]}
    if op == "<=":
        return {axis: [ir.BinOp("+", rhs, ir.Const(1, rhs.type), rhs.type)]}
    return None


def _returns(stmt) -> bool:
    return any(isinstance(n, (ir.Return, ir.Break, ir.Continue)) for n in ir.walk(stmt))


def _find_cover_store(body, p, axis_vars, guards):
    """The first store to ``p`` every thread inside the guards executes: (store, guards)."""
    for s in body:
        if isinstance(s, ir.Store) and s.buf == p:
            return s, guards
        if isinstance(s, ir.If):
            if not s.orelse and len(s.then) == 1 and isinstance(s.then[0], ir.Return):
                g = _bounds(s.cond, axis_vars, negate=True)
                if g is None:
                    return None
                guards = _merge(guards, g)
                continue
            if any(isinstance(n, ir.Store) and n.buf == p for n in ir.walk(s.then)):
                g = _bounds(s.cond, axis_vars)
                return None if g is None else _find_cover_store(s.then, p, axis_vars, _merge(guards, g))
        if _returns(s):
            return None
        if any(isinstance(n, ir.Store) and n.buf == p for n in ir.walk(s)):
            return None     # the first store is inside a loop or another construct
    return None


def _merge(a, b):
    out = {k: list(v) for k, v in a.items()}
    for k, v in b.items():
        out.setdefault(k, []).extend(v)
    return out


def _same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, ir.Node):
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in fields(a) if f.name != "span")
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def coverage(kir: ir.KernelIR) -> dict[str, Cover]:
    """The written parameters whose writes provably cover the whole array (up to the
    launch facts :meth:`Cover.holds` checks): every thread stores its own element
    (``a[i]`` with ``i`` the thread's global position, or ``a[i, j]`` over a 2-D grid)
    under guards ``i < bound`` only, stores only there, and reads the array only before
    its store or at its own element after it. No atomics, no device functions.

    >>> # the covered update: i = cuda.grid(1); if i < x.size: x[i] = 2 * x[i]
    """
    u = usage(kir)
    axis_vars = _axis_vars(kir)
    out = {}
    for p in kir.params:
        if p.kind != "buffer" or p.is_output or p.name not in u:
            continue
        us = u[p.name]
        if not us.stores or us.atomics or us.functions:
            continue
        found = _find_cover_store(kir.body, p.name, axis_vars, {})
        if found is None:
            continue
        store, guards = found
        idx = _strip(store.index)
        a = _index_axis(idx, axis_vars)
        if a is not None:
            axes = [(a, guards.get(a, []))]
        else:           # i * p.shape[1] + j
            if not (isinstance(idx, ir.BinOp) and idx.op == "+"):
                continue
            m, j = _strip(idx.a), idx.b
            if not (isinstance(m, ir.BinOp) and m.op == "*"):
                m, j = _strip(idx.b), idx.a
            if not (isinstance(m, ir.BinOp) and m.op == "*"):
                continue
            ai, sh = _index_axis(m.a, axis_vars), _strip(m.b)
            if ai is None:
                ai, sh = _index_axis(m.b, axis_vars), _strip(m.a)
            aj = _index_axis(j, axis_vars)
            if ai is None or aj is None or ai == aj or not (isinstance(sh, ir.ShapeOf) and sh.buf == p.name
                                                            and sh.dim == 1 and p.ndim == 2):
                continue
            axes = [(ai, guards.get(ai, [])), (aj, guards.get(aj, []))]
        after = _loads_ok(kir.body, p.name, store.index)
        if after is not None:
            out[p.name] = Cover(p.name, axes, after)
    return out


def _loads_ok(body, p, index):
    """Walk the kernel in program order: every store of ``p`` at ``index``, every load
    before the first store anywhere, or after it at ``index``. Returns the ids of the
    loads after a store, or None when that is not so (or ``p`` is used in a loop that
    also stores it)."""
    state = {"stored": False}
    after: set = set()

    def loads_in(e):
        return [n for n in ir.walk(e) if isinstance(n, ir.Load) and n.buf == p]

    def visit(stmts, in_loop):
        for s in stmts:
            if isinstance(s, (ir.For, ir.CFor, ir.While)):
                inner = list(ir.walk(s))
                if any(isinstance(n, ir.Store) and n.buf == p for n in inner):
                    return False
                for n in inner:
                    if isinstance(n, ir.Load) and n.buf == p and not take(n):
                        return False
                continue
            if isinstance(s, ir.Store) and s.buf == p:
                if not _same(s.index, index):
                    return False
                for n in loads_in(s.index) + loads_in(s.value):
                    if not take(n):
                        return False
                state["stored"] = True
                continue
            if isinstance(s, ir.If):
                for n in loads_in(s.cond):
                    if not take(n):
                        return False
                if visit(s.then, in_loop) is False or visit(s.orelse, in_loop) is False:
                    return False
                continue
            for n in ir.walk(s):
                if isinstance(n, ir.Load) and n.buf == p and not take(n):
                    return False
                if isinstance(n, ir.Store) and n.buf == p:
                    return False
        return True

    def take(load):
        if not state["stored"]:
            return True
        if _same(load.index, index):
            after.add(id(load))
            return True
        return False

    return after if visit(body, False) else None


def merge_device(plan: Plan, original, outs: dict, float64_bits: bool = False):
    """:func:`merge` on ``mx.array``s: the in-place result computed on the device.
    ``float64_bits``: the arrays are float64 held as their bits (uint64, on cuda);
    masks and coverage select bits as they are, sums are formed in float64 on the CPU
    stream (MLX computes float64 only there).

    >>> import mlx.core as mx
    >>> p = Plan("x", "mask", ["x__out", "x__mask"])
    >>> merge_device(p, mx.array([1, 2, 3]), {"x__out": mx.array([9, 0, 7]), "x__mask": mx.array([1, 0, 1])}).tolist()
    [9, 2, 7]
    """
    import mlx.core as mx
    shape = original.shape
    if plan.scheme == "cover":
        r = outs[plan.outputs[0]].reshape(shape)
    elif plan.scheme == "mask":
        r = mx.where(outs[plan.outputs[1]].reshape(shape) != 0, outs[plan.outputs[0]].reshape(shape), original)
    else:
        acc = outs[plan.outputs[0]].reshape(shape)
        if float64_bits and plan.combine == "+":
            from .. import runtime
            r = mx.add(runtime.bits_float64(original), runtime.bits_float64(acc), stream=mx.cpu)
            return runtime.float64_bits(r)
        r = original + acc if plan.combine == "+" else original | acc if plan.combine == "|" else original ^ acc
    return r if r.dtype == original.dtype else r.astype(original.dtype)
