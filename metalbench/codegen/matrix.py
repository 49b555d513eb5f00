"""SIMD-group matrices in the printers (mixins of ``MSLPrinter`` and ``CUDAPrinter``).

Metal prints the IR's matrix nodes as Metal spells them: ``simdgroup_float8x8`` values,
``simdgroup_load``/``simdgroup_store``/``simdgroup_multiply_accumulate`` statements on the
variable or array element they assign, ``m.thread_elements()[k] = x`` for element
writes; a matrix operation inside a larger expression goes through a small helper::

    >>> from metalbench import ir, types as T
    >>> from metalbench.codegen import msl
    >>> M = T.MatrixType(T.float32)
    >>> a, c = ir.Var("a", M), ir.Var("c", M)
    >>> k = ir.KernelIR("k", [], [ir.Decl(c, ir.MatrixFill(ir.Const(0.0, T.float32), M)),
    ...                           ir.Assign(c, ir.MatrixMul(a, a, c, M))])
    >>> print(msl.render(k).body)
    simdgroup_float8x8 c = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    simdgroup_multiply_accumulate(c, a, a, c);

CUDA prints the kernel after ``passes.simdgroup_matrix.lower`` (each thread's two
elements as an ``mb_vec<T, 2>``): only the multiply is left, a warp-shuffle helper that
computes exactly what the simulator computes.
"""
from __future__ import annotations

from .. import ir
from .. import types as T
from .c_like import ASSIGN, POSTFIX

_MSL_LOAD = """\
// simdgroup_load as a value.
template <class T, class P>
inline simdgroup_matrix<T, 8, 8> mb_simdgroup_load(P p, ulong n, bool transpose) {
    simdgroup_matrix<T, 8, 8> m;
    simdgroup_load(m, p, n, ulong2(0, 0), transpose);
    return m;
}"""

_MSL_MMA = """\
// simdgroup_multiply_accumulate / simdgroup_multiply as values.
template <class T, class A, class B, class C>
inline simdgroup_matrix<T, 8, 8> mb_simdgroup_mma(A a, B b, C c) {
    simdgroup_matrix<T, 8, 8> d;
    simdgroup_multiply_accumulate(d, a, b, c);
    return d;
}
template <class T, class A, class B>
inline simdgroup_matrix<T, 8, 8> mb_simdgroup_mul(A a, B b) {
    simdgroup_matrix<T, 8, 8> d;
    simdgroup_multiply(d, a, b);
    return d;
}"""

_MSL_FROM = """\
// The simdgroup matrix whose thread elements are v.
template <class T>
inline simdgroup_matrix<T, 8, 8> mb_simdgroup_from(vec<T, 2> v) {
    simdgroup_matrix<T, 8, 8> m;
    m.thread_elements() = v;
    return m;
}"""


def _is_mat(t) -> bool:
    return isinstance(t, T.MatrixType)


class MSLMatrixMixin:
    """Metal spellings of the matrix nodes (mixed into ``MSLPrinter``)."""

    def tname(self, t) -> str:
        if _is_mat(t):
            return t.name
        return super().tname(t)

    def _ptr(self, buf, index) -> str:
        if isinstance(index, ir.Const) and index.value == 0:
            return self.name(buf)
        return f"{self.name(buf)} + {self.expr(index, 13)}"

    def e_MatrixFill(self, e):
        v = self.expr(e.value, ASSIGN)
        if e.diagonal:
            return f"{self.tname(e.type)}({v})", POSTFIX
        return f"make_filled_simdgroup_matrix<{self.tname(e.type.elem)}, 8, 8>({v})", POSTFIX

    def e_MatrixLoad(self, e):
        self.need("mb_simdgroup_load", _MSL_LOAD)
        return (f"mb_simdgroup_load<{self.tname(e.type.elem)}>({self._ptr(e.buf, e.index)}, "
                f"{self.expr(e.stride, ASSIGN)}, {'true' if e.transpose else 'false'})"), POSTFIX

    def e_MatrixMul(self, e):
        self.need("mb_simdgroup_mma", _MSL_MMA)
        el = self.tname(e.type.elem)
        a, b = self.expr(e.a, ASSIGN), self.expr(e.b, ASSIGN)
        if e.c is None:
            return f"mb_simdgroup_mul<{el}>({a}, {b})", POSTFIX
        return f"mb_simdgroup_mma<{el}>({a}, {b}, {self.expr(e.c, ASSIGN)})", POSTFIX

    def e_MatrixElements(self, e):
        return f"{self.expr(e.matrix, POSTFIX)}.thread_elements()", POSTFIX

    def e_MatrixFromElements(self, e):
        self.need("mb_simdgroup_from", _MSL_FROM)
        return f"mb_simdgroup_from({self.expr(e.value, ASSIGN)})", POSTFIX

    # -- statements that assign a matrix: Metal's functions write their first argument
    def matrix_write(self, lv: str, same, v) -> list[str] | None:
        """The statements for ``lv = v`` when ``v`` is a matrix operation (``same(e)``
        tells whether expression ``e`` is the lvalue itself), else None."""
        if isinstance(v, ir.MatrixLoad):
            return [f"simdgroup_load({lv}, {self._ptr(v.buf, v.index)}, {self.expr(v.stride, ASSIGN)}, "
                    f"ulong2(0, 0), {'true' if v.transpose else 'false'});"]
        if isinstance(v, ir.MatrixMul):
            a, b = self.expr(v.a, ASSIGN), self.expr(v.b, ASSIGN)
            if v.c is None:
                return [f"simdgroup_multiply({lv}, {a}, {b});"]
            return [f"simdgroup_multiply_accumulate({lv}, {a}, {b}, {self.expr(v.c, ASSIGN)});"]
        if isinstance(v, ir.MatrixFromElements):
            x = v.value
            if isinstance(x, ir.VecCons) and len(x.args) == 2:
                out = []
                for k, a in enumerate(x.args):
                    keep = (isinstance(a, ir.Swizzle) and a.components == "xy"[k]
                            and isinstance(a.value, ir.MatrixElements) and same(a.value.matrix))
                    if not keep:
                        out.append(f"{lv}.thread_elements()[{k}] = {self.expr(a, ASSIGN)};")
                return out
            return [f"{lv}.thread_elements() = {self.expr(x, ASSIGN)};"]
        return None

    def s_Decl(self, s, ind, out):
        if _is_mat(s.var.type) and s.init is not None:
            n = self.name(s.var.name)
            lines = self.matrix_write(n, lambda e: False, s.init)
            if lines is not None:
                out.append(f"{ind}{self.tname(s.var.type)} {n};")
                out.extend(ind + x for x in lines)
                return
        super().s_Decl(s, ind, out)

    def s_Assign(self, s, ind, out):
        if _is_mat(s.var.type):
            lines = self.matrix_write(self.name(s.var.name),
                                      lambda e: isinstance(e, ir.Var) and e.name == s.var.name, s.value)
            if lines is not None:
                out.extend(ind + x for x in lines)
                return
        super().s_Assign(s, ind, out)

    def s_Store(self, s, ind, out):
        if _is_mat(s.value.type):
            lv = f"{self.name(s.buf)}[{self.expr(s.index)}]"
            lines = self.matrix_write(
                lv, lambda e: isinstance(e, ir.Load) and e.buf == s.buf and self.expr(e.index) == self.expr(s.index),
                s.value)
            if lines is not None:
                out.extend(ind + x for x in lines)
                return
        super().s_Store(s, ind, out)

    def s_MatrixStore(self, s, ind, out):
        out.append(f"{ind}simdgroup_store({self.expr(s.value, ASSIGN)}, {self._ptr(s.buf, s.index)}, "
                   f"{self.expr(s.stride, ASSIGN)}, ulong2(0, 0), {'true' if s.transpose else 'false'});")


_CUDA_MMA = """\
// simdgroup_multiply_accumulate on a warp. Lane l holds elements (r, c) and (r, c + 1)
// of each 8x8 matrix: r = 4*bit4 + 2*bit2 + bit1 of l, c = 4*bit3 + 2*bit0 (Metal's
// thread_elements() layout, as MLX's steel GEMM uses it). Products are exact in double
// and the sum over k runs in order from c, rounded to float and then to D: bit for bit
// what metalbench's simulator computes.
template <class D, class A, class B, class C>
__device__ inline mb_vec<D, 2> mb_simdgroup_mma(const mb_vec<A, 2>& a, const mb_vec<B, 2>& b,
                                                const mb_vec<C, 2>& c) {
    const unsigned lane = mb_lane(), m = __activemask();
    double acc0 = static_cast<double>(mb_cvt<float>(c[0]));
    double acc1 = static_cast<double>(mb_cvt<float>(c[1]));
    for (int k = 0; k < 8; ++k) {
        const int sa = (int)((lane & 0x16u) | (unsigned)(((k >> 2) & 1) << 3) | (unsigned)((k >> 1) & 1));
        const int sb = (int)((lane & 0x09u) | (unsigned)(((k >> 2) & 1) << 4) | (unsigned)(((k >> 1) & 1) << 2)
                             | (unsigned)((k & 1) << 1));
        const double ak = static_cast<double>(mb_cvt<float>(mb_shfl((k & 1) ? a[1] : a[0], sa, m)));
        const double b0 = static_cast<double>(mb_cvt<float>(mb_shfl(b[0], sb, m)));
        const double b1 = static_cast<double>(mb_cvt<float>(mb_shfl(b[1], sb, m)));
        acc0 += ak * b0;
        acc1 += ak * b1;
    }
    return mb_vec<D, 2>(mb_cvt<D>(static_cast<float>(acc0)), mb_cvt<D>(static_cast<float>(acc1)));
}"""


class CUDAMatrixMixin:
    """The warp multiply (mixed into ``CUDAPrinter``; the rest is lowered first)."""

    def e_MatrixMul(self, e):
        from ..builtins.simd import _SHFL
        self.need("mb_shfl", _SHFL)
        self.need("mb_simdgroup_mma", _CUDA_MMA)
        el = self.tname(e.type.elem)
        c = self.expr(e.c, ASSIGN) if e.c is not None else f"{self.tname(e.type)}({self.literal(0, e.type.elem)})"
        return f"mb_simdgroup_mma<{el}>({self.expr(e.a, ASSIGN)}, {self.expr(e.b, ASSIGN)}, {c})", POSTFIX
