"""A Pygments lexer for the Metal Shading Language (C++14 plus Metal's vocabulary).

Registered as the ``metal`` lexer through the ``pygments.lexers`` entry point::

    >>> from pygments import highlight
    >>> from pygments.formatters import HtmlFormatter
    >>> "kernel" in highlight("kernel void k(device float* a [[buffer(0)]]) {}",
    ...                       MetalLexer(), HtmlFormatter())
    True
"""
from __future__ import annotations

import re

from pygments.lexer import inherit, words
from pygments.lexers.c_cpp import CppLexer
from pygments.token import Keyword, Name

from ..builtins.derive import metal_builtin_words, thread_attribute_words

# Kept in step with extension/src/metal.ts (the JupyterLab highlighter); the builtin and
# attribute words below are generated for both.
METAL_KEYWORDS = ("device", "threadgroup", "threadgroup_imageblock", "constant", "thread", "ray_data",
                  "object_data", "kernel", "vertex", "fragment", "visible", "stitchable", "mesh", "object")

_SCALARS = ("bool", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half", "float",
            "bfloat")
METAL_TYPE_RE = (r"(?:packed_)?(?:" + "|".join(_SCALARS) + r")[234]?\b|(?:half|float|bfloat)[234]x[234]\b"
                 r"|u?int(?:8|16|32|64)_t\b|size_t\b|ptrdiff_t\b")
METAL_OTHER_TYPES = ("bfloat16_t", "float16_t", "float32_t", "atomic_int", "atomic_uint", "atomic_bool",
                     "atomic_float", "atomic", "sampler", "texture1d", "texture2d", "texture3d", "texturecube",
                     "depth2d", "array", "simdgroup_matrix", "simdgroup_float8x8", "simdgroup_half8x8",
                     "simdgroup_bfloat8x8", "vec", "matrix", "packed_vec", "uint3", "uint2")

# The builtin registry's words (metalbench/builtins/derive.py), the same lists the
# JupyterLab extension highlights with (extension/src/metalWords.ts, generated from it).
METAL_BUILTINS = tuple(metal_builtin_words())
THREAD_ATTRIBUTES = tuple(thread_attribute_words()) + ("buffer",)


class MetalLexer(CppLexer):
    """Metal Shading Language: C++ plus address spaces, vector types, ``[[attributes]]``
    and the Metal standard library."""

    name = "Metal"
    aliases = ["metal", "msl"]
    filenames = ["*.metal"]
    mimetypes = ["text/x-metal"]
    priority = 0.1

    tokens = {
        "statements": [
            (words(METAL_KEYWORDS, suffix=r"\b"), Keyword),
            (r"\[\[\s*[A-Za-z_]\w*(?:\s*\([^)\]]*\))?\s*\]\]", Name.Decorator),
            (METAL_TYPE_RE, Keyword.Type),
            (words(METAL_OTHER_TYPES, suffix=r"\b"), Keyword.Type),
            (words(THREAD_ATTRIBUTES, suffix=r"\b"), Name.Builtin.Pseudo),
            (words(METAL_BUILTINS, suffix=r"\b"), Name.Builtin),
            inherit,
        ],
    }

    def analyse_text(text):
        if re.search(r"\[\[\s*(thread_position_in_grid|buffer\(\d+\)|kernel)", text):
            return 0.5
        if "thread_position_in_grid" in text or "threadgroup_barrier" in text:
            return 0.3
        return 0.0


def highlight_html(code: str, lexer: str = "metal") -> str:
    """``code`` as highlighted HTML with inline styles (no stylesheet needed in notebooks).

    >>> "<span" in highlight_html("uint i = thread_position_in_grid.x;")
    True
    """
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer
    lx = MetalLexer() if lexer in ("metal", "msl", "cuda") else PythonLexer()
    return highlight(code, lx, HtmlFormatter(noclasses=True, nowrap=False, style="default"))
