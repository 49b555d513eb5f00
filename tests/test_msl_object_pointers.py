"""Two things code built on MLX's steel headers does, on our own kernels:

* ``METAL_FUNC`` is Metal's own macro (``<metal_stdlib>`` defines it), so a header that
  guards a definition of its own with ``#ifndef METAL_FUNC`` keeps Metal's; one that
  redefines it as ``inline __attribute__((always_inline))`` (either spelling) still has
  its function templates called with template arguments (``f<3>(x)``,
  ``a.template add<float, 2>(x)``).
* a pointer to a local object: ``&p`` of a ``Params p`` passed to a ``const thread
  Params*`` parameter (read as ``p->n``, ``(*p).n``, ``p[0].s``; written through
  ``acc->v += ...``) or held in ``const thread Params* q = &p;``.

Each kernel: simulator vs NumPy (unchecked and checked), a round trip through the printed
MSL and CUDA, and (GPU machine) the printed CUDA. What is not supported fails naming the
construct and its line."""
import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.errors import MetalbenchError
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


OBJ_HEADER = """
struct Params {
  const int n;
  const float s;
  const int stride;
};
struct Acc {
  float v;
};
METAL_FUNC void scaled(device float* o, const device float* x, const thread Params* p, thread Acc* acc,
                       uint i) {
  if (int(i) < p->n) {
    o[i] = p->s * x[i * p->stride] + (*p).n + p[0].s;
  }
  acc->v += p->s;
}
struct Reader {
  float total;
  METAL_FUNC void read(const thread Params* p) thread { total += p->s * p->n; }
};
"""
OBJ_BODY = """
    uint i = thread_position_in_grid.x;
    Params p = {n, 0.5f, 2};
    Acc acc = {1.0f};
    scaled(out, x, &p, &acc, i);
    const thread Params* q = &p;
    thread Acc* r = &acc;
    r->v += 1.0f;
    Reader rd = {0.0f};
    rd.read(q);
    rd.read(&p);
    out2[i] = acc.v + q->s + (*r).v + rd.total;
"""


def _obj_ref(x, n):
    n = int(n)
    out = np.zeros(N, np.float32)
    out[:n] = 0.5 * x[: 2 * n : 2] + n + 0.5
    v = 1.0 + 0.5 + 1.0
    return [out, np.full(N, v + 0.5 + v + 2 * 0.5 * n, np.float32)]


OBJ_PTR = MSLCase("object_pointers", OBJ_BODY, {"x": X, "n": np.array(27, np.int32)},
                  [("out", (N,), np.float32), ("out2", (N,), np.float32)], _obj_ref,
                  header=OBJ_HEADER, atol=1e-5, init_value=0.0)

CASES = [_templates_case("metal_func_guarded", GUARD), _templates_case("metal_func_redefined", REDEFINE),
         _templates_case("metal_func_redefined_underscores", REDEFINE.replace("(always_inline)",
                                                                               "(__always_inline__)")),
         OBJ_PTR]
test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)


def _error(source, header=OBJ_HEADER):
    k = mb.metal_kernel(name="bad_object_pointer", input_names=["x"], output_names=["out"], source=source,
                        header=header)
    with pytest.raises(MetalbenchError) as ei:
        k(inputs=[mx.array(X)], grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(8,)],
          output_dtypes=[mx.float32], backend="sim")
    return str(ei.value)


MOVES = OBJ_HEADER + """
METAL_FUNC float walk(const thread Params* p) {
  p++;
  return p->s;
}
"""


@pytest.mark.parametrize("src,header,line,words", [
    ("uint i = thread_position_in_grid.x;\nParams p = {1, 2.0f, 1};\nconst thread Params* q = &p;\n"
     "out[i] = q[1].s;", OBJ_HEADER, 4, "an index other than 0 of 'q'"),
    ("uint i = thread_position_in_grid.x;\nParams p = {1, 2.0f, 1};\nout[i] = walk(&p);", MOVES, 22,
     "moving 'p', a pointer to one local Params"),
])
def test_unsupported_uses_name_the_construct_and_line(src, header, line, words):
    msg = _error(src, header)
    assert words in msg, msg
    assert f"line {line}" in msg or f":{line}:" in msg or f" {line} |" in msg, msg
