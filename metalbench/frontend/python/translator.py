"""The DSL translator: one :class:`FunctionTranslator` per function body (kernel or
device function) and specialisation, assembled from the syntax mixins; the entry
point :func:`translate_kernel`."""
from __future__ import annotations

import ast
import builtins as _pybuiltins
from typing import Any

import numpy as np

from ... import dsl
from ... import ir
from ...errors import (ControlFlow, KernelNameError, KernelTypeError, MetalbenchError, Span,
                        internal_error)
from ...semantics import DSL, ComplexValue, Semantics, TupleType, TupleValue
from ...semantics.datetimes import DatetimeArg
from ...semantics.tuples import join_types
from .calls import CallsMixin
from .compiletime import CompileTimeMixin, single_assignments
from .expressions import ExpressionsMixin
from .functions import FunctionsMixin
from .parse import ParsedFunction, node_span
from .specs import ArgSpec, Binding, BufInfo, Module
from .matrices import MatricesMixin
from .loops import LoopsMixin
from .pyfuncs import PyFunctionsMixin
from .npufuncs import NpUfuncsMixin
from .statements import StatementsMixin
from .structs import StructArg, with_struct_fields
from .constrecords import bind_record_fields
from .records import RecordArg
from .reductions import ReductionsMixin
from .tuples import TuplesMixin
from .complexes import ComplexMixin
from .views import ViewsMixin


class FunctionTranslator(LoopsMixin, StatementsMixin, ExpressionsMixin, CallsMixin, FunctionsMixin, CompileTimeMixin,
                         ViewsMixin, MatricesMixin, TuplesMixin, PyFunctionsMixin, NpUfuncsMixin,
                         ReductionsMixin, ComplexMixin):
    """Translates one function body (kernel or device function) for one specialisation."""

    def __init__(self, module: Module, parsed: ParsedFunction, is_kernel: bool,
                 bindings: dict[str, Binding], ret_hint=None):
        self.m = module
        self.p = parsed
        self.src = parsed.source
        self.is_kernel = is_kernel
        self.params = bindings
        self.var_types: dict[str, Any] = {}
        self.annotated: dict[str, Any] = {}
        self.ret_type = ret_hint
        self.ret_declared = ret_hint is not None     # a declared result type (a Numba signature) stays
        self._pending_list: list = []
        self._names: dict = {}
        # threadgroup arrays this device function (or one it calls) declares: the kernel
        # declares them and passes them down (statements.declare_array, functions.device_call)
        self.shared_decls: list[ir.ArrayDecl] = []
        self.sem = Semantics(module.rules, once=self._once)
        self.single_assigned = single_assignments(parsed.fdef)   # compile-time constant candidates
        # Parameters the body assigns to are local variables initialised from the parameter
        # (MLX passes scalars as `constant T&`, and a device function's parameters are
        # values): `x += 1` changes the copy, and the copy is typed like any local (the
        # parameter's type joined with what is assigned).
        assigned = {n.id for n in ast.walk(parsed.fdef) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        self.param_copies: dict[str, ir.Var] = {}
        # locals that hold a real number and then a complex one (s = 0.0; s += z[i]): complex
        # from their first assignment on the next typing pass, as Numba unifies them
        self.complex_names: set[str] = set()
        self.complex_retry = False
        for pname, b in list(bindings.items()):
            if pname not in assigned:
                continue
            if b.kind == "var":
                self.param_copies[pname] = b.value
                del self.params[pname]
            elif b.kind == "tuple" and isinstance(b.value, ComplexValue):
                self.param_copies[pname] = b.value      # a complex parameter: two locals (complexes.py)
                del self.params[pname]
            elif b.kind == "const" and isinstance(b.value, (bool, int, float, np.generic)):
                # a compile-time argument the body changes: a local starting at that value
                self.param_copies[pname] = b.value
                del self.params[pname]

    def fresh(self, base: str, key) -> str:
        """A C name for ``key``, unique in the kernel and the same on every typing pass."""
        if key not in self._names:
            self._names[key] = self.m.unique(base)
        return self._names[key]

    def translate(self) -> list[ir.Stmt]:
        for _ in range(8):
            self.assigned: dict[str, Any] = {}
            self.ret_types: list = []
            self.scopes: list[dict[str, Binding]] = [{}]
            self.vars: dict[str, ir.Var] = {}
            self.hoisted: list[ir.Stmt] = []
            self.loop_depth = 0
            self._once_counts: dict = {}
            prologue = []
            for n, p in self.param_copies.items():
                if isinstance(p, ComplexValue):
                    prologue += self.store_tuple_local(n, p, self.p.fdef, self.span(self.p.fdef))
                    continue
                init = ir.Var(p.name, p.type) if isinstance(p, ir.Var) else self.const(p, self.p.fdef)
                prologue.append(ir.Assign(self.local_var(n, init.type, self.p.fdef), init))
            self.statics: dict[str, Binding] = {}    # names bound to compile-time values (compiletime.py)
            self.unroll_depth = 0
            body = prologue + self.block(self.p.fdef.body)
            changed, self.complex_retry = self.complex_retry, False
            for name, t in self.assigned.items():
                if name in self.annotated:
                    continue
                if self.var_types.get(name) != t:
                    self.var_types[name] = t
                    changed = True
            if self.ret_types and not self.ret_declared:
                rt = self.ret_types[0]
                for t in self.ret_types[1:]:
                    rt = self._join(rt, t)
                if rt != self.ret_type:
                    self.ret_type = rt
                    changed = True
            if not changed:
                decls = [ir.Decl(v, span=None) for v in self.vars.values()]
                return self.hoisted + decls + body
        raise KernelTypeError("could not settle the types of the local variables",
                              node_span(self.src, self.p.fdef))

    def span(self, node) -> Span:
        return node_span(self.src, node)

    def err(self, cls, msg, node, hint=None):
        return cls(msg, self._as_span(node), hint)

    def lookup(self, name: str, node) -> Binding:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in self.params:
            return self.params[name]
        if name in self.statics:
            return self.statics[name]
        if name in self.vars:
            return Binding("var", self.vars[name])
        if name in self.p.env:
            return Binding("pyobj", self.p.env[name])
        if hasattr(dsl, name) and not name.startswith("_") and self.sem.rules.dialect != "numba":
            # (a Numba kernel names what its module defines, as Python does: no DSL names)
            return Binding("pyobj", getattr(dsl, name))
        if name in ("metal",):
            return Binding("pyobj", dsl.metal)
        if hasattr(_pybuiltins, name):
            return Binding("pyobj", getattr(_pybuiltins, name))
        raise self.err(KernelNameError, f"name {name!r} is not defined", node,
                       hint="define it before this line, pass it as an argument, or import it "
                            + ("in the kernel's module (from math import floor)" if self.sem.rules.dialect == "numba"
                               else "(from metalbench.dsl import *)"))

    def local_var(self, name: str, t, node) -> ir.Var:
        """The local variable ``name``; its type is settled by the fixpoint in translate()."""
        if name in self.params and self.params[name].kind != "var":
            raise self.err(KernelTypeError, f"cannot assign to {name!r}: it is an array or constant",
                           node, hint="store into an element (x[i] = ...) or use another name")
        self.assigned[name] = self._join(self.assigned[name], t) if name in self.assigned else t
        if name in self.annotated:
            vt = self.annotated[name]
        else:
            vt = self.var_types.get(name, t)
        v = self.vars.get(name)
        if v is None:
            v = ir.Var(self.fresh(name, ("local", name)), vt, span=self._as_span(node))
            self.vars[name] = v
        return v

    def _as_span(self, node_or_span) -> Span:
        return node_or_span if isinstance(node_or_span, Span) else self.span(node_or_span)

    def _join(self, a, b):
        if isinstance(a, TupleType) or isinstance(b, TupleType):
            j = join_types(self.sem.join, a, b)
            if j is None:
                raise KernelTypeError(f"the function returns both {getattr(a, 'name', a)} and "
                                      f"{getattr(b, 'name', b)}", node_span(self.src, self.p.fdef))
            return j
        return self.sem.join(a, b)

    def _once(self, e: ir.Expr, span: Span) -> ir.Var:
        """The semantic layer's ``once`` hook: ``e`` stored in a temporary (declared with
        the locals, assigned just before the statement that uses it)."""
        # The n-th temporary of this span (several per construct: x // y needs x and y once);
        # the same on every typing pass, so its name and type settle.
        base = (span.line, span.col, span.end_line, span.end_col)
        n = self._once_counts.get(base, 0)
        self._once_counts[base] = n + 1
        tmp = self.local_var(self.fresh("_p", ("once",) + base + (n,)), e.type, span)
        self._pending_list.append(ir.Assign(tmp, e, span=span))
        return ir.Var(tmp.name, e.type, span=span)

    def conv(self, e: ir.Expr, t, node=None) -> ir.Expr:
        """``e`` implicitly converted to ``t`` (see :meth:`Semantics.convert`)."""
        return self.sem.convert(e, t)

    def to_bool(self, e: ir.Expr) -> ir.Expr:
        """``e`` as a condition (see :meth:`Semantics.to_bool`)."""
        return self.sem.to_bool(e)


def _is_dt(spec) -> bool:
    """A datetime64/timedelta64 argument of the Numba layer: ``value`` is ("datetime", kind, unit)."""
    return isinstance(spec.value, tuple) and len(spec.value) == 3 and spec.value[0] == "datetime"


def translate_kernel(parsed: ParsedFunction, specs: list[ArgSpec], name: str | None = None) -> ir.KernelIR:
    """Translate a parsed kernel for one specialisation into a :class:`~metalbench.ir.KernelIR`.

    ``specs`` describes every parameter of the function in order (buffers, scalars,
    constexprs, outputs); ``parsed.rules`` picks the language rules (the DSL's by default)::

        >>> from metalbench import types as T
        >>> from metalbench.frontend.python import parse_function
        >>> p = parse_function(None, "def k(x, n, out):\\n    out[0] = x[n] * 2\\n")
        >>> kir = translate_kernel(p, [ArgSpec("x", "buffer", T.float16), ArgSpec("n", "scalar", T.int32),
        ...                            ArgSpec("out", "buffer", T.float32, is_output=True)])
        >>> print(ir.dump(kir.body))
        out[0] = float32((x[n] * 2.0))
    """
    kname = name or parsed.name
    module = Module(kname, parsed.rules or DSL)
    module.constexprs = {s.name: s.value for s in specs if s.kind == "constexpr"}   # launch values (Numba's sharedmem)
    params: list[ir.Param] = []
    bindings: dict[str, Binding] = {}
    leaf_types = {s.name: s.type for s in specs if s.kind == "scalar"}
    structs: dict = {}
    records: dict = {}
    tuples: list[ArgSpec] = []
    for spec in specs:
        module.names.add(spec.name)
        if spec.kind == "constexpr":
            bindings[spec.name] = Binding("const", spec.value)
        elif spec.kind == "scalar":
            p = ir.Param(spec.name, "scalar", spec.type, 0)
            params.append(p)
            bindings[spec.name] = Binding("pyobj", DatetimeArg(spec.name, *spec.value[1:])) if _is_dt(spec) \
                else Binding("var", ir.Var(spec.name, spec.type))
        elif spec.kind == "struct":
            # a struct argument: its fields are the parameters that follow (structs.py)
            structs[spec.name] = spec.value
            bindings[spec.name] = Binding("pyobj", StructArg(spec.name, spec.value))
        elif spec.kind == "record":
            # a NumPy structured array: its used fields are buffer parameters that follow (records.py)
            records[spec.name] = {p: (leaf, sub) for p, leaf, sub in spec.value}
            bindings[spec.name] = Binding("pyobj", RecordArg(spec.name, spec.value))
        elif spec.kind == "complex":
            # a complex scalar argument: its parts are the two scalar specs that follow
            re_, im_ = spec.value
            bindings[spec.name] = Binding("tuple", ComplexValue(ir.Var(re_, spec.type), ir.Var(im_, spec.type)))
        elif spec.kind == "tuple":
            # a tuple argument: its items are the specs that follow (leaf names in spec.value);
            # bound below, once its array items have their bindings
            tuples.append(spec)
        else:
            p = ir.Param(spec.name, "buffer", spec.type, spec.ndim, is_output=spec.is_output)
            params.append(p)
            # a complex array (numba_compat/host.py): storage of real parts with a trailing 2;
            # its own binding kind, so only ``.real``/``.imag`` (views.py) can use it
            bindings[spec.name] = Binding("complexbuf" if spec.value == "complex" else "buf",
                                          BufInfo(spec.name, spec.type, "device", spec.ndim, None,
                                                  kernel_param=p, wide=spec.wide, zero_d=spec.zero_d,
                                                  dt=spec.value[1:] if _is_dt(spec) else None))
    for spec in tuples:
        bindings[spec.name] = Binding("tuple", _tuple_of_leaves(spec.value, leaf_types, bindings))
    # MLX order: inputs first, then outputs.
    params = [p for p in params if not p.is_output] + [p for p in params if p.is_output]
    # cuda.const.array_like of a structured array: one array per field
    parsed = bind_record_fields(parsed, records, bindings)
    tr = FunctionTranslator(module, with_struct_fields(parsed, structs), True, bindings)
    try:
        body = tr.translate()
        return ir.KernelIR(kname, params, body, functions=_reachable(module.order, body), globals=module.globals,
                           source=parsed.source)
    except (MetalbenchError, ControlFlow):
        raise
    except Exception as e:       # outside any statement (the per-node nets catch the rest)
        raise internal_error(e, node_span(parsed.source, parsed.fdef), f"kernel {kname!r}") from e


def _tuple_of_leaves(structure, leaf_types, bindings) -> TupleValue:
    """The TupleValue of a tuple argument: ``structure`` is ``(items, names)`` where each item
    is a leaf parameter's name or a nested structure; an array item is an
    :class:`ArrayItem` (``x[0][i]``: views.array_of)."""
    items, names = structure
    out = []
    for x in items:
        if isinstance(x, tuple):
            out.append(_tuple_of_leaves(x, leaf_types, bindings))
        elif x in leaf_types:
            out.append(ir.Var(x, leaf_types[x]))
        else:
            out.append(ArrayItem(bindings[x].value))
    return TupleValue(out, names=names)


class ArrayItem(ir.Expr):
    """An array inside a tuple argument (Numba's tuples of arrays): not a value; indexing
    the tuple with a constant gives the array (views.array_of)."""

    def __init__(self, info):
        self.info = info
        self.span = None

    @property
    def type(self):
        return None


def _reachable(functions: list[ir.Function], body) -> list[ir.Function]:
    """The functions the final body calls, directly or not, callees first. Earlier typing
    passes may have specialised functions for types that did not survive."""
    by_name = {f.name: f for f in functions}
    seen: set[str] = set()

    def visit(stmts):
        for n in ir.walk(stmts):
            if isinstance(n, ir.FuncCall) and n.func not in seen:
                seen.add(n.func)
                visit(by_name[n.func].body)
    visit(body)
    return [f for f in functions if f.name in seen]
