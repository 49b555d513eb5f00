"""Builtin calls, atomics, thread attributes and indexing in the semantic layer.

Builtin typing goes through :func:`typecheck`, the one function that consults the builtin
registry; atomics go through :meth:`CallSemantics.check_atomic`, the one
element-type check for the DSL, the Numba layer and MSL bodies::

    >>> from metalbench import ir, types as T
    >>> from metalbench.semantics import Semantics
    >>> sem = Semantics()
    >>> sem.builtin("max", [ir.Var("a", T.int32), ir.Var("b", T.uint32)]).type.name
    'uint32'
    >>> try:
    ...     sem.builtin("popcount", [ir.Var("x", T.float32)])
    ... except KernelTypeError as e:
    ...     print(e.message)
    popcount takes an integer, got float
"""
from __future__ import annotations

from .. import ir
from .. import types as T
from ..builtins import Signature, registry
from ..errors import KernelTypeError, Span


def lookup(name: str, dialect: str = "msl"):
    """The builtin ``name`` means in ``dialect`` ("msl", "python", "numba"), or None.

    >>> lookup("metal::fast::exp").name, lookup("no_such_builtin")
    ('exp', None)
    """
    return registry.lookup(name, dialect)


def typecheck(name: str, arg_types: list, span: Span | None = None, dialect: str = "msl") -> Signature:
    """The :class:`~metalbench.builtins.Signature` of builtin ``name`` (its canonical
    name) applied to ``arg_types``; a :class:`KernelTypeError` at ``span`` for a wrong
    arity or argument type. The one place the semantic layer consults the registry.

    >>> typecheck("ldexp", [T.float16, T.int32]).result.name
    'float16'
    """
    b = registry.get(name) if name in registry else registry.lookup(name, dialect)
    if b is None:
        raise KernelTypeError(f"{name} is not a builtin function", span)
    return b.typecheck(list(arg_types), span)


class CallSemantics:
    """Builtin calls, atomics, thread attributes, indices (mixed into ``Semantics``)."""

    def builtin(self, name: str, args: list, span=None) -> ir.Expr:
        """A call of builtin ``name``: typed by :func:`typecheck`, arguments converted.

        >>> from metalbench.semantics import Semantics
        >>> Semantics().builtin("exp", [ir.Const(1, T.int32)]).args[0].type.name
        'float32'
        """
        for a in args:
            if a.type is None:
                raise self.error(f"an argument of {name}() has no value", span)
        sig = typecheck(name, [a.type for a in args], span, self.rules.dialect)
        return ir.Call(name, [self.convert(a, t) for a, t in zip(args, sig.params)], sig.result,
                       span=span)

    # -- atomics ---------------------------------------------------------------------------
    def check_atomic(self, op: str, elem, space: str, buf_name: str, span=None, who: str = "atomics"):
        """Raise unless atomic ``op`` may work on ``space`` memory holding ``elem``
        elements: device or threadgroup memory, and the rule set's element rule
        (:meth:`~.rules.RuleSet.atomic_error`, the builtin registry's table)."""
        if space not in ("device", "threadgroup"):
            where = "local" if space == "thread" else space
            raise self.error(f"{who}: atomics work on device buffers and threadgroup arrays, not on {where} "
                             "arrays", span)
        msg = self.rules.atomic_error(op, elem, who)
        if msg is not None:
            hint = "use a uint32 array" if op in ("inc", "dec") else \
                "use an int32 or uint32 buffer (float32 for add, sub, min, max, exchange, compare-exchange)"
            raise self.error(f"{msg} ({buf_name!r} holds {elem.name})", span, hint=hint)

    def atomic(self, op: str, buf_name: str, elem, space: str, index: ir.Expr, values: list,
               span=None, who: str = "atomics") -> ir.Atomic:
        """Atomic ``op`` (``add``, ``cas``, ``load``, ...) on ``buf[index]``, evaluating to
        the old value; ``values`` convert to the element type.

        >>> from metalbench.semantics import Semantics
        >>> a = Semantics().atomic("add", "out", T.float32, "device", ir.Const(0, T.int32),
        ...                        [ir.Const(1, T.int32)])
        >>> a.args[0].value, a.type.name
        (1.0, 'float32')
        """
        self.check_atomic(op, elem, space, buf_name, span, who)
        vals = [self.convert(v, elem, span) for v in values]
        return ir.Atomic(op, buf_name, index, vals, elem, span=span)

    # -- thread attributes ---------------------------------------------------------------------
    def thread_attr(self, name: str, span=None) -> ir.ThreadAttr:
        """Thread attribute ``name`` (``uint3`` or ``uint``, as MLX declares it).

        >>> from metalbench.semantics import Semantics
        >>> Semantics().thread_attr("thread_position_in_grid").type.name
        'uint3'
        """
        t = T.uint3 if ir.THREAD_ATTRIBUTES[name] == "uint3" else T.uint32
        return ir.ThreadAttr(name, t, span=span)

    # -- indexing ---------------------------------------------------------------------------
    def index(self, e: ir.Expr, span=None) -> ir.Expr:
        """An array index: an integer (or bool), promoted (bool, char, short -> int).

        >>> from metalbench.semantics import Semantics
        >>> Semantics().index(ir.Var("k", T.uint8)).type.name
        'int32'
        """
        span = span or e.span
        if not (isinstance(e.type, T.ScalarType) and (e.type.is_int or e.type.is_bool)):
            name = e.type.name if e.type is not None else "void"
            raise self.error(f"array index must be an integer, got {name}", span,
                             hint="convert with int32(...) or uint32(...)")
        # C's promotion whatever the rules: an index's value, not its arithmetic, matters here
        return self.convert(e, T.promote_int(e.type), span)

    def linear_index(self, idxs: list, dims: list, span=None) -> ir.Expr:
        """The element index of ``a[i0, i1, ...]`` on a row-major array whose dimensions
        are ``dims`` (ints or expressions): ``(i0 * d1 + i1) * d2 + i2 ...``, with C's
        arithmetic (a uint index makes the sum uint). The indices are already
        :meth:`index`-ed; ``len(idxs) == len(dims)``.

        >>> from metalbench.semantics import Semantics
        >>> e = Semantics().linear_index([ir.Const(2, T.int32), ir.Const(3, T.int32)], [4, 5])
        >>> e.value
        13
        """
        lin = idxs[0]
        for d, i in zip(dims[1:], idxs[1:]):
            dim = d if isinstance(d, ir.Expr) else ir.Const(int(d), T.int32, span=span)
            lin = self.binop("*", lin, dim, span)
            lin = self.binop("+", lin, i, span)
        return lin
