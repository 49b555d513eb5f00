"""The builtin registry: every builtin function is one declaration (NVIDIA Warp's
``add_builtin`` model) that drives typing, the simulator, both printers and the docs.

    from metalbench.builtins import registry
    b = registry.lookup(name, dialect="msl")   # "msl" | "python" | "numba"; a Builtin or None
    sig = b.typecheck(arg_types, span)          # Signature(params=[types the args convert to], result=type)
    registry.all()                              # every Builtin, in a stable order

For example::

    >>> from metalbench import types as T
    >>> sig = registry.lookup("max").typecheck([T.int32, T.uint32])
    >>> [t.name for t in sig.params], sig.result.name
    (['uint32', 'uint32'], 'uint32')

Declarations live by group in ``floatmath.py``, ``integer.py``, ``simd.py``, ``quad.py``,
``simdgroup_matrix.py`` and ``nodes.py`` (atomics, barriers, arrays, select: builtins lowered to their own IR
nodes, with the one atomic element-type rule). ``python -m metalbench.builtins``
regenerates what derives from the registry (``docs/language.md``, the Metal shim,
the JupyterLab extension's word list); ``tests/test_registry*.py`` check them.
"""
from __future__ import annotations

from .core import (GROUPS, Builtin, BuiltinTypeError, RegistrationError, Rule, Signature, add_builtin,
                   registry)
from . import floatmath, integer, simd, quad, simdgroup_matrix, nodes, structure  # noqa: F401,E402 - they register themselves
from .nodes import ATOMIC_ELEMS, atomic_error, check_atomic

__all__ = ["registry", "Builtin", "Signature", "Rule", "RegistrationError", "BuiltinTypeError", "GROUPS",
           "add_builtin", "ATOMIC_ELEMS", "atomic_error", "check_atomic"]
