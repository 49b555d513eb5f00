"""The MSL translator: scopes, type names, temporaries and errors, assembled from the
syntax mixins; the entry point :func:`translate_kernel`."""
from __future__ import annotations

import re
from dataclasses import replace as _r

from ... import ir
from ... import types as T
from ...errors import (ControlFlow, KernelNameError, KernelSyntaxError, KernelTypeError, MetalbenchError, Source, Span,
                        internal_error)
from ...mlx_signature import shape_infos
from ...semantics import MSL, Semantics
from .buffer_choice import BufferChoiceMixin
from .calls import CallsMixin, _is_vote_t
from .expressions import ExpressionsMixin
from .header import HeaderMixin
from .memory import MemoryMixin
from .simdgroup import MATRIX_TEMPLATES, SimdgroupMatrixMixin
from .cxx_assign import CxxAssignMixin
from .cxx_calls import CxxCallsMixin
from .cxx_params import CxxParamsMixin
from .cxx_decls import CxxDeclsMixin, template_names
from .mlx_prelude import prelude_for
from .cxx_names import CxxNamesMixin
from .cxx_templates import CxxTemplatesMixin
from .cxx_objects import CxxObjectsMixin
from .mlx_utils import MLXUtilsMixin
from .parse import _KEYWORD_CAST_TYPES, _parse
from .preprocess import Preprocessor
from .statements import StatementsMixin
from .struct_views import StructViewsMixin
from .lambdas import LambdasMixin
from .loops import LoopsMixin
from .operators import OperatorsMixin
from .vector_arrays import VectorArraysMixin
from .complex64 import NAMES as _COMPLEX_NAMES, ComplexMixin, complex_of
from .array_pools import ArrayPoolsMixin
from .metal_matrices import _TEMPLATES as _MATRIX_TYPE_TEMPLATES, MetalMatricesMixin, matrix_type_named
from .symbols import _ATOMIC_TYPES, METAL_ONLY, VOID, Buf, FuncDef, Ptr, Ref, ShapeArr, _type_of_descriptor, _TypeName


_CXX_TYPE_NODES = ("type_identifier", "template_type", "qualified_identifier", "dependent_type", "decltype")


class Translator(StatementsMixin, LoopsMixin, ExpressionsMixin, MemoryMixin, CallsMixin, HeaderMixin, MLXUtilsMixin,
                 SimdgroupMatrixMixin, CxxDeclsMixin, CxxTemplatesMixin, CxxNamesMixin, CxxObjectsMixin, CxxCallsMixin, CxxParamsMixin,
                 CxxAssignMixin, StructViewsMixin, LambdasMixin, OperatorsMixin, VectorArraysMixin, BufferChoiceMixin,
                 MetalMatricesMixin, ArrayPoolsMixin, ComplexMixin):
    """Translates an MSL kernel body (and its header) into a KernelIR."""

    def __init__(self, name, src, hsrc, template, atomic_outputs):
        self.name = name
        self.src = src
        self.hsrc = hsrc
        self.template = dict(template)
        self.atomic_outputs = atomic_outputs
        # (atomic_outputs.py) the uses of the outputs, while deciding atomic_outputs: a list,
        # with the outputs left plain and atomic uses of them recorded instead of refused
        self.atomic_uses = None
        self.out_roots: dict[str, str] = {}         # buffer or pointer parameter -> the output it is
        self.call_sites: list = []                  # the header calls being translated (their spans)
        self.functions: dict[str, ir.Function] = {}
        self.func_order: list[ir.Function] = []
        self.funcdefs: dict[str, list[FuncDef]] = {}
        self.funcdef_code: dict[int, str] = {}      # a function definition's text (body or header)
        self._spec_names: dict[tuple, str] = {}     # specialisation key -> IR function name
        self._spec_funcs: dict[str, ir.Function] = {}   # IR function name -> its function (constexpr.py)
        self.globals: list[ir.ArrayDecl] = []
        self.global_syms: dict[str, object] = {}
        self.used_names: set[str] = set()
        self.tg_arrays: list[ir.ArrayDecl] = []
        self.array_pools, self.array_pool_decls = {}, {}   # arrays a pointer moves between (array_pools.py)
        self.specialising: set = set()
        # per function context
        self.scopes: list[dict] = []
        self.pre: list[ir.Stmt] | None = None
        self.lazy = 0
        self.buffer_choice = {}      # (start, end) of a c ? A : B pointer -> the side taken (stmt_list)
        self.buffer_splits = []      # the blocks split on such a pointer (buffer_choice.py)
        self.ret_type = None
        self.in_signature = False    # a header template's signature: enable_if fails softly (SFINAE)
        self.in_kernel = True
        self.code = ""
        self.quals: dict = {}
        self.cur_src = src
        self.line_offset = 1
        self.tmp = 0
        self.sem = Semantics(MSL, once=lambda e, span: self.new_tmp(e.type, e, span))
        self.sem.declare_alias = self.declare_alias
        # Metal requires a vector access aligned as its type (float4 16, packed_float4 4); in a
        # function a pointer parameter's offsets count from wherever the caller points
        self.sem.vector_align = lambda v: ((self.layout_of(v.type, v.packed) or (0, 0))[1], self.in_kernel)
        self.view_decls: list[ir.ViewDecl] = []     # reinterpreting views of the body being translated
        self.alias_names: dict = {}                 # (buffer, elem) -> view name, in that body
        self.alias_root: dict = {}                  # view name -> (buffer, space, const, elem)
        self.cxx_init()                             # C++: namespaces, classes, objects (cxx_*.py)

    def sp(self, node) -> Span:
        off = self.line_offset
        s = self.cur_src
        return Span(s, node.start_point[0] - off + s.first_line, node.start_point[1],
                    node.end_point[0] - off + s.first_line, node.end_point[1])

    def text(self, node) -> str:
        return self.code[node.start_byte:node.end_byte]

    def quote(self, node, n: int = 40) -> str:
        """``node``'s text for a message, as written: its first line, at most ``n``
        characters, with each ``<`` that the parser reads as ``>`` (``parse._swap_less``),
        each blanked address-space qualifier and each ``{}`` read as ``00`` restored
        (``self.text`` is the masked text the parser reads)."""
        a, b = node.start_byte, node.end_byte
        t = list(self.code[a:b])
        for p in self.quals.get("<", ()):
            if a <= p < b:
                t[p - a] = "<"
        for p in self.quals.get("{}", ()):
            if a <= p < b - 1:
                t[p - a:p - a + 2] = "{}"
        for p, word in self.quals.items():      # the blanked qualifiers (same length)
            if type(p) is int and a <= p and p + len(word) <= b:
                t[p - a:p - a + len(word)] = word
        lines = "".join(t).strip().splitlines()       # (nothing left: nothing to quote)
        return lines[0][:n] if lines else ""

    def unsupported(self, node, what):
        raise KernelSyntaxError(f"{what} is not supported by the simulator; {METAL_ONLY}",
                                self.sp(node))

    def type_err(self, node, msg, hint=None):
        raise KernelTypeError(msg, self.sp(node), hint=hint)

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

    def resolve_type(self, node, quals_from=None):
        """The type named by a type node; None for void. Returns (type, atomic)."""
        k = node.type
        txt = self.text(node).strip()
        if k == "primitive_type" and txt == "void":
            return None, False
        if _is_vote_t(txt):
            return T.uint64, False               # the bits of a simd_vote (named_type)
        if k == "union_specifier" and node.child_by_field_name("name") is None:   # using U = union {...}
            self.unsupported(node, "an unnamed union (to read a value's bits as another type, use as_type<T>(v))")
        if k in ("struct_specifier", "class_specifier") and node.child_by_field_name("name") is not None:
            return self.resolve_type(node.child_by_field_name("name"))   # struct S x; struct S {...} x;
        if k in _CXX_TYPE_NODES:
            t = self.cxx_type(node)          # classes, templates, member types, decltype, traits
            if t is VOID:
                return None, False
            if t is not None:
                return t, False
            if k == "dependent_type":        # typename metal::vec<U, 2>: the type it names
                return self.resolve_type(node.named_children[-1])
        if k == "sized_type_specifier":
            txt = " ".join(txt.split())
            if txt in T.BY_MSL:
                return T.BY_MSL[txt], False
            if txt in ("unsigned", "unsigned int"):
                return T.uint32, False
        if k == "qualified_identifier":
            inner = node.child_by_field_name("name")
            if inner is not None and inner.type in ("template_type", "qualified_identifier", "template_function"):
                return self.resolve_type(inner)      # metal::vec<float, 4>
            txt = txt.split("::")[-1].strip()
        if k in ("template_type", "template_function") and txt.replace(" ", "") in _COMPLEX_NAMES:
            return self.named_type(txt.replace(" ", ""))      # complex_t<float> (complex64.py)
        if k in ("template_type", "template_function"):
            # (a template_function: the grammar's reading of vec<float, 4>(x), a constructor call)
            nm = self.text(node.child_by_field_name("name"))
            args = node.child_by_field_name("arguments")
            targs = [c for c in args.named_children]
            if nm in ("atomic", "metal::atomic") and len(targs) == 1:
                t, _ = self.resolve_type(_type_of_descriptor(targs[0]))
                return t, True
            if nm.replace(" ", "") in _MATRIX_TYPE_TEMPLATES:
                return self.matrix_template_type(node, targs), False
            if nm.replace(" ", "") in MATRIX_TEMPLATES:
                return self.matrix_type(node, targs), False
            if nm in ("vec", "metal::vec") and len(targs) == 2:
                t, _ = self.resolve_type(_type_of_descriptor(targs[0]))
                kind, n = self.template_args([targs[1]])[0]       # a constant the grammar may read as a type
                if kind != "v":
                    self.type_err(targs[1], "vec<T, n> needs a number of components")
                if int(n.value) not in T.VECTOR_WIDTHS:   # clang allows any n; components are named to 16
                    self.unsupported(node, f"the type '{txt}' (a vector of {int(n.value)} components; "
                                     "metalbench has vectors of 2 to 16)")
                return T.vector_of(t, int(n.value)), False
            self.unsupported(node, f"the type '{txt}'")
        if k == "type_descriptor":
            return self.resolve_type(node.child_by_field_name("type"))
        t = self.named_type(txt)
        if t is not None:
            return t
        if txt in _ATOMIC_TYPES:
            return _ATOMIC_TYPES[txt], True
        if re.fullmatch(r"(?:metal::)?(?:quad_vote|"
                        r"texture[123]d(?:_array)?<.*>|sampler|simd_mask)", txt):
            self.unsupported(node, f"the Metal type '{txt}'")
        raise KernelNameError(f"unknown type '{txt}'", self.sp(node),
                              hint=self._template_hint(txt))

    def named_type(self, txt):
        txt = _KEYWORD_CAST_TYPES.get(txt, txt)
        if txt in ("simd_vote", "metal::simd_vote"):
            # simd_ballot's result: its 64 bits (simd_vote::vote_t). Metal converts it only
            # explicitly, so a kernel Metal accepts reads the same bits through a ulong
            return T.uint64, False
        if txt.startswith("packed_"):       # the same values; only the memory layout differs
            txt = txt[len("packed_"):]
        sym = self.lookup(txt)
        if isinstance(sym, _TypeName):
            return sym.t, False
        if txt in self.template and not isinstance(self.template[txt], (bool, int)):
            return complex_of(self.template[txt]), False
        if txt in _COMPLEX_NAMES:
            return complex_of(T.complex64), False       # MLX's complex64_t (complex64.py)
        if txt in ("auto",):
            return "auto", False
        if matrix_type_named(txt) is not None:
            return matrix_type_named(txt), False
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
            if isinstance(self.lookup(txt), (ir.Var, Buf, Ptr, Ref, ir.Const, ShapeArr)):
                return False
            return self.named_type(txt) is not None
        return False

    def output_root(self, buf):
        """The output that buffer (or view, or pointer parameter) ``buf`` is, else None."""
        return self.out_roots.get(self.alias_root.get(buf, (buf,))[0])

    def use_of_output(self, buf, kind, what, span):
        """Record a use of the output under ``buf`` while deciding atomic_outputs
        (:mod:`.atomic_outputs`); True when recorded (the caller then lets it pass)."""
        if self.atomic_uses is None:
            return False
        root = self.output_root(buf)
        if root is None and kind != "atomic":
            return False
        from .atomic_outputs import AtomicUse
        site = self.call_sites[0] if self.call_sites else None
        self.atomic_uses.append(AtomicUse(root or buf, kind, what, span, site))
        return True

    def quals_before(self, start, end):
        """Address-space qualifiers masked in the byte range [start, end), the range
        extended back over the blanks the masking left before ``start``."""
        while start > 0 and self.code[start - 1] in " \t\r\n":
            start -= 1
        return [q for p, q in self.quals.items() if isinstance(p, int) and start <= p < end]

    def translate(self, body, header, inputs, outputs, scalars, shape_use, constant=(), prelude=None) -> ir.KernelIR:
        params = []
        syms = {}
        for nm, t, nd in inputs:
            if nm in scalars and t is T.complex64:
                self.complex_param(nm, t, 0, False)          # (raises: not supported)
            if nm in scalars:
                params.append(ir.Param(nm, "scalar", t, 0))
                syms[nm] = ir.Var(nm, t)
            else:
                u = shape_use.get(nm, (False, False, False))
                if t is T.complex64:        # float32 pairs under complex64_t views (complex64.py)
                    p, syms[nm] = self.complex_param(nm, t, nd, False)
                    params.append(_r(p, uses_shape=u[0], uses_strides=u[1], uses_ndim=u[2]))
                else:
                    params.append(ir.Param(nm, "buffer", t, nd, uses_shape=u[0], uses_strides=u[1],
                                           uses_ndim=u[2]))
                    syms[nm] = Buf(nm, t, "constant" if nm in constant else "device", const=True, ndim=nd)
                syms[nm + "_shape"] = ShapeArr(nm, nd, "shape")
                syms[nm + "_strides"] = ShapeArr(nm, nd, "strides")
                syms[nm + "_ndim"] = ir.Const(nd, T.int32)
        for nm, t, nd in outputs:
            if t is T.complex64:
                p, syms[nm] = self.complex_param(nm, t, nd, True)
                params.append(p)
                continue
            params.append(ir.Param(nm, "buffer", t, nd, is_output=True, atomic=self.atomic_outputs))
            syms[nm] = Buf(nm, t, "device", atomic=self.atomic_outputs, ndim=nd)
            self.out_roots[nm] = nm
        self.used_names.update(syms)
        for k, v in self.template.items():
            if isinstance(v, bool):
                syms.setdefault(k, ir.Const(v, T.bool_))
            elif isinstance(v, int):
                syms.setdefault(k, self.sem.const(v, T.int32))
        self.kernel_syms = syms
        # (a function template's name: after its specifiers, METAL_FUNC's expansion included)
        self.template_names = header_template_names((prelude[0] if prelude else "") + "\n" + header)
        if prelude:           # MLX's utils.h pieces the kernel names (mlx_prelude.py), first
            self.header(*prelude)
        if header.strip():
            self.header(header)
        tree, code, quals = _parse(body, self.src, 1, wrap=True, templates=self.template_names)
        self.code, self.quals, self.cur_src, self.line_offset = code, quals, self.src, 1
        fn = tree.root_node.named_children[0]
        self.scopes = [syms]
        self.in_kernel = True
        self.ret_type = None
        self.view_decls, self.alias_names = [], {}
        body_node = fn.child_by_field_name("body")
        self.array_pools = self.find_array_pools(body_node)
        prologue = self.advance_params(body_node, syms)
        stmts = self.block(body_node)
        body_ir = list(self.tg_arrays) + self.view_decls + prologue + stmts
        k = ir.KernelIR(self.name, params, body_ir, functions=list(self.func_order),
                        globals=self.globals, source=self.src)
        self.check_buffer_splits(k)
        return k


def header_template_names(header: str) -> set[str]:
    """The header's function, class and alias templates: ``f<N>(x)`` in the body is a call,
    not ``f < N > (x)``.

    >>> sorted(header_template_names("template <uint N> void put(device float* p) {}") - template_names(""))
    ['put']
    """
    # (a function template's name: after its specifiers, METAL_FUNC's expansion included)
    return set(re.findall(r"template\s*<[^;{]*?>\s*(?:inline\s+|METAL_FUNC\s+|static\s+|"
                          r"__attribute__\s*\(\([^()]*\)\)\s*)*"
                          r"[\w:<>,\s*&]*?\b(\w+)\s*\(", header)) | template_names(header)


def parse_body(source: str, src: Source, header: str = "", template_args=()):
    """``(tree, code, quals)`` of a kernel body read as :func:`translate_kernel` reads it:
    after the C preprocessor with the header's macros (``SMAT_UNROLL for (...)``), with the
    header's templates (:func:`header_template_names`); a header the preprocessor refuses
    is left out (the translation reports it). For what looks at a body alone (a ``%%metal``
    cell's inputs and outputs, its syntax check).

    >>> h = "#define UNROLL\\ntemplate <uint N> void put(device float* p) {}"
    >>> tree, code, _ = parse_body("UNROLL for (int j = 0; j < 2; j++) put<2>(out);", Source("b", ""), h)
    >>> tree.root_node.has_error
    False
    """
    text = source
    header = prelude_for(header, source) + header       # MLX's utils.h pieces it names
    try:
        pp = Preprocessor("safe", list(template_args))
        if header:
            pp.run(header, Source("header", header, 1))
        text = pp.run(source, src)
    except MetalbenchError:
        pass
    return _parse(text, src, 1, True, templates=header_template_names(header) if header else frozenset())


def translate_kernel(name, source, header="", *, inputs, outputs, scalars=(), template=(),
                     atomic_outputs=False, first_line=1, math_mode="safe", constant_inputs=(),
                     atomic_uses=None) -> ir.KernelIR:
    """Translate an MSL kernel body (and header) into a :class:`~metalbench.ir.KernelIR`.

    ``inputs``: ``[(name, ScalarType, ndim)]`` in MLX order; names in ``scalars`` are
    0-d inputs (``constant T&``); names in ``constant_inputs`` are arrays MLX binds as
    ``const constant T*`` (fewer than 8 elements), the rest ``const device T*``.
    ``outputs``: ``[(name, ScalarType, ndim)]``.
    ``template``: ``[(name, ScalarType | int | bool)]``. Errors point at body lines.
    ``math_mode``: MLX's ``compile_options["math_mode"]`` (``"fast"`` defines ``__FAST_MATH__``
    for the preprocessor, :mod:`.preprocess`). ``atomic_uses``: a list to record how the
    outputs are used (:mod:`.atomic_outputs`), which decides ``atomic_outputs``.

    >>> k = translate_kernel("k", "out[0] = T(N);", inputs=[],
    ...                      outputs=[("out", T.float32, 1)],
    ...                      template=[("T", T.float32), ("N", 3)])
    >>> print(ir.dump(k.body))
    out[0] = 3.0
    """
    bad = sorted(set(re.sub(r"\w", "", name, flags=re.ASCII)))
    if bad:
        # MLX writes the body into '[[kernel]] void custom_kernel_<name>...(' (mlx/backend/common/
        # metal_kernel.cpp), so on a GPU such a name is a Metal syntax error, not a kernel
        raise KernelSyntaxError(
            f"kernel name {name!r}: Metal cannot compile it -- MLX names the kernel function "
            f"custom_kernel_{name}, and {', '.join(map(repr, bad))} cannot appear in a function name",
            hint="use letters, digits and '_' only (e.g. replace '.' and '-' by '_')")
    src = Source(f"{name} source", source, first_line)
    hsrc = Source(f"{name} header", header, 1)
    tmpl = []
    for k, v in template:
        if not isinstance(v, (bool, int, T.ScalarType)):
            raise KernelTypeError(f"template argument {k}={v!r} must be a dtype, an int or a bool")
        tmpl.append((k, v))
    tr = Translator(name, src, hsrc, tmpl, atomic_outputs and atomic_uses is None)
    if atomic_uses is not None:
        tr.atomic_uses = atomic_uses
        tr.sem.plain_access = lambda v, what, sp: tr.use_of_output(v.buf, "plain", what, sp)
    # MLX passes x_shape & co. when the text mentions them (a substring test on the raw body)
    shape_use = dict(zip([n for n, _, _ in inputs], shape_infos(source, [n for n, _, _ in inputs])))
    pp = Preprocessor(math_mode, [k for k, _ in template])   # the header's macros reach the body
    pre = prelude_for(header, source)       # what MLX's utils.h would give them (mlx_prelude.py)
    psrc = Source(f"{name}: MLX's utils.h as metalbench writes it", pre, 1)
    prelude = (pp.run(pre, psrc), psrc) if pre else None
    header = pp.run(header, hsrc) if header else header
    source = pp.run(source, src)
    # Metal's matrices are translated by hooks that run only where the text names one
    tr.has_matrices = bool(re.search(r"\b(?:float|half|bfloat)[234]x[234]\b|\bmatrix\s*<", source + (header or "")))
    try:
        kir = tr.translate(source, header, list(inputs), list(outputs), set(scalars), shape_use,
                           set(constant_inputs), prelude)
        kir.read_guard = True     # reads past an input give 0 on CUDA too (codegen/cuda_guard.py)
        return kir
    except (MetalbenchError, ControlFlow):
        raise
    except Exception as e:       # outside any statement (the per-node nets catch the rest)
        raise internal_error(e, Span(src, first_line), f"kernel {name!r}") from e
