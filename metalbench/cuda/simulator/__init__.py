"""``numba.cuda.simulator``'s importable parts: metalbench's simulator is the ``sim``
backend, so this holds only the tables ported programs read (``vector_types``)."""
