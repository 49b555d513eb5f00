"""The simulator's SIMD-group matrix multiply (``ir.MatrixMul`` after
``passes.simdgroup_matrix.lower``): every other simdgroup-matrix operation is lowered to
plain per-thread IR before the simulator sees it.

Each thread holds two elements of each operand (the layout of
:func:`metalbench.passes.simdgroup_matrix.lane_coord`); :func:`mma` assembles the 8x8
matrices of every SIMD-group of the chunk, multiplies them and hands each thread its two
elements of the result. The arithmetic is the one the CUDA printer's warp version does,
bit for bit: products exact in float64, the sum over k = 0..7 in order from c's element
in float64, rounded to float32, then to the result type::

    >>> import numpy as np
    >>> from metalbench.sim.simd import SimdLayout
    >>> lay = SimdLayout(groups=1, tg=32, exist=None)
    >>> one = np.ones(32, np.float32)
    >>> d0, d1 = mma(lay, one, one, one, one, None, None, np.dtype(np.float32))
    >>> float(d0[0]), float(d1[31])
    (8.0, 8.0)
"""
from __future__ import annotations

import numpy as np

from ..passes.simdgroup_matrix import lane_coord

_ROW = np.array([lane_coord(lane)[0] for lane in range(32)])
_COL = np.array([lane_coord(lane)[1] for lane in range(32)])


def _matrices(lay, e0, e1) -> np.ndarray:
    """The (simdgroups, 8, 8) float64 matrices whose thread elements are ``e0``, ``e1``
    (lanes that do not exist contribute 0)."""
    V0 = np.asarray(lay.view(e0), dtype=np.float64)
    V1 = np.asarray(lay.view(e1), dtype=np.float64)
    if lay.E is not None:
        V0 = np.where(lay.E, V0, 0.0)
        V1 = np.where(lay.E, V1, 0.0)
    M = np.zeros((V0.shape[0], 8, 8))
    M[:, _ROW, _COL] = V0
    M[:, _ROW, _COL + 1] = V1
    return M


def mma(lay, a0, a1, b0, b1, c0, c1, dt):
    """This thread's two elements of ``a @ b + c`` (``c0`` None: ``a @ b``), of dtype ``dt``."""
    with np.errstate(all="ignore"):
        A = _matrices(lay, a0, a1)
        B = _matrices(lay, b0, b1)
        acc = _matrices(lay, c0, c1) if c0 is not None else np.zeros_like(A)
        for k in range(8):
            acc = acc + A[:, :, k:k + 1] * B[:, k:k + 1, :]
        D = acc.astype(np.float32).astype(dt)
    return lay.unview(D[:, _ROW, _COL]), lay.unview(D[:, _ROW, _COL + 1])


class MatrixGen:
    """``ir.MatrixMul`` for the simulator's code generator (a mixin of ``codegen.Gen``)."""

    def ex_MatrixMul(self, e):
        import sys
        self.uses_simd = True
        self.ns["_mx"] = sys.modules[__name__]
        a, b = self.exl(e.a), self.exl(e.b)
        c = self.exl(e.c) if e.c is not None else ["None", "None"]
        if self.checked:  # a SIMD-group function: orders its lanes' accesses (sync_checks.py)
            self.emit(f"_ck.simd_sync({self.m}, 32)")
        r = self.tmp(f"_mx.mma(_sg, {a[0]}, {a[1]}, {b[0]}, {b[1]}, {c[0]}, {c[1]}, {self.dtn(e.type.elem)})")
        return [f"{r}[0]", f"{r}[1]"]
