"""``@mb.func`` device functions: each call specialises the function for its argument
types (buffers by element type and space, compile-time constants by value) and
translates its body with a translator of its own."""
from __future__ import annotations

import ast

import numpy as np

from ... import ir
from ... import types as T
from ...errors import KernelSyntaxError, KernelTypeError, MetalbenchError
from .parse import node_span
from .expressions import _NOT_STATIC
from ...semantics import ComplexType, TupleType, TupleValue
from ...semantics.tuples import flatten
from .specs import Binding, BufInfo
from .tuples import rebuild
from .views import _uses_as_array
from .records import bind_record_param, record_argument
from .constrecords import bind_record_fields


# How many specialisations of one function may be in translation at once (recursion that
# changes its argument types: f(int32) -> f(int64) settles; more is runaway).
_SPECIALIZATION_DEPTH = 4


def _calls_itself(fdef: ast.FunctionDef) -> bool:
    """Whether the function's body calls its own name (recursion: its arguments are run-
    time values, never compile-time specialisations, which would never end)."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == fdef.name
               for n in ast.walk(fdef))


class FunctionsMixin:
    """Device-function calls: a part of :class:`~metalbench.frontend.python.FunctionTranslator`."""

    def device_call(self, func, node: ast.Call) -> ir.Expr:
        parsed = func.parsed()
        params = parsed.fdef.args
        names = [a.arg for a in params.args]
        defaults = params.defaults
        nreq = len(names) - len(defaults)
        given: dict = {}
        if len(node.args) > len(names):
            raise self.err(KernelTypeError, f"{func.__name__}() takes {len(names)} argument(s), got {len(node.args)}",
                           node)
        for pname, a in zip(names, node.args):
            given[pname] = a
        for kw in node.keywords:
            if kw.arg is None or kw.arg not in names or kw.arg in given:
                raise self.err(KernelTypeError, f"{func.__name__}() got an unexpected or repeated keyword "
                                                f"argument {kw.arg!r}", node)
            given[kw.arg] = kw.value
        missing = [n for n in names[:nreq] if n not in given]
        if missing:
            raise self.err(KernelTypeError, f"{func.__name__}() is missing argument(s): {', '.join(missing)}", node)
        # A declared signature (Numba's `@cuda.jit("float32(float32)", device=True)`): arguments
        # and the result convert to its types.
        sig = self._declared_signature(func, names, given, node)
        declared = [_declared_type(t) for t in sig.args] if sig is not None else []
        ret_hint = _declared_type(sig.return_type) if sig is not None else None
        args: list[ir.Expr] = []
        hidden: list = []           # (name, caller's value): extents and strides of buffer arguments
        bindings: dict[str, Binding] = {}
        fparams: list[ir.FuncParam] = []
        key: list = [id(func)]
        records: dict = {}          # record parameters: {path: (leaf, sub)} (records.py)
        for i, pname in enumerate(names):
            if pname in given:
                a = given[pname]
                rec = record_argument(self, a)
                if rec is not None:         # a record or record array: its field buffers (records.py)
                    bs, ps, extra, k, records[pname] = bind_record_param(self, pname, rec[0], rec[1], a)
                    bindings.update(bs)
                    fparams.extend(p for p, _ in ps)
                    args.extend(x for _, x in ps)
                    hidden.extend(extra)
                    key.append(k)
                    continue
                # an array, or a view of one (x[i:], x[r], x.view(float4): views.py)
                info = self.array_of(a, want_array=_uses_as_array(parsed.fdef, pname)) \
                    if isinstance(a, (ast.Name, ast.Subscript, ast.Call, ast.Attribute)) else None
                if info is not None:
                    callee, extra, k = self._buffer_param(pname, info, a)
                    bindings[pname] = Binding("buf", callee)
                    fparams.append(ir.FuncParam(pname, info.elem, info.space,
                                                const=info.kernel_param is not None and not info.kernel_param.is_output))
                    args.append(ir.BufArg(info.name, info.offset, span=self.span(a)))
                    hidden.extend(extra)
                    key.append(k)
                    continue
                if self._is_none(a):              # an optional argument left None
                    bindings[pname] = Binding("const", None)
                    key.append(("none",))
                    continue
                obj = self._static_object(a)
                if obj is not None:
                    # A function, type or intrinsic passed as a value: the callee is
                    # specialised on it, as Numba does.
                    bindings[pname] = Binding("pyobj", obj)
                    key.append(("obj", id(obj)))
                    continue
                e = self.value_or_tuple(a)
                if i < len(declared) and isinstance(declared[i], ComplexType):
                    e = self.sem.convert(e, declared[i], self.span(a))      # a declared complex parameter
                if isinstance(e, TupleValue) and e.names is None and all(isinstance(x, ir.Const) for x in e.items):
                    # a tuple of constants ((4, 8) as a shape): compile-time, as Numba's literals
                    v = tuple(x.value for x in e.items)
                    bindings[pname] = Binding("const", v)
                    key.append(("ctuple", tuple(x.type.name for x in e.items), v))
                    continue
                if isinstance(e, TupleValue):
                    # a tuple argument: one value parameter per item (tuples.py)
                    leaves = []
                    for k, x in enumerate(flatten(e)):
                        leaf = f"{pname}__{k}"
                        fparams.append(ir.FuncParam(leaf, x.type))
                        args.append(x)
                        leaves.append(ir.Var(leaf, x.type))
                    bindings[pname] = Binding("tuple", rebuild(e.type, iter(leaves)))
                    key.append(("tuple", e.type.name))
                    continue
                if e.type is None:
                    raise self.err(KernelTypeError, "this argument has no value", a)
                if i < len(declared) and declared[i] is not None:
                    e = self.sem.convert(e, declared[i], self.span(a))
                if isinstance(e, ir.Const) and not isinstance(e.type, T.VectorType) \
                        and not _calls_itself(parsed.fdef):
                    # Compile-time arguments specialise the function (like constexpr).
                    bindings[pname] = Binding("const", e.value)
                    key.append(("const", e.type.name, e.value))
                    continue
                bindings[pname] = Binding("var", ir.Var(pname, e.type))
                fparams.append(ir.FuncParam(pname, e.type))
                args.append(e)
                key.append(("val", e.type.name))
            else:
                d = defaults[i - nreq]
                bindings[pname] = Binding("const", ast.literal_eval(d) if isinstance(d, ast.Constant) else
                                          self.static_value(d))
                key.append(("default",))
        key = tuple(key)
        fn_ir = self.m.functions.get(key)
        if fn_ir is None:
            recursing = self.m.__dict__.setdefault("recursing", {})   # key -> (C name, its translator)
            if key in recursing:
                return self._recursive_call(func, recursing[key], args, hidden, node)
            if sum(k[0] == id(func) for k in self.m.in_progress) >= _SPECIALIZATION_DEPTH:
                raise self.err(KernelTypeError, f"cannot type infer runaway recursion: {func.__name__} calls itself "
                                                f"with new argument types {_SPECIALIZATION_DEPTH} times", node,
                               hint="give the recursive calls arguments of one type (e.g. int64(n - 1))")
            self.m.in_progress.add(key)
            fname = self.m.unique(f"{func.__name__}")
            try:
                self.m.names.update(names)
                parsed = bind_record_fields(parsed, records, bindings)   # record arrays it declares or takes
                sub = type(self)(self.m, parsed, False, bindings, ret_hint=ret_hint)
                recursing[key] = (fname, sub)
                try:
                    body = sub.translate()
                except MetalbenchError as e:
                    raise e.add_call_site(self.span(node))   # show the kernel line that called it too
            finally:
                self.m.in_progress.discard(key)
                recursing.pop(key, None)
            used = {n.name for n in ir.walk(body) if isinstance(n, ir.Var)}
            passed = [h for h in hidden if h[0] in used]
            fparams = fparams + [ir.FuncParam(n, e.type) for n, e in passed]
            fparams = fparams + [ir.FuncParam(d.name, d.elem, "threadgroup") for d in sub.shared_decls]
            ret = sub.ret_type
            if isinstance(ret, TupleType):      # items returned through thread arrays (tuples.py)
                fparams = fparams + [ir.FuncParam(f"_mb_ret{k}", t, "thread") for k, t in enumerate(ret.leaves)]
                ret = None
            if getattr(sub, "recursive_calls", None) and isinstance(sub.ret_type, TupleType):
                raise self.err(KernelTypeError, f"{func.__name__} calls itself and returns a tuple: not supported",
                               node, hint="return one value from a recursive function")
            fn_ir = ir.Function(fname, fparams, ret, body,
                                span=node_span(parsed.source, parsed.fdef))
            fn_ir.tuple_result = sub.ret_type if isinstance(sub.ret_type, TupleType) else None
            fn_ir.library_name = getattr(func, "library_name", None)     # cmathlib.py's functions
            fn_ir.hidden = [n for n, _ in passed]
            fn_ir.shared = list(sub.shared_decls)
            self.m.functions[key] = fn_ir
            self.m.order.append(fn_ir)
        by_name = dict(hidden)
        args = args + [by_name[n] for n in getattr(fn_ir, "hidden", [])]
        for d in getattr(fn_ir, "shared", []):       # the function's shared arrays (statements.py)
            args.append(ir.BufArg(d.name, None, span=self.span(node)))
            if self.is_kernel:
                if not any(isinstance(h, ir.ArrayDecl) and h.name == d.name for h in self.hoisted):
                    self.hoisted.append(d)
            elif not any(x.name == d.name for x in self.shared_decls):
                self.shared_decls.append(d)
        rt = getattr(fn_ir, "tuple_result", None)
        if rt is not None:
            return self.tuple_result(fn_ir, rt, args, node)
        return ir.FuncCall(fn_ir.name, args, fn_ir.ret, span=self.span(node))

    def _recursive_call(self, func, rec, args, hidden, node) -> ir.Expr:
        """A call of the function being translated (recursion, as CUDA allows it): its
        result type is the one declared, else the one the other ``return`` statements give
        (Numba's rule; settled by the translator's passes)."""
        fname, sub = rec
        if hidden:
            raise self.err(KernelSyntaxError, f"{func.__name__} calls itself with an array whose shape is known only "
                                              "at run time: not supported", node,
                           hint="pass the extents as arguments, or rewrite the recursion as a loop")
        rt = sub.ret_type
        if rt is None:
            for t in sub.ret_types:
                rt = t if rt is None else sub._join(rt, t)
        if rt is None:
            raise self.err(KernelTypeError, f"cannot type infer runaway recursion: {func.__name__} calls itself "
                                            "before any return gives its result a type", node,
                           hint="return a value on a path that does not recurse (a base case) first")
        if isinstance(rt, TupleType):
            raise self.err(KernelTypeError, f"{func.__name__} calls itself and returns a tuple: not supported",
                           node, hint="return one value from a recursive function")
        sub.recursive_calls = True
        return ir.FuncCall(fname, list(args), rt, span=self.span(node))

    def _declared_signature(self, func, names, given, node):
        """The declared Numba signature a call uses: the only one, or of several
        (``@cuda.jit([sig1, sig2], device=True)``) the one Numba's overload resolution
        picks for the arguments' types (numba_compat/conversions.py)."""
        sigs = getattr(func, "numba_signatures", None) or []
        if len(sigs) < 2:
            return getattr(func, "numba_signature", None)
        from ...numba_compat import conversions, nbtypes as nbt
        arg_types = []
        saved, self._pending_list = self._pending_list, []     # typing only: its statements are dropped
        try:
            for pname in names:
                a = given.get(pname)
                info = self.array_of(a, want_array=False) if isinstance(
                    a, (ast.Name, ast.Subscript, ast.Call, ast.Attribute)) else None
                if info is not None:
                    arg_types.append(("array", info.elem.name, info.ndim))
                    continue
                e = self.value_or_tuple(a) if a is not None else None
                arg_types.append(getattr(e, "type", None) if e is not None and not isinstance(e, TupleValue) else None)
        finally:
            self._pending_list = saved

        def param(t):
            if isinstance(t, nbt.Array):
                return ("array", nbt.scalar_of(t.dtype).name, t.ndim)
            return _declared_type(t)
        best = conversions.choose([conversions.rating(arg_types, [param(t) for t in s.args]) for s in sigs])
        if best is None:
            got = ", ".join(t.name if isinstance(t, T.ScalarType) else "array" if t else "?" for t in arg_types)
            raise self.err(KernelTypeError, f"no declared signature of {func.__name__} accepts ({got}); declared: "
                                            + "; ".join(str(s) for s in sigs), node,
                           hint="declare a signature for these types, or convert the arguments")
        return sigs[best]

    def _buffer_param(self, pname: str, info: BufInfo, node):
        """(the callee's view of a buffer argument, hidden (name, value) arguments, key part).
        A static shape stays static; run-time extents (and the strides of a strided view)
        become hidden value parameters ``<name>__n<d>`` / ``<name>__s<d>``, passed only when
        the function uses them (``x.shape``, ``len(x)``, ``x.size``, indexing a strided view)."""
        dims, hidden, strides = None, [], None
        if info.shape is None and (info.dims is not None or info.kernel_param is not None):
            caller = [self.shape_of(info, d, node) for d in range(info.ndim)]
            dims = tuple(ir.Var(f"{pname}__n{d}", e.type) for d, e in enumerate(caller))
            hidden = [(v.name, e) for v, e in zip(dims, caller)]
        if info.strides is not None:
            strides = tuple(ir.Var(f"{pname}__s{d}", e.type) if not isinstance(e, ir.Const) else e
                            for d, e in enumerate(info.strides))
            hidden += [(v.name, e) for v, e in zip(strides, info.strides) if isinstance(v, ir.Var)]
        callee = BufInfo(pname, info.elem, info.space, info.ndim, info.shape, vec=info.vec, dims=dims,
                         strides=strides, cplx=info.cplx, zero_d=info.zero_d)   # a complex array stays one (complexes.py)
        key = ("buf", info.elem.name, info.cplx, info.zero_d, info.space, info.ndim, info.shape,
               info.vec.name if info.vec is not None
               else None, tuple(e.type.name for _, e in hidden),
               tuple(s.value if isinstance(s, ir.Const) else None for s in info.strides) if info.strides else None)
        return callee, hidden, key

    def _static_object(self, node):
        """The compile-time object ``node`` names when it is one a device function can be
        specialised on (a function, a type, an intrinsic), else None (numbers, arrays and
        thread attributes are values)."""
        from ... import dsl
        obj = self._maybe_static(node)
        if obj is _NOT_STATIC or obj is None:
            return None
        if isinstance(obj, (bool, int, float, complex, np.generic, np.ndarray, str, tuple, dsl.ThreadAttribute)) \
                or hasattr(obj, "__metalbench_value__"):
            return None
        return obj


def _declared_type(t):
    """The metalbench type a Numba signature item declares (a ComplexType for complex64/128)."""
    c = getattr(t, "__metalbench_complex__", None)
    return c if c is not None else getattr(t, "__metalbench_dtype__", None)
