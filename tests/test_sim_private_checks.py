"""Checked mode on one thread's own accesses: vector loads/stores through pointers Metal
requires aligned, at addresses that are not (a warning), and reads of thread-local array
elements the thread never wrote (an error, as for threadgroup memory). Unchecked launches
compute as before."""
import warnings

import mlx.core as mx
import numpy as np
import pytest

import metalbench as mb
from metalbench.dsl import float32, local_array, thread_position_in_grid
from metalbench.errors import KernelCheckError


def launch(source, header="", n=4, dtype=mx.float32, out=16, checked=True, x=None):
    """(output or None, findings of the error or [], KernelCheckWarnings) of one launch."""
    k = mb.metal_kernel(name="k", input_names=["x"], output_names=["o"], source=source, header=header)
    x = mx.arange(64, dtype=dtype) if x is None else x
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = k(inputs=[x], grid=(n, 1, 1), threadgroup=(n, 1, 1), output_shapes=[(out,)],
                  output_dtypes=[dtype], backend="sim", checked=checked, init_value=0)[0]
            errs = []
        except KernelCheckError as e:
            r, errs = None, e.findings
    return r, errs, [x for x in w if issubclass(x.category, mb.KernelCheckWarning)]


def misaligned(ws):
    return [f for f in ws if "misaligned" in str(f.message)]


# ----------------------------------------------------------------------------- misaligned vectors

LOAD = """
    uint i = thread_position_in_grid.x;
    float4 v = *(const device float4*)(x + 2 + 4 * i);   // byte offset 8 + 16 i
    o[i] = v.x + v.y + v.z + v.w;
"""


def test_misaligned_float4_load_warns_and_computes_as_unchecked():
    r, errs, ws = launch(LOAD)
    assert errs == [] and len(ws) == 1
    msg = str(ws[0].message)
    assert "misaligned float4 read of device buffer 'x' at byte offset 8" in msg
    assert "16-byte aligned" in msg and "line 3" in msg and "(0, 0, 0)" in msg and "4 occurrences" in msg
    assert ws[0].filename == __file__
    r0, _, ws0 = launch(LOAD, checked=False)
    assert ws0 == []
    want = [sum(range(2 + 4 * i, 6 + 4 * i)) for i in range(4)]
    np.testing.assert_array_equal(np.asarray(r)[:4], want)
    np.testing.assert_array_equal(np.asarray(r0), np.asarray(r))


@pytest.mark.parametrize("source, what", [
    # a store, and threadgroup memory
    ("uint i = thread_position_in_grid.x; if (i < 3) *(device float4*)(o + 1 + 4 * i) = float4(x[i]);",
     "float4 write to device buffer 'o' at byte offset 4"),
    ("uint i = thread_position_in_grid.x; threadgroup float t[32]; for (int j = 0; j < 8; ++j) t[i * 8 + j] = j;\n"
     "threadgroup_barrier(mem_flags::mem_threadgroup); float4 v = *(threadgroup float4*)(t + 2 + 8 * i); o[i] = v.y;",
     "float4 read of threadgroup array 't' at byte offset 8"),
    ("uint i = thread_position_in_grid.x; threadgroup float t[32];\n"
     "*(threadgroup float4*)(t + 1 + 8 * i) = float4(x[i]); threadgroup_barrier(mem_flags::mem_threadgroup);\n"
     "o[i] = t[1 + 8 * i];", "float4 write to threadgroup array 't' at byte offset 4"),
    # half4: 8 bytes; float2: 8 bytes
    ("uint i = thread_position_in_grid.x; half4 v = *(const device half4*)(x + 2 + 4 * i); o[i] = v.y;",
     "half4 read of device buffer 'x' at byte offset 4"),
    ("uint i = thread_position_in_grid.x; float2 v = *(const device float2*)(x + 1 + 2 * i); o[i] = v.y;",
     "float2 read of device buffer 'x' at byte offset 4"),
    # a pointer variable, a reinterpreted byte pointer (the buffer is named), a device function's pointer
    ("uint i = thread_position_in_grid.x; const device float4* p = (const device float4*)(x + 2); o[i] = p[i].x;",
     "float4 read of device buffer 'x' at byte offset 8"),
    ("uint i = thread_position_in_grid.x; const device uchar* b = (const device uchar*)x;\n"
     "float4 v = *(const device float4*)(b + 4 + 16 * i); o[i] = v.y;", "float4 read of device buffer 'x' at byte offset 4"),
    ("uint i = thread_position_in_grid.x; const device uchar* b = (const device uchar*)x;\n"
     "float4 v = *(const device float4*)(b + 3 + 16 * i); o[i] = v.y;", "float4 read of device buffer 'x' at byte offset 3"),
])
def test_misaligned_vector_accesses_warn(source, what):
    dt = mx.float16 if "half" in source else mx.float32
    r, errs, ws = launch(source, dtype=dt)
    assert errs == [] and len(misaligned(ws)) == 1, (errs, [str(w.message) for w in ws])
    assert what in str(ws[0].message)
    r0, _, ws0 = launch(source, dtype=dt, checked=False)
    assert ws0 == []
    np.testing.assert_array_equal(np.asarray(r0), np.asarray(r))


def test_misaligned_through_a_device_function_pointer():
    header = "float last(const device float* p) { float4 v = *(const device float4*)p; return v.w; }"
    _, errs, ws = launch("uint i = thread_position_in_grid.x; o[i] = last(x + 2 + 4 * i) + last(x + 4 * i);", header)
    assert errs == [] and len(ws) == 1
    assert "float4 read of device buffer 'x' at byte offset 8" in str(ws[0].message)
    assert "4 occurrences" in str(ws[0].message)      # the aligned calls are not reported


@pytest.mark.parametrize("source", [
    "uint i = thread_position_in_grid.x; float4 v = *(const device float4*)(x + 4 * i); o[i] = v.y;",
    "uint i = thread_position_in_grid.x; const device float4* p = (const device float4*)x; o[i] = p[i + 1].x;",
    "uint i = thread_position_in_grid.x; packed_float4 v = *(const device packed_float4*)(x + 2 + 4 * i); o[i] = v.y;",
    "uint i = thread_position_in_grid.x; half4 v = *(const device half4*)(x + 4 + 4 * i); o[i] = v.y;",
    "uint i = thread_position_in_grid.x; float3 v = *(const device float3*)(x + 4 + 4 * i); o[i] = v.y;",
    "uint i = thread_position_in_grid.x; float4 acc[2]; acc[0] = float4(x[i]); acc[1] = acc[0] * 2; o[i] = acc[1].z;",
    "uint i = thread_position_in_grid.x; uint s = i * 4; float4 v = *(const device float4*)(x + s); o[i] = v.w;",
])
def test_aligned_and_packed_vectors_do_not_warn(source):
    dt = mx.float16 if "half" in source else mx.float32
    _, errs, ws = launch(source, dtype=dt)
    assert errs == [] and ws == []


# ----------------------------------------------------------------------------- thread-local arrays

PARTIAL = """
    uint i = thread_position_in_grid.x;
    float vals[4];
    vals[0] = x[i];
    for (int j = 0; j < 4; ++j) o[i * 4 + j] = vals[j];   // vals[1..3] never written
"""


def test_private_array_read_before_write_is_an_error():
    _, errs, _ = launch(PARTIAL, n=2, out=8)
    assert [f.kind for f in errs] == ["uninitialised read"]
    f = errs[0]
    assert (f.buffer, f.space, f.index, f.line, f.count) == ("vals", "thread", [1], 5, 6)
    assert f.threads[0] == (0, 0, 0)
    assert "uninitialised read of thread-local array 'vals' at index 1" in str(f)
    r0, _, ws0 = launch(PARTIAL, n=2, out=8, checked=False)     # unchecked: as before (zeros)
    assert ws0 == []
    np.testing.assert_array_equal(np.asarray(r0), [0, 0, 0, 0, 1, 0, 0, 0])


@pytest.mark.parametrize("source, header, line", [
    ("uint i = thread_position_in_grid.x; float v[2];\nif (i % 2 == 0) { v[0] = 1; }\nv[1] = 0; o[i] = v[0] + v[1];",
     "", 3),
    ("uint i = thread_position_in_grid.x; float v[4]; v[0] = 1;\no[i] = sum4(v);",
     "float sum4(thread float* a) { float s = 0; for (int j = 0; j < 4; ++j) s += a[j]; return s; }", 1),
    ("uint i = thread_position_in_grid.x; S s; s.a[0] = x[i]; S t = s;\no[i] = t.a[1];",
     "struct S { float a[4]; };", 2),
    ("uint i = thread_position_in_grid.x; float4 acc[2]; acc[0] = float4(1); acc[1].x = x[i];\no[i] = acc[1].y;", "", 2),
    # an insertion sort's shift: v[3] and v[2] are copies of elements never written (the copy's
    # source index p - 1 is an expression, not a constant or a variable)
    ("uint i = thread_position_in_grid.x; float v[4]; v[0] = x[i];\nfor (uint p = 3; p > 0; --p) v[p] = v[p - 1];\n"
     "o[i] = v[3];", "", 3),
    # a source index that loads: the copy's read is checked as a read
    ("uint i = thread_position_in_grid.x; float v[4]; v[0] = x[i];\nv[2] = v[int(x[0]) + 1]; o[i] = v[0];", "", 2),
])
def test_private_array_uninitialised_reads_found(source, header, line):
    _, errs, _ = launch(source, header)
    assert [f.kind for f in errs] == ["uninitialised read"], errs
    assert errs[0].space == "thread" and errs[0].line == line


@pytest.mark.parametrize("source, header", [
    ("float vals[4] = {0}; vals[0] = x[i];", ""),
    ("float vals[4] = {}; vals[1] = x[i];", ""),
    ("float vals[4] = {x[i]};", ""),
    ("float vals[4]; for (int j = 0; j < 4; ++j) vals[j] = x[i + j];", ""),
    ("float vals[4]; thread float* p = vals; for (int j = 0; j < 4; ++j) p[j] = x[i + j];", ""),
    ("float vals[4]; thread float& r = vals[1]; r = 2; vals[0] = 1; thread float* q = vals + 2; q[0] = 3; q[1] = 4;",
     ""),
    ("float vals[4]; *(thread float4*)vals = float4(x[i]);", ""),
    ("float vals[4]; fill(vals, x[i]);", "void fill(thread float* a, float v) { for (int j = 0; j < 4; ++j) a[j] = v; }"),
    ("S s; s.set(x[i]); float vals[4]; for (int j = 0; j < 4; ++j) vals[j] = s.a[j];",
     "struct S { float a[4]; void set(float v) { for (int j = 0; j < 4; ++j) a[j] = v; } };"),
    ("S s(x[i]); S t = s; float vals[4]; for (int j = 0; j < 4; ++j) vals[j] = t.a[j];",
     "struct S { float a[4]; S(float v) { for (int j = 0; j < 4; ++j) a[j] = v; } };"),
    ("S s; s.a[0] = x[i]; S t = s; float vals[4] = {t.a[0]};", "struct S { float a[4]; };"),
    ("float4 acc[1]; acc[0] = float4(1); acc[0].x = x[i]; float vals[4]; for (int j = 0; j < 4; ++j) vals[j] = acc[0][j];",
     ""),
    ("float vals[4]; float2x2 m = float2x2(x[i]); for (int j = 0; j < 4; ++j) vals[j] = m[j / 2][j % 2];", ""),
    ("float vals[4]; for (int k = 0; k < 2; ++k) { float t[2]; t[0] = k; t[1] = x[i]; vals[2 * k] = t[0]; "
     "vals[2 * k + 1] = t[1]; }", ""),
    ("float vals[4]; vals[0] = x[i]; for (uint p = 1; p < 4; ++p) vals[p] = vals[p - 1];", ""),
    ("float vals[4]; vals[0] = x[i]; vals[1] = vals[int(x[0])]; vals[2] = vals[1]; vals[3] = vals[2 * int(x[0]) + 2];",
     ""),
])
def test_written_private_arrays_are_no_finding(source, header):
    body = ("uint i = thread_position_in_grid.x;\n" + source +
            "\nfor (int j = 0; j < 4; ++j) o[i * 4 + j] = vals[j];")
    _, errs, ws = launch(body, header)
    assert errs == [] and ws == [], errs


@mb.kernel
def dsl_local(x, out: mb.Out, FULL: mb.constexpr = 1):
    i = thread_position_in_grid.x
    a = local_array(4, float32)
    a[0] = x[i]
    if FULL:
        for j in range(1, 4):
            a[j] = x[i] * j
    s = float32(0)
    for j in range(4):
        s += a[j]
    out[i] = s


def test_dsl_local_array():
    x = np.arange(8, dtype=np.float32)
    got = dsl_local(x, backend="sim", checked=True, grid=8, threadgroup=8)
    np.testing.assert_array_equal(np.asarray(got), x * 7)
    with pytest.raises(KernelCheckError) as e:
        dsl_local(x, FULL=0, backend="sim", checked=True, grid=8, threadgroup=8)
    f = e.value.findings[0]
    assert (f.kind, f.space, f.index) == ("uninitialised read", "thread", [1])
    np.testing.assert_array_equal(np.asarray(dsl_local(x, FULL=0, backend="sim", grid=8, threadgroup=8)), x)


# ----------------------------------------------------------------------------- simdgroup matrices in arrays

MATS = """
    uint i = thread_position_in_grid.x;
    simdgroup_float8x8 a[2];
    for (int t = 0; t < 2; ++t) {
        a[t].thread_elements()[0] = x[i] + t;          // one element, then the other
        for (int e = 1; e < 2; ++e)
            a[t].thread_elements()[e] = 100 + t;        // a run-time element index
    }
    threadgroup float tile[64];
    simdgroup_store(a[1], tile, 8);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    o[i] = tile[i] + tile[i + 32];
"""


def test_matrix_arrays_written_element_by_element():
    x = mx.arange(32, dtype=mx.float32)
    r, errs, ws = launch(MATS, n=32, out=32, x=x)
    assert errs == [] and ws == []
    r0, _, _ = launch(MATS, n=32, out=32, x=x, checked=False)
    np.testing.assert_array_equal(np.asarray(r), np.asarray(r0))
    # each lane holds elements (row, 2c) and (row, 2c + 1) of a[1]: x + 1 and 101
    tile = np.zeros(64, np.float32)
    for lane in range(32):
        row = ((lane >> 2) & 4) + ((lane >> 1) & 3)
        col = ((lane >> 2) & 2) * 2 + (lane & 1) * 2
        tile[row * 8 + col], tile[row * 8 + col + 1] = lane + 1, 101
    np.testing.assert_array_equal(np.asarray(r), tile[:32] + tile[32:])


def test_matrix_accumulator_never_filled_is_found():
    src = """
    uint i = thread_position_in_grid.x;
    simdgroup_float8x8 acc[1];
    simdgroup_float8x8 m = simdgroup_float8x8(1.0f);
    simdgroup_multiply_accumulate(acc[0], m, m, acc[0]);
    threadgroup float tile[64];
    simdgroup_store(acc[0], tile, 8);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    o[i] = tile[i];
"""
    _, errs, _ = launch(src, n=32, out=32)
    assert errs and {(f.kind, f.buffer, f.line) for f in errs} == {("uninitialised read", "acc", 5)}   # both elements
