"""``numba.types`` / ``numba.cuda.types`` for ported code: ``from metalbench.cuda.types
import float32, void`` and ``types.Array(types.float32, 1, "C")``.

The objects live in :mod:`metalbench.numba_compat.nbtypes` (see there)::

    >>> from metalbench.cuda import types
    >>> types.void(types.float32[:], types.int32)
    (array(float32, 1d, A), int32) -> none
"""
from ..numba_compat.nbtypes import *  # noqa: F401,F403
from ..numba_compat.nbtypes import (Array, BaseTuple, Boolean, BooleanLiteral, Complex, Container, CPointer,  # noqa: F401
                                    Dummy, Float, Integer, IntegerLiteral, List, Literal, NamedTuple,
                                    NamedUniTuple, NoneType, NPDatetime, NPTimedelta, Number, Omitted, Opaque,
                                    Optional, RangeType, RawPointer, Record, Set, Signature, SliceType,
                                    StringLiteral, Tuple, Type, UniTuple, signature)
