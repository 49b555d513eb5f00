"""NumPy's ``datetime64``/``timedelta64`` values in Numba kernels, as Numba computes them.

The IR has no date type: a datetime or timedelta value is a :class:`DatetimeValue`, an
int64 IR expression (the count of units since the epoch, or of units) with its kind
(``"M"`` datetime64, ``"m"`` timedelta64) and unit (``"D"``, ``"h"``, ``"ns"`` ...),
which exists only while a front end translates. Loads from datetime arrays and datetime
scalar arguments make them (the Numba layer passes the arrays' int64 storage); the
operators below consume them, and a store into a datetime array of the same kind takes
the int64 back. Everything else (a datetime in arithmetic with floats, in a builtin, in
a local variable, stored into a number array) is an error at its line.

The arithmetic is NumPy's and Numba's: ``M - M -> m``, ``M +- m -> M``, ``m +- m -> m``,
``m * int -> m``, ``-m``; comparisons between values of one kind. Values of two units
compute in the finer one (``D`` and ``h`` in hours); NaT (int64's minimum) is NaT
after any arithmetic, and compares unequal to everything (``!=`` is true, the others
false)::

    >>> from metalbench import ir, types as T
    >>> from metalbench.semantics import Semantics, NUMBA
    >>> d = DatetimeValue(ir.Var("d", T.int64), "M", "D")
    >>> e = DatetimeValue(ir.Var("e", T.int64), "M", "h")
    >>> r = Semantics(NUMBA).binop("-", d, e)
    >>> r.type.name
    'timedelta64[h]'
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import ir
from .. import types as T

NAT = -(2 ** 63)
# Units of a fixed length, in attoseconds (Y and M are calendar units: no fixed ratio)
_AS = {"W": 7 * 86400 * 10 ** 18, "D": 86400 * 10 ** 18, "h": 3600 * 10 ** 18, "m": 60 * 10 ** 18,
       "s": 10 ** 18, "ms": 10 ** 15, "us": 10 ** 12, "ns": 10 ** 9, "ps": 10 ** 6, "fs": 10 ** 3, "as": 1}
_KIND = {"M": "datetime64", "m": "timedelta64"}


@dataclass(frozen=True)
class DatetimeType:
    """``datetime64[unit]`` (kind ``"M"``) or ``timedelta64[unit]`` (kind ``"m"``)."""
    kind: str
    unit: str
    is_int = is_float = is_bool = is_signed = False

    @property
    def name(self) -> str:
        return f"{_KIND[self.kind]}[{self.unit}]"

    @property
    def np(self) -> np.dtype:
        return np.dtype(f"{self.kind}8[{self.unit}]")

    def __repr__(self) -> str:
        return self.name


def datetime_unit(dtype) -> tuple | None:
    """``(kind, unit)`` of a NumPy datetime64/timedelta64 dtype, else None.

    >>> datetime_unit(np.dtype("datetime64[D]")), datetime_unit(np.dtype("f4"))
    (('M', 'D'), None)
    """
    dt = np.dtype(dtype)
    if dt.kind not in "mM":
        return None
    unit, count = np.datetime_data(dt)
    if count != 1 or unit == "generic":
        return None
    return dt.kind, unit


class DatetimeValue(ir.Expr):
    """A datetime64/timedelta64 value: ``value``, an int64 IR expression, with its kind and unit."""

    def __init__(self, value: ir.Expr, kind: str, unit: str, span=None):
        self.value, self.kind, self.unit = value, kind, unit
        self.span = span if span is not None else getattr(value, "span", None)

    @property
    def type(self) -> DatetimeType:
        return DatetimeType(self.kind, self.unit)

    def __repr__(self) -> str:
        return f"DatetimeValue({self.value!r}, {self.type.name})"


def is_datetime(e) -> bool:
    return isinstance(e, DatetimeValue)


class DatetimeArg:
    """What a datetime64/timedelta64 scalar argument's name means in a kernel body (the
    front end's ``__metalbench_value__`` hook): its int64 parameter as a :class:`DatetimeValue`."""

    def __init__(self, name: str, kind: str, unit: str):
        self.name, self.kind, self.unit = name, kind, unit

    def __metalbench_value__(self, tr, node):
        return DatetimeValue(ir.Var(self.name, T.int64, span=tr.span(node)), self.kind, self.unit)


class DatetimeSemantics:
    """Datetime operators (mixed into :class:`~metalbench.semantics.Semantics`)."""

    def _nat(self, span):
        return ir.Const(NAT, T.int64, span=span)

    def _is_nat(self, v, span):
        return ir.BinOp("==", v, self._nat(span), T.bool_, span=span)

    def _in_unit(self, d: DatetimeValue, unit: str, span) -> ir.Expr:
        """``d``'s int64 count in the finer-or-equal ``unit`` (NaT stays NaT)."""
        if d.unit == unit:
            return d.value
        f = _AS[d.unit] // _AS[unit]
        v = self.once(d.value, span)
        return self.select(self._is_nat(v, span), self._nat(span),
                           ir.BinOp("*", v, ir.Const(f, T.int64, span=span), T.int64, span=span), span)

    def _common_unit(self, a: DatetimeValue, b: DatetimeValue, span) -> str:
        if a.unit == b.unit:
            return a.unit
        if a.unit not in _AS or b.unit not in _AS:
            raise self.error(f"{a.type.name} and {b.type.name} have no common unit here (years and months "
                             "have no fixed length)", span, hint="convert one operand's array to the other's unit")
        return a.unit if _AS[a.unit] < _AS[b.unit] else b.unit

    def dt_convert(self, e, t, span):
        """``e`` as ``t``: a datetime value as a datetime type of its kind and a finer or equal
        unit; nothing else converts to or from a datetime type."""
        if isinstance(e, DatetimeValue) and isinstance(t, DatetimeType) and e.kind == t.kind:
            if e.unit == t.unit:
                return e
            if e.unit in _AS and t.unit in _AS and _AS[t.unit] <= _AS[e.unit]:
                return DatetimeValue(self._in_unit(e, t.unit, span), t.kind, t.unit, span)
            raise self.error(f"a {e.type.name} value stored as {t.name} would lose precision", span,
                             hint=f"compute in {t.unit} or store into a {e.type.name} array")
        what = getattr(e.type, "name", "this value")
        raise self.error(f"cannot convert {what} to {getattr(t, 'name', t)}", span,
                         hint="datetime64/timedelta64 values combine with each other (and timedeltas with "
                              "integers), and store into arrays of their kind")

    def dt_binop(self, op: str, a, b, span):
        """``a op b`` with a datetime operand (see the module docstring)."""
        da, db = isinstance(a, DatetimeValue), isinstance(b, DatetimeValue)
        cmp = op in ("==", "!=", "<", "<=", ">", ">=")
        if da and db:
            if cmp:
                if a.kind != b.kind:
                    raise self.error(f"cannot compare {a.type.name} with {b.type.name}", span)
                u = self._common_unit(a, b, span)
                x, y = self.once(self._in_unit(a, u, span), span), self.once(self._in_unit(b, u, span), span)
                either = self.logical("or", self._is_nat(x, span), self._is_nat(y, span), span)
                return self.select(either, self.bool_const(op == "!=", span),
                                   ir.BinOp(op, x, y, T.bool_, span=span), span)
            kinds = a.kind + b.kind
            result = {("-", "MM"): "m", ("+", "Mm"): "M", ("+", "mM"): "M", ("-", "Mm"): "M",
                      ("+", "mm"): "m", ("-", "mm"): "m"}.get((op, kinds))
            if result is None:
                raise self.error(f"{a.type.name} {op} {b.type.name} is not defined", span,
                                 hint="datetime - datetime, datetime +- timedelta, timedelta +- timedelta")
            u = self._common_unit(a, b, span)
            return DatetimeValue(self._nat_arith(op, self._in_unit(a, u, span), self._in_unit(b, u, span), span),
                                 result, u, span)
        d, other = (a, b) if da else (b, a)
        t = getattr(other.type, "name", None)
        if op == "*" and d.kind == "m" and isinstance(other.type, T.ScalarType) and \
                (other.type.is_int or other.type.is_bool):
            return DatetimeValue(self._nat_arith("*", d.value, self.convert(other, T.int64, span), span,
                                                 nat_right=False), "m", d.unit, span)
        raise self.error(f"{a.type.name if da else t} {op} {b.type.name if db else t} is not supported", span,
                         hint="datetime64/timedelta64 values combine with each other; a timedelta "
                              "multiplies by an integer")

    def _nat_arith(self, op, x, y, span, nat_right=True):
        x, y = self.once(x, span), self.once(y, span)
        nat = self._is_nat(x, span)
        if nat_right:
            nat = self.logical("or", nat, self._is_nat(y, span), span)
        return self.select(nat, self._nat(span), ir.BinOp(op, x, y, T.int64, span=span), span)

    def dt_unop(self, op: str, a, span):
        if op == "-" and a.kind == "m":
            v = self.once(a.value, span)
            return DatetimeValue(self.select(self._is_nat(v, span), self._nat(span),
                                             ir.UnOp("-", v, T.int64, span=span), span), "m", a.unit, span)
        if op == "+" and a.kind == "m":
            return a
        raise self.error(f"{op}{a.type.name} is not supported", span)
