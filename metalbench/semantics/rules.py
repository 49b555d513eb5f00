"""Rule sets: what a source language's numbers and operators mean.

The semantic layer (:class:`~metalbench.semantics.Semantics`) builds typed IR; a
rule set supplies the language-dependent decisions. Three are defined:

- :data:`MSL` — Metal Shading Language bodies: C's usual arithmetic conversions,
  unsuffixed float literals are ``float``, ``/`` and ``%`` truncate on integers,
  ``%`` on floats is an error, ``bool & bool`` is an ``int``.
- :data:`DSL` — the Python DSL: MSL's typing with Python's operators. ``/`` is true
  division (two integers give a float), ``//`` truncates on integers (as C) and
  floors on floats, ``%`` on floats is ``fmod``, ``**`` unrolls small integer
  powers, ``&``, ``|``, ``^`` of two bools stay bool.
- :data:`NUMBA` — the Numba layer (``@cuda.jit``): Numba's typing
  (:mod:`metalbench.semantics.numba_rules`): int64 integer and float64 float literals,
  integer arithmetic in 64 bits, NumPy-like mixing of ints and floats, true ``/``,
  floor ``//`` and ``%``, Python's ``round`` (ties to even), Numba's atomic rules.

A rule set is an object with the methods of :class:`RuleSet`; the type-level
methods answer questions, the operator methods (``divide``, ``floor_divide``,
``remainder``, ``power``, ``round``) build IR through the :class:`Semantics` they
are given, so they never bypass its folding or its errors::

    >>> from metalbench import types as T
    >>> MSL.arith(T.int32, T.uint32).name, DSL.int_literal_type(3).name
    ('uint32', 'int32')
    >>> MSL.bool_bitwise_stays_bool, DSL.bool_bitwise_stays_bool
    (False, True)

To plug in another language, subclass the closest rule set, override what
differs, and pass an instance to ``Semantics(rules)`` (front ends take it as
``rules=``).
"""
from __future__ import annotations

from .. import ir
from .. import types as T


class RuleSet:
    """The interface, with C/MSL's answers. Subclasses override what differs.

    Types: :meth:`int_literal_type`, :meth:`float_literal_type`, :meth:`promote`,
    :meth:`arith`, :meth:`join`. Operators whose meaning is the language's:
    :meth:`divide` (``/``), :meth:`floor_divide` (``//``), :meth:`remainder` (``%``),
    :meth:`power` (``**``), :meth:`round`. Atomics: :meth:`atomic_error`.
    """

    name = "msl"
    #: ``&``, ``|``, ``^`` of two bools give a bool (Python) instead of an int (C).
    bool_bitwise_stays_bool = False
    #: The builtin registry's dialect for name lookups ("msl", "python", "numba").
    dialect = "msl"
    #: What complex values mean (:mod:`.complexval`): "numpy" (NumPy's complex scalars, the
    #: Numba layer) or "mlx" (MLX's ``complex64_t`` of ``complex.h``, MSL bodies).
    complex_model = "numpy"

    # -- types -------------------------------------------------------------------------
    def int_literal_type(self, value: int) -> T.ScalarType:
        """The type of an unsuffixed integer literal: int, else long, else ulong (C)."""
        return T.literal_int_type(value)

    def float_literal_type(self) -> T.ScalarType:
        """The type of an unsuffixed float literal: ``float`` (Metal has no double)."""
        return T.float32

    def promote(self, t):
        """Integer promotion (C): bool, char, short become int; vectors keep their
        element type except bool vectors, which become int vectors."""
        if isinstance(t, T.VectorType):
            return T.vector_of(T.promote_int(t.elem), t.n) if t.elem.is_bool else t
        return T.promote_int(t)

    def arith(self, a, b):
        """The common type of ``a op b`` (the usual arithmetic conversions); raises
        :class:`metalbench.types.TypeError_` for incompatible vectors."""
        return T.binary_result(a, b)

    def compare_type(self, a, b):
        """The type both sides of a comparison convert to (C: the usual arithmetic
        conversions, as :meth:`arith`)."""
        return self.arith(a, b)

    def python_cast_type(self, obj):
        """The type Python's ``float``/``int``/``bool`` convert to (``float(x)``): float32,
        int32, bool here."""
        return {float: T.float32, int: T.int32, bool: T.bool_}[obj]

    def join(self, a, b):
        """The type of a local variable assigned values of types ``a`` and ``b`` (the
        DSL types locals by unification): their common type; two bools stay bool;
        incompatible vectors keep the first (the assignment then reports it)."""
        if a == b:
            return a
        try:
            return self.arith(a, b)
        except T.TypeError_:
            return a

    # -- operators ---------------------------------------------------------------------
    def divide(self, sem, a, b, t, span):
        """``a / b`` with operands of common type ``t``: C division (truncating on ints)."""
        return sem.fold(ir.BinOp("/", sem.convert(a, t), sem.convert(b, t), t, span=span))

    def floor_divide(self, sem, a, b, t, span):
        """``a // b`` (no such operator in C)."""
        raise sem.error("'//' is not an MSL operator", span, hint="use '/'")

    def remainder(self, sem, a, b, t, span):
        """``a % b``: C's remainder (sign of ``a``); an error on floats."""
        if T.elem_of(t).is_float:
            raise sem.error("'%' needs integer operands; use fmod for floats", span)
        return sem.fold(ir.BinOp("%", sem.convert(a, t), sem.convert(b, t), t, span=span))

    def power(self, sem, a, b, t, span):
        """``a ** b`` (no such operator in C)."""
        raise sem.error("'**' is not an MSL operator", span, hint="use pow(a, b)")

    def round(self, sem, x, span):
        """Python's ``round(x)``; in MSL ``round`` is the builtin (ties away from zero)."""
        return sem.builtin("round", [x], span)

    def unop(self, sem, op, a, span):
        """A language-specific unary operator, or None for C's (the default)."""
        return None

    def round_ndigits(self, sem, x, n: int, span):
        """Python's ``round(x, n)`` (not in C/MSL or the DSL)."""
        raise sem.error("round(x, ndigits) is not supported; round(x) is", span)

    def minmax(self, sem, name: str, args: list, span):
        """``min``/``max`` of several values in the language's way, or None for the
        builtin's (C's ``fmin``/``fmax`` typing), the default."""
        return None

    # -- atomics -------------------------------------------------------------------------
    def atomic_error(self, op: str, elem, what: str) -> str | None:
        """None if atomic ``op`` works on ``elem`` elements, else the reason: the element
        table of the builtin registry (:func:`metalbench.builtins.atomic_error`: int32 and
        uint32 for every operation, float32 without the bitwise ones; their 64-bit
        counterparts too, which run on sim and cuda and which the Metal printer refuses,
        as it refuses double)."""
        from ..builtins import atomic_error
        return atomic_error(op, elem, what, wide=True)

    def __repr__(self) -> str:
        return f"<metalbench rules {self.name}>"


class MSLRules(RuleSet):
    """Metal Shading Language (C++14 arithmetic): the rules of MSL kernel bodies."""

    complex_model = "mlx"


class DSLRules(MSLRules):
    """The Python DSL: MSL's types with Python's operators (see the module docstring)."""

    name = "dsl"
    dialect = "python"
    bool_bitwise_stays_bool = True
    complex_model = "numpy"

    def divide(self, sem, a, b, t, span):
        """True division: two integers divide as float32 (float vectors likewise)."""
        if not T.elem_of(t).is_float:
            t = T.float32 if isinstance(t, T.ScalarType) else T.vector_of(T.float32, t.n)
        return sem.fold(ir.BinOp("/", sem.convert(a, t), sem.convert(b, t), t, span=span))

    def floor_divide(self, sem, a, b, t, span):
        """Integers: C division (rounds toward zero); floats: ``floor(a / b)``."""
        if T.elem_of(t).is_float:
            q = ir.BinOp("/", sem.convert(a, t), sem.convert(b, t), t, span=span)
            return ir.Call("floor", [q], t, span=span)
        return sem.fold(ir.BinOp("/", sem.convert(a, t), sem.convert(b, t), t, span=span))

    def remainder(self, sem, a, b, t, span):
        """Integers: C's remainder; floats: ``fmod`` (sign of ``a``)."""
        if T.elem_of(t).is_float:
            return ir.Call("fmod", [sem.convert(a, t), sem.convert(b, t)], t, span=span)
        return sem.fold(ir.BinOp("%", sem.convert(a, t), sem.convert(b, t), t, span=span))

    def power(self, sem, a, b, t, span):
        """``a ** n`` for a constant n in 0..4 multiplies (in ``a``'s promoted type);
        otherwise ``pow`` in float (float32 for integers)."""
        n = b.value if isinstance(b, ir.Const) else None
        if isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= 4 \
                and isinstance(a.type, T.ScalarType):
            ta = self.promote(a.type)
            if n == 0:
                return sem.const(1, ta, span)
            base = sem.convert(a, ta)
            if n > 1:
                base = sem.once(base, span)
            r = base
            for _ in range(n - 1):
                r = sem.fold(ir.BinOp("*", r, base, ta, span=span))
            return r
        ft = t if T.elem_of(t).is_float else T.float32
        return ir.Call("pow", [sem.convert(a, ft), sem.convert(b, ft)], ft, span=span)

    def round(self, sem, x, span):
        """Python's ``round(x)`` as Metal's ``round`` (ties away from zero)."""
        return sem.builtin("round", [x], span)


from .numba_rules import NumbaRules  # noqa: E402  (it subclasses DSLRules)


MSL = MSLRules()
DSL = DSLRules()
NUMBA = NumbaRules()
