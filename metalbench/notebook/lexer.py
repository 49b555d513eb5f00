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

# Kept in step with extension/src/metal.ts (the JupyterLab highlighter).
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

METAL_BUILTINS = (
    "threadgroup_barrier simdgroup_barrier mem_flags mem_none mem_device mem_threadgroup mem_texture "
    "memory_order memory_order_relaxed memory_scope atomic_load_explicit atomic_store_explicit "
    "atomic_exchange_explicit atomic_compare_exchange_weak_explicit atomic_fetch_add_explicit "
    "atomic_fetch_sub_explicit atomic_fetch_and_explicit atomic_fetch_or_explicit atomic_fetch_xor_explicit "
    "atomic_fetch_min_explicit atomic_fetch_max_explicit simd_sum simd_product simd_min simd_max simd_and "
    "simd_or simd_xor simd_prefix_inclusive_sum simd_prefix_exclusive_sum simd_prefix_inclusive_product "
    "simd_prefix_exclusive_product simd_broadcast simd_broadcast_first simd_shuffle simd_shuffle_up "
    "simd_shuffle_down simd_shuffle_xor simd_shuffle_rotate_up simd_shuffle_rotate_down simd_all simd_any "
    "simd_ballot quad_sum quad_broadcast quad_shuffle simdgroup_load simdgroup_store simdgroup_multiply "
    "simdgroup_multiply_accumulate abs acos acosh asin asinh atan atan2 atanh ceil clamp copysign cos "
    "cosh cospi divide dot cross distance length normalize exp exp2 exp10 fabs fdim floor fma fmax fmin "
    "fmod fract isfinite isinf isnan ldexp log log2 log10 max min mix pow powr rint round rsqrt select "
    "sign sin sinh sqrt step tan tanh trunc popcount clz ctz rotate mad mulhi as_type metal fast precise"
).split()

THREAD_ATTRIBUTES = (
    "thread_position_in_grid threads_per_grid thread_position_in_threadgroup threads_per_threadgroup "
    "threadgroup_position_in_grid threadgroups_per_grid thread_index_in_threadgroup "
    "thread_index_in_simdgroup simdgroup_index_in_threadgroup simdgroups_per_threadgroup "
    "thread_index_in_quadgroup quadgroup_index_in_threadgroup quadgroups_per_threadgroup "
    "thread_execution_width threads_per_simdgroup dispatch_quadgroups_per_threadgroup "
    "dispatch_simdgroups_per_threadgroup dispatch_threads_per_threadgroup grid_origin grid_size buffer"
).split()


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
            (words(tuple(THREAD_ATTRIBUTES), suffix=r"\b"), Name.Builtin.Pseudo),
            (words(tuple(METAL_BUILTINS), suffix=r"\b"), Name.Builtin),
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
