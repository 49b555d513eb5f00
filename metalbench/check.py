"""Comparing a kernel's outputs with a reference (NumPy, or MLX ops: :func:`call_reference`).

Every kernel object (DSL ``Kernel``, ``metal_kernel`` objects, ``cuda.jit`` kernels) is
run through the kernel protocol (:mod:`metalbench.protocol`) by one small adapter,
:class:`Launch`, so ``check``, ``bench`` and ``sweep`` treat them alike::

    r = saxpy.check(lambda a, x, y: a * x + y, 2.0, x, y, grid=n, threadgroup=256)
    r.ok, r.max_abs_err, r.max_ulp, r.mismatches, r.first_mismatches

    k = mb.metal_kernel(name="twice", input_names=["inp"], output_names=["out"],
                        source="uint i = thread_position_in_grid.x; out[i] = 2 * inp[i];")
    r = check_kernel(k, lambda inp: 2 * inp, inputs=[a], grid=(n, 1, 1), threadgroup=(64, 1, 1),
                     output_shapes=[a.shape], output_dtypes=[a.dtype])

Tolerances depend on the output dtype: exact for integers and bool; float32
``rtol=1e-5, atol=1e-6`` or within 4 ULP; float16 ``1e-3``; bfloat16 ``1e-2``.
"""
from __future__ import annotations

import base64
import html
import inspect
import io
from dataclasses import dataclass, field

import numpy as np

from . import runtime
from .errors import MetalbenchError, user_facing

# (rtol, atol, ulp) per output dtype name
TOLERANCES = {
    "float32": (1e-5, 1e-6, 4),
    "float16": (1e-3, 1e-3, 2),
    "bfloat16": (1e-2, 1e-2, 2),
}
MAX_LISTED = 10



class BadReferenceError(MetalbenchError):
    """The NumPy reference is unusable: not callable, raises, or returns the wrong shape/dtype."""


ReferenceError_ = BadReferenceError     # the old name (round 1)


# ----------------------------------------------------------------------------- the adapter

class Launch:
    """One kernel with one call's arguments, run through the kernel protocol
    (``bind`` / ``launch``), whatever kind of kernel it is.

    >>> L = Launch(saxpy, (2.0, x, y), dict(grid=n, threadgroup=64))      # doctest: +SKIP
    >>> outs = L.run(threadgroup=128)        # list of NumPy arrays      # doctest: +SKIP
    """

    def __init__(self, kernel, args=(), kwargs=None):
        self.kernel = kernel
        self.args = tuple(args)
        self.kwargs = dict(kwargs or {})

    @property
    def name(self) -> str:
        return self.kernel.name

    @property
    def backend(self) -> str:
        return self.kernel.resolve_backend(self.kwargs.get("backend"))

    def bind(self, **override):
        """The kernel's :class:`~metalbench.protocol.BoundLaunch` for these arguments."""
        kw = dict(self.kwargs)
        kw.update(override)
        return self.kernel.bind(*self.args, **kw)

    def config(self, **override) -> dict:
        """The launch configuration (grid, threadgroup, constexprs/template), for tables."""
        return self.bind(**override).config()

    def call(self, bound=None, **override):
        """Launch; returns the kernel's raw outputs as a list (``mx.array`` usually)."""
        return list(self.kernel.launch(bound if bound is not None else self.bind(**override)))

    def sync(self, outs, backend: str | None = None):
        """Wait until ``outs`` are computed (GPU launches are asynchronous in MLX)."""
        arrays = [o for o in outs if type(o).__module__.startswith("mlx")]
        if arrays:
            import mlx.core as mx
            mx.eval(*arrays)
            if (backend or self.backend) in ("metal", "cuda"):
                mx.synchronize()

    def run(self, **override) -> list[np.ndarray]:
        """Launch, wait, and return the outputs as NumPy arrays."""
        outs = self.call(**override)
        self.sync(outs)
        return [np.array(runtime.to_numpy(o)) for o in outs]

    def ref_args(self):
        """What the NumPy reference receives: the inputs as NumPy, in the kernel's order."""
        return self.bind().reference_args()

    def output_names(self, **override) -> list[str]:
        b = self.bind(**override)
        return self.kernel.specialization(b).output_names

    def input_bytes(self) -> int:
        return self.bind().input_bytes()


# ----------------------------------------------------------------------------- comparison

@dataclass
class OutputDiff:
    """The comparison of one output with its expected values."""
    name: str
    got: np.ndarray
    expected: np.ndarray
    mask: np.ndarray              # True where the element mismatches
    abs_err: np.ndarray
    rtol: float
    atol: float
    ulp_tol: int | None
    max_abs_err: float
    max_rel_err: float
    max_ulp: int | None
    nan_inf_mismatches: int

    @property
    def mismatches(self) -> int:
        return int(self.mask.sum())

    @property
    def size(self) -> int:
        return int(self.mask.size)

    def first_mismatches(self, n: int = MAX_LISTED):
        idx = np.argwhere(self.mask)[:n]
        return [(tuple(int(i) for i in ix), self.got[tuple(ix)].item(), self.expected[tuple(ix)].item())
                for ix in idx]


def _ordered_bits(a: np.ndarray) -> np.ndarray:
    """Floats as integers that count representable values (so differences are ULPs)."""
    bits = a.dtype.itemsize * 8
    i = a.view({16: np.int16, 32: np.int32, 64: np.int64}[bits]).astype(np.int64)
    mag = np.int64((1 << (bits - 1)) - 1)
    return np.where(i < 0, -(i & mag), i)


def compare(got, expected, name: str = "out", rtol=None, atol=None, ulp=None) -> OutputDiff:
    """Compare one output with its expected values using ``got``'s dtype tolerances.

    >>> d = compare(np.float32([1, 2, 3]), np.array([1.0, 2.0, 3.5]))
    >>> d.mismatches, d.first_mismatches()
    (1, [((2,), 3.0, 3.5)])
    """
    got = np.asarray(got)
    exp = np.asarray(expected)
    if got.dtype.kind == "c":
        # a complex output (MLX's complex64) is compared part by part, with its float parts'
        # tolerances: a trailing axis of 2 (real, imaginary) in the shapes and indices shown
        exp = np.broadcast_to(exp, got.shape).astype(got.dtype)
        part = np.float32 if got.dtype == np.complex64 else np.float64
        got = np.ascontiguousarray(got).view(part).reshape(got.shape + (2,))
        exp = np.ascontiguousarray(exp).view(part).reshape(got.shape)
    dname = got.dtype.name
    if got.dtype.kind == "f" or dname == "bfloat16":
        r0, a0, u0 = TOLERANCES.get(dname, (1e-5, 1e-6, 4))
        rtol = r0 if rtol is None else rtol
        atol = a0 if atol is None else atol
        ulp = u0 if ulp is None else ulp
        g = got.astype(np.float64)
        e = exp.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            d = np.abs(g - e)
            finite = np.isfinite(g) & np.isfinite(e)
            ulps = np.abs(_ordered_bits(got) - _ordered_bits(exp.astype(got.dtype)))
            close = (d <= atol + rtol * np.abs(e)) | (ulps <= ulp)
            same_nonfinite = (np.isnan(g) & np.isnan(e)) | ((g == e) & ~np.isnan(g))
            mask = np.where(finite, ~close, ~same_nonfinite)
            nonfinite_bad = int((mask & ~finite).sum())
            df = np.where(finite, d, 0.0)
            rel = np.where(finite & (e != 0), df / np.where(e != 0, np.abs(e), 1.0), 0.0)
        max_abs = float(df.max()) if df.size else 0.0
        max_rel = float(rel.max()) if rel.size else 0.0
        max_ulp = int(np.where(finite, ulps, 0).max()) if ulps.size else 0
        return OutputDiff(name, got, exp, mask, df, rtol, atol, ulp, max_abs, max_rel, max_ulp, nonfinite_bad)
    # Integers and bool: exact.
    if got.dtype.kind == "u" and got.dtype.itemsize == 8:
        g, e = got, exp.astype(np.uint64)
        d = np.where(g > e, g - e, e - g).astype(np.float64)
    else:
        g, e = got.astype(np.int64), exp.astype(np.int64)
        d = np.abs(g - e).astype(np.float64)
    mask = g != e
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(e != 0, d / np.abs(e.astype(np.float64)), 0.0)
    return OutputDiff(name, got, exp, mask, d, 0.0, 0.0, None,
                      float(d.max()) if d.size else 0.0, float(rel.max()) if rel.size else 0.0, None, 0)


# ----------------------------------------------------------------------------- the result

@dataclass
class CheckResult:
    """The outcome of comparing a kernel with its reference; a rich HTML repr in notebooks.

    >>> r = check_kernel(saxpy, lambda a, x, y: a * x + y, 2.0, x, y, grid=n)   # doctest: +SKIP
    >>> r.ok, r.mismatches, r.max_ulp                                           # doctest: +SKIP
    (True, 0, 0)
    """
    kernel_name: str
    backend: str
    outputs: list = field(default_factory=list)
    config: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(o.mismatches == 0 for o in self.outputs)

    @property
    def mismatches(self) -> int:
        return sum(o.mismatches for o in self.outputs)

    @property
    def size(self) -> int:
        return sum(o.size for o in self.outputs)

    @property
    def mismatch_fraction(self) -> float:
        return self.mismatches / self.size if self.size else 0.0

    @property
    def max_abs_err(self) -> float:
        return max((o.max_abs_err for o in self.outputs), default=0.0)

    @property
    def max_rel_err(self) -> float:
        return max((o.max_rel_err for o in self.outputs), default=0.0)

    @property
    def max_ulp(self) -> int | None:
        u = [o.max_ulp for o in self.outputs if o.max_ulp is not None]
        return max(u) if u else None

    @property
    def nan_inf_mismatches(self) -> int:
        return sum(o.nan_inf_mismatches for o in self.outputs)

    @property
    def first_mismatches(self):
        """``[(output name, index tuple, got, expected), ...]`` for the first few mismatches."""
        out = []
        for o in self.outputs:
            out += [(o.name, ix, g, e) for ix, g, e in o.first_mismatches()]
        return out[:MAX_LISTED]

    def __bool__(self) -> bool:
        return self.ok

    def summary(self) -> str:
        """One line: match or mismatch, with the error figures."""
        ulp = f", max {self.max_ulp} ULP" if self.max_ulp is not None else ""
        figs = f"max abs err {self.max_abs_err:.3g}, max rel err {self.max_rel_err:.3g}{ulp}"
        if self.ok:
            return f"{self.kernel_name} [{self.backend}]: match ({self.size} elements; {figs})"
        nf = f", {self.nan_inf_mismatches} NaN/Inf disagreements" if self.nan_inf_mismatches else ""
        return (f"{self.kernel_name} [{self.backend}]: MISMATCH in {self.mismatches} of {self.size} elements "
                f"({100 * self.mismatch_fraction:.3g}%{nf}; {figs})")

    @property
    def hint(self) -> str | None:
        """For a float mismatch at rounding level (all differences tiny next to the
        output's magnitude, no NaN/Inf disagreement): that it looks like rounding, and the
        tolerance that would accept it. Sums in another order (a parallel scan or
        reduction) round differently from NumPy's sequential ones."""
        if self.ok or self.nan_inf_mismatches:
            return None
        worst = 0.0
        for o in self.outputs:
            if o.mismatches == 0:
                continue
            if o.got.dtype.kind != "f" and o.got.dtype.name != "bfloat16":
                return None
            exp = np.asarray(o.expected, dtype=np.float64)
            scale = float(np.max(np.abs(exp[np.isfinite(exp)]), initial=0.0))
            # a few dozen roundings of the output's own magnitude, no more
            eps = float(np.finfo(np.float32 if o.got.dtype.name == "bfloat16" else o.got.dtype).eps)
            eps = 2.0 ** -7 if o.got.dtype.name == "bfloat16" else eps
            if not scale or o.max_abs_err > 32 * eps * scale:
                return None
            worst = max(worst, o.max_abs_err)
        atol = float(f"{2 * worst:.0e}") if worst else 0.0
        atol = atol if atol >= 2 * worst else atol * 2
        return (f"the differences are at rounding level for outputs of this magnitude (a parallel sum "
                f"rounds differently from NumPy's sequential one); if that is expected, pass atol={atol:g} "
                f"(check(..., atol={atol:g}); %%metal --atol {atol:g})")

    def __repr__(self) -> str:
        lines = [self.summary()]
        for name, ix, g, e in self.first_mismatches:
            lines.append(f"  {name}{list(ix)}: got {g!r}, expected {e!r}")
        if self.hint:
            lines.append(f"hint: {self.hint}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        color = "#1a7f37" if self.ok else "#cf222e"
        word = "match" if self.ok else "mismatch"
        parts = [f'<div class="metalbench-check"><b style="color:{color}">{word}</b> '
                 f"{html.escape(self.summary())}"]
        if not self.ok:
            rows = "".join(f"<tr><td>{html.escape(n)}</td><td>{list(ix)}</td><td>{html.escape(repr(g))}</td>"
                           f"<td>{html.escape(repr(e))}</td></tr>" for n, ix, g, e in self.first_mismatches)
            parts.append("<table><tr><th>output</th><th>index</th><th>got</th><th>expected</th></tr>"
                         f"{rows}</table>")
            if self.hint:
                parts.append(f"<div><i>hint: {html.escape(self.hint)}</i></div>")
        for o in self.outputs:
            if o.got.ndim == 2 and not self.ok:
                png = heatmap_png(o)
                if png:
                    parts.append(f'<img alt="error heat map of {html.escape(o.name)}" '
                                 f'src="data:image/png;base64,{png}"/>')
        parts.append("</div>")
        return "".join(parts)


def heatmap_png(o: OutputDiff) -> str | None:
    """A base64 PNG heat map of the absolute error of a 2-D output (mismatches in red)."""
    try:
        import matplotlib
        matplotlib.use("Agg", force=False)
        from matplotlib.figure import Figure
    except Exception:
        return None
    fig = Figure(figsize=(4, 3), dpi=80)
    ax = fig.subplots()
    err = np.where(np.isfinite(o.abs_err), o.abs_err, np.nan)
    im = ax.imshow(err, cmap="viridis", interpolation="nearest", aspect="auto")
    ys, xs = np.nonzero(o.mask)
    if len(xs) and len(xs) < 5000:
        ax.scatter(xs, ys, s=4, c="red", marker="s", label="mismatch")
    fig.colorbar(im, ax=ax, label="|got - expected|")
    ax.set_title(f"{o.name}: {o.mismatches} mismatches")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode()


# ----------------------------------------------------------------------------- check_kernel

def _ref_label(ref) -> str:
    return getattr(ref, "__name__", None) or type(ref).__name__


def _named_constants(ref, launch: Launch, config, npos: int, given: dict) -> dict:
    """The compile-time constants (constexprs, template values) of this configuration that
    ``ref`` names as parameters after the inputs (``lambda x, BLOCK: ...``), so a sweep
    over ``BLOCK=[...]`` checks a reference that depends on it."""
    try:
        params = list(inspect.signature(ref).parameters.values())
    except (TypeError, ValueError):
        return {}
    consts = launch.kernel.sweepable_constants({**launch.kwargs, **(config or {})})
    return {p.name: consts[p.name] for p in params[npos:]
            if p.name in consts and consts[p.name] is not None and p.name not in given
            and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)}


def _by_name(ref, names, n: int):
    """The order in which to pass the inputs when ``ref``'s parameters are the kernel's input
    names in another order (``def grid_sample_ref(x, grid)`` for inputs ``grid, x``, as a
    ``%%metal`` cell infers them from the body): None to pass them as they are."""
    if not names or len(names) != n:
        return None
    try:
        params = [p.name for p in inspect.signature(ref).parameters.values()
                  if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return None
    names = list(names)
    if params[:n] == names or sorted(params[:n]) != sorted(names) or len(set(names)) != n:
        return None
    return [names.index(p) for p in params[:n]]


def uses_mlx(ref, depth: int = 3) -> bool:
    """Whether ``ref`` computes with MLX: it is an MLX function (``mx.exp``), or its code names
    ``mlx.core`` (``mx.floor(...)``) or calls a function of the notebook that does. Such a
    reference gets the inputs as MLX arrays: NumPy arrays through MLX code silently compute
    something else (NumPy's in-place ops and gathers on MLX index arrays).

    >>> import mlx.core as mx
    >>> uses_mlx(mx.exp), uses_mlx(lambda x: mx.exp(x) + 1), uses_mlx(np.exp), uses_mlx(lambda x: 2 * x)
    (True, True, False, False)
    """
    if getattr(ref, "__module__", None) in ("mlx.core", "mlx.core.fast") or \
            type(ref).__module__.startswith("mlx"):
        return True
    code, glb = getattr(ref, "__code__", None), getattr(ref, "__globals__", None)
    if code is None or glb is None:
        return False
    import types
    values = [glb.get(n) for n in code.co_names]
    for c in getattr(ref, "__closure__", None) or ():      # a helper defined in the enclosing function
        try:
            values.append(c.cell_contents)
        except ValueError:     # an empty cell
            pass
    for v in values:
        if isinstance(v, types.ModuleType) and v.__name__.startswith("mlx"):
            return True
        if depth > 0 and isinstance(v, types.FunctionType) and v is not ref and uses_mlx(v, depth - 1):
            return True
    return False


def _mlx_arg(v):
    if not runtime.is_array(v) or type(v).__module__.startswith("mlx"):
        return v
    import mlx.core as mx
    return mx.array(np.asarray(v))


def call_reference(ref, launch: Launch, got: list[np.ndarray], names=None, config=None) -> list[np.ndarray]:
    """Call ``ref`` on the inputs (and the constants it names: ``_named_constants``) and
    validate what it returns against ``got``. The inputs are NumPy arrays, or the MLX arrays
    the kernel got when ``ref`` computes with MLX (:func:`uses_mlx`); they are passed by name
    when ``ref``'s parameters are the kernel's input names in another order (:func:`_by_name`).
    ``ref`` returns an array per output: a tuple, or a list of arrays (as MLX kernels return
    their outputs, ``[out]`` for one)."""
    if not callable(ref):
        raise BadReferenceError(
            f"the reference must be a callable taking the kernel's inputs as NumPy arrays; got "
            f"{type(ref).__name__} {ref!r:.60}",
            hint="for example ref=lambda x, y: x + y (in a cell: --ref 'lambda x, y: x + y')")
    bound = launch.bind()
    args, kw = bound.reference_args()
    mlx_ref = uses_mlx(ref)
    if mlx_ref:     # the inputs as the kernel got them (bfloat16 stays bfloat16)
        args = [_mlx_arg(a) for a in bound.args]
        kw = {k: _mlx_arg(bound.kwargs.get(k, v)) for k, v in kw.items()}
    kw = {**kw, **_named_constants(ref, launch, config, len(args), kw)}
    in_names = getattr(launch.kernel, "input_names", None)
    order = _by_name(ref, in_names, len(args))
    if order is not None:
        args = [args[i] for i in order]
    try:
        exp = ref(*args, **kw)
    except Exception as e:  # the user's function: any failure becomes a short message
        if in_names and len(in_names) == len(args):
            what = "(" + ", ".join(in_names if order is None else [in_names[i] for i in order]) + ")"
        else:
            what = f"({len(args)} positional)"
        raise BadReferenceError(
            f"the reference {_ref_label(ref)}() raised {type(e).__name__}: {e}",
            hint=f"it is called with the kernel's inputs {what} as {'MLX' if mlx_ref else 'NumPy'} arrays"
                 f"{' and keywords ' + ', '.join(kw) if kw else ''}; fix it or pass a different --ref") from None
    if isinstance(exp, tuple) or isinstance(exp, list) and (
            len(got) > 1 or len(exp) == 1 and (runtime.is_array(exp[0]) or isinstance(exp[0], np.ndarray))):
        # a list of arrays is one per output (as mx.fast.metal_kernel returns them: `[out]`);
        # a list of numbers is the one output's values
        exp = list(exp)
    else:
        exp = [exp]
    names = names or [f"out{i}" if len(got) > 1 else "out" for i in range(len(got))]
    if len(exp) != len(got):
        raise BadReferenceError(
            f"the reference returned {len(exp)} value(s) but the kernel has {len(got)} output(s)",
            hint="return one array per output, as a tuple when there are several")
    out = []
    for n, g, e in zip(names, got, exp):
        if e is None:
            raise BadReferenceError(f"the reference returned None for output {n!r}",
                                  hint="return the expected array (did you forget `return`?)")
        try:
            e = np.asarray(runtime.to_numpy(e) if runtime.is_array(e) else e)
        except Exception as err:
            raise BadReferenceError(f"the reference's value for output {n!r} is not an array: {err}") from None
        if e.dtype.kind not in "biuf" and e.dtype.name != "bfloat16" and not (e.dtype.kind == "c" and g.dtype.kind == "c"):
            raise BadReferenceError(f"the reference returned {e.dtype} values for output {n!r} ({g.dtype})",
                                  hint="return a numeric NumPy array")
        if g.dtype.kind in "biu" and (e.dtype.kind == "f" or e.dtype.name == "bfloat16"):
            raise BadReferenceError(
                f"the reference returned floating-point values ({e.dtype}) for the integer output {n!r} "
                f"({g.dtype}); integer outputs are compared exactly",
                hint="use integer arithmetic in the reference (// instead of /) or .astype(...)")
        if e.shape != g.shape:
            if e.ndim == 0:
                e = np.broadcast_to(e, g.shape)
            else:
                raise BadReferenceError(
                    f"the reference returned shape {e.shape} for output {n!r}, but the kernel produced "
                    f"shape {g.shape}", hint="make the reference return an array of the output's shape")
        out.append(e)
    return out


def check_outputs(launch: Launch, ref, got: list[np.ndarray], rtol=None, atol=None, ulp=None,
                  config=None) -> CheckResult:
    """Compare already computed outputs ``got`` of ``launch`` with ``ref``."""
    try:
        names = launch.output_names(**(config or {}))
    except MetalbenchError:
        names = None
    if not names or len(names) != len(got):
        names = [f"out{i}" if len(got) > 1 else "out" for i in range(len(got))]
    exp = call_reference(ref, launch, got, names, config)
    diffs = [compare(g, e, n, rtol, atol, ulp) for n, g, e in zip(names, got, exp)]
    return CheckResult(launch.name, launch.backend, diffs, config if config is not None else launch.config())


@user_facing
def check_kernel(kernel, ref, *args, rtol=None, atol=None, ulp=None, **launch_kwargs) -> CheckResult:
    """Run ``kernel`` and compare its outputs with ``ref`` called on the NumPy inputs.

    DSL kernels take their arguments positionally (``kernel(*args, **launch_kwargs)``);
    ``metal_kernel`` objects take MLX's keywords (``inputs=``, ``output_shapes=`` ...),
    or their inputs positionally. ``rtol``/``atol``/``ulp`` override the dtype defaults.

    >>> r = check_kernel(saxpy, lambda a, x, y: a * x + y, 2.0, x, y, grid=n)     # doctest: +SKIP
    >>> print(r.summary())                                                      # doctest: +SKIP
    saxpy [sim]: match (1024 elements; max abs err 0, max rel err 0, max 0 ULP)
    """
    if not callable(ref):
        call_reference(ref, Launch(kernel, args, launch_kwargs), [])   # raises the friendly message
    launch = Launch(kernel, args, launch_kwargs)
    got = launch.run()
    return check_outputs(launch, ref, got, rtol, atol, ulp)
