"""MSL number literals, read as clang reads them (:mod:`metalbench.literals`: integer
suffixes and widths, float literals float32 and rounded once, ``h`` makes half, hex
floats)::

    >>> _literal("0xFFFFFFFF"), _literal("1.5h"), _literal("-0x1p-3f")
    ((4294967295, uint32), (1.5, float16), (-0.125, float32))
"""
from __future__ import annotations

from ... import literals
from ... import types as T
from ...semantics.folding import coerce_value, unop_value


def _literal(text: str):
    """(value, ScalarType) of a C/MSL number literal; raises ``literals.LiteralError``
    saying what is wrong."""
    s = text.strip()
    if s[:1] in "+-":
        # tree-sitter folds the sign of `-3` into the literal: -(literal), typed by the literal
        v, t = _literal(s[1:])
        t = T.promote_int(t) if t.is_int else t
        return (unop_value("-", v, t) if s[0] == "-" else coerce_value(v, t)), t
    return literals.parse(s)
