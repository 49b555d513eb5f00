"""In-place updates MLX's fresh outputs cannot express, on ``cuda``: a private copy written through.

:mod:`.inplace` turns a Numba kernel's writes into fresh MLX outputs and a merge. Some
updates cannot be rebuilt from fresh outputs: ``cuda.atomic.max``/``min``/``exch``/``cas``/
``inc``/``dec`` act on the array's old contents (and return them), atomics mixed with plain
stores on one array, arrays a device function writes. Numba's semantics need the kernel to
see the old contents and its atomics to act on them. What MLX offers and what it does not:

* an output cannot be initialised from an input (``init_value`` is one scalar for every
  output), and a kernel that first copies the input into its output needs a grid-wide
  barrier before the first atomic: not available in a ``cuda_kernel``;
* MLX custom kernels cannot alias an input to an output (``CustomKernel::eval_gpu``
  allocates every output);
* but an input is a plain device pointer (``const T*``): a kernel can write through it.
  Writing into an array MLX or the user may still read would break MLX's value semantics,
  so the kernel writes into a **private copy**: a fresh output of a copy kernel
  (:func:`private_copy`, MLX allocates it, nobody else holds it).

The sequence per launch: ``c = private_copy(a)``; the functionalized kernel receives ``c``
as the parameter's input and writes it through a non-const view (``ir.ViewDecl``, printed
``T* a__w = const_cast<T*>(a)``), so loads, stores, atomics and device functions see and
update the old contents exactly as in place; then :func:`finish` makes the result an array
whose graph includes the kernel: ``mx.depends([c], [kernel outputs])`` (a value that shares
``c``'s buffer), and evaluates it asynchronously. The evaluation matters on MLX's CUDA
backend: its CUDA graphs order nodes by the buffers they *write*, and the kernel only reads
``c`` as far as MLX knows, so a later reader of ``c`` in the same graph could run beside
it; ``mx.async_eval`` ends the graph there (``CommandEncoder::commit``), and graphs on one
stream run in order. The cost over a plain launch: one copy kernel (a device memcpy of the
array) and one graph boundary.

Metal keeps the refusal: small inputs live in ``constant`` memory there, which no kernel
can write (and it is not tested on a Mac). The simulator verifies the scheme by execution
(``run_functional(..., "sim")`` writes into a NumPy copy).

    >>> import numpy as np
    >>> from metalbench import cuda
    >>> @cuda.jit
    ... def running_max(m, x):
    ...     i = cuda.grid(1)
    ...     if i < x.size:
    ...         cuda.atomic.max(m, 0, x[i])
    >>> values, specs = running_max._bind([np.array([5], np.int32), np.arange(4, dtype=np.int32)], {})
    >>> kir, plans = functionalize_for(running_max, values, specs)
    >>> [(p.param, p.scheme) for p in plans]
    [('m', 'copy')]
"""
from __future__ import annotations

import copy

from .. import ir
from .. import types as T

COPY_BACKENDS = ("cuda", "sim")      # where a written input is allowed (sim: verification)
DONE = "mb_done"                     # the one-element output a kernel with no other output gets


def view_name(param: str) -> str:
    return param + "__w"


def rewrite(body: list, params: list[str]) -> dict:
    """Point every access of ``params`` in ``body`` (fresh nodes, changed in place) at
    their writable views; returns ``{param: view name}``."""
    views = {p: view_name(p) for p in params}
    kinds = (ir.Load, ir.Store, ir.Atomic, ir.BufArg, ir.MatrixLoad, ir.MatrixStore)
    for n in ir.walk(body):
        if isinstance(n, kinds) and n.buf in views:
            n.buf = views[n.buf]
    return views


def declarations(kir: ir.KernelIR, views: dict) -> list[ir.ViewDecl]:
    return [ir.ViewDecl(w, p, kir.param(p).type, "device", False) for p, w in views.items()]


def writable_functions(kir: ir.KernelIR, writes: dict) -> list:
    """``kir.functions`` with the buffer parameters each function writes (``writes``:
    function name -> indices, transitively, :func:`.inplace._func_writes`) declared
    non-const: the Numba front end declares a parameter const when its argument was a
    kernel input, and a written input now arrives as a writable view."""
    out = []
    for f in kir.functions:
        idx = writes.get(f.name, set())
        if not any(f.params[k].const for k in idx):
            out.append(f)
            continue
        g = copy.copy(f)
        g.params = [copy.copy(p) for p in f.params]
        for k in idx:
            g.params[k].const = False
        out.append(g)
    return out


_COPY: dict = {}


def _copy_spec(t: T.ScalarType):
    """The copy kernel for elements of ``t`` (a Specialization, built once per type)."""
    sp = _COPY.get(t)
    if sp is None:
        from ..protocol import Specialization
        u3 = T.vector_of(T.uint32, 3)
        i = ir.Swizzle(ir.ThreadAttr("thread_position_in_grid", u3), "x", T.uint32)
        kir = ir.KernelIR("mb_private_copy", [ir.Param("x", "buffer", t), ir.Param("y", "buffer", t, is_output=True)],
                          [ir.Store("y", i, ir.Load("x", i, t))])
        sp = _COPY[t] = Specialization(("mb_private_copy", t.name), kir, None, name="mb_private_copy")
    return sp


def private_copy(a, backend: str):
    """A fresh copy of the ``mx.array`` ``a`` that no one else holds: the output of a copy
    kernel (MLX allocates every custom-kernel output), flat, of ``a``'s dtype."""
    import mlx.core as mx
    from ..protocol import BoundLaunch
    t = T.from_mlx(a.dtype)
    n = int(a.size)
    if n == 0:
        return mx.zeros((0,), a.dtype)
    sp = _copy_spec(t)
    grid, tg = (n, 1, 1), (min(256, n), 1, 1)
    plan = sp.gpu_plan(BoundLaunch(None, sp.key, {}, [("y", (n,), t)], grid, tg, backend, False, None), backend)
    return plan.call_raw(plan.inputs({"x": a.reshape(-1)}))[0]


def finish(copy, outs: list):
    """``copy`` (written by the kernel) as a value that depends on the kernel's outputs
    ``outs``, evaluated asynchronously (see the module docstring: the graph boundary)."""
    import mlx.core as mx
    new = mx.depends([copy], list(outs))[0] if outs else copy
    mx.async_eval(new)
    return new


def functionalize_for(kernel, values, specs, backend: str = "cuda"):
    """``inplace.functionalize`` of a ``cuda.jit`` kernel's specialisation for
    ``backend`` (a helper for tests and the doctest above)."""
    from .inplace import functionalize
    sp = kernel._specialization(specs)
    return functionalize(sp.ir, kernel.name, None, backend)
