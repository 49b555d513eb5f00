"""What a new user meets pasting a model repository's MSL kernel into a ``%%metal`` cell
(issue 13's last line): references written with MLX ops or in MLX's return style, inputs
inferred in another order than the reference's parameters, output shapes written
``[(n)]``, a misspelt array, compile_options, atomics without init_value, a missing ';',
and warnings headed with IPython's internals. Each kernel here is our own."""
import warnings

import numpy as np
import pytest

import metalbench as mb
from metalbench.check import uses_mlx
from test_magic import cell, ip  # noqa: F401  (the in-process IPython fixture)

mx = pytest.importorskip("mlx.core")

GATHER = """
uint i = thread_position_in_grid.x;
if (i < idx_shape[0]) {
    int j = idx[i];
    out[i] = (j >= 0 && j < int(src_shape[0])) ? src[j] : 0.0f;
}
"""


def gather_ref_np(src, idx):
    ok = (idx >= 0) & (idx < len(src))
    return np.where(ok, src[np.clip(idx, 0, len(src) - 1)], 0).astype(np.float32)


def test_the_reference_takes_the_inputs_by_its_parameter_names(ip):  # noqa: F811
    # the body names idx before src, so the inferred inputs are (idx, src); the reference's
    # parameters say (src, idx): it gets them by name, not swapped
    rng = np.random.default_rng(0)
    ip.user_ns.update(src=rng.standard_normal(50).astype(np.float32),
                      idx=rng.integers(-5, 60, 77).astype(np.int32), gather_ref_np=gather_ref_np)
    r = cell(ip, "gath --grid (77, 1, 1) --threadgroup (32, 1, 1) --output-shapes '[(77,)]' "
                 "--output-dtypes '[float32]' --ref gather_ref_np --no-widget", GATHER)
    assert ip.user_ns["gath"].input_names == ["idx", "src"]
    assert r.error is None and r.check.ok, r.check
    # a reference that computes something else still fails: the check is live
    ip.user_ns["bad_ref"] = lambda src, idx: gather_ref_np(src, idx) + 1
    r = cell(ip, "gath --grid (77, 1, 1) --threadgroup (32, 1, 1) --output-shapes '[(77,)]' "
                 "--output-dtypes '[float32]' --ref bad_ref --no-widget", GATHER)
    assert not r.check.ok and r.check.mismatches == 77


def test_shape_names_count_as_mentions_of_their_array():
    from metalbench.notebook.magic import infer_msl_names
    ns = {"a": np.zeros(3), "b": np.zeros(3)}
    body = "int n = b_shape[0]; uint i = thread_position_in_grid.x; if (i < n) out[i] = a[i] + b[i];"
    assert infer_msl_names(body, ns) == (["b", "a"], ["out"])
    # only x_shape mentioned: x is still an input (MLX passes x_shape for an input x only)
    assert infer_msl_names("out[0] = float(a_ndim);", ns) == (["a"], ["out"])
    # a notebook array really named like that stays itself
    assert infer_msl_names("out[0] = c_shape[0];", {"c_shape": np.zeros(1), "c": np.zeros(2)})[0] == ["c_shape"]


def test_a_reference_written_with_mlx_gets_mlx_arrays(ip):  # noqa: F811
    # MLX clamps a gather's out-of-range indices where NumPy raises: the mlx-lm/MLX-docs
    # style reference used to fail (or compute something else) on NumPy copies
    rng = np.random.default_rng(1)
    ip.user_ns.update(src=mx.array(rng.standard_normal(50).astype(np.float32)),
                      idx=mx.array(rng.integers(-5, 60, 77).astype(np.int32)))
    ip.run_cell("def gather_ref_mx(src, idx):\n"
                "    ok = (idx >= 0) & (idx < src.shape[0])\n"
                "    return mx.where(ok, src[idx], 0.0)\n")
    r = cell(ip, "gath --grid (77, 1, 1) --threadgroup (32, 1, 1) --output-shapes '[(77,)]' "
                 "--output-dtypes '[float32]' --ref gather_ref_mx --no-widget", GATHER)
    assert r.error is None and r.check.ok, r.check


def test_bfloat16_inputs_reach_an_mlx_reference_as_bfloat16(ip):  # noqa: F811
    seen = []
    x = mx.array(np.linspace(-3, 3, 96, dtype=np.float32)).astype(mx.bfloat16)

    def ref(xb):
        seen.append(xb.dtype)
        return mx.exp(xb)
    ip.user_ns.update(xb=x, exp_ref=ref)
    r = cell(ip, "bexp --grid (96, 1, 1) --threadgroup (32, 1, 1) --template T=bfloat16 --ref exp_ref --no-widget",
             "uint i = thread_position_in_grid.x;\nout[i] = T(metal::exp(float(xb[i])));")
    assert r.error is None and r.check.ok and seen == [mx.bfloat16]
    # NumPy references still get NumPy arrays
    got = []
    ip.user_ns["np_ref"] = lambda xb: got.append(type(xb)) or np.exp(xb)
    r = cell(ip, "bexp --grid (96, 1, 1) --threadgroup (32, 1, 1) --template T=bfloat16 --ref np_ref --no-widget",
             "uint i = thread_position_in_grid.x;\nout[i] = T(metal::exp(float(xb[i])));")
    assert r.check.ok and got == [np.ndarray]


def test_uses_mlx_follows_helpers():
    def helper(x):
        return mx.exp(x)

    def outer(x):
        return helper(x) * 2
    assert uses_mlx(outer) and uses_mlx(mx.exp) and not uses_mlx(np.exp) and not uses_mlx(lambda x: x * 2)


def test_a_list_of_one_array_is_the_one_output(ip):  # noqa: F811
    # MLX kernels return their outputs as a list: `[out]` from a reference is one output
    ip.user_ns["v"] = np.arange(40, dtype=np.float32)
    body = "uint i = thread_position_in_grid.x;\nif (i < v_shape[0]) out[i] = 3 * v[i];"
    r = cell(ip, "tri --grid (64, 1, 1) --threadgroup (32, 1, 1) --ref 'lambda v: [3 * v]' --no-widget", body)
    assert r.error is None and r.check.ok
    r = cell(ip, "tri --grid (64, 1, 1) --threadgroup (32, 1, 1) --ref 'lambda v: [mx.array(2 * v)]' --no-widget", body)
    assert not r.check.ok and r.check.mismatches == 39      # v[0] = 0 matches
    # a list of numbers is still the values of the one output
    ip.user_ns["w3"] = np.arange(3, dtype=np.float32)
    r = cell(ip, "tri3 --grid (3, 1, 1) --threadgroup (3, 1, 1) --ref 'lambda w3: [0.0, 3.0, 6.0]' --no-widget",
             "uint i = thread_position_in_grid.x;\nout[i] = 3 * w3[i];")
    assert r.error is None and r.check.ok


def test_output_shapes_as_users_write_them(ip):  # noqa: F811
    ip.user_ns["u"] = np.arange(10, dtype=np.float32)
    body = "uint i = thread_position_in_grid.x;\nout[i] = u[i] + 1;"
    r = cell(ip, "inc --grid (10, 1, 1) --threadgroup (10, 1, 1) --output-shapes '[(10)]' "
                 "--ref 'lambda u: u + 1' --no-widget", body)
    assert r.error is None and r.check.ok
    r = cell(ip, "inc --grid (10, 1, 1) --output-shapes '[(10,), (10,)]' --no-widget", body)
    assert "2 shape(s) for 1 output(s) (out)" in str(r.error)
    r = cell(ip, "inc --grid (10, 1, 1) --output-shapes '[None]' --no-widget", body)
    assert "--output-shapes entry None is not a shape" in str(r.error)


def test_a_misspelt_array_is_named(ip):  # noqa: F811
    ip.user_ns.pop("inpt", None)
    r = cell(ip, "spell --grid (8, 1, 1) --no-widget",
             "uint i = thread_position_in_grid.x;\nfloat t[2];\nt[0] = inpt[i];\nout[i] = t[0];")
    msg = str(r.error)
    assert "reads inpt[...]" in msg and "not defined in the notebook" in msg, msg


FASTMATH = """uint i = thread_position_in_grid.x;
#ifdef __FAST_MATH__
out[i] = 1.0f + 0 * fm[i];
#else
out[i] = 0.0f + 0 * fm[i];
#endif
"""


def test_compile_options_reach_the_kernel(ip):  # noqa: F811
    ip.user_ns["fm"] = np.zeros(8, np.float32)
    r = cell(ip, "fmk --grid (8, 1, 1) --ref 'lambda fm: fm' --no-widget", FASTMATH)
    assert r.check.ok
    r = cell(ip, "fmk --grid (8, 1, 1) --compile-options \"{'math_mode': 'fast'}\" --ref 'lambda fm: fm + 1' "
                 "--no-widget", FASTMATH)
    assert r.error is None and r.check.ok
    assert ip.user_ns["fmk"].compile_options == {"math_mode": "fast"}
    r = cell(ip, "fmk --grid (8, 1, 1) --compile-options \"{'math_mode': 'quick'}\" --no-widget", FASTMATH)
    assert "math_mode" in str(r.error)


def test_atomic_outputs_without_init_value_say_so(ip):  # noqa: F811
    ip.user_ns["hv"] = (np.arange(64) % 4).astype(np.int32)
    body = ("uint i = thread_position_in_grid.x;\n"
            "atomic_fetch_add_explicit(&hist[hv[i]], 1.0f, memory_order_relaxed);")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = cell(ip, "histo --grid (64, 1, 1) --outputs hist --output-shapes '[(4,)]' --output-dtypes '[float32]' "
                     "--no-widget", body)
    msg = "\n".join(str(x.message) for x in w if issubclass(x.category, mb.CoverageWarning))
    assert "'hist' is atomic" in msg and "--init-value 0" in msg, msg
    r = cell(ip, "histo --grid (64, 1, 1) --outputs hist --output-shapes '[(4,)]' --output-dtypes '[float32]' "
                 "--init-value 0 --ref 'lambda hv: np.bincount(hv, minlength=4).astype(np.float32)' --no-widget",
             body)
    assert r.error is None and r.check.ok


HELPERS = """
template <typename T>
inline float softplus(T v) { return metal::log(1.0f + metal::exp(float(v))); }
"""

ROWSOFT = """
    // one simdgroup per row: softplus, then the row's sum, as model kernels reduce
    uint row = thread_position_in_grid.y;
    uint lane = thread_index_in_simdgroup;
    auto xr = xs + row * D;
    float acc = 0.0f;
    for (int j = lane; j < D; j += 32) {
        float s = softplus(xr[j]);
        ys[row * D + j] = static_cast<T>(s);
        acc += s;
    }
    acc = simd_sum(acc);
    if (lane == 0) { sums[row] = acc; }
"""


def test_a_pasted_model_kernel_in_a_real_notebook():
    """Run All on a notebook as a new user writes it: a header, templates, bfloat16 inputs,
    an MLX reference in the repository's style (parameters by name, outputs as a list); an
    unchecked out-of-bounds read's warning without IPython's file and line."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from test_notebooks import execute, texts
    setup = ("import numpy as np\nimport mlx.core as mx\nimport metalbench as mb\n%load_ext metalbench\n"
             f"HELPERS = {HELPERS!r}\n"
             "R, D = 3, 80\nxs = mx.array(np.random.default_rng(0).standard_normal((R, D)), mx.float32)"
             ".astype(mx.bfloat16)\n"
             "def rowsoft_ref(xs):\n"
             "    s = mx.logaddexp(xs.astype(mx.float32), 0.0)\n"
             "    return [s.astype(mx.bfloat16), s.sum(axis=1)]\n"
             "ow = np.ones(8, np.float32)")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(setup),
                nbformat.v4.new_code_cell(
                    "%%metal rowsoft --grid (32, R, 1) --threadgroup (32, 1, 1) --header HELPERS "
                    "--template T=xs.dtype,D=D --outputs ys,sums --output-shapes '[xs.shape, (R)]' "
                    "--output-dtypes '[bfloat16, float32]' --ref rowsoft_ref --atol 2e-2 --rtol 2e-2 "
                    "--no-widget --backend sim\n" + ROWSOFT),
                nbformat.v4.new_code_cell(
                    "%%metal past --grid (8, 1, 1) --ref 'lambda ow: ow' --no-widget --backend sim\n"
                    "uint i = thread_position_in_grid.x;\nout[i] = ow[i] + ow[i + 100];")]
    execute(nb, path=".")
    out = texts(nb.cells[1])
    assert "rowsoft [sim]: match" in out, out
    out = texts(nb.cells[2])
    assert "OutOfBoundsWarning: kernel 'past'" in out and "interactiveshell" not in out, out
    assert "past [sim]: match" in out, out


@pytest.mark.parametrize("body,line", [
    ("uint i = thread_position_in_grid.x\nout[i] = 2 * x[i];", 1),
    ("uint i = thread_position_in_grid.x;\n// note\n\n  out[i] = 2 * x[i]\n  out[i] += 1;", 4),
])
def test_a_missing_semicolon_names_the_line_before(body, line):
    k = mb.metal_kernel("semi", ["x"], ["out"], body)
    with pytest.raises(mb.MetalbenchError) as e:
        k(inputs=[np.ones(4, np.float32)], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
          output_dtypes=[np.float32], backend="sim")
    assert f"a missing ';' at the end of line {line}?" in str(e.value), str(e.value)


def test_no_semicolon_guess_after_a_complete_line():
    k = mb.metal_kernel("semi2", ["x"], ["out"], "uint i = thread_position_in_grid.x;\n) out[i] = x[i];")
    with pytest.raises(mb.MetalbenchError) as e:
        k(inputs=[np.ones(4, np.float32)], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
          output_dtypes=[np.float32], backend="sim")
    assert "missing ';'" not in str(e.value)


TWO_OUT = """
uint i = thread_position_in_grid.x;
st[i] = sv[i] + 1;          // the state first, as recurrent kernels store it
y[2 * i] = sv[i];
y[2 * i + 1] = -sv[i];
"""


def test_inferred_order_is_named_when_the_check_fails(ip, capsys):  # noqa: F811
    ip.user_ns["sv"] = np.arange(6, dtype=np.float32)
    ip.user_ns["two_ref"] = lambda sv: (np.stack([sv, -sv], 1).reshape(-1), sv + 1)
    # the repository's order is (y, st): shapes and reference follow it, the body stores st first
    capsys.readouterr()
    r = cell(ip, "two --grid (6, 1, 1) --output-shapes '[(12,), (12,)]' --ref two_ref --no-widget", TWO_OUT)
    assert r.error is not None          # the reference's (12,) and (6,) against two (12,) outputs
    msg = str(r.error)
    assert "outputs st, y were inferred" in msg and "--outputs st,y" in msg, msg
    r = cell(ip, "two --grid (6, 1, 1) --output-shapes '[(12,), (6,)]' --ref two_ref --no-widget", TWO_OUT)
    assert not r.check.ok
    out = capsys.readouterr().out
    assert "note: the outputs st, y were inferred" in out, out
    r = cell(ip, "two --grid (6, 1, 1) --outputs y,st --output-shapes '[(12,), (6,)]' --ref two_ref --no-widget",
             TWO_OUT)
    assert r.error is None and r.check.ok


def test_a_reinterpret_cast_view_of_an_output_is_that_output():
    from metalbench.notebook.magic import infer_msl_names
    body = ("uint i = thread_position_in_grid.x;\n"
            "device ushort* out_bits = reinterpret_cast<device ushort*>(out);\n"
            "out_bits[i] = as_type<ushort>(bfloat(x[i]));")
    assert infer_msl_names(body, {"x": np.zeros(3)}) == (["x"], ["out"])


def test_arrays_the_body_declares_are_not_inputs():
    # model kernels declare locals (float v[M]; auto k_ = ...) named like notebook arrays
    from metalbench.notebook.magic import infer_msl_names
    ns = {"v": np.zeros(3), "k": np.zeros(3), "xs": np.zeros(3)}
    body = ("uint i = thread_position_in_grid.x;\nfloat v[4];\nfor (int k = 0; k < 4; ++k) v[k] = xs[i * 4 + k];\n"
            "out[i] = v[0] + v[3];")
    assert infer_msl_names(body, ns) == (["xs"], ["out"])
