"""Overloaded C++ operators on objects: ``a + b``, ``a * 2.0f``, ``-a``, ``a == b`` where an
operand is an object of a header class, through a member (``Complex operator+(thread const
Complex& o) const``) or a free function (``Vec3 operator*(float t, thread const Vec3& v)``).
The operator is a call: the overload is chosen and translated inline as a member function or a
header function taking objects is (``cxx_calls.py``)::

    >>> from metalbench.frontend.msl import translate_kernel
    >>> from metalbench import ir, types as T
    >>> hdr = '''struct C { float re, im;
    ...     C operator*(thread const C& o) const { return C{re * o.re - im * o.im, re * o.im + im * o.re}; } };
    ... inline C operator+(C a, C b) { return C{a.re + b.re, a.im + b.im}; }'''
    >>> k = translate_kernel("k", "C a{x[0], 1.0f};\\nC b = a * a + a;\\nout[0] = b.im;", hdr,
    ...                      inputs=[("x", T.float32, 1)], outputs=[("out", T.float32, 1)])
    >>> isinstance(k, ir.KernelIR)
    True
"""
from __future__ import annotations

from ... import ir
from ...errors import MetalbenchError
from .cxx_decls import ClassInst, MethodSet
from .symbols import _NoMatch

# binary operators C++ lets a class overload, that the expression grammar reads as binary_expression
_BINARY = {"+", "-", "*", "/", "%", "==", "!=", "<", ">", "<=", ">=", "&", "|", "^", "<<", ">>", "&&", "||"}


class OperatorsMixin:
    """Overloaded operators: a part of :class:`~metalbench.frontend.msl.Translator`."""

    def operator_node(self, node):
        """``(name, operand nodes)`` of a binary or unary expression an object takes part in,
        else None (decided from the syntax and the operands' symbols, without translating)."""
        if node.type == "binary_expression":
            operands = [node.child_by_field_name("left"), node.child_by_field_name("right")]
        elif node.type == "unary_expression":
            operands = [node.child_by_field_name("argument")]
        else:
            return None
        op = self.text(node.child_by_field_name("operator")).strip()
        if node.type == "binary_expression" and op not in _BINARY:
            return None
        if not any(self.is_object_node(o) for o in operands):
            return None
        return "operator" + op, operands

    def operator_target(self, node):
        """``(MethodSet, this, argument nodes)`` of an overloaded operator, or None: a member
        of the first operand's class, else a free function of the header."""
        found = self.operator_node(node)
        if found is None:
            return None
        name, operands = found
        if self.is_object_node(operands[0]):
            obj = self.object_value(operands[0])
            ms = self.class_member(obj.cls, name)
            if isinstance(ms, MethodSet):
                return ms, obj, operands[1:]
        # a free operator function only where an operand is an object (C++ considers overloaded
        # operators for class operands only: i * str_x stays arithmetic beside operator templates)
        if name in self.funcdefs and any(self.is_object_node(o) for o in operands):
            ms = self.funcdef_methods(name)
            if self._viable(ms, operands):
                return ms, None, operands
        return None     # no operator function: the objects' conversion operators (integral_constant)

    def _viable(self, ms, operands) -> bool:
        """Whether a free operator overload of ``ms`` takes ``operands`` (a template whose
        deduction fails is no candidate: ``i * Int<1>{}`` beside steel's operator template on
        two integral_constants is the built-in product, through the conversion operator)."""
        def any_match():
            args = [self.call_arg(o) for o in operands]
            for m in ms.methods:
                try:
                    self.match(m, None, args, [], operands[0], False)
                    return True
                except _NoMatch:
                    continue
            return False
        try:
            return bool(self.probe(any_match))
        except MetalbenchError:
            return False

    def operator_returns(self, node):
        """What an overloaded operator gives ("object", "value", "ref", ...), or None when
        ``node`` is not one (a query: nothing is translated for real)."""
        if node.type == "conditional_expression":     # c ? a : b: an object when both sides are
            return "object" if all(self.is_object_node(node.child_by_field_name(f))
                                   for f in ("consequence", "alternative")) else None
        try:
            tgt = self.probe(lambda: self.operator_target(node))
            if tgt is None:
                return None
            kinds = {self.return_kind(m)[0] for m in tgt[0].methods}
            if len(kinds) == 1:
                return kinds.pop()
            return self.probe(lambda: self.operator_call(node))[2]     # the overload the operands choose
        except MetalbenchError:
            return None

    def operator_call(self, node):
        """(statements, result, kind) of an overloaded operator expression."""
        ms, this, argn = self.operator_target(node)
        args = [self.eval_arg(a) for a in argn]
        return self.call_overload(ms, this, args, [], node, with_kind=True)

    def _call_value(self, node, call):
        """(value, kind) of an operator call ``call(node)`` used as a value: its statements
        emitted, its result converted as a call's is; value None when the kind gives none."""
        sp = self.sp(node)
        out, res, kind = call(node)
        for s in out:
            self.emit_pre(s, sp)
        if kind == "value":
            return (ir.Var(res.name, res.type, span=sp) if isinstance(res, ir.Var) else res), kind
        if kind == "ref":
            return (self.convert_object(res[1], node) if res[0] == "obj" else self.lvalue_load(res, sp)), kind
        if kind == "object":
            return self.convert_object(res, node), kind
        return None, kind

    def operator_value(self, node):
        """An overloaded operator used as a value (its result converted as a call's is)."""
        value, kind = self._call_value(node, self.operator_call)
        if value is not None:
            return value
        if kind == "void":
            self.type_err(node, f"'{self.quote(node)}' gives nothing")
        self.type_err(node, f"'{self.quote(node)}' is a pointer, not a value")

    def operator_object(self, node):
        """The object an overloaded operator gives (``a + b`` of two Complex), or None."""
        if self.operator_returns(node) not in ("object", "ref"):
            return None
        if node.type == "conditional_expression":
            return self.selected_object(node)
        sp = self.sp(node)
        out, res, kind = self.operator_call(node)
        for s in out:
            self.emit_pre(s, sp)
        if kind == "ref":
            return res[1] if res[0] == "obj" else None
        return res if kind == "object" else None

    def returns_object_ref(self, node) -> bool:
        """Whether call ``node`` returns a reference to an object (``thread Acc& add(float v)
        { ...; return *this; }``): its result is that object, so calls chain
        (``acc.add(1.0f).add(2.0f)``). A query: nothing is translated."""
        try:
            tgt = self.resolve_callee(node.child_by_field_name("function"), syntactic=True)
        except MetalbenchError:
            return False
        return tgt is not None and all(
            k == "ref" and isinstance(t, ClassInst) for k, t in (self.return_kind(m) for m in tgt[0].methods))

    def call_object(self, node):
        """The object call ``node`` gives (its statements emitted): what a function returning an
        object returns, or what a returned object reference refers to; None for other calls."""
        kind = "object" if self.call_returns(node) == "object" else "ref" if self.returns_object_ref(node) else None
        if kind is None:
            return None
        out, res = self.call_target(node)
        for s in out:
            self.emit_pre(s, self.sp(node))
        return res if kind == "object" else res[1] if res[0] == "obj" else None

    def selected_object(self, node):
        """``c ? a : b`` of objects: a temporary copied from the side ``c`` picks; only that
        side is evaluated, as in C++ (``a`` may be a call with effects)."""
        sp = self.sp(node)
        cond = self.sem.to_bool(self.expr(node.child_by_field_name("condition")))
        pa, a = self.with_pre(lambda: self.object_value(node.child_by_field_name("consequence")))
        pb, b = self.with_pre(lambda: self.object_value(node.child_by_field_name("alternative")))
        if a is None or b is None or a.cls != b.cls:
            self.type_err(node, "both sides of this ?: must be objects of one class")
        out: list = []
        tmp = self.alloc_object(a.cls, f"_{a.cls.name.split('<')[0]}", out, node)
        out.append(ir.If(cond, pa + self.copy_object(tmp, a, node), pb + self.copy_object(tmp, b, node), span=sp))
        for s in out:
            self.emit_pre(s, sp)
        return tmp

    def compound_operator(self, obj, lhs, op, rhs_node, sp):
        """``a op= b`` on an object: its member ``operator op=``, else a free one (statements)."""
        name = f"operator{op}="
        ms = self.class_member(obj.cls, name)
        if isinstance(ms, MethodSet):
            out, _ = self.call_overload(ms, obj, [self.eval_arg(rhs_node)], [], lhs.parent or lhs)
            return out
        if name in self.funcdefs:
            out, _ = self.call_overload(self.funcdef_methods(name), None,
                                        [self.eval_arg(lhs), self.eval_arg(rhs_node)], [], lhs.parent or lhs)
            return out
        self.type_err(lhs, f"{obj.cls.name} has no {name} (member or free function)")

    def subscript_call(self, node):
        """(statements, result, kind) of ``obj[i]`` through the class's ``operator[]``."""
        base = node.child_by_field_name("argument")
        obj = self.object_value(base)
        ms = self.class_member(obj.cls, "operator[]")
        if not isinstance(ms, MethodSet):
            self.type_err(node, f"'{self.quote(base)}' is a {obj.cls.name}, which has no operator[]")
        idx = node.child_by_field_name("indices").named_children
        return self.call_overload(ms, obj, [self.eval_arg(i) for i in idx], [], node, with_kind=True)

    def subscript_value(self, node):
        """``obj[i]`` as a value."""
        value, _ = self._call_value(node, self.subscript_call)
        if value is not None:
            return value
        self.type_err(node, f"'{self.quote(node)}' gives no value")
