"""``k.mlx_function``: a DSL kernel as an ``mx.custom_function`` with its generated VJP.

    >>> import numpy as np, mlx.core as mx, metalbench as mb
    >>> from metalbench.dsl import *
    >>> @mb.kernel
    ... def cube(x, out: mb.Out):
    ...     i = thread_position_in_grid.x
    ...     out[i] = x[i] * x[i] * x[i]
    >>> f = cube.mlx_function(grid=lambda x: x.size, backend="sim")
    >>> mx.grad(lambda x: f(x).sum())(mx.array([1.0, 2.0])).tolist()
    [3.0, 12.0]

On ``metal`` and ``cuda`` the forward and adjoint kernels are MLX custom kernels, so
``mx.grad``, ``mx.vjp``, ``mx.value_and_grad`` and ``mx.compile`` trace through them.
On ``sim`` the kernels run on the host: MLX evaluates the inputs eagerly, which
``mx.grad``/``mx.vjp``/``mx.value_and_grad`` allow and ``mx.compile``/``mx.vmap`` do
not (they trace without values); there use ``k.vjp`` directly, or a GPU backend.
"""
from __future__ import annotations

from .. import launch as L
from .. import runtime
from ..errors import KernelLaunchError, MetalbenchError

_SIM_TRACE = ("mlx_function on the simulator: MLX is tracing this call (mx.compile, mx.vmap or "
              "mx.export_function), and the simulator needs the inputs' values on the host")
_SIM_HINT = ("mx.grad, mx.vjp and mx.value_and_grad work on sim; inside mx.compile/mx.vmap use a GPU backend "
             "(metal, cuda), or call k(...) and k.vjp(...) yourself")


def _launch_value(v, arrays):
    return v(*arrays) if callable(v) else v


def mlx_function(kernel, grid=None, threadgroup=None, backend="auto", **launch):
    """An ``mx.custom_function`` computing ``kernel`` on its free (array) arguments.

    Keywords naming kernel parameters (scalars, constexprs, arrays you do not want to
    differentiate) are fixed; the returned function takes the other non-output
    parameters positionally, in order. ``grid`` and ``threadgroup`` may be functions
    of those arguments (``grid=lambda x: x.size``). Other keywords (``out=``) pass on
    to every launch. The VJP returns zeros for integer arrays.
    """
    import mlx.core as mx
    if grid is None:
        raise KernelLaunchError(f"{kernel.name}.mlx_function needs grid=",
                                hint="a number of threads or a function of the arguments: grid=lambda x: x.size")
    in_names = [p.name for p, (k, _) in zip(kernel.params, kernel.kinds) if k != "out"]
    fixed = {k: v for k, v in launch.items() if k in in_names}
    extra = {k: v for k, v in launch.items() if k not in in_names}
    free = [n for n in in_names if n not in fixed]
    be = L.resolve_backend(backend)

    def named(arrays):
        if len(arrays) > len(free):
            raise KernelLaunchError(f"{kernel.name}: the function takes {len(free)} arguments "
                                    f"({', '.join(free)}), got {len(arrays)}")
        return dict(zip(free, arrays))

    def config(arrays):
        return _launch_value(grid, arrays), _launch_value(threadgroup, arrays)

    def guarded(fn):
        try:
            return fn()
        except ValueError as e:
            if be == "sim" and "eval" in str(e):
                raise KernelLaunchError(_SIM_TRACE, hint=_SIM_HINT) from None
            raise
        except MetalbenchError as e:
            if be == "sim" and ("trac" in str(e) or "eval" in str(e)):
                raise KernelLaunchError(_SIM_TRACE, hint=_SIM_HINT) from None
            raise

    @mx.custom_function
    def f(*arrays):
        g, t = config(arrays)
        return guarded(lambda: kernel(**named(arrays), **fixed, grid=g, threadgroup=t, backend=be, **extra))

    @f.vjp
    def f_vjp(primals, cotangents, outputs):
        if not isinstance(primals, (tuple, list)):      # MLX passes a lone primal bare
            primals = (primals,)
        g, t = config(primals)
        grads = guarded(lambda: kernel.vjp(**named(primals), **fixed, cotangents=cotangents, grid=g,
                                           threadgroup=t, backend=be, **extra))
        by_name = dict(zip(in_names, grads))
        out = []
        for name, p in zip(free, primals):
            gr = by_name.get(name)
            if not runtime.is_array(p):
                gr = None                      # a Python number: MLX does not differentiate it
            elif gr is None:
                gr = mx.zeros_like(p)
            out.append(gr)
        return tuple(out)

    return f
