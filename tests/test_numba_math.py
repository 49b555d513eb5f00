"""Numba's math and bit intrinsics composed from IR (frontend/python/pyfuncs.py,
numba_compat/bitops.py): against Python's math module (the C library) on random and
edge-case values, float64 and float32; warp matches against a model of the warp."""
import math
import operator
import os

import numpy as np
import pytest

from metalbench import cuda


@pytest.fixture(autouse=True)
def _backend():
    cuda.set_backend(os.environ.get("METALBENCH_TEST_BACKEND", "sim"))
    yield
    cuda.set_backend(None)


def _values(dtype, n=400, seed=7):
    rng = np.random.default_rng(seed)
    info = np.finfo(dtype)
    v = np.concatenate([rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n),
                        [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -2.5, np.inf, -np.inf, np.nan,
                         float(info.tiny), float(info.tiny) / 8, -float(info.tiny) / 3, float(info.max)]])
    return v.astype(dtype)


@cuda.jit
def unary_math(x, frac, whole, mant, expo, deg, rad):
    i = cuda.grid(1)
    if i < x.size:
        f, w = math.modf(x[i])
        frac[i] = f
        whole[i] = w
        m, e = math.frexp(x[i])
        mant[i] = m
        expo[i] = e
        deg[i] = math.degrees(x[i])
        rad[i] = math.radians(x[i])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_modf_frexp_degrees_radians(dtype):
    x = _values(dtype)
    outs = [np.zeros_like(x) for _ in range(2)] + [np.zeros_like(x), np.zeros(x.size, np.int32)] + \
        [np.zeros_like(x) for _ in range(2)]
    unary_math[4, 128](x, *outs)
    frac, whole, mant, expo, deg, rad = outs
    for k, v in enumerate(x.tolist()):
        fw = math.modf(v) if math.isfinite(v) else (math.copysign(0.0, v) if math.isinf(v) else v, v)
        np.testing.assert_array_equal([frac[k], whole[k]], np.array(fw, dtype), err_msg=f"modf({v})")
        if math.isfinite(v):
            m, e = math.frexp(v)
            assert (mant[k], expo[k]) == (dtype(m), e), (v, mant[k], expo[k], m, e)
        else:
            assert expo[k] == 0 and (np.isnan(mant[k]) if math.isnan(v) else mant[k] == v)
    c_deg, c_rad = dtype(180.0 / math.pi), dtype(math.pi / 180.0)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(deg, x * c_deg)
        np.testing.assert_array_equal(rad, x * c_rad)


@cuda.jit
def binary_math(x, y, rem, nxt):
    i = cuda.grid(1)
    if i < x.size:
        rem[i] = math.remainder(x[i], y[i])
        nxt[i] = math.nextafter(x[i], y[i])


def test_remainder_and_nextafter_against_the_c_library():
    x = _values(np.float64)
    y = np.roll(_values(np.float64, seed=9), 3)
    y[:40] = np.where(y[:40] == 0, 1.0, y[:40])
    x[:8] = [5.0, 7.0, -5.0, 4.5, 1.0, 0.0, 3.0, -0.0]
    y[:8] = [2.0, 2.0, 2.0, 3.0, np.inf, 2.0, 3.0, 1.0]
    rem, nxt = np.zeros_like(x), np.zeros_like(x)
    binary_math[4, 128](x, y, rem, nxt)
    for k, (a, b) in enumerate(zip(x.tolist(), y.tolist())):
        try:
            want = math.remainder(a, b)
        except ValueError:
            want = math.nan
        np.testing.assert_equal(rem[k], want, err_msg=f"remainder({a}, {b})")
        np.testing.assert_equal(nxt[k], math.nextafter(a, b), err_msg=f"nextafter({a}, {b})")


@cuda.jit
def bits(u, i, popc, clz, ffs, brev, bc):
    k = cuda.grid(1)
    if k < u.size:
        popc[k] = cuda.popc(u[k])
        clz[k] = cuda.clz(u[k])
        ffs[k] = cuda.ffs(i[k])
        brev[k] = cuda.brev(u[k])
        bc[k] = u[k].bit_count()


def test_bit_intrinsics():
    rng = np.random.default_rng(3)
    u = rng.integers(0, 2**32, 200, dtype=np.uint64).astype(np.uint32)
    u[:3] = [0, 1, 2**31]
    i = u.view(np.int32)
    popc, clz, ffs, brev, bc = (np.zeros(200, np.int64) for _ in range(5))
    bits[1, 256](u, i, popc, clz, ffs, brev, bc)
    for k, v in enumerate(u.tolist()):
        assert popc[k] == bin(v).count("1") == bc[k]
        assert clz[k] == 32 - v.bit_length()
        assert ffs[k] == ((v & -v).bit_length() if v else 0)
        assert brev[k] == int(f"{v:032b}"[::-1], 2)


@cuda.jit(device=True)
def apply_op(op, a, b):
    return op(a, b)


@cuda.jit
def operators(r, x):
    r[0] = apply_op(operator.add, x[0], x[1])
    r[1] = apply_op(operator.floordiv, x[0], x[1])
    r[2] = operator.neg(x[0])
    r[3] = apply_op(operator.pow, x[1], 3)
    r[4] = operator.lt(x[0], x[1])
    r[5] = cuda.selp(x[0] > x[1], x[0], x[1])


def test_operator_module_functions_as_values():
    r = np.zeros(6)
    operators[1, 1](r, np.array([7.5, 2.0]))
    np.testing.assert_array_equal(r, [9.5, 3.0, -7.5, 8.0, 0.0, 7.5])


@cuda.jit
def matches(x, any_out, all_mask, all_pred, eq):
    i = cuda.grid(1)
    any_out[i] = cuda.match_any_sync(0xFFFFFFFF, x[i])
    m, p = cuda.match_all_sync(0xFFFFFFFF, x[i] // 100)
    all_mask[i] = m
    all_pred[i] = p
    eq[i] = cuda.eq_sync(0xFFFFFFFF, x[i] > 1000)


def test_warp_matches():
    x = np.array([k % 5 for k in range(32)] + [7] * 32, np.int32)
    outs = [np.zeros(64, np.int64) for _ in range(4)]
    matches[1, 64](x, *outs)
    any_out, all_mask, all_pred, eq = outs
    for lane in range(64):
        w = lane // 32 * 32
        want = sum(1 << k for k in range(32) if x[w + k] == x[lane])
        assert any_out[lane] & 0xFFFFFFFF == want
    assert list(all_pred) == [1] * 64 and list(all_mask & 0xFFFFFFFF) == [0xFFFFFFFF] * 64
    assert list(eq) == [1] * 64
