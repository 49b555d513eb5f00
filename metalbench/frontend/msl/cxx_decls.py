"""C++ declarations in MSL headers and bodies: namespaces, classes and class templates
(with default and partial-specialisation matching), alias templates, static members,
member types, ``decltype``, ``typename X::Y`` and Metal's type traits.

Templates are instantiated by substitution, as C++ does: ``GEMMKernel<bfloat, ...>`` binds
the template parameters (defaults evaluated in the template's own scope, in order) and
becomes a :class:`ClassInst`, a class type whose members (static constants, member types,
fields, member functions) are read from the definition lazily, in the instance's scope.
Only what a kernel uses is instantiated; a member function is translated where it is
called (``cxx_objects.py`` inlines it). ::

    >>> from metalbench.frontend.msl import translate_kernel
    >>> from metalbench import ir, types as T
    >>> hdr = '''
    ... namespace lib {
    ... template <typename T, int N, int M = N * 2>
    ... struct Tile { static constant constexpr const int size = N * M * sizeof(T); };
    ... }
    ... using namespace lib;'''
    >>> k = translate_kernel("k", "out[0] = Tile<half, 3>::size;", hdr, inputs=[],
    ...                      outputs=[("out", T.int32, 1)])
    >>> print(ir.dump(k.body))
    out[0] = 36
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from ... import ir
from ...semantics.folding import fold
from .symbols import _TypeName

# Metal's (and C++'s) type-trait templates: their names mark a following '<' as a template
# argument list for the parser; the translator evaluates the common ones itself.
TRAIT_NAMES = frozenset("""
remove_cv_t remove_cv remove_const_t remove_volatile_t remove_reference_t remove_addrspace_t remove_addrspace
enable_if_t enable_if is_same is_same_v is_integral is_integral_v is_floating_point is_floating_point_v
is_signed is_signed_v is_unsigned is_unsigned_v is_arithmetic is_arithmetic_v conditional conditional_t
integral_constant bool_constant pointer_element pointer_element_t decay_t make_signed_t make_unsigned_t
_disjunction _conjunction disjunction disjunction_v conjunction conjunction_v negation negation_v uniform
""".split())

# Class templates, alias templates and member function templates a header declares: a '<'
# after their names starts template arguments.
_TEMPLATE_DECL = re.compile(r"template\s*<(?:[^<>;{]|<[^<>;{]*>)*>\s*(?:struct|class|union|using)\s+"
                            r"(?:alignas\s*\([^)]*\)\s*)?(\w+)")


# Variable templates (``template <typename T> constexpr constant bool is_atomicish = ...;``)
# and their specialisations (``... is_complex_v<complex_t<T>> = true;``)
_VAR_TEMPLATE_DECL = re.compile(r"template\s*<(?:[^<>;{]|<[^<>;{]*>)*>\s*(?:(?:static|constexpr|constant|const|"
                                r"inline)\s+)+[\w:]+\s+(\w+)\s*(?:=|<)")


def template_names(header: str) -> set[str]:
    """The names a header declares as class, alias or variable templates (with the traits
    above).

    >>> sorted(template_names("template <typename T> constexpr constant bool small = sizeof(T) < 4;") - TRAIT_NAMES)
    ['small']
    """
    return set(_TEMPLATE_DECL.findall(header)) | set(_VAR_TEMPLATE_DECL.findall(header)) | TRAIT_NAMES


@dataclass(eq=False)
class Ctx:
    """Where a declaration's text is: code, masked qualifiers, source, line offset."""
    code: str
    quals: dict
    src: object
    line_offset: int


class Namespace:
    """A C++ namespace: its members by name and the namespaces it names with ``using``."""

    def __init__(self, name: str, parent: "Namespace | None", members: dict | None = None):
        self.name, self.parent = name, parent
        self.members = members if members is not None else {}
        self.usings: list[Namespace] = []

    def chain(self):
        ns = self
        while ns is not None:
            yield ns
            ns = ns.parent


class Globals(dict):
    """The translator's global names (a dict, as before) whose ``get`` also sees the
    namespaces in scope: those enclosing the code being translated and those a ``using
    namespace`` names, as C++ unqualified lookup does."""

    def __init__(self):
        super().__init__()
        self.root = Namespace("", None, self)
        self.ns = self.root

    def visible(self):
        seen, out = set(), []

        def add(ns):
            if id(ns) in seen:
                return
            seen.add(id(ns))
            out.append(ns)
            for u in ns.usings:
                add(u)
        for ns in self.ns.chain():
            add(ns)
        return out

    def get(self, name, default=None):
        for ns in self.ns.chain():          # the enclosing namespaces first, innermost first
            if ns is self.root:
                break
            if name in ns.members:
                return ns.members[name]
        if dict.__contains__(self, name):
            return dict.__getitem__(self, name)
        for ns in self.visible():
            if ns is not self.root and name in ns.members:
                return ns.members[name]
        return default


@dataclass(eq=False)
class TParam:
    kind: str               # "type", "value" or "pack"
    name: str
    default: object = None  # the default argument's node
    vtype: object = None    # a value parameter's type node


@dataclass(eq=False)
class ClassTemplate:
    name: str
    tparams: list
    node: object            # struct_specifier
    ctx: Ctx
    ns: Namespace
    outer: object = None    # the enclosing ClassInst of a member template
    partials: list = field(default_factory=list)   # [(tparams, argument nodes, struct node, ctx)]
    instances: dict = field(default_factory=dict)


@dataclass(eq=False)
class AliasTemplate:
    name: str
    tparams: list
    node: object            # alias_declaration
    ctx: Ctx
    ns: Namespace
    outer: object = None


@dataclass(eq=False)
class VarTemplate:
    name: str
    tparams: list
    node: object
    ctx: Ctx
    ns: Namespace
    outer: object = None


@dataclass(frozen=True)
class PtrType:
    """A pointer type bound to a template parameter (``template <class P> f(P p)`` given
    a ``device float*``)."""
    elem: object
    space: str
    const: bool = False

    @property
    def name(self):
        return f"{'const ' if self.const else ''}{self.space} {getattr(self.elem, 'msl', self.elem)}*"

    msl = name


@dataclass(eq=False)
class Method:
    name: str
    node: object            # function_definition
    tparams: list
    static: bool
    kind: str               # "method", "ctor", "conv" (conversion operator), "operator"
    cls: object


@dataclass(eq=False)
class Field:
    name: str
    decl: object            # field_declaration
    declarator: object
    default: object         # a default member initialiser's node, or None


class ClassInst:
    """A class type: a non-template class, or one instance of a class template. Members
    are read from ``node`` in the instance's scope when first needed."""

    def __init__(self, name, node, ctx, ns, outer=None, bind=None, template=None, args=()):
        self.name, self.node, self.ctx, self.ns, self.outer = name, node, ctx, ns, outer
        self.bind = bind or {}
        self.template, self.args = template, args
        self.members = None         # filled by CxxDeclsMixin.class_members
        self.cache: dict = {}       # member name -> resolved symbol

    @property
    def msl(self):
        return self.name

    def __repr__(self):
        return self.name


class MethodSet:
    """The member functions of one name that a lookup found (with the class they belong to)."""

    def __init__(self, cls, name, methods):
        self.cls, self.name, self.methods = cls, name, methods


class ClassScope(Mapping):
    """A class instance's names for the translator's scope chain: its template arguments,
    static members (constants), member types and member functions, then those of its
    bases and enclosing classes."""

    def __init__(self, tr, ci):
        self.tr, self.ci = tr, ci

    def _find(self, name):
        return self.tr.class_member(self.ci, name)

    def __contains__(self, name):
        return self._find(name) is not None

    def __getitem__(self, name):
        v = self._find(name)
        if v is None:
            raise KeyError(name)
        return v

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0


def _tparams_of(tr, plist) -> list[TParam]:
    out = []
    for p in plist.named_children:
        k = p.type
        if k in ("type_parameter_declaration", "optional_type_parameter_declaration",
                 "variadic_type_parameter_declaration"):
            name_n = p.child_by_field_name("name") or next(
                (c for c in p.named_children if c.type == "type_identifier"), None)
            kind = "pack" if k.startswith("variadic") else "type"
            out.append(TParam(kind, tr.text(name_n) if name_n is not None else "", p.child_by_field_name("default_type")))
        elif k in ("parameter_declaration", "optional_parameter_declaration", "variadic_parameter_declaration"):
            d = p.child_by_field_name("declarator")
            kind = "pack" if k.startswith("variadic") else "value"
            name = tr.text(d).lstrip(".").strip() if d is not None else ""
            out.append(TParam(kind, name, p.child_by_field_name("default_value"), p.child_by_field_name("type")))
        elif k == "template_template_parameter_declaration":
            out.append(TParam("template", tr.text(p)))        # an error where the template is used
        else:
            tr.unsupported(p, f"the template parameter '{tr.text(p)}'")
    return out


def _unwrap_declarator(d):
    """(name node, ["ptr"/"ref"/"array"...]) of a declarator."""
    kinds = []
    while d is not None and d.type in ("pointer_declarator", "reference_declarator", "array_declarator",
                                        "attributed_declarator", "init_declarator", "abstract_pointer_declarator",
                                        "abstract_reference_declarator", "parenthesized_declarator"):
        kinds.append({"pointer_declarator": "ptr", "reference_declarator": "ref", "array_declarator": "array",
                      "abstract_pointer_declarator": "ptr", "abstract_reference_declarator": "ref"}.get(d.type, ""))
        nxt = d.child_by_field_name("declarator")
        if nxt is None:
            nxt = next((c for c in d.named_children if c.type not in ("attribute_declaration", "type_qualifier")),
                       None)
        d = nxt
    return d, [k for k in kinds if k]


class CxxDeclsMixin:
    """C++ declarations and templates: a part of :class:`~metalbench.frontend.msl.Translator`."""

    def cxx_init(self):
        self.global_syms = Globals()
        self.this_stack: list = []          # the objects whose member functions are being translated
        self.inline_stack: list = []        # functions being inlined (cxx_objects)
        self._evaluating: set = set()
        self._inlining: set = set()

    # -- contexts ----------------------------------------------------------------------
    def ctx_here(self) -> Ctx:
        return Ctx(self.code, self.quals, self.cur_src, self.line_offset)

    @contextmanager
    def in_ctx(self, ctx: Ctx, scopes, ns=None):
        """Translate in the text of ``ctx`` with ``scopes`` (and namespace ``ns`` in scope)."""
        g = self.global_syms
        saved = (self.code, self.quals, self.cur_src, self.line_offset, self.scopes, g.ns)
        self.code, self.quals, self.cur_src, self.line_offset = ctx.code, ctx.quals, ctx.src, ctx.line_offset
        self.scopes = scopes
        if ns is not None:
            g.ns = ns
        try:
            yield
        finally:
            self.code, self.quals, self.cur_src, self.line_offset, self.scopes, g.ns = saved

    def class_scopes(self, ci) -> list:
        """The scope chain of code inside class instance ``ci``."""
        return [self.global_syms, ClassScope(self, ci)]

    # -- declarations (header and namespace level) --------------------------------------------
    def cxx_top_level(self, node) -> bool:
        """Declarations this module handles at namespace level; False for the others."""
        k = node.type
        g = self.global_syms
        if k == "namespace_definition":
            name_n = node.child_by_field_name("name")
            names = self.text(name_n).replace(" ", "").split("::") if name_n is not None else [""]
            saved, saved_scopes = g.ns, self.scopes
            for nm in names:
                ns = g.ns.members.get(nm) if nm else None
                if not isinstance(ns, Namespace):
                    ns = Namespace(nm, g.ns)
                    if nm:
                        g.ns.members[nm] = ns
                g.ns = ns
            self.scopes = self.scopes + [g.ns.members]      # declarations land in the namespace
            try:
                for c in node.child_by_field_name("body").named_children:
                    self.top_level(c, self.code, self.quals)
            finally:
                g.ns, self.scopes = saved, saved_scopes
            return True
        if k == "using_declaration" and self.text(node).split()[1:2] == ["namespace"]:
            target = self.namespace_named(self.text(node).split(None, 2)[2].rstrip(";").strip())
            if target is not None and target not in g.ns.usings:
                g.ns.usings.append(target)
            return True
        if k in ("struct_specifier", "class_specifier", "union_specifier"):
            self.declare_class(node, [], None)
            return True
        if k == "enum_specifier" or (k == "declaration" and node.child_by_field_name("type") is not None and
                                     node.child_by_field_name("type").type == "enum_specifier" and
                                     not node.children_by_field_name("declarator")):
            en = node if k == "enum_specifier" else node.child_by_field_name("type")
            self.declare_enum(en, g.ns.members, g.ns.members)
            return True
        if k == "declaration" and node.child_by_field_name("type") is not None and \
                node.child_by_field_name("type").type in ("struct_specifier", "class_specifier") and \
                node.child_by_field_name("type").child_by_field_name("body") is not None:
            self.declare_class(node.child_by_field_name("type"), [], None)
            if node.children_by_field_name("declarator"):
                self.unsupported(node, "a variable declared with its struct's definition")
            return True
        if k == "template_declaration":
            return self.declare_template(node, None)
        if k == "function_definition" and self.is_operator(node):
            if not self.is_conversion(node):
                self.add_funcdef(node, [])          # a free operator: a header function (operators.py)
            return True
        if k == "type_definition" and node.child_by_field_name("type") is not None and \
                node.child_by_field_name("type").type in ("struct_specifier", "class_specifier") and \
                node.child_by_field_name("type").child_by_field_name("body") is not None:
            # typedef struct [Tag] { ... } Name, *NamePtr;  (C style)
            names = [d for d in node.children_by_field_name("declarator") if d.type == "type_identifier"]
            if not names:
                self.unsupported(node, f"the typedef '{self.quote(node)}'")
            st = node.child_by_field_name("type")
            tag = st.child_by_field_name("name")
            self.declare_class(st, [], None, name=None if tag is not None else self.text(names[0]))
            t, _ = self.resolve_type(tag if tag is not None else names[0])
            for d in node.children_by_field_name("declarator"):
                if d.type != "type_identifier":
                    self.unsupported(d, f"the typedef '{self.text(d)}'")
                self.declare_name(self.text(d), _TypeName(t), None)
            return True
        return False

    def namespace_named(self, qual: str):
        ns = self.global_syms.root
        for part in qual.replace(" ", "").split("::"):
            if not part:
                continue
            nxt = None
            for cand in [ns] + ([] if ns is not self.global_syms.root else self.global_syms.visible()):
                m = cand.members.get(part)
                if isinstance(m, Namespace):
                    nxt = m
                    break
            if nxt is None:
                if part == "metal" or part == "std":
                    nxt = Namespace(part, ns)
                    ns.members[part] = nxt
                else:
                    return None
            ns = nxt
        return ns

    @staticmethod
    def is_conversion(fnode) -> bool:
        d = fnode.child_by_field_name("declarator")
        while d is not None and d.type in ("pointer_declarator", "reference_declarator"):
            d = d.child_by_field_name("declarator") or d.named_children[-1]
        return d is not None and d.type == "function_declarator" and \
            d.child_by_field_name("declarator").type == "operator_cast"

    @staticmethod
    def is_operator(fnode) -> bool:
        d = fnode.child_by_field_name("declarator")
        while d is not None and d.type in ("pointer_declarator", "reference_declarator"):
            d = d.child_by_field_name("declarator") or d.named_children[-1]
        if d is None or d.type != "function_declarator":
            return False
        return d.child_by_field_name("declarator").type in ("operator_name", "operator_cast")

    def declare_template(self, node, outer) -> bool:
        tps = _tparams_of(self, node.child_by_field_name("parameters"))
        inner = [c for c in node.named_children if c.type not in ("template_parameter_list", "comment")]
        if not inner:
            return True
        d = inner[0]
        g = self.global_syms
        ctx = self.ctx_here()
        if d.type in ("struct_specifier", "class_specifier", "union_specifier"):
            self.declare_class(d, tps, outer)
            return True
        if d.type == "declaration" and d.child_by_field_name("type") is not None and \
                d.child_by_field_name("type").type in ("struct_specifier", "class_specifier") and \
                not d.children_by_field_name("declarator"):
            self.declare_class(d.child_by_field_name("type"), tps, outer)
            return True
        if d.type == "alias_declaration":
            nm = self.text(d.child_by_field_name("name"))
            self.declare_name(nm, AliasTemplate(nm, tps, d, ctx, g.ns, outer), outer)
            return True
        if d.type == "declaration" and all(x.type == "init_declarator"
                                           for x in d.children_by_field_name("declarator")):
            for x in d.children_by_field_name("declarator"):       # a variable template
                nm = self.text(x.child_by_field_name("declarator"))
                self.declare_name(nm, VarTemplate(nm, tps, d, ctx, g.ns, outer), outer)
            return True
        if d.type == "function_definition" and self.is_operator(d) and (outer is not None or self.is_conversion(d)):
            return True
        return False            # function (and free operator) templates, prototypes: the header's own handling

    def declare_enum(self, node, consts, types):
        """``enum E { A, B = 4 };`` / ``enum class E : uint { ... }``: its enumerators are int
        constants (counting up from the previous one); the enum's name is its underlying
        type. A plain enum's enumerators are visible unqualified; both kinds as ``E::A``."""
        from ... import types as T
        from ...semantics.folding import fold
        name_n = node.child_by_field_name("name")
        base_n = node.child_by_field_name("base")
        t = self.resolve_type(base_n)[0] if base_n is not None else T.int32
        scoped = any(c.type in ("class", "struct") for c in node.children)
        members, nxt = {}, 0
        body = node.child_by_field_name("body")
        for e in (body.named_children if body is not None else []):
            if e.type != "enumerator":
                continue
            nm = self.text(e.child_by_field_name("name"))
            v = e.child_by_field_name("value")
            if v is not None:
                c = fold(self.expr(v))
                if not isinstance(c, ir.Const):
                    self.type_err(v, "an enumerator needs a compile-time constant value")
                nxt = int(c.value)
            members[nm] = ir.Const(nxt, t)
            nxt += 1
        if not scoped:
            consts.update(members)
        if name_n is not None:
            tn = _TypeName(t)
            tn.enum_members = members
            types[self.text(name_n)] = tn

    def local_type_definition(self, node) -> bool:
        """A struct, class, enum or typedef defined in a function body (``struct Acc { float s;
        float m; };``): declared as the header's are, visible from here on. False for other
        statements."""
        k = node.type
        if k in ("struct_specifier", "class_specifier", "enum_specifier", "type_definition") \
                or (k == "declaration" and node.child_by_field_name("type") is not None
                    and node.child_by_field_name("type").type == "enum_specifier"
                    and not node.children_by_field_name("declarator")):
            return self.cxx_top_level(node)     # False: a plain typedef (the statement translator's)
        return False

    def declare_name(self, name, entity, outer):
        if outer is None:
            if self.global_syms.ns.name == "metal" and name in TRAIT_NAMES:
                return          # Metal's own trait, re-declared by a header: the translator evaluates it
            self.global_syms.ns.members[name] = entity

    def declare_class(self, node, tps, outer, name=None):
        """A class or class template definition (or a partial specialisation) at namespace
        level; members of classes are read by :meth:`class_members`. ``name``: the name of an
        anonymous struct (its typedef's)."""
        name_n = node.child_by_field_name("name")
        if name_n is None and name is None:
            self.unsupported(node, "an anonymous struct")
        if node.child_by_field_name("body") is None:
            return              # a forward declaration
        ctx = self.ctx_here()
        g = self.global_syms
        if name_n is not None and name_n.type == "template_type":   # a partial or explicit specialisation
            base = self.text(name_n.child_by_field_name("name")).strip()
            if g.ns.name == "metal" and base in TRAIT_NAMES:
                return          # a specialisation of Metal's own trait: the translator evaluates it
            tmpl = g.ns.members.get(base) or self.global_syms.get(base)
            if not isinstance(tmpl, ClassTemplate):
                self.unsupported(node, f"a specialisation of '{base}', which is not a class template here")
            tmpl.partials.append((tps, list(name_n.child_by_field_name("arguments").named_children), node, ctx))
            return
        name = name or self.text(name_n).split("::")[-1].strip()
        if g.ns.name == "metal" and name in TRAIT_NAMES:
            return              # Metal's own trait: the translator evaluates it
        if tps:
            self.declare_name(name, ClassTemplate(name, tps, node, ctx, g.ns, outer), outer)
        else:
            self.declare_name(name, _TypeName(ClassInst(name, node, ctx, g.ns, outer)), outer)

    # -- class members ------------------------------------------------------------------
    def class_members(self, ci: ClassInst) -> dict:
        """The members of ``ci``, read from its definition (once)."""
        if ci.members is not None:
            return ci.members
        m = {"fields": [], "statics": {}, "types": {}, "methods": {}, "bases": [], "asserts": [], "consts": {},
             "outside": set()}      # member functions declared here and defined outside the class
        ci.members = m
        if ci.node.type == "union_specifier":
            self.unsupported(ci.node, f"the union '{ci.name}' (to read a value's bits as another type, use "
                                      "as_type<T>(v))")
        body = ci.node.child_by_field_name("body")
        with self.in_ctx(ci.ctx, self.class_scopes(ci), ci.ns):
            for c in ci.node.named_children:
                if c.type == "base_class_clause":
                    for b in c.named_children:
                        if b.type in ("access_specifier", "virtual"):
                            continue
                        if self.text(b).strip() == "virtual":
                            self.unsupported(b, "virtual inheritance")
                        m["bases"].append(b)
            for c in body.named_children:
                self._member(ci, c, m)
        return m

    def _member(self, ci, c, m, tps=None):
        k = c.type
        if k in ("access_specifier", "comment", ";"):
            return
        if k == "static_assert_declaration":
            m["asserts"].append(c)
            return
        if k in ("alias_declaration", "type_definition"):
            if k == "alias_declaration":
                m["types"][self.text(c.child_by_field_name("name"))] = c
            else:
                for d in c.children_by_field_name("declarator"):
                    name_n, _ = _unwrap_declarator(d)
                    m["types"][self.text(name_n if name_n is not None else d)] = c
            return
        if k == "template_declaration":
            tp = _tparams_of(self, c.child_by_field_name("parameters"))
            inner = [x for x in c.named_children if x.type not in ("template_parameter_list", "comment")]
            if inner and inner[0].type == "function_definition":
                self._member(ci, inner[0], m, tp)
            elif inner and inner[0].type in ("struct_specifier", "class_specifier"):
                nm = self.text(inner[0].child_by_field_name("name"))
                m["types"][nm] = ClassTemplate(nm, tp, inner[0], ci.ctx, ci.ns, ci)
            elif inner and inner[0].type == "alias_declaration":
                nm = self.text(inner[0].child_by_field_name("name"))
                m["types"][nm] = AliasTemplate(nm, tp, inner[0], ci.ctx, ci.ns, ci)
            return
        if k == "function_definition":
            if any(x.type == "virtual" or self.text(x) == "virtual" for x in c.children):
                self.unsupported(c, "a virtual function")
            d = c.child_by_field_name("declarator")
            while d is not None and d.type in ("pointer_declarator", "reference_declarator"):
                d = d.child_by_field_name("declarator") or d.named_children[-1]
            if d is not None and d.type == "operator_cast":
                m["methods"].setdefault("operator_cast", []).append(Method("operator_cast", c, tps or [], False,
                                                                           "conv", ci))
                return
            if d is None or d.type != "function_declarator":
                return
            dn = d.child_by_field_name("declarator")
            static = "static" in self.quals_before(c.start_byte, d.start_byte)
            if dn.type == "operator_cast":
                kind, name = "conv", "operator_cast"
            elif dn.type == "operator_name":
                kind, name = "operator", self.text(dn).replace(" ", "")
            elif dn.type == "destructor_name":
                return
            else:
                name = self.text(dn).split("::")[-1].strip()
                kind = "ctor" if name == self._short_name(ci) else "method"
            m["methods"].setdefault(name, []).append(Method(name, c, tps or [], static, kind, ci))
            return
        if k in ("field_declaration", "declaration"):
            tn = c.child_by_field_name("type")
            if tn is not None and tn.type == "enum_specifier" and not c.children_by_field_name("declarator"):
                self.declare_enum(tn, m["consts"], m["types"])
                return
            if tn is not None and tn.type in ("struct_specifier", "class_specifier", "union_specifier") and \
                    tn.child_by_field_name("body") is not None:
                if tn.child_by_field_name("name") is None:     # struct { int b, c; } in;
                    self.unsupported(c, f"a member of an unnamed struct type in {ci.name} (name the struct: "
                                        "struct Inner { ... } in;)")
                nm = self.text(tn.child_by_field_name("name"))
                m["types"][nm] = _TypeName(ClassInst(f"{ci.name}::{nm}", tn, ci.ctx, ci.ns, ci))
            decls = c.children_by_field_name("declarator")
            if not decls:
                return
            if all(d.type == "function_declarator" for d in decls):
                # a member function declared here and defined outside the class: a call names it
                m["outside"].update(self.text(d.child_by_field_name("declarator")).split("::")[-1].strip()
                                    for d in decls)
                return
            quals = self.quals_before(c.start_byte, tn.start_byte if tn is not None else c.end_byte)
            static = "static" in quals
            default = c.child_by_field_name("default_value")
            for d in decls:
                name_n, _ = _unwrap_declarator(d)
                nm = self.text(name_n)
                if static:
                    m["statics"][nm] = (c, d, default)
                else:
                    if any(x.type == "bitfield_clause" for x in c.children):
                        self.unsupported(c, "a bit-field")
                    m["fields"].append(Field(nm, c, d, default))
            return
        if k in ("struct_specifier", "class_specifier"):
            nm = self.text(c.child_by_field_name("name"))
            m["types"][nm] = _TypeName(ClassInst(f"{ci.name}::{nm}", c, ci.ctx, ci.ns, ci))
            return
        if k == "enum_specifier":
            self.declare_enum(c, m["consts"], m["types"])
            return
        if k == "friend_declaration":
            self.unsupported(c, "a friend declaration")
        self.unsupported(c, f"the member '{self.quote(c)}'")

    def defined_outside(self, ci, name, node) -> None:
        """Raise, naming it, when member ``name`` of class ``ci`` is declared in the class and
        defined outside it (``float S::get() const { ... }``), which is not read."""
        if name in self.class_members(ci).get("outside", ()):
            what = "the constructor" if name == self._short_name(ci) else f"'{name}'"
            self.unsupported(node, f"{what} of {ci.name}, a member function defined outside its class "
                                   "(define it inside the class)")

    @staticmethod
    def _short_name(ci):
        return (ci.template.name if ci.template is not None else ci.name.split("::")[-1]).split("<")[0]

    def bases(self, ci) -> list:
        """The base classes of ``ci`` (ClassInst), resolved in its scope."""
        if "bases" not in ci.cache:
            ci.cache["bases"] = []          # while resolving them, a base's name is not a member
            out = []
            with self.in_ctx(ci.ctx, self.class_scopes(ci), ci.ns):
                for b in self.class_members(ci)["bases"]:
                    t = self.type_of_descriptor(b)
                    if not isinstance(t, ClassInst):
                        self.unsupported(b, f"the base class '{self.text(b)}'")
                    out.append(t)
            ci.cache["bases"] = out
        return ci.cache["bases"]

    def class_member(self, ci: ClassInst, name: str):
        """What ``name`` means inside ``ci`` (template argument, static constant, member
        type, member functions, or the class's own name), or None."""
        key = ("m", name)
        if key in ci.cache:
            return ci.cache[key]
        r = self._class_member(ci, name)
        if r is not None and not isinstance(r, MethodSet):
            ci.cache[key] = r
        return r

    def _class_member(self, ci, name):
        if name in ci.bind:
            return ci.bind[name]
        m = self.class_members(ci)
        if name in m["statics"]:
            return self.static_value(ci, name)
        if name in m["consts"]:
            return m["consts"][name]
        if name in m["types"]:
            return self.member_type(ci, name)
        if name in m["methods"]:
            return MethodSet(ci, name, m["methods"][name])
        if name == self._short_name(ci):
            return _TypeName(ci)
        for b in self.bases(ci):
            r = self.class_member(b, name)
            if r is not None:
                return r
        if ci.outer is not None:
            return self.class_member(ci.outer, name)
        return None

    def static_value(self, ci, name):
        c, d, default = self.class_members(ci)["statics"][name]
        key = (id(ci), name)
        if key in self._evaluating:
            self.type_err(d, f"the static member '{name}' depends on itself")
        self._evaluating.add(key)
        try:
            with self.in_ctx(ci.ctx, self.class_scopes(ci), ci.ns):
                t, _ = self.resolve_type(c.child_by_field_name("type"))
                init = default
                if d.type == "init_declarator":
                    init = d.child_by_field_name("value")
                if init is None:
                    self.unsupported(d, f"the static member '{name}' without a value in the class")
                if init.type == "initializer_list":
                    init = init.named_children[0] if init.named_children else None
                v = fold(self.sem.convert(self.expr(init), t)) if init is not None else self.sem.const(0, t)
                if not isinstance(v, ir.Const):
                    self.type_err(d, f"the static member '{name}' is not a compile-time constant")
                return v
        finally:
            self._evaluating.discard(key)

    def member_type(self, ci, name):
        c = self.class_members(ci)["types"][name]
        if isinstance(c, (_TypeName, ClassTemplate, AliasTemplate)):
            return c
        with self.in_ctx(ci.ctx, self.class_scopes(ci), ci.ns):
            if c.type == "alias_declaration":
                return _TypeName(self.alias_type(c))
            return _TypeName(dict(self.typedef_names(c))[name])

def _shown(v):
    return str(v).lower() if isinstance(v, bool) else v
