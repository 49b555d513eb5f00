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

Declarations live by group in ``floatmath.py``, ``integer.py``, ``simd.py`` and
``nodes.py`` (atomics, barriers, arrays, select: builtins lowered to their own IR
nodes, with the one atomic element-type rule). ``python -m metalbench.builtins``
regenerates what derives from the registry (``docs/language.md``, the Metal shim,
the JupyterLab extension's word list); ``tests/test_registry*.py`` check them.
"""
from __future__ import annotations

from .core import (GROUPS, Builtin, BuiltinTypeError, RegistrationError, Rule, Signature, add_builtin,
                   registry)
from . import floatmath, integer, simd, nodes  # noqa: F401,E402 - the declarations register themselves
from .nodes import ATOMIC_ELEMS, atomic_error, check_atomic

__all__ = ["registry", "Builtin", "Signature", "Rule", "RegistrationError", "BuiltinTypeError", "GROUPS",
           "add_builtin", "ATOMIC_ELEMS", "atomic_error", "check_atomic"]


# ----------------------------------------------------------------------------- the old table's API
# Derived from the registry for code that still speaks it; new code uses ``registry``.

SIMD = frozenset(b.name for b in registry.all() if b.kind == "simd")
ATOMICS = {b.name: b.extra["op"] for b in registry.all() if b.node == "Atomic"}


def is_builtin(name: str) -> bool:
    """True for a builtin function call (not the node builtins: atomics, barriers...)."""
    return name in registry and registry.get(name).kind in ("call", "simd")


def arity(name: str) -> int:
    """How many arguments builtin ``name`` takes."""
    return registry.get(name).arity


def arg_types(name: str, types: list) -> list:
    """The types the arguments of ``name`` convert to."""
    return registry.get(name).typecheck(types).params


def result_type(name: str, types: list):
    """The result type of ``name`` on arguments of ``types``.

    >>> from metalbench import types as T
    >>> result_type("exp", [T.float16]).name, result_type("simd_all", [T.bool_]).name
    ('float16', 'bool')
    """
    return registry.get(name).typecheck(types).result
