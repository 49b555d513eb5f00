"""A summary table of kernels (result vs NumPy, time) that a notebook displays and
``metalbench demo`` reads back from the executed notebook.

    >>> rows = summary([("saxpy", None, None)], display_it=False)
    >>> rows[0]["result"]
    'not checked'
"""
from __future__ import annotations

import html

from ..bench import fmt_time

SUMMARY_MIME = "application/vnd.metalbench.summary+json"


def _row(name, check, timing) -> dict:
    if check is None:
        result = "not checked"
    elif check.ok:
        result = "match"
    else:
        result = f"MISMATCH ({check.mismatches} of {check.size})"
    backend = getattr(timing, "backend", None) or getattr(check, "backend", None) or "?"
    return {"kernel": name, "backend": backend, "result": result,
            "max_abs_err": None if check is None else check.max_abs_err,
            "time_s": None if timing is None else timing.median,
            "time": "n/a" if timing is None else fmt_time(timing.median)}


def summary(entries, display_it: bool = True) -> list[dict]:
    """Show a table of ``(name, CheckResult | None, Timing | None)`` entries; returns the rows.

    >>> summary([("k", None, None)], display_it=False)[0]["kernel"]
    'k'
    """
    rows = [_row(*e) for e in entries]
    if display_it:
        from IPython.display import display
        display({"text/plain": format_table(rows), "text/html": html_table(rows), SUMMARY_MIME: {"rows": rows}},
                raw=True)
    return rows


def format_table(rows) -> str:
    """Rows as an aligned plain-text table."""
    cols = ["kernel", "backend", "result", "time"]
    widths = [max(len(c), *(len(str(r[c])) for r in rows)) if rows else len(c) for c in cols]
    line = lambda vals: "  ".join(str(v).ljust(w) for v, w in zip(vals, widths))  # noqa: E731
    return "\n".join([line(cols), line(["-" * w for w in widths])] + [line([r[c] for c in cols]) for r in rows])


def html_table(rows) -> str:
    head = "".join(f"<th>{c}</th>" for c in ("kernel", "backend", "result vs NumPy", "time"))
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(r[c]))}</td>" for c in ("kernel", "backend", "result", "time"))
                   + "</tr>" for r in rows)
    return f'<table class="metalbench-summary"><tr>{head}</tr>{body}</table>'
