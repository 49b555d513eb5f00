"""The thread attributes and constants a kernel can use, with their docs (for
``help()`` on the DSL objects and for ``docs/language.md``).

    >>> ATTRIBUTES["thread_position_in_grid"][1]
    "This thread's position in the grid (x, y, z): the index of the element it works on."
"""
from __future__ import annotations

import math

from ..ir import THREAD_ATTRIBUTES

ATTRIBUTES = {
    "thread_position_in_grid": ("uint3", "This thread's position in the grid (x, y, z): the index of the "
                                "element it works on."),
    "threads_per_grid": ("uint3", "The grid's size in threads (the launch's grid=)."),
    "grid_size": ("uint3", "The same as threads_per_grid."),
    "grid_origin": ("uint3", "The grid's origin: always (0, 0, 0) for compute kernels."),
    "thread_position_in_threadgroup": ("uint3", "This thread's position inside its threadgroup."),
    "threads_per_threadgroup": ("uint3", "This threadgroup's size (smaller than the launch's at the grid's edge)."),
    "dispatch_threads_per_threadgroup": ("uint3", "The launch's threadgroup size (threadgroup=)."),
    "threadgroup_position_in_grid": ("uint3", "This threadgroup's position in the grid of threadgroups."),
    "threadgroups_per_grid": ("uint3", "How many threadgroups the grid has in each dimension."),
    "thread_index_in_threadgroup": ("uint", "This thread's linear index in its threadgroup (x fastest)."),
    "thread_index_in_simdgroup": ("uint", "This thread's lane in its SIMD-group (0..31)."),
    "simdgroup_index_in_threadgroup": ("uint", "Which SIMD-group of its threadgroup this thread is in."),
    "simdgroups_per_threadgroup": ("uint", "How many SIMD-groups this threadgroup has."),
    "dispatch_simdgroups_per_threadgroup": ("uint", "How many SIMD-groups a full threadgroup of the launch has."),
    "threads_per_simdgroup": ("uint", "The SIMD-group width: 32."),
    "thread_execution_width": ("uint", "The SIMD-group width: 32."),
    "thread_index_in_quadgroup": ("uint", "This thread's lane in its quad-group (0..3)."),
    "quadgroup_index_in_threadgroup": ("uint", "Which quad-group of its threadgroup this thread is in."),
    "quadgroups_per_threadgroup": ("uint", "How many quad-groups this threadgroup has."),
    "dispatch_quadgroups_per_threadgroup": ("uint", "How many quad-groups a full threadgroup of the launch has."),
}
assert set(ATTRIBUTES) == set(THREAD_ATTRIBUTES), "every thread attribute needs its doc line"

# Float constants: the DSL names (Metal's) and their values; a kernel may also use
# math.inf, math.pi, float("inf"), np.inf, np.nan -- every float global is a
# compile-time float32 constant.
CONSTANTS = {
    "INFINITY": (math.inf, "Positive infinity (-INFINITY for negative)."),
    "NAN": (math.nan, "A quiet NaN."),
    "MAXFLOAT": (3.4028234663852886e38, "The largest finite float32."),
    "FLT_MAX": (3.4028234663852886e38, "The largest finite float32."),
    "FLT_MIN": (1.1754943508222875e-38, "The smallest normal positive float32."),
    "FLT_EPSILON": (1.1920928955078125e-07, "The gap between 1.0 and the next float32."),
    "HALF_MAX": (65504.0, "The largest finite half."),
    "M_PI_F": (math.pi, "pi"),
    "M_PI_2_F": (math.pi / 2, "pi / 2"),
    "M_PI_4_F": (math.pi / 4, "pi / 4"),
    "M_1_PI_F": (1 / math.pi, "1 / pi"),
    "M_2_PI_F": (2 / math.pi, "2 / pi"),
    "M_2_SQRTPI_F": (2 / math.sqrt(math.pi), "2 / sqrt(pi)"),
    "M_E_F": (math.e, "e"),
    "M_LOG2E_F": (math.log2(math.e), "log2(e)"),
    "M_LOG10E_F": (math.log10(math.e), "log10(e)"),
    "M_LN2_F": (math.log(2), "ln 2"),
    "M_LN10_F": (math.log(10), "ln 10"),
    "M_SQRT2_F": (math.sqrt(2), "sqrt(2)"),
    "M_SQRT1_2_F": (math.sqrt(0.5), "1 / sqrt(2)"),
}
