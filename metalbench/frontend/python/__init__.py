"""Python DSL front end: a kernel function's ``ast`` into the IR, with MSL's typing.

The DSL is a Python subset with Metal's vocabulary (see ``metalbench.dsl``). A
kernel is translated once per specialisation (argument dtypes, ndims, constexpr
values); globals and closure values are compile-time constants, as in Numba::

    >>> import metalbench as mb
    >>> from metalbench.dsl import *
    >>> @mb.kernel
    ... def twice(x, out: mb.Out):
    ...     i = thread_position_in_grid.x
    ...     if i < x.size:
    ...         out[i] = 2 * x[i]
    >>> import numpy as np
    >>> print(twice.ir(np.ones(4, np.float32)).body[-1].then[0].value.type)
    float32

Typing follows MSL: the usual arithmetic conversions (``int`` with ``uint`` gives
``uint``), unsigned wrap-around, an unsuffixed float literal is a ``float`` (so
``0.5 * h`` with ``h`` a half is a float). Python's ``/`` is true division (two
integers give a float); ``//`` and ``%`` on integers round toward zero as in C.
A local variable's type is the common type of every value assigned to it (like
Numba's unification), unless annotated (``acc: float32 = 0``).

Every typed expression is built by the semantic layer (:mod:`metalbench.semantics`);
this package maps Python syntax onto it:

- ``parse.py``: source recovery and ``ast`` parsing (:func:`parse_function`), spans with
  character columns;
- ``specs.py``: kernel parameter markers (``mb.Out``, ``mb.constexpr``), ``ArgSpec``,
  buffers and bindings, dtype resolution;
- ``translator.py``: :class:`FunctionTranslator` (names, locals and their typing
  fixpoint, the error net) and :func:`translate_kernel`;
- ``statements.py``, ``expressions.py``, ``calls.py`` (builtins, atomics, casts),
  ``functions.py`` (``@mb.func`` device functions): the syntax, as mixins of the translator.
"""
from __future__ import annotations

from .parse import ParsedFunction, node_span, parse_function
from .specs import ArgSpec, Binding, BufInfo, ConstExpr, Module, Out, OutSpec, constexpr, resolve_dtype
from .compiletime import size_parameters
from .translator import FunctionTranslator, translate_kernel

__all__ = ["ParsedFunction", "parse_function", "node_span", "ArgSpec", "Binding", "BufInfo", "ConstExpr",
           "Module", "Out", "OutSpec", "constexpr", "resolve_dtype", "FunctionTranslator",
           "translate_kernel", "size_parameters"]
