"""``numba.cuda.args``: argument hints for launches.

``cuda.In(a)`` sends ``a`` to the kernel without bringing the kernel's writes back,
``cuda.Out(a)`` and ``cuda.InOut(a)`` bring them back (a plain host array is ``InOut``).

    >>> import numpy as np
    >>> wrap_arg(np.zeros(2)).__class__.__name__, wrap_arg(In(np.zeros(2))).__class__.__name__
    ('InOut', 'In')
"""
from ..numba_compat.dispatcher import ArgHint, In, InOut, Out, wrap_arg  # noqa: F401

__all__ = ["ArgHint", "In", "Out", "InOut", "wrap_arg"]
