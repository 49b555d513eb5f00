"""DSL statements: assignment (plain, annotated, augmented, tuple), ``if``, ``for ... in
range``, ``while``, ``break``/``continue``/``return`` and array declarations."""
from __future__ import annotations

import ast
from dataclasses import replace

import numpy as np

from ... import dsl
from ... import ir
from ... import types as T
from ...errors import KernelSyntaxError, KernelTypeError, error_net
from ...semantics import ComplexType, ComplexValue, DatetimeValue, TupleType, TupleValue, complex_type
from .specs import Binding, BufInfo, resolve_dtype
from .expressions import _BINOPS
from .views import resolve_elem_type
from .complexes import complex_type_of
from .functions import _calls_itself


_UNSUPPORTED_STMT = {
    ast.Try: "try/except", ast.With: "with", ast.Raise: "raise", ast.Import: "import",
    ast.ImportFrom: "import", ast.ClassDef: "class definitions", ast.FunctionDef: "nested functions",
    ast.AsyncFunctionDef: "nested functions", ast.Global: "global", ast.Nonlocal: "nonlocal",
    ast.Delete: "del", ast.Assert: "assert", ast.AsyncFor: "async for", ast.AsyncWith: "async with",
}


class StatementsMixin:
    """Statements: a part of :class:`~metalbench.frontend.python.FunctionTranslator`."""

    def block(self, stmts) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for s in stmts:
            out.extend(self.stmt(s))
            if out and isinstance(out[-1], (ir.Return, ir.Break, ir.Continue)):
                # what follows is unreachable (after `if b is None: return a`, a compile-time
                # if, it may not even type): not translated, as Numba prunes dead branches
                break
        return out

    @error_net("span")
    def stmt(self, s) -> list[ir.Stmt]:
        sp = self.span(s)
        for cls, what in _UNSUPPORTED_STMT.items():
            if isinstance(s, cls):
                raise KernelSyntaxError(f"{what} is not supported in kernels", sp,
                                        hint="kernels support assignment, if/elif/else, for ... in range(...), "
                                             "while, break, continue, return and calls")
        if isinstance(s, ast.Pass):
            return []
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
                return []  # docstring
            if isinstance(s.value, ast.Call):
                e = self.call(s.value, statement=True)
                if e is None or isinstance(e, TupleValue):
                    return self._pending()
                if isinstance(e, list):          # a call that is statements (simdgroup_load ...)
                    return self._pending() + e
                if isinstance(e, ir.Stmt):
                    return self._pending() + [e]
                return self._pending() + [ir.ExprStmt(e, span=sp)]
            self.expr(s.value)
            return []
        if isinstance(s, ast.Assign):
            return self.assign(s)
        if isinstance(s, ast.AnnAssign):
            return self.ann_assign(s)
        if isinstance(s, ast.AugAssign):
            return self.aug_assign(s)
        if isinstance(s, ast.If):
            cond = self.to_bool(self.expr(s.test))
            pre = self._pending()
            if isinstance(cond, ir.Const):  # a compile-time if keeps only its taken side (in this block:
                return pre + self.block(s.body if cond.value else s.orelse)     # names it binds stay)
            return pre + [ir.If(cond, self.scoped(s.body), self.scoped(s.orelse), span=sp)]
        if isinstance(s, ast.For):
            return self.for_loop(s)
        if isinstance(s, ast.While):
            if s.orelse:
                raise KernelSyntaxError("while ... else is not supported", sp)
            cond = self.to_bool(self.expr(s.test))
            if self._pending_list:
                raise KernelSyntaxError("this loop condition is too complex (it declares arrays)", sp)
            self.loop_depth += 1
            body = self.scoped(s.body)
            self.loop_depth -= 1
            return [ir.While(cond, body, span=sp)]
        if isinstance(s, ast.Break):
            if not self.loop_depth and self.unroll_depth:
                raise self.loop_control_error("break", sp)
            if not self.loop_depth:
                raise KernelSyntaxError("'break' outside a loop", sp)
            return [ir.Break(span=sp)]
        if isinstance(s, ast.Continue):
            if not self.loop_depth and self.unroll_depth:
                raise self.loop_control_error("continue", sp)
            if not self.loop_depth:
                raise KernelSyntaxError("'continue' outside a loop", sp)
            return [ir.Continue(span=sp)]
        if isinstance(s, ast.Return):
            if s.value is None or (isinstance(s.value, ast.Constant) and s.value.value is None):
                if not self.is_kernel and _returns_value(self.p.fdef) and _calls_itself(self.p.fdef):
                    raise KernelTypeError(
                        f"Return type of recursive function does not converge: {self.p.name} returns None here "
                        "and a value elsewhere (Numba's Optional results are not supported)", sp,
                        hint="return a value of one type on every path (a sentinel such as -1 for 'none')")
                if not self.is_kernel and _returns_value(self.p.fdef):
                    return self.optional_return(None, sp)        # Numba's Optional result: None
                return [ir.Return(span=sp)]
            if self.is_kernel:
                self.value_or_tuple(s.value)     # an error in the value is the first to report, as Numba types it first
                raise KernelSyntaxError("a kernel cannot return a value", sp,
                                        hint="write results into an output array (out[i] = value); "
                                             "a bare `return` ends the thread")
            v = self.value_or_tuple(s.value)
            if isinstance(self.ret_type, ComplexType) and self.ret_declared or isinstance(v, ComplexValue) \
                    and self.ret_declared:
                v = self.sem.convert(v, self.ret_type, sp)      # a declared complex (or real) result
            if _returns_none(self.p.fdef):                        # Numba's Optional result: a value
                return self.optional_return(v, sp)
            if isinstance(v, TupleValue):
                return self.tuple_return(v, sp)
            self.ret_types.append(v.type)
            rt = self.ret_type or v.type
            return self._pending() + [ir.Return(self.conv(v, rt), span=sp)]
        raise KernelSyntaxError(f"{type(s).__name__} statements are not supported in kernels", sp)

    def _pending(self) -> list:
        out, self._pending_list = self._pending_list, []
        return out

    def scoped(self, stmts) -> list[ir.Stmt]:
        self.scopes.append({})
        try:
            return self.block(stmts)
        finally:
            self.scopes.pop()

    def assign(self, s: ast.Assign) -> list[ir.Stmt]:
        sp = self.span(s)
        if len(s.targets) != 1:
            raise KernelSyntaxError("chained assignment (a = b = c) is not supported", sp)
        target = s.targets[0]
        # Arrays are declared by assignment: tile = threadgroup_array((16, 16), float32)
        if isinstance(target, ast.Name) and isinstance(s.value, ast.Call):
            obj = self._callee_obj(s.value.func)
            if isinstance(obj, dsl.Builtin) and obj.dsl_name in ("threadgroup_array", "local_array") \
                    or getattr(obj, "__metalbench_array__", None):
                return self.declare_array(target.id, s.value, obj)
        if isinstance(target, (ast.Tuple, ast.List)):
            return self.tuple_assign(target, s.value, sp)
        if isinstance(target, ast.Name) and isinstance(s.value, ast.Call) and not s.value.keywords and (
                isinstance(s.value.func, ast.Attribute) and s.value.func.attr == "copy" and not s.value.args
                or len(s.value.args) == 1 and self._callee_obj(s.value.func) is np.copy):
            src = s.value.func.value if s.value.args == [] else s.value.args[0]
            info = self.array_of(src)
            if info is not None:                # q = a.copy(): a local copy (reductions.py)
                return self.copy_array(target.id, info, s.value)
        if isinstance(target, ast.Name):
            info = self.array_value_for(target, s.value)
            if info is not None:                # a name for an array or a view (views.py)
                return self.bind_array(target, info, s)
        if isinstance(target, ast.Name):
            static = self.assign_static(target, s.value)
            if static is not None:
                return static       # a compile-time constant (compiletime.py)
        value = self.value_or_tuple(s.value)          # a tuple value is one local per item (tuples.py)
        if isinstance(value, TupleValue) and value.cls is OptionalResult and not isinstance(target, ast.Name):
            value = self.optional_value(s.value, value)
        return self._pending() + self.store_to(target, value, sp)

    def optional_value(self, node, value):
        """An Optional result used as its value (Numba casts it): only a name the function
        tests with ``is None`` / ``is not None`` -- else the store could write a None's
        placeholder zero, where Numba's simulator raises."""
        tested = {c.left.id for c in ast.walk(self.p.fdef) if isinstance(c, ast.Compare) and len(c.ops) == 1
                  and isinstance(c.ops[0], (ast.Is, ast.IsNot)) and isinstance(c.left, ast.Name)}
        if not (isinstance(node, ast.Name) and node.id in tested):
            raise self.err(KernelTypeError, f"{ast.unparse(node)} may be None here (its function returns None on "
                                            "some paths)", node,
                           hint="keep it in a variable and test it first: v = f(x); if v is not None: out[i] = v")
        return value.items[1]

    def tuple_assign(self, target: ast.Tuple, value_node, sp) -> list[ir.Stmt]:
        if isinstance(value_node, ast.Attribute) and value_node.attr == "shape":
            info = self.buffer_of(value_node.value)
            values = [self.shape_of(info, d, value_node) for d in range(info.ndim)]
            if len(values) != len(target.elts):
                raise KernelSyntaxError(f"{info.name} has {info.ndim} dimensions, "
                                        f"not {len(target.elts)}", sp)
        else:
            values = self.unpack(self.value_or_tuple(value_node), len(target.elts), sp)
        out = self._pending()
        return out + self.assign_targets(target.elts, values, value_node, sp)

    def optional_return(self, v, sp) -> list[ir.Stmt]:
        """``return v`` / ``return`` (v None) of a function whose result is Optional: the
        tuple (is None, value) through the tuple-result path; a None return carries a zero
        of the value type the other returns settle on."""
        if isinstance(v, TupleValue):
            raise KernelSyntaxError(f"{self.p.name} returns a tuple on some paths and None on others: an "
                                    "Optional tuple is not supported", sp,
                                    hint="return a value on every path (a sentinel such as -1 for 'none')")
        if v is None:
            rt = self.ret_type
            vt = rt.items[1] if isinstance(rt, TupleType) and rt.cls is OptionalResult else T.int64
            out = self.tuple_return(TupleValue([ir.Const(True, T.bool_, span=sp), ir.Const(0, vt, span=sp)],
                                               cls=OptionalResult), sp)
            self.ret_types.pop()                # a None return does not type the value
            return out
        return self.tuple_return(TupleValue([ir.Const(False, T.bool_, span=sp), v], cls=OptionalResult), sp)

    def store_to(self, target, value: ir.Expr, sp) -> list[ir.Stmt]:
        if isinstance(value, TupleValue) and not (isinstance(value, ComplexValue) and isinstance(target, ast.Subscript)):
            if isinstance(target, ast.Name):
                return self.store_tuple_local(target.id, value, target, sp)
            raise self.err(KernelTypeError, f"a {value.type.name} cannot be stored here", target,
                           hint="store its items one by one")
        if isinstance(target, ast.Name) and value.type is not None and (
                target.id in self.complex_names or isinstance(getattr(self._tuple_binding(target.id), "value", None),
                                                              ComplexValue)):
            old = self._tuple_binding(target.id)     # a real number into a complex local: converted
            t = old.value.type if old is not None else complex_type(value.type if value.type.is_float else T.float64)
            return self.store_tuple_local(target.id, self.sem.convert(value, t, sp), target, sp)
        if isinstance(target, ast.Name):
            b = None
            for scope in reversed(self.scopes):
                if target.id in scope:
                    b = scope[target.id]
            if b is not None and b.kind == "var":  # loop variable
                return [ir.Assign(b.value, self.conv(value, b.value.type), span=sp)]
            if value.type is None:
                raise self.err(KernelTypeError, "this call returns no value", target)
            if isinstance(value, DatetimeValue):
                raise self.err(KernelTypeError, f"a {value.type.name} value cannot be kept in a local variable "
                                                "(not supported yet)", target,
                               hint="use it within one expression, e.g. out[i] = end[i] - start[i]")
            if b is None and target.id in self.params and self.params[target.id].kind in ("tuple", "pyobj", "const") \
                    and len(self.scopes) == 1 and not self.loop_depth:
                # Python rebinds the name (b = b[0] of a tuple parameter): the name is a new
                # local from here on, as Numba's SSA gives it a new version. Only in the
                # function's own block (compile-time ifs included): after a run-time branch
                # the name would be one of two types, which Numba refuses too.
                var = self.local_var(target.id + "__v", value.type, target)
                self.scopes[-1][target.id] = Binding("var", ir.Var(var.name, var.type, span=sp))
                return [ir.Assign(var, self.conv(value, var.type), span=sp)]
            var = self.local_var(target.id, value.type, target)
            return [ir.Assign(var, self.conv(value, var.type), span=sp)]
        if isinstance(target, ast.Subscript):
            info = self.buffer_of(target.value)
            idx = self.index(info, target.slice, target)
            if info.kernel_param is not None and not info.kernel_param.is_output and self.is_kernel:
                info.kernel_param.written = True
            stores = self.element_store(info, idx, value, sp)
            return self._pending() + stores
        if isinstance(target, ast.Attribute):
            return self.store_components(target, value, sp)        # v.x = ..., t[i].zw = ... (views.py)
        raise KernelSyntaxError(f"cannot assign to {type(target).__name__}", sp)

    def ann_assign(self, s: ast.AnnAssign) -> list[ir.Stmt]:
        if not isinstance(s.target, ast.Name):
            raise KernelSyntaxError("annotations are only allowed on plain names", self.span(s))
        obj = self.static_value(s.annotation)
        t = resolve_dtype(obj)
        if t is None:
            if isinstance(obj, str) and obj in T.VECTORS:
                t = T.VECTORS[obj]
            else:
                raise self.err(KernelTypeError, f"{ast.unparse(s.annotation)} is not a type", s.annotation,
                               hint="use a dtype such as float32, int32, uint32, float16")
        self.annotated[s.target.id] = t
        var = self.local_var(s.target.id, t, s.target)
        if s.value is None:
            return []
        value = self.expr(s.value)
        return self._pending() + [ir.Assign(var, self.conv(value, t), span=self.span(s))]

    def aug_assign(self, s: ast.AugAssign) -> list[ir.Stmt]:
        sp = self.span(s)
        op = _BINOPS[type(s.op)]
        if isinstance(s.target, ast.Name):
            cur = self.expr(s.target)
            rhs = self.expr(s.value)
            return self._pending() + self.store_to(s.target, self.binop(op, cur, rhs, s), sp)
        if isinstance(s.target, ast.Subscript):
            info = self.buffer_of(s.target.value)
            idx = self.index(info, s.target.slice, s.target)
            out = self._pending()
            if not isinstance(idx, (ir.Const, ir.Var)):
                tmp = self.local_var(self.fresh("_i", ("idx", s.lineno, s.col_offset)), idx.type, s.target)
                out.append(ir.Assign(tmp, idx, span=sp))
                idx = tmp
            cur = self.element_load(info, idx, sp)
            rhs = self.expr(s.value)
            out += self._pending()
            new = self.binop(op, cur, rhs, s)
            stores = self.element_store(info, idx, new, sp)
            return out + self._pending() + stores
        if isinstance(s.target, ast.Attribute):            # v.x += ..., t[i].y *= ...
            cur = self.expr(s.target)
            rhs = self.expr(s.value)
            return self.store_to(s.target, self.binop(op, cur, rhs, s), sp)
        raise KernelSyntaxError("unsupported augmented assignment target", sp)

    def declare_array(self, name: str, call: ast.Call, obj) -> list[ir.Stmt]:
        sp = self.span(call)
        hook = getattr(obj, "__metalbench_array__", None)
        fixed = None            # a name the hook chose (arrays that are one: dynamic shared memory)
        align = init = None     # the hook's byte alignment (Numba's alignment=), constant contents
        if hook is not None:
            space, shape, dtype, *extra = hook(self, call)
            fixed = extra[0] if extra else None
            align = extra[1] if len(extra) > 1 else None
            init = extra[2] if len(extra) > 2 else None     # constant contents (cuda.const.array_like)
        else:
            space = "threadgroup" if obj.dsl_name == "threadgroup_array" else "thread"
            args = list(call.args)
            kw = {k.arg: k.value for k in call.keywords}
            if len(args) + len(kw) != 2 or (len(args) < 2 and not ({"shape", "dtype"} - {None}) <= set(kw) | {"shape", "dtype"}):
                raise self.err(KernelTypeError, f"{obj.dsl_name}(shape, dtype) takes 2 arguments", call)
            shape_node = args[0] if args else kw.get("shape")
            dtype_node = args[1] if len(args) > 1 else kw.get("dtype")
            if shape_node is None or dtype_node is None:
                raise self.err(KernelTypeError, f"{obj.dsl_name}(shape, dtype) takes 2 arguments", call)
            shape = self.static_value(shape_node)
            dtype = self.static_value(dtype_node)
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        # an empty array of the Numba layer (cuda.const.array_like of an empty array): one
        # element of storage that no index reaches (its size and len() are 0)
        empty = hook is not None and isinstance(shape, tuple) and bool(shape) and 0 in shape and \
            all(isinstance(d, (int, np.integer)) and d >= 0 for d in shape)
        if not empty and not (isinstance(shape, tuple) and shape and all(isinstance(d, (int, np.integer)) and d > 0
                                                                         for d in shape)):
            raise self.err(KernelTypeError, f"array shape must be a positive int or a tuple of them, "
                                            f"known at compile time; got {shape!r}", call,
                           hint="use literals, globals or mb.constexpr parameters for the shape")
        t = resolve_elem_type(dtype)       # scalars, vectors (float4), simdgroup matrices
        ct = complex_type_of(dtype) if t is None else None
        if ct is not None:                 # a complex array: real parts with a trailing 2 (complexes.py)
            shape, t = self.complex_local_array(shape, ct)
        if t is None:
            raise self.err(KernelTypeError, f"{dtype!r} is not a supported dtype", call,
                           hint="use float32, float16, bfloat16, int32, uint32, ...")
        shared_in_function = space == "threadgroup" and not self.is_kernel
        if fixed is not None:
            cname = fixed
        elif shared_in_function:
            # One array per specialisation of the function, as CUDA's __shared__ in a device
            # function (and Numba's) has: declared in the kernel, reaching the function (and
            # the functions between) as a threadgroup parameter of the same name (functions.py).
            cname = self.fresh(f"{self.p.name}_{name}", ("array", name, call.lineno, call.col_offset))
        else:
            cname = self.fresh(name, ("array", name, call.lineno, call.col_offset))
        if isinstance(t, T.MatrixType) and space != "thread":
            raise self.err(KernelTypeError, "simdgroup matrices live in threads' registers: declare an array of "
                                            "them with local_array", call,
                           hint=f"acc = local_array({shape if len(shape) > 1 else shape[0]}, {t.name})")
        if isinstance(t, T.VectorType):
            # an array of vectors is a scalar array read through a vector view (a 3-vector
            # takes 4 elements, as Metal lays it out): views.py
            step = 4 if t.n == 3 else t.n
            n = 1
            for d in shape:
                n *= int(d)
            decl = ir.ArrayDecl(cname, space, t.elem, (n * step,), span=sp, align=align)
            info = BufInfo(cname, t.elem, space, len(shape), tuple(int(d) for d in shape), decl=decl, vec=t)
        else:
            decl = ir.ArrayDecl(cname, space, t, (1,) if empty else tuple(int(d) for d in shape), span=sp,
                                align=align, init=init)
            info = BufInfo(cname, t, space, len(shape), tuple(int(d) for d in shape), decl=decl)
            if ct is not None:
                info = self.complex_array(info)
        if shared_in_function:
            if not any(d.name == cname for d in self.shared_decls):
                self.shared_decls.append(decl)
            info = replace(info, decl=None)
            self.scopes[0][name] = Binding("buf", info)
            return []
        self.scopes[0][name] = Binding("buf", info)
        if not any(isinstance(h, ir.ArrayDecl) and h.name == cname for h in self.hoisted):
            self.hoisted.append(decl)       # once, also when an unrolled loop declares it again
        return []


class OptionalResult:
    """The ``cls`` of the tuple a function with an Optional result returns: (is None, the
    value). ``r is None`` reads the flag; a store of it into an element reads the value
    (Numba casts the Optional to its type there)."""


def _returns_none(fdef) -> bool:
    """Whether ``fdef`` has a bare ``return`` / ``return None`` (besides value returns)."""
    stack = list(fdef.body)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(n, ast.Return) and (n.value is None or isinstance(n.value, ast.Constant)
                                          and n.value.value is None):
            return True
        stack.extend(ast.iter_child_nodes(n))
    return False


def _returns_value(fdef) -> bool:
    """Whether ``fdef`` has a ``return <value>`` (not counting nested functions)."""
    stack = list(fdef.body)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(n, ast.Return) and n.value is not None and not (isinstance(n.value, ast.Constant)
                                                                       and n.value.value is None):
            return True
        stack.extend(ast.iter_child_nodes(n))
    return False

