"""Numba's typing and operators: the :data:`~metalbench.semantics.NUMBA` rule set.

What a ``@cuda.jit`` kernel's arithmetic means, as compiled Numba types it (the tables
of ``numba.core.typing.builtins``; the tests compare with Numba's own typing context
and its CUDA simulator when they are installed)::

    >>> from metalbench import types as T
    >>> from metalbench.semantics import NUMBA
    >>> NUMBA.int_literal_type(1).name, NUMBA.float_literal_type().name
    ('int64', 'float64')
    >>> NUMBA.arith(T.int32, T.int32).name, NUMBA.arith(T.uint32, T.uint8).name   # 64-bit integers
    ('int64', 'uint64')
    >>> NUMBA.arith(T.int16, T.float32).name, NUMBA.arith(T.int32, T.float32).name
    ('float32', 'float64')
    >>> NUMBA.compare_type(T.int8, T.uint8).name                                 # NumPy's promotion
    'int16'

- integer literals are int64 (uint64 above 2**63), float literals float64;
- integer operands of ``+ - * // % ** & | ^`` compute in 64 bits: uint64 when both are
  unsigned, else int64 (bool counts as signed; ``bool & bool`` stays bool);
- an integer with a float: float32 when the float is float32 and the integer is bool,
  int8, uint8 or int16; float64 otherwise; two floats: the wider;
- comparisons, ``min``/``max`` and a local assigned several types unify as NumPy promotes
  (``int64`` with ``uint64`` is ``float64``);
- ``/`` of two integers is float64; ``//`` and ``%`` floor (Python: the remainder has the
  divisor's sign; floats follow CPython's ``float_divmod``); ``**`` of integers is an
  integer, ``float32 ** int`` stays float32; a constant exponent multiplies by repeated
  squaring, as Numba's ``int_power`` does;
- shifts take ``int64``/``uint64`` by the left operand's signedness; ``-x``/``~x`` of an
  integer are 64-bit; ``~b`` of a bool is ``not b``;
- ``round(x)`` rounds halves to even and gives int64; ``round(x, n)`` is Numba's
  ``round_ndigits``; ``float(x)``/``int(x)`` are float64/int64;
- ``min``/``max`` are Python's (``max(nan, 1)`` is nan, ``max(1, nan)`` is 1);
- atomics: 64-bit elements too (int64, uint64, float64), ``cas`` on integers of 32 or 64
  bits, ``inc``/``dec`` on uint32 and uint64.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from .. import types as T
from .rules import DSLRules

_SMALL_FOR_F32 = (T.bool_, T.int8, T.uint8, T.int16)


def _intlike(t) -> bool:
    return isinstance(t, T.ScalarType) and (t.is_int or t.is_bool)


def _np_of(t):
    return np.dtype(np.float32) if t == T.bfloat16 else t.np


class NumbaRules(DSLRules):
    """Numba's typing and operators (see the module docstring)."""

    name = "numba"
    dialect = "numba"
    bool_bitwise_stays_bool = True

    # -- types -------------------------------------------------------------------------
    def int_literal_type(self, value: int) -> T.ScalarType:
        """int64, or uint64 for 2**63 <= value < 2**64 (as ``numba.typeof``)."""
        return T.int64 if -(2**63) <= value < 2**63 else T.uint64

    def float_literal_type(self) -> T.ScalarType:
        return T.float64

    def python_cast_type(self, obj):
        """``float(x)`` is float64, ``int(x)`` int64 (intp), ``bool(x)`` bool."""
        return {float: T.float64, int: T.int64, bool: T.bool_}[obj]

    def promote(self, t):
        """Integers (and bool) widen to 64 bits, keeping their signedness."""
        if isinstance(t, T.VectorType):
            return super().promote(t)
        if t.is_bool:
            return T.int64
        if t.is_int:
            return T.uint64 if t.kind == "u" else T.int64
        return t

    def arith(self, a, b):
        """The type of ``a + b`` (and ``- * // % & | ^``); see the module docstring."""
        if isinstance(a, T.VectorType) or isinstance(b, T.VectorType):
            return T.binary_result(a, b)
        if a.is_float and b.is_float:
            if a == b:
                return a
            if a.bits != b.bits:
                return a if a.bits > b.bits else b
            return T.float32           # half with bfloat
        if a.is_float or b.is_float:
            f, i = (a, b) if a.is_float else (b, a)
            if f == T.float64:
                return T.float64
            if f == T.float32:
                return T.float32 if i in _SMALL_FOR_F32 else T.float64
            if i in (T.bool_, T.int8, T.uint8):
                return f
            return T.float32 if i == T.int16 else T.float64
        if a.is_int and b.is_int and a.kind == "u" and b.kind == "u":
            return T.uint64
        return T.int64

    def compare_type(self, a, b):
        """Both sides of a comparison: as :meth:`unify`, but uint16 with float32 compares in
        float64 (Numba's comparison overloads)."""
        if {a, b} == {T.uint16, T.float32}:
            return T.float64
        return self.unify(a, b)

    def unify(self, a, b):
        """Numba's unification (NumPy's ``promote_types``; a bool yields to the other)."""
        if isinstance(a, T.VectorType) or isinstance(b, T.VectorType):
            return T.binary_result(a, b)
        if a == b:
            return a
        if a.is_bool or b.is_bool:
            return b if a.is_bool else a
        if T.bfloat16 in (a, b):
            other = b if a == T.bfloat16 else a
            return other if other in (T.float32, T.float64) else (
                T.float32 if other.is_float or other.bits <= 16 else T.float64)
        return T.from_numpy(np.promote_types(_np_of(a), _np_of(b)))

    def join(self, a, b):
        """A local assigned values of several types has their unified type."""
        if a == b:
            return a
        try:
            return self.unify(a, b)
        except T.TypeError_:
            return a

    # -- operators ---------------------------------------------------------------------
    def divide(self, sem, a, b, t, span):
        """True division: two integers give float64."""
        if _intlike(a.type) and _intlike(b.type):
            t = T.float64
        return sem.fold(ir.BinOp("/", sem.convert(a, t), sem.convert(b, t), t, span=span))

    def _floor_parts(self, sem, a, b, t, span):
        a, b = sem.once(sem.convert(a, t), span), sem.once(sem.convert(b, t), span)
        return a, b

    def floor_divide(self, sem, a, b, t, span):
        """Python's ``a // b``: rounds toward minus infinity (floats: CPython's ``float_divmod``)."""
        if isinstance(t, T.VectorType):
            return super().floor_divide(sem, a, b, t, span)
        if t.is_float:
            return self._float_divmod(sem, a, b, t, span)[0]
        if t.kind == "u":
            return sem.fold(ir.BinOp("/", sem.convert(a, t), sem.convert(b, t), t, span=span))
        a, b = self._floor_parts(sem, a, b, t, span)
        q = sem.fold(ir.BinOp("/", a, b, t, span=span))
        r = sem.fold(ir.BinOp("%", a, b, t, span=span))
        return sem.fold(ir.BinOp("-", q, sem.convert(self._needs_fix(sem, r, b, t, span), t), t, span=span))

    def remainder(self, sem, a, b, t, span):
        """Python's ``a % b``: the result has the divisor's sign."""
        if isinstance(t, T.VectorType):
            return super().remainder(sem, a, b, t, span)
        if t.is_float:
            return self._float_divmod(sem, a, b, t, span)[1]
        if t.kind == "u":
            return sem.fold(ir.BinOp("%", sem.convert(a, t), sem.convert(b, t), t, span=span))
        a, b = self._floor_parts(sem, a, b, t, span)
        r = sem.once(sem.fold(ir.BinOp("%", a, b, t, span=span)), span)
        fix = self._needs_fix(sem, r, b, t, span)
        return sem.select(fix, sem.fold(ir.BinOp("+", r, b, t, span=span)), r, span)

    def _needs_fix(self, sem, r, b, t, span):
        """``r != 0 and (r < 0) != (b < 0)``: C's truncated result is one off the floor."""
        zero = sem.const(0, t, span)
        nz = sem.binop("!=", r, zero, span)
        signs = sem.binop("!=", sem.binop("<", r, zero, span), sem.binop("<", b, zero, span), span)
        return sem.binop("&", nz, signs, span)

    def _float_divmod(self, sem, a, b, t, span):
        """(a // b, a % b) for floats, as CPython's ``float_divmod`` (Numba's ``real_divmod``)."""
        vx, wx = self._floor_parts(sem, a, b, t, span)
        zero, one, half = (sem.const(v, t, span) for v in (0.0, 1.0, 0.5))
        mod = sem.once(ir.Call("fmod", [vx, wx], t, span=span), span)
        div = sem.once(sem.binop("/", sem.binop("-", vx, mod, span), wx, span), span)
        nz = sem.binop("!=", mod, zero, span)
        adj = sem.once(sem.logical("and", nz, sem.binop("!=", sem.binop("<", wx, zero, span),
                                                         sem.binop("<", mod, zero, span), span), span), span)
        mod2 = sem.select(adj, sem.binop("+", mod, wx, span),
                          sem.select(nz, mod, ir.Call("copysign", [zero, wx], t, span=span), span), span)
        div2 = sem.once(sem.select(adj, sem.binop("-", div, one, span), div, span), span)
        fl = sem.once(ir.Call("floor", [div2], t, span=span), span)
        snapped = sem.select(sem.binop(">", sem.binop("-", div2, fl, span), half, span),
                             sem.binop("+", fl, one, span), fl, span)
        signed_zero = ir.Call("copysign", [zero, sem.binop("/", vx, wx, span)], t, span=span)
        floordiv = sem.select(sem.binop("!=", div2, zero, span), snapped, signed_zero, span)
        return floordiv, mod2

    def power(self, sem, a, b, t, span):
        """``a ** b``: integers give an integer, ``float ** int`` keeps the float type
        (float32 stays float32); a constant integer exponent multiplies by repeated
        squaring (Numba's ``int_power``), other exponents use ``pow``."""
        if isinstance(a.type, T.VectorType) or isinstance(b.type, T.VectorType):
            return super().power(sem, a, b, t, span)
        if a.type.is_float and _intlike(b.type):
            t = a.type
        n = b.value if isinstance(b, ir.Const) and _intlike(b.type) else None
        if n is not None and abs(int(n)) <= 64:
            return self._int_power(sem, sem.convert(a, t), int(n), t, span)
        if t.is_float:
            bt = t if b.type.is_float else T.float64
            r = ir.Call("pow", [sem.convert(a, bt if bt.bits > t.bits else t), sem.convert(b, bt)],
                        bt if bt.bits > t.bits else t, span=span)
            return sem.convert(r, t, span)
        # integer ** run-time integer: through float64's pow, exact while the result fits 53 bits
        p = ir.Call("pow", [sem.convert(a, T.float64), sem.convert(b, T.float64)], T.float64, span=span)
        return sem.cast(t, ir.Call("rint", [p], T.float64, span=span), span)

    def _int_power(self, sem, a, n: int, t, span):
        if n < 0 and not t.is_float:
            # Numba: 1 ** -n is 1, (-1) ** -n is +-1, anything else 0 (numpy error model)
            a = sem.once(a, span)
            one = sem.const(1, t, span)
            m1 = sem.const(-1 if (-n) % 2 else 1, t, span)
            return sem.select(sem.binop("==", a, one, span), one,
                              sem.select(sem.binop("==", a, sem.const(-1, t, span), span), m1,
                                         sem.const(0, t, span), span), span)
        r, e = None, abs(n)
        base = a
        while e:
            if e & 1:
                r = base if r is None else sem.fold(ir.BinOp("*", r, base, t, span=span))
            e >>= 1
            if e:
                base = sem.once(base, span) if not isinstance(base, (ir.Var, ir.Const)) else base
                if r is not None and not isinstance(r, (ir.Var, ir.Const)):
                    r = sem.once(r, span)
                base = sem.fold(ir.BinOp("*", base, base, t, span=span))
        if r is None:
            r = sem.const(1, t, span)
        if n < 0:
            r = sem.fold(ir.BinOp("/", sem.const(1.0, t, span), r, t, span=span))
        return r

    def round(self, sem, x, span):
        """``round(x)``: halves to even, an int64."""
        if _intlike(x.type):
            return sem.convert(x, T.int64, span)
        return sem.cast(T.int64, sem.builtin("rint", [x], span), span)

    def round_ndigits(self, sem, x, n, span):
        """``round(x, n)`` as Numba's ``round_ndigits`` (float32 stays float32); ``n`` a
        Python int, or an integer IR value known only at run time. As in Numba's CUDA
        target, ``y = x * 10**n`` and its rounding (half to even: Numba's halfway branch)
        are float64 also for float32 ``x``; only the result converts back (Numba's
        simulator rounds a float32 in float32, as NumPy does: ``round(float32(0.3425), 3)``
        is 0.342 there, 0.343 on the GPU and here)."""
        if not isinstance(n, int):
            return self._round_ndigits_runtime(sem, x, n, span)
        ft = self.arith(x.type, T.float32) if _intlike(x.type) else x.type
        x = sem.once(sem.convert(x, ft, span), span)
        f64 = T.float64
        xd = sem.convert(x, f64, span)
        if n >= 0:
            pow1, pow2 = (10.0 ** (n - 22), 1e22) if n > 22 else (10.0 ** n, 1.0)
            y = sem.once(sem.binop("*", sem.binop("*", xd, sem.const(pow1, f64, span), span),
                                   sem.const(pow2, f64, span), span), span)
            r = ir.Call("rint", [y], f64, span=span)
            val = sem.binop("/", sem.binop("/", r, sem.const(pow2, f64, span), span),
                            sem.const(pow1, f64, span), span)
            val = sem.select(ir.Call("isinf", [y], T.bool_, span=span), xd, val, span)
        else:
            pow1 = 10.0 ** (-n)
            y = sem.binop("/", xd, sem.const(pow1, f64, span), span)
            r = ir.Call("rint", [y], f64, span=span)
            val = sem.binop("*", r, sem.const(pow1, f64, span), span)
        special = sem.logical("or", ir.Call("isinf", [x], T.bool_, span=span),
                              ir.Call("isnan", [x], T.bool_, span=span), span)
        return sem.select(special, x, sem.convert(val, ft, span), span)

    def _round_ndigits_runtime(self, sem, x, n, span):
        """The constant-``n`` computation above with ``n`` a run-time integer: the powers
        of ten come from ``pow(10.0, e)`` (exact for the exponents that matter) and the
        two branches (n >= 0, n < 0) are selects."""
        ft = self.arith(x.type, T.float32) if _intlike(x.type) else x.type
        f64, i64 = T.float64, T.int64
        x = sem.once(sem.convert(x, ft, span), span)
        xd = sem.once(sem.convert(x, f64, span), span)
        n = sem.once(sem.convert(n, i64, span), span)
        c = lambda v, t=f64: sem.const(v, t, span)         # noqa: E731
        pos = sem.once(sem.binop(">=", n, c(0, i64), span), span)
        big = sem.once(sem.binop(">", n, c(22, i64), span), span)
        e = sem.select(pos, sem.select(big, sem.binop("-", n, c(22, i64), span), n, span),
                       sem.unop("-", n, span), span)
        pow1 = sem.once(sem.builtin("pow", [c(10.0), sem.convert(e, f64, span)], span), span)
        pow2 = sem.once(sem.select(big, c(1e22), c(1.0), span), span)
        y = sem.once(sem.select(pos, sem.binop("*", sem.binop("*", xd, pow1, span), pow2, span),
                                sem.binop("/", xd, pow1, span), span), span)
        r = sem.once(ir.Call("rint", [y], f64, span=span), span)
        val = sem.select(pos, sem.binop("/", sem.binop("/", r, pow2, span), pow1, span),
                         sem.binop("*", r, pow1, span), span)
        overflow = sem.logical("and", pos, ir.Call("isinf", [y], T.bool_, span=span), span)
        val = sem.select(overflow, xd, val, span)
        special = sem.logical("or", ir.Call("isinf", [x], T.bool_, span=span),
                              ir.Call("isnan", [x], T.bool_, span=span), span)
        return sem.select(special, x, sem.convert(val, ft, span), span)

    def minmax(self, sem, name: str, args: list, span):
        """Python's ``max``/``min`` over several values: ``acc = v if v > acc else acc``
        (``<`` for min) in the unified type, as Numba's ``do_minmax``."""
        acc = args[0]
        for v in args[1:]:
            t = self.unify(acc.type, v.type)
            acc, v = sem.once(sem.convert(acc, t, span), span), sem.once(sem.convert(v, t, span), span)
            acc = sem.select(sem.binop(">" if name == "max" else "<", v, acc, span), v, acc, span)
        return acc

    def unop(self, sem, op, a, span):
        """``~b`` of a bool is ``not b`` (Numba follows NumPy here)."""
        if op == "~" and a.type == T.bool_:
            return sem.unop("!", a, span)
        return None

    # -- atomics ---------------------------------------------------------------------------
    def atomic_error(self, op: str, elem, what: str) -> str | None:
        """As :class:`~metalbench.semantics.rules.RuleSet`, and Numba's own limits: ``cas``
        needs integers; ``inc`` and ``dec`` (built from a compare-exchange loop) need uint32."""
        if op in ("inc", "dec"):
            return None if elem in (T.uint32, T.uint64) else \
                f"{what} needs uint32 elements (or uint64, as in Numba), not {elem.name}"
        if op == "cas" and not (elem.is_int and elem.bits >= 32):
            return f"{what} needs integer elements of 32 or 64 bits (int32, int64, uint32, uint64), not {elem.name}"
        if elem in (T.int64, T.uint64) or (elem == T.float64 and op in ("add", "sub", "max", "min", "exchange",
                                                                            "load", "store", "cas")):
            return None     # Numba has 64-bit atomics (the simulator and CUDA; Metal has not)
        return super().atomic_error(op, elem, what)
