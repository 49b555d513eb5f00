"""Everything derived from the registry, and the command that rewrites it:

    python -m metalbench.builtins          # rewrite the derived files
    python -m metalbench.builtins --check  # exit 1 if one is stale

- ``docs/language.md`` (:func:`reference.language_md`);
- ``metalbench/codegen/metal_shim.h`` (``codegen/_gen_metal_shim.py``);
- ``extension/src/metalWords.ts``, the JupyterLab extension's word lists.

The Pygments lexer (``notebook/lexer.py``) reads :func:`metal_builtin_words` at import.

    >>> "popcount" in metal_builtin_words() and "quad_sum" in metal_builtin_words()
    True
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..ir import THREAD_ATTRIBUTES
from .attributes import CONSTANTS
from .core import registry

ROOT = Path(__file__).resolve().parents[2]

# Metal standard-library names metalbench does not declare as builtins (no simulator
# or CUDA implementation) but a highlighter should still know.
METAL_EXTRA_WORDS = """
threadgroup_barrier simdgroup_barrier mem_flags mem_none mem_device mem_threadgroup mem_texture
mem_threadgroup_imageblock mem_object_data memory_order memory_order_relaxed memory_order_seq_cst
memory_order_acquire memory_order_release memory_order_acq_rel thread_scope thread_scope_device
thread_scope_threadgroup thread_scope_simdgroup thread_scope_thread
memory_scope simd_shuffle_and_fill_up simd_shuffle_and_fill_down
simd_active_threads_mask simd_is_helper_thread
simdgroup_matrix simdgroup_float8x8 simdgroup_half8x8 simdgroup_bfloat8x8 thread_elements cross length_squared
frexp ilogb modf nextafter sincos fmedian3 mul24 mad24 madsat madhi all any as_type metal fast precise std
""".split()

_CONSTANT_ATOMS = ["true", "false", "NULL", "nullptr", "HUGE_VALF", "M_PI_H"] + list(CONSTANTS)


def metal_builtin_words() -> list[str]:
    """Every Metal function/enum name a highlighter colours as a builtin: the registry's
    names and MSL aliases, then Metal names metalbench only passes through."""
    words = []
    for b in registry.all():
        words.append(b.name)
        words.extend(b.msl_aliases)
    words += METAL_EXTRA_WORDS
    return list(dict.fromkeys(words))


def thread_attribute_words() -> list[str]:
    return list(THREAD_ATTRIBUTES)


def constant_words() -> list[str]:
    return list(dict.fromkeys(_CONSTANT_ATOMS))


def _wrap(words: list[str], indent: str = "  ") -> str:
    lines, cur = [], ""
    for w in words:
        if cur and len(cur) + len(w) + 1 > 88:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}" if cur else w
    lines.append(cur)
    return (" +\n").join(f"{indent}'{ln}{' ' if i < len(lines) - 1 else ''}'" for i, ln in enumerate(lines))


def metal_words_ts() -> str:
    """``extension/src/metalWords.ts``: the word lists ``metal.ts`` imports."""
    return (
        "// Generated from the builtin registry (metalbench/builtins/) by `python -m metalbench.builtins`.\n"
        "// Do not edit: tests/test_registry_derived.py checks that this file is current.\n\n"
        "/** Metal standard-library functions, enums and namespaces (builtins). */\n"
        f"export const METAL_BUILTINS =\n{_wrap(metal_builtin_words())};\n\n"
        "/** Metal thread attributes ([[thread_position_in_grid]] and friends). */\n"
        f"export const METAL_THREAD_ATTRIBUTES =\n{_wrap(thread_attribute_words())};\n\n"
        "/** Constants highlighted as atoms. */\n"
        f"export const METAL_ATOMS =\n{_wrap(constant_words())};\n")


def _outputs() -> dict[Path, str]:
    from ..codegen import _gen_metal_shim
    from .reference import language_md
    return {ROOT / "docs" / "language.md": language_md(),
            ROOT / "metalbench" / "codegen" / "metal_shim.h": _gen_metal_shim.generate(),
            ROOT / "extension" / "src" / "metalWords.ts": metal_words_ts()}


def stale() -> list[Path]:
    """The derived files whose committed text differs from what the registry gives."""
    return [p for p, text in _outputs().items() if not p.exists() or p.read_text() != text]


def write_all() -> list[Path]:
    """Rewrites every derived file; returns those that changed."""
    changed = stale()
    for p, text in _outputs().items():
        if p in changed:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
    return changed


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--check" in argv:
        bad = stale()
        for p in bad:
            print(f"stale: {p.relative_to(ROOT)} (run python -m metalbench.builtins)")
        return 1 if bad else 0
    for p in write_all():
        print(f"wrote {p.relative_to(ROOT)}")
    return 0
