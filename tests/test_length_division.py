"""Unsigned ``/`` and ``%`` by an array length (``i % bias.size``) print as
``mb_udiv_len``/``mb_umod_len`` in CUDA and MSL: a shift or a mask when the length is a
power of two, the division otherwise, 0 for a zero length (metalbench.scalar's rule).

The helpers are compiled with the host's g++ (``__device__`` dropped, ``__ffs``/``ctz``
mapped to GCC builtins) and run on edge cases against Python's integer arithmetic;
the kernels that use them run on the simulator against NumPy (the simulator is the
semantics the printers must keep)."""
import re
import shutil
import subprocess

import numpy as np
import pytest

import metalbench as mb
from metalbench.codegen import cuda as cuda_codegen
from metalbench.codegen import msl as msl_codegen
from metalbench.dsl import thread_position_in_grid

U32 = [0, 1, 2, 3, 5, 7, 64, 4095, 4096, 4097, 65535, 1 << 20, (1 << 31) - 1, 1 << 31, (1 << 31) + 1,
       (1 << 32) - 2, (1 << 32) - 1]
U64 = [0, 1, 3, 4096, 1 << 32, (1 << 32) + 1, 1 << 40, (1 << 63) - 1, 1 << 63, (1 << 64) - 1]


def _host_source(text: str) -> str:
    text = text.replace("__device__ ", "")
    text = text.replace("__ffsll(", "__builtin_ffsll(").replace("__ffs(", "__builtin_ffs(")
    return re.sub(r"\bctz\(", "mb_host_ctz(", text)


def _run(helpers: str, tmp_path) -> dict:
    lines = []
    for t, vals in (("uint32_t", U32), ("uint64_t", U64)):
        for a in vals:
            for b in vals:
                lines.append(f'    std::printf("{t} {a} {b} %llu %llu\\n", (unsigned long long)mb_udiv_len<{t}>'
                             f'({a}ull, {b}ull), (unsigned long long)mb_umod_len<{t}>({a}ull, {b}ull));')
    src = ("#include <cstdint>\n#include <cstdio>\n"
           "template <class T> T mb_host_ctz(T b) { return sizeof(T) > 4 ? __builtin_ctzll(b) : __builtin_ctz(b); }\n"
           + _host_source(helpers) + "\nint main() {\n" + "\n".join(lines) + "\n}\n")
    (tmp_path / "t.cpp").write_text(src)
    subprocess.run(["g++", "-std=c++17", "-O1", "-o", str(tmp_path / "t"), str(tmp_path / "t.cpp")], check=True,
                   capture_output=True, text=True)
    out = subprocess.run([str(tmp_path / "t")], check=True, capture_output=True, text=True).stdout
    got = {}
    for ln in out.splitlines():
        t, a, b, q, r = ln.split()
        got[(t, int(a), int(b))] = (int(q), int(r))
    return got


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ on this machine")
@pytest.mark.parametrize("dialect", ["cuda", "msl"])
def test_length_division_helpers_match_python(dialect, tmp_path):
    helpers = cuda_codegen._LEN_DIV if dialect == "cuda" else msl_codegen._LEN_DIV
    got = _run(helpers, tmp_path)
    assert len(got) == len(U32) ** 2 + len(U64) ** 2
    for (t, a, b), (q, r) in got.items():
        assert (q, r) == ((a // b, a % b) if b else (0, 0)), (dialect, t, a, b)


@mb.kernel
def bias_add(x, bias, out: mb.Out):
    i = thread_position_in_grid.x
    out[i] = x[i] + bias[i % bias.size] + i // bias.size


@pytest.mark.parametrize("cols", [1, 3, 64, 100, 4096])
def test_kernels_dividing_by_a_length_print_the_helpers_and_match_numpy(cols):
    rng = np.random.default_rng(cols)
    n = 8192
    x, bias = rng.standard_normal(n).astype(np.float32), rng.standard_normal(cols).astype(np.float32)
    out = np.asarray(bias_add(x, bias, grid=n, threadgroup=256, backend="sim"))
    i = np.arange(n)
    np.testing.assert_allclose(out, x + bias[i % cols] + (i // cols).astype(np.float32), rtol=1e-6)
    for backend in ("cuda", "metal"):
        body = bias_add.source(x, bias, backend=backend).split("// body")[1]
        assert re.search(r"mb_umod_len(<uint32_t>)?\(i, ", body) and re.search(r"mb_udiv_len(<uint32_t>)?\(i, ", body), body
        assert "mb_imod" not in body and "mb_idiv" not in body
    # the MSL with its helper parses and type-checks against the Metal shim (libclang)
    from metalbench import msl_check
    assert msl_check.check(bias_add.specialize(x, bias).rendered("metal"), warnings=True) == []


def test_signed_or_non_length_divisions_keep_the_general_helper():
    @mb.kernel
    def k(x, n: int, out: mb.Out):
        i = thread_position_in_grid.x
        out[i] = x[i % n] + x[int(i) % x.size]     # a scalar divisor; a signed dividend
    x = np.arange(16, dtype=np.float32)
    body = k.source(x, 4, backend="cuda").split("// body")[1]
    assert body.count("mb_imod<") == 2 and "mb_umod_len" not in body, body
    np.testing.assert_array_equal(np.asarray(k(x, 4, grid=16, backend="sim")),
                                  x[np.arange(16) % 4] + x[np.arange(16) % 16])
