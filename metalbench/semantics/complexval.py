"""Complex numbers as values: a pair of real IR values (issue 14).

The IR has no complex type. A complex64/complex128 value in a kernel -- an element of
a complex array, ``1j``, ``complex(a, b)``, a complex argument, what ``cmath.sqrt``
returns -- is a :class:`ComplexValue`: a :class:`~metalbench.semantics.TupleValue` of
two items of one float type, its real and imaginary parts, named ``real`` and ``imag``.
Being a tuple, it travels as tuples do (a local is two locals, a device-function
argument two parameters, a result two hidden thread arrays); its type,
:class:`ComplexType`, is a :class:`TupleType` of its own class, so a complex local
never joins with a tuple. Every backend then sees real arithmetic only (on Metal a
complex64 is a float pair, the float2 lowering). The operators follow NumPy's complex
scalars (Numba's simulator): ``*`` is the textbook product, ``/`` Smith's algorithm
with NumPy's zero divisor, ``**`` CPython's ``_Py_c_pow`` (a constant integer exponent
multiplies), ``abs`` is ``hypot``; ``==``/``!=`` compare both parts::

    >>> from metalbench import ir, types as T
    >>> from metalbench.semantics import Semantics, NUMBA
    >>> sem = Semantics(NUMBA)
    >>> z = ComplexValue(ir.Var("a", T.float32), ir.Var("b", T.float32))
    >>> z.type.name, sem.binop("*", z, z).type.name, sem.binop("+", z, ir.Const(1.0, T.float64)).type.name
    ('complex64', 'complex64', 'complex128')
    >>> ir.dump(sem.binop("*", z, z).real)
    '((a * a) - (b * b))'
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ir
from .. import types as T
from .tuples import TupleType, TupleValue

PART_NAMES = ("real", "imag")


@dataclass(frozen=True)
class ComplexType(TupleType):
    """complex64 (two float32) or complex128 (two float64)."""

    @property
    def part(self) -> T.ScalarType:
        return self.items[0]

    @property
    def name(self) -> str:
        return f"complex{2 * self.part.bits}"


def complex_type(part: T.ScalarType) -> ComplexType:
    """The complex type whose parts are ``part`` (float32 -> complex64; integers and
    float16 widen to float64 / float32 as NumPy's complex(...) does)."""
    if not part.is_float:
        part = T.float64
    elif part.bits < 32:
        part = T.float32
    return ComplexType((part, part), PART_NAMES)


class ComplexValue(TupleValue):
    """A complex value: its two parts (IR expressions of one float type)."""

    def __init__(self, re, im, span=None):
        super().__init__([re, im], names=PART_NAMES, cls=complex, span=span)

    @property
    def real(self):
        return self.items[0]

    @property
    def imag(self):
        return self.items[1]

    @property
    def type(self) -> ComplexType:
        return ComplexType((self.items[0].type, self.items[1].type), PART_NAMES)

    def __repr__(self) -> str:
        return f"ComplexValue({self.items[0]!r}, {self.items[1]!r})"


def is_complex(e) -> bool:
    return isinstance(e, ComplexValue)


def storage_elem(t):
    """The scalar type memory holds ``t`` as: a vector's element, a complex number's part
    (a complex64 is two float32 in memory, real first)."""
    return t.part if isinstance(t, ComplexType) else T.elem_of(t)


def _part_type(t):
    return t.part if isinstance(t, ComplexType) else t


class ComplexSemantics:
    """Complex operators (mixed into :class:`~metalbench.semantics.Semantics` ahead of the
    core, which they fall back to for real operands)."""

    # -- constants and conversions -----------------------------------------------------
    def complex_const(self, value: complex, t: ComplexType | None = None, span=None) -> ComplexValue:
        """A complex constant (Python's ``1j`` is complex128)."""
        t = t or complex_type(T.float64)
        return ComplexValue(self.const(float(value.real), t.part, span), self.const(float(value.imag), t.part, span),
                            span=span)

    def make_complex(self, re, im=None, span=None, t: ComplexType | None = None) -> ComplexValue:
        """``complex(re, im)`` (``im`` None: 0), parts in ``t``'s float type or the
        common float type of the parts."""
        for x in (re, im):
            if x is not None:
                if is_complex(x):
                    raise self.error("complex(a, b) takes real parts here", span)
                self._need_value(x, span, "a part of a complex number")
                if isinstance(x.type, T.VectorType):
                    raise self.error(f"a {x.type.name} vector cannot be part of a complex number", span)
        if t is None:
            pt = re.type if im is None else self.rules.arith(re.type, im.type)
            t = complex_type(self.rules.arith(pt, T.float32) if pt.is_float else T.float64)
        im = self.const(0.0, t.part, span) if im is None else self.convert(im, t.part, span)
        return ComplexValue(self.convert(re, t.part, span), im, span=span)

    def complex_common(self, a, b, span=None) -> ComplexType:
        """The complex type of ``a op b`` when one side is complex (NumPy's promotion:
        complex64 with float64 or an integer is complex128)."""
        pa, pb = _part_type(a.type), _part_type(b.type)
        for p in (pa, pb):
            if not isinstance(p, T.ScalarType):
                raise self.error(f"cannot combine a complex number with {getattr(p, 'name', 'no value')}", span)
        return complex_type(self.rules.arith(pa, pb) if pa.is_float or pb.is_float else T.float64)

    def convert(self, e, t, span=None):
        if isinstance(t, ComplexType):
            if is_complex(e):
                if e.type == t:
                    return e
                return ComplexValue(self.convert(e.real, t.part, span), self.convert(e.imag, t.part, span),
                                    span=span or e.span)
            if self._mlx() and isinstance(getattr(e, "type", None), T.VectorType):
                return self._mlx_from_vector(e, t, span or e.span)
            return self.make_complex(e, None, span or e.span, t)
        if is_complex(e):
            if self._mlx():
                return self._mlx_to_real(e, t, span or e.span)
            raise self.error(f"cannot convert {e.type.name} to {getattr(t, 'name', t)}: the imaginary part "
                             "would be lost", span or e.span, hint="use z.real (or abs(z))")
        return super().convert(e, t, span)

    def cast(self, t, e, span=None):
        if isinstance(t, ComplexType) or is_complex(e):
            return self.convert(e, t, span)
        return super().cast(t, e, span)

    def to_bool(self, e, span=None):
        if is_complex(e) and self._mlx():
            return self.to_bool(e.real, span)        # complex.h's operator U(): the real part
        if is_complex(e):
            return self.binop("!=", e, self.complex_const(0j, e.type, span), span)
        return super().to_bool(e, span)

    def select(self, cond, a, b, span=None):
        if is_complex(a) or is_complex(b):
            t = self.complex_common(a, b, span) if not self._mlx() else self._mlx_type(a, b, "?:", span)
            a, b = self.convert(a, t, span), self.convert(b, t, span)
            c = self.to_bool(cond, span)
            return ComplexValue(super().select(c, a.real, b.real, span), super().select(c, a.imag, b.imag, span),
                                span=span)
        return super().select(cond, a, b, span)

    # -- operators ---------------------------------------------------------------------
    def unop(self, op, a, span=None):
        if not is_complex(a):
            return super().unop(op, a, span)
        if self._mlx() and op in ("+", "~"):
            raise self.error(f"{op}complex64_t: MLX's complex64_t (mlx/backend/metal/kernels/complex.h) has no unary "
                             f"{op}, so Metal rejects it (an ambiguous call)", span)
        if op == "+":
            return a
        if op == "-":
            return ComplexValue(super().unop("-", a.real, span), super().unop("-", a.imag, span), span=span)
        if op in ("!", "not"):
            return super().unop("!", self.to_bool(a, span), span)
        raise self.error(f"the unary {op} operator does not apply to complex numbers", span)

    def binop(self, op, a, b, span=None):
        if not (is_complex(a) or is_complex(b)):
            return super().binop(op, a, b, span)
        if op in ("&&", "||", "and", "or"):
            return self.logical({"&&": "and", "||": "or"}.get(op, op), a, b, span)
        if self._mlx():
            return self._mlx_binop(op, a, b, span)
        t = self.complex_common(a, b, span)
        if op == "**":
            return self.complex_power(a, b, t, span)
        a, b = self.convert(a, t, span), self.convert(b, t, span)
        B = super().binop
        if op in ("==", "!="):
            c = self.logical("and", B("==", a.real, b.real, span), B("==", a.imag, b.imag, span), span)
            return c if op == "==" else super().unop("!", c, span)
        if op in ("+", "-"):
            return ComplexValue(B(op, a.real, b.real, span), B(op, a.imag, b.imag, span), span=span)
        if op == "*":
            a, b = self._once_parts(a, span), self._once_parts(b, span)
            return ComplexValue(B("-", B("*", a.real, b.real, span), B("*", a.imag, b.imag, span), span),
                                B("+", B("*", a.real, b.imag, span), B("*", a.imag, b.real, span), span), span=span)
        if op == "/":
            return self._complex_divide(self._once_parts(a, span), self._once_parts(b, span), t, span)
        raise self.error(f"the {op} operator does not apply to complex numbers", span,
                         hint="complex numbers have + - * / ** == != (compare abs(z) or z.real to order them)")

    # -- MLX's complex64_t (rules.complex_model == "mlx": MSL bodies) --------------------
    # mlx/backend/metal/kernels/complex.h: a struct {float real, imag}; constructors from a
    # scalar (imag 0), two floats and a float2; conversions to a scalar (the real part) and to
    # float2; + - with complex or scalar operands, * between complex values, / with a complex
    # divisor (the textbook quotient), unary -, == and a lexicographic < > <= >=. What it
    # lacks (complex * scalar, complex / scalar, !=, *=, ...) Metal rejects: an error here.
    def _mlx(self) -> bool:
        return getattr(self.rules, "complex_model", "numpy") == "mlx"

    def once(self, e, span=None):
        if is_complex(e) and self._mlx():           # (a front end whose temporaries are real)
            return ComplexValue(super().once(e.real, span), super().once(e.imag, span), span=e.span)
        return super().once(e, span)

    def _mlx_type(self, a, b, op, span) -> ComplexType:
        for x in (a, b):
            if not is_complex(x) and not isinstance(getattr(x, "type", None), T.ScalarType):
                raise self.error(f"complex64_t {op} {getattr(x.type, 'name', 'no value')}: MLX's complex64_t "
                                 "combines with complex64_t and scalars only", span)
        return complex_type(T.float32)

    def _mlx_from_vector(self, e, t, span):
        if e.type != T.vector_of(t.part, 2):
            raise self.error(f"a {e.type.name} cannot become a complex64_t: MLX's complex64_t converts from "
                             f"scalars and {t.part.msl}2 only", span)
        e = self.once(e, span)
        return ComplexValue(self.component(e, "x", span), self.component(e, "y", span), span=span)

    def _mlx_to_real(self, e, t, span):
        if isinstance(t, T.VectorType) and t == T.vector_of(e.type.part, 2):
            e = self._once_parts(e, span)
            return self.vector(t, [e.real, e.imag], span)
        if not isinstance(t, T.ScalarType):
            raise self.error(f"a complex64_t cannot become a {getattr(t, 'name', t)}: MLX's complex64_t "
                             f"converts to scalars (its real part) and {e.type.part.msl}2 only", span)
        return self.convert(e.real, t, span)      # complex.h's operator U(): static_cast<U>(real)

    def _mlx_binop(self, op, a, b, span):
        t = self._mlx_type(a, b, op, span)
        ca, cb = is_complex(a), is_complex(b)
        B, p = super().binop, t.part
        if ca:
            a = self._once_parts(a, span)
        else:
            a = self.once(self.convert(a, p, span), span)    # static_cast<T>(scalar)
        if cb:
            b = self._once_parts(b, span)
        else:
            b = self.once(self.convert(b, p, span), span)
        if op in ("+", "-"):
            if ca and cb:
                return ComplexValue(B(op, a.real, b.real, span), B(op, a.imag, b.imag, span), span=span)
            if ca:          # {a.real op b, a.imag}
                return ComplexValue(B(op, a.real, b, span), a.imag, span=span)
            # {a + b.real, b.imag} / {a - b.real, -b.imag}
            return ComplexValue(B(op, a, b.real, span), b.imag if op == "+" else super().unop("-", b.imag, span),
                                span=span)
        if op == "*" and ca and cb:
            return ComplexValue(B("-", B("*", a.real, b.real, span), B("*", a.imag, b.imag, span), span),
                                B("+", B("*", a.real, b.imag, span), B("*", a.imag, b.real, span), span), span=span)
        if op == "/" and cb:
            denom = self.once(B("+", B("*", b.real, b.real, span), B("*", b.imag, b.imag, span), span), span)
            if ca:
                x = B("+", B("*", a.real, b.real, span), B("*", a.imag, b.imag, span), span)
                y = B("-", B("*", a.imag, b.real, span), B("*", a.real, b.imag, span), span)
            else:
                x = B("*", a, b.real, span)
                y = B("*", super().unop("-", a, span), b.imag, span)
            return ComplexValue(B("/", x, denom, span), B("/", y, denom, span), span=span)
        if op in ("==", "<", ">", "<=", ">=") and ca and cb:
            if op == "==":
                return self.logical("and", B("==", a.real, b.real, span), B("==", a.imag, b.imag, span), span)
            if op in ("<", "<="):
                a, b = b, a
            last = ">" if op in ("<", ">") else ">="
            return self.logical("or", B(">", a.real, b.real, span),
                                self.logical("and", B("==", a.real, b.real, span), B(last, a.imag, b.imag, span),
                                             span), span)
        lt = "complex64_t" if ca else a.type.msl
        rt = "complex64_t" if cb else b.type.msl
        hint = {"*": "multiply by a complex64_t (c * complex64_t(s)), or scale c.real and c.imag",
                "/": "divide c.real and c.imag, or divide by a complex64_t",
                "!=": "write !(a == b)"}.get(op, "compare complex64_t values with each other" if op in
                                             ("==", "<", ">", "<=", ">=") else None)
        if op == "%" and ca and cb:
            raise self.error("complex64_t % complex64_t is not supported by the simulator", span)
        raise self.error(f"{lt} {op} {rt}: MLX's complex64_t (mlx/backend/metal/kernels/complex.h) has no such "
                         "operator, so Metal rejects it", span, hint=hint)

    def _once_parts(self, z, span):
        return ComplexValue(self.once(z.real, span), self.once(z.imag, span), span=span)

    def _call(self, name, args, t, span):
        return ir.Call(name, args, t, span=span)

    def _complex_divide(self, a, b, t, span):
        """Smith's algorithm as NumPy divides complex scalars (the scale ``1/denominator``
        multiplies; a zero divisor gives ``a.real/0``, ``a.imag/0``: inf or nan), so the
        simulator matches Numba's bit for bit."""
        B, p = super().binop, t.part
        abr = self.once(self._call("fabs", [b.real], p, span), span)
        abi = self.once(self._call("fabs", [b.imag], p, span), span)
        one = self.const(1.0, p, span)
        # |br| >= |bi|: ratio = bi/br
        r1 = self.once(B("/", b.imag, b.real, span), span)
        s1 = self.once(B("/", one, B("+", b.real, B("*", b.imag, r1, span), span), span), span)
        re1 = B("*", B("+", a.real, B("*", a.imag, r1, span), span), s1, span)
        im1 = B("*", B("-", a.imag, B("*", a.real, r1, span), span), s1, span)
        # otherwise (and for NaN): ratio = br/bi
        r2 = self.once(B("/", b.real, b.imag, span), span)
        s2 = self.once(B("/", one, B("+", b.imag, B("*", b.real, r2, span), span), span), span)
        re2 = B("*", B("+", B("*", a.real, r2, span), a.imag, span), s2, span)
        im2 = B("*", B("-", B("*", a.imag, r2, span), a.real, span), s2, span)
        zero = self.const(0.0, p, span)
        both0 = self.logical("and", B("==", abr, zero, span), B("==", abi, zero, span), span)
        ge = B(">=", abr, abi, span)
        S = super().select
        re = S(both0, B("/", a.real, abr, span), S(ge, re1, re2, span), span)
        im = S(both0, B("/", a.imag, abr, span), S(ge, im1, im2, span), span)
        return ComplexValue(re, im, span=span)

    def complex_power(self, a, b, t, span):
        """``a ** b`` with a complex side. A constant integer exponent (|n| <= 100)
        multiplies by repeated squaring (CPython's ``c_powi``); otherwise CPython's
        ``_Py_c_pow``: ``|a|**br / exp(arg(a)*bi)`` at angle ``arg(a)*br + bi*log|a|``,
        1 for a zero exponent and 0 for a zero base."""
        n = None
        if not is_complex(b) and isinstance(b, ir.Const) and float(b.value).is_integer():
            n = int(b.value)
        elif is_complex(b) and all(isinstance(x, ir.Const) for x in b.items) and b.imag.value == 0 \
                and float(b.real.value).is_integer():
            n = int(b.real.value)
        a = self.convert(a, t, span)
        if n is not None and abs(n) <= 100:
            return self._complex_int_power(a, n, t, span)
        b = self.convert(b, t, span)
        a, b = self._once_parts(a, span), self._once_parts(b, span)
        B, p = super().binop, t.part
        C = lambda name, *args: self._call(name, list(args), p, span)    # noqa: E731
        vabs = self.once(C("hypot", a.real, a.imag), span)
        at = self.once(C("atan2", a.imag, a.real), span)
        length = B("/", C("pow", vabs, b.real), C("exp", B("*", at, b.imag, span)), span)
        phase = B("+", B("*", at, b.real, span), B("*", b.imag, C("log", vabs), span), span)
        length, phase = self.once(length, span), self.once(phase, span)
        re, im = B("*", length, C("cos", phase), span), B("*", length, C("sin", phase), span)
        zero, one = self.const(0.0, p, span), self.const(1.0, p, span)
        S = super().select
        b0 = self.logical("and", B("==", b.real, zero, span), B("==", b.imag, zero, span), span)
        a0 = self.logical("and", B("==", a.real, zero, span), B("==", a.imag, zero, span), span)
        re = S(b0, one, S(a0, zero, re, span), span)
        im = S(b0, zero, S(a0, zero, im, span), span)
        return ComplexValue(re, im, span=span)

    def _complex_int_power(self, a, n: int, t, span):
        r, e, base = None, abs(n), a
        while e:
            if e & 1:
                r = base if r is None else self.binop("*", r, base, span)
            e >>= 1
            if e:
                base = self._once_parts(self.binop("*", base, base, span), span)
                if r is not None:
                    r = self._once_parts(r, span)
        if r is None:
            r = self.complex_const(1 + 0j, t, span)
        if n < 0:
            r = self._once_parts(r, span)
            q = self.binop("/", self.complex_const(1 + 0j, t, span), r, span)
            zero = self.binop("==", r, self.complex_const(0j, t, span), span)
            r = self.select(zero, self.complex_const(complex(float("nan"), float("nan")), t, span), q, span)
        return r

    def complex_abs(self, z, span=None):
        """``abs(z)``: ``hypot(z.real, z.imag)`` (as Python's and NumPy's)."""
        return self._call("hypot", [z.real, z.imag], z.type.part, span)

    def conjugate(self, z, span=None):
        """``z.conjugate()``; a real ``x.conjugate()`` is ``x`` (NumPy's)."""
        if not is_complex(z):
            return z
        return ComplexValue(z.real, super().unop("-", z.imag, span), span=span)
