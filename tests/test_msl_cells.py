"""MSL bodies in ``%%metal`` cells as a new user pastes them (issue 13, issue 15 item 3): the
usual bounds check, pointers, constants and the preprocessor; outputs inferred from stores."""
import numpy as np
import pytest

from metalbench.notebook.magic import infer_msl_names
from test_magic import cell, ip  # noqa: F401  (the in-process IPython fixture)

IPython = pytest.importorskip("IPython")


def test_bounds_checked_cell_runs_and_matches(ip):  # noqa: F811
    ip.user_ns["xb"] = np.arange(100, dtype=np.float32)
    r = cell(ip, "twice_b --grid (128, 1, 1) --threadgroup (32, 1, 1) --ref 'lambda xb: 2 * xb' --no-widget",
             "uint i = thread_position_in_grid.x;\nif (i < xb_shape[0]) { out[i] = 2.0f * xb[i]; }")
    assert r.error is None and r.check.ok
    assert ip.user_ns["twice_b"].output_names == ["out"] and ip.user_ns["twice_b"].input_names == ["xb"]


def test_model_style_cell_with_pointers_and_constants(ip):  # noqa: F811
    ip.user_ns["xs"] = np.random.default_rng(1).standard_normal((4, 128)).astype(np.float32)
    body = """
    #pragma clang loop unroll(full)
    constexpr int M = 4;
    uint row = thread_position_in_grid.y;
    uint lane = thread_position_in_grid.x;
    auto x_ = xs + row * D;
    result += row * D;
    float acc = 0.0f;
    for (int j = 0; j < D / (32 * M); ++j) {
        float v[M];
        for (int k = 0; k < M; ++k) v[k] = x_[(j * 32 + lane) * M + k];
        for (int k = 0; k < M; ++k) acc += v[k];
    }
    acc = simd_sum(acc);
    for (int k = 0; k < D / 32; ++k) { *(result + lane + 32 * k) = (float)acc; }
    """
    r = cell(ip, "rowsum --grid (32, 4, 1) --threadgroup (32, 1, 1) --template D=128 "
                 "--ref 'lambda xs: np.repeat(xs.sum(1, keepdims=True), 128, 1)' --no-widget", body)
    assert r.error is None and r.check.ok
    assert ip.user_ns["rowsum"].output_names == ["result"]


@pytest.mark.parametrize("body,outs", [
    ("if (i < n) { out[i] = 1; }", ["out"]),
    ("if (i < x_shape[0]) {\n  y[i] = x[i];\n} else { z[i] = 0; }", ["y", "z"]),
    ("float tmp[4]; tmp[0] = 1; auto o = dst + 4; o[i] = tmp[0];", ["dst"]),
    ("atomic_fetch_add_explicit(&hist[x[i]], 1, memory_order_relaxed);", ["hist"]),
    ("threadgroup float s[32]; s[i] = x[i]; *(res + 1) = s[0];", ["res"]),
])
def test_output_inference_follows_the_syntax(body, outs):
    _, got = infer_msl_names("uint i = thread_position_in_grid.x;\n" + body, {"x": np.zeros(2)})
    assert got == outs


SCALED = """
uint i = thread_position_in_grid.x;
if (i < xe_shape[0]) { out[i] = xe[i] * scale_e + eps_e; }
"""


def test_a_notebook_number_the_body_uses_is_an_input(ip):  # noqa: F811
    # model kernels take eps/scale as 0-d inputs (a Python number in inputs=[x, scale, eps]);
    # before, such a number needed --inputs: now the front end's 'undeclared identifier' makes
    # it an input, 0-d, in the order the body names it
    ip.user_ns.update(xe=np.arange(40, dtype=np.float32), scale_e=0.5, eps_e=np.float32(1e-3))
    r = cell(ip, "scaled_e --grid (64, 1, 1) --threadgroup (32, 1, 1) --ref 'lambda x, s, e: x * s + e' "
                 "--no-widget", SCALED)
    assert r.error is None and r.check.ok, r.error or r.check
    assert ip.user_ns["scaled_e"].input_names == ["xe", "scale_e", "eps_e"]
    # a number named in --inputs is left to it: a body that names one not listed still fails
    r = cell(ip, "scaled_e --grid (64, 1, 1) --threadgroup (32, 1, 1) --inputs xe,scale_e --no-widget", SCALED)
    msg = str(r.error)
    assert "undeclared identifier 'eps_e'" in msg and "--inputs xe,scale_e,eps_e" in msg, msg
