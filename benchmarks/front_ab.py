"""Where a repeated call's Python front spends its time *between* GPU launches (issue 18).

``launch_ab.py`` found metalbench's front adding 0.6-1.75 µs a launch on the H200 where
``timeit`` on the same host puts the whole front at ~0.7 µs. This script takes the front
apart in the launch loop itself (queued launches, one synchronisation per batch, every
variant interleaved turn by turn): for a one-array DSL kernel (block_sum, 1M) and a
three-array ``mb.metal_kernel`` saxpy (1K) it times

- ``raw``        the hand-written ``mx.fast.cuda_kernel`` called as ``gpu.py`` calls it,
- ``plan``       the prepared plan's MLX kernel called with constant keyword values (what
                 the front's last line does; no checks, no call layers),
- ``bare``       a plain function with the front's signature doing only that launch,
- ``checks``     a plain function with the front's signature, its key checks and the launch
                 (the generated front's text, called directly: no kernel object),
- ``mb``         the kernel object called as a user calls it (the front through
                 ``FastCall``, a ``functools.partial`` subclass),

so ``bare - plan`` is a Python call with the front's signature, ``checks - bare`` the key's
checks, ``mb - checks`` the kernel object's call layer.

    python3 benchmarks/front_ab.py --turns 150 --json front.json   # on the H200 (~30 s)
    python benchmarks/front_ab.py --standin --turns 3              # here: host plumbing only
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mlx.core as mx  # noqa: E402

import metalbench as mb  # noqa: E402

import gpu  # noqa: E402
import launch_ab  # noqa: E402


def variants(kern, bound, checks_src: str, call_src: str, env: dict) -> dict:
    """``plan``, ``bare`` and ``checks`` for ``bound`` (see the module docstring):
    ``checks_src`` is the body of the key checks (``return MISS`` lines), ``call_src`` the
    user's call of a function ``f`` (``f(x, grid=g, ...)``)."""
    sp = kern.specialization(bound)
    plan = sp.gpu_plan(bound, "cuda")
    ins = plan.inputs(bound.values)
    env = dict(env, kernel=plan.kernel, MISS=None, box=[None], last=None, mxa=mx.array,
               **{"k_" + k: v for k, v in plan.kwargs.items()})
    kws = ", ".join(f"{k}=k_{k}" for k in plan.kwargs)
    names = ", ".join(f"a{i}" for i in range(len(ins)))
    launch = f"    box[0] = last\n    return kernel(inputs=[{names}], {kws})\n"
    src = (f"def plan_fn():\n    return kernel(inputs=ins, {kws})[0]\n"
           f"def bare({env['params']}):\n    {names}, = {env['unpack']}\n{launch}"
           f"def checks({env['params']}):\n{checks_src}{launch}")
    g = dict(env, ins=ins)
    exec(src, g)                                  # noqa: S102 - our own text
    out = {"plan": g["plan_fn"]}
    for k in ("bare", "checks"):
        fn = g[k]
        call_env = dict(env["call_env"], f=fn)
        exec(f"def u():\n    return {call_src}[0]\n", call_env)   # noqa: S102
        out[k] = call_env["u"]
    return out


def run(turns: int) -> list:
    rows = []
    n = 1 << 20
    x = mx.random.normal((n,))
    mx.eval(x)
    g, t = (n, 1, 1), (1024, 1, 1)
    bound = gpu.block_sum_k.bind(x, grid=g, threadgroup=t, backend="cuda")
    src, in_names = gpu.RAW_CUDA["block_sum"]
    raw = mx.fast.cuda_kernel(name="fab_raw_block_sum", input_names=in_names, output_names=["out"], source=src)
    oshape, odt = [(n // 1024,)], [mx.float32]
    checks = ("    if kwargs: return MISS\n"
              "    if not (grid is g_grid or (type(grid) is tuple and grid == g_grid)): return MISS\n"
              "    if not (threadgroup is g_tg or (type(threadgroup) is tuple and threadgroup == g_tg)): return MISS\n"
              "    if backend != 'cuda': return MISS\n"
              "    if len(args) != 1: return MISS\n    a0, = args\n"
              "    if not (type(a0) is mxa and a0.shape == g_s and a0.dtype == g_d): return MISS\n")
    call_env = dict(x=x, g=g, t=t)
    env = dict(params="*args, grid=None, threadgroup=None, backend='auto', **kwargs", unpack="args",
               g_grid=g, g_tg=t, g_s=x.shape, g_d=x.dtype, call_env=call_env)
    fns = {"raw": lambda: raw(inputs=[x], grid=g, threadgroup=t, output_shapes=oshape, output_dtypes=odt)[0],
           **variants(gpu.block_sum_k, bound, checks, "f(x, grid=g, threadgroup=t, backend='cuda')", env),
           "mb": launch_ab.gpu.user_call(gpu.block_sum_k, (x,), {}, g, t, "cuda")}
    rows.append(row("block_sum 1M (DSL, one array)", launch_ab.ab(fns, turns)))

    m = 1024
    mbk = mb.metal_kernel(name="fab_saxpy", input_names=["a", "x", "y"], output_names=["out"],
                          source=launch_ab.MSL_SAXPY)
    rawk = mx.fast.cuda_kernel(name="fab_saxpy_raw", input_names=["a", "x", "y"], output_names=["out"],
                               source=launch_ab.CUDA_SAXPY)
    a, x1, y1 = mx.array([2.0]), mx.random.normal((m,)), mx.random.normal((m,))
    mx.eval(a, x1, y1)
    g1, t1, os1, od1 = (m, 1, 1), (256, 1, 1), [(m,)], [mx.float32]
    bound = mbk.bind(inputs=[a, x1, y1], grid=g1, threadgroup=t1, output_shapes=os1, output_dtypes=od1,
                     backend="cuda")
    checks = ("    if options: return MISS\n"
              "    if not (grid is g_grid or (type(grid) is tuple and grid == g_grid)): return MISS\n"
              "    if not (threadgroup is g_tg or (type(threadgroup) is tuple and threadgroup == g_tg)): return MISS\n"
              "    if backend != 'cuda': return MISS\n"
              "    if not (output_shapes == g_shapes): return MISS\n"
              "    if not (output_dtypes == g_dtypes): return MISS\n"
              "    if len(inputs) != 3: return MISS\n    a0, a1, a2, = inputs\n"
              "    if not (type(a0) is mxa and a0.shape == g_s0 and a0.dtype == g_d0 and type(a1) is mxa and "
              "a1.shape == g_s1 and a1.dtype == g_d1 and type(a2) is mxa and a2.shape == g_s2 and a2.dtype == g_d2):"
              " return MISS\n")
    call_env = dict(a=a, x1=x1, y1=y1, g1=g1, t1=t1, os1=os1, od1=od1)
    env = dict(params="*, inputs, output_shapes, output_dtypes, grid, threadgroup, backend='auto', **options",
               unpack="inputs", g_grid=g1, g_tg=t1, g_shapes=list(os1), g_dtypes=list(od1),
               g_s0=a.shape, g_d0=a.dtype, g_s1=x1.shape, g_d1=x1.dtype, g_s2=y1.shape, g_d2=y1.dtype,
               call_env=call_env)
    user = ("f(inputs=[a, x1, y1], grid=g1, threadgroup=t1, output_shapes=os1, output_dtypes=od1, "
            "backend='cuda')")
    mb_env = dict(call_env, f=mbk)
    exec(f"def u():\n    return {user}[0]\n", mb_env)      # noqa: S102 - our own text
    fns = {"raw": lambda: rawk(inputs=[a, x1, y1], grid=g1, threadgroup=t1, output_shapes=os1,
                               output_dtypes=od1)[0],
           **variants(mbk, bound, checks, user, env), "mb": mb_env["u"]}
    rows.append(row("metal_kernel saxpy 1K (MSL, three arrays)", launch_ab.ab(fns, turns)))
    return rows


def row(name: str, t: dict) -> dict:
    r = {"row": name, **{k: round(v, 2) for k, v in t.items()}}
    r["call layer (mb-checks)"] = round(t["mb"] - t["checks"], 2)
    r["checks (checks-bare)"] = round(t["checks"] - t["bare"], 2)
    r["signature (bare-plan)"] = round(t["bare"] - t["plan"], 2)
    r["mb-raw"] = round(t["mb"] - t["raw"], 2)
    return r


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=150)
    ap.add_argument("--json", default="")
    ap.add_argument("--standin", action="store_true", help="a null MLX kernel: host plumbing only (no GPU)")
    args = ap.parse_args(argv)
    if args.standin:
        launch_ab.standin()
    launch_ab.emit(run(args.turns), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
