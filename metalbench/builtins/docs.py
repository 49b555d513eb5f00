"""What the docs show about a builtin, printed by the real printers.

    >>> from metalbench.builtins import registry
    >>> spellings(registry.get("exp"))
    ('metal::exp(x)', 'expf(x)')
"""
from __future__ import annotations

from .. import ir
from .. import types as T


def _sample_args(b):
    types = b.rule.samples[0]
    names = b.rule.params
    return [ir.Var(n, t) for n, t in zip(names, types)], types


def spellings(b) -> tuple[str, str] | None:
    """``(Metal, CUDA)`` text of a call with the first sample argument types, and the
    helper functions it needs named; None for node builtins."""
    if b.rule is None:
        if b.node == "Atomic":
            return f"{b.extra['msl']}(&array[index], ..., memory_order_relaxed)", \
                {"add": "atomicAdd", "sub": "atomicSub", "exchange": "atomicExch", "store": "atomicExch",
                 "cas": "atomicCAS", "load": "a volatile load", "min": "atomicMin (floats: a CAS loop)",
                 "max": "atomicMax (floats: a CAS loop)", "and": "atomicAnd", "or": "atomicOr",
                 "xor": "atomicXor"}[b.extra["op"]]
        if b.node == "Barrier":
            return (f"{b.name}(mem_flags::...)",
                    "__syncthreads()" if b.extra["scope"] == "threadgroup" else "__syncwarp(__activemask())")
        if b.node == "ArrayDecl":
            return (("threadgroup T name[n];", "__shared__ T name[n];") if b.extra["space"] == "threadgroup"
                    else ("T name[n];", "T name[n];"))
        if b.node == "Select":
            return "select(a, b, c) (vectors), c ? b : a (scalars)", "c ? b : a"
        return None
    from ..codegen.cuda import CUDAPrinter
    from ..codegen.msl import MSLPrinter
    args, types = _sample_args(b)
    res = b.typecheck(list(types)).result
    out = []
    for cls in (MSLPrinter, CUDAPrinter):
        p = cls(ir.KernelIR("k", [], []))
        text = (b.msl if cls is MSLPrinter else b.cuda)(p, args, res)
        helpers = [h for h in p.helpers if h.startswith("mb_") and h not in ("mb_base", "mb_shfl")]
        if helpers:
            text += f"  (helper {', '.join(helpers)} in the header)"
        out.append(text)
    return out[0], out[1]


def sample_type_words(b) -> str:
    """The first sample's types, for the reference (``float``)."""
    return ", ".join(T.elem_of(t).msl if isinstance(t, T.ScalarType) else t.msl for t in b.rule.samples[0])
