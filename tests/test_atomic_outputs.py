"""Which outputs an MSL body uses atomically (MLX's ``atomic_outputs``), decided by the front end
from one translation (``frontend/msl/atomic_outputs.py``) instead of a text heuristic: an atomic
update reached through a header function or a pointer into an output counts, atomics on
threadgroup memory do not, and an output used both atomically and plainly is an error at its
line. Also ``%%metal --no-row-contiguous`` (MLX's ensure_row_contiguous=False). Our own kernels."""
import numpy as np
import pytest

from test_magic import cell, ip  # noqa: F401  (the in-process IPython fixture)

import metalbench as mb
from metalbench import types as T
from metalbench.errors import KernelTypeError
from metalbench.frontend.msl.atomic_outputs import atomic_output_uses, atomic_outputs_needed

mx = pytest.importorskip("mlx.core")

ADD_H = """
inline void bump(device atomic_float* slot, float v) {
    atomic_fetch_add_explicit(slot, v, memory_order_relaxed);
}
"""
ROW_H = """
inline void add_row(device atomic<float>* acc, uint bin, float v) {
    atomic_fetch_add_explicit(&acc[bin], v, memory_order_relaxed);
}
"""
TMPL_H = """
template <typename P>
void add_at(device P* base, uint k, float v) { atomic_fetch_add_explicit(base + k, v, memory_order_relaxed); }
"""
CAST_H = """
void add_bits(device float* p, float v) {
    atomic_fetch_add_explicit((device atomic_float*)p, v, memory_order_relaxed);
}
"""

I = "uint i = thread_position_in_grid.x;\n"
BODIES = {   # name: (header, body, atomic_outputs needed)
    "direct": ("", I + "atomic_fetch_add_explicit(&sums[i % 4], vals[i], memory_order_relaxed);", True),
    "helper_elem": (ADD_H, I + "bump(&sums[i % 4], vals[i]);", True),
    "helper_buffer": (ROW_H, I + "add_row(sums, i % 4, vals[i]);", True),
    "helper_template": (TMPL_H, I + "add_at(sums, i % 4, vals[i]);", True),
    "alias_cast": ("", I + "device atomic_float* p = (device atomic_float*)sums;\n"
                   "atomic_fetch_add_explicit(p + i % 4, vals[i], memory_order_relaxed);", True),
    "alias_offset": ("", I + "device atomic_float* row = sums + (i % 4 / 2) * 2;\n"
                     "atomic_fetch_add_explicit(&row[i % 2], vals[i], memory_order_relaxed);", True),
    "helper_casts": (CAST_H, I + "add_bits(sums + i % 4, vals[i]);", False),
    "plain": ("", I + "if (i < 4) { sums[i] = vals[i]; }", False),
}


def sums_ref(vals):
    return np.bincount(np.arange(vals.size) % 4, weights=vals, minlength=4).astype(np.float32)


@pytest.mark.parametrize("kind", list(BODIES))
def test_the_front_end_decides_atomic_outputs(kind):
    header, body, atomic = BODIES[kind]
    assert atomic_outputs_needed("k", body, header, inputs=[("vals", T.float32, 1)],
                                 outputs=[("sums", T.float32, 1)]) is atomic


@pytest.mark.parametrize("kind", [k for k in BODIES if k != "plain"])
def test_a_pasted_atomic_kernel_runs_without_atomic(ip, kind):  # noqa: F811
    # before: only an atomic function named in the body on an output's name made the outputs
    # atomic; through a header function the cell needed --atomic (and a cast-free one then
    # passed a plain pointer to an atomic parameter, which Metal refuses)
    header, body, atomic = BODIES[kind]
    ip.user_ns.update(vals=mx.array(np.linspace(-1, 2, 64, dtype=np.float32)), HDR=header, sums_ref=sums_ref)
    r = cell(ip, "acc --grid (64, 1, 1) --threadgroup (32, 1, 1) --outputs sums --output-shapes '[(4,)]' "
                 "--init-value 0 --ref sums_ref --atol 1e-5 --no-widget" + (" --header HDR" if header else ""), body)
    assert r.error is None and r.check.ok, r.error or r.check
    assert ip.user_ns["acc"].atomic_outputs is atomic


def test_threadgroup_atomics_only_leave_the_outputs_plain():
    body = ("threadgroup atomic_uint n[1];\nuint t = thread_position_in_threadgroup.x;\n"
            "if (t == 0) { atomic_store_explicit(&n[0], 0u, memory_order_relaxed); }\n"
            "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
            "atomic_fetch_add_explicit(&n[0], 1u, memory_order_relaxed);\n"
            "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
            "if (t == 0) { out[0] = atomic_load_explicit(&n[0], memory_order_relaxed); }")
    assert atomic_outputs_needed("k", body, inputs=[], outputs=[("out", T.uint32, 1)]) is False


def test_every_output_a_header_function_reaches_is_recorded():
    # the same function called for two outputs: each is seen (one translation per output)
    uses = atomic_output_uses("k", I + "bump(&a[0], 1.0f);\nbump(&b[i], 2.0f);", ADD_H, inputs=[],
                              outputs=[("a", T.float32, 1), ("b", T.float32, 1)])
    assert [(u.output, u.kind, u.site.line if u.site else u.span.line) for u in uses] == \
        [("a", "atomic", 2), ("b", "atomic", 3)]


CONFLICT = """uint i = thread_position_in_grid.x;
bump(&hist[i % 4], vals[i]);
if (i == 0) {
    total[0] = 1.0f;
}
"""


def test_an_output_used_atomically_and_plainly_is_an_error_at_its_lines(ip):  # noqa: F811
    # atomic_outputs makes every output atomic: no choice compiles in Metal. The error names
    # both outputs and the cell lines (the magic line is line 1)
    ip.user_ns.update(vals=mx.array(np.ones(8, np.float32)), HDR=ADD_H)
    r = cell(ip, "bad --grid (8, 1, 1) --threadgroup (8, 1, 1) --outputs hist,total --output-shapes '[(4,), (1,)]' "
                 "--header HDR --no-widget", CONFLICT)
    assert isinstance(r.error, KernelTypeError), r.error
    msg = str(r.error)
    assert "'hist' is used atomically" in msg and "'total' is also stored plainly at line 5" in msg, msg
    assert "cell, line 3:" in msg and "atomic_store_explicit" in msg, msg
    # --atomic decides it: then the plain store is the error, at its line
    r = cell(ip, "bad --grid (8, 1, 1) --threadgroup (8, 1, 1) --outputs hist,total --output-shapes '[(4,), (1,)]' "
                 "--header HDR --atomic --no-widget", CONFLICT)
    assert "'total' is atomic" in str(r.error) and "cell, line 5:" in str(r.error), r.error


def test_a_plain_pointer_to_an_atomic_parameter_is_refused_as_metal_does():
    # metal_kernel without atomic_outputs: &out[i] is a device float*, which Metal does not
    # convert to device atomic_float* (before: the simulator accepted it)
    k = mb.metal_kernel("k", ["vals"], ["sums"], I + "bump(&sums[i % 4], vals[i]);", header=ADD_H)
    with pytest.raises(KernelTypeError, match="'slot' points to atomics, got plain memory"):
        k(inputs=[mx.ones(8)], grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(4,)],
          output_dtypes=[mx.float32], init_value=0, backend="sim")


def test_a_cell_without_its_inputs_decides_from_float32(ip):  # noqa: F811
    # no --grid and feats not defined yet: the kernel is defined, its outputs atomic
    ip.user_ns.pop("feats", None)
    ip.user_ns["HDR"] = ADD_H
    r = cell(ip, "later --header HDR --inputs feats --outputs sums --no-widget",
             "uint i = thread_position_in_grid.x;\nbump(&sums[i % 4], feats[i]);")
    assert r.error is None and ip.user_ns["later"].atomic_outputs is True


STRIDED = """uint i = thread_position_in_grid.x;
out[i] = x[elem_to_loc(i, x_shape, x_strides, x_ndim)];
"""
RAW = """uint i = thread_position_in_grid.x;
out[i] = x[i];
"""


def test_no_row_contiguous(ip):  # noqa: F811
    base = mx.arange(12, dtype=mx.float32).reshape(3, 4)
    ip.user_ns.update(x=base.T, flat=lambda x: np.ascontiguousarray(x).reshape(-1))
    opts = "--grid (12, 1, 1) --threadgroup (4, 1, 1) --output-shapes '[(12,)]' --ref flat --no-widget"
    # the strided body reads the transposed array right either way
    for extra in ("", " --no-row-contiguous"):
        r = cell(ip, "tr" + extra + " " + opts, STRIDED)
        assert r.error is None and r.check.ok, r.error or r.check
        assert ip.user_ns["tr"].ensure_row_contiguous is (not extra)
    # a body reading x[i] gets the copy MLX makes by default, and the array's own memory
    # (not transposed) with --no-row-contiguous
    r = cell(ip, "raw " + opts, RAW)
    assert r.check.ok
    ip.user_ns["mem"] = lambda x: np.arange(12, dtype=np.float32)
    r = cell(ip, "raw --no-row-contiguous " + opts.replace("--ref flat", "--ref mem"), RAW)
    assert r.error is None and r.check.ok, r.error or r.check


def test_help_and_readme_name_the_options():
    from pathlib import Path
    from metalbench.notebook.options import help_text
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    for opt in ("--no-row-contiguous", "--atomic"):
        assert opt in help_text() and opt in readme
