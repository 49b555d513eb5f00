"""Vector views as vector memory accesses (issue 19).

``x.view(float4)[i]`` reads and writes the n consecutive elements ``4 * i ..`` (the
semantic layer lowers a vector view to scalar accesses, so every back end and the
simulator agree on its meaning). The printers turn them back into one vector access:
``float4(x[b], x[b + 1], x[b + 2], x[b + 3])`` of one plain (not atomic) buffer is a
vector load, and the stores ``out[b + k] = v.<k-th component>`` of one vector variable
are a vector store. Each dialect spells the access (``vector_load``/``vector_store``):
Metal through packed vector types, CUDA through a helper that takes the aligned
128/64-bit path when the address allows it.

    >>> from metalbench import ir, types as T
    >>> from metalbench.codegen import msl
    >>> f4 = T.vector_of(T.float32, 4)
    >>> i = ir.Var("i", T.uint32)
    >>> idx = [ir.BinOp("*", i, ir.Const(4, T.uint32), T.uint32)]
    >>> idx += [ir.BinOp("+", idx[0], ir.Const(k, T.uint32), T.uint32) for k in (1, 2, 3)]
    >>> e = ir.VecCons(f4, [ir.Load("x", ix, T.float32) for ix in idx])
    >>> k = ir.KernelIR("k", [ir.Param("x", "buffer", T.float32)], [])
    >>> msl.MSLPrinter(k).expr(e)
    'float4(*mb_view<packed_float4>(x + i * 4u))'
"""
from __future__ import annotations

from .. import ir
from .. import types as T
from .c_like import ADD, POSTFIX, atomic_buffers


class VectorAccessMixin:
    """Mixed into a printer that defines ``vector_load(buf, first, t)`` (an expression)
    and ``vector_store(buf, first, t, value)`` (a statement)."""

    def tname(self, t) -> str:
        # vec<half, 8> has no Metal name (half8), mb_vec<__half, 8> no CUDA typedef
        if isinstance(t, T.VectorType) and t.n > 4:
            if self.d.vector_prefix:
                super().tname(t)                # the CUDA printer's header helpers
                return f"mb_vec<{self.tname(t.elem)}, {t.n}>"
            return t.msl
        return super().tname(t)

    @staticmethod
    def wide_component(e) -> bool:
        """Is ``e`` (an ``ir.Swizzle``) one component of a vector past 4 (``vec<T, n>``)?"""
        return len(e.components) == 1 and isinstance(e.value.type, T.VectorType) and e.value.type.n > 4

    def e_Swizzle(self, e):
        # a wide vector's components 4..15 have no letter in Metal or CUDA: index them all
        if self.wide_component(e):
            return f"{self.expr(e.value, POSTFIX)}[{T.COMPONENTS.index(e.components)}]", POSTFIX
        return super().e_Swizzle(e)

    def _vector_plain(self, buf: str) -> bool:
        is_atomic = getattr(self, "_is_atomic", None)
        if is_atomic is not None:
            return not is_atomic(buf)
        if getattr(self, "_vector_atomics", None) is None:
            kernel_set, per_function = atomic_buffers(self.k, outputs_together=False)
            self._vector_atomics = kernel_set.union(*per_function.values())
        return buf not in self._vector_atomics

    def _run_base(self, buf, indices) -> str | None:
        """The printed first index when ``indices`` are ``b, b + 1, ..., b + n - 1`` of a
        plain ``buf``, else None."""
        if not self._vector_plain(buf):
            return None
        base = self.expr(indices[0])
        for k, ix in enumerate(indices[1:], 1):
            if not (isinstance(ix, ir.BinOp) and ix.op == "+" and isinstance(ix.b, ir.Const) and ix.b.value == k
                    and self.expr(ix.a) == base):
                return None
        return base

    def pointer_to(self, buf, first) -> str:
        """``buf + first`` (``buf`` alone for a zero index)."""
        if isinstance(first, ir.Const) and first.value == 0:
            return self.name(buf)
        return f"{self.name(buf)} + {self.expr(first, ADD)}"

    def e_VecCons(self, e):
        t, args = e.type, e.args
        if isinstance(t, T.VectorType) and t.n in (2, 4) and len(args) == t.n and all(
                isinstance(a, ir.Load) and a.buf == args[0].buf and a.type == t.elem for a in args) \
                and self._run_base(args[0].buf, [a.index for a in args]) is not None:
            return self.vector_load(args[0].buf, args[0].index, t), POSTFIX
        return super().e_VecCons(e)

    def block(self, stmts, ind: str, out: list[str]) -> None:
        stmts = list(stmts)
        k = 0
        while k < len(stmts):
            n = self._vector_store_run(stmts, k)
            if n:
                s0 = stmts[k]
                out.append(ind + self.vector_store(s0.buf, s0.index, s0.value.value.type, s0.value.value))
                k += n
                continue
            self.stmt(stmts[k], ind, out)
            k += 1

    def _vector_store_run(self, stmts, k) -> int:
        """n when ``stmts[k:k + n]`` store the components x, y, (z, w) of one vector
        variable to consecutive elements of one buffer (a vector view's store), else 0."""
        s0 = stmts[k]
        if not (isinstance(s0, ir.Store) and isinstance(s0.value, ir.Swizzle) and s0.value.components == "x"
                and isinstance(s0.value.value, ir.Var)):
            return 0
        v = s0.value.value
        n = v.type.n if isinstance(v.type, T.VectorType) else 0
        if n not in (2, 4) or k + n > len(stmts) or s0.value.type != v.type.elem:
            return 0
        run = stmts[k:k + n]
        if not all(isinstance(s, ir.Store) and s.buf == s0.buf and isinstance(s.value, ir.Swizzle)
                   and s.value.components == T.COMPONENTS[j] and isinstance(s.value.value, ir.Var)
                   and s.value.value.name == v.name for j, s in enumerate(run)):
            return 0
        return n if self._run_base(s0.buf, [s.index for s in run]) is not None else 0
