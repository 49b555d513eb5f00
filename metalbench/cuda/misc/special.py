"""``numba.cuda.misc.special``: ``literal_unroll``.

``for x in literal_unroll(tup):`` iterates a tuple whose items may have different types;
metalbench unrolls every ``for`` over a compile-time tuple, so ``literal_unroll`` marks
the loop and changes nothing. Called from Python it returns its argument.

    >>> literal_unroll((1, 2.0))
    (1, 2.0)
"""


def literal_unroll(container):
    return container


def _unroll_hook(tr, call):
    if len(call.args) != 1 or call.keywords:
        from ...errors import KernelTypeError
        raise tr.err(KernelTypeError, "literal_unroll(container) takes one tuple", call)
    return tr.expr(call.args[0])


literal_unroll.__metalbench_intrinsic__ = _unroll_hook
literal_unroll.__metalbench_static_call__ = True     # of a compile-time tuple: that tuple

__all__ = ["literal_unroll"]
