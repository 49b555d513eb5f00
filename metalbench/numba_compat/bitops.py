"""Numba's bit and warp intrinsics that metalbench composes: ``cuda.popc``, ``brev``,
``clz``, ``ffs``, ``fma``, ``cbrt`` (the builtin registry's Numba aliases), ``cuda.selp``,
and the warp matches ``match_any_sync``, ``match_all_sync``, ``eq_sync``::

    @cuda.jit
    def k(out, x):
        i = cuda.grid(1)
        out[i] = cuda.ffs(x[i])             # 1 + the index of the lowest set bit, 0 for 0

Typing is Numba's: ``popc``/``clz`` keep the argument's type, ``ffs`` is uint32, ``brev``
works on uint32/uint64 (signed arguments convert), ``match_any_sync`` is int32,
``match_all_sync`` an ``(int32, bool)`` tuple.
"""
from __future__ import annotations

from .. import ir
from .. import types as T
from ..builtins import registry
from ..semantics import TupleValue
from .intrinsics import WARP_SIZE, _args, _Intrinsic


def _registry(alias: str, names: list[str]):
    b = registry.lookup(f"cuda.{alias}", dialect="numba")

    def fn(tr, call):
        nodes = _args(tr, call, names, alias)
        args = [tr.expr(a) for a in nodes]
        if alias == "brev":
            t = args[0].type
            if isinstance(t, T.ScalarType) and (t.is_int or t.is_bool) and not (t.kind == "u" and t.bits >= 32):
                args[0] = tr.sem.convert(args[0], T.uint64 if t.bits == 64 else T.uint32, tr.span(call))
        return tr.builtin_call(b.name, args, call)
    return fn


def _ffs(tr, call):
    (x_node,) = _args(tr, call, ["x"], "ffs")
    sem, sp = tr.sem, tr.span(call)
    x = sem.once(tr.expr(x_node), sp)
    if not (isinstance(x.type, T.ScalarType) and x.type.is_int):
        raise tr.err(tr_type_error(), f"cuda.ffs takes an integer, not {x.type.name}", call)
    if x.type.bits < 32:
        x = sem.once(sem.convert(x, T.int32 if x.type.kind == "i" else T.uint32, sp), sp)
    tz = sem.convert(tr.builtin_call("ctz", [x], call), T.uint32, sp)
    one = ir.Const(1, T.uint32, span=sp)
    return sem.select(sem.binop("==", x, ir.Const(0, x.type, span=sp), sp), ir.Const(0, T.uint32, span=sp),
                      sem.binop("+", tz, one, sp), sp)


def tr_type_error():
    from ..errors import KernelTypeError
    return KernelTypeError


def _selp(tr, call):
    c, a, b = _args(tr, call, ["test", "a", "b"], "selp")
    return tr.sem.select(tr.expr(c), tr.expr(a), tr.expr(b), tr.span(call))


def _key(tr, v, sp):
    """A value compared by its bits (floats: NaN equals NaN, as the hardware compares)."""
    t = v.type
    if t.is_float:
        return tr.sem.bitcast(T.BY_NAME[f"uint{t.bits}"], v, sp)
    return v


def _match_any(tr, call):
    mask, value = _args(tr, call, ["mask", "value"], "match_any_sync")
    tr.expr(mask)
    sem, sp = tr.sem, tr.span(call)
    v = _key(tr, sem.once(tr.expr(value), sp), sp)
    lane = tr.thread_attr("thread_index_in_simdgroup", call)
    res = tr.local_var(tr.fresh("_mb_match", ("match", call.lineno, call.col_offset)), T.uint32, call)
    k = ir.Var(tr.fresh("_mb_ml", ("match lane", call.lineno, call.col_offset)), T.uint32, span=sp)
    other = tr.builtin_call("simd_shuffle", [v, ir.Var(k.name, T.uint32, span=sp)], call)
    ballot = sem.cast(T.uint32, tr.builtin_call("simd_ballot", [sem.binop("==", v, other, sp)], call), sp)
    # every lane takes part in each round's ballot (outside the branch); lane k keeps round k's
    rb = tr.local_var(tr.fresh("_mb_mb", ("match ballot", call.lineno, call.col_offset)), T.uint32, call)
    body = [ir.Assign(rb, ballot, span=sp),
            ir.If(sem.binop("==", lane, ir.Var(k.name, T.uint32, span=sp), sp),
                  [ir.Assign(res, ir.Var(rb.name, T.uint32, span=sp), span=sp)], span=sp)]
    loop = ir.For(k, ir.Const(0, T.uint32, span=sp), ir.Const(WARP_SIZE, T.uint32, span=sp),
                  ir.Const(1, T.uint32, span=sp), body, span=sp)
    tr._pending_list.extend([ir.Assign(res, ir.Const(0, T.uint32, span=sp), span=sp), loop])
    return sem.cast(T.int32, ir.Var(res.name, T.uint32, span=sp), sp)


def _match_all(tr, call):
    mask, value = _args(tr, call, ["mask", "value"], "match_all_sync")
    tr.expr(mask)
    sem, sp = tr.sem, tr.span(call)
    v = _key(tr, sem.once(tr.expr(value), sp), sp)
    first = tr.builtin_call("simd_broadcast_first", [v], call)
    same = sem.cast(T.uint32, tr.builtin_call("simd_ballot", [sem.binop("==", v, first, sp)], call), sp)
    active = sem.cast(T.uint32, tr.builtin_call("simd_ballot", [sem.bool_const(True, sp)], call), sp)
    same, active = sem.once(same, sp), sem.once(active, sp)
    pred = sem.once(sem.binop("==", same, active, sp), sp)
    return TupleValue([sem.cast(T.int32, sem.select(pred, active, ir.Const(0, T.uint32, span=sp), sp), sp), pred],
                      span=sp)


def _eq_sync(tr, call):
    mask, pred = _args(tr, call, ["mask", "predicate"], "eq_sync")
    tr.expr(mask)
    sem, sp = tr.sem, tr.span(call)
    p = sem.once(tr.to_bool(tr.expr(pred)), sp)
    all_true = tr.builtin_call("simd_all", [p], call)
    none_true = sem.unop("!", tr.builtin_call("simd_any", [p], call), sp)
    return sem.logical("or", all_true, none_true, sp)


popc = _Intrinsic("popc", _registry("popc", ["x"]))
brev = _Intrinsic("brev", _registry("brev", ["x"]))
clz = _Intrinsic("clz", _registry("clz", ["x"]))
fma = _Intrinsic("fma", _registry("fma", ["a", "b", "c"]))
cbrt = _Intrinsic("cbrt", _registry("cbrt", ["a"]))
ffs = _Intrinsic("ffs", _ffs)
selp = _Intrinsic("selp", _selp)
match_any_sync = _Intrinsic("match_any_sync", _match_any)
match_all_sync = _Intrinsic("match_all_sync", _match_all)
eq_sync = _Intrinsic("eq_sync", _eq_sync)
