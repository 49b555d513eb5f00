"""Building ``ir.Print`` for both front ends: literal pieces and formatted values, with
each format checked against its value's type where the user wrote it (so a bad
``{:d}`` on a float is an error at the print's line, not at launch).

    >>> from metalbench import ir, types as T
    >>> p = PrintBuilder(None)
    >>> p.lit("i="); p.value(ir.Var("i", T.uint32), ("py", "")); p.lit("\\n")
    >>> s = p.build(None); s.text, s.specs
    (['i=', '\\n'], [('py', '')])
"""
from __future__ import annotations

import numpy as np

from .. import ir
from .. import types as T
from ..codegen.printf import FormatError, c_for_type, python_to_c


def value_kind(t: T.ScalarType) -> str:
    """How a print formats values of ``t``: "float", "int", "uint" or "bool".

    >>> value_kind(T.float16), value_kind(T.uint8), value_kind(T.bool_)
    ('float', 'uint', 'bool')
    """
    if t.is_bool:
        return "bool"
    if t.is_float:
        return "float"
    return "int" if np.dtype(t.np).kind == "i" else "uint"


def _sample(t: T.ScalarType):
    return np.bool_(True) if t.is_bool else np.dtype(t.np).type(1)


class PrintBuilder:
    """Collects the pieces of one print; ``error(msg)`` raises at the print's span."""

    def __init__(self, error):
        self.texts = [""]
        self.args: list[ir.Expr] = []
        self.specs: list[tuple[str, str]] = []
        self._error = error

    def error(self, msg, hint=None):
        if self._error is None:
            raise FormatError(msg)
        raise self._error(msg, hint)

    def lit(self, s: str) -> None:
        self.texts[-1] += s

    def value(self, e: ir.Expr, spec: tuple[str, str], component=None) -> None:
        """Add value ``e`` formatted by ``spec`` (``("py", ".3f")`` or ``("c", "%d")``); a
        vector prints as ``(x, y, z)`` (``component(e, c)`` gives its components)."""
        t = e.type
        if t is None:
            self.error("this has no value to print (a call of a void function)")
        items = getattr(e, "items", None)
        if items is not None:       # a tuple value prints as Python prints it: (1, (2.0,), 3)
            self.lit("(")
            for k, x in enumerate(items):
                if k:
                    self.lit(", ")
                self.value(x, spec, component)
            self.lit(",)" if len(items) == 1 else ")")
            return
        if isinstance(t, T.VectorType):
            if component is None:
                self.error(f"a {t.name} value cannot be printed here; print its components")
            self.lit("(")
            for k, c in enumerate(T.COMPONENTS[:t.n]):
                if k:
                    self.lit(", ")
                self.value(component(e, c), spec)
            self.lit(")")
            return
        if not isinstance(t, T.ScalarType):
            self.error(f"a {getattr(t, 'name', t)} value cannot be printed")
        kind, sp = spec
        vk = value_kind(t)
        try:
            if kind == "py":
                format(_sample(t), sp)        # Python's own check of the spec for this type
                if vk != "bool" or sp:
                    python_to_c(sp, "int" if vk == "bool" else vk)
            else:
                c_for_type(sp, vk)
        except (ValueError, TypeError, FormatError) as ex:
            self.error(f"cannot print a {t.name} value with format {sp!r}: {ex}",
                       hint="use a format such as {:.3f} (floats) or {:d} (integers)" if kind == "py"
                       else "use a conversion such as %f (floats) or %d (integers)")
        self.args.append(e)
        self.specs.append(spec)
        self.texts.append("")

    def build(self, tag: ir.Expr | None, span=None) -> ir.Print:
        return ir.Print(self.args, self.texts, self.specs, tag, span=span)


def without_prints(kernel: ir.KernelIR) -> ir.KernelIR:
    """A copy of ``kernel`` whose bodies (and device functions) have no ``ir.Print``: for
    derived kernels (the VJP) that must not print.

    >>> k = ir.KernelIR("k", [], [ir.Print([], [""], [])])
    >>> without_prints(k).body
    []
    """
    import copy

    def strip(stmts):
        out = []
        for s in stmts:
            if isinstance(s, ir.Print):
                continue
            for attr in ("then", "orelse", "body", "init", "update"):
                v = getattr(s, attr, None)
                if isinstance(v, list):
                    setattr(s, attr, strip(v))
            out.append(s)
        return out
    if not any(isinstance(n, ir.Print) for n in ir.walk(kernel.body)) and not any(
            isinstance(n, ir.Print) for f in kernel.functions for n in ir.walk(f.body)):
        return kernel
    k = copy.deepcopy(kernel)
    k.body = strip(k.body)
    for f in k.functions:
        f.body = strip(f.body)
    return k
