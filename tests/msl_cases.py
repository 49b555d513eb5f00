"""Shared machinery of the tests/test_msl_*.py files: run an MSL body through
``mb.metal_kernel`` on the simulator (unchecked and checked), round-trip it (MSL -> IR ->
printed MSL -> IR -> same results), check the printed MSL and CUDA with libclang, and on a
GPU machine run the printed CUDA (``backend="cuda"``) against the simulator."""
from __future__ import annotations

from dataclasses import dataclass, field

import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench import msl_check
from metalbench import types as T
from metalbench.codegen import cuda, cuda_check, msl
from metalbench.frontend.msl import translate_kernel


@dataclass
class MSLCase:
    """One MSL kernel with its inputs, outputs and NumPy reference."""
    name: str
    source: str
    inputs: dict                    # name -> np.ndarray (0-d: a scalar input)
    outputs: list                   # [(name, shape, np dtype)]
    ref: object                     # (**inputs) -> list of arrays
    grid: tuple = (32, 1, 1)
    tg: tuple = (32, 1, 1)
    header: str = ""
    template: list = field(default_factory=list)
    atol: float = 1e-6
    init_value: float | None = None

    def kernel(self, source=None, header=None):
        return mb.metal_kernel(name=self.name, input_names=list(self.inputs), output_names=[o[0] for o in self.outputs],
                               source=self.source if source is None else source,
                               header=self.header if header is None else header)

    def launch(self, k, backend="sim", **kw):
        outs = k(inputs=[mx.array(v) for v in self.inputs.values()], template=self.template,
                 grid=self.grid, threadgroup=self.tg, output_shapes=[o[1] for o in self.outputs],
                 output_dtypes=[getattr(mx, np.dtype(o[2]).name) for o in self.outputs],
                 init_value=self.init_value, backend=backend, **kw)
        return [np.array(o) for o in outs]

    def check(self, got):
        want = self.ref(**self.inputs)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.astype(np.float64), np.asarray(w).astype(np.float64),
                                       atol=self.atol, rtol=self.atol)

    def ir(self):
        ins = [(n, T.from_numpy(v.dtype), v.ndim) for n, v in self.inputs.items()]
        scal = [n for n, v in self.inputs.items() if v.ndim == 0]
        outs = [(n, T.from_numpy(np.dtype(dt)), len(shape)) for n, shape, dt in self.outputs]
        tmpl = [(k, T.from_mlx(v) if not isinstance(v, (bool, int)) else v) for k, v in self.template]
        small = [n for n, v in self.inputs.items() if 0 < v.ndim and v.size < 8]   # MLX: constant
        return translate_kernel(self.name, self.source, self.header, inputs=ins, outputs=outs, scalars=scal,
                                template=tmpl, constant_inputs=small)


def run_sim(c: MSLCase):
    """The simulator, unchecked and checked, against the NumPy reference."""
    k = c.kernel()
    c.check(c.launch(k))
    c.check(c.launch(k, checked=True))


def run_roundtrip(c: MSLCase):
    """MSL -> IR -> printed MSL -> IR: the printed kernel gives the same results, and the
    printed MSL and CUDA pass the libclang checks."""
    kir = c.ir()
    r = msl.render(kir)
    direct = c.launch(c.kernel())
    back = mb.metal_kernel(name=r.name, input_names=r.input_names, output_names=r.output_names,
                           source=r.body, header=r.header, atomic_outputs=r.atomic_outputs)
    again = back(inputs=[mx.array(v) for v in c.inputs.values()], grid=c.grid, threadgroup=c.tg,
                 output_shapes=[o[1] for o in c.outputs],
                 output_dtypes=[getattr(mx, np.dtype(o[2]).name) for o in c.outputs],
                 init_value=c.init_value, backend="sim")
    for d, a in zip(direct, again):
        np.testing.assert_array_equal(np.array(a), d)
    assert msl_check.check(r) == [], r.header + r.body
    rc = cuda.render(kir)
    assert cuda_check.check(rc, use_nvcc=False) == [], rc.header + rc.body


def run_cuda(c: MSLCase):
    """The printed CUDA on the GPU (``backend="cuda"``) against the simulator."""
    k = c.kernel()
    sim = c.launch(k)
    gpu = c.launch(k, backend="cuda")
    for s, g in zip(sim, gpu):
        np.testing.assert_allclose(g.astype(np.float64), s.astype(np.float64), atol=c.atol, rtol=c.atol)


def three_ways(cases: list) -> tuple:
    """The three tests of a list of cases, for a test module to bind to its own names:
    the simulator against NumPy (plain and checked), the round trip through printed MSL and
    CUDA (their compile checks), and, marked ``gpu``, the printed CUDA on the GPU against
    the simulator::

        test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim = three_ways(CASES)
    """
    each = pytest.mark.parametrize("c", cases, ids=[c.name for c in cases])

    @each
    def test_sim_matches_numpy(c):
        run_sim(c)

    @each
    def test_round_trip(c):
        run_roundtrip(c)

    @pytest.mark.gpu
    @each
    def test_printed_cuda_matches_sim(c):
        run_cuda(c)

    return test_sim_matches_numpy, test_round_trip, test_printed_cuda_matches_sim
