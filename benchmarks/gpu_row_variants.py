"""gpu.py's launch-bound rows taken apart with gpu.py's own timing (issue 18).

block_sum at 1M is the one row under 0.95 in gpu.py (0.93-0.95) while copy at 1M, with the same
one-array front, is at 0.97-0.98. This interleaves, with ``gpu.interleaved_times``: raw as gpu.py
calls it (with the template its loop leaves over) and without, the plan's kernel, metalbench's
printed source in a fresh ``cuda_kernel`` (plain and compacted), and the user's call; copy at 1M
alongside. Three repetitions. Run on the H200 in session 15 as it is here:

    python3 benchmarks/gpu_row_variants.py
"""
import sys, json
sys.path.insert(0, "benchmarks"); sys.path.insert(0, ".")
import mlx.core as mx
import gpu, launch_ab
n = 1 << 20
x = mx.random.normal((n,)); mx.eval(x)
for name, kern, tg, oshape in (("block_sum", gpu.block_sum_k, 1024, (n // 1024,)), ("copy", gpu.copy_k, 256, (n,))):
    g, t = (n, 1, 1), (tg, 1, 1)
    bound = kern.bind(x, grid=g, threadgroup=t, backend="cuda")
    src, names = gpu.RAW_CUDA[name]
    rk = mx.fast.cuda_kernel(name=f"bsp_raw_{name}", input_names=names, output_names=["out"], source=src)
    os_, od = [oshape], [mx.float32]
    fns = {"raw_tmpl": lambda: rk(inputs=[x], template=[("N", n)], grid=g, threadgroup=t, output_shapes=[oshape], output_dtypes=[mx.float32])[0],
           **({"raw": lambda: rk(inputs=[x], grid=g, threadgroup=t, output_shapes=[oshape], output_dtypes=[mx.float32])[0]}
              if name == "block_sum" else {}),
           **launch_ab.plan_variants(kern, bound, f"bsp_{name}"),
           "mb": gpu.user_call(kern, (x,), {}, g, t, "cuda")}
    for rep in range(3):
        tm = gpu.interleaved_times(fns, reps=40)
        print(json.dumps({"row": name, "rep": rep, **{k: round(v * 1e6, 2) for k, v in tm.items()},
                          "raw/mb": round(tm["raw_tmpl"] / tm["mb"], 3)}), flush=True)
