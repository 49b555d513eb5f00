#!/usr/bin/env bash
# Everything benchmarks/RESULTS.md needs for issue 18, in one run on the H200 (~6 min).
#
#   source benchmarks/device_setup.sh      # MLX's CUDA build (see that file)
#   bash benchmarks/h200_session.sh        # writes into $OUT (default: benchmarks/results/h200-DATE)
#
# Here (no GPU) the same steps run as a smoke test of every script:
#   BACKEND=sim bash benchmarks/h200_session.sh
#
# STEPS picks steps (default: all) so that a session can be split into commands of at
# most 10 minutes writing into one $OUT; each run rewrites summary.md from all of $OUT:
#   OUT=/root/out/h200 STEPS="gpu host_overhead launch_gap" bash benchmarks/h200_session.sh   # ~6 min
#   OUT=/root/out/h200 STEPS="sweep_vs_cupy gpu_probe msl_cuda simulation" bash benchmarks/h200_session.sh
#
# Steps (each under its own time limit; a failing step is logged and the next one runs):
#  1. gpu.py x3        raw cuda_kernel, metalbench, MLX and CuPy in the same run; the median
#                      of the three runs per row (summary.md), with the roofline model's time
#  2. host_overhead.py per-call host time of the raw call and of each metalbench launch path
#  3. msl_cuda.py      MSL->CUDA rows: MLX docs kernels + 3 mlx-lm kernels (corpus) vs cuda_kernel twins
#  3b. msl_call_cost.py an MSL saxpy through mb.metal_kernel vs the raw cuda_kernel, per call at
#                      1K and 16M elements, and mx.compile over the metalbench call (issue 13)
#  4. simulation.py    the Numba-style agent simulation: transfer/compute split vs CuPy
#     simulation_probe.py its step split by kernel, metalbench vs the same kernels as raw
#                      cuda_kernel bodies vs CuPy (host time of the launch loop and time per step)
#     scalar_placement.py the move kernel's scalars in MLX's small managed pool vs padded past it
#     transfer_probe.py each step of its host<->device path (MLX managed memory) vs CuPy's
#  5. sweep_vs_cupy.py a sweep's ranking at 64K elements vs CUDA events through CuPy
#  6. launch_gap.py    launch-bound rows (1M elements): raw vs the generated source called
#                      directly vs the metalbench call, batched and host-only times
#  7. gpu_probe.py     softmax 8192x4096: raw vs raw variants written as the generated code
#                      is (unsigned counters, 32-bit unsigned index, the partial-warp helper)
# (the fused bias + GELU at 64M elements vs its hand-written twin is a row of step 1)
set -u
cd "$(dirname "$0")/.."
BACKEND=${BACKEND:-cuda}
OUT=${OUT:-benchmarks/results/h200-$(date +%Y-%m-%d)}
mkdir -p "$OUT"
PY=${PY:-python3}
QUICK=""
RUNS=${RUNS:-3}          # gpu.py runs (the table is their median); RUNS=2 saves ~1.5 min
if [ "$BACKEND" = "sim" ]; then QUICK="--quick"; RUNS=1; fi
export PYTHONUNBUFFERED=1
STEPS=${STEPS:-all}
status=0

want() {   # want NAME: is step NAME in $STEPS?
    [ "$STEPS" = "all" ] || [[ " $STEPS " == *" $1 "* ]]
}

step() {   # step NAME SECONDS COMMAND...: run, log to $OUT/NAME.log, remember a failure
    local name=$1 limit=$2; shift 2
    echo "==> $name: $*"
    local t0=$SECONDS
    timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    tail -n 25 "$OUT/$name.log"
    echo "<== $name: exit $rc after $((SECONDS - t0)) s"
    [ $rc -eq 0 ] || status=1
}

$PY -c "import platform, mlx.core as mx; from metalbench import bench, devices; print(platform.node(), 'mlx', mx.__version__, bench.device_name('$BACKEND'), devices.current('$BACKEND'))" | tee "$OUT/env.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> "$OUT/env.txt" 2>/dev/null || true
git log --oneline -1 >> "$OUT/env.txt" 2>/dev/null || true

if want gpu; then
    for r in $(seq 1 $RUNS); do
        step "gpu_run$r" 240 $PY benchmarks/gpu.py --backend "$BACKEND" --json "$OUT/gpu_run$r.json"
    done
fi
if want host_overhead; then
    if [ "$BACKEND" = "sim" ]; then
        step host_overhead 120 $PY benchmarks/host_overhead.py --json --number 200
    else
        step host_overhead 120 $PY benchmarks/host_overhead.py --real "$BACKEND" --json
    fi
fi
if want launch_gap; then
    if [ "$BACKEND" = "sim" ]; then
        step launch_gap 120 $PY benchmarks/launch_gap.py --standin --rounds 1 --json "$OUT/launch_gap.json"
    else
        step launch_gap 180 $PY benchmarks/launch_gap.py --json "$OUT/launch_gap.json"
    fi
fi
want sweep_vs_cupy && step sweep_vs_cupy 150 $PY benchmarks/sweep_vs_cupy.py --backend "$BACKEND" --json "$OUT/sweep_vs_cupy.json"
if want gpu_probe && [ "$BACKEND" != "sim" ]; then
    step gpu_probe 120 $PY benchmarks/gpu_probe.py
fi
want msl_cuda && step msl_cuda 300 $PY benchmarks/msl_cuda.py --backend "$BACKEND" $QUICK --json "$OUT/msl_cuda.json" --out "$OUT/msl_cuda.md"
want msl_call_cost && step msl_call_cost 120 $PY benchmarks/msl_call_cost.py --backend "$BACKEND" --json "$OUT/msl_call_cost.json"
want simulation && step simulation 180 $PY benchmarks/simulation.py --backend "$BACKEND" $QUICK --json "$OUT/simulation.json"
want simulation && step simulation_probe 180 $PY benchmarks/simulation_probe.py --backend "$BACKEND" $QUICK --json "$OUT/simulation_probe.json"
if want simulation && [ "$BACKEND" != "sim" ]; then
    step scalar_placement 120 $PY benchmarks/scalar_placement.py --json "$OUT/scalar_placement.json"
fi
want simulation && step transfer_probe 120 $PY benchmarks/transfer_probe.py --backend "$BACKEND" $QUICK --json "$OUT/transfer_probe.json"

# The gpu.py table as the median of the runs, per row and column
$PY - "$OUT" <<'PYEOF' | tee "$OUT/summary.md"
import glob, json, statistics, sys
out = sys.argv[1]
runs = [json.load(open(p)) for p in sorted(glob.glob(f"{out}/gpu_run*.json"))]
if not runs:
    print("gpu.py: no results in this directory")
for _ in [1] if runs else []:     # the gpu.py part (absent when STEPS left it out)
    keys = ["mb_ms", "raw_ms", "raw/mb", "mlx_ms", "cupy_ms", "model_ms", "model/mb"]
    print(f"gpu.py, median of {len(runs)} run(s)\n")
    print("| kernel | size | ok | " + " | ".join(keys) + " |\n|" + "---|" * (3 + len(keys)))
    for i, row in enumerate(runs[0]["rows"]):
        same = [r["rows"][i] for r in runs if i < len(r["rows"])]
        cells = []
        for k in keys:
            v = [x[k] for x in same if isinstance(x.get(k), (int, float))]
            cells.append(f"{statistics.median(v):.4g}" if v else "")
        ok = all(x["ok"] and x.get("raw_ok", True) for x in same)
        print(f"| {row['kernel']} | {row['size']} | {ok} | " + " | ".join(cells) + " |")
    ovs = [r["overhead"] for r in runs if r.get("overhead")]
    if ovs:
        print("\nper call (µs, 1K-element copy):", {k: round(statistics.median(o[k] for o in ovs), 2) for k in ovs[0]})
    # how close the roofline model comes (rows of 1M elements and up)
    def _n(size):
        import math, re
        return math.prod(int(d) for d in re.findall(r"\d+", size))
    big = []
    for i, row in enumerate(runs[0]["rows"]):
        v = [r["rows"][i].get("model/mb") for r in runs if i < len(r["rows"]) and "model/mb" in r["rows"][i]]
        if v and _n(row["size"]) >= 1 << 20:
            big.append(statistics.median(v))
    if big:
        g = statistics.geometric_mean(big)
        print(f"\nroofline model / measured, rows >= 1M elements: geometric mean {g:.2f}, "
              f"range {min(big):.2f}..{max(big):.2f} (1.0: the kernel runs at the roofline)")

def load(name):
    try:
        return json.load(open(f"{out}/{name}"))
    except (OSError, ValueError):
        return None

ho = None
try:
    txt = open(f"{out}/host_overhead.log").read()
    ho = json.loads(txt[txt.index("{"):txt.rindex("}") + 1])
except (OSError, ValueError):
    pass
if ho:
    print("\nhost_overhead.py (µs per call, added over the raw call above it)\n\n| call | µs | added |\n|---|---|---|")
    for k, v in ho.items():
        raw = v if k.startswith("raw") else raw
        print(f"| {k} | {v:.2f} | {v - raw:+.2f} |")
msl = load("msl_cuda.json")
if msl:
    print("\nMSL -> CUDA (MLX docs and mlx-lm kernels vs hand-written cuda_kernel twins)\n")
    print("| kernel | grid | ok | raw ok | mb ms | mb ms, reads unguarded | raw ms | raw/mb |\n|---|---|---|---|---|---|---|---|")
    for r in msl:
        f = lambda k: f"{r[k]:.4g}" if isinstance(r.get(k), float) else ""
        print(f"| {r['kernel']} | {r['grid']} | {r['ok']} | {r.get('raw_ok', '')} | {f('mb_ms')} | {f('mb_noguard_ms')} "
              f"| {f('raw_ms')} | {f('raw/mb')} |")
mcc = load("msl_call_cost.json")
if mcc:
    print("\nmsl_call_cost.py: an MSL saxpy through mb.metal_kernel vs the raw kernel, per call\n")
    print("| size | ok | mx.compile | raw ms | mb ms | added µs | raw/mb |\n|---|---|---|---|---|---|---|")
    for r in mcc:
        f = lambda k: f"{r[k]:.4g}" if isinstance(r.get(k), float) else ""
        print(f"| {r['size']} | {r['ok']} | {r['mx.compile']} | {f('raw_ms')} | {f('mb_ms')} | {f('added_us')} | {f('raw/mb')} |")
sim = load("simulation.json")
if sim:
    print(f"\nsimulation.py: {sim['n']} agents, {sim['steps']} steps [{sim['backend']}]\n")
    print("| run | transfer ms | compute ms | h2d ms | d2h ms | first step ms | step ms | matches NumPy |"
          "\n|---|---|---|---|---|---|---|---|")
    for k in ("metalbench", "cupy"):
        if k in sim:
            r = sim[k]
            f = lambda key: f"{r[key]:.4g}" if key in r else ""
            print(f"| {k} | {r['transfer_ms']:.3f} | {r['compute_ms']:.3f} | {f('h2d_ms')} | {f('d2h_ms')} "
                  f"| {f('first_step_ms')} | {f('step_ms')} | {r['ok']} |")
sp = load("simulation_probe.json")
if sp:
    print(f"\nsimulation_probe.py: {sp['n']} agents, {sp['steps']} steps [{sp['backend']}], median µs per step\n")
    print("| variant | part | host µs/step | µs/step |\n|---|---|---|---|")
    for k, v in sp.items():
        if isinstance(v, dict):
            who, part = k.split("/")
            print(f"| {who} | {part} | {v['host_us']:.1f} | {v['step_us']:.1f} |")
pl = load("scalar_placement.json")
if pl:
    print(f"\nscalar_placement.py: the move kernel at {pl['n']} agents, median µs per launch\n")
    print("| scalars | host µs/launch | µs/launch |\n|---|---|---|")
    for k, v in pl.items():
        if isinstance(v, dict) and "host_us" in v:
            print(f"| {k} | {v['host_us']:.1f} | {v['step_us']:.1f} |")
    print("\n| atomic count into a tiny output | µs/launch |\n|---|---|")
    for k, v in pl.get("atomic", {}).items():
        print(f"| {k} | {v:.1f} |")
tp = load("transfer_probe.json")
if tp:
    print(f"\ntransfer_probe.py: {tp['arrays']} x {tp['n']} float32 [{tp['backend']}], median ms\n")
    print("| step | ms |\n|---|---|")
    for k, v in tp.items():
        if isinstance(v, float) and k != "mb":
            print(f"| {k} | {v:.3f} |")
sw = load("sweep_vs_cupy.json")
if sw:
    print("\nsweep ranking at 64K elements vs CUDA events (CuPy)\n\n"
          "| kernel | Spearman rho (batched) | rho (one launch per sync) | same best | pairs >10% apart ordered alike |"
          "\n|---|---|---|---|---|")
    for r in sw:
        print(f"| {r['kernel']} | {r.get('spearman', r.get('cupy_error', 'n/a'))} | "
              f"{r.get('spearman_per_call', '')} | {r.get('same_best', '')} | "
              f"{r.get('pairs_agree', '')}/{r.get('pairs_10pct', '')} |")
    print("\n| kernel | configuration | sweep µs (q20..q80) | events µs (q20..q80) |\n|---|---|---|---|")
    us = lambda v: "" if v is None else f"{v * 1e6:.2f}"
    for r in sw:
        for i, c in enumerate(r["configs"]):
            ev = (f"{us(r['cupy_event_s'][i])} ({us(r['cupy_q20_s'][i])}..{us(r['cupy_q80_s'][i])})"
                  if "cupy_event_s" in r else "")
            print(f"| {r['kernel']} | {c} | {us(r['sweep_s'][i])} ({us(r['sweep_q20_s'][i])}.."
                  f"{us(r['sweep_q80_s'][i])}) | {ev} |")
try:
    probe = [json.loads(ln) for ln in open(f"{out}/gpu_probe.log") if ln.startswith("{")]
except OSError:
    probe = []
if probe:
    print("\ngpu_probe.py (ms per launch; variants of the raw kernel written as the generated code is)\n")
    for r in probe:
        print("- " + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in r.items()))
gap = load("launch_gap.json")
if gap:
    print("\nlaunch_gap.py: launch-bound rows, raw vs generated source called directly vs metalbench\n")
    keys = ["raw_ms", "direct_ms", "mb_ms", "raw/direct", "raw/mb", "raw_host_us", "mb_host_us", "mb-raw host_us"]
    print("| kernel | size | " + " | ".join(keys) + " |\n|" + "---|" * (2 + len(keys)))
    for r in gap:
        print(f"| {r['kernel']} | {r['size']} | " + " | ".join(
            f"{r[k]:.4g}" if isinstance(r.get(k), float) else "" for k in keys) + " |")
PYEOF
echo "results in $OUT (exit $status)"
exit $status
