"""What derives from the builtin registry is current and complete: the Metal shim, the
extension's word lists, the Pygments lexer, ``docs/language.md`` and the DSL objects'
``help()``; the reference page's examples and claims hold when run."""
from __future__ import annotations

import importlib.util
import pydoc
import re
import textwrap

import numpy as np
import pytest

import metalbench as mb
from metalbench import dsl
from metalbench.builtins import derive, registry
from metalbench.builtins.attributes import ATTRIBUTES, CONSTANTS
from metalbench.ir import THREAD_ATTRIBUTES

LANGUAGE = (derive.ROOT / "docs" / "language.md").read_text()


def test_derived_files_are_current():
    stale = [str(p.relative_to(derive.ROOT)) for p in derive.stale()]
    assert stale == [], f"stale derived files {stale}: run `python -m metalbench.builtins`"


def test_language_reference_covers_every_registry_entry():
    missing = [b.name for b in registry.all() if f"### `{b.name}`" not in LANGUAGE]
    assert missing == []
    for b in registry.all():
        entry = LANGUAGE.split(f"### `{b.name}`", 1)[1].split("\n### ", 1)[0]
        assert f"`{b.signature}`" in entry and b.doc in entry and b.example in entry, b.name
        if b.kind != "node" or b.node == "Atomic":
            assert "Metal: `" in entry and "CUDA: `" in entry, b.name
    for name in list(ATTRIBUTES) + list(CONSTANTS):
        assert f"`{name}`" in LANGUAGE
    for alias in [a for b in registry.all() for a in b.python + b.numba]:
        assert f"`{alias}`" in LANGUAGE


def test_word_lists_cover_the_registry():
    from metalbench.notebook.lexer import METAL_BUILTINS, THREAD_ATTRIBUTES as LEX_ATTRS
    ts = (derive.ROOT / "extension" / "src" / "metalWords.ts").read_text()
    ts_words = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", ts))
    for b in registry.all():
        for w in (b.name,) + b.msl_aliases:
            assert w in METAL_BUILTINS and w in ts_words, w
    assert set(THREAD_ATTRIBUTES) <= set(LEX_ATTRS) and set(THREAD_ATTRIBUTES) <= ts_words
    metal_ts = (derive.ROOT / "extension" / "src" / "metal.ts").read_text()
    assert "from './metalWords'" in metal_ts          # the highlighter uses the generated lists


def test_shim_declares_what_the_printers_call_and_nothing_metal_lacks():
    shim = (derive.ROOT / "metalbench" / "codegen" / "metal_shim.h").read_text()
    for b in registry.all():
        name = getattr(b.msl, "metal_name", "")
        if name.startswith("metal::"):
            assert re.search(rf"\b{b.name}\(", shim), b.name
        elif name.startswith("mb_"):      # a helper: Metal has no such function
            assert not re.search(rf"\b{b.name}\(", shim), b.name


# ----------------------------------------------------------------------------- help()

@pytest.mark.parametrize("b", [b for b in registry.all() if hasattr(dsl, b.name)], ids=lambda b: b.name)
def test_help_shows_the_registry_entry(b):
    text = pydoc.render_doc(getattr(dsl, b.name), renderer=pydoc.plaintext)
    assert b.signature in text and b.doc in text and b.example in text


def test_help_on_arrays_attributes_and_types():
    text = pydoc.render_doc(dsl.threadgroup_array, renderer=pydoc.plaintext)
    assert "threadgroup_array(shape, dtype) -> array" in text and "32 KiB" in text
    assert "thread's position in the grid" in pydoc.render_doc(dsl.thread_position_in_grid, renderer=pydoc.plaintext)
    assert "truncates toward zero" in pydoc.render_doc(dsl.int32, renderer=pydoc.plaintext)
    assert "metal.fast.divide" in pydoc.render_doc(dsl.metal.fast.divide, renderer=pydoc.plaintext)


# ----------------------------------------------------------------------------- the page's claims, run

def _load(tmp_path, name, code):
    path = tmp_path / f"{name}.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_pages_examples_run(tmp_path):
    py = re.search(r"```python\n(.*?)```", LANGUAGE, re.S).group(1)
    msl = re.search(r"```c\+\+\n(.*?)```", LANGUAGE, re.S).group(1)
    mod = _load(tmp_path, "page_example", py)
    x = np.linspace(-30, 30, 300).astype(np.float32)
    want = np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)
    np.testing.assert_allclose(np.asarray(mod.softplus(x, grid=x.size, threadgroup=64, backend="sim")), want,
                               rtol=1e-6, atol=1e-6)
    k = mb.metal_kernel(name="softplus_msl", input_names=["inp"], output_names=["out"], source=msl)
    (o,) = k(inputs=[x], grid=(x.size, 1, 1), threadgroup=(64, 1, 1), output_shapes=[x.shape],
             output_dtypes=[np.float32], backend="sim")
    np.testing.assert_allclose(np.asarray(o), want, rtol=1e-6, atol=1e-6)


def test_the_promotion_trap_wraps_as_documented(tmp_path):
    assert "int32(threadgroup_position_in_grid.y) * 16 - 1 + ty" in LANGUAGE
    mod = _load(tmp_path, "promo", textwrap.dedent("""
        import metalbench as mb
        from metalbench.dsl import *

        @mb.kernel
        def trap(out: mb.Out(shape=(4,), dtype=mb.uint32), fixed: mb.Out(shape=(4,), dtype=mb.int32)):
            ty = thread_position_in_threadgroup.y
            t = thread_position_in_threadgroup.x
            out[t] = int32(threadgroup_position_in_grid.y) * 16 - 1 + ty
            fixed[t] = int32(threadgroup_position_in_grid.y) * 16 - 1 + int32(ty)
    """))
    out, fixed = mod.trap(grid=(4, 1, 1), threadgroup=(4, 1, 1), backend="sim")
    assert np.asarray(out).tolist() == [4294967295] * 4 and np.asarray(fixed).tolist() == [-1] * 4


def test_the_constants_work_in_a_kernel(tmp_path):
    mod = _load(tmp_path, "consts", textwrap.dedent("""
        import math
        import numpy as np
        import metalbench as mb
        from metalbench.dsl import *

        @mb.kernel
        def consts(out: mb.Out(shape=(8,), dtype=mb.float32)):
            out[0] = INFINITY
            out[1] = -math.inf
            out[2] = float("inf")
            out[3] = np.inf
            out[4] = NAN
            out[5] = float("nan")
            out[6] = M_PI_F
            out[7] = FLT_MAX
    """))
    o = np.asarray(mod.consts(grid=1, threadgroup=1, backend="sim"))
    assert o[:4].tolist() == [np.inf, -np.inf, np.inf, np.inf] and np.isnan(o[4:6]).all()
    assert o[6] == np.float32(np.pi) and o[7] == np.finfo(np.float32).max
    src = mod.consts.source(backend="metal")
    assert "INFINITY" in src and "NAN" in src


def test_every_alias_on_the_page_resolves_to_its_builtin():
    rows = re.findall(r"^\| `([^`]+)` \| \[`([a-z_0-9]+)`\]", LANGUAGE, re.M)
    assert len(rows) >= 40
    for alias, name in rows:
        dialect = "numba" if alias.startswith("cuda.") else "python"
        assert registry.lookup(alias, dialect=dialect).name == name, alias


def test_every_constant_works_in_an_msl_body_and_the_shim_knows_it():
    from metalbench import msl_check
    from metalbench.mlx_signature import OutputSpec
    body = "\n".join(f"out[{k}] = {name};" for k, name in enumerate(CONSTANTS))
    k = mb.metal_kernel(name="consts_msl", input_names=[], output_names=["out"], source=body)
    (o,) = k(inputs=[], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(len(CONSTANTS),)],
             output_dtypes=[np.float32], backend="sim")
    want = np.array([v for v, _ in CONSTANTS.values()], np.float32)
    np.testing.assert_array_equal(np.asarray(o), want)
    assert msl_check.check(body=body, name="k", inputs=[], outputs=[OutputSpec("out", "float32")]) == []
