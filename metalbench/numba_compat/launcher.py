"""``kernel[griddim, blockdim]``: the launch configuration of a ``cuda.jit`` kernel, and
the launcher object it makes (:class:`_Launcher`, one per configuration, kept by the
kernel): Numba's ``k[blocks, threads](*args)``.

    >>> _dims((4, 2), "blockdim")
    (4, 2, 1)
"""
from __future__ import annotations

import numpy as np

from ..errors import KernelLaunchError, MetalbenchError, trim_traceback
from ..thin import FastCall, named


class LaunchConfigError(KernelLaunchError, ValueError):
    """A bad launch configuration (Numba raises ValueError)."""


class LaunchConfigTypeError(KernelLaunchError, TypeError):
    """A launch configuration of non-integers (Numba raises TypeError)."""


def _dims(v, what):
    d = list(v) if isinstance(v, (tuple, list)) else [v]
    if not 1 <= len(d) <= 3:
        raise LaunchConfigError(f"{what} must be a sequence of 1, 2 or 3 integers, got {d!r}")
    if not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in d):
        raise LaunchConfigTypeError(f"{what} must be a sequence of integers, got {d!r}")
    if any(x <= 0 for x in d):
        raise LaunchConfigError(f"{what} must be positive integers, got {d!r}")
    return tuple(int(x) for x in d) + (1,) * (3 - len(d))


_MAX_GRID = 2**32 - 1


class _Launcher(FastCall):
    """``kernel[griddim, blockdim]``: call it with the kernel's arguments.

    A call goes to the front (``thin.FastCall``): after a launch on device arrays, that
    entry's generated check-and-launch (``ThinDeviceLaunch.front``, taking this launcher
    first); otherwise, or for a call it does not take, :meth:`_miss`.

    >>> import numpy as np
    >>> from metalbench import cuda
    >>> @cuda.jit
    ... def inc(x):
    ...     i = cuda.grid(1)
    ...     if i < x.size:
    ...         x[i] += 1
    >>> x = np.zeros(4, np.float32)
    >>> inc.configure(backend="sim")[1, 4](x)
    >>> x.tolist(), inc[1, 4] is inc[1, 4]
    ([1.0, 1.0, 1.0, 1.0], True)
    """

    def __init__(self, kernel, griddim, blockdim, sharedmem=0):
        self.kernel = kernel
        self.griddim = _dims(griddim, "griddim")
        self.blockdim = _dims(blockdim, "blockdim")
        self.sharedmem = sharedmem
        self.grid = tuple(a * b for a, b in zip(self.griddim, self.blockdim))
        self._too_big = max(self.grid) > _MAX_GRID
        self._set_front(self._generic_front())

    def _generic_front(self):
        miss = self._miss

        def __call__(*args, **kwargs):
            try:    # user_facing, inlined (one metalbench frame in a traceback: this one)
                return miss(args, kwargs)
            except MetalbenchError as e:
                raise trim_traceback(e)
        return named(__call__, "_Launcher.__call__")

    def _miss(self, args, kwargs):
        # the general launch (launch_inplace: the kernel's keyed thin path, else bind); its
        # entry's front, if it has one, takes this launcher's next calls
        if self._too_big:
            # refused before anything runs: thread positions are 32-bit (Metal's uint), and a
            # 64-bit index would change every kernel's types for grids no backend here can run
            raise KernelLaunchError(
                f"{self.kernel.name}[{self.griddim}, {self.blockdim}]: {max(self.grid)} threads in one dimension; "
                f"metalbench indexes threads in 32 bits (at most {_MAX_GRID})",
                hint="launch fewer blocks and loop over the rest in the kernel (a grid-stride loop: "
                     "for i in range(cuda.grid(1), n, cuda.gridsize(1)))")
        front = self.kernel.launch_inplace(args, kwargs, self.grid, self.blockdim, sharedmem=self.sharedmem)
        if front is not None:
            self._set_front(front, self)      # the entry's front, this launcher its first argument
        elif self.args:                       # (an entry's front: it has this launcher as argument)
            self._set_front(self._generic_front())
        return None

    def trace(self, *args, thread=None, group=None):
        """The debugger's per-thread trace of this launch (``k[blocks, threads].trace(a, thread=5)``;
        see ``KernelBase.trace``): on the simulator, on copies of the arrays."""
        return self.kernel.trace(*args, thread=thread, group=group, grid=self.grid, threadgroup=self.blockdim)

    def access_map(self, *args):
        """The debugger's access map of this launch (``k[blocks, threads].access_map(a)``; see
        ``KernelBase.access_map``): per-element read/write counts, coalescing, bank conflicts."""
        return self.kernel.access_map(*args, grid=self.grid, threadgroup=self.blockdim)
