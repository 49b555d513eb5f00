"""Which outputs an MSL body uses atomically: whether it needs MLX's ``atomic_outputs=True``.

MLX's ``atomic_outputs`` declares *every* output ``device atomic<T>*``; Metal then reads and
writes them only through atomic functions, and without it an atomic function on an output is
a compile error. A ``%%metal`` cell decides it from the front end's own reading of the body and
header (:func:`atomic_outputs_needed`): the body is translated once with the outputs left
undecided, and the translator records every use of an output (:class:`AtomicUse`):

- ``atomic``: the output must *be* atomic -- an atomic function applied to it (``&out[i]``,
  ``out + k``, a pointer ``p = out + k``, a header function's parameter bound to it), or it is
  passed to a header function's ``device atomic<float>*`` parameter;
- ``cast``: it is reinterpreted as atomic (``(device atomic_float*)out``): valid either way;
- ``plain``: it is read or stored plainly, or passed to a plain pointer parameter.

Outputs used atomically and none plainly: atomic. Both: no choice compiles in Metal, an
error naming the two uses and their lines.

    >>> from metalbench import types as T
    >>> h = "void add(device atomic_float* p, float v) { atomic_fetch_add_explicit(p, v, memory_order_relaxed); }"
    >>> atomic_outputs_needed("k", "add(&out[thread_position_in_grid.x % 2], x[0]);", h,
    ...                       inputs=[("x", T.float32, 1)], outputs=[("out", T.float32, 1)])
    True
"""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import KernelTypeError, Span


@dataclass
class AtomicUse:
    """One use of an output: ``kind`` is ``atomic``, ``cast`` or ``plain`` (module
    docstring); ``what`` says how (``atomic_fetch_add_explicit``, ``stored plainly``); ``span`` is
    where, ``site`` the body line that reaches it (a header function's call), else None."""
    output: str
    kind: str
    what: str
    span: Span | None
    site: Span | None = None


def _where(u: AtomicUse) -> str:
    sp = u.site or u.span
    return f"line {sp.line}" if sp is not None else "an unknown line"


def decide(uses: list, given: bool = False) -> bool:
    """``atomic_outputs`` from the recorded uses (``given``: the user's ``--atomic``).

    >>> decide([AtomicUse("hist", "atomic", "atomic_fetch_add_explicit", None)])
    True
    >>> decide([AtomicUse("out", "cast", "(device atomic_uint*)", None), AtomicUse("out", "plain", "stored plainly", None)])
    False
    """
    if given:
        return True
    atomic = [u for u in uses if u.kind == "atomic"]
    plain = [u for u in uses if u.kind == "plain"]
    if atomic and plain:
        a, p = atomic[0], plain[0]
        same = a.output == p.output
        err = KernelTypeError(
            f"'{a.output}' is used atomically here ({a.what}), which needs MLX's atomic_outputs=True, "
            f"but {'it' if same else repr(p.output)} is also {p.what} at {_where(p)}: with "
            f"atomic_outputs every output is device atomic<T>*, which Metal reads and writes only "
            f"through atomic functions, and without it the atomic use does not compile",
            a.span,
            hint=f"use atomic_store_explicit/atomic_load_explicit for '{p.output}', or keep the outputs plain "
                 f"and reach '{a.output}' through a cast, (device atomic_float*)&{a.output}[i] (the atomic "
                 f"type of its element)")
        if a.site is not None:
            err.add_call_site(a.site)
        raise err
    return bool(atomic) or bool([u for u in uses if u.kind == "cast"]) and not plain


def atomic_output_uses(name, source, header="", *, inputs, outputs, **kw) -> list:
    """The :class:`AtomicUse` list of one translation (``translate_kernel``'s arguments,
    without ``atomic_outputs``); its errors are the translation's."""
    from .translator import translate_kernel
    uses: list = []
    translate_kernel(name, source, header, inputs=inputs, outputs=outputs, atomic_uses=uses, **kw)
    return uses


def atomic_outputs_needed(name, source, header="", *, inputs, outputs, **kw) -> bool:
    """Whether the body needs ``atomic_outputs=True`` (module docstring), from one
    translation with ``translate_kernel``'s arguments; a body that uses an output both
    atomically and plainly is a :class:`~metalbench.errors.KernelTypeError` at the atomic use."""
    return decide(atomic_output_uses(name, source, header, inputs=inputs, outputs=outputs, **kw))
