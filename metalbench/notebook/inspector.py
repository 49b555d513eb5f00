"""The workbench panel's debugger views: the **Inspect** tab (pick a thread with sliders,
see the kernel's source with the current line marked, step forward and back through
that thread's trace) and the findings of a checked run in the **Memory** tab (each
with its source line marked, the threads involved and an Inspect button per thread),
above the access map's heat maps.

    ins = Inspector(lambda: (kernel, args, launch))     # what the Workbench builds
    ins.trace((5, 0, 0))       # trace thread 5; the view shows step 0
    ins.step(+1)               # the next record
"""
from __future__ import annotations

import html

from ..errors import MetalbenchError

try:
    import ipywidgets as W
except Exception:  # pragma: no cover -- ipywidgets is a dependency
    W = None


def source_html(source, line, lines_seen=(), first: int | None = None, last: int | None = None,
                compact: bool = False) -> str:
    """The kernel's source with line numbers, ``line`` marked (an int, or a set of lines
    to mark), and the lines the trace passed through tinted. ``compact``: tight lines and
    no height limit (an excerpt of a few lines, as the findings show)."""
    if source is None:
        return "<i>no source</i>"
    rows = []
    text = source.text.splitlines()
    n0 = source.first_line
    marked = set(line) if isinstance(line, (set, frozenset, list, tuple)) else {line}
    for i, t in enumerate(text):
        n = n0 + i
        if first is not None and n < first or last is not None and n > last:
            continue
        style = ""
        mark = "&nbsp;&nbsp;"
        if n in marked:
            style = "background:#fff3b0;font-weight:bold"
            mark = "&#9654;&nbsp;"
        elif n in lines_seen:
            style = "background:#f3f7ff"
        rows.append(f"<div style='{style}'><span style='color:#888;display:inline-block;width:3.5em;"
                    f"text-align:right'>{n}</span> {mark}{html.escape(t) or '&nbsp;'}</div>")
    size = "line-height:1.35;margin:2px 0" if compact else "max-height:360px"
    return ("<div class='mb-inspect-source' style='font-family:var(--jp-code-font-family,monospace);"
            f"font-size:12px;white-space:pre;border:1px solid #ddd;padding:4px;{size};"
            "overflow:auto'>" + "".join(rows) + "</div>")


def record_html(tr, i: int) -> str:
    """The current record and every name's latest value up to it."""
    from ..sim.trace import fmt_value
    if not tr.rows:
        return "<i>this thread assigned nothing (it may have returned early or not exist)</i>"
    r = tr.rows[i]
    latest: dict = {}
    for q in tr.rows[:i + 1]:
        latest[q.name] = q.value
    cells = "".join(f"<tr><td><code>{html.escape(n)}</code></td><td style='text-align:right'>"
                    f"<code>{html.escape(fmt_value(v))}</code></td></tr>" for n, v in latest.items())
    return (f"<div><b>step {i + 1} of {len(tr.rows)}</b>, line {r.line}: "
            f"<code>{html.escape(r.name)} = {html.escape(fmt_value(r.value))}</code>"
            f"{' (truncated trace)' if tr.truncated else ''}</div>"
            f"<table class='mb-inspect-vars'><tr><th>name</th><th>value so far</th></tr>{cells}</table>")


if W is not None:
    class Inspector(W.VBox):
        """The Inspect tab. ``context()`` returns ``(kernel, args, launch keywords)``."""

        def __init__(self, context):
            self.context = context
            self.tr = None
            self.pos = 0
            self.sliders = [W.IntSlider(value=0, min=0, max=0, description=f"thread.{a}", continuous_update=False,
                                        style={"description_width": "initial"}) for a in "xyz"]
            self.trace_button = W.Button(description="Trace", icon="search",
                                         tooltip="run once on the simulator and record this thread's assignments")
            self.trace_button.on_click(lambda _: self.trace())
            self.back = W.Button(description="", icon="step-backward", tooltip="previous step",
                                 layout=W.Layout(width="40px"))
            self.fwd = W.Button(description="", icon="step-forward", tooltip="next step", layout=W.Layout(width="40px"))
            self.back.on_click(lambda _: self.step(-1))
            self.fwd.on_click(lambda _: self.step(+1))
            self.step_slider = W.IntSlider(value=0, min=0, max=0, description="step", continuous_update=True)
            self.step_slider.observe(self._on_step, names="value")
            self.source_view = W.HTML("<i>pick a thread and press Trace</i>")
            self.record_view = W.HTML("")
            self.message = W.HTML("")
            super().__init__([W.HBox(self.sliders), W.HBox([self.trace_button, self.back, self.step_slider, self.fwd]),
                              self.message, W.HBox([self.source_view, self.record_view])])

        def set_grid(self, grid):
            """Slider ranges for a grid (3-tuple of threads)."""
            for s, g in zip(self.sliders, grid):
                s.max = max(0, int(g) - 1)
                s.layout.display = None if g > 1 or s is self.sliders[0] else "none"

        @property
        def thread(self) -> tuple:
            return tuple(s.value for s in self.sliders)

        def trace(self, thread=None):
            """Trace ``thread`` (a position tuple, a linear index, or the sliders' position)
            and show its first step; returns the trace (None after an error)."""
            from .. import launch as L
            from ..sim.trace import _pos
            self.message.value = ""
            try:
                kernel, args, kw = self.context()
                kw = {k: v for k, v in kw.items() if k not in ("backend", "checked")}
                g, _ = L.normalize(kw.get("grid"), kw.get("threadgroup"))
                self.set_grid(g)
                if thread is not None:
                    p = _pos(thread, g)
                    for s, v in zip(self.sliders, p):
                        s.value = min(max(int(v), 0), s.max)
                self.tr = kernel.trace(*args, thread=self.thread, **kw)
            except Exception as e:  # noqa: BLE001 -- shown in the tab
                msg = str(e) if isinstance(e, MetalbenchError) else f"{type(e).__name__}: {e}"
                self.message.value = f"<pre style='color:#cf222e;white-space:pre-wrap'>{html.escape(msg)}</pre>"
                return None
            self.step_slider.max = max(0, len(self.tr.rows) - 1)
            self.pos = 0
            self.step_slider.value = 0
            self.render()
            return self.tr

        def step(self, d: int):
            """Move ``d`` records forward (negative: back) and show that step."""
            if self.tr is None or not self.tr.rows:
                return
            self.step_slider.value = min(max(self.pos + d, 0), len(self.tr.rows) - 1)

        def _on_step(self, change):
            self.pos = change["new"]
            self.render()

        def render(self):
            tr = self.tr
            if tr is None:
                return
            line = tr.rows[self.pos].line if tr.rows else None
            self.source_view.value = source_html(tr.source, line, set(tr.lines()))
            self.record_view.value = (f"<div style='padding-left:12px'><b>thread {tr.threads[0]}</b>"
                                      + record_html(tr, self.pos) + "</div>")
else:  # pragma: no cover
    Inspector = None


# ----------------------------------------------------------------------------- findings

def finding_html(f) -> str:
    """One finding of a checked run: what, where (the source line marked), which threads."""
    head = f.describe().splitlines()[0]
    kind = "" if head.startswith(f.kind) else f"<b style='color:#cf222e'>{html.escape(f.kind)}</b> "
    parts = [f"<div style='margin:4px 0'>{kind}{html.escape(head)}"]
    spans = [s for s in f.spans if s is not None and s.source is not None][:2]
    if len(spans) == 2 and spans[0].source is spans[1].source and abs(spans[0].line - spans[1].line) <= 6:
        # both lines of a race in one excerpt, each marked
        lo, hi = sorted((spans[0].line, spans[1].line))
        parts.append(source_html(spans[0].source, {lo, hi}, (), lo - 1, hi + 1, compact=True))
    else:
        for sp in spans:
            parts.append(source_html(sp.source, sp.line, (), sp.line - 1, sp.line + 1, compact=True))
    if f.threads:
        parts.append("<div>threads: " + ", ".join(html.escape(str(t)) for t in f.threads[:4]) + "</div>")
    parts.append("</div>")
    return "".join(parts)


def findings_box(findings, on_inspect):
    """A VBox: each finding with an Inspect button per thread involved (``on_inspect(thread)``)."""
    items = []
    for f in findings[:8]:
        buttons = []
        for t in list(dict.fromkeys(tuple(x) for x in f.threads))[:4]:
            b = W.Button(description=f"Inspect {t}", icon="search", layout=W.Layout(width="auto"),
                         tooltip="open the trace of this thread in the Inspect tab")
            b.on_click(lambda _, t=t: on_inspect(t))
            buttons.append(b)
        # flex "0 0 auto": in the scrolling box the findings keep their height (flex would shrink them)
        items.append(W.VBox([W.HTML(finding_html(f)), W.HBox(buttons)], layout=W.Layout(flex="0 0 auto")))
    return W.VBox(items, layout=W.Layout(flex="0 0 auto"))
