"""The %%metal magic in an in-process IPython shell (fast); test_notebooks.py uses a real kernel."""
import numpy as np
import pytest

from metalbench.notebook.magic import detect_lang, infer_msl_names, last_result, parse_line

IPython = pytest.importorskip("IPython")

SAXPY = """def saxpy(a: float, x, y, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = a * x[i] + y[i]
"""


@pytest.fixture(scope="module")
def ip():
    from IPython.testing.globalipapp import get_ipython
    shell = get_ipython()
    shell.run_cell("import numpy as np, mlx.core as mx, metalbench as mb\nfrom metalbench.dsl import *\n"
                   "%load_ext metalbench\nn = 64\na = 2.0\nx = np.arange(n, dtype=np.float32)\n"
                   "y = np.ones(n, dtype=np.float32)\ninp = x.copy()")
    return shell


def cell(ip, line, body):
    """Run a %%metal cell; a failing cell raises (its error is also in the result)."""
    try:
        ip.run_cell_magic("metal", line + " --backend sim", body)
    except Exception as e:
        r = last_result()
        assert r.error is e
        assert "Traceback" not in "\n".join(e._render_traceback_())
        return r
    r = last_result()
    assert r.error is None
    return r


def test_parse_line_and_detect():
    o = parse_line("k --grid (n, 1, 1) --threadgroup (32, 1, 1) --ref 'lambda x: 2 * x' --no-widget")
    assert o.name == "k" and o.grid == "(n, 1, 1)" and o.threadgroup == "(32, 1, 1)" and o.no_widget
    assert detect_lang(SAXPY) == "python" and detect_lang("out[0] = 1;") == "msl"
    assert infer_msl_names("out[i] = 2 * inp[i];", {"inp": __import__("numpy").zeros(2)}) == (["inp"], ["out"])


def test_dsl_match_mismatch_and_namespace(ip):
    r = cell(ip, "--grid n --threadgroup 32 --ref 'lambda a, x, y: a * x + y' --no-widget", SAXPY)
    assert r.error is None and r.check.ok and ip.user_ns["saxpy"] is r.kernel
    r2 = cell(ip, "--grid n --threadgroup 32 --ref 'lambda a, x, y: a * x' --no-widget", SAXPY)
    assert not r2.check.ok and r2.check.mismatches == 64
    assert r2.kernel is r.kernel                                   # cached by body and options


def test_failing_cell_keeps_previous_kernel(ip):
    cell(ip, "--grid n --no-widget", SAXPY)
    before = ip.user_ns["saxpy"]
    r = cell(ip, "--grid n --no-widget", SAXPY.replace("a * x[i]", "a * zz[i]"))
    assert "zz" in str(r.error) and "cell, line 5" in str(r.error)
    assert ip.user_ns["saxpy"] is before


@pytest.mark.parametrize("line, words", [
    ("--grid nope", "--grid 'nope' does not evaluate"),
    ("--grid n --ref 3", "callable"),
    ("--grid n --ref 'lambda a, x, y: 1 / 0'", "ZeroDivisionError"),
    ("--grid n --ref 'lambda a, x, y: x[:2]'", "shape (2,)"),
    ("--grid n --bogus", "unrecognized arguments"),
])
def test_bad_input_gives_a_message(ip, line, words):
    r = cell(ip, line + " --no-widget", SAXPY)
    assert words in str(r.error)


def test_missing_arguments(ip):
    r = cell(ip, "--grid n --no-widget", SAXPY.replace("(a: float, x, y,", "(a: float, x, q,").replace("y[i]", "q[i]"))
    assert "q" in str(r.error) and "not defined in the notebook" in str(r.error)


def test_sweep_option_with_failing_configs(ip):
    r = cell(ip, "--grid n --sweep --ref 'lambda a, x, y: a * x + y' --no-widget", SAXPY)
    assert r.error is None and len(r.sweep.rows) == 6 and r.sweep.best is not None


def test_msl_cell_and_errors(ip):
    r = cell(ip, "twice --grid (n, 1, 1) --threadgroup (32, 1, 1) --ref 'lambda inp: 2 * inp' --no-widget",
             "uint i = thread_position_in_grid.x;\nout[i] = 2 * inp[i];")
    assert r.error is None and r.check.ok and ip.user_ns["twice"].input_names == ["inp"]
    r = cell(ip, "twice --grid (n, 1, 1) --no-widget", "uint i = thread_position_in_grid.x;\nout[i] = 2 * inp[i]\n")
    assert "cell, line 3" in str(r.error) and "syntax error" in str(r.error)
    r = cell(ip, "twice --inputs inp --grid (n, 1, 1) --no-widget", "uint i = thread_position_in_grid.x;\nout[i] = 2 * qq[i];")
    assert "cell, line 3" in str(r.error)


def test_msl_template(ip):
    r = cell(ip, "scale --grid (n, 1, 1) --template T=float32,K=3 --ref 'lambda inp: 3 * inp' --no-widget",
             "uint i = thread_position_in_grid.x;\nout[i] = T(K) * inp[i];")
    assert r.error is None and r.check.ok


def test_bare_dtype_names_in_options(ip):
    # --output-dtypes float32 (as --template T=float32 takes it): MLX's dtype when the notebook
    # defines no such name; an undefined name that is not a dtype stays an error
    r = cell(ip, "halves --grid (n, 1, 1) --outputs out --output-shapes '[(n,)]' --output-dtypes float16 "
                 "--ref 'lambda inp: (inp / 2).astype(np.float16)' --no-widget",
             "uint i = thread_position_in_grid.x;\nout[i] = half(inp[i] * 0.5f);")
    assert r.error is None and r.check.ok, r.error
    r = cell(ip, "halves --grid (n, 1, 1) --outputs out --output-shapes '[(n,)]' --output-dtypes flaot32 --no-widget",
             "uint i = thread_position_in_grid.x;\nout[i] = inp[i];")
    assert "--output-dtypes 'flaot32' does not evaluate" in str(r.error)


def test_widget_panel(ip):
    r = cell(ip, "--grid n --ref 'lambda a, x, y: a * x + y'", SAXPY)
    assert r.panel is not None and r.panel.result.ok


def test_define_without_grid(ip):
    r = cell(ip, "--no-widget", SAXPY.replace("def saxpy", "def saxpy2"))
    assert r.error is None and "saxpy2" in ip.user_ns and r.check is None


def test_help_lists_every_option(ip, capsys):
    from metalbench.notebook.options import OPTIONS, _parser
    ip.run_cell("%%metal --help")                               # a cell holding only this line
    out = capsys.readouterr().out
    doc = ip.find_cell_magic("metal").__doc__                    # what %%metal? shows
    flags = [o for a in _parser()._actions for o in a.option_strings]
    assert len(flags) == len(OPTIONS) - 1                        # NAME is positional
    for text in (out, doc):
        for opt in flags:
            assert opt in text, opt
        assert text.count("e.g. ") == len(OPTIONS)               # an example per option
    ip.run_line_magic("metal", "")                               # %metal alone: the same help
    assert "--sweep" in capsys.readouterr().out


@pytest.mark.parametrize("body, line, what", [
    ("def k(x, out: mb.Out)\n    out[0] = x[0]\n", 2, "expected ':'"),
    ("# a comment\n@mb.kernel\ndef k(x, out: mb.Out):\n    out[0] = x[0\n", 5, "never closed"),
    ("def k(x, out: mb.Out):\n    i = thread_position_in_grid.x\n      out[i] = x[i]\n", 4, "indent"),
])
def test_python_syntax_error_is_python_at_its_line(ip, body, line, what):
    r = cell(ip, "--grid n --no-widget", body)
    msg = str(r.error)
    assert r.lang == "python" and "invalid Python syntax" in msg and what in msg, msg
    assert f"cell, line {line}:" in msg and "MSL" not in msg


def test_sweep_axes_on_the_magic_line(ip):
    body = ("def scale(x, out: mb.Out, K: mb.constexpr = 2):\n"
            "    i = thread_position_in_grid.x\n"
            "    if i < x.size:\n"
            "        out[i] = x[i] * K\n")
    r = cell(ip, "--grid n --sweep threadgroup=32,64 K=2,3 --no-widget", body)
    assert [(row["threadgroup"], row["K"]) for row in r.sweep.rows] == [(32, 2), (32, 3), (64, 2), (64, 3)]
    assert all(row["error"] is None for row in r.sweep.rows)
    r = cell(ip, "--grid n --sweep threadgroup=(16, 2), (32, 1) --no-widget", body)
    assert [row["threadgroup"] for row in r.sweep.rows] == [(16, 2), (32, 1)]
    r = cell(ip, "--grid n --sweep TILE=8,16 --no-widget", body)
    assert "no constexpr parameter 'TILE'" in str(r.error) and "K" in r.error.hint
    r = cell(ip, "twice --grid (n, 1, 1) --template K=2 --sweep K=1,2 --no-widget",
             "uint i = thread_position_in_grid.x;\nout[i] = K * inp[i];")
    assert [row["K"] for row in r.sweep.rows if row["threadgroup"] == (32,)] == [1, 2]


def test_panel_sweeps_constexpr_axes(ip):
    body = ("def scale(x, out: mb.Out, K: mb.constexpr = 2):\n"
            "    i = thread_position_in_grid.x\n"
            "    if i < x.size:\n"
            "        out[i] = x[i] * K\n")
    r = cell(ip, "--grid n --sweep K=1,3", body)
    wb = r.panel
    assert wb.axis_fields["K"].value == "1, 3" and wb.axis_fields["threadgroup"].value == "auto"
    wb.axis_fields["threadgroup"].value = "32, 64"
    wb.axis_fields["K"].value = "3, 4"
    s = wb.sweep()
    assert {(row["threadgroup"], row["K"]) for row in s.rows} == {(32, 3), (32, 4), (64, 3), (64, 4)}
    assert wb.base["K"] == s.best["K"] and wb.threadgroup[0] == s.best["threadgroup"]
    r = cell(ip, "--grid n", body)
    assert r.panel.axis_fields["K"].value == "1, 2, 4"              # around the default


SCAN = """def scan(x, out: mb.Out):
    i = thread_position_in_grid.x
    l = thread_position_in_threadgroup.x
    buf = threadgroup_array(64, float32)
    buf[l] = x[i]
    threadgroup_barrier(mem_threadgroup)
    d = 1
    while d < 64:
        v = buf[l - d] if l >= d else 0.0
        threadgroup_barrier(mem_threadgroup)
        buf[l] += v
        threadgroup_barrier(mem_threadgroup)
        d *= 2
    out[i] = buf[l]
"""


def test_rounding_level_mismatch_hints_at_a_tolerance(ip):
    """A parallel scan rounds differently from np.cumsum: the mismatch says so and names the
    tolerance; --atol accepts it; a real bug gets no such hint."""
    import numpy as np
    rng = np.random.default_rng(5)
    ip.user_ns["xs"] = rng.standard_normal(4096).astype(np.float32)
    ip.user_ns["scan_ref"] = lambda x: np.concatenate([np.cumsum(b) for b in x.reshape(-1, 64)])
    r = cell(ip, "--grid 4096 --threadgroup 64 --ref scan_ref --args '(xs,)' --no-widget", SCAN)
    assert not r.check.ok             # this seed's data round differently from np.cumsum
    assert "rounding level" in r.check.hint and "atol=" in repr(r.check)
    atol = float(r.check.hint.split("atol=")[1].split()[0].rstrip(")"))
    r2 = cell(ip, f"--grid 4096 --threadgroup 64 --ref scan_ref --args '(xs,)' --atol {atol} --no-widget", SCAN)
    assert r2.check.ok
    r3 = cell(ip, "--grid 4096 --threadgroup 64 --ref 'lambda x: scan_ref(x) + 1' --args '(xs,)' --no-widget", SCAN)
    assert not r3.check.ok and r3.check.hint is None


def test_internal_error_in_a_cell_keeps_its_cause_for_the_report():
    """Bad input gets the short message only; a metalbench bug (KernelInternalError) also
    shows the original failure, so it can be reported."""
    from metalbench.errors import KernelInternalError, Source, Span
    from metalbench.notebook.magic import cell_error
    try:
        try:
            {}["key"]
        except KeyError as k:
            raise KernelInternalError("internal error while translating this line: KeyError: 'key'",
                                      Span(Source("cell", "x = y\n", 2), 2, 0, 2, 5)) from k
    except KernelInternalError as e:
        text = "\n".join(cell_error(e)._render_traceback_())
    assert "cell, line 2" in text and "KeyError: 'key'" in text and "bug report" in text
    assert "Traceback" in text


def test_args_may_be_a_single_array(ip):
    # --args x (not '(x,)'): one positional argument; an array has no truth value to test
    body = "def twice(v, out: mb.Out):\n    out[thread_position_in_grid.x] = 2 * v[thread_position_in_grid.x]\n"
    r = cell(ip, "--grid n --args x --ref 'lambda v: 2 * v' --no-widget", body)
    assert r.error is None and r.check.ok
