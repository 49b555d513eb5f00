"""SIMD-group matrix functions (Metal's ``<metal_simdgroup_matrix>``): declared here for
their names, docs and the Metal shim; the front ends lower them to the IR's matrix nodes
(``ir.MatrixFill``, ``ir.MatrixLoad``, ``ir.MatrixStore``, ``ir.MatrixMul``,
``ir.MatrixElements``), whose semantics are in ``passes/simdgroup_matrix.py``.

    >>> from metalbench.builtins import registry
    >>> registry.lookup("metal::simdgroup_multiply_accumulate").node
    'MatrixMul'
"""
from __future__ import annotations

from .core import add_builtin

GROUP = "SIMD-group matrices"

# The shim's declarations of the type (typedefs for float, half and bfloat).
SHIM_TYPE = """\
template <class T, int Cols, int Rows> struct simdgroup_matrix {
  simdgroup_matrix() = default;
  simdgroup_matrix(T diagonal_value);
  vec<T, 2>& thread_elements();
  const vec<T, 2>& thread_elements() const;
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;"""

_LAYOUT = ("Each thread of the SIMD-group holds two elements, m.thread_elements(): lane l holds (r, c) and "
           "(r, c + 1) with q = l / 4, r = (q & 4) + (l / 2) % 4, c = (q & 2) * 2 + (l % 2) * 2 (the layout "
           "MLX's steel GEMM relies on). Every thread of the SIMD-group must take part.")

add_builtin("make_filled_simdgroup_matrix", group=GROUP, kind="node", node="MatrixFill",
            doc="An 8x8 SIMD-group matrix with every element equal to value.",
            example="simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);",
            params_doc="<T, 8, 8>(value: T) -> simdgroup_matrix<T, 8, 8>",
            details="T is float, half or bfloat. The constructor simdgroup_float8x8(v) instead puts v on the "
                    "diagonal (0 elsewhere); simdgroup_float8x8 m; leaves m unset. " + _LAYOUT,
            shim="template <class T, int C, int R> simdgroup_matrix<T, C, R> make_filled_simdgroup_matrix(T);")
add_builtin("simdgroup_load", group=GROUP, kind="node", node="MatrixLoad",
            doc="Loads an 8x8 matrix from device or threadgroup memory into a SIMD-group matrix.",
            example="simdgroup_load(a, tile + 8 * k, 32);",
            params_doc="(m, src, elements_per_row = 8, origin = ulong2(0, 0), transpose = false) -> None",
            details="Element (r, c) of m is src[(origin.y + r) * elements_per_row + origin.x + c]; with transpose "
                    "it is src[(origin.y + c) * elements_per_row + origin.x + r] (origin is (column, row) in the "
                    "source). src points to elements of m's type; transpose is a compile-time constant. " + _LAYOUT,
            shim="template <class T, int C, int R> void simdgroup_load(simdgroup_matrix<T, C, R>&, const T*, "
                 "ulong elements_per_row = C, ulong2 matrix_origin = 0, bool transpose_matrix = false);")
add_builtin("simdgroup_store", group=GROUP, kind="node", node="MatrixStore",
            doc="Stores an 8x8 SIMD-group matrix to device or threadgroup memory.",
            example="simdgroup_store(acc, out + 8 * row * n, n);",
            params_doc="(m, dst, elements_per_row = 8, origin = ulong2(0, 0), transpose = false) -> None",
            details="The addressing of simdgroup_load.",
            shim="template <class T, int C, int R> void simdgroup_store(simdgroup_matrix<T, C, R>, T*, "
                 "ulong elements_per_row = C, ulong2 matrix_origin = 0, bool transpose_matrix = false);")
add_builtin("simdgroup_multiply_accumulate", group=GROUP, kind="node", node="MatrixMul",
            doc="d = a * b + c for 8x8 SIMD-group matrices.",
            example="simdgroup_multiply_accumulate(acc, a, b, acc);",
            params_doc="(d, a, b, c) -> None",
            details="a, b, c and d may have different element types (float, half, bfloat). metalbench computes "
                    "the products exactly and the sum over k in order in float64, rounded once to float and then "
                    "to d's type, on the simulator and on CUDA alike (with METALBENCH_CUDA_TENSOR_CORES=1, CUDA "
                    "multiplies half or bfloat matrices into float ones on tensor cores: faster, within float "
                    "rounding of that).",
            shim="template <class T, class U, class V, class W, int K, int M, int N> void "
                 "simdgroup_multiply_accumulate(simdgroup_matrix<T, K, N>&, const simdgroup_matrix<U, K, M>&, "
                 "const simdgroup_matrix<V, M, N>&, const simdgroup_matrix<W, K, N>&);")
add_builtin("simdgroup_multiply", group=GROUP, kind="node", node="MatrixMul",
            doc="d = a * b for 8x8 SIMD-group matrices.", example="simdgroup_multiply(d, a, b);",
            params_doc="(d, a, b) -> None", details="As simdgroup_multiply_accumulate with c = 0.",
            shim="template <class T, class U, class V, int K, int M, int N> void "
                 "simdgroup_multiply(simdgroup_matrix<T, K, N>&, const simdgroup_matrix<U, K, M>&, "
                 "const simdgroup_matrix<V, M, N>&);")


def shim_declarations() -> str:
    """The Metal shim's ``<metal_simdgroup_matrix>``: the type, then each function."""
    from .core import registry
    funcs = [b.shim for b in registry.all() if b.group == GROUP]
    return "// ---- SIMD-group matrices (generated from the builtin registry)\n" + SHIM_TYPE + "\n" + "\n".join(funcs)
