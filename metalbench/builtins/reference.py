"""``docs/language.md``, the kernel-language reference, generated from the registry.

Every builtin's entry (signature, doc, details, example, Metal and CUDA spelling,
aliases) comes from its declaration; the spellings are printed by the real printers.
``python -m metalbench.builtins`` rewrites the file; ``tests/test_registry_derived.py``
checks that the committed one is current and covers every registry entry.

    >>> "### `popcount`" in language_md()
    True
"""
from __future__ import annotations

from .. import types as T
from .attributes import ATTRIBUTES, CONSTANTS
from .core import GROUPS, registry
from .docs import spellings
from .nodes import ATOMIC_ELEMS, ATOMIC_ELEMS_64

_INTRO = """\
# The metalbench kernel language

<!-- Generated from the builtin registry (metalbench/builtins/) by `python -m metalbench.builtins`.
     Do not edit: change the declarations and regenerate. -->

Kernels are written either as Python functions (the DSL: Python syntax, Metal's vocabulary)
or as Metal Shading Language bodies (what `mx.fast.metal_kernel` takes). Both use the names
below and mean the same thing on every backend (`metal`, `cuda`, `sim`):

```python
import metalbench as mb
from metalbench.dsl import *        # the names on this page

@mb.kernel
def softplus(x, out: mb.Out):
    i = thread_position_in_grid.x
    if i < x.size:
        out[i] = log1p(exp(-abs(x[i]))) + max(x[i], 0.0)
```

```c++
// the same as an MSL body (mb.metal_kernel or a %%metal cell)
uint i = thread_position_in_grid.x;
if (i < inp_shape[0]) {
    out[i] = metal::log1p(metal::exp(-metal::abs(inp[i]))) + metal::max(inp[i], 0.0f);
}
```

In the DSL every builtin object answers `help()` with its entry from this page
(`help(simd_sum)`, `help(threadgroup_array)`). In MSL the math functions may be spelled
`metal::exp`, `metal::precise::exp` or `metal::fast::exp` where Metal has those variants.
"""

_PROMOTION = """\
## Arithmetic and integer promotion

Arithmetic follows MSL, which follows C: the operands of `+ - * / % & | ^ << >>` and of
comparisons convert to a common type first (the *usual arithmetic conversions*):

- a float operand wins: `int + float` is a `float`, `half + float` a `float`; an unsuffixed
  float literal is a `float` (so `0.5 * h` with a `half` h is a float);
- integers narrower than `int` (`char`, `short`, `bool`) become `int` first;
- between integers of the same width, **unsigned wins**: `int + uint` is a `uint`;
- integers wrap around (modulo 2^bits); they never raise.

The thread attributes are unsigned (`uint`, `uint3`), so mixing them with signed values is
the classic trap. With `ty = thread_position_in_threadgroup.y` (a `uint`):

```python
row = int32(threadgroup_position_in_grid.y) * 16 - 1 + ty    # uint: -1 + 0u wraps to 4294967295
```

On the first thread `-1 + 0u` is 4294967295, not -1, and `row >= 0` is always true. To avoid it:

- convert every unsigned operand: `int32(tgid) * 16 - 1 + int32(ty)` (all `int`);
- or keep the arithmetic unsigned and never go below zero: test `if ty >= 1:` before `ty - 1`;
- compare with care: `i < n` where `i` is a `uint` and `n` an `int` compares as unsigned
  (a negative `n` is a huge number).

In the DSL, Python's operators map as follows: `/` is true division (two integers give a
float), `//` and `%` on integers round toward zero as in C (not Python's floor), `**` is `pow`, `and`/`or`/`not` and `a if c else b` evaluate
only what they need. A local variable's type is the common type of everything assigned to it,
unless annotated (`acc: float32 = 0`). Integer literals are `int` (`long` past 32 bits).
"""

_ARRAYS = """\
## Arrays and indexing

- **Kernel arguments** are arrays (`mx.array` or NumPy), scalars (uniform values) and outputs
  marked `mb.Out` (shape and dtype of the first array argument unless given:
  `out: mb.Out(shape=(n, m), dtype=mb.float16)`).
- `x.size`, `x.shape[k]` (constant `k`), `x.ndim` and `len(x)` (the first dimension) read the
  array's shape; in an MSL body the shape arrives as `x_shape`, `x_strides`, `x_ndim`.
- **Multi-dimensional indexing** `x[i, j]` (one index per dimension) on row-contiguous arrays
  means the linear element `i * x.shape[1] + j`; `x[k]` with one index on a 2-D array is the
  linear element `k`. Indices are integers (a float index is a type error); out-of-bounds
  accesses are caught by `checked=True` launches on the simulator. Unchecked, a read outside
  its array gives 0 and a write is dropped (with a warning counting them), as a GPU forgives
  them. On `cuda`, MSL kernels (`mb.metal_kernel`, `%%metal` MSL cells) get the same 0 for a
  read of an input outside its extent where it matters: real MLX kernels read past an input
  and mask the value, as the MLX docs' `grid_sample` does (unguarded, NVIDIA faults and the
  CUDA context dies). Guarded are the reads whose index depends on data (a gather, a
  coordinate read from memory, a search) or may be negative (`x[i - 1]` at `i = 0`); a read
  indexed by thread position, loop counters, shapes and constants is printed plain, as
  hand-written CUDA reads (past the end only when the launch reaches past the input).
  DSL and Numba kernels are printed without the guard, as CUDA itself would run them.
  `METALBENCH_CUDA_GUARD_READS=1` guards every input read of every kernel, `=0` none.
- **Threadgroup memory**: `tile = threadgroup_array((16, 16), float32)` at the top level of a
  kernel declares an array shared by the threadgroup (index it `tile[ty, tx]`); fill it, then
  `threadgroup_barrier()` before other threads read it. At most 32 KiB per kernel; not
  initialised. The argument order is `(shape, dtype)`; the shape is an int or a tuple of
  compile-time ints (literals, globals, `mb.constexpr` parameters).
- **Arrays of 2**31 elements or more**: their `x.shape`/`x.size` are `int64` and the `+ - *`
  of an index into them is done in 64 bits (`x[r * n + j]` does not wrap); an index variable
  that an earlier statement computed in 32 bits with `*` or `<<` is an error naming that line
  (write `j = int64(r) * n + k`). MLX keeps each
  dimension below 2**31: a larger one is a launch error on GPU backends and for outputs.
- **Struct arguments**: a tuple, `NamedTuple` or dataclass of arrays, numbers and nested
  structs passed as one argument; `p.w[i]`, `p.scale`, `p[0]`, `p.lin.b` and `len(p)` in the
  kernel (each field is a parameter of its own, `p__w` in the printed source).
- **Thread-private arrays**: `acc = local_array(4, float32)`, the same arguments.
- In an MSL body these are `threadgroup float tile[16][16];` and `float acc[4];`.
"""


def _row(*cells) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def _attributes() -> list[str]:
    out = ["## Thread attributes", "",
           "Read them anywhere in a kernel body (`thread_position_in_grid.x`); they are unsigned.", "",
           _row("name", "type", "meaning"), _row("---", "---", "---")]
    for name, (ty, doc) in ATTRIBUTES.items():
        out.append(_row(f"`{name}`", f"`{ty}`", doc))
    return out + [""]


def _types() -> list[str]:
    out = ["## Types and conversions", "",
           "DSL names are also conversions inside kernels (`float32(x)`, `uint32(i)`) and dtypes "
           "(`threadgroup_array(64, half)`, `mb.Out(dtype=mb.float16)`).", "",
           _row("DSL", "Metal", "CUDA", "NumPy"), _row("---", "---", "---", "---")]
    for t in T.SCALARS:
        dsl = "bool_" if t.name == "bool" else t.name
        extra = {"float16": " (`half`)", "bfloat16": " (`bfloat`)", "uint32": " (`uint`)"}.get(t.name, "")
        out.append(_row(f"`{dsl}`{extra}", f"`{t.msl}`", f"`{t.cuda}`", f"`{t.np}`"))
    out += ["",
            "Vectors: `float2`, `float3`, `float4`, `half2`..`half4`, `int2`..`int4`, `uint2`..`uint4` (and "
            "every scalar type with 2-4 components). Construct them with `float4(x, y, z, w)`, "
            "`float4(v.xy, 0.0, 1.0)` or `float4(s)`; read components with swizzles (`v.x`, `v.xy`, `v.zyx`). "
            "Arithmetic and most builtins work per component.", "",
            "Conversions follow C: float to integer truncates toward zero and saturates (NaN gives 0); integer "
            "to integer wraps around; integer to float rounds to nearest; anything to `bool` is `!= 0`.", ""]
    return out


def _constants() -> list[str]:
    out = ["## Constants", "",
           "Metal's float constants are exported by `metalbench.dsl` and known in MSL bodies. Python's "
           "spellings work in the DSL too: `math.inf`, `-math.inf`, `float(\"inf\")`, `float(\"nan\")`, "
           "`np.inf`, `np.nan`, `math.pi`, `math.e` (every float global is a compile-time `float` constant).", "",
           _row("name", "value", "meaning"), _row("---", "---", "---")]
    for name, (v, doc) in CONSTANTS.items():
        out.append(_row(f"`{name}`", repr(float(v)), doc))
    return out + [""]


def _entry(b) -> list[str]:
    out = [f"### `{b.name}`", "", f"`{b.signature}`", "", b.doc]
    if b.details:
        out += ["", b.details]
    if b.msl is not None and not getattr(b.msl, "metal_name", "metal::").startswith(("metal::", "simd_", "quad_")):
        out += ["", f"Metal's library has no `{b.name}`: kernels printed for Metal carry a helper "
                    f"(`{b.msl.metal_name}`); an MSL body calling `{b.name}` runs on the `sim` and `cuda` "
                    "backends, not through Metal's compiler."]
    if b.rule is not None and b.rule.where:
        out += ["", b.rule.where]
    out += ["", f"Example: `{b.example}`"]
    if b.grad == "zero":
        out += ["", "Derivative (`k.vjp`): zero (piecewise constant)."]
    elif b.grad:
        terms = [f"`{p}`: `{f}`" for p, f in zip(b.rule.params, b.grad) if f is not None]
        out += ["", "Derivative (`k.vjp`; cotangent of `result` is `grad`): " + "; ".join(terms)]
    sp = spellings(b, helpers=True)
    if sp:
        notes = [f" (header helper{'s' if len(h) > 1 else ''} {', '.join(f'`{x}`' for x in h)})" if h else ""
                 for h in sp[2:]]
        out += ["", f"Metal: `{sp[0]}`{notes[0]}  ", f"CUDA: `{sp[1]}`{notes[1]}"]
    names = []
    if b.namespaces:
        names.append(", ".join(f"`metal::{ns}::{b.name}`" for ns in b.namespaces))
    names += [f"`{a}`" for a in b.msl_aliases + b.python + b.numba]
    if names:
        out += ["", "Also: " + ", ".join(names)]
    return out + [""]


def _builtins() -> list[str]:
    out = ["## Builtins", ""]
    for g in GROUPS:
        bs = [b for b in registry.all() if b.group == g]
        if not bs:
            continue
        out += [f"- {g}: " + ", ".join(f"[`{b.name}`](#{b.name})" for b in bs)]
    out.append("")
    for g in GROUPS:
        bs = [b for b in registry.all() if b.group == g]
        if bs:
            out += [f"## {g}", ""]
            for b in bs:
                out += _entry(b)
    return out


def _aliases() -> list[str]:
    out = ["## `math`, NumPy and Python names", "",
           "Inside a DSL kernel these Python functions mean the builtin on the right (so NumPy-style code "
           "ports directly):", "", _row("Python", "builtin"), _row("---", "---")]
    for b in registry.all():
        for a in b.python:
            out.append(_row(f"`{a}`", f"[`{b.name}`](#{b.name})"))
    out += ["", "Python's `min`/`max` with more than two arguments chain; `round(x)` is Metal's round (halves "
            "away from zero) and `pow(x, y)` is `x ** y`.", "",
            "## Numba names", "", "In kernels ported from Numba (`from metalbench import cuda`):", "",
            _row("Numba", "builtin"), _row("---", "---")]
    for b in registry.all():
        for a in b.numba:
            out.append(_row(f"`{a}`", f"[`{b.name}`](#{b.name})"))
    return out + [""]


def _atomic_table() -> list[str]:
    table = {**ATOMIC_ELEMS, **ATOMIC_ELEMS_64}
    ops = sorted({op for s in table.values() for op in s})
    out = ["## Atomic element types", "",
           "One rule for the DSL, MSL bodies and the Numba layer (Metal's atomics: `atomic_int`, `atomic_uint`, "
           "`atomic_float`; half atomics do not exist anywhere; the 64-bit ones run on `sim` and `cuda` and are "
           "an error on Metal, which has none, as double is):", "",
           _row("operation", *[f"`{t.name}`" for t in table]), _row("---", *["---"] * len(table))]
    for op in ops:
        out.append(_row(op, *["yes" if op in s else "no" for s in table.values()]))
    return out + [""]


def language_md() -> str:
    """The whole reference page."""
    parts = [_INTRO, "\n".join(_attributes()), "\n".join(_types()), _PROMOTION, "\n".join(_constants()),
             _ARRAYS, "\n".join(_builtins()), "\n".join(_atomic_table()), "\n".join(_aliases())]
    return "\n".join(p.rstrip("\n") + "\n" for p in parts)
