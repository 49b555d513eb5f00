"""numba-cuda's own test programs, run on metalbench with the imports rewritten (issue 14).

    .venv/bin/python benchmarks/numba_suite.py                      # everything (~10 min on 2 cores)
    .venv/bin/python benchmarks/numba_suite.py --filter atomics     # files whose name contains it
    .venv/bin/python benchmarks/numba_suite.py --jobs 4 --out /work/corpus/numba

What it does:

1. Installs numba + numba-cuda (and the test scaffolding's pytest + filecheck) into the
   gitignored ``benchmarks/.venv-numba`` (as ``sim_speed.py`` does; never a metalbench
   dependency) and takes the test files that ship in the numba-cuda wheel:
   ``numba/cuda/tests/cudapy/*.py`` and ``numba/cuda/tests/doc_examples/*.py``.
2. Writes a port of them (``<out>/port/mbport/...``) in which ONLY import statements
   change (every other line, and every line number, stays as it is). The rules
   (``rewrite_import``):

   * kernel API -> metalbench: ``from numba import cuda`` -> ``from metalbench import cuda``;
     any other name from ``numba``/``numba.cuda``/``numba.core`` (``float32``, ``void``,
     ``types``, ``jit``, ``njit``, ``vectorize``...) -> ``metalbench.cuda``; modules
     ``numba.cuda.X``/``numba.core.X``/``numba.X`` -> ``metalbench.cuda.X``, with
     ``numba.types``/``numba.core.types``/``numba.cuda.types`` -> ``metalbench.cuda.types``;
     ``import numba`` -> ``import metalbench.cuda as numba``.
   * test scaffolding stays numba-cuda's own: ``numba.cuda.testing`` (CUDATestCase,
     skip_on_cudasim...), ``numba.cuda.tests.support``, ``numba.cuda.tests``, the names
     ``config``/``HAS_NUMBA`` and the modules ``numba.cuda.config``, ``numba.cuda.core.config``,
     ``numba.cuda.utils``. Both runs set ``NUMBA_ENABLE_CUDASIM=1`` (so the scaffolding imports
     without a GPU and the other skip decorators agree), but under metalbench
     ``skip_on_cudasim`` is a no-op: what Numba's simulator cannot do, metalbench is asked to.
   * the exceptions a test expects (``numba.core.errors``, ``numba.cuda.core.errors``) come
     from a small scaffold module: ``TypingError`` and the other ``*Error`` names are
     metalbench's ``MetalbenchError``, ``*Warning`` names are ``Warning`` (metalbench cannot
     raise Numba's classes; "a compile-time error" is what the test asks for).
   * sibling helper modules (``numba.cuda.tests.cudapy.X_usecases``) -> their ported copies.

3. Runs every test method of every file twice, in subprocesses (one per file, ``--jobs`` at
   a time, a per-test timeout): the ORIGINAL under Numba's CUDA simulator (the oracle; its
   results are cached per numba-cuda version) and the PORT under metalbench
   (``METALBENCH_BACKEND=sim``, metalbench's own venv, numba-cuda's scaffolding on the
   path after it).
4. Decides applicability (printed with the report: ``STATIC_NA`` below) and writes
   ``<out>/numba_report.md`` and ``<out>/numba_report.json``: per test (status, error class,
   first line of the message, where it was raised), per file, totals, and per kernel.

Two denominators, both reported:

* **oracle-applicable** = not statically inapplicable AND passes on Numba's simulator.
* **issue-applicable** = not statically inapplicable AND passes or is *skipped* on Numba's
  simulator (skipped for a simulator limitation: typed signatures, TypingError checks,
  ufuncs, doc examples that import ``cuda`` inside the test...). These tests assert
  against their own expected values (NVIDIA runs them on GPUs), so a pass is a pass. This
  is the closer proxy for issue 14's "applicable kernels" (there only PTX/LLVM inspection,
  fp16 and grid sync are excluded).

A kernel is a ``@cuda.jit`` function (file + line) that a test launches on Numba's simulator
or defines in its body; it passes when every applicable test that uses it passes.

Not part of ``make test`` (it takes minutes). Never imports third-party test code into the
repository: the port lives under ``--out`` (default ``benchmarks/.venv-numba/suite``).
"""

import argparse
import ast
import concurrent.futures as cf
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
NUMBA_VENV = HERE / ".venv-numba"
NUMBA_PINS = ["numba==0.68.1", "numba-cuda==0.30.4"]
SCAFFOLD_PINS = ["pytest", "filecheck"]  # numba.cuda.testing imports them
SUITES = ("cudapy", "doc_examples")

# --------------------------------------------------------------------------- applicability
# Whole files that test something metalbench does not claim (with the reason printed).
STATIC_NA_FILES = {
    "Numba compiler internals (IR, passes, bytecode, type inference, extension/overload API)": [
        "test_analysis", "test_byteflow", "test_copy_propagate", "test_flow_control", "test_ir",
        "test_ir_utils", "test_typeconv", "test_typeinfer", "test_compiler", "test_extending",
        "test_extending_types", "test_overload", "test_numba_interop", "test_inline",
        "test_make_function_to_jit_function", "test_serialize", "test_warning"],
    "PTX/LLVM/debug-info inspection": [
        "test_inspect", "test_debuginfo", "test_debuginfo_types", "test_lineinfo", "test_debug",
        "test_optimization", "test_const_string", "test_cache_hints", "test_fastmath"],
    "fp16/bf16/fp8": ["test_bfloat16", "test_bfloat16_bindings", "test_fp8_bindings",
                      "test_cupy_bfloat16_interop"],
    "cooperative groups grid sync": ["test_cooperative_groups", "test_cg"],
    "on-disk caching": ["test_caching"],
    "IPC / multi-GPU / multiprocessing / multithreading": [
        "test_ipc", "test_multigpu", "test_multiprocessing", "test_multithreads"],
    "linking external code (C/CUDA FFI, cffi, CPointer)": ["test_ffi", "test_cffi", "test_cpointer"],
    "streams, contexts and foreign GPU memory (CUDA array interface) only": [
        "test_stream_api", "test_cuda_array_interface", "test_launch_config_sensitive"],
}
# Single tests: a regex on the test method's own source (first match wins).
STATIC_NA_SOURCE = [
    ("PTX/LLVM/debug-info inspection",
     r"inspect_(asm|llvm|sass|types|lto_ptx)|compile_ptx|compile_all|cuda\.compile\b|\bcompile\(|"
     r"assertFileCheck|\.ptx\b|lineinfo|debug=True|opt=False|\bnvvm\b|get_regs_per_thread|"
     r"get_local_mem_per_thread|get_shared_mem_per_block|get_const_mem_size|_func\.get\(\)"),
    ("fp16/bf16/fp8", r"float16|\bf2\b|\bfp16\b|bfloat16|\bfp8\b|\bhfma\b|\bhadd\b|\bhmul\b|\bhsub\b|\bhdiv\b|\bhneg\b|\bhabs\b"),
    ("cooperative groups grid sync", r"this_grid|grid_group|\.sync\(\)|max_cooperative_grid_blocks|cooperative"),
    ("on-disk caching", r"cache=True|_cache\b|cache_usecases"),
    ("linking external code (C/CUDA FFI, cffi, CPointer)", r"link=\[|declare_device|\bcffi\b|CPointer|\blto\b"),
]


# Tests Numba's simulator skips for a reason that is about Numba's compiler, not the kernel
# (its own skip message says so): not applicable either. Other skips (ufuncs, typed signatures,
# TypingError checks, warp ops, record dtypes...) stay applicable: metalbench is asked to do them.
ORACLE_SKIP_NA = [
    ("PTX/LLVM/debug-info inspection", r"PTX|nvdisasm|LTO|nvjitlink"),
    ("Numba dispatcher/compiler internals", r"Dispatcher C-extension|overloads? (not created|resolution)|track overloads|"
     r"_prepare_args|kernel properties|typing context|Compilation time|variable warnings|launch bounds|"
     r"carveout|concurrent kernels"),
    ("CUDA libdevice bindings (numba.cuda.libdevice)", r"Libdevice functions"),
]


def static_na(file_stem, method_src):
    for reason, files in STATIC_NA_FILES.items():
        if file_stem in files:
            return reason
    for reason, rx in STATIC_NA_SOURCE:
        if method_src and re.search(rx, method_src):
            return reason
    return None


# --------------------------------------------------------------------------- the venv
def ensure_numba_venv():
    py = NUMBA_VENV / "bin" / "python"
    if not py.exists():
        print(f"creating {NUMBA_VENV} with {' '.join(NUMBA_PINS)} (bench-only, never a metalbench "
              "dependency) ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(NUMBA_VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "numpy", *NUMBA_PINS], check=True)
    ok = subprocess.run([str(py), "-c", "import pytest, filecheck"], capture_output=True).returncode == 0
    if not ok:
        subprocess.run([str(py), "-m", "pip", "install", "-q", *SCAFFOLD_PINS], check=True)
    return py


def venv_info(py):
    code = ("import numba, numba_cuda, os, sysconfig, json; print(json.dumps({'numba': numba.__version__, "
            "'numba_cuda': numba_cuda.__version__, 'tests': os.path.join(os.path.dirname(numba_cuda.__file__), "
            "'numba', 'cuda', 'tests'), 'site': sysconfig.get_paths()['purelib']}))")
    out = subprocess.run([str(py), "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1"))
    return json.loads(out.stdout)


# --------------------------------------------------------------------------- the import rewrite
SCAFFOLD_MODULES = ("numba.cuda.testing", "numba.cuda.tests.support", "numba.cuda.config",
                    "numba.cuda.core.config", "numba.cuda.utils")
SCAFFOLD_NAMES = {"config", "HAS_NUMBA"}  # from numba.cuda / numba.cuda.core: test environment
ERROR_MODULES = ("numba.core.errors", "numba.cuda.core.errors", "numba.cuda.errors", "numba.errors")
TYPES_MODULES = ("numba.types", "numba.core.types", "numba.cuda.types")
SCAFFOLD_ERRORS_SRC = '''"""The exceptions numba-cuda's tests expect, as metalbench raises them (harness scaffold)."""
from metalbench.errors import MetalbenchError as _E


def __getattr__(name):
    if name.endswith("Warning"):
        return Warning
    if name.endswith("Error") or name.endswith("Exception"):
        return _E
    raise AttributeError(name)
'''


def _mb_module(mod):
    """numba's module name -> metalbench's, for the kernel API."""
    if mod in TYPES_MODULES or mod.startswith(tuple(m + "." for m in TYPES_MODULES)):
        return "metalbench.cuda.types" + mod.split("types", 1)[1]
    if mod in ("numba", "numba.cuda", "numba.core"):
        return "metalbench.cuda"
    for prefix in ("numba.cuda.", "numba.core.", "numba."):
        if mod.startswith(prefix):
            return "metalbench.cuda." + mod[len(prefix):]
    return mod


def _is_scaffold(mod):
    return mod == "numba.cuda.tests" or any(mod == m or mod.startswith(m + ".") for m in SCAFFOLD_MODULES)


def _alias(a):
    return a.name + (f" as {a.asname}" if a.asname else "")


def rewrite_import(node):
    """An ast.Import/ImportFrom of numba -> the statement(s) to put in its place, or None."""
    if isinstance(node, ast.ImportFrom):
        mod = node.module or ""
        if node.level or not (mod == "numba" or mod.startswith("numba.")):
            return None
        if _is_scaffold(mod):
            return None
        if mod.startswith("numba.cuda.tests.cudapy") or mod.startswith("numba.cuda.tests.doc_examples"):
            return [f"from {'mbport' + mod[len('numba.cuda.tests'):]} import {', '.join(map(_alias, node.names))}"]
        if mod in ERROR_MODULES:
            return [f"from _mbsuite_errors import {', '.join(map(_alias, node.names))}"]
        keep = [a for a in node.names if mod in ("numba.cuda", "numba.cuda.core") and a.name in SCAFFOLD_NAMES]
        errs = [a for a in node.names if a.name == "errors" and a not in keep]
        move = [a for a in node.names if a not in keep and a not in errs]
        out = [f"import _mbsuite_errors as {a.asname or 'errors'}" for a in errs]
        if keep:
            out.append(f"from {mod} import {', '.join(map(_alias, keep))}")
        if mod == "numba" and any(a.name == "cuda" for a in move):
            out.append("from metalbench import " + ", ".join(_alias(a) for a in move if a.name == "cuda"))
            move = [a for a in move if a.name != "cuda"]
        if move:
            out.append(f"from {_mb_module(mod)} import {', '.join(map(_alias, move))}")
        return out
    out, changed = [], False
    for a in node.names:
        if a.name == "numba" or a.name.startswith("numba."):
            changed = True
            if _is_scaffold(a.name):
                out.append(f"import {_alias(a)}")
            elif a.asname:
                out.append(f"import {_mb_module(a.name)} as {a.asname}")
            elif a.name == "numba":
                out.append("import metalbench.cuda as numba")
            else:  # `import numba.cuda` binds `numba`: give it metalbench.cuda's parent as numba
                out.append(f"import {_mb_module(a.name)}; import metalbench as numba")
        else:
            out.append(f"import {_alias(a)}")
    return out if changed else None


def rewrite_source(src):
    """Rewrite the numba imports of one file; every line keeps its number.

    Import lines inside string literals that are Python programs (code a test runs in a
    subprocess) are rewritten the same way.
    """
    tree = ast.parse(src)
    lines = src.splitlines(keepends=True)
    edits = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            new = rewrite_import(node)
            if new is not None:
                edits.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, "; ".join(new)))
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and "numba" in node.value
              and "import" in node.value):
            try:
                new_text, k = rewrite_source(node.value)
            except SyntaxError:
                continue
            if k:
                changed = dict(zip(node.value.splitlines(), new_text.splitlines()))
                for ln in range(node.lineno - 1, node.end_lineno):
                    body = lines[ln].rstrip("\n")
                    if body in changed and changed[body] != body:
                        lines[ln] = changed[body] + lines[ln][len(body):]
    for l0, c0, l1, c1, text in sorted(edits, reverse=True):
        head = lines[l0 - 1][:c0]
        tail = lines[l1 - 1][c1:]
        lines[l0 - 1:l1] = [head + text + "\n" * (l1 - l0) + tail]
    return "".join(lines), len(edits)


def build_port(tests_dir, port):
    if port.exists():
        shutil.rmtree(port)
    (port / "mbport").mkdir(parents=True)
    (port / "mbport" / "__init__.py").write_text("")
    (port / "_mbsuite_errors.py").write_text(SCAFFOLD_ERRORS_SRC)
    n = 0
    for suite in SUITES:
        d = port / "mbport" / suite
        d.mkdir()
        for f in sorted((Path(tests_dir) / suite).glob("*.py")):
            text, k = rewrite_source(f.read_text())
            (d / f.name).write_text(text)
            n += k
        for extra in (Path(tests_dir) / suite).iterdir():  # data files some tests read (jitlink.ptx...)
            if extra.is_file() and extra.suffix != ".py":
                shutil.copy(extra, d / extra.name)
    return n


# --------------------------------------------------------------------------- static test facts
def method_sources(path):
    """{'Class.method': source} for every test method, and the kernels each defines in its body."""
    src = Path(path).read_text()
    tree = ast.parse(src)
    srcs, kernels = {}, {}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    def methods_of(cls, seen=()):
        out = {}
        for b in cls.bases:  # test methods inherited from a mixin in the same file
            if isinstance(b, ast.Name) and b.id in classes and b.id not in seen:
                out.update(methods_of(classes[b.id], seen + (cls.name,)))
        for m in cls.body:
            if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name.startswith("test"):
                out[m.name] = m
        return out

    for cname, cls in classes.items():
        # tests generated at import (setattr in a loop) have no method source: the class stands in
        srcs[f"{cname}.*"] = ast.get_source_segment(src, cls) or ""
        for mname, m in methods_of(cls).items():
            seg = ast.get_source_segment(src, m) or ""
            deco = "".join(ast.get_source_segment(src, d) or "" for d in cls.decorator_list)
            srcs[f"{cname}.{mname}"] = deco + "\n" + seg
            ks = []
            for n in ast.walk(m):
                if isinstance(n, ast.FunctionDef) and n is not m:
                    for d in n.decorator_list:
                        ds = ast.get_source_segment(src, d) or ""
                        if re.match(r"(cuda\.)?jit\b", ds) and "device=True" not in ds:
                            ks.append(n.lineno)
            kernels[f"{cname}.{mname}"] = ks
    return srcs, kernels


# --------------------------------------------------------------------------- the worker
SHIM_MODULES = ["types", "np", "np.numpy_support", "typing", "typing.typeof"]


def install_type_shim():
    """--shim: lend metalbench.cuda numba-cuda's type system (float32, void, types, numpy_support...).

    Only what metalbench.cuda lacks, and only names and type objects (issue 14 measured with such a
    shim): a test then fails on what metalbench does with them, not on an import. Nothing that runs
    code is lent (jit, vectorize, random, libdevice...). Never the default: the default measures
    metalbench as it is.
    """
    import importlib
    import metalbench.cuda as mbc
    import numba.cuda.types as nt
    for name in dir(nt):
        if not name.startswith("_") and not hasattr(mbc, name):
            setattr(mbc, name, getattr(nt, name))
    for sub in SHIM_MODULES:
        try:
            importlib.import_module("metalbench.cuda." + sub)
        except ImportError:
            real = importlib.import_module("numba.cuda." + sub)
            sys.modules["metalbench.cuda." + sub] = real
            if "." not in sub and not hasattr(mbc, sub):
                setattr(mbc, sub, real)


class _Timeout(BaseException):
    pass


def _first_line(e):
    msg = str(e).strip()
    return msg.splitlines()[0][:300] if msg else ""


def _where(tb, port_marker):
    """The innermost frame in metalbench (where it raised) and in the test file."""
    frames = traceback.extract_tb(tb)
    mb = next((f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames)
               if "/metalbench/" in f.filename and "/site-packages/" not in f.filename), "")
    test = next((f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames) if port_marker in f.filename), "")
    return mb, test


def worker(args):
    """Run the tests of one module; one JSON line per test to args.results."""
    import unittest
    import warnings
    mode = args.worker
    if mode == "metalbench":
        sys.path.insert(0, args.port)
        sys.path.append(args.numba_site)  # scaffolding from numba-cuda, after metalbench's packages
        import _numba_cuda_redirector  # noqa: F401 - what the venv's .pth file does: numba.cuda -> numba_cuda
        # metalbench is not Numba's simulator: what that simulator cannot do, metalbench is asked to.
        import numba.cuda.testing as testing
        testing.skip_on_cudasim = lambda reason: (lambda f: f)
        # MemoryLeakMixin (numba.cuda.tests.support) compares NRT allocation counts around a
        # test; under NUMBA_ENABLE_CUDASIM its rtsys is the simulator's stub, whose
        # get_allocation_stats() returns None (the simulator skips those classes). metalbench
        # has no NRT: nothing is allocated through it, so the counts are zeros.
        from collections import namedtuple
        from numba.cuda.tests.support import rtsys
        zeros = namedtuple("nrt_mstats", ["alloc", "free", "mi_alloc", "mi_free"])(0, 0, 0, 0)
        if rtsys.get_allocation_stats() is None:
            type(rtsys).get_allocation_stats = lambda self, stream=None: zeros
        if not hasattr(rtsys, "memsys_disable_stats"):
            type(rtsys).memsys_disable_stats = lambda self, stream=None: None
        if args.shim:
            install_type_shim()
        module = "mbport." + args.module
        port_marker = "/mbport/"
    else:
        module = "numba.cuda.tests." + args.module
        port_marker = "/numba/cuda/tests/"
    launched = set()
    if mode == "oracle":
        from numba.cuda.simulator import kernel as simkernel
        orig_call = simkernel.FakeCUDAKernel.__call__

        def call(self, *a):
            if not (self._device or simkernel._kernel_context):
                launched.add(self.fn.__code__.co_firstlineno)
            return orig_call(self, *a)
        simkernel.FakeCUDAKernel.__call__ = call
    warnings.simplefilter("ignore")
    only = set(args.only.split(",")) if args.only else None
    out = open(args.results, "a", buffering=1)

    def emit(**kw):
        out.write(json.dumps(kw) + "\n")

    try:
        mod = __import__(module, fromlist=["*"])
        suite = unittest.defaultTestLoader.loadTestsFromModule(mod)
    except BaseException as e:  # noqa: BLE001 - an import failure is a result
        mb, test = _where(e.__traceback__, port_marker)
        emit(test="<import>", status="error", etype=type(e).__name__, msg=_first_line(e), mb=mb, at=test)
        return

    def flat(s):
        for t in s:
            if isinstance(t, unittest.TestSuite):
                yield from flat(t)
            else:
                yield t

    class Result(unittest.TestResult):
        def __init__(self):
            super().__init__()
            self.outcome = None

        def _rec(self, status, err=None, reason=None):
            if self.outcome and self.outcome["status"] in ("error", "fail") and status != "error":
                return  # first failure (e.g. of a subTest) wins
            o = {"status": status}
            if err is not None:
                et, ev, tb = err
                mb, at = _where(tb, port_marker)
                o.update(etype=et.__name__, msg=_first_line(ev), mb=mb, at=at)
                if isinstance(ev, _Timeout):
                    o.update(status="timeout", etype="Timeout", msg=f"over {args.test_timeout} s")
            if reason is not None:
                o["msg"] = str(reason)[:300]
            self.outcome = o

        def addSuccess(self, t):
            if self.outcome is None:
                self._rec("pass")

        def addFailure(self, t, err):
            self._rec("fail", err)

        def addError(self, t, err):
            self._rec("error", err)

        def addSkip(self, t, reason):
            self._rec("skip", reason=reason)

        def addExpectedFailure(self, t, err):
            self._rec("xfail", err)

        def addUnexpectedSuccess(self, t):
            self._rec("xpass")

        def addSubTest(self, t, sub, err):
            if err is not None:
                self._rec("fail" if issubclass(err[0], t.failureException) else "error", err)

    def on_alarm(*_):
        raise _Timeout()
    signal.signal(signal.SIGALRM, on_alarm)
    devnull = open(os.devnull, "w")
    for t in flat(suite):
        tid = ".".join(t.id().split(".")[-2:])
        if isinstance(t, unittest.loader._FailedTest):
            emit(test="<import>", status="error", etype="ImportError", msg=_first_line(t._exception), mb="", at="")
            continue
        if only is not None and tid not in only:
            continue
        emit(test=tid, status="start")
        launched.clear()
        r = Result()
        t0 = time.time()
        signal.alarm(args.test_timeout)
        saved = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = devnull
        try:
            t.run(r)
        except _Timeout:
            r._rec("timeout", reason=f"over {args.test_timeout} s")
        finally:
            signal.alarm(0)
            sys.stdout, sys.stderr = saved
        o = r.outcome or {"status": "pass"}
        if o["status"] == "timeout":
            o.update(etype="Timeout", msg=f"over {args.test_timeout} s")
        emit(test=tid, seconds=round(time.time() - t0, 2), kernels=sorted(launched), **o)


# --------------------------------------------------------------------------- the driver
def run_file(kind, module, ctx, cache_dir):
    """All tests of one module in one kind of run, restarting after a crash or hang."""
    res_path = cache_dir / f"{kind}{'-shim' if ctx.get('shim') else ''}-{module}.jsonl"
    if res_path.exists():
        res_path.unlink()
    if kind == "oracle":
        py, env = ctx["numba_py"], dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    else:
        py = ctx["mb_py"]
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", METALBENCH_BACKEND="sim",
                   PYTHONPATH=str(REPO))
    env.pop("METALBENCH_CHECKED", None)
    done, skip_ids = {}, set()
    for attempt in range(50):
        base = [str(py), __file__, "--worker", kind, "--module", module, "--results", str(res_path),
                "--port", str(ctx["port"]), "--numba-site", ctx["site"], "--test-timeout", str(ctx["timeout"])]
        if ctx.get("shim"):
            base.append("--shim")
        if attempt:
            pending = [t for t in ctx["ids"].get(module, []) if t not in done and t not in skip_ids]
            if not pending:
                break
            base += ["--only", ",".join(pending)]
        try:
            p = subprocess.run(base, env=env, capture_output=True, text=True,
                               timeout=ctx["timeout"] * 3 + 60 + 5 * len(ctx["ids"].get(module, [])))
            crashed = p.returncode != 0
            tail = (p.stderr or "").strip().splitlines()[-1:] if crashed else []
        except subprocess.TimeoutExpired:
            crashed, tail = True, ["hang (process timeout)"]
        started = None
        if res_path.exists():
            for line in res_path.read_text().splitlines():
                r = json.loads(line)
                if r["status"] == "start":
                    started = r["test"]
                elif r["test"] == "<import>":
                    done["<import>"] = r
                else:
                    done[r["test"]] = r
                    started = None
            res_path.unlink()
        if "<import>" in done or not crashed:
            break
        if started and started not in done:  # the test that was running took the process down
            done[started] = {"test": started, "status": "error", "etype": "Crash",
                             "msg": (tail[0] if tail else "worker died")[:300], "mb": "", "at": ""}
            skip_ids.add(started)
        elif not ctx["ids"].get(module):
            done["<import>"] = {"test": "<import>", "status": "error", "etype": "Crash",
                                "msg": (tail[0] if tail else "worker died")[:300], "mb": "", "at": ""}
            break
    return done


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--filter", default="", help="only files whose path (suite/test_x) contains this (regex)")
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2)))
    ap.add_argument("--out", default=str(NUMBA_VENV / "suite"), help="port, caches and report go here")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per test")
    ap.add_argument("--oracle-timeout", type=int, default=300, help="seconds per test on Numba's simulator")
    ap.add_argument("--shim", action="store_true",
                    help="lend metalbench.cuda numba-cuda's type system (float32, void, types, numpy_support) first")
    ap.add_argument("--refresh-oracle", action="store_true", help="re-run Numba's simulator (else cached)")
    ap.add_argument("--worker", choices=["oracle", "metalbench"], help=argparse.SUPPRESS)
    ap.add_argument("--module", help=argparse.SUPPRESS)
    ap.add_argument("--results", help=argparse.SUPPRESS)
    ap.add_argument("--port", help=argparse.SUPPRESS)
    ap.add_argument("--numba-site", help=argparse.SUPPRESS)
    ap.add_argument("--only", help=argparse.SUPPRESS)
    ap.add_argument("--test-timeout", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args)

    t_start = time.time()
    numba_py = ensure_numba_venv()
    info = venv_info(numba_py)
    out = Path(args.out).resolve()
    port = out / "port"
    cache = out / "runs"
    cache.mkdir(parents=True, exist_ok=True)
    n_edits = build_port(info["tests"], port)
    mb_py = REPO / ".venv" / "bin" / "python"
    if not mb_py.exists():
        mb_py = Path(sys.executable)

    files = []
    for suite in SUITES:
        for f in sorted((Path(info["tests"]) / suite).glob("test_*.py")):
            rel = f"{suite}/{f.stem}"
            if re.search(args.filter, rel):
                files.append((suite, f))
    facts = {}
    for suite, f in files:
        facts[f"{suite}.{f.stem}"] = method_sources(f)
    ids = {m: sorted(t for t in s if not t.endswith(".*")) for m, (s, _) in facts.items()}
    commit = subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%h %s"],
                            capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "metalbench"],
                           capture_output=True, text=True).stdout.strip()
    print(f"numba {info['numba']}, numba-cuda {info['numba_cuda']}; {len(files)} files; "
          f"{n_edits} import statements rewritten; metalbench at {commit}{' (dirty)' if dirty else ''}",
          file=sys.stderr)

    oracle_cache = out / f"oracle-{info['numba_cuda']}.json"
    oracle = json.loads(oracle_cache.read_text()) if oracle_cache.exists() and not args.refresh_oracle else {}
    for m, r in oracle.items():  # generated tests are known by name only from a run
        if m in ids:
            ids[m] = sorted(set(ids[m]) | (set(r) - {"<import>"}))
    base_ctx = {"shim": args.shim, "numba_py": numba_py, "mb_py": mb_py, "port": port, "site": info["site"], "ids": ids}
    jobs = []
    for suite, f in files:
        m = f"{suite}.{f.stem}"
        if m not in oracle:
            jobs.append(("oracle", m, dict(base_ctx, timeout=args.oracle_timeout)))
        jobs.append(("metalbench", m, dict(base_ctx, timeout=args.timeout)))
    results = {"oracle": {}, "metalbench": {}}
    with cf.ThreadPoolExecutor(args.jobs) as ex:
        futs = {ex.submit(run_file, k, m, c, cache): (k, m) for k, m, c in jobs}
        for i, fu in enumerate(cf.as_completed(futs), 1):
            k, m = futs[fu]
            results[k][m] = fu.result()
            print(f"  [{i}/{len(jobs)}] {k:10s} {m}", file=sys.stderr)
    for m, r in results["oracle"].items():
        oracle[m] = r
    all_oracle = json.loads(oracle_cache.read_text()) if oracle_cache.exists() else {}
    all_oracle.update(oracle)
    oracle_cache.write_text(json.dumps(all_oracle, indent=1))

    report = assemble(files, facts, oracle, results["metalbench"])
    report["meta"] = {"numba": info["numba"], "numba_cuda": info["numba_cuda"], "commit": commit,
                      "dirty": bool(dirty), "seconds": round(time.time() - t_start),
                      "command": "python benchmarks/numba_suite.py " + " ".join(sys.argv[1:] if argv is None else argv),
                      "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    report["meta"]["shim"] = args.shim
    name = "numba_report" + ("_shim" if args.shim else "") + ("_filtered" if args.filter else "")
    (out / f"{name}.json").write_text(json.dumps(report, indent=1))
    md = render(report)
    (out / f"{name}.md").write_text(md)
    print(md.split("\n## Per file")[0])
    print(f"report: {out / name}.md (+ .json)")


def assemble(files, facts, oracle, mb):
    tests = []
    for suite, f in files:
        m = f"{suite}.{f.stem}"
        srcs, kdefs = facts[m]
        o_all, b_all = oracle.get(m, {}), mb.get(m, {})
        names = sorted({t for t in srcs if not t.endswith(".*")} | {t for t in o_all if t != "<import>"})
        for t in names:
            o = o_all.get(t) or o_all.get("<import>") or {"status": "missing"}
            b = b_all.get(t) or b_all.get("<import>") or {"status": "missing"}
            na = static_na(f.stem, srcs.get(t) or srcs.get(t.split(".")[0] + ".*", ""))
            if na is None and o["status"] == "skip":
                na = next((r for r, rx in ORACLE_SKIP_NA if re.search(rx, o.get("msg", ""))), None)
            if na is None and o["status"] not in ("pass", "skip"):
                na = f"{o['status']} on Numba's simulator"
            if na is None and b["status"] == "skip":
                na = "skipped under metalbench too (a skip decorator other than skip_on_cudasim)"
            kernels = sorted(set(o.get("kernels", [])) | set(kdefs.get(t, [])))
            tests.append({
                "file": m, "test": t, "na": na, "oracle": o["status"],
                "oracle_msg": o.get("msg", "") if o["status"] != "pass" else "",
                "status": b["status"], "etype": b.get("etype", ""), "msg": b.get("msg", ""),
                "mb": b.get("mb", ""), "at": b.get("at", ""), "seconds": b.get("seconds"),
                "import_error": "<import>" in b_all and t not in b_all,
                "kernels": [f"{m}:{k}" for k in kernels],
                "oracle_applicable": na is None and o["status"] == "pass",
                "issue_applicable": na is None,
            })
    return {"tests": tests}


def _pct(a, b):
    return f"{a}/{b} ({100 * a / b:.1f}%)" if b else "0/0"


def kernel_stats(tests, key):
    ks = defaultdict(list)
    for t in tests:
        if t[key]:
            for k in t["kernels"]:
                ks[k].append(t["status"] == "pass")
    return sum(all(v) for v in ks.values()), len(ks)


def cause(t):
    """A short failure label: error class + message with numbers and quoted names kept."""
    if t["status"] == "timeout":
        return "Timeout"
    msg = re.sub(r"0x[0-9a-f]+", "0x..", t["msg"])
    return f"{t['etype']}: {msg[:140]}"


def render(rep):
    tests, meta = rep["tests"], rep["meta"]
    lines = [f"# numba-cuda's tests on metalbench (sim)", "",
             f"metalbench {meta['commit']}{' + uncommitted changes' if meta['dirty'] else ''}; numba "
             f"{meta['numba']}, numba-cuda {meta['numba_cuda']}; {meta['date']}; {meta['seconds']} s."
             + (" **With --shim** (numba-cuda's type names lent to metalbench.cuda)." if meta.get("shim") else ""),
             f"Command: `{meta['command']}`", "", "## Totals", ""]
    for key, label in (("oracle_applicable", "oracle-applicable (passes on Numba's simulator)"),
                       ("issue_applicable", "issue-applicable (passes or is skipped on Numba's simulator)")):
        sel = [t for t in tests if t[key]]
        kp, kn = kernel_stats(tests, key)
        lines.append(f"- **{label}**: test methods {_pct(sum(t['status'] == 'pass' for t in sel), len(sel))}; "
                     f"kernels {_pct(kp, kn)}")
    lines.append(f"- all test methods: {len(tests)} in {len({t['file'] for t in tests})} files; "
                 f"not applicable: {sum(1 for t in tests if t['na'])}")
    sel = [t for t in tests if t["issue_applicable"]]
    st = Counter(t["status"] for t in sel)
    lines += ["- issue-applicable outcomes: " + ", ".join(f"{k} {v}" for k, v in st.most_common()),
              f"- files failing at import under metalbench: "
              f"{len({t['file'] for t in tests if t['import_error']})}", "",
              "## Not applicable (rules, then counts)", ""]
    for reason, fl in STATIC_NA_FILES.items():
        lines.append(f"- files, {reason}: {', '.join(fl)}")
    for reason, rx in STATIC_NA_SOURCE:
        lines.append(f"- tests whose source matches `{rx}`: {reason}")
    for reason, rx in ORACLE_SKIP_NA:
        lines.append(f"- tests Numba's simulator skips with a message matching `{rx}`: {reason}")
    lines.append("- tests that fail or error on Numba's simulator (oracle-applicable also drops its skips)")
    lines.append("")
    for r, n in Counter(t["na"] for t in tests if t["na"]).most_common():
        lines.append(f"  - {n:4d} {r}")
    lines += ["", "## Failure causes (issue-applicable tests; error class + first line)", "",
              "| tests | cause | example |", "|---:|---|---|"]
    groups = defaultdict(list)
    for t in sel:
        if t["status"] != "pass":
            groups[cause(t)].append(t)
    for c, ts in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        ex = ts[0]
        lines.append(f"| {len(ts)} | `{c.replace('|', '/')}` | {ex['file']}::{ex['test']} ({ex['mb'] or ex['at']}) |")
    lines += ["", "## Per file", "", "| file | oracle-app. pass | issue-app. pass | n/a | import error |",
              "|---|---:|---:|---:|---|"]
    by_file = defaultdict(list)
    for t in tests:
        by_file[t["file"]].append(t)
    for fname, ts in by_file.items():
        oa = [t for t in ts if t["oracle_applicable"]]
        ia = [t for t in ts if t["issue_applicable"]]
        imp = next((f"{t['etype']}: {t['msg'][:80]}" for t in ts if t["import_error"]), "")
        lines.append(f"| {fname} | {sum(t['status'] == 'pass' for t in oa)}/{len(oa)} | "
                     f"{sum(t['status'] == 'pass' for t in ia)}/{len(ia)} | {sum(1 for t in ts if t['na'])} | "
                     f"{imp.replace('|', '/')} |")
    lines += ["", "## Per test", "", "| file | test | applicable | oracle | metalbench | error | where |",
              "|---|---|---|---|---|---|---|"]
    for t in tests:
        app = "oracle+issue" if t["oracle_applicable"] else ("issue" if t["issue_applicable"] else f"n/a: {t['na']}")
        err = f"{t['etype']}: {t['msg'][:120]}" if t["status"] != "pass" else ""
        lines.append(f"| {t['file']} | {t['test']} | {app} | {t['oracle']} | {t['status']} | "
                     f"{err.replace('|', '/')} | {t['mb'] or t['at']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
