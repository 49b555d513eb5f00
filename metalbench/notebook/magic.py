"""The ``%%metal`` cell magic.

    %load_ext metalbench

    %%metal saxpy --grid n --threadgroup 64 --ref "lambda a, x, y: a * x + y"
    def saxpy(a: float, x, y, out: mb.Out):
        i = thread_position_in_grid.x
        if i < x.size:
            out[i] = a * x[i] + y[i]

The body is a DSL function (a ``def``) or an MSL body (what ``mx.fast.metal_kernel``
takes). The kernel object lands in the namespace under its name; arguments bind to
notebook variables of the same names (``--args`` overrides). With ``--grid`` the cell
also runs the kernel, checks it against ``--ref`` and shows the workbench panel.
Errors are short messages that point at the cell line (the magic line is line 1). A
failing cell raises (so Run All stops and executed notebooks fail), shown as that short
message without a traceback, and leaves the previous kernel of that name untouched.
``%%metal --help`` (or ``%%metal?``) lists every option with an example.
"""
from __future__ import annotations

import ast
import contextlib
import hashlib
import html
import re
import warnings

import numpy as np

from .. import runtime
from ..errors import KernelCheckError, KernelInternalError, KernelNameError, MetalbenchError, Source, Span
from .options import MagicError, evaluate as _eval, help_text, parse_line, parse_template  # noqa: F401

_PY_START = re.compile(r"(?:async\s+)?def\s|@")


def detect_lang(cell: str) -> str:
    """``python`` if the body starts with ``def`` or a decorator (after blank and comment
    lines), or parses as Python and contains a ``def``; else ``msl``. A body that starts
    like Python is Python even when it has a syntax error, so the error is Python's.

    >>> detect_lang("def k(x):\\n    pass\\n"), detect_lang("out[0] = 1;")
    ('python', 'msl')
    >>> detect_lang("# saxpy\\ndef k(x, out: mb.Out)\\n    pass\\n")     # missing colon
    'python'
    """
    for line in cell.splitlines():
        s = line.strip()
        if not s or s.startswith("#") and not s.startswith(("#include", "#define", "#pragma", "#if")) \
                or s.startswith("//"):
            continue
        if _PY_START.match(s):
            return "python"
        break
    try:
        tree = ast.parse(cell)
    except SyntaxError:
        return "msl"
    return "python" if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in tree.body) else "msl"


def _remap_msl_error(e: MetalbenchError, kname: str, cell: str) -> MetalbenchError:
    """MSL errors count body lines from 1; in a cell the body starts at line 2 (a translation
    that counted from 2 only needs the name). The lines that called a header function too."""
    def remap(sp):
        if sp is None or sp.source is None or sp.source.name != f"{kname} source" or sp.source.first_line > 2:
            return sp
        d = 2 - sp.source.first_line
        return Span(Source("cell", sp.source.text, 2), sp.line + d, sp.col,
                    None if sp.end_line is None else sp.end_line + d, sp.end_col)
    spans = [e.span, *e.call_sites]
    new = [remap(sp) for sp in spans]
    if any(a is not b for a, b in zip(spans, new)):
        e.span, e.call_sites = new[0], new[1:]
        e.args = (str(e),)
    return e


def _msl_syntax_check(cell: str, header: str = ""):
    try:
        from ..frontend.msl.translator import parse_body
    except ImportError:
        return
    # read as the translation reads it: the header's macros and templates (f<N>(x) is a call)
    parse_body(cell, Source("cell", cell, 2), header)


_ASSIGN_RE = re.compile(r"\b([A-Za-z_]\w*)\s*\[[^;]*?\]\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)")
_ATOMIC_RE = re.compile(r"&\s*([A-Za-z_]\w*)\s*\[")     # (a store's target, in a body that does not parse)
_IDENT_RE = re.compile(r"\b[A-Za-z_]\w*\b")


def _uncommented(text: str) -> str:
    """``text`` with its C comments blanked (names in comments are not uses).

    >>> _uncommented("a // b\\n/* c */ d")
    'a  \\n  d'
    """
    return re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)


def _header_macros(header: str) -> str:
    """The replacement text of the header's ``#define``s: a macro expands in the body, so the
    arrays it names (``#define AT(i) src[i]``) are the body's inputs."""
    text = re.sub(r"\\\n", " ", _uncommented(header or ""))
    return "\n".join(m.group(1) for m in re.finditer(r"^\s*#\s*define\s+\w+(?:\([^)]*\))?(.*)$", text, re.M))


def infer_msl_names(cell: str, ns: dict, header: str = "") -> tuple[list, list]:
    """Guess an MSL body's inputs (notebook arrays it mentions, also through the header's
    macros) and outputs (what it stores to that is not an input).

    >>> infer_msl_names("uint i = thread_position_in_grid.x; out[i] = 2 * inp[i];",
    ...                 {"inp": np.zeros(3)})
    (['inp'], ['out'])
    >>> infer_msl_names("uint i = thread_position_in_grid.x; out[i] = AT(i);",
    ...                 {"inp": np.zeros(3)}, header="#define AT(i) (2 * inp[(i)])")
    (['inp'], ['out'])
    """
    body = _uncommented(cell) + "\n" + _header_macros(header)
    # Member names (thread_position_in_grid.x, p->y, metal::exp) are not variables.
    idents = re.findall(r"(?<![\w.])(?<!::)(?<!->)[A-Za-z_]\w*", body)
    # x_shape / x_strides / x_ndim exist only for an input x: they mention x (its place in
    # the order is where the body first uses any of them, as `int H = x_shape[1];` does)
    idents = list(dict.fromkeys(_shape_base(n, ns) for n in idents))
    inputs = [n for n in idents if n in ns and _is_data_array(ns[n]) and not n.startswith("_")]
    try:    # what the body stores through, from its syntax tree (stores under `if` too)
        from ..frontend.msl.memory import declared_names, written_names
        outs = written_names(cell, header)
        # a local (float v[4]; auto k_ = ...) is not the notebook array of that name
        local = declared_names(cell, header)
        inputs = [n for n in inputs if n not in local]
    except MetalbenchError:       # not MSL that parses: a guess from the text
        outs = []
        for rx in (_ASSIGN_RE, _ATOMIC_RE):
            for m in rx.finditer(body):
                n = m.group(1)
                if n not in outs:
                    outs.append(n)
        # Stores to a local array (declared in the body) are not outputs.
        outs = [n for n in outs if not re.search(rf"\b(?:threadgroup\s+)?\w+\s+{n}\s*\[\s*\w+\s*\]\s*;", body)]
    outputs = outs    # a stored-to name is an output even if a notebook array has that name
    inputs = [n for n in inputs if n not in outputs]
    return inputs, (outputs or ["out"])


def _order_note(res) -> str:
    """When a check fails and the inputs or outputs were inferred, their order may be the
    cause: it is the order of first mention in the body (inputs) and of the first store
    (outputs), not the repository's ``input_names``/``output_names``, which --output-shapes
    and the reference may follow."""
    parts = [f"{what} {', '.join(names)}" for what, names in res.guessed.items()]
    if not parts:
        return ""
    flags = " and ".join(f"--{w} {','.join(n)}" for w, n in res.guessed.items())
    return (f"note: the {' and '.join(parts)} were inferred from the body, in the order it names them; "
            f"if --output-shapes, --output-dtypes or the reference follow another order, list them in that "
            f"order (this one is {flags})")


def _unknown_arrays(cell: str, ns: dict, outputs: list, header: str = "") -> list:
    """Names the body indexes (``inpt[i]``) that are neither notebook variables, outputs,
    nor arrays it declares (``float tmp[4];``, ``threadgroup T buf[N];``).

    >>> _unknown_arrays("float t[2]; t[0] = inpt[i]; out[i] = t[0];", {}, ["out"])
    ['inpt']
    """
    body = _uncommented(cell)
    try:    # from the syntax tree, as infer_msl_names excludes locals
        from ..frontend.msl.memory import declared_names
        declared = declared_names(cell, header)
    except MetalbenchError:       # not MSL that parses: a guess from the text
        declared = set(re.findall(r"\b[A-Za-z_]\w*[\s*&]+([A-Za-z_]\w*)\s*\[", body))
    found = []
    for n in re.findall(r"(?<![\w.])(?<!::)(?<!->)([A-Za-z_]\w*)\s*\[", body):
        if n not in ns and n not in outputs and n not in declared and n not in found and \
                not n.startswith(("thread", "simdgroup", "quadgroup", "grid", "threadgroup")):
            found.append(n)
    return found


def _output_shapes(shapes, outputs: list) -> list:
    """``--output-shapes`` as a list of int tuples, one per output. ``[(n)]`` is ``[n]`` in
    Python (no comma, no tuple): a bare int is a 1-D shape, as the user meant.

    >>> _output_shapes([(3, 4), 5, [2]], ["a", "b", "c"])
    [(3, 4), (5,), (2,)]
    """
    if not isinstance(shapes, (list, tuple)):
        raise MagicError(f"--output-shapes gave {type(shapes).__name__} {shapes!r:.60}, not a list of shapes",
                         hint="one shape per output: --output-shapes '[(n,), (m, k)]'")
    out = []
    for s in shapes:
        if isinstance(s, (int, np.integer)):
            s = (s,)
        try:
            out.append(tuple(int(d) for d in s))
        except (TypeError, ValueError):
            raise MagicError(f"--output-shapes entry {s!r:.60} is not a shape (a tuple of ints)",
                             hint="one shape per output: --output-shapes '[(n,), (m, k)]'") from None
    if len(out) != len(outputs):
        raise MagicError(f"--output-shapes gives {len(out)} shape(s) for {len(outputs)} output(s) "
                         f"({', '.join(outputs)})",
                         hint="one shape per output, in the order of --outputs (or of the stores in the body)")
    return out


def _shape_base(n: str, ns: dict) -> str:
    m = re.fullmatch(r"(\w+?)_(?:shape|strides|ndim)", n)
    if m and m.group(1) in ns and not (n in ns and _is_data_array(ns[n])):
        return m.group(1)
    return n


def _hint_scalar_input(e: MetalbenchError, ns: dict, inputs: list):
    """An undeclared name that is a notebook number (eps = 1e-6): the inputs are guessed from
    the notebook's arrays only, so say how to pass it (MLX takes scalars as 0-d inputs)."""
    m = re.search(r"undeclared identifier '([A-Za-z_]\w*)'", str(e.args[0]) if e.args else "")
    v = ns.get(m.group(1)) if m else None
    if m and _is_data_array(v) and m.group(1) not in inputs:
        # a notebook array the body reaches only where the inference does not look (a header
        # function, a misspelt --inputs)
        n = m.group(1)
        e.hint = (f"'{n}' is a notebook array but not one of the inputs ({', '.join(inputs) or 'none'}): "
                  f"list it with --inputs {','.join([*inputs, n])}")
        e.args = (str(e),)
    elif isinstance(v, (bool, int, float, np.generic)):
        n = m.group(1)
        e.hint = (f"'{n}' is a notebook number, and the inputs default to the notebook arrays the body "
                  f"mentions: pass it as an input with --inputs {','.join([*inputs, n])} (a 0-d input, as "
                  f"MLX passes scalars), or make it an array ({n} = mx.array({n})), or a template value "
                  f"(--template {n}=...)")
        e.args = (str(e),)


def _number_input(e: MetalbenchError, ns: dict, inputs: list, tmpl) -> str | None:
    """The notebook number (bool, int, float) that ``e`` says is undeclared in the body, if any
    and not a --template name or already an input."""
    m = re.search(r"undeclared identifier '([A-Za-z_]\w*)'", e.message)
    n = m.group(1) if m else None
    if n is None or n.startswith("_") or n in inputs or n in dict(tmpl or ()):
        return None
    return n if isinstance(ns.get(n), (bool, int, float, np.generic)) else None


def _by_mention(names: list, cell: str, header: str = "") -> list:
    """``names`` in the order the body (then the header's macros) first names them; ``x_shape``
    & co. name ``x``.

    >>> _by_mention(["x", "T"], "for (int t = 0; t < T; ++t) out[t] = x[t];")
    ['T', 'x']
    """
    text = _uncommented(cell) + "\n" + _header_macros(header)

    def first(n):
        m = re.search(rf"(?<![\w.])(?<!::)(?<!->){n}(?:_shape|_strides|_ndim)?\b", text)
        return m.start() if m else len(text)
    return sorted(names, key=first)


def _is_data_array(v) -> bool:
    # DSL placeholders (thread_position_in_grid, ...) raise on attribute access: not data.
    return isinstance(v, np.ndarray) or type(v).__module__.startswith("mlx.core") and hasattr(v, "dtype")


class CellResult:
    """What one ``%%metal`` cell produced (``MetalMagics.last``), for tests and tools."""

    def __init__(self):
        self.kernel = None
        self.name = None
        self.lang = None
        self.check = None
        self.timing = None
        self.sweep = None
        self.grad = None
        self.error = None
        self.panel = None
        self.cached = False
        self.sweep_axes: dict = {}
        self.findings = None      # the KernelCheckError of a --checked launch (shown in the panel)
        self.guessed: dict = {}   # MSL body: the inputs/outputs inferred (2 or more), by "inputs"/"outputs"


def parse_line_help(line: str) -> bool:
    """True for ``%%metal --help`` / ``-h`` (whatever else the line holds)."""
    return any(w in ("--help", "-h") for w in line.split())


def format_error(e: BaseException) -> str:
    if isinstance(e, MetalbenchError):
        return str(e)
    return (f"internal error in %%metal: {type(e).__name__}: {e}\n"
            "hint: this is a metalbench bug; the notebook kernel keeps running")


def cell_error(e: MetalbenchError) -> MetalbenchError:
    """Make ``e`` show as its short message (cell line, caret, hint) when IPython prints
    it: IPython calls ``_render_traceback_`` instead of formatting the traceback, so the
    cell fails (Run All stops, nbclient raises) without metalbench's internal frames."""
    lines = [f"\x1b[0;31m{type(e).__name__}\x1b[0m: " + format_error(e)]
    if isinstance(e, KernelInternalError) and e.__cause__ is not None:
        # A metalbench bug: the original failure with its frames, for the report.
        import traceback
        lines += ["", "the failure inside metalbench (please include it in a bug report):",
                  "".join(traceback.format_exception(e.__cause__)).rstrip()]
    e._render_traceback_ = lambda: lines
    return e


def show_error(e: BaseException):
    """Show ``e`` as a short message in the cell output (no traceback); the panel and
    tools use it, the magic raises instead (:func:`cell_error`)."""
    from IPython.display import display
    msg = format_error(e)
    display({"text/plain": msg,
             "text/html": f'<pre class="metalbench-error" style="color:#cf222e;white-space:pre-wrap">'
                          f"{html.escape(msg)}</pre>"}, raw=True)


@contextlib.contextmanager
def _short_warnings():
    """metalbench's warnings in a cell as ``OutOfBoundsWarning: message``: Python would head
    them with IPython's file and line (``interactiveshell.py:2644``) and that line's code,
    which say nothing about the cell. Only the format changes: filters and
    ``catch_warnings(record=True)`` work as usual; other warnings are untouched."""
    prev = warnings.formatwarning

    def fmt(message, category, filename, lineno, line=None):
        if getattr(category, "__module__", "").startswith("metalbench"):
            return f"{category.__name__}: {message}\n"
        return prev(message, category, filename, lineno, line)
    warnings.formatwarning = fmt
    try:
        yield
    finally:
        warnings.formatwarning = prev


try:
    from IPython.core.magic import Magics, line_cell_magic, magics_class
except Exception:  # pragma: no cover
    Magics = object

    def magics_class(c):
        return c

    def line_cell_magic(f):
        return f


@magics_class
class MetalMagics(Magics):
    """Holds the compiled-kernel cache and the last cell's result."""

    def __init__(self, shell=None):
        super().__init__(shell)
        self.cache: dict = {}
        self.last: CellResult | None = None

    @line_cell_magic
    def metal(self, line, cell=None):
        res = CellResult()
        self.last = res
        if cell is None or parse_line_help(line):
            # `%metal` (a line, no body) or `%%metal --help`: the options, with examples.
            print(help_text())
            return None
        try:
            with _short_warnings():
                self._run(line, cell, res)
        except MetalbenchError as e:
            # A failing cell fails (Run All stops, executed notebooks report it), with the
            # short message; the previous kernel of that name stays (assigned last in _run).
            res.error = e
            raise cell_error(e) from None
        except Exception as e:
            res.error = e
            raise
        return None

    metal.__doc__ = help_text()

    # ----------------------------------------------------------------------------- cell
    def _run(self, line, cell, res: CellResult):
        ns = self.shell.user_ns if self.shell is not None else {}
        opts = parse_line(line)
        if not cell.strip():
            raise MagicError("the %%metal cell is empty", hint="write a DSL `def` or an MSL kernel body below the magic line")
        lang = opts.lang if opts.lang != "auto" else detect_lang(cell)
        lang = "python" if lang == "python" else "msl"
        res.lang = lang
        if lang == "python":
            kernel, args, launch = self._dsl(opts, cell, ns, res)
        else:
            kernel, args, launch = self._msl(opts, cell, ns, res)
        name = kernel.name if lang == "python" else opts.name or "kernel"
        res.name = name
        ref = None
        if opts.ref:
            ref = _eval(opts.ref, ns, "--ref")
            if not callable(ref):
                from ..check import call_reference, Launch
                call_reference(ref, Launch(kernel, args, launch), [])
        res.sweep_axes = self._sweep_axes(kernel, opts, ns, lang)
        if launch is not None and launch.get("grid") is not None:
            try:
                self._execute(kernel, args, launch, ref, opts, res)
            except KernelCheckError as e:
                # (debugger) --checked with the panel: the findings show in its Memory tab
                # (lines, threads, Inspect), then the cell fails as any failing cell does
                from .panel import HAVE_WIDGETS
                if not (opts.checked and HAVE_WIDGETS and not opts.no_widget):
                    raise
                res.findings = e
        # Only a cell that got this far replaces the previous kernel of that name.
        ns[name] = kernel
        res.kernel = kernel
        self._display(kernel, args, launch, ref, opts, res)
        if res.findings is not None:
            raise res.findings

    def _launch_options(self, opts, ns) -> dict:
        launch = {"backend": opts.backend}
        if opts.grid:
            launch["grid"] = _eval(opts.grid, ns, "--grid")
        if opts.threadgroup:
            launch["threadgroup"] = _eval(opts.threadgroup, ns, "--threadgroup")
        if opts.init_value is not None:
            launch["init_value"] = _eval(opts.init_value, ns, "--init-value")
        if opts.checked:
            launch["checked"] = True
        return launch

    def _key(self, lang, opts, cell, ns):
        # Globals are compile-time constants: include the scalar ones the body mentions.
        consts = sorted((n, repr(ns[n])) for n in set(_IDENT_RE.findall(cell))
                        if n in ns and isinstance(ns[n], (bool, int, float, str, np.generic)))
        extra = (opts.name, opts.inputs, opts.outputs, opts.header and repr(_eval(opts.header, ns, "--header")),
                 opts.atomic, opts.no_row_contiguous, opts.template if lang == "msl" else None,
                 opts.compile_options and repr(_eval(opts.compile_options, ns, "--compile-options")))
        h = hashlib.sha256(repr((lang, cell, extra, consts)).encode()).hexdigest()
        return h

    # ----------------------------------------------------------------------------- DSL
    def _dsl(self, opts, cell, ns, res):
        from ..kernel import Kernel
        key = self._key("python", opts, cell, ns)
        k = self.cache.get(key)
        res.cached = k is not None
        if k is None:
            k = Kernel(source=cell, env=ns, first_line=2, source_name="cell", name=opts.name)
        over = _eval(opts.args, ns, "--args") if opts.args else None
        consts = {}
        for n, v in parse_template(opts.template, ns):
            consts[n] = v
        args, missing = [], []
        kwargs = {}
        if over is not None and not isinstance(over, (tuple, list, dict)):
            over = (over,)          # --args x: one positional argument (an array is not a bool)
        if isinstance(over, (tuple, list)):
            args = list(over)
        else:
            over = dict(over or {})
            positional = True
            for p, (kind, _) in zip(k.params, k.kinds):
                if kind == "out":
                    continue
                import inspect
                has_default = p.default is not inspect.Parameter.empty
                if p.name in over:
                    v = over[p.name]
                elif kind == "constexpr":
                    if p.name in consts:
                        v = consts[p.name]
                    elif has_default:
                        positional = False
                        continue
                    elif p.name in ns:
                        v = ns[p.name]
                    else:
                        missing.append(p.name)
                        continue
                elif p.name in ns:
                    v = ns[p.name]
                elif has_default:
                    positional = False
                    continue
                else:
                    missing.append(p.name)
                    continue
                if positional and kind != "constexpr":
                    args.append(v)
                else:
                    kwargs[p.name] = v
        if missing:
            if opts.grid:
                raise MagicError(
                    f"{k.name}: argument(s) {', '.join(missing)} are not defined in the notebook",
                    hint="define notebook variables with these names, or pass --args 'dict(name=value, ...)'")
            self.cache[key] = k
            return k, None, None
        launch = self._launch_options(opts, ns)
        launch.update(kwargs)
        # Specialise now: name and type errors show up even without --grid.
        spec_kw = {n: v for n, v in launch.items() if n not in ("grid", "threadgroup", "backend", "init_value",
                                                                 "checked")}
        k.specialize(*args, **spec_kw)
        self.cache[key] = k
        return k, tuple(args), launch

    # ----------------------------------------------------------------------------- MSL
    def _msl(self, opts, cell, ns, res):
        name = opts.name or "kernel"
        if not name.isidentifier():
            raise MagicError(f"kernel name {name!r} is not an identifier")
        header = _eval(opts.header, ns, "--header") if opts.header else ""
        _msl_syntax_check(cell, header)
        # a template argument (--template T=float32,D=64) is never an input, even where the
        # notebook has an array of that name
        tmpl = parse_template(opts.template, ns)
        ns_in = {n: v for n, v in ns.items() if n not in dict(tmpl)} if tmpl else ns
        if opts.inputs is not None or opts.outputs is not None:
            g_in, g_out = infer_msl_names(cell, ns_in, header)
            inputs = [s.strip() for s in opts.inputs.split(",") if s.strip()] if opts.inputs is not None else g_in
            outputs = [s.strip() for s in opts.outputs.split(",") if s.strip()] if opts.outputs else g_out
        else:
            inputs, outputs = infer_msl_names(cell, ns_in, header)
        for _ in range(16):
            res.guessed = {what: names for what, names, given in (("inputs", inputs, opts.inputs),
                                                                   ("outputs", outputs, opts.outputs))
                           if given is None and len(names) > 1}
            try:
                return self._msl_kernel(name, cell, header, inputs, outputs, tmpl, opts, ns, res)
            except KernelNameError as e:
                # a notebook number the body names (T in the repository's inputs=[q, k, T]) is
                # an input, as MLX passes a Python number: 0-d, in the order the body names it
                n = _number_input(e, ns, inputs, tmpl) if opts.inputs is None else None
                if n is None:
                    raise
                inputs = _by_mention([*inputs, n], cell, header)
        raise MagicError(f"{name}: too many notebook numbers taken as inputs", hint="list them with --inputs")

    def _msl_kernel(self, name, cell, header, inputs, outputs, tmpl, opts, ns, res):
        from ..mlx_compat import metal_kernel
        copts = _eval(opts.compile_options, ns, "--compile-options") if opts.compile_options else None
        key = self._key("msl", opts, cell, ns) + repr((inputs, outputs))

        def kernel(atomic):
            k = self.cache.get((key, atomic))
            res.cached = k is not None
            if k is None:
                k = metal_kernel(name=name, input_names=inputs, output_names=outputs, source=cell, header=header,
                                 ensure_row_contiguous=not opts.no_row_contiguous, atomic_outputs=atomic,
                                 compile_options=copts)
            self.cache[(key, atomic)] = k
            return k
        over = _eval(opts.args, ns, "--args") if opts.args else None
        if isinstance(over, (list, tuple)):
            values = list(over)
        else:
            over = dict(over or {})
            missing = [n for n in inputs if n not in over and n not in ns]
            if missing:
                if opts.grid:
                    raise MagicError(f"{name}: input(s) {', '.join(missing)} are not defined in the notebook",
                                     hint="define them, or name the inputs with --inputs a,b")
                # no launch here: which outputs are atomic, from a float32 reading of the inputs
                return kernel(opts.atomic or self._atomic(name, cell, header, inputs, outputs, None, tmpl, copts)), \
                    None, None
            values = [over[n] if n in over else ns[n] for n in inputs]
        launch = self._launch_options(opts, ns)
        first = next((v for v in values if runtime.is_array(v)), None)
        if opts.output_shapes:
            shapes = _eval(opts.output_shapes, ns, "--output-shapes")
        elif first is not None:
            shapes = [tuple(first.shape)] * len(outputs)
        else:
            shapes = None
        if opts.output_dtypes:
            dtypes = _eval(opts.output_dtypes, ns, "--output-dtypes")
        elif first is not None:
            dtypes = [first.dtype] * len(outputs)
        else:
            dtypes = None
        if shapes is None or dtypes is None:
            unknown = _unknown_arrays(cell, ns, outputs, header) if not inputs else []
            if unknown:
                # the usual reason for no input: the array's name is misspelt or not yet defined
                raise MagicError(f"{name}: the body reads {', '.join(u + '[...]' for u in unknown)}, which "
                                 f"{'is' if len(unknown) == 1 else 'are'} not defined in the notebook (the inputs "
                                 f"are the notebook arrays the body names)",
                                 hint="define it in the notebook or fix the spelling; or name the inputs with "
                                      "--inputs a,b and pass them with --args")
            raise MagicError(f"{name}: cannot tell the output shapes and dtypes (no array input)",
                             hint="pass --output-shapes '[(n,)]' --output-dtypes '[mx.float32]'")
        if isinstance(shapes, tuple) and shapes and isinstance(shapes[0], (int, np.integer)):
            shapes = [shapes]
        shapes = _output_shapes(shapes, outputs)
        if not isinstance(dtypes, (list, tuple)):
            dtypes = [dtypes]
        from ..dsl import DType
        # float16 from `from metalbench.dsl import *` (a DSL type) names the same dtype
        dtypes = [d.type if isinstance(d, DType) else d for d in dtypes]
        launch.update(inputs=values, output_shapes=list(shapes), output_dtypes=list(dtypes))
        if tmpl:
            launch["template"] = tmpl
        try:
            # which outputs are atomic: from the front end's reading of this launch (its types)
            atomic = opts.atomic or self._atomic(name, cell, header, inputs, outputs,
                                                 (values, list(shapes), list(dtypes)), tmpl, copts)
            k = kernel(atomic)
            k.ir(values, list(shapes), list(dtypes), tmpl or None)
        except MetalbenchError as e:
            _hint_scalar_input(e, ns, inputs)
            raise _remap_msl_error(e, name, cell) from None
        return k, (), launch

    def _atomic(self, name, cell, header, inputs, outputs, launch, tmpl, copts) -> bool:
        """Whether the body needs MLX's ``atomic_outputs=True``: decided by the MSL front end
        from one translation (``frontend/msl/atomic_outputs.py``: an atomic function applied to an
        output, directly, through a pointer or a header function, or an output passed to a
        header function's atomic pointer parameter). ``launch``: ``(inputs, shapes, dtypes)``,
        or None where the inputs are not defined (float32 arrays assumed; a body that does not
        translate so is taken as plain). Its errors (an output used both atomically and
        plainly) count cell lines."""
        from .. import types as T
        from ..frontend.msl.atomic_outputs import atomic_outputs_needed
        from ..mlx_compat import _math_mode, metal_kernel
        if launch is None:
            facts = [(n, T.float32, 1) for n in inputs]
            outs, small, tk = [(n, T.float32, 1) for n in outputs], (), tuple(tmpl)
        else:
            b = metal_kernel(name, inputs, outputs, cell, header).bind(
                inputs=launch[0], output_shapes=launch[1], output_dtypes=launch[2], template=tmpl or None,
                backend="sim")
            facts, outs = b.specs, [(n, t, len(s)) for n, s, t in b.outputs]
            small, tk = b.data or (), tuple(b.template)
        key = ("atomic", name, cell, header, tuple(facts), tuple(outs), small, repr(tk), repr(copts))
        if key not in self.cache:
            try:
                self.cache[key] = atomic_outputs_needed(
                    name, cell, header, inputs=facts, outputs=outs, scalars=[n for n, _, nd in facts if nd == 0],
                    template=list(tk), constant_inputs=small, math_mode=_math_mode(copts), first_line=2)
            except MetalbenchError:
                if launch is not None:
                    raise
                return False
        return self.cache[key]

    # ----------------------------------------------------------------------------- run
    def _execute(self, kernel, args, launch, ref, opts, res):
        from ..bench import sweep_kernel, time_launch
        from ..check import Launch, check_outputs
        lc = Launch(kernel, args, launch)
        try:
            timing, outs = time_launch(lc, warmup=1, repeats=3, max_time=1.0)
        except MetalbenchError as e:
            raise _remap_msl_error(e, kernel.name, "") from None
        got = [np.array(runtime.to_numpy(o)) for o in outs]
        res.timing = timing
        if ref is not None:
            try:
                res.check = check_outputs(lc, ref, got, rtol=opts.rtol, atol=opts.atol)
            except MetalbenchError as e:
                if _order_note(res):
                    e.hint = ((e.hint + "\n") if e.hint else "") + _order_note(res)
                    e.args = (str(e),)
                raise
        if opts.sweep:
            kw = dict(launch)
            kw.pop("threadgroup", None)
            axes = dict(res.sweep_axes)
            tg = axes.pop("threadgroup", None)
            res.sweep = sweep_kernel(kernel, *args, threadgroup=tg, ref=ref, progress=False, max_time=0.5,
                                     **{**kw, **axes})
        if opts.grad:           # (autodiff) the generated VJP against finite differences
            from ..autodiff.gradcheck import check_grad_for_launch
            res.grad = check_grad_for_launch(kernel, args, launch)

    def _sweep_axes(self, kernel, opts, ns, lang) -> dict:
        """The ``--sweep AXIS=V1,V2`` axes as lists of values, checked against the kernel:
        ``threadgroup``, a DSL kernel's constexpr parameters, an MSL body's template names."""
        from .options import axis_values
        axes = {}
        consts = list(kernel.sweepable_constants({})) if lang == "python" else None
        for name, text in opts.sweep_axes.items():
            if name != "threadgroup" and consts is not None and name not in consts:
                known = ", ".join(["threadgroup"] + consts)
                raise MagicError(f"--sweep {name}=...: {kernel.name} has no constexpr parameter {name!r}",
                                 hint=f"sweepable axes: {known} (declare tunables as `{name}: mb.constexpr = ...`)")
            axes[name] = axis_values(text, ns, name)
        return axes

    def _display(self, kernel, args, launch, ref, opts, res):
        from IPython.display import HTML, display
        from .panel import HAVE_WIDGETS, Workbench, kernel_source, static_html
        name = res.name
        if res.check is not None and not res.check.ok and _order_note(res):
            note = _order_note(res)
            display({"text/plain": note, "text/html": f"<div><i>{html.escape(note)}</i></div>"}, raw=True)
        if launch is None or launch.get("grid") is None:
            sig = kernel.signature_text()
            note = "give --grid to run it" if launch is not None else \
                "define its arguments in the notebook (or pass --args) and --grid to run it"
            display({"text/plain": f"defined kernel {name}({sig}); {note}",
                     "text/html": f"<div>defined kernel <b>{html.escape(name)}</b>({html.escape(sig)}); "
                                  f"{html.escape(note)}</div>"}, raw=True)
            return
        if HAVE_WIDGETS and not opts.no_widget:
            wb = Workbench(kernel, args, launch, ref, res.check, res.timing, res.sweep, sweep_axes=res.sweep_axes,
                           grad=res.grad, tolerances=dict(rtol=opts.rtol, atol=opts.atol))
            res.panel = wb
            if res.findings is not None:
                wb.check_memory()
            display(wb)
            return
        try:
            source, lang = kernel_source(kernel, args, launch)
        except Exception:
            source, lang = None, "metal"
        summary = static_html(name, res.timing.backend if res.timing else "?", res.check, res.timing, res.sweep,
                              source, lang)
        text = repr(res.check) if res.check is not None else f"{name}: ran (no reference)"
        if res.timing is not None:
            text += f"\n{res.timing}"
        if res.grad is not None:
            text += f"\n{res.grad!r}"
            summary += res.grad._repr_html_()
        display({"text/plain": text, "text/html": summary}, raw=True)
        _ = HTML


_MAGICS: MetalMagics | None = None


def help_cell_transform(lines: list[str]) -> list[str]:
    """IPython refuses a cell magic with an empty body before the magic runs, so a cell
    holding only ``%%metal --help`` becomes the line magic ``%metal --help``.

    >>> help_cell_transform(["%%metal --help\\n"]), help_cell_transform(["%%metal k\\n", "x\\n"])
    (['%metal --help\\n'], ['%%metal k\\n', 'x\\n'])
    """
    if lines and lines[0].startswith("%%metal") and parse_line_help(lines[0][7:]) \
            and not "".join(lines[1:]).strip():
        return ["%" + lines[0][2:]]
    return lines


def load_ipython_extension(ip):
    """Register ``%%metal`` (``%load_ext metalbench``)."""
    global _MAGICS
    _MAGICS = MetalMagics(ip)
    ip.register_magics(_MAGICS)
    cleanup = getattr(ip, "input_transformers_cleanup", None)
    if cleanup is not None and help_cell_transform not in cleanup:
        cleanup.append(help_cell_transform)


def last_result() -> CellResult | None:
    """The last ``%%metal`` cell's result (kernel, check, timing, sweep, error, panel)."""
    return _MAGICS.last if _MAGICS is not None else None
