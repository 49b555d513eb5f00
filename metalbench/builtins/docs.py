"""What the docs show about a builtin, printed by the real printers.

    >>> from metalbench.builtins import registry
    >>> spellings(registry.get("exp"))
    ('metal::exp(x)', 'expf(x)')
    >>> spellings(registry.get("erf"), helpers=True)
    ('mb_erf(x)', 'erff(x)', ['mb_erfc', 'mb_erf'], [])
"""
from __future__ import annotations

from .. import ir


def _sample_args(b):
    types = b.rule.samples[0]
    names = b.rule.params
    return [ir.Var(n, t) for n, t in zip(names, types)], types


def spellings(b, helpers: bool = False):
    """``(Metal, CUDA)`` text of a call with the first sample argument types (None for
    builtins without a call spelling); with ``helpers=True`` also the names of the header
    helpers each needs: ``(metal, cuda, metal_helpers, cuda_helpers)``."""
    if b.rule is None:
        texts = _node_spellings(b)
        return (texts + ([], [])) if helpers and texts else texts
    from ..codegen.cuda import CUDAPrinter
    from ..codegen.msl import MSLPrinter
    args, types = _sample_args(b)
    res = b.typecheck(list(types)).result
    out, needs = [], []
    for cls in (MSLPrinter, CUDAPrinter):
        p = cls(ir.KernelIR("k", [], []))
        out.append((b.msl if cls is MSLPrinter else b.cuda)(p, args, res))
        needs.append([h for h in p.helpers if h.startswith("mb_") and h not in ("mb_base", "mb_shfl")])
    return (out[0], out[1], needs[0], needs[1]) if helpers else (out[0], out[1])


_CUDA_ATOMICS = {"add": "atomicAdd", "sub": "atomicSub", "exchange": "atomicExch", "store": "atomicExch",
                 "cas": "atomicCAS", "load": "a volatile load", "min": "atomicMin (floats: a CAS loop)",
                 "max": "atomicMax (floats: a CAS loop)", "and": "atomicAnd", "or": "atomicOr", "xor": "atomicXor"}


def _node_spellings(b):
    """What the printers emit for the IR node a "node" builtin lowers to."""
    if b.node == "Atomic":
        return f"{b.extra['msl']}(&array[index], ..., memory_order_relaxed)", _CUDA_ATOMICS[b.extra["op"]]
    if b.node == "Barrier":
        return (f"{b.name}(mem_flags::...)",
                "__syncthreads()" if b.collective == "threadgroup" else "__syncwarp(__activemask())")
    if b.node == "Fence":
        return ("atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device)",
                "__threadfence()")
    if b.node == "ArrayDecl":
        return (("threadgroup T name[n];", "__shared__ T name[n];") if b.extra["space"] == "threadgroup"
                else ("T name[n];", "T name[n];"))
    if b.node == "Select":
        return "select(a, b, c)", "c ? b : a"
    return None
