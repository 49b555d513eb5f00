"""What a simulator launch reports without stopping: the unchecked launch's out-of-bounds
accesses (:class:`~metalbench.errors.OutOfBoundsWarning`, one per launch, counted per
buffer) and the checked launch's lower-severity findings
(:class:`~metalbench.errors.KernelCheckWarning`). Warnings point at the user's frame.

    >>> from metalbench.sim.memory import OOBCount
    >>> ob = OOBCount(); ob.add(0, 3, -1, 8)
    >>> print(oob_message("prev", [(None, "x", "device", "read")], ob))
    kernel 'prev' accessed memory out of bounds (an unchecked launch runs as a GPU would: reads outside a buffer give 0, writes and atomics outside are dropped):
      'x' (size 8): 3 reads, index -1 at line ?
    run it with checked=True to report the threads and lines as findings
"""
from __future__ import annotations

import os
import sys
import warnings

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

_WHAT = {"read": ("read", "reads"), "write": ("write", "writes"), "atomic": ("atomic", "atomics")}


def warn_user(message: str, category) -> None:
    """``warnings.warn`` attributed to the first caller outside the metalbench package
    (the user's launch line), so the default filter shows it there."""
    f, level = sys._getframe(0), 1
    while f is not None and f.f_code.co_filename.startswith(_PKG):
        f, level = f.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def oob_message(kernel: str, nodes: list, ob) -> str:
    """The text of an unchecked launch's :class:`~metalbench.errors.OutOfBoundsWarning`:
    per buffer, how many reads/writes/atomics fell outside, an example index and the lines."""
    per: dict = {}
    for k, n in sorted(ob.counts.items()):
        node, buf, _space, access = nodes[k]
        label = repr(buf)
        if ob.names.get(k, buf) != buf:  # through a device function's parameter
            label = f"{ob.names[k]!r} (as {buf!r})"
        b = per.setdefault(label, {"size": ob.sizes[k], "acc": {}, "lines": [], "example": ob.example[k]})
        b["acc"][access] = b["acc"].get(access, 0) + n
        span = getattr(node, "span", None)
        line = span.line if span is not None else "?"
        if line not in b["lines"]:
            b["lines"].append(line)
    rows = []
    for label, b in per.items():
        counts = ", ".join(f"{n} {_WHAT.get(a, (a, a))[n != 1]}" for a, n in b["acc"].items())
        lines = ", ".join(map(str, b["lines"][:4])) + (", ..." if len(b["lines"]) > 4 else "")
        rows.append(f"  {label} (size {b['size']}): {counts}, index {b['example']} at line{'s' if len(b['lines']) > 1 else ''} {lines}")
    return "\n".join([f"kernel {kernel!r} accessed memory out of bounds (an unchecked launch runs as a GPU would: "
                      "reads outside a buffer give 0, writes and atomics outside are dropped):"] + rows
                     + ["run it with checked=True to report the threads and lines as findings"])


def warning_message(findings: list) -> str:
    """The text of a checked launch's :class:`~metalbench.errors.KernelCheckWarning`: its
    lower-severity findings (the first ones in full) and what to do."""
    from .findings import _HINTS
    parts = [f.describe() for f in findings[:3]]
    if len(findings) > 3:
        parts += [f"{len(findings) - 3} more:"] + ["  - " + f.summary() for f in findings[3:]]
    hint = _HINTS.get(findings[0].kind)
    return "\n".join(parts + ([f"hint: {hint}"] if hint else []))
