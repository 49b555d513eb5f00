"""The registry walked builtin by builtin: every builtin types, runs on the simulator
against its declared reference model (on random and edge-case inputs: NaN, +-inf, -0,
zero, integer min/max) for every argument type it accepts, and prints for Metal and
CUDA; the printed MSL passes the libclang shim check and the CUDA the libclang CUDA
check. A declaration that lacks a backend fails at registration."""
from __future__ import annotations

import inspect
import zlib

import numpy as np
import pytest

from metalbench import ir, msl_check
from metalbench import types as T
from metalbench.builtins import Builtin, RegistrationError, registry
from metalbench.builtins import numerics as N
from metalbench.builtins.core import Registry, float_math
from metalbench.codegen import cuda, cuda_check, msl
from metalbench.errors import KernelTypeError, Source, Span
from metalbench.sim import Buffer, compile_kernel

CALLS = [b for b in registry.all() if b.kind == "call"]
SIMDS = [b for b in registry.all() if b.kind == "simd"]
LANES = 512
u32 = T.uint32


def _ids(bs):
    return [b.name for b in bs]


# ----------------------------------------------------------------------------- inputs

def _edges(t: T.ScalarType) -> list:
    if t.is_bool:
        return [False, True]
    if t.is_float:
        fi = np.finfo(np.float32) if t.name != "float16" else np.finfo(np.float16)
        big = {"float16": 65504.0, "float64": 1.7e308}.get(t.name, 3e38)
        return [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -3.0, 1e-3, 100.0, -100.0,
                big, float(fi.tiny), 0.49999997, 2.5, -2.5, 7.0]
    info = np.iinfo(t.np)
    e = [0, 1, 2, 3, 7, int(info.max), int(info.max) - 1, 31, 32, 64]
    if t.is_signed:
        e += [-1, -2, int(info.min), int(info.min) + 1, -7]
    return e


def _values(t: T.ScalarType, k: int, nargs: int, rng) -> np.ndarray:
    """Lane values of argument ``k``: every combination of edge cases first (crossed with
    the other arguments'), then random values."""
    edges = _edges(t)
    E = len(edges)
    lane = np.arange(LANES)
    idx = (lane // (E ** k)) % E
    v = np.array(edges, dtype=np.float64 if t.is_float else object)[idx]
    ncross = min(LANES // 2, E ** nargs)
    rand = np.empty(LANES, dtype=v.dtype)
    if t.is_float:
        rand = rng.standard_normal(LANES) * np.where(rng.random(LANES) < 0.5, 3.0, 300.0)
    elif t.is_bool:
        rand = rng.random(LANES) < 0.5
    else:
        info = np.iinfo(t.np)
        rand = rng.integers(int(info.min), int(info.max), LANES, endpoint=True, dtype=np.int64
                            if t.bits < 64 or t.is_signed else np.uint64).astype(object)
    out = np.where(lane < ncross, v, rand)
    if t.is_float:
        with np.errstate(all="ignore"):
            return N.out(out.astype(np.float64), t.np)
    if t.is_bool:
        return out.astype(bool)
    return N.to_dt(out.astype(object), t.np) if t.bits == 64 else np.asarray(out, np.int64).astype(t.np)


def _ncomp(t) -> int:
    return t.n if isinstance(t, T.VectorType) else 1


def _wide(a: np.ndarray, t: T.ScalarType):
    """Values for a reference model: float64 for floats, exact Python ints for integers."""
    if t.is_float:
        return a.astype(np.float32).astype(np.float64) if t.name == "bfloat16" else a.astype(np.float64)
    if t.is_bool:
        return a.astype(bool)
    return np.array([int(x) for x in a], dtype=object)


def _convert(a: np.ndarray, src: T.ScalarType, dst: T.ScalarType) -> np.ndarray:
    """C conversion of the sample's values to the parameter type (ints to float here)."""
    if src == dst:
        return a
    if dst.is_float:
        with np.errstate(all="ignore"):
            return N.out(a.astype(np.float64) if src.bits < 64 else np.asarray(a, np.float64), dst.np)
    if dst.is_bool:
        return a != 0
    return N.to_dt(np.array([int(x) for x in a], dtype=object), dst.np)


# ----------------------------------------------------------------------------- kernels

def _load(buf, t, i):
    if isinstance(t, T.VectorType):
        base = ir.BinOp("*", i, ir.Const(t.n, u32), u32)
        return ir.VecCons(t, [ir.Load(buf, ir.BinOp("+", base, ir.Const(c, u32), u32), t.elem)
                              for c in range(t.n)])
    return ir.Load(buf, i, t)


def _store(buf, t, i, v):
    if isinstance(t, T.VectorType):
        base = ir.BinOp("*", i, ir.Const(t.n, u32), u32)
        return [ir.Store(buf, ir.BinOp("+", base, ir.Const(c, u32), u32), ir.Swizzle(v, "xyzw"[c], t.elem))
                for c in range(t.n)]
    return [ir.Store(buf, i, v)]


def _call(b, sig, args):
    conv = [a if a.type == p else ir.Cast(p, a) for a, p in zip(args, sig.params)]
    return ir.Call(b.name, conv, sig.result)


def _kernel(b, guard=None):
    """One kernel running ``b`` on every sample: inputs ``a{s}_{k}``, output ``o{s}``."""
    i = ir.Var("i", u32)
    params, body = [], [ir.Decl(i, ir.Swizzle(ir.ThreadAttr("thread_position_in_grid", T.uint3), "x", u32))]
    for s, types in enumerate(b.rule.samples):
        sig = b.typecheck(list(types))
        args = []
        for k, t in enumerate(types):
            params.append(ir.Param(f"a{s}_{k}", "buffer", T.elem_of(t)))
            v = ir.Var(f"v{s}_{k}", t)     # loaded by every lane, before any divergence
            body.append(ir.Decl(v, _load(f"a{s}_{k}", t, i)))
            args.append(v)
        params.append(ir.Param(f"o{s}", "buffer", T.elem_of(sig.result), is_output=True))
        stores = _store(f"o{s}", sig.result, i, _call(b, sig, args))
        body += [ir.If(guard, stores)] if guard is not None else stores
    params = [p for p in params if not p.is_output] + [p for p in params if p.is_output]
    return ir.KernelIR(f"k_{b.name}", params, body)


# ----------------------------------------------------------------------------- elementwise builtins

def _ulp(v: np.ndarray, t: T.ScalarType) -> np.ndarray:
    m, lo = {"float32": (23, -126), "float16": (10, -14), "bfloat16": (7, -126), "float64": (52, -1022)}[t.name]
    with np.errstate(all="ignore"):
        e = np.floor(np.log2(np.abs(v)))
    e = np.where(np.isfinite(e), np.maximum(e, lo), lo)
    return np.exp2(e - m)


def _compare(b, s, got, want, rt: T.ScalarType, inputs):
    where = f"{b.name} sample {s} ({rt.name})"
    if rt.is_float:
        # double libm functions (NumPy's, Python's math) are faithful, not correctly rounded
        tol = max(b.tol_ulp, 4.0) if rt.name == "float64" else b.tol_ulp
        w = np.asarray(want, np.float64)
        with np.errstate(all="ignore"):
            w = N.out(w, rt.np).astype(np.float64)
            g = got.astype(np.float64)
            ok = (g == w) | (np.isnan(g) & np.isnan(w)) | (np.abs(g - w) <= tol * _ulp(w, rt))
    elif rt.is_bool:
        g, w = got, np.asarray(want).astype(bool)
        ok = g == w
    else:
        w = N.to_dt(np.asarray(want, dtype=object), rt.np)
        g = got
        ok = g == w
    if not ok.all():
        bad = np.flatnonzero(~ok)[:6]
        rows = [f"  args {[x[j] for x in inputs]}: got {g[j]!r}, model {w[j]!r}" for j in bad]
        pytest.fail(f"{where}: {int((~ok).sum())} of {ok.size} lanes differ\n" + "\n".join(rows))


def _ref_kwargs(b, t):
    return {"dt": T.elem_of(t).np} if "dt" in inspect.signature(b.ref).parameters else {}


@pytest.mark.parametrize("b", CALLS, ids=_ids(CALLS))
def test_builtin_matches_its_model_on_the_simulator(b):
    rng = np.random.default_rng(zlib.crc32(b.name.encode()))
    k = _kernel(b)
    bufs, expect = {}, []
    for s, types in enumerate(b.rule.samples):
        sig = b.typecheck(list(types))
        comps, model_args, shown = [], [], []
        for kk, t in enumerate(types):
            e, n = T.elem_of(t), _ncomp(t)
            cols = [_values(e, kk, len(types), rng) if c == 0 else rng.permutation(_values(e, kk, len(types), rng))
                    for c in range(n)]
            bufs[f"a{s}_{kk}"] = np.stack(cols, axis=1).reshape(-1).copy()
            pe = T.elem_of(sig.params[kk])
            conv = [_convert(c, e, pe) for c in cols]
            comps.append([_wide(c, pe) for c in conv])
            shown.append(cols[0])
        rt = sig.result
        bufs[f"o{s}"] = np.zeros(LANES * _ncomp(rt), T.elem_of(rt).np)
        kw = _ref_kwargs(b, sig.params[0])
        np.seterr(all="ignore")
        if b.componentwise:
            want = [b.ref(*[c[j] if len(c) > 1 else c[0] for c in comps], **kw) for j in range(_ncomp(rt))]
        else:
            r = b.ref(*comps, **kw)
            want = r if isinstance(r, list) else [r]
        expect.append((s, rt, want, shown))
    np.seterr(all="warn")
    compile_kernel(k).run({n: Buffer(v) for n, v in bufs.items()}, (LANES, 1, 1), (64, 1, 1))
    for s, rt, want, shown in expect:
        got = bufs[f"o{s}"].reshape(LANES, _ncomp(rt))
        for c, w in enumerate(want):
            _compare(b, s, got[:, c], np.broadcast_to(np.asarray(w), (LANES,)), T.elem_of(rt), shown)


# ----------------------------------------------------------------------------- SIMD-group builtins

TG, GRID = 48, 96          # simdgroups of 32 and 16 lanes


def _simd_layout():
    """(simdgroups, 32) thread indices (-1: no such lane)."""
    rows = []
    for g in range(GRID // TG):
        for s0 in range(0, TG, 32):
            rows.append([g * TG + s0 + j if s0 + j < TG else -1 for j in range(32)])
    return np.array(rows)


@pytest.mark.parametrize("b", SIMDS, ids=_ids(SIMDS))
def test_simd_builtin_matches_its_model_on_the_simulator(b):
    rng = np.random.default_rng(zlib.crc32(b.name.encode()))
    i = ir.Var("i", u32)
    guard = ir.BinOp("!=", ir.BinOp("%", i, ir.Const(3, u32), u32), ir.Const(1, u32), T.bool_)
    k = _kernel(b, guard)
    lay = _simd_layout()
    exist = lay >= 0
    active = exist & (np.where(exist, lay, 0) % 3 != 1)
    bufs, expect = {}, []
    for s, types in enumerate(b.rule.samples):
        sig = b.typecheck(list(types))
        cols = []
        for kk, t in enumerate(types):
            e, n = T.elem_of(t), _ncomp(t)
            if kk == 1:                     # a lane, delta or mask: in range and past it
                v = [rng.integers(0, 40, GRID).astype(e.np) for _ in range(n)]
            elif e.is_bool:
                v = [rng.random(GRID) < 0.6 for _ in range(n)]
            elif e.is_float:
                v = [N.out(rng.uniform(0.5, 1.5, GRID), e.np) for _ in range(n)]
            else:
                v = [rng.integers(-3, 4, GRID).astype(e.np) if e.is_signed else
                     rng.integers(0, 4, GRID).astype(e.np) for _ in range(n)]
            bufs[f"a{s}_{kk}"] = np.stack(v, axis=1).reshape(-1).copy()
            cols.append(v)
        rt = sig.result
        bufs[f"o{s}"] = np.zeros(GRID * _ncomp(rt), T.elem_of(rt).np)
        want = []
        for c in range(_ncomp(rt)):
            vals = cols[0][c if len(cols[0]) > 1 else 0] if cols else np.zeros(GRID)
            vals = np.where(exist, vals[np.where(exist, lay, 0)], 0)
            if T.elem_of(rt).is_float:
                vals = vals.astype(np.float64)
            if getattr(b.ref, "shuffle", False):
                lanes = np.where(exist, cols[1][0][np.where(exist, lay, 0)], 0).astype(np.int64)
                want.append(b.ref(vals, lanes, active, exist))
            else:
                want.append(b.ref(vals, active))
        expect.append((s, rt, want))
    compile_kernel(k).run({n: Buffer(v) for n, v in bufs.items()}, (GRID, 1, 1), (TG, 1, 1))
    for s, rt, want in expect:
        got = bufs[f"o{s}"].reshape(GRID, _ncomp(rt))
        for c, w in enumerate(want):
            g = np.where(exist, got[np.where(exist, lay, 0), c], 0)
            _compare(b, s, g[active], np.asarray(w)[active], T.elem_of(rt), [])


# ----------------------------------------------------------------------------- printing

def _all_calls_kernel(double: bool = True):
    """Every call and SIMD builtin on every sample, in one kernel (one shim check);
    ``double=False`` leaves out the float64 samples (Metal has no double)."""
    i = ir.Var("i", u32)
    body = [ir.Decl(i, ir.Swizzle(ir.ThreadAttr("thread_position_in_grid", T.uint3), "x", u32))]
    params = []
    for b in CALLS + SIMDS:
        for s, types in enumerate(b.rule.samples):
            if not double and T.float64 in [T.elem_of(t) for t in types]:
                continue
            sig = b.typecheck(list(types))
            args = []
            for kk, t in enumerate(types):
                nm = f"{b.name}_{s}_{kk}"
                params.append(ir.Param(nm, "buffer", T.elem_of(t)))
                args.append(_load(nm, t, i))
            out = f"{b.name}_{s}_o"
            params.append(ir.Param(out, "buffer", T.elem_of(sig.result), is_output=True))
            body += _store(out, sig.result, i, _call(b, sig, args))
    params = [p for p in params if not p.is_output] + [p for p in params if p.is_output]
    return ir.KernelIR("all_builtins", params, body)


def test_every_builtin_prints_for_metal_and_passes_the_shim_check():
    r = msl.render(_all_calls_kernel(double=False))
    diags = msl_check.check(r)
    assert diags == [], "\n".join(map(str, diags))


def test_every_builtin_prints_for_cuda_and_passes_the_cuda_check():
    r = cuda.render(_all_calls_kernel())
    diags = cuda_check.check(r, use_nvcc=False)
    assert diags == [], "\n".join(map(str, diags))


# ----------------------------------------------------------------------------- typing

SPAN = Span(Source("user.metal", "r = f(x);\n", 7), 7, 4, 7, 8)


@pytest.mark.parametrize("b", CALLS + SIMDS, ids=_ids(CALLS + SIMDS))
def test_builtin_typing(b):
    for types in b.rule.samples:            # every sample types, to its parameter types
        sig = b.typecheck(list(types), SPAN)
        assert len(sig.params) == len(types) and sig.result is not None
    with pytest.raises(KernelTypeError, match=rf"{b.name}\(\) takes {b.arity} argument") as e:
        b.typecheck(list(b.rule.samples[0]) + [T.int32], SPAN)
    assert e.value.span is SPAN and "line 7" in str(e.value)


@pytest.mark.parametrize("b", [b for b in CALLS if b.group == "Integer"], ids=lambda b: b.name)
def test_integer_builtins_reject_floats_at_the_users_span(b):
    types = [T.float32] + list(b.rule.samples[0][1:])
    with pytest.raises(KernelTypeError, match=rf"{b.name}\b.* integer.*got float") as e:
        b.typecheck(types, SPAN)
    assert e.value.span is SPAN


def test_geometric_builtins_reject_scalars():
    with pytest.raises(KernelTypeError, match="float vectors"):
        registry.get("dot").typecheck([T.float32, T.float32], SPAN)


# ----------------------------------------------------------------------------- registration

def _decl(**over):
    kw = dict(group="Float math", doc="d.", example="f(x)", rule=float_math(1),
              sim=lambda a, dt: a[0], msl=lambda p, a, t: "f", cuda=lambda p, a, t: "f", ref=np.abs)
    kw.update(over)
    return Builtin("twice", **kw)


@pytest.mark.parametrize("missing", ["sim", "msl", "cuda", "rule", "ref"])
def test_a_builtin_without_a_backend_fails_at_registration(missing):
    with pytest.raises(RegistrationError, match=f"has no .*{missing}"):
        Registry().add(_decl(**{missing: None}))


def test_a_builtin_added_to_the_typing_table_alone_fails_at_registration():
    with pytest.raises(RegistrationError, match="has no sim, msl, cuda"):
        Registry().add(_decl(sim=None, msl=None, cuda=None))


def test_registration_rejects_duplicates_and_unknown_groups():
    r = Registry()
    r.add(_decl())
    with pytest.raises(RegistrationError, match="declared twice"):
        r.add(_decl())
    with pytest.raises(RegistrationError, match="unknown group"):
        Registry().add(_decl(group="Misc"))
    with pytest.raises(RegistrationError, match="alias 'math.exp' already means"):
        r2 = Registry()
        r2.add(_decl(python=("math.exp",)))
        r2.add(Builtin(**{**_decl().__dict__, "name": "other", "python": ("math.exp",)}))


def test_registry_order_is_stable_and_names_unique():
    names = [b.name for b in registry.all()]
    assert len(names) == len(set(names))
    assert names == [b.name for b in registry.all()]
