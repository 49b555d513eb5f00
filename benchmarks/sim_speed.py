"""Simulator throughput against Numba's CUDA simulator, compile time, launch overhead, memory.

    .venv/bin/python benchmarks/sim_speed.py                  # metalbench's simulator only
    .venv/bin/python benchmarks/sim_speed.py --compare-numba  # + Numba's simulator, side by side
    .venv/bin/python benchmarks/sim_speed.py matmul reduction # some kernels only
    make bench-sim                                            # = --compare-numba

Every kernel is written once, Numba-style (``KERNELS`` below, executed with either
``cuda`` module), and runs on

* metalbench's simulator through the Numba layer (``from metalbench import cuda``),
* metalbench's simulator through the DSL (``@mb.kernel``, the same algorithm),
* Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), in a separate venv
  (``benchmarks/.venv-numba``, created on demand: numba is never a dependency of
  metalbench). It runs one Python thread per GPU thread, so it gets a smaller grid
  of the same per-thread work; rates are threads per second either way.

Targets (2-core machine): every kernel >= 1000x Numba's simulator; vector add 4M
>= 5e7 threads/s; 256-thread block reduction over 1M >= 5e6; 16x16-tile matmul
256x256 >= 5e5; a 16M-thread grid in bounded memory; compile <= 20 ms; a cached
launch adds <= 100 us.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
NUMBA_VENV = HERE / ".venv-numba"
NUMBA_PINS = ["numba==0.68.1", "numba-cuda==0.30.4"]

# One source for both simulators: executed with ``cuda`` = metalbench.cuda or numba.cuda.
KERNELS = '''
TPB = 256
TILE = 16


@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


@cuda.jit
def block_reduce(x, out):
    sh = cuda.shared.array(TPB, dtype=np.float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    sh[tid] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if tid < s:
            sh[tid] += sh[tid + s]
        cuda.syncthreads()
        s //= 2
    if tid == 0:
        out[cuda.blockIdx.x] = sh[0]


@cuda.jit
def matmul(A, B, C):
    sA = cuda.shared.array(shape=(TILE, TILE), dtype=np.float32)
    sB = cuda.shared.array(shape=(TILE, TILE), dtype=np.float32)
    row, col = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    acc = 0.0
    for t in range(A.shape[1] // TILE):
        sA[tx, ty] = A[row, t * TILE + ty]
        sB[tx, ty] = B[t * TILE + tx, col]
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[tx, k] * sB[k, ty]
        cuda.syncthreads()
    C[row, col] = acc


@cuda.jit
def warp_reduce(x, out):
    i = cuda.grid(1)
    v = x[i] if i < x.size else 0.0
    off = 16
    while off > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, off)
        off //= 2
    if cuda.threadIdx.x % 32 == 0:
        out[i // 32] = v


@cuda.jit
def warp_reduce_shared(x, out):
    # the same per-warp tree for simulators without warp shuffles (Numba's)
    sh = cuda.shared.array(TPB, dtype=np.float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    sh[tid] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    off = 16
    while off > 0:
        if tid % 32 < off:
            sh[tid] += sh[tid + off]
        cuda.syncthreads()
        off //= 2
    if tid % 32 == 0:
        out[i // 32] = sh[tid]


@cuda.jit
def histogram(x, hist):
    i = cuda.grid(1)
    if i < x.size:
        b = int(x[i] * hist.size)
        cuda.atomic.add(hist, b, 1)
'''


def make_args(name, threads, rng):
    """Arrays for ``threads`` threads of kernel ``name``; returns (args, launch, check)."""
    f32 = np.float32
    if name == "vector_add":
        a, b = rng.standard_normal(threads, dtype=f32), rng.standard_normal(threads, dtype=f32)
        out = np.zeros(threads, f32)
        return (a, b, out), (threads // 256, 256), lambda: np.array_equal(out, a + b)
    if name == "block_reduce":
        x = rng.standard_normal(threads, dtype=f32)
        out = np.zeros(threads // 256, f32)
        return (x, out), (threads // 256, 256), \
            lambda: np.allclose(out, x.reshape(-1, 256).sum(1), atol=1e-3)
    if name == "matmul":
        # 256x256 matrices; ``threads`` picks how many rows of C are computed (same
        # per-thread work: a full 256-long dot product through 16 shared tiles)
        n = 256
        A, B = rng.standard_normal((n, n), dtype=f32), rng.standard_normal((n, n), dtype=f32)
        C = np.zeros((n, n), f32)
        blocks = threads // 256
        rb, cb = (blocks // 16, 16) if blocks >= 16 else (1, blocks)
        return (A, B, C), ((rb, cb), (16, 16)), \
            lambda: np.allclose(C[:rb * 16, :cb * 16], (A @ B)[:rb * 16, :cb * 16], atol=1e-3)
    if name == "warp_reduce":
        x = rng.standard_normal(threads, dtype=f32)
        out = np.zeros(threads // 32, f32)
        return (x, out), (threads // 256, 256), \
            lambda: np.allclose(out, x.reshape(-1, 32).sum(1), atol=1e-4)
    if name == "histogram":
        x = rng.random(threads, dtype=f32)
        hist = np.zeros(256, np.int32)
        return (x, hist), (threads // 256, 256), \
            lambda: np.array_equal(hist, np.bincount((x * 256).astype(np.int64), minlength=256))
    raise KeyError(name)


# threads on metalbench's simulator, on Numba's (one Python thread each: smaller grids)
SIZES = {"vector_add": (1 << 22, 1 << 13), "block_reduce": (1 << 20, 1 << 10), "matmul": (1 << 16, 1 << 9),
         "warp_reduce": (1 << 20, 1 << 10), "histogram": (1 << 20, 1 << 11)}
TARGETS = {"vector_add": 5e7, "block_reduce": 5e6, "matmul": 5e5}


def load_kernels(cuda):
    import linecache
    name = "<sim_speed kernels>"
    # metalbench reads a kernel's source (inspect): make the exec'd text findable
    linecache.cache[name] = (len(KERNELS), None, KERNELS.splitlines(True), name)
    ns = {"cuda": cuda, "np": np}
    exec(compile(KERNELS, name, "exec"), ns)
    return ns


def time_launches(kernel, name, threads, repeat, warm=True):
    """(median seconds, compile seconds, result ok) of ``repeat`` launches."""
    rng = np.random.default_rng(0)
    args, (blocks, tpb), ok = make_args(name, threads, rng)
    first = 0.0
    if warm:
        t0 = time.perf_counter()
        kernel[blocks, tpb](*args)  # compiles
        first = time.perf_counter() - t0
    if name == "histogram":
        args[1][...] = 0
    times = []
    for _ in range(repeat):
        if name == "histogram":
            args[1][...] = 0
        t0 = time.perf_counter()
        kernel[blocks, tpb](*args)
        times.append(time.perf_counter() - t0)
    med = float(np.median(times))
    return med, max(0.0, first - med), bool(ok())


# ----------------------------------------------------------------------------- the DSL versions


def dsl_kernels():
    import metalbench as mb
    from metalbench.dsl import (atomic_add, float32, int32, simd_shuffle_down, thread_index_in_simdgroup,
                                thread_position_in_grid, thread_position_in_threadgroup, threadgroup_array,
                                threadgroup_barrier, threadgroup_position_in_grid, threads_per_threadgroup)

    @mb.kernel
    def vector_add(a, b, out: mb.Out):
        i = thread_position_in_grid.x
        if i < out.size:
            out[i] = a[i] + b[i]

    @mb.kernel
    def block_reduce(x, out: mb.Out(shape=lambda x: x.size // 256)):
        sh = threadgroup_array(256, float32)
        tid = thread_position_in_threadgroup.x
        i = thread_position_in_grid.x
        sh[tid] = x[i] if i < x.size else 0.0
        threadgroup_barrier()
        s = threads_per_threadgroup.x // 2
        while s > 0:
            if tid < s:
                sh[tid] += sh[tid + s]
            threadgroup_barrier()
            s //= 2
        if tid == 0:
            out[threadgroup_position_in_grid.x] = sh[0]

    @mb.kernel
    def matmul(A, B, C: mb.Out):
        sA = threadgroup_array((16, 16), float32)
        sB = threadgroup_array((16, 16), float32)
        col = thread_position_in_grid.x
        row = thread_position_in_grid.y
        tx = thread_position_in_threadgroup.x
        ty = thread_position_in_threadgroup.y
        acc = 0.0
        for t in range(A.shape[1] // 16):
            sA[ty, tx] = A[row, t * 16 + tx]
            sB[ty, tx] = B[t * 16 + ty, col]
            threadgroup_barrier()
            for k in range(16):
                acc += sA[ty, k] * sB[k, tx]
            threadgroup_barrier()
        C[row, col] = acc

    @mb.kernel
    def warp_reduce(x, out: mb.Out(shape=lambda x: x.size // 32)):
        i = thread_position_in_grid.x
        v = x[i] if i < x.size else 0.0
        off = 16
        while off > 0:
            v += simd_shuffle_down(v, off)
            off //= 2
        if thread_index_in_simdgroup == 0:
            out[i // 32] = v

    @mb.kernel
    def histogram(x, hist: mb.Out(shape=256, dtype=mb.int32)):
        i = thread_position_in_grid.x
        if i < x.size:
            atomic_add(hist, int32(x[i] * 256.0), 1)

    return {"vector_add": vector_add, "block_reduce": block_reduce, "matmul": matmul,
            "warp_reduce": warp_reduce, "histogram": histogram}


def dsl_launch(name, threads):
    """(inputs, grid, threadgroup, init_value) of the DSL version of ``name``."""
    rng = np.random.default_rng(0)
    f32 = np.float32
    if name == "vector_add":
        return (rng.standard_normal(threads, dtype=f32), rng.standard_normal(threads, dtype=f32)), threads, 256, None
    if name in ("block_reduce", "warp_reduce"):
        return (rng.standard_normal(threads, dtype=f32),), threads, 256, None
    if name == "matmul":
        n = 256
        return (rng.standard_normal((n, n), dtype=f32), rng.standard_normal((n, n), dtype=f32)), \
            (n, threads // n), (16, 16), None
    if name == "histogram":
        return (rng.random(threads, dtype=f32),), threads, 256, 0
    raise KeyError(name)


def time_dsl(k, name, threads, repeat):
    inputs, grid, tg, init = dsl_launch(name, threads)
    kw = dict(grid=grid, threadgroup=tg, backend="sim")
    if init is not None:
        kw["init_value"] = init
    t0 = time.perf_counter()
    k(*inputs, **kw)
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        k(*inputs, **kw)
        times.append(time.perf_counter() - t0)
    med = float(np.median(times))
    return med, first - med


# ----------------------------------------------------------------------------- compile and launch overhead


def compile_times(repeat=5):
    """Median seconds to compile each kernel's IR to the simulator's runnable form, and the
    Numba layer's whole first-launch compile (parse + translate + sim compile)."""
    from metalbench import cuda
    from metalbench.sim import compile_kernel
    out = {}
    ks = load_kernels(cuda)
    for name in SIZES:
        args, (blocks, tpb), _ = make_args(name, 1 << 12 if name != "matmul" else 1 << 12, np.random.default_rng(0))
        sp = ks[name].specialize(*args)
        ts = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            compile_kernel(sp.ir)
            ts.append(time.perf_counter() - t0)
        out[name] = float(np.median(ts))
    return out


def full_compile_times(repeat=5):
    """Median seconds from a fresh ``cuda.jit`` kernel object to its runnable simulator
    program (source parse, translation to IR for the argument types, program compile)."""
    from metalbench import cuda
    out = {}
    for name in SIZES:
        args, _, _ = make_args(name, 1 << 12, np.random.default_rng(0))
        ts = []
        for _ in range(repeat):
            k = load_kernels(cuda)[name]  # a new kernel object: nothing cached
            t0 = time.perf_counter()
            k.specialize(*args).sim()
            ts.append(time.perf_counter() - t0)
        out[name] = float(np.median(ts))
    return out


def launch_overhead(repeat=400):
    """A cached one-threadgroup launch through ``Kernel.__call__`` (the DSL), through the
    Numba layer and through ``SimKernel.run``, minus the kernel body's own execution (the
    generated chunk function the launch runs). The four are timed in turn, round after
    round, so that a change in machine load hits them alike. Returns microseconds:
    {path: (total, body, overhead)} (medians)."""
    from metalbench import cuda
    from metalbench.sim.chunk import Chunk, Launch
    from metalbench.sim.kernel import Buffer
    k = dsl_kernels()["vector_add"]
    a, b, out = np.ones(256, np.float32), np.ones(256, np.float32), np.zeros(256, np.float32)
    k(a, b, grid=256, threadgroup=256, backend="sim")
    sk = k.specialize(a, b).sim()
    lg = Launch((256, 1, 1), (256, 1, 1))
    try:
        fn, _ = sk.program(False, lg.even, lg.linear)  # the variant a launch of this shape runs
    except TypeError:  # simulators before the 1-D variant
        fn, _ = sk.program(False, lg.even)
    bound = sk._bind({"a": Buffer(a), "b": Buffer(b), "out": Buffer(np.zeros(256, np.float32))})

    def body():
        c = Chunk(lg, 0, 1)
        c.bufs, c.meta, c.scalars = bound
        c.checker, c.max_steps = None, 1 << 30
        fn(c)

    nk = load_kernels(cuda)["vector_add"].configure(backend="sim")
    nk[1, 256](a, b, out)
    paths = {"body": body,
             "Kernel.__call__ (DSL)": lambda: k(a, b, grid=256, threadgroup=256, backend="sim"),
             "cuda.jit launch (Numba layer)": lambda: nk[1, 256](a, b, out),
             "SimKernel.run": lambda: sk.run({"a": a, "b": b, "out": out}, (256, 1, 1), (256, 1, 1))}
    ts = {name: [] for name in paths}
    for _ in range(repeat):
        for name, f in paths.items():
            t0 = time.perf_counter()
            f()
            ts[name].append(time.perf_counter() - t0)
    med = {name: float(np.median(v)) * 1e6 for name, v in ts.items()}
    return {name: (med[name], med["body"], med[name] - med["body"]) for name in paths if name != "body"}


def peak_memory(threads=1 << 24):
    """Peak RSS growth of a ``threads``-thread vector add through the Numba layer, measured
    in a fresh process (ru_maxrss is a high-water mark)."""
    code = f"""
import resource, numpy as np, time, sys
sys.path.insert(0, {str(HERE)!r})
from sim_speed import load_kernels
from metalbench import cuda
k = load_kernels(cuda)["vector_add"].configure(backend="sim")
n = {threads}
a = np.ones(n, np.float32); b = np.ones(n, np.float32)
out = np.empty(n, np.float32); out[...] = 0  # touched now: its pages are not the launch's memory
k[1, 256](a[:256], b[:256], out[:256])
r0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
k[n // 256, 256](a, b, out)
dt = time.perf_counter() - t0
r1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
assert (out == 2).all()
import tracemalloc  # the launch's own allocations (NumPy reports its buffers to tracemalloc)
tracemalloc.start()
k[n // 256, 256](a, b, out)
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print(r0, r1, dt, peak)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    r0, r1, dt, peak = r.stdout.split()
    return {"traced_peak_mib": int(peak) / 2**20, "threads": threads, "arrays_mib": 3 * threads * 4 / 2**20, "rss_before_mib": int(r0) / 1024,
            "rss_peak_mib": int(r1) / 1024, "growth_mib": (int(r1) - int(r0)) / 1024, "seconds": float(dt)}


# ----------------------------------------------------------------------------- Numba's simulator


def ensure_numba_venv():
    py = NUMBA_VENV / "bin" / "python"
    if py.exists():
        return py
    print(f"Numba's CUDA simulator is a bench-only dependency: creating {NUMBA_VENV} with "
          f"{' '.join(NUMBA_PINS)} (never installed into metalbench's venv) ...", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(NUMBA_VENV)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", "numpy", *NUMBA_PINS], check=True)
    return py


def numba_worker(names, repeat):
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    from numba import cuda
    import numba
    ks = load_kernels(cuda)
    res = {"numba": numba.__version__}
    for name in names:
        threads = SIZES[name][1]
        kname = name
        if name == "warp_reduce" and not hasattr(cuda, "shfl_down_sync"):
            kname = "warp_reduce_shared"  # numba-cuda's simulator has no shfl_*_sync
        med, _, ok = time_launches(ks[kname], name, threads, repeat, warm=False)  # nothing to compile
        res[name] = {"threads": threads, "seconds": med, "rate": threads / med, "ok": ok, "kernel": kname}
    print(json.dumps(res))


def run_numba(names, repeat):
    py = ensure_numba_venv()
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([str(py), __file__, "--numba-worker", "--repeat", str(repeat), *names],
                       capture_output=True, text=True, env=env)
    if r.returncode:
        sys.exit(f"Numba's simulator run failed:\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- report


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kernels", nargs="*", help=f"some of {', '.join(SIZES)}")
    ap.add_argument("--compare-numba", action="store_true", help="also time Numba's CUDA simulator")
    ap.add_argument("--repeat", type=int, default=7, help="runs per measurement (median)")
    ap.add_argument("--numba-repeat", type=int, default=3, help="runs per Numba-simulator measurement")
    ap.add_argument("--numba-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--no-extras", action="store_true", help="skip compile/overhead/memory measurements")
    a = ap.parse_args()
    names = a.kernels or list(SIZES)
    if a.numba_worker:
        numba_worker(names, a.repeat)
        return
    import platform
    load = os.getloadavg()
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"{time.strftime('%Y-%m-%d %H:%M')}, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(f"# median of {a.repeat} runs (Numba's simulator: {a.numba_repeat})")
    nb = run_numba(names, a.numba_repeat) if a.compare_numba else None

    from metalbench import cuda
    ks = load_kernels(cuda)
    for k in ks.values():
        if hasattr(k, "configure"):
            k.configure(backend="sim")
    dsl = dsl_kernels()
    rows = []
    for name in names:
        threads = SIZES[name][0]
        med, comp, ok = time_launches(ks[name], name, threads, a.repeat)
        dmed, _ = time_dsl(dsl[name], name, threads, a.repeat)
        row = {"kernel": name, "threads": threads, "numba_layer": threads / med, "dsl": threads / dmed, "ok": ok,
               "first_launch_extra": comp}
        if nb:
            row["numba_sim"] = nb[name]["rate"]
            row["numba_threads"] = nb[name]["threads"]
            row["numba_ok"] = nb[name]["ok"]
        rows.append(row)
    hdr = "| kernel | threads | metalbench sim, Numba layer (threads/s) | metalbench sim, DSL (threads/s) |"
    sep = "|---|---:|---:|---:|"
    if nb:
        hdr += f" Numba {nb['numba']} CUDA simulator (threads/s; threads) | ratio (Numba layer / DSL) |"
        sep += "---:|---:|"
    hdr += " target |"
    sep += "---|"
    print(hdr)
    print(sep)
    for r in rows:
        t = TARGETS.get(r["kernel"])
        line = f"| {r['kernel']} | {r['threads']:,} | {r['numba_layer']:.3g} | {r['dsl']:.3g} |"
        ok_t = [t is None or min(r["numba_layer"], r["dsl"]) >= t]
        if nb:
            ra, rb = r["numba_layer"] / r["numba_sim"], r["dsl"] / r["numba_sim"]
            ok_t.append(min(ra, rb) >= 1000)
            note = "*" if nb[r["kernel"]].get("kernel", r["kernel"]) != r["kernel"] else ""
            line += f" {r['numba_sim']:.3g}{note} ({r['numba_threads']:,}) | {ra:,.0f}x / {rb:,.0f}x |"
        tgt = (f">= {t:.0e}" if t else "") + (" and " if t and nb else "") + (">= 1000x" if nb else "")
        line += f" {tgt or '-'}: {'ok' if all(ok_t) else 'MISSED'} |"
        if not r["ok"] or (nb and not r["numba_ok"]):
            line += " WRONG RESULT"
        print(line)
    if nb and any(v.get("kernel") == "warp_reduce_shared" for v in nb.values() if isinstance(v, dict)):
        print("\n\\* Numba's CUDA simulator has no warp shuffles (no `shfl_*_sync`): it ran the same per-warp "
              "tree through shared memory and `syncthreads` (`warp_reduce_shared`).")
    if a.no_extras:
        return
    print()
    ct = compile_times()
    ft = full_compile_times()
    print("compile from source (fresh cuda.jit object: parse, translate to IR, simulator program), median ms: " +
          ", ".join(f"{k} {v * 1e3:.2f}" for k, v in ft.items()) +
          f" (target <= 20: {'ok' if max(ft.values()) <= 0.02 else 'MISSED'})")
    print("compile (kernel IR -> runnable simulator program), median ms: " +
          ", ".join(f"{k} {v * 1e3:.2f}" for k, v in ct.items()) +
          f" (target <= 20: {'ok' if max(ct.values()) <= 0.02 else 'MISSED'})")
    ov = launch_overhead()
    for k, (tot, body, o) in ov.items():
        print(f"cached one-threadgroup launch via {k}: {tot:.0f} us total, body {body:.0f} us, "
              f"overhead {o:.0f} us")
    pm = peak_memory()
    from metalbench.sim.kernel import CHUNK_LANES
    print(f"16M-thread vector add (Numba layer): {pm['seconds']:.2f} s, arrays (a, b, out) {pm['arrays_mib']:.0f} MiB, "
          f"peak RSS {pm['rss_before_mib']:.0f} -> {pm['rss_peak_mib']:.0f} MiB "
          f"(+{pm['growth_mib']:.1f} MiB during the launch; its allocations peak at "
          f"{pm['traced_peak_mib']:.1f} MiB (tracemalloc); chunks of {CHUNK_LANES} lanes)")


if __name__ == "__main__":
    main()
