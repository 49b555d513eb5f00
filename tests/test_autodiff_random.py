"""Random kernels: the same random program as a DSL kernel and as MLX ops; the generated
VJP must equal mx.vjp. Programs mix arithmetic, builtins, selections, if/else, a
loop with a carried value, a device function and float scalar arguments."""
import os
import random

import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench import dsl

BACKEND = os.environ.get("METALBENCH_TEST_BACKEND", "sim")
DSL = {"mb": mb, **{n: getattr(dsl, n) for n in dir(dsl) if not n.startswith("_")}}

UNARY = {  # name -> (DSL template, MLX template); all smooth and finite on every input
    "tanh": ("metal.tanh({})", "mx.tanh({})"),
    "sin": ("metal.sin({})", "mx.sin({})"),
    "cos": ("metal.cos({})", "mx.cos({})"),
    "softplus": ("metal.log(1.0 + metal.exp(metal.tanh({})))", "mx.log(1.0 + mx.exp(mx.tanh({})))"),
    "hyp": ("metal.sqrt(1.0 + {0} * {0})", "mx.sqrt(1.0 + {0} * {0})"),
    "neg": ("(-{})", "(-{})"),
    "atan": ("metal.atan({})", "mx.arctan({})"),
    "sq": ("sq({})", "(({0}) * ({0}))"),
}
BINARY = {
    "+": ("({} + {})", "({} + {})"),
    "-": ("({} - {})", "({} - {})"),
    "*": ("({} * {})", "({} * {})"),
    "div": ("({0} / (1.5 + {1} * {1}))", "({0} / (1.5 + {1} * {1}))"),
    "max": ("max({}, {})", "mx.maximum({}, {})"),
    "min": ("min({}, {})", "mx.minimum({}, {})"),
}


class Program:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.vars = ["xv", "yv", "a"]

    def leaf(self):
        if self.r.random() < 0.2:
            c = self.r.choice([0.5, 1.5, -0.7, 2.0])
            return (repr(c), repr(c))
        v = self.r.choice(self.vars)
        return (v, v)

    def expr(self, depth):
        if depth == 0 or self.r.random() < 0.25:
            return self.leaf()
        k = self.r.random()
        if k < 0.4:
            d, m = UNARY[self.r.choice(sorted(UNARY))]
            a = self.expr(depth - 1)
            return (d.format(a[0]), m.format(a[1]))
        if k < 0.85:
            d, m = BINARY[self.r.choice(sorted(BINARY))]
            a, b = self.expr(depth - 1), self.expr(depth - 1)
            return (d.format(a[0], b[0]), m.format(a[1], b[1]))
        c1, c2 = self.expr(depth - 1), self.expr(depth - 1)
        a, b = self.expr(depth - 1), self.expr(depth - 1)
        return (f"({a[0]} if {c1[0]} > {c2[0]} else {b[0]})", f"mx.where({c1[1]} > {c2[1]}, {a[1]}, {b[1]})")

    def build(self, prefix=""):
        """(DSL lines, MLX lines, final DSL expression, final MLX expression); the
        program's own variables carry ``prefix`` (several programs share one kernel)."""
        dsl_lines, mx_lines = [], []
        for n in range(self.r.randint(1, 3)):
            e = self.expr(3)
            name = f"{prefix}v{n}"
            dsl_lines.append(f"        {name} = {e[0]}")
            mx_lines.append(f"    {name} = {e[1]}")
            self.vars.append(name)
        if self.r.random() < 0.6:
            c, t, f = self.expr(1), self.expr(2), self.expr(2)
            w = f"{prefix}w"
            dsl_lines += [f"        if {c[0]} > 0.0:", f"            {w} = {t[0]}", "        else:",
                          f"            {w} = {f[0]}"]
            mx_lines.append(f"    {w} = mx.where({c[1]} > 0.0, {t[1]}, {f[1]})")
            self.vars.append(w)
        if self.r.random() < 0.6:
            body = self.expr(2)
            trip = self.r.choice(["3", "K"])
            acc = f"{prefix}acc"
            dsl_lines += [f"        {acc} = 0.25", f"        for k in range({trip}):",
                          f"            {acc} = metal.sin({acc}) * 0.5 + {body[0]} * float(k + 1)"]
            mx_lines += [f"    {acc} = 0.25", f"    for k in range({trip}):",
                         f"        {acc} = mx.sin({acc}) * 0.5 + {body[1]} * float(k + 1)"]
            self.vars.append(acc)
        out = self.expr(2)
        final_d = " + ".join([out[0]] + self.vars[3:])
        final_m = " + ".join([out[1]] + self.vars[3:])
        return dsl_lines, mx_lines, final_d, final_m


def build_group(seeds):
    """One kernel running the random programs of ``seeds`` side by side, one output each
    (one NVRTC compile on cuda for several programs), and its MLX twin."""
    parts = [Program(s).build(f"p{j}_") for j, s in enumerate(seeds)]
    outs = [f"out{j}" for j in range(len(parts))]
    src = (f"def rk(x, y, a: float, K: int, {', '.join(o + ': mb.Out' for o in outs)}):\n"
           "    i = thread_position_in_grid.x\n"
           "    if i < x.size:\n"
           "        xv = x[i]\n"
           "        yv = y[i % y.size]\n"
           + "".join("\n".join(d) + f"\n        {o}[i] = {fd}\n" for (d, _, fd, _), o in zip(parts, outs)))
    fn = ("def ref(x, y, a, K):\n"
          "    xv = x\n"
          "    yv = mx.take(y, mx.arange(x.size) % y.size)\n"
          + "".join("\n".join(m) + "\n" for _, m, _, _ in parts)
          + f"    return [{', '.join(fm for _, _, _, fm in parts)}]\n")
    return src, fn


@mb.func
def sq(v):
    return v * v


# 30 random programs, three per kernel: on cuda every kernel is an NVRTC compile, and a
# kernel of three independent programs tests each of them (their gradients add up in the
# shared inputs, the MLX twin's too)
@pytest.mark.parametrize("group", range(10))
def test_random_program_matches_mlx(group):
    src, fn = build_group([3 * group, 3 * group + 1, 3 * group + 2])
    k = mb.kernel(source=src, env={**DSL, "sq": sq})
    ns = {"mx": mx}
    exec(fn, ns)
    ref = ns["ref"]
    rng = np.random.default_rng(group)
    x = rng.standard_normal(70).astype(np.float32)
    y = rng.standard_normal(16).astype(np.float32)
    cts = [rng.standard_normal(70).astype(np.float32) for _ in range(3)]
    a, K = 0.7, 4
    gx, gy, ga, gk = k.vjp(x, y, a, K, cotangents=tuple(cts), grid=96, threadgroup=32, backend=BACKEND)
    assert gk is None
    _, want = mx.vjp(lambda p, q, s: ref(p, q, s, K), [mx.array(x), mx.array(y), mx.array(np.float32(a))],
                     [mx.array(c) for c in cts])
    msg = src + "\n" + fn
    np.testing.assert_allclose(np.array(gx), np.array(want[0]), rtol=2e-3, atol=2e-4, err_msg=msg)
    np.testing.assert_allclose(np.array(gy), np.array(want[1]), rtol=2e-3, atol=2e-3, err_msg=msg)
    np.testing.assert_allclose(float(ga), float(want[2]), rtol=2e-3, atol=2e-3, err_msg=msg)
