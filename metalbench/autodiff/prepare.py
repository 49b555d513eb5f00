"""Bring a kernel's IR into the form the adjoint generator works on.

Three rewrites, each keeping the kernel's meaning:

- device functions (``@mb.func``) are inlined, with their locals renamed and their
  buffer parameters replaced by the buffers (and offsets) the call passed;
- ``return`` becomes structured control flow: ``if c: return`` followed by the rest
  of the body becomes ``if not c: rest`` (a flag guards the rest where the shape is
  less simple), so every thread reaches the end of the body;
- ``continue`` in a ``for`` loop is removed the same way, per iteration.

Threadgroup memory is allowed when barriers split the body into phases (a barrier
at the top level of the body, not under a condition or in a loop).

Constructs outside the differentiable subset raise :class:`NotDifferentiableError`
at their line, naming the construct and what to do instead::

    >>> from metalbench import ir, types as T
    >>> body = [ir.While(ir.Const(True, T.bool_), [])]
    >>> check_subset(body, None)
    Traceback (most recent call last):
    ...
    metalbench.autodiff.prepare.NotDifferentiableError: a while loop is not supported by the VJP: its trip count may depend on values written in the loop
    hint: write it as a `for ... in range(n)` loop whose n does not change in the loop
"""
from __future__ import annotations

import copy

from .. import ir
from .. import types as T
from ..errors import MetalbenchError


class NotDifferentiableError(MetalbenchError):
    """The kernel uses a construct the adjoint generator does not support (the message
    names it and its line), or an operation without a derivative rule."""


def unsupported(what: str, node, hint: str | None = None, why: str = "") -> NotDifferentiableError:
    """The error for construct ``what`` at ``node``'s span."""
    return NotDifferentiableError(f"{what} is not supported by the VJP{': ' + why if why else ''}",
                                  getattr(node, "span", None), hint=hint)


class Namer:
    """Fresh names that clash with nothing in the kernel (its parameters, locals,
    functions) nor with each other."""

    def __init__(self, taken=()):
        self.taken = set(taken)
        # builtin and C keyword names stay readable as what they are in printed code
        from ..builtins import registry
        from ..codegen.c_like import CPP_KEYWORDS
        self.avoid = {b.name for b in registry.all()} | set(CPP_KEYWORDS) | set(ir.THREAD_ATTRIBUTES)

    def __call__(self, base: str) -> str:
        base = base or "t"
        if base in self.avoid:
            base = f"{base}_v"
        name, i = base, 1
        while name in self.taken:
            name = f"{base}_{i}"
            i += 1
        self.taken.add(name)
        return name


def names_in(kernel: ir.KernelIR) -> set[str]:
    """Every identifier the kernel uses (parameters, variables, arrays, functions)."""
    out = {p.name for p in kernel.params}
    out |= {f.name for f in kernel.functions}
    out |= {g.name for g in kernel.globals}
    bodies = [kernel.body] + [f.body for f in kernel.functions]
    for b in bodies:
        for n in ir.walk(b):
            if isinstance(n, ir.Var):
                out.add(n.name)
            elif isinstance(n, ir.ArrayDecl):
                out.add(n.name)
    for f in kernel.functions:
        out |= {p.name for p in f.params}
    return out


# ----------------------------------------------------------------------------- the subset

def check_subset(stmts, kernel: ir.KernelIR | None) -> None:
    """Raises :class:`NotDifferentiableError` at the first construct outside the subset."""
    for s in ir.walk(stmts):
        if isinstance(s, ir.While):
            raise unsupported("a while loop", s, why="its trip count may depend on values written in the loop",
                              hint="write it as a `for ... in range(n)` loop whose n does not change in the loop")
        if isinstance(s, ir.CFor):
            raise unsupported("a C for loop", s, why="its trip count may depend on values written in the loop",
                              hint="write it as a `for ... in range(n)` loop")
        if isinstance(s, ir.Break):
            raise unsupported("break", s, why="it makes the trip count depend on values computed in the loop",
                              hint="loop over the full range and guard the body with an if")
        if isinstance(s, ir.Barrier) and s.scope != "threadgroup":
            raise unsupported(f"{s.scope}_barrier", s, hint="use threadgroup_barrier between phases")
        if isinstance(s, ir.ArrayDecl) and s.space != "threadgroup":
            raise unsupported(f"the {s.space} array {s.name!r}", s, hint="keep values in local variables (one per "
                              "thread), or share them through threadgroup memory")
        if isinstance(s, ir.Atomic) and kernel is not None and kernel.param(s.buf) is None:
            raise unsupported(f"atomic_{s.op} on the array {s.buf!r}", s,
                              hint="atomics into outputs are differentiable (atomic_add, atomic_sub)")
        if isinstance(s, ir.For):
            if not isinstance(s.step, ir.Const):
                raise unsupported("a loop with a step that is not a constant", s,
                                  hint="use range(start, stop) or a constant step")
            written = assigned_names(s.body) | {s.var.name}
            for part, e in (("stop", s.stop), ("step", s.step)):
                used = {n.name for n in ir.walk(e) if isinstance(n, ir.Var)} & written
                if used:
                    raise unsupported("a loop whose trip count depends on values written in the loop", s,
                                      why=f"its {part} reads {', '.join(sorted(used))}",
                                      hint="compute the bound before the loop")
            for n in ir.walk(s.body):
                if isinstance(n, ir.Return):
                    raise unsupported("return inside a loop", n, why="it ends the loop early",
                                      hint="loop over the full range and guard the body with an if")
        if isinstance(s, (ir.Swizzle, ir.VecCons)) and _is_float_vector(s):
            raise unsupported("a float vector value", s, hint="use scalar values (one variable per component)")
        if isinstance(s, ir.Load) and kernel is not None:
            p = kernel.param(s.buf)
            if p is not None and p.is_output:
                raise unsupported(f"reading the output {s.buf!r}", s,
                                  why="the adjoint kernel does not have the forward outputs",
                                  hint="accumulate in a local variable and store the output once")
        if isinstance(s, ir.Store) and kernel is not None:
            p = kernel.param(s.buf)
            if p is not None and not p.is_output:
                raise unsupported(f"writing the input {s.buf!r}", s, hint="write outputs only")


def _is_float_vector(e) -> bool:
    t = getattr(e, "type", None)
    return isinstance(t, T.VectorType) and t.elem.is_float


def assigned_names(stmts) -> set[str]:
    """Names of the local variables assigned (or declared with a value) in ``stmts``."""
    out = set()
    for n in ir.walk(stmts):
        if isinstance(n, ir.Assign):
            out.add(n.var.name)
        elif isinstance(n, ir.Decl) and n.init is not None:
            out.add(n.var.name)
    return out


# ----------------------------------------------------------------------------- inlining

def inline_functions(stmts: list, kernel: ir.KernelIR, namer: Namer, depth: int = 0) -> list:
    """``stmts`` with every device-function call inlined (in evaluation order)."""
    funcs = {f.name: f for f in kernel.functions}
    if not funcs:
        return stmts
    return _Inliner(funcs, namer).block(stmts)


class _Inliner:
    def __init__(self, funcs, namer, depth=0):
        self.funcs = funcs
        self.namer = namer
        self.depth = depth

    def block(self, stmts):
        out = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s):
        pre: list = []
        if isinstance(s, ir.If):
            s.cond = self.expr(s.cond, pre)
            s.then = self.block(s.then)
            s.orelse = self.block(s.orelse)
        elif isinstance(s, ir.For):
            for part in (s.start, s.stop, s.step):
                if any(isinstance(n, ir.FuncCall) for n in ir.walk(part)):
                    raise unsupported("a device function call in a loop header", part,
                                      hint="compute the bound in a variable before the loop")
            s.body = self.block(s.body)
        elif isinstance(s, (ir.While, ir.CFor)):
            pass                                   # rejected by check_subset
        elif isinstance(s, ir.ExprStmt) and isinstance(s.expr, ir.FuncCall):
            pre.extend(self.call(s.expr, want_value=False)[0])
            return pre
        else:
            for attr in ("init", "value", "index", "expr"):
                v = getattr(s, attr, None)
                if isinstance(v, ir.Expr):
                    setattr(s, attr, self.expr(v, pre))
        return pre + [s]

    def expr(self, e, pre):
        """``e`` with its calls replaced by their result variables (statements to ``pre``)."""
        if isinstance(e, ir.FuncCall):
            stmts, result = self.call(e, want_value=True)
            pre.extend(stmts)
            return result
        if isinstance(e, (ir.Select, ir.Logical)):
            lazy = [e.a, e.b] if isinstance(e, ir.Select) else [e.b]
            for side in lazy:
                if any(isinstance(n, ir.FuncCall) for n in ir.walk(side)):
                    raise unsupported("a device function call in a conditional expression", side,
                                      hint="call it in an if/else statement instead")
        for k, v in list(vars(e).items()):
            if isinstance(v, ir.Expr):
                setattr(e, k, self.expr(v, pre))
            elif isinstance(v, list):
                setattr(e, k, [self.expr(x, pre) if isinstance(x, ir.Expr) else x for x in v])
        return e

    def call(self, c: ir.FuncCall, want_value: bool):
        f = self.funcs.get(c.func)
        if f is None or self.depth > 32:
            raise unsupported(f"the call of {c.func!r}", c)
        out: list = []
        rename: dict[str, str] = {}
        bufmap: dict[str, tuple] = {}
        args = []
        for a in c.args:
            args.append(a if isinstance(a, ir.BufArg) else self.expr(a, out))
        for p, a in zip(f.params, args):
            if p.space is not None:
                if not isinstance(a, ir.BufArg):
                    raise unsupported(f"passing a value for buffer parameter {p.name!r}", c)
                bufmap[p.name] = (a.buf, a.offset)
            else:
                v = ir.Var(self.namer(f"{f.name}_{p.name}"), p.type, span=c.span)
                rename[p.name] = v.name
                out.append(ir.Decl(v, a, span=c.span))
        body = copy.deepcopy(f.body)
        for n in ir.walk(body):
            if isinstance(n, ir.Decl) and n.var.name not in rename:
                rename[n.var.name] = self.namer(f"{f.name}_{n.var.name}")
            elif isinstance(n, ir.For) and n.var.name not in rename:
                rename[n.var.name] = self.namer(f"{f.name}_{n.var.name}")
        _rename(body, rename, bufmap)
        result = None
        if f.ret is not None:
            result = ir.Var(self.namer(f"{f.name}_ret"), f.ret, span=c.span)
            out.append(ir.Decl(result, None, span=c.span))
        check_subset(body, None)

        def on_return(r: ir.Return):
            if r.value is not None and result is not None:
                return [ir.Assign(result, r.value, span=r.span)]
            return []
        body = eliminate_returns(body, on_return, self.namer, f"{f.name}_done")
        inner = _Inliner(self.funcs, self.namer, self.depth + 1)
        out.extend(inner.block(body))
        if want_value and result is None:
            raise unsupported(f"using the value of {c.func!r}, which returns nothing", c)
        return out, result


def _rename(stmts, rename: dict, bufmap: dict) -> None:
    for n in ir.walk(stmts):
        if isinstance(n, ir.Var) and n.name in rename:
            n.name = rename[n.name]
        buf = getattr(n, "buf", None)
        if isinstance(buf, str) and buf in bufmap:
            target, offset = bufmap[buf]
            n.buf = target
            if offset is not None:
                if isinstance(n, ir.BufArg):
                    n.offset = offset if n.offset is None else _add(n.offset, offset)
                elif hasattr(n, "index"):
                    n.index = _add(n.index, offset)


def _add(a, b):
    t = T.binary_result(a.type, b.type)
    if a.type != t:
        a = ir.Cast(t, a, span=a.span)
    if b.type != t:
        b = ir.Cast(t, b, span=b.span)
    return ir.BinOp("+", a, b, t, span=a.span)


# ----------------------------------------------------------------------------- return / continue

def _contains(stmts, kind, into_loops: bool) -> bool:
    for s in stmts:
        if isinstance(s, kind):
            return True
        if isinstance(s, ir.If):
            if _contains(s.then, kind, into_loops) or _contains(s.orelse, kind, into_loops):
                return True
        elif isinstance(s, (ir.For, ir.While, ir.CFor)) and into_loops:
            if _contains(s.body, kind, into_loops):
                return True
    return False


def _always(stmts, kind) -> bool:
    for s in stmts:
        if isinstance(s, kind):
            return True
        if isinstance(s, ir.If) and _always(s.then, kind) and _always(s.orelse, kind):
            return True
    return False


def eliminate_returns(stmts: list, on_return, namer: Namer, flag_name: str = "done", kind=ir.Return) -> list:
    """``stmts`` without ``kind`` statements (``Return``, or ``Continue`` for a loop body):
    each becomes ``on_return(stmt)``, and what follows it runs only when it did not.

    ``if c: return`` then ``rest`` becomes ``if c: ... else: rest``; other shapes use a
    flag (a bool local named after ``flag_name``). Loops are not entered (a return
    inside a loop is rejected by :func:`check_subset`; a continue belongs to its loop).
    """
    if not _contains(stmts, kind, into_loops=False):
        return stmts
    flag: list = []

    def get_flag(span):
        if not flag:
            flag.append(ir.Var(namer(flag_name), T.bool_, span=span))
        return flag[0]

    def elim(block, with_flag: bool):
        out = []
        for k, s in enumerate(block):
            rest = block[k + 1:]
            if isinstance(s, kind):
                out.extend(on_return(s))
                if with_flag:
                    out.append(ir.Assign(get_flag(s.span), ir.Const(True, T.bool_), span=s.span))
                return out
            if not (isinstance(s, ir.If) and _contains([s], kind, into_loops=False)):
                out.append(s)
                continue
            t_always, e_always = _always(s.then, kind), _always(s.orelse, kind)
            if t_always and not _contains(s.orelse, kind, False):
                out.append(ir.If(s.cond, elim(s.then, with_flag), elim(s.orelse + rest, with_flag), span=s.span))
                return out
            if e_always and not _contains(s.then, kind, False):
                out.append(ir.If(s.cond, elim(s.then + rest, with_flag), elim(s.orelse, with_flag), span=s.span))
                return out
            f = get_flag(s.span)
            out.append(ir.If(s.cond, elim(s.then, True), elim(s.orelse, True), span=s.span))
            if t_always and e_always:
                return out
            if rest:
                out.append(ir.If(ir.UnOp("!", f, T.bool_, span=s.span), elim(rest, with_flag), span=s.span))
            return out
        return out

    body = elim(stmts, False)
    if flag:
        body = [ir.Decl(flag[0], ir.Const(False, T.bool_), span=flag[0].span)] + body
    return body


def eliminate_continues(stmts: list, namer: Namer) -> list:
    """Every ``for`` loop's body without ``continue`` (a per-iteration flag where needed)."""
    for s in ir.walk(stmts):
        if isinstance(s, ir.For) and _contains(s.body, ir.Continue, into_loops=False):
            body = eliminate_returns(s.body, lambda c: [], namer, "skip", kind=ir.Continue)
            s.body = body
    return stmts


def prepare(kernel: ir.KernelIR, namer: Namer) -> list:
    """The kernel body, checked, with functions inlined and returns/continues removed."""
    from ..frontend.printing import without_prints
    kernel = without_prints(kernel)        # the adjoint does not print (the forward launch does)
    body = copy.deepcopy(kernel.body)
    check_subset(body, kernel)
    for f in kernel.functions:
        check_subset(f.body, kernel)
    body = inline_functions(body, kernel, namer)
    body = eliminate_continues(body, namer)
    return eliminate_returns(body, lambda r: [], namer, "done")
