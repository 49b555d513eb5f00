"""``numba.cuda.kernels``: ``transpose`` and ``reduction`` (``Reduce``)."""
