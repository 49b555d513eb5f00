"""MLX's ``complex64_t`` in MSL bodies: complex64 buffers, locals, arrays, members and calls.

``mx.fast.metal_kernel`` declares a complex64 array ``const device complex64_t* x`` (an
output ``device complex64_t* out``); ``complex64_t`` is the struct of MLX's
``mlx/backend/metal/kernels/complex.h`` (``{float real; float imag;}`` with constructors,
conversions and operators). Its values here are the semantic layer's complex values
(:class:`~metalbench.semantics.ComplexValue`, two float32 IR expressions) under its MLX
model (``rules.complex_model == "mlx"``: complex.h's operators and conversions); this mixin
maps the syntax onto them:

- a complex64 buffer is float32 storage (``ir.Param.complex``) read through a view whose
  element type is the complex type (``semantics/views.py``: two float accesses per element);
  ``x_shape``/``x_strides`` count complex elements as MLX's do;
- a local ``complex64_t c`` is two float locals (:class:`CplxVar`); arrays of complex64_t
  (thread, threadgroup, constant) are float arrays of twice the length under such a view;
- ``c.real``/``c.imag`` read and write one part; ``complex64_t(a, b)``, ``{a, b}``,
  ``complex64_t(x)``, ``complex64_t(float2)`` construct; a header function takes and returns
  complex values as ``float2`` (its parts) and sees them as complex locals.

    >>> from metalbench.frontend.msl import translate_kernel
    >>> from metalbench import ir, types as T
    >>> k = translate_kernel("k", "complex64_t c = x[0]; c.imag = 0.0f; out[0] = c * c;",
    ...                      inputs=[("x", T.complex64, 1)], outputs=[("out", T.complex64, 1)])
    >>> print(ir.dump(k.body))
    float32 c_re = x[0]
    float32 c_im = x[1]
    c_im = 0.0
    float32 _t1 = ((c_re * c_re) - (c_im * c_im))
    float32 _t2 = ((c_re * c_im) + (c_im * c_re))
    out[0] = _t1
    out[1] = _t2
"""
from __future__ import annotations

from dataclasses import dataclass
from dataclasses import replace as _r

from ... import ir
from ... import types as T
from ...semantics import ComplexType, ComplexValue, complex_type, is_complex
from ...semantics.folding import fold

#: MLX's complex64_t
CF32 = complex_type(T.float32)
#: the names complex.h gives it (complex_t<float> since MLX 0.32.1)
NAMES = ("complex64_t", "complex_t<float>", "mlx::core::complex64_t")
_PARTS = ("real", "imag")


@dataclass
class CplxVar:
    """A ``complex64_t`` local: its real and imaginary parts, two float32 variables."""
    re: ir.Var
    im: ir.Var
    type = CF32             # (what code taking a local's type sees)

    @property
    def name(self) -> str:
        return self.re.name

    def value(self, sp=None) -> ComplexValue:
        return ComplexValue(ir.Var(self.re.name, self.re.type, span=sp), ir.Var(self.im.name, self.im.type, span=sp),
                            span=sp)


def complex_of(t):
    """``t`` with MLX's complex64 dtype (a template argument, a kernel argument's type) read
    as the complex type."""
    return CF32 if t is T.complex64 else t


class ComplexMixin:
    """complex64_t: a part of :class:`~metalbench.frontend.msl.Translator`."""

    # -- kernel parameters ------------------------------------------------------------------
    def complex_param(self, nm, t, nd, is_output, sp=None):
        """(IR parameter, buffer symbol) of a complex64 kernel argument."""
        if nd == 0:
            raise self.error_at(sp, f"'{nm}' is a 0-d complex64 input (constant complex64_t&): "
                                    "not supported by the simulator; pass a one-element array")
        # (atomic_outputs=True: MLX declares it device atomic<complex64_t>*, which Metal accepts
        # used only through a cast, (device atomic_float*)grid: its float parts, atomically)
        from .symbols import Buf
        p = ir.Param(nm, "buffer", T.float32, nd, is_output=is_output, complex=True)
        return p, Buf(nm, CF32, "device", const=not is_output, ndim=nd)

    def error_at(self, sp, msg):
        from ...errors import KernelTypeError
        return KernelTypeError(msg, sp)

    def names_complex(self, tn) -> bool:
        """Whether type node ``tn`` names complex64_t (or a template parameter bound to it)."""
        from ...errors import MetalbenchError
        try:
            return tn is not None and isinstance(self.resolve_type(tn)[0], ComplexType)
        except MetalbenchError:
            return False

    # -- locals -------------------------------------------------------------------------------
    def complex_local(self, name, val, sp, scope=None) -> list:
        """``complex64_t name = val;``: two float locals, bound in ``scope`` (the innermost)."""
        val = self.sem.convert(val, CF32, sp)
        re = ir.Var(self.fresh(name + "_re"), T.float32, span=sp)
        im = ir.Var(self.fresh(name + "_im"), T.float32, span=sp)
        (self.scopes[-1] if scope is None else scope)[name] = CplxVar(re, im)
        return [ir.Decl(re, val.real, span=sp), ir.Decl(im, val.imag, span=sp)]

    def local_value(self, var, sp):
        """The value of local ``var`` (an ``ir.Var`` or a :class:`CplxVar`)."""
        return var.value(sp) if isinstance(var, CplxVar) else ir.Var(var.name, var.type, span=sp)

    def local_assign(self, var, value, sp) -> list:
        """``var = value`` for a local (an ``ir.Var`` or a :class:`CplxVar`)."""
        if isinstance(var, CplxVar):
            return self.complex_assign(var, None, None, lambda cur, t: self.sem.convert(value, t, sp), sp)
        return [ir.Assign(ir.Var(var.name, var.type, span=sp), self.sem.convert(value, var.type, sp), span=sp)]

    def assigned_value(self, node, t):
        """The right side of an assignment to a ``t``: a braced list takes ``t`` from it
        (``v = {x, y};``, ``{re, im}`` for a complex64_t: :meth:`braced_value`)."""
        if node.type == "initializer_list":
            return self.braced_value(node, t)
        return self.expr(node)

    def braced_value(self, node, t):
        """The value of the braced list ``node`` copy-list-initialising a ``t`` (an
        assignment's right side, a ``return {a, b};``): a vector's or complex value's
        constructor over the items, a scalar's one item (``{}``: zero)."""
        items = [self.expr(c) for c in node.named_children]
        sp = self.sp(node)
        if isinstance(t, ComplexType):
            return self.complex_construct(items, node)
        if isinstance(t, T.VectorType):
            return self.vec_cons(t, items, node) if items else self.sem.vector(t, [self.sem.const(0, t.elem, sp)], sp)
        if isinstance(t, T.ScalarType) and len(items) <= 1:
            return items[0] if items else self.sem.const(0, t, sp)
        self.type_err(node, f"a {{...}} list of {len(items)} values cannot initialise a {getattr(t, 'msl', t)}")

    def complex_init(self, init, sp):
        """The value a ``complex64_t`` declaration's initialiser gives: none (complex.h's
        default constructor: 0), ``= v``, ``(a, b)``, ``{a, b}``, ``{}``."""
        zero = self.sem.const(0.0, T.float32, sp)
        if init is None:
            return ComplexValue(zero, zero, span=sp)
        if init.type in ("initializer_list", "argument_list"):
            return self.complex_construct([self.expr(c) for c in init.named_children], init)
        return self.expr(init)

    def complex_construct(self, args, node):
        """``complex64_t(args)`` / ``complex64_t{args}``: complex.h's constructors."""
        sp = self.sp(node)
        if not args:
            zero = self.sem.const(0.0, T.float32, sp)
            return ComplexValue(zero, zero, span=sp)
        if len(args) == 1:
            return self.sem.convert(args[0], CF32, sp)
        if len(args) == 2 and not any(is_complex(a) or isinstance(a.type, T.VectorType) for a in args):
            return self.sem.make_complex(args[0], args[1], sp, CF32)
        self.type_err(node, "complex64_t(...) takes a value, or its real and imaginary parts (two numbers)")

    def complex_assign(self, sym: CplxVar, lhs, op, value, sp) -> list:
        """``c = v`` / ``c += v`` on a complex local (``value(cur, t)`` gives the new value)."""
        new = self.sem.once(value(sym.value(sp), CF32), sp)
        return [ir.Assign(ir.Var(sym.re.name, T.float32, span=sp), new.real, span=sp),
                ir.Assign(ir.Var(sym.im.name, T.float32, span=sp), new.imag, span=sp)]

    def complex_decl(self, name, init, top, d, sp) -> list:
        """``complex64_t name ...;``: a local, or (``top``) a header constant."""
        val = self.complex_init(init, sp)
        if top:
            val = self.sem.convert(val, CF32, sp)
            c = ComplexValue(fold(val.real), fold(val.imag))
            if not all(isinstance(x, ir.Const) for x in c.items):
                self.type_err(d, "header constants must have a compile-time constant value")
            self.global_syms.ns.members[name] = c
            return []
        return self.complex_local(name, val, sp)

    def complex_compound_check(self, op, lhs):
        """complex.h defines ``+=`` only: ``c -= v``, ``c *= v``, ``c++`` (op ``++``) ...
        Metal rejects."""
        if op != "+":
            what = op if op in ("++", "--") else op + "="
            self.type_err(lhs, f"'{what}' on a complex64_t: MLX's complex64_t (mlx/backend/metal/kernels/"
                               f"complex.h) has no operator{what} (only +=), so Metal rejects it",
                          hint=f"write c = c {op[0]} v" if op not in ("++", "--") else "write c = c + 1.0f")

    # -- members --------------------------------------------------------------------------------
    def complex_part(self, value, field, node):
        """``value.real`` / ``value.imag``."""
        if field not in _PARTS:
            self.type_err(node, f"complex64_t has no member '{field}' (it has real and imag)")
        return value.real if field == "real" else value.imag

    def complex_member_assign(self, lhs, op, value, sp):
        """``c.real = v``, ``x[i].imag += v``, ``p->real = v``: one part of a complex local
        or element; None when ``lhs``'s object is no complex value."""
        base = lhs.child_by_field_name("argument")
        field = self.text(lhs.child_by_field_name("field")).strip()
        arrow = self.text(lhs.child_by_field_name("operator")).strip() == "->"
        if base.type == "identifier" and not arrow:
            sym = self.lookup(self.text(base))
            if not isinstance(sym, CplxVar):
                loc = self.complex_location_of_ref(sym, sp)
                if loc is None:
                    return None
                return self.part_store(*loc, field, value, lhs, sp)
            if field not in _PARTS:
                self.type_err(lhs, f"complex64_t has no member '{field}' (it has real and imag)")
            var = sym.re if field == "real" else sym.im
            cur = ir.Var(var.name, T.float32, span=sp)
            return [ir.Assign(cur, value(cur, T.float32), span=sp)]
        if arrow:
            if self.ptr_rank(base) is None:
                return None
            v, i = self.pointer(base), ir.Const(0, T.int32, span=sp)
        elif base.type in ("subscript_expression", "pointer_expression") and self.ptr_rank(
                base.child_by_field_name("argument")) is not None:
            v, i = self.location(base)
        else:
            return None
        if not isinstance(v.type, ComplexType):
            return None
        return self.part_store(v, i, field, value, lhs, sp)

    def complex_location_of_ref(self, sym, sp):
        from .symbols import Ref
        if isinstance(sym, Ref) and isinstance(sym.view.type, ComplexType):
            return self.ref_view(sym, sp), ir.Const(0, T.int32, span=sp)
        return None

    def part_store(self, v, i, field, value, lhs, sp):
        """Store ``value(cur, float)`` to one part of the complex element ``v[i]``."""
        if field not in _PARTS:
            self.type_err(lhs, f"complex64_t has no member '{field}' (it has real and imag)")
        if v.const:
            self.type_err(lhs, f"'{self.quote(lhs)}' is read-only (an input or constant)",
                          hint="write to one of the output_names" if v.space == "device" else None)
        flat = _r(v, type=v.elem, packed=True, inner=())
        at = self.sem.binop("*", self.sem.index(i, sp), ir.Const(2, T.int32), sp)
        at = self.sem.once(self.sem.binop("+", at, ir.Const(_PARTS.index(field), T.int32), sp), sp)
        cur = self.sem.view_load(flat, at, sp)
        return self.sem.view_store(flat, at, value(cur, T.float32), sp)

    # -- header functions -------------------------------------------------------------------------
    def complex_value_param(self, pname, scope, fparams, sig, passing, prologue):
        """A ``complex64_t`` value parameter of a header function: a ``float2`` IR parameter
        (its parts) that the body sees as a complex local."""
        f2 = T.vector_of(T.float32, 2)
        fparams.append(ir.FuncParam(pname, f2))
        sig.append(CF32.name)
        passing.append("complex")
        re, im = ir.Var(pname + "_re", T.float32), ir.Var(pname + "_im", T.float32)
        scope[pname] = CplxVar(re, im)
        p = ir.Var(pname, f2)
        prologue.extend([ir.Decl(re, self.sem.component(p, "x")), ir.Decl(im, self.sem.component(p, "y"))])
        return [pname, re.name, im.name]

    def complex_arg(self, a, sp):
        """The ``float2`` a complex64_t parameter receives for argument ``a`` (a scalar is
        ``complex64_t(a)`` first, as C++ converts it)."""
        return self.sem.convert(self.sem.convert(a, CF32, sp), _F2, sp)

    @staticmethod
    def complex_carrier(t):
        """The IR type a header function's result of type ``t`` has (complex64_t: float2)."""
        return _F2 if isinstance(t, ComplexType) else t

    def complex_result(self, call, ret, sp):
        """A call's value: a complex64_t result from the float2 it returns."""
        if not isinstance(ret, ComplexType):
            return call
        return self.sem.convert(call, CF32, sp)

    def complex_return(self, node, sp):
        """``return v;`` / ``return {re, im};`` in a function returning complex64_t: its float2."""
        if node.type == "initializer_list":
            v = self.complex_construct([self.expr(c) for c in node.named_children], node)
        else:
            v = self.expr(node)
        return self.sem.convert(self.sem.convert(v, CF32, sp), _F2, sp)

    def complex_member(self, node):
        """``z.real`` / ``p->imag`` of a complex value, or None when ``node`` is no such member."""
        field = self.text(node.child_by_field_name("field")).strip()
        base = node.child_by_field_name("argument")
        sp = self.sp(node)
        if self.text(node.child_by_field_name("operator")).strip() == "->":
            if self.ptr_rank(base) is None:
                return None
            v = self.pointer(base)
            if not isinstance(v.type, ComplexType):
                return None
            return self.complex_part(self.sem.view_load(v, ir.Const(0, T.int32, span=sp), sp), field, node)
        if base.type == "identifier":
            sym = self.lookup(self.text(base))
            if isinstance(sym, CplxVar):
                return self.complex_part(sym.value(sp), field, node)
        return None


_F2 = T.vector_of(T.float32, 2)
