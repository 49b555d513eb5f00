"""Static checking of generated CUDA: ``nvcc`` when installed, else libclang with a shim.

    >>> from metalbench import ir, types as T
    >>> from metalbench.codegen import cuda
    >>> k = ir.KernelIR("k", [ir.Param("o", "buffer", T.float32, is_output=True)],
    ...                 [ir.Store("o", ir.Const(0, T.uint32), ir.Const(1.0, T.float32))])
    >>> check(cuda.render(k), use_nvcc=False)
    []

With nvcc the whole source MLX would compile (``cuda.full_source``) goes through
``nvcc --ptx -arch=sm_90``, which catches everything NVRTC would; the libclang path
parses the same text as C++17 against ``cuda_shim.h`` (names, types, syntax).
Findings map to the body or header line like :mod:`metalbench.msl_check`'s.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import Source, Span
from ..msl_check import Diagnostic, _classify, _clang_index, _token_end
from . import cuda

_SHIM = Path(__file__).parent / "cuda_shim.h"
_inc: str | None = None


def _includes() -> str:
    global _inc
    if _inc is None or not os.path.isdir(_inc):
        d = tempfile.mkdtemp(prefix="metalbench_cuda_")
        for rel in ("mlx/backend/cuda/device/utils.cuh", "cooperative_groups.h", "cuda_fp16.h", "cuda_bf16.h",
                    "cuda/std/array", "cuda/std/limits", "cuda/std/complex"):
            p = Path(d, rel)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(f'#include "{_SHIM}"\n')
        _inc = d
    return _inc


def _regions(text: str, r) -> tuple[int, int, int, int]:
    """(header first line, header lines, body first line, body lines) in the full source."""
    lines = text.split("\n")
    h0 = text[:text.index(r.header)].count("\n") + 1 if r.header else 1
    g = next(i for i, s in enumerate(lines) if s.startswith("__global__ void "))
    b = next(i for i in range(g, len(lines)) if lines[i].endswith(") {")) + 1
    if lines[b].startswith(("  constexpr ", "  using ")):      # template arguments, then a blank line
        while lines[b].startswith(("  constexpr ", "  using ")):
            b += 1
        b += 1
    return h0, r.header.count("\n"), b + 1, r.body.count("\n") + 1


def check(r, template=None, use_nvcc: bool | None = None, first_line: int = 1) -> list[Diagnostic]:
    """Diagnostics of the CUDA source MLX builds from ``r`` (a ``cuda.render`` result)."""
    text = cuda.full_source(r, template)
    h0, hn, b0, bn = _regions(text, r)
    body_src = Source(f"{r.name} (CUDA body)", r.body, first_line)
    header_src = Source(f"{r.name} (CUDA header)", r.header, 1)
    if use_nvcc is None:
        use_nvcc = shutil.which("nvcc") is not None
    found = _nvcc(text) if use_nvcc else _clang(text)
    out = []
    for ln, col, msg, sev in found:
        if b0 <= ln < b0 + bn:
            where, src, uline = "body", body_src, ln - b0 + first_line
        elif h0 <= ln < h0 + hn:
            where, src, uline = "header", header_src, ln - h0 + 1
        else:
            where, src, uline = "signature", Source(f"{r.name} (generated)", text, 1), ln
        end = _token_end(src.line(uline), col)
        out.append(Diagnostic(sev, msg, where, uline, col, _classify(msg), Span(src, uline, col, uline, end)))
    return out


def _nvcc(text: str):
    with tempfile.TemporaryDirectory() as d:
        f = Path(d, "k.cu")
        f.write_text(text)
        p = subprocess.run(["nvcc", "--ptx", "-std=c++17", "-arch=sm_90", "-I", cuda.SHIM_INCLUDE, str(f),
                            "-o", str(Path(d, "k.ptx"))], capture_output=True, text=True, timeout=300)
    out = []
    for m in re.finditer(r"k\.cu\((\d+)\): error: (.*)\n(?:.*\n)?(\s*)\^", p.stderr):
        out.append((int(m.group(1)), max(0, len(m.group(3)) - 0), m.group(2).strip(), "error"))
    if p.returncode and not out:
        out.append((0, 0, p.stderr.strip()[-2000:], "error"))
    return out


def _clang(text: str):
    import clang.cindex as ci
    tu = _clang_index().parse("mb_kernel.cu", args=["-x", "c++", "-std=c++17", "-fsyntax-only", "-I", _includes(),
                                                    "-ferror-limit=50"],
                              unsaved_files=[("mb_kernel.cu", text)], options=ci.TranslationUnit.PARSE_NONE)
    out = []
    for d in tu.diagnostics:
        if d.severity < ci.Diagnostic.Error:
            continue
        loc = d.location
        if loc.file is None or loc.file.name != "mb_kernel.cu":
            for c in d.children:
                if c.location.file is not None and c.location.file.name == "mb_kernel.cu":
                    loc = c.location
            if loc.file is None or loc.file.name != "mb_kernel.cu":
                continue
        out.append((loc.line, max(0, loc.column - 1), d.spelling, "error"))
    return out
