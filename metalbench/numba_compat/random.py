"""``cuda.random``: the xoroshiro128+ generators of numba-cuda, bit for bit.

``create_xoroshiro128p_states(n, seed)`` makes ``n`` generator states (a device array of
records ``(s0, s1)``, uint64): the first from ``seed`` through SplitMix64, each next one
2**64 steps further on the same sequence, so threads draw independent streams. Kernels
draw with the device functions ``xoroshiro128p_uniform_float32(states, i)`` (and
``_float64``, ``normal_float32``/``_float64``, ``xoroshiro128p_next``), which advance
state ``i``::

    from metalbench import cuda
    from metalbench.cuda.random import create_xoroshiro128p_states, xoroshiro128p_uniform_float32

    @cuda.jit
    def fill(states, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = xoroshiro128p_uniform_float32(states, i)

    states = create_xoroshiro128p_states(1024, seed=1)

The same seed gives the same states and the same uniform draws as Numba (checked
against Numba's simulator). Normal draws use the Box-Muller transform in the kernel's
float type, as numba-cuda on a GPU does; Numba's simulator computes them in Python
floats, so those agree to float32 rounding.

Inside kernels the states are ``2 n`` uint64 words (``states[2 * i]`` is ``s0`` of
generator ``i``); on the host they are records, so ``copy_to_host()`` gives what Numba gives. The initial
states are computed on the host, vectorised: the 2**64-step jump is a linear map on the
128-bit state (a 128x128 bit matrix), applied to blocks of states by doubling.

    >>> s = create_xoroshiro128p_states(3, seed=1).copy_to_host()
    >>> int(s[0]["s0"]) == int(s[0]["s1"]), s.dtype.names
    (True, ('s0', 's1'))
"""
from __future__ import annotations

import functools
import math

import numpy as np

from . import nbtypes as nbt
from .devicearray import DeviceNDArray, _layout, device_array
from .host import jit

xoroshiro128p_dtype = np.dtype([("s0", np.uint64), ("s1", np.uint64)], align=True)
xoroshiro128p_type = nbt.from_dtype(xoroshiro128p_dtype)

_M64 = (1 << 64) - 1
_JUMP = (0xBEAC0467EBA5FACB, 0xD86B048B86AA9922)


# ----------------------------------------------------------------------------- host side

def _splitmix(seed: int) -> int:
    """The first state word from a 64-bit seed (SplitMix64's first output)."""
    z = (seed + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _rotl(x: int, k: int) -> int:
    return ((x << k) | (x >> (64 - k))) & _M64


def _next(s0: int, s1: int) -> tuple[int, int]:
    """One step of xoroshiro128+ on the state (Python ints)."""
    s1 ^= s0
    return _rotl(s0, 55) ^ s1 ^ ((s1 << 14) & _M64), _rotl(s1, 36)


def _jump_scalar(s0: int, s1: int) -> tuple[int, int]:
    """The state 2**64 steps later (the reference polynomial jump)."""
    a0 = a1 = 0
    for word in _JUMP:
        for b in range(64):
            if (word >> b) & 1:
                a0 ^= s0
                a1 ^= s1
            s0, s1 = _next(s0, s1)
    return a0, a1


@functools.lru_cache(maxsize=None)
def _jump_matrix() -> tuple[np.ndarray, np.ndarray]:
    """The jump as a bit matrix: column ``k`` (words lo, hi) is the jump of basis state
    ``k`` (bit ``k`` of ``s0`` for ``k < 64``, bit ``k - 64`` of ``s1`` above)."""
    lo, hi = np.zeros(128, np.uint64), np.zeros(128, np.uint64)
    for k in range(128):
        c0, c1 = _jump_scalar(1 << k if k < 64 else 0, 1 << (k - 64) if k >= 64 else 0)
        lo[k], hi[k] = c0, c1
    return lo, hi


def _tables(mat):
    """Byte tables of a bit matrix: entry ``[j, v]`` is the image of byte ``j`` of the
    state having value ``v`` (the XOR of the columns of its set bits)."""
    lo, hi = mat
    t0, t1 = np.zeros((16, 256), np.uint64), np.zeros((16, 256), np.uint64)
    for j in range(16):
        for b in range(8):
            n = 1 << b
            t0[j, n:2 * n] = t0[j, :n] ^ lo[8 * j + b]
            t1[j, n:2 * n] = t1[j, :n] ^ hi[8 * j + b]
    return t0, t1


def _apply(mat, s0: np.ndarray, s1: np.ndarray):
    """The bit matrix ``mat`` (columns as lo/hi words) applied to many states: sixteen
    byte-table lookups per state."""
    t0, t1 = _tables(mat)
    r0, r1 = np.zeros_like(s0), np.zeros_like(s1)
    # byte j of a word: little-endian bytes of the uint64 (the bit order the tables use)
    b0 = np.ascontiguousarray(s0, dtype="<u8").view(np.uint8).reshape(-1, 8)
    b1 = np.ascontiguousarray(s1, dtype="<u8").view(np.uint8).reshape(-1, 8)
    for j in range(16):
        byte = (b0 if j < 8 else b1)[:, j % 8]
        r0 ^= t0[j][byte]
        r1 ^= t1[j][byte]
    return r0, r1


def _compose(a, b):
    """The matrix of ``a`` after ``b``."""
    return _apply(a, b[0], b[1])


def _power(e: int):
    """The jump matrix to the power ``e`` (``e`` jumps), by squaring."""
    result = None
    base = _jump_matrix()
    while e:
        if e & 1:
            result = base if result is None else _compose(base, result)
        e >>= 1
        if e:
            base = _compose(base, base)
    return result


def _host_states(n: int, seed, subsequence_start=0) -> np.ndarray:
    """The ``n`` initial states as numba-cuda makes them, as an (n, 2) uint64 array."""
    words = np.zeros((n, 2), np.uint64)
    if n < 1:
        return words
    z = _splitmix(int(seed) & _M64)
    s0, s1 = np.array([z], np.uint64), np.array([z], np.uint64)
    start = int(subsequence_start)
    if start:
        s0, s1 = _apply(_power(start), s0, s1)
    words[0] = s0[0], s1[0]
    have, mat = 1, _jump_matrix()
    while have < n:               # states [have, 2*have) are `have` jumps after [0, have)
        m = min(have, n - have)
        r0, r1 = _apply(mat, words[:m, 0].copy(), words[:m, 1].copy())
        words[have:have + m, 0], words[have:have + m, 1] = r0, r1
        have += m
        if have < n:
            mat = _compose(mat, mat)
    return words


class StateArray(DeviceNDArray):
    """xoroshiro128p states: records ``(s0, s1)`` on the host, ``2 n`` uint64 words for
    kernels (the same storage, on the device on GPU backends)."""

    def __init__(self, words: DeviceNDArray):
        super().__init__(stream=words.stream, _dev=words._dev, _layout_=words._meta)
        self._host = words._host
        if self._host is None:
            self._mxdt = words._mxdt
        self._kmeta = words._meta
        self._meta = _layout((words.shape[0] // 2,), xoroshiro128p_dtype)

    def _host_copy(self) -> np.ndarray:
        words = np.ascontiguousarray(self._kernel_copy())
        return words.view(xoroshiro128p_dtype).reshape(self.shape).copy()

    def _kernel_copy(self) -> np.ndarray:
        if self._host is not None:
            return self._host.copy()
        from .. import runtime
        return np.array(runtime.to_numpy(self._read()), copy=True)

    def copy_to_device(self, ary, stream=0):
        a = np.ascontiguousarray(np.asarray(ary, dtype=xoroshiro128p_dtype)).view(np.uint64).reshape(-1)
        words = DeviceNDArray(self._host, stream) if self._host is not None else \
            DeviceNDArray(stream=stream, _dev=self._dev, _layout_=self._kmeta)
        words.copy_to_device(a)
        if self._host is None:
            self._dev = words._dev

    def __getitem__(self, item):
        return self.copy_to_host()[item]

    def __setitem__(self, item, value):
        h = self.copy_to_host()
        h[item] = value
        self.copy_to_device(h)


def init_xoroshiro128p_states(states, seed, subsequence_start=0, stream=0):
    """(Re)initialise ``states`` (from :func:`create_xoroshiro128p_states`) for ``seed``."""
    states.copy_to_device(np.ascontiguousarray(_host_states(states.shape[0], seed, subsequence_start))
                          .view(xoroshiro128p_dtype).reshape(-1), stream=stream)


def create_xoroshiro128p_states(n, seed, subsequence_start=0, stream=0):
    """``n`` independent generator states for ``seed`` (state ``i`` is ``i + subsequence_start``
    jumps of 2**64 steps from the seed's).

    >>> create_xoroshiro128p_states(4, seed=7).shape
    (4,)
    """
    words = device_array(2 * int(n), np.uint64, stream=stream)
    words.copy_to_device(_host_states(int(n), seed, subsequence_start).reshape(-1))
    return StateArray(words)


# ----------------------------------------------------------------------------- device side
# Numba-dialect device functions on the 2 n uint64 words; every constant is typed so
# that no int64 or float64 creeps into the uint64 arithmetic.

uint64, int64, float32, float64 = nbt.uint64, nbt.int64, nbt.float32, nbt.float64
TWO_PI_FLOAT32 = np.float32(2 * math.pi)
TWO_PI_FLOAT64 = np.float64(2 * math.pi)


@jit(device=True)
def xoroshiro128p_next(states, index):
    """The next uint64 of generator ``index``, advancing it."""
    i = int64(index) * 2
    s0 = states[i]
    s1 = states[i + 1]
    result = s0 + s1
    s1 ^= s0
    states[i] = ((s0 << uint64(55)) | (s0 >> uint64(9))) ^ s1 ^ (s1 << uint64(14))
    states[i + 1] = (s1 << uint64(36)) | (s1 >> uint64(28))
    return result


@jit(device=True)
def uint64_to_unit_float64(x):
    """A uint64 as a float64 in [0, 1): its top 53 bits."""
    return float64(x >> uint64(11)) * (float64(1.0) / float64(9007199254740992.0))


@jit(device=True)
def uint64_to_unit_float32(x):
    return float32(uint64_to_unit_float64(x))


@jit(device=True)
def xoroshiro128p_uniform_float32(states, index):
    """A float32 in [0, 1) from generator ``index``."""
    return uint64_to_unit_float32(xoroshiro128p_next(states, index))


@jit(device=True)
def xoroshiro128p_uniform_float64(states, index):
    """A float64 in [0, 1) from generator ``index``."""
    return uint64_to_unit_float64(xoroshiro128p_next(states, index))


@jit(device=True)
def xoroshiro128p_normal_float32(states, index):
    """A standard normal float32 (Box-Muller; two draws of generator ``index``)."""
    u1 = xoroshiro128p_uniform_float32(states, index)
    u2 = xoroshiro128p_uniform_float32(states, index)
    return math.sqrt(-float32(2.0) * math.log(u1)) * math.cos(TWO_PI_FLOAT32 * u2)


@jit(device=True)
def xoroshiro128p_normal_float64(states, index):
    """A standard normal float64 (Box-Muller on two float32 uniforms, as numba-cuda)."""
    u1 = xoroshiro128p_uniform_float32(states, index)
    u2 = xoroshiro128p_uniform_float32(states, index)
    return math.sqrt(-float64(2.0) * math.log(u1)) * math.cos(TWO_PI_FLOAT64 * u2)


__all__ = ["xoroshiro128p_dtype", "xoroshiro128p_type", "create_xoroshiro128p_states",
           "init_xoroshiro128p_states", "xoroshiro128p_next", "xoroshiro128p_uniform_float32",
           "xoroshiro128p_uniform_float64", "xoroshiro128p_normal_float32", "xoroshiro128p_normal_float64"]
