"""The NumPy SIMT simulator (backend ``"sim"``).

``compile_kernel(ir) -> SimKernel``; ``SimKernel.run(args, grid, threadgroup,
checked=False) -> SimStats``. Threads are lanes of NumPy vectors; chunks of whole
threadgroups run in lockstep (see ``codegen`` for how the IR becomes lane-vector code).
"""
from .kernel import Buffer, SimKernel, SimStats, compile_kernel

__all__ = ["Buffer", "SimKernel", "SimStats", "compile_kernel"]
