"""Metal 3.1's 64-bit atomics: ``atomic_max_explicit`` / ``atomic_min_explicit`` on
``device atomic_ulong*`` (also ``atomic<ulong>``), which return nothing -- on the simulator
against NumPy (a packed value-and-index argmax/argmin over two threadgroups), round-tripped
through the printed MSL (printed as those calls) and CUDA; the other 64-bit atomics and a
use of the result are named as Metal refuses them."""
from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from metalbench import types as T
from metalbench.codegen import msl
from metalbench.errors import KernelTypeError
from metalbench.frontend.msl import translate_kernel
from msl_cases import MSLCase, run_cuda, run_roundtrip, run_sim

RNG = np.random.default_rng(41)
N = 64
BASE = 2**42            # keys for max sit above the initial value, keys for min below it


def _ref(x):
    key = (x.astype(np.uint64) << np.uint64(20)) | np.arange(N, dtype=np.uint64)
    return [np.array([BASE + key.max(), key.min(), 2**41], dtype=np.uint64)]


ARGMAX = MSLCase(
    "ulong_minmax",
    """
    uint i = thread_position_in_grid.x;
    ulong key = (ulong(x[i]) << 20) | ulong(i);        // the value, ties broken by the index
    device atomic_ulong* hi = (device atomic_ulong*)out;
    atomic_max_explicit(hi, key + (1ul << 42), memory_order_relaxed);
    device metal::atomic<ulong>* lo = reinterpret_cast<device metal::atomic<ulong>*>(out);
    atomic_min_explicit(&lo[1], key, memory_order_relaxed);
    """,
    {"x": np.concatenate([RNG.integers(0, 2**20, N - 4), [0, 2**20 - 1, 2**20 - 1, 0]]).astype(np.uint32)},
    [("out", (3,), np.uint64)],
    _ref, grid=(N, 1, 1), tg=(32, 1, 1), init_value=float(2**41))

CASES = [ARGMAX]


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_sim_matches_numpy(c):
    run_sim(c)


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_round_trip_prints_metal_31_calls(c):
    run_roundtrip(c)
    body = msl.render(c.ir()).body
    assert "atomic_max_explicit(" in body and "atomic_min_explicit(" in body and "fetch" not in body


@pytest.mark.gpu
@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_printed_cuda_matches_sim(c):
    run_cuda(c)


@pytest.mark.parametrize("src,words", [
    ("device atomic_ulong* a = (device atomic_ulong*)out; ulong old = atomic_fetch_max_explicit(a, 1ul, "
     "memory_order_relaxed); out[1] = old;", "returns nothing"),
    ("device atomic_ulong* a = (device atomic_ulong*)out; atomic_fetch_add_explicit(a, 1ul, memory_order_relaxed);",
     "Metal has no 64-bit atomics"),
    ("threadgroup atomic<ulong> t[1]; atomic_max_explicit(&t[0], 1ul, memory_order_relaxed); out[0] = 0;",
     "device buffers only"),
])
def test_metal_printer_names_what_metal_lacks(src, words):
    kir = translate_kernel("k", src, "", inputs=[("x", T.uint32, 1)], outputs=[("out", T.uint64, 1)])
    with pytest.raises(KernelTypeError) as ei:
        msl.render(kir)
    assert words in str(ei.value) and "line 1" in str(ei.value), str(ei.value)
