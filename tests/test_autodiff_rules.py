"""Every derivative rule in the builtin registry, against finite differences.

For each builtin with formulas, a one-line kernel ``out[i] = name(a0[i], ...)`` is
differentiated by its generated VJP and compared with central differences
(mb.check_grad) on inputs inside the function's smooth domain."""
import zlib

import numpy as np
import pytest

import metalbench as mb
from metalbench import dsl
from metalbench.autodiff.rules import builtin_rule
from metalbench.builtins import registry

DSL = {"mb": mb, **{n: getattr(dsl, n) for n in dir(dsl) if not n.startswith("_")}}

# argument domains (lo, hi) where the function is smooth and well conditioned
DOMAINS = {
    "acosh": [(1.3, 3.0)], "log": [(0.3, 3.0)], "log2": [(0.3, 3.0)], "log10": [(0.3, 3.0)],
    "sqrt": [(0.3, 3.0)], "rsqrt": [(0.3, 3.0)], "pow": [(0.3, 2.0), (0.5, 2.5)], "powr": [(0.3, 2.0), (0.5, 2.5)],
    "cbrt": [(0.3, 3.0)], "asin": [(-0.8, 0.8)], "acos": [(-0.8, 0.8)], "atanh": [(-0.8, 0.8)],
    "tan": [(-1.2, 1.2)], "tanpi": [(-0.35, 0.35)], "log1p": [(-0.5, 3.0)],
    "fmod": [(0.2, 0.9), (1.1, 1.9)], "divide": [(-2, 2), (0.5, 2.0)], "fract": [(0.1, 0.9)],
    "copysign": [(0.2, 2.0), (-1, 1)], "hypot": [(0.2, 2.0), (0.2, 2.0)],
    "smoothstep": [(-0.3, -0.1), (1.1, 1.4), (0.1, 0.9)], "saturate": [(-0.5, 1.5)],
    "clamp": [(-1, 1), (-0.6, -0.2), (0.2, 0.6)], "mix": [(-1, 1), (-1, 1), (0, 1)],
    "simd_product": [(0.6, 1.4)], "quad_product": [(0.6, 1.4)], "erfc": [(-1.5, 1.5)], "erf": [(-1.5, 1.5)],
    "exp": [(-2, 2)], "exp2": [(-2, 2)], "exp10": [(-1, 1)], "expm1": [(-2, 2)],
    "sinh": [(-2, 2)], "cosh": [(-2, 2)],
}
# selections (min, max, median...): arguments drawn from well-spaced distinct values, so that a
# finite-difference step never changes which argument is selected
SPACED = {"min", "max", "fmin", "fmax", "fmin3", "fmax3", "min3", "max3", "median3", "fdim", "simd_max",
          "simd_min", "quad_max", "quad_min"}
# points where a function (or the sign of a result) jumps, per argument: samples keep away from them
KINKS = {"saturate": {0: (0.0, 1.0)}, "fabs": {0: (0.0,)}, "abs": {0: (0.0,)}, "copysign": {1: (0.0,)},
         "sign": {0: (0.0,)}}
# extra non-float arguments, as kernel text
LITERALS = {"ldexp": ["3"], "simd_broadcast": ["5"], "simd_shuffle_xor": ["6"], "simd_shuffle_down": ["3"],
            "simd_shuffle_up": ["4"], "simd_shuffle_rotate_down": ["7"], "simd_shuffle_rotate_up": ["9"],
            "quad_broadcast": ["2"], "quad_shuffle_xor": ["3"], "quad_shuffle_down": ["1"], "quad_shuffle_up": ["2"],
            "quad_shuffle_rotate_down": ["3"], "quad_shuffle_rotate_up": ["5"]}


def differentiable():
    out = []
    for b in registry.all():
        rule = builtin_rule(b.name)
        if isinstance(rule, tuple):
            out.append(b)
    return out


def kernel_for(b):
    lits = LITERALS.get(b.name, [])
    n = b.arity - len(lits)
    params = ", ".join(f"a{k}" for k in range(n))
    call_args = [f"a{k}[i]" for k in range(n)] + lits
    src = (f"def k_{b.name}({params}, out: mb.Out):\n"
           f"    i = thread_position_in_grid.x\n"
           f"    out[i] = metal.{b.name}({', '.join(call_args)})\n")
    return mb.kernel(source=src, env=DSL), n


@pytest.mark.parametrize("b", differentiable(), ids=lambda b: b.name)
def test_rule_matches_finite_differences(b):
    k, n = kernel_for(b)
    rng = np.random.default_rng(zlib.crc32(b.name.encode()))   # deterministic: str hashes are salted per run
    doms = DOMAINS.get(b.name, [(-1.0, 1.0)] * n)
    if len(doms) < n:
        doms = doms + [doms[-1]] * (n - len(doms))
    if b.name in SPACED:
        vals = (rng.permutation(64 * n) - 32 * n) * 0.05
        args = [vals[k * 64:(k + 1) * 64].astype(np.float32) for k in range(n)]
    else:
        args = [rng.uniform(lo, hi, 64) for lo, hi in doms[:n]]
        for j, points in KINKS.get(b.name, {}).items():
            for p in points:
                near = np.abs(args[j] - p) < 0.1
                args[j] = np.where(near, p + np.where(args[j] >= p, 0.1, -0.1), args[j])
        args = [a.astype(np.float32) for a in args]
    r = mb.check_grad(k, *args, grid=64, threadgroup=64, samples=6, seed=1)
    assert r.ok, repr(r)


def test_every_float_builtin_has_a_rule_or_is_declared_without_one():
    """A float builtin without a rule must be a deliberate gap (listed here)."""
    no_rule = {"lgamma", "tgamma",                      # digamma is not a builtin
               "simd_shuffle", "quad_shuffle",          # a gather: its adjoint is a scatter over lanes
               "simd_prefix_inclusive_product", "simd_prefix_exclusive_product",
               "quad_prefix_inclusive_product", "quad_prefix_exclusive_product",
               "dot", "length", "distance", "length_squared", "distance_squared", "normalize",
               "cross"}  # vector arguments: the VJP works on scalars
    missing = []
    for b in registry.all():
        if b.kind not in ("call", "simd") or b.group in ("Integer", "Float classification"):
            continue
        if b.name in ("simd_and", "simd_or", "simd_xor", "simd_all", "simd_any", "simd_ballot", "simd_is_first",
                      "quad_and", "quad_or", "quad_xor"):
            continue
        if builtin_rule(b.name) is None and b.name not in no_rule:
            missing.append(b.name)
    assert missing == []


@pytest.mark.parametrize("b", differentiable(), ids=lambda b: b.name)
def test_rule_formulas_build_for_float32_and_float16(b):
    from metalbench import ir, types as T
    from metalbench.autodiff.rules import formula
    for t in (T.float32, T.float16):
        env = {p: ir.Var(p, t if k < b.arity - len(LITERALS.get(b.name, [])) else T.uint32)
               for k, p in enumerate(b.rule.params)}
        env.update(result=ir.Var("result", t), grad=ir.Var("grad", t))
        for f in builtin_rule(b.name):
            if f is not None:
                lets, e = formula(f).build(env)
                assert e.type == t, (b.name, f, e.type)


def test_no_rule_is_an_error_at_the_line():
    k = mb.kernel(source="def k(x, out: mb.Out):\n    i = thread_position_in_grid.x\n"
                         "    out[i] = metal.lgamma(x[i]) * 2.0\n", env=DSL)
    with pytest.raises(mb.NotDifferentiableError, match="lgamma") as e:
        k.vjp(np.ones(4, np.float32), cotangents=np.ones(4, np.float32), grid=4, backend="sim")
    assert "line 3" in str(e.value)
