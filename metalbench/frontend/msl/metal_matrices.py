"""Metal's matrix types ``floatNxM`` / ``halfNxM`` (``N`` columns of ``M`` rows; also
``metal::float4x4`` and ``matrix<float, 4, 4>``), lowered when translated: a matrix
variable is a thread array of its ``N`` column vectors (as :mod:`.vector_arrays` stores
``float4 c[N]``, a 3-vector taking 4 elements, as Metal lays a matrix out; a threadgroup
matrix a threadgroup array, one per threadgroup), so ``m[i]``
(a column, assignable), ``m[i][j]`` and ``m[i].x`` are the array-of-vectors paths, and a
matrix-valued expression (a constructor, ``a * b``, ``m * s``, ``a + b``, ``-m``,
``transpose(m)``) is translated to its column vectors, each an IR vector expression. A
pointer to matrices in memory (``(device const float4x4*)x``) is a view over rows of column
vectors (``inner=(N,)``: a float3 column takes 16 bytes, as in Metal), a reference
(``const device float3x3& m = M[i]``) one such row. A header function or lambda that
takes or returns a matrix is translated inline at its call (``cxx_calls.py``): a matrix
parameter is a copy (a reference: the argument's variable), a returned matrix a new one.
A matrix member of an object is such a matrix variable among its members (in memory: the
columns at the member's offset). The IR and the backends see only vectors. ::

    >>> from metalbench.frontend.msl import translate_kernel
    >>> from metalbench import ir, types as T
    >>> k = translate_kernel("k", '''float2x2 m = float2x2(x[0], x[1], x[2], x[3]);
    ... float2 v = m * float2(1.0f, 2.0f);
    ... out[0] = v.y + determinant(m);''', "",
    ...                      inputs=[("x", T.float32, 1)], outputs=[("out", T.float32, 1)])
    >>> isinstance(k, ir.KernelIR)
    True
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace as _r

from ... import ir
from ... import types as T
from ...semantics.folding import coerce_value, const_value, fold
from .symbols import Ptr, _NoMatch, _type_of_descriptor, _TypeName

_NAME = re.compile(r"(?:::)?(?:metal::)?(float|half|bfloat)([234])x([234])")
_TEMPLATES = ("matrix", "metal::matrix", "::metal::matrix")
_XYZW = "xyzw"


@dataclass(frozen=True)
class MetalMatrixType:
    """``floatNxM``: ``cols`` columns, each a vector of ``rows`` ``elem`` components."""
    elem: T.ScalarType
    cols: int
    rows: int

    @property
    def name(self) -> str:
        return f"{self.elem.msl}{self.cols}x{self.rows}"

    msl = name

    @property
    def col(self) -> T.VectorType:
        return T.vector_of(self.elem, self.rows)

    @property
    def step(self) -> int:
        """Elements one column takes in memory (a 3-vector is padded to 4)."""
        return 4 if self.rows == 3 else self.rows

    @property
    def align(self) -> int:
        return self.elem.itemsize * self.step

    @property
    def size(self) -> int:
        return self.align * self.cols


@dataclass
class MatPtr(Ptr):
    """A matrix variable (or an array of them, ``dims``): its columns' storage, read through
    ``view`` (a vector view, one element per column)."""
    mt: MetalMatrixType = None
    dims: tuple = ()


def matrix_type_named(txt: str):
    """The matrix type a name spells (``float4x3``, ``metal::half2x2``), else None."""
    m = _NAME.fullmatch(txt.replace(" ", ""))
    if m is None:
        return None
    return MetalMatrixType(T.lookup(m.group(1)), int(m.group(2)), int(m.group(3)))


class MetalMatricesMixin:
    """Metal's matrix types: a part of :class:`~metalbench.frontend.msl.Translator`."""

    has_matrices = False        # set once a matrix type is named: the hooks cost nothing before

    # -- types --------------------------------------------------------------------------
    def matrix_template_type(self, node, targs):
        """``matrix<float, 4, 3>``."""
        if len(targs) != 3:
            self.type_err(node, "matrix<T, columns, rows> takes three arguments")
        el, _ = self.resolve_type(_type_of_descriptor(targs[0]))
        dims = []
        for a in self.template_args(targs[1:]):
            if a[0] != "v":
                self.type_err(node, "matrix<T, columns, rows> needs constant sizes")
            dims.append(int(a[1].value))
        if not isinstance(el, T.ScalarType) or not el.is_float or not all(2 <= d <= 4 for d in dims):
            self.type_err(node, f"'{self.text(node)}': Metal's matrices have 2 to 4 columns and rows of float or half")
        return self.note_matrix(MetalMatrixType(el, dims[0], dims[1]))

    def note_matrix(self, mt):
        self.has_matrices = True
        return mt

    def ctor_type(self, fn):
        """The matrix type a callee names (``float3x3(...)``, ``matrix<half, 2, 2>(...)``, a
        typedef of one), else None."""
        if fn.type == "template_function" or fn.type == "qualified_identifier" and \
                fn.child_by_field_name("name").type == "template_function":
            inner = fn if fn.type == "template_function" else fn.child_by_field_name("name")
            nm = self.text(inner.child_by_field_name("name")).replace(" ", "")
            if nm in _TEMPLATES and self.lookup(nm.split("::")[-1]) is None:     # (not a header's own matrix<>)
                return self.matrix_template_type(fn, inner.child_by_field_name("arguments").named_children)
            return None
        if fn.type not in ("identifier", "type_identifier", "qualified_identifier"):
            return None
        mt = matrix_type_named(self.text(fn))
        if mt is not None:
            return mt
        sym = self.lookup(self.text(fn).strip())
        if isinstance(sym, _TypeName) and isinstance(sym.t, MetalMatrixType):
            return sym.t
        return None

    # -- which expressions are matrices -----------------------------------------------
    def mat_type_of(self, node):
        """The matrix type of expression ``node``, None when it is not a matrix (decided
        from the syntax and the symbols; the other operand of a ``*`` is probed)."""
        k = node.type
        if k == "parenthesized_expression":
            inner = node.named_children[-1]
            return self.mat_type_of(inner) if inner.type != "compound_statement" else None
        if k == "field_expression":                 # a matrix member of an object
            sym = self.matrix_member_symbol(node)
            return sym.mt if sym is not None and not sym.dims else None
        if k in ("identifier", "type_identifier"):
            sym = self.lookup(self.text(node))
            return sym.mt if isinstance(sym, MatPtr) and not sym.dims else None
        if k == "subscript_expression":
            base = node.child_by_field_name("argument")
            sym = self.lookup(self.text(base)) if base.type == "identifier" else \
                self.matrix_member_symbol(base) if base.type == "field_expression" else None
            if isinstance(sym, MatPtr) and len(sym.dims) == 1:
                return sym.mt               # an element of an array of matrices
            return None
        if k == "pointer_expression" and self.text(node).lstrip().startswith("*"):
            arg = node.child_by_field_name("argument")
            v = self.probe(lambda: self.pointer(arg)) if self.ptr_rank(arg) is not None else None
            mt = self.matrix_of_view(v)
            return mt
        if k == "call_expression":
            fn = node.child_by_field_name("function")
            mt = self.ctor_type(fn)
            if mt is not None:
                return mt
            args = node.child_by_field_name("arguments").named_children
            if self.text(fn).replace(" ", "").removeprefix("metal::") == "transpose" and len(args) == 1:
                a = self.mat_type_of(args[0])
                return MetalMatrixType(a.elem, a.rows, a.cols) if a is not None else None
            return self.matrix_returned(fn)
        if k == "conditional_expression":
            a = self.mat_type_of(node.child_by_field_name("consequence"))
            b = self.mat_type_of(node.child_by_field_name("alternative"))
            if (a is None) != (b is None) or a is not None and (a.cols, a.rows) != (b.cols, b.rows):
                self.type_err(node, "the branches of ?: must both be matrices of the same size")
            return a
        if k == "unary_expression":
            op = self.text(node.child_by_field_name("operator"))
            return self.mat_type_of(node.child_by_field_name("argument")) if op in ("-", "+") else None
        if k == "binary_expression":
            op = self.text(node.child_by_field_name("operator"))
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            a, b = self.mat_type_of(left), self.mat_type_of(right)
            if a is None and b is None:
                return None
            if op == "*":
                if a is not None and b is not None:
                    if a.cols != b.rows:
                        self.type_err(node, f"{a.name} * {b.name}: the left's columns must match the right's rows")
                    return MetalMatrixType(a.elem, b.cols, a.rows)
                other = right if a is not None else left
                t = self.probe(lambda: self.expr(other)).type
                return None if isinstance(t, T.VectorType) else (a or b)
            if op in ("+", "-"):
                if a is None or b is None or (a.cols, a.rows) != (b.cols, b.rows):
                    self.type_err(node, f"'{op}' of matrices needs two matrices of the same size")
                return a
            if op == "/" and a is not None and b is None:
                return a
            self.type_err(node, f"'{op}' is not defined on Metal matrices")
        return None

    # -- matrix values: their columns --------------------------------------------------
    def mat_value(self, node, mt=None):
        """The columns (IR vector expressions) of matrix expression ``node``."""
        mt = mt or self.mat_type_of(node)
        sp = self.sp(node)
        k = node.type
        if k == "parenthesized_expression":
            return self.mat_value(node.named_children[-1], mt)
        if k == "field_expression":
            return self.mat_columns(self.member_symbol(node), None, sp)
        if k in ("identifier", "type_identifier"):
            return self.mat_columns(self.lookup(self.text(node)), None, sp)
        if k == "pointer_expression":                  # *p: the matrix p points at
            v = self.pointer(node.child_by_field_name("argument"))
            return self.view_columns(v, mt, sp)
        if k == "subscript_expression":
            base = node.child_by_field_name("argument")
            sym = self.member_symbol(base) if base.type == "field_expression" else self.lookup(self.text(base))
            idx = node.child_by_field_name("indices").named_children
            return self.mat_columns(sym, self.index_expr(idx[0]), sp)
        if k == "call_expression":
            fn = node.child_by_field_name("function")
            args = node.child_by_field_name("arguments").named_children
            ct = self.ctor_type(fn)
            if ct is not None:
                return self.mat_construct(ct, args, node)
            if self.text(fn).replace(" ", "").removeprefix("metal::") != "transpose":
                return self.mat_columns(self.matrix_call_result(node), None, sp)     # a function's result
            src = self.mat_value(args[0])                                    # transpose
            return [self.sem.vector(mt.col, [self.sem.component(src[r], _XYZW[c], sp) for r in range(mt.rows)], sp)
                    for c in range(mt.cols)]
        if k == "conditional_expression":              # c ? a : b, column by column
            c = self.sem.to_bool(self.expr(node.child_by_field_name("condition")))
            c = self.keep(c, sp) if not isinstance(c, (ir.Const, ir.Var)) else c
            self.lazy += 1                  # a branch runs only when chosen: no temporaries
            try:
                x = self.mat_value(node.child_by_field_name("consequence"))
                y = self.mat_value(node.child_by_field_name("alternative"))
            finally:
                self.lazy -= 1
            return [self.sem.select(c, p, q, sp) for p, q in zip(x, y)]
        if k == "unary_expression":
            cols = self.mat_value(node.child_by_field_name("argument"))
            if self.text(node.child_by_field_name("operator")) == "+":
                return cols
            return [self.sem.unop("-", c, sp) for c in cols]
        op = self.text(node.child_by_field_name("operator"))
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        a, b = self.mat_type_of(left), self.mat_type_of(right)
        if a is not None and b is not None:
            x, y = self.mat_value(left, a), self.mat_value(right, b)
            if op == "*":
                return [self.keep(self.mat_times_vec(x, y[j], sp), sp) for j in range(b.cols)]
            return [self.sem.binop(op, p, q, sp) for p, q in zip(x, y)]
        if a is not None:
            x, s = self.mat_value(left, a), self.sem.convert(self.expr(right), a.elem, sp)
            return [self.sem.binop(op, c, s, sp) for c in x]
        s, y = self.sem.convert(self.expr(left), b.elem, sp), self.mat_value(right, b)
        return [self.sem.binop(op, s, c, sp) for c in y]

    def keep(self, e, sp):
        """``e`` held in a temporary where statements can go (products are used many times)."""
        if self.pre is None or self.lazy:
            return e
        return self.new_tmp(e.type, e, sp)

    @staticmethod
    def mat_view(sym, sp):
        """The view of matrix symbol ``sym`` (a pointer's at its current offset)."""
        if sym.off is None:
            return sym.view
        return _r(sym.view, offset=ir.Var(sym.off.name, sym.off.type, span=sp))

    def mat_columns(self, sym, i, sp):
        """The columns of matrix variable ``sym`` (element ``i`` of an array of them)."""
        view = self.mat_view(sym, sp)
        mt = sym.mt
        if sym.dims:
            view = _r(view, inner=())
        out = []
        for c in range(mt.cols):
            at = ir.Const(c, T.int32, span=sp)
            if i is not None:
                at = self.sem.binop("+", self.sem.binop("*", self.sem.convert(i, T.int32, sp),
                                                        ir.Const(mt.cols, T.int32, span=sp), sp), at, sp)
            out.append(self.sem.view_load(view, at, sp))
        return out

    def matrix_of_view(self, v):
        """The matrix type a pointer view steps over (rows of column vectors), else None."""
        if v is None or len(v.inner) != 1 or not isinstance(v.type, T.VectorType):
            return None
        return MetalMatrixType(v.type.elem, int(v.inner[0]), v.type.n)

    def view_columns(self, v, mt, sp):
        """The columns of the matrix at view ``v``'s position."""
        flat = _r(v, inner=())
        return [self.sem.view_load(flat, ir.Const(c, T.int32, span=sp), sp) for c in range(mt.cols)]

    def matrix_pointer_decl(self, d, init, mt, space, node):
        """``device const float4x4* M = (device const float4x4*)x;`` (a pointer stepping over
        matrices of ``mt.cols`` columns in memory, a 3-row column taking 16 bytes) and
        ``const device float3x3& M = *(...)`` / ``= M[i]`` (one matrix in memory)."""
        sp = self.sp(d)
        name_n = d.child_by_field_name("declarator") if d.type == "pointer_declarator" else d.named_children[-1]
        if name_n is None or name_n.type != "identifier" or init is None:
            self.unsupported(d, f"this {mt.name} pointer or reference declaration")
        name = self.text(name_n)
        is_const = any(c.type == "type_qualifier" and self.text(c) in ("const", "constexpr") for c in node.children)
        if d.type == "pointer_declarator":
            out = self.pointer_decl(name, init, None, space, is_const, sp, d)
            ptr = self.scopes[-1][name]
            if self.matrix_of_view(ptr.view) != mt:
                self.type_err(d, f"cannot point a {mt.name}* at {getattr(ptr.view.type, 'name', '?')} data",
                              hint=f"a pointer cast reinterprets memory: ({ptr.view.space} {mt.name}*)...")
            self.scopes[-1][name] = MatPtr(ptr.view, ptr.off, mt, (None,))
            return out
        # a reference: the matrix *p or p[i] names, its position fixed now
        target = init
        while target.type == "parenthesized_expression":
            target = target.named_children[-1]
        if target.type == "identifier" and isinstance(self.lookup(self.text(target)), MatPtr) \
                and not self.lookup(self.text(target)).dims:
            self.scopes[-1][name] = self.lookup(self.text(target))       # another name for a matrix
            return []
        if target.type == "pointer_expression" and self.text(target).lstrip().startswith("*"):
            v = self.pointer(target.child_by_field_name("argument"))
        elif target.type == "subscript_expression" and self.ptr_rank(target.child_by_field_name("argument")) == 1:
            v = self.pointer(target)                     # a row: the matrix's columns
            v = _r(v, inner=(mt.cols,))
        else:
            self.unsupported(init, f"a {mt.name}& to something that is not a matrix in memory (*p, p[i])")
        if self.matrix_of_view(v) != mt:
            self.type_err(d, f"a {mt.name}& cannot refer to {getattr(v.type, 'name', '?')} data")
        off = ir.Var(self.fresh(name + "_at"), T.int64, span=sp)
        self.scopes[-1][name] = MatPtr(_r(v, offset=off, inner=()), off, mt, ())
        return [ir.Decl(off, self.sem.convert(v.offset, T.int64, sp), span=sp)]

    def mat_construct(self, mt, args, node, diagonal=None):
        """``float3x3(c0, c1, c2)``, ``float2x2(a, b, c, d)`` (column-major), ``float4x4(s)``
        (``s`` on the diagonal), ``float4x4()`` (zeros), ``float4x4(other)`` (converted)."""
        sp = self.sp(node)
        zero = self.sem.const(0, mt.elem, sp)
        if diagonal is not None:
            s = self.sem.convert(diagonal, mt.elem, sp)
            s = self.keep(s, sp) if not isinstance(s, (ir.Const, ir.Var)) else s
            return [self.sem.vector(mt.col, [s if r == c else zero for r in range(mt.rows)], sp)
                    for c in range(mt.cols)]
        if not args:
            return [self.sem.vector(mt.col, [zero], sp) for _ in range(mt.cols)]
        if len(args) == 1:
            other = self.mat_type_of(args[0])
            if other is not None:
                if (other.cols, other.rows) != (mt.cols, mt.rows):
                    self.type_err(node, f"a {mt.name} cannot be made from a {other.name}")
                return [self.sem.convert(c, mt.col, sp) for c in self.mat_value(args[0], other)]
        return self.mat_from_values(mt, [self.expr(a) for a in args], node)

    def mat_from_values(self, mt, vals, node):
        """A matrix from its constructor's argument values: columns or scalars."""
        sp = self.sp(node)
        if len(vals) == 1 and isinstance(vals[0].type, T.ScalarType):
            return self.mat_construct(mt, [], node, diagonal=vals[0])
        if len(vals) == mt.cols and all(isinstance(v.type, T.VectorType) and v.type.n == mt.rows for v in vals):
            return [self.sem.convert(v, mt.col, sp) for v in vals]
        if len(vals) == mt.cols * mt.rows and all(isinstance(v.type, T.ScalarType) for v in vals):
            return [self.sem.vector(mt.col, [self.sem.convert(v, mt.elem, sp) for v in vals[c * mt.rows:(c + 1) * mt.rows]],
                                    sp) for c in range(mt.cols)]
        self.type_err(node, f"a {mt.name} is made from {mt.cols} column vectors of {mt.rows}, "
                      f"{mt.cols * mt.rows} scalars (column by column), or one scalar (the diagonal)")

    def mat_times_vec(self, cols, v, sp):
        """``m * v``: the columns weighted by ``v``'s components."""
        v = self.keep(v, sp) if not isinstance(v, (ir.Const, ir.Var)) else v      # read once per column
        acc = None
        for c, col in enumerate(cols):
            term = self.sem.binop("*", col, self.sem.component(v, _XYZW[c], sp), sp)
            acc = term if acc is None else self.sem.binop("+", acc, term, sp)
        return acc

    def vec_times_mat(self, v, cols, sp):
        """``v * m``: one component per column, ``dot(v, column)``."""
        v = self.keep(v, sp) if not isinstance(v, (ir.Const, ir.Var)) else v
        comps = []
        for col in cols:
            acc = None
            for r in range(col.type.n):
                term = self.sem.binop("*", self.sem.component(v, _XYZW[r], sp), self.sem.component(col, _XYZW[r], sp), sp)
                acc = term if acc is None else self.sem.binop("+", acc, term, sp)
            comps.append(acc)
        return self.sem.vector(T.vector_of(cols[0].type.elem, len(cols)), comps, sp)

    def determinant(self, cols, sp):
        """``determinant(m)`` of a square matrix: cofactor expansion along the first column."""
        n = len(cols)
        el = [[self.keep(self.sem.component(cols[c], _XYZW[r], sp), sp) for r in range(n)] for c in range(n)]

        def det(rows, cs):
            if len(cs) == 1:
                return el[cs[0]][rows[0]]
            acc = None
            for k, c in enumerate(cs):
                term = self.sem.binop("*", el[c][rows[0]], det(rows[1:], cs[:k] + cs[k + 1:]), sp)
                acc = term if acc is None else self.sem.binop("-" if k % 2 else "+", acc, term, sp)
            return acc
        return det(list(range(n)), list(range(n)))

    # -- hooks: expressions, declarations, assignments ---------------------------------
    # -- matrix members of objects (cxx_objects: a member is a matrix variable) -----------
    @staticmethod
    def is_metal_matrix(x) -> bool:
        """Whether ``x`` is a matrix type or a matrix variable."""
        return isinstance(x, (MetalMatrixType, MatPtr))

    def matrix_member_symbol(self, node):
        """The matrix an ``obj.member`` names, else None (decided without side effects)."""
        try:
            sym = self.probe(lambda: self.member_symbol(node))
        except Exception:
            return None
        return sym if isinstance(sym, MatPtr) else None

    def matrix_in_memory(self, view, mt, pos, dims, node) -> MatPtr:
        """A matrix member of a struct in memory (struct_views): the columns at byte ``pos``."""
        if len(dims) > 1:
            self.unsupported(node, "a multi-dimensional matrix array member of a struct in memory")
        sp = self.sp(node)
        typed = self.sem.view_cast(view, mt.col, span=sp)
        first = self.sem.binop("/", pos, ir.Const(mt.elem.itemsize, T.int64, span=sp), sp)
        mv = _r(typed, offset=self.sem.convert(first, T.int64, sp))
        return MatPtr(_r(mv, inner=(mt.cols,)) if dims else mv, None, mt, tuple(dims))

    def init_matrix_member(self, sym, init, node) -> list:
        """``m(args)``, ``m{...}``, ``= value`` of a matrix member."""
        if sym.dims:
            self.unsupported(node, "initialising an array-of-matrices member")
        return self.mat_store(sym, None, self.mat_init(sym.mt, init), self.sp(node))

    def zero_matrix(self, sym, sp) -> list:
        zero = [self.sem.vector(sym.mt.col, [self.sem.const(0, sym.mt.elem, sp)], sp)] * sym.mt.cols
        out = []
        for i in range(sym.dims[0] if sym.dims else 1):
            out += self.mat_store(sym, ir.Const(i, T.int32, span=sp) if sym.dims else None, zero, sp)
        return out

    def copy_matrix(self, dst, src, sp) -> list:
        out = []
        for i in range(dst.dims[0] if dst.dims else 1):
            at = ir.Const(i, T.int32, span=sp) if dst.dims else None
            out += self.mat_store(dst, at, self.mat_columns(src, at, sp), sp)
        return out

    def matrix_expr(self, node):
        """A value that involves matrices (``m * v``, ``v * m``, ``determinant(m)``), None
        when ``node`` has nothing to do with them; a matrix where a value is wanted is an error."""
        k = node.type
        if k not in ("binary_expression", "call_expression", "identifier", "unary_expression", "subscript_expression"):
            return None
        sp = self.sp(node)
        if k == "call_expression":
            fn = node.child_by_field_name("function")
            args = node.child_by_field_name("arguments").named_children
            if self.text(fn).replace(" ", "").removeprefix("metal::") == "determinant" and len(args) == 1:
                mt = self.mat_type_of(args[0])
                if mt is not None:
                    if mt.cols != mt.rows:
                        self.type_err(node, f"determinant of a {mt.name}: the matrix must be square")
                    return self.keep(self.determinant(self.mat_value(args[0], mt), sp), sp)
        if k == "subscript_expression":
            base = node.child_by_field_name("argument")
            while base.type == "parenthesized_expression":
                base = base.named_children[-1]
            bt = self.mat_type_of(base) if base.type not in ("identifier", "subscript_expression") else None
            if bt is None:
                return None
            cols = self.mat_value(base, bt)           # a column of a computed matrix, `(a * b)[0]`
            i = self.index_expr(node.child_by_field_name("indices").named_children[0])
            at = const_value(i)
            if at is not None:
                if not 0 <= int(at) < bt.cols:
                    self.type_err(node, f"column {int(at)} of a {bt.name}")
                return cols[int(at)]
            cols = [self.keep(c, sp) for c in cols]
            out = cols[-1]
            for c in range(bt.cols - 2, -1, -1):
                out = self.sem.select(self.sem.binop("==", i, ir.Const(c, i.type, span=sp), sp), cols[c], out, sp)
            return out
        mt = self.mat_type_of(node)
        if mt is not None:
            self.unsupported(node, f"a {mt.name} value here (matrices are supported in declarations, "
                                   "assignments, function arguments, their operators and transpose/determinant)")
        if k == "binary_expression" and self.text(node.child_by_field_name("operator")) == "*":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            a, b = self.mat_type_of(left), self.mat_type_of(right)
            if a is not None:
                v = self.sem.convert(self.expr(right), T.vector_of(a.elem, a.cols), sp)
                return self.mat_times_vec(self.mat_value(left, a), v, sp)
            if b is not None:
                v = self.sem.convert(self.expr(left), b.col, sp)
                return self.vec_times_mat(v, self.mat_value(right, b), sp)
        return None

    def matrix_declaration(self, node, mt, space, top):
        """``float4x4 m = ...;``, ``float3x3 m(c0, c1, c2);``, ``float2x2 m = {...};``,
        ``float4x4 ms[4];``, ``constant float3x3 K = float3x3(...);`` (a constant in the
        header or the body)."""
        out = []
        for d in node.children_by_field_name("declarator"):
            sp = self.sp(d)
            init = None
            if d.type == "init_declarator":
                init, d = d.child_by_field_name("value"), d.child_by_field_name("declarator")
            dims = ()
            if d.type == "function_declarator":          # `float3x3 m(a, b, c);`: C++'s most vexing parse
                params = d.child_by_field_name("parameters").named_children
                d = d.child_by_field_name("declarator")
                init = ("args", params)
            if d.type in ("pointer_declarator", "reference_declarator"):
                out.extend(self.matrix_pointer_decl(d, init, mt, space, node))
                continue
            if d.type == "array_declarator":
                size = d.child_by_field_name("size")
                n = const_value(self.expr(size)) if size is not None else None
                if n is None or int(n) <= 0 or d.child_by_field_name("declarator").type != "identifier":
                    self.unsupported(d, "this array of matrices (one dimension of constant size is)")
                if init is not None:
                    self.unsupported(init, "an initialiser of an array of matrices")
                dims, d = (int(n),), d.child_by_field_name("declarator")
            if d.type != "identifier":
                self.unsupported(d, f"the declaration '{self.text(d)}' of a {mt.name}")
            name = self.text(d)
            cols = self.mat_init(mt, init) if init is not None else None
            count = dims[0] if dims else 1
            total = count * mt.cols * mt.step
            if top or space == "constant":
                if cols is None:
                    self.type_err(d, "a constant matrix needs an initialiser")
                values = [coerce_value(0, mt.elem)] * total
                for c, col in enumerate(cols):
                    for r in range(mt.rows):
                        v = fold(self.sem.component(col, _XYZW[r], sp))
                        if not isinstance(v, ir.Const):
                            self.type_err(init, "a constant matrix needs compile-time constant values")
                        values[c * mt.step + r] = coerce_value(v.value, mt.elem)
                gname = self.fresh(name) if not top else name
                self.globals.append(ir.ArrayDecl(gname, "constant", mt.elem, (total,), values, span=sp))
                self.used_names.add(gname)
                view = _r(self.sem.view_of(gname, mt.elem, "constant", const=True, span=sp), type=mt.col)
                self.scopes[-1][name] = MatPtr(view, None, mt, dims)
                continue
            if space not in (None, "thread", "threadgroup"):
                self.unsupported(d, f"a {space} {mt.name}")
            if space == "threadgroup":
                # one per threadgroup for the whole launch, hoisted as threadgroup arrays are
                if cols is not None:
                    self.type_err(d, "threadgroup variables cannot have initialisers (Metal)")
                if not self.in_kernel:
                    self.unsupported(d, f"a threadgroup {mt.name} declared in a device function")
            sym = self.new_matrix(name, mt, dims, out, sp, space or "thread")
            if cols is not None:
                out.extend(self.mat_store(sym, None, cols, sp))
            self.scopes[-1][name] = sym
        return out

    def mat_init(self, mt, init):
        if isinstance(init, tuple):                       # parameters the grammar read in `T m(a, b)`
            params = init[1]
            if len(params) == 1 and params[0].type == "parameter_declaration" and \
                    params[0].child_by_field_name("declarator") is None:
                other = self.mat_type_of(params[0].child_by_field_name("type"))
                if other is not None:
                    if (other.cols, other.rows) != (mt.cols, mt.rows):
                        self.type_err(params[0], f"a {mt.name} cannot be made from a {other.name}")
                    return self.mat_value(params[0].child_by_field_name("type"), other)
            vals = []
            for a in self.ctor_args(params):
                if a.expr is None:
                    self.unsupported(a.node, f"this argument of a {mt.name} constructor")
                vals.append(a.expr)
            return self.mat_from_values(mt, vals, params[0] if params else None)
        if init.type in ("initializer_list", "argument_list"):
            return self.mat_construct(mt, init.named_children, init)
        other = self.mat_type_of(init)
        if other is None or (other.cols, other.rows) != (mt.cols, mt.rows):
            self.type_err(init, f"a {mt.name} needs a {mt.name} value"
                          + (f", not a {other.name}" if other is not None else ""))
        return [self.sem.convert(c, mt.col, self.sp(init)) for c in self.mat_value(init, other)]

    def mat_store(self, sym, i, cols, sp):
        """Statements storing columns ``cols`` into matrix ``sym`` (element ``i``): each
        column held first, so ``m = m * m`` reads the old ``m`` throughout."""
        out, held = [], []
        for c in cols:
            if isinstance(c, (ir.Const, ir.Var)):
                held.append(c)
                continue
            v = ir.Var(self.fresh("_col"), c.type, span=sp)
            out.append(ir.Decl(v, c, span=sp))
            held.append(ir.Var(v.name, v.type, span=sp))
        view = self.mat_view(sym, sp)
        view = _r(view, inner=()) if sym.dims else view
        for c, col in enumerate(held):
            at = ir.Const(c, T.int32, span=sp)
            if i is not None:
                at = self.sem.binop("+", self.sem.binop("*", self.sem.convert(i, T.int32, sp),
                                                        ir.Const(sym.mt.cols, T.int32, span=sp), sp), at, sp)
            out.extend(self.sem.view_store(view, at, self.sem.convert(col, sym.mt.col, sp), sp))
        return out

    def matrix_assign(self, lhs, op, rhs_node, sp):
        """``m = ...``, ``m *= s`` / ``m *= b``, ``m += b``, ``ms[i] = ...``; None when ``lhs``
        is no matrix."""
        mt = self.mat_type_of(lhs)
        if mt is None:
            return None
        if lhs.type == "parenthesized_expression":
            lhs = lhs.named_children[-1]
        i = None
        sym_of = lambda n: self.member_symbol(n) if n.type == "field_expression" else self.lookup(self.text(n))
        if lhs.type == "subscript_expression":
            sym = sym_of(lhs.child_by_field_name("argument"))
            i = self.index_expr(lhs.child_by_field_name("indices").named_children[0])
        else:
            sym = sym_of(lhs)
        if sym.view.const:
            self.type_err(lhs, f"'{self.text(lhs)}' is a constant and cannot be assigned")
        if rhs_node is None:
            self.type_err(lhs, "++/-- of a matrix")
        if op is None:
            cols = self.mat_init(mt, rhs_node)
        else:
            cur = self.mat_columns(sym, i, sp)
            other = self.mat_type_of(rhs_node)
            if other is not None:
                if op not in ("*", "+", "-") or (op == "*" and (other.cols, other.rows) != (mt.cols, mt.cols)) or \
                        (op != "*" and (other.cols, other.rows) != (mt.cols, mt.rows)):
                    self.type_err(lhs, f"'{op}=' of a {mt.name} and a {other.name}")
                y = self.mat_value(rhs_node, other)
                cols = [self.mat_times_vec(cur, y[j], sp) for j in range(mt.cols)] if op == "*" else \
                    [self.sem.binop(op, p, q, sp) for p, q in zip(cur, y)]
            else:
                if op not in ("*", "/"):
                    self.type_err(lhs, f"'{op}=' of a {mt.name} needs a matrix on the right")
                s = self.sem.convert(self.expr(rhs_node), mt.elem, sp)
                cols = [self.sem.binop(op, c, s, sp) for c in cur]
        return self.mat_store(sym, i, cols, sp)

    def declared_matrix(self, node, base):
        """The matrix type ``node`` declares (``auto m = a * b;`` included), else None."""
        if isinstance(base, MetalMatrixType):
            return base
        if base == "auto":
            ds = node.children_by_field_name("declarator")
            if len(ds) == 1 and ds[0].type == "init_declarator" and ds[0].child_by_field_name("declarator").type == "identifier":
                return self.mat_type_of(ds[0].child_by_field_name("value"))
        return None

    def new_matrix(self, name, mt, dims, out, sp, space="thread") -> MatPtr:
        """A new thread (or threadgroup) matrix, or an array of ``dims[0]`` of them: its
        storage declared in ``out`` (a threadgroup one with the kernel's threadgroup arrays)."""
        total = (dims[0] if dims else 1) * mt.cols * mt.step
        irname = self.fresh(name)
        decl = ir.ArrayDecl(irname, space, mt.elem, (total,), None, span=sp)
        (self.tg_arrays if space == "threadgroup" else out).append(decl)
        view = _r(self.sem.view_of(irname, mt.elem, space, span=sp), type=mt.col)
        return MatPtr(_r(view, inner=(mt.cols,)) if dims else view, None, mt, dims)

    # -- matrices passed to and returned by header functions (translated inline, cxx_calls) --
    def metal_matrix_arg(self, node):
        """A matrix argument: (type, its variable when it names one, its columns), else None."""
        mt = self.mat_type_of(node)
        if mt is None:
            return None
        inner = node
        while inner.type == "parenthesized_expression":
            inner = inner.named_children[-1]
        sym = self.lookup(self.text(inner)) if inner.type == "identifier" else None
        return mt, sym if isinstance(sym, MatPtr) else None, self.mat_value(node, mt)

    def metal_matrix_call(self, name, argn) -> bool:
        """Whether a call of header function ``name`` passes or returns a matrix (so it is
        translated inline, where a matrix is its columns)."""
        if any(self.mat_type_of(a) is not None for a in argn):
            return True
        return any(self.return_kind(m)[0] == "matrix" for m in self.funcdef_methods(name).methods)

    def matrix_returned(self, fn):
        """The matrix type a call of header function ``fn`` returns, else None."""
        name = self.callee_name(fn)
        if name not in self.funcdefs or self.lookup(name) is not None:
            return None
        ms = self.funcdef_methods(name).methods
        kinds = {self.return_kind(m) for m in ms}
        if len(kinds) == 1:
            kind, t = kinds.pop()
            if kind == "matrix":
                return t
            if not (kind == "value" and t == "unknown" and any(m.tparams for m in ms)):
                return None
            # a template's return type (M twice(M m)) is known once its arguments are
            # deduced: the call translated, for its result only
            node = fn.parent
            try:
                res = self.probe(lambda: self.matrix_call_result(node) if self.call_args_have_matrix(node) else None)
            except Exception:
                return None
            return res.mt if isinstance(res, MatPtr) else None
        return None

    def call_args_have_matrix(self, node) -> bool:
        return any(self.mat_type_of(a) is not None for a in node.child_by_field_name("arguments").named_children)

    def matrix_call_result(self, node) -> MatPtr:
        """The result of a header function returning a matrix (translated inline)."""
        fn = node.child_by_field_name("function")
        explicit = fn.child_by_field_name("arguments").named_children if fn.type == "template_function" else []
        tgt = self.funcdef_methods(self.callee_name(fn)), None, explicit
        out, res, kind = self.call_target(node, tgt, with_kind=True)
        for s in out:
            self.emit_pre(s, self.sp(node))
        return res

    def matrix_arg_fits(self, s, a) -> int:
        if not isinstance(s.type, MetalMatrixType) or "ptr" in s.kinds:
            raise _NoMatch(f"'{s.name}' is not a matrix")
        if a.mat is None:
            raise _NoMatch(f"'{s.name}' is a {s.type.name}")
        t = a.mat[0]
        if (t.cols, t.rows, t.elem) != (s.type.cols, s.type.rows, s.type.elem):
            raise _NoMatch(f"'{s.name}' is a {s.type.name}, got a {t.name}")
        if "ref" in s.kinds and not s.const and a.mat[1] is None:
            raise _NoMatch(f"'{s.name}' is a reference: its argument must be a matrix variable")
        return 1

    def bind_matrix(self, s, a, out, sp) -> MatPtr:
        """A matrix parameter: a reference is the argument's variable, a value a copy."""
        mt, sym, cols = a.mat
        if "ref" in s.kinds and sym is not None:
            return sym
        m = self.new_matrix(s.name, mt, (), out, sp)
        out.extend(self.mat_store(m, None, cols, sp))
        return m

    def return_matrix(self, c, value, sp) -> list:
        """``return <matrix>;`` in a function returning one (translated inline)."""
        pre, cols = self.with_pre(lambda: self.mat_init(c.ret, value))
        if c.result is None:
            c.result = self.new_matrix(f"_{c.name}", c.ret, (), c.decls, sp)
        return pre + self.mat_store(c.result, None, cols, sp)
