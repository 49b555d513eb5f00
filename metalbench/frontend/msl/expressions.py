"""MSL expressions: literals, names (variables, constants, thread attributes, Metal's
float constants), members and swizzles, subscripts, operators, ``?:``, casts,
assignments and increments used as values, ``sizeof``, ``alignof``."""
from __future__ import annotations

import re

from ... import ir
from ... import types as T
from ...builtins.attributes import CONSTANTS
from ...errors import KernelNameError, KernelTypeError, MetalbenchError, error_net
from ...literals import LiteralError
from ...semantics.folding import const_value, fold
from .literals import _literal
from .metal_matrices import MatPtr
from .symbols import Buf, ElemsRef, FunctionConstant, Ptr, Ref, ShapeArr
from .complex64 import CplxVar
from ...semantics import ComplexType, ComplexValue, is_complex

# Metal's constants: the float ones from the builtin registry's table (the DSL exports the
# same names), plus the integer limits and HUGE_VALF.
_CONSTS = {**{n: v for n, (v, _) in CONSTANTS.items()}, "HUGE_VALF": float("inf"),
           "INT_MAX": 2**31 - 1, "INT_MIN": -2**31, "UINT_MAX": 2**32 - 1}
# The rest of the MSL spec's constants (section 6.2, the C limits.h/float.h names), with their
# types: the half ones are half (x * HALF_MIN stays half, as in Metal), the limits of the
# narrow integer types and the float/half characteristics int, ULONG_MAX ulong.
_TYPED_CONSTS = {
    **{n: (v, T.float16) for n, v in {"MAXHALF": 65504.0, "HALF_MIN": 2.0 ** -14, "HALF_EPSILON": 2.0 ** -10,
                                      "HUGE_VALH": float("inf")}.items()},
    **{n[:-2] + "_H": (v, T.float16) for n, (v, _) in CONSTANTS.items() if n.startswith("M_") and n.endswith("_F")},
    **{n: (v, T.int32) for n, v in {
        "CHAR_BIT": 8, "SCHAR_MAX": 127, "SCHAR_MIN": -128, "UCHAR_MAX": 255, "CHAR_MAX": 127, "CHAR_MIN": -128,
        "USHRT_MAX": 65535, "SHRT_MAX": 32767, "SHRT_MIN": -32768,
        "FLT_DIG": 6, "FLT_MANT_DIG": 24, "FLT_MAX_10_EXP": 38, "FLT_MAX_EXP": 128, "FLT_MIN_10_EXP": -37,
        "FLT_MIN_EXP": -125, "FLT_RADIX": 2, "HALF_DIG": 2, "HALF_MANT_DIG": 11, "HALF_MAX_10_EXP": 4,
        "HALF_MAX_EXP": 16, "HALF_MIN_10_EXP": -4, "HALF_MIN_EXP": -13, "HALF_RADIX": 2}.items()},
    "LONG_MAX": (2**63 - 1, T.int64), "LONG_MIN": (-2**63, T.int64), "ULONG_MAX": (2**64 - 1, T.uint64),
}


def _char_value(text, tr, node) -> int:
    """A char literal's value (a signed char): C's escapes ('\\n', '\\0', '\\x41', '\\101', '\\\\')
    read as a bytes literal reads them."""
    import ast
    body = text[text.index("'"):]
    try:
        b = ast.literal_eval("b" + body)
    except (SyntaxError, ValueError):
        b = b""
    if len(b) != 1:
        tr.unsupported(node, f"the character literal {text}")
    return b[0] - 256 if b[0] > 127 else b[0]


# An operator chain: the nodes a misread cast (``(a) + b`` as a cast of ``+b``) can regroup.
_CHAIN = ("binary_expression", "unary_expression", "pointer_expression", "cast_expression")


# The inside of ``(name)``: parentheses ``value_parens`` blanks rather than holes.
_ONE_NAME = r"\s*[A-Za-z_]\w*\s*"


class ExpressionsMixin:
    """Expressions: a part of :class:`~metalbench.frontend.msl.Translator`."""

    def binop(self, op, a, b, node):
        """C's binary operator ``op`` (see :meth:`Semantics.binop`)."""
        return self.sem.binop(op, a, b, self.sp(node))

    def sometimes(self, node):
        """An operand C evaluates only sometimes (the right of ``&&``/``||``, a branch of
        ``?:``): (the statements its side effects need, its value). The caller runs those
        statements under the operand's condition; where an expression has no place for
        statements (nested in another such operand's value), side effects stay an error."""
        if self.pre is None or self.lazy:
            self.lazy += 1
            try:
                return [], self.expr(node)
            finally:
                self.lazy -= 1
        return self.with_pre(lambda: self.expr(node))

    def statement_expression(self, block):
        """GNU C's statement expression ``({ float t = x[i]; t * 2.0f; })`` (clang, so Metal,
        has it; generated code and max-style macros use it): its statements run where the
        expression is evaluated, its value is the last one's, which must be an expression."""
        items = [c for c in block.named_children if c.type != "comment"]
        if not items or items[-1].type != "expression_statement" or not items[-1].named_children:
            self.type_err(block, "a statement expression ({ ...; value; }) must end with an expression")
        if self.pre is None or self.lazy:
            self.emit_pre(None, self.sp(block))      # no place for its statements: the usual error
        self.scopes.append({})
        try:
            for st in items[:-1]:
                for s in self.stmt(st):
                    self.emit_pre(s, self.sp(st))
            return self.expr(items[-1].named_children[0])
        finally:
            self.scopes.pop()

    def short_circuit(self, op, a, pre_b, b, sp):
        """``a && b`` / ``a || b`` whose right side has side effects (the float atomic-max
        idiom ``while (old < v && !atomic_compare_exchange_weak_explicit(p, &old, ...))``):
        ``t = a; if (t) { <b's statements>; t = b; }`` (``if (!t)`` for ``||``)."""
        t = self.new_tmp(T.bool_, self.sem.to_bool(a), sp)
        read = lambda: ir.Var(t.name, t.type, span=sp)
        guard = read() if op == "&&" else self.sem.unop("!", read(), sp)
        self.emit_pre(ir.If(guard, pre_b + [ir.Assign(read(), self.sem.to_bool(b), span=sp)], span=sp), sp)
        return read()

    def branch_select(self, c, pre_a, a, pre_b, b, sp):
        """``c ? a : b`` with side effects in a branch: only the chosen branch's run, as in C
        (``t; if (c) { <a's statements>; t = a; } else { <b's>; t = b; }``)."""
        rt = self.sem.select(c, a, b, sp).type       # C's common type of the two branches
        t = self.new_tmp(rt, None, sp)
        read = lambda: ir.Var(t.name, t.type, span=sp)
        self.emit_pre(ir.If(c, pre_a + [ir.Assign(read(), self.sem.convert(a, rt, sp), span=sp)],
                            pre_b + [ir.Assign(read(), self.sem.convert(b, rt, sp), span=sp)], span=sp), sp)
        return read()

    def names_a_non_type(self, node) -> bool:
        """Does the declarator ``node`` of a type-id name a type that is none (a variable
        tree-sitter took for a parameter's type)?"""
        stack = [node] if node is not None else []
        while stack:
            n = stack.pop()
            if n.type == "type_identifier" and not self.is_type_name(n):
                return True
            stack.extend(n.named_children)
        return False

    def misread_cast(self, node) -> bool:
        """Is ``node`` a ``cast_expression`` whose "type" is an expression: ``(a) - b`` read as a
        cast of ``-b`` to a type ``a`` (``a`` a variable or template value), ``(a & (a * a)) * b``
        as a cast of ``*b`` to a function type whose "parameters" are variables? No type-id
        names a variable; ``(T) -x`` with ``T`` a type is a real cast."""
        if node.type != "cast_expression":
            return False
        tn, val = node.child_by_field_name("type"), node.child_by_field_name("value")
        if val is None or val.type not in ("unary_expression", "pointer_expression"):
            return False
        inner = tn.child_by_field_name("type") if tn.type == "type_descriptor" else tn
        if tn.type == "type_descriptor" and self.names_a_non_type(tn.child_by_field_name("declarator")):
            return True
        if tn.type == "type_descriptor" and tn.named_child_count != 1:
            return False                # `(atomic_uint*) &x`: a declarator or qualifier makes a type-id
        return inner is not None and inner.type in ("type_identifier", "identifier") and not self.is_type_name(inner)

    def value_parens(self, node):
        """``node`` -- a statement, or the head of an operator chain -- parsed again where
        tree-sitter read parenthesised values before a unary ``+ - * &`` as C casts (see
        ``misread_cast``). Such a cast binds tighter than every binary operator, so the
        operators around it bind wrongly too: ``(a) + b * c`` comes back as ``((a) + b) * c``,
        ``s * (K) + i % 4`` as ``s * ((K)(+i)) % 4``, ``k * (a & (a * a)) + a`` as
        ``k * ((a & (a * a))(+a))``; rewriting the cast alone cannot fix that. Every such cast
        in ``node`` (nested statements wait for their own turn, when their scope's names are
        known) is undone in the text and ``node`` parsed again: parentheses around one name are
        blanked (in ``self.code`` too; same length, so spans stay), a larger group becomes a
        hole -- an identifier over the group's first line (blanks after), that ``paren_group``
        maps to the group parsed alone. Returns the node of the new tree, or ``node`` when
        nothing was misread.

        >>> import re; bool(re.fullmatch(_ONE_NAME, " ODIM "))   # (ODIM): blanked, not a hole
        True
        """
        casts, stack = [], [node]
        while stack:
            n = stack.pop()
            if n is not node and (n.type.endswith("statement") or n.type == "declaration"):
                continue
            if self.misread_cast(n):
                casts.append(n)
                stack.append(n.child_by_field_name("value"))    # not its "type": that is the group
                continue
            stack.extend(n.named_children)
        if not casts:
            return node
        text, blanks, holes = list(self.code), [], {}
        for c in casts:
            close = self.code.index(")", c.child_by_field_name("type").end_byte)
            if re.fullmatch(_ONE_NAME, self.code[c.start_byte + 1:close]):
                blanks += [c.start_byte, close]
                continue
            group = self.reparse_expression(c, c.child_by_field_name("type"))
            # the hole: an identifier as long as the group's first line (an identifier cannot
            # span lines), then blanks that keep the group's newlines, so rows stay
            span = self.code[group.start_byte:group.end_byte]
            cut = span.find("\n") if "\n" in span else len(span)
            holes[group.start_byte] = group
            text[group.start_byte:group.end_byte] = "_" * cut + "".join(ch if ch == "\n" else " " for ch in span[cut:])
        for p in blanks:
            text[p] = " "
        text = "".join(text)
        if node.type in _CHAIN:
            found = self._reparse(node.start_byte, node.end_byte, casts[0], text)
            if found is None or found.has_error:
                self.type_err(casts[0], f"unknown type '{self.text(casts[0].child_by_field_name('type'))}'")
        else:
            from .parse import _PARSER
            found = _PARSER.parse(text.encode()).root_node.descendant_for_byte_range(node.start_byte, node.end_byte)
            while found is not None and (found.start_byte, found.end_byte, found.type) != \
                    (node.start_byte, node.end_byte, node.type):
                found = found.parent
            if found is None or found.has_error:
                return node             # its expressions try again, alone (expr)
        code = list(self.code)
        for p in blanks:
            code[p] = " "
        self.code = "".join(code)       # the text the new nodes index (only those parentheses differ)
        self.__dict__.setdefault("paren_groups", {}).update(holes)
        return found

    def paren_group(self, node):
        """The parenthesised expression a hole left by ``value_parens`` stands for, or None."""
        g = getattr(self, "paren_groups", {}).get(node.start_byte)
        return g if g is not None and node.end_byte <= g.end_byte and self.code[node.start_byte] == "(" else None

    def reparse_expression(self, cast, tn):
        """The parenthesised part of a ``cast_expression`` tree-sitter misread (``(a & (a * a))
        * b``, where ``a`` is a variable), parsed again as an expression. The text is parsed
        alone, at its own byte offsets (everything else blanked, newlines kept), so the new
        nodes' spans and ``self.text`` stay those of the kernel source."""
        start, end = cast.start_byte, tn.end_byte
        while end < len(self.code) and self.code[end] != ")":
            end += 1
        found = self._reparse(start, end + 1, tn, self.code)
        if found is None or found.type != "parenthesized_expression" or found.has_error:
            self.type_err(tn, f"unknown type '{self.text(tn.child_by_field_name('type'))}'")
        return found

    def _reparse(self, start, end, at_node, text):
        """The node spanning bytes [start, end) of ``text`` (the source, or the source with
        some parentheses undone), parsed alone as an expression; None if no node spans
        exactly that range."""
        from .parse import _PARSER
        lead = "int x="             # written into the blanks of any earlier line long enough
        before = "".join(c if c == "\n" else " " for c in self.code[:start])
        at = before.find(" " * len(lead))
        if at < 0:
            self.type_err(at_node, f"unknown type '{self.text(at_node.child_by_field_name('type') or at_node)}'",
                          hint="write the operator's left side without parentheses")
        root = _PARSER.parse((before[:at] + lead + before[at + len(lead):] + text[start:end] + ";").encode()).root_node
        found = root.named_descendant_for_byte_range(start, end)
        while found is not None and (found.start_byte, found.end_byte) != (start, end):
            found = found.parent
        return found

    def constant_select(self, cond: bool, node, sp):
        """``c ? a : b`` with a compile-time constant ``c``: only the side taken runs (MLX's
        sort.h: ``ARG_SORT ? float(idx[i]) : v`` with ``idx`` a null pointer when ARG_SORT is
        false). The other side is translated only for C's common type, its statements dropped;
        one that cannot be (it uses that null pointer) leaves the taken side's type."""
        taken = node.child_by_field_name("consequence" if cond else "alternative")
        other = node.child_by_field_name("alternative" if cond else "consequence")
        pre, v = self.sometimes(taken)
        for st in pre:
            self.emit_pre(st, sp)
        if isinstance(v.type, (T.ScalarType, T.VectorType)):
            try:
                _, o = self.sometimes(other)
            except MetalbenchError:
                # C++ checks both sides: only a null pointer's use is let pass (undefined
                # only where it runs), not an ill-formed side (~ of a float, say)
                if not self.uses_null_pointer(other):
                    raise
                return v
            if isinstance(o.type, (T.ScalarType, T.VectorType)):
                v = self.sem.convert(v, self.sem.common_type(v.type, o.type, sp))
        return v

    @error_net("sp")
    def expr(self, node, stmt=False) -> ir.Expr:
        k = node.type
        sp = self.sp(node)
        if k == "parenthesized_expression":
            inner = node.named_children[-1]
            if inner.type == "compound_statement":
                return self.statement_expression(inner)
            return self.expr(inner)
        if k in _CHAIN and (node.parent is None or node.parent.type not in _CHAIN) or self.misread_cast(node):
            again = self.value_parens(node)        # (a) + b * c, `a` a variable: no cast
            if again is not node:
                return self.expr(again)
        if self.has_matrices:
            m = self.matrix_expr(node)                  # m * v, determinant(m) (metal_matrices)
            if m is not None:
                return m
        if k in ("number_literal", "user_defined_literal"):
            try:
                v, t = _literal(self.text(node))
            except LiteralError as ex:
                self.type_err(node, str(ex))
            return ir.Const(v, t, span=sp)
        if k in ("true", "false"):
            return self.sem.bool_const(k == "true", sp)
        if k == "char_literal":
            return ir.Const(_char_value(self.text(node), self, node), T.int8, span=sp)
        if k in ("identifier", "qualified_identifier"):
            g = self.paren_group(node) if k == "identifier" else None
            return self.expr(g) if g is not None else self.name_expr(node)
        if k == "field_expression":
            m = self.complex_member(node)        # z.real, p->imag of complex64_t (complex64.py)
            if m is not None:
                return m
            m = self.member_value(node)          # a member of an object (cxx_assign)
            if m is not None:
                return m
            arg, comps = node.child_by_field_name("argument"), self.text(node.child_by_field_name("field"))
            if self.text(node.child_by_field_name("operator")) == "->" and self.ptr_rank(arg) is not None:
                base = self.sem.view_load(*self.deref(arg, node), sp)     # p->x of a vector pointer: (*p).x
                if isinstance(base.type, T.VectorType):
                    return self.sem.component(base, comps, sp)
            base = self.expr(arg)
            if is_complex(base) and self.text(node.child_by_field_name("operator")) == ".":
                return self.complex_part(base, comps.strip(), node)
            if self.text(node.child_by_field_name("operator")) != "." or \
                    not isinstance(base.type, T.VectorType):
                self.type_err(node, f"'{self.text(node)}': member access needs a vector")
            return self.sem.component_read(base, comps, sp)
        if k == "subscript_expression":
            base = node.child_by_field_name("argument")
            if self.is_elements(base):
                return self.matrix_subscript(node)
            if base.type == "identifier":
                sym = self.lookup(self.text(base))
                if isinstance(sym, ShapeArr):
                    return self.shape_index(sym, node)
                if isinstance(sym, Ref) and isinstance(sym.view.type, T.VectorType):
                    return self.ref_vector_element(sym, node)
                if isinstance(sym, ir.Var) and isinstance(sym.type, T.VectorType):
                    return self.vector_element(ir.Var(sym.name, sym.type, span=sp),
                                               node.child_by_field_name("indices").named_children[0], sp)
            if base.type in ("identifier", "call_expression", "parenthesized_expression") and self.is_object_node(base):
                return self.subscript_value(node)        # the class's operator[] (operators.py)
            if self.vector_valued(base) and self.ptr_rank(base) is None:
                # vals[j][0], t.frag_at(i, j)[jj], (*p)[c]: a component of a vector value
                val = self.expr(base)
                if isinstance(val.type, T.VectorType):
                    return self.vector_element(val, node.child_by_field_name("indices").named_children[0], sp)
            elif base.type in ("call_expression", "binary_expression", "unary_expression",
                               "parenthesized_expression", "conditional_expression") \
                    and self.ptr_rank(base) is None and self.vector_probe(base):
                # exp(a)[2], (a + b)[j], float4(x)[i]: a component of any vector-valued expression
                return self.vector_element(self.expr(base), node.child_by_field_name("indices").named_children[0], sp)
            return self.load_at(node)
        if k == "pointer_expression":
            if self.text(node).lstrip().startswith("*"):
                return self.load_at(node)
            self.type_err(node, "'&' (an address) is only allowed where a pointer is expected: "
                          "a pointer variable, a pointer argument, an atomic function's first argument")
        if k in ("binary_expression", "unary_expression") and self.operator_node(node) is not None \
                and self.probe(lambda: self.operator_target(node)) is not None:
            return self.operator_value(node)            # an overloaded operator (operators.py)
        if k == "binary_expression":
            opn = node.child_by_field_name("operator")
            op = self.text(opn)
            if opn.start_byte in self.quals.get("<", ()):
                op = op.replace(">", "<")
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if self.ptr_rank(left) is not None or self.ptr_rank(right) is not None:
                return self.pointer_binop(op, node)
            cast = self.paren_type(left)
            if cast is not None and op in ("+", "-", "*"):
                # `(T) - x`, `(uint) *p`: C reads a cast of a unary expression
                if right.type == "binary_expression":
                    self.unsupported(node, f"'{self.quote(node)}' (a cast of a unary expression "
                                     "followed by a binary operator); add parentheses: (T)(-x)")
                if op == "*":
                    v = self.sem.view_load(*self.deref(right, node), sp)
                else:
                    v = self.sem.unop(op, self.expr(right), sp)
                return self.cast_to(cast, [v], node)
            a = self.expr(node.child_by_field_name("left"))
            if op in ("&&", "||"):
                pre_b, b = self.sometimes(node.child_by_field_name("right"))
                if isinstance(a.type, T.VectorType) or isinstance(b.type, T.VectorType):
                    for st in pre_b:        # component-wise on vectors: both sides evaluated
                        self.emit_pre(st, sp)
                    return self.vector_logical(op, a, b, sp)
                if pre_b:
                    return self.short_circuit(op, a, pre_b, b, sp)
            else:
                b = self.expr(node.child_by_field_name("right"))
            for x, n in ((a, "left"), (b, "right")):
                if x.type is None:
                    self.type_err(node.child_by_field_name(n), "this has no value (void)")
            return self.binop(op, a, b, node)
        if k == "unary_expression":
            op = self.text(node.child_by_field_name("operator"))
            a = self.expr(node.child_by_field_name("argument"))
            if op == "!" and isinstance(a.type, T.VectorType):
                return self.vector_logical("!", a, None, sp)
            return self.sem.unop(op, a, sp)
        if k == "conditional_expression":
            c = self.sem.to_bool(self.expr(node.child_by_field_name("condition")))
            if isinstance(fold(c), ir.Const):
                return self.constant_select(fold(c).value, node, sp)
            pre_a, a = self.sometimes(node.child_by_field_name("consequence"))
            pre_b, b = self.sometimes(node.child_by_field_name("alternative"))
            if pre_a or pre_b:
                return self.branch_select(c, pre_a, a, pre_b, b, sp)
            return self.sem.select(c, a, b, sp)
        if k == "cast_expression":
            tn = node.child_by_field_name("type")
            val = node.child_by_field_name("value")
            if self.ptr_rank(node) is not None:
                self.type_err(node, f"'{self.quote(node)}' is a pointer, not a value",
                              hint="index it (p[i]) or dereference it (*p)")
            t, _ = self.resolve_type(tn)
            v = self.value_as(val, t)
            return self.cast_to(t, [v], node)
        if k == "call_expression":
            v = self.call(node, stmt)
            if v is None and not stmt:          # a void call where a value is needed: f(r) + 1.0f
                self.type_err(node, f"'{self.quote(node.child_by_field_name('function'))}' returns nothing (void), "
                                    "so it has no value here")
            return v
        if k == "assignment_expression":
            lhs = node.child_by_field_name("left")
            stmts = self.expr_stmt(node)
            for s in stmts:
                self.emit_pre(s, sp)
            return self.expr(lhs)
        if k == "update_expression":
            arg = node.child_by_field_name("argument")
            prefix = self.text(node).lstrip().startswith(("++", "--"))
            old = None if prefix else self.new_tmp(self.expr(arg).type, self.expr(arg), sp)
            for s in self.expr_stmt(node):
                self.emit_pre(s, sp)
            return self.expr(arg) if prefix else old
        if k == "comma_expression":
            for s in self.expr_stmt(node.child_by_field_name("left")):
                self.emit_pre(s, sp)
            return self.expr(node.child_by_field_name("right"))
        if k == "initializer_list":
            self.type_err(node, "a {...} list needs a declared type here")
        if k == "compound_literal_expression" and self.names_complex(node.child_by_field_name("type")):
            return self.complex_construct([self.expr(c) for c in node.child_by_field_name("value").named_children],
                                          node)            # complex64_t{re, im} (complex64.py)
        if k in ("compound_literal_expression", "template_function"):
            v = self.cxx_expr(node)              # T{...}, is_same_v<A, B> (cxx_assign)
            if v is not None:
                return v
        if k == "sizeof_expression":
            return ir.Const(self.sizeof(node), T.uint64, span=sp)
        if k == "alignof_expression":
            return ir.Const(self.alignof(node), T.uint64, span=sp)
        if k in ("lambda_expression", "new_expression", "delete_expression", "string_literal"):
            self.unsupported(node, f"'{k.replace('_', ' ')}'")
        self.unsupported(node, f"the expression '{self.quote(node)}'")

    def alignof(self, node) -> int:
        """``alignof(T)`` in bytes, C++'s rule for Metal's types: a scalar its size, a vector
        its size (a 3-vector that of a 4-vector), a packed vector its component's, a matrix its
        column's, a class its most aligned member's (or ``alignas``), a pointer 8."""
        tn = node.child_by_field_name("type")
        t, _ = self.resolve_type(tn)
        d = tn.child_by_field_name("declarator") if tn.type == "type_descriptor" else None
        r = self.layout_of(t, self.text(tn).replace(" ", "").removeprefix("metal::").startswith("packed_"),
                           d is not None and d.type == "abstract_pointer_declarator")
        if r is None:
            self.unsupported(node, f"alignof({self.text(tn)})")
        return r[1]

    def sizeof(self, node) -> int:
        """``sizeof(T)`` / ``sizeof expr`` in bytes (Metal's layout: a 3-vector as a 4-vector)."""
        def size_of(t, packed=False):
            r = self.layout_of(t, packed)
            if r is None:
                self.unsupported(node, f"sizeof of a {getattr(t, 'name', t)}")
            return r[0]
        tn = node.child_by_field_name("type")
        if tn is not None:
            t, _ = self.resolve_type(tn)
            # sizeof(packed_float3) is 12: the packed types resolve to their vectors
            return size_of(t, self.text(tn).replace(" ", "").removeprefix("metal::").startswith("packed_"))
        v = node.child_by_field_name("value")
        while v.type == "parenthesized_expression":
            v = v.named_children[-1]
        if v.type in ("string_literal", "concatenated_string"):
            import ast
            return len(ast.literal_eval(self.text(v)).encode()) + 1
        if v.type in ("identifier", "type_identifier", "primitive_type") and self.is_type_name(v):
            return size_of(self.resolve_type(v)[0],         # sizeof(T): the grammar saw an expression
                           self.text(v).replace(" ", "").removeprefix("metal::").startswith("packed_"))
        if v.type == "identifier":
            sym = self.lookup(self.text(v))
            if isinstance(sym, Buf) and sym.shape:
                n = 1
                for d in sym.shape:
                    n *= d
                return n * sym.elem.itemsize
            if isinstance(sym, MatPtr) and sym.dims != (None,):        # a matrix, an array of them, a reference
                return sym.mt.size * (sym.dims[0] if sym.dims else 1)
            if isinstance(sym, Ptr):
                return 8
        if self.has_matrices and self.mat_type_of(v) is not None:
            return self.mat_type_of(v).size                   # sizeof(*M), sizeof(a * b)
        if self.ptr_rank(v) is not None:
            self.unsupported(node, f"sizeof of '{self.quote(v)}'")
        pre, e = self.with_pre(lambda: self.expr(v))     # unevaluated: only its type counts
        return size_of(e.type)

    def vector_valued(self, node) -> bool:
        """Whether ``node`` may be a vector value whose component ``node[i]`` reads: an element
        or dereference (as before), a call returning a value or reference (``t.frag_at(i, j)``),
        a member of a named object (``s.w``) or parentheses around one of these; decided
        without translating ``node`` (``b[1].q``, an array member in memory, is not one)."""
        while node.type == "parenthesized_expression" and node.named_children:
            node = node.named_children[-1]
        if node.type in ("subscript_expression", "pointer_expression"):
            return True
        if node.type == "call_expression":
            return self.call_returns(node) in ("value", "ref")
        if node.type == "field_expression" and node.child_by_field_name("argument").type in ("identifier", "this"):
            try:
                if isinstance(self.member_symbol(node), ir.Var):
                    return True
            except MetalbenchError:
                return False
        return self.is_vector_member(node)          # pp[i].q, s[t].v: a vector member in memory

    def vector_probe(self, node) -> bool:
        """Whether ``node`` translates to a vector value (probed: nothing it emits is kept; an
        expression that does not translate is no vector, and its own error comes later)."""
        try:
            v = self.probe(lambda: self.expr(node))
        except MetalbenchError:
            return False
        return isinstance(getattr(v, "type", None), T.VectorType)

    def vector_logical(self, op, a, b, sp):
        """MSL's ``!v``, ``a && b``, ``a || b`` on vectors: component-wise, a bool vector (a
        scalar operand is broadcast).

        >>> from metalbench.frontend.msl import translate_kernel
        >>> from metalbench import ir, types as T
        >>> k = translate_kernel("k", "bool2 v = bool2(true, false);\\nbool2 w = !v || v;\\nout[0] = all(w);", "",
        ...                      inputs=[], outputs=[("out", T.bool_, 1)])
        >>> "bool2" in ir.dump(k.body)
        True
        """
        n = next(x.type.n for x in (a, b) if x is not None and isinstance(x.type, T.VectorType))
        if any(x is not None and isinstance(x.type, T.VectorType) and x.type.n != n for x in (a, b)):
            raise KernelTypeError(f"'{op}' of vectors of {a.type.n} and {b.type.n} components", sp)
        a = self.sem.once(a, sp)
        b = self.sem.once(b, sp) if b is not None else None

        def comp(x, k):
            v = self.sem.vector_index(x, k, sp) if isinstance(x.type, T.VectorType) else x
            return self.sem.to_bool(v, sp)
        if op == "!":
            parts = [self.sem.unop("!", comp(a, k), sp) for k in range(n)]
        else:
            parts = [self.sem.logical("and" if op == "&&" else "or", comp(a, k), comp(b, k), sp) for k in range(n)]
        return ir.VecCons(T.vector_of(T.bool_, n), parts, span=sp)

    def vector_element(self, v, inode, sp):
        """``v[i]`` of a vector: a component, or for a run-time ``i`` a selection among them
        (``v`` evaluated once; a constant ``i`` of a vector read component by component
        reads that component alone)."""
        ie = self.sem.index(self.expr(inode), sp)
        i = const_value(ie)
        if i is not None:
            return self.sem.component_read(v if isinstance(v, (ir.Var, ir.VecCons)) else self.sem.once(v, sp),
                                           int(i), sp)
        v = self.sem.once(v, sp)
        ie = self.sem.once(ie, sp)
        e = self.sem.vector_index(v, v.type.n - 1, sp)
        for c in range(v.type.n - 2, -1, -1):
            cond = self.sem.binop("==", ie, ir.Const(c, T.int32, span=sp), sp)
            e = self.sem.select(cond, self.sem.vector_index(v, c, sp), e, sp)
        return e

    def paren_type(self, node):
        """The type ``(T)`` names when ``node`` is a parenthesised type name that the C++
        grammar read as an expression (``(T)(-1e30f)``, ``(uint)(n * m)``), else None."""
        if node.type != "parenthesized_expression" or len(node.named_children) != 1:
            return None
        inner = node.named_children[0]
        if inner.type not in ("identifier", "qualified_identifier", "type_identifier", "primitive_type"):
            return None
        if inner.type == "qualified_identifier":
            if not self.is_type_name(inner.child_by_field_name("name")):
                return None
        elif not self.is_type_name(inner):
            return None
        t, _ = self.resolve_type(inner)
        return t

    def pointer_binop(self, op, node):
        """``p - q`` (elements between), ``p < q`` ... of two pointers; other uses of a
        pointer as a value are errors."""
        sp = self.sp(node)
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if self.ptr_rank(left) is not None and self.ptr_rank(right) is not None:
            if op == "-":
                return self.sem.view_difference(self.pointer(left), self.pointer(right), sp)
            if op in ir.COMPARE_OPS:
                return self.sem.view_compare(op, self.pointer(left), self.pointer(right), sp)
        self.type_err(node, f"'{self.quote(node)}' is a pointer, not a value",
                      hint="index it (p[i]) or dereference it (*p)")

    def deref(self, arg, node):
        """``(view, 0)`` for ``*arg``."""
        if self.ptr_rank(arg) is None:
            self.type_err(node, f"'{self.quote(arg)}' is not a pointer; only pointers can be "
                          "dereferenced with *")
        v = self.pointer(arg)
        if v.inner:
            self.type_err(node, "*p of a pointer to rows is a row, not a value; index it")
        return v, ir.Const(0, T.int32, span=self.sp(node))

    def shape_index(self, sym, node):
        sp = self.sp(node)
        idx = node.child_by_field_name("indices").named_children
        if len(idx) != 1:
            self.type_err(node, "one index per [] in MSL")
        i = self.index_expr(idx[0])
        return self.shape_at(sym, i, sp)

    def shape_at(self, sym, i, sp):
        c = const_value(i)
        if sym.kind == "strides":
            return ir.StrideOf(sym.buf, self.sem.convert(i, T.int32) if c is None else ir.Const(int(c), T.int32),
                               T.int64, span=sp)
        if c is not None:
            if not 0 <= int(c) < max(sym.ndim, 1):
                raise KernelTypeError(f"{sym.buf}_shape[{int(c)}] is out of range: {sym.buf} has "
                                      f"{sym.ndim} dimensions", sp)
            return ir.ShapeOf(sym.buf, int(c), T.int32, span=sp)
        # a run-time dimension: select among the (statically known) dimensions
        e = ir.ShapeOf(sym.buf, sym.ndim - 1, T.int32, span=sp)
        for d in range(sym.ndim - 2, -1, -1):
            cond = self.sem.binop("==", self.sem.convert(i, T.int32), ir.Const(d, T.int32), sp)
            e = self.sem.select(cond, ir.ShapeOf(sym.buf, d, T.int32, span=sp), e, sp)
        return e

    def name_expr(self, node):
        sp = self.sp(node)
        if node.type == "qualified_identifier":
            v = self.cxx_value(node)             # X::member, decltype(x)::N, ns::value (cxx_decls)
            if v is not None:
                return v
            v = self.mlx_limits(node)
            if v is not None:
                return v
        txt = self.text(node).replace(" ", "")
        name = txt
        if "::" in txt:
            parts = txt.split("::")
            name = parts[-1]
            if parts[0] == "metal" and name in ("numeric_limits",):
                self.unsupported(node, txt)
        sym = self.lookup(name) if "::" not in txt or self.entity_named(node) is None else self.entity_named(node)
        if isinstance(sym, ir.Var):
            return ir.Var(sym.name, sym.type, span=sp)
        if isinstance(sym, CplxVar):
            return sym.value(sp)
        if isinstance(sym, ComplexValue):           # a complex64_t header constant
            return ComplexValue(*(ir.Const(c.value, c.type, span=sp) for c in sym.items), span=sp)
        if hasattr(sym, "cls") and hasattr(sym, "fields") or type(sym).__name__ == "PendingPtr":
            return self.object_as_value(sym, node)          # an object (cxx_objects)
        if isinstance(sym, Ref):
            return self.sem.view_load(self.ref_view(sym, sp), ir.Const(0, T.int32, span=sp), sp)
        if isinstance(sym, ir.Const):
            return ir.Const(sym.value, sym.type, span=sp)
        if isinstance(sym, ElemsRef):
            return ir.MatrixElements(self.lvalue_load(sym.lv, sp), span=sp)
        if isinstance(sym, Ptr):
            self.type_err(node, f"'{name}' is a pointer; index it (p[i]) or dereference it (*p)",
                          hint="a pointer is a value only where a pointer is expected (a pointer "
                               "variable, a pointer argument)")
        if isinstance(sym, Buf):
            self.type_err(node, f"'{name}' is an array; index it, e.g. {name}[i]")
        if isinstance(sym, ShapeArr):
            self.type_err(node, f"'{name}' is an array; index it, e.g. {name}[0]")
        if isinstance(sym, FunctionConstant):
            self.unsupported(node, f"reading the function constant '{name}' (mx.fast.metal_kernel gives "
                                   "a kernel no function constant values)")
        if name in ir.THREAD_ATTRIBUTES and sym is None:
            if not self.in_kernel:
                raise KernelNameError(
                    f"'{name}' is not declared in header functions", sp,
                    hint="MLX declares thread attributes only in the kernel body; pass it as an argument")
            return self.sem.thread_attr(name, sp)
        if name in _TYPED_CONSTS:
            v, t = _TYPED_CONSTS[name]
            return self.sem.const(v, t, sp)
        consts = _CONSTS
        if name in consts:
            v = consts[name]
            t = T.float32 if isinstance(v, float) else (T.uint32 if name == "UINT_MAX" else T.int32)
            return self.sem.const(v, t, sp)
        if txt.startswith("memory_order") or txt.startswith("mem_flags"):
            self.type_err(node, f"'{txt}' is only meaningful as an argument of an atomic or barrier")
        raise KernelNameError(f"use of undeclared identifier '{name}'", sp,
                              hint=self._template_hint(name) or "declare it, or add it to input_names")

    def cast_to(self, t, args, node):
        """``T(args)``, ``(T)x``, ``static_cast<T>(x)`` (see :meth:`Semantics.cast`)."""
        sp = self.sp(node)
        if t == "auto":         # C++23's decay copy, auto(x); Metal's C++ has no such cast
            self.type_err(node, f"'{self.quote(node)}': auto is no type to cast to", hint="name the type: T(x)")
        if isinstance(t, T.MatrixType) and not args:     # simdgroup_float8x8(): value-initialised, zeros
            return ir.MatrixFill(self.sem.const(0, t.elem, sp), t, span=sp)
        if isinstance(t, T.MatrixType):
            return self.matrix_construct(t, args, node)
        if isinstance(t, T.VectorType):
            return self.vec_cons(t, args, node)
        if isinstance(t, ComplexType):
            return self.complex_construct(args, node)
        if len(args) != 1:
            self.type_err(node, f"{t.msl}(...) takes one argument")
        return self.sem.cast(t, args[0], sp)

    def vec_cons(self, t, args, node):
        """The vector constructor ``float4(...)`` (see :meth:`Semantics.vector`)."""
        return self.sem.vector(t, args, self.sp(node))
