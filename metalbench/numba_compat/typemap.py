"""``overload._type_annotation.typemap`` of a compiled ``cuda.jit`` kernel: the Numba type
of each name in the kernel's body, read from its IR (what Numba's type annotation gives
after type inference). Parameters, local variables and the kernel's local/shared arrays
(``s = cuda.shared.array(10, int32)`` is ``array(int32, 1d, C)``)::

    >>> from metalbench import cuda
    >>> from metalbench.cuda import int32, void
    >>> @cuda.jit(void(int32[::1]))
    ... def f(x):
    ...     s = cuda.shared.array(10, dtype=int32)
    ...     s[0] = x[0]
    ...     x[0] = s[0] + 1
    >>> tm = next(iter(f.overloads.values()))._type_annotation.typemap
    >>> tm["s"], tm["s"].dtype
    (array(int32, 1d, C), int32)
"""
from __future__ import annotations

from .. import ir
from . import nbtypes as nbt


def _scalar(t):
    try:
        return nbt.from_dtype(t.np)
    except (TypeError, AttributeError):
        return nbt.Opaque(getattr(t, "name", str(t)))


def typemap(kir: ir.KernelIR) -> dict:
    """Name -> Numba type for the kernel's parameters, locals and arrays."""
    out = {}
    for p in kir.params:
        el = _scalar(p.type)
        out[p.name] = nbt.Array(el, max(1, p.ndim), "A") if p.kind == "buffer" else el
    for n in ir.walk(kir.body):
        if isinstance(n, ir.ArrayDecl):
            out.setdefault(n.name, nbt.Array(_scalar(n.elem), len(n.shape), "C"))
        elif isinstance(n, ir.Decl):
            out.setdefault(n.var.name, _scalar(n.var.type))
    return out


class TypeAnnotation:
    """The part of Numba's ``TypeAnnotation`` programs read: ``typemap``."""

    def __init__(self, kir: ir.KernelIR):
        self.typemap = typemap(kir)

    def __repr__(self) -> str:
        return f"<TypeAnnotation of {len(self.typemap)} names>"
