"""Code generators: the IR printed as MLX custom-kernel source.

- :mod:`.c_like` -- the shared C printer (:class:`~.c_like.CPrinter`), dialects as data
  (:class:`~.c_like.Dialect`), :class:`~.c_like.Rendered`, :class:`~.c_like.ExtraInputs`;
- :mod:`.msl` -- ``render(ir) -> Rendered`` for ``mx.fast.metal_kernel``;
- :mod:`.cuda` -- ``render(ir) -> Rendered`` for ``mx.fast.cuda_kernel`` and
  ``full_source(r)``, the text MLX's CUDA backend compiles;
- :mod:`.cuda_check` -- the generated CUDA through nvcc, or libclang with ``cuda_shim.h``.

The Metal side's complete source and static check live in :mod:`metalbench.mlx_signature`
and :mod:`metalbench.msl_check` (with ``metal_shim.h`` here)::

    >>> from metalbench import ir, types as T
    >>> from metalbench.codegen import msl
    >>> k = ir.KernelIR("k", [ir.Param("o", "buffer", T.float32, is_output=True)],
    ...                 [ir.Store("o", ir.Const(0, T.uint32), ir.Const(0.5, T.float32))])
    >>> msl.render(k).body
    'o[0u] = 0.5f;'
"""
