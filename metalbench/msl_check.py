"""Static checking of Metal kernels without a Mac: parse with libclang against a shim.

The complete kernel source (as :mod:`metalbench.mlx_signature` builds it the way
MLX does) is parsed as C++17 by libclang (PyPI ``libclang``) with
``codegen/metal_shim.h`` standing in for ``<metal_stdlib>`` and
``codegen/mlx_utils_shim.h`` for MLX's preamble. Errors -- undeclared names,
wrong types (a ``float4`` assigned to a ``float``), syntax -- are mapped back to
the line of the body (or header) the user wrote::

    >>> from metalbench.mlx_signature import InputSpec, OutputSpec
    >>> diags = check(body="uint i = thread_position_in_grid.x;\\nout[i] = inpt[i];", name="k",
    ...               inputs=[InputSpec("inp", "float32")], outputs=[OutputSpec("out", "float32")])
    >>> [(d.where, d.line, d.message) for d in diags]
    [('body', 2, "use of undeclared identifier 'inpt'")]

What it cannot see: Metal-only rules the shim does not model (address-space
mismatches, Metal's missing double, recursion, resource limits) -- the shim keeps
address spaces as empty macros, and math functions accept any argument type.
"""
from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import KernelNameError, KernelSyntaxError, KernelTypeError, Source, Span
from . import mlx_signature as sig

_SHIM_DIR = Path(__file__).parent / "codegen"
_include_dir: str | None = None
_index = None

# Warnings that say nothing about the kernel: Metal attributes, our shim's tricks.
_IGNORED_WARNINGS = ("unknown attribute", "anonymous struct", "anonymous types",
                     "unused", "GNU extension")


@dataclass
class Diagnostic:
    """One compiler finding, mapped to the user's text.

    ``where`` is ``"body"``, ``"header"`` or ``"signature"``; ``line`` and ``col``
    (0-based) are in that text (``line`` is user-visible: ``first_line`` based).
    """
    severity: str
    message: str
    where: str
    line: int
    col: int
    kind: str          # "syntax", "name", "type"
    span: Span | None = None

    def error(self):
        """The matching metalbench error (``KernelSyntaxError``/``KernelNameError``/``KernelTypeError``)."""
        cls = {"syntax": KernelSyntaxError, "name": KernelNameError, "type": KernelTypeError}[self.kind]
        return cls(self.message, self.span)

    def __str__(self) -> str:
        return str(self.error())


def _includes() -> str:
    """A directory where ``<metal_stdlib>`` and MLX's utils header resolve to our shims."""
    global _include_dir
    if _include_dir is None or not os.path.isdir(_include_dir):
        d = tempfile.mkdtemp(prefix="metalbench_msl_")
        os.makedirs(os.path.join(d, "mlx/backend/metal/kernels"))
        for h in ("metal_stdlib", "metal_math", "metal_simdgroup", "metal_atomic", "metal_compute",
                  "metal_integer", "metal_common", "metal_geometric", "metal_relational", "metal_matrix",
                  "metal_simdgroup_matrix"):
            Path(d, h).write_text(f'#include "{_SHIM_DIR / "metal_shim.h"}"\n')
        Path(d, "mlx/backend/metal/kernels/utils.h").write_text(
            f'#include "{_SHIM_DIR / "mlx_utils_shim.h"}"\n')
        _include_dir = d
    return _include_dir


def _clang_index():
    global _index
    if _index is None:
        import atexit
        import clang.cindex as ci
        _index = ci.Index.create()
        # Free it while cindex is still loaded (its __del__ fails at interpreter teardown).
        atexit.register(lambda: globals().__setitem__("_index", None))
    return _index


_HALF_LITERAL = re.compile(r"(?<![\w.])((?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)[hH]\b")
_HOST_NAME = re.compile(r'template\s*\[\[host_name\("[^"]*"\)\]\]\s*\[\[kernel\]\]')


def _for_clang(text: str) -> str:
    """Metal spellings clang does not know, rewritten in place (same lines)."""
    text = _HALF_LITERAL.sub(r"\1f16", text)          # 1.0h -> 1.0f16 (_Float16)
    return _HOST_NAME.sub("template", text)           # attributes clang rejects here


def _classify(msg: str) -> str:
    m = msg.lower()
    if "undeclared identifier" in m or "unknown type name" in m or "no member named" in m or "is undefined" in m \
            or "undeclared" in m or "not a class, namespace" in m:
        return "name"
    if m.startswith("expected") or "extraneous" in m or "missing" in m and "terminating" in m \
            or "unterminated" in m or "invalid suffix" in m:
        return "syntax"
    return "type"


def check(source=None, *, body: str | None = None, header: str = "", name: str = "kernel",
          inputs=None, outputs=None, template=None, atomic_outputs: bool = False,
          first_line: int = 1, header_first_line: int = 1, source_name: str | None = None,
          warnings: bool = False) -> list[Diagnostic]:
    """Parses a Metal kernel with libclang and returns its diagnostics (errors; warnings
    too with ``warnings=True``), mapped to body/header lines.

    ``source`` is a ``codegen.msl.Rendered``, a :class:`mlx_signature.FullSource`, or the
    complete kernel text; or give ``body``/``header``/``name``/``inputs``/``outputs``
    (:class:`mlx_signature.InputSpec`/``OutputSpec``) to build it like MLX does.
    ``template`` is MLX's list of ``(name, dtype|int|bool)``. ``first_line`` is the
    user-visible number of the body's first line (a ``%%metal`` cell body starts at 2).

    >>> check(body="float4 v = float4(1.0f); float x = v;", name="k",
    ...       outputs=[sig.OutputSpec("o", "float32")])[0].kind
    'type'
    """
    if source is not None and hasattr(source, "input_names"):
        full = sig.build_for(source, template, inputs=inputs)
        body, header, name = source.body, source.header, source.name
    elif isinstance(source, sig.FullSource):
        full = source
    elif isinstance(source, str):
        full = _locate(source)
    else:
        full = sig.build_for(None, template, inputs=inputs, name=name, body=body or "", header=header,
                             outputs=outputs, atomic_outputs=atomic_outputs)
    text = full.text
    lines = text.split("\n")
    body_text = "\n".join(lines[full.body_line - 1: full.body_line - 1 + full.body_lines])
    header_end = full.header_line + full.header_lines
    header_text = "\n".join(lines[full.header_line - 1: header_end - 1])
    body_src = Source(source_name or f"{name} (MSL body)", body_text, first_line)
    header_src = Source(f"{name} (MSL header)", header_text, header_first_line)

    import clang.cindex as ci
    fname = "mb_kernel.metal"
    tu = _clang_index().parse(fname, args=["-x", "c++", "-std=c++17", "-fsyntax-only", "-I", _includes(),
                                           "-Wno-unknown-attributes", "-ferror-limit=50"],
                              unsaved_files=[(fname, _for_clang(text))],
                              options=ci.TranslationUnit.PARSE_NONE)
    out: list[Diagnostic] = []
    seen = set()
    for d in tu.diagnostics:
        if d.severity < (ci.Diagnostic.Warning if warnings else ci.Diagnostic.Error):
            continue
        if d.severity == ci.Diagnostic.Warning and any(w in d.spelling for w in _IGNORED_WARNINGS):
            continue
        loc = d.location
        if loc.file is None or loc.file.name != fname:
            # Inside the shim: report where the user's code asked for it.
            for c in d.children:
                if c.location.file is not None and c.location.file.name == fname:
                    loc = c.location
            if loc.file is None or loc.file.name != fname:
                continue
        ln, col = loc.line, max(0, loc.column - 1)
        if full.body_line <= ln < full.body_line + full.body_lines:
            where, src, uline = "body", body_src, ln - full.body_line + first_line
        elif full.header_line <= ln < header_end:
            where, src, uline = "header", header_src, ln - full.header_line + header_first_line
        else:
            where, src, uline = "signature", Source(f"{name} (generated signature)", text, 1), ln
        key = (where, uline, d.spelling)
        if key in seen:
            continue
        seen.add(key)
        line_text = src.line(uline)
        end = _token_end(line_text, col)
        sev = "error" if d.severity >= ci.Diagnostic.Error else "warning"
        out.append(Diagnostic(sev, d.spelling, where, uline, col, _classify(d.spelling),
                              Span(src, uline, col, uline, end)))
    return out


def _token_end(line: str, col: int) -> int:
    m = re.match(r"[A-Za-z_]\w*|\d[\w.]*|\S", line[col:])
    return col + (len(m.group(0)) if m else 1)


def _locate(text: str) -> sig.FullSource:
    """Line bookkeeping for complete kernel text given as a string."""
    lines = text.split("\n")
    k = next((i for i, s in enumerate(lines) if s.startswith("[[kernel]] void ")), None)
    if k is None:
        return sig.FullSource(text, "", 1, 1, len(lines))
    j = next(i for i in range(k, len(lines)) if lines[i].endswith(") {"))
    end = len(lines) - 1
    while end > j and lines[end] != "}":
        end -= 1
    pre = next((i for i, s in enumerate(lines) if s.startswith("using namespace metal;")), -1)
    hend = k - 1 if k > 0 and lines[k - 1].startswith("template <") else k
    return sig.FullSource(text, "", pre + 2, j + 2, end - (j + 1), header_lines=hend - pre - 1)


def check_metal_kernel(name: str, input_names, output_names, source: str, header: str = "", *,
                       inputs, output_dtypes, template=None, atomic_outputs: bool = False,
                       first_line: int = 1, header_first_line: int = 1, source_name=None) -> list[Diagnostic]:
    """:func:`check` with ``mx.fast.metal_kernel``'s own arguments: the names, body and
    header given to ``metal_kernel`` plus the call's ``inputs`` (arrays: MLX, NumPy, or
    :class:`mlx_signature.InputSpec`), ``output_dtypes`` and ``template``.

    >>> import numpy as np
    >>> check_metal_kernel("myexp", ["inp"], ["out"],
    ...     "uint elem = thread_position_in_grid.x;\\nT tmp = inp[elem];\\nout[elem] = metal::exp(tmp);",
    ...     inputs=[np.zeros((4, 16), np.float16)], output_dtypes=[np.float16], template=[("T", np.float32)])
    []
    """
    ins = []
    for n, a in zip(input_names, inputs):
        if isinstance(a, sig.InputSpec):
            ins.append(a)
        elif hasattr(a, "dtype") and hasattr(a, "ndim"):
            ins.append(sig.InputSpec(n, a.dtype, int(a.ndim), int(a.size)))
        else:      # a Python scalar: MLX makes a 0-d array of it
            ins.append(sig.InputSpec(n, "float32" if isinstance(a, float) else "int32", 0, 1))
    outs = [sig.OutputSpec(n, d) for n, d in zip(output_names, output_dtypes)]
    return check(body=source, header=header, name=name, inputs=ins, outputs=outs, template=template,
                 atomic_outputs=atomic_outputs, first_line=first_line, header_first_line=header_first_line,
                 source_name=source_name)


def validate(source=None, **kw) -> None:
    """Like :func:`check`, but raises the first error as a metalbench error.

    >>> validate(body="out[0] = 1.0f;", name="k", outputs=[sig.OutputSpec("out", "float32")])
    """
    for d in check(source, **kw):
        if d.severity == "error":
            raise d.error()
