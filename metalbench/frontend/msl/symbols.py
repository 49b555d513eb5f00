"""What MSL names are bound to while translating: kernel buffers and arrays
(:class:`Buf`), local pointers (:class:`Ptr`), null pointer parameters (:class:`NullPtr`), an input's ``x_shape``/``x_strides``
(:class:`ShapeArr`), header functions (:class:`FuncDef`) and template type parameters."""
from __future__ import annotations

import re

from dataclasses import dataclass, field

from ... import ir
from ... import types as T
from ...builtins import registry
from ...errors import ControlFlow, Source


_SPACES = ("device", "threadgroup", "constant", "thread")
#: why an input can point to constant memory (said where a device pointer was wanted)
SMALL_INPUT_NOTE = (" (MLX binds an input array of fewer than 8 elements as 'const constant T*', "
                    "as Metal does for this launch)")


METAL_ONLY = "it runs unchanged on backend='metal' only"


_ATOMIC_FNS = {a: b.extra["op"] for b in registry.all() if b.node == "Atomic" for a in b.msl_aliases}


_ATOMIC_TYPES = {"atomic_int": T.int32, "atomic_uint": T.uint32, "atomic_float": T.float32,
                 "atomic_bool": T.bool_, "atomic_ulong": T.uint64}     # atomic_ulong: Metal 3.1's min/max


_NAMESPACES = ("metal", "precise", "fast", "simd")


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
    """A pointer variable (``device float* p = x + off``, ``auto q = x + off``, or a
    buffer parameter that the code advances, ``x += 4``): ``view`` with its offset held
    in the int64 variable ``off``, so ``p += n`` assigns ``off``."""
    view: object            # semantics.views.View
    off: ir.Var
    # an array of vectors: its first dimension (a range-based for's count); by keyword, as
    # subclasses (metal_matrices.MatPtr) add positional fields
    extent: int | None = field(default=None, kw_only=True)


@dataclass
class NullPtr:
    """A pointer parameter bound to a null pointer: ``f(..., (const device float*)nullptr)``,
    as code hoisted from MLX's kernels passes an optional buffer it has switched off (its
    uses sit under ``if (has_mask)`` with the flag a false constant). Using it is an error
    naming the parameter (on a GPU: undefined behaviour)."""
    name: str
    bound_at: object        # the argument's span


@dataclass
class Ref:
    """A reference (``thread float& acc`` parameter, ``device float& r = out[i];``): reads
    and writes go to element 0 of ``view`` (a semantics.views.View)."""
    view: object


@dataclass
class ElemsRef:
    """``thread auto& e = m.thread_elements();``: ``e[i]`` reads and writes thread element
    ``i`` of the matrix at ``lv`` (an lvalue: ``("var", v)`` or ``("loc", view, index)``
    with the index fixed when the reference was bound)."""
    lv: tuple


@dataclass
class ShapeArr:
    """``x_shape`` (kind="shape") or ``x_strides`` (kind="strides") of kernel input x."""
    buf: str
    ndim: int
    kind: str


@dataclass
class FunctionConstant:
    """A header's ``constant T name [[function_constant(i)]]``: MLX's metal_kernel sets no
    function constant values, so the name exists but a kernel cannot read it."""
    name: str


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


class _NoMatch(ControlFlow):
    """This overload of a header function does not match the call's arguments."""


class _Void:
    """What a type trait names when it names ``void`` (``enable_if_t<true>``): a type,
    unlike None, which says the node is no C++ type at all (``cxx_type``)."""


VOID = _Void()


def _params_of(fnode):
    decl = fnode.child_by_field_name("declarator")
    if decl is None and fnode.type == "lambda_expression":      # [&] { ... }
        return []
    while decl.type in ("pointer_declarator", "reference_declarator"):
        decl = decl.child_by_field_name("declarator") or decl.named_children[-1]
    if decl.type == "operator_cast":            # operator T() (a C++ conversion operator)
        decl = decl.child_by_field_name("declarator")
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


def specialization(params, tnames, text) -> tuple:
    """How specialised a function template's parameters are, for C++'s partial ordering of
    overloads that match a call equally well: ``(compound, -distinct)`` where a parameter
    typed by a bare template parameter (``T v``) counts 0, one whose type builds on it
    (``vec<T, 4> v``, ``const device T* p``) 1 and a concrete type 2, and ``distinct`` is
    the number of template parameters the types name (``f(T, T)`` is more specialised than
    ``f(T, U)``). ``text`` gives a node's text. (An approximation of the partial ordering's
    deduction test, enough for the overloads real headers write.)

    >>> from .parse import _PARSER
    >>> code = b"template <typename T> T f(vec<T, 4> v, T w);"
    >>> fn = _PARSER.parse(code).root_node.named_children[0].named_children[1]
    >>> params = fn.child_by_field_name("declarator").child_by_field_name("parameters").named_children
    >>> specialization(params, {"T"}, lambda n: code[n.start_byte:n.end_byte].decode())
    (1, -1)
    """
    compound, used = 0, set()
    for p in params:
        t = p.child_by_field_name("type")
        decl = p.child_by_field_name("declarator")
        words = set(re.findall(r"\w+", text(t))) & set(tnames)
        used |= words
        bare = text(t).strip() in tnames and (decl is None or decl.type == "identifier")
        compound += 0 if bare else 1 if words else 2
    return compound, -len(used)


def shape_arg(a) -> bool:
    """Whether call argument ``a`` (a ``cxx_params.ArgVal``) is an input's ``x_shape`` or
    ``x_strides`` (``cxx_calls.call_arg`` marks those ``lv=("shape", ShapeArr)``)."""
    return a is not None and a.lv is not None and a.lv[0] == "shape"


def shape_type(a):
    """The element type MLX declares ``x_shape`` (int) or ``x_strides`` (int64_t) with.

    >>> class A: lv = ("shape", ShapeArr("x", 2, "strides"))
    >>> shape_type(A()).name
    'int64'
    """
    return T.int32 if a.lv[1].kind == "shape" else T.int64
