"""The C preprocessor for MSL bodies and headers, line for line.

Metal compiles a ``metal_kernel``'s text through clang's preprocessor; this module does
what it does to the text before the front end parses it, keeping every line where it was
(a directive, a continued line, a skipped ``#if`` branch becomes an empty line; a macro
use is expanded in place), so errors still point at the user's lines::

    >>> pp = Preprocessor()
    >>> print(pp.run("#define SQ(x) ((x) * (x))\\n#if (N % 4) != 0\\nbad\\n#else\\nout[0] = SQ(a + 1);\\n#endif",
    ...              Source("body", "")))
    <BLANKLINE>
    <BLANKLINE>
    <BLANKLINE>
    <BLANKLINE>
    out[0] = ((a + 1) * (a + 1));
    <BLANKLINE>

What it knows:

- ``#define`` (object- and function-like, variadic, ``#`` and ``##``), ``#undef``;
- ``#if``/``#ifdef``/``#ifndef``/``#elif``/``#else``/``#endif`` with C's integer arithmetic
  and ``defined``. A name that is not a macro is 0 there -- also a template parameter of
  the kernel (MLX passes template arguments as C++ template parameters, which the
  preprocessor never sees: ``#if (D % 4) != 0`` is false on the GPU whatever ``D`` is);
- ``#pragma`` and ``_Pragma("...")`` (hints such as ``clang loop unroll(full)``: dropped),
  ``#include`` of Metal's standard headers (``<metal_stdlib>``, ``<metal_*>``) and of
  MLX's ``utils.h`` (its contents are always there), ``#error``; other includes are an
  error naming the file;
- predefined macros: ``__METAL_VERSION__`` (:data:`METAL_VERSION`), ``__cplusplus``,
  ``__FAST_MATH__`` (only with ``compile_options={"math_mode": "fast"}``), ``__METAL__``;
  ``METAL_FUNC``, which Metal's own headers define (so ``#ifndef METAL_FUNC`` is false, as on
  the GPU); it expands to itself, the word the parser reads as a qualifier.

Macros defined in the header are visible in the body (MLX puts the header first).
"""
from __future__ import annotations

import re
import warnings

from ...errors import KernelSyntaxError, Source, Span

#: ``__METAL_VERSION__``: Metal 3.2 (macOS 15), what MLX builds with on current systems.
METAL_VERSION = 320

_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\f\v]+|\n)
  | (?P<id>[A-Za-z_]\w*)
  | (?P<num>\.?\d(?:[eEpP][+-]|[\w.])*)
  | (?P<str>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
  | (?P<op>\#\#|\#|\.\.\.|<<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||::|[-+*/%&|^!~<>=?:;,.()\[\]{}])
  | (?P<other>.)
""", re.X | re.S)

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)

_STANDARD_INCLUDE = re.compile(r"^<metal_\w+>$|^[<\"](?:mlx/backend/metal/kernels/)?utils\.h[>\"]$")


class MacroWarning(UserWarning):
    """A ``#if`` reads a kernel template parameter, which the preprocessor sees as 0."""


class Tok:
    """A preprocessing token; ``hide``: the macros that must not expand it again."""
    __slots__ = ("kind", "text", "hide")

    def __init__(self, kind, text, hide=frozenset()):
        self.kind, self.text, self.hide = kind, text, hide

    def __repr__(self):
        return self.text


class Macro:
    def __init__(self, name, params, body, variadic=False):
        self.name, self.params, self.body, self.variadic = name, params, body, variadic


def tokenize(text: str) -> list[Tok]:
    """Preprocessing tokens of ``text`` (whitespace included, as tokens)."""
    return [Tok(m.lastgroup, m.group()) for m in _TOKEN.finditer(text)]


def _blank_comments(text: str) -> str:
    """Comments replaced by spaces (newlines kept), so columns and lines stay."""
    def sub(m):
        s = m.group()
        if s[0] in "\"'":
            return s
        return "".join(c if c == "\n" else " " for c in s)
    return _COMMENT.sub(sub, text)


class _Err(Exception):
    def __init__(self, msg, col=0, hint=None):
        super().__init__(msg)
        self.msg, self.col, self.hint = msg, col, hint


class Preprocessor:
    """One translation unit's macro table (the header's, then the body's).

    ``math_mode``: MLX's compile option (``"fast"`` defines ``__FAST_MATH__``)."""

    def __init__(self, math_mode: str = "safe", template_names=()):
        self.macros: dict[str, Macro] = {}
        self.template_names = set(template_names)   # for the warning when #if reads one
        self._where = ""
        for name, val in (("__METAL_VERSION__", str(METAL_VERSION)), ("__cplusplus", "201402L"),
                          ("__METAL__", "1"), ("__cpp_variable_templates", "201304L")):
            self.macros[name] = Macro(name, None, tokenize(val))
        if math_mode == "fast":
            self.macros["__FAST_MATH__"] = Macro("__FAST_MATH__", None, tokenize("1"))
        # <metal_stdlib> defines METAL_FUNC (inline, always inlined): code copied from MLX
        # guards its own definition with #ifndef METAL_FUNC, which Metal then skips. Here it
        # stays the word the parser blanks as a qualifier (hide sets stop the recursion).
        self._metal_func = self.macros["METAL_FUNC"] = Macro("METAL_FUNC", None, tokenize("METAL_FUNC"))

    # -- the whole text ------------------------------------------------------------------
    def run(self, text: str, src: Source) -> str:
        """``text`` preprocessed; the same number of lines. Errors at ``src``'s lines."""
        text = _blank_comments(text)
        if "#" not in text and not any(m in text for m in self._names()):
            return text
        lines = text.split("\n")
        out: list[str] = []
        stack: list[list] = []      # per open #if: [this branch taken, some branch taken, else seen]
        pending: list[str] = []     # text lines waiting for expansion (a call may span lines)
        pending_first = 0
        i = 0
        while i < len(lines):
            # a logical line: physical lines joined by backslash-newline (blanks between the
            # backslash and the newline too, as clang and GCC join them, with a warning)
            j = i
            logical = lines[i]
            while logical.rstrip(" \t").endswith("\\") and j + 1 < len(lines):
                j += 1
                logical = logical.rstrip(" \t")[:-1] + " " + lines[j]
            active = all(s[0] for s in stack)
            if logical.lstrip().startswith("#"):
                if pending:
                    out.extend(self._expand_block(pending, src, pending_first))
                    pending = []
                try:
                    self._where = f"{src.name}, line {src.first_line + i}"
                    self._directive(logical.lstrip()[1:].strip(), stack, active)
                except _Err as e:
                    col = len(logical) - len(logical.lstrip())
                    raise KernelSyntaxError(e.msg, Span(src, src.first_line + i, col, src.first_line + i,
                                                        len(lines[i])), hint=e.hint) from None
                out.extend([""] * (j - i + 1))
            elif not active:
                out.extend([""] * (j - i + 1))
            else:
                if not pending:
                    pending_first = i
                pending.extend(lines[i:j + 1])
            i = j + 1
        if pending:
            out.extend(self._expand_block(pending, src, pending_first))
        if stack:
            raise KernelSyntaxError("#if without #endif", Span(src, src.first_line + len(lines) - 1, 0))
        return "\n".join(out)

    def _names(self):
        # (METAL_FUNC as predefined changes no text: no reason to preprocess)
        return [n for n, m in self.macros.items() if not n.startswith("__") and m is not self._metal_func] + ["_Pragma"]

    # -- directives ----------------------------------------------------------------------
    def _directive(self, d: str, stack: list, active: bool):
        m = re.match(r"(\w*)\s*(.*)$", d, re.S)
        name, rest = m.group(1), m.group(2).strip()
        if name in ("if", "ifdef", "ifndef"):
            if not active:
                stack.append([False, True, False])
                return
            if name == "if":
                v = self._eval(rest)
            else:
                # clang takes the first name and only warns about extra tokens after it
                # ("#ifdef A || B" tests A): do the same rather than refuse real code
                m = re.match(r"[A-Za-z_]\w*", rest)
                if not m:
                    raise _Err(f"#{name} needs a macro name")
                v = (m.group() in self.macros) == (name == "ifdef")
            stack.append([bool(v), bool(v), False])
            return
        if name in ("elif", "else", "endif"):
            if not stack:
                raise _Err(f"#{name} without #if")
            top = stack[-1]
            if name == "endif":
                stack.pop()
                return
            if top[2]:
                raise _Err(f"#{name} after #else")
            outer = all(s[0] for s in stack[:-1])
            if name == "else":
                top[2] = True
                top[0] = outer and not top[1]
            else:
                top[0] = outer and not top[1] and bool(self._eval(rest))
            top[1] = top[1] or top[0]
            return
        if not active or name == "":
            return
        if name == "define":
            self._define(rest)
        elif name == "undef":
            self.macros.pop(rest.split()[0] if rest else "", None)
        elif name == "pragma" or name in ("line", "warning"):
            return            # hints (unroll, METAL internals), line markers, warnings
        elif name == "include":
            if "MetalPerformancePrimitives" in rest:
                # Apple's closed Metal 4 library: nothing to paste, so say what to use instead
                raise _Err(f"#include {rest}: Metal Performance Primitives (Metal 4's tensor_ops: "
                           "tensor, matmul2d, cooperative tensors) are not supported: metalbench has "
                           "no simulator or CUDA version of them",
                           hint="write the tile product with simdgroup_matrix<T, 8, 8> "
                                "(simdgroup_load, simdgroup_multiply_accumulate, simdgroup_store), "
                                "which metalbench runs on every backend")
            if not _STANDARD_INCLUDE.match(rest):
                raise _Err(f"#include {rest}: metalbench knows Metal's standard headers (<metal_stdlib>, "
                           "<metal_*>) and MLX's utils.h only",
                           hint="paste the included code into header= instead")
        elif name == "error":
            raise _Err(f"#error {rest}")
        else:
            raise _Err(f"unknown preprocessor directive #{name}")

    def _define(self, rest: str):
        m = re.match(r"([A-Za-z_]\w*)(\()?", rest)
        if not m:
            raise _Err("#define needs a macro name")
        name = m.group(1)
        if m.group(2):
            close = rest.find(")", m.end())
            if close < 0:
                raise _Err(f"missing ')' in the parameters of macro '{name}'")
            params = [p.strip() for p in rest[m.end():close].split(",") if p.strip()]
            variadic = bool(params) and params[-1] == "..."
            if variadic:
                params[-1] = "__VA_ARGS__"
            body = rest[close + 1:]
            self.macros[name] = Macro(name, params, self._strip(tokenize(body)), variadic)
        else:
            self.macros[name] = Macro(name, None, self._strip(tokenize(rest[m.end():])))

    @staticmethod
    def _strip(toks):
        while toks and toks[0].kind == "ws":
            toks = toks[1:]
        while toks and toks[-1].kind == "ws":
            toks = toks[:-1]
        return toks

    # -- text ----------------------------------------------------------------------------
    def _expand_block(self, lines: list[str], src: Source, first: int) -> list[str]:
        """Expand the macros of consecutive text lines; an expansion replaces its source
        (which may span lines) and the newlines it covered follow it."""
        text = "\n".join(lines)
        toks = tokenize(text)
        if not any(t.kind == "id" and (t.text in self.macros or t.text == "_Pragma") for t in toks):
            return lines
        try:
            out = self._expand(toks, keep_newlines=True)
        except _Err as e:
            raise KernelSyntaxError(e.msg, Span(src, src.first_line + first, 0), hint=e.hint) from None
        res = "".join(t.text for t in out).split("\n")
        return res

    def _expand(self, toks: list[Tok], keep_newlines=False) -> list[Tok]:
        """Macro expansion with hide sets (C's rescanning rules)."""
        out: list[Tok] = []
        inp = list(reversed(toks))       # a stack: rescanned text is pushed back
        while inp:
            t = inp.pop()
            if t.kind != "id":
                out.append(t)
                continue
            if t.text == "_Pragma":
                k = self._skip_ws(inp)
                if k is not None and inp[k].text == "(":
                    args, close, n_nl = self._args(inp, k, "_Pragma")
                    out.append(Tok("ws", "\n" * n_nl if keep_newlines and n_nl else " "))
                    continue
                out.append(t)
                continue
            mac = self.macros.get(t.text)
            if mac is None or t.text in t.hide:
                out.append(t)
                continue
            if mac.params is None:
                body = [Tok(b.kind, b.text, b.hide | t.hide | {mac.name}) for b in mac.body]
                inp.extend(reversed(self._paste(body)))
                continue
            k = self._skip_ws(inp)
            if k is None or inp[k].text != "(":
                out.append(t)            # a function-like macro's name without arguments
                continue
            args, close, n_nl = self._args(inp, k, mac.name)
            if len(args) == 1 and not args[0] and not mac.params:
                args = []
            if mac.variadic:
                n = len(mac.params) - 1
                if len(args) < n:
                    raise _Err(f"macro '{mac.name}' needs at least {n} arguments, got {len(args)}")
                rest = args[n:]
                va: list[Tok] = []
                for a_i, a in enumerate(rest):
                    if a_i:
                        va.append(Tok("op", ","))
                    va.extend(a)
                args = args[:n] + [va]
            elif len(args) != len(mac.params):
                raise _Err(f"macro '{mac.name}' takes {len(mac.params)} arguments, got {len(args)}")
            hide = (t.hide & close.hide) | {mac.name}
            body = self._substitute(mac, args, hide)
            if keep_newlines and n_nl:
                out.append(Tok("ws", ""))
                body = body + [Tok("ws", "\n" * n_nl, hide)]
            inp.extend(reversed(body))
        return out

    @staticmethod
    def _skip_ws(inp):
        k = len(inp) - 1
        while k >= 0 and inp[k].kind == "ws":
            k -= 1
        return k if k >= 0 else None

    def _args(self, inp, k, name):
        """Pop the arguments of a call whose '(' is ``inp[k]``: (args, ')' token, newlines)."""
        n_nl = sum(x.text.count("\n") for x in inp[k:])
        del inp[k:]
        args: list[list[Tok]] = [[]]
        depth = 0
        while inp:
            t = inp.pop()
            n_nl += t.text.count("\n") if t.kind == "ws" else 0
            if t.text == "(":
                depth += 1
            elif t.text == ")":
                if depth == 0:
                    return [self._strip(a) for a in args], t, n_nl
                depth -= 1
            elif t.text == "," and depth == 0:
                args.append([])
                continue
            args[-1].append(t if t.kind != "ws" else Tok("ws", " ", t.hide))
        raise _Err(f"unterminated call of macro '{name}'")

    def _substitute(self, mac: Macro, args, hide) -> list[Tok]:
        params = {p: i for i, p in enumerate(mac.params)}
        body = mac.body
        out: list[Tok] = []
        expanded: dict[int, list[Tok]] = {}
        i = 0
        while i < len(body):
            b = body[i]
            if b.text == "#" and mac.params is not None:
                j = i + 1
                while j < len(body) and body[j].kind == "ws":
                    j += 1
                if j < len(body) and body[j].text in params:
                    out.append(Tok("str", _stringize(args[params[body[j].text]]), hide))
                    i = j + 1
                    continue
            if b.kind == "id" and b.text in params:
                a = args[params[b.text]]
                near_paste = _next_text(body, i, 1) == "##" or _next_text(body, i, -1) == "##"
                if near_paste:
                    out.extend(Tok(x.kind, x.text, x.hide) for x in a)
                    if not a:
                        out.append(Tok("placemarker", ""))
                else:
                    idx = params[b.text]
                    if idx not in expanded:
                        expanded[idx] = self._expand([Tok(x.kind, x.text, x.hide) for x in a])
                    out.extend(Tok(x.kind, x.text, x.hide) for x in expanded[idx])
                i += 1
                continue
            out.append(Tok(b.kind, b.text, b.hide))
            i += 1
        return [Tok(x.kind, x.text, x.hide | hide) for x in self._paste(out) if x.kind != "placemarker"]

    @staticmethod
    def _paste(toks: list[Tok]) -> list[Tok]:
        out: list[Tok] = []
        i = 0
        while i < len(toks):
            t = toks[i]
            if t.text == "##" and out:
                while out and out[-1].kind == "ws":
                    out.pop()
                j = i + 1
                while j < len(toks) and toks[j].kind == "ws":
                    j += 1
                if j < len(toks):
                    left = out.pop() if out else Tok("placemarker", "")
                    new = tokenize(left.text + toks[j].text)
                    kind = new[0].kind if len(new) == 1 else "other"
                    out.append(Tok(kind if left.text + toks[j].text else "placemarker",
                                   left.text + toks[j].text, left.hide & toks[j].hide))
                    i = j + 1
                    continue
            out.append(t)
            i += 1
        return out

    # -- #if expressions -----------------------------------------------------------------
    def _eval(self, text: str) -> int:
        toks = [t for t in tokenize(text)]
        # `defined X` / `defined(X)` before expansion
        resolved: list[Tok] = []
        i = 0
        while i < len(toks):
            t = toks[i]
            if t.kind == "id" and t.text == "defined":
                j = i + 1
                while j < len(toks) and toks[j].kind == "ws":
                    j += 1
                paren = j < len(toks) and toks[j].text == "("
                if paren:
                    j += 1
                    while j < len(toks) and toks[j].kind == "ws":
                        j += 1
                if j >= len(toks) or toks[j].kind != "id":
                    raise _Err("'defined' needs a macro name")
                resolved.append(Tok("num", "1" if toks[j].text in self.macros else "0"))
                j += 1
                if paren:
                    while j < len(toks) and toks[j].kind == "ws":
                        j += 1
                    if j >= len(toks) or toks[j].text != ")":
                        raise _Err("missing ')' after 'defined'")
                    j += 1
                i = j
                continue
            resolved.append(t)
            i += 1
        items = [t for t in self._expand(resolved) if t.kind != "ws"]
        if not items:
            raise _Err("#if needs an expression")
        seen = [t.text for t in items if t.kind == "id" and t.text in self.template_names]
        if seen:
            warnings.warn(f"{self._where}: '{seen[0]}' in #if is a template parameter, not a macro: the "
                          "preprocessor reads it as 0, as Metal's does; test it with a plain if (the compiler "
                          "removes the dead branch), or #define it in the header", MacroWarning, stacklevel=2)
        return _IfExpr(items).value()


def _next_text(body, i, step):
    j = i + step
    while 0 <= j < len(body) and body[j].kind == "ws":
        j += step
    return body[j].text if 0 <= j < len(body) else None


def _stringize(toks) -> str:
    s = "".join(" " if t.kind == "ws" else t.text for t in toks).strip()
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


_BINARY = {"*": 10, "/": 10, "%": 10, "+": 9, "-": 9, "<<": 8, ">>": 8, "<": 7, ">": 7, "<=": 7, ">=": 7,
           "==": 6, "!=": 6, "&": 5, "^": 4, "|": 3, "&&": 2, "||": 1}


class _IfExpr:
    """C's ``#if`` arithmetic: intmax_t / uintmax_t (64 bits); names that are not macros
    are 0, ``true`` is 1."""

    def __init__(self, toks):
        self.t, self.i = toks, 0

    def value(self) -> int:
        v, _ = self.cond()
        if self.i != len(self.t):
            raise _Err(f"unexpected '{self.t[self.i].text}' in a #if expression")
        return v

    def peek(self):
        return self.t[self.i].text if self.i < len(self.t) else None

    def take(self):
        t = self.t[self.i]
        self.i += 1
        return t

    def cond(self):
        c, cu = self.binary(1)
        if self.peek() == "?":
            self.take()
            a, au = self.cond()
            if self.peek() != ":":
                raise _Err("missing ':' in a #if expression")
            self.take()
            b, bu = self.cond()
            u = au or bu
            return _wrap(a if c else b, u), u
        return c, cu

    def binary(self, min_prec):
        a, au = self.unary()
        while True:
            op = self.peek()
            p = _BINARY.get(op)
            if p is None or p < min_prec:
                return a, au
            self.take()
            if op == "&&":
                b, _ = self.binary(p + 1)
                a, au = int(bool(a) and bool(b)), False
                continue
            if op == "||":
                b, _ = self.binary(p + 1)
                a, au = int(bool(a) or bool(b)), False
                continue
            b, bu = self.binary(p + 1)
            u = au or bu if op not in ("<<", ">>") else au
            a, au = _binop(op, a, b, u), (u if op not in ("<", ">", "<=", ">=", "==", "!=") else False)

    def unary(self):
        t = self.peek()
        if t is None:
            raise _Err("incomplete #if expression")
        if t in ("+", "-", "~", "!"):
            self.take()
            v, u = self.unary()
            if t == "-":
                return _wrap(-v, u), u
            if t == "~":
                return _wrap(~v, u), u
            if t == "!":
                return int(not v), False
            return v, u
        if t == "(":
            self.take()
            v, u = self.cond()
            if self.peek() != ")":
                raise _Err("missing ')' in a #if expression")
            self.take()
            return v, u
        tok = self.take()
        if tok.kind == "num":
            return _number(tok.text)
        if tok.kind == "str" and tok.text.startswith("'"):
            body = tok.text[1:-1]
            return (ord(body.encode().decode("unicode_escape")) if body else 0), False
        if tok.kind == "id":
            return (1 if tok.text == "true" else 0), False
        raise _Err(f"unexpected '{tok.text}' in a #if expression")


def _number(text):
    m = re.fullmatch(r"(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9]\d*)([uUlL]*)", text)
    if not m:
        raise _Err(f"'{text}' is not an integer (#if arithmetic is on integers)")
    s = m.group(1)
    v = int(s, 16) if s[:2] in ("0x", "0X") else int(s[2:], 2) if s[:2] in ("0b", "0B") else \
        int(s, 8) if s.startswith("0") and len(s) > 1 else int(s)
    u = "u" in m.group(2).lower() or v >= 2**63
    return _wrap(v, u), u


def _wrap(v, unsigned):
    v &= (1 << 64) - 1
    if not unsigned and v >= 1 << 63:
        v -= 1 << 64
    return v


def _binop(op, a, b, u):
    if u:
        a, b = a & ((1 << 64) - 1), b & ((1 << 64) - 1)
    if op in ("/", "%"):
        if b == 0:
            raise _Err("division by zero in a #if expression")
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
        return _wrap(q if op == "/" else a - q * b, u)
    r = {"*": lambda: a * b, "+": lambda: a + b, "-": lambda: a - b, "<<": lambda: a << (b & 63),
         ">>": lambda: a >> (b & 63), "&": lambda: a & b, "^": lambda: a ^ b, "|": lambda: a | b,
         "<": lambda: int(a < b), ">": lambda: int(a > b), "<=": lambda: int(a <= b),
         ">=": lambda: int(a >= b), "==": lambda: int(a == b), "!=": lambda: int(a != b)}[op]()
    return _wrap(r, u) if op not in ("<", ">", "<=", ">=", "==", "!=") else r
