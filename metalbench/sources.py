"""Where a kernel's Python source comes from.

``@mb.kernel`` reads the decorated function's source, because the DSL is translated
from its syntax tree. Python keeps that text for functions in files and notebook cells
(IPython registers every cell in ``linecache``), for the Python 3.13+ interactive prompt
(its own cache of the code it ran), and for ``exec`` of a string when the caller put the
string in ``linecache`` under the name it compiled it with. It keeps nothing for
``python - <<EOF`` (standard input), the interactive prompt before 3.13, or a plain
``exec``: there, give the text itself::

    k = mb.kernel(source='''
    def scale(x, out: mb.Out):
        i = thread_position_in_grid.x
        out[i] = 2.0 * x[i]
    ''')
"""
from __future__ import annotations

import inspect
import linecache
import os
import sys

from .errors import KernelSyntaxError

_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def function_source(fn) -> tuple[list[str], int, str]:
    """``(lines, first line number, file name)`` of ``fn``'s definition (decorators
    included), from the file, ``linecache``, or the 3.13+ prompt's code cache;
    a :class:`KernelSyntaxError` saying what to do when Python kept none."""
    try:
        lines, lineno = inspect.getsourcelines(fn)
        return lines, lineno, inspect.getsourcefile(fn) or "<kernel>"
    except (OSError, TypeError) as e:
        err = e
    code = getattr(fn, "__code__", None)
    if code is not None:
        # The 3.13+ interactive prompt keeps each input's text keyed by its code objects.
        getter = getattr(linecache, "_getlines_from_code", None)
        text = getter(code) if getter is not None else []
        if not text:
            text = linecache.getlines(code.co_filename)   # registered by the caller (exec)
        if text:
            start = code.co_firstlineno
            try:
                block = inspect.getblock(text[start - 1:])
            except Exception:   # noqa: BLE001 — a stale or foreign cache entry: fall through
                block = []
            if block and "def " + fn.__name__ in "".join(block):
                return block, start, code.co_filename
    raise KernelSyntaxError(f"cannot read the source of {getattr(fn, '__name__', fn)!r}: {_why(fn, err)}",
                            hint=_HINT)


_HINT = ("define the kernel in a file or a notebook cell, or give its text: "
         "k = mb.kernel(source='''def k(x, out: mb.Out): ...''') (mb.func(source=...) for device "
         "functions); for exec(), register the string first: "
         "linecache.cache[name] = (len(src), None, src.splitlines(True), name), then "
         "exec(compile(src, name, 'exec'))")


def _why(fn, err) -> str:
    code = getattr(fn, "__code__", None)
    name = code.co_filename if code is not None else ""
    if name == "<stdin>":
        return ("Python keeps no source for code read from standard input "
                "(python - <<EOF, or the interactive prompt before Python 3.13)")
    if name == "<string>":
        return "Python keeps no source for exec() or compile() of a string"
    return str(err)


def caller_namespace() -> dict:
    """Globals and locals of the first caller outside metalbench (what names in a
    kernel given as text refer to, as for a decorated function)."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_HERE):
        f = f.f_back
    if f is None:
        return {}
    ns = dict(f.f_globals)
    if f.f_locals is not f.f_globals:
        ns.update(f.f_locals)
    return ns
