"""MSL kernel bodies (what ``mx.fast.metal_kernel`` takes) -> IR, with tree-sitter-cpp.

MLX users write the *body* of a Metal kernel plus an optional header; MLX writes the
signature. This front end parses both the same way and produces a
:class:`~metalbench.ir.KernelIR` for the simulator and the CUDA printer::

    >>> from metalbench import types as T
    >>> k = translate_kernel("myexp", "uint i = thread_position_in_grid.x;\\n"
    ...                      "out[i] = metal::exp(inp[i]);",
    ...                      inputs=[("inp", T.float32, 1)], outputs=[("out", T.float32, 1)])
    >>> print(ir.dump(k.body))
    uint32 i = thread_position_in_grid.x
    out[i] = exp(inp[i])

How the C++ grammar copes with Metal: the address-space qualifiers (``device``,
``threadgroup``, ``constant``, ``thread``) are masked to spaces of the same length
before parsing (so lines and columns stay exact) and remembered by position; the
body is wrapped as ``void __body() {`` on its own line, so body line n is tree line n+1.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter as ts
import tree_sitter_cpp as tscpp

from .. import ir
from .. import types as T
from ..builtins import registry
from ..errors import KernelNameError, KernelSyntaxError, KernelTypeError, Source, Span
from ..semantics import MSL, Semantics
from ..semantics.folding import coerce_value, const_value, fold

_LANG = ts.Language(tscpp.language())
_PARSER = ts.Parser(_LANG)

_QUAL_RE = re.compile(r"\b(device|threadgroup|constant|thread|METAL_FUNC|constexpr|static|"
                      r"__attribute__\(\(always_inline\)\))(?![A-Za-z0-9_])(?=\s*[A-Za-z_&*(])")
_SPACES = ("device", "threadgroup", "constant", "thread")

METAL_ONLY = "it runs unchanged on backend='metal' only"

# MLX's utils.h helpers a body may call, expanded by the front end.
UTILS = ("elem_to_loc", "elem_to_loc_1", "elem_to_loc_2", "elem_to_loc_3", "ceildiv")

# atomic_fetch_add_explicit -> "add", ...: the atomics' MSL names, from the registry
_ATOMIC_FNS = {a: b.extra["op"] for b in registry.all() if b.node == "Atomic" for a in b.msl_aliases}
_ATOMIC_TYPES = {"atomic_int": T.int32, "atomic_uint": T.uint32, "atomic_float": T.float32,
                 "atomic_bool": T.bool_}
_NAMESPACES = ("metal", "precise", "fast", "simd")


# ----------------------------------------------------------------------------- symbols

@dataclass
class Buf:
    """Something indexable: a kernel buffer, a threadgroup/thread/constant array, or a
    buffer parameter of a device function."""
    name: str
    elem: T.ScalarType
    space: str
    shape: tuple | None = None
    atomic: bool = False
    const: bool = False
    ndim: int = 1


@dataclass
class Ptr:
    """A local pointer ``device float* p = x + off``: loads go to ``buf[off + i]``."""
    buf: Buf
    off: ir.Var


@dataclass
class ShapeArr:
    """``x_shape`` (kind="shape") or ``x_strides`` (kind="strides") of kernel input x."""
    buf: str
    ndim: int
    kind: str


@dataclass
class FuncDef:
    node: object            # function_definition
    tparams: list           # [(kind, name)] kind: "type" | "value"
    src: Source
    line_offset: int
    quals: dict


class _TypeName:
    """A template type parameter bound to a type."""

    def __init__(self, t):
        self.t = t


# ----------------------------------------------------------------------------- parsing

_TEMPLATE_NAMES = {"static_cast", "reinterpret_cast", "as_type", "bit_cast", "atomic", "vec",
                   "numeric_limits", "template", "include", "Limits", "metal", "array", "matrix"}
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


# tree-sitter reads ``(short(x) < y)`` as the C cast ``(short)`` and fails; a functional
# cast whose type is a keyword (``short(x)``, ``long(x)``, ``unsigned(x)``, ``signed(x)``)
# is respelled as a same-length reserved identifier that names the type.
_KEYWORD_CASTS = {"short": "_MBsh", "long": "_MBl", "unsigned": "_MBunsig", "signed": "_MBsig"}
_KEYWORD_CAST_TYPES = {"_MBsh": "short", "_MBl": "long", "_MBunsig": "uint", "_MBsig": "int"}
_KEYWORD_CAST_RE = re.compile(r"(?<![\w])(short|long|unsigned|signed)(?=\s*\()")
_TYPE_WORD_BEFORE = re.compile(r"(?:\b(?:unsigned|signed|long|short|const)\s*)$")


def _respell_keyword_casts(text: str, out: list) -> None:
    for m in _KEYWORD_CAST_RE.finditer(text):
        if _TYPE_WORD_BEFORE.search(text, 0, m.start()):
            continue                       # ``unsigned short(...)`` is not a functional cast
        out[m.start():m.end()] = _KEYWORD_CASTS[m.group(1)]


def _mask(text: str, templates: set = frozenset()) -> tuple[str, dict[int, str]]:
    """Blank out Metal qualifiers (same length, so positions stay) and remember them
    by byte offset; also disambiguate ``<`` (see :func:`_swap_less`), remembered
    under the key ``"<"``, and respell keyword functional casts (``short(x)``)."""
    quals: dict = {}
    out = list(text)
    quals["<"] = _swap_less(text, out, templates)
    _respell_keyword_casts(text, out)

    def blank(m):
        word = m.group(1)
        quals[m.start(1)] = word
        for k in range(m.start(1), m.end(1)):
            out[k] = " "
    for m in _QUAL_RE.finditer(text):
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
    quals = {k + shift: v for k, v in quals.items()}
    quals["<"] = swapped
    err = _first_error(tree.root_node)
    if err is not None:
        line = err.start_point[0] - line_offset + src.first_line
        col = err.start_point[1]
        if err.is_missing:
            msg = f"syntax error: expected '{err.type}'"
        else:
            bad = code[err.start_byte:err.end_byte].strip().splitlines()
            tok = bad[0][:30] if bad else ""
            msg = f"syntax error near '{tok}'" if tok else "syntax error"
        if wrap and line > src.first_line + len(text.splitlines()) - 1:
            line = src.first_line + max(0, len(text.splitlines()) - 1)
            col = len(src.line(line))
            msg = "syntax error: unexpected end of the kernel source (unbalanced braces or a missing ';'?)"
        end = col + max(1, err.end_byte - err.start_byte) if err.start_point[0] == err.end_point[0] else None
        raise KernelSyntaxError(msg, Span(src, line, col, line, end),
                                hint="the source is the body of an MSL kernel, as mx.fast.metal_kernel takes it")
    return tree, code, quals


# ----------------------------------------------------------------------------- translator

class Translator:
    def __init__(self, name, src, hsrc, template, atomic_outputs):
        self.name = name
        self.src = src
        self.hsrc = hsrc
        self.template = dict(template)
        self.atomic_outputs = atomic_outputs
        self.functions: dict[str, ir.Function] = {}
        self.func_order: list[ir.Function] = []
        self.funcdefs: dict[str, list[FuncDef]] = {}
        self.globals: list[ir.ArrayDecl] = []
        self.global_syms: dict[str, object] = {}
        self.used_names: set[str] = set()
        self.tg_arrays: list[ir.ArrayDecl] = []
        self.specialising: set = set()
        # per function context
        self.scopes: list[dict] = []
        self.pre: list[ir.Stmt] | None = None
        self.lazy = 0
        self.ret_type = None
        self.in_kernel = True
        self.code = ""
        self.quals: dict = {}
        self.cur_src = src
        self.line_offset = 1
        self.tmp = 0
        self.sem = Semantics(MSL, once=lambda e, span: self.new_tmp(e.type, e, span))

    # -- spans and errors
    def sp(self, node) -> Span:
        off = self.line_offset
        s = self.cur_src
        return Span(s, node.start_point[0] - off + s.first_line, node.start_point[1],
                    node.end_point[0] - off + s.first_line, node.end_point[1])

    def text(self, node) -> str:
        return self.code[node.start_byte:node.end_byte]

    def unsupported(self, node, what):
        raise KernelSyntaxError(f"{what} is not supported by the simulator; {METAL_ONLY}",
                                self.sp(node))

    def type_err(self, node, msg, hint=None):
        raise KernelTypeError(msg, self.sp(node), hint=hint)

    # -- scopes
    def lookup(self, name):
        for sc in reversed(self.scopes):
            if name in sc:
                return sc[name]
        return self.global_syms.get(name)

    def fresh(self, name):
        """A unique IR name for a new local (C allows shadowing; the IR does not)."""
        n, k = name, 1
        while n in self.used_names:
            n = f"{name}_{k}"
            k += 1
        self.used_names.add(n)
        return n

    def new_tmp(self, t, init=None, span=None):
        self.tmp += 1
        v = ir.Var(self.fresh(f"_t{self.tmp}"), t, span=span)
        self.emit_pre(ir.Decl(v, init, span=span), span)
        return v

    def emit_pre(self, stmt, span):
        if self.pre is None or self.lazy:
            raise KernelSyntaxError(
                "this expression has a side effect (++, --, =, compare-exchange) where the "
                f"simulator cannot order it; {METAL_ONLY}", span,
                hint="move it to a statement of its own")
        self.pre.append(stmt)

    # -- types
    def resolve_type(self, node, quals_from=None):
        """The type named by a type node; None for void. Returns (type, atomic)."""
        k = node.type
        txt = self.text(node).strip()
        if k == "primitive_type" and txt == "void":
            return None, False
        if k == "sized_type_specifier":
            txt = " ".join(txt.split())
            if txt in T.BY_MSL:
                return T.BY_MSL[txt], False
            if txt in ("unsigned", "unsigned int"):
                return T.uint32, False
        if k == "qualified_identifier":
            txt = txt.split("::")[-1].strip()
        if k == "template_type":
            nm = self.text(node.child_by_field_name("name"))
            args = node.child_by_field_name("arguments")
            targs = [c for c in args.named_children]
            if nm in ("atomic", "metal::atomic") and len(targs) == 1:
                t, _ = self.resolve_type(_type_of_descriptor(targs[0]))
                return t, True
            if nm in ("vec", "metal::vec") and len(targs) == 2:
                t, _ = self.resolve_type(_type_of_descriptor(targs[0]))
                n = const_value(self.expr(targs[1]))
                return T.vector_of(t, int(n)), False
            self.unsupported(node, f"the type '{txt}'")
        if k == "type_descriptor":
            return self.resolve_type(node.child_by_field_name("type"))
        t = self.named_type(txt)
        if t is not None:
            return t
        if txt in _ATOMIC_TYPES:
            return _ATOMIC_TYPES[txt], True
        raise KernelNameError(f"unknown type '{txt}'", self.sp(node),
                              hint=self._template_hint(txt))

    def named_type(self, txt):
        txt = _KEYWORD_CAST_TYPES.get(txt, txt)
        sym = self.lookup(txt)
        if isinstance(sym, _TypeName):
            return sym.t, False
        if txt in self.template and not isinstance(self.template[txt], (bool, int)):
            return self.template[txt], False
        if txt in ("auto",):
            return "auto", False
        try:
            return T.lookup(txt), False
        except KeyError:
            return None

    def _template_hint(self, name):
        if len(name) <= 2 or name[:1].isupper():
            return f"if '{name}' is a template parameter, pass template=[(\"{name}\", mx.float32)]"
        return None

    def is_type_name(self, node):
        if node.type in ("primitive_type", "sized_type_specifier", "template_type"):
            return True
        if node.type in ("identifier", "type_identifier"):
            txt = self.text(node)
            if isinstance(self.lookup(txt), (ir.Var, Buf, Ptr, ir.Const, ShapeArr)):
                return False
            return self.named_type(txt) is not None
        return False

    def quals_before(self, start, end):
        """Address-space qualifiers masked in the byte range [start, end), the range
        extended back over the blanks the masking left before ``start``."""
        while start > 0 and self.code[start - 1] in " \t\r\n":
            start -= 1
        return [q for p, q in self.quals.items() if p != "<" and start <= p < end]

    # -- kernel
    def translate(self, body, header, inputs, outputs, scalars, shape_use) -> ir.KernelIR:
        params = []
        syms = {}
        for nm, t, nd in inputs:
            if nm in scalars:
                params.append(ir.Param(nm, "scalar", t, 0))
                syms[nm] = ir.Var(nm, t)
            else:
                u = shape_use.get(nm, (False, False, False))
                params.append(ir.Param(nm, "buffer", t, nd, uses_shape=u[0], uses_strides=u[1],
                                       uses_ndim=u[2]))
                syms[nm] = Buf(nm, t, "device", const=True, ndim=nd)
                syms[nm + "_shape"] = ShapeArr(nm, nd, "shape")
                syms[nm + "_strides"] = ShapeArr(nm, nd, "strides")
                syms[nm + "_ndim"] = ir.Const(nd, T.int32)
        for nm, t, nd in outputs:
            params.append(ir.Param(nm, "buffer", t, nd, is_output=True, atomic=self.atomic_outputs))
            syms[nm] = Buf(nm, t, "device", atomic=self.atomic_outputs, ndim=nd)
        self.used_names.update(syms)
        for k, v in self.template.items():
            if isinstance(v, bool):
                syms.setdefault(k, ir.Const(v, T.bool_))
            elif isinstance(v, int):
                syms.setdefault(k, self.sem.const(v, T.int32))
        self.kernel_syms = syms
        self.template_names = set(re.findall(r"template\s*<[^;{]*?>\s*(?:inline\s+|METAL_FUNC\s+|static\s+)*"
                                             r"[\w:<>,\s*&]*?\b(\w+)\s*\(", header))
        if header.strip():
            self.header(header)
        tree, code, quals = _parse(body, self.src, 1, wrap=True, templates=self.template_names)
        self.code, self.quals, self.cur_src, self.line_offset = code, quals, self.src, 1
        fn = tree.root_node.named_children[0]
        self.scopes = [syms]
        self.in_kernel = True
        self.ret_type = None
        stmts = self.block(fn.child_by_field_name("body"))
        body_ir = list(self.tg_arrays) + stmts
        k = ir.KernelIR(self.name, params, body_ir, functions=list(self.func_order),
                        globals=self.globals, source=self.src)
        return k

    # -- header
    def header(self, header):
        tree, code, quals = _parse(header, self.hsrc, 0, wrap=False, templates=self.template_names)
        self.code, self.quals, self.cur_src, self.line_offset = code, quals, self.hsrc, 0
        self.scopes = [self.global_syms]
        self.in_kernel = False
        for node in tree.root_node.named_children:
            self.top_level(node, code, quals)

    def top_level(self, node, code, quals):
        k = node.type
        if k in ("comment", "preproc_include", "preproc_call", "using_declaration",
                 "namespace_alias_definition", "alias_declaration"):
            if k == "alias_declaration":
                nm = self.text(node.child_by_field_name("name"))
                t, _ = self.resolve_type(node.child_by_field_name("type"))
                self.global_syms[nm] = _TypeName(t)
            return
        if k == "preproc_def":
            nm = self.text(node.child_by_field_name("name"))
            val = node.child_by_field_name("value")
            if val is None:
                return
            txt = self.code[val.start_byte:val.end_byte].strip()
            sub = _PARSER.parse(f"auto __v = {txt};".encode())
            # re-evaluate the macro text as an expression in the header's coordinates
            try:
                saved = self.code
                self.code = f"auto __v = {txt};"
                decl = sub.root_node.named_children[0]
                init = decl.child_by_field_name("declarator").child_by_field_name("value")
                c = fold(self.expr(init))
            except Exception:
                c = None
            finally:
                self.code = saved
            if not isinstance(c, ir.Const):
                self.unsupported(node, "a #define that is not a constant")
            self.global_syms[nm] = c
            return
        if k == "type_definition":
            t, _ = self.resolve_type(node.child_by_field_name("type"))
            for d in node.children_by_field_name("declarator"):
                self.global_syms[self.text(d)] = _TypeName(t)
            return
        if k == "function_definition":
            self.add_funcdef(node, [])
            return
        if k == "template_declaration":
            tps = []
            for p in node.child_by_field_name("parameters").named_children:
                if p.type == "type_parameter_declaration":
                    tps.append(("type", self.text(p.named_children[-1])))
                elif p.type == "parameter_declaration":
                    tps.append(("value", self.text(p.child_by_field_name("declarator"))))
                else:
                    self.unsupported(p, "this template parameter")
            inner = [c for c in node.named_children if c.type == "function_definition"]
            if not inner:
                self.unsupported(node, "a template that is not a function")
            self.add_funcdef(inner[0], tps)
            return
        if k == "declaration":
            for st in self.declaration(node, top=True):
                pass
            return
        if k == "expression_statement" and not node.named_children:
            return
        self.unsupported(node, f"'{self.text(node).split(chr(10))[0][:40]}' in the header")

    def add_funcdef(self, node, tps):
        decl = node.child_by_field_name("declarator")
        while decl.type in ("pointer_declarator", "reference_declarator"):
            decl = decl.child_by_field_name("declarator") or decl.named_children[-1]
        nm = self.text(decl.child_by_field_name("declarator"))
        self.funcdefs.setdefault(nm, []).append(
            FuncDef(node, tps, self.cur_src, self.line_offset, self.quals))
        self.funcdef_code = getattr(self, "funcdef_code", {})
        self.funcdef_code[id(node)] = self.code

    # -- statements
    def block(self, node) -> list[ir.Stmt]:
        self.scopes.append({})
        out = []
        try:
            for c in node.named_children:
                out.extend(self.stmt(c))
        finally:
            self.scopes.pop()
        return out

    def body_of(self, node) -> list[ir.Stmt]:
        if node.type == "compound_statement":
            return self.block(node)
        self.scopes.append({})
        try:
            return self.stmt(node)
        finally:
            self.scopes.pop()

    def with_pre(self, fn):
        """Run ``fn`` collecting statements that must precede its result."""
        saved = self.pre
        self.pre = []
        try:
            r = fn()
            return self.pre, r
        finally:
            self.pre = saved

    def stmt(self, node) -> list[ir.Stmt]:
        k = node.type
        sp = self.sp(node)
        if k == "comment":
            return []
        if k == "compound_statement":
            return self.block(node)
        if k == "declaration":
            pre, st = self.with_pre(lambda: self.declaration(node))
            return pre + st
        if k == "expression_statement":
            if not node.named_children:
                return []
            pre, st = self.with_pre(lambda: self.expr_stmt(node.named_children[0]))
            return pre + st
        if k == "if_statement":
            cnode = node.child_by_field_name("condition")
            cexpr = cnode.child_by_field_name("value") or cnode.named_children[-1]
            if cnode.child_by_field_name("initializer") is not None or cexpr.type == "declaration":
                self.unsupported(cnode, "a declaration in an if condition")
            pre, cond = self.with_pre(lambda: self.sem.to_bool(self.expr(cexpr)))
            then = self.body_of(node.child_by_field_name("consequence"))
            alt = node.child_by_field_name("alternative")
            orelse = []
            if alt is not None:
                inner = alt.named_children[-1] if alt.type == "else_clause" else alt
                orelse = self.body_of(inner)
            return pre + [ir.If(cond, then, orelse, span=sp)]
        if k == "for_statement":
            return self.for_stmt(node)
        if k == "while_statement":
            cnode = node.child_by_field_name("condition")
            pre, cond = self.with_pre(lambda: self.sem.to_bool(self.expr(cnode.named_children[-1])))
            body = self.body_of(node.child_by_field_name("body"))
            if pre:
                brk = ir.If(self.sem.unop("!", cond, cond.span), [ir.Break(span=sp)], span=sp)
                return [ir.While(ir.Const(True, T.bool_), pre + [brk] + body, span=sp)]
            return [ir.While(cond, body, span=sp)]
        if k == "do_statement":
            body = self.body_of(node.child_by_field_name("body"))
            cnode = node.child_by_field_name("condition")
            pre, cond = self.with_pre(lambda: self.sem.to_bool(self.expr(cnode.named_children[-1])))
            if pre:
                self.unsupported(cnode, "a side effect in a do-while condition")
            return [ir.While(cond, body, do_while=True, span=sp)]
        if k == "break_statement":
            return [ir.Break(span=sp)]
        if k == "continue_statement":
            return [ir.Continue(span=sp)]
        if k == "return_statement":
            vals = node.named_children
            if self.ret_type is None:
                if vals:
                    self.type_err(node, "a kernel (or void function) cannot return a value")
                return [ir.Return(span=sp)]
            if not vals:
                self.type_err(node, "this function must return a value")
            pre, v = self.with_pre(lambda: self.sem.convert(self.expr(vals[0]), self.ret_type))
            return pre + [ir.Return(v, span=sp)]
        if k in ("switch_statement", "goto_statement", "labeled_statement", "try_statement",
                 "throw_statement"):
            self.unsupported(node, f"'{k.replace('_statement', '')}'")
        if k == "function_definition":
            self.unsupported(node, "a function defined inside the body (put it in header=)")
        self.unsupported(node, f"'{self.text(node).splitlines()[0][:40]}'")

    def for_stmt(self, node):
        sp = self.sp(node)
        self.scopes.append({})
        try:
            init_n = node.child_by_field_name("initializer")
            init = []
            if init_n is not None:
                if init_n.type == "declaration":
                    pre, st = self.with_pre(lambda: self.declaration(init_n))
                else:
                    pre, st = self.with_pre(lambda: self.expr_stmt(init_n))
                init = pre + st
            cond_n = node.child_by_field_name("condition")
            cond = None
            cpre = []
            if cond_n is not None:
                cpre, cond = self.with_pre(lambda: self.sem.to_bool(self.expr(cond_n)))
            upd_n = node.child_by_field_name("update")
            upd = []
            if upd_n is not None:
                pre, st = self.with_pre(lambda: self.expr_stmt(upd_n))
                upd = pre + st
            body = self.body_of(node.child_by_field_name("body"))
        finally:
            self.scopes.pop()
        if cpre:
            brk = ir.If(self.sem.unop("!", cond, cond.span), [ir.Break(span=sp)], span=sp)
            body = cpre + [brk] + body
            cond = None
        return [ir.CFor(init, cond, upd, body, span=sp)]

    def declaration(self, node, top=False) -> list[ir.Stmt]:
        tnode = node.child_by_field_name("type")
        quals = self.quals_before(node.start_byte, tnode.start_byte)
        space = next((q for q in quals if q in _SPACES), None)
        is_const = any(c.type == "type_qualifier" and self.text(c) == "const" for c in node.children)
        base, atomic = self.resolve_type(tnode)
        if base is None:
            self.type_err(node, "a variable cannot be void")
        out = []
        for d in node.children_by_field_name("declarator"):
            out.extend(self.declarator(d, base, atomic, space, is_const, top, node))
        return out

    def declarator(self, d, base, atomic, space, is_const, top, decl_node):
        sp = self.sp(d)
        init = None
        if d.type == "init_declarator":
            init = d.child_by_field_name("value")
            d = d.child_by_field_name("declarator")
        if d.type == "array_declarator":
            dims = []
            inner = d
            while inner.type == "array_declarator":
                size = inner.child_by_field_name("size")
                if size is None:
                    if init is None or inner.child_by_field_name("declarator").type == "array_declarator":
                        self.type_err(inner, "array size missing")
                    dims.insert(0, None)
                else:
                    v = const_value(self.expr(size))
                    if v is None or int(v) <= 0:
                        self.type_err(size, "array sizes must be positive compile-time constants",
                                      hint="use a template parameter or a constant from the header")
                    dims.insert(0, int(v))
                inner = inner.child_by_field_name("declarator")
            name = self.text(inner)
            values = None
            if init is not None:
                values = self.init_list(init, base)
                if dims[0] is None:
                    inner_n = 1
                    for x in dims[1:]:
                        inner_n *= x
                    dims[0] = (len(values) + inner_n - 1) // inner_n
                total = 1
                for x in dims:
                    total *= x
                values = values + [coerce_value(0, base)] * (total - len(values))
            if isinstance(base, T.VectorType):
                self.unsupported(d, "an array of vectors")
            if top or (space == "constant"):
                gname = self.fresh(name) if not top else name
                if values is None:
                    self.type_err(d, "a constant array needs an initialiser")
                g = ir.ArrayDecl(gname, "constant", base, tuple(dims), values, span=sp)
                self.globals.append(g)
                self.used_names.add(gname)
                self.scopes[-1][name] = Buf(gname, base, "constant", tuple(dims), const=True)
                return []
            sp_name = space or "thread"
            if sp_name == "device":
                self.type_err(d, "device arrays cannot be declared in a kernel")
            irname = self.fresh(name)
            a = ir.ArrayDecl(irname, sp_name, base, tuple(dims), values, span=sp)
            self.scopes[-1][name] = Buf(irname, base, sp_name, tuple(dims), atomic=atomic)
            if sp_name == "threadgroup":
                if not self.in_kernel:
                    self.unsupported(d, "a threadgroup array declared in a device function")
                if values is not None:
                    self.type_err(d, "threadgroup arrays cannot have initialisers (Metal)")
                self.tg_arrays.append(a)
                return []
            return [a]
        if d.type == "pointer_declarator":
            name_n = d.child_by_field_name("declarator")
            if name_n.type != "identifier":
                self.unsupported(d, "this pointer declaration")
            name = self.text(name_n)
            if init is None:
                self.unsupported(d, "a pointer without an initialiser")
            arg = self.bufarg(init)
            if arg is None:
                self.type_err(init, "a pointer must point into a buffer or array")
            buf = self.buf_of(arg.buf)
            t = base
            if t != buf.elem:
                self.type_err(d, f"cannot point a {t.name}* at {buf.elem.name} data")
            off = ir.Var(self.fresh(name + "_off"), T.int64, span=sp)
            offv = self.sem.convert(arg.offset, T.int64) if arg.offset is not None else ir.Const(0, T.int64)
            self.scopes[-1][name] = Ptr(buf, off)
            return [ir.Decl(off, offv, span=sp)]
        if d.type == "reference_declarator":
            self.unsupported(d, "a reference variable")
        if d.type != "identifier":
            self.unsupported(d, f"the declaration '{self.text(d)}'")
        name = self.text(d)
        if atomic:
            self.unsupported(d, "an atomic local variable")
        t = base
        val = None
        if init is not None:
            if init.type == "initializer_list":
                if isinstance(t, T.VectorType):
                    args = [self.expr(c) for c in init.named_children]
                    val = self.vec_cons(t, args, init)
                else:
                    items = init.named_children
                    val = self.sem.convert(self.expr(items[0]), t) if items else self.sem.const(0, t, sp)
            elif init.type == "argument_list":  # float x(1.0f);
                val = self.expr(init.named_children[0])
            else:
                val = self.expr(init)
            if t == "auto":
                t = val.type
            val = self.sem.convert(val, t)
        elif t == "auto":
            self.type_err(d, "'auto' needs an initialiser")
        if top or space == "constant" or (is_const and not self.in_kernel and not self.scopes[1:]):
            c = fold(val) if val is not None else None
            if top:
                if not isinstance(c, ir.Const):
                    self.type_err(d, "header constants must have a compile-time constant value")
                self.global_syms[name] = c
                return []
            if isinstance(c, ir.Const):
                self.scopes[-1][name] = c
                return []
        irname = self.fresh(name)
        v = ir.Var(irname, t, span=sp)
        self.scopes[-1][name] = v
        return [ir.Decl(v, val, span=sp)]

    def init_list(self, node, elem):
        if node.type != "initializer_list":
            self.type_err(node, "array initialisers are {...} lists")
        vals = []
        for c in node.named_children:
            if c.type == "initializer_list":
                vals.extend(self.init_list(c, elem))
                continue
            v = const_value(self.sem.convert(self.expr(c), elem))
            if v is None:
                self.type_err(c, "array initialisers must be compile-time constants")
            vals.append(v)
        return vals

    # -- expression statements (assignments, ++/--, calls)
    def expr_stmt(self, node) -> list[ir.Stmt]:
        k = node.type
        sp = self.sp(node)
        if k == "comma_expression":
            return self.expr_stmt(node.child_by_field_name("left")) + \
                self.expr_stmt(node.child_by_field_name("right"))
        if k == "parenthesized_expression":
            return self.expr_stmt(node.named_children[0])
        if k == "assignment_expression":
            op = self.text(node.child_by_field_name("operator"))
            return self.assign(node.child_by_field_name("left"), op[:-1] or None,
                               node.child_by_field_name("right"), sp)
        if k == "update_expression":
            op = "+" if "++" in self.text(node) else "-"
            return self.assign(node.child_by_field_name("argument"), op, None, sp)
        if k == "call_expression":
            fname = self.callee_name(node.child_by_field_name("function"))
            if fname in ("threadgroup_barrier", "simdgroup_barrier"):
                flags = tuple(self.text(a).split("::")[-1].strip()
                              for a in node.child_by_field_name("arguments").named_children)
                return [ir.Barrier(fname.split("_")[0], flags or ("mem_none",), span=sp)]
            e = self.expr(node, stmt=True)
            return [ir.ExprStmt(e, span=sp)] if e is not None else []
        e = self.expr(node)
        return [ir.ExprStmt(e, span=sp)]

    def assign(self, lhs, op, rhs_node, sp, rhs=None) -> list[ir.Stmt]:
        """``lhs op= rhs`` (op None: plain assignment; rhs_node None: ++/--)."""
        def value(cur, t):
            r = rhs if rhs is not None else (self.expr(rhs_node) if rhs_node is not None
                                             else ir.Const(1, T.int32, span=sp))
            if op is None:
                return self.sem.convert(r, t)
            return self.sem.convert(self.binop(op, cur, r, lhs), t)
        k = lhs.type
        if k == "parenthesized_expression":
            return self.assign(lhs.named_children[0], op, rhs_node, sp, rhs)
        if k == "identifier":
            name = self.text(lhs)
            sym = self.lookup(name)
            if isinstance(sym, ir.Var):
                if sym.name in self.kernel_syms and self.in_kernel and self.kernel_syms.get(sym.name) is sym:
                    self.type_err(lhs, f"'{name}' is a scalar input (constant T&) and cannot be assigned")
                return [ir.Assign(sym, value(sym, sym.type), span=sp)]
            if isinstance(sym, Ptr):
                return [ir.Assign(sym.off, value(sym.off, T.int64), span=sp)]
            if isinstance(sym, ir.Const):
                self.type_err(lhs, f"'{name}' is a constant and cannot be assigned")
            if sym is None:
                raise KernelNameError(f"use of undeclared identifier '{name}'", self.sp(lhs))
            self.type_err(lhs, f"cannot assign to '{name}'")
        if k in ("subscript_expression", "pointer_expression"):
            buf, idx = self.location(lhs)
            if buf.const and buf.space in ("device", "constant"):
                self.type_err(lhs, f"'{buf.name}' is read-only (an input or constant)",
                              hint="write to one of the output_names")
            if buf.atomic:
                self.type_err(lhs, f"'{buf.name}' is atomic; write it with atomic_store_explicit "
                              "or atomic_fetch_add_explicit")
            cur = ir.Load(buf.name, idx, buf.elem, span=self.sp(lhs))
            return [ir.Store(buf.name, idx, value(cur, buf.elem), span=sp)]
        if k == "field_expression":
            base = lhs.child_by_field_name("argument")
            comps = self.text(lhs.child_by_field_name("field"))
            var = self.expr(base)
            if not isinstance(var, ir.Var) or not isinstance(var.type, T.VectorType):
                self.unsupported(lhs, "assignment to this member")
            vt = var.type
            cur = self.sem.component(var, comps, self.sp(lhs))
            idxs = ["xyzw".index(c) for c in cur.components]
            ct = cur.type
            newv = value(cur, ct)
            if len(idxs) > 1:
                tmp = self.new_tmp(ct, newv, sp)
                parts = {i: self.sem.component(tmp, "xyzw"[j], sp) for j, i in enumerate(idxs)}
            else:
                parts = {idxs[0]: newv}
            args = [parts.get(i) or self.sem.component(var, "xyzw"[i], sp) for i in range(vt.n)]
            return [ir.Assign(var, self.sem.vector(vt, args, sp), span=sp)]
        self.unsupported(lhs, f"assignment to '{self.text(lhs)}'")

    # -- locations
    def buf_of(self, name) -> Buf:
        for sc in reversed(self.scopes):
            for v in sc.values():
                if isinstance(v, Buf) and v.name == name:
                    return v
        for v in self.global_syms.values():
            if isinstance(v, Buf) and v.name == name:
                return v
        raise KeyError(name)

    def index_expr(self, node):
        """An array index (see :meth:`Semantics.index`)."""
        return self.sem.index(self.expr(node), self.sp(node))

    def location(self, node):
        """(Buf, linear index) of ``a[i]``, ``a[i][j]``, ``*p``, ``p[i]``."""
        if node.type == "pointer_expression" and self.text(node).lstrip().startswith("*"):
            arg = self.bufarg(node.child_by_field_name("argument"))
            if arg is None:
                self.unsupported(node, "this dereference")
            return self.buf_of(arg.buf), arg.offset or ir.Const(0, T.int32)
        if node.type == "parenthesized_expression":
            return self.location(node.named_children[0])
        if node.type != "subscript_expression":
            self.unsupported(node, f"'{self.text(node)}' as a memory location")
        idx_nodes = []
        base = node
        while base.type == "subscript_expression":
            inds = base.child_by_field_name("indices").named_children
            if len(inds) != 1:
                self.type_err(base, "one index per [] in MSL")
            idx_nodes.insert(0, inds[0])
            base = base.child_by_field_name("argument")
        idxs = [self.index_expr(i) for i in idx_nodes]
        if base.type == "identifier":
            sym = self.lookup(self.text(base))
            if isinstance(sym, Buf):
                return sym, self.linear(sym, idxs, node)
            if isinstance(sym, Ptr):
                if len(idxs) != 1:
                    self.type_err(node, "a pointer takes one index")
                return sym.buf, self.add_idx(sym.off, idxs[0])
        arg = self.bufarg(base)
        if arg is not None and len(idxs) == 1:
            b = self.buf_of(arg.buf)
            return b, self.add_idx(arg.offset, idxs[0]) if arg.offset is not None else idxs[0]
        self.type_err(base, f"'{self.text(base)}' is not an array or buffer")

    def add_idx(self, a, b):
        if a is None:
            return b
        return self.sem.binop("+", a, b, b.span)

    def linear(self, buf, idxs, node):
        shape = buf.shape or (None,)
        if len(idxs) > len(shape):
            self.type_err(node, f"too many indices for '{self.text(node).split('[')[0]}'")
        if len(idxs) < len(shape):
            self.type_err(node, "a partial index of a multi-dimensional array is not a value")
        return self.sem.linear_index(idxs, list(shape), self.sp(node))

    def bufarg(self, node):
        """A BufArg for a pointer-valued expression (``x``, ``x + off``, ``&x[i]``,
        ``tile[r]`` of a 2-D array, a local pointer), or None."""
        k = node.type
        if k == "parenthesized_expression":
            return self.bufarg(node.named_children[0])
        if k == "identifier":
            sym = self.lookup(self.text(node))
            if isinstance(sym, Buf):
                return ir.BufArg(sym.name, span=self.sp(node))
            if isinstance(sym, Ptr):
                return ir.BufArg(sym.buf.name, sym.off, span=self.sp(node))
            return None
        if k == "binary_expression" and self.text(node.child_by_field_name("operator")) in "+-":
            a = self.bufarg(node.child_by_field_name("left"))
            if a is None:
                return None
            off = self.index_expr(node.child_by_field_name("right"))
            if self.text(node.child_by_field_name("operator")) == "-":
                base = a.offset if a.offset is not None else ir.Const(0, T.int32)
                return ir.BufArg(a.buf, self.sem.binop("-", base, off, off.span), span=self.sp(node))
            return ir.BufArg(a.buf, self.add_idx(a.offset, off), span=self.sp(node))
        if k == "pointer_expression" and self.text(node).lstrip().startswith("&"):
            buf, idx = self.location(node.child_by_field_name("argument"))
            return ir.BufArg(buf.name, idx, span=self.sp(node))
        if k == "subscript_expression":
            base = node.child_by_field_name("argument")
            if base.type == "identifier":
                sym = self.lookup(self.text(base))
                if isinstance(sym, Buf) and sym.shape and len(sym.shape) == 2:
                    i = self.index_expr(node.child_by_field_name("indices").named_children[0])
                    off = self.sem.binop("*", i, ir.Const(int(sym.shape[1]), T.int32), i.span)
                    return ir.BufArg(sym.name, off, span=self.sp(node))
        return None

    # -- expressions
    def binop(self, op, a, b, node):
        """C's binary operator ``op`` (see :meth:`Semantics.binop`)."""
        return self.sem.binop(op, a, b, self.sp(node))

    def expr(self, node, stmt=False) -> ir.Expr:
        k = node.type
        sp = self.sp(node)
        if k == "parenthesized_expression":
            return self.expr(node.named_children[-1])
        if k in ("number_literal", "user_defined_literal"):
            v, t = _literal(self.text(node))
            if t is None:
                self.type_err(node, f"bad number '{self.text(node)}'")
            return ir.Const(v, t, span=sp)
        if k in ("true", "false"):
            return self.sem.bool_const(k == "true", sp)
        if k == "char_literal":
            return ir.Const(ord(self.text(node)[1]), T.int8, span=sp)
        if k in ("identifier", "qualified_identifier"):
            return self.name_expr(node)
        if k == "field_expression":
            base = self.expr(node.child_by_field_name("argument"))
            comps = self.text(node.child_by_field_name("field"))
            if self.text(node.child_by_field_name("operator")) != "." or \
                    not isinstance(base.type, T.VectorType):
                self.type_err(node, f"'{self.text(node)}': member access needs a vector")
            return self.sem.component(base, comps, sp)
        if k == "subscript_expression":
            base = node.child_by_field_name("argument")
            if base.type == "identifier":
                sym = self.lookup(self.text(base))
                if isinstance(sym, ShapeArr):
                    return self.shape_index(sym, node)
                if isinstance(sym, ir.Var) and isinstance(sym.type, T.VectorType):
                    i = const_value(self.expr(node.child_by_field_name("indices").named_children[0]))
                    if i is None:
                        self.unsupported(node, "indexing a vector with a run-time index")
                    return self.sem.vector_index(ir.Var(sym.name, sym.type, span=sp), int(i), sp)
            buf, idx = self.location(node)
            if buf.atomic:
                self.type_err(node, f"'{buf.name}' is atomic; read it with atomic_load_explicit")
            return ir.Load(buf.name, idx, buf.elem, span=sp)
        if k == "pointer_expression":
            if self.text(node).lstrip().startswith("*"):
                buf, idx = self.location(node)
                return ir.Load(buf.name, idx, buf.elem, span=sp)
            self.type_err(node, "'&' (an address) is only allowed as the first argument of an "
                          "atomic function or a pointer argument")
        if k == "binary_expression":
            opn = node.child_by_field_name("operator")
            op = self.text(opn)
            if opn.start_byte in self.quals.get("<", ()):
                op = op.replace(">", "<")
            a = self.expr(node.child_by_field_name("left"))
            if op in ("&&", "||"):
                self.lazy += 1
                try:
                    b = self.expr(node.child_by_field_name("right"))
                finally:
                    self.lazy -= 1
            else:
                b = self.expr(node.child_by_field_name("right"))
            for x, n in ((a, "left"), (b, "right")):
                if x.type is None:
                    self.type_err(node.child_by_field_name(n), "this has no value (void)")
            return self.binop(op, a, b, node)
        if k == "unary_expression":
            op = self.text(node.child_by_field_name("operator"))
            a = self.expr(node.child_by_field_name("argument"))
            return self.sem.unop(op, a, sp)
        if k == "conditional_expression":
            c = self.sem.to_bool(self.expr(node.child_by_field_name("condition")))
            self.lazy += 1
            try:
                a = self.expr(node.child_by_field_name("consequence"))
                b = self.expr(node.child_by_field_name("alternative"))
            finally:
                self.lazy -= 1
            return self.sem.select(c, a, b, sp)
        if k == "cast_expression":
            tn = node.child_by_field_name("type")
            val = node.child_by_field_name("value")
            inner = tn.child_by_field_name("type") if tn.type == "type_descriptor" else tn
            if inner is not None and inner.type in ("type_identifier", "identifier") \
                    and not self.is_type_name(inner) and val.type == "unary_expression":
                # `(a) - b` parsed as a cast of `-b` to type `a`
                op = self.text(val.child_by_field_name("operator"))
                return self.binop(op, self.expr(inner), self.expr(val.child_by_field_name("argument")), node)
            t, _ = self.resolve_type(tn)
            v = self.expr(val)
            return self.cast_to(t, [v], node)
        if k == "call_expression":
            return self.call(node, stmt)
        if k == "assignment_expression":
            lhs = node.child_by_field_name("left")
            stmts = self.expr_stmt(node)
            for s in stmts:
                self.emit_pre(s, sp)
            return self.expr(lhs)
        if k == "update_expression":
            arg = node.child_by_field_name("argument")
            prefix = self.text(node).lstrip().startswith(("++", "--"))
            old = None if prefix else self.new_tmp(self.expr(arg).type, self.expr(arg), sp)
            for s in self.expr_stmt(node):
                self.emit_pre(s, sp)
            return self.expr(arg) if prefix else old
        if k == "comma_expression":
            for s in self.expr_stmt(node.child_by_field_name("left")):
                self.emit_pre(s, sp)
            return self.expr(node.child_by_field_name("right"))
        if k == "initializer_list":
            self.type_err(node, "a {...} list needs a declared type here")
        if k == "sizeof_expression":
            tn = node.child_by_field_name("type")
            if tn is not None:
                t, _ = self.resolve_type(tn)
                return ir.Const(t.itemsize if isinstance(t, T.ScalarType) else t.elem.itemsize * (4 if t.n == 3 else t.n),
                                T.uint64, span=sp)
        if k in ("lambda_expression", "new_expression", "delete_expression", "string_literal"):
            self.unsupported(node, f"'{k.replace('_', ' ')}'")
        self.unsupported(node, f"the expression '{self.text(node)[:40]}'")

    def shape_index(self, sym, node):
        sp = self.sp(node)
        i = self.index_expr(node.child_by_field_name("indices").named_children[0])
        return self.shape_at(sym, i, sp)

    def shape_at(self, sym, i, sp):
        c = const_value(i)
        if sym.kind == "strides":
            return ir.StrideOf(sym.buf, self.sem.convert(i, T.int32) if c is None else ir.Const(int(c), T.int32),
                               T.int64, span=sp)
        if c is not None:
            if not 0 <= int(c) < max(sym.ndim, 1):
                raise KernelTypeError(f"{sym.buf}_shape[{int(c)}] is out of range: {sym.buf} has "
                                      f"{sym.ndim} dimensions", sp)
            return ir.ShapeOf(sym.buf, int(c), T.int32, span=sp)
        # a run-time dimension: select among the (statically known) dimensions
        e = ir.ShapeOf(sym.buf, sym.ndim - 1, T.int32, span=sp)
        for d in range(sym.ndim - 2, -1, -1):
            cond = self.sem.binop("==", self.sem.convert(i, T.int32), ir.Const(d, T.int32), sp)
            e = self.sem.select(cond, ir.ShapeOf(sym.buf, d, T.int32, span=sp), e, sp)
        return e

    def name_expr(self, node):
        sp = self.sp(node)
        txt = self.text(node).replace(" ", "")
        name = txt
        if "::" in txt:
            parts = txt.split("::")
            name = parts[-1]
            if parts[0] == "metal" and name in ("numeric_limits",):
                self.unsupported(node, txt)
        sym = self.lookup(name)
        if isinstance(sym, ir.Var):
            return ir.Var(sym.name, sym.type, span=sp)
        if isinstance(sym, ir.Const):
            return ir.Const(sym.value, sym.type, span=sp)
        if isinstance(sym, Ptr):
            self.type_err(node, f"'{name}' is a pointer; index it (p[i]) or dereference it (*p)")
        if isinstance(sym, Buf):
            self.type_err(node, f"'{name}' is an array; index it, e.g. {name}[i]")
        if isinstance(sym, ShapeArr):
            self.type_err(node, f"'{name}' is an array; index it, e.g. {name}[0]")
        if name in ir.THREAD_ATTRIBUTES and sym is None:
            if not self.in_kernel:
                raise KernelNameError(
                    f"'{name}' is not declared in header functions", sp,
                    hint="MLX declares thread attributes only in the kernel body; pass it as an argument")
            return self.sem.thread_attr(name, sp)
        consts = {"M_PI_F": 3.14159265358979, "M_E_F": 2.718281828459045, "INFINITY": float("inf"),
                  "NAN": float("nan"), "MAXFLOAT": 3.4028234663852886e38, "FLT_MAX": 3.4028234663852886e38,
                  "HUGE_VALF": float("inf"), "M_SQRT2_F": 1.4142135623730951, "M_LN2_F": 0.6931471805599453,
                  "M_LOG2E_F": 1.4426950408889634, "FLT_MIN": 1.1754943508222875e-38,
                  "FLT_EPSILON": 1.1920928955078125e-07, "INT_MAX": 2**31 - 1, "INT_MIN": -2**31,
                  "UINT_MAX": 2**32 - 1}
        if name in consts:
            v = consts[name]
            t = T.float32 if isinstance(v, float) else (T.uint32 if name == "UINT_MAX" else T.int32)
            return self.sem.const(v, t, sp)
        if txt.startswith("memory_order") or txt.startswith("mem_flags"):
            self.type_err(node, f"'{txt}' is only meaningful as an argument of an atomic or barrier")
        raise KernelNameError(f"use of undeclared identifier '{name}'", sp,
                              hint=self._template_hint(name) or "declare it, or add it to input_names")

    # -- calls
    def callee_name(self, fn):
        txt = self.text(fn).replace(" ", "")
        if fn.type == "template_function":
            txt = self.text(fn.child_by_field_name("name")).replace(" ", "")
        parts = txt.split("::")
        while len(parts) > 1 and parts[0] in _NAMESPACES:
            parts = parts[1:]
        return "::".join(parts)

    def cast_to(self, t, args, node):
        """``T(args)``, ``(T)x``, ``static_cast<T>(x)`` (see :meth:`Semantics.cast`)."""
        sp = self.sp(node)
        if isinstance(t, T.VectorType):
            return self.vec_cons(t, args, node)
        if len(args) != 1:
            self.type_err(node, f"{t.msl}(...) takes one argument")
        return self.sem.cast(t, args[0], sp)

    def vec_cons(self, t, args, node):
        """The vector constructor ``float4(...)`` (see :meth:`Semantics.vector`)."""
        return self.sem.vector(t, args, self.sp(node))

    def call(self, node, stmt=False):
        sp = self.sp(node)
        fn = node.child_by_field_name("function")
        argn = node.child_by_field_name("arguments").named_children
        name = self.callee_name(fn)
        targs = []
        if fn.type == "template_function":
            targs = fn.child_by_field_name("arguments").named_children
        # casts and constructors
        if name in ("static_cast", "reinterpret_cast", "as_type", "bit_cast"):
            if name != "static_cast":
                self.unsupported(node, f"'{name}<...>'")
            t, _ = self.resolve_type(_type_of_descriptor(targs[0]))
            return self.cast_to(t, [self.expr(argn[0])], node)
        if fn.type in ("primitive_type", "identifier", "type_identifier", "sized_type_specifier") \
                and self.is_type_name(fn) and self.lookup(name) is None or isinstance(self.lookup(name), _TypeName):
            t, _ = self.resolve_type(fn)
            if not argn:
                return self.sem.const(0, t, sp) if isinstance(t, T.ScalarType) else \
                    self.sem.vector(t, [self.sem.const(0, t.elem, sp)], sp)
            return self.cast_to(t, [self.expr(a) for a in argn], node)
        if name in ("threadgroup_barrier", "simdgroup_barrier"):
            if not stmt:
                self.type_err(node, f"{name} is a statement, not a value")
        if name in _ATOMIC_FNS:
            return self.atomic(name, argn, node, stmt)
        if name in UTILS:
            return self.util(name, argn, node)
        if name in self.funcdefs:
            return self.user_call(name, argn, targs, node)
        if name == "select" and len(argn) == 3:
            a, b, c = (self.expr(x) for x in argn)
            return self.sem.select(c, b, a, sp)
        if name == "dot" and len(argn) == 2:
            a, b = (self.expr(x) for x in argn)
            if not isinstance(a.type, T.VectorType):
                self.type_err(node, "dot needs vectors")
            t = self.sem.common_type(a.type, b.type, sp)
            a, b = self.sem.convert(a, t), self.sem.convert(b, t)
            e = None
            for c in "xyzw"[:t.n]:
                p = self.sem.binop("*", self.sem.component(a, c, sp), self.sem.component(b, c, sp), sp)
                e = p if e is None else self.sem.binop("+", e, p, sp)
            return e
        b = registry.lookup(self.text(fn).replace(" ", "") if fn.type != "template_function" else name)
        if b is None and registry.lookup(name) is not None and registry.lookup(name).kind != "node":
            self.type_err(fn, f"Metal has no {self.text(fn).replace(' ', '')}; {name} has no precise:: or "
                              "fast:: variant", hint=f"write metal::{name}")
        if b is not None and b.kind in ("call", "simd"):
            args = [self.expr(a) for a in argn]
            for a, n in zip(args, argn):
                if a.type is None:
                    self.type_err(n, "this has no value (void)")
            return self.sem.builtin(b.name, args, sp)
        if isinstance(self.lookup(name), (ir.Var, Buf)):
            self.type_err(node, f"'{name}' is not a function")
        if name.startswith(("simdgroup_", "quad_", "simd_")) or name in (
                "atomic_thread_fence", "printf", "os_log"):
            self.unsupported(node, f"'{name}'")
        raise KernelNameError(f"use of undeclared function '{name}'", sp,
                              hint="define it in header=, or check the spelling of the Metal builtin")

    def atomic(self, name, argn, node, stmt):
        sp = self.sp(node)
        op = _ATOMIC_FNS[name]
        if not argn or argn[0].type != "pointer_expression" and argn[0].type != "identifier" \
                and argn[0].type != "binary_expression":
            self.type_err(node, f"{name} needs a pointer to an atomic element, e.g. &out[i]")
        arg = self.bufarg(argn[0])
        if arg is None:
            self.type_err(argn[0], f"{name} needs a pointer to an atomic element, e.g. &out[i]")
        buf = self.buf_of(arg.buf)
        if not buf.atomic:
            self.type_err(argn[0], f"'{buf.name}' is not atomic",
                          hint="pass atomic_outputs=True to metal_kernel" if buf.space == "device"
                          else "declare it as threadgroup atomic<T>")
        idx = arg.offset if arg.offset is not None else ir.Const(0, T.int32)
        t = buf.elem
        self.sem.check_atomic(op, t, buf.space, buf.name, sp, who=name)
        if op == "load":
            return self.sem.atomic("load", buf.name, t, buf.space, idx, [], sp, who=name)
        if op == "cas":
            if len(argn) < 3:
                self.type_err(node, f"{name}(object, &expected, desired, order, order)")
            exp_node = argn[1]
            if not (exp_node.type == "pointer_expression" and self.text(exp_node).lstrip().startswith("&")):
                self.type_err(exp_node, "the expected value is passed by address: &expected")
            evar = self.expr(exp_node.child_by_field_name("argument"))
            if not isinstance(evar, ir.Var):
                self.unsupported(exp_node, "an expected value that is not a local variable")
            desired = self.expr(argn[2])
            old = self.new_tmp(t, self.sem.atomic("cas", buf.name, t, buf.space, idx, [evar, desired], sp,
                                                  who=name), sp)
            ok = self.new_tmp(T.bool_, self.sem.binop("==", old, self.sem.convert(evar, t), sp), sp)
            self.emit_pre(ir.Assign(evar, self.sem.convert(old, evar.type), span=sp), sp)
            return ok
        if len(argn) < 2:
            self.type_err(node, f"{name} needs a value")
        return self.sem.atomic(op, buf.name, t, buf.space, idx, [self.expr(argn[1])], sp, who=name)

    def util(self, name, argn, node):
        sp = self.sp(node)
        S = self.sem
        if name == "ceildiv":
            if len(argn) != 2:
                self.type_err(node, "ceildiv(a, b) takes 2 arguments")
            a, b = (self.expr(x) for x in argn)
            t = S.common_type(a.type, b.type, sp)
            a, b = S.convert(a, t), S.convert(b, t)
            num = S.binop("-", S.binop("+", a, b, sp), S.const(1, t, sp), sp)
            return S.binop("/", num, b, sp)

        def arr(n, kind):
            sym = self.lookup(self.text(n)) if n.type == "identifier" else None
            if not isinstance(sym, ShapeArr) or sym.kind != kind:
                self.unsupported(n, f"{name} with an argument other than an input's _{kind}")
            return sym
        i64 = T.int64

        def op(o, x, y):
            return S.binop(o, x, y, sp)

        def dim(sym, d):        # x_shape[d] or x_strides[d], as int64
            return S.convert(self.shape_at(sym, ir.Const(d, T.int32), sp), i64)

        if name == "elem_to_loc":
            if len(argn) != 4:
                self.type_err(node, "elem_to_loc(elem, x_shape, x_strides, x_ndim)")
            elem = self.expr(argn[0])
            shp, strd = arr(argn[1], "shape"), arr(argn[2], "strides")
            nd = const_value(self.expr(argn[3]))
            if nd is None:
                self.unsupported(argn[3], "elem_to_loc with a run-time ndim")
            nd = int(nd)
            if isinstance(elem.type, T.VectorType):
                # the uint3 overload: x, y index the last two dims, z the rest
                ex, ey, ez = (S.convert(S.component(elem, c, sp), i64) for c in "xyz")
                loc = op("*", ex, dim(strd, nd - 1))
                if nd >= 2:
                    loc = op("+", loc, op("*", ey, dim(strd, nd - 2)))
                div = None
                for d in range(nd - 3, -1, -1):
                    size = dim(shp, d)
                    q = ez if div is None else op("/", ez, div)
                    loc = op("+", loc, op("*", op("%", q, size), dim(strd, d)))
                    div = size if div is None else op("*", div, size)
                return _span_all(loc, sp)
            e = S.convert(elem, i64)
            loc = None
            div = None
            for d in range(nd - 1, -1, -1):
                size = dim(shp, d)
                q = e if div is None else op("/", e, div)
                term = op("*", op("%", q, size), dim(strd, d))
                loc = term if loc is None else op("+", loc, term)
                div = size if div is None else op("*", div, size)
            return _span_all(loc if loc is not None else ir.Const(0, i64), sp)
        if name == "elem_to_loc_1":
            return op("*", S.convert(self.expr(argn[0]), i64), S.convert(self.expr(argn[1]), i64))
        n = int(name[-1])
        elem = self.expr(argn[0])
        strd = arr(argn[1], "strides")
        loc = None
        for j in range(n):
            term = op("*", S.convert(S.component(elem, "xyz"[j], sp), i64), dim(strd, n - 1 - j))
            loc = term if loc is None else op("+", loc, term)
        return _span_all(loc, sp)

    # -- device functions
    def user_call(self, name, argn, targ_nodes, node):
        cands = [f for f in self.funcdefs[name] if len(_params_of(f.node)) == len(argn)]
        if not cands:
            self.type_err(node, f"no overload of '{name}' takes {len(argn)} argument(s)")
        explicit = []
        for t in targ_nodes:
            if t.type == "type_descriptor":
                explicit.append(("type", self.resolve_type(t)[0]))
            else:
                explicit.append(("value", self.expr(t)))
        # evaluate arguments: buffers by BufArg, values by Expr
        args = []
        for a in argn:
            ba = self.bufarg(a)
            args.append(ba if ba is not None else self.expr(a))
        errors = []
        for fd in cands:
            try:
                return self.specialise(fd, name, args, explicit, node)
            except _NoMatch as e:
                errors.append(str(e))
        self.type_err(node, f"no matching overload of '{name}': " + "; ".join(errors))

    def specialise(self, fd: FuncDef, name, args, explicit, node):
        sp = self.sp(node)
        # switch to the header's text
        saved = (self.code, self.quals, self.cur_src, self.line_offset, self.scopes, self.pre,
                 self.lazy, self.ret_type, self.in_kernel)
        self.code = self.funcdef_code[id(fd.node)]
        self.quals, self.cur_src, self.line_offset = fd.quals, fd.src, fd.line_offset
        try:
            bind = {}
            for (kind, tn), ex in zip(fd.tparams, explicit):
                if kind == "type":
                    bind[tn] = _TypeName(ex[1])
                else:
                    c = fold(ex[1])
                    if not isinstance(c, ir.Const):
                        raise _NoMatch(f"template argument {tn} must be a constant")
                    bind[tn] = c
            self.scopes = [self.global_syms, bind]
            tnames = {tn for k, tn in fd.tparams if k == "type"}
            params = _params_of(fd.node)
            fparams = []
            sig = []
            scope = {}
            for p, a in zip(params, args):
                tnode = p.child_by_field_name("type")
                decl = p.child_by_field_name("declarator")
                quals = self.quals_before(p.start_byte, tnode.start_byte)
                space = next((q for q in quals if q in _SPACES), None)
                is_ptr = decl is not None and decl.type in ("pointer_declarator", "array_declarator")
                is_ref = decl is not None and decl.type == "reference_declarator"
                const = any(c.type == "type_qualifier" and self.text(c) == "const" for c in p.children)
                while decl is not None and decl.type in ("pointer_declarator", "reference_declarator", "array_declarator"):
                    decl = decl.child_by_field_name("declarator") or decl.named_children[-1]
                pname = self.text(decl) if decl is not None else f"_p{len(fparams)}"
                tname = self.text(tnode).strip()
                # deduce T from the argument
                if tname in tnames and tname not in bind:
                    if is_ptr:
                        if not isinstance(a, ir.BufArg):
                            raise _NoMatch(f"argument for '{pname}' must be a buffer")
                        bind[tname] = _TypeName(self.buf_of_outer(a.buf, saved).elem)
                    else:
                        if isinstance(a, ir.BufArg):
                            raise _NoMatch(f"argument for '{pname}' must be a value")
                        bind[tname] = _TypeName(a.type)
                pt, atomic = self.resolve_type(tnode)
                if is_ref:
                    if const and not isinstance(a, ir.BufArg):
                        is_ref = False  # const T& x: a value
                    elif isinstance(a, ir.BufArg):
                        self.unsupported(p, "a reference parameter")
                    else:
                        self.unsupported(p, "a non-const reference parameter (an out parameter)")
                if is_ptr:
                    if not isinstance(a, ir.BufArg):
                        raise _NoMatch(f"argument for '{pname}' must be a buffer or array")
                    ab = self.buf_of_outer(a.buf, saved)
                    if ab.elem != pt:
                        raise _NoMatch(f"'{pname}' points to {pt.name}, got {ab.elem.name} data")
                    sp_name = space or ab.space
                    fparams.append(ir.FuncParam(pname, pt, sp_name, const))
                    scope[pname] = Buf(pname, pt, sp_name, atomic=atomic or ab.atomic, const=const)
                    sig.append(("buf", pt.name, sp_name, ab.atomic))
                else:
                    if isinstance(a, ir.BufArg):
                        raise _NoMatch(f"argument for '{pname}' must be a value, not an array")
                    fparams.append(ir.FuncParam(pname, pt))
                    scope[pname] = ir.Var(pname, pt)
                    sig.append(pt.name)
            rnode = fd.node.child_by_field_name("type")
            ret, _ = self.resolve_type(rnode)
            key = (name, id(fd.node), tuple(sig),
                   tuple((k, getattr(v, "t", getattr(v, "value", None))) for k, v in sorted(bind.items())))
            fname = self._spec_names.get(key) if hasattr(self, "_spec_names") else None
            if fname is None:
                if key in self.specialising:
                    self.unsupported(node, "a recursive function")
                self._spec_names = getattr(self, "_spec_names", {})
                fname = name if name not in self.used_names else self.fresh(name)
                self.used_names.add(fname)
                self._spec_names[key] = fname
                self.specialising.add(key)
                self.scopes = [self.global_syms, bind, scope]
                self.pre = None
                self.lazy = 0
                self.ret_type = ret
                self.in_kernel = False
                used_before = set(self.used_names)
                self.used_names |= set(scope)
                body = self.block(fd.node.child_by_field_name("body"))
                self.used_names = used_before | {fname}
                f = ir.Function(fname, fparams, ret, body, span=self.sp(fd.node))
                self.specialising.discard(key)
                self.func_order.append(f)
        finally:
            (self.code, self.quals, self.cur_src, self.line_offset, self.scopes, self.pre,
             self.lazy, self.ret_type, self.in_kernel) = saved
        conv_args = []
        for a, p in zip(args, fparams):
            conv_args.append(a if p.space else self.sem.convert(a, p.type))
        return ir.FuncCall(fname, conv_args, ret, span=sp)

    def buf_of_outer(self, name, saved):
        scopes = self.scopes
        self.scopes = saved[4]
        try:
            return self.buf_of(name)
        finally:
            self.scopes = scopes


class _NoMatch(Exception):
    pass


def _params_of(fnode):
    decl = fnode.child_by_field_name("declarator")
    while decl.type in ("pointer_declarator", "reference_declarator"):
        decl = decl.child_by_field_name("declarator") or decl.named_children[-1]
    plist = decl.child_by_field_name("parameters")
    ps = [p for p in plist.named_children if p.type in ("parameter_declaration",
                                                         "optional_parameter_declaration")]
    return ps


def _type_of_descriptor(n):
    if n.type == "type_descriptor":
        return n.child_by_field_name("type")
    return n


def _span_all(e, sp):
    for n in ir.walk(e):
        if n.span is None:
            n.span = sp
    return e


_INT_SUFFIX = re.compile(r"([uUlL]*)$")


def _literal(text: str):
    """(value, ScalarType) of a C/MSL number literal; float literals are float32
    (Metal has no double), ``h`` makes half."""
    s = text.replace("'", "").strip()
    if s[:1] in "+-":
        # tree-sitter folds the sign of `-3` into the literal: -(literal), typed by the literal
        v, t = _literal(s[1:])
        if t is None:
            return None, None
        if s[0] == "-":
            v = coerce_value(-v, T.promote_int(t) if t.is_int else t)
        return v, (T.promote_int(t) if t.is_int else t)
    low = s.lower()
    if low.startswith(("0x", "0b")) or (re.fullmatch(r"[0-9]+[ul]*", low) is not None):
        m = _INT_SUFFIX.search(low)
        suf = m.group(1)
        digits = low[: len(low) - len(suf)]
        try:
            v = int(digits, 0) if not (digits.startswith("0") and digits[1:2].isdigit()) else int(digits, 8)
        except ValueError:
            return None, None
        uns = "u" in suf
        lng = "l" in suf
        if lng:
            t = T.uint64 if uns else T.int64
        elif uns:
            t = T.uint32 if v < 2**32 else T.uint64
        else:
            hexy = low.startswith(("0x", "0b"))
            if v < 2**31:
                t = T.int32
            elif hexy and v < 2**32:
                t = T.uint32
            elif v < 2**63:
                t = T.int64
            else:
                t = T.uint64
        return coerce_value(v, t), t
    t = T.float32
    if low.endswith("h"):
        t, low = T.float16, low[:-1]
    elif low.endswith("f"):
        low = low[:-1]
    try:
        return coerce_value(float(low), t), t
    except ValueError:
        return None, None


# ----------------------------------------------------------------------------- entry point

def translate_kernel(name, source, header="", *, inputs, outputs, scalars=(), template=(),
                     atomic_outputs=False, first_line=1) -> ir.KernelIR:
    """Translate an MSL kernel body (and header) into a :class:`~metalbench.ir.KernelIR`.

    ``inputs``: ``[(name, ScalarType, ndim)]`` in MLX order; names in ``scalars`` are
    0-d inputs (``constant T&``). ``outputs``: ``[(name, ScalarType, ndim)]``.
    ``template``: ``[(name, ScalarType | int | bool)]``. Errors point at body lines.

    >>> k = translate_kernel("k", "out[0] = T(N);", inputs=[],
    ...                      outputs=[("out", T.float32, 1)],
    ...                      template=[("T", T.float32), ("N", 3)])
    >>> print(ir.dump(k.body))
    out[0] = 3.0
    """
    src = Source(f"{name} source", source, first_line)
    hsrc = Source(f"{name} header", header, 1)
    tmpl = []
    for k, v in template:
        if not isinstance(v, (bool, int, T.ScalarType)):
            raise KernelTypeError(f"template argument {k}={v!r} must be a dtype, an int or a bool")
        tmpl.append((k, v))
    tr = Translator(name, src, hsrc, tmpl, atomic_outputs)
    shape_use = {n: (n + "_shape" in source, n + "_strides" in source, n + "_ndim" in source)
                 for n, _, _ in inputs}
    return tr.translate(source, header, list(inputs), list(outputs), set(scalars), shape_use)
