"""The one C-style printer of the IR, shared by the Metal and CUDA generators.

A :class:`Dialect` is data -- type spellings, literal suffixes, reserved words,
address-space prefixes, barrier and math spellings -- in the spirit of tinygrad's
renderers. :class:`CPrinter` walks the IR and asks the dialect; the few things
that are not a table (atomics, SIMD-group functions, attribute access) are
methods the dialect's module overrides in a small subclass.

The printer prints readable code: C precedence decides the parentheses (plus the
ones compilers ask for with ``-Wparentheses``), ``x = x + 1`` becomes ``x += 1``,
``else { if ... }`` becomes ``else if``. Helper functions the code needs (CAS loops,
missing math functions) are collected by name and printed once into the header.

    >>> from metalbench import ir, types as T
    >>> from metalbench.codegen import msl
    >>> i = ir.Var("i", T.uint32)
    >>> p = msl.MSLPrinter(ir.KernelIR("k", [], []))
    >>> p.expr(ir.BinOp("*", ir.BinOp("+", i, ir.Const(1, T.uint32), T.uint32), i, T.uint32))
    '(i + 1u) * i'
"""
from __future__ import annotations

import re

from dataclasses import dataclass, field

import numpy as np

from .. import ir
from .. import scalar as S
from .. import types as T
from ..errors import KernelTypeError
from ..passes.lengths import is_length, length_division  # noqa: F401  (printers import them from here)

# C operator precedence (higher binds tighter).
POSTFIX, UNARY, MUL, ADD, SHIFT, REL, EQ, BAND, BXOR, BOR, LAND, LOR, COND, ASSIGN = (
    16, 15, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2)
BINARY_PREC = {"*": MUL, "/": MUL, "%": MUL, "+": ADD, "-": ADD, "<<": SHIFT, ">>": SHIFT,
               "<": REL, "<=": REL, ">": REL, ">=": REL, "==": EQ, "!=": EQ, "&": BAND,
               "^": BXOR, "|": BOR}

CPP_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq
nullptr operator or or_eq private protected public register reinterpret_cast requires return
short signed sizeof static static_assert static_cast struct switch template this thread_local
throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while
xor xor_eq main NULL INFINITY NAN
""".split())


@dataclass
class Dialect:
    """Everything about a target language that is a table rather than an algorithm."""
    name: str
    scalar: dict[str, str]                 # ScalarType.name -> spelling
    vector_prefix: str                     # "" for float4, "mb_" for mb_float4
    int_suffix: dict[str, str]             # int type name -> literal suffix ("u", "l", ...)
    reserved: frozenset[str]               # identifiers a user name must not take
    reserved_prefixes: tuple[str, ...] = ("mb_",)
    func_prefix: str = "inline "           # before device functions
    space: dict[str, str] = field(default_factory=dict)   # address space -> pointer/array prefix
    global_prefix: str = "constant "       # module-level constant arrays
    threadgroup_prefix: str = "threadgroup "
    align: str = "alignas({n}) "           # an array declaration's alignment (ArrayDecl.align)
    math: dict[str, str] = field(default_factory=dict)    # builtin -> function spelling
    barrier: dict[str, str] = field(default_factory=dict)  # scope -> statement (with {flags})
    fence: dict[str, str] = field(default_factory=dict)    # thread scope -> statement ({flags}, {order})
    inf: str = "INFINITY"
    # a buffer argument passed to a writable device-function parameter goes through
    # const_cast (CUDA: a read-only parameter handed on; MSL declares atomic-view parameters
    # with other types, so it keeps plain arguments)
    cast_buffer_args: bool = False
    nan: str = "NAN"
    half_suffix: str | None = None         # MSL: 1.0h
    complex_buffers: bool = False          # prints complex64 buffers (CUDA: CUDAPrinter.param_aliases)
    indent: str = "    "


class CPrinter:
    """Prints one :class:`ir.KernelIR` in a :class:`Dialect`. Subclasses supply the
    non-tabular parts (see the ``# hooks`` section)."""

    dialect: Dialect

    def __init__(self, kernel: ir.KernelIR, dialect: Dialect | None = None):
        self.k = kernel
        if dialect is not None:
            self.dialect = dialect
        self.d = self.dialect
        for p in (p for p in kernel.params if p.complex and not self.d.complex_buffers):   # MLX declares complex64_t*
            raise KernelTypeError(f"'{p.name}' is a complex64 buffer (complex64_t): metalbench does not print kernels "
                                  f"with complex64 inputs or outputs as {'CUDA' if self.d.name == 'CUDA' else 'MSL'} "
                                  "yet; they run on backend='sim', and on backend='metal' MLX compiles the body as "
                                  "written", hint="run it with backend='sim' (or on a Mac)")
        self.helpers: dict[str, str] = {}      # name -> text, in first-use order
        self.scalar_params = {p.name for p in kernel.params if p.kind == "scalar"}
        self.in_function: ir.Function | None = None
        self.funcs = {f.name: f for f in kernel.functions}
        self.func_attrs = self._function_attributes()
        self.names = self._rename_map()
        self.output_names = {p.name for p in kernel.outputs}
        self.extra: list[tuple[str, str, str]] = []   # (input name, "shape"|"strides", output)

    # ------------------------------------------------------------------ names

    def _reserved(self, n: str) -> bool:
        return (n in self.d.reserved or n in CPP_KEYWORDS or n in ir.THREAD_ATTRIBUTES
                or n.startswith(self.d.reserved_prefixes) or n.startswith("__"))

    def _rename_map(self) -> dict[str, str]:
        """Deterministic renaming of user identifiers that collide with the dialect's
        keywords, types, builtins, MLX's generated parameter names or our ``mb_`` names."""
        found: list[str] = []

        def add(n):
            if n not in found:
                found.append(n)
        for p in self.k.params:
            add(p.name)
        for g in self.k.globals:
            add(g.name)
        for f in self.k.functions:
            add(f.name)
            for fp in f.params:
                add(fp.name)
        for node in list(ir.walk(self.k.body)) + [n for f in self.k.functions for n in ir.walk(f.body)]:
            if isinstance(node, ir.Decl):
                add(node.var.name)
            elif isinstance(node, ir.For):
                add(node.var.name)
            elif isinstance(node, (ir.ArrayDecl, ir.ViewDecl)):
                add(node.name)
            elif isinstance(node, (ir.Var,)):
                add(node.name)
        inputs = [p.name for p in self.k.inputs]
        generated = {f"{n}_{s}" for n in inputs for s in ("shape", "strides", "ndim")}
        taken = set(found)
        out = {}
        for n in found:
            if n in generated and n not in inputs:
                pass
            elif not self._reserved(n):
                continue
            new = ("u_" + n) if n.startswith(self.d.reserved_prefixes) or n.startswith("__") else n
            while self._reserved(new) or new in taken or new in generated:
                new += "_"
            taken.add(new)
            out[n] = new
        return out

    def name(self, n: str) -> str:
        return self.names.get(n, n)

    # ------------------------------------------------------------------ types

    def tname(self, t) -> str:
        if isinstance(t, T.VectorType):
            return f"{self.d.vector_prefix}{t.elem.msl}{t.n}"
        if t is None:
            return "void"
        return self.d.scalar[t.name]

    # ------------------------------------------------------------------ helpers

    def need(self, name: str, text: str) -> str:
        """Registers header helper ``name`` (printed once, in first-use order)."""
        if name not in self.helpers:
            self.helpers[name] = text
        return name

    # ------------------------------------------------------------------ literals

    def float_literal(self, v: float) -> str:
        """A float32 literal with enough digits to round-trip (``0.1f``, ``1e+20f``)."""
        f = S.value(v, T.float32)
        if np.isnan(f):
            return self.d.nan
        if np.isinf(f):
            return self.d.inf if f > 0 else "-" + self.d.inf
        s = str(f)
        if "." not in s and "e" not in s and "inf" not in s:
            s += ".0"
        return s + "f"

    def literal(self, v, t) -> str:
        if isinstance(t, T.VectorType):
            if isinstance(v, (list, tuple, np.ndarray)):
                return f"{self.tname(t)}({', '.join(self.literal(x, t.elem) for x in v)})"
            return f"{self.tname(t)}({self.literal(v, t.elem)})"
        if t.is_bool:
            return "true" if bool(v) else "false"
        if t.is_int:
            iv = int(S.value(v, t))                    # converted as C would
            lo = -(1 << (t.bits - 1)) if t.is_signed else 0
            if t.bits < 32:
                return self.cast_text(t, str(iv))
            suf = self.d.int_suffix.get(t.name, "")
            if iv == lo and t.is_signed:
                return f"({iv + 1}{suf} - 1{suf})"
            return f"{iv}{suf}"
        if t.name == "float32":
            return self.float_literal(v)
        if t.name == "float64":
            d = float(v)
            if not np.isfinite(d):       # NAN / INFINITY are float; the cast keeps the value
                return self.cast_text(t, self.float_literal(d))
            r = repr(d)                  # shortest round-trip text: C reads it back exactly
            return r if ("." in r or "e" in r) else r + ".0"
        if t.name == "float16" and self.d.half_suffix:
            h = S.value(v, t)
            if np.isfinite(h):
                s = str(h)
                if "." not in s and "e" not in s:
                    s += ".0"
                return s + self.d.half_suffix
        # half / bfloat: the float32 literal of the exactly representable value, converted
        fv = float(S.value(v, t))
        return self.cast_text(t, self.float_literal(fv))

    def cast_text(self, t, text: str) -> str:
        return f"static_cast<{self.tname(t)}>({text})"

    # ------------------------------------------------------------------ expressions

    def expr(self, e, min_prec: int = 0) -> str:
        """``e`` printed, parenthesised when its precedence is below ``min_prec``."""
        text, prec = self._expr(e)
        return f"({text})" if prec < min_prec else text

    def _expr(self, e) -> tuple[str, int]:
        m = getattr(self, "e_" + type(e).__name__, None)
        if m is None:
            raise KernelTypeError(f"the {self.d.name} printer cannot print {type(e).__name__}", e.span)
        return m(e)

    def e_Const(self, e):
        s = self.literal(e.value, e.type)
        return s, (UNARY if s.startswith("-") else POSTFIX)

    def e_Var(self, e):
        return self.name(e.name), POSTFIX

    def e_ThreadAttr(self, e):
        return e.name, POSTFIX

    def e_Swizzle(self, e):
        return f"{self.expr(e.value, POSTFIX)}.{e.components}", POSTFIX

    def e_VecCons(self, e):
        return f"{self.tname(e.type)}({', '.join(self.expr(a, ASSIGN) for a in e.args)})", POSTFIX

    def e_BinOp(self, e):
        if e.op == "%" and T.elem_of(e.type).is_float:
            return self.call_text("fmod", [e.a, e.b], e.type), POSTFIX
        p = BINARY_PREC[e.op]
        if p == SHIFT:
            lp = rp = MUL          # a << (b + c): what -Wparentheses asks for
        elif p in (BAND, BXOR, BOR):
            lp = rp = UNARY        # bit operations keep every compound operand in parentheses
        else:
            lp, rp = p, p + 1
        if isinstance(e.a, ir.BinOp) and e.a.op == e.op:
            lp = p
        a, b = _implicit_uint(e.a, e.b, e.op), _implicit_uint(e.b, e.a, e.op)
        return f"{self.expr(a, lp)} {e.op} {self.expr(b, rp)}", p

    def e_UnOp(self, e):
        inner = self.expr(e.a, UNARY)
        if inner.startswith(("-", "+")) and e.op == "-":
            inner = f"({inner})"
        return f"{e.op}{inner}", UNARY

    def e_Logical(self, e):
        op, p = ("&&", LAND) if e.op == "and" else ("||", LOR)
        # && inside || keeps its parentheses (-Wlogical-op-parentheses)
        lp, rp = (p, p + 1) if e.op == "and" else (LAND + 1, LAND + 1)
        if isinstance(e.a, ir.Logical) and e.a.op == e.op:
            lp = p
        return f"{self.expr(e.a, lp)} {op} {self.expr(e.b, rp)}", p

    def e_Select(self, e):
        if isinstance(e.cond.type, T.VectorType):
            return self.vector_select(e), POSTFIX
        return f"{self.expr(e.cond, LOR)} ? {self.expr(e.a, LOR)} : {self.expr(e.b, LOR)}", COND

    def e_Cast(self, e):
        return self.cast(e.type, e.value), POSTFIX

    def e_Load(self, e):
        return self.load(e.buf, e.index, e.type), POSTFIX

    def e_Bitcast(self, e):
        return self.bitcast(e), POSTFIX

    def bitcast(self, e: ir.Bitcast) -> str:
        """``as_type<T>(x)``: Metal's spelling; CUDA copies the bytes (a helper)."""
        return f"as_type<{self.tname(e.type)}>({self.expr(e.value, ASSIGN)})"

    def _output_meta(self, buf: str, kind: str) -> str | None:
        """MLX passes shapes and strides of inputs only: an output's come as an extra
        input (``mb_<out>_shape`` int32 / ``mb_<out>_strides`` int64, row-major)."""
        if self.in_function is not None or buf not in self.output_names:
            return None
        name = f"mb_{self.name(buf)}_{kind}"
        if (name, kind, buf) not in self.extra:
            self.extra.append((name, kind, buf))
        return name

    def e_ShapeOf(self, e):
        meta = self._output_meta(e.buf, "shape")
        s = f"{meta or self.name(e.buf) + '_shape'}[{e.dim}]"
        if e.type != T.int32:       # a buffer of 2**31 elements or more: products in 64 bits
            return f"static_cast<{self.tname(e.type)}>({s})", POSTFIX
        return s, POSTFIX

    def e_StrideOf(self, e):
        meta = self._output_meta(e.buf, "strides")
        return f"{meta or self.name(e.buf) + '_strides'}[{self.expr(e.dim)}]", POSTFIX

    def e_NDimOf(self, e):
        if self.in_function is None and e.buf in self.output_names:
            return self.literal(self.k.param(e.buf).ndim, e.type), POSTFIX
        return f"{self.name(e.buf)}_ndim", POSTFIX

    def e_Call(self, e):
        return self.call(e), POSTFIX

    def e_Atomic(self, e):
        return self.atomic(e), POSTFIX

    def e_FuncCall(self, e):
        args = [self.expr(a, ASSIGN) for a in e.args]
        f = self.funcs.get(e.func) if self.d.cast_buffer_args else None
        if f is not None:
            # a buffer handed on from a read-only (const) parameter to a parameter declared
            # writable (a record's fields passed through two device functions): C++ refuses the
            # implicit conversion, and the callee only writes what the caller may write
            for i, (a, p) in enumerate(zip(e.args, f.params)):
                if isinstance(a, ir.BufArg) and p.space is not None and not p.const:
                    args[i] = f"const_cast<{self.d.space.get(p.space, '')}{self.tname(p.type)}*>({args[i]})"
        args += [a for a in self.func_attrs.get(e.func, ())]
        return f"{self.name(e.func)}({', '.join(args)})", POSTFIX

    def e_BufArg(self, e):
        if e.offset is None:
            return self.name(e.buf), POSTFIX
        return f"{self.name(e.buf)} + {self.expr(e.offset, ADD + 1)}", ADD

    # ------------------------------------------------------------------ hooks (dialects override)

    def cast(self, t, value) -> str:
        return self.cast_text(t, self.expr(value))

    def index_text(self, buf: str, index) -> str:
        """The index of ``buf[index]`` as printed inside the brackets (CUDA widens some
        sums to 64 bits, ``CUDAPrinter.index_text``)."""
        return self.expr(index)

    def load(self, buf: str, index, t) -> str:
        return f"{self.name(buf)}[{self.index_text(buf, index)}]"

    def store(self, buf: str, index, value) -> str:
        return f"{self.name(buf)}[{self.index_text(buf, index)}] = {self.expr(value, ASSIGN)};"

    def call(self, e: ir.Call) -> str:
        return self.call_text(e.name, e.args, e.type)

    def call_text(self, name, args, t) -> str:
        fn = self.d.math.get(name, name)
        return f"{fn}({', '.join(self.expr(a, ASSIGN) for a in args)})"

    def atomic(self, e: ir.Atomic) -> str:  # pragma: no cover - dialects implement
        raise NotImplementedError

    def vector_select(self, e: ir.Select) -> str:
        return f"select({self.expr(e.b, ASSIGN)}, {self.expr(e.a, ASSIGN)}, {self.expr(e.cond, ASSIGN)})"

    def barrier(self, s: ir.Barrier) -> str:
        flags = " | ".join(f"mem_flags::{f}" for f in s.flags) or "mem_flags::mem_none"
        return self.d.barrier[s.scope].format(flags=flags)

    def fence(self, s: ir.Fence) -> str:
        flags = " | ".join(f"mem_flags::{f}" for f in s.flags) or "mem_flags::mem_none"
        return self.d.fence[s.scope].format(flags=flags, order=s.order)

    def array_decl(self, s: ir.ArrayDecl) -> str:
        init = ""
        if s.init is not None:
            init = " = {" + ", ".join(self.literal(v, s.elem) for v in _flat(s.init)) + "}"
        prefix = self.d.threadgroup_prefix if s.space == "threadgroup" else self.d.space.get("thread_array", "")
        dims = f"  // {' x '.join(map(str, s.shape))}" if len(s.shape) > 1 else ""
        return f"{self.align_spec(s)}{prefix}{self.tname(s.elem)} {self.name(s.name)}[{s.size}]{init};{dims}"

    def align_spec(self, s: ir.ArrayDecl) -> str:
        """``alignas(16) `` (MSL) / ``__align__(16) `` (CUDA) for an aligned array, else ""."""
        return self.d.align.format(n=s.align) if getattr(s, "align", None) else ""

    def param_decl(self, p: ir.FuncParam, fn: ir.Function) -> str:
        if p.space is None:
            return f"{self.tname(p.type)} {self.name(p.name)}"
        const = "const " if p.const else ""
        return f"{self.d.space.get(p.space, '')}{const}{self.tname(p.type)}* {self.name(p.name)}"

    # ------------------------------------------------------------------ statements

    def block(self, stmts, ind: str, out: list[str]) -> None:
        for s in stmts:
            self.stmt(s, ind, out)

    def stmt(self, s, ind: str, out: list[str]) -> None:
        m = getattr(self, "s_" + type(s).__name__, None)
        if m is None:
            raise KernelTypeError(f"the {self.d.name} printer cannot print {type(s).__name__}", s.span)
        m(s, ind, out)

    def inline(self, s) -> str:
        """A simple statement as an expression (for ``for`` headers), without ``;``."""
        if isinstance(s, ir.Assign):
            return self.assign_text(s)
        if isinstance(s, ir.Decl):
            return self.decl_text(s)
        if isinstance(s, ir.Store):
            return self.store(s.buf, s.index, s.value).rstrip(";")
        if isinstance(s, ir.ExprStmt):
            return self.expr(s.expr)
        raise KernelTypeError(f"cannot print {type(s).__name__} inside a for header", s.span)

    def decl_text(self, s: ir.Decl) -> str:
        base = f"{self.tname(s.var.type)} {self.name(s.var.name)}"
        return base if s.init is None else f"{base} = {self.expr(s.init, ASSIGN)}"

    def assign_text(self, s: ir.Assign) -> str:
        v, n = s.value, self.name(s.var.name)
        if (isinstance(v, ir.BinOp) and v.op in ir.ARITH_OPS + ir.BIT_OPS and isinstance(v.a, ir.Var)
                and v.a.name == s.var.name and v.type == s.var.type
                and not (v.op == "%" and T.elem_of(v.type).is_float)):
            rhs = self.expr(v.b, ASSIGN + 1)
            return f"{n} {v.op}= {rhs}"
        return f"{n} = {self.expr(v, ASSIGN)}"

    def s_Decl(self, s, ind, out):
        out.append(f"{ind}{self.decl_text(s)};")

    def s_Assign(self, s, ind, out):
        out.append(f"{ind}{self.assign_text(s)};")

    def s_Store(self, s, ind, out):
        out.append(ind + self.store(s.buf, s.index, s.value))

    def s_ArrayDecl(self, s, ind, out):
        out.append(ind + self.array_decl(s))

    def s_ViewDecl(self, s, ind, out):
        out.append(ind + self.view_decl(s))

    def view_decl(self, s: ir.ViewDecl) -> str:
        """A reinterpreting view of a buffer: a pointer of another element type."""
        ptr = f"{'const ' if s.const else ''}{self.d.space.get(s.space, '')}{self.tname(s.elem)}*"
        src, p = self.name(s.buf), self.k.param(s.buf)
        if not s.const and p is not None and p.kind == "buffer" and not p.is_output:
            # an input written in place (numba_compat/inplace_copy.py: a private copy)
            src = f"const_cast<{self.d.space.get(s.space, '')}{self.tname(p.type)}*>({src})"
            if p.type == s.elem:
                return f"{ptr} {self.name(s.name)} = {src};"
        return f"{ptr} {self.name(s.name)} = reinterpret_cast<{ptr}>({src});"

    def s_If(self, s, ind, out):
        out.append(f"{ind}if ({self.expr(s.cond)}) {{")
        self.block(s.then, ind + self.d.indent, out)
        orelse = s.orelse
        while len(orelse) == 1 and isinstance(orelse[0], ir.If):
            out.append(f"{ind}}} else if ({self.expr(orelse[0].cond)}) {{")
            self.block(orelse[0].then, ind + self.d.indent, out)
            orelse = orelse[0].orelse
        if orelse:
            out.append(f"{ind}}} else {{")
            self.block(orelse, ind + self.d.indent, out)
        out.append(f"{ind}}}")

    def s_For(self, s, ind, out):
        v = self.name(s.var.name)
        step = s.step
        neg = isinstance(step, ir.Const) and not isinstance(step.value, (list, tuple)) and step.value < 0
        cmp = ">" if neg else "<"
        if isinstance(step, ir.Const) and step.value == 1:
            upd = f"++{v}"
        elif neg and step.value == -1:
            upd = f"--{v}"
        elif neg:
            upd = f"{v} -= {self.literal(-step.value, step.type)}"
        else:
            upd = f"{v} += {self.expr(step, ASSIGN)}"
        out.append(f"{ind}for ({self.tname(s.var.type)} {v} = {self.expr(s.start, ASSIGN)}; "
                   f"{v} {cmp} {self.expr(s.stop, REL + 1)}; {upd}) {{")
        self.block(s.body, ind + self.d.indent, out)
        out.append(f"{ind}}}")

    def s_CFor(self, s, ind, out):
        inner = ind
        if len(s.init) > 1:
            out.append(f"{ind}{{")
            inner = ind + self.d.indent
            self.block(s.init, inner, out)
            init = ""
        else:
            init = self.inline(s.init[0]) if s.init else ""
        cond = self.expr(s.cond) if s.cond is not None else ""
        upd = ", ".join(self.inline(u) for u in s.update)
        out.append(f"{inner}for ({init}; {cond}; {upd}) {{")
        self.block(s.body, inner + self.d.indent, out)
        out.append(f"{inner}}}")
        if len(s.init) > 1:
            out.append(f"{ind}}}")

    def s_While(self, s, ind, out):
        if s.do_while:
            out.append(f"{ind}do {{")
            self.block(s.body, ind + self.d.indent, out)
            out.append(f"{ind}}} while ({self.expr(s.cond)});")
        else:
            out.append(f"{ind}while ({self.expr(s.cond)}) {{")
            self.block(s.body, ind + self.d.indent, out)
            out.append(f"{ind}}}")

    def s_Break(self, s, ind, out):
        out.append(f"{ind}break;")

    def s_Continue(self, s, ind, out):
        out.append(f"{ind}continue;")

    def s_Return(self, s, ind, out):
        out.append(f"{ind}return;" if s.value is None else f"{ind}return {self.expr(s.value)};")

    def s_Barrier(self, s, ind, out):
        out.append(ind + self.barrier(s))

    def s_Fence(self, s, ind, out):
        out.append(ind + self.fence(s))

    def s_ExprStmt(self, s, ind, out):
        out.append(f"{ind}{self.expr(s.expr)};")

    # ------------------------------------------------------------------ functions, kernel

    def _function_attributes(self) -> dict[str, list[str]]:
        """Thread attributes each device function reads, directly or through calls: MLX
        passes attributes only to the kernel, so functions receive them as parameters."""
        direct, calls = {}, {}
        for f in self.k.functions:
            nodes = list(ir.walk(f.body))
            direct[f.name] = {n.name for n in nodes if isinstance(n, ir.ThreadAttr)}
            calls[f.name] = {n.func for n in nodes if isinstance(n, ir.FuncCall)}
        changed = True
        while changed:
            changed = False
            for f, cs in calls.items():
                for c in cs:
                    extra = direct.get(c, set()) - direct[f]
                    if extra:
                        direct[f] |= extra
                        changed = True
        order = list(ir.THREAD_ATTRIBUTES)
        return {f: sorted(a, key=order.index) for f, a in direct.items()}

    def function_signature(self, f: ir.Function) -> str:
        params = [self.param_decl(p, f) for p in f.params]
        params += [f"{self.attr_type(a)} {a}" for a in self.func_attrs.get(f.name, ())]
        return f"{self.d.func_prefix}{self.tname(f.ret)} {self.name(f.name)}({', '.join(params)})"

    def attr_type(self, a: str) -> str:
        return ir.THREAD_ATTRIBUTES[a]

    def function(self, f: ir.Function) -> str:
        self.in_function = f
        out = [self.function_signature(f) + " {"]
        self.block(f.body, self.d.indent, out)
        out.append("}")
        self.in_function = None
        return "\n".join(out)

    def global_decl(self, g: ir.ArrayDecl) -> str:
        vals = ", ".join(self.literal(v, g.elem) for v in _flat(g.init or []))
        return f"{self.d.global_prefix}{self.tname(g.elem)} {self.name(g.name)}[{g.size}] = {{{vals}}};"

    def body_lines(self) -> list[str]:
        out: list[str] = []
        self.block(self.k.body, "", out)
        return out

    def header_parts(self) -> tuple[list[str], list[str]]:
        """(globals and prototypes, function definitions) -- helpers are added by render."""
        decls = [self.global_decl(g) for g in self.k.globals]
        funcs = []
        if len(self.k.functions) > 1:
            decls += [self.function_signature(f) + ";" for f in self.k.functions]
        for f in self.k.functions:
            funcs.append(self.function(f))
        return decls, funcs


def _implicit_uint(x, other, op):
    """``x`` without a cast int -> uint when C converts it anyway: as an operand of an
    arithmetic, bitwise or comparison operator whose other operand is uint (the usual
    arithmetic conversions give the same value). Keeps ``base + j`` readable where a
    loop counter became int (``passes/ranges.py``)."""
    if (op not in ("<<", ">>") and isinstance(x, ir.Cast) and isinstance(x.type, T.ScalarType)
            and x.type.name == "uint32" and isinstance(x.value.type, T.ScalarType)
            and x.value.type.name == "int32" and isinstance(other.type, T.ScalarType)
            and other.type.name == "uint32"):
        return x.value
    return x


def _flat(v):
    if isinstance(v, (list, tuple, np.ndarray)):
        for x in v:
            yield from _flat(x)
    else:
        yield v


def atomic_buffers(kernel: ir.KernelIR, outputs_together: bool = True) -> tuple[set[str], dict[str, set[str]]]:
    """Which buffers must have an atomic type: kernel buffer/array names, and per device
    function its atomic buffer parameters. A buffer is atomic when an ``Atomic`` targets
    it or anything it is passed to (or that is passed to it); with
    ``outputs_together`` (MLX's ``atomic_outputs``), one atomic output makes all atomic.

    >>> from metalbench import types as T
    >>> k = ir.KernelIR("k", [ir.Param("o", "buffer", T.int32, is_output=True)],
    ...     [ir.ExprStmt(ir.Atomic("add", "o", ir.Const(0, T.uint32), [ir.Const(1, T.int32)], T.int32))])
    >>> atomic_buffers(k)[0]
    {'o'}
    """
    parent: dict = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a, b):
        parent[find(a)] = find(b)
    marked = set()
    scopes = [(None, kernel.body)] + [(f.name, f.body) for f in kernel.functions]
    fparams = {f.name: [p.name for p in f.params] for f in kernel.functions}
    for scope, body in scopes:
        for n in ir.walk(body):
            if isinstance(n, ir.Atomic):
                marked.add((scope, n.buf))
            elif isinstance(n, ir.FuncCall) and n.func in fparams:
                for a, pn in zip(n.args, fparams[n.func]):
                    if isinstance(a, ir.BufArg):
                        union((scope, a.buf), (n.func, pn))
    for p in kernel.params:
        if p.atomic:
            marked.add((None, p.name))
    outs = [(None, p.name) for p in kernel.outputs]
    while True:
        roots = {find(m) for m in marked}
        if outputs_together and any(find(o) in roots for o in outs):
            new = set(outs) - marked
            if new:
                marked |= new
                continue
        break
    roots = {find(m) for m in marked}
    kernel_set = set()
    func_sets: dict[str, set[str]] = {f.name: set() for f in kernel.functions}
    nodes = set(parent) | marked
    for node in nodes:
        if find(node) in roots:
            scope, name = node
            if scope is None:
                kernel_set.add(name)
            else:
                func_sets.setdefault(scope, set()).add(name)
    return kernel_set, func_sets


class ExtraInputs(list):
    """Names of the inputs the generated code needs after the user's (a list), and,
    called as ``extra(grid, threadgroup, output_shapes)``, the MLX arrays to append:
    ``mb_grid`` (CUDA: uint32[3], the launch guard) and ``mb_<out>_shape`` /
    ``mb_<out>_strides`` (int32/int64, for kernels that read an output's shape).

    >>> ExtraInputs([("mb_grid", "grid", "")])((10, 1, 1))[0].tolist()
    [10, 1, 1]
    """

    def __init__(self, items=(), outputs=()):
        self.items = list(items)
        self.outputs = list(outputs)      # output names, in order (for list output_shapes)
        super().__init__(n for n, _, _ in self.items)

    def __call__(self, grid, threadgroup=None, output_shapes=None):
        import mlx.core as mx
        if isinstance(output_shapes, (list, tuple)):
            output_shapes = dict(zip(self.outputs, output_shapes))
        out = []
        for name, kind, which in self.items:
            if kind == "grid":
                g = tuple(int(x) for x in grid) + (1,) * (3 - len(tuple(grid)))
                out.append(mx.array(list(g[:3]), dtype=mx.uint32))
                continue
            if output_shapes is None or which not in output_shapes:
                raise KeyError(f"{name} needs the shape of output {which!r}: pass output_shapes "
                               f"(a list in output order or a dict by name)")
            shape = [int(x) for x in output_shapes[which]] or [1]
            if kind == "shape":
                out.append(mx.array(shape, dtype=mx.int32))
            else:
                st, acc = [], 1
                for d in reversed(shape):
                    st.append(acc)
                    acc *= d
                out.append(mx.array(list(reversed(st)), dtype=mx.int64))
        return out


@dataclass
class Rendered:
    """What ``mx.fast.metal_kernel`` / ``mx.fast.cuda_kernel`` receive, plus the facts a
    caller needs to build the launch: input/output types (for ``full_source``) and the
    extra inputs the generated code expects after the user's (CUDA: ``mb_grid``)."""
    name: str
    body: str
    header: str
    input_names: list[str]
    output_names: list[str]
    atomic_outputs: bool = False
    input_types: list | None = None       # [(ScalarType, ndim)], ndim 0 for scalars
    output_types: list | None = None      # [ScalarType]
    extra_inputs: ExtraInputs = field(default_factory=ExtraInputs)

    @property
    def source(self) -> str:
        """Alias of :attr:`body` (MLX's argument name)."""
        return self.body


def extra_items(printer: "CPrinter") -> list[tuple[str, str, str]]:
    return list(printer.extra)


def extra_types(items) -> list:
    return [(T.int32 if kind == "shape" else T.int64 if kind == "strides" else T.uint32, 1)
            for _, kind, _ in items]


_TOKENS = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.S)


def compact(text: str) -> str:
    """Printed source as MLX gets it: comments and indentation dropped, every line kept
    (a compiler error's line number still names the printed line). MLX rebuilds a custom
    kernel's whole source on every call and hashes it at every evaluation (the library or
    module name), so its length is paid per launch; ``k.source()`` and exports keep the
    readable text.

    >>> compact('// why\\n    x = "a // b"; // c\\n/* d\\n e */ y = 1;')
    '\\nx = "a // b";\\n\\ny = 1;'
    """
    def drop(m):
        t = m.group(0)
        return t if t[0] in "\"'" else "\n" * t.count("\n")
    return "\n".join(line.strip() for line in _TOKENS.sub(drop, text).split("\n"))


def assemble_header(helpers: list[str], decls: list[str], funcs: list[str]) -> str:
    parts = [h.strip("\n") for h in helpers] + (["\n".join(decls)] if decls else []) + funcs
    return "\n\n".join(parts) + ("\n" if parts else "")


def render_with(p: "CPrinter", kernel: ir.KernelIR, lines: list[str], extra_items: list = (),
                atomic_outputs: bool = False) -> Rendered:
    """The :class:`Rendered` both dialects return: the body ``lines`` ``p`` printed, its
    header, MLX's names and types, and the extra inputs (``extra_items`` first, then
    those the printer asked for while printing)."""
    body = "\n".join(lines)
    decls, funcs = p.header_parts()
    header = assemble_header(list(p.helpers.values()), decls, funcs)
    ins = kernel.inputs
    items = list(extra_items) + p.extra
    extra = ExtraInputs(items, [x.name for x in kernel.outputs])
    return Rendered(
        name=re.sub(r"\W", "_", kernel.name),       # MLX pastes it into an identifier
        body=body,
        header=header,
        input_names=[p.name(x.name) for x in ins] + list(extra),
        output_names=[p.name(x.name) for x in kernel.outputs],
        atomic_outputs=atomic_outputs,
        input_types=[(x.type, 0 if x.kind == "scalar" else x.ndim) for x in ins] + extra_types(items),
        output_types=[x.type for x in kernel.outputs],
        extra_inputs=extra,
    )
