"""``numba.cuda.core`` for ported code. Numba's compiler internals (IR, passes, type
inference) have no counterpart: metalbench translates kernels with its own front end
(``metalbench.frontend.python``) into its own IR (``metalbench.ir``)."""
