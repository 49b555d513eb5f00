"""mb.metal_kernel's errors: MLX-compatible launch errors, body-line syntax errors."""
import mlx.core as mx
import numpy as np
import metalbench as mb
import pytest

from metalbench.errors import KernelNameError, KernelSyntaxError, MetalbenchError
from metalbench.mlx_compat import metal_kernel

SRC = "uint i = thread_position_in_grid.x;\nout[i] = inp[i];"


def k():
    return metal_kernel(name="cp", input_names=["inp"], output_names=["out"], source=SRC)


def call(kern, **over):
    kw = dict(inputs=[mx.zeros(4)], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
              output_dtypes=[mx.float32], backend="sim")
    kw.update(over)
    return kern(**kw)


def test_needs_an_output():
    with pytest.raises(ValueError, match=r"\[metal_kernel\] Must specify at least one output."):
        metal_kernel(name="x", input_names=["a"], output_names=[], source="")


def test_inputs_length_mismatch():
    with pytest.raises(ValueError, match=r"Expected `inputs` to have size 1 but got size 2"):
        call(k(), inputs=[mx.zeros(4), mx.zeros(4)])


def test_output_dtypes_length_mismatch():
    with pytest.raises(ValueError, match=r"Expected `output_dtypes` to have size 1 but got size 0"):
        call(k(), output_dtypes=[])


def test_missing_output_shapes_is_a_type_error():
    kw = dict(inputs=[mx.zeros(4)], grid=(4, 1, 1), threadgroup=(4, 1, 1),
              output_dtypes=[mx.float32], backend="sim")
    with pytest.raises(TypeError, match="output_shapes"):
        k()(**kw)


def test_threadgroup_too_large():
    with pytest.raises(ValueError, match=r"Thread group size \(2048\) is greater than"):
        call(k(), grid=(4096, 1, 1), threadgroup=(2048, 1, 1))


def test_unknown_template_name():
    kern = metal_kernel(name="t", input_names=["inp"], output_names=["out"],
                        source="uint i = thread_position_in_grid.x;\nT v = inp[i];\nout[i] = v;")
    with pytest.raises(KernelNameError) as e:
        call(kern)
    assert e.value.span.line == 2 and "template" in str(e.value)


def test_bad_template_value():
    with pytest.raises(TypeError):
        call(k(), template=[("T", "float")])


def test_syntax_error_shows_body_line():
    kern = metal_kernel(name="bad", input_names=["inp"], output_names=["out"],
                        source="\n    uint i = thread_position_in_grid.x;\n    out[i] = inp[i] * ;\n")
    with pytest.raises(KernelSyntaxError) as e:
        call(kern)
    msg = str(e.value)
    assert e.value.span.line == 3 and "out[i] = inp[i] * ;" in msg and "^" in msg


def test_unsupported_construct_says_metal_only():
    kern = metal_kernel(name="u", input_names=["inp"], output_names=["out"],
                        source="goto done;\ndone: out[0] = 1.0f;")
    with pytest.raises(MetalbenchError, match="metal"):
        call(kern)


def test_verbose_prints_full_source(capsys):
    kern = k()
    kern.full_source([mx.zeros(4)], [mx.float32])
    print(kern.full_source([mx.zeros(4)], [mx.float32]))
    out = capsys.readouterr().out
    assert "[[kernel]] void custom_kernel_cp" in out and "thread_position_in_grid [[thread_position_in_grid]]" in out


@pytest.mark.gpu
@pytest.mark.skipif("not __import__('metalbench.launch', fromlist=['x']).cuda_available()")
def test_cuda_backend_matches_sim():
    import numpy as np
    a = mx.array(np.random.default_rng(1).standard_normal(64).astype(np.float32))
    kern = metal_kernel(name="myexp", input_names=["inp"], output_names=["out"],
                        source="uint i = thread_position_in_grid.x;\nout[i] = metal::exp(inp[i]);")
    kw = dict(inputs=[a], grid=(64, 1, 1), threadgroup=(32, 1, 1), output_shapes=[a.shape],
              output_dtypes=[a.dtype])
    (c,) = kern(backend="cuda", **kw)
    assert mx.allclose(c, mx.exp(a), rtol=1e-5).item()


def test_a_kernel_name_metal_cannot_compile_is_an_error_naming_it():
    # MLX compiles the body as the function custom_kernel_<name>: '.' and '-' are a Metal syntax
    # error there (a name built from float parameters, 'step_0.9_eps_1e-08', runs nowhere)
    k = metal_kernel(name="scale_0.5_eps_1e-08", input_names=["x"], output_names=["out"],
                        source="uint i = thread_position_in_grid.x; out[i] = 0.5f * x[i];")
    with pytest.raises(KernelSyntaxError) as ei:
        k(inputs=[mx.ones((4,))], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
          output_dtypes=[mx.float32], backend="sim")
    msg = str(ei.value)
    assert "scale_0.5_eps_1e-08" in msg and "'.'" in msg and "'-'" in msg and "custom_kernel_" in msg


@pytest.mark.parametrize("bad", [(mx.array(420.0), 1, 1), (mx.divide(mx.array(840, dtype=mx.uint32), mx.array(2, dtype=mx.uint32)), 1, 1),
                                 (mx.array([420]), 1, 1), (420.0, 1, 1)])
def test_a_grid_of_floats_is_refused_as_mlx_refuses_it(bad):
    # int() truncated a float mx.array (mx.divide of two uint32 arrays): a real wrapper ran
    # 2 threads instead of 420 and gave a wrong answer without an error
    k = mb.metal_kernel("grid_floats", ["x"], ["out"], "uint i = thread_position_in_grid.x; out[i] = x[i] + 1;")
    x = mx.arange(420, dtype=mx.float32)
    with pytest.raises(Exception, match="grid must contain ints"):
        k(inputs=[x], grid=bad, threadgroup=(32, 1, 1), output_shapes=[(420,)], output_dtypes=[mx.float32], backend="sim")
    out, = k(inputs=[x], grid=(mx.array(420), 1, 1), threadgroup=(32, 1, 1), output_shapes=[(420,)],
             output_dtypes=[mx.float32], backend="sim")      # a 0-d integer array is a size, as in MLX
    np.testing.assert_array_equal(np.asarray(out), np.arange(420) + 1)


@pytest.mark.parametrize("bad", [[(4.0,)], [(mx.array(4.0),)], [(mx.array([4]),)], [4]])
def test_output_shapes_of_floats_are_refused_as_mlx_refuses_them(bad):
    k = mb.metal_kernel("shape_floats", ["x"], ["out"], "uint i = thread_position_in_grid.x; out[i] = x[i];")
    with pytest.raises(Exception, match="output_shapes must be a list of shapes of ints"):
        k(inputs=[mx.zeros(4)], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=bad,
          output_dtypes=[mx.float32], backend="sim")
