"""A tiny builder for hand-written IR kernels (tests, benchmarks, debugging the simulator).

Expressions wrap IR nodes and overload Python operators (operands must share a type;
Python numbers take the other operand's type); statements go into the innermost open
block::

    >>> from metalbench import types as T
    >>> kb = KernelBuilder("saxpy")
    >>> a = kb.scalar("a", T.float32); x = kb.buf("x", T.float32); out = kb.buf("out", T.float32, out=True)
    >>> i = kb.let("i", tid_x())
    >>> with kb.if_(i < kb.size(x)):
    ...     kb.store(out, i, a * kb.load(x, i))
    >>> print(ir.dump(kb.build()).splitlines()[-1])
            out[i] = (a * x[i])
"""
from __future__ import annotations

from contextlib import contextmanager

from ..builtins import registry
from .. import ir
from .. import types as T


def lift(v, t):
    """An :class:`E` for ``v``: E stays, a Python number becomes a Const of type ``t``."""
    if isinstance(v, E):
        return v
    if isinstance(v, ir.Expr):
        return E(v)
    return E(ir.Const(v, t))


class E:
    """An IR expression with Python operators."""

    def __init__(self, node: ir.Expr):
        self.n = node

    @property
    def type(self):
        return self.n.type

    def _bin(self, op, other, rev=False):
        if op in ("<<", ">>"):
            o = lift(other, T.uint32 if not isinstance(other, E) else other.type)
        else:
            o = lift(other, self.type)
        a, b = (o, self) if rev else (self, o)
        t = T.bool_ if op in ir.COMPARE_OPS else a.type
        return E(ir.BinOp(op, a.n, b.n, t))

    def __add__(self, o): return self._bin("+", o)
    def __radd__(self, o): return self._bin("+", o, True)
    def __sub__(self, o): return self._bin("-", o)
    def __rsub__(self, o): return self._bin("-", o, True)
    def __mul__(self, o): return self._bin("*", o)
    def __rmul__(self, o): return self._bin("*", o, True)
    def __truediv__(self, o): return self._bin("/", o)
    def __rtruediv__(self, o): return self._bin("/", o, True)
    def __mod__(self, o): return self._bin("%", o)
    def __and__(self, o): return self._bin("&", o)
    def __or__(self, o): return self._bin("|", o)
    def __xor__(self, o): return self._bin("^", o)
    def __lshift__(self, o): return self._bin("<<", o)
    def __rshift__(self, o): return self._bin(">>", o)
    def __lt__(self, o): return self._bin("<", o)
    def __le__(self, o): return self._bin("<=", o)
    def __gt__(self, o): return self._bin(">", o)
    def __ge__(self, o): return self._bin(">=", o)
    def eq(self, o): return self._bin("==", o)
    def ne(self, o): return self._bin("!=", o)
    def __neg__(self): return E(ir.UnOp("-", self.n, self.type))
    def __invert__(self): return E(ir.UnOp("~", self.n, self.type))
    def not_(self): return E(ir.UnOp("!", self.n, T.bool_))

    def cast(self, t):
        return E(ir.Cast(t, self.n))

    def __getattr__(self, comp):
        if comp in ("x", "y", "z", "w") and isinstance(self.n.type, T.VectorType):
            return E(ir.Swizzle(self.n, comp, self.n.type.elem))
        raise AttributeError(comp)

    def swz(self, comps):
        t = self.n.type.elem if len(comps) == 1 else T.vector_of(self.n.type.elem, len(comps))
        return E(ir.Swizzle(self.n, comps, t))


def c(v, t):
    """A constant of type ``t``."""
    return E(ir.Const(v, t))


def attr(name):
    """A thread attribute (uint3 or uint)."""
    return E(ir.ThreadAttr(name, T.uint3 if ir.THREAD_ATTRIBUTES[name] == "uint3" else T.uint32))


def tid_x():
    return attr("thread_position_in_grid").x


def call(name, *args):
    """A builtin call, typed by its registry declaration."""
    args = [lift(a, T.float32) for a in args]
    return E(ir.Call(name, [a.n for a in args], registry.get(name).typecheck([a.type for a in args]).result))


def select(cond, a, b):
    a = lift(a, b.type if isinstance(b, E) else T.float32)
    b = lift(b, a.type)
    return E(ir.Select(cond.n, a.n, b.n, a.type))


def land(a, b):
    return E(ir.Logical("and", a.n, b.n, T.bool_))


def lor(a, b):
    return E(ir.Logical("or", a.n, b.n, T.bool_))


def vec(t, *args):
    return E(ir.VecCons(t, [lift(a, t.elem).n for a in args]))


class KernelBuilder:
    """Collects parameters, statements and device functions of one kernel."""

    def __init__(self, name="k"):
        self.name = name
        self.params: list[ir.Param] = []
        self.types: dict[str, T.ScalarType] = {}
        self.functions: list[ir.Function] = []
        self.globals: list[ir.ArrayDecl] = []
        self.stack: list[list] = [[]]

    # -- parameters and names
    def buf(self, name, t, out=False, atomic=False, ndim=1):
        self.params.append(ir.Param(name, "buffer", t, ndim=ndim, is_output=out, atomic=atomic))
        self.types[name] = t
        return name

    def scalar(self, name, t):
        self.params.append(ir.Param(name, "scalar", t))
        return E(ir.Var(name, t))

    def tg_array(self, name, t, size):
        self.emit(ir.ArrayDecl(name, "threadgroup", t, (size,)))
        self.types[name] = t
        return name

    def local_array(self, name, t, size, init=None):
        self.emit(ir.ArrayDecl(name, "thread", t, (size,), init))
        self.types[name] = t
        return name

    def const_array(self, name, t, values):
        self.globals.append(ir.ArrayDecl(name, "constant", t, (len(values),), list(values)))
        self.types[name] = t
        return name

    # -- expressions needing the builder
    def load(self, buf, idx):
        return E(ir.Load(buf, lift(idx, T.uint32).n, self.types[buf]))

    def size(self, buf):
        return E(ir.ShapeOf(buf, 0, T.int32)).cast(T.uint32)

    def atomic(self, op, buf, idx, *args):
        t = self.types[buf]
        return E(ir.Atomic(op, buf, lift(idx, T.uint32).n, [lift(a, t).n for a in args], t))

    def fcall(self, fname, *args, ret=None):
        f = next(f for f in self.functions if f.name == fname)
        return E(ir.FuncCall(fname, [a.n if isinstance(a, E) else a for a in args], f.ret))

    # -- statements
    def emit(self, s):
        self.stack[-1].append(s)
        return s

    def let(self, name, value, t=None):
        value = lift(value, t or T.int32)
        v = ir.Var(name, t or value.type)
        self.emit(ir.Decl(v, value.n if t is None or t == value.type else value.cast(t).n))
        return E(v)

    def decl(self, name, t):
        v = ir.Var(name, t)
        self.emit(ir.Decl(v, None))
        return E(v)

    def set(self, var, value):
        self.emit(ir.Assign(var.n, lift(value, var.type).n))

    def store(self, buf, idx, value):
        self.emit(ir.Store(buf, lift(idx, T.uint32).n, lift(value, self.types[buf]).n))

    def expr(self, e):
        self.emit(ir.ExprStmt(e.n))

    def barrier(self):
        self.emit(ir.Barrier())

    def brk(self):
        self.emit(ir.Break())

    def cont(self):
        self.emit(ir.Continue())

    def ret(self, value=None):
        self.emit(ir.Return(None if value is None else lift(value, T.float32).n))

    @contextmanager
    def _block(self, target):
        self.stack.append(target)
        try:
            yield
        finally:
            self.stack.pop()

    @contextmanager
    def if_(self, cond):
        s = self.emit(ir.If(cond.n, []))
        with self._block(s.then):
            yield s

    @contextmanager
    def else_(self, if_stmt):
        with self._block(if_stmt.orelse):
            yield

    @contextmanager
    def while_(self, cond, do_while=False):
        s = self.emit(ir.While(cond.n, [], do_while))
        with self._block(s.body):
            yield

    @contextmanager
    def for_(self, name, start, stop, step=1, t=T.int32):
        v = ir.Var(name, t)
        s = self.emit(ir.For(v, lift(start, t).n, lift(stop, t).n, lift(step, t).n, []))
        with self._block(s.body):
            yield E(v)

    @contextmanager
    def cfor(self, init, cond, update):
        """``init``/``update``: lists of statements (use ``stmt_*`` helpers)."""
        s = self.emit(ir.CFor(init, cond.n if cond is not None else None, update, []))
        with self._block(s.body):
            yield

    @contextmanager
    def function(self, name, params, ret):
        """``params``: list of FuncParam; yields the parameter expressions (buffer
        parameters as their names)."""
        f = ir.Function(name, params, ret, [])
        self.functions.append(f)
        out = []
        for p in params:
            if p.space is None:
                out.append(E(ir.Var(p.name, p.type)))
            else:
                self.types[p.name] = T.elem_of(p.type)
                out.append(p.name)
        self.stack.append(f.body)
        try:
            yield out
        finally:
            self.stack.pop()

    def build(self) -> ir.KernelIR:
        ins = [p for p in self.params if not p.is_output]
        outs = [p for p in self.params if p.is_output]
        return ir.KernelIR(self.name, ins + outs, self.stack[0], self.functions, self.globals)
