"""Parsing a DSL kernel: its source text (recovered for functions defined in files,
notebook cells and the REPL) into a ``def`` AST with the :class:`Source` its spans
point into.

Python's ``ast`` gives columns as UTF-8 byte offsets; :func:`node_span` converts them to
character columns, so a caret lands under the right character after ``é`` or ``σ``::

    >>> import ast
    >>> src = Source("k", "σ = x + y\\n")
    >>> node = ast.parse(src.text).body[0].value            # x + y
    >>> node.col_offset, node_span(src, node).col
    (5, 4)
"""
from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass

from ...errors import KernelSyntaxError, Source, Span
from ...semantics import RuleSet


@dataclass
class ParsedFunction:
    """A function's AST with the Source its spans refer to."""
    fdef: ast.FunctionDef
    source: Source
    env: dict
    name: str
    rules: RuleSet | None = None   # the language rules (None: the DSL's; the Numba layer sets NUMBA)


def parse_function(fn, source_text: str | None = None, first_line: int | None = None,
                   source_name: str | None = None) -> ParsedFunction:
    """Parse ``fn`` (a Python function) or ``source_text`` into its ``def`` AST.

    Line numbers in spans are the user's: the file's lines for a function from a file,
    ``first_line`` onwards for text (a ``%%metal`` cell body starts at line 2).
    """
    if source_text is None:
        from ...sources import function_source   # file, linecache, the 3.13+ prompt; else says what to do
        lines, lineno, fname = function_source(fn)
        source_text = "".join(lines)
        first_line = lineno
        source_name = source_name or (fname if not fname.startswith("<") else fn.__name__)
    text = textwrap.dedent(source_text)
    src = Source(source_name or "<kernel>", text, first_line or 1)
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        line = (e.lineno or 1) + src.first_line - 1
        raise KernelSyntaxError(f"invalid Python syntax: {e.msg}",
                                Span(src, line, max(0, (e.offset or 1) - 1)))
    fdefs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not fdefs:
        raise KernelSyntaxError("no kernel function found", Span(src, src.first_line, 0),
                                hint="a DSL kernel is a `def name(args):` with a body")
    fdef = fdefs[0]
    if isinstance(fdef, ast.AsyncFunctionDef):
        raise KernelSyntaxError("async functions cannot be kernels", node_span(src, fdef))
    env = _LiveEnv(fn) if fn is not None else {}
    if fn is not None:
        env.update(fn.__globals__)
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    env[name] = cell.cell_contents
                except ValueError:
                    pass
    return ParsedFunction(fdef, src, env, fdef.name)


class _LiveEnv(dict):
    """A function's names as seen when it was parsed, and for a name not yet bound then
    (a closure variable or global assigned after the decorator ran, as in
    ``@cuda.jit def k(): f(...)`` followed by ``def f``), its value now: Numba resolves
    names when it compiles, at the first launch.

    >>> def outer():
    ...     def k():
    ...         return later
    ...     env = parse_function(k).env
    ...     later = 5
    ...     return "later" in env, env["later"]
    >>> outer()
    (True, 5)
    """

    def __init__(self, fn):
        super().__init__()
        self._fn = fn

    def _live(self, name):
        fn = self._fn
        if fn.__closure__ and name in fn.__code__.co_freevars:
            try:
                return True, fn.__closure__[fn.__code__.co_freevars.index(name)].cell_contents
            except ValueError:
                return False, None
        if name in fn.__globals__:
            return True, fn.__globals__[name]
        return False, None

    def __missing__(self, name):
        found, v = self._live(name)
        if not found:
            raise KeyError(name)
        return v

    def __contains__(self, name):
        return dict.__contains__(self, name) or self._live(name)[0]

    def get(self, name, default=None):
        return self[name] if name in self else default


def char_col(src: Source, line: int, byte_col: int | None) -> int | None:
    """The character column of UTF-8 byte offset ``byte_col`` in user-visible ``line``.

    >>> char_col(Source("k", "é = 1\\n"), 1, 3)
    2
    """
    if byte_col is None:
        return None
    text = src.line(line)
    if text.isascii():
        return byte_col
    return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def node_span(src: Source, node) -> Span:
    """The span of ``ast`` node ``node`` in ``src``: user-visible lines, character columns."""
    line = getattr(node, "lineno", 1) + src.first_line - 1
    end_line = getattr(node, "end_lineno", None)
    end_line = line if end_line is None else end_line + src.first_line - 1
    return Span(src, line, char_col(src, line, getattr(node, "col_offset", 0)) or 0,
                end_line, char_col(src, end_line, getattr(node, "end_col_offset", None)))
