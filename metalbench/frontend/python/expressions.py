"""DSL expressions: literals, names, attributes (``x.size``, vector components),
subscripts (buffer elements, ``x.shape[i]``), operators, conditional expressions,
and compile-time evaluation of static values."""
from __future__ import annotations

import ast
import enum

import numpy as np

from ... import dsl
from ... import ir, literals
from ... import types as T
from ...errors import KernelNameError, KernelSyntaxError, KernelTypeError, error_net
from .compiletime import NOT_STATIC
from ...semantics import TupleValue, complex_type, is_complex
from .specs import BufInfo, resolve_dtype


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


_NOT_STATIC = object()


def _narrow_product(fdef, name: str):
    """The first assignment to ``name`` whose value multiplies or shifts left
    (``j = r * 65536 + k``, ``j *= 2``), else None."""
    for a in ast.walk(fdef):
        if isinstance(a, ast.Assign):
            targets, value = a.targets, a.value
        elif isinstance(a, (ast.AugAssign, ast.AnnAssign)):
            targets, value = [a.target], a.value
            if isinstance(a, ast.AugAssign) and isinstance(a.op, (ast.Mult, ast.LShift)) \
                    and isinstance(a.target, ast.Name) and a.target.id == name:
                return a
        else:
            continue
        if value is None or not any(isinstance(t, ast.Name) and t.id == name for t in targets):
            continue
        inner = list(ast.walk(value))
        wide = any(isinstance(b, ast.Call) and isinstance(b.func, ast.Name) and b.func.id in ("int64", "uint64")
                   for b in inner)           # computed in 64 bits already
        if not wide and any(isinstance(b, ast.BinOp) and isinstance(b.op, (ast.Mult, ast.LShift)) for b in inner):
            return a
    return None


class ExpressionsMixin:
    """Expressions: a part of :class:`~metalbench.frontend.python.FunctionTranslator`."""

    def static_value(self, node):
        """Evaluate a compile-time expression: literals, tuples, names of globals and
        constexprs, attribute access on them, and constant arithmetic."""
        v = self.try_static(node)
        if v is not NOT_STATIC:
            return v
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

    @error_net("span")
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
            if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
                # `x is None`: known at compile time (an omitted/None argument is a constant)
                a, b = self._is_none(node.left), self._is_none(node.comparators[0])
                if not (a or b):
                    return self._is_bool(node)
                other = node.comparators[0] if a else node.left
                if a != b and (isinstance(other, ast.Call) or isinstance(other, ast.Name)
                               and self.lookup(other.id, other).kind == "tuple"):
                    # an Optional result (statements.OptionalResult): None or not at run time
                    v = self.value_or_tuple(other)
                    if isinstance(v, TupleValue) and getattr(v.cls, "__name__", "") == "OptionalResult":
                        flag = self.to_bool(v.items[0])
                        return flag if isinstance(node.ops[0], ast.Is) else self.sem.unop("!", flag, sp)
                same = a and b
                return self.sem.bool_const(same if isinstance(node.ops[0], ast.Is) else not same, sp)
            if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)) and \
                    all(isinstance(n, (ast.Name, ast.Attribute, ast.Constant)) for n in (node.left, node.comparators[0])):
                # only names/attributes can be Enum members: evaluating any other operand here
                # would report its error before the left operand's (the frontends' agreement)
                lv, rv = self.try_static(node.left), self.try_static(node.comparators[0])
                if isinstance(lv, enum.Enum) and rv is not NOT_STATIC or \
                        isinstance(rv, enum.Enum) and lv is not NOT_STATIC:
                    # Enum members known at compile time compare as in Python (class and value)
                    return self.sem.bool_const((lv == rv) == isinstance(node.ops[0], ast.Eq), sp)
            parts = []
            left = self.value_or_tuple(node.left)
            for opn, comp in zip(node.ops, node.comparators):
                if type(opn) not in _CMPOPS:
                    raise self.err(KernelSyntaxError, f"the {type(opn).__name__} comparison is not supported",
                                   node, hint="use ==, !=, <, <=, >, >=")
                right = self.value_or_tuple(comp)
                if (isinstance(left, TupleValue) or isinstance(right, TupleValue)) \
                        and not (is_complex(left) or is_complex(right)):
                    if not (isinstance(left, TupleValue) and isinstance(right, TupleValue)):
                        raise self.err(KernelTypeError, "a tuple compares only with a tuple", node)
                    parts.append(self.sem.tuple_compare(_CMPOPS[type(opn)], left, right, sp))
                else:
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
            if e is None or isinstance(e, (ir.Stmt, list)):
                raise self.err(KernelTypeError, f"{ast.unparse(node.func)}() returns no value", node)
            return e
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.Subscript) and isinstance(node.value, (ast.Name, ast.Attribute)) \
                and isinstance(self._maybe_static(node.value), enum.EnumMeta):
            cls = self._maybe_static(node.value)            # Color["red"]: a member by name
            key = self.static_value(node.slice)
            try:
                member = cls[key]
            except KeyError:
                raise self.err(KernelNameError, f"{cls.__name__} has no member {key!r}", node)
            return self.object_value(member, node, repr(member))
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Tuple):
            return self.tuple_expr(node)             # a run-time tuple value (tuples.py)
        raise KernelSyntaxError(f"{type(node).__name__} expressions are not supported in kernels", sp)

    def _is_bool(self, node: ast.Compare) -> ir.Expr:
        """``x is True`` / ``x is not False``: folded when both sides are known at compile
        time (``flag is True`` for a global flag), else ``x == True`` for a boolean ``x``
        (Numba's ``is`` on booleans); other operands are an error naming ``is``."""
        sp = self.span(node)
        left, right = node.left, node.comparators[0]
        same = isinstance(node.ops[0], ast.Is)
        lv, rv = self.try_static(left), self.try_static(right)
        if lv is not NOT_STATIC and rv is not NOT_STATIC:
            return self.sem.bool_const((lv is rv) == same, sp)
        if lv is NOT_STATIC and isinstance(rv, bool) or rv is NOT_STATIC and isinstance(lv, bool):
            e, lit = (self.expr(left), rv) if isinstance(rv, bool) else (self.expr(right), lv)
            if isinstance(e.type, T.ScalarType) and e.type.is_bool:
                return self.binop("==" if same else "!=", e, self.sem.bool_const(lit, sp), node)
        raise self.err(KernelSyntaxError, "`is` compares with None, True or False only in kernels (True and "
                                          "False with a boolean)", node, hint="use == to compare values")

    def _is_none(self, node) -> bool:
        """Whether ``node`` is None at compile time (a literal, a name bound to None)."""
        if isinstance(node, ast.Constant):
            return node.value is None
        if isinstance(node, ast.Name):
            b = self.lookup(node.id, node)
            return b.kind in ("const", "pyobj") and b.value is None
        return False

    def const(self, value, node) -> ir.Expr:
        """A Python number as a constant: ``int`` and ``float`` literals are typed by the
        rules (int32/int64/uint64 by size, float32), NumPy scalars keep their dtype
        (float64 is a float literal: float32 in the DSL, float64 for Numba)."""
        sp = self.span(node)
        if isinstance(value, (bool, np.bool_)):
            return self.sem.bool_const(value, sp)
        if isinstance(value, (int, np.integer)) and not isinstance(value, np.generic):
            return self.sem.int_literal(int(value), sp)
        if isinstance(value, float):
            # a literal in the source rounds once, from its text, to float32 (as clang
            # reads `0.1f`); Python's double would round twice
            if isinstance(node, ast.Constant) and self.sem.rules.float_literal_type() != T.float64:
                exact = literals.parse_python_float(ast.get_source_segment(self.src.text, node) or "")
                value = value if exact is None else exact
            return self.sem.float_literal(value, sp)
        if isinstance(value, (complex, np.complexfloating)):
            ct = complex_type(T.float32 if isinstance(value, np.complex64) else T.float64)
            return self.sem.complex_const(complex(value), ct, sp)
        if isinstance(value, np.generic):
            t = resolve_dtype(value.dtype) if value.dtype != np.float64 else self.sem.rules.float_literal_type()
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
        if b.kind == "tuple":
            return b.value
        if b.kind == "const":
            if isinstance(b.value, (tuple, list)):
                return self.static_tuple_value(tuple(b.value), node)
            return self.const(b.value, node)
        if b.kind == "cexpr":
            return ir.Const(b.value.value, b.value.type, span=sp)
        if b.kind in ("buf", "complexbuf"):
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
        if isinstance(obj, enum.Enum) and isinstance(obj, (int, float)):
            return self.const(int(obj) if isinstance(obj, int) else float(obj), node)   # an IntEnum member
        if isinstance(obj, (bool, int, float, np.generic)):
            return self.const(obj, node)
        if isinstance(obj, enum.Enum) and type(obj.value) in (bool, int, float):
            return self.const(obj.value, node)   # Numba's Enum members: their value (Color.red == Color.green)
        raise self.err(KernelTypeError, f"{what} cannot be used as a value in a kernel", node,
                       hint="kernels can use numbers, arrays, thread attributes and builtins")

    def thread_attr(self, name: str, node) -> ir.Expr:
        """Thread attribute ``name`` (used by the Numba layer's hooks too)."""
        return self.sem.thread_attr(name, self.span(node))

    def attribute(self, node: ast.Attribute) -> ir.Expr:
        sp = self.span(node)
        # x.size / x.ndim on arrays and views (x[i:].size)
        if isinstance(node.value, (ast.Name, ast.Subscript, ast.Call, ast.Attribute)):
            info = self.array_of(node.value)
            if info is not None:
                if node.attr == "size":
                    return self.size_of(info, node)
                if node.attr == "ndim":
                    return ir.Const(info.ndim, T.int32, span=sp)
                if node.attr == "shape":         # a tuple of the extents (Numba's UniTuple)
                    return TupleValue([self.shape_of(info, d, node) for d in range(info.ndim)], span=sp)
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
        if isinstance(v, TupleValue):
            f = v.field(node.attr)
            if f is None:
                raise self.err(KernelTypeError, f"this {v.type.name} has no field {node.attr!r}", node)
            return f
        if isinstance(v.type, T.VectorType):
            return self.sem.component(v, node.attr, sp)
        if node.attr in ("real", "imag") and isinstance(v.type, T.ScalarType):
            return self.real_part(v, node.attr, node)        # Python's x.real of a real (complexes.py)
        raise self.err(KernelTypeError, f"{v.type.name} values have no attribute {node.attr!r}", node)

    def _maybe_static(self, node):
        if isinstance(node, ast.Name):
            b = self.lookup(node.id, node)
            if b.kind == "const" and not isinstance(b.value, (bool, int, float, np.generic)):
                return b.value          # a dtype, tuple or function constant (constexpr or global alias)
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
        info = self.array_of(node)          # a name, or a view (views.py)
        if info is not None:
            return info
        if isinstance(node, ast.Name):
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
        if info.dims is not None:           # a view's own dimensions (views.py)
            return info.dims[dim]
        if info.kernel_param is None:
            raise self.err(KernelTypeError, f"the shape of {info.name!r} is not known inside a device function",
                           node, hint="pass the size as an argument")
        info.kernel_param.uses_shape = True
        return ir.ShapeOf(info.name, dim, T.int64 if info.wide else T.int32, span=sp)

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
        """The element index of ``info[slc]`` within the array or view (a tuple value, as
        ``a[cuda.grid(2)]``, gives one index per item)."""
        idx = []
        for p, v in self.index_parts(slc):
            if isinstance(p, ast.Slice):
                raise self.err(KernelSyntaxError, "slices are not supported in kernels; index one element "
                                                  "at a time", p)
            e = self.expr(p) if v is None else v
            if isinstance(e, ir.Const) and isinstance(e.value, int) and e.value < 0 and len(idx) < info.ndim \
                    and self.sem.rules.name == "numba":
                e = self.sem.binop("+", self.shape_of(info, len(idx), node), e, self.span(p))   # a[-1] wraps
            idx.append(self.sem.index(e, self.span(p)))
        if not idx and info.ndim == 0:          # z[()] of a 0-d array: its one element
            return ir.Const(0, T.int32, span=self.span(node))
        if info.strides is not None:            # a strided view (views.py): its own element steps
            if len(idx) != info.ndim:
                raise self.err(KernelTypeError, f"this view of {info.name} has {info.ndim} dimension(s) but "
                                                f"{len(idx)} indices were given", node)
            return self.strided_index(info, idx, node)
        if info.wide:       # 2**31 elements or more: the index arithmetic in 64 bits
            idx = [self.widen_index(e, info.name, node) for e in idx]
        if len(idx) == 1:
            return idx[0]
        if not idx and info.zero_d:             # x[()] of a 0-d array: its one element
            return ir.Const(0, T.int32, span=self.span(node))
        if len(idx) != info.ndim:
            raise self.err(KernelTypeError, f"{info.name} has {info.ndim} dimension(s) but {len(idx)} indices "
                                            "were given", node)
        dims = [None] + [self.shape_of(info, d, node) for d in range(1, len(idx))]
        return self.sem.linear_index(idx, dims, self.span(node))

    def widen_index(self, e: ir.Expr, buf: str, node) -> ir.Expr:
        """Index ``e`` of buffer ``buf`` of 2**31 elements or more with its ``+ - *`` redone
        in 64 bits (operands converted to int64 first), so ``x[i * n + j]`` cannot wrap at
        2**32. A 32-bit variable that an earlier statement computed with ``*`` or ``<<``
        may have wrapped already: an error naming both lines."""
        t = e.type
        if not (isinstance(t, T.ScalarType) and t.is_int and t.itemsize < 8):
            return e
        if isinstance(e, ir.BinOp) and e.op in ("+", "-", "*"):
            return self.sem.binop(e.op, self.widen_index(e.a, buf, node), self.widen_index(e.b, buf, node), e.span)
        if isinstance(e, ir.Var):
            where = _narrow_product(self.p.fdef, e.name)
            if where is not None:
                line = self.span(where).line
                raise self.err(KernelTypeError, f"{e.name} indexes {buf!r}, which has 2**31 elements or more, but "
                                                f"line {line} computes it in 32 bits ({t.name}) with a product that "
                                                "can wrap", node,
                               hint=f"compute it in 64 bits there: make a factor int64(...) (or annotate "
                                    f"{e.name}: int64)")
        return self.sem.convert(e, T.int64, e.span)

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
        sv = self.try_static(node)          # W[k] of a tuple constant
        if sv is not NOT_STATIC:
            return self.static_as_value(sv, node)
        info = self.array_of(node.value)    # an array or a view of one (views.py)
        if info is not None:
            return self.element_load(info, self.index(info, node.slice, node), sp)
        v = self.expr(node.value)
        if isinstance(v, TupleValue):
            return self.tuple_subscript(v, node)
        if isinstance(v.type, T.VectorType):
            k = self.static_value(node.slice)
            k = int(k) if isinstance(k, (int, np.integer)) and not isinstance(k, bool) else None
            return self.sem.vector_index(v, k, sp)
        raise self.err(KernelTypeError, f"{ast.unparse(node.value)} cannot be indexed", node)

    def fold(self, e: ir.Expr) -> ir.Expr:
        """``e`` folded when constant (see :meth:`Semantics.fold`)."""
        return self.sem.fold(e)

    def binop(self, op: str, a: ir.Expr, b: ir.Expr, node) -> ir.Expr:
        """Python's binary operator ``op`` on ``a`` and ``b`` (see :meth:`Semantics.binop`)."""
        if op == "@":
            raise self.err(KernelSyntaxError, "the @ operator is not supported in kernels", node)
        if op == "**" and (is_complex(a) or is_complex(b)):
            return self.complex_pow(a, b, node)          # complexes.py
        return self.sem.binop(op, a, b, self.span(node))
