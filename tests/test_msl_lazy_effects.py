"""Side effects in operands C evaluates only sometimes -- the right of ``&&`` / ``||`` and the
branches of ``?:`` -- run only where C runs them: the float atomic-max idiom
``while (old < v && !atomic_compare_exchange_weak_explicit(p, &old, ...))``, counters bumped
on one side of a condition, nested short circuits. On the simulator (unchecked and checked)
against NumPy, round-tripped through printed MSL and CUDA, and (GPU) as printed CUDA."""
import numpy as np
import pytest

from msl_cases import MSLCase, run_cuda, run_roundtrip, run_sim

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

CASES = [ATOMIC_MAX, OR_COUNT, TERNARY_NESTED]
IDS = [c.name for c in CASES]


@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_sim_matches_numpy(c):
    run_sim(c)


@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_round_trip(c):
    run_roundtrip(c)


@pytest.mark.gpu
@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_printed_cuda_matches_sim(c):
    run_cuda(c)

