"""Derivative rules: how the adjoint of a result flows to the arguments.

The rules of builtins live in the builtin registry, one field per builtin
(``Builtin.grad``, see ``metalbench.builtins.core``): ``"zero"`` for piecewise-constant
functions (``floor``, ``sign``, ``step``: their derivative is zero where it exists),
a tuple with one formula per parameter (``None`` where that argument gets no
cotangent, such as ``ldexp``'s integer exponent), or ``None`` when the builtin has
no rule (an active value reaching it is an error naming the builtin and the line).

The rules of operators and casts are here, in the same formula language
(:mod:`metalbench.autodiff.formula`)::

    >>> rule_of_operator("/")
    ('grad / b', '-grad * result / b')
    >>> builtin_rule("exp")
    ('grad * result',)
    >>> builtin_rule("floor")
    'zero'
"""
from __future__ import annotations

import functools

from .formula import Formula

OPERATORS = {
    "+": ("grad", "grad"),
    "-": ("grad", "-grad"),
    "*": ("grad * b", "grad * a"),
    "/": ("grad / b", "-grad * result / b"),
    "neg": ("-grad",),
}


def rule_of_operator(op: str):
    """The formulas of binary operator ``op`` (arguments ``a`` and ``b``), or None."""
    return OPERATORS.get(op)


def builtin_rule(name: str):
    """The registry's derivative rule of builtin ``name`` (``"zero"``, formulas or None)."""
    from ..builtins import registry
    if name not in registry:
        return None
    return registry.get(name).grad


@functools.lru_cache(maxsize=None)
def formula(text: str) -> Formula:
    """The parsed formula (cached: every call site builds from the same parse)."""
    return Formula(text)

