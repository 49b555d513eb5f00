"""Numba-CUDA compatibility, imported as ``from metalbench import cuda``.

Modules: ``intrinsics`` (kernel-side API onto the IR), ``host`` (``cuda.jit``, launches),
``inplace`` (the IR pass that gives in-place semantics on MLX's fresh outputs),
``devicearray`` (``to_device`` and friends), ``runtime_stubs`` (device management).
"""
