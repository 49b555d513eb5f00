"""MSL kernel bodies (what ``mx.fast.metal_kernel`` takes) -> IR, with tree-sitter-cpp.

MLX users write the *body* of a Metal kernel plus an optional header; MLX writes the
signature. This front end parses both the same way and produces a
:class:`~metalbench.ir.KernelIR` for the simulator and the CUDA printer::

    >>> from metalbench import types as T
    >>> k = translate_kernel("myexp", "uint i = thread_position_in_grid.x;\\n"
    ...                      "out[i] = metal::exp(inp[i]);",
    ...                      inputs=[("inp", T.float32, 1)], outputs=[("out", T.float32, 1)])
    >>> print(ir.dump(k.body))
    uint32 i = thread_position_in_grid.x
    out[i] = exp(inp[i])

How the C++ grammar copes with Metal: the address-space qualifiers (``device``,
``threadgroup``, ``constant``, ``thread``) are masked to spaces of the same length
before parsing (so lines and columns stay exact) and remembered by position; the
body is wrapped as ``void __body() {`` on its own line, so body line n is tree line n+1.

Every typed expression is built by the semantic layer (:mod:`metalbench.semantics`,
MSL rules); this package maps MSL syntax onto it:

- ``preprocess.py``: the C preprocessor (macros, ``#if``, ``#pragma``, includes), line for line;
- ``parse.py``: tree-sitter parsing and the masking that lets the C++ grammar read Metal;
  ``literals.py``: number literals;
- ``symbols.py``: what names are bound to (buffers, pointers, ``x_shape``, templates);
- ``translator.py``: :class:`Translator` (scopes, types, the error net) and
  :func:`translate_kernel`;
- ``statements.py``, ``expressions.py``, ``memory.py`` (pointers as
  :class:`~metalbench.semantics.views.View` values, locations),
  ``calls.py`` (casts, builtins, atomics), ``header.py`` (header functions and
  templates), ``mlx_utils.py`` (MLX's ``elem_to_loc`` & co.), ``simdgroup.py``
  (``simdgroup_matrix``): the syntax, as mixins;
- C++ (``cxx_decls.py``, ``cxx_templates.py``, ``cxx_names.py``, ``cxx_objects.py``,
  ``cxx_calls.py``, ``cxx_assign.py``): namespaces, classes and class templates, objects
  as bundles of locals, member functions translated inline where they are called.
"""
from __future__ import annotations

from ... import ir  # noqa: F401  (the doctest above uses it)
from .literals import _literal
from .mlx_utils import UTILS
from .parse import _mask, _parse
from .symbols import METAL_ONLY, Buf, Ptr, ShapeArr
from .translator import Translator, translate_kernel

__all__ = ["translate_kernel", "Translator", "UTILS", "METAL_ONLY", "Buf", "Ptr", "ShapeArr", "_parse", "_mask",
           "_literal"]
