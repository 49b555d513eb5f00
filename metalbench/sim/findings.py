"""Checked mode's findings: what a finding is (kind, buffer, index, lines, threads), how
it reads in an error message, and the error that carries them (:func:`make_error`).

    >>> f = Finding("out-of-bounds", "x", "device", [7], [(7, 0, 0)], [None], ["read"], size=4)
    >>> f.summary()
    "out-of-bounds 'x' [7] at ?, thread (7, 0, 0)"
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..errors import KernelCheckError

# Findings shown in full in the error message; the rest get one line each.
SHOWN_IN_FULL = 3
# Lower-severity kinds: warned about (mb.KernelCheckWarning), never raised.
WARNING_KINDS = frozenset({"same-value write", "misaligned vector access", "shift count"})


def max_steps(checked: bool) -> int:
    """Iterations one loop may run per entry before it is reported as runaway
    (``METALBENCH_MAX_STEPS``; unchecked launches get twice as many).

        >>> max_steps(True) >= 1
        True
    """
    n = int(os.environ.get("METALBENCH_MAX_STEPS", "10000000"))
    return n if checked else 2 * n


def pool_member(parts, index: int):
    """``(name, index)`` of element ``index`` of an array pool (several arrays laid
    out in one: ``ir.ArrayDecl.parts``, ``(name, start, length)`` each) in the array the
    user declared; past the end, in the last one.

        >>> pool_member((("a", 0, 8), ("b", 8, 8)), 11)
        ('b', 3)
    """
    name, start = parts[0][0], parts[0][1]
    for nm, st, _ in parts:
        if index >= st:
            name, start = nm, st
    return name, index - start


class DivergentBarrier(Exception):
    """A threadgroup barrier reached by only part of a threadgroup."""

    def __init__(self, k, bad_groups, m):
        super().__init__(k)
        self.k, self.bad_groups, self.m = k, bad_groups, m


@dataclass(eq=False)
class Finding:
    """One kind of problem at one place (several elements or threads are summarised
    in ``count``). ``threads`` are ``thread_position_in_grid`` tuples: for a race the
    two threads, in the order of ``spans``/``accesses``.

        >>> Finding("division by zero", None, None, [], [(3, 0, 0)], [], ["divide"]).kind
        'division by zero'
    """
    kind: str
    buffer: str | None
    space: str | None
    index: list
    threads: list
    spans: list
    accesses: list
    count: int = 1
    kernel: str = ""
    size: int | None = None
    extra: dict = field(default_factory=dict)

    @property
    def line(self):
        """The (first) user line number involved, or None."""
        return self.spans[0].line if self.spans and self.spans[0] is not None else None

    @property
    def lines(self):
        return [s.line if s is not None else None for s in self.spans]

    def __getitem__(self, key):  # findings used to be dicts: keep f["kind"] working
        return getattr(self, key)

    def summary(self) -> str:
        """One line: kind, buffer, index, line(s), thread(s)."""
        where = "/".join(f"line {ln}" for ln in self.lines if ln is not None) or "?"
        buf = f" {self.buffer!r}" if self.buffer else ""
        idx = f" [{self.index[0]}]" if self.index else ""
        n = f" ({self.count} times)" if self.count > 1 else ""
        return f"{self.kind}{buf}{idx} at {where}, thread {self.threads[0] if self.threads else '?'}{n}"

    def describe(self) -> str:
        """The full text: what, where, which threads, with the user's lines shown."""
        head = _describe_head(self)
        ex = [s.excerpt() for s in self.spans if s is not None]
        seen, uniq = set(), []
        for e in ex:
            if e not in seen:
                seen.add(e)
                uniq.append(e)
        return "\n".join([head] + uniq)

    def __str__(self):
        return self.describe()


_VERB = {"read": "reads", "write": "writes", "atomic": "atomically updates"}


def _space_word(space):
    return {"threadgroup": "threadgroup array", "device": "device buffer", "constant": "constant buffer",
            "thread": "thread-local array"}.get(space, "buffer")


def _describe_head(f: Finding) -> str:
    k = f" in kernel {f.kernel!r}" if f.kernel else ""
    many = f" ({f.count} occurrences)" if f.count > 1 else ""
    thr = ", ".join(map(str, f.threads[:4]))
    if f.kind == "data race":
        (ta, tb), (aa, ab) = f.threads[:2], f.accesses[:2]
        la, lb = (ln if ln is not None else "?" for ln in f.lines[:2])
        when = ("in the same barrier interval" if f.extra.get("same_group", True)
                else "from different threadgroups (no barrier orders them)")
        if f.extra.get("same_simd"):
            # only lanes of one SIMD-group race here: say why that is still a race
            when += (" (lanes of one SIMD-group: Metal orders their memory accesses only through a "
                     "simdgroup_barrier or a SIMD-group function they all run between them, such as simd_sum "
                     "or simd_shuffle)")
        also = [n for n in f.extra.get("aliases", []) if n != f.buffer]
        buf = f"{f.buffer!r}" + (f" (the same array as {', '.join(map(repr, also))})" if also else "")
        return (f"data race on {_space_word(f.space)} {buf} at index {f.index[0]}{k}: "
                f"thread {ta} {_VERB.get(aa, aa)} it at line {la} and thread {tb} "
                f"{_VERB.get(ab, ab)} it at line {lb}, {when}{many}")
    if f.kind == "same-value write":
        (ta, tb) = f.threads[:2]
        la, lb = (ln if ln is not None else "?" for ln in f.lines[:2])
        where = f"line {la}" if la == lb else f"lines {la} and {lb}"
        return (f"several threads write the same value to {_space_word(f.space)} {f.buffer!r} at index "
                f"{f.index[0]}{k}: threads {ta} and {tb} at {where}{many}; a GPU stores that value whichever "
                f"thread wins, but it is a data race in Metal's memory model")
    if f.kind == "uninitialised read" and f.space == "device":
        what = "atomic update" if f.accesses and f.accesses[0] == "atomic" else "read"
        return (f"uninitialised {what} of output {f.buffer!r} at index {f.index[0]}{k}: it was launched without "
                f"init_value (garbage on a GPU; poison on the simulator) and no thread has written the element "
                f"yet; by thread(s) {thr}{many}")
    if f.kind == "uninitialised read" and f.space == "thread":
        return (f"uninitialised read of thread-local array {f.buffer!r} at index {f.index[0]}{k}: the reading "
                f"thread has not written the element (private memory is undefined until written; zero on the "
                f"simulator); by thread(s) {thr}{many}")
    if f.kind == "misaligned vector access":
        x = f.extra
        what = {"read": "read of", "write": "write to"}.get(f.accesses[0] if f.accesses else "", "access to")
        return (f"misaligned {x.get('vtype')} {what} {_space_word(f.space)} {f.buffer!r} at byte offset "
                f"{x.get('byte')}{k}: Metal requires a {x.get('vtype')} access to be {x.get('align')}-byte aligned "
                f"(undefined on a GPU; the simulator accesses the elements); by thread(s) {thr}{many}")
    if f.kind == "uninitialised read":
        return (f"uninitialised read of {_space_word(f.space)} {f.buffer!r} at index {f.index[0]}{k}: "
                f"no thread of the threadgroup has written it yet; read by thread(s) {thr}{many}")
    if f.kind == "inactive lane read":
        return (f"{f.extra.get('builtin', 'simd_shuffle')} reads lane {f.index[0]} of its SIMD-group{k}, which is "
                f"inactive there (masked off by divergent control flow, or past the threads of a partial "
                f"SIMD-group): the value is undefined on Metal; by thread(s) {thr}{many}")
    if f.kind == "division by zero":
        what = "%" if f.accesses and f.accesses[0] == "modulo" else "/"
        return f"integer division by zero ({what}){k} by thread(s) {thr}{many}"
    if f.kind == "shift count":
        op = f.accesses[0] if f.accesses else "<<"
        return (f"shift by {f.index[0] if f.index else '?'} ({op}) of a {f.extra.get('width', '?')}-bit value{k}: "
                f"a count below 0 or of the width or more is undefined in MSL (the simulator takes it modulo "
                f"the width, a GPU may not: PTX gives 0); by thread(s) {thr}{many}")
    if f.kind == "runaway loop":
        return (f"runaway loop{k}: a loop ran more than {f.extra.get('limit')} iterations "
                f"(METALBENCH_MAX_STEPS sets the limit)")
    if f.kind == "divergent barrier":
        return (f"divergent barrier{k}: threadgroup(s) {', '.join(map(str, f.extra.get('groups', [])))} "
                f"reached threadgroup_barrier with only part of their threads")
    if f.kind == "out-of-bounds":
        what = {"read": "read of", "write": "write to", "atomic": "atomic on"}.get(
            f.accesses[0] if f.accesses else "", "access to")
        idx = f.index[0] if len(set(f.index)) == 1 else f.index
        size = f" (size {f.size})" if f.size is not None else ""
        more = f" and {f.count - len(f.threads)} more" if f.count > len(f.threads) else ""
        return (f"out-of-bounds {what} {_space_word(f.space)} {f.buffer!r} at index {idx}{size}{k}, "
                f"by thread(s) at thread_position_in_grid {thr}{more}")
    return f"{f.kind}{k}"


class CheckFailed(KernelCheckError):
    """``KernelCheckError`` whose message already shows every line involved."""

    def _format(self) -> str:
        parts = [self.message]
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return "\n".join(parts)


_HINTS = {
    "data race": "put a threadgroup_barrier() between the write and the other thread's access, "
                 "or use an atomic; threadgroups cannot synchronise with each other within a launch",
    "uninitialised read": "write every element before the barrier that precedes its reads (an output: pass "
                          "init_value=0, or write it before reading or updating it atomically)",
    "divergent barrier": "every thread of a threadgroup must reach the same barrier "
                         "(no barrier inside a branch some threads skip or after an early return)",
    "runaway loop": "check the loop's condition and update; raise METALBENCH_MAX_STEPS for a long loop",
    "division by zero": "guard the divisor; the GPU gives an undefined result",
    "shift count": "keep the count below the width (for a variable count that may be 0 in (32 - s), "
                   "test it: s == 0 ? x : x << (32 - s))",
    "inactive lane read": "shuffle where every lane it reads is active (before the branch; guard the use of "
                          "the value, not the shuffle)",
    "misaligned vector access": "read the components as scalars, or through a packed vector type "
                                "(packed_float4: aligned as one float), or align the offset to the vector's size",
    "same-value write": "let one thread write (if lane == 0: ...), or accept it: the result is the same",
    "out-of-bounds": "guard the index with the right buffer's size",
}


def make_error(findings: list, kernel: str, dropped: int = 0) -> KernelCheckError:
    """The error raised for ``findings``: the first ones in full, the rest one line each.

        >>> f = Finding("division by zero", None, None, [], [(1, 0, 0)], [], ["divide"], kernel="k")
        >>> print(make_error([f], "k"))                       # doctest: +NORMALIZE_WHITESPACE
        integer division by zero (/) in kernel 'k' by thread(s) (1, 0, 0)
        hint: guard the divisor; the GPU gives an undefined result
    """
    parts = [f.describe() for f in findings[:SHOWN_IN_FULL]]
    if len(findings) > 1:
        kinds = sorted({f.kind for f in findings})
        parts.insert(0, f"{len(findings)} findings of the checked simulator ({', '.join(kinds)}):")
    rest = findings[SHOWN_IN_FULL:]
    if rest:
        parts.append(f"{len(rest)} more finding(s):")
        parts += ["  - " + f.summary() for f in rest]
    if dropped:
        parts.append(f"(and {dropped} more occurrence(s) not listed)")
    kinds = {f.kind for f in findings}
    hint = _HINTS.get(findings[0].kind) if len(kinds) == 1 else None
    span = findings[0].spans[0] if findings[0].spans else None
    return CheckFailed("\n".join(parts), span=span, hint=hint, findings=list(findings))
