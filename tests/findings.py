"""What a checked launch reports, for tests: one helper instead of one per test module.

    from findings import findings, races
    assert races(lambda: k(x, grid=64, backend="sim", checked=True)) == []
"""
from metalbench.errors import KernelCheckError


def findings(call):
    """The findings of a checked launch (empty when it passes)."""
    try:
        call()
    except KernelCheckError as e:
        return e.findings
    return []


def races(call, space=None):
    """Its data-race findings (in ``space`` only, when given: "threadgroup", "device")."""
    return [f for f in findings(call) if f.kind == "data race" and (space is None or f.space == space)]
