"""Real MLX custom kernels, run unmodified through ``mb.metal_kernel`` on the simulator (issue 13).

    .venv/bin/python benchmarks/msl_corpus.py CORPUS_DIR                 # every case
    .venv/bin/python benchmarks/msl_corpus.py CORPUS_DIR --filter rwkv    # some cases
    .venv/bin/python benchmarks/msl_corpus.py CORPUS_DIR --checked        # checked simulator
    .venv/bin/python benchmarks/msl_corpus.py CORPUS_DIR --mlx-tests      # MLX's test_fast.py
    python benchmarks/msl_corpus.py CORPUS_DIR --backend cuda             # the same on an NVIDIA GPU

The corpus lives outside the repository (it is other people's code). Its layout:

* ``CORPUS_DIR/cases/*.py`` -- one file per source file of a public repository: the kernel
  code exactly as it is there (``mx.fast.metal_kernel(...)`` with its source, header,
  names and the wrapper that launches it), realistic inputs, and a reference computed
  with MLX ops or NumPy (the repository's own fallback path where it has one). Each file
  defines ``CASES``: a list of dicts with

  - ``name``: what runs (shapes, dtypes);
  - ``run``: a function returning the kernel's output(s) (an array, or a list/tuple);
  - ``ref``: a function returning the expected output(s), same structure;
  - ``atol``/``rtol`` (optional, default 1e-4): tolerances for ``np.allclose``;
  - ``expect`` (optional): ``"mismatch"`` for a kernel with a genuine bug (its mismatch is
    the right answer, checked or not), with a ``why``;
  - ``checked`` (optional): ``"oob"`` for a kernel that reads past a buffer (a bug, or a read
    masked away afterwards as in the MLX docs' grid_sample), ``"race"`` for one with a genuine
    threadgroup data race (e.g. shared memory ordered only by ``mem_flags::mem_none``),
    ``"uninit"`` for one that reads threadgroup memory no thread wrote (e.g. a SIMD-group
    scan storing lane 31's total in a threadgroup of fewer than 32 threads), or an output
    launched without init_value that it reads (atomically or not) where no thread wrote,
    ``"barrier"`` for one whose threads return early and then reach a threadgroup_barrier
    (undefined in MSL: a tile kernel whose out-of-image pixels return), ``"inactive"`` for
    one whose SIMD shuffle reads a lane that does not execute it (undefined on Metal: a scan's
    ``(lane == 0) ? 1.0f : simd_shuffle_up(x, 1)`` leaves lane 0 out of the shuffle lane 1
    reads): with ``--checked`` the right outcome is that report (``expected``); none is
    ``missed-oob`` / ``missed-race`` / ``missed-uninit`` / ``missed-barrier`` /
    ``missed-inactive``.

* ``CORPUS_DIR/mlx_tests/`` -- MLX's ``python/tests/test_fast.py`` and ``mlx_tests.py``
  (``--mlx-tests`` runs the custom-kernel tests there).

Nothing is rewritten: the runner points ``mx.fast.metal_kernel`` at ``mb.metal_kernel``
(every launch on ``backend="sim"``), says Metal is available (``mx.metal.is_available``,
``mx.is_available(mx.gpu)``, and for case files ``mx.default_device()`` answers the GPU) and
CUDA is not, so the code takes its Metal path, then imports each case file in a subprocess
(with a timeout) and compares. For case files on ``sim`` it also calls ``mx.disable_compile()``:
model code often launches its kernels inside ``mx.compile``, which traces, and the simulator
computes on the host, so it needs values (compiled functions then run eagerly, same results).

Outcomes: ``pass``; ``mismatch`` (ran, wrong numbers: max abs error shown); ``error``
(exception class + first line; ``where`` is the innermost metalbench frame; ``CaseError``
when a case launched no kernel at all, a broken case); ``timeout``; ``expected`` (a
known-buggy kernel behaved as its ``expect``/``checked`` says). Kernels are counted by
(name, names, source, header): a kernel passes when every case launching it passes; one
built but never launched (an earlier kernel failed first) counts as failing.
"""

import argparse
import concurrent.futures
import glob
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TEST_PATTERN = r"test_custom_kernel|test_custom_metal_kernel"
#: what a case's ``checked`` names -> how the checked simulator's message says it ("oob" is
#: the out-of-bounds flag set where the error is caught)
CHECKED_FINDINGS = {"oob": None, "race": r"\brace\b", "uninit": r"\buninitiali[sz]ed (read|atomic update)\b",
                    "barrier": r"\bdivergent barrier\b", "inactive": r"\binactive lane read\b|\bwhich is inactive there\b"}
LAUNCHED = set()   # kernels (name#hash of name, names, source, header) launched by the current case
CONSTRUCTED = set()  # every kernel a case file built (some only launch after another one worked)


# ----------------------------------------------------------------------------- the redirection
def install(checked=False, report_gpu=False):
    """Point mx.fast.metal_kernel at metalbench (sim) and make the code take its Metal path.

    ``report_gpu``: ``mx.default_device()`` answers ``mx.gpu`` (model code checks it before
    building its kernels); arrays still live on the CPU. Not for MLX's own tests, which
    set the default device back from it.
    """
    import mlx.core as mx

    import metalbench as mb

    class SimKernel:
        """What ``mx.fast.metal_kernel`` returns, backed by ``mb.metal_kernel`` on ``sim``."""

        def __init__(self, *a, **kw):
            import hashlib
            names = ["name", "input_names", "output_names", "source", "header"]
            args = dict(zip(names, a), **{k: v for k, v in kw.items() if k in names})
            text = repr([args.get(n) for n in names])
            self.key = f"{args.get('name')}#{hashlib.sha1(text.encode()).hexdigest()[:8]}"
            CONSTRUCTED.add(self.key)
            self.kernel = mb.metal_kernel(*a, **kw)

        def __call__(self, *a, **kw):
            LAUNCHED.add(self.key)
            kw.setdefault("backend", os.environ.get("METALBENCH_CORPUS_BACKEND", "sim"))
            if checked:
                kw.setdefault("checked", True)
            return self.kernel(*a, **kw)

        def __getattr__(self, name):
            return getattr(self.kernel, name)

    real_is_available = mx.is_available
    mx.fast.metal_kernel = SimKernel
    mx.metal.is_available = lambda: True
    if os.environ.get("METALBENCH_CORPUS_BACKEND", "sim") != "cuda":
        # (on cuda, metalbench itself asks MLX whether CUDA is there; the cases check Metal first)
        mx.cuda.is_available = lambda: False
    mx.is_available = lambda d=None: True if d == mx.gpu or getattr(d, "type", None) == mx.gpu else (
        real_is_available(d) if d is not None else True)
    if report_gpu:
        mx.default_device = lambda: mx.Device(mx.gpu)
        if not real_is_available(mx.gpu):
            # code asks for that device's stream (mx.default_stream(mx.default_device())) to
            # pass to its kernels; without a GPU build the arrays live on the CPU's
            real_default_stream = mx.default_stream
            mx.default_stream = lambda d: real_default_stream(
                mx.cpu if d == mx.gpu or getattr(d, "type", None) == mx.gpu else d)
            # and for streams of their own (mx.new_stream(mx.default_device()))
            real_new_stream = mx.new_stream
            mx.new_stream = lambda d: real_new_stream(
                mx.cpu if d == mx.gpu or getattr(d, "type", None) == mx.gpu else d)
    return mx


def _first_line(e):
    s = str(e).strip()
    return s.splitlines()[0][:300] if s else ""


def _where(tb):
    frames = traceback.extract_tb(tb)
    mb = next((f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames)
               if "/metalbench/" in f.filename and "/site-packages/" not in f.filename), "")
    case = next((f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames) if "/cases/" in f.filename), "")
    return mb, case


def _as_list(x):
    if isinstance(x, (list, tuple)):
        return [y for v in x for y in _as_list(v)]
    return [x]


def _np(x):
    import numpy as np
    import mlx.core as mx
    if isinstance(x, mx.array):
        if x.dtype == mx.bfloat16:
            x = x.astype(mx.float32)
        return np.array(x)
    return np.asarray(x)


def compare(out, ref, atol, rtol):
    """(ok, detail): every output allclose to its reference (NaN == NaN), shapes equal."""
    import numpy as np
    outs, refs = _as_list(out), _as_list(ref)
    if len(outs) != len(refs):
        return False, f"{len(outs)} outputs, {len(refs)} expected"
    worst = 0.0
    for i, (o, r) in enumerate(zip(outs, refs)):
        o, r = _np(o), _np(r)
        if o.shape != r.shape:
            if o.size == r.size:
                o = o.reshape(r.shape)
            else:
                return False, f"output {i}: shape {o.shape}, expected {r.shape}"
        o64, r64 = o.astype(np.float64), r.astype(np.float64)
        if not np.allclose(o64, r64, atol=atol, rtol=rtol, equal_nan=True):
            bad = ~np.isclose(o64, r64, atol=atol, rtol=rtol, equal_nan=True)
            diff = np.abs(o64 - r64)[bad]
            err = np.nanmax(diff) if np.isfinite(diff).any() else float("nan")
            nan = int((np.isnan(o64) & ~np.isnan(r64)).sum())
            return False, (f"output {i}: {int(bad.sum())}/{bad.size} elements differ"
                           + (f" ({nan} NaN where the reference is a number)" if nan else "")
                           + f", max abs err {err:.3g} (first at {tuple(int(v) for v in np.unravel_index(np.argmax(bad), bad.shape))}: "
                           f"{o64[bad][0]:.6g} vs {r64[bad][0]:.6g})")
        worst = max(worst, float(np.nanmax(np.abs(o64 - r64))) if o64.size else 0.0)
    return True, f"max abs err {worst:.3g}"


# ----------------------------------------------------------------------------- one case file
def _reference(ref_fn):
    """A case's reference, computed on the CPU when the kernels run on a GPU backend.

    The references are MLX ops; on a GPU default device MLX may run a float32 matmul in
    TF32 (CUDA), which is less exact than the kernel under test, so a GPU run compared a
    precise kernel against an imprecise reference (mlx-vlm inkling's mask: 2.7e-4 off).
    """
    import mlx.core as mx
    if os.environ.get("METALBENCH_CORPUS_BACKEND", "sim") == "sim":
        return ref_fn()
    with mx.stream(mx.cpu):   # ops take their stream when built, so evaluation may come later
        return ref_fn()


def run_case_file(path, checked, only):
    """Import one case file under the redirection and run its CASES: a list of result dicts."""
    import warnings
    warnings.simplefilter("ignore")
    mx = install(checked=checked, report_gpu=True)
    from metalbench import KernelCheckWarning
    if os.environ.get("METALBENCH_CORPUS_BACKEND", "sim") == "sim":
        mx.disable_compile()     # the simulator needs values; a traced input has none (module docstring)
    res = []
    name = Path(path).stem
    try:
        spec = importlib.util.spec_from_file_location(f"case_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        # in sys.modules while it runs, as an import puts it: model code's dataclasses look
        # their module up there (string annotations under `from __future__ import annotations`)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        cases = mod.CASES
    except BaseException as e:  # noqa: BLE001 - a failure at import is a result
        mb, at = _where(e.__traceback__)
        return [{"file": name, "case": "<import>", "status": "error", "etype": type(e).__name__,
                 "msg": _first_line(e), "where": mb, "at": at, "kernels": 1, "repo": ""}]
    meta = {"repo": getattr(mod, "REPO", ""), "path": getattr(mod, "PATH", ""), "commit": getattr(mod, "COMMIT", "")}
    for c in cases:
        if only and not re.search(only, f"{name}::{c['name']}"):
            continue
        r = {"file": name, "case": c["name"], "expect": c.get("expect", ""),
             "why": c.get("why", ""), "checked_expect": c.get("checked", ""), **meta}
        t0 = time.time()
        LAUNCHED.clear()
        try:
            with warnings.catch_warnings(record=True) as seen:   # the checked simulator's warnings
                warnings.simplefilter("ignore")
                warnings.simplefilter("always", KernelCheckWarning)
                out = c["run"]()
            checked_warnings = sorted({str(w.message).splitlines()[0] for w in seen
                                       if issubclass(w.category, KernelCheckWarning)})
            if checked_warnings:
                r["warnings"] = checked_warnings
            ref = _reference(c["ref"])
            ok, detail = compare(out, ref, c.get("atol", 1e-4), c.get("rtol", 1e-4))
            r.update(status="pass" if ok else "mismatch", msg=detail)
            if not LAUNCHED:   # the code took a non-kernel path: the case is broken, not metalbench
                r.update(status="error", etype="CaseError", msg="the case launched no metal_kernel")
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            mb, at = _where(e.__traceback__)
            r.update(status="error", etype=type(e).__name__, msg=_first_line(e), where=mb, at=at)
            if "out of bounds" in str(e).lower() or "out-of-bounds" in str(e).lower():
                r["oob"] = True
        r["seconds"] = round(time.time() - t0, 2)
        r["launched"] = sorted(LAUNCHED)
        want = c.get("checked")
        if checked and want in CHECKED_FINDINGS:
            # a kernel that reads past a buffer (masked afterwards, or a genuine bug), or orders
            # threadgroup memory with a barrier that does not (mem_none): the checked simulator
            # must say so
            found = r.get("oob") if want == "oob" else bool(re.search(CHECKED_FINDINGS[want], r.get("msg", ""), re.I))
            r["status"] = "expected" if found else ("missed-" + want if r["status"] != "error" else "error")
        elif r["expect"] == "mismatch" and r["status"] == "mismatch":
            r["status"] = "expected"
        res.append(r)
    res.append({"file": name, "case": "<kernels>", "status": "meta", "constructed": sorted(CONSTRUCTED)})
    return res


# ----------------------------------------------------------------------------- MLX's test_fast.py
def run_mlx_tests(tests_dir, only):
    import unittest
    import warnings
    warnings.simplefilter("ignore")
    install()
    sys.path.insert(0, str(tests_dir))
    mod = __import__("test_fast")
    suite = unittest.defaultTestLoader.loadTestsFromModule(mod)
    res = []

    def flat(s):
        for t in s:
            yield from (flat(t) if isinstance(t, unittest.TestSuite) else [t])

    for t in flat(suite):
        mname = t.id().split(".")[-1]
        if not re.search(TEST_PATTERN, mname) or (only and not re.search(only, mname)):
            continue
        r = unittest.TestResult()
        t.run(r)
        st = {"test": mname, "status": "pass"}
        for kind, lst in (("fail", r.failures), ("error", r.errors)):
            for _, tb in lst:
                last = [ln for ln in tb.strip().splitlines() if ln.strip()][-1]
                where = re.findall(r'File "[^"]*/metalbench/([^"]+)", line (\d+)', tb)
                st = {"test": mname, "status": kind, "msg": last[:300],
                      "where": f"{where[-1][0]}:{where[-1][1]}" if where else ""}
        for _, reason in r.skipped:
            st = {"test": mname, "status": "skip", "msg": reason}
        res.append(st)
    return res


# ----------------------------------------------------------------------------- driver
CAUSES = [  # (label, regex on "etype: message") -- a first sort; the taxonomy is written by hand
    ("C preprocessor (#define/#if/#include/#pragma)", r"'#'|preprocessor|#define|#include|#pragma|#if"),
    ("pointer value / arithmetic (auto q = x + off; x += n)", r"is an array; index it|cannot assign to|pointer"),
    ("local constant as an array size (constexpr int M = 4; float v[M])", r"array sizes must be positive compile-time"),
    ("C-style cast of an expression", r"undeclared function '\("),
    ("as_type / numeric_limits / metal:: namespaces", r"as_type|numeric_limits|precise::|fast::"),
    ("templates / structs / class templates / using / typedef", r"template|struct|class|typename|using|typedef"),
    ("vector types / swizzles / packed", r"float[234]|half[234]|int[234]|uint[234]|vec<|packed_|swizzle"),
    ("simdgroup_matrix", r"simdgroup_matrix|simdgroup_load|simdgroup_store|simdgroup_multiply"),
    ("references (thread/device/threadgroup &)", r"reference|'&'"),
    ("out-of-bounds access", r"out of bounds|out-of-bounds"),
    ("local array sized by a constant", r"array size|constant size|constexpr"),
    ("output not written / not an array", r"not an array or buffer|never written"),
    ("bfloat16 / half types", r"bfloat|half"),
]


def guess_cause(r):
    text = f"{r.get('etype', '')}: {r.get('msg', '')}"
    for label, rx in CAUSES:
        if re.search(rx, text):
            return label
    return "other: " + re.sub(r"\d+", "N", text)[:100]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus", help="the corpus directory (cases/ and mlx_tests/ inside)")
    ap.add_argument("--filter", default="", help="regex on file::case")
    ap.add_argument("--checked", action="store_true", help="run every launch with checked=True")
    ap.add_argument("--mlx-tests", action="store_true", help="run MLX's test_fast.py custom-kernel tests only")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per case file")
    ap.add_argument("--jobs", type=int, default=1, help="case files run at once (subprocesses)")
    ap.add_argument("--out", default="", help="report path stem (default CORPUS_DIR/msl_report)")
    ap.add_argument("--backend", default="sim", choices=["sim", "cuda", "metal"],
                    help="where mb.metal_kernel launches (cuda: the MSL->CUDA path on an NVIDIA GPU)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    corpus = Path(args.corpus).resolve()

    if args.worker:
        if args.worker == "@mlx-tests":
            res = run_mlx_tests(corpus / "mlx_tests", args.filter)
        else:
            res = run_case_file(args.worker, args.checked, args.filter)
        print("@@RESULT@@" + json.dumps(res))
        return 0

    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               METALBENCH_BACKEND=args.backend, METALBENCH_CORPUS_BACKEND=args.backend)
    env.pop("METALBENCH_CHECKED", None)
    # MLX's CUDA matmuls and convolutions run float32 as TF32 by default: a case's own MLX ops
    # around its kernel (encodec's input projection, deform_conv's matmul) then differ from
    # the CPU reference by ~1e-3 relative, which is not the kernel under test
    env.setdefault("MLX_ENABLE_TF32", "0")
    commit = subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%h %s"], capture_output=True,
                            text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "metalbench"],
                                capture_output=True, text=True).stdout.strip())

    def worker(target):
        only = "" if args.filter and re.search(args.filter, Path(target).stem) else args.filter
        cmd = [sys.executable, __file__, str(corpus), "--worker", target, "--filter", only]
        if args.checked:
            cmd.append("--checked")
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            return None, "timeout"
        m = re.search(r"@@RESULT@@(.*)", p.stdout)
        if not m:
            tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"]
            return None, f"worker died: {tail[0][:300]}"
        return json.loads(m.group(1)), None

    if args.mlx_tests:
        res, err = worker("@mlx-tests")
        if err:
            print(f"MLX test_fast.py: {err}")
            return 1
        n = sum(r["status"] == "pass" for r in res)
        print(f"MLX test_fast.py custom-kernel tests on mb.metal_kernel (sim), metalbench {commit}"
              f"{' (dirty)' if dirty else ''}: {n}/{len(res)} pass")
        for r in res:
            print(f"  {r['status']:6s} {r['test']}  {r.get('msg', '')}  {r.get('where', '')}")
        return 0

    files = sorted(f for f in glob.glob(str(corpus / "cases" / "*.py")) if not Path(f).name.startswith("_"))
    results = []
    t0 = time.time()
    if args.filter and any(re.search(args.filter, Path(f).stem) for f in files):
        files = [f for f in files if re.search(args.filter, Path(f).stem)]   # a filter on file names
    # case files are independent subprocesses: on a GPU machine most of a file's time is
    # NVRTC compiling its kernels, so --jobs runs several at once (reports stay in file order)
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        done = list(pool.map(worker, files))
    for f, (res, err) in zip(files, done):
        stem = Path(f).stem
        if err:
            res = [{"file": stem, "case": "<all>", "status": "timeout" if err == "timeout" else "error",
                    "etype": "Timeout" if err == "timeout" else "Crash", "msg": err, "kernels": 1}]
        results += res
        for r in res:
            if r["status"] == "meta":
                continue
            print(f"  {r['status']:8s} {r['file']}::{r['case']}  "
                  f"{(r.get('etype', '') + ': ') if r['status'] == 'error' else ''}{r.get('msg', '')[:150]}",
                  file=sys.stderr)
    report = {"meta": {"commit": commit, "dirty": dirty, "checked": args.checked, "backend": args.backend, "seconds": round(time.time() - t0),
                       "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                       "command": "python benchmarks/msl_corpus.py " + " ".join(sys.argv[1:] if argv is None else argv)},
              "results": results}
    stem = Path(args.out) if args.out else corpus / ("msl_report" + ("_checked" if args.checked else "")
                                                     + ("_filtered" if args.filter else ""))
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1))
    md = render(report)
    stem.with_suffix(".md").write_text(md)
    print(md.split("\n## Per case")[0])
    print(f"report: {stem}.md (+ .json)")
    return 0


def render(rep):
    meta = rep["meta"]
    res = [r for r in rep["results"] if r["status"] != "meta"]
    ok = [r for r in res if r["status"] in ("pass", "expected")]
    kernels = defaultdict(list)   # a kernel passes when every case that launches it passes
    for r in res:
        for k in r.get("launched") or [f"{r['file']}::{r['case']}"]:
            kernels[k].append(r["status"] in ("pass", "expected"))
    for r in rep["results"]:       # built but never launched (an earlier kernel failed first): not passing
        for k in r.get("constructed", []) if r["status"] == "meta" else []:
            if k not in kernels:
                kernels[k].append(False)
    kern_ok = sum(all(v) for v in kernels.values())
    kern_all = len(kernels)
    st = Counter(r["status"] for r in res)
    lines = [f"# MLX custom kernels on mb.metal_kernel ({meta.get('backend', 'sim')})", "",
             f"metalbench {meta['commit']}{' + uncommitted changes' if meta['dirty'] else ''}; {meta['date']}; "
             f"{meta['seconds']} s{'; checked=True' if meta['checked'] else ''}.",
             f"Command: `{meta['command']}`", "",
             f"- **cases: {len(ok)}/{len(res)} pass** ({', '.join(f'{k} {v}' for k, v in st.most_common())})",
             f"- **kernels: {kern_ok}/{kern_all} pass** (a kernel = one metal_kernel's name and source; it passes "
             "when every case launching it passes; a case that fails before launching counts as its own kernel)",
             f"- files: {len({r['file'] for r in res})}", "",
             "## Failures by first-guess cause", "", "| cases | cause | example |", "|---:|---|---|"]
    groups = defaultdict(list)
    for r in res:
        if r["status"] not in ("pass", "expected"):
            groups[guess_cause(r) if r["status"] == "error" else r["status"]].append(r)
    for c, rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        e = rs[0]
        lines.append(f"| {len(rs)} | {c} | {e['file']}::{e['case']}: `{(e.get('etype', '') + ': ' + e.get('msg', ''))[:140].replace('|', '/')}` |")
    warned = [r for r in res if r.get("warnings")]
    if warned:   # lower-severity findings (mb.KernelCheckWarning): the launch went on
        lines += ["", "## Warnings of the checked simulator", "", "| file | case | warning |", "|---|---|---|"]
        lines += [f"| {r['file']} | {r['case']} | {w[:200].replace('|', '/')} |" for r in warned for w in r["warnings"]]
    lines += ["", "## Per case", "", "| file | case | status | detail | where |", "|---|---|---|---|---|"]
    for r in res:
        d = (r.get("etype", "") + ": " if r["status"] == "error" else "") + r.get("msg", "")
        lines.append(f"| {r['file']} | {r['case']} | {r['status']} | {d[:200].replace('|', '/')} | "
                     f"{r.get('where', '') or r.get('at', '')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
