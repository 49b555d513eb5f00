"""``print(...)`` in DSL and ``cuda.jit`` kernels: positional values with ``sep=``/``end=``,
string literals, f-strings (``f"{v:.3f}"``), ``"%d" % i`` and ``"{}".format(i)``, each
value formatted as Python formats it. DSL prints are tagged with the thread's position
on the simulator; Numba's ``print`` is not (as in Numba)."""
from __future__ import annotations

import ast
import string

from ... import ir
from ...codegen.printf import FormatError, c_to_python, split_c_format
from ...errors import KernelSyntaxError
from ..printing import PrintBuilder
from .expressions import _NOT_STATIC


def translate_print(tr, node: ast.Call, statement: bool) -> ir.Print:
    """The ``ir.Print`` of a ``print(...)`` call at statement level."""
    sp = tr.span(node)
    if not statement:
        raise tr.err(KernelSyntaxError, "print() is a statement here: it has no value", node)
    sep, end = " ", "\n"
    for kw in node.keywords:
        if kw.arg in ("sep", "end"):
            v = tr.static_value(kw.value)
            if v is None:
                v = " " if kw.arg == "sep" else "\n"
            if not isinstance(v, str):
                raise tr.err(KernelSyntaxError, f"print's {kw.arg}= must be a constant string", kw.value)
            sep, end = (v, end) if kw.arg == "sep" else (sep, v)
        elif kw.arg == "flush":
            continue
        else:
            raise tr.err(KernelSyntaxError, f"print() in a kernel takes sep= and end=, not {kw.arg}=", node,
                         hint="kernel prints go to the notebook's output (Python's stdout)")

    from ...semantics import NUMBA
    if tr.m.rules is NUMBA and len(node.args) > 32 and not node.keywords:
        return _raw_format(tr, node, sp)
    pb = PrintBuilder(lambda msg, hint=None: tr.err(KernelSyntaxError, msg, node, hint))
    for i, a in enumerate(node.args):
        if i:
            pb.lit(sep)
        _piece(tr, pb, a)
    pb.lit(end)
    from ...semantics import NUMBA
    tag = None if tr.m.rules is NUMBA else tr.sem.thread_attr("thread_position_in_grid", sp)
    return pb.build(tag, sp)


def _raw_format(tr, node, sp) -> ir.Print:
    """Numba's CUDA print of more than 32 items (vprintf's limit): a warning at compile time,
    and the kernel prints the format string itself (``%lld %f %s ...``)."""
    import warnings
    warnings.warn("CUDA print() cannot print more than 32 items. The raw format string will be emitted by "
                  f"the kernel instead. (line {sp.line})", PrintWarning, stacklevel=2)
    pb = PrintBuilder(lambda msg, hint=None: tr.err(KernelSyntaxError, msg, node, hint))
    pb.lit(" ".join(_c_format(tr, a) for a in node.args) + "\n")
    return pb.build(None, sp)


def _c_format(tr, a) -> str:
    """The printf conversion Numba's CUDA print uses for argument ``a``."""
    if _const_str(a) is not None:
        return "%s"
    obj = tr._maybe_static(a)
    if obj is not _NOT_STATIC and _is_dim3(obj):
        return "(%d, %d, %d)"
    return _c_format_of(tr.value_or_tuple(a))


def _c_format_of(v) -> str:
    items = getattr(v, "items", None)
    if items is not None:
        inner = ", ".join(_c_format_of(x) for x in items)
        return f"({inner},)" if len(items) == 1 else f"({inner})"
    t = v.type
    if t.is_bool:
        return "%s"
    if t.is_float:
        return "%f"
    return "%llu" if t.name.startswith("u") else "%lld"


class PrintWarning(UserWarning):
    """A print in a kernel that prints differently from what it says (Numba's NumbaWarning)."""


def _field(tr, pb, node, spec):
    obj = _const_str(node)
    if obj is None:
        obj = tr._maybe_static(node)
    if obj is not _NOT_STATIC and _is_dim3(obj):
        # Numba's cuda.threadIdx & co. print as a tuple of ints
        from ...numba_compat.intrinsics import _attr_int
        pb.lit("(")
        for k, c in enumerate("xyz"):
            if k:
                pb.lit(", ")
            pb.value(_attr_int(tr, obj._attr, c, node), spec)
        pb.lit(")")
        return
    if obj is not _NOT_STATIC and isinstance(obj, str):
        pb.lit(format(obj, spec[1]) if spec[0] == "py" else obj)
        return
    e = tr.expr(node)
    pb.value(e, spec, lambda v, c: tr.sem.component(v, c, v.span))


def _is_dim3(obj) -> bool:
    from ...numba_compat.intrinsics import Dim3
    return isinstance(obj, Dim3)


def _const_str(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _piece(tr, pb, a):
    s = _const_str(a)
    if s is not None:
        pb.lit(s)
        return
    if isinstance(a, ast.JoinedStr):
        for v in a.values:
            if isinstance(v, ast.Constant):
                pb.lit(str(v.value))
                continue
            if v.conversion not in (-1, ord("s")):
                raise tr.err(KernelSyntaxError, "f-string conversions !r and !a are not supported in kernels", v)
            spec = ""
            if v.format_spec is not None:
                parts = v.format_spec.values if isinstance(v.format_spec, ast.JoinedStr) else [v.format_spec]
                if not all(_const_str(p) is not None for p in parts):
                    raise tr.err(KernelSyntaxError, "a format spec in a kernel must be constant", v)
                spec = "".join(_const_str(p) for p in parts)
            _field(tr, pb, v.value, ("py", spec))
        return
    if isinstance(a, ast.BinOp) and isinstance(a.op, ast.Mod) and _const_str(a.left) is not None:
        values = a.right.elts if isinstance(a.right, ast.Tuple) else [a.right]
        try:
            texts, specs = split_c_format(_const_str(a.left))
        except FormatError as e:
            raise tr.err(KernelSyntaxError, f"bad % format: {e}", a.left)
        if len(specs) != len(values):
            raise tr.err(KernelSyntaxError, f"the format has {len(specs)} conversion(s) for {len(values)} value(s)", a)
        for t, s, v in zip(texts, specs, values):
            pb.lit(t)
            if s.endswith("s") and _const_str(v) is not None:   # "%-6s" % "text": folded here
                pb.lit(c_to_python(s) % _const_str(v))
            elif s.endswith("s"):
                _field(tr, pb, v, ("py", ""))
            else:
                _field(tr, pb, v, ("c", s))
        pb.lit(texts[-1])
        return
    if isinstance(a, ast.Call) and isinstance(a.func, ast.Attribute) and a.func.attr == "format" \
            and _const_str(a.func.value) is not None and not a.keywords:
        auto = 0
        try:
            parsed = list(string.Formatter().parse(_const_str(a.func.value)))
        except ValueError as e:
            raise tr.err(KernelSyntaxError, f"bad format string: {e}", a.func.value)
        for lit, name, spec, conv in parsed:
            pb.lit(lit)
            if name is None:
                continue
            if conv not in (None, "s"):
                raise tr.err(KernelSyntaxError, "format conversions !r and !a are not supported in kernels", a)
            if name == "":
                idx, auto = auto, auto + 1
            elif name.isdigit():
                idx = int(name)
            else:
                raise tr.err(KernelSyntaxError, "only positional fields ({} or {0}) are supported in kernels", a)
            if idx >= len(a.args):
                raise tr.err(KernelSyntaxError, f"format field {idx} has no value", a)
            _field(tr, pb, a.args[idx], ("py", spec or ""))
        return
    _field(tr, pb, a, ("py", ""))


__all__ = ["translate_print", "PrintWarning"]
