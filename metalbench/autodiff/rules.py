"""Derivative rules: how the adjoint of a result flows to the arguments.

The rules of builtins live in the builtin registry, one field per builtin
(``Builtin.grad``, see ``metalbench.builtins.core``): ``"zero"`` for piecewise-constant
functions (``floor``, ``sign``, ``step``: their derivative is zero where it exists),
a tuple with one formula per parameter (``None`` where that argument gets no
cotangent, such as ``ldexp``'s integer exponent), or ``None`` when the builtin has
no rule (an active value reaching it is an error naming the builtin and the line).

The rules of operators and casts are here, in the same formula language
(:mod:`metalbench.autodiff.formula`)::

    >>> rule_of_operator("/")
    ('grad / b', '-grad * result / b')
    >>> builtin_rule("exp")
    ('grad * result',)
    >>> builtin_rule("floor")
    'zero'
"""
from __future__ import annotations

import functools

from .formula import Formula

OPERATORS = {
    "+": ("grad", "grad"),
    "-": ("grad", "-grad"),
    "*": ("grad * b", "grad * a"),
    "/": ("grad / b", "-grad * result / b"),
    "neg": ("-grad",),
}


def rule_of_operator(op: str):
    """The formulas of binary operator ``op`` (arguments ``a`` and ``b``), or None."""
    return OPERATORS.get(op)


def builtin_rule(name: str):
    """The registry's derivative rule of builtin ``name`` (``"zero"``, formulas or None)."""
    from ..builtins import registry
    if name not in registry:
        return None
    return getattr(registry.get(name), "grad", None) or TABLE.get(name)


@functools.lru_cache(maxsize=None)
def formula(text: str) -> Formula:
    """The parsed formula (cached: every call site builds from the same parse)."""
    return Formula(text)


# ----------------------------------------------------------------------------- the table
# (moves into the registry declarations: Builtin.grad)

PI = "3.141592653589793"
LN2 = "0.6931471805599453"
LN10 = "2.302585092994046"

TABLE = {
    # exponentials, logarithms, powers
    "exp": ("grad * result",),
    "exp2": (f"grad * result * {LN2}",),
    "exp10": (f"grad * result * {LN10}",),
    "log": ("grad / x",),
    "log2": (f"grad / (x * {LN2})",),
    "log10": (f"grad / (x * {LN10})",),
    "sqrt": ("grad * 0.5 / result",),
    "rsqrt": ("grad * -0.5 * result / x",),
    "pow": ("0 if y == 0 else grad * y * pow(x, y - 1)", "grad * result * log(x) if x > 0 else 0"),
    "powr": ("0 if y == 0 else grad * y * powr(x, y - 1)", "grad * result * log(x) if x > 0 else 0"),
    "log1p": ("grad / (1 + x)",),
    "expm1": ("grad * (result + 1)",),
    "cbrt": ("grad / (3 * result * result)",),
    "ldexp": ("ldexp(grad, k)", None),
    # trigonometry
    "sin": ("grad * cos(x)",),
    "cos": ("-grad * sin(x)",),
    "tan": ("grad * (1 + result * result)",),
    "asin": ("grad * rsqrt(1 - x * x)",),
    "acos": ("-grad * rsqrt(1 - x * x)",),
    "atan": ("grad / (1 + x * x)",),
    "atan2": ("grad * y / (x * x + y * y)", "-grad * x / (x * x + y * y)"),
    "sinh": ("grad * cosh(x)",),
    "cosh": ("grad * sinh(x)",),
    "tanh": ("grad * (1 - result * result)",),
    "asinh": ("grad * rsqrt(x * x + 1)",),
    "acosh": ("grad * rsqrt(x * x - 1)",),
    "atanh": ("grad / (1 - x * x)",),
    "sinpi": (f"grad * {PI} * cospi(x)",),
    "cospi": (f"-grad * {PI} * sinpi(x)",),
    "tanpi": (f"grad * {PI} * (1 + result * result)",),
    # rounding and remainders
    "floor": "zero", "ceil": "zero", "trunc": "zero", "round": "zero", "rint": "zero",
    "fract": ("grad",),
    "fmod": ("grad", "-grad * trunc(x / y)"),
    "divide": ("grad / y", "-grad * result / y"),
    # other float functions
    "copysign": ("grad if signbit(x) == signbit(y) else -grad", None),
    "hypot": ("grad * x / result if result > 0 else 0", "grad * y / result if result > 0 else 0"),
    "fdim": ("grad if x > y else 0", "-grad if x > y else 0"),
    "step": "zero",
    "fma": ("grad * y", "grad * x", "grad"),
    "mix": ("grad * (1 - a)", "grad * a", "grad * (y - x)"),
    "smoothstep": (
        "w = edge1 - edge0; t = saturate((x - edge0) / w); grad * 6 * t * (1 - t) * (t - 1) / w",
        "w = edge1 - edge0; t = saturate((x - edge0) / w); -grad * 6 * t * (1 - t) * t / w",
        "w = edge1 - edge0; t = saturate((x - edge0) / w); grad * 6 * t * (1 - t) / w"),
    "saturate": ("grad if x > 0 and x < 1 else 0",),
    "fabs": ("grad * sign(x)",),
    # two-argument min/max follow MLX: ties send the cotangent to the second argument
    "fmin": ("grad if x < y or isnan(y) else 0", "0 if x < y or isnan(y) else grad"),
    "fmax": ("grad if x > y or isnan(y) else 0", "0 if x > y or isnan(y) else grad"),
    "fmin3": ("grad if x <= y and x <= z else 0", "grad if y < x and y <= z else 0",
              "grad if z < x and z < y else 0"),
    "fmax3": ("grad if x >= y and x >= z else 0", "grad if y > x and y >= z else 0",
              "grad if z > x and z > y else 0"),
    "erf": ("grad * 1.1283791670955126 * exp(-x * x)",),
    "erfc": ("-grad * 1.1283791670955126 * exp(-x * x)",),
    # numeric (integer arguments are never active)
    "abs": ("grad * sign(x)",),
    "min": ("grad if x < y else 0", "0 if x < y else grad"),
    "max": ("grad if x > y else 0", "0 if x > y else grad"),
    "clamp": ("grad if x >= y and x <= z else 0", "grad if x < y else 0", "grad if x > z and x >= y else 0"),
    "sign": "zero",
    "max3": ("grad if x >= y and x >= z else 0", "grad if y > x and y >= z else 0",
             "grad if z > x and z > y else 0"),
    "min3": ("grad if x <= y and x <= z else 0", "grad if y < x and y <= z else 0",
             "grad if z < x and z < y else 0"),
    "median3": ("grad if (x >= y) != (x >= z) or x == y or x == z else 0",
                "mx = (x >= y) != (x >= z) or x == y or x == z; "
                "grad if not mx and ((y >= x) != (y >= z) or y == z) else 0",
                "mx = (x >= y) != (x >= z) or x == y or x == z; my = (y >= x) != (y >= z) or y == z; "
                "grad if not mx and not my else 0"),
    # SIMD-group functions: every lane runs the formula (no simd call under a condition)
    "simd_sum": ("simd_sum(grad)",),
    "simd_product": ("simd_sum(grad) * result / x",),
    "simd_max": ("s = simd_sum(grad); n = simd_sum(1.0 if x == result else 0.0); s / n if x == result else 0",),
    "simd_min": ("s = simd_sum(grad); n = simd_sum(1.0 if x == result else 0.0); s / n if x == result else 0",),
    "simd_prefix_inclusive_sum": ("simd_sum(grad) - simd_prefix_exclusive_sum(grad)",),
    "simd_prefix_exclusive_sum": ("simd_sum(grad) - simd_prefix_inclusive_sum(grad)",),
    "simd_broadcast": ("s = simd_sum(grad); s if thread_index_in_simdgroup == lane else 0", None),
    "simd_broadcast_first": ("s = simd_sum(grad); s if simd_is_first() else 0",),
    "simd_shuffle_xor": ("simd_shuffle_xor(grad, mask)", None),
    "simd_shuffle_down": ("u = simd_shuffle_up(grad, delta); l = thread_index_in_simdgroup; "
                          "(u if l >= delta else 0) + (grad if l + delta >= 32 else 0)", None),
    "simd_shuffle_up": ("u = simd_shuffle_down(grad, delta); l = thread_index_in_simdgroup; "
                        "(u if l + delta < 32 else 0) + (grad if l < delta else 0)", None),
    "simd_shuffle_rotate_down": ("simd_shuffle_rotate_up(grad, delta)", None),
    "simd_shuffle_rotate_up": ("simd_shuffle_rotate_down(grad, delta)", None),
}
