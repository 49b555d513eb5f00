"""Attributes on statements (``[[unroll]] for ...``, ``[[likely]] if ...``,
``[[clang::...]]``) are hints: the statement runs as written (C++ ignores attributes it does
not know). And an error quoting code quotes it as written: a ``<`` the parser reads as ``>``
(to tell comparisons from template arguments) is shown as ``<``. Our own kernels vs NumPy."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import KernelTypeError
from msl_cases import MSLCase, three_ways

RNG = np.random.default_rng(1504)

ATTRIBUTED = MSLCase(
    "attributed_statements",
    """
    uint i = thread_position_in_grid.x;
    float s = 0.0f;
    [[unroll]] for (int k = 0; k < 4 && s < 100.0f; k++) s += x[i] * float(k);
    [[likely]] if (x[i] > -10.0f) { s += 1.0f; }
    [[clang::nomerge]] s *= 2.0f;
    out[i] = s;
    """,
    {"x": RNG.standard_normal(32).astype(np.float32)},
    [("out", (32,), np.float32)],
    lambda x: [(6.0 * x + 1.0) * 2.0],
    atol=1e-5)

CASES = [ATTRIBUTED]
test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)


def test_a_quoted_comparison_reads_as_written():
    src = "uint i = thread_position_in_grid.x;\nfloat v = *(i < 4 && i > 1 ? 1.0f : 2.0f);\nout[i] = v;"
    k = mb.metal_kernel(name="quote_less", input_names=["x"], output_names=["out"], source=src)
    with pytest.raises(KernelTypeError) as e:
        k(inputs=[mx.zeros(8)], output_shapes=[(8,)], output_dtypes=[mx.float32], grid=(8, 1, 1),
          threadgroup=(8, 1, 1), backend="sim")
    first = str(e.value).splitlines()[0]
    assert "'(i < 4 && i > 1 ? 1.0f : 2.0f)' is not a pointer" in first
