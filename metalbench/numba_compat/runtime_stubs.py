"""Numba's device-management API as harmless stand-ins, so whole scripts run unchanged.

    >>> is_available(), get_current_device().WARP_SIZE
    (True, 32)
"""
from __future__ import annotations

import contextlib
import time


def synchronize() -> None:
    """Wait for queued work: MLX evaluates lazily, the simulator synchronously."""
    try:
        import mlx.core as mx
        mx.synchronize()
    except Exception:
        pass


def is_available() -> bool:
    """Always True: the simulator runs everywhere (``cuda.get_backend()`` says which backend)."""
    return True


class Device:
    """What ``cuda.get_current_device()`` returns: limits that match metalbench's launch rules."""
    id = 0
    MAX_THREADS_PER_BLOCK = 1024
    MAX_BLOCK_DIM_X = 1024
    MAX_BLOCK_DIM_Y = 1024
    MAX_BLOCK_DIM_Z = 64
    MAX_SHARED_MEMORY_PER_BLOCK = 32 * 1024
    WARP_SIZE = 32
    MULTIPROCESSOR_COUNT = 8
    compute_capability = (7, 0)

    @property
    def name(self) -> bytes:
        from .host import get_backend
        return f"metalbench ({get_backend()})".encode()

    def reset(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<metalbench.cuda Device {self.name.decode()}>"


_DEVICE = Device()


def select_device(device_id: int = 0) -> Device:
    """Accepts device 0 only."""
    if int(device_id) != 0:
        raise ValueError(f"metalbench.cuda has one device (0), not {device_id}")
    return _DEVICE


def get_current_device() -> Device:
    return _DEVICE


def list_devices():
    return [_DEVICE]


gpus = [_DEVICE]


def close() -> None:
    pass


def detect() -> bool:
    """Prints what runs the kernels, like Numba's ``cuda.detect()``."""
    print(f"Found 1 device: {_DEVICE.name.decode()}")
    return True


class Context:
    device = _DEVICE

    def get_memory_info(self):
        return (8 << 30, 8 << 30)

    def synchronize(self):
        synchronize()

    def reset(self):
        pass


def current_context(devnum=None) -> Context:
    return Context()


class Stream:
    """``cuda.stream()``: launches are ordered anyway; ``synchronize`` waits."""

    def synchronize(self) -> None:
        synchronize()

    @contextlib.contextmanager
    def auto_synchronize(self):
        yield self
        synchronize()


def stream() -> Stream:
    return Stream()


def default_stream() -> Stream:
    return Stream()


legacy_default_stream = per_thread_default_stream = default_stream


class Event:
    """``cuda.event()``: wall-clock timing of ``record``s (after synchronising)."""

    def __init__(self, timing=True):
        self.t = None

    def record(self, stream=0):
        synchronize()
        self.t = time.perf_counter()

    def synchronize(self):
        synchronize()

    def wait(self, stream=0):
        pass

    def query(self):
        return True

    def elapsed_time(self, end: "Event") -> float:
        return (end.t - self.t) * 1000.0


def event(timing=True) -> Event:
    return Event(timing)


def event_elapsed_time(start: Event, end: Event) -> float:
    return start.elapsed_time(end)


@contextlib.contextmanager
def defer_cleanup():
    yield


def profile_start():
    pass


def profile_stop():
    pass
