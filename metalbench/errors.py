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
        super().__init__(self._format())

    def _format(self) -> str:
        parts = [self.message]
        if self.span is not None:
            parts.append(self.span.excerpt())
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
