"""The ``metalbench`` command.

    metalbench demo                 # run the quickstart notebook headless, write reports/quickstart.html
    metalbench notebooks [DIR]      # copy the example notebooks (they ship in the package) to DIR
    metalbench check-msl FILE       # parse an MSL kernel body and report the first error with its line

``make demo`` runs ``python -m metalbench.cli demo``. From an installed wheel the
notebooks come from the package (``metalbench/notebooks/``); in a checkout, from
``notebooks/``.
"""
from __future__ import annotations

import argparse
import html as _html
import shutil
import sys
import tempfile
import time
from pathlib import Path

SUMMARY_MIME = "application/vnd.metalbench.summary+json"
PACKAGE = Path(__file__).resolve().parent


def notebooks_dir() -> Path:
    """Where the example notebooks are: ``notebooks/`` of the checkout metalbench runs
    from, else the copy inside the installed package.

    >>> (notebooks_dir() / "quickstart.ipynb").exists()
    True
    """
    for d in (PACKAGE.parent / "notebooks", PACKAGE / "notebooks"):
        if (d / "quickstart.ipynb").exists():
            return d
    raise SystemExit("metalbench: the example notebooks are missing from this installation "
                     f"(looked in {PACKAGE.parent / 'notebooks'} and {PACKAGE / 'notebooks'})")


def _find_notebook(name: str) -> Path:
    return notebooks_dir() / name


def summary_rows(nb) -> list[dict]:
    """The rows every ``metalbench.notebook.summary(...)`` output of an executed notebook holds."""
    rows = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if SUMMARY_MIME in data:
                rows += data[SUMMARY_MIME].get("rows", [])
    return rows


def _execute(nb, path: Path, timeout: int):
    """Run every cell in a fresh kernel of this Python. The kernel talks over IPC sockets
    in a temporary folder (no TCP port, nothing left in the working directory)."""
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient
    with tempfile.TemporaryDirectory(prefix="metalbench-kernel-") as tmp:
        km = KernelManager(kernel_name="python3", transport="ipc", ip=str(Path(tmp) / "kernel"))
        try:
            NotebookClient(nb, km=km, timeout=timeout, kernel_name="python3",
                           resources={"metadata": {"path": str(path)}}).execute()
        finally:
            if km.has_kernel:     # a client given a kernel manager leaves its kernel running
                km.shutdown_kernel(now=True)


def _html_report(nb) -> str:
    """The executed notebook as HTML: nbconvert's when installed (JupyterLab brings it),
    else a plain page with the cells' sources and their HTML/text outputs."""
    try:
        from nbconvert import HTMLExporter
        return HTMLExporter().from_notebook_node(nb)[0]
    except ImportError:
        pass
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>metalbench report</title>"
             "<style>body{font-family:sans-serif;max-width:70em;margin:auto}"
             "pre.src{background:#f6f8fa;padding:.5em}</style></head><body>"]
    for c in nb.cells:
        if c.cell_type == "markdown":
            parts.append(f"<div><pre>{_html.escape(c.source)}</pre></div>")
            continue
        parts.append(f"<pre class='src'>{_html.escape(c.source)}</pre>")
        for o in c.get("outputs", []):
            data = o.get("data", {})
            if "text/html" in data:
                parts.append(data["text/html"] if isinstance(data["text/html"], str) else "".join(data["text/html"]))
            elif "image/png" in data:
                parts.append(f"<img src='data:image/png;base64,{data['image/png']}'/>")
            elif "text/plain" in data or "text" in o:
                parts.append(f"<pre>{_html.escape(str(data.get('text/plain', o.get('text', ''))))}</pre>")
    parts.append("</body></html>")
    return "".join(parts)


def run_demo(notebook: Path | None = None, out_dir: Path = Path("reports"), timeout: int = 300) -> int:
    """Execute the quickstart, write its HTML report, print a summary table.

    >>> run_demo(out_dir=Path("/tmp/reports"))   # doctest: +SKIP
    """
    import nbformat
    from nbclient.exceptions import CellExecutionError

    from .notebook.report import format_table

    notebook = notebook or _find_notebook("quickstart.ipynb")
    nb = nbformat.read(notebook, as_version=4)
    t0 = time.perf_counter()
    failed = None
    try:
        _execute(nb, notebook.parent, timeout)
    except CellExecutionError as e:
        failed = str(e).strip().splitlines()[-1] if str(e).strip() else "a cell failed"
    elapsed = time.perf_counter() - t0
    out_dir.mkdir(parents=True, exist_ok=True)
    report = out_dir / (notebook.stem + ".html")
    report.write_text(_html_report(nb), encoding="utf-8")
    rows = summary_rows(nb)
    print(f"executed {notebook} in {elapsed:.1f} s; report: {report}")
    if rows:
        print(format_table(rows))
    if failed:
        print(f"error: {failed}", file=sys.stderr)
        return 1
    if any(not r["result"].startswith("match") for r in rows):
        return 1
    return 0


def copy_notebooks(dest: Path) -> int:
    """Copy the example notebooks to ``dest/`` (open them with ``jupyter lab dest``);
    existing files are left alone."""
    src = notebooks_dir()
    dest.mkdir(parents=True, exist_ok=True)
    for f in sorted(src.glob("*.ipynb")):
        target = dest / f.name
        if target.exists():
            print(f"kept {target} (exists)")
            continue
        shutil.copyfile(f, target)
        print(f"wrote {target}")
    print(f"open them with: jupyter lab {dest}")
    return 0


def check_msl(path: Path, name: str | None = None) -> int:
    """Parse an MSL kernel body (as ``mx.fast.metal_kernel`` takes it); print the first syntax error."""
    from .errors import MetalbenchError, Source
    from .frontend.msl import _parse
    text = path.read_text()
    try:
        _parse(text, Source(str(path), text, 1), 1, True)
    except MetalbenchError as e:
        print(e)
        return 1
    print(f"{path}: no syntax errors")
    return 0


def main(argv=None) -> int:
    from . import __version__
    p = argparse.ArgumentParser(prog="metalbench", description="metalbench: GPU kernels in notebook cells")
    p.add_argument("--version", action="version", version=f"metalbench {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="run the quickstart notebook headless and write an HTML report")
    d.add_argument("--notebook", type=Path, default=None)
    d.add_argument("--out", type=Path, default=Path("reports"))
    n = sub.add_parser("notebooks", help="copy the example notebooks to a folder")
    n.add_argument("dest", type=Path, nargs="?", default=Path("metalbench-notebooks"))
    c = sub.add_parser("check-msl", help="report syntax errors in an MSL kernel body")
    c.add_argument("file", type=Path)
    a = p.parse_args(argv)
    if a.cmd == "demo":
        return run_demo(a.notebook, a.out)
    if a.cmd == "notebooks":
        return copy_notebooks(a.dest)
    return check_msl(a.file)


if __name__ == "__main__":
    sys.exit(main())
