"""``numba.cuda.typing`` for ported code: ``signature`` and ``typeof``.

    >>> from metalbench.cuda import types
    >>> signature(types.int32, types.float32)
    (float32) -> int32
"""
from ...numba_compat.nbtypes import Signature, signature  # noqa: F401
from .typeof import typeof  # noqa: F401
