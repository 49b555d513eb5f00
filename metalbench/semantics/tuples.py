"""Tuples as values: compile-time aggregates of IR values.

The IR has no tuple type. A tuple in a kernel -- ``(i, j)``, ``cuda.grid(2)``, a tuple
argument, what a device function returns, a namedtuple -- is a :class:`TupleValue`: a
Python list of its items, each an IR expression (a scalar or vector value) or another
``TupleValue``. It exists only while the front end translates:

- a local variable holding a tuple is one local per item (``ij`` -> ``ij__0``,
  ``ij__1``), typed like any local by the fixpoint of its assignments (item-wise);
- a tuple kernel argument is one uniform scalar parameter per item;
- a device function returning a tuple stores the items through hidden thread-array
  parameters (one per item), read back after the call;
- indexing with a constant picks an item; with a run-time index over items of one
  type, a select chain; ``len(t)`` is a constant; ``a[t]`` indexes a multi-dimensional
  array with the items; ``x, y = t`` unpacks.

Both the Python DSL and the Numba layer use it (the Numba layer's ``cuda.grid(2)`` is
a tuple of two int64)::

    >>> from metalbench import ir, types as T
    >>> t = TupleValue([ir.Var("i", T.int64), ir.Const(2.5, T.float32)])
    >>> t.type, len(t), t.item(1).value
    (Tuple(int64, float32), 2, 2.5)
    >>> [type(e).__name__ for e in flatten(TupleValue([ir.Var("a", T.int32), t]))]
    ['Var', 'Var', 'Const']
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ir
from .. import types as T


@dataclass(frozen=True)
class TupleType:
    """The type of a :class:`TupleValue`: its items' types (``names`` for a namedtuple,
    ``cls`` its class: a namedtuple class or a Numba vector type, kept through locals,
    device-function parameters and results)."""
    items: tuple
    names: tuple | None = None
    cls: object = None

    @property
    def name(self) -> str:
        return f"Tuple({', '.join(getattr(t, 'name', str(t)) for t in self.items)})"

    def __repr__(self) -> str:
        return self.name

    @property
    def leaves(self) -> list:
        """The scalar/vector types of the flattened items, in order."""
        out = []
        for t in self.items:
            out.extend(t.leaves if isinstance(t, TupleType) else [t])
        return out


class TupleValue(ir.Expr):
    """A tuple of IR values (see the module docstring). ``names``: a namedtuple's field
    names; ``cls``: its class (for ``isinstance`` and field access)."""

    def __init__(self, items, names=None, cls=None, span=None):
        self.items = list(items)
        self.names = tuple(names) if names is not None else None
        self.cls = cls
        self.span = span

    @property
    def type(self) -> TupleType:
        return TupleType(tuple(getattr(x, "type", None) for x in self.items), self.names, self.cls)

    def __len__(self) -> int:
        return len(self.items)

    def item(self, k: int):
        return self.items[k]

    def field(self, name: str):
        """A namedtuple field by name, or None."""
        if self.names and name in self.names:
            return self.items[self.names.index(name)]
        return None

    def __repr__(self) -> str:
        return f"TupleValue({self.items!r})"


def is_tuple(e) -> bool:
    return isinstance(e, TupleValue)


def flatten(t) -> list:
    """The non-tuple items of ``t``, depth first."""
    if not isinstance(t, TupleValue):
        return [t]
    out = []
    for x in t.items:
        out.extend(flatten(x))
    return out


def join_types(join, a, b):
    """The type a tuple local has after assignments of types ``a`` and ``b``: item-wise
    ``join`` (the rules' local-variable join); None when the shapes differ."""
    if isinstance(a, TupleType) != isinstance(b, TupleType):
        return None
    if not isinstance(a, TupleType):
        return join(a, b)
    if type(a) is not type(b):      # a complex number never joins with a tuple
        return None
    if len(a.items) != len(b.items):
        return None
    items = []
    for x, y in zip(a.items, b.items):
        j = join_types(join, x, y)
        if j is None:
            return None
        items.append(j)
    return type(a)(tuple(items), a.names, a.cls)     # a ComplexType stays one


class TupleSemantics:
    """Tuple operations (mixed into :class:`~metalbench.semantics.Semantics`)."""

    def tuple_index(self, t: TupleValue, k, span=None):
        """``t[k]``: a constant ``k`` (negative counts from the end) picks an item; a
        run-time integer ``k`` over items of one scalar type is a select chain."""
        n = len(t)
        if isinstance(k, int):
            if not -n <= k < n:
                raise self.error(f"tuple index {k} out of range (the tuple has {n} items)", span)
            return t.items[k]
        if not isinstance(k, ir.Expr) or not (isinstance(k.type, T.ScalarType) and k.type.is_int):
            raise self.error("a tuple is indexed by an integer", span)
        if isinstance(k, ir.Const):
            return self.tuple_index(t, int(k.value), span)
        if any(isinstance(x, TupleValue) for x in t.items) or len({x.type for x in t.items}) != 1:
            raise self.error("indexing a tuple with a run-time index needs items of one type", span,
                             hint="index it with a constant")
        k = self.once(k, span)
        r = t.items[n - 1]
        for i in range(n - 2, -1, -1):
            r = self.select(self.binop("==", k, ir.Const(i, k.type, span=span), span), t.items[i], r, span)
        return r

    def tuple_slice(self, t: TupleValue, start, stop, step, span=None) -> TupleValue:
        """``t[a:b:c]`` with constant bounds."""
        return TupleValue(t.items[slice(start, stop, step)], span=span)

    def tuple_compare(self, op: str, a: TupleValue, b: TupleValue, span=None):
        """``a == b`` / ``a != b`` item-wise (lengths must agree)."""
        if op not in ("==", "!="):
            raise self.error(f"tuples compare with == and != here, not {op}", span)
        if len(a) != len(b):
            return self.bool_const(op == "!=", span)
        r = None
        for x, y in zip(a.items, b.items):
            if isinstance(x, TupleValue) and isinstance(y, TupleValue):
                c = self.tuple_compare("==", x, y, span)
            elif isinstance(x, TupleValue) or isinstance(y, TupleValue):
                c = self.bool_const(False, span)
            else:
                c = self.binop("==", x, y, span)
            r = c if r is None else self.logical("and", r, c, span)
        if r is None:
            r = self.bool_const(True, span)
        return r if op == "==" else self.unop("!", r, span)
