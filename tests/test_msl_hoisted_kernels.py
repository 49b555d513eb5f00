"""What a kernel hoisted out of MLX's headers into a function does (a steel attention
kernel's ``[[kernel]]`` made a callee, its function constants ``constexpr`` flags), on our
own kernels:

* an ``if`` on a constant (``if (has_mask)`` with ``constexpr constant bool has_mask =
  false;``) translates only the side that runs, so the other may use what the launch
  does not have: a pointer parameter bound to ``nullptr`` (``(const device float*)nullptr``,
  ``NULL``), whose use is an error naming it where it does run.

Each kernel: simulator vs NumPy (unchecked and checked), a round trip through the printed
MSL and CUDA, and (GPU machine) the printed CUDA."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import MetalbenchError
from msl_cases import MSLCase, three_ways

RNG = np.random.default_rng(43)
N = 32
X = RNG.standard_normal(N).astype(np.float32)
M = RNG.standard_normal(N).astype(np.float32)

FLAGS = """
constexpr constant bool has_mask = {mask};
constexpr constant bool has_bias = {bias};
METAL_FUNC void apply(device float* out, const device float* x, const device float* mask,
                      const device float* bias, uint i) {{
  float v = x[i];
  if (has_mask) {{
    mask += i;
    v *= mask[0];
  }}
  if (!has_bias) {{
    v += 1.0f;
  }} else if (has_mask) {{
    v += bias[i];
  }} else {{
    v -= bias[i];
  }}
  out[i] = v;
}}
"""


def _flags_case(mask, bias, call):
    def ref(x, m, m2):
        v = x * m if mask else x.copy()
        return [v + 1 if not bias else v + m2 if mask else v - m2]
    return MSLCase(f"constant_if_mask{int(mask)}_bias{int(bias)}",
                   f"uint i = thread_position_in_grid.x;\n{call}\n", {"x": X, "m": M, "m2": 2 * M},
                   [("out", (N,), np.float32)], ref,
                   header=FLAGS.format(mask=str(mask).lower(), bias=str(bias).lower()), atol=1e-6)


CASES = [
    _flags_case(False, False, "apply(out, x, (const device float*)nullptr, NULL, i);"),
    _flags_case(True, False, "apply(out, x, m, nullptr, i);"),
    _flags_case(False, True, "apply(out, x, (const device float*)(0), m2, i);"),
    _flags_case(True, True, "apply(out, x, m, m2, i);"),
]

test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)


def test_using_a_null_pointer_where_it_runs_names_it():
    k = mb.metal_kernel(name="null_used", input_names=["x"], output_names=["out"], header=FLAGS.format(
        mask="true", bias="false"), source="uint i = thread_position_in_grid.x;\napply(out, x, nullptr, nullptr, i);")
    with pytest.raises(MetalbenchError) as ei:
        k(inputs=[mx.array(X)], grid=(N, 1, 1), threadgroup=(N, 1, 1), output_shapes=[(N,)],
          output_dtypes=[mx.float32], backend="sim")
    msg = str(ei.value)
    assert "'mask' is a null pointer here (the argument for it at line 2 is nullptr)" in msg, msg
    assert "line 8" in msg, msg          # mask += i;
