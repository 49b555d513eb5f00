"""Pointers to scalar and vector locals: ``(thread uint16_t*)&packed``, ``(thread uchar*)&u4``.

Quantisation kernels read the halves, bytes or nibble pairs of a packed word through a
pointer to a by-value local. A local is an IR variable, not memory, so such a pointer is a
:class:`~metalbench.semantics.views.View` whose ``local`` is the variable (``buf`` its
name): pointer arithmetic moves its offset as for any view, and each access becomes bit
operations on the variable (little-endian, as Apple GPUs and NVIDIA are). Element ``k`` of
a ``T`` view over a local of ``c``-byte components is, with ``w = max(sizeof T, c)``, the
local read as words of ``w`` bytes (its components, or ``as_type`` to wider words)::

    word = words[k / (w / sizeof T)];   bits = (word >> (k % (w / sizeof T)) * 8 sizeof T) & mask

reinterpreted as ``T``; a store replaces those bits (a read-modify-write of the variable).
A run-time ``k`` picks the word with a chain of selects: an index outside the local reads 0
and a store there changes nothing (out of bounds, as the simulator treats thread arrays).

    >>> from metalbench import ir, types as T
    >>> from metalbench.semantics import Semantics, MSL
    >>> sem = Semantics(MSL)
    >>> p = sem.view_cast(sem.local_view(ir.Var("u", T.uint32)), T.uint16)   # (thread ushort*)&u
    >>> print(ir.dump(sem.view_load(p, ir.Const(1, T.int32))))
    uint16(((u >> 16) & 65535))
"""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from .. import types as T


def _unsigned(size: int) -> T.ScalarType:
    return {1: T.uint8, 2: T.uint16, 4: T.uint32, 8: T.uint64}[size]


class LocalViewSemantics:
    """Views of scalar and vector locals (mixed into :class:`~metalbench.semantics.Semantics`)."""

    def local_view(self, var: ir.Expr, span=None, name=None):
        """``&x`` of a scalar or vector local ``x`` (an ``ir.Var``, or a constant for a
        folded ``const`` local named ``name``, which can only be read): a thread pointer to
        its value."""
        from .views import View
        name = var.name if isinstance(var, ir.Var) else name or "a constant"
        if not isinstance(var.type, (T.ScalarType, T.VectorType)) or T.elem_of(var.type).is_bool:
            raise self.error(f"a pointer to the {getattr(var.type, 'name', var.type)} local '{name}' is not "
                             "supported", span)
        return View(name, "thread", var.type, ir.Const(0, T.int32, span=span), const=not isinstance(var, ir.Var),
                    local=var)

    def _local_cast(self, v, t, space, const, packed, span):
        """``(thread t*)p`` of a pointer into a local: the offset counted in ``t``'s elements."""
        if space not in (None, "thread"):
            raise self.error(f"a pointer to the local '{v.buf}' points to thread memory, not {space}", span)
        e_new, e_old = T.elem_of(t), v.elem
        if e_new.is_bool:
            raise self.error(f"a bool pointer into the local '{v.buf}' is not supported", span)
        s_old, s_new = e_old.itemsize, e_new.itemsize
        src = v.local.type
        n = src.n if isinstance(src, T.VectorType) else 1
        c = T.elem_of(src).itemsize
        if s_new > c and (T.padded(n) != n or (n * c) % s_new):
            raise self.error(f"reading {e_new.msl} values from the local '{v.buf}' (a {src.msl}) through a "
                             "pointer is not supported: they do not tile it", span,
                             hint="read its components and combine them, or use as_type")
        off = v.offset
        if s_old > s_new:
            off = self.binop("*", off, ir.Const(s_old // s_new, off.type, span=span), span)
        elif s_old < s_new:
            r = s_new // s_old
            if not (isinstance(off, ir.Const) and off.value % r == 0):
                raise self.error(f"a cast to a {e_new.msl} pointer into the local '{v.buf}' at an offset that is "
                                 f"not a whole number of {e_new.msl} elements is not supported", span)
            off = ir.Const(off.value // r, off.type, span=span)
        const = v.const if const is None else (const or v.const)
        return replace(v, type=t, offset=off, const=const, packed=packed)

    def _local_words(self, v, span):
        """``(W, words, per)``: the local as ``w``-byte unsigned words (expressions), and
        how many view elements one word holds."""
        src, x = v.local.type, v.local
        n = src.n if isinstance(src, T.VectorType) else 1
        c, t = T.elem_of(src).itemsize, v.elem.itemsize
        w = max(c, t)
        W = _unsigned(w)
        if w == c:
            comps = [x] if n == 1 else [self.vector_index(x, j, span) for j in range(n)]
            words = [self.bitcast(W, e, span) for e in comps]
        else:
            m = n * c // w
            wv = self.bitcast(W if m == 1 else T.vector_of(W, m), x, span)
            words = [wv] if m == 1 else [self.vector_index(wv, j, span) for j in range(m)]
        return W, words, w // t

    def _local_position(self, at, per, span):
        """(word index, element within the word) of view element ``at``, unsigned so that a
        negative index is out of range."""
        u = _unsigned(8 if at.type.itemsize == 8 else 4)
        at = self.once(self.convert(at, u, span), span)
        sh = (per - 1).bit_length()
        ci = self.binop(">>", at, ir.Const(sh, T.int32, span=span), span) if sh else at
        r = self.binop("&", at, ir.Const(per - 1, u, span=span), span)
        return ci, r

    def local_load(self, v, at: ir.Expr, span=None) -> ir.Expr:
        """Scalar element ``at`` (in ``v.elem`` units) of a view over a local."""
        W, words, per = self._local_words(v, span)
        X = W if W.itemsize >= 4 else T.uint32        # C computes narrower integers in int
        U, bits_n = _unsigned(v.elem.itemsize), 8 * v.elem.itemsize
        if isinstance(at, ir.Const):
            ci, r = divmod(int(at.value), per)
            if not 0 <= ci < len(words):
                return ir.Const(0.0 if v.elem.is_float else 0, v.elem, span=span)
            word, sh = self.convert(words[ci], X, span), ir.Const(r * bits_n, T.int32, span=span)
        else:
            ci, r = self._local_position(at, per, span)
            word = ir.Const(0, X, span=span)
            for j in reversed(range(len(words))):
                word = self.select(self.binop("==", ci, ir.Const(j, ci.type, span=span), span),
                                   self.convert(words[j], X, span), word, span)
            sh = self.binop("*", r, ir.Const(bits_n, r.type, span=span), span)
        if per > 1:
            word = self.binop(">>", word, sh, span)
            word = self.binop("&", word, ir.Const((1 << bits_n) - 1, X, span=span), span)
        return self.bitcast(v.elem, self.convert(word, U, span), span)

    def local_store(self, v, at: ir.Expr, value: ir.Expr, span=None) -> list:
        """Statements storing scalar ``value`` (of ``v.elem``) at element ``at`` of a view
        over a local: the local assigned with those bits replaced."""
        x = v.local
        if not isinstance(x, ir.Var) or v.const:
            raise self.error(f"'{v.buf}' is read-only: it cannot be written through a pointer", span)
        W, words, per = self._local_words(v, span)
        X = W if W.itemsize >= 4 else T.uint32
        U, bits_n = _unsigned(v.elem.itemsize), 8 * v.elem.itemsize
        bits = self.once(self.convert(self.bitcast(U, value, span), X, span), span)
        const_at = isinstance(at, ir.Const)
        if const_at:
            ci, r = divmod(int(at.value), per)
            if not 0 <= ci < len(words):
                return []                              # out of bounds: dropped
            sh = ir.Const(r * bits_n, T.int32, span=span)
        else:
            ci, r = self._local_position(at, per, span)
            sh = self.once(self.binop("*", r, ir.Const(bits_n, r.type, span=span), span), span)
        new = []
        for j, word in enumerate(words):
            if const_at and j != ci:
                new.append(word)
                continue
            if per == 1:
                nw = bits
            else:
                mask = self.binop("<<", ir.Const((1 << bits_n) - 1, X, span=span), sh, span)
                keep = self.binop("&", self.convert(word, X, span), self.unop("~", mask, span), span)
                nw = self.binop("|", keep, self.binop("<<", bits, sh, span), span)
            nw = self.convert(nw, W, span)
            if not const_at:
                nw = self.select(self.binop("==", ci, ir.Const(j, ci.type, span=span), span), nw, word, span)
            new.append(nw)
        src = x.type
        c = T.elem_of(src).itemsize
        if c == W.itemsize:
            comps = [self.bitcast(T.elem_of(src), e, span) for e in new]
            value = comps[0] if len(comps) == 1 else ir.VecCons(src, comps, span=span)
        else:
            wv = new[0] if len(new) == 1 else ir.VecCons(T.vector_of(W, len(new)), new, span=span)
            value = self.bitcast(src, wv, span)
        return [ir.Assign(ir.Var(x.name, x.type, span=span), value, span=span)]
