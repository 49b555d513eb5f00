"""The kernel IR: a small typed tree of statements and expressions.

Both front ends (Python DSL, MSL bodies) produce it; the C-like printers (MSL,
CUDA) and the simulator consume it. Every node keeps the :class:`Span` of the
user's text it came from, so every error can point at the user's line.

Conventions every producer follows, so consumers need no conversion rules:

- types are explicit: every expression has ``.type``; implicit conversions of
  MSL (usual arithmetic conversions, assignment to a typed variable or buffer
  element, a bool condition) appear as :class:`Cast` nodes;
- buffer and array accesses use a *linear* element index; multi-dimensional
  indexing is lowered by the front end (row-major);
- ``Logical`` and ``Select`` are lazy: only the taken side is evaluated.

A readable dump is ``dump(node)``::

    >>> from metalbench import types as T
    >>> i = Var("i", T.uint32)
    >>> print(dump(Store("out", i, Load("x", i, T.float32))))
    out[i] = x[i]
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import Span
from .types import MatrixType, ScalarType, VectorType

# The 20 thread attributes MLX knows, with their MSL types (uint3 or uint).
THREAD_ATTRIBUTES: dict[str, str] = {
    "dispatch_quadgroups_per_threadgroup": "uint",
    "dispatch_simdgroups_per_threadgroup": "uint",
    "dispatch_threads_per_threadgroup": "uint3",
    "grid_origin": "uint3",
    "grid_size": "uint3",
    "quadgroup_index_in_threadgroup": "uint",
    "quadgroups_per_threadgroup": "uint",
    "simdgroup_index_in_threadgroup": "uint",
    "simdgroups_per_threadgroup": "uint",
    "thread_execution_width": "uint",
    "thread_index_in_quadgroup": "uint",
    "thread_index_in_simdgroup": "uint",
    "thread_index_in_threadgroup": "uint",
    "thread_position_in_grid": "uint3",
    "thread_position_in_threadgroup": "uint3",
    "threadgroup_position_in_grid": "uint3",
    "threadgroups_per_grid": "uint3",
    "threads_per_grid": "uint3",
    "threads_per_simdgroup": "uint",
    "threads_per_threadgroup": "uint3",
}

# Binary operators, by kind. Comparisons yield bool.
ARITH_OPS = ("+", "-", "*", "/", "%")
BIT_OPS = ("&", "|", "^", "<<", ">>")
COMPARE_OPS = ("==", "!=", "<", "<=", ">", ">=")
UNARY_OPS = ("-", "~", "!")

# Atomic read-modify-write operations; each returns the old value.
ATOMIC_OPS = ("add", "sub", "min", "max", "and", "or", "xor", "exchange", "cas", "load", "store")

# Address spaces of buffers and arrays.
SPACES = ("device", "constant", "threadgroup", "thread")


# ----------------------------------------------------------------------------- nodes

@dataclass(eq=False)
class Node:
    span: Span | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class Expr(Node):
    """Base of expressions; every subclass has a ``type`` field (or property)."""


@dataclass(eq=False)
class Const(Expr):
    """A literal or a compile-time constant (constexpr, global, closure value)."""
    value: Any
    type: ScalarType | VectorType


@dataclass(eq=False)
class Var(Expr):
    """A local variable, a loop variable, a function parameter or a scalar kernel argument."""
    name: str
    type: ScalarType | VectorType


@dataclass(eq=False)
class ThreadAttr(Expr):
    """One of :data:`THREAD_ATTRIBUTES`; its type is ``uint3`` or ``uint``."""
    name: str
    type: ScalarType | VectorType


@dataclass(eq=False)
class Swizzle(Expr):
    """``v.x``, ``v.xy``, ``v.zyx``: components of a vector (``rgba`` spelled as ``xyzw``)."""
    value: Expr
    components: str
    type: ScalarType | VectorType


@dataclass(eq=False)
class VecCons(Expr):
    """``float4(a, b, c, d)``, ``float2(v.xy)``, ``uint3(0)``: the args' components in order,
    or one scalar broadcast to every component."""
    type: VectorType
    args: list[Expr]


@dataclass(eq=False)
class BinOp(Expr):
    """Arithmetic, bitwise or comparison; operands already converted to a common type
    (shifts excepted: their right operand keeps its own type)."""
    op: str
    a: Expr
    b: Expr
    type: ScalarType | VectorType


@dataclass(eq=False)
class UnOp(Expr):
    op: str
    a: Expr
    type: ScalarType | VectorType


@dataclass(eq=False)
class Logical(Expr):
    """Lazy ``&&`` (op="and") / ``||`` (op="or") on bool operands."""
    op: str
    a: Expr
    b: Expr
    type: ScalarType


@dataclass(eq=False)
class Select(Expr):
    """Lazy ``cond ? a : b``."""
    cond: Expr
    a: Expr
    b: Expr
    type: ScalarType | VectorType


@dataclass(eq=False)
class Cast(Expr):
    """A conversion (C semantics: float to int truncates, int to narrower int wraps)."""
    type: ScalarType | VectorType
    value: Expr


@dataclass(eq=False)
class Bitcast(Expr):
    """``as_type<type>(value)``: the bits of ``value`` read as ``type`` (the same size in
    bytes; a vector's components in order, as in memory)."""
    type: ScalarType | VectorType
    value: Expr


@dataclass(eq=False)
class Load(Expr):
    """``buf[index]``: buf names a kernel buffer, a threadgroup/thread array or a
    buffer parameter of a device function; index is linear, in elements. ``vector``:
    on the first component's access of a vector read through a pointer whose type
    Metal requires aligned (``*(device float4*)(x + 2)``), ``(vector type, alignment
    in bytes)``: the checked simulator warns when the address is not a multiple
    (:class:`Store` likewise)."""
    buf: str
    index: Expr
    type: ScalarType
    vector: tuple | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class ShapeOf(Expr):
    """``x.shape[dim]`` of a device buffer (MLX's ``x_shape[dim]``); int."""
    buf: str
    dim: int
    type: ScalarType


@dataclass(eq=False)
class StrideOf(Expr):
    """``x_strides[dim]`` of a device buffer, in elements; int64 (MLX's int64_t)."""
    buf: str
    dim: Expr
    type: ScalarType


@dataclass(eq=False)
class NDimOf(Expr):
    """``x_ndim``: the number of dimensions of a device buffer; int."""
    buf: str
    type: ScalarType


@dataclass(eq=False)
class Call(Expr):
    """A builtin: math (``exp``, ``fma``, ...), SIMD-group functions (``simd_sum``, ...),
    or other pure functions declared in the builtin registry (``metalbench.builtins``)."""
    name: str
    args: list[Expr]
    type: ScalarType | VectorType


@dataclass(eq=False)
class Atomic(Expr):
    """``op`` (one of :data:`ATOMIC_OPS`) on ``buf[index]``; evaluates to the old value.
    ``args`` is ``[value]``, ``[expected, desired]`` for cas, ``[]`` for load."""
    op: str
    buf: str
    index: Expr
    args: list[Expr]
    type: ScalarType


@dataclass(eq=False)
class FuncCall(Expr):
    """A call of a device function in :attr:`KernelIR.functions`. Buffer arguments are
    passed as :class:`BufArg`."""
    func: str
    args: list[Expr]
    type: ScalarType | VectorType | None


@dataclass(eq=False)
class BufArg(Expr):
    """A buffer or array passed to a device function's buffer parameter, optionally
    offset by ``offset`` elements (MSL's ``x + offset``)."""
    buf: str
    offset: Expr | None = None

    @property
    def type(self):
        return None


# ----------------------------------------------------------------------------- SIMD-group matrices
# Metal's simdgroup_matrix<T, 8, 8> (type ``MatrixType``): a value every thread of a
# SIMD-group holds two elements of. The MSL printer prints these nodes as Metal does;
# the simulator and the CUDA printer see them after ``passes.simdgroup_matrix.lower``,
# which turns a matrix into each thread's two elements (a 2-vector) and leaves only
# ``MatrixMul`` (a SIMD-group collective) as a node of its own.

@dataclass(eq=False)
class MatrixFill(Expr):
    """``make_filled_simdgroup_matrix<T, 8, 8>(value)``: every element ``value``; with
    ``diagonal=True``, ``simdgroup_matrix<T, 8, 8>(value)``: ``value`` on the diagonal, 0
    elsewhere. ``value`` has the element type."""
    value: Expr
    type: MatrixType
    diagonal: bool = False


@dataclass(eq=False)
class MatrixLoad(Expr):
    """``simdgroup_load``: element (r, c) is ``buf[index + r * stride + c]``, or with
    ``transpose`` ``buf[index + c * stride + r]``. ``index`` is the linear element index
    of the matrix's first element (pointer offset and ``matrix_origin`` applied);
    ``stride`` is ``elements_per_row`` (int64). The element type is the buffer's."""
    buf: str
    index: Expr
    stride: Expr
    type: MatrixType
    transpose: bool = False


@dataclass(eq=False)
class MatrixMul(Expr):
    """``a * b + c`` (``simdgroup_multiply_accumulate``; ``c`` None: ``simdgroup_multiply``).
    Products are exact and the sum over k = 0..7 runs in order in float64 from c's
    element, rounded once to float32 and then to the result's element type."""
    a: Expr
    b: Expr
    c: Expr | None
    type: MatrixType | VectorType


@dataclass(eq=False)
class MatrixElements(Expr):
    """``m.thread_elements()`` as a value: this thread's two elements, a ``vec<T, 2>``."""
    matrix: Expr

    @property
    def type(self):
        return self.matrix.type.per_thread


@dataclass(eq=False)
class MatrixFromElements(Expr):
    """The matrix whose thread elements are ``value`` (a ``vec<T, 2>``): what writing
    ``m.thread_elements()`` (or one of its elements) makes of ``m``."""
    value: Expr
    type: MatrixType


# ----------------------------------------------------------------------------- statements

@dataclass(eq=False)
class Stmt(Node):
    pass


@dataclass(eq=False)
class Decl(Stmt):
    """Declares a local variable, with an optional initial value of its type."""
    var: Var
    init: Expr | None = None


@dataclass(eq=False)
class Assign(Stmt):
    """``var = value``; value already has var's type."""
    var: Var
    value: Expr


@dataclass(eq=False)
class Store(Stmt):
    """``buf[index] = value``; value already has the element type (``vector``: see
    :class:`Load`)."""
    buf: str
    index: Expr
    value: Expr
    vector: tuple | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class MatrixStore(Stmt):
    """``simdgroup_store(value, buf + index, stride, 0, transpose)``: the addressing of
    :class:`MatrixLoad`."""
    value: Expr
    buf: str
    index: Expr
    stride: Expr
    transpose: bool = False


@dataclass(eq=False)
class ArrayDecl(Stmt):
    """A threadgroup (``space="threadgroup"``) or thread-local (``space="thread"``) array
    of ``elem`` with a static ``shape``; ``init`` optionally gives constant contents
    (MSL initialiser lists; also ``constant`` arrays of the header); ``align`` a byte
    alignment the array's address must have (Numba's ``alignment=``; printed as
    ``alignas``/``__align__``); ``parts``: for a pool of the MSL front end
    (``frontend/msl/array_pools.py``), the ``(name, start, length)`` of the arrays it holds,
    so checked-mode messages name the array the user declared."""
    name: str
    space: str
    elem: ScalarType
    shape: tuple[int, ...]
    init: list | None = None
    align: int | None = None
    parts: tuple = ()

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        return self.size * self.elem.itemsize


@dataclass(eq=False)
class ViewDecl(Stmt):
    """``name`` is a second name for buffer or array ``buf``'s storage, read as elements
    of ``elem`` (MSL ``const device uchar* name = (const device uchar*)buf;``): a
    reinterpreting pointer cast. Accesses through ``name`` index ``elem`` elements from
    the start of ``buf``. It precedes every use, at the top of the kernel body or of the
    device function whose buffer parameter it views."""
    name: str
    buf: str
    elem: ScalarType
    space: str
    const: bool = False


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then: list[Stmt]
    orelse: list[Stmt] = field(default_factory=list)


@dataclass(eq=False)
class For(Stmt):
    """``for (var = start; var < stop; var += step)`` (``>`` when step is a negative
    constant); ``var`` is declared by the loop. Python's ``range`` maps to this."""
    var: Var
    start: Expr
    stop: Expr
    step: Expr
    body: list[Stmt]


@dataclass(eq=False)
class CFor(Stmt):
    """A general C ``for (init; cond; update) body`` (MSL front end). ``continue`` runs
    ``update`` before the next test."""
    init: list[Stmt]
    cond: Expr | None
    update: list[Stmt]
    body: list[Stmt]


@dataclass(eq=False)
class While(Stmt):
    """``while (cond) body``; with ``do_while=True``, ``do body while (cond)``."""
    cond: Expr
    body: list[Stmt]
    do_while: bool = False


@dataclass(eq=False)
class Break(Stmt):
    pass


@dataclass(eq=False)
class Continue(Stmt):
    pass


@dataclass(eq=False)
class Return(Stmt):
    value: Expr | None = None


@dataclass(eq=False)
class Barrier(Stmt):
    """``threadgroup_barrier`` (scope="threadgroup") or ``simdgroup_barrier``
    (scope="simdgroup"); ``flags`` are Metal's mem_flags names."""
    scope: str = "threadgroup"
    flags: tuple[str, ...] = ("mem_threadgroup",)


@dataclass(eq=False)
class Fence(Stmt):
    """``atomic_thread_fence(flags, order, thread_scope_<scope>)``: orders this thread's
    accesses to the memory ``flags`` names (Metal's mem_flags names) as seen by threads of
    ``scope`` ("device", "threadgroup", "simdgroup"); ``order`` is a Metal memory_order
    name. No execution barrier: threads reach it independently (divergence is fine)."""
    flags: tuple[str, ...] = ("mem_device",)
    order: str = "memory_order_seq_cst"
    scope: str = "device"


@dataclass(eq=False)
class ExprStmt(Stmt):
    expr: Expr


@dataclass(eq=False)
class Print(Stmt):
    """A print from a kernel: DSL ``print(...)`` (f-strings and ``%`` too), MSL ``printf``
    and ``os_log``. ``text`` holds the literal pieces around the values (one more than
    ``args``); ``specs[i]`` says how ``args[i]`` is formatted: ``("py", spec)`` as
    Python's ``format(value, spec)``, ``("c", "%5.2f")`` as C's printf. With ``tag`` the
    simulator starts each line with the thread's position (off for Numba's ``print``).
    The simulator prints through Python's ``print``; CUDA through device ``printf``;
    the Metal printer compiles it out (Metal logs only in debug builds)."""
    args: list[Expr]
    text: list[str]
    specs: list[tuple[str, str]]
    tag: bool = True


# ----------------------------------------------------------------------------- kernels

@dataclass(eq=False)
class Param:
    """A kernel parameter. Buffers (``kind="buffer"``) are device arrays of ``type``
    with ``ndim`` dimensions; scalars (``kind="scalar"``) are uniform values that MLX
    receives as 0-d inputs (``constant T& name``)."""
    name: str
    kind: str
    type: ScalarType
    ndim: int = 1
    is_output: bool = False
    atomic: bool = False
    # Which of x_shape / x_strides / x_ndim the body uses (MLX passes them only then).
    uses_shape: bool = False
    uses_strides: bool = False
    uses_ndim: bool = False
    # MLX complex64 data (a metal_kernel's complex64_t buffer): ``type`` is float32, the
    # storage holds (real, imag) pairs, and shape/strides count complex elements
    complex: bool = False


@dataclass(eq=False)
class FuncParam:
    """A device function parameter: a value (``space=None``) or a buffer/array pointer
    in ``space`` (device, constant, threadgroup, thread)."""
    name: str
    type: ScalarType | VectorType
    space: str | None = None
    const: bool = False


@dataclass(eq=False)
class Function:
    """A device function (``@mb.func`` or an MSL header helper), specialised to its
    argument types; ``name`` is unique within the kernel."""
    name: str
    params: list[FuncParam]
    ret: ScalarType | VectorType | None
    body: list[Stmt]
    span: Span | None = None


@dataclass(eq=False)
class KernelIR:
    """One specialised kernel: parameters (inputs then outputs, in order), body,
    device functions, and module-level constant arrays."""
    name: str
    params: list[Param]
    body: list[Stmt]
    functions: list[Function] = field(default_factory=list)
    globals: list[ArrayDecl] = field(default_factory=list)
    source: Any = None
    # The CUDA printer guards reads of input buffers (a read outside gives 0, as Metal
    # tolerates and the simulator does): set by the MSL front end, "rows" when MLX makes
    # inputs row-contiguous, "strided" (or True) otherwise (codegen/cuda_guard.py)
    read_guard: bool | str = False

    @property
    def inputs(self) -> list[Param]:
        return [p for p in self.params if not p.is_output]

    @property
    def outputs(self) -> list[Param]:
        return [p for p in self.params if p.is_output]

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name:
                return p
        return None


# ----------------------------------------------------------------------------- traversal

def children(node) -> list:
    """The direct child nodes of ``node`` (expressions and statements), in order."""
    out = []
    for v in vars(node).values():
        if isinstance(v, Node):
            out.append(v)
        elif isinstance(v, list):
            out.extend(x for x in v if isinstance(x, Node))
    return out


def walk(node):
    """Every node under ``node`` (``node`` included), depth first, in source order.

    >>> from metalbench import types as T
    >>> [type(n).__name__ for n in walk(BinOp("+", Const(1, T.int32), Const(2, T.int32), T.int32))]
    ['BinOp', 'Const', 'Const']
    """
    if isinstance(node, list):
        for n in node:
            yield from walk(n)
        return
    yield node
    for c in children(node):
        yield from walk(c)


def attributes_used(kernel: KernelIR) -> set[str]:
    """The names of the thread attributes the kernel or its functions read."""
    nodes = list(walk(kernel.body))
    for f in kernel.functions:
        nodes.extend(walk(f.body))
    return {n.name for n in nodes if isinstance(n, ThreadAttr)}


def threadgroup_bytes(kernel: KernelIR) -> int:
    """Static threadgroup memory of the kernel and its functions, in bytes."""
    nodes = list(walk(kernel.body))
    for f in kernel.functions:
        nodes.extend(walk(f.body))
    return sum(n.nbytes for n in nodes if isinstance(n, ArrayDecl) and n.space == "threadgroup")


# ----------------------------------------------------------------------------- dump

def _e(x) -> str:
    if isinstance(x, Const):
        return repr(x.value) if not isinstance(x.value, bool) else str(x.value).lower()
    if isinstance(x, Var):
        return x.name
    if isinstance(x, ThreadAttr):
        return x.name
    if isinstance(x, Swizzle):
        return f"{_e(x.value)}.{x.components}"
    if isinstance(x, VecCons):
        return f"{x.type.name}({', '.join(_e(a) for a in x.args)})"
    if isinstance(x, BinOp):
        return f"({_e(x.a)} {x.op} {_e(x.b)})"
    if isinstance(x, UnOp):
        return f"{x.op}{_e(x.a)}"
    if isinstance(x, Logical):
        return f"({_e(x.a)} {'&&' if x.op == 'and' else '||'} {_e(x.b)})"
    if isinstance(x, Select):
        return f"({_e(x.cond)} ? {_e(x.a)} : {_e(x.b)})"
    if isinstance(x, Cast):
        return f"{x.type.name}({_e(x.value)})"
    if isinstance(x, Bitcast):
        return f"as_type<{x.type.name}>({_e(x.value)})"
    if isinstance(x, Load):
        return f"{x.buf}[{_e(x.index)}]"
    if isinstance(x, ShapeOf):
        return f"{x.buf}.shape[{x.dim}]"
    if isinstance(x, StrideOf):
        return f"{x.buf}.strides[{_e(x.dim)}]"
    if isinstance(x, NDimOf):
        return f"{x.buf}.ndim"
    if isinstance(x, Call):
        return f"{x.name}({', '.join(_e(a) for a in x.args)})"
    if isinstance(x, Atomic):
        return f"atomic_{x.op}({x.buf}[{_e(x.index)}]{''.join(', ' + _e(a) for a in x.args)})"
    if isinstance(x, FuncCall):
        return f"{x.func}({', '.join(_e(a) for a in x.args)})"
    if isinstance(x, BufArg):
        return x.buf if x.offset is None else f"{x.buf} + {_e(x.offset)}"
    if isinstance(x, MatrixFill):
        return f"{'diagonal' if x.diagonal else 'filled'}_{x.type.name}({_e(x.value)})"
    if isinstance(x, MatrixLoad):
        return f"simdgroup_load({x.buf} + {_e(x.index)}, {_e(x.stride)}{', transpose' if x.transpose else ''})"
    if isinstance(x, MatrixMul):
        return f"({_e(x.a)} @ {_e(x.b)}" + (f" + {_e(x.c)})" if x.c is not None else ")")
    if isinstance(x, MatrixElements):
        return f"{_e(x.matrix)}.thread_elements()"
    if isinstance(x, MatrixFromElements):
        return f"{x.type.name}.from_elements({_e(x.value)})"
    return f"<{type(x).__name__}>"


def _s(s, ind: str, out: list[str]) -> None:
    def block(stmts):
        for t in stmts:
            _s(t, ind + "    ", out)
    if isinstance(s, Decl):
        out.append(f"{ind}{s.var.type.name} {s.var.name}" + (f" = {_e(s.init)}" if s.init is not None else ""))
    elif isinstance(s, Assign):
        out.append(f"{ind}{s.var.name} = {_e(s.value)}")
    elif isinstance(s, Store):
        out.append(f"{ind}{s.buf}[{_e(s.index)}] = {_e(s.value)}")
    elif isinstance(s, ArrayDecl):
        out.append(f"{ind}{s.space} {s.elem.name} {s.name}{list(s.shape)}")
    elif isinstance(s, ViewDecl):
        out.append(f"{ind}{s.space} {s.elem.name}* {s.name} = view of {s.buf}")
    elif isinstance(s, MatrixStore):
        out.append(f"{ind}simdgroup_store({_e(s.value)}, {s.buf} + {_e(s.index)}, {_e(s.stride)}"
                   f"{', transpose' if s.transpose else ''})")
    elif isinstance(s, If):
        out.append(f"{ind}if {_e(s.cond)}:")
        block(s.then)
        if s.orelse:
            out.append(f"{ind}else:")
            block(s.orelse)
    elif isinstance(s, For):
        out.append(f"{ind}for {s.var.name} in range({_e(s.start)}, {_e(s.stop)}, {_e(s.step)}):")
        block(s.body)
    elif isinstance(s, CFor):
        init = "; ".join(_dump_inline(x) for x in s.init)
        upd = "; ".join(_dump_inline(x) for x in s.update)
        out.append(f"{ind}for ({init}; {_e(s.cond) if s.cond is not None else ''}; {upd}):")
        block(s.body)
    elif isinstance(s, While):
        out.append(f"{ind}{'do-while' if s.do_while else 'while'} {_e(s.cond)}:")
        block(s.body)
    elif isinstance(s, Break):
        out.append(f"{ind}break")
    elif isinstance(s, Continue):
        out.append(f"{ind}continue")
    elif isinstance(s, Return):
        out.append(f"{ind}return" + (f" {_e(s.value)}" if s.value is not None else ""))
    elif isinstance(s, Barrier):
        out.append(f"{ind}{s.scope}_barrier({', '.join(s.flags)})")
    elif isinstance(s, Fence):
        out.append(f"{ind}atomic_thread_fence({' | '.join(s.flags)}, {s.order}, thread_scope_{s.scope})")
    elif isinstance(s, ExprStmt):
        out.append(f"{ind}{_e(s.expr)}")
    elif isinstance(s, Print):
        fields = [f"{{{_e(a)}{':' + sp if kind == 'py' and sp else ''}{' ' + sp if kind == 'c' else ''}}}"
                  for a, (kind, sp) in zip(s.args, s.specs)]
        txt = "".join(t + f for t, f in zip(s.text, fields + [""]))
        out.append(f"{ind}print({txt!r})")
    else:
        out.append(f"{ind}<{type(s).__name__}>")


def _dump_inline(s) -> str:
    out: list[str] = []
    _s(s, "", out)
    return " ".join(x.strip() for x in out)


def dump(node) -> str:
    """A readable text form of an IR node, a statement list, a function or a kernel."""
    if isinstance(node, KernelIR):
        params = ", ".join(
            f"{'out ' if p.is_output else ''}{p.type.name}{'[' + ','.join(':' * p.ndim) + ']' if p.kind == 'buffer' else ''} {p.name}"
            for p in node.params)
        out = []
        for g in node.globals:
            out.append(f"constant {g.elem.name} {g.name}{list(g.shape)} = {g.init}")
        for f in node.functions:
            out.append(dump(f))
        out.append(f"kernel {node.name}({params}):")
        for s in node.body:
            _s(s, "    ", out)
        return "\n".join(out)
    if isinstance(node, Function):
        params = ", ".join(f"{(p.space + ' ') if p.space else ''}{p.type.name}{'*' if p.space else ''} {p.name}"
                           for p in node.params)
        out = [f"func {node.name}({params}) -> {node.ret.name if node.ret else 'void'}:"]
        for s in node.body:
            _s(s, "    ", out)
        return "\n".join(out)
    if isinstance(node, list):
        out = []
        for s in node:
            _s(s, "", out)
        return "\n".join(out)
    if isinstance(node, Stmt):
        out = []
        _s(node, "", out)
        return "\n".join(out)
    return _e(node)
