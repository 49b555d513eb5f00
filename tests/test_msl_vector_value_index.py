"""A component of any vector-valued expression: ``exp(a)[2]``, ``(a + b)[j]``,
``float4(x)[i]``, ``(c ? a : b)[k]`` -- constant and run-time indices, against NumPy."""
import mlx.core as mx
import numpy as np
import pytest

import hostcuda
import metalbench as mb
from metalbench.errors import MetalbenchError

RNG = np.random.default_rng(12)

BODY = """
uint i = thread_position_in_grid.x;
float4 a = float4(x[4 * i], x[4 * i + 1], x[4 * i + 2], x[4 * i + 3]);
float4 b = float4(1.0f, 2.0f, 3.0f, 4.0f);
uint j = i % 4;
out[5 * i + 0] = exp(a)[2];
out[5 * i + 1] = (a + b)[j];
out[5 * i + 2] = float4(a.x)[j] + (-a)[1];
out[5 * i + 3] = (i % 2 == 0 ? a : b)[3];
out[5 * i + 4] = max(a, b * 2.0f)[j] * (a * b)[0];
"""


def reference(x):
    a = x.reshape(-1, 4).astype(np.float64)
    n = a.shape[0]
    b = np.array([1.0, 2.0, 3.0, 4.0])
    j = np.arange(n) % 4
    r = np.zeros((n, 5))
    r[:, 0] = np.exp(a[:, 2])
    r[:, 1] = (a + b)[np.arange(n), j]
    r[:, 2] = a[:, 0] - a[:, 1]
    r[:, 3] = np.where(np.arange(n) % 2 == 0, a[:, 3], b[3])
    r[:, 4] = np.maximum(a, b * 2)[np.arange(n), j] * (a[:, 0] * b[0])
    return r.reshape(-1)


@pytest.mark.parametrize("checked", [False, True])
def test_components_of_vector_expressions(checked):
    n = 37
    x = RNG.standard_normal(4 * n).astype(np.float32)
    k = mb.metal_kernel(name="vecidx", input_names=["x"], output_names=["out"], source=BODY)
    out = k(inputs=[mx.array(x)], grid=(n, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(5 * n,)],
            output_dtypes=[mx.float32], checked=checked)[0]
    np.testing.assert_allclose(np.asarray(out), reference(x), rtol=2e-6, atol=1e-6)


def test_a_scalar_expression_is_still_not_indexable():
    k = mb.metal_kernel(name="scalaridx", input_names=["x"], output_names=["out"],
                        source="uint i = thread_position_in_grid.x;\nout[i] = exp(x[i])[0];")
    with pytest.raises(MetalbenchError, match="not an array or buffer"):
        k(inputs=[mx.array(np.ones(4, np.float32))], grid=(4, 1, 1), threadgroup=(4, 1, 1),
          output_shapes=[(4,)], output_dtypes=[mx.float32])


@pytest.mark.skipif(not hostcuda.HAVE_GXX, reason="needs g++")
def test_printed_cuda_agrees(monkeypatch):
    """The printed CUDA (compiled for the host, tests/hostcuda) gives the same components."""
    hostcuda.install(monkeypatch)
    n = 37
    x = RNG.standard_normal(4 * n).astype(np.float32)
    k = mb.metal_kernel(name="vecidx_cuda", input_names=["x"], output_names=["out"], source=BODY)
    out = k(inputs=[mx.array(x)], grid=(n, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(5 * n,)],
            output_dtypes=[mx.float32], backend="cuda")[0]
    np.testing.assert_allclose(np.asarray(out), reference(x), rtol=2e-6, atol=1e-6)
