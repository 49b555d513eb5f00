"""How a call's arguments meet a C++ function's parameters (a part of the calls that
``cxx_calls.py`` translates inline): an argument evaluated once (:class:`ArgVal`; also the
arguments of ``T x(a, b);``, which the grammar may read as parameter declarations), a
parameter as declared (:class:`PSpec`), template arguments deduced from an argument,
whether an argument fits a parameter (exact, through a conversion, or not at all), and the
parameter bound to it in the callee's scope -- a value, a reference to a variable or
element, a pointer (also to structs in memory or to a local object), ``x_shape``, a braced
list.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ... import ir
from ... import types as T
from .cxx_decls import ClassInst, MethodSet, PtrType, _unwrap_declarator
from .cxx_objects import FixedView, PendingPtr, StructObj, const_view
from ...semantics import ComplexType
from ...semantics.views import View
from .metal_matrices import MetalMatrixType
from .struct_views import ObjPtr, StructPtr
from .symbols import (SMALL_INPUT_NOTE, Buf, NullPtr, Ptr, Ref, _NoMatch, _params_of, _SPACES,
                      _TypeName, shape_arg as _shape_arg, shape_type as _shape_type)


@dataclass(eq=False)
class PSpec:
    """A parameter as the callee declares it."""
    name: str
    type: object
    kinds: list             # "ptr", "ref", "array" from the declarator
    space: str | None
    const: bool
    default: object
    node: object



@dataclass
class ArgVal:
    """An argument, evaluated once at the call: an object, a pointer, an lvalue and/or a value."""
    node: object
    obj: StructObj | None = None
    view: View | None = None
    lv: tuple | None = None
    expr: ir.Expr | None = None
    mat: tuple | None = None        # a Metal matrix: (type, its variable or None, its columns)
    objptr: StructObj | None = None  # &obj: a pointer to a local object (struct_views.ObjPtr)
    null: bool = False               # nullptr, (const device T*)nullptr (symbols.NullPtr)
    structs: tuple | None = None     # a pointer to structs in memory: (class, view, byte offset) (struct_views)

    @property
    def type(self):
        if self.mat is not None:
            return self.mat[0]
        if self.obj is not None:
            return self.obj.cls
        if self.view is not None:
            return PtrType(self.view.type, self.view.space, self.view.const)
        if self.objptr is not None:
            return PtrType(self.objptr.cls, "thread", False)
        if self.structs is not None:
            return PtrType(self.structs[0], self.structs[1].space, self.structs[1].const)
        return self.expr.type if self.expr is not None else None


class CxxParamsMixin:
    """Arguments and parameters: a part of :class:`~metalbench.frontend.msl.Translator`."""

    def eval_arg(self, node) -> ArgVal:
        sp = self.sp(node)
        if node.type == "initializer_list":       # f(x, {}) or `P p = {}`: the parameter's type says what it builds
            return ArgVal(node)
        if self.has_matrices:
            mat = self.metal_matrix_arg(node)                # Metal's matrices (metal_matrices)
            if mat is not None:
                return ArgVal(node, mat=mat)
        if self.is_object_node(node):
            obj = self.object_value(node)
            return ArgVal(node, obj=obj, lv=("obj", obj))
        objptr = self.object_address(node)
        if objptr is not None or self.is_null_pointer(node):
            return ArgVal(node, objptr=objptr, null=objptr is None)
        if self.is_struct_pointer_node(node):           # (const device P*)w, p + 1 of a struct pointer
            return ArgVal(node, structs=self.struct_pointer(node))
        if self.ptr_rank(node) is not None:
            return ArgVal(node, view=self.pointer(node))
        if node.type == "call_expression" and self.call_returns(node) == "ref":
            out, lv = self.call_target(node)
            for s in out:
                self.emit_pre(s, sp)
            return ArgVal(node, lv=lv, expr=self.lvalue_load(lv, sp))
        lv = self.lvalue(node) if node.type in ("identifier", "subscript_expression", "pointer_expression",
                                                "parenthesized_expression", "field_expression") else None
        if lv is not None:
            return ArgVal(node, lv=lv, expr=self.lvalue_load(lv, sp))
        return ArgVal(node, expr=self.value_expr(node))

    def ctor_args(self, nodes):
        out = []
        for n in nodes:
            if n.type == "parameter_declaration":      # `T x(a, b);` the grammar read as a function
                if n.child_by_field_name("declarator") is not None or \
                        n.child_by_field_name("type").type not in ("type_identifier", "identifier"):
                    out.append(self.reparse_arg(n))
                else:
                    out.append(self.name_arg(n.child_by_field_name("type")))
                continue
            out.append(self.eval_arg(n))
        return out

    def reparse_arg(self, n):
        """An argument the grammar read as a parameter declaration (``int(i)`` in ``T x(p, int(i));``),
        parsed again as an expression at the same line and column."""
        from .parse import _PARSER
        row, col = n.start_point
        if row == 0:
            self.unsupported(n, f"the constructor argument '{self.text(n)}'")
        code2 = "\n" * (row - 1) + "int __v =\n" + " " * col + self.text(n) + ";\n"
        tree = _PARSER.parse(code2.encode())
        decl = tree.root_node.named_children[0]
        value = decl.child_by_field_name("declarator").child_by_field_name("value")
        if tree.root_node.has_error or value is None:
            self.unsupported(n, f"the constructor argument '{self.text(n)}'")
        saved = (self.code, self.quals)
        self.code, self.quals = code2, {"<": set(), "{}": set()}
        try:
            return self.eval_arg(value)
        finally:
            self.code, self.quals = saved

    def name_arg(self, n):
        """An argument that is a bare name the grammar read as a type (C++'s most vexing parse)."""
        name = self.text(n).strip()
        sp = self.sp(n)
        sym = self.lookup(name)
        if isinstance(sym, StructObj):
            return ArgVal(n, obj=sym, lv=("obj", sym))
        if isinstance(sym, (Buf, Ptr, FixedView, PendingPtr)):
            return ArgVal(n, view=self.sym_view(sym, n))
        if isinstance(sym, ir.Var):
            return ArgVal(n, lv=("var", sym), expr=ir.Var(sym.name, sym.type, span=sp))
        if isinstance(sym, Ref):
            lv = ("loc", self.ref_view(sym, sp), ir.Const(0, T.int32))
            return ArgVal(n, lv=lv, expr=self.lvalue_load(lv, sp))
        if isinstance(sym, NullPtr):            # a null pointer parameter passed on
            return ArgVal(n, null=True)
        if isinstance(sym, ir.Const):
            return ArgVal(n, expr=ir.Const(sym.value, sym.type, span=sp))
        if sym is None and name in ir.THREAD_ATTRIBUTES:
            if not self.in_kernel:
                self.type_err(n, f"'{name}' is not declared in header functions")
            return ArgVal(n, expr=self.sem.thread_attr(name, sp))
        self.type_err(n, f"'{name}' is not a value here")

    def arg_type_name(self, kinds, a, nm) -> _TypeName:
        """What a parameter of type ``nm`` (a template type parameter, or a generic lambda's
        ``auto``) with declarator ``kinds`` deduces from argument ``a``."""
        if "ptr" in kinds and _shape_arg(a):
            return _TypeName(_shape_type(a))
        if "ptr" in kinds:
            if a.view is None:
                raise _NoMatch(f"'{nm}*' needs a pointer")
            return _TypeName(a.view.type)
        if a.view is not None:
            return _TypeName(PtrType(a.view.type, a.view.space, a.view.const))
        if a.obj is not None:
            return _TypeName(a.obj.cls)
        if a.mat is not None:
            return _TypeName(a.mat[0])               # a Metal matrix (metal_matrices)
        if a.expr is not None:
            return _TypeName(a.expr.type)
        raise _NoMatch("this argument has no type")

    def deduce_param(self, p, a, bind, names):
        tn = p.child_by_field_name("type")
        _, kinds = _unwrap_declarator(p.child_by_field_name("declarator"))
        if tn.type in ("type_identifier", "identifier") and self.text(tn).strip() in names:
            nm = self.text(tn).strip()
            got = self.arg_type_name(kinds, a, nm)
            if nm in bind and not self._same(bind[nm], got):
                raise _NoMatch(f"'{nm}' deduced as two different types")
            bind[nm] = got
        elif tn.type == "template_type" and a.obj is not None and names:
            if not self.deduce(tn, _TypeName(a.obj.cls), bind, names):
                raise _NoMatch(f"{a.obj.cls.name} is not a {self.text(tn)}")
        elif tn.type == "template_type" and a.mat is not None and names:    # matrix<T, C, R>
            if not self.deduce(tn, _TypeName(a.mat[0]), bind, names):
                raise _NoMatch(f"{a.mat[0].name} is not a {self.text(tn)}")
        elif tn.type in ("template_type", "qualified_identifier", "dependent_type") and names and \
                a.expr is not None and isinstance(a.expr.type, (T.VectorType, T.MatrixType)):
            # vec<U, 2>, an alias template of one (dtype_frag_t<U>), simdgroup_matrix<U, 8, 8>
            if not self.deduce(tn, _TypeName(a.expr.type), bind, names):
                raise _NoMatch(f"{a.expr.type.name} is not a {self.text(tn)}")

    def param_spec(self, p, i) -> PSpec:
        tn = p.child_by_field_name("type")
        decl = p.child_by_field_name("declarator")
        quals = self.quals_before(p.start_byte, tn.start_byte)
        space = next((q for q in quals if q in _SPACES), None)
        const = any(c.type == "type_qualifier" and self.text(c) == "const" for c in p.children)
        name_n, kinds = _unwrap_declarator(decl)
        name = self.text(name_n) if name_n is not None else f"_p{i}"
        t, _ = self.resolve_type(tn)
        if t == "auto" and isinstance(self.lookup(f"__auto{i}"), _TypeName):
            t = self.lookup(f"__auto{i}").t               # a generic lambda's parameter (match)
        if isinstance(t, PtrType):
            kinds = kinds + ["ptr"]
            space, const, t = t.space, t.const or const, t.elem
        if "array" in kinds:
            kinds = kinds + ["ptr"]
        return PSpec(name, t, kinds, space, const, p.child_by_field_name("default_value"), p)

    def arg_fits(self, s: PSpec, a) -> int:
        """1 for an exact match, 0 for one through a conversion; raises _NoMatch."""
        if a is None:
            return 0
        if a.mat is not None or isinstance(s.type, MetalMatrixType) and "ptr" not in s.kinds:
            return self.matrix_arg_fits(s, a)           # (metal_matrices)
        if a.null:                  # nullptr: any pointer parameter
            if "ptr" not in s.kinds:
                raise _NoMatch(f"'{s.name}' is not a pointer")
            return 1
        if _shape_arg(a):               # x_shape / x_strides: constant int / int64_t data
            if "ptr" not in s.kinds or (s.type is not None and s.type != _shape_type(a)) or \
                    s.space not in (None, "constant") or not s.const:
                want = "int" if a.lv[1].kind == "shape" else "int64_t"
                raise _NoMatch(f"'{s.name}' is not a 'constant const {want}*' for {a.lv[1].buf}_{a.lv[1].kind}")
            return 1
        if "ptr" in s.kinds and a.structs is not None:    # a pointer to structs in memory
            cls, view = a.structs[0], a.structs[1]
            if not isinstance(s.type, ClassInst) or (s.type is not cls and s.type.name != cls.name):
                raise _NoMatch(f"'{s.name}' points to {getattr(s.type, 'name', s.type)}, got {cls.name} data")
            if s.space is not None and s.space != view.space:
                raise _NoMatch(f"'{s.name}' points to {s.space} memory, got {view.space} memory")
            if view.const and not s.const and s.space != "constant":
                raise _NoMatch(f"'{s.name}' is not a const pointer; the argument points at read-only memory")
            return 1
        if "ptr" in s.kinds and a.objptr is not None:     # &obj of a local object
            if s.type is not None and s.type is not a.objptr.cls and getattr(s.type, "name", None) != a.objptr.cls.name:
                raise _NoMatch(f"'{s.name}' points to {getattr(s.type, 'name', s.type)}, got a {a.objptr.cls.name}")
            if s.space not in (None, "thread"):
                raise _NoMatch(f"'{s.name}' points to {s.space} memory, got a thread object")
            return 1
        if "ptr" in s.kinds:
            if a.view is None:
                raise _NoMatch(f"'{s.name}' is a pointer")
            if s.type is not None and a.view.type != s.type:
                raise _NoMatch(f"'{s.name}' points to {getattr(s.type, 'name', s.type)}, got "
                               f"{getattr(a.view.type, 'name', a.view.type)} data")
            if s.space is not None and s.space != a.view.space and s.space != "thread":
                raise _NoMatch(f"'{s.name}' points to {s.space} memory, got {a.view.space}"
                               + SMALL_INPUT_NOTE * (a.view.space == "constant"))
            if a.view.const and not s.const and s.space != "constant":     # (constant: read-only itself)
                raise _NoMatch(f"'{s.name}' is not a const pointer; the argument points at read-only memory")
            return 1
        items = self.braced_items(a)
        if items:       # its values would be read in the callee's text: name it instead
            self.unsupported(a.node, f"the braced list '{self.text(a.node)}' as an argument")
        braced = items is not None
        if isinstance(s.type, ClassInst):
            if braced:
                return 0            # a braced list initialises the parameter's class
            if a.obj is None and a.expr is not None and "ref" not in s.kinds and self._converts_to(s.type):
                return 0            # through a one-argument constructor (C++'s converting constructor)
            if a.obj is None or a.obj.cls is not s.type:
                raise _NoMatch(f"'{s.name}' is a {s.type.name}")
            return 1
        if braced:
            if "ref" in s.kinds and not s.const:
                raise _NoMatch(f"'{s.name}' is a reference: its argument must be a variable or an element")
            return 0
        if a.view is not None:
            raise _NoMatch(f"'{s.name}' is a value, not a pointer")
        t = a.type
        if isinstance(t, ClassInst):
            if "ref" in s.kinds:
                raise _NoMatch(f"'{s.name}' is a {getattr(s.type, 'name', s.type)}&")
            return 0                # through the object's conversion operator
        if "ref" in s.kinds and not s.const:
            if a.lv is None:
                raise _NoMatch(f"'{s.name}' is a reference: its argument must be a variable or an element")
            if t != s.type:
                raise _NoMatch(f"'{s.name}' is a {getattr(s.type, 'name', s.type)}&, got {getattr(t, 'name', t)}")
            return 1
        if isinstance(s.type, T.MatrixType) or isinstance(t, T.MatrixType):
            if t != s.type:
                raise _NoMatch(f"'{s.name}' is a {getattr(s.type, 'name', s.type)}")
            return 1
        if isinstance(s.type, T.VectorType) != isinstance(t, T.VectorType) or \
                (isinstance(t, T.VectorType) and t.n != s.type.n):
            raise _NoMatch(f"'{s.name}' is a {getattr(s.type, 'name', s.type)}, got {getattr(t, 'name', t)}")
        # (C++'s ranks: an exact match, then an integral promotion, short to int, then a conversion)
        return 1 if t == s.type else 0.5 if T.is_promotion(t, s.type) else 0

    # -- translating the chosen function inline -------------------------------------------------
    def bind_param(self, s: PSpec, a, pscope, out, sp, moved):
        name = s.name
        if a.mat is not None:
            pscope[name] = self.bind_matrix(s, a, out, sp)     # (metal_matrices)
            return
        if "ref" in s.kinds and "ptr" not in s.kinds:
            if a.obj is not None:
                pscope[name] = const_view(a.obj) if s.const else a.obj   # (const T&: the const members)
                return
            if a.lv is not None and (a.type == s.type or isinstance(s.type, ClassInst)):
                if a.lv[0] == "var":
                    pscope[name] = a.lv[1]
                else:
                    v, i = a.lv[1], a.lv[2]
                    at = self.sem.view_offset(v, i, sp)
                    off = ir.Var(self.fresh("_at"), T.int64, span=sp)
                    out.append(ir.Decl(off, self.sem.convert(at.offset, T.int64, sp), span=sp))
                    pscope[name] = Ref(replace(at, offset=off))
                return
        if "ptr" in s.kinds and a.null:
            pscope[name] = NullPtr(name, sp)
            return
        if _shape_arg(a):
            if moved:
                self.unsupported(s.node, f"moving '{name}', which is {a.lv[1].buf}_{a.lv[1].kind}")
            pscope[name] = a.lv[1]
            return
        if "ptr" in s.kinds and a.structs is not None:    # its own byte offset, which the callee may move
            cls, view, at = a.structs
            off = ir.Var(self.fresh(name + "_off"), T.int64, span=sp)
            out.append(ir.Decl(off, self.sem.convert(at, T.int64, sp), span=sp))
            pscope[name] = StructPtr(cls, replace(view, const=view.const or s.const), off)
            return
        if "ptr" in s.kinds and a.objptr is not None:
            if moved:
                self.unsupported(s.node, f"moving '{name}', a pointer to one local {a.objptr.cls.name}")
            pscope[name] = ObjPtr(a.objptr)
            return
        if "ptr" in s.kinds:
            v = a.view
            if s.type is not None and v.type != s.type:
                v = self.sem.view_cast(v, s.type, None, None, False, sp)
            if s.const and not v.const:
                v = replace(v, const=True)
            if moved:
                off = ir.Var(self.fresh(name + "_off"), T.int64, span=sp)
                out.append(ir.Decl(off, self.sem.convert(v.offset, T.int64, sp), span=sp))
                pscope[name] = Ptr(replace(v, offset=off), off)
            else:
                pscope[name] = FixedView(v)
            return
        items = self.braced_items(a)
        if isinstance(s.type, ClassInst):
            obj = self.alloc_object(s.type, name, out, s.node)
            if items is not None:                               # `{}`: value-initialised
                out.extend(self.construct(obj, ("list", None), s.node))
            elif a.obj is None:                                 # a value through a converting constructor
                out.extend(self.call_overload(MethodSet(s.type, "ctor", self.ctors(s.type)), obj, [a], [], s.node,
                                              ctor=True)[0])
            else:
                out.extend(self.copy_object(obj, a.obj, s.node))
            pscope[name] = obj
            return
        if isinstance(s.type, ComplexType):         # complex64_t: two float locals (complex64.py)
            out.extend(self.complex_local(name, self.complex_construct(
                [self.expr(c) for c in items] if items is not None else [a.expr], a.node), sp, pscope))
            return
        if items is not None:       # T x = {}: zero
            value = self.sem.const(0, s.type)
        else:
            value = a.expr if a.obj is None else self.convert_object(a.obj, a.node)
        v = ir.Var(self.fresh(name), s.type, span=sp)
        out.append(ir.Decl(v, self.sem.convert(value, s.type, sp), span=sp))
        pscope[name] = v

    def _braced_defaults(self, name, nargs):
        """Whether a header function ``name`` called with ``nargs`` arguments leaves a ``= {}``
        default to fill (a class parameter's is translated here, as an object)."""
        for fd in self.funcdefs[name]:
            braces = fd.quals.get("{}", ())
            for p in _params_of(fd.node)[nargs:]:
                d = p.child_by_field_name("default_value")
                if d is not None and d.start_byte in braces:
                    return True
        return False

    def braced_items(self, a):
        """The items of a braced-list argument -- ``f(x, {})``, ``f({a, b})``, or a default ``= {}``
        (which the parser reads as ``00``, its place kept in ``quals["{}"]``) -- else None."""
        n = a.node
        if a.obj is not None or n is None:
            return None
        if n.type == "initializer_list":
            return list(n.named_children)
        if n.type == "number_literal" and n.start_byte in self.quals.get("{}", ()):
            return []
        return None
