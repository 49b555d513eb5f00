"""Code built on MLX's steel headers, on our own kernels:

* ``METAL_FUNC`` is Metal's own macro (``<metal_stdlib>`` defines it), so a header that
  guards a definition of its own with ``#ifndef METAL_FUNC`` keeps Metal's; one that
  redefines it as ``inline __attribute__((always_inline))`` (either spelling) still has
  its function templates called with template arguments (``f<3>(x)``,
  ``a.template add<float, 2>(x)``).

Each kernel: simulator vs NumPy (unchecked and checked), a round trip through the printed
MSL and CUDA, and (GPU machine) the printed CUDA."""
import numpy as np

from msl_cases import MSLCase, three_ways

RNG = np.random.default_rng(41)
N = 32
X = RNG.standard_normal(2 * N).astype(np.float32)

# Metal's definition, as code copied from MLX's kernels spells its fallback
GUARD = """
#ifndef METAL_FUNC
#define METAL_FUNC inline __attribute__((__always_inline__))
#endif
"""
REDEFINE = """
#undef METAL_FUNC
#define METAL_FUNC inline __attribute__((always_inline))
"""
TEMPLATES = """
#ifdef METAL_FUNC
#define HAVE_METAL_FUNC 1
#else
#define HAVE_METAL_FUNC 0
#endif
template <int F>
METAL_FUNC float times(float v) { return v * F; }
struct Sum {
  float s;
  template <typename U, int K>
  METAL_FUNC void add(U v) thread { s += K * float(v); }
};
"""
TEMPLATES_BODY = """
    uint i = thread_position_in_grid.x;
    Sum a = {1.0f};
    a.template add<float, 2>(x[i]);
    a.add<int, 3>(int(i));
    out[i] = times<3>(a.s) + HAVE_METAL_FUNC;
"""


def _templates_ref(x):
    i = np.arange(N)
    return [3 * (1 + 2 * x[:N] + 3 * i) + 1]


def _templates_case(name, prelude):
    return MSLCase(name, TEMPLATES_BODY, {"x": X}, [("out", (N,), np.float32)], _templates_ref,
                   header=prelude + TEMPLATES, atol=1e-5)


CASES = [_templates_case("metal_func_guarded", GUARD), _templates_case("metal_func_redefined", REDEFINE),
         _templates_case("metal_func_redefined_underscores", REDEFINE.replace("(always_inline)",
                                                                               "(__always_inline__)"))]
test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)

