"""passes/data_dependence.py: which indices depend on data, which may be negative.

The CUDA read guard (codegen/cuda_guard.py) relies on these answers, and an index called
launch-determined that is not is an unguarded read that can fault: so the tests here are
mostly of data reaching an index by unusual routes (control flow, arrays, loops that
exit on data, device functions), and of subtractions the range facts do or do not prove.
"""
from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.passes.data_dependence import read_classes


def classes(src, ins: dict, header=""):
    names = list(ins)
    k = mb.metal_kernel(name="dd", input_names=names, output_names=["out"], source=src, header=header)
    b = k.bind(inputs=[ins[n] for n in names], grid=(8, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(8,)],
               output_dtypes=[mx.float32])
    return [(buf, cls) for buf, _, cls in read_classes(k.specialization(b).ir)]


F8, I8 = np.zeros(8, np.float32), np.zeros(8, np.int32)


@pytest.mark.parametrize("src, want", [
    # plain thread-indexed, shifted up, modulo, a subtraction the ranges prove >= 0
    ("uint i = thread_position_in_grid.x; out[i] = x[i] + x[i + 3] + x[i % 8] + x[(i % 8) + 8 - 1];",
     ["launch"] * 4),
    # below zero: uint wrap, int negative, float -> int
    ("uint i = thread_position_in_grid.x; int k = int(i) - 1; out[i] = x[i - 1] + x[k] + x[int(float(i) * 0.5f)];",
     ["negative"] * 3),
    # an input read at a constant index is a launch parameter; at a loaded index, data
    ("uint i = thread_position_in_grid.x; uint n = uint(idx[0]); out[i] = x[i * n] + x[idx[i]];",
     ["launch", "launch", "data", "launch"]),
    # a loop that leaves on data: the counter afterwards is data (and, flow-insensitive,
    # inside the loop too: guarded where it need not be, never the other way round)
    ("uint i = thread_position_in_grid.x; uint k = 0; for (; k < 8; ++k) { if (x[k] > 1.0f) break; } out[i] = x[k];",
     ["data", "data"]),
    # a value accumulated under a condition on data
    ("uint i = thread_position_in_grid.x; uint c = 0; for (uint k = 0; k < 8; ++k) { if (x[k] > 0.0f) c += 1; }"
     " out[i] = x[c];", ["launch", "data"]),
    # a thread array holding data, and one holding thread ids
    ("uint i = thread_position_in_grid.x; int a[2]; uint b[2]; a[0] = idx[i]; b[0] = i; out[i] = x[a[0]] + x[b[0]];",
     ["launch", "data", "launch"]),
    # clamped from below: max with a non-negative argument, clamp with non-negative bounds
    ("uint i = thread_position_in_grid.x; int k = int(i) - 1; out[i] = x[max(k, 0)] + x[clamp(k, 0, 7)] + x[min(k, 7)];",
     ["launch", "launch", "negative"]),
    # a threadgroup array written under a condition on data
    ("uint i = thread_position_in_grid.x; threadgroup uint t[32]; t[i % 32] = 0;"
     " if (x[i] > 0.0f) { t[i % 32] = 5; } out[i] = x[t[i % 32]];", ["launch", "data"]),
])
def test_index_classes(src, want):
    assert [c for _, c in classes(src, {"x": F8, "idx": I8})] == want


def test_device_function_given_a_buffer_returns_data():
    header = "inline int pick(const device int* p, uint i) { return p[i]; }\n" \
             "inline uint twice(uint i) { return 2 * i; }\n"
    src = "uint i = thread_position_in_grid.x; out[i] = x[pick(idx, i)] + x[twice(i)];"
    got = classes(src, {"x": F8, "idx": I8}, header)
    # a function's result is not looked into: not launch-determined (may be negative)
    assert got == [("x", "data"), ("x", "negative")]


def test_launch_parameters_count_as_non_negative():
    # sizes and counts arrive as int scalars (gated_delta's T): like shapes, not guarded;
    # an int read from a thread array is not a launch parameter
    src = "uint i = thread_position_in_grid.x; int a[1]; a[0] = int(i); out[i] = x[int(i) + off] + x[i * n] + x[a[0]];"
    got = classes(src, {"x": F8, "off": mx.array(np.int32(2)), "n": mx.array(np.uint32(2))})
    assert got == [("x", "launch"), ("x", "launch"), ("x", "negative")]
