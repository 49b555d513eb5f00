"""Prints in MSL bodies: ``printf(fmt, ...)`` and Metal's shader logging (Metal 3.2,
``os_log``): ``os_log_default.log(fmt, ...)`` (also ``metal::os_log_default`` and
``.log_debug``/``log_info``/``log_error``/``log_fault``), and the same calls on a logger
the kernel declares (``constant metal::os_log logger("subsystem", "category");``, MLX's
``mlx::os_log``). Each becomes an ``ir.Print`` with the C format: the simulator prints
it per thread, CUDA through ``printf``; Metal compiles it out (MLX enables shader
logging only in its debug builds).
"""
from __future__ import annotations

import codecs
import re

from ... import ir
from ...codegen.printf import FormatError, c_to_python, split_c_format
from ..printing import PrintBuilder

LOGGER_TYPES = ("os_log", "metal::os_log", "mlx::os_log")
_LOG_METHODS = ("log", "log_debug", "log_info", "log_error", "log_fault")
_DEFAULT_LOGGERS = ("os_log_default", "metal::os_log_default")
# os_log's privacy annotations: %{public}d prints as %d
_PRIVACY = re.compile(r"%\{[^}]*\}")


def is_logger_decl(tr, node) -> bool:
    """A declaration of an ``os_log`` logger: its names are remembered, it makes no IR."""
    tnode = node.child_by_field_name("type")
    if tnode is None or tr.text(tnode).replace(" ", "") not in LOGGER_TYPES:
        return False
    loggers = tr.__dict__.setdefault("_loggers", set())
    for d in node.children_by_field_name("declarator"):
        inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
        if inner is not None:
            loggers.add(tr.text(inner).strip())
    return True


def print_call(tr, node) -> ir.Print | None:
    """The ``ir.Print`` of a ``printf``/``os_log`` call statement, or None for other calls."""
    fn = node.child_by_field_name("function")
    text = tr.text(fn).replace(" ", "")
    log = False
    if text in ("printf", "metal::printf"):
        pass
    elif fn.type == "field_expression":
        obj = tr.text(fn.child_by_field_name("argument")).replace(" ", "")
        field = tr.text(fn.child_by_field_name("field")).strip()
        if field not in _LOG_METHODS or not (obj in _DEFAULT_LOGGERS or obj in tr.__dict__.get("_loggers", ())):
            return None
        log = True
    else:
        return None
    args = node.child_by_field_name("arguments").named_children
    if not args or args[0].type not in ("string_literal", "concatenated_string"):
        tr.type_err(node, f"{text}(...) takes a format string literal first")
    fmt = _string(tr, args[0])
    fmt = _PRIVACY.sub("%", fmt)
    if log and not fmt.endswith("\n"):
        fmt += "\n"          # one log message per call
    try:
        texts, specs = split_c_format(fmt)
    except FormatError as e:
        tr.type_err(args[0], f"bad format: {e}")
    if len(specs) != len(args) - 1:
        tr.type_err(node, f"the format has {len(specs)} conversion(s) for {len(args) - 1} value(s)")

    def error(msg, hint=None):
        tr.type_err(node, msg, hint=hint)
    pb = PrintBuilder(error)
    for t, s, a in zip(texts, specs, args[1:]):
        pb.lit(t)
        if a.type in ("string_literal", "concatenated_string"):    # printf("%s", "text"): folded here
            if not s.endswith("s"):
                tr.type_err(a, f"a string literal prints with %s, not {s}")
            pb.lit(c_to_python(s) % _string(tr, a))
            continue
        pb.value(tr.expr(a), ("c", s), lambda v, c: tr.sem.component(v, c, v.span))
    pb.lit(texts[-1])
    sp = tr.sp(node)
    return pb.build(tr.sem.thread_attr("thread_position_in_grid", sp), sp)


def _string(tr, node) -> str:
    parts = [node] if node.type == "string_literal" else [c for c in node.named_children
                                                          if c.type == "string_literal"]
    out = []
    for p in parts:
        raw = tr.text(p).strip()
        if raw.startswith(("u8\"", "L\"", "u\"", "U\"")):
            raw = raw[raw.index('"'):]
        body = raw[1:-1]
        try:
            out.append(codecs.decode(body.encode("latin-1", "backslashreplace"), "unicode_escape"))
        except (UnicodeDecodeError, ValueError):
            out.append(body)
    return "".join(out)


_LOG_CALL = re.compile(r"\b(?:printf|os_log_default|os_log)\b")


def has_log_calls(text: str) -> bool:
    """Whether MSL text may print (``printf``, ``os_log``): then the metal backend gets the
    printed kernel with the calls compiled out instead of the text verbatim.

    >>> has_log_calls('os_log_default.log("%d", i);'), has_log_calls("y[i] = x[i];")
    (True, False)
    """
    return bool(_LOG_CALL.search(text))
