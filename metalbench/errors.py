"""Errors that point at the user's line.

Every error metalbench raises for bad input is a ``MetalbenchError``. Errors about
the kernel's text carry a :class:`Span`, and their message shows the line the user
wrote (cell line or MSL body line) with a caret under the offending part::

    >>> src = Source("saxpy", "def f(x):\\n    y = undefined_name\\n", first_line=1)
    >>> err = KernelNameError("name 'undefined_name' is not defined",
    ...                       Span(src, 2, 8, 2, 22), hint="define it or pass it as an argument")
    >>> print(err)                                        # doctest: +NORMALIZE_WHITESPACE
    name 'undefined_name' is not defined
      saxpy, line 2:
        2 |     y = undefined_name
          |         ^^^^^^^^^^^^^^
    hint: define it or pass it as an argument
"""
from __future__ import annotations

import functools as _functools
from dataclasses import dataclass


@dataclass(eq=False)
class Source:
    """The text a kernel came from. ``first_line`` is the user-visible number of its
    first line (a ``%%metal`` cell body starts at line 2, after the magic line)."""

    name: str
    text: str
    first_line: int = 1

    def line(self, n: int) -> str:
        """The text of user-visible line ``n``."""
        lines = self.text.splitlines()
        i = n - self.first_line
        return lines[i] if 0 <= i < len(lines) else ""


@dataclass(eq=False)
class Span:
    """Where a node came from: user-visible line numbers, 0-based columns."""

    source: Source | None
    line: int
    col: int = 0
    end_line: int | None = None
    end_col: int | None = None

    def excerpt(self) -> str:
        """The line with a caret under the span, ready to print."""
        where = f"  {self.source.name}, line {self.line}:" if self.source else f"  line {self.line}:"
        if self.source is None:
            return where
        text = self.source.line(self.line).rstrip("\n")
        num = str(self.line)
        end = self.end_col if (self.end_line in (None, self.line) and self.end_col) else len(text)
        width = max(1, end - self.col)
        pad = " " * len(num)
        return (f"{where}\n    {num} | {text}\n    {pad} | {' ' * self.col}{'^' * width}")

    def __str__(self) -> str:
        name = self.source.name if self.source else "kernel"
        return f"{name}:{self.line}"


class MetalbenchError(Exception):
    """Base class of every error metalbench raises about the user's kernel or launch."""

    def __init__(self, message: str, span: Span | None = None, hint: str | None = None):
        self.message = message
        self.span = span
        self.hint = hint
        self.call_sites: list[Span] = []
        super().__init__(self._format())

    def add_call_site(self, span: Span | None) -> "MetalbenchError":
        """Record that the failing code was reached through a call at ``span`` (a device
        function called from a kernel line); the message then shows that line too.

        >>> src = Source("k", "def f(x):\\n    return x\\ndef k():\\n    f(1)\\n")
        >>> e = KernelTypeError("bad", Span(src, 2, 11, 2, 12)).add_call_site(Span(src, 4, 4, 4, 8))
        >>> print(e)                                      # doctest: +NORMALIZE_WHITESPACE
        bad
          k, line 2:
            2 |     return x
              |            ^
        called from:
          k, line 4:
            4 |     f(1)
              |     ^^^^
        """
        if span is not None and self.span is not None:
            self.call_sites.append(span)
            self.args = (self._format(),)
        return self

    def _format(self) -> str:
        parts = [self.message]
        if self.span is not None:
            parts.append(self.span.excerpt())
        for site in getattr(self, "call_sites", ()):
            parts.append("called from:")
            parts.append(site.excerpt())
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return "\n".join(parts)

    def __str__(self) -> str:
        return self._format()


class KernelSyntaxError(MetalbenchError):
    """The kernel uses syntax the front end does not accept (``yield``, ``try``, ...)."""


class KernelNameError(MetalbenchError):
    """An undefined name in the kernel."""


class KernelTypeError(MetalbenchError):
    """A type error: wrong argument type, float index, wrong arity of a builtin, ..."""


class KernelInternalError(MetalbenchError):
    """An unexpected failure inside metalbench while translating the kernel: a bug in
    metalbench, reported at the kernel line being translated (the original exception
    is chained as ``__cause__``)."""


def internal_error(exc: BaseException, span: Span | None, what: str = "this line") -> KernelInternalError:
    """The :class:`KernelInternalError` for an unexpected exception ``exc`` raised while
    translating the code at ``span``; raise it ``from exc``.

    >>> src = Source("k", "x = y\\n")
    >>> print(internal_error(KeyError("y"), Span(src, 1, 4, 1, 5)))   # doctest: +NORMALIZE_WHITESPACE
    internal error while translating this line: KeyError: 'y'
      k, line 1:
        1 | x = y
          |     ^
    hint: this is a bug in metalbench, not in your kernel; please report it with the kernel source (the
    original traceback is chained below this error)
    """
    return KernelInternalError(
        f"internal error while translating {what}: {type(exc).__name__}: {exc}", span,
        hint="this is a bug in metalbench, not in your kernel; please report it with the kernel source "
             "(the original traceback is chained below this error)")


class ControlFlow(Exception):
    """Base of the exceptions a translator raises as internal signals (never bugs, never
    seen by users); :func:`error_net` lets them pass."""


def error_net(span_of: str = "span"):
    """Decorator for a translator's per-node methods (``stmt(node)``, ``expr(node)``): the
    safety net of the front ends. An unexpected exception while translating ``node``
    leaves as a :class:`KernelInternalError` at the node's span (``getattr(self,
    span_of)(node)``), chaining the original; a :class:`metalbench.types.TypeError_`
    becomes a :class:`KernelTypeError` there. The innermost node wins: its own net
    converts first, and a :class:`MetalbenchError` passes every outer net unchanged.

    >>> class Tr:
    ...     src = Source("k", "x = y + 1\\n")
    ...     def span(self, node):
    ...         return Span(self.src, 1, 4, 1, 9)
    ...     @error_net("span")
    ...     def expr(self, node):
    ...         return {}[node]
    >>> try:
    ...     Tr().expr("y")
    ... except KernelInternalError as e:
    ...     print(e.message, "|", type(e.__cause__).__name__, "| line", e.span.line)
    internal error while translating this line: KeyError: 'y' | KeyError | line 1
    """
    def deco(method):
        @_functools.wraps(method)
        def guarded(self, node, *args, **kwargs):
            try:
                return method(self, node, *args, **kwargs)
            except (MetalbenchError, ControlFlow):
                raise
            except Exception as e:
                from .types import TypeError_
                try:
                    span = getattr(self, span_of)(node)
                except Exception:
                    span = None
                if isinstance(e, TypeError_):
                    raise KernelTypeError(str(e), span) from e
                raise internal_error(e, span) from e
        return guarded
    return deco


class KernelLaunchError(MetalbenchError):
    """A bad launch: grid or threadgroup size, arguments, limits, unsupported dtype."""


class KernelCheckError(MetalbenchError):
    """A finding of the checked simulator (out-of-bounds, data race, ...)."""

    def __init__(self, message: str, span: Span | None = None, hint: str | None = None,
                 findings: list | None = None):
        self.findings = findings or []
        super().__init__(message, span, hint)


class BackendUnavailableError(MetalbenchError):
    """The requested backend cannot run on this machine."""


class OutOfBoundsWarning(UserWarning):
    """An unchecked simulator launch accessed memory outside a buffer or array. It ran as
    a GPU would (reads outside gave 0, writes and atomics outside were dropped); the
    warning counts them per buffer. ``checked=True`` reports them as findings."""


class CoverageWarning(UserWarning):
    """A simulator launch left elements of an output unwritten and no ``init_value`` was
    given: on a GPU they would hold garbage. The message says how many were written and,
    when only a small part was, the likely cause (``grid`` counts threads, not
    threadgroups)."""


class KernelCheckWarning(UserWarning):
    """A lower-severity finding of the checked simulator: the kernel works on a GPU but
    is fragile (several threads writing the same value to one element), or a
    finding the launch could not raise (see its message)."""


# ----------------------------------------------------------------------------- tracebacks
# (workbench) A MetalbenchError is about the user's kernel or call, so the user needs their
# own frame and the message, not the 15 frames of front end and printer it passed through.
# Public entry points are wrapped with ``user_facing``: the error leaves with metalbench's
# frames dropped (also from the tracebacks of its ``__cause__``/``__context__`` chain);
# frames of the user's own code that metalbench called (a reference, a shape function)
# stay. ``METALBENCH_TRACEBACK=full`` keeps everything, for debugging metalbench itself.

import os as _os

_PACKAGE_DIR = _os.path.dirname(_os.path.abspath(__file__)) + _os.sep


def _is_internal(tb) -> bool:
    return tb.tb_frame.f_code.co_filename.startswith(_PACKAGE_DIR)


def user_frames(tb):
    """``tb`` without metalbench's own frames (traceback entries are relinked in place)."""
    kept = []
    while tb is not None:
        if not _is_internal(tb):
            kept.append(tb)
        tb = tb.tb_next
    for a, b in zip(kept, kept[1:]):
        a.tb_next = b
    if kept:
        kept[-1].tb_next = None
    return kept[0] if kept else None


def trim_traceback(e: BaseException) -> BaseException:
    """Drop metalbench's frames from ``e`` and the exceptions chained to it (unless
    ``METALBENCH_TRACEBACK=full``); returns ``e``."""
    if _os.environ.get("METALBENCH_TRACEBACK", "").lower() == "full":
        return e
    seen = set()
    todo = [e]
    while todo:
        x = todo.pop()
        if x is None or id(x) in seen:
            continue
        seen.add(id(x))
        x.__traceback__ = user_frames(x.__traceback__)
        if isinstance(x, KernelInternalError):
            continue      # a bug in metalbench: its cause keeps every frame, for the report
        todo += [x.__cause__, x.__context__]
    return e


def user_facing(fn):
    """Decorator for public entry points (``Kernel.__call__``, ``source``, ``check`` ...):
    a :class:`MetalbenchError` leaves with the user's frames and the message only.

    >>> @user_facing
    ... def entry():
    ...     raise KernelLaunchError("bad launch")
    >>> try:
    ...     entry()
    ... except KernelLaunchError as e:
    ...     import traceback; frames = traceback.extract_tb(e.__traceback__)
    >>> [f.name for f in frames]        # user code (this doctest, entry) and the one re-raise
    ['<module>', 'wrapper', 'entry']
    """
    @_functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except MetalbenchError as e:
            raise trim_traceback(e)   # metalbench: internal frames dropped (METALBENCH_TRACEBACK=full shows them)
    return wrapper
