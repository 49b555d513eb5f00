"""Side effects in operands C evaluates only sometimes -- the right of ``&&`` / ``||`` and the
branches of ``?:`` -- run only where C runs them: the float atomic-max idiom
``while (old < v && !atomic_compare_exchange_weak_explicit(p, &old, ...))``, counters bumped
on one side of a condition, nested short circuits; and GNU statement expressions
``({ ...; value; })``, whose statements run where they are evaluated. On the simulator
(unchecked and checked) against NumPy, round-tripped through printed MSL and CUDA, and (GPU)
as printed CUDA."""
import numpy as np
import pytest

from msl_cases import MSLCase, three_ways

RNG = np.random.default_rng(7)
X = (RNG.integers(-50, 50, 256) * 0.5).astype(np.float32)

ATOMIC_MAX = MSLCase(
    "atomic_max_cas",
    """
    uint i = thread_position_in_grid.x;
    float v = x[i];
    // the bits of a float maximum, raised by compare-and-swap while this value is larger
    device atomic_uint* p = (device atomic_uint*)&best[i % 4];
    uint old = atomic_load_explicit(p, memory_order_relaxed);
    while (as_type<float>(old) < v &&
           !atomic_compare_exchange_weak_explicit(p, &old, as_type<uint>(v), memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
    """,
    {"x": X},
    [("best", (4,), np.float32)],
    lambda x: [x.reshape(-1, 4).max(0)],
    grid=(256, 1, 1), tg=(64, 1, 1), init_value=-1000.0)

OR_COUNT = MSLCase(
    "or_counter",
    """
    uint i = thread_position_in_grid.x;
    device atomic_uint* c = (device atomic_uint*)counts;
    // the counter moves only for the elements the left side does not decide
    bool keep = x[i] > 0.0f || atomic_fetch_add_explicit(&c[0], 1u, memory_order_relaxed) > 100000u;
    bool both = x[i] < -10.0f && atomic_fetch_add_explicit(&c[1], 1u, memory_order_relaxed) < 100000u;
    y[i] = keep ? 1.0f : (both ? -1.0f : 0.0f);
    """,
    {"x": X},
    [("y", (256,), np.float32), ("counts", (2,), np.uint32)],
    lambda x: [np.where(x > 0, 1.0, np.where(x < -10, -1.0, 0.0)).astype(np.float32),
               np.array([(x <= 0).sum(), (x < -10).sum()], np.uint32)],
    grid=(256, 1, 1), tg=(64, 1, 1), init_value=0)

TERNARY_NESTED = MSLCase(
    "ternary_nested",
    """
    uint i = thread_position_in_grid.x;
    device atomic_uint* c = (device atomic_uint*)counts;
    // a branch of ?: with a side effect runs only when chosen; a short circuit nested in one
    float r = (i % 3 == 0) ? x[i] + float(atomic_fetch_add_explicit(&c[0], 1u, memory_order_relaxed) * 0u)
                           : ((x[i] < 0.0f || (x[i] > 5.0f && atomic_fetch_add_explicit(&c[1], 2u,
                                                               memory_order_relaxed) < 100000u)) ? 2.0f : 3.0f);
    int k = 0;
    int n = (i % 2 == 1) ? k++ + 10 : 20;     // k++ only on odd threads
    y[i] = r + float(n + k);
    """,
    {"x": X},
    [("y", (256,), np.float32), ("counts", (2,), np.uint32)],
    lambda x: [np.where(np.arange(256) % 3 == 0, x,
                        np.where((x < 0) | (x > 5), 2.0, 3.0)).astype(np.float32)
               + np.where(np.arange(256) % 2 == 1, 11.0, 20.0).astype(np.float32),
               np.array([(np.arange(256) % 3 == 0).sum(),
                         2 * ((np.arange(256) % 3 != 0) & (x >= 0) & (x > 5)).sum()], np.uint32)],
    grid=(256, 1, 1), tg=(64, 1, 1), init_value=0)

STATEMENT_EXPR = MSLCase(
    "statement_expressions",
    """
    uint i = thread_position_in_grid.x;
    int k = 0;
    float m = MAX_ONCE(x[i], float(k++));            // each argument evaluated once
    float s = ({ float acc = 0.0f; for (int j = 0; j < 4; ++j) acc += x[(i + j) % 256]; acc; });
    // a statement expression on the right of &&: its loop runs only where the left side holds
    bool big = x[i] > 0.0f && ({ int n = 0; while (n < 3) ++n; n; }) == 3;
    y[i] = m + s + (big ? 100.0f : 0.0f) + float(k);
    """,
    {"x": X},
    [("y", (256,), np.float32)],
    lambda x: [(np.maximum(x, 0.0) + sum(np.roll(x, -j) for j in range(4)) + np.where(x > 0, 100.0, 0.0)
                + 1.0).astype(np.float32)],
    grid=(256, 1, 1), tg=(64, 1, 1), atol=1e-5,
    header="#define MAX_ONCE(a, b) ({ auto _a = (a); auto _b = (b); _a > _b ? _a : _b; })\n")

CASES = [ATOMIC_MAX, OR_COUNT, TERNARY_NESTED, STATEMENT_EXPR]
test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)



def test_statement_expression_without_a_value_is_named():
    import mlx.core as mx

    import metalbench as mb
    from metalbench.errors import KernelTypeError
    k = mb.metal_kernel(name="noval", input_names=["x"], output_names=["y"], source="""
    uint i = thread_position_in_grid.x;
    y[i] = ({ float t = x[i]; });
    """)
    with pytest.raises(KernelTypeError, match=r"must end with an expression") as e:
        k(inputs=[mx.array(X)], grid=(256, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(256,)],
          output_dtypes=[mx.float32], backend="sim")
    assert "line 3" in str(e.value)
