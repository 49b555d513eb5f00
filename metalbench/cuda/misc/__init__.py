"""``numba.cuda.misc`` for ported code (``special.literal_unroll``)."""
