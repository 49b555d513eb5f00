"""C++ objects in MSL: values of class type, their members, construction and copies, and
calls of member functions (and of functions that take objects), translated where they are
called.

An object is a bundle of IR locals, one per data member (:class:`StructObj`): a scalar,
vector or matrix member is a variable, an array member a thread array, a pointer member a
pointer (its target buffer fixed by its first assignment, as for any pointer), a member
of class type a nested bundle. A member function is translated inline at its call, with
the object's members in scope (``this``), its parameters bound as C++ binds them (a
reference is the argument itself, a value a copy), its template arguments deduced from
the arguments; ``return`` assigns the result (a value, a reference, a pointer or an
object) and leaves through a one-pass loop when it is not the last statement. ::

    >>> from metalbench.frontend.msl import translate_kernel
    >>> from metalbench import ir, types as T
    >>> hdr = '''
    ... struct Acc {
    ...   float s = 0.0f;
    ...   void add(float v) thread { s += v; }
    ... };'''
    >>> k = translate_kernel("k", "Acc a; a.add(2.0f); a.add(x[0]); out[0] = a.s;", hdr,
    ...                      inputs=[("x", T.float32, 1)], outputs=[("out", T.float32, 1)])
    >>> print(ir.dump(k.body))
    float32 a_s
    a_s = 0.0
    float32 v = 2.0
    a_s = (a_s + v)
    float32 v_1 = x[0]
    a_s = (a_s + v_1)
    out[0] = a_s
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ... import ir
from ... import types as T
from ...errors import KernelTypeError, MetalbenchError
from ...semantics.folding import const_value
from ...semantics.complexval import ComplexType
from ...semantics.views import View
from .cxx_decls import ClassInst, MethodSet, _unwrap_declarator
from .symbols import Buf, Ptr, Ref, _params_of, _SPACES, _TypeName

NOT_MINE = object()


@dataclass(eq=False)
class StructObj:
    """An object: its class and its members' symbols (``ir.Var``, ``Buf``, ``Ptr``,
    :class:`PendingPtr`, :class:`FixedView`, ``Ref``, nested ``StructObj``)."""
    cls: ClassInst
    fields: dict
    name: str


def const_view(obj):
    """``obj`` seen through a const reference: the same members (the same storage), marked
    ``const``, so a member call on it takes the const overload (``int get() const``)."""
    if getattr(obj, "const", False) or not isinstance(obj, StructObj):
        return obj
    view = StructObj(obj.cls, obj.fields, obj.name)
    view.__dict__.update(obj.__dict__)
    view.const = True
    return view


@dataclass
class FixedView:
    """A pointer that never moves (a pointer parameter the function does not advance, an
    array member of an element of an array of objects: ``count`` elements)."""
    view: View
    count: int | None = None


@dataclass(eq=False)
class ObjArray:
    """An array of ``n`` objects (thread or threadgroup memory), stored member by member:
    each member an array whose first dimension is the object's index."""
    cls: ClassInst
    fields: dict            # member name -> Buf (values and array members) or ObjArray (class members)
    n: int
    space: str
    name: str


@dataclass
class PendingPtr:
    """A pointer member before its first assignment fixes the buffer it points into."""
    name: str
    elem: object
    space: str
    const: bool
    off: ir.Var


@dataclass(eq=False)
class InlineCtx:
    name: str
    kind: str               # "void", "value", "ref", "ptr", "object"
    ret: object
    tail: object            # the body's last statement node
    result: object = None   # Var (value), lvalue tuple (ref), (View, off Var) (ptr), StructObj (object)
    decls: list = field(default_factory=list)
    done: ir.Var | None = None


def _fixed(v: View):
    return FixedView(v)


class CxxObjectsMixin:
    """C++ objects: a part of :class:`~metalbench.frontend.msl.Translator`."""

    # -- members ------------------------------------------------------------------------
    def all_fields(self, cls):
        out = []
        for b in self.bases(cls):
            out += self.all_fields(b)
        return out + [(f, cls) for f in self.class_members(cls)["fields"]]

    def field_info(self, owner, f):
        """(type, declarator kinds, array dims, space, const) of data member ``f``."""
        key = ("field", f.name)
        if key not in owner.cache:
            with self.in_ctx(owner.ctx, self.class_scopes(owner), owner.ns):
                tn = f.decl.child_by_field_name("type")
                t, atomic = self.resolve_type(tn)
                owner.cache[("atomic", f.name)] = atomic     # (field_atomic: in memory only)
                _, kinds = _unwrap_declarator(f.declarator)
                dims = []
                d = f.declarator
                while d.type in ("array_declarator", "init_declarator", "attributed_declarator"):
                    if d.type == "array_declarator":
                        size = d.child_by_field_name("size")
                        v = const_value(self.expr(size)) if size is not None else None
                        if v is None or int(v) <= 0:
                            self.type_err(d, "array sizes must be positive compile-time constants")
                        dims.insert(0, int(v))
                    d = d.child_by_field_name("declarator") or d.named_children[0]
                quals = self.quals_before(f.decl.start_byte, tn.start_byte)
                space = next((q for q in quals if q in _SPACES), None)
                const = any(c.type == "type_qualifier" and self.text(c) == "const" for c in f.decl.children)
            owner.cache[key] = (t, kinds, dims, space, const)
        return owner.cache[key]

    def field_atomic(self, owner, f, node=None, where=None) -> bool:
        """Whether data member ``f`` is atomic (``atomic_uint cnt;``): usable in a struct in
        device or threadgroup memory (``struct_views``); with ``where`` (a local object, an array
        of objects) refused by name there, as Metal has no atomics in thread memory."""
        self.field_info(owner, f)
        atomic = owner.cache[("atomic", f.name)]
        if atomic and where is not None:
            self.unsupported(node if node is not None else f.declarator,
                             f"the atomic member '{f.name}' of {where} (atomics live in device or threadgroup memory)")
        return atomic

    def local_array(self, name, elem, dims, space, out, node, values=None):
        """A thread or threadgroup array of scalars, vectors or matrices: its symbol (a
        ``Buf``); vectors are stored as their components (``float3`` in 4, as Metal lays
        them out) and read through a vector view."""
        sp = self.sp(node)
        irname = self.fresh(name)
        if isinstance(elem, T.VectorType):
            if len(dims) != 1:
                self.unsupported(node, "a multi-dimensional array of vectors")
            step = T.padded(elem.n)
            a = ir.ArrayDecl(irname, space, elem.elem, (dims[0] * step,), values, span=sp)
        else:
            a = ir.ArrayDecl(irname, space, elem, tuple(dims), values, span=sp)
        if space == "threadgroup":
            if not self.in_kernel:
                self.unsupported(node, "a threadgroup array declared in a device function")
            self.tg_arrays.append(a)
        else:
            out.append(a)
        return Buf(irname, elem, space, tuple(dims))

    def alloc_object(self, cls, base, out, node) -> StructObj:
        """A new object of class ``cls``: its members declared (statements into ``out``),
        not yet initialised."""
        obj = StructObj(cls, {}, base)
        sp = self.sp(node)
        for f, owner in self.all_fields(cls):
            t, kinds, dims, space, const = self.field_info(owner, f)
            self.field_atomic(owner, f, node, f"a local {cls.name}")
            nm = f"{base}_{f.name}"
            if "ref" in kinds or isinstance(t, ComplexType):
                self.unsupported(node, f"the {'reference' if 'ref' in kinds else 'complex64_t'} member '{f.name}' of "
                                       f"{cls.name}")
            if "ptr" in kinds:
                off = ir.Var(self.fresh(nm + "_off"), T.int64, span=sp)
                out.append(ir.Decl(off, ir.Const(0, T.int64), span=sp))
                obj.fields[f.name] = PendingPtr(f.name, t, space or "thread", const, off)
            elif self.is_metal_matrix(t):              # (metal_matrices)
                if len(dims) > 1:
                    self.unsupported(node, f"the multi-dimensional matrix array member '{f.name}' of {cls.name}")
                obj.fields[f.name] = self.new_matrix(nm, t, tuple(dims), out, sp)
            elif dims:
                if isinstance(t, ClassInst):
                    self.unsupported(node, f"the array-of-structs member '{f.name}' of {cls.name}")
                obj.fields[f.name] = self.local_array(nm, t, dims, "thread", out, node)
            elif isinstance(t, ClassInst):
                obj.fields[f.name] = self.alloc_object(t, nm, out, node)
            else:
                v = ir.Var(self.fresh(nm), t, span=sp)
                out.append(ir.Decl(v, span=sp))
                obj.fields[f.name] = v
        return obj

    def alloc_array(self, cls, base, n, space, out, node) -> ObjArray:
        """An array of ``n`` objects of ``cls`` in ``space``, its members' arrays declared."""
        arr = ObjArray(cls, {}, n, space, base)
        for f, owner in self.all_fields(cls):
            t, kinds, dims, _, _ = self.field_info(owner, f)
            self.field_atomic(owner, f, node, f"an array of {cls.name}")
            nm = f"{base}_{f.name}"
            if kinds and kinds[0] in ("ptr", "ref") or isinstance(t, ComplexType):
                self.unsupported(node, f"an array of {cls.name}, which has the pointer, reference or complex64_t "
                                       f"member '{f.name}'")
            if self.is_metal_matrix(t):
                self.unsupported(node, f"an array of {cls.name}, which has the matrix member '{f.name}'")
            if isinstance(t, ClassInst):
                if dims:
                    self.unsupported(node, f"an array of {cls.name}, whose member '{f.name}' is an array of structs")
                arr.fields[f.name] = self.alloc_array(t, nm, n, space, out, node)
            else:
                arr.fields[f.name] = self.local_array(nm, t, [n] + dims, space, out, node)
        return arr

    def element(self, arr: ObjArray, i, node) -> StructObj:
        """Object ``i`` of an array of objects: its members are references into the arrays."""
        sp = self.sp(node)
        fields = {}
        for name, sym in arr.fields.items():
            if isinstance(sym, ObjArray):
                fields[name] = self.element(sym, i, node)
                continue
            view = self.sym_view(sym, node)
            if len(sym.shape) > 1:
                count = 1
                for d in sym.shape[1:]:
                    count *= d
                row = self.sem.view_row(view, i, sp)
                fields[name] = FixedView(replace(row, inner=()), count)
            else:
                fields[name] = Ref(self.sem.view_offset(view, i, sp))
        return StructObj(arr.cls, fields, f"{arr.name}[]")

    def element_of(self, node):
        """``arr[i]`` of an array of objects (an object), or None."""
        if node.type != "subscript_expression":
            return None
        base = node.child_by_field_name("argument")
        if base.type != "identifier":
            return None
        arr = self.lookup(self.text(base))
        if not isinstance(arr, ObjArray):
            return None
        sp = self.sp(node)
        i = self.sem.once(self.sem.index(self.expr(node.child_by_field_name("indices").named_children[0]), sp), sp)
        return self.element(arr, i, node)

    def member_symbol(self, node):
        """The symbol of ``obj.member`` / ``this->member`` (None when ``node`` is not a
        member access of an object)."""
        if node.type != "field_expression":
            return None
        base = node.child_by_field_name("argument")
        fld = node.child_by_field_name("field")
        if fld.type not in ("field_identifier", "identifier"):
            return None
        obj = self.object_of(base)
        if obj is None:
            return None
        name = self.text(fld).strip()
        if name in obj.fields:
            return obj.fields[name]
        sym = self.class_member(obj.cls, name)
        if isinstance(sym, ir.Const):
            return sym
        if isinstance(sym, MethodSet):
            self.type_err(node, f"'{name}' is a member function of {obj.cls.name}: call it")
        self.type_err(node, f"{obj.cls.name} has no member '{name}'")

    def object_of(self, base):
        """The object ``base`` denotes in ``base.member`` / ``base->member``."""
        while base.type == "parenthesized_expression" and base.named_children:
            base = base.named_children[-1]
        if base.type == "this":
            return self.current_this(base)
        if base.type == "pointer_expression" and self.text(base).lstrip().startswith("*") and \
                base.child_by_field_name("argument").type == "this":
            return self.current_this(base)
        if self.is_struct_pointer_node(base):           # p->member (struct_views)
            return self.struct_object(base)
        return self.object_value(base)

    def current_this(self, node):
        if not self.this_stack or self.this_stack[-1] is None:
            self.type_err(node, "'this' outside a member function")
        return self.this_stack[-1]

    def object_value(self, node):
        """The object an expression denotes (a variable, a member, a temporary built here,
        an object a function returns), or None when it is not of class type."""
        k = node.type
        if k == "parenthesized_expression" and node.named_children:
            return self.object_value(node.named_children[-1])
        if k == "identifier":
            sym = self.lookup(self.text(node))
            return sym if isinstance(sym, StructObj) else None
        if k == "subscript_expression":
            return self.element_of(node) or self.struct_object(node)
        if k == "pointer_expression" and self.text(node).lstrip().startswith("*") and \
                self.is_struct_pointer_node(node.child_by_field_name("argument")):
            return self.struct_object(node)
        if k == "this" or (k == "pointer_expression" and self.text(node).lstrip().startswith("*")
                           and node.child_by_field_name("argument").type == "this"):
            return self.current_this(node) if k != "this" else None
        if k == "field_expression":
            sym = self.member_symbol(node)
            return sym if isinstance(sym, StructObj) else None
        if k == "compound_literal_expression":
            t = self.cxx_type(node.child_by_field_name("type"))
            if not isinstance(t, ClassInst):
                return None
            return self.temporary(t, ("list", node.child_by_field_name("value")), node)
        if k in ("binary_expression", "unary_expression", "conditional_expression"):
            return self.operator_object(node)           # a + b, c ? a : b of objects (operators.py)
        if k == "call_expression":
            fn = node.child_by_field_name("function")
            if fn.type in ("type_identifier", "identifier", "template_type", "qualified_identifier") and \
                    not self.elements_call(node):
                t = None
                if fn.type != "identifier" or self.names_type(fn):
                    try:
                        t = self.cxx_type(fn)
                    except KernelTypeError:
                        t = None
                if isinstance(t, ClassInst):
                    return self.temporary(t, ("args", node.child_by_field_name("arguments").named_children), node)
            return self.call_object(node)     # f() returning an object or a reference to one (operators.py)
        return None

    def names_type(self, fn) -> bool:
        """Whether identifier ``fn`` names a type: a type name, or inside a class with
        constructors its own name (which the constructors shadow in its scope)."""
        ent = self.lookup(self.text(fn))
        return isinstance(ent, _TypeName) or isinstance(ent, MethodSet) and ent.cls is not None and \
            any(m.kind == "ctor" for m in ent.methods)

    def is_object_node(self, node) -> bool:
        """Whether ``node`` denotes an object, decided without translating it."""
        k = node.type
        if k == "parenthesized_expression" and node.named_children:
            return self.is_object_node(node.named_children[-1])
        if k == "identifier":
            return isinstance(self.lookup(self.text(node)), StructObj)
        if k == "subscript_expression":
            base = node.child_by_field_name("argument")
            return base.type == "identifier" and isinstance(self.lookup(self.text(base)), ObjArray) or \
                self.is_struct_pointer_node(base)
        if k == "pointer_expression" and self.text(node).lstrip().startswith("*"):
            return node.child_by_field_name("argument").type == "this" or \
                self.is_struct_pointer_node(node.child_by_field_name("argument"))
        if k == "field_expression":
            try:
                return isinstance(self.probe(lambda: self.member_symbol(node)), StructObj)
            except MetalbenchError:
                return False
        if k == "compound_literal_expression":
            return isinstance(self.cxx_type(node.child_by_field_name("type")), ClassInst)
        if k in ("binary_expression", "unary_expression", "conditional_expression"):
            return self.operator_returns(node) in ("object", "ref")
        if k == "call_expression":
            fn = node.child_by_field_name("function")
            if fn.type in ("template_type", "type_identifier") or (
                    fn.type == "identifier" and self.names_type(fn)):
                try:
                    return isinstance(self.cxx_type(fn), ClassInst)
                except KernelTypeError:
                    return False
            return self.call_returns(node) == "object" or self.returns_object_ref(node)
        return False

    def temporary(self, cls, how, node):
        out = []
        obj = self.alloc_object(cls, f"_{cls.name.split('<')[0]}", out, node)
        out += self.construct(obj, how, node)
        for s in out:
            self.emit_pre(s, self.sp(node))
        return obj

    # -- construction and copies ----------------------------------------------------------
    def ctors(self, cls):
        return [m for m in self.class_members(cls)["methods"].get(self._short_name(cls), []) if m.kind == "ctor"]

    def construct(self, obj, how, node) -> list:
        """Statements that initialise ``obj``: ``how`` is ("default",), ("value",),
        ("args", nodes), ("list", initializer_list node) or ("copy", StructObj)."""
        kind = how[0]
        if kind == "copy":
            return self.copy_object(obj, how[1], node)
        ctors = self.ctors(obj.cls)
        if kind == "list":
            items = list(how[1].named_children) if how[1] is not None else []
            if ctors and items:
                kind, how = "args", ("args", items)
            elif not items:
                kind = "value"
            else:
                return self.aggregate_init(obj, items, node)
        if kind == "args" and not how[1]:
            kind = "value" if not any(not _params_of(m.node) for m in ctors) else "default"
        if kind == "args":
            args = self.ctor_args(how[1])
            if len(args) == 1 and args[0].obj is not None and args[0].obj.cls is obj.cls and \
                    not any(len(_params_of(m.node)) == 1 for m in ctors):
                return self.copy_object(obj, args[0].obj, node)
            if not ctors:
                self.defined_outside(obj.cls, self._short_name(obj.cls), node)
                self.type_err(node, f"{obj.cls.name} has no constructor taking {len(args)} arguments")
            out, _ = self.call_overload(MethodSet(obj.cls, "ctor", ctors), obj, args, [], node, ctor=True)
            return out
        out = []
        if kind == "value":
            out += self.zero_object(obj, node)
        default = [m for m in ctors if not [p for p in _params_of(m.node)
                                           if p.type != "optional_parameter_declaration"]]
        if default:
            o, _ = self.call_overload(MethodSet(obj.cls, "ctor", default), obj, [], [], node, ctor=True)
            return out + o
        if ctors:
            self.type_err(node, f"{obj.cls.name} has no default constructor")
        return out + self.member_inits(obj, {}, node)

    def member_inits(self, obj, inits: dict, node) -> list:
        """Each data member initialised in declaration order: from the constructor's
        initialiser list (``inits``: name -> argument node list), else its default member
        initialiser, else default-constructed (class members) or left unset."""
        out = []
        for f, owner in self.all_fields(obj.cls):
            sym = obj.fields[f.name]
            if f.name in inits:
                out += self.init_member(obj, f.name, sym, inits[f.name], node)
            elif f.default is not None:
                with self.in_ctx(owner.ctx, self.class_scopes(owner) + [obj.fields], owner.ns):
                    out += self.init_member(obj, f.name, sym, f.default, f.decl)
            elif isinstance(sym, StructObj):
                out += self.construct(sym, ("default",), node)
        return out

    def init_member(self, obj, name, sym, init, node) -> list:
        """``member(args)`` / ``member{...}`` / ``= value`` for one data member."""
        sp = self.sp(node)
        if init.type in ("argument_list", "initializer_list"):
            items = list(init.named_children)
        else:
            items = [init]
        if self.is_metal_matrix(sym):
            return self.init_matrix_member(sym, init, node)       # (metal_matrices)
        if isinstance(sym, StructObj):
            if init.type == "initializer_list":
                return self.construct(sym, ("list", init), node)
            if len(items) == 1 and self.is_object_node(items[0]):
                return self.copy_object(sym, self.object_value(items[0]), node)
            return self.construct(sym, ("args", items), node)
        if isinstance(sym, (PendingPtr, Ptr)):
            if len(items) != 1:
                self.type_err(node, f"the pointer member '{name}' takes one pointer")
            return self.set_pointer(obj.fields, name, items[0], None, sp)
        if isinstance(sym, (Buf, FixedView)):
            if init.type != "initializer_list":
                self.type_err(node, f"the array member '{name}' is initialised with a {{...}} list")
            return self.fill_array(sym, items, node)
        if isinstance(sym, Ref):
            v = self.ref_view(sym, sp)
            val = self.sem.convert(self.value_expr(items[0]), v.type, sp) if items else self.zero_of(v.type, sp)
            return self.store_value(v, ir.Const(0, T.int32), val, sp)
        if isinstance(sym, ir.Var):
            t = sym.type
            if not items:
                return [ir.Assign(sym, self.zero_of(t, sp), span=sp)]
            if isinstance(t, T.VectorType) and len(items) > 1:
                val = self.sem.vector(t, [self.expr(x) for x in items], sp)
            elif isinstance(t, T.MatrixType):
                val = self.matrix_construct(t, [self.expr(items[0])], node)
            else:
                val = self.sem.convert(self.value_expr(items[0]), t, sp)
            return [ir.Assign(sym, val, span=sp)]
        self.unsupported(node, f"initialising the member '{name}'")

    def zero_of(self, t, sp):
        if isinstance(t, T.VectorType):
            return self.sem.vector(t, [self.sem.const(0, t.elem, sp)], sp)
        if isinstance(t, T.MatrixType):
            return ir.MatrixFill(self.sem.const(0, t.elem, sp), t, span=sp)
        return self.sem.const(0, t, sp)

    def fill_array(self, buf, items, node) -> list:
        """``arr = {a, b}``: the listed elements, then zeros (as C++ value-initialises the rest)."""
        sp = self.sp(node)
        n = self.count_of(buf)
        if len(items) > n:
            self.type_err(node, f"{len(items)} initialisers for an array of {n}")
        view = self.sym_view(buf, node)
        flat = replace(view, inner=())
        out = []
        for k in range(n):
            v = self.expr(items[k]) if k < len(items) else self.zero_of(buf.elem, sp)
            out += self.store_value(flat, ir.Const(k, T.int32), v, sp)
        return out

    @staticmethod
    def count_of(sym) -> int:
        if isinstance(sym, FixedView):
            return sym.count
        n = 1
        for d in sym.shape:
            n *= d
        return n

    def store_value(self, view, i, v, sp) -> list:
        """``view[i] = v``, a vector built of known components stored component by component."""
        comps = self.components(v, view.type) if isinstance(view.type, T.VectorType) else None
        if comps is None:
            return self.sem.view_store(view, i, v, sp)
        at = self.sem.view_cast(self.sem.view_offset(view, i, sp), view.type.elem, None, None, False, sp)
        out = []
        for c, x in enumerate(comps):
            out += self.sem.view_store(at, ir.Const(c, T.int32, span=sp), x, sp)
        return out

    def components(self, v, t):
        """The scalar components of vector value ``v`` (of type ``t``) when they are at hand."""
        if isinstance(v, ir.VecCons) and all(isinstance(a.type, T.ScalarType) for a in v.args):
            args = [self.sem.convert(a, t.elem) for a in v.args]
            return args * t.n if len(args) == 1 else (args if len(args) == t.n else None)
        if isinstance(v, ir.Const) and isinstance(v.type, T.VectorType):
            vals = v.value if isinstance(v.value, (list, tuple)) else [v.value] * t.n
            return [ir.Const(x, t.elem) for x in vals]
        return None

    def zero_object(self, obj, node) -> list:
        sp = self.sp(node)
        out = []
        for name, sym in obj.fields.items():
            if self.is_metal_matrix(sym):
                out += self.zero_matrix(sym, sp)
            elif isinstance(sym, ir.Var):
                out.append(ir.Assign(sym, self.zero_of(sym.type, sp), span=sp))
            elif isinstance(sym, Ref):
                v = self.ref_view(sym, sp)
                out += self.store_value(v, ir.Const(0, T.int32), self.zero_of(v.type, sp), sp)
            elif isinstance(sym, (Buf, FixedView)):
                out += self.fill_array(sym, [], node)
            elif isinstance(sym, StructObj):
                out += self.zero_object(sym, node)
        return out

    def zero_member(self, sym, node) -> list:
        sp = self.sp(node)
        if isinstance(sym, ir.Var):
            return [ir.Assign(sym, self.zero_of(sym.type, sp), span=sp)]
        v = self.ref_view(sym, sp)
        return self.store_value(v, ir.Const(0, T.int32), self.zero_of(v.type, sp), sp)

    def aggregate_init(self, obj, items, node) -> list:
        """``T{a, b}`` / ``T x = {a, b};`` of a class without constructors: members in order."""
        out = []
        fields = self.all_fields(obj.cls)
        if len(items) > len(fields):
            self.type_err(node, f"{len(items)} initialisers for {obj.cls.name}, which has {len(fields)} members")
        for k, (f, owner) in enumerate(fields):
            sym = obj.fields[f.name]
            if k < len(items):
                out += self.init_member(obj, f.name, sym, items[k], items[k])
            elif f.default is not None:
                with self.in_ctx(owner.ctx, self.class_scopes(owner) + [obj.fields], owner.ns):
                    out += self.init_member(obj, f.name, sym, f.default, f.decl)
            elif self.is_metal_matrix(sym):
                out += self.zero_matrix(sym, self.sp(node))
            elif isinstance(sym, (ir.Var, Ref)):
                out += self.zero_member(sym, node)
            elif isinstance(sym, (Buf, FixedView)):
                out += self.fill_array(sym, [], node)
            elif isinstance(sym, StructObj):
                out += self.construct(sym, ("value",), node)
        return out

    def copy_object(self, dst, src, node) -> list:
        """``dst = src`` member by member (C++'s implicit copy)."""
        if src.cls is not dst.cls:
            self.type_err(node, f"cannot assign a {src.cls.name} to a {dst.cls.name}")
        sp = self.sp(node)
        out = []
        for name, d in dst.fields.items():
            s = src.fields[name]
            if self.is_metal_matrix(d):
                out += self.copy_matrix(d, s, sp)
            elif isinstance(d, ir.Var):
                out.append(ir.Assign(d, self.symbol_value(s, sp), span=sp))
            elif isinstance(d, Ref):
                out += self.sem.view_store(self.ref_view(d, sp), ir.Const(0, T.int32), self.symbol_value(s, sp), sp)
            elif isinstance(d, (PendingPtr, Ptr)):
                if isinstance(s, PendingPtr):
                    continue            # an unset pointer member: nothing to copy
                v = self.sym_view(s, node)
                out += self.bind_pointer(dst.fields, name, v, sp)
            elif isinstance(d, (Buf, FixedView)):
                dv, sv = replace(self.sym_view(d, node), inner=()), replace(self.sym_view(s, node), inner=())
                n = self.count_of(d)
                for k in range(n):
                    i = ir.Const(k, T.int32)
                    out += self.sem.view_store(dv, i, self.sem.view_load(sv, i, sp), sp)
            elif isinstance(d, StructObj):
                out += self.copy_object(d, s, node)
        return out

    def symbol_value(self, s, sp):
        if isinstance(s, ir.Var):
            return ir.Var(s.name, s.type, span=sp)
        if isinstance(s, Ref):
            return self.sem.view_load(self.ref_view(s, sp), ir.Const(0, T.int32), sp)
        if isinstance(s, ir.Const):
            return s
        raise KernelTypeError("this member is not a value", sp)

    # -- pointers held by objects --------------------------------------------------------
    def set_pointer(self, scope, name, value_node, op, sp) -> list:
        if self.ptr_rank(value_node) is None:
            self.type_err(value_node, f"'{self.quote(value_node)}' is not a pointer into a buffer or array")
        return self.bind_pointer(scope, name, self.pointer(value_node), sp)

    def bind_pointer(self, scope, name, v, sp) -> list:
        sym = scope[name]
        if isinstance(sym, PendingPtr):
            if sym.elem is not None and not isinstance(sym.elem, str) and v.type != sym.elem:
                raise KernelTypeError(f"the pointer '{name}' points to {getattr(sym.elem, 'name', sym.elem)}, "
                                      f"not {getattr(v.type, 'name', v.type)} data", sp)
            scope[name] = Ptr(replace(v, offset=sym.off, const=v.const or sym.const), sym.off)
            return [ir.Assign(sym.off, self.sem.convert(v.offset, T.int64, sp), span=sp)]
        if v.buf != sym.view.buf:
            raise KernelTypeError(f"the pointer '{name}' points into '{sym.view.buf}'; metalbench cannot make it "
                                  f"point into '{v.buf}' as well (each pointer's buffer is fixed when the kernel "
                                  "is compiled)", sp)
        return [ir.Assign(sym.off, self.sem.convert(v.offset, T.int64, sp), span=sp)]

    # -- arguments ------------------------------------------------------------------------
    def lvalue_load(self, lv, sp):
        if lv[0] == "var":
            return self.local_value(lv[1], sp)
        if lv[0] == "loc":
            return self.sem.view_load(lv[1], lv[2], sp)
        return None

    def value_expr(self, node):
        """``node`` as a value: an object converts through its conversion operator."""
        if self.is_object_node(node):
            return self.convert_object(self.object_value(node), node)
        return self.expr(node)

    def value_as(self, node, t):
        """``node`` as a value about to be converted to ``t``: an object through its
        conversion operator to ``t`` when it has one (C++ picks the operator by target)."""
        if isinstance(t, (T.ScalarType, T.VectorType)) and self.is_object_node(node):
            return self.convert_object(self.object_value(node), node, want=t)
        if node.type == "initializer_list":            # return {x, y}; from a float2 function
            return self.braced_value(node, t)
        return self.expr(node)

    def conversions(self, cls, want=None):
        """The conversion operators of ``cls`` (its own, else its first base's that has some);
        with ``want`` (a type, or a type's name) the ones to that type first."""
        convs = self.class_members(cls)["methods"].get("operator_cast", [])
        for b in self.bases(cls):
            convs = convs or self.class_members(b)["methods"].get("operator_cast", [])
        if want is None or len(convs) < 2:
            return list(convs)

        def to_want(m):
            d = m.node.child_by_field_name("declarator")
            if d is not None and d.type == "function_declarator":
                d = d.child_by_field_name("declarator")
            tn = d.child_by_field_name("type") if d is not None and d.type == "operator_cast" else None
            if tn is None:
                return False
            with self.in_ctx(m.cls.ctx, self.class_scopes(m.cls), m.cls.ns):    # the class's text
                if isinstance(want, str):
                    return self.text(tn).strip() == want
                try:
                    return self.resolve_type(tn)[0] == want
                except MetalbenchError:
                    return False
        return sorted(convs, key=lambda m: not to_want(m))

    def convert_object(self, obj, node, want=None):
        """An object used as a value: its conversion operator (``operator T()``; with
        several, the one to ``want``, the type the value converts to, when it has one)."""
        convs = self.conversions(obj.cls, want)
        if not convs:
            ops = [n for n in self.class_members(obj.cls)["methods"] if n.startswith("operator")]
            if ops:     # overloaded operators are calls (operators.py); none took this object here
                self.type_err(node, f"'{self.quote(node)}': no operator function takes a {obj.cls.name} "
                                    f"here, and it has no conversion operator (it defines "
                                    f"{', '.join(obj.cls.name + '::' + o for o in ops)})")
            self.type_err(node, f"'{self.quote(node)}' is a {obj.cls.name}, not a value",
                          hint="use one of its members")
        out, r = self.call_overload(MethodSet(obj.cls, "operator_cast", convs[:1]), obj, [], [], node)
        for s in out:
            self.emit_pre(s, self.sp(node))
        return r
