"""Numba's kernel-side API (``cuda.threadIdx.x``, ``cuda.grid(1)``, ``cuda.shared.array``,
``cuda.atomic.add``, ``cuda.shfl_down_sync``, ...) mapped onto the IR.

Every object here is a placeholder that only means something inside a ``@cuda.jit``
body, where the DSL front end calls its hook: ``__metalbench_value__`` when it is used
as a value, ``__metalbench_intrinsic__`` when it is called, ``__metalbench_array__``
when a call's result is assigned (``sm = cuda.shared.array(...)``). Called from
ordinary Python they raise, as Numba's do::

    from metalbench import cuda

    @cuda.jit
    def add(a, b, out):
        i = cuda.grid(1)                     # int32, signed like Numba's
        if i < out.size:
            out[i] = a[i] + b[i]

Thread indices are ``int32`` (Numba's are signed), so ``i - 1 >= 0`` is false for
``i == 0`` as in Numba, not true as it would be with Metal's ``uint``.

Every expression is built through the translator's semantic layer (``tr.sem``, a
:class:`metalbench.semantics.Semantics` under the :data:`~metalbench.semantics.NUMBA`
rules), so typing, folding and the atomic element rules are the ones the DSL uses.
"""
from __future__ import annotations

import ast

import numpy as np

from .. import ir
from .. import types as T
from ..errors import KernelSyntaxError, KernelTypeError
from ..semantics import TupleValue
from ..frontend.python.compiletime import NOT_STATIC

WARP_SIZE = 32


class _Placeholder:
    """Base: usable only inside a ``@cuda.jit`` body."""

    _what = "this"

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"cuda.{self._what} can only be used inside a @cuda.jit kernel or device function")

    def __repr__(self) -> str:
        return f"<metalbench.cuda {self._what}>"


def _attr_int(tr, attr: str, comp: str | None, node) -> ir.Expr:
    """``attr.comp`` as a signed int, as Numba types its indices."""
    sp = tr.span(node)
    e = tr.thread_attr(attr, node)
    if comp is not None:
        e = tr.sem.component(e, comp, sp)
    return tr.sem.cast(T.int32, e, sp)


class _Component(_Placeholder):
    def __init__(self, attr: str, comp: str, what: str):
        self._attr, self._comp, self._what = attr, comp, what

    def __metalbench_value__(self, tr, node):
        return _attr_int(tr, self._attr, self._comp, node)


class Dim3(_Placeholder):
    """``cuda.threadIdx`` and friends: ``.x``, ``.y``, ``.z`` are int32 inside kernels."""

    def __init__(self, what: str, attr: str):
        self._what, self._attr = what, attr
        for c in "xyz":
            setattr(self, c, _Component(attr, c, f"{what}.{c}"))

    def __metalbench_value__(self, tr, node):
        raise tr.err(KernelTypeError, f"use cuda.{self._what}.x, .y or .z", node)


threadIdx = Dim3("threadIdx", "thread_position_in_threadgroup")
blockIdx = Dim3("blockIdx", "threadgroup_position_in_grid")
blockDim = Dim3("blockDim", "threads_per_threadgroup")
gridDim = Dim3("gridDim", "threadgroups_per_grid")


class _Value(_Placeholder):
    def __init__(self, what, fn):
        self._what, self._fn = what, fn

    def __metalbench_value__(self, tr, node):
        return self._fn(tr, node)


laneid = _Value("laneid", lambda tr, node: _attr_int(tr, "thread_index_in_simdgroup", None, node))
warpsize = _Value("warpsize", lambda tr, node: tr.sem.const(WARP_SIZE, T.int32, tr.span(node)))


def _static_int(tr, node, what) -> int:
    v = tr.try_static(node)
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
        # (Numba's class name leads, as in Numba's message)
        raise tr.err(KernelTypeError, f"RequireLiteralValue: {what} must be a constant integer, known at "
                                      f"compile time; got {ast.unparse(node)}", node,
                     hint="use a literal (cuda.grid(1)) or a global constant")
    return int(v)


def _args(tr, call: ast.Call, names: list[str], what: str, optional=()) -> list:
    """Positional-or-keyword arguments of an intrinsic call, by name (None if omitted)."""
    kw = {k.arg: k.value for k in call.keywords}
    out = []
    for i, n in enumerate(names):
        if i < len(call.args):
            out.append(call.args[i])
        elif n in kw:
            out.append(kw.pop(n))
        elif n in optional:
            out.append(None)
        else:
            raise tr.err(KernelTypeError, f"cuda.{what}() is missing its argument {n!r} "
                                          f"(cuda.{what}({', '.join(names)}))", call)
    if len(call.args) > len(names) or kw:
        raise tr.err(KernelTypeError, f"cuda.{what}() takes ({', '.join(names)})", call)
    return out


class _Intrinsic(_Placeholder):
    def __init__(self, what, fn):
        self._what, self._fn = what, fn

    def __metalbench_intrinsic__(self, tr, call):
        return self._fn(tr, call)


def _grid_like(kind: str):
    def fn(tr, call):
        (n_node,) = _args(tr, call, ["ndim"], kind)
        n = _static_int(tr, n_node, f"cuda.{kind}(ndim)")
        if n not in (1, 2, 3):
            raise tr.err(KernelTypeError, f"cuda.{kind}(ndim) takes 1, 2 or 3, got {n}", call)
        attr = "thread_position_in_grid" if kind == "grid" else "threads_per_grid"
        # int64, as Numba types cuda.grid (so index arithmetic never wraps at 2**31)
        sp = tr.span(call)
        comps = [tr.sem.cast(T.int64, _attr_int(tr, attr, c, call), sp) for c in "xyz"[:n]]
        if n == 1:
            return comps[0]
        return TupleValue(comps, span=sp)      # a UniTuple(int64, n), as in Numba
    return fn


grid = _Intrinsic("grid", _grid_like("grid"))
gridsize = _Intrinsic("gridsize", _grid_like("gridsize"))


# ----------------------------------------------------------------------------- arrays

def complex_type_of(obj):
    from ..frontend.python.complexes import complex_type_of as f
    return f(obj)


def numba_dtype(obj):
    """The ScalarType meant by a dtype in a Numba program: NumPy dtypes and scalar types,
    Python ``float``/``int`` (float64/int64, as in Numba), metalbench's Numba types
    (``cuda.float32``) and numba's own type objects, recognised by module and name.

    >>> numba_dtype(np.float64).name, numba_dtype("int32").name, numba_dtype(float).name
    ('float64', 'int32', 'float64')
    """
    from ..frontend.python import resolve_dtype
    mod = type(obj).__module__ or ""
    if mod.startswith("numba"):
        obj = getattr(obj, "name", str(obj))
    if isinstance(obj, str) and obj in ("double", "f8"):
        return T.float64
    if obj is float:
        return T.float64
    if obj is int:
        return T.int64
    return resolve_dtype(obj)


def _numpy_dtype_name(s: str) -> bool:
    try:
        np.dtype(s)
        return True
    except TypeError:
        return False


class AlignmentError(KernelTypeError, ValueError):
    """An ``alignment=`` that is an integer but no valid alignment (Numba raises a
    ValueError here)."""


def _alignment(tr, node, what: str) -> int | None:
    """``alignment=`` of ``cuda.local.array``/``cuda.shared.array``: None, or a constant
    power of two that is a multiple of the pointer size (8 bytes), as Numba requires."""
    if node is None:
        return None
    v = tr.try_static(node)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        shown = ast.unparse(node) if v is NOT_STATIC else repr(v)
        # (Numba's class name leads, as in Numba's message)
        raise tr.err(KernelTypeError, f"RequireLiteralValue: cuda.{what}(): alignment must be a constant "
                                      f"integer, not {shown}", node, hint="alignment=16, for example")
    v = int(v)
    why = ("positive" if v <= 0 else "a power of 2" if v & (v - 1) else
           "a multiple of 8 (the pointer size)" if v % 8 else None)
    if why is not None:
        raise tr.err(AlignmentError, f"Alignment must be {why}; cuda.{what}() got alignment={v}", node)
    return v


class _ArrayMaker(_Placeholder):
    """``cuda.shared.array(shape, dtype)`` / ``cuda.local.array(shape, dtype)``."""

    # (of a record dtype: split into one array per field before translation,
    # frontend/python/constrecords.py)
    __metalbench_array_maker__ = True

    def __init__(self, space: str, what: str):
        self._space, self._what = space, what

    def __metalbench_array__(self, tr, call):
        shape_node, dtype_node, align_node = _args(tr, call, ["shape", "dtype", "alignment"], self._what,
                                                   optional=("alignment",))
        align = _alignment(tr, align_node, self._what)
        try:
            shape = tr.static_value(shape_node)
        except KernelTypeError:
            shape = None
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        ok = isinstance(shape, tuple) and shape and all(isinstance(d, (int, np.integer)) for d in shape)
        if self._space == "threadgroup" and ok and len(shape) == 1 and int(shape[0]) == 0:
            return (*self._dynamic(tr, call, dtype_node), align)
        if not ok or any(int(d) <= 0 for d in shape):
            if self._space == "thread":
                raise KernelSyntaxError(
                    "cuda.local.array with a runtime size is not supported: the size must be known at "
                    "compile time", tr.span(call),
                    hint="use a literal or a global constant for the shape")
            raise KernelSyntaxError(
                f"cuda.shared.array needs a shape known at compile time; got {ast.unparse(shape_node)}",
                tr.span(call), hint="use a literal or a global constant for the shape")
        dt = tr.static_value(dtype_node)
        t = numba_dtype(dt)
        if t is None and complex_type_of(dt) is not None:
            return self._space, tuple(int(d) for d in shape), dt      # complex: frontend/python/complexes.py
        if t is None:
            if isinstance(dt, str) and not _numpy_dtype_name(dt):      # Numba's wording
                raise tr.err(KernelTypeError, f"Invalid NumPy dtype specified: {dt!r}", dtype_node,
                             hint="use a NumPy dtype name: 'float32', 'int32', 'uint8', ...")
            raise tr.err(KernelTypeError, f"{dt!r} is not a supported dtype", dtype_node,
                         hint="use float32, int32, uint32, float16, ...")
        return self._space, tuple(int(d) for d in shape), t, None, align

    def _dynamic(self, tr, call, dtype_node):
        """``cuda.shared.array(0, dtype)``: dynamic shared memory, as many elements as the
        launch's fourth item (bytes) holds. Every such array of a kernel starts at the same
        address (CUDA's ``extern __shared__``), so they are one array here; arrays of two
        dtypes would alias bytes, which metalbench's typed arrays cannot express."""
        t = numba_dtype(tr.static_value(dtype_node))
        if t is None:
            raise tr.err(KernelTypeError, "unsupported dtype for dynamic shared memory", dtype_node)
        nbytes = getattr(tr.m, "constexprs", {}).get(DYNSHARED, 0)
        if nbytes < t.np.itemsize:
            raise KernelSyntaxError(
                f"cuda.shared.array(0, {t.name}) is dynamic shared memory, and this launch gives it "
                f"{nbytes} bytes", tr.span(call),
                hint="give the bytes as the launch's fourth item: kernel[blocks, threads, 0, nbytes](...)")
        dyn = tr.m.__dict__.setdefault("dynamic_shared", {})
        other = [e for e in dyn if e != t]
        if other:
            raise KernelSyntaxError(
                f"dynamic shared arrays of two dtypes ({other[0].name} and {t.name}) share their bytes; "
                "metalbench cannot alias arrays of different types", tr.span(call),
                hint="use one dtype for cuda.shared.array(0, ...) in a kernel, or give the arrays static sizes")
        name = dyn.setdefault(t, tr.m.unique("dynshared"))
        return "threadgroup", (nbytes // t.np.itemsize,), t, name


DYNSHARED = "_mb_dynamic_shared_bytes"   # the constexpr spec carrying a launch's sharedmem (host.py)


class _ArrayNS(_Placeholder):
    def __init__(self, space, what):
        self._what = what
        self.array = _ArrayMaker(space, f"{what}.array")


shared = _ArrayNS("threadgroup", "shared")
local = _ArrayNS("thread", "local")


class _ConstNS(_Placeholder):
    """``cuda.const.array_like(global_array)``: the values of a host array captured at
    compile time (a global or closure NumPy array), read-only in the kernel."""

    _what = "const"

    def __init__(self):
        self.array_like = _ConstArrayLike()


class _ConstArrayLike(_Placeholder):
    _what = "const.array_like"
    # (of a structured array: split into one constant array per field before translation,
    # frontend/python/constrecords.py)
    __metalbench_const_array__ = True
    # Contents per call site; the numba_compat post-pass attaches them to the declaration.
    registry: dict = {}

    def __metalbench_array__(self, tr, call):
        (arr_node,) = _args(tr, call, ["ary"], self._what)
        try:
            arr = tr.static_value(arr_node)
        except Exception:
            arr = None
        if not isinstance(arr, np.ndarray):
            raise tr.err(KernelSyntaxError, "cuda.const.array_like needs a NumPy array known at compile time "
                                            "(a global or closure variable)", call)
        t = numba_dtype(arr.dtype)
        sp = tr.span(call)
        if t is None and complex_type_of(arr.dtype) is not None and arr.size:
            # complex: the real parts with a trailing 2 (frontend/python/complexes.py)
            real = np.dtype(arr.dtype.char.lower())
            _ConstArrayLike.registry[(id(tr.src), sp.line, sp.col)] = np.ascontiguousarray(arr).view(real).reshape(-1)
            return "thread", tuple(int(d) for d in arr.shape) or (1,), arr.dtype
        if t is None:
            raise tr.err(KernelTypeError, f"cuda.const.array_like: unsupported dtype {arr.dtype}", call)
        data = np.ascontiguousarray(arr).astype(t.np).reshape(-1)
        if data.size == 0:              # an empty array: len() 0, one element of storage
            data = np.zeros(1, t.np)
        _ConstArrayLike.registry[(id(tr.src), sp.line, sp.col)] = data
        # (the contents also go with the declaration: the per-field arrays of a constant
        # record array share their call's position)
        return "thread", tuple(int(d) for d in arr.shape) or (1,), t, None, None, data.tolist()


const = _ConstNS()


def attach_const_arrays(kir: ir.KernelIR) -> None:
    """Give the thread arrays made by ``cuda.const.array_like`` their contents."""
    src = id(kir.source)
    for n in list(ir.walk(kir.body)) + [x for f in kir.functions for x in ir.walk(f.body)]:
        if isinstance(n, ir.ArrayDecl) and n.span is not None:
            data = _ConstArrayLike.registry.get((src, n.span.line, n.span.col))
            if data is not None and n.init is None:
                n.init = data.tolist()


# ----------------------------------------------------------------------------- barriers

def _linear_tid(tr, node):
    return tr.thread_attr("thread_index_in_threadgroup", node)


def _syncthreads(tr, call):
    _args(tr, call, [], "syncthreads")
    # __syncthreads() orders global as well as shared memory for the block.
    return ir.Barrier("threadgroup", ("mem_device", "mem_threadgroup"), span=tr.span(call))


def _sync_reduce(kind: str):
    """``syncthreads_count/and/or(pred)``: a barrier plus a block-wide reduction through a
    hidden one-element threadgroup counter."""
    def fn(tr, call):
        (p_node,) = _args(tr, call, ["predicate"], f"syncthreads_{kind}")
        if not tr.is_kernel:
            raise tr.err(KernelSyntaxError, f"cuda.syncthreads_{kind} is only supported in the kernel itself, "
                                            "not in a device function", call)
        sem = tr.sem
        sp = tr.span(call)
        key = (call.lineno, call.col_offset)
        pred = tr.to_bool(tr.expr(p_node))
        cname = tr.fresh("_mb_sync", ("numba_sync_arr", key))
        decl = ir.ArrayDecl(cname, "threadgroup", T.int32, (1,), span=sp)
        tr.hoisted.append(decl)
        res = tr.local_var(tr.fresh("_mb_syncv", ("numba_sync_var", key)), T.int32, call)
        zero, one = sem.const(0, T.int32, sp), sem.const(1, T.int32, sp)
        bar = lambda: ir.Barrier("threadgroup", ("mem_device", "mem_threadgroup"), span=sp)
        first = sem.binop("==", _linear_tid(tr, call), sem.const(0, T.uint32, sp), sp)
        count = sem.atomic("add", cname, T.int32, "threadgroup", zero, [one], sp, who=f"cuda.syncthreads_{kind}")
        stmts = [bar(), ir.If(first, [ir.Store(cname, zero, zero, span=sp)], span=sp), bar(),
                 ir.If(pred, [ir.ExprStmt(count, span=sp)], span=sp),
                 bar(), ir.Assign(res, ir.Load(cname, zero, T.int32, span=sp), span=sp),
                 # A later syncthreads_* resets the counter; nobody may still be reading it.
                 bar()]
        tr._pending_list.extend(stmts)
        v = ir.Var(res.name, T.int32, span=sp)
        if kind == "count":
            return v
        if kind == "and":
            tpt = tr.thread_attr("threads_per_threadgroup", call)
            x, y, z = (sem.component(tpt, c, sp) for c in "xyz")
            nthreads = sem.cast(T.int32, sem.binop("*", sem.binop("*", x, y, sp), z, sp), sp)
            c = sem.binop("==", v, nthreads, sp)
        else:
            c = sem.binop("!=", v, zero, sp)
        return sem.cast(T.int32, c, sp)
    return fn


syncthreads = _Intrinsic("syncthreads", _syncthreads)
syncthreads_count = _Intrinsic("syncthreads_count", _sync_reduce("count"))
syncthreads_and = _Intrinsic("syncthreads_and", _sync_reduce("and"))
syncthreads_or = _Intrinsic("syncthreads_or", _sync_reduce("or"))


def _syncwarp(tr, call):
    _args(tr, call, ["mask"], "syncwarp", optional=("mask",))
    return ir.Barrier("simdgroup", ("mem_device", "mem_threadgroup"), span=tr.span(call))


def _fence(name):
    def fn(tr, call):
        _args(tr, call, [], name)
        # A fence orders this thread's writes; it is not a barrier (threads may reach it
        # divergently). Metal's device writes become visible without one, and the IR has
        # no standalone fence, so it is a no-op here.
        return None
    return fn


syncwarp = _Intrinsic("syncwarp", _syncwarp)
threadfence = _Intrinsic("threadfence", _fence("threadfence"))
threadfence_block = _Intrinsic("threadfence_block", _fence("threadfence_block"))
threadfence_system = _Intrinsic("threadfence_system", _fence("threadfence_system"))


# ----------------------------------------------------------------------------- atomics

def _atomic_target(tr, arr_node, idx_node, call, op, what):
    """(buffer, index) of ``cuda.atomic.<what>(ary, idx, ...)``, checked by the semantic
    layer's one atomic rule (Numba's: ``cas`` on integers, ``inc``/``dec`` on unsigned)."""
    info = tr.buffer_of(arr_node)
    tr.sem.check_atomic(op, info.elem, info.space, info.name, tr.span(call), who=f"cuda.atomic.{what}")
    # the buffer's element index: a view (``res[gid:]``) adds its offset
    idx = tr.absolute_index(info, tr.index(info, idx_node, call), tr.span(call))
    if info.kernel_param is not None:
        info.kernel_param.atomic = True
    return info, idx


def _atomic(tr, op, info, idx, values, call, what):
    return tr.sem.atomic(op, info.name, info.elem, info.space, idx, values, tr.span(call),
                         who=f"cuda.atomic.{what}")


def _atomic_rmw(op: str, what: str):
    def fn(tr, call):
        arr, idx_node, val = _args(tr, call, ["ary", "idx", "val"], f"atomic.{what}")
        info, idx = _atomic_target(tr, arr, idx_node, call, op, what)
        return _atomic(tr, op, info, idx, [tr.expr(val)], call, what)
    return fn


def _temp(tr, base, call, t):
    v = tr.local_var(tr.fresh(base, ("numba_tmp", base, call.lineno, call.col_offset)), t, call)
    return ir.Var(v.name, t)


def _cas_loop(tr, call, what, info, idx, new_of_old):
    """A compare-and-swap loop computing ``new_of_old(old)``; evaluates to the old value."""
    sem = tr.sem
    sp = tr.span(call)
    t = info.elem
    it = _temp(tr, "_mb_ai", call, idx.type)
    old = _temp(tr, "_mb_old", call, t)
    prev = _temp(tr, "_mb_prev", call, t)
    loop = ir.While(sem.bool_const(True, sp), [
        ir.Assign(prev, _atomic(tr, "cas", info, it, [old, new_of_old(old)], call, what), span=sp),
        ir.If(sem.binop("==", prev, old, sp), [ir.Break(span=sp)], span=sp),
        ir.Assign(old, prev, span=sp),
    ], span=sp)
    tr._pending_list.extend([
        ir.Assign(it, idx, span=sp),
        ir.Assign(old, _atomic(tr, "load", info, it, [], call, what), span=sp),
        loop,
    ])
    return ir.Var(old.name, t, span=sp)


def _atomic_float_minmax(kind: str, what: str):
    """Numba's float atomic max/min and nanmax/nanmin, as a compare-and-swap loop that
    returns the old value:

    - ``max``/``min``: nothing changes when the value or the stored element is NaN;
    - ``nanmax``/``nanmin``: a NaN value changes nothing, a stored NaN is replaced.

    Integers use the hardware atomic (NaN cannot occur)."""
    op = "max" if kind.endswith("max") else "min"
    rmw = _atomic_rmw(op, what)

    def fn(tr, call):
        arr, idx_node, val = _args(tr, call, ["ary", "idx", "val"], f"atomic.{what}")
        info = tr.buffer_of(arr)
        if not info.elem.is_float:
            return rmw(tr, call)
        info, idx = _atomic_target(tr, arr, idx_node, call, op, what)
        sem, sp, t = tr.sem, tr.span(call), info.elem
        it = _temp(tr, "_mb_ai", call, idx.type)
        vt = _temp(tr, "_mb_av", call, t)
        old = _temp(tr, "_mb_old", call, t)
        prev = _temp(tr, "_mb_prev", call, t)
        isnan = lambda e: ir.Call("isnan", [e], T.bool_, span=sp)     # noqa: E731
        better = sem.binop(">" if op == "max" else "<", vt, old, sp)
        if kind.startswith("nan"):
            stop = sem.logical("or", isnan(vt), sem.unop("!", sem.logical("or", isnan(old), better, sp), sp), sp)
        else:
            stop = sem.logical("or", sem.logical("or", isnan(vt), isnan(old), sp), sem.unop("!", better, sp), sp)
        bits = T.BY_NAME[f"uint{t.bits}"]
        same = sem.binop("==", sem.bitcast(bits, prev, sp), sem.bitcast(bits, old, sp), sp)
        cas = ir.Atomic("cas", info.name, it, [old, vt], t, span=sp)
        loop = ir.While(sem.bool_const(True, sp), [
            ir.If(stop, [ir.Break(span=sp)], span=sp),
            ir.Assign(prev, cas, span=sp),
            ir.If(same, [ir.Break(span=sp)], span=sp),
            ir.Assign(old, prev, span=sp),
        ], span=sp)
        first = _temp(tr, "_mb_first", call, t)
        tr._pending_list.extend([
            ir.Assign(it, idx, span=sp),
            ir.Assign(vt, tr.conv(tr.expr(val), t), span=sp),
            ir.Assign(old, _atomic(tr, "load", info, it, [], call, what), span=sp),
            ir.Assign(first, old, span=sp),
            loop,
        ])
        return ir.Var(first.name, t, span=sp)   # Numba returns the value it first read
    return fn


def _atomic_incdec(kind):
    def fn(tr, call):
        sem = tr.sem
        arr, idx_node, val = _args(tr, call, ["ary", "idx", "val"], f"atomic.{kind}")
        info, idx = _atomic_target(tr, arr, idx_node, call, kind, kind)
        sp = tr.span(call)
        t = info.elem
        vt = _temp(tr, "_mb_av", call, t)
        tr._pending_list.append(ir.Assign(vt, tr.conv(tr.expr(val), t), span=sp))
        one, zero = sem.const(1, t, sp), sem.const(0, t, sp)

        def new(old):
            if kind == "inc":      # old >= val ? 0 : old + 1
                return sem.select(sem.binop(">=", old, vt, sp), zero, sem.binop("+", old, one, sp), sp)
            # old == 0 || old > val ? val : old - 1
            wrap = sem.logical("or", sem.binop("==", old, zero, sp), sem.binop(">", old, vt, sp), sp)
            return sem.select(wrap, vt, sem.binop("-", old, one, sp), sp)
        return _cas_loop(tr, call, kind, info, idx, new)
    return fn


def _atomic_cas(indexed: bool):
    what = "cas" if indexed else "compare_and_swap"

    def fn(tr, call):
        if indexed:
            arr, idx_node, old, val = _args(tr, call, ["ary", "idx", "old", "val"], f"atomic.{what}")
        else:
            arr, old, val = _args(tr, call, ["ary", "old", "val"], f"atomic.{what}")
            idx_node = ast.copy_location(ast.Constant(0), call)
        info, idx = _atomic_target(tr, arr, idx_node, call, "cas", what)
        return _atomic(tr, "cas", info, idx, [tr.expr(old), tr.expr(val)], call, what)
    return fn


class _AtomicNS(_Placeholder):
    _what = "atomic"

    def __init__(self):
        for name, op in (("add", "add"), ("sub", "sub"), ("and_", "and"), ("or_", "or"), ("xor", "xor"),
                         ("exch", "exchange"), ("max", "max"), ("min", "min")):
            setattr(self, name, _Intrinsic(f"atomic.{name}", _atomic_rmw(op, name)))
        # On floats Numba's max/min keep the stored value when either is NaN; nanmax/nanmin skip a NaN value.
        for name in ("max", "min", "nanmax", "nanmin"):
            setattr(self, name, _Intrinsic(f"atomic.{name}", _atomic_float_minmax(name, name)))
        self.inc = _Intrinsic("atomic.inc", _atomic_incdec("inc"))
        self.dec = _Intrinsic("atomic.dec", _atomic_incdec("dec"))
        self.cas = _Intrinsic("atomic.cas", _atomic_cas(True))
        self.compare_and_swap = _Intrinsic("atomic.compare_and_swap", _atomic_cas(False))


atomic = _AtomicNS()


# ----------------------------------------------------------------------------- warp functions

def _check_width(tr, node, what):
    if node is None:
        return
    w = _static_int(tr, node, f"the width of cuda.{what}")
    if w != WARP_SIZE:
        raise tr.err(KernelSyntaxError, f"cuda.{what} with width={w} is not supported (only the full warp of 32)",
                     node)


def _shfl(what, builtin):
    def fn(tr, call):
        mask, value, lane, width = _args(tr, call, ["mask", "value", "src_lane" if what == "shfl_sync" else
                                                    ("delta" if what != "shfl_xor_sync" else "lane_mask"), "width"],
                                         what, optional=("width",))
        _check_width(tr, width, what)
        tr.expr(mask)  # evaluated for errors only: Metal shuffles among the active lanes
        v = tr.expr(value)
        ln = tr.expr(lane)
        return tr.builtin_call(builtin, [v, ln], call)
    return fn


shfl_sync = _Intrinsic("shfl_sync", _shfl("shfl_sync", "simd_shuffle"))
shfl_up_sync = _Intrinsic("shfl_up_sync", _shfl("shfl_up_sync", "simd_shuffle_up"))
shfl_down_sync = _Intrinsic("shfl_down_sync", _shfl("shfl_down_sync", "simd_shuffle_down"))
shfl_xor_sync = _Intrinsic("shfl_xor_sync", _shfl("shfl_xor_sync", "simd_shuffle_xor"))


def _vote(what, builtin, rt):
    def fn(tr, call):
        mask, pred = _args(tr, call, ["mask", "predicate"], what)
        m, p = tr.expr(mask), tr.expr(pred)
        # Numba's typing: an integer mask, an integer or boolean predicate
        if not (isinstance(m.type, T.ScalarType) and m.type.is_int):
            raise tr.err(KernelTypeError, f"cuda.{what}: Mask type must be an integer, not "
                                          f"{getattr(m.type, 'name', m.type)}", mask)
        if not (isinstance(p.type, T.ScalarType) and (p.type.is_int or p.type.is_bool)):
            raise tr.err(KernelTypeError, f"cuda.{what}: Predicate must be an integer or boolean, not "
                                          f"{getattr(p.type, 'name', p.type)}", pred)
        p = tr.to_bool(p)
        return tr.sem.cast(rt, tr.builtin_call(builtin, [p], call), tr.span(call))
    return fn


all_sync = _Intrinsic("all_sync", _vote("all_sync", "simd_all", T.int32))
any_sync = _Intrinsic("any_sync", _vote("any_sync", "simd_any", T.int32))
ballot_sync = _Intrinsic("ballot_sync", _vote("ballot_sync", "simd_ballot", T.uint32))


def _activemask(tr, call):
    _args(tr, call, [], "activemask")
    sp = tr.span(call)
    return tr.sem.cast(T.uint32, tr.builtin_call("simd_ballot", [tr.sem.bool_const(True, sp)], call), sp)


activemask = _Intrinsic("activemask", _activemask)


def _lanemask_lt(tr, call):
    _args(tr, call, [], "lanemask_lt")
    sem, sp = tr.sem, tr.span(call)
    lane = tr.thread_attr("thread_index_in_simdgroup", call)
    one = sem.const(1, T.uint32, sp)
    return sem.binop("-", sem.binop("<<", one, lane, sp), one, sp)


lanemask_lt = _Intrinsic("lanemask_lt", _lanemask_lt)


# ----------------------------------------------------------------------------- unsupported

class _Unsupported(_Placeholder):
    def __init__(self, what, message, hint=None):
        self._what, self._message, self._hint = what, message, hint

    def __metalbench_intrinsic__(self, tr, call):
        raise KernelSyntaxError(self._message, tr.span(call), self._hint)

    def __metalbench_value__(self, tr, node):
        raise KernelSyntaxError(self._message, tr.span(node), self._hint)


class _CG(_Placeholder):
    _what = "cg"

    def __init__(self):
        self.this_grid = _Unsupported(
            "cg.this_grid", "cooperative groups grid synchronisation (cuda.cg.this_grid().sync()) is not supported",
            "Metal has no grid-wide barrier; split the kernel in two launches")


cg = _CG()
