"""Heat maps of access maps (``k.access_map(...)``), the way GPU-Puzzles draws its
diagrams: each buffer as a grid of cells coloured (and, when small, labelled) by how
often the launch read or wrote it, and by which threadgroup touched it. A stencil's
halo, a transposed read or a grid passed in threadgroups show at a glance.

    >>> import numpy as np
    >>> b64 = heatmap_png(np.arange(12).reshape(3, 4), "reads")
    >>> b64[:8]
    'iVBORw0K'
"""
from __future__ import annotations

import base64
import html
import io

import numpy as np

# 1-D buffers longer than this are drawn as rows of this many cells.
ROW = 64
# Cells labelled with their count when a map has at most this many.
LABELS = 256


def _grid(a: np.ndarray) -> np.ndarray:
    """``a`` as a 2-D grid of cells (1-D: rows of up to :data:`ROW`; more dimensions:
    the last one across, the others down)."""
    a = np.asarray(a)
    if a.ndim == 0:
        return a.reshape(1, 1)
    if a.ndim == 1:
        if a.size <= ROW:
            return a.reshape(1, -1)
        rows = -(-a.size // ROW)
        pad = np.full(rows * ROW - a.size, np.nan if a.dtype.kind == "f" else -1)
        return np.concatenate([a.astype(np.float64), pad]).reshape(rows, ROW)
    return a.reshape(-1, a.shape[-1])


def _figure(ncols: int, cells: np.ndarray):
    from matplotlib.figure import Figure
    h, w = cells.shape
    width = 11.0 / ncols                       # inches per map: the whole figure stays ~11 wide
    cw = min(0.32, (width - 0.4) / max(w, 1), 5.0 / max(h, 1))
    fw = max(2.0, w * cw + 0.4)
    fh = max(0.9, h * cw + 0.6)
    return Figure(figsize=(fw * ncols, fh))


def _draw(ax, a, title, cmap="Blues", groups=False):
    cells = _grid(a).astype(np.float64)
    masked = np.ma.masked_invalid(np.where(cells < 0, np.nan, cells)) if groups else np.ma.masked_invalid(cells)
    if groups:
        cmap = "tab20"
    im = ax.imshow(masked, cmap=cmap, aspect="equal", interpolation="nearest",
                   vmin=0 if not groups else None)
    ax.set_title(title, fontsize=9)
    h, w = cells.shape
    ax.set_xticks([])
    ax.set_yticks([])
    if h * w <= LABELS:
        top = np.nanmax(cells) if np.isfinite(cells).any() else 0
        for (r, c), v in np.ndenumerate(cells):
            if np.isnan(v):
                continue
            txt = ("x" if v == -2 else "" if v == -1 else str(int(v))) if groups else str(int(v))
            ax.text(c, r, txt, ha="center", va="center", fontsize=7,
                    color="white" if (not groups and top and v > 0.6 * top) else "black")
    if groups and h * w > LABELS and (cells == -2).any():
        ax.contour(cells == -2, levels=[0.5], colors="red", linewidths=0.6)
    for x in np.arange(-0.5, w, 1):
        if w <= 64:
            ax.axvline(x, color="white", lw=0.4)
    for y in np.arange(-0.5, h, 1):
        if h <= 64:
            ax.axhline(y, color="white", lw=0.4)
    return im


def heatmap_png(a, title: str = "", cmap: str = "Blues") -> str:
    """One heat map as a base64 PNG."""
    fig = _figure(1, _grid(a))
    _draw(fig.subplots(1, 1), a, title, cmap)
    return _png(fig)


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", dpi=90)
    return base64.b64encode(buf.getvalue()).decode()


def buffer_png(am, name: str) -> str:
    """Reads, writes and the touching threadgroup of buffer ``name``, side by side."""
    r, w, g = am.reads[name], am.writes[name], am.groups[name]
    cells = _grid(r)
    wide = cells.shape[1] > 2 * cells.shape[0]       # 1-D buffers: the three maps one above the other
    fig = _figure(1 if wide else 3, cells)
    if wide:
        fw, fh = fig.get_size_inches()
        fig.set_size_inches(fw, fh * 3)
    axes = fig.subplots(3, 1) if wide else fig.subplots(1, 3)
    _draw(axes[0], r, f"{name}: reads", "Blues")
    _draw(axes[1], w, f"{name}: writes", "Oranges")
    _draw(axes[2], g, f"{name}: threadgroup (x: several)", groups=True)
    return _png(fig)


def lines_table(am) -> str:
    """The per-line statistics as an HTML table (coalescing, bank conflicts)."""
    rows = []
    for s in am.lines:
        if s.space == "threadgroup":
            ok = s.conflicts == 0
            what = (f"{s.conflicts} bank-conflict replays, up to {s.max_ways}-way" if not ok
                    else "no bank conflicts")
        else:
            ok = s.coalesced
            what = (f"{s.transactions} segments for {s.ideal} needed "
                    f"({(s.coalescing or 0):.0%} coalesced)")
        color = "#1a7f37" if ok else "#cf222e"
        rows.append(f"<tr><td style='text-align:right'>{s.line if s.line is not None else '?'}</td>"
                    f"<td>{html.escape(s.access)}</td><td><code>{html.escape(s.buffer)}</code></td>"
                    f"<td>{html.escape(s.space)}</td><td style='text-align:right'>{s.requests}</td>"
                    f"<td style='color:{color}'>{html.escape(what)}</td>"
                    f"<td><code style='color:#666'>{html.escape(s.text)}</code></td></tr>")
    return ("<table class='mb-access-lines'><tr><th>line</th><th>access</th><th>buffer</th><th>memory</th>"
            "<th>simdgroup accesses</th><th>per simdgroup access</th><th>source</th></tr>"
            + "".join(rows) + "</table>")


def access_map_html(am, images: bool = True, maps_first: bool = False, error: bool = True) -> str:
    """An access map as HTML: the per-line table and one row of heat maps per buffer
    (``maps_first``: the heat maps above the table, as the panel's Memory tab shows them;
    ``error``: the checked run's first finding line, when the findings are not shown elsewhere)."""
    parts = [f"<div class='mb-access-map'><b>access map of {html.escape(am.kernel)}</b> "
             f"(grid {tuple(am.grid)}, threadgroup {tuple(am.threadgroup)})"]
    if error and am.error is not None:
        parts.append("<pre style='color:#cf222e;white-space:pre-wrap'>"
                     + html.escape(str(am.error).splitlines()[0]) + "</pre>")
    maps = []
    if images:
        for name in am.reads:
            try:
                maps.append(f"<div><img alt='{html.escape(name)}' src='data:image/png;base64,"
                            f"{buffer_png(am, name)}'/></div>")
            except Exception as e:  # noqa: BLE001 -- a plot failure must not hide the table
                maps.append(f"<i>{html.escape(name)}: no plot ({html.escape(type(e).__name__)})</i>")
    parts += maps + [lines_table(am)] if maps_first else [lines_table(am)] + maps
    parts.append("</div>")
    return "".join(parts)
