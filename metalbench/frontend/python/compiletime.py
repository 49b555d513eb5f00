"""Compile-time structure in the DSL: names bound once to compile-time values, tuple
(and list) constants, and loops unrolled at compile time.

- A local name assigned exactly once (no ``+=``, not a loop variable) whose value is
  known at compile time is a compile-time constant: ``RPS = BM // NSG`` with ``BM``
  and ``NSG`` constexprs can size an array (``threadgroup_array(RPS, float32)``), a
  dtype (``DT = float16``) is callable as a cast, a tuple (``W = (1, 2, 4)``) indexes
  and iterates statically.
- ``for i in static_range(a, b, s)`` unrolls: the body is translated once per value,
  with ``i`` a compile-time constant (Triton's ``tl.static_range``).
- ``for w in W`` over a compile-time tuple or list (a constexpr, a global, a literal)
  unrolls the same way; ``enumerate``/``zip``/``reversed``/``range`` of compile-time
  values are compile-time values, so ``for k, w in enumerate(W)`` unrolls too.
- Tuple constants index with compile-time indices (``W[1]``, ``W[-1]``) and ``len(W)``
  is a compile-time int. Lists are accepted wherever tuples are.

    >>> import numpy as np, metalbench as mb
    >>> from metalbench.dsl import *
    >>> @mb.kernel
    ... def taps(x, out: mb.Out, W: mb.constexpr = (1, 2, 4)):
    ...     i = thread_position_in_grid.x
    ...     acc = 0.0
    ...     for k in static_range(len(W)):
    ...         acc += W[k] * x[i]
    ...     out[i] = acc
    >>> [float(v) for v in taps(np.ones(2, np.float32), grid=2, backend="sim")]
    [7.0, 7.0]
"""
from __future__ import annotations

import ast
import builtins as _pybuiltins

import numpy as np

from ... import dsl
from ... import ir
from ...errors import KernelSyntaxError, KernelTypeError
from .specs import Binding

#: Marks "not a compile-time value" (``try_static``'s answer).
NOT_STATIC = object()

# Python functions a compile-time expression may call on compile-time arguments.
_STATIC_CALLS = {_pybuiltins.len, _pybuiltins.enumerate, _pybuiltins.zip, _pybuiltins.reversed,
                 _pybuiltins.tuple, _pybuiltins.list, _pybuiltins.range, _pybuiltins.sorted}
_STATIC_NUMBER_CALLS = {_pybuiltins.min, _pybuiltins.max, _pybuiltins.abs, _pybuiltins.sum}

# The most iterations one unrolled loop may have (a typo's range(10**6) would hang).
UNROLL_LIMIT = 4096


def as_static_sequence(v):
    """``v`` as a tuple when it is a compile-time sequence (tuple or list, nested lists
    too), else None."""
    if isinstance(v, list):
        v = tuple(v)
    if isinstance(v, tuple):
        return tuple(tuple(as_static_sequence(e)) if isinstance(e, (list, tuple)) else e for e in v)
    return None


def _assigned_names(target, out: list):
    if isinstance(target, ast.Name):
        out.append(target.id)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for e in target.elts:
            _assigned_names(e, out)
    elif isinstance(target, ast.Starred):
        _assigned_names(target.value, out)


def single_assignments(fdef: ast.FunctionDef) -> set[str]:
    """Names the body assigns exactly once, by a plain ``name = value`` (no augmented
    or annotated assignment, not a loop variable, not a parameter): the candidates for
    compile-time constants."""
    counts: dict[str, int] = {}
    multi: set[str] = {a.arg for a in fdef.args.args + fdef.args.kwonlyargs}
    for n in ast.walk(fdef):
        if isinstance(n, ast.Assign):
            names: list = []
            for t in n.targets:
                _assigned_names(t, names)
            if not (len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)):
                multi.update(names)
            for name in names:
                counts[name] = counts.get(name, 0) + 1
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
            names = []
            _assigned_names(n.target, names)
            multi.update(names)
        elif isinstance(n, (ast.For, ast.comprehension)):
            names = []
            _assigned_names(n.target, names)
            multi.update(names)
        elif isinstance(n, ast.NamedExpr):
            multi.add(n.target.id)
        elif isinstance(n, ast.Call):
            # simdgroup_load(m, ...) and friends assign their first argument
            f = n.func
            fname = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if fname.startswith("simdgroup_") and n.args and isinstance(n.args[0], ast.Name):
                multi.add(n.args[0].id)
    return {n for n, c in counts.items() if c == 1 and n not in multi}


def size_parameters(fdef: ast.FunctionDef, candidates) -> set[str]:
    """The parameters among ``candidates`` that array shapes depend on
    (``threadgroup_array(n, float32)``, directly or through names assigned from them):
    a kernel specialises on their values, so an array can be sized at launch.

    >>> f = ast.parse("def k(x, n, m, out):\\n    r = n * 2\\n    t = threadgroup_array((r, 4), float32)\\n").body[0]
    >>> sorted(size_parameters(f, {"n", "m"}))
    ['n']
    """
    candidates = set(candidates)
    deps: dict[str, set] = {}            # local name -> names its assignments read
    shapes: list = []
    for n in ast.walk(fdef):
        if isinstance(n, ast.Assign):
            read = {m.id for m in ast.walk(n.value) if isinstance(m, ast.Name)}
            for t in n.targets:
                names: list = []
                _assigned_names(t, names)
                for name in names:
                    deps.setdefault(name, set()).update(read)
        if isinstance(n, ast.Call):
            f = n.func
            fname = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if fname in ("threadgroup_array", "local_array"):
                shape = n.args[0] if n.args else next((k.value for k in n.keywords if k.arg == "shape"), None)
                if shape is not None:
                    shapes.append(shape)
    found: set[str] = set()
    todo = [m.id for s in shapes for m in ast.walk(s) if isinstance(m, ast.Name)]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in candidates:
            found.add(name)
        todo.extend(deps.get(name, ()))
    return found


class CompileTimeMixin:
    """Compile-time values and unrolled loops: a part of
    :class:`~metalbench.frontend.python.FunctionTranslator`."""

    # -- compile-time values -----------------------------------------------------------
    def try_static(self, node):
        """The compile-time value of ``node`` (a number, bool, tuple, dtype, function ...),
        or :data:`NOT_STATIC`. Numbers are computed by the DSL's rules (through the
        semantic layer's folding), so ``BM // NSG`` means what it means at run time."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.Tuple, ast.List)):
            vals = [self.try_static(e) for e in node.elts]
            return NOT_STATIC if any(v is NOT_STATIC for v in vals) else tuple(vals)
        if isinstance(node, ast.Name):
            b = self.lookup(node.id, node)
            if b.kind == "cexpr":
                return b.value.value
            if b.kind == "const":
                return b.value
            if b.kind == "pyobj" and not isinstance(b.value, dsl.ThreadAttribute) \
                    and not hasattr(b.value, "__metalbench_value__"):
                return b.value
            return NOT_STATIC
        if isinstance(node, ast.Attribute):
            base = self.try_static(node.value)
            if base is NOT_STATIC or isinstance(base, (dsl.ThreadAttribute, int, float)):
                return NOT_STATIC
            try:
                v = getattr(base, node.attr)
            except AttributeError:
                return NOT_STATIC
            return NOT_STATIC if isinstance(v, dsl.ThreadAttribute) or hasattr(v, "__metalbench_value__") else v
        if isinstance(node, ast.Subscript):
            base = self.try_static(node.value)
            seq = as_static_sequence(base) if base is not NOT_STATIC else None
            if seq is None:
                return NOT_STATIC
            k = self.try_static(node.slice)
            if isinstance(k, slice) or isinstance(node.slice, ast.Slice):
                k = self._static_slice(node.slice)
            elif not isinstance(k, (int, np.integer)) or isinstance(k, bool):
                raise self.err(KernelTypeError, "a tuple constant is indexed by a compile-time integer", node,
                               hint="use a literal, a constexpr or a static_range loop variable")
            try:
                return seq[k if isinstance(k, slice) else int(k)]
            except IndexError:
                raise self.err(KernelTypeError, f"index {int(k)} is out of range for a tuple of {len(seq)}",
                               node) from None
        if isinstance(node, ast.Call):
            return self._static_call(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
            a, b = self.try_static(node.left), self.try_static(node.right)
            sa = as_static_sequence(a) if a is not NOT_STATIC else None
            sb = as_static_sequence(b) if b is not NOT_STATIC else None
            if sa is not None or sb is not None:          # tuple concatenation / repetition
                if a is NOT_STATIC or b is NOT_STATIC:
                    return NOT_STATIC
                try:
                    return (sa if sa is not None else a) + (sb if sb is not None else b) \
                        if isinstance(node.op, ast.Add) else (sa if sa is not None else a) * (sb if sb is not None else b)
                except TypeError:
                    raise self.err(KernelTypeError, "unsupported operation on tuple constants", node) from None
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp)):
            if not self._static_operands(node):
                return NOT_STATIC
            e = self.expr(node)
            return e.value if isinstance(e, ir.Const) and not isinstance(e.type, tuple) else NOT_STATIC
        return NOT_STATIC

    def _static_operands(self, node) -> bool:
        kids = {ast.BinOp: lambda n: [n.left, n.right], ast.UnaryOp: lambda n: [n.operand],
                ast.Compare: lambda n: [n.left] + n.comparators, ast.BoolOp: lambda n: n.values,
                ast.IfExp: lambda n: [n.test, n.body, n.orelse]}[type(node)](node)
        for k in kids:
            v = self.try_static(k)
            if v is NOT_STATIC or not isinstance(v, (bool, int, float, np.generic)):
                return False
        return True

    def _static_slice(self, s: ast.Slice) -> slice:
        parts = []
        for p in (s.lower, s.upper, s.step):
            v = None if p is None else self.try_static(p)
            if v is NOT_STATIC or not (v is None or isinstance(v, (int, np.integer))):
                raise self.err(KernelTypeError, "a slice of a tuple constant needs compile-time bounds", s)
            parts.append(None if v is None else int(v))
        return slice(*parts)

    def _static_call(self, node: ast.Call):
        fobj = self.try_static(node.func)
        if fobj is NOT_STATIC:
            return NOT_STATIC
        if fobj is dsl.static_range:
            return NOT_STATIC
        if getattr(fobj, "__metalbench_static_call__", False):
            # a function the front end may run at compile time on compile-time arguments
            # (Numba's literal_unroll: the identity)
            args = [self.try_static(a) for a in node.args]
            if node.keywords or any(a is NOT_STATIC for a in args):
                return NOT_STATIC
            return fobj(*args)
        if fobj in _STATIC_CALLS or fobj in _STATIC_NUMBER_CALLS:
            if node.keywords:
                return NOT_STATIC
            args = [self.try_static(a) for a in node.args]
            if any(a is NOT_STATIC for a in args):
                return NOT_STATIC
            args = [as_static_sequence(a) if isinstance(a, (list, tuple)) else a for a in args]
            if fobj in _STATIC_NUMBER_CALLS:
                flat = args[0] if len(args) == 1 and isinstance(args[0], tuple) else args
                if not all(isinstance(a, (int, float, np.generic)) and not isinstance(a, bool) for a in flat):
                    return NOT_STATIC
                if not all(isinstance(a, int) for a in flat):
                    return NOT_STATIC      # float min/max/abs: the DSL's builtins decide (NaN, rounding)
            try:
                r = fobj(*args)
            except TypeError:
                return NOT_STATIC
            if fobj in (_pybuiltins.enumerate, _pybuiltins.zip, _pybuiltins.reversed, _pybuiltins.range,
                        _pybuiltins.sorted, _pybuiltins.list):
                r = tuple(r)
            return r
        return NOT_STATIC

    def static_as_value(self, value, node):
        """A compile-time value used where a run-time value is expected: a number becomes
        a constant; a tuple becomes a tuple value where tuples are values."""
        if isinstance(value, ir.Const):
            return value
        if isinstance(value, (bool, int, float, np.generic)):
            return self.const(value, node)
        seq = as_static_sequence(value)
        if seq is not None:
            hook = getattr(self, "static_tuple_value", None)
            if hook is not None:
                return hook(seq, node)
            raise self.err(KernelTypeError, "a tuple is not a value here", node,
                           hint="index it with a compile-time index (W[0]) or loop over it (for w in W)")
        return self.object_value(value, node, repr(value))

    def static_binding(self, value, node) -> Binding:
        """The binding of a name to compile-time ``value`` (a number keeps its type as
        an ``ir.Const``)."""
        if isinstance(value, ir.Const):
            return Binding("cexpr", value)
        if isinstance(value, np.ndarray) or hasattr(value, "__cuda_array_interface__"):
            return Binding("pyobj", value)      # an array of the Python scope (views.global_array)
        seq = as_static_sequence(value)
        return Binding("const", seq if seq is not None else value)

    def assign_static(self, target: ast.Name, value_node):
        """Bind ``target = value`` at compile time when the name is assigned only here and
        the value is known at compile time: the statements to emit (a number is also
        assigned to its variable, which the printed code shows; its uses read the
        constant), or None when it is an ordinary assignment."""
        if target.id not in self.single_assigned or target.id in self.params:
            return None
        v = self.try_static(value_node)
        if v is NOT_STATIC or isinstance(v, (str, bytes, type(None))):
            return None
        if isinstance(v, (bool, int, float, np.generic)):
            e = self.expr(value_node)          # typed by the rules: 3 is an int, uint32(3) a uint
            if not isinstance(e, ir.Const):
                return None
            out = self._pending() + self.store_to(target, e, self.span(value_node))
            self.statics[target.id] = Binding("cexpr", e)
            return out
        self.statics[target.id] = self.static_binding(v, value_node)
        return []

    # -- unrolled loops ----------------------------------------------------------------
    def static_loop(self, s: ast.For):
        """``for ... in static_range(...)`` or over a compile-time sequence, unrolled; None
        when ``s`` is another loop."""
        it = s.iter
        values = None
        if isinstance(it, ast.Call) and self.try_static(it.func) is dsl.static_range:
            values = self._static_range_values(it)
        else:
            v = self.try_static(it)
            if v is not NOT_STATIC:
                values = as_static_sequence(v)
                if values is None:
                    raise self.err(KernelTypeError, f"cannot iterate over {type(v).__name__} in a kernel", it,
                                   hint="loop over range(...), static_range(...) or a tuple")
            else:
                values = self.tuple_items_of(it) if hasattr(self, "tuple_items_of") else None
                if values is None:
                    return None
        return self.unroll(s, values)

    def unroll(self, s: ast.For, values) -> list:
        """The body of loop ``s`` once per value of ``values``, its target bound to each
        (also the Numba layer's loops over tuples whose items differ in type)."""
        it = s.iter
        if s.orelse:
            raise KernelSyntaxError("for ... else is not supported", self.span(s))
        if len(values) > UNROLL_LIMIT:
            raise self.err(KernelTypeError, f"this loop would unroll into {len(values)} copies of its body "
                                            f"(at most {UNROLL_LIMIT})", it,
                           hint="use range(...) for a loop that runs at run time")
        out = self._pending()
        depth, self.loop_depth = self.loop_depth, 0
        self.unroll_depth += 1
        try:
            for v in values:
                self.scopes.append({})
                try:
                    self.bind_target(s.target, v, s)
                    out.extend(self.block(s.body))
                finally:
                    self.scopes.pop()
        finally:
            self.unroll_depth -= 1
            self.loop_depth = depth
        return out

    def _static_range_values(self, call: ast.Call) -> tuple:
        if call.keywords or not 1 <= len(call.args) <= 3:
            raise self.err(KernelTypeError, "static_range() takes 1 to 3 positional arguments", call)
        args = []
        for a in call.args:
            v = self.try_static(a)
            if v is NOT_STATIC or not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                raise self.err(KernelTypeError, f"static_range() needs compile-time integers; "
                                                f"{ast.unparse(a)} is not one", a,
                               hint="use literals, constexprs or names computed from them; "
                                    "range(...) loops at run time")
            args.append(int(v))
        if len(args) == 3 and args[2] == 0:
            raise self.err(KernelTypeError, "static_range() step must not be zero", call.args[2])
        return tuple(range(*args))

    def bind_target(self, target, value, node):
        """Bind a loop target (a name or a tuple of names) to ``value`` for one unrolled
        iteration."""
        if isinstance(target, ast.Name):
            self.scopes[-1][target.id] = self.value_binding(value, target)
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            items = as_static_sequence(value)
            if items is None and hasattr(self, "tuple_items"):
                items = self.tuple_items(value)
            if items is None or len(items) != len(target.elts):
                raise self.err(KernelTypeError, f"cannot unpack {value!r} into {len(target.elts)} names", target)
            for t, v in zip(target.elts, items):
                self.bind_target(t, v, node)
            return
        raise KernelSyntaxError("the loop variable must be a name or a tuple of names", self.span(target))

    def value_binding(self, value, node) -> Binding:
        """The binding of a name to ``value``: a compile-time value, or a run-time value
        (an ``ir.Var``; other run-time values by the tuple support)."""
        if isinstance(value, ir.Var):
            return Binding("var", value)
        if isinstance(value, ir.Const):
            return Binding("cexpr", value)
        if isinstance(value, (bool, int, float, np.generic)):
            return Binding("cexpr", self.const(value, node))
        hook = getattr(self, "runtime_binding", None)
        b = hook(value, node) if hook is not None else None
        return b if b is not None else self.static_binding(value, node)

    def loop_control_error(self, what: str, sp):
        """The error for ``break``/``continue`` directly inside an unrolled loop."""
        return KernelSyntaxError(f"'{what}' is not supported in a static_range or tuple loop: it is unrolled "
                                 "at compile time", sp,
                                 hint="use range(...) for a loop that can break, or an if around the rest "
                                      "of the body")
