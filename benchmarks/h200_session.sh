#!/usr/bin/env bash
# Everything benchmarks/RESULTS.md needs for issue 18, in one run on the H200 (~6 min).
#
#   source benchmarks/device_setup.sh      # MLX's CUDA build (see that file)
#   bash benchmarks/h200_session.sh        # writes into $OUT (default: benchmarks/results/h200-DATE)
#
# Here (no GPU) the same steps run as a smoke test of every script:
#   BACKEND=sim bash benchmarks/h200_session.sh
#
# Steps (each under its own time limit; a failing step is logged and the next one runs):
#  1. gpu.py x3        raw cuda_kernel, metalbench, MLX and CuPy in the same run; the median
#                      of the three runs per row (summary.md), with the roofline model's time
#  2. host_overhead.py per-call host time of the raw call and of each metalbench launch path
#  3. msl_cuda.py      MSL->CUDA rows: three of MLX's documented kernels vs cuda_kernel twins
#  4. simulation.py    the Numba-style agent simulation: transfer/compute split vs CuPy
#  5. sweep_vs_cupy.py a sweep's ranking at 64K elements vs CUDA events through CuPy
# (the fused bias + GELU at 64M elements vs its hand-written twin is a row of step 1)
set -u
cd "$(dirname "$0")/.."
BACKEND=${BACKEND:-cuda}
OUT=${OUT:-benchmarks/results/h200-$(date +%Y-%m-%d)}
mkdir -p "$OUT"
PY=${PY:-python3}
QUICK=""
RUNS=3
if [ "$BACKEND" = "sim" ]; then QUICK="--quick"; RUNS=1; fi
export PYTHONUNBUFFERED=1
status=0

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

$PY -c "import platform, mlx.core as mx; print(platform.node(), 'mlx', mx.__version__)" | tee "$OUT/env.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> "$OUT/env.txt" 2>/dev/null || true
git log --oneline -1 >> "$OUT/env.txt" 2>/dev/null || true

for r in $(seq 1 $RUNS); do
    step "gpu_run$r" 240 $PY benchmarks/gpu.py --backend "$BACKEND" --json "$OUT/gpu_run$r.json"
done
if [ "$BACKEND" = "sim" ]; then
    step host_overhead 120 $PY benchmarks/host_overhead.py --json --number 200
else
    step host_overhead 120 $PY benchmarks/host_overhead.py --real "$BACKEND" --json
fi
step msl_cuda 120 $PY benchmarks/msl_cuda.py --backend "$BACKEND" $QUICK --json "$OUT/msl_cuda.json"
step simulation 180 $PY benchmarks/simulation.py --backend "$BACKEND" $QUICK --json "$OUT/simulation.json"
step sweep_vs_cupy 120 $PY benchmarks/sweep_vs_cupy.py --backend "$BACKEND" --json "$OUT/sweep_vs_cupy.json"

# The gpu.py table as the median of the runs, per row and column
$PY - "$OUT" <<'PYEOF' | tee "$OUT/summary.md"
import glob, json, statistics, sys
out = sys.argv[1]
runs = [json.load(open(p)) for p in sorted(glob.glob(f"{out}/gpu_run*.json"))]
if not runs:
    sys.exit("no gpu.py results")
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
PYEOF
echo "results in $OUT (exit $status)"
exit $status
