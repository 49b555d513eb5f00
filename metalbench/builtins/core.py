"""The registry's core: one :class:`Builtin` record per builtin, on the model of
NVIDIA Warp's ``add_builtin``.

A record holds everything about one builtin: its names (Metal's, the
``metal::precise::``/``metal::fast::`` spellings, Python/NumPy and Numba aliases),
its typing (a :class:`Rule`), its simulator implementation, its MSL and CUDA
spellings (with any helper code), a one-line doc with an example, its group and a
reference model the registry test compares the simulator with. Registering a record
that lacks a backend raises :class:`RegistrationError` at import time::

    >>> from metalbench import types as T
    >>> from metalbench.builtins import registry
    >>> b = registry.lookup("metal::fast::exp", dialect="msl")
    >>> sig = b.typecheck([T.float16])
    >>> sig.params, sig.result
    ([float16], float16)
    >>> registry.lookup("np.arcsin", dialect="python").name
    'asin'
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from .. import types as T
from ..errors import KernelTypeError

# The groups, in the order the language reference lists them.
GROUPS = ("Float math", "Float classification", "Numeric", "Integer", "Geometric", "SIMD-group",
          "Quad-group", "SIMD-group matrices", "Atomics",
          "Memory and synchronisation", "Selection", "Compile-time structure")


# The groups whose builtins are collectives, and the group of threads that runs each call
# together (its result depends on which of them run it: see Builtin.collective).
_COLLECTIVE_GROUPS = {"SIMD-group": "simdgroup", "Quad-group": "quadgroup", "SIMD-group matrices": "simdgroup"}


class RegistrationError(Exception):
    """A builtin declaration is incomplete or clashes with another (raised at import)."""


class BuiltinTypeError(Exception):
    """Raised by a :class:`Rule`; :meth:`Builtin.typecheck` adds the span and the hint."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True)
class Signature:
    """What a call types to: the types the arguments convert to, and the result type."""
    params: list
    result: object


def type_word(t) -> str:
    """A type as Metal spells it, for messages: ``float``, ``half4``, ``uint``."""
    return getattr(t, "msl", str(t))


@dataclass
class Rule:
    """How a builtin types its arguments.

    ``check(types) -> (param types, result type)`` raises :class:`BuiltinTypeError`;
    ``params`` names the parameters (for the arity check and the docs), ``doc`` is the
    signature shown in the reference (``(x: F) -> F``) with ``where`` explaining its
    type letters, and ``samples`` lists argument types the registry test calls it with.
    """
    params: tuple
    check: Callable
    doc: str
    where: str
    samples: list


@dataclass(eq=False)
class Builtin:
    """One builtin function: every fact about it, in one place.

    ``kind`` is ``"call"`` (an elementwise ``ir.Call``), ``"simd"`` (an ``ir.Call`` over
    the SIMD-group) or ``"node"`` (lowered by the front ends to another IR node:
    ``ir.Atomic``, ``ir.Barrier``, ``ir.ArrayDecl``, ``ir.Select``; its backends are
    those nodes'). ``sim(args, dt)`` computes a ``"call"`` on scalars or lane vectors
    already converted to the parameter types, giving dtype ``dt``, one vector component
    at a time (or, with ``componentwise=False``, each argument as its list of components,
    returning a list for a vector result); a ``"simd"``
    builtin's ``sim(layout, args, mask)`` works on a whole chunk. ``msl(p, args, t)`` and
    ``cuda(p, args, t)`` print a call with printer ``p`` (``p.need`` adds helper code).
    ``ref`` is the reference model of the registry test (see ``tests/test_registry.py``).
    ``grad`` is the derivative rule the generated VJPs use (``metalbench.autodiff``):
    ``"zero"``, or one formula per parameter (see the field's comment).
    """
    name: str
    group: str
    doc: str
    example: str
    rule: Rule | None = None
    kind: str = "call"
    sim: Callable | None = None
    msl: Callable | None = None
    cuda: Callable | None = None
    python: tuple = ()
    numba: tuple = ()
    namespaces: tuple = ()          # Metal's nested namespaces that have it: "precise", "fast"
    ref: Callable | None = None
    tol_ulp: float = 1.0
    shim: str | None = None
    node: str | None = None
    componentwise: bool = True      # sim sees one component at a time (False: lists of components)
    params_doc: str = ""            # the signature of a "node" builtin (no Rule): "(array, index, value) -> T"
    msl_aliases: tuple = ()         # other MSL names: atomic_fetch_add_explicit for atomic_add
    details: str = ""
    extra: dict = field(default_factory=dict)
    # The derivative rule (reverse mode, metalbench.autodiff): "zero" for piecewise-constant
    # functions, or one formula per parameter (None where that argument gets no cotangent)
    # in the parameters' names, ``result`` and ``grad`` (the result's cotangent):
    # exp: ("grad * result",); atan2: ("grad * y / (x * x + y * y)", "-grad * x / (x * x + y * y)").
    # None: no rule (differentiating through it is an error at the call's line).
    grad: tuple | str | None = None

    @property
    def collective(self) -> str | None:
        """The group of threads that must all reach a call of this builtin together:
        ``"threadgroup"`` (``threadgroup_barrier``), ``"simdgroup"`` (the SIMD-group
        functions, whose results depend on which lanes run them, ``simdgroup_barrier``, the
        SIMD-group matrix functions), ``"quadgroup"`` (the quad-group functions); None for a
        builtin each thread runs on its own. Code that makes threads diverge must keep such
        calls out of divergent branches (``frontend/msl/buffer_choice.py``).

        >>> from metalbench.builtins import registry
        >>> [registry.lookup(n).collective for n in ("simd_sum", "quad_shuffle", "threadgroup_barrier", "exp")]
        ['simdgroup', 'quadgroup', 'threadgroup', None]
        """
        return _COLLECTIVE_GROUPS.get(self.group) or self.extra.get("collective")

    # -- typing --------------------------------------------------------------------
    @property
    def arity(self) -> int:
        return len(self.rule.params)

    def typecheck(self, arg_types: list, span=None) -> Signature:
        """The :class:`Signature` of a call with arguments of ``arg_types``; a misuse
        raises ``KernelTypeError`` at ``span`` (the user's call).

        >>> from metalbench import types as T
        >>> from metalbench.builtins import registry
        >>> registry.lookup("popcount").typecheck([T.float32])
        Traceback (most recent call last):
        ...
        metalbench.errors.KernelTypeError: popcount takes an integer, got float
        hint: convert first (popcount(uint(x))) or reinterpret the bits with as_type<uint>(x)
        """
        if self.rule is None:
            raise KernelTypeError(f"{self.name} is not a function call here", span)
        n = len(self.rule.params)
        if len(arg_types) != n:
            raise KernelTypeError(f"{self.name}() takes {n} argument{'s' if n != 1 else ''}, "
                                  f"got {len(arg_types)}", span, hint=f"{self.name}{self.rule.doc}")
        for t in arg_types:
            if t is None:
                raise KernelTypeError(f"an argument of {self.name}() has no value (void)", span)
        try:
            params, result = self.rule.check(self.name, list(arg_types))
        except BuiltinTypeError as e:
            raise KernelTypeError(str(e), span, hint=e.hint) from None
        except T.TypeError_ as e:
            raise KernelTypeError(f"{self.name}: {e}", span) from None
        return Signature(list(params), result)

    # -- docs ----------------------------------------------------------------------
    @property
    def signature(self) -> str:
        """``exp(x: F) -> F`` (for the reference and ``help()``)."""
        return self.name + (self.rule.doc if self.rule is not None else self.params_doc)

    def help_text(self) -> str:
        """The entry ``help()`` shows for this builtin's DSL object."""
        lines = [self.signature, "", self.doc]
        if self.details:
            lines += ["", self.details]
        if self.rule is not None and self.rule.where:
            lines += ["", self.rule.where]
        lines += ["", f"Example:  {self.example}"]
        from .docs import spellings     # printing a sample call needs the printers
        sp = spellings(self, helpers=True)
        if sp:
            lines += ["", f"Metal: {sp[0]}" + (f"  (header: {', '.join(sp[2])})" if sp[2] else ""),
                      f"CUDA:  {sp[1]}" + (f"  (header: {', '.join(sp[3])})" if sp[3] else "")]
        al = [a for a in self.python + self.numba if a != self.name]
        if al:
            lines.append("Also: " + ", ".join(al))
        return "\n".join(lines)


def _float_of(t):
    e = T.elem_of(t)
    if e.is_float:
        return t
    return T.float32 if isinstance(t, T.ScalarType) else T.vector_of(T.float32, t.n)


def _common(types):
    # Metal's overloads match arguments of one type exactly (min(uchar, uchar) is a uchar);
    # mixed types convert to their common type by C's usual arithmetic conversions.
    if all(t == types[0] for t in types):
        return types[0]
    r = types[0]
    for t in types[1:]:
        r = T.binary_result(r, t)
    return r


def _same_shape(t, elem):
    return elem if isinstance(t, T.ScalarType) else T.vector_of(elem, t.n)


# ----------------------------------------------------------------------------- rule factories

_F_WHERE = ("F is half, bfloat or float, or a vector of them (2-4 components); "
            "integer arguments convert to float.")
_I_WHERE = "I is any integer type (char ... ulong) or a vector of one."
_N_WHERE = "N is any integer or float type or a vector of one; mixed arguments take their common type (C rules)."
_FLOAT_SAMPLES = [T.float32, T.float16, T.bfloat16, T.int32, T.vector_of(T.float32, 4), T.float64]
_INT_SAMPLES = [T.int32, T.uint32, T.int8, T.uint8, T.int16, T.uint16, T.int64, T.uint64,
                T.vector_of(T.uint32, 2)]
_NUM_SAMPLES = [T.float32, T.float16, T.bfloat16, T.int32, T.uint32, T.int8, T.uint16, T.int64,
                T.vector_of(T.float32, 3), T.vector_of(T.int32, 2)]


def _argnames(n):
    return ("x", "y", "z")[:n] if n <= 3 else tuple(f"a{i}" for i in range(n))


def _sig(names, letter, res):
    return "(" + ", ".join(f"{p}: {letter}" for p in names) + f") -> {res}"


def _scalar_or_vector(name, types):
    for t in types:
        if not isinstance(t, (T.ScalarType, T.VectorType)):
            raise BuiltinTypeError(f"{name} takes values, got {t!r}")


def float_math(n: int = 1, names: tuple | None = None) -> Rule:
    """Float math of ``n`` arguments: all convert to their common type, made float."""
    names = names or _argnames(n)

    def check(name, types):
        _scalar_or_vector(name, types)
        c = _float_of(_common(types))
        return [c] * n, c
    return Rule(names, check, _sig(names, "F", "F"), _F_WHERE,
                [tuple([t] * n) for t in _FLOAT_SAMPLES])


def float_predicate(n: int = 1) -> Rule:
    """A float classification of ``n`` arguments: ``bool`` (or a bool vector) result."""
    names = _argnames(n)

    def check(name, types):
        _scalar_or_vector(name, types)
        c = _float_of(_common(types))
        return [c] * n, _same_shape(c, T.bool_)
    return Rule(names, check, _sig(names, "F", "bool"), _F_WHERE + " A vector argument gives a bool vector.",
                [tuple([t] * n) for t in _FLOAT_SAMPLES])


def float_int(names=("x", "k")) -> Rule:
    """``ldexp``-like: a float and an int exponent (an int vector for a float vector)."""
    def check(name, types):
        _scalar_or_vector(name, types)
        x, k = types
        if not (T.elem_of(k).is_int or T.elem_of(k).is_bool):
            raise BuiltinTypeError(f"{name}'s {names[1]} takes an integer, got {type_word(k)}")
        if isinstance(k, T.VectorType) and (not isinstance(x, T.VectorType) or k.n != x.n):
            raise BuiltinTypeError(f"{name}: {type_word(k)} does not match {type_word(x)}")
        f = _float_of(x)
        return [f, _same_shape(f, T.int32)], f
    return Rule(names, check, f"({names[0]}: F, {names[1]}: int) -> F",
                _F_WHERE + " For a vector F the exponent is an int vector of the same length.",
                [(T.float32, T.int32), (T.float16, T.int32), (T.bfloat16, T.uint32),
                 (T.vector_of(T.float32, 2), T.vector_of(T.int32, 2))])


def numeric(n: int, names: tuple | None = None, float_only: bool = False, no_int_vector: bool = False) -> Rule:
    """Integers and floats alike: the arguments convert to their common type."""
    names = names or _argnames(n)

    def check(name, types):
        _scalar_or_vector(name, types)
        c = _common(types)
        if float_only:
            c = _float_of(c)
        if T.elem_of(c).is_bool:
            raise BuiltinTypeError(f"{name} takes numbers, got bool")
        if no_int_vector and isinstance(c, T.VectorType) and c.elem.is_int:
            raise BuiltinTypeError(f"{name} of an integer vector is not supported",
                                   hint="apply it per component")
        return [c] * n, c
    if float_only:
        return Rule(names, check, _sig(names, "F", "F"), _F_WHERE, [tuple([t] * n) for t in _FLOAT_SAMPLES])
    samples = [tuple([t] * n) for t in _NUM_SAMPLES
               if not (no_int_vector and isinstance(t, T.VectorType) and t.elem.is_int)]
    return Rule(names, check, _sig(names, "N", "N"), _N_WHERE, samples)


def integer(n: int = 1, names: tuple | None = None) -> Rule:
    """Integer-only functions (``popcount``, ``mulhi``...): a float is a type error."""
    names = names or _argnames(n)

    def check(name, types):
        _scalar_or_vector(name, types)
        for t in types:
            if not T.elem_of(t).is_int:
                hint = None
                if T.elem_of(t).is_float:
                    hint = (f"convert first ({name}(uint(x))) or reinterpret the bits with "
                            f"as_type<uint>(x)")
                raise BuiltinTypeError(f"{name} takes an integer, got {type_word(t)}", hint)
        c = _common(types)
        return [c] * n, c
    return Rule(names, check, _sig(names, "I", "I"), _I_WHERE, [tuple([t] * n) for t in _INT_SAMPLES])


def same_type(names=("x",), int_only: bool = False, samples=None) -> Rule:
    """SIMD reductions and scans: the argument's own type."""
    def check(name, types):
        _scalar_or_vector(name, types)
        if int_only and not T.elem_of(types[0]).is_int:
            raise BuiltinTypeError(f"{name} takes an integer, got {type_word(types[0])}",
                                   "bitwise SIMD-group reductions work on integer values")
        return list(types), types[0]
    letter = "I" if int_only else "T"
    where = _I_WHERE if int_only else "T is any scalar or vector type."
    smp = samples or ([(t,) for t in (T.int32, T.uint32, T.uint16, T.vector_of(T.int32, 2))] if int_only else
                      [(t,) for t in (T.float32, T.float16, T.int32, T.uint32, T.vector_of(T.float32, 2))])
    return Rule(names, check, f"({names[0]}: {letter}) -> {letter}", where, smp)


def value_lane(names=("x", "lane")) -> Rule:
    """SIMD shuffles: a value and an integer lane (or delta)."""
    def check(name, types):
        _scalar_or_vector(name, types)
        v, lane = types
        if not isinstance(lane, T.ScalarType) or not (lane.is_int or lane.is_bool):
            raise BuiltinTypeError(f"{name}'s {names[1]} takes an integer, got {type_word(lane)}")
        return [v, T.uint32], v
    return Rule(names, check, f"({names[0]}: T, {names[1]}: uint) -> T", "T is any scalar or vector type.",
                [(T.float32, T.uint32), (T.int32, T.int32), (T.float16, T.uint16),
                 (T.vector_of(T.float32, 2), T.uint32)])


def predicate_vote(result) -> Rule:
    """``simd_all``/``simd_any``/``simd_ballot``: a condition."""
    def check(name, types):
        if not isinstance(types[0], T.ScalarType):
            raise BuiltinTypeError(f"{name} takes a bool condition, got {type_word(types[0])}")
        return [T.bool_], result
    return Rule(("cond",), check, f"(cond: bool) -> {type_word(result)}", "", [(T.bool_,)])


def float_vectors(n: int, names: tuple, result: str) -> Rule:
    """Geometric functions of float vectors: ``result`` is "scalar" or "vector"."""
    def check(name, types):
        _scalar_or_vector(name, types)
        for t in types:
            if not isinstance(t, T.VectorType) or not t.elem.is_float:
                raise BuiltinTypeError(f"{name} takes float vectors (float2/3/4, half2/3/4), got {type_word(t)}")
        c = _common(types)
        return [c] * n, (c.elem if result == "scalar" else c)
    res = "F" if result == "scalar" else "Fn"
    return Rule(names, check, "(" + ", ".join(f"{p}: Fn" for p in names) + f") -> {res}",
                "Fn is a float, half or bfloat vector of 2-4 components; F its element type.",
                [tuple([T.vector_of(e, k)] * n) for e, k in ((T.float32, 3), (T.float32, 2), (T.float16, 4),
                                                             (T.bfloat16, 2))])


def nullary(result) -> Rule:
    return Rule((), lambda name, types: ([], result), f"() -> {type_word(result)}", "", [()])


def custom(names, check, doc, where, samples) -> Rule:
    """A rule written out by the declaration itself."""
    return Rule(tuple(names), check, doc, where, samples)


# ----------------------------------------------------------------------------- the registry

_DIALECTS = ("msl", "python", "numba")
# spelling prefix -> the nested namespace it names (None: plain metal::)
_MSL_PREFIXES = (("metal::precise::", "precise"), ("metal::fast::", "fast"), ("precise::", "precise"),
                 ("fast::", "fast"), ("metal::", None))


class Registry:
    """Every builtin, by name and alias. ``add`` validates a declaration."""

    def __init__(self):
        self._all: list[Builtin] = []
        self._by_name: dict[str, Builtin] = {}
        self._python: dict[str, Builtin] = {}
        self._numba: dict[str, Builtin] = {}
        self._msl: dict[str, Builtin] = {}
        self._objects: dict | None = None

    def add(self, b: Builtin) -> Builtin:
        """Registers ``b``; an incomplete declaration raises :class:`RegistrationError`."""
        where = f"builtin {b.name!r}"
        if not b.name or not b.name.isidentifier():
            raise RegistrationError(f"{where}: the name must be an identifier")
        if b.group not in GROUPS:
            raise RegistrationError(f"{where}: unknown group {b.group!r} (one of {', '.join(GROUPS)})")
        if not b.doc or not b.example:
            raise RegistrationError(f"{where}: needs a one-line doc and an example")
        if b.kind in ("call", "simd"):
            missing = [k for k in ("rule", "sim", "msl", "cuda") if getattr(b, k) is None]
            if missing:
                raise RegistrationError(f"{where} has no {', '.join(missing)}: every builtin needs its typing, "
                                        "a simulator implementation and MSL and CUDA spellings")
            if b.ref is None:
                raise RegistrationError(f"{where} has no reference model (ref=) for the registry test")
        elif b.kind == "node":
            if not b.node:
                raise RegistrationError(f"{where}: a 'node' builtin names the IR node it lowers to")
        else:
            raise RegistrationError(f"{where}: unknown kind {b.kind!r}")
        if b.grad is not None and b.grad != "zero":
            ok = isinstance(b.grad, tuple) and b.rule is not None and len(b.grad) == len(b.rule.params) \
                and all(f is None or isinstance(f, str) for f in b.grad)
            if not ok:
                raise RegistrationError(f"{where}: grad is \"zero\" or a tuple of one formula (or None) per "
                                        "parameter")
        if b.name in self._by_name:
            raise RegistrationError(f"{where} is declared twice")
        for a in b.python:
            if a in self._python and self._python[a] is not b:
                raise RegistrationError(f"{where}: alias {a!r} already means {self._python[a].name!r}")
        for a in b.numba:
            if a in self._numba and self._numba[a] is not b:
                raise RegistrationError(f"{where}: Numba alias {a!r} already means {self._numba[a].name!r}")
        for a in b.msl_aliases:
            if a in self._msl or a in self._by_name:
                raise RegistrationError(f"{where}: MSL name {a!r} is taken")
        self._all.append(b)
        self._by_name[b.name] = b
        for a in b.python:
            self._python[a] = b
        for a in b.numba:
            self._numba[a] = b
        for a in b.msl_aliases:
            self._msl[a] = b
        self._objects = None
        return b

    def all(self) -> list[Builtin]:
        """Every builtin, in declaration order (stable)."""
        return list(self._all)

    def get(self, name: str) -> Builtin:
        """The builtin of canonical name ``name`` (``KeyError`` if none)."""
        return self._by_name[name]

    def __contains__(self, name) -> bool:
        return name in self._by_name

    def lookup(self, name: str, dialect: str = "msl") -> Builtin | None:
        """The builtin ``name`` means in ``dialect`` (``"msl"``, ``"python"``, ``"numba"``),
        or None.

        MSL accepts ``metal::``, ``metal::precise::`` and ``metal::fast::`` spellings
        where Metal has them; Python accepts the DSL name, ``metal.exp``,
        ``metal.fast.exp``, ``math.*``/``np.*`` aliases; Numba adds ``cuda.*``::

            >>> registry.lookup("metal::precise::sqrt").name, registry.lookup("fast::exp").name
            ('sqrt', 'exp')
            >>> registry.lookup("cuda.popc", dialect="numba").name
            'popcount'
            >>> registry.lookup("no_such_thing") is None
            True
        """
        if dialect not in _DIALECTS:
            raise ValueError(f"dialect must be one of {_DIALECTS}, not {dialect!r}")
        if dialect == "msl":
            bare, ns = name.replace(" ", ""), None
            for p, space in _MSL_PREFIXES:
                if bare.startswith(p):
                    bare, ns = bare[len(p):], space
                    break
            b = self._by_name.get(bare) or self._msl.get(bare)
            if b is None or (ns is not None and ns not in b.namespaces):
                return None
            return b
        if dialect == "numba" and name in self._numba:
            return self._numba[name]
        if name in self._python:
            return self._python[name]
        for p, space in (("metal.precise.", "precise"), ("metal.fast.", "fast"), ("metal.", None)):
            if name.startswith(p):
                b = self._by_name.get(name[len(p):])
                return b if b is not None and (space is None or space in b.namespaces) else None
        b = self._by_name.get(name)
        return b

    def lookup_object(self, obj) -> Builtin | None:
        """The builtin a Python object means inside a kernel (``math.exp``, ``np.exp``,
        Python's ``min``...), or None."""
        if self._objects is None:
            import builtins as py
            import numpy as np
            mods = {"math": math, "np": np, "numpy": np, "": py}
            objs = {}
            for b in self._all:
                for a in b.python:
                    mod, _, attr = a.rpartition(".")
                    m = mods.get(mod)
                    if m is None or not hasattr(m, attr):
                        continue
                    o = getattr(m, attr)
                    try:
                        objs.setdefault(o, b)
                    except TypeError:       # unhashable: not a function
                        pass
            self._objects = objs
        try:
            return self._objects.get(obj)
        except TypeError:
            return None


registry = Registry()


def add_builtin(name: str, **kw) -> Builtin:
    """Declares one builtin (see :class:`Builtin` for the fields); returns it."""
    return registry.add(Builtin(name, **kw))
