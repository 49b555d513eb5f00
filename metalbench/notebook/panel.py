"""The workbench panel a ``%%metal`` cell shows (ipywidgets 8 standard widgets only).

    wb = Workbench(saxpy, args=(2.0, x, y), launch=dict(grid=n, threadgroup=256),
                   ref=lambda a, x, y: a * x + y)
    wb.run()          # what the Run button does: launch, check, time
    wb.sweep()        # what the Sweep button does: threadgroups x constexprs, best applied
    wb.export()       # what the Export button does: standalone MLX code in the Export tab
    display(wb)       # a VBox: status, launch controls, tabs (Source, Check, Timing, Sweep, Export)

Without ipywidgets (or with ``--no-widget``) :func:`static_html` gives the same
facts as a static HTML summary.
"""
from __future__ import annotations

import ast
import html

from .. import launch as L
from ..bench import Timing, fmt_time, sweep_kernel, threadgroup_shapes, time_launch
from ..check import CheckResult, Launch, check_outputs
from ..errors import KernelCheckError, MetalbenchError
from .lexer import highlight_html

POW2 = [1 << i for i in range(11)]           # 1 .. 1024


def kernel_source(kernel, args=(), launch=None, backend="metal") -> tuple[str, str]:
    """(text, language) of what the kernel runs on ``backend``: the generated MSL (or
    CUDA) of this call's specialisation; for ``metal_kernel`` objects on metal, the
    user's body (and header) as MLX receives it."""
    launch = {k: v for k, v in dict(launch or {}).items() if k not in ("backend", "init_value", "checked")}
    try:
        bound = kernel.bind(*args, **launch)
        return kernel.specialization(bound).source(backend), "metal"
    except MetalbenchError:
        raise
    except Exception as e:  # a printer not available yet: show what the user wrote instead
        try:
            return kernel.user_source()
        except Exception:
            return f"// source unavailable: {type(e).__name__}: {e}", "metal"


def _status_html(result: CheckResult | None, timing: Timing | None, error: str | None = None) -> str:
    if error:
        return f'<div style="color:#cf222e"><b>error</b> <pre style="white-space:pre-wrap">{html.escape(error)}</pre></div>'
    parts = []
    if result is None:
        parts.append("<b>ran</b> (no reference: pass --ref to compare)")
    elif result.ok:
        parts.append(f'<b style="color:#1a7f37">match</b> {html.escape(result.summary())}')
    else:
        parts.append(f'<b style="color:#cf222e">mismatch</b> {html.escape(result.summary())}')
    if timing is not None:
        parts.append(f"<br/>{html.escape(str(timing))}")
    return "<div>" + "".join(parts) + "</div>"


def static_html(name, backend, result=None, timing=None, sweep=None, source=None, lang="metal",
                error=None) -> str:
    """The summary a cell shows without widgets: match/mismatch, timing, sweep, source.

    >>> "no reference" in static_html("k", "sim")
    True
    """
    parts = [f'<div class="metalbench-summary"><h4 style="margin:2px">{html.escape(name)} '
             f"[{html.escape(backend)}]</h4>", _status_html(result, timing, error)]
    if result is not None and not result.ok:
        parts.append(result._repr_html_())
    if sweep is not None:
        parts.append(sweep._repr_html_())
    if source:
        parts.append(f"<details><summary>source</summary>{highlight_html(source, lang)}</details>")
    parts.append("</div>")
    return "".join(parts)


def _png_img(b64: str) -> str:
    return f'<img src="data:image/png;base64,{b64}"/>'


def _grid_text(g) -> str:
    if isinstance(g, (tuple, list)):
        return str(tuple(g))
    return str(g)


try:
    import ipywidgets as W
    HAVE_WIDGETS = True
except Exception:  # pragma: no cover — ipywidgets is a dependency, but stay usable without it
    W = None
    HAVE_WIDGETS = False


if HAVE_WIDGETS:
    class Workbench(W.VBox):
        """The ``%%metal`` panel: status, launch controls, Run/Sweep/Export, and tabs."""

        def __init__(self, kernel, args=(), launch=None, ref=None, result=None, timing=None, sweep=None,
                     source=None, lang="metal", sweep_axes=None, grad=None, tolerances=None):
            self.kernel = kernel
            self.tolerances = {k: v for k, v in (tolerances or {}).items() if v is not None}
            self.args = tuple(args)
            self.base = dict(launch or {})
            self.ref = ref
            self.result = result
            self.timing = timing
            self.last_sweep = sweep
            self.name = kernel.name
            self._adjusting = False

            g, t = L.normalize(self.base.get("grid", 1), self.base.get("threadgroup"))
            self.status = W.HTML(_status_html(result, timing))
            self.message = W.HTML("")
            self.tg = [W.SelectionSlider(options=POW2, value=v, description=f"threadgroup.{a}",
                                         continuous_update=False,
                                         style={"description_width": "initial"})
                       for a, v in zip("xyz", t)]
            for s in self.tg:
                s.observe(self._on_tg, names="value")
            self.threads = W.Label(self._threads_text())
            self.grid = W.Text(value=_grid_text(self.base.get("grid")), description="grid",
                               continuous_update=False)
            self.backend = W.Dropdown(options=["auto", "sim", "metal", "cuda"],
                                      value=self.base.get("backend", "auto") or "auto", description="backend")
            self.run_button = W.Button(description="Run", button_style="primary", icon="play")
            self.sweep_button = W.Button(description="Sweep", icon="line-chart")
            self.export_button = W.Button(description="Export", icon="download")
            self.debug_button = W.Button(description="Check memory", icon="bug",
                                         tooltip="run once on the checked simulator: out-of-bounds, races, "
                                                 "uninitialised reads, divergent barriers; access counts")
            self.debug_button.on_click(lambda _: self.check_memory())
            self.run_button.on_click(lambda _: self.run())
            self.sweep_button.on_click(lambda _: self.sweep())
            self.export_button.on_click(lambda _: self.export())
            self.progress = W.IntProgress(value=0, min=0, max=1, description="sweep",
                                          layout=W.Layout(visibility="hidden"))
            # Sweep axes: threadgroup shapes and every constexpr (DSL) / int template (MSL),
            # as editable value lists; Sweep times their product.
            self.axis_fields = {
                name: W.Text(value=text, description=f"sweep {name}", continuous_update=False,
                             style={"description_width": "initial"}, layout=W.Layout(width="320px"))
                for name, text in sweep_axis_defaults(kernel, self.base, sweep_axes).items()}

            if source is None:
                try:
                    source, lang = kernel_source(kernel, self.args, self.base)
                except MetalbenchError as e:
                    source, lang = f"// {e.message}", "metal"
            self.source_text = source
            self.source_view = W.HTML(highlight_html(source, lang))
            self.diff_view = W.HTML(self._diff_html())
            # (issue 18) a modelled GPU time beside the simulator's: pick the device, ask for a roofline
            from .. import devices
            self.model_device = W.Dropdown(options=list(devices.DEVICES), value=devices.chosen().name,
                                           description="model on",
                                           tooltip="the GPU whose modelled time (roofline) is shown")
            self.roofline_button = W.Button(description="Roofline", icon="area-chart",
                                            tooltip="plot this launch on the chosen device's roofline")
            self.show_roofline = False
            self.timing_view = W.HTML(self._timing_html())
            self.model_device.observe(lambda _: self._refresh_timing(), names="value")
            self.roofline_button.on_click(lambda _: self._refresh_timing(roofline=True))
            self.sweep_view = W.HTML(sweep._repr_html_() if sweep is not None else
                                     "<i>press Sweep to time power-of-two threadgroup shapes</i>")
            self.export_view = W.Textarea(value="", placeholder="press Export for standalone MLX code",
                                          layout=W.Layout(width="100%", height="240px"))
            self.memory_view = W.HTML("<i>press Check memory to run once on the checked simulator</i>")
            # (autodiff) the generated VJP against finite differences (%%metal --grad, or the button)
            self.grad_result = grad
            self.grad_view = W.HTML(grad._repr_html_() if grad is not None else
                                    "<i>press Check gradient to compare the generated VJP with finite "
                                    "differences (simulator)</i>")
            self.grad_button = W.Button(description="Check gradient", icon="area-chart",
                                        tooltip="mb.check_grad: the generated VJP against finite differences")
            self.grad_button.on_click(lambda _: self.check_gradient())
            # (debugger) Memory: findings with Inspect buttons and access-map heat maps; Inspect: traces
            from .inspector import Inspector
            self.findings_view = W.VBox([])
            self.inspector = Inspector(lambda: (self.kernel, self.args, self.launch_kwargs()))
            self.inspector.set_grid(g)
            # the access map's tables and heat maps scroll in their own box, below the findings
            self.findings_view.layout = W.Layout(max_height="380px", overflow="auto")
            self.map_view = W.HTML("", layout=W.Layout(max_height="300px", overflow="auto"))
            timing_tab = W.VBox([W.HBox([self.model_device, self.roofline_button]), self.timing_view])
            self.tabs = W.Tab(children=[self.source_view, self.diff_view, timing_tab, self.sweep_view,
                                        self.export_view,
                                        W.VBox([self.memory_view, self.findings_view, self.map_view]),
                                        self.grad_view, self.inspector])
            for i, title in enumerate(["Source", "Check", "Timing", "Sweep", "Export", "Memory", "Gradient",
                                       "Inspect"]):
                self.tabs.set_title(i, title)
            if grad is not None:
                self.tabs.selected_index = 6
            controls = W.VBox([W.HBox(self.tg[:2]), W.HBox([self.tg[2], self.threads]),
                               W.HBox([self.grid, self.backend]),
                               W.HBox(list(self.axis_fields.values()), layout=W.Layout(flex_flow="row wrap")),
                               W.HBox([self.run_button, self.sweep_button, self.export_button,
                                       self.debug_button, self.grad_button, self.progress])])
            title = W.HTML(f"<b>{html.escape(self.name)}</b> &mdash; metalbench workbench")
            super().__init__([title, self.status, controls, self.message, self.tabs])

        # -- launch controls
        @property
        def threadgroup(self) -> tuple:
            return tuple(s.value for s in self.tg)

        def _threads_text(self) -> str:
            n = 1
            for s in self.tg:
                n *= s.value
            return f"{n} threads per threadgroup (max {L.MAX_THREADS_PER_THREADGROUP})"

        def _on_tg(self, change):
            # Keep the product within 1024 by halving the other sliders, largest first.
            if self._adjusting:
                return
            self._adjusting = True
            try:
                moved = change["owner"]
                while self.threadgroup[0] * self.threadgroup[1] * self.threadgroup[2] > L.MAX_THREADS_PER_THREADGROUP:
                    others = [s for s in self.tg if s is not moved and s.value > 1]
                    if not others:
                        moved.value = L.MAX_THREADS_PER_THREADGROUP
                        break
                    big = max(others, key=lambda s: s.value)
                    big.value = big.value // 2
                self.threads.value = self._threads_text()
            finally:
                self._adjusting = False

        def set_threadgroup(self, tg):
            """Set the sliders (an int or a tuple of up to 3 powers of two)."""
            _, t = L.normalize(1, tg)
            self._adjusting = True
            try:
                for s, v in zip(self.tg, t):
                    s.value = v if v in POW2 else max(p for p in POW2 if p <= v)
            finally:
                self._adjusting = False
            self.threads.value = self._threads_text()

        def launch_kwargs(self) -> dict:
            """The launch keywords the controls describe now."""
            kw = dict(self.base)
            try:
                g = ast.literal_eval(self.grid.value.strip())
            except (ValueError, SyntaxError):
                raise MetalbenchError(f"grid {self.grid.value!r} is not a number or a tuple of numbers",
                                      hint="for example 1024 or (64, 64)")
            kw["grid"] = g
            kw["threadgroup"] = self.threadgroup
            kw["backend"] = self.backend.value
            return kw

        # -- actions
        def _show_error(self, e: Exception):
            msg = str(e) if isinstance(e, MetalbenchError) else f"{type(e).__name__}: {e}"
            self.message.value = (f'<pre style="color:#cf222e;white-space:pre-wrap">{html.escape(msg)}</pre>')

        def run(self):
            """Launch with the current controls, check against the reference, time; returns the
            :class:`CheckResult` (None without a reference, or after an error)."""
            self.message.value = ""
            try:
                kw = self.launch_kwargs()
                launch = Launch(self.kernel, self.args, kw)
                timing, outs = time_launch(launch, warmup=1, max_time=0.3)
                from ..runtime import to_numpy
                import numpy as np
                got = [np.array(to_numpy(o)) for o in outs]
                self.result = (check_outputs(launch, self.ref, got, **self.tolerances)
                               if self.ref is not None else None)
                self.timing = timing
            except Exception as e:  # noqa: BLE001 — shown in the panel; the kernel keeps running
                self._show_error(e)
                return None
            self.status.value = _status_html(self.result, self.timing)
            self.diff_view.value = self._diff_html()
            self.timing_view.value = self._timing_html()
            return self.result

        def sweep(self, shapes=None, **axes):
            """Time every combination of the sweep axes (the threadgroup field: ``auto`` =
            power-of-two shapes of the grid's dimensionality; one field per constexpr or
            template value) and apply the best (sliders and constexpr values); returns the
            :class:`~metalbench.bench.Sweep`. ``shapes`` and ``axes`` override the fields."""
            self.message.value = ""
            try:
                kw = self.launch_kwargs()
                kw.pop("threadgroup")
                fields = self.sweep_axes()
                tg_field = fields.pop("threadgroup", None)
                for name, values in fields.items():
                    axes.setdefault(name, values)
                if shapes is None and tg_field is not None:
                    shapes = tg_field
                if shapes is None:
                    g, _ = L.normalize(kw["grid"], 1)
                    dims = 3 if g[2] > 1 else (2 if g[1] > 1 else 1)
                    shapes = threadgroup_shapes(dims, min_threads=32 if dims == 1 else 16)
                for name in axes:
                    kw.pop(name, None)
                self.progress.layout.visibility = "visible"
                self.progress.max = len(shapes) * max(1, _n_combos(axes))
                self.progress.value = 0

                def tick(done, total, row):
                    self.progress.value = done
                s = sweep_kernel(self.kernel, *self.args, threadgroup=shapes, ref=self.ref, progress=tick,
                                 max_time=0.5, **kw, **axes)
            except Exception as e:  # noqa: BLE001
                self._show_error(e)
                return None
            self.last_sweep = s
            self.sweep_view.value = s._repr_html_()
            if s.best is not None:
                self.set_threadgroup(s.best["threadgroup"])
                for name in axes:
                    if name in s.best:
                        self._set_constant(name, s.best[name])
            self.progress.bar_style = "success"
            self.tabs.selected_index = 3
            return s

        def sweep_axes(self) -> dict:
            """The sweep fields' values: ``{"threadgroup": [...] (absent for auto), "TILE": [...]}``."""
            from .options import axis_values
            out = {}
            for name, f in self.axis_fields.items():
                text = f.value.strip()
                if name == "threadgroup" and text in ("", "auto"):
                    continue
                if text:
                    out[name] = axis_values(text, {}, name)
            return out

        def _set_constant(self, name, value):
            # A DSL constexpr is a launch keyword; a metal_kernel's template value goes in its list.
            self.kernel.set_constant(self.base, name, value)

        def export(self) -> str | None:
            """Fill the Export tab with standalone MLX code for the current configuration."""
            self.message.value = ""
            try:
                from ..export import export_mlx
                kw = self.launch_kwargs()
                kw.pop("backend", None)
                code = export_mlx(self.kernel, *self.args, **kw)
            except Exception as e:  # noqa: BLE001
                self._show_error(e)
                return None
            self.export_view.value = code
            self.tabs.selected_index = 4
            return code

        def check_gradient(self):
            """(autodiff) Fill the Gradient tab with ``mb.check_grad`` for the current controls;
            returns the :class:`~metalbench.autodiff.gradcheck.GradCheckResult` (None after an error)."""
            self.message.value = ""
            try:
                from ..autodiff.gradcheck import check_grad_for_launch
                r = check_grad_for_launch(self.kernel, self.args, self.launch_kwargs())
            except Exception as e:  # noqa: BLE001
                self._show_error(e)
                return None
            self.grad_result = r
            self.grad_view.value = r._repr_html_()
            self.tabs.selected_index = 6
            return r

        def check_memory(self):
            """Run once on the checked simulator (``k.access_map``) and fill the Memory tab: the
            findings (out-of-bounds, races, ...) with their lines and an Inspect button per
            thread involved, or for a clean run the memory-access statistics; then the access
            map (per-line coalescing and bank conflicts, heat maps). Returns the stats, or
            None after a finding or error."""
            from .heatmaps import access_map_html
            from .inspector import findings_box
            from ..sim.access_map import access_map_kernel
            self.message.value = ""
            kw = self.launch_kwargs()
            kw.pop("checked", None)
            self.tabs.selected_index = 5
            self.findings_view.children = []
            try:
                am = access_map_kernel(self.kernel, *self.args, **kw)
            except Exception as e:  # noqa: BLE001 — shown in the panel
                self._show_error(e)
                return None
            self.access_map = am
            self.map_view.value = access_map_html(am, maps_first=True, error=False)
            if am.error is not None:
                # findings first (each with its line and Inspect buttons); the full report folded
                e = am.error
                self.memory_view.value = (f'<b style="color:#cf222e">{len(e.findings) or 1} finding(s)</b>'
                                          f'<details><summary>the full report</summary>'
                                          f'<pre style="white-space:pre-wrap">{html.escape(str(e))}</pre></details>')
                self.findings_view.children = [findings_box(e.findings, self.inspect)]
                return None
            stats = self.kernel.last_stats
            body = stats.to_html() if stats is not None else ""
            self.memory_view.value = ('<b style="color:#1a7f37">no findings</b> (bounds, races, uninitialised '
                                      'reads, divergent barriers)' + body)
            return stats

        def inspect(self, thread=None):
            """Open the Inspect tab on ``thread`` (a position tuple or linear index; None: the
            sliders' thread) and trace it; returns the trace."""
            self.tabs.selected_index = 7
            return self.inspector.trace(thread)

        # -- views
        def _diff_html(self) -> str:
            if self.result is None:
                return "<i>no reference to compare with (give --ref)</i>"
            return self.result._repr_html_()

        def _refresh_timing(self, roofline=None):
            if roofline is not None:
                self.show_roofline = roofline
            self.timing_view.value = self._timing_html()

        def model_estimate(self):
            """The chosen device's modelled time of the current launch (None if it cannot be counted)."""
            from .. import devices
            try:
                return devices.estimate_launch(self.kernel, *self.args, device=self.model_device.value,
                                               **{k: v for k, v in self.launch_kwargs().items() if k != "backend"})
            except Exception:  # noqa: BLE001 — the model is extra information, never an error
                return None

        def _timing_html(self) -> str:
            if self.timing is None:
                return "<i>not timed yet</i>"
            img = ""
            try:
                img = _png_img(self.timing.plot_png())
            except Exception:
                pass
            model = ""
            est = self.model_estimate()
            if est is not None:
                measured = "" if self.timing.backend == "sim" else f" (measured here: {fmt_time(self.timing.median)})"
                model = f"<div><b>{html.escape(str(est))}</b>{html.escape(measured)}</div>"
                if self.show_roofline:
                    from .. import devices
                    try:
                        t = None if self.timing.backend == "sim" else self.timing.median
                        buf = devices.roofline([(self.name, est, t)], est.device)._repr_png_()
                        import base64
                        model += _png_img(base64.b64encode(buf).decode())
                    except Exception:
                        pass
            note = ("<div><i>simulator time: the simulator's own speed on this CPU, not a GPU's; "
                    "the modelled time below estimates a GPU</i></div>" if self.timing.backend == "sim" else "")
            return f"<div>{html.escape(str(self.timing))}</div>{note}{model}{img}"
else:  # pragma: no cover
    Workbench = None


def _fmt_value(v) -> str:
    return str(v).replace("mlx.core.", "")


def sweep_axis_defaults(kernel, launch: dict, given: dict | None = None) -> dict:
    """Text of the panel's sweep fields: ``threadgroup`` (``auto`` or the given shapes) and
    one per constexpr parameter (DSL) or int template argument (MSL), prefilled with the
    values given on the ``%%metal --sweep`` line, else half, once and twice an int value.

    >>> sweep_axis_defaults(None, {"template": [("T", "float32"), ("TILE", 8)]}, {})
    {'threadgroup': 'auto', 'TILE': '4, 8, 16'}
    """
    given = dict(given or {})
    out = {"threadgroup": ", ".join(_fmt_value(v) for v in given.pop("threadgroup")) if "threadgroup" in given
           else "auto"}
    if kernel is not None:
        current = kernel.sweepable_constants(launch)
    else:
        from ..mlx_compat import template_ints
        current = template_ints(launch)
    for name, v in current.items():
        if name in given:
            out[name] = ", ".join(_fmt_value(x) for x in given[name])
        elif isinstance(v, int) and not isinstance(v, bool) and v > 1:
            out[name] = f"{v // 2}, {v}, {v * 2}"
        elif v is not None:
            out[name] = _fmt_value(v)
    return out


def _n_combos(axes) -> int:
    n = 1
    for v in axes.values():
        n *= len(v) if isinstance(v, (list, range)) else 1
    return n


__all__ = ["Workbench", "static_html", "kernel_source", "HAVE_WIDGETS", "fmt_time"]
