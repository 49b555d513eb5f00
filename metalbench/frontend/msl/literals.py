"""MSL number literals (integer suffixes and widths as clang gives them; float
literals are float32, ``h`` makes half)::

    >>> _literal("0xFFFFFFFF"), _literal("1.5h")
    ((4294967295, uint32), (1.5, float16))
"""
from __future__ import annotations

import re

from ... import types as T
from ...semantics.folding import coerce_value


_INT_SUFFIX = re.compile(r"([uUlL]*)$")


def _literal(text: str):
    """(value, ScalarType) of a C/MSL number literal; float literals are float32
    (Metal has no double), ``h`` makes half."""
    s = text.replace("'", "").strip()
    if s[:1] in "+-":
        # tree-sitter folds the sign of `-3` into the literal: -(literal), typed by the literal
        v, t = _literal(s[1:])
        if t is None:
            return None, None
        if s[0] == "-":
            v = coerce_value(-v, T.promote_int(t) if t.is_int else t)
        return v, (T.promote_int(t) if t.is_int else t)
    low = s.lower()
    if low.startswith(("0x", "0b")) or (re.fullmatch(r"[0-9]+[ul]*", low) is not None):
        m = _INT_SUFFIX.search(low)
        suf = m.group(1)
        digits = low[: len(low) - len(suf)]
        try:
            v = int(digits, 0) if not (digits.startswith("0") and digits[1:2].isdigit()) else int(digits, 8)
        except ValueError:
            return None, None
        uns = "u" in suf
        lng = "l" in suf
        if lng:
            t = T.uint64 if uns else T.int64
        elif uns:
            t = T.uint32 if v < 2**32 else T.uint64
        else:
            hexy = low.startswith(("0x", "0b"))
            if v < 2**31:
                t = T.int32
            elif hexy and v < 2**32:
                t = T.uint32
            elif v < 2**63:
                t = T.int64
            else:
                t = T.uint64
        return coerce_value(v, t), t
    t = T.float32
    if low.endswith("h"):
        t, low = T.float16, low[:-1]
    elif low.endswith("f"):
        low = low[:-1]
    try:
        return coerce_value(float(low), t), t
    except ValueError:
        return None, None
