"""Found pasting the MSL corpus's kernels into ``%%metal`` cells with no --inputs (issue 13):
a body calling a header function template with explicit arguments (``f<N>(p)``) and looping
under a header macro (``UNROLL for``) failed the cell's syntax check, which read the body
without the header; a notebook number the body uses (the repository's ``inputs=[q, T]``) is an
input (tests/test_msl_cells.py). Each kernel here is our own."""
import numpy as np
import pytest

from test_magic import cell, ip  # noqa: F401  (the in-process IPython fixture)

mx = pytest.importorskip("mlx.core")

HDR = """
#define UNROLL _Pragma("unroll")
template <uint N>
inline float sum_n(const device float* p) {
    float s = 0.0f;
    UNROLL for (uint j = 0; j < N; j++) { s += p[j]; }
    return s;
}
"""

BODY = """uint r = thread_position_in_grid.x;
float part[2];
UNROLL for (uint h = 0; h < 2; h++) part[h] = sum_n<4>(rows + r * 8 + h * 4);
diffs[r] = part[0] - part[1];
"""


def diff_ref(rows):
    r = np.asarray(rows).reshape(-1, 2, 4).sum(-1)
    return r[:, 0] - r[:, 1]


def test_a_header_template_call_and_macro_loop_in_a_cell(ip):  # noqa: F811
    # before: "syntax error: expected ')'" at line 4 (sum_n < 4 > (...) read as comparisons)
    ip.user_ns.update(rows=mx.array(np.random.default_rng(2).standard_normal(48).astype(np.float32)),
                      HDR=HDR, diff_ref=diff_ref)
    r = cell(ip, "halves --grid (6, 1, 1) --threadgroup (6, 1, 1) --header HDR --output-shapes '[(6,)]' "
                 "--ref diff_ref --atol 1e-5 --no-widget", BODY)
    assert r.error is None and r.check.ok, r.error or r.check
    k = ip.user_ns["halves"]
    assert (k.input_names, k.output_names) == (["rows"], ["diffs"])   # not the local part[]


def test_names_are_read_through_the_header():
    from metalbench.notebook.magic import infer_msl_names
    ins, outs = infer_msl_names(BODY, {"rows": np.zeros(8, np.float32), "part": np.zeros(2)}, HDR)
    assert (ins, outs) == (["rows"], ["diffs"])


def test_an_output_written_only_in_a_header_function_is_an_output():
    # before: bump(&sums[i % 4], ...) stored nothing the body showed, so the output was the
    # default 'out' and the cell failed with "use of undeclared identifier 'sums'"
    from metalbench.notebook.magic import infer_msl_names
    h = ADD_H + "inline void acc2(thread float& s, const device float* src, uint i) { s += src[i]; }\n"
    body = "uint i = thread_position_in_grid.x;\nfloat s = 0.0f;\nacc2(s, vals, i);\nbump(&sums[i % 4], s);"
    assert infer_msl_names(body, {"vals": np.zeros(4, np.float32)}, h) == (["vals"], ["sums"])


ADD_H = """
inline void bump(device atomic_float* slot, float v) {
    atomic_fetch_add_explicit(slot, v, memory_order_relaxed);
}
"""
BUMP = """
uint i = thread_position_in_grid.x;
bump(&sums[i % 4], vals[i] * float(T));
"""
CONFLICT = """
uint i = thread_position_in_grid.x;
bump(&sums[i % 4], vals[i]);
count[0] = 1.0f;
"""
RAW = """
uint i = thread_position_in_grid.x;
flat[i] = xt[i];
"""


def test_in_a_real_notebook(tmp_path):
    pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    from test_notebooks import error_text, execute
    setup = ("import numpy as np\nimport mlx.core as mx\n%load_ext metalbench\n"
             "rng = np.random.default_rng(0)\nrows = mx.array(rng.standard_normal(48).astype(np.float32))\n"
             "vals = mx.array(rng.standard_normal(64).astype(np.float32))\nT = 3\n"
             f"HDR = {HDR!r}\nADD_H = {ADD_H!r}\nxt = mx.arange(12, dtype=mx.float32).reshape(3, 4).T\n"
             "def diff_ref(rows):\n    r = np.asarray(rows).reshape(-1, 2, 4).sum(-1)\n    return r[:, 0] - r[:, 1]\n"
             "def sums_ref(vals, T):\n    return (np.bincount(np.arange(64) % 4, weights=np.asarray(vals), minlength=4)"
             " * T).astype(np.float32)\n")
    code = nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook()
    nb.cells = [code(setup),
                code("%%metal halves --grid (6, 1, 1) --threadgroup (6, 1, 1) --header HDR --output-shapes '[(6,)]' "
                     "--ref diff_ref --atol 1e-5 --backend sim --no-widget\n" + BODY),
                code("%%metal acc --grid (64, 1, 1) --threadgroup (32, 1, 1) --header ADD_H --output-shapes '[(4,)]' "
                     "--init-value 0 --ref sums_ref --atol 1e-4 --backend sim --no-widget" + BUMP),
                code("assert acc.atomic_outputs and acc.input_names == ['vals', 'T'], (acc.atomic_outputs, "
                     "acc.input_names)"),
                code("%%metal raw --grid (12, 1, 1) --threadgroup (4, 1, 1) --no-row-contiguous --output-shapes '[(12,)]' "
                     "--ref 'lambda xt: np.arange(12, dtype=np.float32)' --backend sim --no-widget" + RAW),
                code("%%metal bad --grid (8, 1, 1) --threadgroup (8, 1, 1) --header ADD_H --inputs vals "
                     "--outputs sums,count --output-shapes '[(4,), (1,)]' --backend sim --no-widget" + CONFLICT)]
    execute(nb, tmp_path, allow_errors=True)
    for c in nb.cells[:5]:
        assert not [o for o in c.outputs if o.output_type == "error"], c.outputs
    msg = error_text(nb.cells[5])
    assert "'sums' is used atomically" in msg and "'count' is also stored plainly at line 4" in msg, msg
    assert "Traceback" not in msg


CLAMP_H = """
#define WINDOW_START(OUT, IDX, LEN) do { (OUT) = max(0, min(int(IDX) - 1, int(LEN) - 3)); } while (0)
"""
WIN = """uint i = thread_position_in_grid.x;
int lo;
WINDOW_START(lo, i, sig_shape[0]);
smooth[i] = (sig[lo] + sig[lo + 1] + sig[lo + 2]) / 3.0f;
"""


def test_a_local_set_by_a_macro_is_not_an_output(ip):  # noqa: F811
    # before: the macro's (lo) = ... read as a store to a name the body did not declare as an
    # array, so 'lo' was an output too: "--output-shapes gives 1 shape(s) for 2 output(s)"
    sig = np.random.default_rng(3).standard_normal(20).astype(np.float32)

    def ref(sig):
        lo = np.clip(np.arange(20) - 1, 0, 17)
        return (sig[lo] + sig[lo + 1] + sig[lo + 2]) / 3
    ip.user_ns.update(sig=mx.array(sig), CLAMP_H=CLAMP_H, ref=ref)
    r = cell(ip, "win --grid (20, 1, 1) --threadgroup (20, 1, 1) --header CLAMP_H --output-shapes '[(20,)]' "
                 "--ref ref --atol 1e-6 --no-widget", WIN)
    assert r.error is None and r.check.ok, r.error or r.check
    assert ip.user_ns["win"].output_names == ["smooth"]
