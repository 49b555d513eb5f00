"""Numba's device-management API as harmless stand-ins, so whole scripts run unchanged.

    >>> is_available(), get_current_device().WARP_SIZE
    (True, 32)
"""
from __future__ import annotations

import contextlib
import time


# Kernel launches on device arrays build MLX's lazy graph; these are the arrays launched
# since the last synchronisation. They are scheduled (``mx.async_eval``) every
# ``_PENDING_MAX`` launches, so a long loop of launches without a synchronisation keeps
# the GPU busy and the graph short, and evaluated by ``synchronize()``.
_pending: list = []
_PENDING_MAX = 32


def note_pending(arrays) -> None:
    """Record the ``mx.array`` results of a launch (see ``_pending``)."""
    _pending.extend(arrays)
    if len(_pending) >= _PENDING_MAX:
        import mlx.core as mx
        mx.async_eval(*_pending)
        _pending.clear()


def synchronize() -> None:
    """Wait for all launched work: evaluate what launches on device arrays queued in MLX
    (MLX evaluates lazily) and wait for the GPU; the simulator runs synchronously."""
    try:
        import mlx.core as mx
    except ImportError:         # pragma: no cover - MLX is a dependency
        return
    if _pending:
        work = list(_pending)
        _pending.clear()
        mx.eval(*work)
    mx.synchronize()


class CudaAPIError(Exception):
    """Numba's ``cudadrv.driver.CudaAPIError(code, msg)``."""

    def __init__(self, code, msg):
        self.code = code
        self.msg = msg
        super().__init__(code, msg)

    def __str__(self):
        return f"[{self.code}] {self.msg}"


class CudaDriverError(Exception):
    """Numba's ``cudadrv.error.CudaDriverError``."""


class Driver:
    """``cuda.cudadrv.driver.driver``: the transfers between host and device arrays go
    through its ``cuMemcpyHtoD(dst_device, src_host, nbytes)`` and
    ``cuMemcpyDtoH(dst_host, src_device, nbytes)``, so a test (or a profiler) can
    replace them and see every transfer; nothing else of the CUDA driver exists here.

        >>> callable(driver.cuMemcpyHtoD)
        True
    """

    def __init__(self):
        self._copies = (None, None)

    def _install_copies(self, h2d, d2h):
        self._copies = (h2d, d2h)

    def cuMemcpyHtoD(self, dst, src, size):
        self._copies[0](dst, src, size)

    def cuMemcpyDtoH(self, dst, src, size):
        self._copies[1](dst, src, size)

    def get_device_count(self) -> int:
        return 1

    @property
    def is_available(self) -> bool:
        return True

    def __getattr__(self, name):
        if name.startswith("cu") or name.startswith("_"):
            raise AttributeError(f"the CUDA driver function {name} does not exist in metalbench.cuda: kernels run "
                                 "through MLX (Metal, MLX's CUDA backend) or the simulator")
        raise AttributeError(name)


driver = Driver()


def _have_nvjitlink() -> bool:
    return False


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
    """``cuda.stream()``: on one device every launch is ordered after the previous one,
    so a stream is an ordered no-op; ``synchronize()`` waits for all launched work and
    ``auto_synchronize()`` does so when its block ends.

        >>> s = stream()
        >>> with s.auto_synchronize():
        ...     pass
    """

    def __init__(self, handle: int = 1):
        self.handle = handle

    def synchronize(self) -> None:
        synchronize()

    @contextlib.contextmanager
    def auto_synchronize(self):
        yield self
        synchronize()

    def add_callback(self, callback, arg=None) -> None:
        """Call ``callback(stream, status, arg)`` once the work launched so far is done."""
        synchronize()
        callback(self, 0, arg)

    def async_done(self):
        """An ``asyncio`` future done when the work launched so far is done."""
        import asyncio
        fut = asyncio.get_event_loop().create_future()
        synchronize()
        fut.set_result((self, 0))
        return fut

    def __int__(self) -> int:
        return self.handle

    def __repr__(self) -> str:
        return f"<metalbench.cuda Stream {self.handle} (ordered, one device)>"


def stream() -> Stream:
    return Stream()


_DEFAULT = Stream(0)


def default_stream() -> Stream:
    return _DEFAULT


def external_stream(ptr) -> Stream:
    return Stream(int(ptr))


legacy_default_stream = per_thread_default_stream = default_stream


class Event:
    """``cuda.event()``: ``record()`` waits for the work launched so far and notes the
    time, so ``elapsed_time`` between two records is the wall time of the work between
    them, in milliseconds.

        >>> a, b = event(), event()
        >>> a.record(); b.record(); b.synchronize()
        >>> a.elapsed_time(b) >= 0
        True
    """

    def __init__(self, timing=True):
        self.t = None
        self.timing = timing

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
        if self.t is None or end.t is None:
            raise RuntimeError("elapsed_time: both events must have been recorded (event.record())")
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
