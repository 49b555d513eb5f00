"""The semantic layer: the one place that builds typed IR.

Both front ends (the Python DSL and MSL bodies) and the Numba layer parse their
syntax, then build every typed expression through a :class:`Semantics` object, so
typing, promotion, implicit conversions, folding, builtin and atomic calls and
index arithmetic are defined once. What differs between the languages (literal
types, what ``/``, ``//``, ``%``, ``**`` mean, atomic element rules) is a *rule set*
(:mod:`metalbench.semantics.rules`): :data:`MSL`, :data:`DSL`, :data:`NUMBA`::

    >>> from metalbench import ir, types as T
    >>> from metalbench.semantics import Semantics, MSL, DSL
    >>> h, u = ir.Var("h", T.float16), ir.Var("u", T.uint32)
    >>> msl, dsl = Semantics(MSL), Semantics(DSL)
    >>> msl.binop("*", h, u).type.name, dsl.binop("*", h, u).type.name   # the same typing
    ('float16', 'float16')
    >>> msl.binop("&", ir.Var("p", T.bool_), ir.Var("q", T.bool_)).type.name   # C: an int
    'int32'
    >>> dsl.binop("&", ir.Var("p", T.bool_), ir.Var("q", T.bool_)).type.name   # Python: a bool
    'bool'

API (every method takes the built operands and the source ``span``; errors are
``KernelTypeError`` at that span):

- constants: ``const(value, t)``, ``int_literal(v)``, ``float_literal(v)``, ``bool_const(v)``;
- conversions: ``convert(e, t)`` (implicit), ``cast(t, e)`` (explicit), ``to_bool(e)``,
  ``vector(t, args)``, ``component(v, "xy")``, ``vector_index(v, k)``;
- operators: ``binop(op, a, b)`` (arithmetic, bitwise, shifts, comparisons, ``/ // % **``),
  ``unop(op, a)``, ``logical("and"|"or", a, b)``, ``select(c, a, b)``; ``join(t1, t2)``
  types a local from its assignments; ``fold(e)``, :func:`const_value`;
- calls: ``builtin(name, args)`` (through :func:`typecheck`), ``atomic(op, buf, elem,
  space, index, values, who=...)`` and ``check_atomic(...)``, ``thread_attr(name)``;
- indexing: ``index(e)`` (an integer, promoted), ``linear_index(idxs, dims)``;
- tuples (:mod:`.tuples`): ``tuple_index``, ``tuple_compare``; a tuple is a compile-time
  aggregate of IR values (``TupleValue``), never an IR type;
- complex numbers (:mod:`.complexval`): a ``ComplexValue`` is a tuple of two float parts
  (``ComplexType``); ``binop``/``unop``/``convert``/``select`` take them, ``complex_abs``,
  ``conjugate``, ``make_complex``, ``complex_const``;
- pointers and views (:mod:`.views`): ``view_of``, ``view_offset``, ``view_row``,
  ``view_cast``, ``view_load``, ``view_store``, ``view_address``, ``view_arg``.

A front end makes one ``Semantics(rules, once=hook)`` per translation; ``once(expr,
span) -> ir.Var`` stores a value in a temporary it declares (for ``x ** 3``).
"""
from __future__ import annotations

from .calls import CallSemantics, Signature, lookup, typecheck
from .complexval import ComplexSemantics, ComplexType, ComplexValue, complex_type, is_complex
from .core import CoreSemantics
from .datetimes import DatetimeSemantics, DatetimeType, DatetimeValue
from .folding import coerce_value, const_value, fold
from .rules import DSL, MSL, NUMBA, DSLRules, MSLRules, NumbaRules, RuleSet
from .tuples import TupleSemantics, TupleType, TupleValue
from .views import View, ViewSemantics


class Semantics(ComplexSemantics, TupleSemantics, DatetimeSemantics, ViewSemantics, CallSemantics, CoreSemantics):
    """Builds typed IR under a rule set (default :data:`DSL`). See the module docstring.

    >>> from metalbench import ir, types as T
    >>> Semantics(MSL).select(ir.Var("c", T.bool_), ir.Var("a", T.int32), ir.Var("b", T.uint32)).type.name
    'uint32'
    """


__all__ = ["Semantics", "RuleSet", "MSLRules", "DSLRules", "NumbaRules", "MSL", "DSL", "NUMBA",
           "View", "ViewSemantics", "TupleValue", "TupleType", "ComplexType", "ComplexValue", "complex_type", "is_complex", "Signature", "typecheck", "lookup", "coerce_value", "const_value", "fold"]
