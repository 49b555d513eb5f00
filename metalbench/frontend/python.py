"""Python DSL front end: a kernel function's ``ast`` into the IR, with MSL's typing.

The DSL is a Python subset with Metal's vocabulary (see ``metalbench.dsl``). A
kernel is translated once per specialisation (argument dtypes, ndims, constexpr
values); globals and closure values are compile-time constants, as in Numba::

    >>> import metalbench as mb
    >>> from metalbench.dsl import *
    >>> @mb.kernel
    ... def twice(x, out: mb.Out):
    ...     i = thread_position_in_grid.x
    ...     if i < x.size:
    ...         out[i] = 2 * x[i]
    >>> import numpy as np
    >>> print(twice.ir(np.ones(4, np.float32)).body[-1].then[0].value.type)
    float32

Typing follows MSL: the usual arithmetic conversions (``int`` with ``uint`` gives
``uint``), unsigned wrap-around, an unsuffixed float literal is a ``float`` (so
``0.5 * h`` with ``h`` a half is a float). Python's ``/`` is true division (two
integers give a float); ``//`` and ``%`` on integers round toward zero as in C.
A local variable's type is the common type of every value assigned to it (like
Numba's unification), unless annotated (``acc: float32 = 0``).
"""
from __future__ import annotations

import ast
import builtins as _pybuiltins
import textwrap
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import dsl
from .. import ir
from .. import types as T
from ..builtins import registry
from ..errors import KernelNameError, KernelSyntaxError, KernelTypeError, Source, Span
from ..semantics import DSL, RuleSet, Semantics


# ----------------------------------------------------------------------------- markers

class OutSpec:
    """Marks a kernel parameter as an output: ``out: mb.Out`` or
    ``out: mb.Out(shape=(n, m), dtype=mb.float16)``.

    ``shape`` may be a tuple, the name of another argument (same shape as it), or a
    callable receiving the call's arguments by name. Shape and dtype default to the
    first array argument's.
    """

    def __init__(self, shape=None, dtype=None):
        self.shape = shape
        self.dtype = dtype

    def __call__(self, shape=None, dtype=None) -> "OutSpec":
        return OutSpec(shape, dtype)

    def __repr__(self) -> str:
        return f"mb.Out(shape={self.shape!r}, dtype={self.dtype!r})"


class ConstExpr:
    """Marks a compile-time parameter (``TILE: mb.constexpr = 16``), specialised on its
    value and sweepable like Triton's ``tl.constexpr``."""

    def __getitem__(self, item):
        return self

    def __repr__(self) -> str:
        return "mb.constexpr"


Out = OutSpec()
constexpr = ConstExpr()


# ----------------------------------------------------------------------------- parsing

@dataclass
class ParsedFunction:
    """A function's AST with the Source its spans refer to."""
    fdef: ast.FunctionDef
    source: Source
    env: dict
    name: str
    rules: RuleSet | None = None   # the language rules (None: the DSL's; the Numba layer sets NUMBA)


def parse_function(fn, source_text: str | None = None, first_line: int | None = None,
                   source_name: str | None = None) -> ParsedFunction:
    """Parse ``fn`` (a Python function) or ``source_text`` into its ``def`` AST.

    Line numbers in spans are the user's: the file's lines for a function from a file,
    ``first_line`` onwards for text (a ``%%metal`` cell body starts at line 2).
    """
    if source_text is None:
        from ..sources import function_source   # file, linecache, the 3.13+ prompt; else says what to do
        lines, lineno, fname = function_source(fn)
        source_text = "".join(lines)
        first_line = lineno
        source_name = source_name or (fname if not fname.startswith("<") else fn.__name__)
    text = textwrap.dedent(source_text)
    src = Source(source_name or "<kernel>", text, first_line or 1)
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        line = (e.lineno or 1) + src.first_line - 1
        raise KernelSyntaxError(f"invalid Python syntax: {e.msg}",
                                Span(src, line, max(0, (e.offset or 1) - 1)))
    fdefs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not fdefs:
        raise KernelSyntaxError("no kernel function found", Span(src, src.first_line, 0),
                                hint="a DSL kernel is a `def name(args):` with a body")
    fdef = fdefs[0]
    if isinstance(fdef, ast.AsyncFunctionDef):
        raise KernelSyntaxError("async functions cannot be kernels", _span(src, fdef))
    env = {}
    if fn is not None:
        env.update(fn.__globals__)
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    env[name] = cell.cell_contents
                except ValueError:
                    pass
    return ParsedFunction(fdef, src, env, fdef.name)


def _span(src: Source, node) -> Span:
    line = getattr(node, "lineno", 1)
    end_line = getattr(node, "end_lineno", line)
    return Span(src, line + src.first_line - 1, getattr(node, "col_offset", 0),
                end_line + src.first_line - 1, getattr(node, "end_col_offset", None))


# ----------------------------------------------------------------------------- bindings

@dataclass
class ArgSpec:
    """How one kernel parameter is specialised: a device buffer, a scalar or a constexpr."""
    name: str
    kind: str                      # "buffer", "scalar", "constexpr"
    type: T.ScalarType | None = None
    ndim: int = 1
    is_output: bool = False
    value: Any = None              # constexpr value


@dataclass
class BufInfo:
    """A buffer or array the body can index: a kernel buffer (``space="device"``), a
    threadgroup/thread array (static shape), or a device function's buffer parameter."""
    name: str
    elem: T.ScalarType
    space: str
    ndim: int
    shape: tuple | None = None     # static shape (arrays); None for device buffers
    kernel_param: ir.Param | None = None
    decl: ir.ArrayDecl | None = None


@dataclass
class Binding:
    kind: str      # "var", "buf", "const", "pyobj"
    value: Any


class Module:
    """State shared by a kernel and the device functions it calls during one translation."""

    def __init__(self, kernel_name: str, rules: RuleSet = DSL):
        self.kernel_name = kernel_name
        self.rules = rules
        self.functions: dict[tuple, ir.Function] = {}
        self.order: list[ir.Function] = []
        self.in_progress: set = set()
        self.names: set[str] = set()

    def unique(self, base: str) -> str:
        name, i = base, 1
        while name in self.names:
            name = f"{base}_{i}"
            i += 1
        self.names.add(name)
        return name


# Python objects that mean a builtin inside kernels (math.exp, np.exp, min, ...) are the
# registry's aliases: registry.lookup_object(obj).
_PY_CASTS = {_pybuiltins.float: T.float32, _pybuiltins.int: T.int32, _pybuiltins.bool: T.bool_}
_UNSUPPORTED_STMT = {
    ast.Try: "try/except", ast.With: "with", ast.Raise: "raise", ast.Import: "import",
    ast.ImportFrom: "import", ast.ClassDef: "class definitions", ast.FunctionDef: "nested functions",
    ast.AsyncFunctionDef: "nested functions", ast.Global: "global", ast.Nonlocal: "nonlocal",
    ast.Delete: "del", ast.Assert: "assert", ast.AsyncFor: "async for", ast.AsyncWith: "async with",
}
if hasattr(ast, "Match"):
    _UNSUPPORTED_STMT[ast.Match] = "match"
if hasattr(ast, "TryStar"):
    _UNSUPPORTED_STMT[ast.TryStar] = "try/except*"
_UNSUPPORTED_EXPR = {
    ast.ListComp: "list comprehensions", ast.SetComp: "set comprehensions",
    ast.DictComp: "dict comprehensions", ast.GeneratorExp: "generator expressions",
    ast.Lambda: "lambda", ast.Yield: "yield", ast.YieldFrom: "yield from", ast.Await: "await",
    ast.List: "lists", ast.Dict: "dicts", ast.Set: "sets", ast.JoinedStr: "f-strings",
    ast.Starred: "starred expressions", ast.NamedExpr: "the walrus operator :=",
    ast.Slice: "slices",
}

_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
           ast.Mod: "%", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&",
           ast.BitOr: "|", ast.BitXor: "^", ast.MatMult: "@"}
_UNOPS = {ast.Not: "!", ast.UAdd: "+", ast.USub: "-", ast.Invert: "~"}
_CMPOPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def resolve_dtype(obj) -> T.ScalarType | None:
    """The ScalarType meant by ``obj``: a DSL dtype, a NumPy or MLX dtype, a type name,
    or Python's ``float``/``int``/``bool``."""
    if isinstance(obj, dsl.DType):
        return obj.type
    if isinstance(obj, T.ScalarType):
        return obj
    if obj in _PY_CASTS:
        return _PY_CASTS[obj]
    if isinstance(obj, str):
        try:
            t = T.lookup(obj)
            return t if isinstance(t, T.ScalarType) else None
        except KeyError:
            return None
    if type(obj).__module__.startswith("mlx"):
        try:
            return T.from_mlx(obj)
        except Exception:
            return None
    try:
        dt = np.dtype(obj)
    except Exception:
        return None
    if dt == np.float64:
        return T.float32 if obj is float else None
    try:
        return T.from_numpy(dt)
    except Exception:
        return None


# ----------------------------------------------------------------------------- translator

class FunctionTranslator:
    """Translates one function body (kernel or device function) for one specialisation."""

    def __init__(self, module: Module, parsed: ParsedFunction, is_kernel: bool,
                 bindings: dict[str, Binding], ret_hint=None):
        self.m = module
        self.p = parsed
        self.src = parsed.source
        self.is_kernel = is_kernel
        self.params = bindings
        self.var_types: dict[str, Any] = {}
        self.annotated: dict[str, Any] = {}
        self.ret_type = ret_hint
        self._pending_list: list = []
        self._names: dict = {}
        self.sem = Semantics(module.rules, once=self._once)
        # Parameters the body assigns to are copied into locals first: MLX passes
        # scalars as `constant T&`, and a device function's parameters are values.
        assigned = {n.id for n in ast.walk(parsed.fdef) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        self.prologue: list[ir.Stmt] = []
        for pname, b in list(bindings.items()):
            if b.kind == "var" and pname in assigned:
                local = ir.Var(self.fresh(pname + "_", ("param", pname)), b.value.type)
                self.prologue.append(ir.Decl(local, ir.Var(b.value.name, b.value.type)))
                self.params[pname] = Binding("var", local)

    def fresh(self, base: str, key) -> str:
        """A C name for ``key``, unique in the kernel and the same on every typing pass."""
        if key not in self._names:
            self._names[key] = self.m.unique(base)
        return self._names[key]

    # -- driver ------------------------------------------------------------------
    def translate(self) -> list[ir.Stmt]:
        for _ in range(8):
            self.assigned: dict[str, Any] = {}
            self.ret_types: list = []
            self.scopes: list[dict[str, Binding]] = [{}]
            self.vars: dict[str, ir.Var] = {}
            self.hoisted: list[ir.Stmt] = []
            self.loop_depth = 0
            body = self.block(self.p.fdef.body)
            changed = False
            for name, t in self.assigned.items():
                if name in self.annotated:
                    continue
                if self.var_types.get(name) != t:
                    self.var_types[name] = t
                    changed = True
            if self.ret_types:
                rt = self.ret_types[0]
                for t in self.ret_types[1:]:
                    rt = self._join(rt, t)
                if rt != self.ret_type:
                    self.ret_type = rt
                    changed = True
            if not changed:
                decls = [ir.Decl(v, span=None) for v in self.vars.values()]
                return self.hoisted + self.prologue + decls + body
        raise KernelTypeError("could not settle the types of the local variables",
                              _span(self.src, self.p.fdef))

    def span(self, node) -> Span:
        return _span(self.src, node)

    def err(self, cls, msg, node, hint=None):
        return cls(msg, self._as_span(node), hint)

    # -- names -------------------------------------------------------------------
    def lookup(self, name: str, node) -> Binding:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in self.params:
            return self.params[name]
        if name in self.vars:
            return Binding("var", self.vars[name])
        if name in self.p.env:
            return Binding("pyobj", self.p.env[name])
        if hasattr(dsl, name) and not name.startswith("_"):
            return Binding("pyobj", getattr(dsl, name))
        if name in ("metal",):
            return Binding("pyobj", dsl.metal)
        if hasattr(_pybuiltins, name):
            return Binding("pyobj", getattr(_pybuiltins, name))
        raise self.err(KernelNameError, f"name {name!r} is not defined", node,
                       hint="define it before this line, pass it as an argument, or import it "
                            "(from metalbench.dsl import *)")

    def local_var(self, name: str, t, node) -> ir.Var:
        """The local variable ``name``; its type is settled by the fixpoint in translate()."""
        if name in self.params and self.params[name].kind != "var":
            raise self.err(KernelTypeError, f"cannot assign to {name!r}: it is an array or constant",
                           node, hint="store into an element (x[i] = ...) or use another name")
        self.assigned[name] = self._join(self.assigned[name], t) if name in self.assigned else t
        if name in self.annotated:
            vt = self.annotated[name]
        else:
            vt = self.var_types.get(name, t)
        v = self.vars.get(name)
        if v is None:
            v = ir.Var(self.fresh(name, ("local", name)), vt, span=self._as_span(node))
            self.vars[name] = v
        return v

    def _as_span(self, node_or_span) -> Span:
        return node_or_span if isinstance(node_or_span, Span) else self.span(node_or_span)

    def _join(self, a, b):
        return self.sem.join(a, b)

    def _once(self, e: ir.Expr, span: Span) -> ir.Var:
        """The semantic layer's ``once`` hook: ``e`` stored in a temporary (declared with
        the locals, assigned just before the statement that uses it)."""
        key = ("once", span.line, span.col, span.end_line, span.end_col)
        tmp = self.local_var(self.fresh("_p", key), e.type, span)
        self._pending_list.append(ir.Assign(tmp, e, span=span))
        return ir.Var(tmp.name, e.type, span=span)

    # -- conversions -------------------------------------------------------------
    def conv(self, e: ir.Expr, t, node=None) -> ir.Expr:
        """``e`` implicitly converted to ``t`` (see :meth:`Semantics.convert`)."""
        return self.sem.convert(e, t)

    def to_bool(self, e: ir.Expr) -> ir.Expr:
        """``e`` as a condition (see :meth:`Semantics.to_bool`)."""
        return self.sem.to_bool(e)

    # -- statements ----------------------------------------------------------------
    def block(self, stmts) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s) -> list[ir.Stmt]:
        sp = self.span(s)
        for cls, what in _UNSUPPORTED_STMT.items():
            if isinstance(s, cls):
                raise KernelSyntaxError(f"{what} is not supported in kernels", sp,
                                        hint="kernels support assignment, if/elif/else, for ... in range(...), "
                                             "while, break, continue, return and calls")
        if isinstance(s, ast.Pass):
            return []
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
                return []  # docstring
            if isinstance(s.value, ast.Call):
                e = self.call(s.value, statement=True)
                if e is None:
                    return self._pending()
                if isinstance(e, ir.Stmt):
                    return self._pending() + [e]
                return self._pending() + [ir.ExprStmt(e, span=sp)]
            self.expr(s.value)
            return []
        if isinstance(s, ast.Assign):
            return self.assign(s)
        if isinstance(s, ast.AnnAssign):
            return self.ann_assign(s)
        if isinstance(s, ast.AugAssign):
            return self.aug_assign(s)
        if isinstance(s, ast.If):
            cond = self.to_bool(self.expr(s.test))
            pre = self._pending()
            if isinstance(cond, ir.Const):  # a compile-time if keeps only its taken side
                return pre + self.scoped(s.body if cond.value else s.orelse)
            return pre + [ir.If(cond, self.scoped(s.body), self.scoped(s.orelse), span=sp)]
        if isinstance(s, ast.For):
            return self.for_loop(s)
        if isinstance(s, ast.While):
            if s.orelse:
                raise KernelSyntaxError("while ... else is not supported", sp)
            cond = self.to_bool(self.expr(s.test))
            if self._pending_list:
                raise KernelSyntaxError("this loop condition is too complex (it declares arrays)", sp)
            self.loop_depth += 1
            body = self.scoped(s.body)
            self.loop_depth -= 1
            return [ir.While(cond, body, span=sp)]
        if isinstance(s, ast.Break):
            if not self.loop_depth:
                raise KernelSyntaxError("'break' outside a loop", sp)
            return [ir.Break(span=sp)]
        if isinstance(s, ast.Continue):
            if not self.loop_depth:
                raise KernelSyntaxError("'continue' outside a loop", sp)
            return [ir.Continue(span=sp)]
        if isinstance(s, ast.Return):
            if s.value is None:
                return [ir.Return(span=sp)]
            if self.is_kernel:
                raise KernelSyntaxError("a kernel cannot return a value", sp,
                                        hint="write results into an output array (out[i] = value); "
                                             "a bare `return` ends the thread")
            v = self.expr(s.value)
            self.ret_types.append(v.type)
            rt = self.ret_type or v.type
            return self._pending() + [ir.Return(self.conv(v, rt), span=sp)]
        raise KernelSyntaxError(f"{type(s).__name__} statements are not supported in kernels", sp)

    def _pending(self) -> list:
        out, self._pending_list = self._pending_list, []
        return out

    def scoped(self, stmts) -> list[ir.Stmt]:
        self.scopes.append({})
        try:
            return self.block(stmts)
        finally:
            self.scopes.pop()

    def assign(self, s: ast.Assign) -> list[ir.Stmt]:
        sp = self.span(s)
        if len(s.targets) != 1:
            raise KernelSyntaxError("chained assignment (a = b = c) is not supported", sp)
        target = s.targets[0]
        # Arrays are declared by assignment: tile = threadgroup_array((16, 16), float32)
        if isinstance(target, ast.Name) and isinstance(s.value, ast.Call):
            obj = self._callee_obj(s.value.func)
            if isinstance(obj, dsl.Builtin) and obj.dsl_name in ("threadgroup_array", "local_array") \
                    or getattr(obj, "__metalbench_array__", None):
                return self.declare_array(target.id, s.value, obj)
        if isinstance(target, ast.Tuple):
            return self.tuple_assign(target, s.value, sp)
        value = self.expr(s.value)
        return self._pending() + self.store_to(target, value, sp)

    def tuple_assign(self, target: ast.Tuple, value_node, sp) -> list[ir.Stmt]:
        if isinstance(value_node, ast.Tuple):
            if len(value_node.elts) != len(target.elts):
                raise KernelSyntaxError("tuple assignment with different lengths", sp)
            values = [self.expr(v) for v in value_node.elts]
        elif isinstance(value_node, ast.Attribute) and value_node.attr == "shape":
            info = self.buffer_of(value_node.value)
            values = [self.shape_of(info, d, value_node) for d in range(info.ndim)]
            if len(values) != len(target.elts):
                raise KernelSyntaxError(f"{info.name} has {info.ndim} dimensions, "
                                        f"not {len(target.elts)}", sp)
        else:
            v = self.expr(value_node)
            if isinstance(v.type, T.VectorType) and v.type.n == len(target.elts):
                values = [self.sem.component(v, "xyzw"[k], v.span) for k in range(v.type.n)]
            else:
                raise KernelSyntaxError("tuple assignment needs a tuple, a vector or x.shape on the right",
                                        sp)
        out = self._pending()
        if len(values) > 1 and not all(isinstance(v, (ir.Const, ir.ShapeOf, ir.ThreadAttr, ir.Swizzle))
                                       for v in values):
            # a, b = b, a: evaluate every value before assigning any.
            temps = []
            for v in values:
                tmp = self.local_var(self.fresh("_t", ("tmp", id(v))), v.type, value_node)
                out.append(ir.Assign(tmp, v, span=sp))
                temps.append(tmp)
            values = temps
        for t, v in zip(target.elts, values):
            out.extend(self.store_to(t, v, sp))
        return out

    def store_to(self, target, value: ir.Expr, sp) -> list[ir.Stmt]:
        if isinstance(target, ast.Name):
            b = None
            for scope in reversed(self.scopes):
                if target.id in scope:
                    b = scope[target.id]
            if b is not None and b.kind == "var":  # loop variable
                return [ir.Assign(b.value, self.conv(value, b.value.type), span=sp)]
            if value.type is None:
                raise self.err(KernelTypeError, "this call returns no value", target)
            var = self.local_var(target.id, value.type, target)
            return [ir.Assign(var, self.conv(value, var.type), span=sp)]
        if isinstance(target, ast.Subscript):
            info = self.buffer_of(target.value)
            idx = self.index(info, target.slice, target)
            if info.kernel_param is not None and not info.kernel_param.is_output and self.is_kernel:
                info.kernel_param.written = True
            return self._pending() + [ir.Store(info.name, idx, self.conv(value, info.elem), span=sp)]
        if isinstance(target, ast.Attribute):
            raise KernelSyntaxError("cannot assign to an attribute", sp,
                                    hint="vector components are read-only here; build a new vector")
        raise KernelSyntaxError(f"cannot assign to {type(target).__name__}", sp)

    def ann_assign(self, s: ast.AnnAssign) -> list[ir.Stmt]:
        if not isinstance(s.target, ast.Name):
            raise KernelSyntaxError("annotations are only allowed on plain names", self.span(s))
        obj = self.static_value(s.annotation)
        t = resolve_dtype(obj)
        if t is None:
            if isinstance(obj, str) and obj in T.VECTORS:
                t = T.VECTORS[obj]
            else:
                raise self.err(KernelTypeError, f"{ast.unparse(s.annotation)} is not a type", s.annotation,
                               hint="use a dtype such as float32, int32, uint32, float16")
        self.annotated[s.target.id] = t
        var = self.local_var(s.target.id, t, s.target)
        if s.value is None:
            return []
        value = self.expr(s.value)
        return self._pending() + [ir.Assign(var, self.conv(value, t), span=self.span(s))]

    def aug_assign(self, s: ast.AugAssign) -> list[ir.Stmt]:
        sp = self.span(s)
        op = _BINOPS[type(s.op)]
        if isinstance(s.target, ast.Name):
            cur = self.expr(s.target)
            rhs = self.expr(s.value)
            return self._pending() + self.store_to(s.target, self.binop(op, cur, rhs, s), sp)
        if isinstance(s.target, ast.Subscript):
            info = self.buffer_of(s.target.value)
            idx = self.index(info, s.target.slice, s.target)
            out = self._pending()
            if not isinstance(idx, (ir.Const, ir.Var)):
                tmp = self.local_var(self.fresh("_i", ("idx", s.lineno, s.col_offset)), idx.type, s.target)
                out.append(ir.Assign(tmp, idx, span=sp))
                idx = tmp
            cur = ir.Load(info.name, idx, info.elem, span=sp)
            rhs = self.expr(s.value)
            out += self._pending()
            new = self.binop(op, cur, rhs, s)
            return out + [ir.Store(info.name, idx, self.conv(new, info.elem), span=sp)]
        raise KernelSyntaxError("unsupported augmented assignment target", sp)

    def for_loop(self, s: ast.For) -> list[ir.Stmt]:
        sp = self.span(s)
        if s.orelse:
            raise KernelSyntaxError("for ... else is not supported", sp)
        it = s.iter
        if not (isinstance(it, ast.Call) and isinstance(self._callee_obj(it.func), type(range))
                and self._callee_obj(it.func) is range):
            raise KernelSyntaxError("only `for ... in range(...)` loops are supported", self.span(s.iter),
                                    hint="use range(stop), range(start, stop) or range(start, stop, step)")
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.err(KernelTypeError, "range() takes 1 to 3 positional arguments", it)
        args = [self.expr(a) for a in it.args]
        for a, node in zip(args, it.args):
            if not (isinstance(a.type, T.ScalarType) and (a.type.is_int or a.type.is_bool)):
                raise self.err(KernelTypeError, f"range() needs integers, got {a.type.name}", node,
                               hint="convert with int32(...) or uint32(...)")
        if len(args) == 1:
            start, stop, step = ir.Const(0, T.int32), args[0], ir.Const(1, T.int32)
        elif len(args) == 2:
            (start, stop), step = args, ir.Const(1, T.int32)
        else:
            start, stop, step = args
        if isinstance(step, ir.Const) and step.value == 0:
            raise self.err(KernelTypeError, "range() step must not be zero", it.args[2])
        t = self.sem.rules.promote(self.sem.rules.arith(start.type, stop.type))
        if not isinstance(s.target, ast.Name):
            raise KernelSyntaxError("the loop variable must be a plain name", self.span(s.target))
        name = s.target.id
        var = ir.Var(self.fresh(name, ("loop", s.lineno, s.col_offset)), t, span=self.span(s.target))
        pre = self._pending()
        self.scopes.append({name: Binding("var", var)})
        self.loop_depth += 1
        try:
            body = self.block(s.body)
        finally:
            self.loop_depth -= 1
            self.scopes.pop()
        return pre + [ir.For(var, self.conv(start, t), self.conv(stop, t), self.conv(step, t), body, span=sp)]

    def declare_array(self, name: str, call: ast.Call, obj) -> list[ir.Stmt]:
        sp = self.span(call)
        hook = getattr(obj, "__metalbench_array__", None)
        if hook is not None:
            space, shape, dtype = hook(self, call)
        else:
            space = "threadgroup" if obj.dsl_name == "threadgroup_array" else "thread"
            args = list(call.args)
            kw = {k.arg: k.value for k in call.keywords}
            if len(args) + len(kw) != 2 or (len(args) < 2 and not ({"shape", "dtype"} - {None}) <= set(kw) | {"shape", "dtype"}):
                raise self.err(KernelTypeError, f"{obj.dsl_name}(shape, dtype) takes 2 arguments", call)
            shape_node = args[0] if args else kw.get("shape")
            dtype_node = args[1] if len(args) > 1 else kw.get("dtype")
            if shape_node is None or dtype_node is None:
                raise self.err(KernelTypeError, f"{obj.dsl_name}(shape, dtype) takes 2 arguments", call)
            shape = self.static_value(shape_node)
            dtype = self.static_value(dtype_node)
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        if not (isinstance(shape, tuple) and shape and all(isinstance(d, (int, np.integer)) and d > 0
                                                           for d in shape)):
            raise self.err(KernelTypeError, f"array shape must be a positive int or a tuple of them, "
                                            f"known at compile time; got {shape!r}", call,
                           hint="use literals, globals or mb.constexpr parameters for the shape")
        t = resolve_dtype(dtype)
        if t is None:
            raise self.err(KernelTypeError, f"{dtype!r} is not a supported dtype", call,
                           hint="use float32, float16, bfloat16, int32, uint32, ...")
        if space == "threadgroup" and not self.is_kernel:
            raise KernelSyntaxError("threadgroup arrays must be declared in the kernel, not in a device "
                                    "function", sp, hint="declare it in the kernel and pass it as an argument")
        cname = self.fresh(name, ("array", call.lineno, call.col_offset))
        decl = ir.ArrayDecl(cname, space, t, tuple(int(d) for d in shape), span=sp)
        info = BufInfo(cname, t, space, len(shape), decl.shape, decl=decl)
        self.scopes[0][name] = Binding("buf", info)
        self.hoisted.append(decl)
        return []

    # -- expressions -------------------------------------------------------------------
    def static_value(self, node):
        """Evaluate a compile-time expression: literals, tuples, names of globals and
        constexprs, attribute access on them, and constant arithmetic."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Tuple):
            return tuple(self.static_value(e) for e in node.elts)
        if isinstance(node, ast.Name):
            b = self.lookup(node.id, node)
            if b.kind == "pyobj":
                return b.value
            if b.kind == "const":
                return b.value
        if isinstance(node, ast.Attribute):
            base = self.static_value(node.value)
            try:
                return getattr(base, node.attr)
            except AttributeError:
                raise self.err(KernelNameError, f"{ast.unparse(node.value)} has no attribute {node.attr!r}", node)
        e = self.expr(node)
        if isinstance(e, ir.Const):
            return e.value
        raise self.err(KernelTypeError, f"{ast.unparse(node)} must be known at compile time", node,
                       hint="use literals, globals or mb.constexpr parameters here")

    def expr(self, node) -> ir.Expr:
        sp = self.span(node)
        for cls, what in _UNSUPPORTED_EXPR.items():
            if isinstance(node, cls):
                raise KernelSyntaxError(f"{what} are not supported in kernels" if what.endswith("s")
                                        else f"{what} is not supported in kernels", sp)
        if isinstance(node, ast.Constant):
            return self.const(node.value, node)
        if isinstance(node, ast.Name):
            return self.name_value(node)
        if isinstance(node, ast.BinOp):
            op = _BINOPS[type(node.op)]
            a = self.expr(node.left)
            b = self.expr(node.right)
            return self.binop(op, a, b, node)
        if isinstance(node, ast.UnaryOp):
            a = self.expr(node.operand)
            return self.sem.unop(_UNOPS[type(node.op)], a, sp)
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            vals = [self.expr(v) for v in node.values]
            r = vals[0]
            for v in vals[1:]:
                r = self.sem.logical(op, r, v, sp)
            return self.to_bool(r)
        if isinstance(node, ast.Compare):
            parts = []
            left = self.expr(node.left)
            for opn, comp in zip(node.ops, node.comparators):
                if type(opn) not in _CMPOPS:
                    raise self.err(KernelSyntaxError, f"the {type(opn).__name__} comparison is not supported",
                                   node, hint="use ==, !=, <, <=, >, >=")
                right = self.expr(comp)
                parts.append(self.binop(_CMPOPS[type(opn)], left, right, node))
                left = right
            r = parts[0]
            for p in parts[1:]:
                r = self.sem.logical("and", r, p, sp)
            return r
        if isinstance(node, ast.IfExp):
            c = self.expr(node.test)
            a = self.expr(node.body)
            b = self.expr(node.orelse)
            return self.sem.select(c, a, b, sp)
        if isinstance(node, ast.Call):
            e = self.call(node)
            if e is None or isinstance(e, ir.Stmt):
                raise self.err(KernelTypeError, f"{ast.unparse(node.func)}() returns no value", node)
            return e
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Tuple):
            raise KernelSyntaxError("tuples are only allowed as indices and in tuple assignment", sp)
        raise KernelSyntaxError(f"{type(node).__name__} expressions are not supported in kernels", sp)

    def const(self, value, node) -> ir.Expr:
        """A Python number as a constant: ``int`` and ``float`` literals are typed by the
        rules (int32/int64/uint64 by size, float32), NumPy scalars keep their dtype
        (float64 becomes float32)."""
        sp = self.span(node)
        if isinstance(value, (bool, np.bool_)):
            return self.sem.bool_const(value, sp)
        if isinstance(value, (int, np.integer)) and not isinstance(value, np.generic):
            return self.sem.int_literal(int(value), sp)
        if isinstance(value, float):
            return self.sem.float_literal(value, sp)
        if isinstance(value, np.generic):
            t = resolve_dtype(value.dtype) if value.dtype != np.float64 else T.float32
            if t is None:
                raise self.err(KernelTypeError, f"unsupported constant type {value.dtype}", node)
            return self.sem.const(value.item(), t, sp)
        raise self.err(KernelTypeError, f"{type(value).__name__} constants are not supported in kernels "
                                        f"(got {value!r})", node,
                       hint="kernels use numbers, booleans and arrays")

    def name_value(self, node: ast.Name) -> ir.Expr:
        b = self.lookup(node.id, node)
        sp = self.span(node)
        if b.kind == "var":
            return ir.Var(b.value.name, b.value.type, span=sp)
        if b.kind == "const":
            return self.const(b.value, node)
        if b.kind == "buf":
            raise self.err(KernelTypeError, f"{node.id!r} is an array; index it (e.g. {node.id}[i])", node)
        return self.object_value(b.value, node, f"{node.id!r} ({type(b.value).__name__})")

    def object_value(self, obj, node, what: str) -> ir.Expr:
        """A compile-time Python object used as a value: a thread attribute, an object with
        the ``__metalbench_value__`` hook, or a number."""
        if isinstance(obj, dsl.ThreadAttribute):
            return self.thread_attr(obj.dsl_name, node)
        hook = getattr(obj, "__metalbench_value__", None)
        if hook is not None:
            return hook(self, node)
        if isinstance(obj, (bool, int, float, np.generic)):
            return self.const(obj, node)
        raise self.err(KernelTypeError, f"{what} cannot be used as a value in a kernel", node,
                       hint="kernels can use numbers, arrays, thread attributes and builtins")

    def thread_attr(self, name: str, node) -> ir.Expr:
        """Thread attribute ``name`` (used by the Numba layer's hooks too)."""
        return self.sem.thread_attr(name, self.span(node))

    def attribute(self, node: ast.Attribute) -> ir.Expr:
        sp = self.span(node)
        # x.size / x.ndim on arrays
        if isinstance(node.value, ast.Name):
            try:
                b = self.lookup(node.value.id, node.value)
            except KernelNameError:
                raise
            if b.kind == "buf":
                info = b.value
                if node.attr == "size":
                    return self.size_of(info, node)
                if node.attr == "ndim":
                    return ir.Const(info.ndim, T.int32, span=sp)
                if node.attr == "shape":
                    raise self.err(KernelTypeError, f"use {node.value.id}.shape[i] with a constant i", node)
                raise self.err(KernelTypeError, f"arrays have no attribute {node.attr!r} in kernels", node,
                               hint="use .size, .shape[i] or .ndim")
        base_obj = self._maybe_static(node.value)
        if base_obj is not _NOT_STATIC and not isinstance(base_obj, dsl.ThreadAttribute):
            try:
                obj = getattr(base_obj, node.attr)
            except AttributeError:
                raise self.err(KernelNameError, f"{ast.unparse(node.value)} has no attribute {node.attr!r}", node)
            return self.object_value(obj, node, ast.unparse(node))
        v = self.expr(node.value)
        if isinstance(v.type, T.VectorType):
            return self.sem.component(v, node.attr, sp)
        raise self.err(KernelTypeError, f"{v.type.name} values have no attribute {node.attr!r}", node)

    def _maybe_static(self, node):
        if isinstance(node, ast.Name):
            try:
                b = self.lookup(node.id, node)
            except KernelNameError:
                raise
            return b.value if b.kind == "pyobj" else _NOT_STATIC
        if isinstance(node, ast.Attribute):
            base = self._maybe_static(node.value)
            if base is _NOT_STATIC or isinstance(base, dsl.ThreadAttribute):
                return _NOT_STATIC
            try:
                return getattr(base, node.attr)
            except AttributeError:
                raise self.err(KernelNameError, f"{ast.unparse(node.value)} has no attribute {node.attr!r}", node)
        return _NOT_STATIC

    def buffer_of(self, node) -> BufInfo:
        if isinstance(node, ast.Name):
            b = self.lookup(node.id, node)
            if b.kind == "buf":
                return b.value
            hook = getattr(b.value, "__metalbench_buffer__", None) if b.kind == "pyobj" else None
            if hook is not None:
                return hook(self, node)
            raise self.err(KernelTypeError, f"{node.id!r} is not an array and cannot be indexed", node)
        raise self.err(KernelTypeError, f"cannot index {ast.unparse(node)}", node,
                       hint="index arrays by name: x[i] or x[i, j]")

    def shape_of(self, info: BufInfo, dim: int, node) -> ir.Expr:
        sp = self.span(node)
        if not 0 <= dim < info.ndim:
            raise self.err(KernelTypeError, f"{info.name} has {info.ndim} dimension(s); shape[{dim}] is out of "
                                            "range", node)
        if info.shape is not None:
            return ir.Const(int(info.shape[dim]), T.int32, span=sp)
        if info.kernel_param is None:
            raise self.err(KernelTypeError, f"the shape of {info.name!r} is not known inside a device function",
                           node, hint="pass the size as an argument")
        info.kernel_param.uses_shape = True
        return ir.ShapeOf(info.name, dim, T.int32, span=sp)

    def size_of(self, info: BufInfo, node) -> ir.Expr:
        if info.shape is not None:
            n = 1
            for d in info.shape:
                n *= d
            return ir.Const(n, T.int32, span=self.span(node))
        r = self.shape_of(info, 0, node)
        for d in range(1, info.ndim):
            r = self.sem.binop("*", r, self.shape_of(info, d, node), self.span(node))
        return r

    def index(self, info: BufInfo, slc, node) -> ir.Expr:
        parts = slc.elts if isinstance(slc, ast.Tuple) else [slc]
        idx = []
        for p in parts:
            if isinstance(p, ast.Slice):
                raise self.err(KernelSyntaxError, "slices are not supported in kernels; index one element "
                                                  "at a time", p)
            idx.append(self.sem.index(self.expr(p), self.span(p)))
        if len(idx) == 1:
            return idx[0]
        if len(idx) != info.ndim:
            raise self.err(KernelTypeError, f"{info.name} has {info.ndim} dimension(s) but {len(idx)} indices "
                                            "were given", node)
        dims = [None] + [self.shape_of(info, d, node) for d in range(1, len(idx))]
        return self.sem.linear_index(idx, dims, self.span(node))

    def subscript(self, node: ast.Subscript) -> ir.Expr:
        sp = self.span(node)
        # x.shape[i]
        if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
            try:
                info = self.buffer_of(node.value.value)
            except KernelTypeError:
                info = None
            if info is not None:
                d = self.static_value(node.slice)
                if not isinstance(d, (int, np.integer)):
                    raise self.err(KernelTypeError, "shape index must be a constant integer", node)
                d = int(d) + (info.ndim if d < 0 else 0)
                return self.shape_of(info, d, node)
        if isinstance(node.value, ast.Name):
            b = self.lookup(node.value.id, node.value)
            if b.kind == "buf" or (b.kind == "pyobj" and hasattr(b.value, "__metalbench_buffer__")):
                info = self.buffer_of(node.value)
                return ir.Load(info.name, self.index(info, node.slice, node), info.elem, span=sp)
        v = self.expr(node.value)
        if isinstance(v.type, T.VectorType):
            k = self.static_value(node.slice)
            k = int(k) if isinstance(k, (int, np.integer)) and not isinstance(k, bool) else None
            return self.sem.vector_index(v, k, sp)
        raise self.err(KernelTypeError, f"{ast.unparse(node.value)} cannot be indexed", node)

    # -- operators ---------------------------------------------------------------------
    def fold(self, e: ir.Expr) -> ir.Expr:
        """``e`` folded when constant (see :meth:`Semantics.fold`)."""
        return self.sem.fold(e)

    def binop(self, op: str, a: ir.Expr, b: ir.Expr, node) -> ir.Expr:
        """Python's binary operator ``op`` on ``a`` and ``b`` (see :meth:`Semantics.binop`)."""
        if op == "@":
            raise self.err(KernelSyntaxError, "the @ operator is not supported in kernels", node)
        return self.sem.binop(op, a, b, self.span(node))

    # -- calls -------------------------------------------------------------------------
    def _callee_obj(self, func_node):
        try:
            v = self._maybe_static(func_node)
        except KernelNameError:
            raise
        return None if v is _NOT_STATIC else v

    def call(self, node: ast.Call, statement: bool = False):
        sp = self.span(node)
        obj = self._callee_obj(node.func)
        if obj is None:
            raise self.err(KernelTypeError, f"{ast.unparse(node.func)} is not callable in a kernel", node)
        hook = getattr(obj, "__metalbench_intrinsic__", None)
        if hook is not None:
            return hook(self, node)
        from ..kernel import Func  # a cycle: kernel.py imports this module
        if isinstance(obj, Func):
            return self.device_call(obj, node)
        name = None
        if isinstance(obj, dsl.Builtin):
            name = obj.dsl_name
        elif isinstance(obj, dsl.DType) or obj in _PY_CASTS or (isinstance(obj, type) and issubclass(obj, np.generic)):
            t = resolve_dtype(obj)
            if t is None:
                raise self.err(KernelTypeError, f"{ast.unparse(node.func)} is not a supported type", node,
                               hint="Metal has no float64; use float32")
            if len(node.args) != 1 or node.keywords:
                raise self.err(KernelTypeError, f"{ast.unparse(node.func)}(x) converts one value", node)
            v = self.expr(node.args[0])
            # On a vector, a dtype converts component-wise: float32(int2_value) is a float2.
            tt = T.vector_of(t, v.type.n) if isinstance(v.type, T.VectorType) else t
            return self.sem.cast(tt, v, sp)
        elif isinstance(obj, str) and obj in T.VECTORS:
            name = obj
        elif obj is len:
            if len(node.args) != 1:
                raise self.err(KernelTypeError, "len(x) takes one array", node)
            return self.shape_of(self.buffer_of(node.args[0]), 0, node)
        elif obj is range:
            raise self.err(KernelSyntaxError, "range() is only allowed in `for ... in range(...)`", node)
        elif registry.lookup_object(obj) is not None:
            name = registry.lookup_object(obj).name
        elif callable(obj) and getattr(obj, "__module__", "") in ("builtins",):
            raise self.err(KernelSyntaxError, f"{ast.unparse(node.func)}() is not supported in kernels", node)
        if name is None:
            if obj in (print,):
                raise self.err(KernelSyntaxError, "print() is not supported in kernels", node,
                               hint="write values to an output array, or run on backend='sim' with checked=True")
            raise self.err(KernelTypeError, f"{ast.unparse(node.func)} cannot be called in a kernel", node,
                           hint="kernels call Metal builtins (metalbench.dsl), math functions and @mb.func functions")
        if node.keywords and name not in ("threadgroup_barrier", "simdgroup_barrier"):
            raise self.err(KernelTypeError, f"{name}() takes no keyword arguments", node)
        if name in ("threadgroup_array", "local_array"):
            raise self.err(KernelSyntaxError, f"{name}() must be assigned to a name: "
                                              f"buf = {name}(shape, dtype)", node)
        if name in ("threadgroup_barrier", "simdgroup_barrier"):
            flags = tuple(self.static_value(a) for a in node.args) or (
                ("mem_threadgroup",) if name == "threadgroup_barrier" else ("mem_none",))
            flags = tuple(getattr(f, "dsl_name", f) for f in flags)
            for f in flags:
                if f not in ("mem_none", "mem_device", "mem_threadgroup", "mem_texture"):
                    raise self.err(KernelTypeError, f"unknown memory flag {f!r}", node,
                                   hint="use mem_threadgroup, mem_device, mem_none")
            return ir.Barrier("threadgroup" if name == "threadgroup_barrier" else "simdgroup", flags, span=sp)
        b = registry.lookup(name, dialect="python")
        if b is not None and b.node == "Atomic":
            return self.atomic(b.extra["op"], name, node)
        if name in T.VECTORS:
            return self.sem.vector(T.VECTORS[name], [self.expr(a) for a in node.args], sp)
        if name == "select":
            if len(node.args) != 3:
                raise self.err(KernelTypeError, "select(a, b, c) takes 3 arguments (c ? b : a)", node)
            a, b, c = (self.expr(x) for x in node.args)
            return self.sem.select(c, b, a, sp)
        args = [self.expr(a) for a in node.args]
        if name in ("min", "max") and len(args) > 2:
            r = self.builtin_call(name, args[:2], node)
            for a in args[2:]:
                r = self.builtin_call(name, [r, a], node)
            return r
        if name == "round" and len(args) == 2:
            raise self.err(KernelTypeError, "round(x, ndigits) is not supported; round(x) is", node)
        if name == "round" and obj is _pybuiltins.round:
            return self.sem.rules.round(self.sem, args[0], sp) if len(args) == 1 else \
                self.builtin_call(name, args, node)
        if name == "pow" and len(args) == 2:
            return self.binop("**", args[0], args[1], node)
        return self.builtin_call(name, args, node)

    def builtin_call(self, name: str, args: list[ir.Expr], node) -> ir.Expr:
        """A call of builtin ``name`` (see :meth:`Semantics.builtin`); used by the Numba hooks."""
        return self.sem.builtin(name, args, self.span(node))

    def atomic(self, op: str, fname: str, node: ast.Call) -> ir.Expr:
        """``atomic_<op>(array, index, values...)``: the old value (see :meth:`Semantics.atomic`)."""
        n_value = {"cas": 2, "load": 0}.get(op, 1)
        if len(node.args) != 2 + n_value:
            want = {"cas": "(array, index, expected, desired)", "load": "(array, index)"}.get(op, "(array, index, value)")
            raise self.err(KernelTypeError, f"{fname}{want} takes {2 + n_value} arguments, got {len(node.args)}", node)
        sp = self.span(node)
        info = self.buffer_of(node.args[0])
        idx = self.index(info, node.args[1], node)
        self.sem.check_atomic(op, info.elem, info.space, info.name, sp, who=fname)
        vals = [self.expr(a) for a in node.args[2:]]
        if info.kernel_param is not None:
            info.kernel_param.atomic = True
        return self.sem.atomic(op, info.name, info.elem, info.space, idx, vals, sp, who=fname)

    def device_call(self, func, node: ast.Call) -> ir.Expr:
        if node.keywords:
            raise self.err(KernelTypeError, f"{func.__name__}() takes positional arguments only", node)
        parsed = func.parsed()
        params = parsed.fdef.args
        names = [a.arg for a in params.args]
        defaults = params.defaults
        nreq = len(names) - len(defaults)
        if not nreq <= len(node.args) <= len(names):
            raise self.err(KernelTypeError, f"{func.__name__}() takes {len(names)} argument(s), got {len(node.args)}",
                           node)
        args: list[ir.Expr] = []
        bindings: dict[str, Binding] = {}
        fparams: list[ir.FuncParam] = []
        key: list = [id(func)]
        for i, pname in enumerate(names):
            if i < len(node.args):
                a = node.args[i]
                info = None
                if isinstance(a, ast.Name):
                    b = self.lookup(a.id, a)
                    if b.kind == "buf":
                        info = b.value
                if info is not None:
                    bindings[pname] = Binding("buf", BufInfo(pname, info.elem, info.space, info.ndim, info.shape))
                    fparams.append(ir.FuncParam(pname, info.elem, info.space,
                                                const=info.kernel_param is not None and not info.kernel_param.is_output))
                    args.append(ir.BufArg(info.name, span=self.span(a)))
                    key.append(("buf", info.elem.name, info.space, info.ndim, info.shape))
                    continue
                e = self.expr(a)
                if e.type is None:
                    raise self.err(KernelTypeError, "this argument has no value", a)
                if isinstance(e, ir.Const) and not isinstance(e.type, T.VectorType):
                    # Compile-time arguments specialise the function (like constexpr).
                    bindings[pname] = Binding("const", e.value)
                    key.append(("const", e.type.name, e.value))
                    continue
                bindings[pname] = Binding("var", ir.Var(pname, e.type))
                fparams.append(ir.FuncParam(pname, e.type))
                args.append(e)
                key.append(("val", e.type.name))
            else:
                d = defaults[i - nreq]
                bindings[pname] = Binding("const", ast.literal_eval(d) if isinstance(d, ast.Constant) else
                                          self.static_value(d))
                key.append(("default",))
        key = tuple(key)
        fn_ir = self.m.functions.get(key)
        if fn_ir is None:
            if key in self.m.in_progress or id(func) in {k[0] for k in self.m.in_progress}:
                raise self.err(KernelSyntaxError, f"recursion is not supported ({func.__name__} calls itself)",
                               node, hint="rewrite the recursion as a loop")
            self.m.in_progress.add(key)
            try:
                self.m.names.update(names)
                sub = FunctionTranslator(self.m, parsed, False, bindings)
                body = sub.translate()
            finally:
                self.m.in_progress.discard(key)
            fn_ir = ir.Function(self.m.unique(f"{func.__name__}"), fparams, sub.ret_type, body,
                                span=_span(parsed.source, parsed.fdef))
            self.m.functions[key] = fn_ir
            self.m.order.append(fn_ir)
        return ir.FuncCall(fn_ir.name, args, fn_ir.ret, span=self.span(node))


_NOT_STATIC = object()


# ----------------------------------------------------------------------------- entry point

def translate_kernel(parsed: ParsedFunction, specs: list[ArgSpec], name: str | None = None) -> ir.KernelIR:
    """Translate a parsed kernel for one specialisation into a :class:`~metalbench.ir.KernelIR`.

    ``specs`` describes every parameter of the function in order (buffers, scalars,
    constexprs, outputs).
    """
    kname = name or parsed.name
    module = Module(kname, parsed.rules or DSL)
    params: list[ir.Param] = []
    bindings: dict[str, Binding] = {}
    for spec in specs:
        module.names.add(spec.name)
        if spec.kind == "constexpr":
            bindings[spec.name] = Binding("const", spec.value)
        elif spec.kind == "scalar":
            p = ir.Param(spec.name, "scalar", spec.type, 0)
            params.append(p)
            bindings[spec.name] = Binding("var", ir.Var(spec.name, spec.type))
        else:
            p = ir.Param(spec.name, "buffer", spec.type, spec.ndim, is_output=spec.is_output)
            params.append(p)
            bindings[spec.name] = Binding("buf", BufInfo(spec.name, spec.type, "device", spec.ndim, None,
                                                          kernel_param=p))
    # MLX order: inputs first, then outputs.
    params = [p for p in params if not p.is_output] + [p for p in params if p.is_output]
    tr = FunctionTranslator(module, parsed, True, bindings)
    body = tr.translate()
    kir = ir.KernelIR(kname, params, body, functions=_reachable(module.order, body), source=parsed.source)
    return kir


def _reachable(functions: list[ir.Function], body) -> list[ir.Function]:
    """The functions the final body calls, directly or not, callees first. Earlier typing
    passes may have specialised functions for types that did not survive."""
    by_name = {f.name: f for f in functions}
    seen: set[str] = set()

    def visit(stmts):
        for n in ir.walk(stmts):
            if isinstance(n, ir.FuncCall) and n.func not in seen:
                seen.add(n.func)
                visit(by_name[n.func].body)
    visit(body)
    return [f for f in functions if f.name in seen]
