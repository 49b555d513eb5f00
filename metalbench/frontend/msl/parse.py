"""Parsing MSL with tree-sitter-cpp: the masking that lets the C++ grammar read Metal
(address-space qualifiers blanked, ambiguous ``<`` and keyword casts respelled, all at
the same length so lines and columns stay exact) and syntax errors at the user's line.

tree-sitter reports byte columns; non-ASCII characters are blanked before parsing, so
byte columns are character columns::

    >>> from metalbench.errors import Source
    >>> tree, code, quals = _parse("device float* p = x;", Source("b", "device float* p = x;"), 1, True)
    >>> code.splitlines()[1], quals[16]
    ('       float* p = x;', 'device')
"""
from __future__ import annotations

import re

import tree_sitter as ts
import tree_sitter_cpp as tscpp

from ...errors import KernelSyntaxError, Source, Span


_LANG = ts.Language(tscpp.language())


_PARSER = ts.Parser(_LANG)


# (``__attribute__((__always_inline__))`` is how Metal's headers spell METAL_FUNC's attribute)
_QUAL_RE = re.compile(r"\b(device|threadgroup|constant|thread|METAL_FUNC|constexpr|static|"
                      r"__attribute__\(\((?:__)?always_inline(?:__)?\)\))(?![A-Za-z0-9_])(?=\s*[A-Za-z_&*(])")


# A member function's address-space qualifier: ``void f() const thread {``, ``T() thread : a(0)``.
_METHOD_QUAL_RE = re.compile(r"(?<=[)\s])(thread|device|threadgroup|constant)(?=\s*(?:noexcept\b\s*)?[{:;])")


_TEMPLATE_NAMES = {"static_cast", "reinterpret_cast", "const_cast", "mb_view", "as_type", "bit_cast", "atomic", "vec",
                   "simdgroup_matrix", "texture1d", "texture1d_array", "texture2d", "texture2d_array", "texture3d",
                   "texturecube", "texturecube_array", "texture2d_ms", "depth2d", "depth2d_array", "depthcube",
                   "texture_buffer", "array_ref", "packed_vec", "make_filled_simdgroup_matrix", "tuple", "pair",
                   "numeric_limits", "template", "include", "Limits", "metal", "array", "matrix",
                   "complex_t"}


_LT_RE = re.compile(r"([A-Za-z_0-9]+)(\s*)<(?![<])")


def _swap_less(text: str, out: list, templates: set) -> set:
    """C++ reads ``v < a && v > b`` as a template ``v<...>``; MSL bodies never mean that
    unless ``v`` names a template. Turn such ``<`` into ``>`` (same length, same
    precedence) and remember where, so the translator reads them back as ``<``."""
    swapped = set()
    for m in _LT_RE.finditer(text):
        word = m.group(1)
        pos = m.end(2)
        if word in templates or word in _TEMPLATE_NAMES:
            continue
        line_start = text.rfind("\n", 0, pos) + 1
        if text[line_start:pos].lstrip().startswith("#"):
            continue
        if pos > 0 and text[pos - 1] == "<":
            continue
        out[pos] = ">"
        swapped.add(pos)
    return swapped


_KEYWORD_CASTS = {"short": "_MBsh", "long": "_MBl", "unsigned": "_MBunsig", "signed": "_MBsig"}


_KEYWORD_CAST_TYPES = {"_MBsh": "short", "_MBl": "long", "_MBunsig": "uint", "_MBsig": "int"}


_KEYWORD_CAST_RE = re.compile(r"(?<![\w])(short|long|unsigned|signed)(?=\s*\()")


_TYPE_WORD_BEFORE = re.compile(r"(?:\b(?:unsigned|signed|long|short|const)\s*)$")


def _respell_keyword_casts(text: str, out: list) -> None:
    for m in _KEYWORD_CAST_RE.finditer(text):
        if _TYPE_WORD_BEFORE.search(text, 0, m.start()):
            continue                       # ``unsigned short(...)`` is not a functional cast
        out[m.start():m.end()] = _KEYWORD_CASTS[m.group(1)]


# An explicit call of a conversion operator, ``this->operator half()``, which the C++ grammar
# cannot read: respelled (same length) as a call of the member ``_MBcv___half`` (see CONV_CALL).
_CONV_CALL_RE = re.compile(r"(?:\.|->)\s*(operator\s+)(?=[A-Za-z_]\w*\s*\()")


CONV_CALL = "_MBcv"


def _respell_conversion_calls(text: str, out: list) -> None:
    for m in _CONV_CALL_RE.finditer(text):
        n = m.end(1) - m.start(1)
        out[m.start(1):m.end(1)] = CONV_CALL + "_" * (n - len(CONV_CALL))


# The disambiguator in ``Kernel::template gemm_loop<true>(...)`` (required when ``Kernel``
# depends on a template parameter): the grammar wraps the name in a dependent_name node that
# the translator does not read, and the keyword changes nothing in what is called, so it is
# blanked (same length) and the call reads as ``Kernel::gemm_loop<true>(...)``.
_SCOPE_TEMPLATE_RE = re.compile(r"::\s*(template)(?=\s+[A-Za-z_])")


# C++'s alternative tokens (``i < n and x[i] > 0``, ``not p``, ``a bitand m``, ``v xor_eq k``):
# keywords for the operators they spell, respelled as those operators padded with blanks (same
# length), so ``and``/``or`` are the short-circuit ``&&``/``||`` everywhere the translator reads them.
_ALT_TOKENS = {"and": "&&", "or": "||", "not": "!", "bitand": "&", "bitor": "|", "xor": "^", "compl": "~",
               "not_eq": "!=", "and_eq": "&=", "or_eq": "|=", "xor_eq": "^="}
_ALT_TOKEN_RE = re.compile(r"(?<![\w.$])(" + "|".join(sorted(_ALT_TOKENS, key=len, reverse=True)) + r")(?![\w$])")


def _respell_alternative_tokens(text: str, out: list) -> None:
    for m in _ALT_TOKEN_RE.finditer(text):
        op = _ALT_TOKENS[m.group(1)]
        out[m.start():m.end()] = op + " " * (m.end() - m.start() - len(op))


def _in_parentheses(text: str, pos: int) -> bool:
    """Whether ``pos`` lies inside an open ``(`` of its statement (a parameter list, a
    call), looking back no further than a ``;``, ``{`` or ``}`` outside parentheses.

    >>> _in_parentheses("void f(int a = {}", 15), _in_parentheses("float a[3] = {}, b", 11)
    (True, False)
    >>> _in_parentheses("void f(int a = {}, int b = {}", 27)
    True
    """
    depth = 0
    before = re.sub(r"\{\s*\}", lambda m: " " * len(m.group()), text[:pos])   # other `= {}`s
    for c in reversed(before):
        if c == ")":
            depth += 1
        elif c == "(":
            if depth == 0:
                return True
            depth -= 1
        elif c in ";{}" and depth == 0:
            return False
    return False


def _mask(text: str, templates: set = frozenset()) -> tuple[str, dict[int, str]]:
    """Blank out Metal qualifiers (same length, so positions stay) and remember them
    by byte offset; also disambiguate ``<`` (see :func:`_swap_less`), remembered
    under the key ``"<"``, and respell keyword functional casts (``short(x)``)."""
    quals: dict = {}
    out = list(text)
    quals["<"] = _swap_less(text, out, templates)
    # a default argument `= {}` (value-initialised) reads as `= 00`; remembered under "{}"
    # (only inside a parameter list: `float a[3] = {}, b[2];` declares arrays)
    quals["{}"] = set()
    for m in re.finditer(r"=\s*(\{\s*\})(?=\s*[,)])", text):
        if m.end(1) - m.start(1) == 2 and _in_parentheses(text, m.start()):
            out[m.start(1):m.end(1)] = "00"
            quals["{}"].add(m.start(1))
    _respell_keyword_casts(text, out)
    _respell_conversion_calls(text, out)
    _respell_alternative_tokens(text, out)
    for m in _SCOPE_TEMPLATE_RE.finditer(text):
        out[m.start(1):m.end(1)] = " " * len("template")

    def blank(m):
        word = m.group(1)
        quals[m.start(1)] = word
        for k in range(m.start(1), m.end(1)):
            out[k] = " "
    # attributes keep their words: [[threadgroup(0)]], [[thread_index_in_simdgroup]]
    attrs = [(m.start(), m.end()) for m in re.finditer(r"\[\[.*?\]\]", text, re.S)]
    for m in list(_QUAL_RE.finditer(text)) + list(_METHOD_QUAL_RE.finditer(text)):
        if not any(a <= m.start(1) < b for a, b in attrs):
            blank(m)
    return "".join(out), quals


def _first_error(node):
    if node.is_missing or node.type == "ERROR":
        return node
    if not node.has_error:
        return None
    for c in node.children:
        e = _first_error(c)
        if e is not None:
            return e
    return node


_MAYBE_MALFORMED = re.compile(r"\?\s*:|\[\s*\]")


def _malformed(root):
    """The first node the grammar accepts that translation cannot, with the message: ``a[]``
    as an expression (no index) and ``c ?: b`` (GNU's "elvis", no middle operand, which clang
    and so Metal accept)."""
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "subscript_expression":
            idx = n.child_by_field_name("indices")
            if idx is not None and not idx.named_children:
                return n, "syntax error: an index is missing between [ and ]"
        elif n.type == "conditional_expression" and n.child_by_field_name("consequence") is None:
            return n, ("GNU's 'c ?: b' (no middle operand, a clang extension) is not supported by the simulator; "
                       "write 'c ? c : b' (" + _METAL_ONLY + ")")
        stack.extend(reversed(n.children))
    return None


def _parse(text: str, src: Source, line_offset: int, wrap: bool, templates=frozenset()):
    masked, quals = _mask(text, templates)
    if not text.isascii():
        # tree-sitter works in bytes; keep positions aligned with characters
        masked = "".join(c if ord(c) < 128 else " " for c in masked)
    prefix = "void __body() {\n" if wrap else ""
    code = prefix + masked + ("\n}\n" if wrap else "\n")
    tree = _PARSER.parse(code.encode())
    shift = len(prefix)
    swapped = {k + shift for k in quals.pop("<")}
    braces = {k + shift for k in quals.pop("{}")}
    quals = {k + shift: v for k, v in quals.items()}
    quals["<"] = swapped
    quals["{}"] = braces
    err = _first_error(tree.root_node)
    bad = _malformed(tree.root_node) if err is None and _MAYBE_MALFORMED.search(masked) else None
    if bad is not None:
        n, what = bad
        line = n.start_point[0] - line_offset + src.first_line
        end = n.end_point[1] if n.start_point[0] == n.end_point[0] else None
        raise KernelSyntaxError(what, Span(src, line, n.start_point[1], line, end))
    if err is not None:
        line = err.start_point[0] - line_offset + src.first_line
        col = err.start_point[1]
        if err.is_missing:
            msg = f"syntax error: expected '{err.type}'"
        else:
            bad = code[err.start_byte:err.end_byte].strip().splitlines()
            tok = bad[0][:30] if bad else ""
            msg = f"syntax error near '{tok}'" if tok else "syntax error"
        if wrap and err.start_byte < shift:
            # the error node starts in metalbench's wrapper (the whole body failed to parse):
            # point at the body's first token instead
            stripped = text.lstrip()
            before = text[:len(text) - len(stripped)]
            line = src.first_line + before.count("\n")
            col = len(before) - (before.rfind("\n") + 1)
            tok = stripped.splitlines()[0][:30] if stripped else ""
            msg = f"syntax error near '{tok}'" if tok else "syntax error: the kernel source is empty"
            err_len = len(tok) or 1
        else:
            err_len = None
            msg += _missing_semicolon(src, line, col)
        if wrap and line > src.first_line + len(text.splitlines()) - 1:
            line = src.first_line + max(0, len(text.splitlines()) - 1)
            col = len(src.line(line))
            msg = "syntax error: unexpected end of the kernel source (unbalanced braces or a missing ';'?)"
        end = col + max(1, err.end_byte - err.start_byte) if err.start_point[0] == err.end_point[0] else None
        if err_len is not None:
            end = col + err_len
        hint = "the source is the body of an MSL kernel, as mx.fast.metal_kernel takes it"
        whole = _KERNEL_FUNCTION.search(text) if wrap else None
        if whole is not None:       # a whole `kernel void f(...) {...}` given as the body
            line = src.first_line + text.count("\n", 0, whole.start())
            col = whole.start() - (text.rfind("\n", 0, whole.start()) + 1)
            raise KernelSyntaxError(
                f"the source holds a whole kernel function ('{whole.group(0).strip()}...'): "
                "mx.fast.metal_kernel takes only a kernel's body, and writes the signature itself from "
                "input_names and output_names", Span(src, line, col, line, col + len(whole.group(0).rstrip("( "))),
                hint="pass the statements inside the function's braces as source= (inputs and outputs by "
                     "their names, thread_position_in_grid & co. as variables) and the helper functions as header=")
        what = _enclosing_class(tree.root_node, err, code)
        if what is not None:
            kind, name, cline = what
            msg += f", in the {kind} '{name}' (line {cline - line_offset + src.first_line})"
            hint = f"metalbench's C++ grammar stopped here; if Metal compiles it, {_METAL_ONLY}"
        raise KernelSyntaxError(msg, Span(src, line, col, line, end), hint=hint)
    return tree, code, quals


_METAL_ONLY = "it runs unchanged on backend='metal' only"
# a kernel function's definition (what a body given to metal_kernel must not be)
_KERNEL_FUNCTION = re.compile(r"(?:\[\[\s*kernel\s*\]\]\s*|\bkernel\s+)void\s+\w+\s*\(")


def _missing_semicolon(src: Source, line: int, col: int) -> str:
    """`` (a missing ';' at the end of line N?)`` when the error is the first token of its line
    and the code line before it ends where a statement may (``uint i = tid.x`` then
    ``out[i] = ...``): the parser stumbles on the next line, the mistake is on the one before."""
    try:
        here = src.line(line)
    except Exception:   # noqa: BLE001 - no text to look at
        return ""
    if here[:col].strip():
        return ""
    prev = line - 1
    while prev >= src.first_line:
        t = re.sub(r"//.*", "", src.line(prev)).strip()
        if t and not t.startswith("#"):
            break
        prev -= 1
    else:
        return ""
    if t.endswith((";", "{", "}", ",", "(", "[", "\\", ":", "=", "+", "-", "*", "/", "%", "&", "|", "^",
                   "<", ">", "!", "?", "*/")):
        return ""
    return f" (a missing ';' at the end of line {prev}?)"


def _enclosing_class(root, err, code):
    """(kind, name, 0-based line) of a struct/class (template) that holds the error, if any:
    the C++ grammar often stops inside one at a Metal-only qualifier."""
    m = None
    for n in root.children:
        if n.start_byte <= err.start_byte < max(n.end_byte, err.start_byte + 1):
            m = n
            break
    if m is None or m.type == "ERROR":   # (the parser gave up across several declarations: no one class)
        return None
    head = code[m.start_byte:min(m.end_byte, m.start_byte + 400)]
    hit = re.search(r"\b(struct|class|union)\s+(?:alignas\s*\([^)]*\)\s*)?([A-Za-z_]\w*)", head)
    if hit is None:
        return None
    kind = hit.group(1) + (" template" if head.lstrip().startswith("template") else "")
    return kind, hit.group(2), m.start_point[0]
