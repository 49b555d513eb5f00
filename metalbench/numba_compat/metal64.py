"""float64 of Numba kernels on the metal backend.

Numba types Python floats, float literals and ``float(x)`` as float64, so almost every
ported kernel computes some float64 (``x[i] * 2.0`` is a double in Numba). On ``sim``
and ``cuda`` that is exact. Metal has no double, so on ``metal``:

- float64 *data* (an array argument, a local or shared array of float64) is an error
  that says so (the one float64 policy of the DSL, MSL bodies and the Numba layer);
- float64 *scalars* (literals, Python float arguments, the arithmetic Numba's typing
  widens to float64) compute in float32, with a :class:`Float64OnMetalWarning` that
  names the first such line. Spelling ``float32(2.0)`` keeps a kernel in float32
  everywhere and silences it::

    >>> from metalbench import ir, types as T
    >>> k = ir.KernelIR("k", [ir.Param("a", "scalar", T.float64), ir.Param("x", "buffer", T.float32)],
    ...                 [ir.Store("x", ir.Const(0, T.int32), ir.Cast(T.float32, ir.Var("a", T.float64)))])
    >>> k2, where = demote_float64(k)
    >>> k2.params[0].type.name, where is None
    ('float32', True)
"""
from __future__ import annotations

import copy
import dataclasses
import warnings

from .. import ir
from .. import types as T
from ..errors import KernelTypeError


class Float64OnMetalWarning(UserWarning):
    """A Numba kernel's float64 scalars compute in float32 on the metal backend."""


def _first_data(kir: ir.KernelIR):
    for p in kir.params:
        if p.kind == "buffer" and p.type == T.float64:
            return f"array argument '{p.name}' is float64", None
    for body in [f.body for f in kir.functions] + [kir.body]:
        for n in ir.walk(body):
            if isinstance(n, ir.ArrayDecl) and n.elem == T.float64:
                return f"the array '{n.name}' is float64", n.span
            if isinstance(n, ir.Atomic) and n.type == T.float64:
                return "this atomic works on float64 data", n.span
    for g in kir.globals:
        if g.elem == T.float64:
            return f"the constant array '{g.name}' is float64", g.span
    return None


def demote_float64(kir: ir.KernelIR):
    """``(kir with every float64 scalar as float32, span of the first one or None)``;
    raises the no-double error when float64 is data (see the module docstring)."""
    data = _first_data(kir)
    if data is not None:
        msg, span = data
        raise KernelTypeError(f"{msg}, but {T.NO_DOUBLE}", span)
    k2 = copy.deepcopy(kir)
    first = []

    def visit(node):
        if isinstance(node, list):
            for x in node:
                visit(x)
            return
        if not dataclasses.is_dataclass(node) or isinstance(node, (T.ScalarType, T.VectorType)):
            return
        for f in dataclasses.fields(node):
            v = getattr(node, f.name)
            if f.name in ("type", "elem", "ret") and v == T.float64:
                setattr(node, f.name, T.float32)
                if not first and getattr(node, "span", None) is not None:
                    first.append(node.span)
            elif f.name != "span":
                visit(v)

    visit(k2.body)
    visit(k2.functions)
    visit(k2.params)
    return k2, (first[0] if first else None)


def uses_float64(kir: ir.KernelIR) -> bool:
    """Whether anything in ``kir`` is float64."""
    if any(p.type == T.float64 for p in kir.params):
        return True
    for body in [f.body for f in kir.functions] + [kir.body]:
        for n in ir.walk(body):
            t = n.elem if isinstance(n, ir.ArrayDecl) else getattr(n, "type", None)
            if t == T.float64 or (isinstance(t, T.VectorType) and t.elem == T.float64):
                return True
    return False


def warn_demoted(name: str, span) -> None:
    where = f" (first at {span.source.name}, line {span.line})" if span is not None and span.source else ""
    warnings.warn(f"Metal has no double: kernel {name!r} computes its float64 values in float32 on the metal "
                  f"backend{where}. Numba types Python floats and float literals as float64; write "
                  "float32(...) to compute in float32 everywhere, or run on backend='sim' or 'cuda' for exact "
                  "float64.", Float64OnMetalWarning, stacklevel=4)
