"""Python standard-library functions in kernels that are no single builtin: they are
composed from IR the semantic layer already has, so every backend runs them.

- ``operator.add`` & co. (also as values passed to device functions): the operators;
- ``math.modf(x)`` -> ``(frac, whole)`` and ``math.frexp(x)`` -> ``(mantissa, exponent)``
  (tuples, :mod:`metalbench.semantics.tuples`), exact, through the bits of ``x``;
- ``math.degrees``/``math.radians`` (``x`` times the constant rounded to ``x``'s type, as
  Numba does), ``math.remainder`` (IEEE: the nearest multiple, ties to even; exact through
  ``fmod``), ``math.nextafter`` (through the bits);
- ``x.bit_count()`` of an integer (``popcount``).

``math.ldexp``, ``math.copysign``, ``math.fma`` ... are registry builtins (calls.py).
"""
from __future__ import annotations

import ast
import math
import operator

from ... import ir
from ... import types as T
from ...errors import KernelTypeError
from ...semantics import TupleValue
from ...semantics.float_parts import bit_op, frexp_parts, modf_parts

_BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
           operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.and_: "&",
           operator.or_: "|", operator.xor: "^", operator.lshift: "<<", operator.rshift: ">>",
           operator.lt: "<", operator.le: "<=", operator.eq: "==", operator.ne: "!=", operator.gt: ">",
           operator.ge: ">=", operator.iadd: "+", operator.isub: "-", operator.imul: "*",
           operator.itruediv: "/", operator.ifloordiv: "//", operator.imod: "%", operator.ipow: "**",
           operator.iand: "&", operator.ior: "|", operator.ixor: "^", operator.ilshift: "<<",
           operator.irshift: ">>"}
_UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~", operator.inv: "~", operator.not_: "!"}


def _float_of(sem, x, span):
    """``x`` as a float (ints convert to float64, as Numba's math functions take them)."""
    if x.type.is_float:
        return x
    return sem.convert(x, sem.rules.arith(x.type, T.float64) if sem.rules.name == "numba" else T.float32, span)


class PyFunctionsMixin:
    """Python functions composed from IR: a part of the translator."""

    def python_function(self, obj, node: ast.Call):
        """The value of calling ``obj`` (an ``operator``/``math`` function known here), or
        None when ``obj`` is none of them."""
        sem, sp = self.sem, self.span(node)
        if obj in _BINARY or obj in _UNARY or obj in (operator.abs, operator.truth, operator.index):
            if node.keywords:
                raise self.err(KernelTypeError, f"operator.{obj.__name__}() takes no keywords", node)
            args = [self.expr(a) for a in node.args]
            n = 2 if obj in _BINARY else 1
            if len(args) != n:
                raise self.err(KernelTypeError, f"operator.{obj.__name__}() takes {n} argument(s)", node)
            if obj in _BINARY:
                return self.binop(_BINARY[obj], args[0], args[1], node)
            if obj is operator.abs:
                return self.builtin_call("abs", args, node)
            if obj is operator.truth:
                return sem.to_bool(args[0], sp)
            if obj is operator.index:
                return sem.index(args[0], sp)
            return sem.unop(_UNARY[obj], args[0], sp)
        fn = _MATH.get(obj)
        if fn is None:
            return None
        if node.keywords:
            raise self.err(KernelTypeError, f"math.{obj.__name__}() takes no keywords", node)
        args = [self.expr(a) for a in node.args]
        return fn(self, args, node)

    # -- math --------------------------------------------------------------------------
    def _bits(self, x):
        return T.BY_NAME[f"uint{x.type.bits}"], T.BY_NAME[f"int{x.type.bits}"]

    def _modf(self, args, node):
        sem, sp = self.sem, self.span(node)
        (x,) = _arity(self, args, 1, "modf", node)
        frac, whole = modf_parts(sem, _float_of(sem, x, sp), sp)
        return TupleValue([frac, whole], span=sp)

    def _frexp(self, args, node):
        """``(m, e)`` with ``x == m * 2**e`` and ``0.5 <= |m| < 1`` (``semantics.float_parts``)."""
        sem, sp = self.sem, self.span(node)
        (x,) = _arity(self, args, 1, "frexp", node)
        m, e = frexp_parts(sem, _float_of(sem, x, sp), sp)
        return TupleValue([m, e], span=sp)

    def _scale(self, factor: float, name: str):
        def fn(self, args, node):
            sem, sp = self.sem, self.span(node)
            (x,) = _arity(self, args, 1, name, node)
            x = _float_of(sem, x, sp)
            return sem.binop("*", x, sem.const(factor, x.type, sp), sp)
        return fn

    def _remainder(self, args, node):
        """IEEE remainder ``x - n y`` (``n`` the integer nearest ``x / y``, ties to even), exact."""
        sem, sp = self.sem, self.span(node)
        x, y = _arity(self, args, 2, "remainder", node)
        t = sem.common_type(_float_of(sem, x, sp).type, _float_of(sem, y, sp).type, sp)
        x, y = sem.once(sem.convert(x, t, sp), sp), sem.once(sem.convert(y, t, sp), sp)
        ay = sem.once(sem.builtin("fabs", [y], sp), sp)
        a = sem.once(sem.builtin("fabs", [sem.builtin("fmod", [x, sem.binop("*", ay, sem.const(2.0, t, sp), sp)],
                                                      sp)], sp), sp)
        half = sem.binop("*", ay, sem.const(0.5, t, sp), sp)
        r = sem.select(sem.binop("<=", a, half, sp), a,
                       sem.select(sem.binop("<", a, sem.binop("*", ay, sem.const(1.5, t, sp), sp), sp),
                                  sem.binop("-", a, ay, sp),
                                  sem.binop("-", a, sem.binop("*", ay, sem.const(2.0, t, sp), sp), sp), sp), sp)
        r = sem.once(r, sp)
        signed = sem.select(sem.builtin("signbit", [x], sp), sem.unop("-", r, sp), r, sp)
        # fmod's NaN for y == 0 or infinite x survives the arithmetic above; y = inf keeps x
        return sem.select(sem.logical("and", sem.builtin("isinf", [y], sp), sem.builtin("isfinite", [x], sp), sp),
                          x, signed, sp)

    def _nextafter(self, args, node):
        """The float after ``x`` in the direction of ``y``, through the bits."""
        sem, sp = self.sem, self.span(node)
        x, y = _arity(self, args, 2, "nextafter", node)
        t = sem.common_type(_float_of(sem, x, sp).type, _float_of(sem, y, sp).type, sp)
        x, y = sem.once(sem.convert(x, t, sp), sp), sem.once(sem.convert(y, t, sp), sp)
        ut, it = self._bits(x)
        bits = sem.once(sem.bitcast(it, x, sp), sp)
        one = ir.Const(1, it, span=sp)
        away = sem.binop("==", sem.binop(">", y, x, sp), sem.binop(">", x, sem.const(0.0, t, sp), sp), sp)
        up, down = bit_op(sem, "+", bits, one, it, sp), bit_op(sem, "-", bits, one, it, sp)
        stepped = sem.bitcast(t, sem.select(away, up, down, sp), sp)
        tiny = sem.builtin("copysign", [sem.bitcast(t, one, sp), y], sp)
        r = sem.select(sem.binop("==", x, sem.const(0.0, t, sp), sp), tiny, stepped, sp)
        r = sem.select(sem.binop("==", x, y, sp), y, r, sp)
        nan = sem.logical("or", sem.builtin("isnan", [x], sp), sem.builtin("isnan", [y], sp), sp)
        return sem.select(nan, sem.binop("+", x, y, sp), r, sp)

    def bit_count(self, node: ast.Call):
        """``x.bit_count()`` of an integer."""
        if node.args or node.keywords:
            raise self.err(KernelTypeError, "bit_count() takes no arguments", node)
        x = self.expr(node.func.value)
        if not (isinstance(x.type, T.ScalarType) and x.type.is_int):
            raise self.err(KernelTypeError, f"bit_count() is a method of integers, not of {x.type.name}", node)
        r = self.builtin_call("popcount", [x], node)
        return self.sem.convert(r, self.sem.rules.promote(r.type) if self.sem.rules.name == "numba" else r.type)


def _arity(tr, args, n, name, node):
    if len(args) != n:
        raise tr.err(KernelTypeError, f"math.{name}() takes {n} argument(s), got {len(args)}", node)
    return args


_MATH = {math.modf: PyFunctionsMixin._modf, math.frexp: PyFunctionsMixin._frexp,
         math.degrees: PyFunctionsMixin._scale(None, 180.0 / math.pi, "degrees"),
         math.radians: PyFunctionsMixin._scale(None, math.pi / 180.0, "radians"),
         math.remainder: PyFunctionsMixin._remainder, math.nextafter: PyFunctionsMixin._nextafter}


def is_python_function(obj) -> bool:
    """Whether :class:`PyFunctionsMixin` lowers ``obj``."""
    try:
        return obj in _BINARY or obj in _UNARY or obj in _MATH or obj in (operator.abs, operator.truth,
                                                                          operator.index)
    except TypeError:
        return False
