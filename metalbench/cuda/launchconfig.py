"""``numba.cuda.launchconfig``: the launch configuration a compilation serves.

A kernel compiles on its first launch with new argument types, through
``kernel._compile_for_args(*args)``; while that runs, ``current_launch_config()`` gives
the launch (``dispatcher``, ``griddim``, ``blockdim``, ``stream``, ``sharedmem``,
``args``), per thread. Outside a compilation it is None.

    >>> current_launch_config() is None
    True
"""
from __future__ import annotations

import contextlib
import functools
from types import MethodType

from ..numba_compat.dispatcher import LaunchConfig, current_launch_config  # noqa: F401


def ensure_current_launch_config():
    """The current launch configuration; RuntimeError outside a compilation."""
    cfg = current_launch_config()
    if cfg is None:
        raise RuntimeError("No launch config set for this thread")
    return cfg


@contextlib.contextmanager
def capture_compile_config(dispatcher):
    """``with capture_compile_config(k) as seen: k[g, b](...)``: ``seen["config"]`` is the
    launch configuration of the compilation the block triggered (None if none did)."""
    if dispatcher is None:
        raise TypeError("dispatcher is required")
    seen = {"config": None}
    own = dispatcher.__dict__.get("_compile_for_args")
    original = dispatcher._compile_for_args

    @functools.wraps(original)
    def capture(self, *args, **kws):
        seen["config"] = current_launch_config()
        return original(*args, **kws)
    dispatcher._compile_for_args = MethodType(capture, dispatcher)
    try:
        yield seen
    finally:
        if own is None:
            del dispatcher._compile_for_args
        else:
            dispatcher._compile_for_args = own


__all__ = ["current_launch_config", "ensure_current_launch_config", "capture_compile_config"]
