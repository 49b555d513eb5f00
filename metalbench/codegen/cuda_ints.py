"""Integer semantics of the printed CUDA where C++ on an NVIDIA GPU is not MSL as the simulator
runs it (``metalbench.scalar``'s rules): division and remainder by 0 (and ``MIN / -1``),
shift counts of the type's width or more, and float -> narrow integer conversions.

Scalars have had their helpers since issue 12 (``mb_idiv``, ``mb_imod``, masked shift
counts, ``mb_f2narrow``). Vectors had not: ``int4 / int4`` printed the component-wise
``operator/`` of ``mb_vec``, so a zero component gave what the GPU's division gives
(all ones), ``uint4 << 35`` what its shifter gives (0: PTX clamps counts, MSL and the
simulator mask them to 3), and ``uchar4(float4(300.5))`` what an unsaturated ``cvt``
gives (the simulator saturates to 255). :class:`IntegerVectorMixin` prints those
vector operators through per-component helpers with the scalar rules; narrow vector
conversions go through ``mb_cvt`` (``cuda_prelude._BASE``), which saturates as ``mb_f2narrow``
does.

    >>> from metalbench import ir, types as T
    >>> from metalbench.codegen import cuda
    >>> i4 = T.vector_of(T.int32, 4)
    >>> a, b = ir.Var("a", i4), ir.Var("b", i4)
    >>> k = ir.KernelIR("k", [ir.Param("o", "buffer", T.int32, is_output=True)], [])
    >>> cuda.CUDAPrinter(k).expr(ir.BinOp("/", a, b, i4))
    'mb_vdiv(a, b)'
    >>> cuda.CUDAPrinter(k).expr(ir.BinOp("<<", a, b, i4))
    'mb_vshl(a, b)'
"""
from __future__ import annotations

from .. import types as T
from .c_like import ASSIGN, POSTFIX

IDIV = """// integer / as metalbench.scalar defines it: x / 0 is 0, MIN / -1 wraps to MIN
template <class T> __device__ inline T mb_idiv(T a, T b) {
    if (b == T(0)) return T(0);
    if (T(-1) < T(0) && b == T(-1)) return static_cast<T>(0ull - static_cast<unsigned long long>(a));
    return a / b;
}"""
IMOD = """// integer % as metalbench.scalar defines it: x % 0 is 0, x % -1 is 0
template <class T> __device__ inline T mb_imod(T a, T b) {
    if (b == T(0) || (T(-1) < T(0) && b == T(-1))) return T(0);
    return a % b;
}"""
F2NARROW = """// float -> char/short: truncate and saturate to the type's range, NaN -> 0 (metalbench.scalar)
template <class T, class F> __device__ inline T mb_f2narrow(F x, int lo, int hi) {
    if (x != x) return T(0);
    if (x <= F(lo)) return T(lo);
    if (x >= F(hi)) return T(hi);
    return static_cast<T>(static_cast<int>(x));
}"""

# per component, with the scalar rules; the right operand may be a vector or a scalar
_VOPS = {
    "/": ("mb_vdiv", "mb_idiv<T>(a[i], static_cast<T>(mb_comp(b, i)))"),
    "%": ("mb_vmod", "mb_imod<T>(a[i], static_cast<T>(mb_comp(b, i)))"),
    "<<": ("mb_vshl", "static_cast<T>(a[i] << (static_cast<int>(mb_comp(b, i)) & mb_shift_mask<T>()))"),
    ">>": ("mb_vshr", "static_cast<T>(a[i] >> (static_cast<int>(mb_comp(b, i)) & mb_shift_mask<T>()))"),
}
_VOP = """template <class T, int N, class B> __device__ inline mb_vec<T, N> {fn}(const mb_vec<T, N>& a, const B& b) {{
    mb_vec<T, N> r;
    for (int i = 0; i < N; ++i) r[i] = {each};
    return r;
}}"""
_SHIFT_MASK = """// a shift count modulo the operand's width, as metalbench.scalar (PTX would clamp it)
template <class T> __device__ constexpr int mb_shift_mask() { return static_cast<int>(sizeof(T)) * 8 - 1; }"""


class IntegerVectorMixin:
    """Mixed into ``CUDAPrinter`` before ``CPrinter``: integer vector ``/ % << >>``."""

    def e_BinOp(self, e):
        t = e.type
        if isinstance(t, T.VectorType) and t.elem.is_int and e.op in _VOPS:
            fn, each = _VOPS[e.op]
            if e.op in ("/", "%"):
                self.need("mb_idiv" if e.op == "/" else "mb_imod", IDIV if e.op == "/" else IMOD)
            else:
                self.need("mb_shift_mask", _SHIFT_MASK)
            self.tname(t)                                  # the vector structs come first
            self.need(fn, _VOP.format(fn=fn, each=each))
            return f"{fn}({self.expr(e.a, ASSIGN)}, {self.expr(e.b, ASSIGN)})", POSTFIX
        return super().e_BinOp(e)
