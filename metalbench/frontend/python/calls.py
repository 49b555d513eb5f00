"""DSL calls: dtype conversions, vector constructors, builtins (through the registry
and the semantic layer), ``select``, barriers, atomics, and the Numba layer's
``__metalbench_intrinsic__`` hook."""
from __future__ import annotations

import ast
import builtins as _pybuiltins

import numpy as np

from ... import dsl
from ... import ir
from ... import types as T
from ...errors import KernelSyntaxError, KernelTypeError
from ...builtins import registry
from .compiletime import NOT_STATIC
from .matrices import MATRIX_CALLS
from ...semantics import TupleValue, is_complex
from .expressions import _NOT_STATIC
from .pyfuncs import is_python_function
from .npufuncs import is_numpy_ufunc
from .specs import _PY_CASTS, resolve_dtype


class CallsMixin:
    """Calls, casts and atomics: a part of :class:`~metalbench.frontend.python.FunctionTranslator`."""

    def _callee_obj(self, func_node):
        v = self._maybe_static(func_node)
        return None if v is _NOT_STATIC else v

    def call(self, node: ast.Call, statement: bool = False):
        sp = self.span(node)
        red = self.reduction_call(node)          # a.sum(), np.nanmax(a) ... (reductions.py)
        if red is not None:
            return red
        obj = self._callee_obj(node.func)
        if obj is None and isinstance(node.func, ast.Attribute) and node.func.attr == "bit_count":
            return self.bit_count(node)                              # x.bit_count() (pyfuncs.py)
        if obj is None and isinstance(node.func, ast.Attribute) and node.func.attr == "conjugate":
            return self.conjugate_call(node)                         # z.conjugate() (complexes.py)
        if obj is not None:
            c = self.complex_call(obj, node)         # complex(a, b), complex64(x), cmath.* (complexes.py)
            if c is not None:
                return c
        if obj is None:
            raise self.err(KernelTypeError, f"{ast.unparse(node.func)} is not callable in a kernel", node)
        hook = getattr(obj, "__metalbench_intrinsic__", None)
        if hook is not None:
            return hook(self, node)
        from ...kernel import Func  # a cycle: kernel.py imports this module
        if isinstance(obj, Func):
            return self.device_call(obj, node)
        if isinstance(obj, type) and issubclass(obj, tuple) and hasattr(obj, "_fields"):
            return self.namedtuple_call(obj, node)
        if obj is tuple and self.try_static(node) is NOT_STATIC:
            if len(node.args) != 1 or node.keywords:
                raise self.err(KernelTypeError, "tuple(x) takes one tuple", node)
            v = self.value_or_tuple(node.args[0])
            if not isinstance(v, TupleValue):
                raise self.err(KernelTypeError, "tuple(x) of something that is not a tuple", node)
            return TupleValue(v.items, span=sp)
        if obj is print:
            from .printing import translate_print
            return translate_print(self, node, statement)
        if is_numpy_ufunc(obj):                             # np.sin(x, out), np.greater(a, b) (npufuncs.py)
            r = self.numpy_ufunc(obj, node, statement)
            if r is not None:
                return r
        name = None
        if isinstance(obj, dsl.MatrixDType):                 # simdgroup_float8x8(v) (matrices.py)
            return self.matrix_construct(obj.matrix_type, node)
        if isinstance(obj, dsl.Builtin):
            name = obj.dsl_name
            if name in MATRIX_CALLS:
                return self.matrix_call(name, node)
        elif isinstance(obj, dsl.DType) or obj in _PY_CASTS or (isinstance(obj, type) and issubclass(obj, np.generic)):
            t = self.sem.rules.python_cast_type(obj) if obj in _PY_CASTS else resolve_dtype(obj)
            if t is None:
                raise self.err(KernelTypeError, f"{ast.unparse(node.func)} is not a supported type", node,
                               hint="use float32, float64, int32, ...")
            return self.cast_call(t, node, ast.unparse(node.func))
        elif isinstance(obj, str) and obj in T.VECTORS:
            name = obj
        elif obj is len and len(node.args) == 1 and self.try_static(node.args[0]) is not NOT_STATIC:
            return self.static_as_value(self.try_static(node), node)
        elif obj is len:
            if len(node.args) != 1:
                raise self.err(KernelTypeError, "len(x) takes one array", node)
            a = node.args[0]
            if isinstance(a, ast.Tuple) or (isinstance(a, ast.Name) and self.lookup(a.id, a).kind == "tuple"):
                return self.sem.int_literal(len(self.value_or_tuple(a)), sp)       # a run-time tuple's length
            if isinstance(a, ast.Subscript) and self.array_of(a) is None:
                t = self.value_or_tuple(a)                  # an item of a tuple that is a tuple: x[0]
                if isinstance(t, TupleValue):
                    return self.sem.int_literal(len(t), sp)
            return self.shape_of(self.buffer_of(a), 0, node)
        elif obj is range:
            raise self.err(KernelSyntaxError, "range() is only allowed in `for ... in range(...)`", node)
        elif is_python_function(obj):                   # operator.*, math.modf/frexp/... (pyfuncs.py)
            return self.python_function(obj, node)
        elif registry.lookup_object(obj) is not None:
            name = registry.lookup_object(obj).name
        elif callable(obj) and getattr(obj, "__module__", "") in ("builtins",):
            raise self.err(KernelSyntaxError, f"{ast.unparse(node.func)}() is not supported in kernels", node)
        if name is None:
            raise self.err(KernelTypeError, f"{ast.unparse(node.func)} cannot be called in a kernel", node,
                           hint="kernels call Metal builtins (metalbench.dsl), math functions and @mb.func functions")
        if node.keywords:
            raise self.err(KernelTypeError, f"{name}() takes no keyword arguments", node)
        if name in ("threadgroup_array", "local_array"):
            raise self.err(KernelSyntaxError, f"{name}() must be assigned to a name: "
                                              f"buf = {name}(shape, dtype)", node)
        if name in ("threadgroup_barrier", "simdgroup_barrier"):
            # threadgroup_barrier() is threadgroup_barrier(mem_flags.mem_threadgroup): what it
            # prints as, and all the race checker lets it order (sim/sync_checks.py)
            flags = self._mem_flags_of(node.args, node) or (
                ("mem_threadgroup",) if name == "threadgroup_barrier" else ("mem_none",))
            return ir.Barrier("threadgroup" if name == "threadgroup_barrier" else "simdgroup", flags, span=sp)
        if name == "atomic_thread_fence":
            return self._fence_call(node, sp)
        b = registry.lookup(name, dialect="python")
        if b is not None and b.node == "Atomic":
            return self.atomic(b.extra["op"], name, node)
        if name in T.VECTORS:
            return self.sem.vector(T.VECTORS[name], [self.expr(a) for a in node.args], sp)
        if name == "select":
            if len(node.args) != 3:
                raise self.err(KernelTypeError, "select(a, b, c) takes 3 arguments (c ? b : a)", node)
            a, b, c = (self.expr(x) for x in node.args)
            return self.sem.select(c, b, a, sp)
        args = [self.expr(a) for a in node.args]
        if any(is_complex(a) for a in args):
            if isinstance(obj, np.ufunc):
                return self.complex_ufunc(obj, args, node)      # np.sin(z) & co. (complexes.py)
            if name == "abs" and len(args) == 1:
                return self.sem.complex_abs(args[0], sp)
            if name == "pow" and len(args) == 2:
                return self.binop("**", args[0], args[1], node)
            raise self.err(KernelTypeError, f"{ast.unparse(node.func)}() does not take complex numbers", node,
                           hint="use the cmath functions, abs(z), z.real and z.imag")
        if name in ("min", "max") and obj in (_pybuiltins.min, _pybuiltins.max) and len(args) >= 2:
            r = self.sem.rules.minmax(self.sem, name, args, sp)
            if r is not None:
                return r
        if name in ("min", "max") and len(args) > 2:
            r = self.builtin_call(name, args[:2], node)
            for a in args[2:]:
                r = self.builtin_call(name, [r, a], node)
            return r
        if name == "round" and len(args) == 2 and obj is _pybuiltins.round:
            n = self.try_static(node.args[1])
            if isinstance(n, (int, np.integer)) and not isinstance(n, bool):
                return self.sem.rules.round_ndigits(self.sem, args[0], int(n), sp)
            t = args[1].type
            if not (isinstance(t, T.ScalarType) and t.is_int):
                raise self.err(KernelTypeError, f"round(x, ndigits) needs an integer ndigits, not {t.name}",
                               node.args[1])
            return self.sem.rules.round_ndigits(self.sem, args[0], args[1], sp)
        if name == "round" and len(args) == 2:
            raise self.err(KernelTypeError, "round(x, ndigits) is not supported; round(x) is", node)
        if name == "round" and obj is _pybuiltins.round:
            return self.sem.rules.round(self.sem, args[0], sp) if len(args) == 1 else \
                self.builtin_call(name, args, node)
        if name == "pow" and len(args) == 2:
            return self.binop("**", args[0], args[1], node)
        return self.builtin_call(name, args, node)

    def namedtuple_call(self, cls, node: ast.Call) -> TupleValue:
        """``Point(x, y)`` of a namedtuple class: a tuple with field names."""
        fields = list(cls._fields)
        vals = {f: None for f in fields}
        if len(node.args) > len(fields):
            raise self.err(KernelTypeError, f"{cls.__name__}() takes {len(fields)} values", node)
        for f, a in zip(fields, node.args):
            vals[f] = self.value_or_tuple(a)
        for kw in node.keywords:
            if kw.arg not in vals or vals[kw.arg] is not None:
                raise self.err(KernelTypeError, f"{cls.__name__}() got an unexpected or repeated field {kw.arg!r}",
                               node)
            vals[kw.arg] = self.value_or_tuple(kw.value)
        for f in fields:
            if vals[f] is None:
                d = getattr(cls, "_field_defaults", {}).get(f)
                if d is None:
                    raise self.err(KernelTypeError, f"{cls.__name__}() is missing the field {f!r}", node)
                vals[f] = self.const(d, node)
        return TupleValue([vals[f] for f in fields], names=fields, cls=cls, span=self.span(node))

    def cast_call(self, t: T.ScalarType, node: ast.Call, what: str) -> ir.Expr:
        """``t(x)``: ``x`` converted to ``t`` (C's conversion); on a vector, component-wise
        (``float32(int2_value)`` is a float2). Also the Numba type objects' hook."""
        sp = self.span(node)
        if len(node.args) != 1 or node.keywords:
            raise self.err(KernelTypeError, f"{what}(x) converts one value", node)
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and t.is_float:
            # float("inf"), float("-inf"), float("nan"): Python's spellings of the constants
            try:
                return ir.Const(float(arg.value), t, span=sp)
            except ValueError:
                raise self.err(KernelTypeError, f"float({arg.value!r}) is not a number", node) from None
        v = self.expr(arg)
        tt = T.vector_of(t, v.type.n) if isinstance(v.type, T.VectorType) else t
        return self.sem.cast(tt, v, sp)

    def builtin_call(self, name: str, args: list[ir.Expr], node) -> ir.Expr:
        """A call of builtin ``name`` (see :meth:`Semantics.builtin`); used by the Numba hooks."""
        return self.sem.builtin(name, args, self.span(node))

    def atomic(self, op: str, fname: str, node: ast.Call) -> ir.Expr:
        """``atomic_<op>(array, index, values...)``: the old value (see :meth:`Semantics.atomic`)."""
        n_value = {"cas": 2, "load": 0}.get(op, 1)
        if len(node.args) != 2 + n_value:
            want = {"cas": "(array, index, expected, desired)", "load": "(array, index)"}.get(op, "(array, index, value)")
            raise self.err(KernelTypeError, f"{fname}{want} takes {2 + n_value} arguments, got {len(node.args)}", node)
        sp = self.span(node)
        info = self.buffer_of(node.args[0])
        idx = self.absolute_index(info, self.index(info, node.args[1], node), sp)
        self.sem.check_atomic(op, info.elem, info.space, info.name, sp, who=fname)
        vals = [self.expr(a) for a in node.args[2:]]
        if info.kernel_param is not None:
            info.kernel_param.atomic = True
        return self.sem.atomic(op, info.name, info.elem, info.space, idx, vals, sp, who=fname)

    # -- barriers and fences (mem_flags: sim/sync_checks.py says what the checker orders)
    _MEM_FLAGS = ("mem_none", "mem_device", "mem_threadgroup", "mem_texture")

    def _mem_flags_of(self, args, node) -> tuple:
        """The mem_flags names of a barrier's or fence's flag arguments: names
        (``mem_device``, ``mem_flags.mem_device``), ``|`` of them, several arguments."""
        out = []

        def add(a):
            if isinstance(a, ast.BinOp) and isinstance(a.op, ast.BitOr):
                add(a.left)
                add(a.right)
                return
            v = self.static_value(a)
            for f in (v if isinstance(v, (tuple, list, frozenset)) else (v,)):
                f = getattr(f, "dsl_name", f)
                if f not in self._MEM_FLAGS:
                    raise self.err(KernelTypeError, f"unknown memory flag {f!r}", node,
                                   hint="use mem_flags.mem_threadgroup, mem_flags.mem_device, mem_flags.mem_none "
                                        "(combine with |)")
                out.append(str(f))

        for a in args:
            add(a)
        flags = tuple(dict.fromkeys(f for f in out if f != "mem_none"))
        return flags or tuple(dict.fromkeys(out))

    def _fence_call(self, node, sp):
        """``atomic_thread_fence(flags, order=memory_order_seq_cst, scope=thread_scope_device)``."""
        if not 1 <= len(node.args) <= 3:
            raise self.err(KernelTypeError, "atomic_thread_fence(flags, order, scope) takes 1 to 3 arguments", node,
                           hint="atomic_thread_fence(mem_flags.mem_device, memory_order_seq_cst, thread_scope_device)")
        flags = self._mem_flags_of(node.args[:1], node)
        order, scope = "memory_order_seq_cst", "thread_scope_device"
        if len(node.args) > 1:
            order = self.static_value(node.args[1])
        if len(node.args) > 2:
            scope = self.static_value(node.args[2])
        if order not in ("memory_order_relaxed", "memory_order_acquire", "memory_order_release",
                         "memory_order_acq_rel", "memory_order_seq_cst"):
            raise self.err(KernelTypeError, f"unknown memory order {order!r}", node.args[1],
                           hint="use memory_order_seq_cst (or _relaxed, _acquire, _release, _acq_rel)")
        if scope not in ("thread_scope_device", "thread_scope_threadgroup", "thread_scope_simdgroup"):
            raise self.err(KernelTypeError, f"unknown thread scope {scope!r}", node.args[2],
                           hint="use thread_scope_device, thread_scope_threadgroup or thread_scope_simdgroup")
        return ir.Fence(flags, order, scope[len("thread_scope_"):], span=sp)
