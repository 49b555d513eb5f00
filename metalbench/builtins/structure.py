"""The DSL's compile-time structure: names that shape the program rather than compute a
value (``static_range``). Declared here for their names, ``help()`` and the language
reference; the Python front end expands them (``frontend/python/compiletime.py``).

    >>> from metalbench.builtins import registry
    >>> registry.lookup("static_range", dialect="python").group
    'Compile-time structure'
"""
from __future__ import annotations

from .core import add_builtin

GROUP = "Compile-time structure"

add_builtin("static_range", group=GROUP, kind="node", node="Unrolled",
            doc="A loop unrolled at compile time (Triton's tl.static_range): the body is repeated once per value.",
            example="for k in static_range(len(W)):  acc += W[k] * x[i + k]",
            params_doc="(start=0, stop, step=1) -> compile-time ints",
            details="The bounds are compile-time ints (literals, constexprs, names computed from them, len() of "
                    "a tuple constant); inside the body the loop variable is a compile-time int, so it can index "
                    "tuple constants, size arrays and pick simdgroup matrices from an array. A `for w in W` "
                    "loop over a tuple (or list) constant, or over enumerate/zip of them, unrolls the same way. "
                    "break and continue are not allowed directly in an unrolled loop. Python-only: MSL has "
                    "#pragma unroll instead.")
