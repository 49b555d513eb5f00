"""Launch-time specialisation and tuning of DSL kernels: threadgroup memory sized by a
launch argument (specialised per value), ``mb.Out(shape=lambda ...)`` receiving only the
arguments it names, sweeps whose threadgroup (and grid) are functions of the
configuration, and pruning predicates (Triton's ``prune_configs_by``)."""
from __future__ import annotations

import numpy as np
import pytest

import metalbench as mb
from metalbench import ir
from metalbench.dsl import *  # noqa: F401,F403
from metalbench.errors import KernelLaunchError, MetalbenchError

RNG = np.random.default_rng(11)


# ----------------------------------------------------------------------------- dynamic threadgroup memory

@mb.kernel
def block_sum(x, n: int, out: mb.Out(shape=lambda x, n: (x.size // n,))):
    tile = threadgroup_array(n, float32)            # sized by a launch argument
    t = thread_position_in_threadgroup.x
    g = threadgroup_position_in_grid.x
    tile[t] = x[g * n + t]
    threadgroup_barrier()
    half_n = n // 2
    s = half_n
    while s > 0:                                    # tree reduction over the tile
        if t < s:
            tile[t] += tile[t + s]
        threadgroup_barrier()
        s = s // 2
    if t == 0:
        out[g] = tile[0]


@pytest.mark.parametrize("n", [32, 64, 256])
def test_threadgroup_array_sized_by_a_scalar_argument(n):
    x = RNG.standard_normal(1024).astype(np.float32)
    got = np.asarray(block_sum(x, n, grid=1024, threadgroup=n, backend="sim", checked=True))
    np.testing.assert_allclose(got, x.reshape(-1, n).sum(1), rtol=1e-5, atol=1e-5)
    kir = block_sum.ir(x, n)
    assert ir.threadgroup_bytes(kir) == 4 * n
    assert "n" not in [p.name for p in kir.params]        # a constant of this specialisation


def test_each_size_is_its_own_specialisation_and_the_thin_path_keys_on_it():
    x = RNG.standard_normal(512).astype(np.float32)
    for n in (32, 64, 32, 64):
        got = np.asarray(block_sum(x, n, grid=512, threadgroup=n, backend="sim"))
        np.testing.assert_allclose(got, x.reshape(-1, n).sum(1), rtol=1e-5, atol=1e-5)
    sizes = {ir.threadgroup_bytes(sp.ir) for sp in block_sum._cache.values()}
    assert {4 * 32, 4 * 64} <= sizes


def test_a_size_through_a_computed_name_and_a_constexpr():
    @mb.kernel
    def rows(x, cols: int, out: mb.Out, PAD: mb.constexpr = 1):
        w = cols + PAD                                 # padded row: no bank conflicts on GPUs
        tile = threadgroup_array((4, w), float32)
        t = thread_position_in_threadgroup.x
        r = t // cols
        c = t % cols
        tile[r, c] = x[t]
        threadgroup_barrier()
        out[t] = tile[c % 4, r] if c < 4 else tile[r, c]

    x = RNG.standard_normal(32).astype(np.float32)
    got = np.asarray(rows(x, 8, grid=32, threadgroup=32, backend="sim", checked=True))
    m = x.reshape(4, 8)
    want = np.array([m[c % 4, r] if c < 4 else m[r, c] for r in range(4) for c in range(8)], np.float32)
    np.testing.assert_array_equal(got, want)
    assert ir.threadgroup_bytes(rows.ir(x, 8)) == 4 * 4 * 9
    assert ir.threadgroup_bytes(rows.ir(x, 8, PAD=0)) == 4 * 4 * 8


def test_too_much_threadgroup_memory_for_a_size_is_a_launch_error():
    x = RNG.standard_normal(16384).astype(np.float32)
    with pytest.raises(MetalbenchError, match="threadgroup memory"):
        block_sum(x, 16384, grid=1024, threadgroup=1024, backend="sim")


def test_a_float_size_is_an_error():
    with pytest.raises(KernelLaunchError, match="sizes an array, so it must be an integer"):
        block_sum(np.ones(64, np.float32), 32.0, grid=64, threadgroup=32, backend="sim")


# ----------------------------------------------------------------------------- mb.Out(shape=lambda ...)

def test_out_shape_function_receives_only_the_arguments_it_names():
    @mb.kernel
    def outer(a, b, out: mb.Out(shape=lambda a, b: (a.size, b.size)), S: mb.constexpr = 2):
        i = thread_position_in_grid.x
        j = thread_position_in_grid.y
        out[i, j] = a[i] * b[j] * S

    a, b = np.arange(3, dtype=np.float32), np.arange(5, dtype=np.float32)
    got = np.asarray(outer(a, b, grid=(3, 5, 1), threadgroup=(1, 1, 1), backend="sim"))
    np.testing.assert_array_equal(got, np.outer(a, b) * 2)

    @mb.kernel
    def bad(a, out: mb.Out(shape=lambda z: (z,))):
        out[0] = a[0]
    with pytest.raises(KernelLaunchError, match="computed by a function of z"):
        bad(a, grid=1, backend="sim")


# ----------------------------------------------------------------------------- sweeps

@mb.kernel
def tile_copy(x, out: mb.Out, T: mb.constexpr = 64, V: mb.constexpr = 1):
    tile = threadgroup_array(T * V, float32)
    t = thread_position_in_threadgroup.x
    g = threadgroup_position_in_grid.x
    for v in static_range(V):
        tile[t * V + v] = x[(g * T + t) * V + v]
    threadgroup_barrier()
    for v in static_range(V):
        out[(g * T + t) * V + v] = tile[(T - 1 - t) * V + v]


def _tile_ref(x, T, V):
    return x.reshape(-1, T, V)[:, ::-1, :].reshape(-1)


def test_sweep_with_threadgroup_and_grid_as_functions_of_the_configuration():
    x = RNG.standard_normal(1024).astype(np.float32)
    s = tile_copy.sweep(x, T=[32, 64, 128], V=[1, 2], threadgroup=lambda T: T,
                        grid=lambda cfg: x.size // cfg["V"], backend="sim", progress=False,
                        ref=None, repeats=1, warmup=0)
    assert [r["error"] for r in s.rows] == [None] * 6
    assert [(c["threadgroup"], c["grid"]) for c in s.configs] == [(32, 1024), (32, 512), (64, 1024), (64, 512),
                                                                   (128, 1024), (128, 512)]
    for c in s.configs:
        got = np.asarray(tile_copy(x, backend="sim", **c))
        np.testing.assert_array_equal(got, _tile_ref(x, c["T"], c["V"]))


def test_a_prune_predicate_skips_configurations():
    x = RNG.standard_normal(1024).astype(np.float32)
    s = tile_copy.sweep(x, T=[32, 64, 128], V=[1, 2, 4], threadgroup=lambda T: T,
                        grid=lambda V: x.size // V, prune=lambda T, V: T * V > 256, backend="sim",
                        progress=False, repeats=1, warmup=0, ref=lambda x: x)
    kept = [(c["T"], c["V"]) for c in s.configs]
    assert kept == [(t, v) for t in (32, 64, 128) for v in (1, 2, 4) if t * v <= 256]
    assert sorted((c["T"], c["V"]) for c in s.pruned) == [(128, 4)]
    assert all(r["ok"] is False for r in s.rows)       # the reference is the identity: every config differs


def test_tritons_prune_configs_by_form():
    x = RNG.standard_normal(512).astype(np.float32)

    def early(configs, named_args):
        assert named_args["x"] is x
        return [c for c in configs if c["T"] >= 64]

    s = tile_copy.sweep(x, T=[32, 64, 128], threadgroup=lambda T: T, grid=x.size,
                        prune={"early_config_prune": early}, backend="sim", progress=False, repeats=1, warmup=0,
                        ref=lambda x: _tile_ref(x, 64, 1))
    assert [c["T"] for c in s.configs] == [64, 128] and [c["T"] for c in s.pruned] == [32]
    assert s.best["T"] == 64                            # the only configuration the reference matches


def test_a_threadgroup_function_naming_an_unknown_key_says_so():
    x = RNG.standard_normal(256).astype(np.float32)
    with pytest.raises(MetalbenchError, match="takes Q, which the sweep's configuration does not have"):
        tile_copy.sweep(x, T=[32], threadgroup=lambda Q, T: T, grid=256, backend="sim", progress=False)


@mb.kernel
def _reverse_blocks(x, out: mb.Out, BS: mb.constexpr = 64):
    t = threadgroup_array(BS, float32)
    i = thread_position_in_grid.x
    l = thread_position_in_threadgroup.x
    t[l] = x[i]
    threadgroup_barrier(mem_flags.mem_threadgroup)
    out[i] = t[BS - 1 - l]


def test_a_reference_may_name_the_swept_constants():
    x = np.arange(256, dtype=np.float32)

    def ref(x, BS):       # the result depends on the block size
        return x.reshape(-1, BS)[:, ::-1].reshape(-1)
    s = _reverse_blocks.sweep(x, grid=256, threadgroup=lambda BS: BS, BS=[16, 32, 128], ref=ref, backend="sim",
                              progress=False)
    assert [r["ok"] for r in s.rows] == [True, True, True]
    assert _reverse_blocks.check(ref, x, grid=256, threadgroup=32, BS=32, backend="sim").ok
    assert _reverse_blocks.check(ref, x, grid=256, threadgroup=64, backend="sim").ok          # the default
    assert not _reverse_blocks.check(lambda x, BS: ref(x, 2 * BS), x, grid=256, threadgroup=32, BS=32,
                                     backend="sim").ok
