"""The front ends' error safety net: an unexpected exception while translating becomes a
KernelInternalError at the line being translated (with a caret, chaining the original);
errors inside device functions show the call site; carets count characters."""
import traceback

import numpy as np
import pytest

import metalbench as mb
from metalbench import cuda
from metalbench import types as T
from metalbench.dsl import thread_position_in_grid  # noqa: F401  (used by the kernels)
from metalbench.errors import KernelInternalError, KernelNameError, KernelTypeError
from metalbench.frontend.msl import translate_kernel as msl_translate
from metalbench.semantics import Semantics

X = np.arange(8, dtype=np.float32)


def caret_under(err, line_text: str, token: str) -> None:
    """The message shows ``line_text`` with carets starting exactly under ``token``."""
    lines = str(err).splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.endswith("| " + line_text))
    src, marks = lines[i], lines[i + 1]
    bar = src.index("| ") + 2
    assert marks.index("^") - bar == line_text.index(token), (src, marks)
    assert marks.count("^") >= len(token)


def _boom(*args, **kwargs):
    raise ZeroDivisionError("boom inside the semantic layer")


def test_internal_error_in_dsl_points_at_the_line(monkeypatch):
    @mb.kernel
    def k(x, out: mb.Out):
        i = thread_position_in_grid.x
        y = x[i] * 2.0
        out[i] = y

    monkeypatch.setattr(Semantics, "binop", _boom)
    with pytest.raises(KernelInternalError) as e:
        k.ir(X)
    err = e.value
    assert isinstance(err.__cause__, ZeroDivisionError)
    assert "internal error" in err.message and "ZeroDivisionError" in err.message
    assert "report" in err.hint
    caret_under(err, "    y = x[i] * 2.0", "x[i] * 2.0")
    # the original traceback is kept for the report, down to the failing function
    frames = [f.name for f in traceback.extract_tb(err.__cause__.__traceback__)]
    assert frames[-1] == "_boom"


def test_internal_error_through_a_public_entry_keeps_the_cause_frames(monkeypatch):
    @mb.kernel
    def k(x, out: mb.Out):
        i = thread_position_in_grid.x
        out[i] = x[i] + 1.0

    monkeypatch.setattr(Semantics, "binop", _boom)
    with pytest.raises(KernelInternalError) as e:
        k(X, grid=8, threadgroup=8, backend="sim")       # user_facing trims metalbench frames...
    frames = [f.name for f in traceback.extract_tb(e.value.__cause__.__traceback__)]
    assert "_boom" in frames                              # ...but not those of the bug's cause
    assert "out[i] = x[i] + 1.0" in str(e.value)


def test_internal_error_in_msl_points_at_the_line(monkeypatch):
    monkeypatch.setattr(Semantics, "unop", _boom)
    body = "uint i = thread_position_in_grid.x;\nfloat v = -inp[i];\nout[i] = v;"
    with pytest.raises(KernelInternalError) as e:
        msl_translate("k", body, inputs=[("inp", T.float32, 1)], outputs=[("out", T.float32, 1)])
    assert isinstance(e.value.__cause__, ZeroDivisionError)
    assert e.value.span.line == 2
    caret_under(e.value, "float v = -inp[i];", "-inp[i]")


def test_internal_error_in_numba_intrinsic(monkeypatch):
    @cuda.jit
    def k(a):
        i = cuda.grid(1)
        a[i] = i

    monkeypatch.setattr(Semantics, "cast", _boom)
    with pytest.raises(KernelInternalError) as e:
        k.ir(np.zeros(8, np.int32))
    assert "cuda.grid(1)" in str(e.value)


def test_types_helper_error_becomes_a_type_error(monkeypatch):
    def bad(self, op, a, b, span=None):
        raise T.TypeError_("cannot combine float2 and float3: different lengths")

    monkeypatch.setattr(Semantics, "binop", bad)

    @mb.kernel
    def k(x, out: mb.Out):
        out[0] = x[0] + x[1]

    with pytest.raises(KernelTypeError, match="different lengths") as e:
        k.ir(X)
    assert "out[0] = x[0] + x[1]" in str(e.value)


# -- device functions show their call site ----------------------------------------------

@mb.func
def scale(v, s):
    w = v * s
    return w + undefined_in_func  # noqa: F821


@mb.func
def twice_scaled(v):
    return scale(v, 2.0) * 2.0


def test_error_in_func_shows_call_site():
    @mb.kernel
    def k(x, out: mb.Out):
        i = thread_position_in_grid.x
        out[i] = scale(x[i], 3.0)

    with pytest.raises(KernelNameError) as e:
        k.ir(X)
    msg = str(e.value)
    caret_under(e.value, "    return w + undefined_in_func  # noqa: F821", "undefined_in_func")
    assert "called from:" in msg
    caret_under(e.value, "    out[i] = scale(x[i], 3.0)", "scale(x[i], 3.0)")      # dedented as parsed
    # the function's line comes first, then the kernel's
    assert msg.index("undefined_in_func") < msg.index("called from:") < msg.index("out[i] = scale")


def test_nested_funcs_show_every_call_site():
    @mb.kernel
    def k(x, out: mb.Out):
        i = thread_position_in_grid.x
        out[i] = twice_scaled(x[i])

    with pytest.raises(KernelNameError) as e:
        k.ir(X)
    msg = str(e.value)
    assert msg.count("called from:") == 2
    assert msg.index("return w + undefined") < msg.index("return scale(v, 2.0)") < msg.index("twice_scaled(x[i])")


def test_error_in_msl_header_function_shows_call_site():
    header = "float f(float v) {\n  return v + missing;\n}\n"
    body = "uint i = thread_position_in_grid.x;\nout[i] = f(inp[i]);"
    with pytest.raises(KernelNameError) as e:
        msl_translate("k", body, header, inputs=[("inp", T.float32, 1)], outputs=[("out", T.float32, 1)])
    msg = str(e.value)
    assert "k header, line 2" in msg and "called from:" in msg and "k source, line 2" in msg
    caret_under(e.value, "  return v + missing;", "missing")
    caret_under(e.value, "out[i] = f(inp[i]);", "f(inp[i])")


# -- carets count characters --------------------------------------------------------------

def test_dsl_caret_after_non_ascii_name():
    src = ("def k(x, out: mb.Out):\n"
           "    i = thread_position_in_grid.x\n"
           "    σ = x[i]\n"
           "    out[i] = σ * 2 + nope_undefined\n")
    k = mb.Kernel(source=src, env={"mb": mb, "thread_position_in_grid": thread_position_in_grid})
    with pytest.raises(KernelNameError) as e:
        k.ir(X)
    caret_under(e.value, "    out[i] = σ * 2 + nope_undefined", "nope_undefined")
    assert str(e.value).splitlines()[-2].count("^") == len("nope_undefined")


def test_dsl_caret_after_non_ascii_string_and_comment():
    src = ("def k(x, out: mb.Out):\n"
           "    i = thread_position_in_grid.x  # l'élément\n"
           "    out[i] = x[i] if 'é' else 0.0\n")
    k = mb.Kernel(source=src, env={"mb": mb, "thread_position_in_grid": thread_position_in_grid})
    with pytest.raises(KernelTypeError) as e:
        k.ir(X)
    caret_under(e.value, "    out[i] = x[i] if 'é' else 0.0", "'é'")
    marks = [ln for ln in str(e.value).splitlines() if "^" in ln][0]
    assert marks.count("^") == len("'é'")                # the end column counts characters too


def test_dsl_syntax_error_caret_after_non_ascii():
    src = "def k(x, out: mb.Out):\n    σ = x[0] +* 2\n"
    with pytest.raises(mb.KernelSyntaxError) as e:
        mb.Kernel(source=src, env={"mb": mb}).ir(X)
    line = "    σ = x[0] +* 2"
    lines = str(e.value).splitlines()
    i = next(n for n, ln in enumerate(lines) if ln.endswith(line))
    col = lines[i + 1].index("^") - (lines[i].index("| ") + 2)
    assert col == line.index("*")                         # at the offending operator, not 1 char late


def test_msl_caret_after_non_ascii_comment():
    body = "uint i = thread_position_in_grid.x;\n/* l'élément */ float v = inp[i] + nope;\nout[i] = v;"
    with pytest.raises(KernelNameError) as e:
        msl_translate("k", body, inputs=[("inp", T.float32, 1)], outputs=[("out", T.float32, 1)])
    caret_under(e.value, "/* l'élément */ float v = inp[i] + nope;", "nope")


def test_a_simulator_code_generator_bug_is_an_internal_error_naming_the_kernel(monkeypatch):
    # past the front ends: the simulator's own code generator raising must still reach the
    # user as metalbench's internal error (a bug report), never a bare AttributeError
    import mlx.core as mx
    from metalbench.sim import kernel as sim_kernel

    k = mb.metal_kernel(name="gen_bug", input_names=["x"], output_names=["out"],
                        source="out[thread_position_in_grid.x] = x[thread_position_in_grid.x];")
    monkeypatch.setattr(sim_kernel, "generate", _boom)
    with pytest.raises(KernelInternalError) as e:
        k(inputs=[mx.array(X)], grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(8,)],
          output_dtypes=[mx.float32], backend="sim")
    assert "gen_bug" in e.value.message and "ZeroDivisionError" in e.value.message
    assert isinstance(e.value.__cause__, ZeroDivisionError)
