"""The primal program: the forward body in SSA form, as the adjoint generator sees it.

The generator (:mod:`.reverse`) lowers a kernel body into these nodes (:mod:`.lower`)
and emits two sweeps from them: the forward replay and the reverse (adjoint) code.
Atoms are ``ir.Var`` or ``ir.Const``; every active value has its own variable.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import ir
from .. import types as T


@dataclass(eq=False)
class PAssign:
    var: ir.Var
    expr: ir.Expr
    active: bool
    depth: int
    span: object = None


@dataclass(eq=False)
class PLoad:
    """``var = buf[index]``: a read of a differentiable input; ``distinct`` when no two
    threads of a SIMD-group read the same element (the index is the thread's position)."""
    var: ir.Var
    buf: str
    index: ir.Expr
    depth: int
    distinct: bool
    span: object = None


@dataclass(eq=False)
class PScatter:
    """A store (or atomic add, ``sign=-1`` for atomic_sub) of ``value`` into output ``buf``."""
    buf: str
    index: ir.Expr
    value: ir.Expr
    sign: int
    span: object = None
    store: bool = True          # a plain store (False: an atomic add, which does not overwrite)
    depth: int = 0
    group: object = None        # the StoreGroup of the stores to the same (output, index value)


@dataclass(eq=False)
class StoreGroup:
    """Stores to one output at one index value (the same index variable): in the reverse
    sweep, the first one met (the last one executed) takes the cotangent; a ``claimed``
    flag, reset where the index is defined, keeps the earlier ones out."""
    key: tuple
    block: int                   # the block (of the primal program) defining the index
    depth: int                   # its loop depth
    sites: list = field(default_factory=list)
    flag: ir.Var | None = None


@dataclass(eq=False)
class PIf:
    cond: ir.Expr
    then: list
    orelse: list
    phis: list                  # (merged var, value from then or None, value from else or None)
    depth: int
    span: object = None


@dataclass(eq=False)
class PTGLoad:
    """``var = buf[index]`` from a threadgroup array holding active values."""
    var: ir.Var
    buf: str
    index: ir.Expr
    depth: int
    span: object = None


@dataclass(eq=False)
class PTGStore:
    """``buf[index] = value`` into a threadgroup array."""
    buf: str
    index: ir.Expr
    value: ir.Expr
    span: object = None


@dataclass(eq=False)
class PBarrier:
    """A threadgroup barrier at the top level of the body: it separates two phases."""
    stmt: ir.Barrier


@dataclass(eq=False)
class Carried:
    name: str
    L: ir.Var                   # the loop's variable for it: its value at the start of an iteration
    entry: object               # its value before the loop (atom or None)
    last: object = None         # its value at the end of the body (atom or None)


@dataclass(eq=False)
class PFor:
    var: ir.Var                 # the loop variable (assigned from the iteration number)
    start: ir.Expr
    step: int
    n: ir.Expr                  # trip count (atom)
    body: list
    carried: list
    depth: int
    span: object = None
    tape: dict = field(default_factory=dict)     # carried name -> thread array name


@dataclass
class Adjoint:
    """A generated adjoint kernel and how its parameters relate to the forward kernel's.

    ``grads`` maps each forward input (array or float scalar) that gets a gradient to
    the adjoint's output holding it; ``cotangents`` maps each forward output whose
    cotangent the adjoint reads to the adjoint's input; ``notes`` say how loops were
    reversed.
    """
    ir: ir.KernelIR
    forward: ir.KernelIR
    grads: dict
    cotangents: dict
    notes: list
    tapes: list = field(default_factory=list)     # (output name, element type, loop number)
    sizer: ir.KernelIR | None = None               # writes each taped loop's trip count (sim, grid 1)


def acc_type(t: T.ScalarType, wide: bool = True) -> T.ScalarType:
    """The type gradients of ``t`` values accumulate in: float32, and float64 for float64
    where 64-bit atomics exist (``wide``: the simulator; metalbench's GPU atomics are 32-bit)."""
    return t if (wide and t.itemsize >= 8) else T.float32


# ----------------------------------------------------------------------------- helpers

def cse_key(e, volatile=frozenset()):
    """A structural key for common-subexpression reuse (None: not reusable, such as a
    load from one of the ``volatile`` arrays: threadgroup memory changes between phases)."""
    if isinstance(e, ir.Load) and e.buf in volatile:
        return None
    if isinstance(e, ir.Const):
        return ("c", e.type.name, repr(e.value))
    if isinstance(e, ir.Var):
        return ("v", e.name)
    if isinstance(e, ir.ThreadAttr):
        return ("attr", e.name)
    if isinstance(e, (ir.Atomic, ir.FuncCall)):
        return None
    parts = [type(e).__name__]
    for k, v in vars(e).items():
        if k == "span":
            continue
        if isinstance(v, ir.Expr):
            kv = cse_key(v, volatile)
            if kv is None:
                return None
            parts.append(kv)
        elif isinstance(v, list):
            ks = [cse_key(x, volatile) if isinstance(x, ir.Expr) else repr(x) for x in v]
            if any(x is None for x in ks):
                return None
            parts.append(tuple(ks))
        else:
            parts.append(repr(v) if not isinstance(v, (T.ScalarType, T.VectorType)) else v.name)
    return tuple(parts)


def eager(e) -> bool:
    """True when ``e`` can be evaluated even where the forward kernel did not (no
    memory reads, no SIMD-group calls, no atomics)."""
    from ..builtins import registry
    for n in ir.walk(e):
        if isinstance(n, (ir.Load, ir.Atomic, ir.FuncCall)):
            return False
        if isinstance(n, ir.Call) and n.name in registry and registry.get(n.name).kind == "simd":
            return False
    return True


def safe_everywhere(e) -> bool:
    """True when ``e`` may be evaluated, and differentiated, where the forward kernel did
    not evaluate it (the untaken side of a select): additions, subtractions,
    multiplications, casts and comparisons of values at hand. A division or a function
    could give inf there and turn a zero adjoint into NaN; a read could be out of bounds."""
    for n in ir.walk(e):
        if isinstance(n, (ir.Load, ir.Atomic, ir.FuncCall, ir.Call)):
            return False
        if isinstance(n, ir.BinOp) and n.op in ("/", "%"):
            return False
    return True


def mark_uses(kir: ir.KernelIR) -> None:
    """Set each parameter's uses_shape/strides/ndim from what the body reads."""
    nodes = [n for n in ir.walk(kir.body) if isinstance(n, (ir.ShapeOf, ir.StrideOf, ir.NDimOf))]
    for prm in kir.params:
        mine = [n for n in nodes if n.buf == prm.name]
        prm.uses_shape = any(isinstance(n, ir.ShapeOf) for n in mine)
        prm.uses_strides = any(isinstance(n, ir.StrideOf) for n in mine)
        prm.uses_ndim = any(isinstance(n, ir.NDimOf) for n in mine)


def if_stmt(cond, then, orelse, span) -> list:
    """``if cond: then else: orelse`` without empty branches."""
    if not then and not orelse:
        return []
    if not then:
        if isinstance(cond, ir.UnOp) and cond.op == "!":
            return [ir.If(cond.a, orelse, [], span=span)]
        return [ir.If(ir.UnOp("!", cond, T.bool_, span=span), orelse, [], span=span)]
    return [ir.If(cond, then, orelse, span=span)]


def same_atom(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, ir.Const) and isinstance(b, ir.Const):
        return a.type == b.type and a.value == b.value
    return False
