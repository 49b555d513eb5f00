"""``@cuda.jit(device=True)`` functions of the Numba layer (out of host.py, which kernels
keep busy enough).

    >>> from metalbench import cuda
    >>> @cuda.jit(device=True)
    ... def sq(v):
    ...     return v * v
    >>> try:
    ...     sq[1, 1]()
    ... except RuntimeError as e:
    ...     print(str(e).splitlines()[0])
    Cannot compile a device function as a kernel: sq is @cuda.jit(device=True)
"""
from __future__ import annotations

from ..errors import KernelLaunchError
from ..kernel import Func
from . import nbtypes as nbt


class DeviceFunctionLaunchError(KernelLaunchError, RuntimeError):
    """A device function launched as a kernel (Numba raises RuntimeError)."""


class DeviceFunction(Func):
    """``@cuda.jit(device=True)``: a device function callable from kernels (like ``@mb.func``).
    With a signature (``@cuda.jit("float32(float32, int32)", device=True)``) its arguments
    and result convert to the declared types, as Numba does."""

    def __init__(self, fn=None, sig=None, **kw):
        super().__init__(fn, **kw)
        sigs = [nbt.parse_signature(s) for s in (sig if isinstance(sig, list) else [sig] if sig is not None else [])]
        # several signatures: each call takes the one Numba's overload resolution picks
        # (frontend/python/functions.py, numba_compat/conversions.py)
        self.numba_signatures = sigs
        self.numba_signature = sigs[0] if sigs else None

    @property
    def py_func(self):
        """The Python function (Numba's ``.py_func``)."""
        return self.fn

    def __getitem__(self, config):
        raise DeviceFunctionLaunchError(f"Cannot compile a device function as a kernel: {self.__name__} is "
                                        "@cuda.jit(device=True)",
                                        hint="call it from a kernel, or decorate it with @cuda.jit (no device=True) "
                                             "to launch it")

    def __repr__(self) -> str:
        return f"<metalbench.cuda device function {self.__name__}>"
