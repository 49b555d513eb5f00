"""Pointer types behind aliases: ``using P = const device float*;`` and ``typedef device
float* Q;`` in a body, a header or a struct, used to declare pointers (initialised or set
later), as parameters of header functions, in casts (``(P)x``, ``reinterpret_cast<V4P>(x)``)
and in ``sizeof``. Aliases of reference and array types are refused by name (before, an
alias of a pointer type silently named its element type and failed later with a message
about values). Our own kernels vs NumPy, round trip, printed CUDA."""
import numpy as np
import pytest

import metalbench as mb
import mlx.core as mx

from msl_cases import MSLCase, three_ways

RNG = np.random.default_rng(1601)
N = 32

BODY = MSLCase(
    "pointer_aliases_in_a_body",
    """
    uint i = thread_position_in_grid.x;
    using CP = const device float*;
    typedef device float* OP;
    using V4P = const device float4*;
    CP row = x + (i / 8) * 8;          // the start of this thread's row of 8
    CP later;
    later = (CP)y;
    V4P v = reinterpret_cast<V4P>(y);
    OP o = out + i;
    *o = row[i % 8] + later[i] * 2.0f + v[i / 4][i % 4] * 10.0f + float(sizeof(CP));
    """,
    {"x": RNG.standard_normal(N).astype(np.float32), "y": RNG.standard_normal(N).astype(np.float32)},
    [("out", (N,), np.float32)],
    lambda x, y: [x + y * 2 + y * 10 + 8], atol=1e-5)

HEADER = MSLCase(
    "pointer_aliases_in_a_header",
    """
    uint i = thread_position_in_grid.x;
    out[i] = scaled_sum(x, y, i) + Rows::first(x, i);
    """,
    {"x": RNG.standard_normal(N).astype(np.float32), "y": RNG.standard_normal(N).astype(np.float32)},
    [("out", (N,), np.float32)],
    lambda x, y: [x * 3 + y + x[(np.arange(N) // 4) * 4]],
    header="""
    typedef const device float* cptr;
    using in_ptr = const device float*;
    inline float scaled_sum(cptr a, in_ptr b, uint i) { return a[i] * 3.0f + b[i]; }
    struct Rows {
      using P = const device float*;
      static float first(P p, uint i) { P r = p + (i / 4) * 4; return r[0]; }
    };
    """, atol=1e-5)

CASES = [BODY, HEADER]
test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)


def _run(source):
    k = mb.metal_kernel(name="alias_k", input_names=["x"], output_names=["out"], source=source)
    return k(inputs=[mx.zeros(8)], output_shapes=[(8,)], output_dtypes=[mx.float32], grid=(8, 1, 1),
             threadgroup=(8, 1, 1), backend="sim")


@pytest.mark.parametrize("decl, what", [
    ("using R = thread float&;", r"an alias of a reference type \('using R = thread float&;'"),
    ("typedef float A4[4];", r"a typedef of an array type \('typedef float A4\[4\];'"),
    ("typedef device float** PP;", r"a typedef of a pointer-to-pointer type"),
])
def test_aliases_of_references_and_arrays_are_refused_by_name(decl, what):
    with pytest.raises(mb.KernelSyntaxError, match=what) as e:
        _run(decl + "\nuint i = thread_position_in_grid.x;\nout[i] = x[i];")
    assert e.value.span.line == 1


def test_a_read_only_pointer_alias_stays_read_only():
    with pytest.raises(mb.KernelTypeError, match=r"'p\[i\]' is read-only"):
        _run("using CP = const device float*;\nCP p = x;\nuint i = thread_position_in_grid.x;\np[i] = 1;\nout[i] = 0;")
