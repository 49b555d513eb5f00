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


_CUDA_MMA_TC = """\
// simdgroup_multiply_accumulate on tensor cores (METALBENCH_CUDA_TENSOR_CORES=1): half or
// bfloat a and b, float c and d. The operands move from Metal's thread_elements() layout to
// mma.sync m16n8k8's fragments (rows 8..15 of A zero) and back with shuffles. The sums are the
// tensor cores': within float rounding of the exact version, not bit for bit.
__device__ inline unsigned mb_metal_lane(unsigned r, unsigned c) {
    return ((r >> 2) & 1u) * 16u + ((c >> 2) & 1u) * 8u + ((r >> 1) & 1u) * 4u + (r & 1u) * 2u + ((c >> 1) & 1u);
}
template <class T> __device__ inline unsigned mb_pack2(T lo, T hi) {
    unsigned short l = *reinterpret_cast<unsigned short*>(&lo), h = *reinterpret_cast<unsigned short*>(&hi);
    return (unsigned)l | ((unsigned)h << 16);
}
template <class T, class C>
__device__ inline mb_vec<float, 2> mb_simdgroup_mma_tc(const mb_vec<T, 2>& a, const mb_vec<T, 2>& b,
                                                       const mb_vec<C, 2>& c) {
    const unsigned lane = mb_lane(), m = __activemask();
    const unsigned g = lane >> 2, t = lane & 3u;
    const unsigned la = mb_metal_lane(g, 2u * t);                       // A[g][2t], A[g][2t + 1]
    const unsigned ra = mb_pack2(mb_shfl(a[0], (int)la, m), mb_shfl(a[1], (int)la, m));
    const unsigned lb0 = mb_metal_lane(2u * t, g & ~1u), lb1 = mb_metal_lane(2u * t + 1u, g & ~1u);
    const T b00 = mb_shfl(b[0], (int)lb0, m), b01 = mb_shfl(b[1], (int)lb0, m);     // B[2t][g]
    const T b10 = mb_shfl(b[0], (int)lb1, m), b11 = mb_shfl(b[1], (int)lb1, m);     // B[2t + 1][g]
    const unsigned rb = mb_pack2((g & 1u) ? b01 : b00, (g & 1u) ? b11 : b10);
    const float c0 = mb_cvt<float>(mb_shfl(c[0], (int)la, m)), c1 = mb_cvt<float>(mb_shfl(c[1], (int)la, m));
    float d0 = 0.0f, d1 = 0.0f, d2, d3;
#if defined(__CUDA_ARCH__)
    if constexpr (mb_is_same<T, __half>::value) {
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                     "{%7,%8,%9,%10};" : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
                     : "r"(ra), "r"(0u), "r"(rb), "f"(c0), "f"(c1), "f"(0.0f), "f"(0.0f));
    } else {
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                     "{%7,%8,%9,%10};" : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
                     : "r"(ra), "r"(0u), "r"(rb), "f"(c0), "f"(c1), "f"(0.0f), "f"(0.0f));
    }
#endif
    (void)ra;
    (void)rb;
    (void)c0;
    (void)c1;
    (void)d2;
    (void)d3;
    const unsigned r = ((lane >> 4) & 1u) * 4u + ((lane >> 2) & 1u) * 2u + ((lane >> 1) & 1u);
    const unsigned col = ((lane >> 3) & 1u) * 4u + (lane & 1u) * 2u;
    const unsigned src = r * 4u + col / 2u;                             // the fragment lane of D[r][col]
    return mb_vec<float, 2>(mb_shfl(d0, (int)src, m), mb_shfl(d1, (int)src, m));
}"""

_SAME = "template <class A, class B> struct mb_is_same { static constexpr bool value = false; };\n" \
        "template <class A> struct mb_is_same<A, A> { static constexpr bool value = true; };"


def tensor_cores_enabled() -> bool:
    """``METALBENCH_CUDA_TENSOR_CORES=1``: half/bfloat multiplies with float results run on
    tensor cores (faster; not bit-identical to the simulator)."""
    import os
    return os.environ.get("METALBENCH_CUDA_TENSOR_CORES", "") not in ("", "0")


class CUDAMatrixMixin:
    """The warp multiply (mixed into ``CUDAPrinter``; the rest is lowered first)."""

    def e_MatrixMul(self, e):
        from ..builtins.simd import _SHFL
        self.need("mb_shfl", _SHFL)
        a, b = e.a.type.elem, e.b.type.elem
        if tensor_cores_enabled() and a == b and a in (T.float16, T.bfloat16) and e.type.elem == T.float32 \
                and (e.c is None or e.c.type.elem == T.float32):
            self.need("mb_is_same", _SAME)
            self.need("mb_simdgroup_mma_tc", _CUDA_MMA_TC)
            c = self.expr(e.c, ASSIGN) if e.c is not None else f"{self.tname(e.type)}(0.0f)"
            return f"mb_simdgroup_mma_tc({self.expr(e.a, ASSIGN)}, {self.expr(e.b, ASSIGN)}, {c})", POSTFIX
        self.need("mb_simdgroup_mma", _CUDA_MMA)
        el = self.tname(e.type.elem)
        c = self.expr(e.c, ASSIGN) if e.c is not None else f"{self.tname(e.type)}({self.literal(0, e.type.elem)})"
        return f"mb_simdgroup_mma<{el}>({self.expr(e.a, ASSIGN)}, {self.expr(e.b, ASSIGN)}, {c})", POSTFIX
