"""Device arrays of the Python scope that a Numba kernel writes (numba-cuda's device array
capture): Numba captures a device array by its pointer, so ``g[i] = v`` in the kernel
lands in the array. Read-only captures stay compile-time constants (views.global_array,
recompiled when the array changes); a captured array the body writes becomes a hidden
buffer argument of the launch, bound to the device array itself. A NumPy array of the
Python scope is a constant in Numba too: writing it stays an error at the store.

    >>> import numpy as np
    >>> from metalbench import cuda
    >>> counts = cuda.to_device(np.zeros(4, np.int32))
    >>> @cuda.jit
    ... def bump():
    ...     i = cuda.grid(1)
    ...     if i < 4:
    ...         counts[i] += i
    >>> bump.configure(backend="sim")[1, 4]()
    >>> counts.copy_to_host().tolist()
    [0, 1, 2, 3]
"""
from __future__ import annotations

import ast

from .devicearray import DeviceNDArray


def _written_names(fdef) -> set:
    """Names the body stores into (``g[i] = ``, ``g[i] += ``, an atomic on ``g``) that are
    neither parameters nor locals of the function."""
    params = {a.arg for a in fdef.args.args + fdef.args.kwonlyargs}
    local = {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    out = set()
    for n in ast.walk(fdef):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
            base = n.value
            while isinstance(base, ast.Subscript):
                base = base.value
            if isinstance(base, ast.Name):
                out.add(base.id)
        elif isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Name) \
                and "atomic" in ast.unparse(n.func):
            out.add(n.args[0].id)
    return out - params - local


def written_captures(kernel) -> dict:
    """name -> the :class:`DeviceNDArray` of each device array of the Python scope that
    ``kernel``'s body writes (a ``__cuda_array_interface__`` wrapper of one counts)."""
    names = kernel.__dict__.get("_written_capture_names")
    if names is None:
        try:
            names = _written_names(kernel.parsed().fdef)
        except Exception:           # no readable source: nothing captured
            names = set()
        kernel._written_capture_names = names
    if not names:
        return {}
    env = kernel.parsed().env
    out = {}
    for n in sorted(names):
        v = env.get(n)
        if isinstance(v, DeviceNDArray):
            out[n] = v
        elif v is not None and hasattr(v, "__cuda_array_interface__") and not hasattr(v, "copy_to_host"):
            from .devicearray import from_interface
            d = from_interface(v)
            if d is not None:
                out[n] = d
    return out


def bind_written_captures(kernel, values: dict, specs: list, host_array_kind) -> None:
    """Append each written capture (:func:`written_captures`) to a launch's bound values and
    front-end specs as a buffer argument of its own name (``host_array_kind``: host.py's)."""
    from ..frontend import python as F
    for name, dev in written_captures(kernel).items():
        a, t, _ = host_array_kind(dev, name)
        values[name] = (dev, a, t)
        specs.append(F.ArgSpec(name, "buffer", t, max(1, a.ndim), zero_d=a.ndim == 0))
