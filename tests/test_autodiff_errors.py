"""Outside the differentiable subset: each construct is a NotDifferentiableError that names
it and shows its line; bad vjp calls are launch errors that say what to pass."""
import numpy as np
import pytest

import metalbench as mb
from metalbench import dsl

DSL = {"mb": mb, **{n: getattr(dsl, n) for n in dir(dsl) if not n.startswith("_")}}
X = np.linspace(0.1, 1.0, 64, dtype=np.float32)


def vjp_of(body, params="x, out: mb.Out", args=(X,), grid=64, threadgroup=64):
    src = f"def k({params}):\n    i = thread_position_in_grid.x\n" + "".join(f"    {ln}\n" for ln in body)
    k = mb.kernel(source=src, env=DSL)
    return k.vjp(*args, cotangents=np.ones(64, np.float32), grid=grid, threadgroup=threadgroup, backend="sim")


CASES = [
    (["s = 0.0", "j = 0", "while j < 4:", "    s += x[j]", "    j += 1", "out[i] = s"], "while loop", 5),
    (["s = 0.0", "for j in range(8):", "    if x[j] > 0.5:", "        break", "    s += x[j]", "out[i] = s"],
     "break", 6),
    (["t = threadgroup_array(64, float32)", "t[i] = x[i]", "if i < 32:", "    threadgroup_barrier()",
      "out[i] = t[63 - i]"], "a barrier inside an if or a loop", 6),
    (["t = threadgroup_array(64, float32)", "t[i] = x[i]", "threadgroup_barrier()", "s = 0.0", "for k in range(4):",
      "    s += t[(i + k) % 64]", "threadgroup_barrier()", "t[i] = s", "threadgroup_barrier()", "out[i] = t[63 - i]"],
     "reading the threadgroup array 't' in a loop", 8),
    (["out[i] = x[i]", "out[i] = out[i] * 2.0"], "reading the output 'out'", 4),
    (["old = atomic_add(out, 0, x[i])", "out[i] = old"], "the value atomic_add returns", 3),
    (["atomic_max(out, 0, x[i])"], "atomic_max on the float output 'out'", 3),
    (["t = local_array(4, float32)", "t[0] = x[i]", "out[i] = t[0]"], "local", 3),
    (["v = float4(x[i], x[i], 1.0, 2.0)", "out[i] = v.x * v.y"], "float vector", 3),
    (["s = 0.0", "n = 4", "for j in range(n):", "    s += x[j]", "    n = n - 1", "out[i] = s"],
     "trip count depends on values written in the loop", 5),
    (["out[i] = metal.tgamma(x[i])"], "tgamma() has no derivative rule", 3),
]


@pytest.mark.parametrize("body,what,line", CASES, ids=[c[1][:20] for c in CASES])
def test_unsupported_construct_names_it_and_its_line(body, what, line):
    with pytest.raises(mb.NotDifferentiableError) as e:
        vjp_of(body)
    msg = str(e.value)
    assert what in msg and f"line {line}" in msg and "hint:" in msg, msg


def test_non_differentiable_values_are_fine():
    # integer arithmetic, comparisons, floor and casts to int pass zero; they are no error
    g, = vjp_of(["j = int(metal.floor(x[i] * 10.0))", "f = float(j % 3)", "out[i] = x[i] * f + metal.floor(x[i])"])
    want = np.floor(X * 10).astype(np.int32) % 3
    np.testing.assert_allclose(np.array(g), want.astype(np.float32))


def test_bad_calls():
    @mb.kernel
    def k(x, out: mb.Out):
        i = thread_position_in_grid.x
        out[i] = x[i] * x[i]
    with pytest.raises(mb.KernelLaunchError, match="cotangents="):
        k.vjp(X, grid=64, backend="sim")
    with pytest.raises(mb.KernelLaunchError, match="has shape"):
        k.vjp(X, cotangents=np.ones(3, np.float32), grid=64, backend="sim")
    with pytest.raises(mb.KernelLaunchError, match="grid"):
        k.vjp(X, cotangents=X, backend="sim")
    with pytest.raises(mb.KernelLaunchError, match="grid="):
        k.mlx_function()
    with pytest.raises(mb.KernelLaunchError, match="grid="):
        mb.check_grad(k, X)
