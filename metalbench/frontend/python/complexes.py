"""Complex numbers in the Python front end (the Numba layer's complex64/complex128).

A complex value is a :class:`~metalbench.semantics.ComplexValue` (two float parts; the
semantic layer's :mod:`~metalbench.semantics.complexval` types and operates on it). Here:

- elements of complex arrays: a complex array's storage is its real type with a trailing
  dimension of 2 (``numba_compat/complexarg.py``); ``z[i]`` reads the pair at ``2*i``,
  ``z[i] = w`` writes it; ``len(z)``, ``z.shape``, ``z.size`` are the array's own;
  ``cuda.local.array(n, complex128)`` (and shared arrays) are such storage too;
- ``1j``, ``complex(a, b)``, ``np.complex64(x)``/``complex128(x)`` (Numba's types),
  ``z.real``/``z.imag`` (also of real numbers, as in Python), ``z.conjugate()``,
  ``abs(z)``;
- the ``cmath`` functions, device functions written in Python over real math
  (:mod:`.cmathlib`), translated like any device function, so every backend runs them.
"""
from __future__ import annotations

import ast
import cmath

import numpy as np

from ... import ir
from ... import types as T
from ...errors import KernelTypeError
from ...semantics import ComplexType, ComplexValue, TupleValue, complex_type, is_complex
from .specs import BufInfo

_NP_COMPLEX = {np.complex64: T.float32, np.complex128: T.float64}


def complex_type_of(obj) -> ComplexType | None:
    """The complex type ``obj`` names (``complex``, ``np.complex64``, a complex dtype,
    Numba's ``complex64``), or None."""
    hook = getattr(obj, "__metalbench_complex__", None)
    if isinstance(hook, ComplexType):
        return hook
    if obj is complex:
        return complex_type(T.float64)
    if isinstance(obj, type) and obj in _NP_COMPLEX:
        return complex_type(_NP_COMPLEX[obj])
    if isinstance(obj, np.dtype) and obj.kind == "c" and obj.type in _NP_COMPLEX:
        return complex_type(_NP_COMPLEX[obj.type])
    return None


class ComplexMixin:
    """Complex numbers: a part of :class:`~metalbench.frontend.python.FunctionTranslator`."""

    # -- arrays --------------------------------------------------------------------------
    def complex_array(self, info: BufInfo) -> BufInfo:
        """The complex array over storage ``info`` (real parts, trailing dimension 2)."""
        from dataclasses import replace
        return replace(info, ndim=info.ndim - 1, cplx=True,
                       shape=None if info.shape is None else tuple(info.shape[:-1]))

    def complex_storage_info(self, info: BufInfo) -> BufInfo:
        """The storage (real parts, trailing dimension 2) of complex array ``info``."""
        from dataclasses import replace
        two = ir.Const(2, T.int32)
        return replace(info, ndim=info.ndim + 1, cplx=False,
                       shape=None if info.shape is None else tuple(info.shape) + (2,),
                       dims=None if info.dims is None else tuple(info.dims) + (two,),
                       strides=None if info.strides is None else tuple(info.strides) + (ir.Const(1, T.int32),))

    def complex_load(self, info: BufInfo, idx: ir.Expr, span) -> ComplexValue:
        self._plain_complex(info, span)
        idx = self.sem.once(idx, span)
        two = self.sem.binop("*", idx, ir.Const(2, idx.type, span=span), span)
        re = ir.Load(info.name, two, info.elem, span=span)
        im = ir.Load(info.name, self.sem.binop("+", two, ir.Const(1, idx.type, span=span), span), info.elem, span=span)
        return ComplexValue(re, im, span=span)

    def complex_store(self, info: BufInfo, idx: ir.Expr, value, span) -> list:
        self._plain_complex(info, span)
        v = self.sem.convert(value, complex_type(info.elem), span)
        idx = self.sem.once(idx, span)
        two = self.sem.binop("*", idx, ir.Const(2, idx.type, span=span), span)
        return self._pending() + [
            ir.Store(info.name, two, v.real, span=span),
            ir.Store(info.name, self.sem.binop("+", two, ir.Const(1, idx.type, span=span), span), v.imag, span=span)]

    def _plain_complex(self, info: BufInfo, span):
        # a device function's complex array parameter has its own extents (dims): still plain
        if info.offset is not None or info.vec is not None or info.strides is not None:
            raise KernelTypeError("views and slices of complex arrays are not supported; index the array itself",
                                  span, hint="z[i] or z[i, j]; z.real and z.imag are views that work")

    def complex_local_array(self, shape: tuple, ct: ComplexType):
        """(storage shape, element type) of a local/shared array of complex ``ct``."""
        return tuple(shape) + (2,), ct.part

    # -- calls -----------------------------------------------------------------------------
    def complex_call(self, obj, node: ast.Call):
        """``complex(a, b)``, complex type conversions and ``cmath`` functions, or None."""
        ct = complex_type_of(obj)
        if ct is not None:
            return self.complex_cast(ct, node, obj is complex)
        if getattr(obj, "__module__", None) == "cmath" or obj in _CMATH_IDS:
            return self.cmath_call(obj, node)
        return None

    def complex_cast(self, ct: ComplexType, node: ast.Call, python: bool):
        sp = self.span(node)
        if len(node.args) == 1 and isinstance(node.args[0], ast.Starred) and not node.keywords:
            t = self.value_or_tuple(node.args[0].value)         # complex(*cmath.polar(z))
            args = list(t.items) if isinstance(t, TupleValue) and not is_complex(t) else None
            if args is None or not 1 <= len(args) <= 2:
                raise self.err(KernelTypeError, "complex(*t) takes a tuple of one or two numbers", node)
        elif node.keywords or not 1 <= len(node.args) <= (2 if python else 1):
            raise self.err(KernelTypeError, "complex(real, imag) takes one or two numbers" if python else
                           f"{ct.name}(x) converts one value", node)
        else:
            args = [self.expr(a) for a in node.args]
        if len(args) == 2:
            if is_complex(args[0]) or is_complex(args[1]):
                raise self.err(KernelTypeError, "complex(a, b) of complex numbers is not supported", node)
            return self.sem.make_complex(args[0], args[1], sp)
        if is_complex(args[0]) and python:
            return args[0]
        return self.sem.convert(args[0], ct, sp)

    def conjugate_call(self, node: ast.Call):
        """``z.conjugate()``."""
        if node.args or node.keywords:
            raise self.err(KernelTypeError, "conjugate() takes no arguments", node)
        v = self.expr(node.func.value)
        if isinstance(v, ir.Expr) and not is_complex(v) and not isinstance(getattr(v, "type", None), T.ScalarType):
            raise self.err(KernelTypeError, f"{ast.unparse(node.func.value)} has no conjugate()", node)
        return self.sem.conjugate(v, self.span(node))

    def real_part(self, v, attr: str, node):
        """``x.real`` / ``x.imag`` of a real number (Python's: ``x`` and 0)."""
        if attr == "real":
            return v
        return self.sem.const(0, v.type, self.span(node))

    def cmath_call(self, obj, node: ast.Call):
        from . import cmathlib
        name = getattr(obj, "__name__", "")
        sp = self.span(node)
        if name in ("pi", "e", "tau", "inf", "nan") or not callable(obj):
            return self.const(obj, node)
        if node.keywords:
            raise self.err(KernelTypeError, f"cmath.{name}() takes no keyword arguments", node)
        return self.cmath_apply(name, [self.expr(a) for a in node.args], node)

    def cmath_apply(self, name: str, args: list, node):
        """``cmath.<name>(*args)`` on translated values."""
        from . import cmathlib
        sp = self.span(node)
        nargs = {"log": (1, 2), "rect": (2,)}.get(name, (1,))
        if len(args) not in nargs:
            raise self.err(KernelTypeError, f"cmath.{name}() takes {' or '.join(map(str, nargs))} argument(s)", node)
        if name == "rect":
            r, phi = args
            if is_complex(r) or is_complex(phi):
                raise self.err(KernelTypeError, "cmath.rect(r, phi) takes real numbers", node)
            ct = self.sem.make_complex(r, phi, sp).type
            return self.sem.convert(self.library_call(cmathlib.rect, [r, phi], node), ct, sp)
        z = args[0]
        ct = z.type if is_complex(z) else complex_type(self.sem.rules.arith(z.type, T.float32)
                                                       if z.type.is_float else T.float64)
        z = self.sem.convert(z, ct, sp)
        if name in ("isnan", "isinf", "isfinite"):
            parts = [ir.Call(name, [p], T.bool_, span=sp) for p in z.items]
            op = "and" if name == "isfinite" else "or"
            return self.sem.logical(op, parts[0], parts[1], sp)
        if name == "phase":
            return ir.Call("atan2", [z.imag, z.real], ct.part, span=sp)
        if name == "polar":
            from ...semantics import TupleValue
            z = ComplexValue(self.sem.once(z.real, sp), self.sem.once(z.imag, sp), span=sp)
            return TupleValue([self.sem.complex_abs(z, sp), ir.Call("atan2", [z.imag, z.real], ct.part, span=sp)],
                              span=sp)
        if name == "log" and len(args) == 2:
            base = args[1]
            bt = base.type if is_complex(base) else ct
            t = self.sem.complex_common(z, self.sem.convert(base, bt, sp), sp)
            r = self.library_call(cmathlib.logb, [self.sem.convert(z, t, sp), self.sem.convert(base, t, sp)], node)
            return self.sem.convert(r, t, sp)
        fn = getattr(cmathlib, name, None)
        if fn is None:
            raise self.err(KernelTypeError, f"cmath.{name} is not supported in kernels", node,
                           hint="kernels support cmath's exp, log, log10, sqrt, trigonometric and hyperbolic "
                                "functions and their inverses, phase, polar, rect, isnan, isinf, isfinite")
        return self.sem.convert(self.library_call(fn, [z], node), ct, sp)

    def complex_ufunc(self, uf, args: list, node):
        """A NumPy ufunc on scalars of which one is complex, as NumPy's complex loops
        compute it: arithmetic and ``==``/``!=`` as the operators, orderings and
        maximum/minimum lexicographic (NumPy's ``CGT``/``CLT``: a NaN part makes them
        false), logical ufuncs on ``z != 0``, the math ufuncs as :mod:`cmath`'s."""
        sem, sp, name = self.sem, self.span(node), uf.__name__
        arith = {"add": "+", "subtract": "-", "multiply": "*", "true_divide": "/", "divide": "/", "power": "**",
                 "equal": "==", "not_equal": "!="}
        if name in arith:
            return self.binop(arith[name], args[0], args[1], node)
        t = None
        for a in args:
            if is_complex(a) or isinstance(getattr(a, "type", None), T.ScalarType):
                t = a.type if is_complex(a) and t is None else t
        cargs = [sem.convert(a, sem.complex_common(a, args[0], sp) if not is_complex(a) else a.type, sp)
                 for a in args]
        if name in ("greater", "greater_equal", "less", "less_equal", "maximum", "minimum", "fmax", "fmin"):
            x, y = [ComplexValue(sem.once(c.real, sp), sem.once(c.imag, sp), span=sp) for c in cargs]
            t = sem.complex_common(x, y, sp)
            x, y = sem.convert(x, t, sp), sem.convert(y, t, sp)
            op = {"greater": ">", "greater_equal": ">=", "less": "<", "less_equal": "<=", "maximum": ">=",
                  "fmax": ">=", "minimum": "<=", "fmin": "<="}[name]
            strict = op[0] + ("" if len(op) == 1 else "")
            no_nan = sem.logical("and", sem.unop("!", sem.builtin("isnan", [x.imag], sp), sp),
                                 sem.unop("!", sem.builtin("isnan", [y.imag], sp), sp), sp)
            c = sem.logical("or", sem.logical("and", sem.binop(strict, x.real, y.real, sp), no_nan, sp),
                            sem.logical("and", sem.binop("==", x.real, y.real, sp), sem.binop(op, x.imag, y.imag, sp),
                                        sp), sp)
            if name in ("greater", "greater_equal", "less", "less_equal"):
                return c
            nan_x = sem.logical("or", sem.builtin("isnan", [x.real], sp), sem.builtin("isnan", [x.imag], sp), sp)
            if name in ("fmax", "fmin"):        # NaN loses: the other operand unless both are NaN
                nan_y = sem.logical("or", sem.builtin("isnan", [y.real], sp), sem.builtin("isnan", [y.imag], sp), sp)
                return sem.select(sem.logical("or", sem.logical("and", c, sem.unop("!", nan_x, sp), sp), nan_y, sp),
                                  x, y, sp)
            return sem.select(sem.logical("or", c, nan_x, sp), x, y, sp)
        if name in ("logical_and", "logical_or", "logical_xor"):
            a, b = (sem.to_bool(c, sp) for c in cargs)
            return sem.binop({"logical_and": "&", "logical_or": "|", "logical_xor": "!="}[name], a, b, sp)
        if name == "logical_not":
            return sem.unop("!", cargs[0], sp)
        if name in ("negative", "positive"):
            return sem.unop("-" if name == "negative" else "+", cargs[0], sp)
        if name == "square":
            return sem.binop("*", cargs[0], cargs[0], sp)
        if name == "absolute":
            return sem.complex_abs(cargs[0], sp)
        if name in ("conjugate", "conj"):
            return sem.conjugate(cargs[0], sp)
        if name == "reciprocal":
            return sem.binop("/", sem.complex_const(1 + 0j, cargs[0].type, sp), cargs[0], sp)
        if name == "log2":
            r = self.cmath_apply("log", cargs, node)
            ln2 = sem.const(0.6931471805599453, r.type.part, sp)
            return ComplexValue(sem.binop("/", r.real, ln2, sp), sem.binop("/", r.imag, ln2, sp), span=sp)
        cm = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh", "arccosh": "acosh",
              "arctanh": "atanh"}.get(name, name)
        if cm in ("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
                  "exp", "log", "log10", "sqrt", "isnan", "isinf", "isfinite"):
            return self.cmath_apply(cm, cargs, node)
        raise self.err(KernelTypeError, f"np.{name} of complex numbers is not supported in kernels", node,
                       hint="complex numbers take arithmetic, comparisons, absolute, conjugate and the cmath "
                            "functions' ufuncs")

    def complex_pow(self, a, b, node):
        """``a ** b`` with a complex side: a constant integer exponent multiplies out
        (the semantic layer's ``complex_power``); a run-time integer exponent is
        :func:`.cmathlib.powi`, anything else :func:`.cmathlib.cpow` (which also
        multiplies for integral exponents, as CPython and NumPy do)."""
        from . import cmathlib
        sp = self.span(node)
        t = self.sem.complex_common(a, b, sp)
        const = b.items if is_complex(b) else [b]
        if all(isinstance(x, ir.Const) for x in const) and (not is_complex(b) or b.imag.value == 0) \
                and float(const[0].value).is_integer() and abs(const[0].value) <= 100:
            return self.sem.complex_power(a, b, t, sp)
        a = self.sem.convert(a, t, sp)
        if not is_complex(b) and isinstance(b.type, T.ScalarType) and (b.type.is_int or b.type.is_bool):
            r = self.library_call(cmathlib.powi, [a, self.sem.convert(b, T.int64, sp)], node)
        else:
            r = self.library_call(cmathlib.cpow, [a, self.sem.convert(b, t, sp)], node)
        return self.sem.convert(r, t, sp)

    def library_call(self, fn, values: list, node: ast.Call):
        """A call of the library device function ``fn`` (a :class:`~metalbench.kernel.Func`)
        on values already translated: they are bound to hidden names the call reads."""
        key = (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
        names = []
        for k, v in enumerate(values):
            nm = f"_mb_carg{k}_{key[0]}_{key[1]}"
            if is_complex(v):
                v = ComplexValue(self.sem.once(v.real, self.span(node)), self.sem.once(v.imag, self.span(node)))
                self.scopes[-1][nm] = _binding("tuple", v)
            else:
                self.scopes[-1][nm] = _binding("var", v if isinstance(v, ir.Var) else self._once(v, self.span(node)))
            names.append(nm)
        func = ast.copy_location(ast.Name(getattr(fn, "__name__", "f"), ast.Load()), node)
        call = ast.copy_location(ast.Call(func=func, args=[ast.copy_location(ast.Name(n, ast.Load()), node)
                                                                 for n in names], keywords=[]), node)
        ast.fix_missing_locations(call)
        try:
            r = self.device_call(fn, call)
        finally:
            for nm in names:
                self.scopes[-1].pop(nm, None)
        # the result's locals are this call site's (tuples.py keys them by position): copied
        # out, so a second library call at this node (cmath.log(z, base)) keeps the first's
        sp = self.span(node)
        return ComplexValue(self._once(r.real, sp), self._once(r.imag, sp), span=sp)


def _binding(kind, value):
    from .specs import Binding
    if kind == "var" and not isinstance(value, ir.Var):
        raise AssertionError("a library argument is evaluated once")
    return Binding(kind, value)


_CMATH_IDS = {getattr(cmath, n) for n in dir(cmath) if callable(getattr(cmath, n))}
