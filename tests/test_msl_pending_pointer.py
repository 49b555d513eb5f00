"""A pointer declared without a value and set later (``const device float* row;`` then
``if (t == 0) row = init + ...; else row = hist + ...;``, as a gated-delta backward kernel
walks back through a saved state history): its first assignment fixes the buffer; an
if/else setting it into one of two buffers splits the rest of the block, as ``c ? A : B``
does. Before: "a pointer without an initialiser is not supported"."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb


def _run(src, inputs, n, tg=None, checked=False, **kw):
    k = mb.metal_kernel(name="pend", input_names=list(inputs), output_names=["out"], source=src)
    return np.array(k(inputs=[mx.array(v) for v in inputs.values()], grid=(n, 1, 1), threadgroup=(tg or n, 1, 1),
                      output_shapes=[(n,)], output_dtypes=[mx.float32], backend="sim", checked=checked, **kw)[0])


A = np.arange(8, dtype=np.float32)
B = 100 + np.arange(8, dtype=np.float32)


@pytest.mark.parametrize("checked", [False, True])
def test_if_else_into_two_buffers(checked):
    # the previous row from `b`, except for the first, which comes from `a` (the walk back)
    src = """
        uint i = thread_position_in_grid.x;
        const device float* prev;
        if (i == 0) {
            prev = a + 3;
        } else {
            prev = b + (i - 1);
        }
        out[i] = prev[0] * 2.0f + prev[1];
    """
    got = _run(src, {"a": A, "b": B}, 8, checked=checked)
    want = np.array([A[3] * 2 + A[4]] + [B[i - 1] * 2 + B[i] for i in range(1, 8)])
    np.testing.assert_array_equal(got, want)


def test_if_else_without_braces_then_a_loop_of_reads():
    src = """
        uint i = thread_position_in_grid.x;
        const device float* src;
        if (i % 2 == 1) src = b + i / 2;
        else src = a + i / 2;
        float s = 0.0f;
        for (int j = 0; j < 3; ++j) s += src[j];
        out[i] = s;
    """
    got = _run(src, {"a": A, "b": B}, 8)
    want = [(B if i % 2 else A)[i // 2: i // 2 + 3].sum() for i in range(8)]
    np.testing.assert_array_equal(got, want)


def test_one_buffer_set_in_both_branches_and_later():
    src = """
        uint i = thread_position_in_grid.x;
        const device float* p;
        if (i < 4) { p = a + i; } else { p = a + (7 - i); }
        float first = p[0];
        p = a;                       // moved again, same buffer
        out[i] = first + p[i];
    """
    got = _run(src, {"a": A}, 8)
    want = [A[i if i < 4 else 7 - i] + A[i] for i in range(8)]
    np.testing.assert_array_equal(got, want)


def test_split_followed_by_simd_sum_on_a_uniform_condition():
    # the condition is the same on the whole SIMD-group (a template constant), so the
    # simd_sum after the split still sums all 32 lanes
    src = """
        uint i = thread_position_in_grid.x;
        const device float* p;
        if (USE_B) { p = b; } else { p = a; }
        out[i] = simd_sum(p[i % 8]);
    """
    got = _run(src, {"a": A, "b": B}, 32, template=[("USE_B", 1)])
    np.testing.assert_allclose(got, np.full(32, B.sum() * 4))


def test_split_on_a_varying_condition_before_simd_sum_is_refused():
    src = """
        uint i = thread_position_in_grid.x;
        const device float* p;
        if (i < 16) { p = a; } else { p = b; }
        out[i] = simd_sum(p[i % 8]);
    """
    with pytest.raises(mb.KernelSyntaxError, match=r"'a' or 'b'.*line 4"):
        _run(src, {"a": A, "b": B}, 32)


def test_two_buffers_in_a_loop_names_the_pointer_and_line():
    # not an if/else of one assignment each: still refused, saying which pointer and where
    src = """
        uint i = thread_position_in_grid.x;
        const device float* p;
        p = a;
        for (int j = 0; j < 2; ++j) {
            if (j == 1) p = b;
        }
        out[i] = p[i];
    """
    with pytest.raises(mb.MetalbenchError, match=r"'p'|points into 'a'") as e:
        _run(src, {"a": A, "b": B}, 8)
    assert "line 6" in str(e.value) or "6 |" in str(e.value)
