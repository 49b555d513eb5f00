"""More of what a new user meets pasting a model repository's MSL kernel into a ``%%metal``
cell (issue 13's last line), found by pasting the corpus's kernels unmodified: atomics on
threadgroup memory only (the outputs stay plain), complex64 outputs checked against a complex
reference, a template argument named like a notebook array, an input reached only through a
header macro, and an undeclared name indexed. Each kernel here is our own."""
import numpy as np
import pytest

from test_magic import cell, ip  # noqa: F401  (the in-process IPython fixture)

mx = pytest.importorskip("mlx.core")

# a per-threadgroup histogram in threadgroup atomics; the output is written plainly
TG_HIST = """
threadgroup atomic_uint bins[4];
uint t = thread_position_in_threadgroup.x;
uint g = threadgroup_position_in_grid.x;
if (t < 4) { atomic_store_explicit(&bins[t], 0u, memory_order_relaxed); }
threadgroup_barrier(mem_flags::mem_threadgroup);
uint v = vals[g * 32 + t];
atomic_fetch_add_explicit(&bins[v & 3u], 1u, memory_order_relaxed);
threadgroup_barrier(mem_flags::mem_threadgroup);
if (t < 4) { counts[g * 4 + t] = atomic_load_explicit(&bins[t], memory_order_relaxed); }
"""


def hist_ref(vals):
    return np.stack([np.bincount(r & 3, minlength=4) for r in vals.reshape(-1, 32)]).reshape(-1).astype(np.uint32)


def test_threadgroup_atomics_leave_the_outputs_plain(ip):  # noqa: F811
    # before: any atomic_* call made every output atomic, so the plain store to counts was
    # "'counts' is atomic; write it with atomic_store_explicit"
    ip.user_ns.update(vals=np.random.default_rng(0).integers(0, 100, 96).astype(np.uint32), hist_ref=hist_ref)
    r = cell(ip, "tghist --grid (96, 1, 1) --threadgroup (32, 1, 1) --outputs counts "
                 "--output-shapes '[(12,)]' --output-dtypes '[uint32]' --ref hist_ref --no-widget", TG_HIST)
    assert r.error is None and r.check.ok, r.error or r.check
    assert ip.user_ns["tghist"].atomic_outputs is False


@pytest.mark.parametrize("body, atomic", [
    ("atomic_fetch_add_explicit(&hist[k], 1, memory_order_relaxed);", True),
    ("atomic_fetch_add_explicit(hist + k, 1, memory_order_relaxed);", True),
    ("device atomic_int* h = (device atomic_int*)hist + 2; atomic_fetch_add_explicit(h, 1, "
     "memory_order_relaxed);", True),
    ("threadgroup atomic_int c[2]; atomic_fetch_add_explicit(&c[0], 1, memory_order_relaxed); hist[k] = 1;", False),
    ("// atomic_fetch_add_explicit(&hist[k], 1, memory_order_relaxed);\nhist[k] = 1;", False),
])
def test_which_bodies_update_an_output_atomically(body, atomic):
    # (the front end decides it now: tests/test_atomic_outputs.py has the rest)
    from metalbench import types as T
    from metalbench.frontend.msl.atomic_outputs import atomic_outputs_needed
    body = "uint k = thread_position_in_grid.x % 2;\n" + body
    assert atomic_outputs_needed("k", body, inputs=[], outputs=[("hist", T.int32, 1)]) is atomic


CMUL = """
uint i = thread_position_in_grid.x;
if (i < a_shape[0]) {
    out[i] = a[i] * b[i] + complex64_t(1.0f, 0.0f);
}
"""


def crand(rng, n):
    return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)


def test_a_complex64_output_is_checked_against_a_complex_reference(ip):  # noqa: F811
    # before: "the reference returned complex64 values for output 'out'; return a numeric array"
    rng = np.random.default_rng(1)
    ip.user_ns.update(a=mx.array(crand(rng, 70)), b=mx.array(crand(rng, 70)))
    r = cell(ip, "cmul --grid (70, 1, 1) --threadgroup (32, 1, 1) --inputs a,b "
                 "--ref 'lambda a, b: a * b + 1' --no-widget", CMUL)
    assert r.error is None and r.check.ok, r.error or r.check
    # the check is live: one wrong imaginary part is a mismatch, indexed by element and part
    ip.user_ns["bad"] = lambda a, b: (lambda e: (e.__setitem__(5, e[5] + 1j), e)[1])(np.array(a * b + 1))
    r = cell(ip, "cmul --grid (70, 1, 1) --threadgroup (32, 1, 1) --inputs a,b --ref bad --no-widget", CMUL)
    assert not r.check.ok and r.check.mismatches == 1
    assert "out[5, 1]" in repr(r.check), repr(r.check)


def test_compare_complex_part_by_part():
    from metalbench.check import compare
    g = np.array([1 + 2j, 3 - 1j], np.complex64)
    assert compare(g, g.astype(np.complex128)).mismatches == 0
    assert compare(g, np.array([1 + 2j, 3 + 1j])).mismatches == 1
    assert compare(g, np.array([1, 3])).mismatches == 2         # a real reference: imaginary parts 0


SCALE_T = """
uint i = thread_position_in_grid.x;
if (i < x_shape[0]) { y[i] = T(x[i] * float(K)); }
"""


def test_a_template_argument_is_not_an_input_even_if_the_notebook_has_that_name(ip):  # noqa: F811
    # a notebook array T (from earlier cells) was taken as an input: "'T' is not a function"
    ip.user_ns.update(x=np.linspace(-1, 1, 40, dtype=np.float32), T=np.zeros(3, np.float32), K=np.ones(2))
    r = cell(ip, "scale --grid (40, 1, 1) --threadgroup (32, 1, 1) --template T=float16,K=3 "
                 "--output-dtypes '[float16]' --ref 'lambda x: (3 * x).astype(np.float16)' --no-widget", SCALE_T)
    assert r.error is None and r.check.ok, r.error or r.check
    assert ip.user_ns["scale"].input_names == ["x"]


GATHER_MACRO = """
uint i = thread_position_in_grid.x;
if (i < idx_shape[0]) { out[i] = PICK(idx[i], i & 1u); }
"""


def test_an_input_named_only_in_a_header_macro_is_inferred(ip):  # noqa: F811
    # before: the body never names table/other, so they were not inputs: "'table' is not an
    # array or buffer" at the macro's use
    rng = np.random.default_rng(2)
    ip.user_ns.update(idx=rng.integers(0, 16, 50).astype(np.int32), table=rng.standard_normal(16).astype(np.float32),
                      other=rng.standard_normal(16).astype(np.float32),
                      HM="#define PICK(j, odd) ((odd) ? other[(j)] : \\\n    table[(j)])\n")
    r = cell(ip, "pick --grid (50, 1, 1) --threadgroup (32, 1, 1) --header HM --output-shapes '[(50,)]' "
                 "--output-dtypes '[float32]' "
                 "--ref 'lambda idx, table, other: np.where(np.arange(50) % 2 == 1, other[idx], table[idx])' "
                 "--no-widget", GATHER_MACRO)
    assert r.error is None and r.check.ok, r.error or r.check
    assert sorted(ip.user_ns["pick"].input_names) == ["idx", "other", "table"]


def test_an_undeclared_name_indexed_says_undeclared_and_how_to_pass_it(ip):  # noqa: F811
    import metalbench as mb
    k = mb.metal_kernel(name="k", input_names=["x"], output_names=["out"],
                        source="uint i = thread_position_in_grid.x; out[i] = nope[i];")
    x = mx.zeros((4,))
    with pytest.raises(mb.KernelNameError, match="use of undeclared identifier 'nope'"):
        k(inputs=[x], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)], output_dtypes=[mx.float32],
          backend="sim")
    # in a cell, an array of the notebook left out of --inputs is named in the hint
    ip.user_ns.update(x=np.ones(4, np.float32), w=np.ones(4, np.float32))
    r = cell(ip, "k2 --grid (4, 1, 1) --inputs x --no-widget",
             "uint i = thread_position_in_grid.x; out[i] = x[i] * w[i];")
    msg = str(r.error)
    assert "undeclared identifier 'w'" in msg and "--inputs x,w" in msg, msg


def test_pasted_kernels_in_a_real_notebook(tmp_path):
    pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    from test_notebooks import execute, texts
    setup = ("import numpy as np\nimport mlx.core as mx\nimport metalbench as mb\n%load_ext metalbench\n"
             "rng = np.random.default_rng(0)\nvals = rng.integers(0, 100, 96).astype(np.uint32)\n"
             "a = mx.array((rng.standard_normal(70) + 1j * rng.standard_normal(70)).astype(np.complex64))\n"
             "b = mx.array((rng.standard_normal(70) + 1j * rng.standard_normal(70)).astype(np.complex64))\n"
             f"def hist_ref(vals):\n    return np.stack([np.bincount(r & 3, minlength=4) for r in "
             f"vals.reshape(-1, 32)]).reshape(-1).astype(np.uint32)\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(setup),
                nbformat.v4.new_code_cell("%%metal tghist --grid (96, 1, 1) --threadgroup (32, 1, 1) --outputs counts "
                                          "--output-shapes '[(12,)]' --output-dtypes '[uint32]' --ref hist_ref "
                                          "--backend sim --no-widget" + TG_HIST),
                nbformat.v4.new_code_cell("%%metal cmul --grid (70, 1, 1) --threadgroup (32, 1, 1) --inputs a,b "
                                          "--ref 'lambda a, b: a * b + 1' --backend sim --no-widget" + CMUL)]
    execute(nb, tmp_path)
    for c in nb.cells[1:]:
        out = texts(c)
        assert ": match (" in out, out
