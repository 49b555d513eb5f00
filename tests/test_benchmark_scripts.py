"""The scripts the lead runs on the H200 and the macOS workflow, run here on the simulator
so that a typo cannot cost device time (issue 18): ``benchmarks/h200_session.sh`` end to
end with BACKEND=sim, every command of ``.github/workflows/macos.yml`` with BACKEND=sim
(its pytest lines collected, not run: ``make ci-macos-sim`` runs them), and the workflow
linted with zizmor (a dev dependency)."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "macos.yml"


def _env(**extra):
    env = dict(os.environ, BACKEND="sim", METALBENCH_TEST_BACKEND="sim", METALBENCH_BACKEND="sim",
               PYTHONUNBUFFERED="1", **extra)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("PYTEST_CURRENT_TEST", None)
    return env


def workflow_steps():
    """(name, script) of each ``run:`` step after the install step."""
    wf = yaml.safe_load(WORKFLOW.read_text())
    (job,) = wf["jobs"].values()
    steps = [(s.get("name", ""), s["run"]) for s in job["steps"] if "run" in s]
    assert "pip install" in steps[0][1]
    return steps[1:]


def run_workflow_on_sim(results: Path, collect_only: bool = True) -> None:
    """Every command of the workflow with BACKEND=sim, writing results under ``results``."""
    for name, script in workflow_steps():
        script = script.replace("benchmarks/results", str(results))
        if collect_only:
            script = re.sub(r"(python -m pytest [^\n]*)", r"\1 --collect-only", script)
        p = subprocess.run(["bash", "-e", "-c", script], cwd=ROOT, env=_env(), capture_output=True, text=True,
                           timeout=900)
        assert p.returncode == 0, f"step {name!r} failed on sim:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}"


def test_macos_workflow_passes_the_linter():
    zizmor = shutil.which("zizmor", path=str(Path(sys.executable).parent)) or shutil.which("zizmor")
    assert zizmor, "zizmor is a dev dependency: make setup (pip install -e '.[dev]')"
    p = subprocess.run([zizmor, "--offline", str(WORKFLOW)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr


def test_macos_workflow_commands_run_on_sim(tmp_path):
    run_workflow_on_sim(tmp_path)
    gpu = json.loads((tmp_path / "macos" / "gpu.json").read_text())
    assert [r["kernel"] for r in gpu["rows"]] == ["copy", "saxpy", "block_sum", "softmax", "bias_gelu", "matmul"]
    assert all(r["ok"] and r["raw_ok"] for r in gpu["rows"])     # the Mac's raw MSL kernels too
    sim = json.loads((tmp_path / "macos" / "simulation.json").read_text())
    assert sim["metalbench"]["ok"] and sim["backend"] == "sim"
    assert len(json.loads((tmp_path / "macos" / "host_overhead.json").read_text())) == 11
    wf = yaml.safe_load(WORKFLOW.read_text())
    upload = [s for s in next(iter(wf["jobs"].values()))["steps"] if "upload-artifact" in s.get("uses", "")]
    assert upload and upload[0]["with"]["path"] == "benchmarks/results/"


def test_h200_session_runs_on_sim(tmp_path):
    p = subprocess.run(["bash", str(ROOT / "benchmarks" / "h200_session.sh")], cwd=ROOT,
                       env=_env(OUT=str(tmp_path), PY=sys.executable), capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    summary = (tmp_path / "summary.md").read_text()
    gpu_table = summary.split("\n\n")[1]         # the first table: gpu.py's rows
    rows = [ln for ln in gpu_table.splitlines() if ln.startswith("| ") and not ln.startswith("| kernel")]
    assert len(rows) == 6 and all("| True |" in ln for ln in rows), summary
    for part in ("host_overhead.py", "MSL -> CUDA", "msl_call_cost.py", "simulation.py", "simulation_probe.py",
                 "transfer_probe.py",
                 "sweep ranking", "launch_gap.py"):
        assert part in summary, part
    for name in ("msl_cuda.json", "msl_call_cost.json", "simulation.json", "simulation_probe.json", "transfer_probe.json",
                 "sweep_vs_cupy.json",
                 "launch_gap.json"):
        assert (tmp_path / name).exists(), name
    msl = json.loads((tmp_path / "msl_cuda.json").read_text())
    names = [r["kernel"] for r in msl]        # + the mlx-lm kernels where the MSL corpus is here
    assert names[:3] == ["myexp", "grid_sample", "grid_sample_vjp"] and all(r["ok"] for r in msl)
    assert names[3:] in ([], ["ssm_update (mlx-lm)", "gated_delta (mlx-lm)", "bitlinear (mlx-lm)"])
    sweep = json.loads((tmp_path / "sweep_vs_cupy.json").read_text())
    assert [r["kernel"] for r in sweep] == ["rowsum", "saxpy"] and all(all(r["ok"]) and not r["errors"] for r in sweep)


def test_h200_session_steps_pick_what_runs(tmp_path):
    """STEPS splits a session into commands under the 10-minute limit, into one $OUT."""
    p = subprocess.run(["bash", str(ROOT / "benchmarks" / "h200_session.sh")], cwd=ROOT,
                       env=_env(OUT=str(tmp_path), PY=sys.executable, STEPS="host_overhead"),
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    logs = sorted(f.name for f in tmp_path.glob("*.log"))
    assert logs == ["host_overhead.log"], logs
    summary = (tmp_path / "summary.md").read_text()
    assert "gpu.py: no results" in summary and "DSL kernel  softmax(x, NC=, TG=)" in summary


def test_every_session_kernel_compiles_with_nvrtc():
    """The CUDA each H200 step hands to MLX/CuPy compiles (NVRTC, compute_90), when NVRTC is
    installed (pip install nvidia-cuda-nvrtc-cu12; the check is optional here)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import nvrtc_check
    lib, site = nvrtc_check._lib(os.environ.get("NVRTC_SITE"))
    if lib is None:
        pytest.skip("no NVRTC library (pip install nvidia-cuda-nvrtc-cu12; NVRTC_SITE=its site-packages)")
    assert nvrtc_check.main(["--nvrtc-site", site or ""]) == 0


if __name__ == "__main__":      # make ci-macos-sim: the workflow's commands in full, on sim
    import tempfile
    run_workflow_on_sim(Path(tempfile.mkdtemp(prefix="mb_macos_sim_")), collect_only=False)
    print("every command of .github/workflows/macos.yml ran on sim")


def test_launch_gap_records_the_same_mlx_call_as_the_plan():
    """launch_gap.py (stand-in): the metalbench call passes MLX exactly what its prepared
    launch holds (inputs, grid, threadgroup, output shapes/dtypes) and no other keyword
    (no init_value fill, no extra input), for every launch-bound gpu.py kernel."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import mlx.core as mx
    import launch_gap
    from metalbench import launch as L
    saved = mx.fast.cuda_kernel, L.cuda_available
    try:
        rows = launch_gap.run(standin=True, rounds=1, reps=1)
    finally:
        mx.fast.cuda_kernel, L.cuda_available = saved
    assert [r["kernel"] for r in rows] == ["copy", "saxpy", "block_sum", "softmax", "bias_gelu"]
    for r in rows:
        assert r["mb_call"] == r["mlx_call"], r["kernel"]
        assert set(r["mb_call"]) == {"inputs", "grid", "threadgroup", "output_shapes", "output_dtypes"}


def test_launch_ab_runs_on_the_standin(tmp_path):
    """benchmarks/launch_ab.py (the H200's fine-interleaved A/B of launch-bound rows) end
    to end on a null MLX kernel: every row is there, with its columns."""
    out = tmp_path / "ab.json"
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "launch_ab.py"), "--standin", "--turns", "1",
                        "--json", str(out)], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    rows = json.loads(out.read_text())
    assert [r["row"].split()[0] for r in rows] == ["copy", "block_sum", "softmax", "metal_kernel", "metal_kernel",
                                                   "new-user", "new-user"]
    assert {"raw", "direct_plain", "direct_compact", "plan_kernel", "mb"} <= set(rows[0])
    assert all(r["raw"] > 0 and r["mb"] > 0 for r in rows)


def test_front_ab_runs_on_the_standin(tmp_path):
    """benchmarks/front_ab.py (the front taken apart inside the launch loop) end to end on
    a null MLX kernel: both rows, every variant, and the differences it reports."""
    out = tmp_path / "front.json"
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "front_ab.py"), "--standin", "--turns", "1",
                        "--json", str(out)], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    rows = json.loads(out.read_text())
    assert [r["row"].split()[0] for r in rows] == ["block_sum", "metal_kernel"]
    for r in rows:
        assert all(r[k] > 0 for k in ("raw", "plan", "bare", "checks", "mb"))
        assert abs(r["mb-raw"] - (r["mb"] - r["raw"])) <= 0.011     # (each rounded to 0.01)
