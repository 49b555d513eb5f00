"""The Python DSL front end: typing (MSL's rules), specialisation and every error."""
import numpy as np
import pytest

import metalbench as mb
from metalbench import ir
from metalbench import types as T
from metalbench.dsl import *  # noqa: F401,F403

rng = np.random.default_rng(0)
X = rng.random(64, dtype=np.float32)


def body_types(k, *args, **kw):
    """name -> type of every declared local in the kernel."""
    kir = k.ir(*args, **kw)
    return {s.var.name: s.var.type for s in ir.walk(kir.body) if isinstance(s, ir.Decl)}


def test_float_literal_times_half_is_float():
    @mb.kernel
    def k(x, out: mb.Out):
        i = thread_position_in_grid.x
        h = x[i]
        a = 0.5 * h
        b = h * 2
        c = h + h
        out[i] = a

    t = body_types(k, X.astype(np.float16))
    assert t["h"] == T.float16
    assert t["a"] == T.float32      # unsuffixed float literal is a float: half promotes
    assert t["b"] == T.float16      # int literal converts to half
    assert t["c"] == T.float16


def test_usual_arithmetic_conversions():
    @mb.kernel
    def k(x, n: mb.int32, out: mb.Out):
        i = thread_position_in_grid.x
        a = i + n            # uint + int -> uint
        b = n * 2            # int
        c = int64(n) + i     # long + uint -> long
        d = uint8(3) + uint8(4)  # promoted to int
        e = i / 2            # true division -> float
        f = n // 2           # C division, int
        out[i] = x[i]

    t = body_types(k, X, 5)
    assert t["a"] == T.uint32
    assert t["b"] == T.int32
    assert t["c"] == T.int64
    assert t["d"] == T.int32
    assert t["e"] == T.float32
    assert t["f"] == T.int32


def test_local_takes_common_type_of_assignments():
    @mb.kernel
    def k(x, out: mb.Out):
        i = thread_position_in_grid.x
        acc = 0
        for j in range(4):
            acc += x[j]
        out[i] = acc

    assert body_types(k, X)["acc"] == T.float32


def test_annotation_fixes_type():
    @mb.kernel
    def k(x, out: mb.Out):
        i = thread_position_in_grid.x
        acc: float16 = 0
        acc += x[i]
        out[i] = acc

    assert body_types(k, X)["acc"] == T.float16


def test_unsigned_wraparound_is_folded():
    @mb.kernel
    def k(x, out: mb.Out(dtype=mb.uint32)):
        i = thread_position_in_grid.x
        u = uint32(3) - 5
        out[i] = u

    kir = k.ir(X)
    assigns = [s for s in ir.walk(kir.body) if isinstance(s, ir.Assign) and s.var.name == "u"]
    assert assigns[0].value.value == 2**32 - 2


def test_specialisation_is_cached_per_dtype_and_constexpr():
    @mb.kernel
    def k(x, out: mb.Out, S: mb.constexpr = 2):
        i = thread_position_in_grid.x
        out[i] = x[i] * S

    a = k.specialize(X)
    assert k.specialize(X) is a
    assert k.specialize(X.astype(np.float16)) is not a
    assert k.specialize(X, S=3) is not a
    assert len(k._cache) == 3


def test_globals_and_closures_are_constants():
    SCALE = 3

    @mb.kernel
    def k(x, out: mb.Out):
        i = thread_position_in_grid.x
        out[i] = x[i] * SCALE

    kir = k.ir(X)
    consts = [n.value for n in ir.walk(kir.body) if isinstance(n, ir.Const)]
    assert 3.0 in consts


def test_constexpr_if_keeps_only_taken_side():
    @mb.kernel
    def k(x, out: mb.Out, MODE: mb.constexpr = 0):
        i = thread_position_in_grid.x
        if MODE == 1:
            out[i] = undefined_name  # noqa: F821 - never translated
        else:
            out[i] = x[i]

    k.ir(X)  # no error: the untaken side is not translated
    with pytest.raises(mb.KernelNameError):
        k.ir(X, MODE=1)


def test_multidim_index_lowered_row_major():
    @mb.kernel
    def k(x, out: mb.Out):
        i = thread_position_in_grid.x
        j = thread_position_in_grid.y
        out[j, i] = x[j, i]

    kir = k.ir(X.reshape(8, 8))
    store = [s for s in ir.walk(kir.body) if isinstance(s, ir.Store)][0]
    assert "shape[1]" in ir.dump(store)
    assert kir.param("x").uses_shape


def test_threadgroup_array_2d_hoisted():
    @mb.kernel
    def k(x, out: mb.Out, T_: mb.constexpr = 8):
        tile = threadgroup_array((T_, T_), float32)
        i = thread_position_in_threadgroup.x
        j = thread_position_in_threadgroup.y
        tile[j, i] = x[0]
        threadgroup_barrier()
        out[0] = tile[i, j]

    kir = k.ir(X)
    assert isinstance(kir.body[0], ir.ArrayDecl) and kir.body[0].shape == (8, 8)
    assert ir.threadgroup_bytes(kir) == 8 * 8 * 4


def test_device_function_specialised_per_type():
    @mb.func
    def sq(v):
        return v * v

    @mb.kernel
    def k(x, y, out: mb.Out):
        i = thread_position_in_grid.x
        out[i] = sq(x[i]) + float32(sq(y[i]))

    kir = k.ir(X, X.astype(np.float16))
    assert sorted(f.ret.name for f in kir.functions) == ["float16", "float32"]


def test_atomic_marks_output_atomic():
    @mb.kernel
    def k(x, hist: mb.Out(shape=(8,), dtype=mb.int32)):
        i = thread_position_in_grid.x
        atomic_add(hist, int32(x[i] * 8), 1)

    kir = k.ir(X)
    assert kir.param("hist").atomic


# ----------------------------------------------------------------------------- errors

def _raises(cls, k, *args, match=None, **kw):
    with pytest.raises(cls) as ei:
        k.ir(*args, **kw)
    msg = str(ei.value)
    assert "^" in msg, msg       # the line is shown with a caret
    if match:
        assert match in msg, msg
    return msg


@pytest.mark.parametrize("stmt,what", [
    ("yield i", "yield"),
    ("try:\n            pass\n        except Exception:\n            pass", "try"),
    ("v = [j for j in range(3)]", "comprehensions"),
    ("with open('f') as f:\n            pass", "with"),
    ("v = lambda: 1", "lambda"),
    ("import math", "import"),
])
def test_unsupported_python(stmt, what):
    src = f"def k(x, out: mb.Out):\n        i = thread_position_in_grid.x\n        {stmt}\n"
    k = mb.Kernel(source=src, env={"mb": mb, **{n: globals()[n] for n in ("thread_position_in_grid",)}})
    msg = _raises(mb.KernelSyntaxError, k, X)
    assert what in msg


def test_undefined_name_points_at_line():
    @mb.kernel
    def k(x, out: mb.Out):
        i = thread_position_in_grid.x
        out[i] = x[i] + not_defined  # noqa: F821

    msg = _raises(mb.KernelNameError, k, X, match="not_defined")
    assert "out[i] = x[i] + not_defined" in msg


def test_float_index_is_a_type_error():
    @mb.kernel
    def k(x, out: mb.Out):
        i = thread_position_in_grid.x
        out[i * 0.5] = x[i]

    _raises(mb.KernelTypeError, k, X, match="index must be an integer")


def test_wrong_builtin_arity():
    @mb.kernel
    def k(x, out: mb.Out):
        i = thread_position_in_grid.x
        out[i] = metal.exp(x[i], 2.0)

    _raises(mb.KernelTypeError, k, X, match="exp() takes 1 argument")


def test_recursion_runs_on_sim_and_is_refused_on_metal():
    """Recursion is a CUDA (and sim) feature; Metal has none: its printer names the function."""
    @mb.func
    def fact(n):
        if n <= 1:
            return 1
        return n * fact(n - 1)

    @mb.kernel
    def k(x, out: mb.Out):
        i = thread_position_in_grid.x
        out[i] = fact(int32(i))

    x = np.zeros(8, np.float32)
    got = np.asarray(k(x, grid=8, threadgroup=8, backend="sim"))
    np.testing.assert_array_equal(got, [1, 1, 2, 6, 24, 120, 720, 5040])
    with pytest.raises(mb.KernelTypeError, match="fact calls itself .recursion., which Metal does not support"):
        k.source(x, backend="metal")


def test_kernel_returning_value_refused():
    @mb.kernel
    def k(x, out: mb.Out):
        return x[0]

    _raises(mb.KernelSyntaxError, k, X, match="cannot return a value")


def test_float64_input_is_float64_and_metal_suggests_float32():
    @mb.kernel
    def k(x, out: mb.Out):
        out[0] = x[0]

    assert k.ir(np.ones(4)).params[0].type == mb.float64
    with pytest.raises(mb.KernelTypeError, match="Metal has no double.*float32"):
        k.source(np.ones(4), backend="metal")


def test_wrong_number_of_arguments():
    @mb.kernel
    def k(x, y, out: mb.Out):
        out[0] = x[0]

    with pytest.raises(mb.KernelLaunchError, match="missing argument"):
        k.ir(X)
    with pytest.raises(mb.KernelLaunchError, match="takes 2 argument"):
        k.ir(X, X, X)


def test_empty_array_refused():
    @mb.kernel
    def k(x, out: mb.Out):
        out[0] = x[0]

    with pytest.raises(mb.KernelLaunchError, match="empty"):
        k.ir(np.zeros(0, np.float32))


def test_threadgroup_memory_limit():
    @mb.kernel
    def k(x, out: mb.Out):
        big = threadgroup_array(9000, float32)
        big[0] = x[0]
        out[0] = big[0]

    with pytest.raises(mb.KernelLaunchError, match="32 KiB") as ei:
        k.ir(X)
    assert "threadgroup_array(9000" in str(ei.value)


@pytest.mark.parametrize("grid,tg,match", [
    (0, 32, "positive"), (-4, 32, "positive"), (64, 0, "positive"),
    (64, (32, 64, 1), "at most 1024"), (64, 2048, "at most 1024"), (64, (1, 2, 3, 4), "1 to 3"),
])
def test_bad_launch_configs(grid, tg, match):
    from metalbench import launch
    with pytest.raises(mb.KernelLaunchError, match=match):
        launch.normalize(grid, tg)


def test_syntax_error_in_cell_source_shows_line():
    k_src = "def k(x, out):\n    i = = 3\n"
    with pytest.raises(mb.KernelSyntaxError) as ei:
        mb.Kernel(source=k_src, env={}, first_line=2, source_name="cell")
    assert "line 3" in str(ei.value)
