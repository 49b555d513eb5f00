"""The options of the ``%%metal`` line: one table gives the parser, ``%%metal --help``
and the magic's docstring (``%%metal?``), so the three never disagree.

    >>> o = parse_line("blur --grid (W, H) --sweep threadgroup=(8,8),(16,16) TILE=8,16")
    >>> o.name, o.grid, o.sweep, o.sweep_axes
    ('blur', '(W, H)', True, {'threadgroup': '(8,8),(16,16)', 'TILE': '8,16'})
"""
from __future__ import annotations

import argparse
import ast
import re
import shlex
import textwrap

from ..errors import MetalbenchError


class MagicError(MetalbenchError):
    """A bad ``%%metal`` line: unknown option, expression that does not evaluate, missing argument."""


# (option, metavar, argparse keywords, what it does, example). Order = order in the help.
OPTIONS = [
    ("NAME", None, {},
     "the kernel's name in the notebook namespace (DSL: defaults to the def's name; MSL: 'kernel')",
     "%%metal saxpy"),
    ("--grid", "EXPR", {},
     "threads in the grid (Metal's dispatchThreads: counts threads, not threadgroups); an int or a "
     "tuple, evaluated in the notebook. With it the cell also runs the kernel",
     "--grid n      --grid (W, H)      --grid x.size"),
    ("--threadgroup", "EXPR", {},
     "threads per threadgroup (at most 1024 in all); an int or a tuple",
     "--threadgroup 256      --threadgroup (16, 16)"),
    ("--ref", "EXPR", {},
     "a reference: a callable taking the kernel's inputs (by position; by name when its parameters "
     "are the input names) and returning the expected output(s), as a tuple or a list of arrays; "
     "it gets NumPy arrays, or MLX arrays when it computes with mx (a model's MLX fallback path). "
     "The cell compares and shows the diff",
     "--ref np.exp      --ref 'lambda a, x, y: a * x + y'      --ref grid_sample_ref"),
    ("--rtol", "R", {"type": float},
     "relative tolerance of the comparison with --ref (default by dtype: float32 1e-5, float16 1e-3)",
     "--rtol 1e-4"),
    ("--atol", "A", {"type": float},
     "absolute tolerance of the comparison with --ref (default by dtype: float32 1e-6)",
     "--atol 1e-4      (a parallel sum rounds differently from NumPy's)"),
    ("--args", "EXPR", {},
     "arguments instead of the notebook variables of the same names: a dict by name or a tuple "
     "in order",
     "--args 'dict(x=xs[0], a=0.5)'      --args '(2.0, x, y)'"),
    ("--inputs", "a,b", {},
     "MSL body: its input names, in order (default: the notebook arrays the body mentions, also through "
     "the header's #define macros, except --template names, and the notebook numbers it uses without declaring "
     "them, 0-d as MLX passes a Python number)",
     "--inputs x,y"),
    ("--outputs", "out", {},
     "MSL body: its output names (default: the names the body stores to that are not inputs)",
     "--outputs out,idx"),
    ("--output-shapes", "EXPR", {"dest": "output_shapes"},
     "MSL body: the output shapes (default: the first input's shape for every output)",
     "--output-shapes '[(n, m)]'"),
    ("--output-dtypes", "EXPR", {"dest": "output_dtypes"},
     "MSL body: the output dtypes (default: the first input's dtype; bare names such as float16 are MLX's)",
     "--output-dtypes '[mx.int32]'"),
    ("--template", "T=float32,N=4", {},
     "MSL body: MLX template arguments; DSL: constexpr values",
     "--template T=float16,BLOCK=64"),
    ("--header", "EXPR", {},
     "MSL body: a header string (helper functions), evaluated in the notebook",
     "--header HELPERS"),
    ("--compile-options", "EXPR", {"dest": "compile_options"},
     "MSL body: MLX's compile_options, a dict; math_mode is 'safe' (the default), 'relaxed' or 'fast' "
     "(these two define __FAST_MATH__)",
     "--compile-options \"{'math_mode': 'fast'}\""),
    ("--init-value", "V", {"dest": "init_value"},
     "fill the outputs with V before the launch (they are uninitialised otherwise)",
     "--init-value 0"),
    ("--atomic", None, {"action": "store_true"},
     "MSL body: the outputs are atomic (MLX's atomic_outputs=True). Without it the front end decides: "
     "atomic when the body applies an atomic function to an output (directly, through a pointer into it "
     "or a header function) or passes one to a header function's atomic pointer parameter; atomics on "
     "threadgroup memory leave the outputs plain, and an output used both atomically and plainly is an "
     "error at its line",
     "--atomic"),
    ("--no-row-contiguous", None, {"dest": "no_row_contiguous", "action": "store_true"},
     "MSL body: MLX's ensure_row_contiguous=False: inputs reach the body as they are (a transposed or "
     "sliced array is not copied first), so it indexes them through x_strides (elem_to_loc)",
     "--no-row-contiguous"),
    ("--backend", "auto|metal|cuda|sim", {"default": "auto", "choices": ["auto", "metal", "cuda", "sim"]},
     "where it runs: metal (Apple GPU), cuda (NVIDIA through MLX), sim (CPU simulator); auto picks "
     "the first available",
     "--backend sim"),
    ("--lang", "auto|python|msl", {"default": "auto", "choices": ["auto", "python", "msl"]},
     "the body's language; auto: a body starting with `def` or a decorator is Python, else MSL",
     "--lang msl"),
    ("--sweep", "[AXIS=V1,V2 ...]", {"action": "store_true"},
     "time every configuration and show the best: power-of-two threadgroups by default, or the "
     "axes given (threadgroup and constexpr/template names)",
     "--sweep      --sweep threadgroup=32,64,128 TILE=8,16"),
    ("--checked", None, {"action": "store_true"},
     "run on the checked simulator: out-of-bounds accesses, data races, uninitialised reads, "
     "divergent barriers are errors at their line",
     "--checked"),
    ("--grad", None, {"action": "store_true"},
     "DSL kernel: compare its generated VJP with finite differences (mb.check_grad, on the simulator) "
     "and show the worst error per argument in a Gradient tab",
     "--grad"),
    ("--no-widget", None, {"dest": "no_widget", "action": "store_true"},
     "a static HTML summary instead of the ipywidgets panel",
     "--no-widget"),
    ("--help", None, {"action": "store_true"},
     "this help (also `%%metal?`)",
     "%%metal --help"),
]

FLAGS = {o for o, m, kw, _, _ in OPTIONS if kw.get("action") == "store_true" and o != "--sweep"}


def usage() -> str:
    """The one-line synopsis.

    >>> usage().startswith("%%metal [NAME] [--grid EXPR]")
    True
    """
    # Options are wrapped whole: spaces inside one option are held together until the end.
    parts = [(f"[{o}]" if m is None else f"[{o} {m}]").replace(" ", "\0") for o, m, _, _, _ in OPTIONS]
    return textwrap.fill("%%metal " + " ".join(parts), 96, subsequent_indent="        ",
                         break_on_hyphens=False, break_long_words=False).replace("\0", " ")


def help_text() -> str:
    """``%%metal --help``: every option with what it does and an example.

    >>> all(o in help_text() for o, *_ in OPTIONS)
    True
    """
    lines = [usage(), "",
             "Define a GPU kernel in a cell: the body is a DSL function (Python syntax, Metal vocabulary)",
             "or an MSL kernel body (what mx.fast.metal_kernel takes). The kernel lands in the notebook",
             "under its name; its arguments bind to notebook variables of the same names. With --grid",
             "the cell runs it, compares with --ref and shows the workbench panel. A failing cell raises",
             "(Run All stops there) and leaves the previous kernel of that name in place.", "",
             "options:"]
    for opt, meta, _, what, example in OPTIONS:
        head = opt if meta is None else f"{opt} {meta}"
        lines.append(f"  {head}")
        lines.append(textwrap.fill(what, 96, initial_indent="      ", subsequent_indent="      "))
        lines.append(f"      e.g. {example}")
    lines += ["", "examples:",
              "  %%metal saxpy --grid n --threadgroup 256 --ref 'lambda a, x, y: a * x + y'",
              "  def saxpy(a: float, x, y, out: mb.Out):",
              "      i = thread_position_in_grid.x",
              "      if i < x.size:",
              "          out[i] = a * x[i] + y[i]",
              "",
              "  %%metal myexp --grid x.size --ref np.exp",
              "  uint i = thread_position_in_grid.x;",
              "  if (i < x_shape[0]) { out[i] = metal::exp(x[i]); }"]
    return "\n".join(lines)


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise MagicError(f"%%metal: {message}", hint=f"usage: {usage()}\n(%%metal --help explains every option)")


def _parser() -> _Parser:
    p = _Parser(prog="%%metal", add_help=False)
    for opt, _, kw, what, _ in OPTIONS:
        if opt == "NAME":
            p.add_argument("name", nargs="?", help=what)
        else:
            p.add_argument(opt, help=what, **kw)
    return p


def parse_line(line: str) -> argparse.Namespace:
    """Parse the options of a ``%%metal`` line. Expressions may contain spaces
    (``--grid (n, 1, 1)``): an option's value runs up to the next ``--option``.
    ``--sweep`` takes ``AXIS=V1,V2`` words (``sweep_axes``: axis name → value text).

    >>> o = parse_line("saxpy --grid n --ref 'lambda a, x, y: a * x + y' --no-widget")
    >>> o.name, o.grid, o.no_widget, o.sweep_axes
    ('saxpy', 'n', True, {})
    """
    try:
        words = shlex.split(line)
    except ValueError as e:
        raise MagicError(f"%%metal: cannot split the options: {e}", hint="check the quotes on the %%metal line")
    argv, axes, i = [], {}, 0
    while i < len(words):
        w = words[i]
        if w == "--sweep":
            argv.append(w)
            i += 1
            last = None
            while i < len(words) and not words[i].startswith("--"):
                word = words[i]
                m = re.match(r"([A-Za-z_]\w*)=(.*)", word, re.S)
                if m:
                    last = m.group(1)
                    axes[last] = m.group(2)
                elif last is not None and _continues(axes[last], word):
                    axes[last] += word
                else:
                    break      # a plain word after --sweep's axes: the kernel name
                i += 1
        elif w.startswith("--") and w not in FLAGS and "=" not in w:
            j = i + 1
            while j < len(words) and not words[j].startswith("--"):
                j += 1
            argv.append(w)
            if j > i + 1:
                argv.append(" ".join(words[i + 1:j]))
            i = j
        else:
            argv.append(w)
            i += 1
    ns = _parser().parse_args(argv)
    ns.sweep_axes = axes
    return ns


def _continues(value: str, word: str) -> bool:
    # "threadgroup=(16, 16), (32, 8)" arrives as three words: join while a tuple is open
    # or a comma joins them.
    return value.endswith(",") or word.startswith(",") or value.count("(") > value.count(")")


def _split_top(text: str) -> list[str]:
    """Split at commas outside brackets: ``"(8,8),(16,16)"`` → ``["(8,8)", "(16,16)"]``."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [s.strip() for s in out if s.strip()]


def scalar_value(v: str, ns: dict):
    """One option value: ``true``/``false``, an int, a dtype name (``float32``, ``mx.float16``,
    ``half``), a literal, else an expression in the notebook namespace."""
    import mlx.core as mx
    v = v.strip()
    if v in ("true", "True"):
        return True
    if v in ("false", "False"):
        return False
    if re.fullmatch(r"-?\d+", v):
        return int(v)
    name = v.replace("mx.", "").replace("mb.", "").replace("np.", "")
    name = {"float": "float32", "half": "float16", "bool": "bool_", "int": "int32", "uint": "uint32"}.get(name, name)
    d = getattr(mx, name, None)
    if isinstance(d, mx.Dtype):
        return d
    try:
        return ast.literal_eval(v)
    except (ValueError, SyntaxError):
        return evaluate(v, ns, "value")


def axis_values(text: str, ns: dict, axis: str = "axis") -> list:
    """The values of one sweep axis: ``"8,16,32"`` → ``[8, 16, 32]``;
    ``"(8,8),(16,16)"`` → ``[(8, 8), (16, 16)]``; a list expression (``range(4, 33, 4)``) too.

    >>> axis_values("8, 16,32", {}), axis_values("(8,8),(16,16)", {})
    ([8, 16, 32], [(8, 8), (16, 16)])
    """
    items = _split_top(text)
    if not items:
        raise MagicError(f"--sweep {axis}= has no values", hint=f"for example --sweep {axis}=8,16,32")
    if len(items) == 1:
        v = scalar_value(items[0], ns)
        if isinstance(v, (list, tuple, range)) and axis != "threadgroup" or isinstance(v, (list, range)):
            return list(v)
        return [v]
    return [scalar_value(s, ns) for s in items]


def parse_template(text: str | None, ns: dict) -> list:
    """``"T=float32,N=4"`` → ``[("T", mx.float32), ("N", 4)]``."""
    if not text:
        return []
    out = []
    for item in _split_top(text):
        if "=" not in item:
            raise MagicError(f"--template entry {item!r} is not NAME=VALUE", hint="for example --template T=float32,N=4")
        k, v = item.split("=", 1)
        out.append((k.strip(), scalar_value(v, ns)))
    return out


def _dtype_names(expr: str) -> dict:
    """MLX's dtypes named bare in ``expr`` (``float32``, ``bfloat16``, ``bool_``), as --template
    takes them: the names an option may use without ``mx.``."""
    import mlx.core as mx
    return {n: getattr(mx, n) for n in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", expr)
            if isinstance(getattr(mx, n, None), mx.Dtype)}


def evaluate(expr: str, ns: dict, what: str):
    """Evaluate an option's expression in the notebook namespace, with a short error. A
    dtype named bare and not defined in the notebook is MLX's (``--output-dtypes float32``
    means ``[mx.float32]``, as ``--template T=float32`` does).

    >>> evaluate("[float32, bfloat16]", {}, "--output-dtypes")
    [mlx.core.float32, mlx.core.bfloat16]
    """
    try:
        try:
            return eval(expr, ns)  # noqa: S307 — the user's own notebook expression
        except NameError as e:
            dts = _dtype_names(expr)
            if getattr(e, "name", None) not in dts:
                raise
            return eval(expr, {**dts, **ns})  # noqa: S307
    except Exception as e:
        raise MagicError(f"{what} {expr!r} does not evaluate: {type(e).__name__}: {e}",
                         hint="it is evaluated in the notebook's namespace; define the names it uses first") from None
