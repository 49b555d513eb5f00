"""Metal Shading Language generator: IR -> what ``mx.fast.metal_kernel`` receives.

    >>> from metalbench import ir, types as T
    >>> i = ir.Swizzle(ir.ThreadAttr("thread_position_in_grid", T.uint3), "x", T.uint32)
    >>> k = ir.KernelIR("copy", [ir.Param("x", "buffer", T.float32),
    ...                          ir.Param("out", "buffer", T.float32, is_output=True)],
    ...                 [ir.Store("out", i, ir.Load("x", i, T.float32))])
    >>> r = render(k)
    >>> print(r.body)
    out[thread_position_in_grid.x] = x[thread_position_in_grid.x];
    >>> r.input_names, r.output_names, r.atomic_outputs
    (['x'], ['out'], False)

MLX conventions the output follows (see :mod:`metalbench.mlx_signature`): inputs
are ``const device T*`` (``const constant T*`` below 8 elements, which is why
device functions take input buffers through a template parameter), scalars are
0-d inputs (``const constant T&``), thread attributes are detected by name in the
body, and ``atomic_outputs=True`` makes *every* output ``device atomic<T>*``, so
plain loads and stores of outputs become ``atomic_load/store_explicit``.
"""
from __future__ import annotations


from .. import ir
from .. import types as T
from ..builtins import check_atomic, registry
from ..builtins.nodes import ATOMIC_METAL_64
from ..errors import KernelTypeError
from ..passes.lengths import bind_lengths
from ..passes.ranges import signed_loops
from .c_like import (ASSIGN, POSTFIX, CPrinter, Dialect, Rendered, atomic_buffers, length_division,
                     render_with)
from .matrix import MSLMatrixMixin
from .vector_access import VectorAccessMixin

__all__ = ["render", "Rendered", "MSLPrinter", "MSL"]

_MSL_WORDS = """
kernel vertex fragment device constant thread threadgroup threadgroup_imageblock ray_data
object_data half bfloat uint ushort uchar ulong size_t ptrdiff_t metal simd_vote mem_flags
memory_order memory_order_relaxed atomic atomic_int atomic_uint atomic_float select as_type
all any dot length normalize cross distance sincos frexp modf numeric_limits
threadgroup_barrier simdgroup_barrier int8_t uint8_t int16_t uint16_t int32_t uint32_t int64_t
uint64_t float16_t bfloat16_t elem_to_loc Limits METAL_FUNC precise fast texture2d sampler
vec packed_float3
""".split()
_VECTOR_WORDS = [f"{p}{e.msl}{n}" for p in ("", "packed_") for e in T.VECTOR_ELEMS for n in (2, 3, 4)]
_BUILTIN_WORDS = [b.name for b in registry.all()] + [a for b in registry.all() for a in b.msl_aliases]

MSL = Dialect(
    name="Metal",
    scalar={t.name: t.msl for t in T.SCALARS},
    vector_prefix="",
    int_suffix={"uint32": "u", "int64": "l", "uint64": "ul"},
    reserved=frozenset(_MSL_WORDS + _VECTOR_WORDS + _BUILTIN_WORDS + [t.msl for t in T.SCALARS]),
    func_prefix="inline ",
    space={"device": "device ", "constant": "constant ", "threadgroup": "threadgroup ",
           "thread": "thread ", "thread_array": ""},
    global_prefix="constant ",
    threadgroup_prefix="threadgroup ",
    math={},
    barrier={"threadgroup": "threadgroup_barrier({flags});", "simdgroup": "simdgroup_barrier({flags});"},
    fence={s: f"atomic_thread_fence({{flags}}, {{order}}, thread_scope_{s});" for s in ("device", "threadgroup", "simdgroup")},
    inf="INFINITY", nan="NAN", half_suffix="h",
)

_CAS = """\
// Compare-and-swap returning the old value; the loop absorbs spurious weak failures.
template <typename A, typename T>
inline T mb_atomic_cas(A p, T expected, T desired) {
    T old = expected;
    while (!atomic_compare_exchange_weak_explicit(p, &old, desired, memory_order_relaxed,
                                                  memory_order_relaxed)) {
        if (old != expected) {
            break;
        }
        old = expected;
    }
    return old;
}"""

_FMINMAX = """\
// atomic<float> has no fetch_{op}: a CAS loop that returns the old value.
template <typename A>
inline float mb_atomic_{op}_float(A p, float v) {{
    float old = atomic_load_explicit(p, memory_order_relaxed);
    while (v {cmp} old && !atomic_compare_exchange_weak_explicit(p, &old, v, memory_order_relaxed,
                                                              memory_order_relaxed)) {{
    }}
    return old;
}}"""

_ATOMIC_FETCH = {"add": "atomic_fetch_add_explicit", "sub": "atomic_fetch_sub_explicit",
                 "min": "atomic_fetch_min_explicit", "max": "atomic_fetch_max_explicit",
                 "and": "atomic_fetch_and_explicit", "or": "atomic_fetch_or_explicit",
                 "xor": "atomic_fetch_xor_explicit", "exchange": "atomic_exchange_explicit"}


class MSLPrinter(VectorAccessMixin, MSLMatrixMixin, CPrinter):
    """The Metal dialect's non-tabular parts: atomics, SIMD-group calls, math helpers."""

    dialect = MSL

    def __init__(self, kernel: ir.KernelIR):
        super().__init__(kernel)
        self.atomic_kernel, self.atomic_funcs = atomic_buffers(kernel, outputs_together=True)

    def s_Print(self, s, ind, out):
        from .printf import msl_print
        out.append(ind + msl_print(s))

    def e_BinOp(self, e):
        # unsigned / and % by an array length: a shift or a mask when it is a power of two
        # (the CUDA printer does the same; the length is the same for every thread)
        if length_division(e):
            self.need("mb_len_div", _LEN_DIV)
            fn = "mb_udiv_len" if e.op == "/" else "mb_umod_len"
            return f"{fn}({self.expr(e.a, ASSIGN)}, {self.expr(e.b, ASSIGN)})", POSTFIX
        return super().e_BinOp(e)

    # -- vector views: one packed-vector access (packed types need only the element's
    # alignment, so views of offset buffers stay valid); see codegen/vector_access.py
    def vector_load(self, buf, first, t) -> str:
        return f"{self.tname(t)}(*{self._packed_ptr(buf, first, t)})"

    def vector_store(self, buf, first, t, value) -> str:
        return f"*{self._packed_ptr(buf, first, t)} = packed_{self.tname(t)}({self.expr(value, ASSIGN)});"

    def _packed_ptr(self, buf, first, t) -> str:
        self.need("mb_view", _VIEW)
        return f"mb_view<packed_{self.tname(t)}>({self.pointer_to(buf, first)})"

    def _is_atomic(self, buf: str) -> bool:
        if self.in_function is not None:
            return buf in self.atomic_funcs.get(self.in_function.name, set())
        return buf in self.atomic_kernel

    def ref(self, buf, index) -> str:
        return f"&{self.name(buf)}[{self.expr(index)}]"

    # -- casts: bfloat converts through float (Metal's bfloat converts to/from float)
    def cast(self, t, value) -> str:
        src = value.type
        te, se = T.elem_of(t), T.elem_of(src) if src is not None else None
        inner = self.expr(value)
        if se is not None and ((te.name == "bfloat16") != (se.name == "bfloat16")) \
                and "float32" not in (te.name, se.name):
            mid = T.float32 if isinstance(t, T.ScalarType) else T.vector_of(T.float32, t.n)
            inner = self.cast_text(mid, inner)
        return self.cast_text(t, inner)

    def load(self, buf, index, t) -> str:
        if self._is_atomic(buf):
            return f"atomic_load_explicit({self.ref(buf, index)}, memory_order_relaxed)"
        return super().load(buf, index, t)

    def store(self, buf, index, value) -> str:
        if self._is_atomic(buf):
            return (f"atomic_store_explicit({self.ref(buf, index)}, {self.expr(value, ASSIGN)}, "
                    f"memory_order_relaxed);")
        return super().store(buf, index, value)

    def s_ExprStmt(self, s, ind, out):
        e = s.expr
        if isinstance(e, ir.Atomic) and e.op in ATOMIC_METAL_64.get(e.type, ()):
            # Metal 3.1's atomic_max_explicit on device atomic_ulong: a statement (no result)
            if self.space_of(e.buf) != "device":
                raise KernelTypeError(f"atomic_{e.op} on {e.type.name}: Metal has it on device buffers only, "
                                      f"not on {self.space_of(e.buf)} memory", e.span)
            out.append(f"{ind}atomic_{e.op}_explicit({self.ref(e.buf, e.index)}, {self.expr(e.args[0], ASSIGN)}, "
                       "memory_order_relaxed);")
            return
        super().s_ExprStmt(s, ind, out)

    def space_of(self, buf: str) -> str:
        """The address space of array or buffer ``buf`` (a declared array's, else device)."""
        for body in [self.k.body] + [f.body for f in self.k.functions]:
            for n in ir.walk(body):
                if isinstance(n, ir.ArrayDecl) and n.name == buf:
                    return n.space
        return "device"

    def atomic(self, e: ir.Atomic) -> str:
        t = e.type
        if e.op in ATOMIC_METAL_64.get(t, ()):
            raise KernelTypeError(f"atomic_{e.op} on {t.name} used as a value: Metal's 64-bit "
                                  f"atomic_{e.op}_explicit returns nothing (it works as a statement)", e.span)
        check_atomic(e.op, t, e.span)
        p = self.ref(e.buf, e.index)
        args = [self.expr(a, ASSIGN) for a in e.args]
        if e.op == "load":
            return f"atomic_load_explicit({p}, memory_order_relaxed)"
        if e.op == "store":
            return f"atomic_store_explicit({p}, {args[0]}, memory_order_relaxed)"
        if e.op == "cas":
            self.need("mb_atomic_cas", _CAS)
            return f"mb_atomic_cas({p}, {args[0]}, {args[1]})"
        if t.is_float and e.op in ("min", "max"):
            name = f"mb_atomic_{e.op}_float"
            self.need(name, _FMINMAX.format(op=e.op, cmp="<" if e.op == "min" else ">"))
            return f"{name}({p}, {args[0]})"
        return f"{_ATOMIC_FETCH[e.op]}({p}, {args[0]}, memory_order_relaxed)"

    def call(self, e: ir.Call) -> str:
        return self.call_text(e.name, e.args, e.type)

    def call_text(self, name, args, t) -> str:
        return registry.get(name).msl(self, args, t)   # the builtin's declaration spells it

    def vector_select(self, e: ir.Select) -> str:
        return f"select({self.expr(e.b, ASSIGN)}, {self.expr(e.a, ASSIGN)}, {self.expr(e.cond, ASSIGN)})"

    def array_decl(self, s: ir.ArrayDecl) -> str:
        if s.space == "threadgroup" and self.in_function is not None:
            raise KernelTypeError("Metal allows threadgroup arrays only in the kernel, not in a device "
                                  f"function ({self.in_function.name})", s.span,
                                  hint="declare the array in the kernel and pass it to the function")
        if s.space == "threadgroup":
            if s.init is not None:
                raise KernelTypeError("threadgroup arrays cannot have initial values in Metal", s.span,
                                      hint="fill the array in the kernel, then threadgroup_barrier()")
            el = self.tname(s.elem)
            if self._is_atomic(s.name):
                el = f"atomic<{el}>"
            dims = f"  // {' x '.join(map(str, s.shape))}" if len(s.shape) > 1 else ""
            return f"{self.align_spec(s)}threadgroup {el} {self.name(s.name)}[{s.size}];{dims}"
        if self._is_atomic(s.name):
            raise KernelTypeError("atomics need a device buffer or a threadgroup array", s.span)
        return super().array_decl(s)

    def view_decl(self, s: ir.ViewDecl) -> str:
        # an input lives in device or constant memory depending on its size (and a device
        # function's read-only buffer parameter is a template): overloads pick the space
        self.need("mb_view", _VIEW)
        el = self.tname(s.elem)
        if self._is_atomic(s.name):     # (device atomic_uint*)p: atomics on the bits of p's elements
            el = f"atomic<{el}>"
        return f"auto {self.name(s.name)} = mb_view<{el}>({self.name(s.buf)});"

    def _template_params(self, f: ir.Function) -> dict[str, str]:
        # Inputs live in `device` or (below 8 elements) `constant` memory depending on the
        # call, so read-only device buffer parameters take whatever pointer they are given.
        return {p.name: f"mb_{self.name(p.name)}_ptr" for p in f.params
                if p.space in ("device", "constant") and p.const and not
                (p.name in self.atomic_funcs.get(f.name, set()))}

    def param_decl(self, p: ir.FuncParam, fn: ir.Function) -> str:
        tp = self._template_params(fn)
        if p.name in tp:
            return f"{tp[p.name]} {self.name(p.name)}"
        if p.space is not None and p.name in self.atomic_funcs.get(fn.name, set()):
            return f"{self.d.space[p.space]}atomic<{self.tname(p.type)}>* {self.name(p.name)}"
        return super().param_decl(p, fn)

    def function_signature(self, f: ir.Function) -> str:
        sig = super().function_signature(f)
        tp = self._template_params(f)
        if tp:
            sig = "template <" + ", ".join(f"typename {n}" for n in tp.values()) + ">\n" + sig
        return sig


# mb_view<U>(p): p's memory read as U elements, in p's address space (a reinterpreting
# cast); one overload per address space (where there are none, as for the libclang
# checks, two).
_LEN_DIV = """// unsigned / and % by an array length: a shift or a mask when it is a power of two;
// x / 0 and x % 0 are 0 (metalbench.scalar)
template <typename T> inline T mb_udiv_len(T a, T b) {
    if ((b & (b - T(1))) == T(0)) return b == T(0) ? T(0) : T(a >> ctz(b));
    return a / b;
}
template <typename T> inline T mb_umod_len(T a, T b) {
    if ((b & (b - T(1))) == T(0)) return b == T(0) ? T(0) : T(a & (b - T(1)));
    return a % b;
}"""
_VIEW = "#ifdef __METAL_VERSION__\n" + "\n".join(
    f"template <typename U, typename T> METAL_FUNC {q}{sp} U* mb_view({q}{sp} T* p) "
    f"{{ return reinterpret_cast<{q}{sp} U*>(p); }}"
    for sp in ("device", "constant", "threadgroup", "thread") for q in ("const ", "")
    if not (sp == "constant" and q == "")) + "\n#else\n" + "\n".join(
    f"template <typename U, typename T> METAL_FUNC {q}U* mb_view({q}T* p) {{ return reinterpret_cast<{q}U*>(p); }}"
    for q in ("const ", "")) + "\n#endif"


def render(kernel: ir.KernelIR, lengths=()) -> Rendered:
    """Prints ``kernel`` as an MLX Metal kernel: body, header and names.

    Pass the result to ``mx.fast.metal_kernel(name=r.name, input_names=r.input_names,
    output_names=r.output_names, source=r.body, header=r.header,
    ensure_row_contiguous=True, atomic_outputs=r.atomic_outputs)``. The complete
    source MLX builds from it is ``mlx_signature.full_source(r)``. ``lengths``: array
    lengths ``((buffer, dim), value)`` compiled in (``passes/lengths.py``).

    >>> from metalbench import ir, types as T
    >>> k = ir.KernelIR("k", [ir.Param("o", "buffer", T.uint32, is_output=True)],
    ...     [ir.ExprStmt(ir.Atomic("add", "o", ir.Const(0, T.uint32), [ir.Const(1, T.uint32)], T.uint32))])
    >>> r = render(k); r.body, r.atomic_outputs
    ('atomic_fetch_add_explicit(&o[0u], 1u, memory_order_relaxed);', True)
    """
    no_double(kernel)
    no_recursion(kernel)
    kernel = bind_lengths(kernel, dict(lengths))    # lengths compiled in (passes/lengths.py)
    kernel = signed_loops(kernel)     # int counters where range facts allow (passes/ranges.py)
    p = MSLPrinter(kernel)
    lines = p.body_lines()    # printing decides the helpers, extra inputs and atomic outputs
    return render_with(p, kernel, lines, atomic_outputs=any(x.name in p.atomic_kernel for x in kernel.outputs))


def no_double(kernel: ir.KernelIR):
    """Raises a ``KernelTypeError`` at the first use of float64 (Metal has no double): an
    expression of that type (at its line), else a parameter or constant array.

    >>> from metalbench import ir, types as T
    >>> no_double(ir.KernelIR("k", [ir.Param("x", "buffer", T.float64)], []))
    Traceback (most recent call last):
    ...
    metalbench.errors.KernelTypeError: parameter 'x' is float64, but Metal has no double (float64): ...
    """
    for body in [fn.body for fn in kernel.functions] + [kernel.body]:
        for n in ir.walk(body):
            t = n.elem if isinstance(n, ir.ArrayDecl) else getattr(n, "type", None)
            if isinstance(t, (T.ScalarType, T.VectorType)) and T.elem_of(t) == T.float64:
                raise KernelTypeError(f"this value is float64, but {T.NO_DOUBLE}", getattr(n, "span", None))
    for p in kernel.params:
        if T.elem_of(p.type) == T.float64:
            raise KernelTypeError(f"parameter '{p.name}' is float64, but {T.NO_DOUBLE}")
    for g in kernel.globals:
        if g.elem == T.float64:
            raise KernelTypeError(f"constant array '{g.name}' is float64, but {T.NO_DOUBLE}", g.span)


def no_recursion(kernel: ir.KernelIR):
    """Raises a ``KernelTypeError`` at a recursive call (a device function that calls
    itself, directly or through others): Metal has no recursion; sim and cuda run it.

    >>> from metalbench import ir, types as T
    >>> f = ir.Function("f", [], T.int32, [ir.Return(ir.FuncCall("f", [], T.int32))])
    >>> no_recursion(ir.KernelIR("k", [], [], functions=[f]))
    Traceback (most recent call last):
    ...
    metalbench.errors.KernelTypeError: f calls itself (recursion), which Metal does not support; ...
    """
    calls = {f.name: [n for n in ir.walk(f.body) if isinstance(n, ir.FuncCall)] for f in kernel.functions}

    def reaches(src, dst, seen):
        for c in calls.get(src, []):
            if c.func == dst or (c.func not in seen and reaches(c.func, dst, seen | {c.func})):
                return True
        return False
    for f in kernel.functions:
        for c in calls[f.name]:
            if c.func == f.name or reaches(c.func, f.name, {c.func}):
                raise KernelTypeError(f"{f.name} calls itself (recursion), which Metal does not support; "
                                      "run it on the sim or cuda backend, or rewrite it as a loop", c.span)
