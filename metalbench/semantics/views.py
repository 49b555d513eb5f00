"""Pointers and array views: one representation for every front end.

A *view* is what a pointer (MSL ``auto q = x + off``, ``(const device float4*)(x + i)``),
a row of a multi-dimensional array (``tile[r]``), or a slice of an array (the DSL's
``x[i:]``, ``x.view(float4)``, Numba's ``a[i:]``) denotes: a buffer, an element offset
and the type one element of the view has. A :class:`View` is a compile-time value --
the buffer a pointer targets must be known statically; only the offset is a run-time
expression (a variable for a pointer that is advanced, ``q += n``)::

    >>> from metalbench import ir, types as T
    >>> from metalbench.semantics import Semantics, MSL
    >>> sem = Semantics(MSL)
    >>> x = sem.view_of("x", T.float32, "device")
    >>> q = sem.view_offset(x, ir.Var("b", T.uint32))          # x + b
    >>> print(ir.dump(sem.view_load(q, ir.Const(3, T.int32))))   # q[3]
    x[(b + 3)]
    >>> v4 = sem.view_cast(q, T.VECTORS["float4"], "device")    # (device float4*)(x + b)
    >>> print(ir.dump(sem.view_load(v4, ir.Const(1, T.int32))))  # ((device float4*)(x + b))[1]
    float4(x[(b + 4)], x[(b + 5)], x[(b + 6)], x[(b + 7)])

Rules (C's, for MSL; the DSL and Numba layers reuse them for slices and vector views):

- ``offset`` counts elements of the view's scalar type ``elem`` from the start of
  ``buf``; ``p + k`` moves it by ``k`` view elements (``k * step``), ``p[i]`` is element
  ``offset + i * step``. Offsets that mix signedness are computed in 64 bits, as a
  pointer add is (``p + k`` never wraps in 32-bit unsigned arithmetic).
- A vector view (``device float4*`` over float data) reads and writes its components
  as scalar accesses of consecutive elements (``float3`` steps by 4 elements, as Metal
  lays it out, ``packed_float3`` by 3), so no back end needs vector memory accesses.
- A view of another *scalar* type (``(device uchar*)w`` over uint data: reinterpreting
  the bytes) reads a second name for the same storage, declared once per buffer and type
  through the front end's ``declare_alias`` hook (an :class:`~metalbench.ir.ViewDecl`);
  the offset is rescaled to the new element size.
- A cast to a wider scalar type whose byte offset is not provably a multiple of the new
  size (``(device uint*)(bytes + 3)``, a ``half`` two bytes into an 18-byte GGUF block)
  keeps the remainder: ``sub`` elements of the narrower storage ``src`` (a ``(name, elem)``
  pair). Loads and stores then test it at run time and, when it is not 0, assemble the
  value from the bytes actually addressed (``sub == 0`` takes the one aligned access).
- A pointer to a scalar or vector local (``(thread uchar*)&u``) has the variable as
  ``local``; its accesses are bit operations on it (:mod:`.local_views`).
- A view of a multi-dimensional array steps over whole rows: ``inner`` holds the row's
  dimensions (``float t[4][8]``: ``t`` is a view with ``inner=(8,)``; ``t[r]`` a view of
  floats at offset ``8 r``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .. import ir
from .. import types as T
from .complexval import ComplexType, ComplexValue, storage_elem
from .local_views import LocalViewSemantics


@dataclass(frozen=True)
class View:
    """A pointer into (or a view of) buffer ``buf``: see the module docstring.

    ``type``: one element (``p[i]``, ``*p``): a scalar or a vector of ``elem``;
    ``offset``: where element 0 starts, in ``elem`` units; ``inner``: the row dimensions
    of a view over a multi-dimensional array; ``space``: the address space;
    ``const``/``atomic``: whether it is read-only / atomic; ``packed``: a packed vector
    type (``packed_float3``: 3 elements per step instead of 4).
    """
    buf: str
    space: str
    type: object
    offset: ir.Expr
    inner: tuple = ()
    const: bool = False
    atomic: bool = False
    packed: bool = False
    sub: object = None      # see the module docstring: elements of src past offset * (new size / src size)
    src: object = None      # (buffer, scalar type) the remainder counts in
    local: object = None    # a pointer to a scalar or vector local: the variable (local_views.py)

    @property
    def elem(self) -> T.ScalarType:
        """The scalar type of the storage as this view reads it."""
        return storage_elem(self.type)

    @property
    def width(self) -> int:
        """Scalar elements one value of the view has (1, a vector's length, 2 for a
        complex number: its real and imaginary parts)."""
        if isinstance(self.type, ComplexType):
            return 2
        return self.type.n if isinstance(self.type, T.VectorType) else 1

    @property
    def step(self) -> int:
        """Elements of ``elem`` between ``p[i]`` and ``p[i + 1]``.

        >>> from metalbench import ir
        >>> View("x", "device", T.VECTORS["float3"], ir.Const(0, T.int32)).step
        4
        """
        w = self.width
        n = w if self.packed or isinstance(self.type, ComplexType) else T.padded(w)
        for d in self.inner:
            n *= int(d)
        return n


def _unsigned(size: int) -> T.ScalarType:
    """The unsigned integer type of ``size`` bytes (the bits of a value being assembled)."""
    return {1: T.uint8, 2: T.uint16, 4: T.uint32, 8: T.uint64}[size]


def _multiple_of(e, r: int) -> bool:
    """Whether integer expression ``e`` is provably a multiple of ``r`` (constants, products
    with such a factor, sums of such terms, widening casts)."""
    if isinstance(e, ir.Const):
        return isinstance(e.value, int) and e.value % r == 0
    if isinstance(e, ir.Cast) and isinstance(e.type, T.ScalarType) and e.type.is_int:
        return _multiple_of(e.value, r)
    if isinstance(e, ir.BinOp):
        if e.op == "*":
            return _multiple_of(e.a, r) or _multiple_of(e.b, r)
        if e.op in ("+", "-"):
            return _multiple_of(e.a, r) and _multiple_of(e.b, r)
        if e.op == "<<" and isinstance(e.b, ir.Const) and isinstance(e.b.value, int):
            return _multiple_of(e.a, r) or (r & (r - 1) == 0 and (1 << e.b.value) % r == 0)
    return False


def _zero(e) -> bool:
    return isinstance(e, ir.Const) and not isinstance(e.type, T.VectorType) and e.value == 0


class ViewSemantics(LocalViewSemantics):
    """Pointers and views (mixed into :class:`~metalbench.semantics.Semantics`).

    A front end that supports reinterpreting casts sets ``declare_alias``: a callable
    ``(view, elem, span) -> name`` that declares (once) a name for the storage of
    ``view.buf`` read as ``elem`` (an :class:`~metalbench.ir.ViewDecl`) and returns it;
    without it such a cast is an error.
    """

    declare_alias = None
    # A front end whose vector pointers Metal requires aligned sets ``vector_align``: a
    # callable ``(view) -> (bytes, exact)`` (the MSL front end's ``layout_of``; ``exact``: the
    # view's offsets count from an aligned start, not a function's pointer parameter). The
    # first access of such a vector is marked (``ir.Load.vector``) unless its address is
    # provably aligned.
    vector_align = None
    # A front end deciding which buffers must be atomic (the MSL front end's atomic_outputs.py)
    # sets ``plain_access``: a callable ``(view, "read plainly" | "stored plainly", span)`` told of every plain
    # load and store through a view of memory.
    plain_access = None

    # -- building views --------------------------------------------------------------
    def view_of(self, buf: str, elem, space: str, shape=None, const=False, atomic=False, span=None) -> View:
        """The whole buffer or array ``buf`` as a pointer to its first element (its first
        row when ``shape`` has several dimensions)."""
        inner = tuple(int(d) for d in shape[1:]) if shape and len(shape) > 1 else ()
        return View(buf, space, elem, ir.Const(0, T.int32, span=span), inner, const, atomic)

    def _offset_add(self, off: ir.Expr, delta: ir.Expr, span=None, op="+") -> ir.Expr:
        if _zero(delta):
            return off
        if _zero(off) and op == "+":
            return delta
        if isinstance(delta, ir.Const) and delta.value >= 0 and isinstance(off.type, T.ScalarType):
            delta = self.convert(delta, off.type, span)      # a small constant takes the offset's type
        elif isinstance(off, ir.Const) and off.value >= 0 and op == "+":
            off = self.convert(off, delta.type, span)
        if off.type == delta.type:
            return self.binop(op, off, delta, span)
        return self.binop(op, self.convert(off, T.int64, span), self.convert(delta, T.int64, span), span)

    def _scaled(self, k: ir.Expr, n: int, span=None) -> ir.Expr:
        if n == 1:
            return k
        return self.binop("*", k, ir.Const(n, T.int32, span=span), span)

    def view_offset(self, v: View, k: ir.Expr, span=None, op: str = "+") -> View:
        """``v + k`` (``op="-"``: ``v - k``): the view moved by ``k`` of its elements (rows)."""
        k = self.index(k, span)
        return replace(v, offset=self._offset_add(v.offset, self._scaled(k, v.step, span), span, op))

    def view_row(self, v: View, i: ir.Expr, span=None) -> View:
        """``v[i]`` of a view over rows (``inner`` not empty): a view of row ``i``'s
        elements (C's array-to-pointer decay)."""
        moved = self.view_offset(v, i, span)
        return replace(moved, inner=v.inner[1:])

    def view_cast(self, v: View, t, space: str | None = None, const: bool | None = None,
                  packed: bool = False, span=None) -> View:
        """``(space t*)v``: the same address read as elements of ``t`` (a scalar or vector
        type). A different scalar type reinterprets the bytes (see ``declare_alias``)."""
        if v.local is not None:
            return self._local_cast(v, t, space, const, packed, span)
        space = space or v.space
        const = v.const if const is None else const
        e_new = storage_elem(t)
        base = replace(v, inner=())
        if e_new != v.elem and v.sub is not None:
            v = base = self._unsub(base, span)      # back to the narrower storage, exactly
        if e_new != v.elem:
            if self.declare_alias is None:
                raise self.error(f"a pointer cast from {v.elem.name} to {e_new.name} data "
                                 "(reinterpreting memory) is not supported here", span)
            s_old, s_new = v.elem.itemsize, e_new.itemsize
            off, sub = base.offset, None
            if s_old != s_new and not _zero(off):
                off = self.convert(off, T.int64, span) if off.type != T.int64 else off
                if s_old % s_new == 0:
                    off = self.binop("*", off, ir.Const(s_old // s_new, T.int64, span=span), span)
                else:
                    r = s_new // s_old
                    if not _multiple_of(off, r):
                        off = self.once(off, span)
                        sub = (v.buf, v.elem, off)
                    # element counts: C's integer division whatever the language's `/` means
                    off = ir.BinOp("/", off, ir.Const(r, T.int64, span=span), T.int64, span=span)
                    if sub is not None:
                        off = self.once(off, span)
                        rem = self.binop("-", sub[2], self.binop("*", off, ir.Const(r, T.int64, span=span), span), span)
                        sub = (sub[0], sub[1], self.once(rem, span))
            name = self.declare_alias(v, e_new, span)
            base = replace(base, buf=name, offset=off, sub=None if sub is None else sub[2],
                           src=None if sub is None else sub[:2])
        return replace(base, type=t, space=space, const=const, packed=packed)

    def _unsub(self, v: View, span=None) -> View:
        """A view with a remainder (``sub``) as the same address in its narrower storage."""
        buf, elem = v.src
        r = v.elem.itemsize // elem.itemsize
        off = self.binop("+", self.binop("*", self.convert(v.offset, T.int64, span), ir.Const(r, T.int64, span=span),
                                         span), self.convert(v.sub, T.int64, span), span)
        return replace(v, buf=buf, type=elem, offset=off, sub=None, src=None, packed=False)

    def _misaligned(self, v: View, span):
        """``sub != 0`` of a view with a remainder."""
        return self.binop("!=", v.sub, ir.Const(0, v.sub.type, span=span), span)

    def _byte_addresses(self, v: View, at: ir.Expr, span):
        """The narrower storage's element indices that make up element ``at`` of ``v``."""
        r = v.elem.itemsize // v.src[1].itemsize
        first = self.binop("+", self.binop("*", self.convert(at, T.int64, span), ir.Const(r, T.int64, span=span),
                                           span), v.sub, span)
        first = self.once(first, span)
        return [first if k == 0 else self.binop("+", first, ir.Const(k, T.int64, span=span), span)
                for k in range(r)]

    def _vector_mark(self, v: View, first: ir.Expr, in_src: bool = False):
        """``ir.Load.vector`` for the access of ``v``'s first component at element ``first``
        (of the narrower storage ``v.src`` when ``in_src``), or None: no rule, or an address
        the rule provably keeps."""
        if self.vector_align is None or v.width == 1 or v.local is not None or isinstance(v.type, ComplexType):
            return None         # (a complex number is a struct of two floats: 4-byte aligned)
        align, exact = self.vector_align(v)
        size = v.src[1].itemsize if in_src else v.elem.itemsize
        if not align or align <= size and v.sub is None:
            return None
        if exact and align % size == 0 and _multiple_of(first, align // size) and v.sub is None:
            return None
        return (v.type, int(align))

    def _assembled_load(self, v: View, at: ir.Expr, span, mark=None) -> ir.Expr:
        """Element ``at`` of ``v`` read from the bytes it covers (little-endian), for a
        misaligned address."""
        buf, e_src = v.src
        u_src, u_new = _unsigned(e_src.itemsize), _unsigned(v.elem.itemsize)
        w = u_new if u_new.itemsize >= 4 else T.uint32     # C computes narrower integers in int
        acc = None
        for k, a in enumerate(self._byte_addresses(v, at, span)):
            part = ir.Load(buf, a, e_src, span=span, vector=self._vector_mark(v, a, True) if mark and k == 0 else None)
            if e_src != u_src:
                part = ir.Bitcast(u_src, part, span=span)
            part = ir.Cast(w, part, span=span)
            if k:
                part = ir.BinOp("<<", part, ir.Const(8 * e_src.itemsize * k, w, span=span), w, span=span)
            acc = part if acc is None else ir.BinOp("|", acc, part, w, span=span)
        if w != u_new:
            acc = ir.Cast(u_new, acc, span=span)
        return acc if v.elem == u_new else ir.Bitcast(v.elem, acc, span=span)

    def _assembled_store(self, v: View, at: ir.Expr, value: ir.Expr, span, mark=None) -> list:
        buf, e_src = v.src
        u_src, u_new = _unsigned(e_src.itemsize), _unsigned(v.elem.itemsize)
        w = u_new if u_new.itemsize >= 4 else T.uint32
        bits = value if v.elem == u_new else ir.Bitcast(u_new, value, span=span)
        bits = bits if w == u_new else ir.Cast(w, bits, span=span)
        out = []
        for k, a in enumerate(self._byte_addresses(v, at, span)):
            part = bits if k == 0 else ir.BinOp(">>", bits, ir.Const(8 * e_src.itemsize * k, w, span=span),
                                                 w, span=span)
            part = ir.Cast(u_src, part, span=span)
            if e_src != u_src:
                part = ir.Bitcast(e_src, part, span=span)
            out.append(ir.Store(buf, a, part, span=span,
                                vector=self._vector_mark(v, a, True) if mark and k == 0 else None))
        return out

    # -- elements --------------------------------------------------------------------
    def view_address(self, v: View, i: ir.Expr, span=None) -> tuple[str, ir.Expr]:
        """``(buffer, element index)`` of the scalar ``v[i]`` (a scalar view)."""
        self._not_local(v, "used as a memory address here (an atomic, a function's pointer argument)", span)
        if v.inner:
            raise self.error("a row of a multi-dimensional array is not a value; index it", span)
        i = self.index(i, span)
        return v.buf, self._offset_add(v.offset, self._scaled(i, v.step, span), span)

    def _component_addresses(self, v: View, i, span):
        if v.inner:
            raise self.error("a row of a multi-dimensional array is not a value; index it", span)
        si = self._scaled(self.index(i, span), v.step, span)
        if v.width > 1 and not _zero(v.offset):
            si = self.once(si, span)
        out = []
        for c in range(v.width):
            at = self._offset_add(si, ir.Const(c, T.int32, span=span), span)
            out.append(self._offset_add(v.offset, at, span))
        return v.buf, out

    def view_load(self, v: View, i: ir.Expr, span=None) -> ir.Expr:
        """The value ``v[i]`` (``*v`` is ``v[0]``): a load, or a vector of loads."""
        if v.inner:
            raise self.error("a row of a multi-dimensional array is not a value; index it", span)
        if v.atomic:
            raise self.error(f"'{v.buf}' is atomic; read it with atomic_load_explicit", span)
        if self.plain_access is not None and v.local is None:
            self.plain_access(v, "read plainly", span)
        buf, ats = self._component_addresses(v, i, span)
        if v.local is not None:
            loads = [self.local_load(v, a, span) for a in ats]
            return loads[0] if v.width == 1 else ir.VecCons(v.type, loads, span=span)
        if v.sub is not None:       # aligned: one access; else the bytes addressed
            ats = [self.once(a, span) for a in ats]
            loads = [ir.Select(self._misaligned(v, span), self._assembled_load(v, a, span, c == 0),
                               ir.Load(buf, a, v.elem, span=span, vector=self._vector_mark(v, a) if c == 0 else None),
                               v.elem, span=span) for c, a in enumerate(ats)]
        else:
            loads = [ir.Load(buf, a, v.elem, span=span) for a in ats]
            loads[0].vector = self._vector_mark(v, ats[0])
        if v.width == 1:
            return loads[0]
        if isinstance(v.type, ComplexType):
            return ComplexValue(loads[0], loads[1], span=span)
        return ir.VecCons(v.type, loads, span=span)

    def _parts(self, value, v: View, span) -> list:
        """The values of ``value``'s components (a vector's, a complex number's parts)."""
        if isinstance(value, ComplexValue):
            return [value.real, value.imag]
        return [self.vector_index(value, c, span) for c in range(v.width)]

    def view_store(self, v: View, i: ir.Expr, value: ir.Expr, span=None) -> list:
        """Statements storing ``value`` (converted to the element type) at ``v[i]``."""
        if v.inner:
            raise self.error("cannot assign to a row of a multi-dimensional array", span)
        if self.plain_access is not None and v.local is None:
            self.plain_access(v, "stored plainly", span)
        value = self.convert(value, v.type, span)
        buf, ats = self._component_addresses(v, i, span)
        if v.local is not None:
            if v.width == 1:
                return self.local_store(v, ats[0], value, span)
            value = self.once(value, span)
            return [s for c, a in enumerate(ats)
                    for s in self.local_store(v, a, self._parts(value, v, span)[c], span)]
        if v.sub is not None:
            value = self.once(value, span)
            ats = [self.once(a, span) for a in ats]
            comps = [value] if v.width == 1 else self._parts(value, v, span)
            return [ir.If(self._misaligned(v, span),
                          [s for j, (a, c) in enumerate(zip(ats, comps))
                           for s in self._assembled_store(v, a, c, span, j == 0)],
                          [ir.Store(buf, a, c, span=span, vector=self._vector_mark(v, a) if j == 0 else None)
                           for j, (a, c) in enumerate(zip(ats, comps))], span=span)]
        if v.width == 1:
            return [ir.Store(buf, ats[0], value, span=span)]
        value = self.once(value, span)
        parts = self._parts(value, v, span)
        out = [ir.Store(buf, a, parts[c], span=span) for c, a in enumerate(ats)]
        out[0].vector = self._vector_mark(v, ats[0])
        return out

    def view_arg(self, v: View, span=None) -> ir.BufArg:
        """``v`` passed to a pointer parameter of a device function (a scalar view)."""
        self._not_local(v, "passed to a function", span)
        if v.width != 1 and (v.sub is not None or v.packed or v.inner):
            raise self.error(f"passing a {v.type.name} pointer to a function is not supported", span,
                             hint="pass the scalar pointer and build the vector in the function")
        off = None if _zero(v.offset) else v.offset
        if off is not None and off.type == T.uint64:
            # the callee adds int64 offsets to it (NumPy: uint64 + int64 is float64)
            off = self.convert(off, T.int64, span)
        return ir.BufArg(v.buf, off, span=span)

    def _not_local(self, v: View, what, span):
        if v.local is not None:
            raise self.error(f"a pointer to the local variable '{v.buf}' cannot be {what}", span,
                             hint="declare it as a one-element array, or pass it by reference")

    # -- reinterpreting values ------------------------------------------------------------
    def bitcast(self, t, e: ir.Expr, span=None) -> ir.Expr:
        """``as_type<t>(e)``: the bits of ``e`` read as ``t`` (scalars or vectors of the same
        size in bytes); folded on constants.

        >>> from metalbench.semantics import Semantics
        >>> hex(Semantics().bitcast(T.uint32, ir.Const(1.0, T.float32)).value)
        '0x3f800000'
        """
        if e.type is None:
            raise self.error("as_type of something without a value (void)", span)

        def size(x):
            return x.itemsize if isinstance(x, T.ScalarType) else x.elem.itemsize * T.padded(x.n)
        if T.elem_of(t).is_bool or T.elem_of(e.type).is_bool or size(t) != size(e.type):
            raise self.error(f"as_type<{t.msl}> of a {e.type.msl}: the types must have the same size "
                             f"({size(t)} and {size(e.type)} bytes) and not be bool", span,
                             hint="as_type reinterprets bits; to convert a value, cast it: T(x)")
        if (isinstance(t, T.VectorType) and T.padded(t.n) != t.n) != \
                (isinstance(e.type, T.VectorType) and T.padded(e.type.n) != e.type.n):
            raise self.error("as_type between a padded vector (3, 5, 6, 7, ... components) and another "
                             "type is not supported", span)
        if e.type == t:
            return e
        if isinstance(e, ir.Const) and isinstance(e.type, T.ScalarType):
            import numpy as np
            el = T.elem_of(t)
            vs = [ir.Const(v.item() if not el.is_float else float(v), el, span=span)
                  for v in np.array([e.value], dtype=e.type.np).view(el.np)]
            # a vector of the constant's bits (as_type<half2>(0x3C004000u)): its components
            return vs[0] if isinstance(t, T.ScalarType) else self.vector(t, vs, span)
        return ir.Bitcast(t, e, span=span)

    # -- pointer arithmetic between two views ----------------------------------------------
    def view_difference(self, a: View, b: View, span=None) -> ir.Expr:
        """``a - b`` of two pointers into one buffer: elements between them (``long``)."""
        self._same_target(a, b, "subtract", span)
        d = self._offset_add(self.convert(a.offset, T.int64, span), self.convert(b.offset, T.int64, span),
                             span, "-")
        if a.step != 1:
            d = ir.BinOp("/", self.convert(d, T.int64, span), ir.Const(a.step, T.int64, span=span), T.int64,
                         span=span)
        return d

    def view_compare(self, op: str, a: View, b: View, span=None) -> ir.Expr:
        """``a op b`` (a comparison) of two pointers into one buffer."""
        self._same_target(a, b, "compare", span)
        return self.binop(op, self.convert(a.offset, T.int64, span), self.convert(b.offset, T.int64, span), span)

    def _same_target(self, a: View, b: View, what, span):
        if a.buf != b.buf:
            raise self.error(f"cannot {what} pointers into different buffers ('{a.buf}' and '{b.buf}')", span)
