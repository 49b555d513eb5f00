"""The ``metalbench`` command.

    metalbench demo                 # run notebooks/quickstart.ipynb headless, write reports/quickstart.html
    metalbench check-msl FILE       # parse an MSL kernel body and report the first error with its line

``make demo`` runs ``python -m metalbench.cli demo``.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

SUMMARY_MIME = "application/vnd.metalbench.summary+json"


def _find_notebook(name: str) -> Path:
    for base in (Path.cwd(), Path(__file__).resolve().parent.parent):
        p = base / "notebooks" / name
        if p.exists():
            return p
    raise SystemExit(f"metalbench: cannot find notebooks/{name} (run from the repository root)")


def summary_rows(nb) -> list[dict]:
    """The rows every ``metalbench.notebook.summary(...)`` output of an executed notebook holds."""
    rows = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if SUMMARY_MIME in data:
                rows += data[SUMMARY_MIME].get("rows", [])
    return rows


def run_demo(notebook: Path | None = None, out_dir: Path = Path("reports"), timeout: int = 300) -> int:
    """Execute the quickstart, write its HTML report, print a summary table.

    >>> run_demo(out_dir=Path("/tmp/reports"))   # doctest: +SKIP
    """
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    from nbconvert import HTMLExporter

    from .notebook.report import format_table

    notebook = notebook or _find_notebook("quickstart.ipynb")
    nb = nbformat.read(notebook, as_version=4)
    t0 = time.perf_counter()
    failed = None
    try:
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(notebook.parent)}}).execute()
    except CellExecutionError as e:
        failed = str(e).splitlines()[-1] if str(e) else "a cell failed"
    elapsed = time.perf_counter() - t0
    out_dir.mkdir(parents=True, exist_ok=True)
    html, _ = HTMLExporter().from_notebook_node(nb)
    report = out_dir / (notebook.stem + ".html")
    report.write_text(html, encoding="utf-8")
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
    p = argparse.ArgumentParser(prog="metalbench", description="metalbench: GPU kernels in notebook cells")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="run the quickstart notebook headless and write an HTML report")
    d.add_argument("--notebook", type=Path, default=None)
    d.add_argument("--out", type=Path, default=Path("reports"))
    c = sub.add_parser("check-msl", help="report syntax errors in an MSL kernel body")
    c.add_argument("file", type=Path)
    a = p.parse_args(argv)
    if a.cmd == "demo":
        return run_demo(a.notebook, a.out)
    return check_msl(a.file)


if __name__ == "__main__":
    sys.exit(main())
