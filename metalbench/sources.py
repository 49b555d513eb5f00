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
import weakref

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
        found = _from_compiled_strings(code)
        if found is not None:
            return found
    raise KernelSyntaxError(f"cannot read the source of {getattr(fn, '__name__', fn)!r}: {_why(fn, err)}",
                            hint=_HINT)


_HINT = ("define the kernel in a file or a notebook cell, or give its text: "
         "k = mb.kernel(source='''def k(x, out: mb.Out): ...''') (mb.func(source=...) for device "
         "functions); for exec(), register the string first: "
         "linecache.cache[name] = (len(src), None, src.splitlines(True), name), then "
         "exec(compile(src, name, 'exec'))")


# -- exec() of a string -----------------------------------------------------------------
# Numba compiles functions from their bytecode, so a kernel made by ``exec(text)`` works
# there. metalbench needs the text: once remember_compiled_strings() is called (importing
# metalbench.cuda does), an audit hook keeps the last few strings compiled under a
# pseudo-file name ("<string>"), and a function without source is looked up in them: the
# text whose compiled code holds a code object equal to the function's own.
_COMPILED: list = []            # (file name, text), newest last
_KEEP = 64
_hooked = False
# The code objects that exec() ran, and the functions in them, -> (file name, text): found
# however many strings were compiled since (dataclasses and namedtuples compile strings too).
_BY_CODE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_last = None                    # the string compiled just before an "exec" event


def _audit(event, args):
    global _last
    if event == "compile" and len(args) >= 2:
        src, name = args[0], args[1]
        if _busy or not (isinstance(name, str) and name.startswith("<")) or not isinstance(src, (str, bytes)) \
                or len(src) > 1_000_000:
            return
        _last = (name, src)
        _COMPILED.append(_last)
        del _COMPILED[:-_KEEP]
    elif event == "exec" and _last is not None and args:
        last, _last = _last, None
        code = args[0]
        if getattr(code, "co_filename", None) == last[0]:
            for c in _codes(code):
                try:
                    _BY_CODE[c] = last
                except TypeError:
                    pass


_busy = False            # compiling a remembered text again (the lookup) records nothing


def remember_compiled_strings() -> None:
    r"""Keep the text of strings compiled by ``exec``/``compile`` (a process-wide audit
    hook, installed once) so that functions defined in them have a source::

        >>> remember_compiled_strings()
        >>> ns = {}
        >>> exec("def f(x):\n    return x + 1\n", ns)
        >>> function_source(ns["f"])[0]
        ['def f(x):\n', '    return x + 1\n']
    """
    global _hooked
    if not _hooked:
        sys.addaudithook(_audit)
        _hooked = True


def _codes(code):
    yield code
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            yield from _codes(c)


def _same(a, b) -> bool:
    """Whether code objects ``a`` and ``b`` are the same code (bytecode, names, constants;
    ``cuda.atomic.max`` and ``cuda.atomic.min`` differ only in their names)."""
    if (a.co_name, a.co_code, a.co_names, a.co_varnames) != (b.co_name, b.co_code, b.co_names, b.co_varnames) \
            or len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if hasattr(x, "co_code") or hasattr(y, "co_code"):
            if not (hasattr(x, "co_code") and hasattr(y, "co_code") and _same(x, y)):
                return False
        elif type(x) is not type(y) or x != y:
            if not (x != x and y != y):      # NaN constants
                return False
    return True


def _from_compiled_strings(code):
    try:
        first = [_BY_CODE[code]]
    except (KeyError, TypeError):
        first = []
    for name, src in first + list(reversed(_COMPILED)) + _command_string():
        if name != code.co_filename:
            continue
        text = src.decode("utf-8", "replace") if isinstance(src, bytes) else src
        global _busy
        _busy = True
        try:
            top = compile(text, name, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            continue
        finally:
            _busy = False
        if any(c.co_firstlineno == code.co_firstlineno and _same(c, code) for c in _codes(top)):
            lines = text.splitlines(True)
            try:
                block = inspect.getblock(lines[code.co_firstlineno - 1:])
            except Exception:   # noqa: BLE001
                continue
            return block, code.co_firstlineno, name
    return None


def _command_string() -> list:
    """``python -c TEXT``: the program's text, from the interpreter's own arguments
    (``sys.orig_argv``), as the pseudo-file ``<string>`` its functions were compiled as.
    Checked like any other candidate: it is used only when it compiles to the function's
    own code."""
    argv = list(getattr(sys, "orig_argv", None) or [])
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "-c" and i + 1 < len(argv):
            return [("<string>", argv[i + 1])]
        if a.startswith("-c"):
            return [("<string>", a[2:])]
        if not a.startswith("-") or a in ("-m", "-"):
            break     # the script or module name: the options are over
        i += 2 if a in ("-W", "-X") else 1
    return []


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
