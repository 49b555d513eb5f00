"""Launch configuration shared by every kernel object: grid and threadgroup shapes,
their limits, and the choice of backend.

    >>> normalize(1000, 256)
    ((1000, 1, 1), (256, 1, 1))
    >>> normalize((64, 64), (16, 16))
    ((64, 64, 1), (16, 16, 1))
"""
from __future__ import annotations

import functools
import operator
import os

from .errors import BackendUnavailableError, KernelLaunchError

MAX_THREADS_PER_THREADGROUP = 1024
MAX_THREADGROUP_MEMORY = 32 * 1024
SIMD_WIDTH = 32
BACKENDS = ("metal", "cuda", "sim")


def _dims(value, what: str) -> tuple[int, int, int]:
    if isinstance(value, (int,)) or (hasattr(value, "__index__") and not isinstance(value, (tuple, list))):
        dims = (value,)
    elif isinstance(value, (tuple, list)):
        dims = tuple(value)
    else:
        raise KernelLaunchError(f"{what} must be an int or a tuple of 1 to 3 ints, got {value!r}",
                                hint=f"for example {what}=(1024, 1, 1)")
    if not 1 <= len(dims) <= 3:
        raise KernelLaunchError(f"{what} must have 1 to 3 dimensions, got {len(dims)}: {value!r}")
    out = []
    for d in dims:
        if not hasattr(d, "__index__"):
            raise KernelLaunchError(f"{what} must contain ints, got {d!r} in {value!r}",
                                    hint="sizes count threads; convert with int(...)")
        try:
            # operator.index, as MLX's int parameters take them: a 0-d integer array is a size, a
            # float array (mx.divide of two uint32 arrays) or a 1-element vector is not (int() truncated)
            d = operator.index(d)
        except TypeError as e:
            raise KernelLaunchError(f"{what} must contain ints, got {d!r} in {value!r}: {e}",
                                    hint="sizes count threads; an integer division is //") from None
        if d <= 0:
            raise KernelLaunchError(f"{what} sizes must be positive, got {value!r}",
                                    hint="an empty input has nothing to launch; check the sizes")
        out.append(d)
    while len(out) < 3:
        out.append(1)
    return tuple(out)


def normalize(grid, threadgroup) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Validate and pad ``grid`` (threads, as Metal's dispatchThreads) and ``threadgroup``
    to 3-tuples. Raises :class:`KernelLaunchError` for zero/negative sizes or a
    threadgroup of more than 1024 threads.
    """
    if grid is None:
        raise KernelLaunchError("no grid given", hint="pass grid=<number of threads>, e.g. grid=x.size")
    g = _dims(grid, "grid")
    t = _dims(threadgroup if threadgroup is not None else (min(256, g[0]), 1, 1), "threadgroup")
    n = t[0] * t[1] * t[2]
    if n > MAX_THREADS_PER_THREADGROUP:
        raise KernelLaunchError(
            f"threadgroup {t} has {n} threads; at most {MAX_THREADS_PER_THREADGROUP} are allowed",
            hint="use a smaller threadgroup, e.g. (256, 1, 1) or (16, 16, 1)")
    return g, t


def check_threadgroup_memory(nbytes: int, span=None) -> None:
    """Raise if a kernel's static threadgroup memory exceeds 32 KiB."""
    if nbytes > MAX_THREADGROUP_MEMORY:
        raise KernelLaunchError(
            f"the kernel uses {nbytes} bytes of threadgroup memory; at most "
            f"{MAX_THREADGROUP_MEMORY} (32 KiB) are available", span,
            hint="use smaller threadgroup arrays (a smaller tile, or float16 elements)")


@functools.lru_cache(maxsize=None)
def metal_available() -> bool:
    """True on a Mac whose MLX has a Metal device."""
    try:
        import mlx.core as mx
        return bool(mx.metal.is_available())
    except Exception:
        return False


@functools.lru_cache(maxsize=None)
def cuda_available() -> bool:
    """True when MLX was built with its CUDA backend and sees a GPU."""
    try:
        import mlx.core as mx
        return bool(getattr(mx, "cuda", None) and mx.cuda.is_available())
    except Exception:
        return False


def resolve_backend(backend: str | None = "auto") -> str:
    """The backend a launch runs on: ``metal``, ``cuda`` or ``sim``.

    ``"auto"`` (or ``None``) means ``METALBENCH_BACKEND`` if set, else metal if
    available, else cuda, else sim.

    >>> resolve_backend("sim")
    'sim'
    """
    if backend in (None, "auto"):
        env = os.environ.get("METALBENCH_BACKEND", "").strip().lower()
        if env and env != "auto":
            if env not in BACKENDS:
                raise KernelLaunchError(
                    f"the environment variable METALBENCH_BACKEND={os.environ['METALBENCH_BACKEND']!r} "
                    "is not a backend",
                    hint="set it to one of auto, metal, cuda, sim (or unset it)")
            backend = env
        elif metal_available():
            return "metal"
        elif cuda_available():
            return "cuda"
        else:
            return "sim"
    if backend not in BACKENDS:
        raise KernelLaunchError(f"unknown backend {backend!r}",
                                hint="use one of 'auto', 'metal', 'cuda', 'sim'")
    if backend == "metal" and not metal_available():
        raise BackendUnavailableError(
            "the metal backend needs macOS on Apple silicon with MLX's Metal device",
            hint="use backend='sim' (the CPU simulator) or backend='cuda' on an NVIDIA machine")
    if backend == "cuda" and not cuda_available():
        raise BackendUnavailableError(
            "the cuda backend needs MLX's CUDA build and an NVIDIA GPU",
            hint='pip install "mlx[cuda13]" on a Linux machine with an NVIDIA GPU, or use backend=\'sim\'')
    return backend


_ENV_DATA = getattr(os.environ, "_data", None)


def env_fast(name: bytes):
    """``os.environ``'s raw value of ``name`` (bytes; the value or None), for per-call keys:
    ``os.environ.get`` encodes the key on every call (about 1 µs); the dict underneath
    on POSIX does not.

    >>> env_fast(b"METALBENCH_SURELY_UNSET") is None
    True
    """
    if _ENV_DATA is not None and os.name == "posix":
        return _ENV_DATA.get(name)
    return os.environ.get(name.decode())


def checked_default(checked: bool | None) -> bool:
    """``checked`` if given, else whether ``METALBENCH_CHECKED`` is set to 1/true."""
    if checked is not None:
        return bool(checked)
    return os.environ.get("METALBENCH_CHECKED", "").strip().lower() in ("1", "true", "yes", "on")
