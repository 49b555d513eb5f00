"""Notebook side of metalbench: the ``%%metal`` magic, the workbench panel, the Pygments
``MetalLexer`` and the summary table ``metalbench demo`` reads back.

    from metalbench.notebook import summary
    summary([("saxpy", saxpy.check(ref, a, x, y, grid=n), saxpy.bench(a, x, y, grid=n))])
"""
from .report import SUMMARY_MIME, summary

__all__ = ["summary", "SUMMARY_MIME"]
