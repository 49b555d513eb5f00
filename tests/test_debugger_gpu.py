"""Kernel prints on a real NVIDIA GPU (MLX's CUDA backend): device printf writes to the
process's C stdout, so each case runs in a subprocess and its captured stdout is compared
with the simulator's lines. Skips without a GPU (marker ``gpu``)."""
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.gpu

PROGRAM = textwrap.dedent('''
    import numpy as np, mlx.core as mx, metalbench as mb
    from metalbench import cuda
    from metalbench.dsl import *

    @mb.kernel
    def show(x, n: int, out: mb.Out):
        i = thread_position_in_grid.x
        if i % 3 == 0:
            print(i, x[i], f"{x[i]:.3f}", "%d" % n, i < 4, float16(x[i]))
        out[i] = x[i]

    x = np.arange(12, dtype=np.float32) / 4
    out = show(x, -7, grid=12, threadgroup=4, backend="cuda")
    mx.eval(out)
    mx.synchronize()

    k = mb.metal_kernel("logk", ["x"], ["y"], """
    uint i = thread_position_in_grid.x;
    os_log_default.log("y=%.2f i=%u", x[i], i);
    printf("hex %x\\\\n", i + 250);
    y[i] = x[i];
    """)
    (y,) = k(inputs=[mx.array(x[:4])], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
             output_dtypes=[mx.float32], backend="cuda")
    mx.eval(y)
    mx.synchronize()

    @cuda.jit
    def hello(a):
        i = cuda.grid(1)
        print(i, 999, a[i])
        a[i] = 2 * a[i]       # a kernel that writes nothing is never evaluated by MLX (lazy)
    a = np.arange(6, dtype=np.int32)
    hello.configure(backend="cuda")[2, 3](a)
    mx.synchronize()
    assert a.tolist() == [0, 2, 4, 6, 8, 10]
''')


def test_cuda_printf_matches_the_simulators_lines(tmp_path):
    prog = tmp_path / "prints.py"          # a file: metalbench reads the kernels' source
    prog.write_text(PROGRAM)
    cp = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, timeout=300)
    assert cp.returncode == 0, cp.stderr
    lines = sorted(ln.strip() for ln in cp.stdout.splitlines() if ln.strip())
    want = []
    for i in (0, 3, 6, 9):
        v = i / 4
        want.append(f"[thread ({i}, 0, 0)] {i} {v:g} {v:.3f} -7 {i < 4} {v:g}")
    for i in range(4):
        want += [f"[thread ({i}, 0, 0)] y={i / 4:.2f} i={i}", f"[thread ({i}, 0, 0)] hex {i + 250:x}"]
    want += [f"{i} 999 {i}" for i in range(6)]
    assert lines == sorted(want)
