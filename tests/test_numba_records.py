"""NumPy structured arrays (record dtypes) as @cuda.jit arguments (issue 14): field reads
and writes in both spellings, mixed field types with NumPy's padding (aligned and packed),
nested records, sub-array fields, whole-record copies, 2-D record arrays. Each program
checks itself against NumPy (``want_*``) and, where the Numba venv exists, against Numba's
own simulator (tests/numba_oracle.py)."""
import numpy as np
import pytest

from metalbench.errors import MetalbenchError
from numba_oracle import Oracle, assert_same, run_metalbench

PROGRAMS = {}

PROGRAMS["mixed_fields"] = '''
import numpy as np
from numba import cuda

out = {}
for align in (True, False):
    rec = np.dtype([("a", np.float64), ("b", np.int8), ("c", np.float32), ("d", np.uint16)], align=align)

    @cuda.jit
    def k(r, out):
        i = cuda.grid(1)
        if i < r.size:
            r[i].a = r[i].c + r[i].c + r[i]["b"]
            r[i]["d"] = r[i].d + 3
            out[i] = r[i].b * r[i].c

    rng = np.random.default_rng(1)
    r = np.zeros(37, rec)
    r["a"] = rng.standard_normal(37); r["b"] = rng.integers(-100, 100, 37)
    r["c"] = rng.standard_normal(37).astype(np.float32); r["d"] = rng.integers(0, 65000, 37)
    want = r.copy()
    o = np.zeros(37, np.float32)
    k[2, 32](r, o)
    tag = "al" if align else "pk"
    for f in rec.names:
        out[f"{tag}_{f}"] = r[f].copy()
    out[tag + "_out"] = o
    want["a"] = ((want["c"] + want["c"]) + want["b"].astype(np.float32)).astype(np.float64)
    want["d"] = (want["d"].astype(np.int64) + 3).astype(np.uint16)
    for f in rec.names:
        out[f"want_{tag}_{f}"] = want[f]
    out[f"want_{tag}_out"] = (want["b"].astype(np.float32) * want["c"]).astype(np.float32)
RESULT = out
'''

PROGRAMS["nested_and_subarrays"] = '''
import numpy as np
from numba import cuda

point = np.dtype([("x", np.int32), ("y", np.float32)])
rec = np.dtype([("id", np.int16), ("p", point), ("h", np.float64, 3), ("j", np.int32, (2, 2))], align=True)

@cuda.jit
def k(r):
    i = cuda.grid(1)
    if i < len(r):
        r[i].p.x = r[i].id + r[i]["p"]["x"]
        acc = 0.0
        for t in range(3):
            acc += r[i].h[t]
        r[i]["p"].y = acc
        r[i].j[1, 0] = r[i].j[0, 1] * 2

rng = np.random.default_rng(2)
r = np.zeros(20, rec)
r["id"] = rng.integers(-50, 50, 20); r["p"]["x"] = rng.integers(-9, 9, 20)
r["h"] = rng.standard_normal((20, 3)); r["j"] = rng.integers(-9, 9, (20, 2, 2))
w = r.copy()
k[1, 32](r)
out = {"px": r["p"]["x"].copy(), "py": r["p"]["y"].copy(), "j": r["j"].copy()}
w["p"]["x"] = w["id"] + w["p"]["x"]
h = w["h"]
w["p"]["y"] = ((h[:, 0] + h[:, 1]) + h[:, 2]).astype(np.float32)
w["j"][:, 1, 0] = w["j"][:, 0, 1] * 2
out.update(want_px=w["p"]["x"], want_py=w["p"]["y"], want_j=w["j"])
RESULT = out
'''

PROGRAMS["scalar_records"] = '''
import numpy as np
from numba import cuda

rec = np.dtype([("g", np.int32), ("h", np.float32, 2), ("p", [("x", np.int16), ("y", np.float64)])], align=True)

@cuda.jit
def write(r, v):
    r.g = v
    r.h[1] = r.h[0] + 1
    r["p"].x = r.p.x * 3

@cuda.jit
def read(r, out):
    out[0] = r.g + r["h"][1] + r.p.y

rng = np.random.default_rng(5)
a = np.zeros(3, rec)
a["g"] = rng.integers(-99, 99, 3); a["h"] = rng.standard_normal((3, 2))
a["p"]["x"] = rng.integers(-99, 99, 3); a["p"]["y"] = rng.standard_normal(3)
w = a.copy()
write[1, 1](a[1], 42)
o = np.zeros(1, np.float64)
read[1, 1](a[2], o)
w["g"][1] = 42; w["h"][1, 1] = w["h"][1, 0] + np.float32(1); w["p"]["x"][1] *= 3
RESULT = {"g": a["g"].copy(), "h": a["h"].copy(), "px": a["p"]["x"].copy(), "o": o,
          "want_g": w["g"], "want_h": w["h"], "want_px": w["p"]["x"],
          "want_o": np.array([(np.float64(w["g"][2]) + np.float64(w["h"][2, 1])) + w["p"]["y"][2]])}
'''

PROGRAMS["subarray_field_copy"] = '''
import numpy as np
from numba import cuda

rec = np.dtype([("i", np.int32), ("j", np.float32, (3, 2))])

@cuda.jit
def k(src, dst, a, b):
    dst["j"] = src["j"]
    a[1].j = b[0]["j"]

rng = np.random.default_rng(6)
x = np.zeros(2, rec); x["j"] = rng.standard_normal((2, 3, 2))
y = np.zeros(2, rec)
a = np.zeros(2, rec); b = np.zeros(1, rec); b["j"] = rng.standard_normal((1, 3, 2))
k[1, 1](x[1], y[0], a, b)
RESULT = {"y": y["j"].copy(), "a": a["j"].copy(), "want_y": np.stack([x["j"][1], np.zeros((3, 2), np.float32)]),
          "want_a": np.stack([np.zeros((3, 2), np.float32), b["j"][0]])}
'''

PROGRAMS["records_to_device_functions"] = '''
import numpy as np
from numba import cuda

rec = np.dtype([("g", np.int32), ("h", np.float32, 2), ("p", [("x", np.int16), ("y", np.float64)])], align=True)

@cuda.jit(device=True)
def read(r):
    return r.h[1] + r.p.y + r["g"]

@cuda.jit(device=True)
def write(r, v):
    r.g = v
    r["p"].x = v * 2

@cuda.jit(device=True)
def count(a):
    return len(a)

@cuda.jit(device=True)
def forward(r):
    return read(r)

@cuda.jit
def k(arr, one, grid, out):
    i = cuda.grid(1)
    if i < arr.size:
        out[i] = read(arr[i]) + forward(one) + count(arr) + forward(grid[i % 2, 1])
        write(arr[i], i + 10)

@cuda.jit
def k2(one):
    write(one, 7)

rng = np.random.default_rng(9)
a = np.zeros(6, rec); a["g"] = rng.integers(-50, 50, 6); a["h"] = rng.standard_normal((6, 2))
a["p"]["y"] = rng.standard_normal(6)
g2 = np.zeros((2, 2), rec); g2["g"] = [[1, 2], [3, 4]]; g2["h"] = 0.5; g2["p"]["y"] = [[0.25, 0.5], [1.0, 2.0]]
holder = np.zeros(1, rec); holder["g"] = 100; holder["h"] = [1, 2]; holder["p"]["y"] = 0.125
w = a.copy()
o = np.zeros(6)
one = holder[0]
k[1, 8](a, one, g2, o)
k2[1, 1](one)
f32 = np.float32
want_o = (w["h"][:, 1].astype(np.float64) + w["p"]["y"] + w["g"]) + (f32(2) + 0.125 + 100) + 6 \
    + np.array([g2["h"][i % 2, 1, 1] + g2["p"]["y"][i % 2, 1] + g2["g"][i % 2, 1] for i in range(6)])
RESULT = {"o": o, "g": a["g"].copy(), "px": a["p"]["x"].copy(), "one_g": np.array(one["g"]),
          "one_px": np.array(one["p"]["x"]),
          "want_o": want_o, "want_g": np.arange(10, 16, dtype=np.int32), "want_px": np.arange(20, 32, 2, dtype=np.int16),
          "want_one_g": np.array(7, np.int32), "want_one_px": np.array(14, np.int16)}
'''

PROGRAMS["array_into_subarray_field"] = '''
import numpy as np
from numba import cuda

d1 = np.dtype([("a", np.int16, (3,)), ("b", np.float64)], align=True)
d2 = np.dtype([("m", np.float32, (3, 2))])

@cuda.jit
def one(dest, src):
    dest["a"] = src

@cuda.jit
def each(dest, src):
    i = cuda.grid(1)
    if i < 4:
        dest[i].m = src[i]

src1 = (np.arange(3) + 1).astype(np.int16)
r1 = np.zeros(2, d1)
one[1, 1](r1[1], src1)
src2 = np.random.default_rng(4).standard_normal((4, 3, 2)).astype(np.float32)
r2 = np.zeros(4, d2)
each[1, 4](r2, src2)
RESULT = {"a": r1["a"].copy(), "m": r2["m"].copy(), "want_a": np.stack([np.zeros(3, np.int16), src1]), "want_m": src2}
'''

PROGRAMS["declared_record_arrays"] = '''
import numpy as np
from numba import cuda

TABLE = np.array([(1.5, 2, (7, 8)), (3.25, -4, (9, 10)), (5.0, 6, (11, 12))],
                 dtype=np.dtype([("x", np.float64), ("y", np.int16), ("p", [("u", np.uint8), ("v", np.int32)])],
                                align=True))
rec = np.dtype([("i", np.int32), ("j", np.float32, (3, 2))])
NT = 8

@cuda.jit
def const_table(a, b, c):
    t = cuda.const.array_like(TABLE)
    i = cuda.grid(1)
    if i < len(t):
        a[i] = t[i]["x"] * 2
        b[i] = t[i]["y"]
        c[i] = t[i]["p"]["u"] + t[i]["p"]["v"]

@cuda.jit
def through_shared(x, y):
    sm = cuda.shared.array(NT, dtype=rec)
    loc = cuda.local.array(2, rec)
    tx = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + tx
    if i < len(x):
        sm[tx] = x[i]
        loc[1]["i"] = sm[tx]["i"] * 3
        sm[tx]["i"] = loc[1]["i"]
    cuda.syncthreads()
    if tx == 0:
        for j in range(NT):
            y[cuda.blockIdx.x * cuda.blockDim.x + j] = sm[NT - 1 - j]

a, b, c = np.zeros(3), np.zeros(3, np.int64), np.zeros(3, np.int64)
const_table[1, 4](a, b, c)
arr = np.zeros(24, rec)
rng = np.random.default_rng(8)
arr["i"] = rng.integers(-99, 99, 24); arr["j"] = rng.standard_normal((24, 3, 2)).astype(np.float32)
arr = arr.view(np.recarray)
out = cuda.device_array_like(arr)
through_shared[3, NT](arr, out)
res = out.copy_to_host()
want = arr.reshape(3, NT)[:, ::-1].reshape(-1).copy()
want["i"] *= 3
RESULT = {"a": a, "b": b, "c": c, "i": res["i"].copy(), "j": res["j"].copy(),
          "want_a": TABLE["x"] * 2, "want_b": TABLE["y"].astype(np.int64),
          "want_c": TABLE["p"]["u"].astype(np.int64) + TABLE["p"]["v"], "want_i": want["i"], "want_j": want["j"]}
'''

# Whole-record assignment (numba-cuda's set_record): Numba's simulator cannot run it, so NumPy only.
NUMPY_ONLY = {}
NUMPY_ONLY["record_copy_2d"] = '''
import numpy as np
from numba import cuda

rec = np.dtype([("a", np.int32), ("b", np.float64)], align=True)

@cuda.jit
def k(dst, src):
    i, j = cuda.grid(2)
    if i < dst.shape[0] and j < dst.shape[1]:
        dst[i, j] = src[j, i]
        dst[i, j].b += 0.5

rng = np.random.default_rng(3)
src = np.zeros((5, 5), rec)
src["a"] = rng.integers(0, 1000, (5, 5)); src["b"] = rng.standard_normal((5, 5))
dst = np.zeros((5, 5), rec)
k[(1, 1), (8, 8)](dst, src)
RESULT = {"a": dst["a"].copy(), "b": dst["b"].copy(), "want_a": src["a"].T.copy(), "want_b": src["b"].T + 0.5}
'''

NUMPY_ONLY["record_copy_subarrays"] = '''
import numpy as np
from numba import cuda

rec = np.dtype([("id", np.int16), ("p", [("x", np.int32), ("y", np.float32)]), ("j", np.int32, (2, 3))], align=True)

@cuda.jit
def k(s, r):
    i = cuda.grid(1)
    if i < s.size:
        s[i] = r[s.size - 1 - i]

rng = np.random.default_rng(4)
r = np.zeros(9, rec)
r["id"] = rng.integers(-50, 50, 9); r["p"]["x"] = rng.integers(-9, 9, 9)
r["p"]["y"] = rng.standard_normal(9); r["j"] = rng.integers(-9, 9, (9, 2, 3))
s = np.zeros(9, rec)
k[1, 16](s, r)
RESULT = {f: s[f].copy() for f in ("id", "j")}
RESULT.update(px=s["p"]["x"].copy(), py=s["p"]["y"].copy())
RESULT.update({"want_" + f: r[f][::-1].copy() for f in ("id", "j")})
RESULT.update(want_px=r["p"]["x"][::-1].copy(), want_py=r["p"]["y"][::-1].copy())
'''



# Whole-record copies through a local record array and a device record array (to_device):
# Numba's simulator cannot copy a device record into a local array, so NumPy only.
NUMPY_ONLY["local_record_copies"] = '''
import numpy as np
from numba import cuda

rec = np.dtype([("i", np.int32), ("p", [("x", np.float64), ("y", np.int8)]), ("j", np.float32, (2, 2))], align=True)

@cuda.jit
def swap_pairs(x, y):
    loc = cuda.local.array((2,), dtype=rec)
    k = cuda.grid(1)
    if 2 * k + 1 < len(x):
        loc[0] = x[2 * k]
        loc[1] = x[2 * k + 1]
        loc[0].p.x = loc[0].p.x + loc[1].i
        y[2 * k] = loc[1]
        y[2 * k + 1] = loc[0]

rng = np.random.default_rng(11)
a = np.zeros(10, rec)
a["i"] = rng.integers(-9, 9, 10); a["p"]["x"] = rng.standard_normal(10); a["p"]["y"] = rng.integers(-9, 9, 10)
a["j"] = rng.standard_normal((10, 2, 2)).astype(np.float32)
out = cuda.device_array_like(a)
swap_pairs[1, 8](cuda.to_device(a), out)
r = out.copy_to_host()
w = a.copy()
w[0::2], w[1::2] = a[1::2], a[0::2]
w["p"]["x"][1::2] += a["i"][1::2]
RESULT = {"i": r["i"].copy(), "px": r["p"]["x"].copy(), "py": r["p"]["y"].copy(), "j": r["j"].copy(),
          "want_i": w["i"], "want_px": w["p"]["x"], "want_py": w["p"]["y"], "want_j": w["j"]}
'''


ORACLE = Oracle(PROGRAMS)


@pytest.mark.parametrize("name", sorted(PROGRAMS) + sorted(NUMPY_ONLY))
def test_against_numpy(name):
    got = run_metalbench({**PROGRAMS, **NUMPY_ONLY}[name], name)     # METALBENCH_TEST_BACKEND, else sim
    wants = [k for k in got if k.startswith("want_")]
    assert wants
    for k in wants:
        np.testing.assert_array_equal(got[k[5:]], got[k], err_msg=f"{name}: {k[5:]}")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_against_numba_simulator(name):
    assert_same(run_metalbench(PROGRAMS[name], name), ORACLE[name])


_BAD = '''
import numpy as np
from numba import cuda

rec = np.dtype([("a", np.int32), ("b", np.float32)])

@cuda.jit
def k(r, out):
    i = cuda.grid(1)
    x = r[i]
    out[i] = x.a

k[1, 4](np.zeros(4, rec), np.zeros(4, np.int32))
RESULT = {}
'''


def test_unsupported_use_is_an_error_at_its_line():
    with pytest.raises(MetalbenchError) as e:
        run_metalbench(_BAD, "bad_record", backend="sim")
    msg = str(e.value)
    assert "record array" in msg and "x = r[i]" in msg, msg



def test_declared_signature_with_record_arrays_and_records():
    from metalbench import cuda
    from metalbench.cuda.np.numpy_support import from_dtype
    rec = np.dtype([("a", np.int32), ("b", np.float64)], align=True)
    rt = from_dtype(rec)

    @cuda.jit((rt[:], rt))
    def k(a, r):
        i = cuda.grid(1)
        if i < a.size:
            a[i].a = a[i].b + r.a

    a = np.zeros(5, rec)
    a["b"] = np.arange(5) * 3.0
    one = np.zeros(1, rec)
    one["a"] = 7
    k.configure(backend="sim")[1, 8](a, one[0])
    np.testing.assert_array_equal(a["a"], np.arange(5) * 3 + 7)
    other = np.zeros(5, [("a", np.int32), ("c", np.float64)])
    with pytest.raises(MetalbenchError, match="no signature matches"):
        k.configure(backend="sim")[1, 8](other, one[0])


def test_declared_unaligned_record_is_refused_at_decoration():
    from metalbench import cuda
    from metalbench.cuda.np.numpy_support import from_dtype
    packed = from_dtype(np.dtype([("a", np.int32), ("b", np.float64)]))
    with pytest.raises(MetalbenchError, match="type float64 is not aligned"):
        @cuda.jit((packed[:],))
        def k(a):
            a[0].a = a[0].b
    aligned = from_dtype(np.dtype([("a", np.int32), ("b", np.float64)], align=True))
    @cuda.jit((aligned[:],))
    def ok(a):
        a[0].a = a[0].b


def test_complex_field_is_exact_or_an_error():
    """A complex field of a record (a strided complex view of the record bytes) reaches the
    kernel as complex storage: read whole it gives NumPy's values or an error at the line,
    never the real storage misread as one float per record."""
    from metalbench import cuda
    rec = np.dtype([("a", np.float64), ("c", np.complex64)], align=True)

    @cuda.jit
    def k(ary, out):
        i = cuda.grid(1)
        if i < ary.size:
            out[i] = ary[i].c.imag

    a = np.zeros(3, rec)
    a["c"] = [1 + 4j, 2 + 5j, 3 + 6j]
    o = np.zeros(3)
    try:
        k.configure(backend="sim")[1, 4](a, o)
    except MetalbenchError as e:
        assert "line" in str(e) and "ary[i].c" in str(e), str(e)
        return
    np.testing.assert_array_equal(o, [4, 5, 6])
