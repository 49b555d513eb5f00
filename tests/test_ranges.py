"""passes/ranges.py (integer ranges, signed loop counters) and passes/warps.py (full-warp
SIMD-group calls), checked against the simulator: the rewritten IR computes the same
bits as the original, every counter value a launch produces lies in the range the
analysis claimed, and every call claimed to run on a full SIMD-group does."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metalbench import ir
from metalbench import types as T
from metalbench.codegen import cuda, msl
from metalbench.passes.ranges import LaunchFacts, Ranges, signed_loops
from metalbench.passes.warps import converged_calls
from metalbench.sim import Buffer, compile_kernel
from metalbench.sim.irbuild import KernelBuilder, attr, c, call, select, tid_x

U32, I32 = T.uint32, T.int32
TG = 64


def _run(k, s0, n, grid=(TG * 2, 1, 1), tg=(TG, 1, 1)):
    """Outputs (hash, lo, hi, count per thread) of a launch, or the error's type."""
    g = grid[0]
    bufs = {"h": np.zeros(g, np.uint32), "lo": np.full(g, 0xFFFFFFFF, np.uint32),
            "hi": np.zeros(g, np.uint32)}
    args = {"s0": np.uint32(s0), "n": np.uint32(n), **{k_: Buffer(v) for k_, v in bufs.items()}}
    try:
        compile_kernel(k).run(args, grid, tg)
    except Exception as e:   # a runaway loop must stay one in both versions
        return type(e).__name__
    return {k_: v.copy() for k_, v in bufs.items()}


_START = {
    "tid": lambda kb, s0, n: tid_x(),
    "local": lambda kb, s0, n: attr("thread_index_in_threadgroup"),
    "lane": lambda kb, s0, n: attr("thread_index_in_simdgroup"),
    "s0": lambda kb, s0, n: s0,
    "s0&1023": lambda kb, s0, n: s0 & 1023,
}


def _start(kind, base, kb, s0, n):
    """The loop's start: ``base`` plus a thread-dependent or runtime part."""
    e = _START[kind](kb, s0, n)
    return e if kind == "s0" else e + base


def loop_kernel(start, stop_kind, stop_const, step, body_kind, cfor, base=0):
    """out[tid] = hash of the counter's values; lo/hi: their extremes (atomics)."""
    kb = KernelBuilder("loops")
    s0 = kb.scalar("s0", U32)
    n = kb.scalar("n", U32)
    for b in ("h", "lo", "hi"):
        kb.buf(b, U32, out=True)
    i = kb.let("i", tid_x())
    st_ = _start(start, base, kb, s0, n)
    stop = {"const": c(stop_const, U32), "n": n, "min": call("min", n, c(stop_const, U32))}[stop_kind]
    if cfor:
        v = ir.Var("j", U32)
        s = kb.emit(ir.CFor([ir.Decl(v, st_.n)], ir.BinOp("<", v, stop.n, T.bool_),
                            [ir.Assign(v, ir.BinOp("+", v, ir.Const(step, U32), U32))], []))
        kb.stack.append(s.body)
        j = type(st_)(v)
    else:
        v = ir.Var("j", U32)
        s = kb.emit(ir.For(v, st_.n, stop.n, ir.Const(step, U32), []))
        kb.stack.append(s.body)
        j = type(st_)(v)
    h = kb.load("h", i)
    val = {"plain": j, "mix": (j >> 3) ^ (j * 2654435761), "div": j / 7 + j % 5,
           "neg": -j + (j - 5)}[body_kind]
    kb.store("h", i, h * 31 + val)
    kb.emit(ir.ExprStmt(kb.atomic("min", "lo", i, j).n))
    kb.emit(ir.ExprStmt(kb.atomic("max", "hi", i, j).n))
    kb.stack.pop()
    return kb.build(), s


# around the edges of int and uint; every loop starts within ~1200 of its base and
# stops within 40 steps of it, so no launch runs long (and none wraps for ever)
_BASES = [0, 1000, 2 ** 31 - 4096, 2 ** 31 - 300, 2 ** 31 + 5, 2 ** 32 - 2 ** 31 // 2, 2 ** 32 - 2 ** 20]


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(start=st.sampled_from(sorted(_START)), stop_kind=st.sampled_from(["const", "n", "min"]),
       base=st.sampled_from(_BASES), trips=st.integers(0, 40), step=st.sampled_from([1, 3, 64, 256, 4096, 2 ** 24]),
       s0_off=st.integers(0, 1000), n_off=st.integers(0, 300),
       body=st.sampled_from(["plain", "mix", "div", "neg"]), cfor=st.booleans())
def test_signed_loops_keep_every_bit(start, stop_kind, base, trips, step, s0_off, n_off, body, cfor):
    stop_const = min(base + trips * step, 2 ** 32 - 1 - step)
    s0 = base + s0_off
    n = min(base + n_off, 2 ** 32 - 1 - step)
    k, loop = loop_kernel(start, stop_kind, stop_const, step, body, cfor, base)
    facts = LaunchFacts()
    ranges = Ranges(k.body, facts)
    new = signed_loops(k, facts)
    a, b = _run(k, s0, n), _run(new, s0, n)
    if isinstance(a, str):
        assert a == b
        return
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    # soundness: every counter value seen lies in the claimed body range
    claimed = ranges.loops.get(id(loop))
    ran = a["hi"] >= a["lo"]
    if claimed is not None and claimed != "bottom" and ran.any():
        assert int(a["lo"][ran].min()) >= claimed[0] and int(a["hi"][ran].max()) <= claimed[1]
    if new is not k:     # rewritten: the counter is int32 in the copy, untouched in the original
        assert loop.var.type == U32


def test_softmax_style_loop_becomes_int_in_both_dialects():
    k, _ = loop_kernel("local", "const", 4096, 256, "plain", cfor=False)
    for text in (msl.render(k).body, cuda.render(k).body):
        assert "for (int" in text and "j < 4096;" in text and "j += 256)" in text
    # the original IR is not changed (the simulator runs it)
    assert k.body[1].var.type == U32


@pytest.mark.parametrize("start, stop_kind, stop, step", [
    ("s0", "const", 4096, 1),               # s0 may exceed INT_MAX
    ("local", "n", 0, 256),                  # n may be 2**32 - 1
    ("local", "const", 2 ** 31 - 100, 256),  # the last increment passes INT_MAX
])
def test_unprovable_loops_stay_unsigned(start, stop_kind, stop, step):
    k, _ = loop_kernel(start, stop_kind, stop, step, "plain", cfor=False)
    assert signed_loops(k) is k
    assert "for (uint j" in msl.render(k).body


def test_min_bounds_a_runtime_stop():
    k, _ = loop_kernel("local", "min", 65536, 32, "plain", cfor=True)
    assert "for (int j = " in msl.render(k).body


def test_launch_facts_bound_thread_attributes():
    f = LaunchFacts((256, 1, 1), exact_grid=True)
    assert f.attribute("thread_index_in_threadgroup", 0) == (0, 255)
    assert f.attribute("simdgroup_index_in_threadgroup", 0) == (0, 7)
    assert f.attribute("threads_per_threadgroup", 0) == (256, 256)
    assert LaunchFacts((256, 1, 1)).attribute("threads_per_threadgroup", 0) == (1, 256)
    assert LaunchFacts().attribute("thread_position_in_threadgroup", 2) == (0, 1023)
    assert f.full_warps and not LaunchFacts((256, 1, 1)).full_warps and not LaunchFacts((48, 1, 1), True).full_warps


# ----------------------------------------------------------------------------- full warps

def _probe(kb, site):
    """At a SIMD call site: count launches of that site where the SIMD-group was not full."""
    full = call("simd_sum", c(1, U32)).eq(32)
    kb.emit(ir.ExprStmt(kb.atomic("add", "bad", c(site, U32), select(full, c(0, U32), c(1, U32))).n))


def random_control_kernel(shape):
    """A kernel whose SIMD calls sit under the control flow ``shape`` describes; each call
    site is probed (its own ``simd_sum`` call plus a counter of partial SIMD-groups)."""
    kb = KernelBuilder("ctl")
    kb.scalar("s0", U32)
    kb.buf("x", T.float32)
    kb.buf("bad", U32, out=True)
    kb.buf("o", T.float32, out=True)
    i = kb.let("i", tid_x())
    lane = attr("thread_index_in_simdgroup")
    sg = attr("simdgroup_index_in_threadgroup")
    conds = {"uniform": sg.eq(1), "divergent": lane < 7, "tg": attr("threadgroup_position_in_grid").x.eq(0),
             "data": kb.load("x", c(3, U32)) > 0.0}
    sites = []

    def site():
        sites.append(len(sites))
        _probe(kb, sites[-1])
        kb.store("o", i, call("simd_sum", kb.load("x", i)))
    for op, arg in shape:
        if op == "call":
            site()
        elif op == "if":
            with kb.if_(conds[arg]):
                site()
        elif op == "return":
            with kb.if_(conds[arg]):
                kb.ret()
        elif op == "loop":
            start = lane if arg == "divergent" else c(0, U32)
            v = ir.Var(f"j{len(sites)}", U32)
            s = kb.emit(ir.For(v, start.n, ir.Const(3, U32), ir.Const(1, U32), []))
            kb.stack.append(s.body)
            site()
            kb.stack.pop()
        elif op == "select":
            v = select(conds[arg], call("simd_max", kb.load("x", i)), kb.load("x", i))
            kb.store("o", i, v)
    site()
    return kb.build(), len(sites)


_SHAPE = st.lists(st.tuples(st.sampled_from(["call", "if", "return", "loop", "select"]),
                            st.sampled_from(["uniform", "divergent", "tg", "data"])), max_size=5)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(shape=_SHAPE, tg=st.sampled_from([32, 64, 96, 128]), sign=st.sampled_from([1.0, -1.0]))
def test_converged_calls_run_on_full_simdgroups(shape, tg, sign):
    k, nsites = random_control_kernel(shape)
    facts = LaunchFacts((tg, 1, 1), exact_grid=True)
    conv = converged_calls(k, facts)
    x = (np.arange(4 * tg, dtype=np.float32) - 1) * sign
    bad = np.zeros(nsites, np.uint32)
    compile_kernel(k).run({"s0": np.uint32(0), "x": Buffer(x), "bad": Buffer(bad),
                           "o": Buffer(np.zeros(4 * tg, np.float32))}, (4 * tg, 1, 1), (tg, 1, 1))
    # the probe's own simd_sum sits just before the site's call, under the same control
    probes = [n for n in ir.walk(k.body) if isinstance(n, ir.Call) and n.name == "simd_sum"
              and isinstance(n.args[0], ir.Const)]
    assert len(probes) == nsites
    for s, p in enumerate(probes):
        if id(p) in conv:
            assert bad[s] == 0, f"site {s} claimed converged, ran on a partial SIMD-group: {shape}"


def test_converged_calls_cases():
    softmax_like, _ = random_control_kernel([("call", ""), ("if", "uniform"), ("loop", "uniform")])
    assert len(converged_calls(softmax_like, LaunchFacts((256, 1, 1), True))) == 8
    assert converged_calls(softmax_like, LaunchFacts((256, 1, 1), False)) == set()
    assert converged_calls(softmax_like, LaunchFacts(None, True)) == set()
    after_return, _ = random_control_kernel([("return", "divergent"), ("call", "")])
    assert converged_calls(after_return, LaunchFacts((64, 1, 1), True)) == set()
    uniform_return, _ = random_control_kernel([("return", "tg"), ("call", "")])
    assert len(converged_calls(uniform_return, LaunchFacts((64, 1, 1), True))) == 4
    in_branch, _ = random_control_kernel([("if", "divergent")])
    assert len(converged_calls(in_branch, LaunchFacts((64, 1, 1), True))) == 2   # the last site only
    lazy, _ = random_control_kernel([("select", "divergent")])
    names = [n.name for n in ir.walk(lazy.body) if isinstance(n, ir.Call) and id(n) in
             converged_calls(lazy, LaunchFacts((64, 1, 1), True))]
    assert "simd_max" not in names


def test_cuda_prints_full_warp_reductions_only_when_proved():
    k, _ = random_control_kernel([("if", "divergent"), ("call", "")])
    full = cuda.render(k, exact_grid=True, threadgroup=(64, 1, 1)).body
    # (a float32 reduction takes the scalar butterfly, mb_simd_reduce_full1)
    assert full.count("mb_simd_reduce_full1(") == 4 and full.count("mb_simd_reduce(") == 2
    partial = cuda.render(k, exact_grid=False, threadgroup=(64, 1, 1)).body
    assert "mb_simd_reduce_full" not in partial
    # the block size is written in: a 1-D threadgroup's index is threadIdx.x
    assert "const uint32_t thread_index_in_simdgroup = threadIdx.x & 31u;" in full

