"""Dead-code elimination by backward liveness on structured IR.

The adjoint generator replays the forward body more than once (the forward sweep,
and per iteration in reversed loops); most replayed values are needed by only one of
those copies. This pass drops assignments whose variable is not read afterwards,
``if``/``for`` statements left empty, and stores into thread-local arrays that are
never read. Atomics and stores into kernel buffers always stay::

    >>> from metalbench import ir, types as T
    >>> a, b = ir.Var("a", T.float32), ir.Var("b", T.float32)
    >>> body = [ir.Assign(a, ir.Const(1.0, T.float32)), ir.Assign(b, a), ir.Assign(a, ir.Const(2.0, T.float32))]
    >>> kept, live = dce(body, {"b"})
    >>> print(ir.dump(kept)), sorted(live)
    a = 1.0
    b = a
    (None, [])
"""
from __future__ import annotations

from .. import ir


def reads(e) -> set[str]:
    """Names of the variables and arrays expression ``e`` reads."""
    out = set()
    if e is None:
        return out
    for n in ir.walk(e):
        if isinstance(n, ir.Var):
            out.add(n.name)
        elif isinstance(n, (ir.Load, ir.Atomic, ir.BufArg)):
            out.add(n.buf)
    return out


def pure(e) -> bool:
    """True when evaluating ``e`` has no effect besides its value (no atomics)."""
    return not any(isinstance(n, (ir.Atomic, ir.FuncCall)) for n in ir.walk(e))


def dce(stmts: list, live_out: set, local_arrays: frozenset = frozenset()) -> tuple[list, set]:
    """(``stmts`` without dead code, names live before them), given the names live
    after them. ``local_arrays`` are arrays whose stores may be dropped when unread."""
    live = set(live_out)
    out: list = []
    for s in reversed(stmts):
        if isinstance(s, ir.Assign):
            if s.var.name in live or not pure(s.value):
                live.discard(s.var.name)
                live |= reads(s.value)
                out.append(s)
        elif isinstance(s, ir.Decl):
            live.discard(s.var.name)
            if s.init is not None:
                live |= reads(s.init)
            out.append(s)
        elif isinstance(s, ir.If):
            t, lt = dce(s.then, live, local_arrays)
            e, le = dce(s.orelse, live, local_arrays)
            if t or e:
                live = lt | le | reads(s.cond)
                out.append(ir.If(s.cond, t, e, span=s.span))
        elif isinstance(s, ir.For):
            loop_live = live | reads(s.stop) | reads(s.step)
            while True:
                body, body_live = dce(s.body, loop_live, local_arrays)
                grown = loop_live | (body_live - {s.var.name})
                if grown == loop_live:
                    break
                loop_live = grown
            if body:
                out.append(ir.For(s.var, s.start, s.stop, s.step, body, span=s.span))
                live = (loop_live - {s.var.name}) | reads(s.start)
        elif isinstance(s, ir.Store):
            if s.buf not in local_arrays or s.buf in live:
                live |= reads(s.index) | reads(s.value)
                out.append(s)
        elif isinstance(s, ir.ExprStmt):
            if not pure(s.expr):
                live |= reads(s.expr)
                out.append(s)
        else:
            for c in ir.children(s):
                live |= reads(c)
            out.append(s)
    out.reverse()
    return out, live


# ----------------------------------------------------------------------------- zero adjoints

def _zero(e, zeros: set) -> bool:
    if isinstance(e, ir.Const):
        return not isinstance(e.value, bool) and e.value == 0
    if isinstance(e, ir.Var):
        return e.name in zeros
    if isinstance(e, ir.BinOp):
        if e.op in ("+", "-"):
            return _zero(e.a, zeros) and _zero(e.b, zeros)
        if e.op == "*":
            return _zero(e.a, zeros) or _zero(e.b, zeros)
        if e.op == "/":
            return _zero(e.a, zeros)
    if isinstance(e, (ir.UnOp,)) and e.op == "-":
        return _zero(e.a, zeros)
    if isinstance(e, ir.Cast) and e.type.is_float:
        return _zero(e.value, zeros)
    if isinstance(e, ir.Select):
        return _zero(e.a, zeros) and _zero(e.b, zeros)
    return False


def _drop_zero_terms(e, zeros: set):
    """``e`` (an adjoint sum) without its terms that are zero."""
    if isinstance(e, ir.BinOp) and e.op in ("+", "-"):
        a, b = _drop_zero_terms(e.a, zeros), _drop_zero_terms(e.b, zeros)
        if _zero(b, zeros):
            return a
        if _zero(a, zeros) and e.op == "+":
            return b
        return ir.BinOp(e.op, a, b, e.type, span=e.span)
    return e


def drop_zero_adjoints(stmts: list, adjoints: set) -> list:
    """Adjoint variables that are never given a non-zero value read as zero: their
    accumulations (``adj_a = adj_a + adj_b`` with ``adj_b`` always 0), the atomic adds
    of zero and the resets vanish. (Adjoint arithmetic treats ``0 * x`` as 0, as every
    reverse-mode system does.)"""
    while True:
        real = set()
        for n in ir.walk(stmts):
            if isinstance(n, ir.Assign) and n.var.name in adjoints:
                v = n.value
                if not _zero(v, set()) and not (isinstance(v, ir.Var) and v.name == n.var.name):
                    real.add(n.var.name)
        zeros = adjoints - real
        changed = [False]

        def fix(block):
            out = []
            for s in block:
                if isinstance(s, ir.Assign) and s.var.name in adjoints:
                    if s.var.name in zeros:
                        changed[0] = True
                        continue
                    v = _drop_zero_terms(s.value, zeros)
                    if v is not s.value:
                        changed[0] = changed[0] or ir.dump(v) != ir.dump(s.value)
                        s = ir.Assign(s.var, v, span=s.span)
                    if isinstance(s.value, ir.Var) and s.value.name == s.var.name:
                        changed[0] = True
                        continue
                elif isinstance(s, ir.ExprStmt) and isinstance(s.expr, ir.Atomic) and s.expr.op == "add" \
                        and _zero(s.expr.args[0], zeros):
                    changed[0] = True
                    continue
                elif isinstance(s, ir.If):
                    s = ir.If(s.cond, fix(s.then), fix(s.orelse), span=s.span)
                elif isinstance(s, ir.For):
                    s = ir.For(s.var, s.start, s.stop, s.step, fix(s.body), span=s.span)
                out.append(s)
            return out
        stmts = fix(stmts)
        if not changed[0]:
            return stmts


# ----------------------------------------------------------------------------- merging ifs

def _assigned(stmts) -> set:
    return {n.var.name for n in ir.walk(stmts) if isinstance(n, ir.Assign)}


def merge_ifs(stmts: list) -> list:
    """Adjacent ``if c: A`` and ``if c: B`` (no else, ``c`` a variable A does not assign)
    become ``if c: A; B`` (the forward and reverse sweeps of a guarded body meet this way)."""
    out: list = []
    for s in stmts:
        if isinstance(s, ir.If):
            s = ir.If(s.cond, merge_ifs(s.then), merge_ifs(s.orelse), span=s.span)
        elif isinstance(s, ir.For):
            s = ir.For(s.var, s.start, s.stop, s.step, merge_ifs(s.body), span=s.span)
        prev = out[-1] if out else None
        if isinstance(s, ir.If) and isinstance(prev, ir.If) and not s.orelse and not prev.orelse \
                and _same_cond(prev.cond, s.cond) and not (reads(s.cond) & _assigned(prev.then)):
            out[-1] = ir.If(prev.cond, merge_ifs(prev.then + s.then), [], span=prev.span)
            continue
        out.append(s)
    return out


def _same_cond(a, b) -> bool:
    if isinstance(a, ir.Var) and isinstance(b, ir.Var):
        return a.name == b.name
    if isinstance(a, ir.UnOp) and isinstance(b, ir.UnOp) and a.op == b.op == "!":
        return _same_cond(a.a, b.a)
    return False

