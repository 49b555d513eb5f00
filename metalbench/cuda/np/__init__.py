"""``numba.cuda.np`` for ported code (``numpy_support``)."""
