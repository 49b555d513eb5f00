"""Hand-built IR kernels shared by the code generator and MSL checker tests.

Each builder returns a :class:`metalbench.ir.KernelIR` following the IR conventions
(explicit casts, linear indices, locals declared before use).
"""
from __future__ import annotations

import pytest

from metalbench import ir
from metalbench import types as T

u32, i32, f32, f16, bf16, b = T.uint32, T.int32, T.float32, T.float16, T.bfloat16, T.bool_
uint3 = T.uint3


def C(v, t=u32):
    return ir.Const(v, t)


def V(n, t=u32):
    return ir.Var(n, t)


def A(name):
    return ir.ThreadAttr(name, T.VECTORS["uint3"] if ir.THREAD_ATTRIBUTES[name] == "uint3" else u32)


def X(name, comp="x"):
    return ir.Swizzle(A(name), comp, u32)


def bin(op, a, c, t=None):
    if t is None:
        t = b if op in ir.COMPARE_OPS else a.type
    return ir.BinOp(op, a, c, t)


def buf(name, t=f32, out=False, ndim=1):
    return ir.Param(name, "buffer", t, ndim=ndim, is_output=out)


def scalar(name, t):
    return ir.Param(name, "scalar", t)


def gid():
    return X("thread_position_in_grid")


# ----------------------------------------------------------------------------- kernels

def saxpy():
    i = V("i")
    return ir.KernelIR("saxpy", [scalar("a", f32), buf("x"), buf("y"), scalar("n", u32), buf("out", out=True)], [
        ir.Decl(i, gid()),
        ir.If(bin("<", i, V("n")), [
            ir.Store("out", i, bin("+", bin("*", V("a", f32), ir.Load("x", i, f32)), ir.Load("y", i, f32))),
        ]),
    ])


def tg_reduce():
    tid, s = V("tid"), V("s")
    return ir.KernelIR("tg_reduce", [buf("x"), buf("out", out=True)], [
        ir.ArrayDecl("partial", "threadgroup", f32, (256,)),
        ir.Decl(tid, A("thread_index_in_threadgroup")),
        ir.Store("partial", tid, ir.Load("x", gid(), f32)),
        ir.Barrier(),
        ir.Decl(s, bin("/", X("threads_per_threadgroup"), C(2))),
        ir.While(bin(">", s, C(0)), [
            ir.If(bin("<", tid, s), [
                ir.Store("partial", tid, bin("+", ir.Load("partial", tid, f32),
                                             ir.Load("partial", bin("+", tid, s), f32))),
            ]),
            ir.Barrier(),
            ir.Assign(s, bin(">>", s, C(1))),
        ]),
        ir.If(bin("==", tid, C(0)), [ir.Store("out", X("threadgroup_position_in_grid"),
                                               ir.Load("partial", C(0), f32))]),
    ])


def simd_atomic_sum():
    v = V("v", f32)
    return ir.KernelIR("simd_atomic_sum", [buf("x"), buf("total", out=True)], [
        ir.Decl(v, ir.Call("simd_sum", [ir.Load("x", gid(), f32)], f32)),
        ir.If(ir.Call("simd_is_first", [], b), [
            ir.ExprStmt(ir.Atomic("add", "total", C(0), [v], f32)),
        ]),
    ])


def histogram():
    tid, bin_ = V("tid"), V("bin")
    return ir.KernelIR("histogram", [buf("x", u32), scalar("nbins", u32), buf("hist", u32, out=True)], [
        ir.ArrayDecl("local_hist", "threadgroup", u32, (256,)),
        ir.Decl(tid, A("thread_index_in_threadgroup")),
        ir.Store("local_hist", tid, C(0)),
        ir.Barrier(),
        ir.Decl(bin_, bin("%", ir.Load("x", gid(), u32), V("nbins"))),
        ir.ExprStmt(ir.Atomic("add", "local_hist", bin_, [C(1)], u32)),
        ir.Barrier(),
        ir.If(bin("<", tid, V("nbins")), [
            ir.ExprStmt(ir.Atomic("add", "hist", tid, [ir.Load("local_hist", tid, u32)], u32)),
        ]),
    ])


def tiled_matmul():
    TS = 16
    row, col, tx, ty, t, k, acc = V("row"), V("col"), V("tx"), V("ty"), V("t"), V("k"), V("acc", f32)
    M, N, K = V("M"), V("N"), V("K")
    a_ok = ir.Logical("and", bin("<", row, M), bin("<", bin("+", t, tx), K), b)
    b_ok = ir.Logical("and", bin("<", bin("+", t, ty), K), bin("<", col, N), b)
    return ir.KernelIR("matmul", [buf("A", ndim=2), buf("B", ndim=2), scalar("M", u32), scalar("N", u32),
                                  scalar("K", u32), buf("Cout", out=True, ndim=2)], [
        ir.ArrayDecl("As", "threadgroup", f32, (TS, TS)),
        ir.ArrayDecl("Bs", "threadgroup", f32, (TS, TS)),
        ir.Decl(row, X("thread_position_in_grid", "y")),
        ir.Decl(col, X("thread_position_in_grid", "x")),
        ir.Decl(tx, X("thread_position_in_threadgroup", "x")),
        ir.Decl(ty, X("thread_position_in_threadgroup", "y")),
        ir.Decl(acc, C(0.0, f32)),
        ir.For(t, C(0), K, C(TS), [
            ir.Store("As", bin("+", bin("*", ty, C(TS)), tx),
                     ir.Select(a_ok, ir.Load("A", bin("+", bin("*", row, K), bin("+", t, tx)), f32), C(0.0, f32), f32)),
            ir.Store("Bs", bin("+", bin("*", ty, C(TS)), tx),
                     ir.Select(b_ok, ir.Load("B", bin("+", bin("*", bin("+", t, ty), N), col), f32), C(0.0, f32), f32)),
            ir.Barrier(),
            ir.For(k, C(0), C(TS), C(1), [
                ir.Assign(acc, bin("+", acc, bin("*", ir.Load("As", bin("+", bin("*", ty, C(TS)), k), f32),
                                                 ir.Load("Bs", bin("+", bin("*", k, C(TS)), tx), f32)))),
            ]),
            ir.Barrier(),
        ]),
        ir.If(ir.Logical("and", bin("<", row, M), bin("<", col, N), b), [
            ir.Store("Cout", bin("+", bin("*", row, N), col), acc),
        ]),
    ])


def device_function():
    i, n = V("i"), V("n")
    f = ir.Function("load_or_zero", [ir.FuncParam("src", f32, "device", const=True), ir.FuncParam("i", u32),
                                     ir.FuncParam("n", u32)], f32, [
        ir.If(bin(">=", i, n), [ir.Return(C(0.0, f32))]),
        ir.Return(bin("*", ir.Load("src", i, f32),
                      ir.Cast(f32, X("threads_per_grid")))),
    ])
    g = ir.Function("bump", [ir.FuncParam("dst", u32, "device"), ir.FuncParam("i", u32)], None, [
        ir.ExprStmt(ir.Atomic("add", "dst", i, [C(1)], u32)),
        ir.Return(),
    ])
    j = V("j")
    return ir.KernelIR("devfunc", [buf("x"), scalar("n", u32), buf("out", out=True), buf("count", u32, out=True)], [
        ir.Decl(j, gid()),
        ir.Store("out", j, bin("*", ir.FuncCall("load_or_zero", [ir.BufArg("x"), j, V("n")], f32), C(2.0, f32))),
        ir.ExprStmt(ir.FuncCall("bump", [ir.BufArg("count"), C(0)], None)),
    ], functions=[f, g])


def all_dtypes():
    i = V("i")
    params, body = [], [ir.Decl(i, gid()), ir.Decl(V("acc", f32), C(0.0, f32))]
    for t in T.SCALARS:
        params.append(buf(f"in_{t.name}", t))
    for t in T.SCALARS:
        params.append(buf(f"out_{t.name}", t, out=True))
    for t in T.SCALARS:
        body.append(ir.Assign(V("acc", f32), bin("+", V("acc", f32), ir.Cast(f32, ir.Load(f"in_{t.name}", i, t)))))
    for t in T.SCALARS:
        body.append(ir.Store(f"out_{t.name}", i, ir.Cast(t, V("acc", f32))))
        body.append(ir.Store(f"out_{t.name}", bin("+", i, C(64)), ir.Load(f"in_{t.name}", i, t)))
    return ir.KernelIR("all_dtypes", params, body)


def casts_and_literals():
    i = V("i")
    vals = [C(0.1, f32), C(1e20, f32), C(float("inf"), f32), C(float("-inf"), f32), C(float("nan"), f32),
            C(-2.5, f32), C(3.0, f32), C(16777217.0, f32), C(1e-45, f32)]
    body = [ir.Decl(i, gid()), ir.Decl(V("s", f32), C(0.0, f32))]
    for v in vals:
        body.append(ir.Assign(V("s", f32), bin("+", V("s", f32), v)))
    ints = [C(-2147483648, i32), C(2147483647, i32), C(4294967295, u32), C(-5, T.int64),
            C(2**63 - 1, T.int64), C(-(2**63), T.int64), C(2**64 - 1, T.uint64), C(-3, T.int8), C(200, T.uint8),
            C(-300, T.int16), C(65535, T.uint16), C(True, b)]
    for k, c in enumerate(ints):
        body.append(ir.Decl(V(f"k{k}", c.type), c))
        body.append(ir.Assign(V("s", f32), bin("+", V("s", f32), ir.Cast(f32, V(f"k{k}", c.type)))))
    body += [
        ir.Decl(V("h", f16), C(1.5, f16)),
        ir.Decl(V("hb", bf16), C(2.0, bf16)),
        ir.Decl(V("hinf", f16), C(float("inf"), f16)),
        ir.Assign(V("h", f16), bin("*", V("h", f16), ir.Cast(f16, V("hb", bf16)))),
        ir.Assign(V("s", f32), bin("+", V("s", f32), ir.Cast(f32, V("h", f16)))),
        ir.Assign(V("s", f32), bin("+", V("s", f32), ir.Cast(f32, ir.Cast(i32, V("s", f32))))),
        ir.Decl(V("neg", i32), ir.UnOp("-", C(-4, i32), i32)),
        ir.Store("out", i, bin("+", V("s", f32), ir.Cast(f32, bin("%", V("s", f32), C(2.0, f32))))),
    ]
    return ir.KernelIR("casts", [buf("out", out=True)], body)


def select_logical():
    i, x = V("i"), V("x", i32)
    cond = ir.Logical("or", ir.Logical("and", bin(">", x, C(0, i32)), bin("<", x, C(10, i32)), b),
                      ir.UnOp("!", bin("==", x, C(42, i32)), b), b)
    return ir.KernelIR("select_logical", [buf("inp", i32), buf("out", i32, out=True)], [
        ir.Decl(i, gid()),
        ir.Decl(x, ir.Load("inp", i, i32)),
        ir.Decl(V("y", i32), ir.Select(cond, bin("-", x, bin("-", C(1, i32), x)),
                                       ir.Select(bin("<", x, C(0, i32)), ir.UnOp("-", x, i32), C(7, i32), i32), i32)),
        ir.Assign(V("y", i32), bin("&", bin("|", V("y", i32), bin("<<", x, C(2, i32))), ir.UnOp("~", x, i32))),
        ir.Assign(V("y", i32), bin("^", bin("+", V("y", i32), C(1, i32)), bin(">>", x, bin("+", C(1, i32), C(1, i32))))),
        ir.Assign(V("y", i32), bin("*", bin("+", V("y", i32), x), bin("-", x, C(3, i32)))),
        ir.Assign(V("y", i32), bin("-", V("y", i32), bin("-", x, C(1, i32)))),
        ir.Store("out", i, V("y", i32)),
    ])


def vectors():
    f4, f2, i4, b4 = T.VECTORS["float4"], T.VECTORS["float2"], T.VECTORS["int4"], T.VECTORS["bool4"]
    h4 = T.VECTORS["half4"]
    i = V("i")
    v, w, q, m, h = V("v", f4), V("w", f2), V("q", i4), V("m", b4), V("hv", h4)
    xi = ir.Load("x", i, f32)
    return ir.KernelIR("vectors", [buf("x"), buf("out", out=True)], [
        ir.Decl(i, gid()),
        ir.Decl(v, ir.VecCons(f4, [xi, C(1.0, f32), C(2.0, f32), C(3.0, f32)])),
        ir.Decl(w, bin("*", ir.Swizzle(v, "xy", f2), ir.Swizzle(v, "zw", f2))),
        ir.Assign(v, ir.VecCons(f4, [w, ir.Swizzle(v, "wz", f2)])),
        ir.Assign(v, bin("+", v, ir.VecCons(f4, [C(0.5, f32)]))),
        ir.Decl(q, ir.Cast(i4, v)),
        ir.Decl(m, bin(">", v, ir.Cast(f4, q))),
        ir.Assign(v, ir.Select(m, v, ir.Call("exp", [v], f4), f4)),
        ir.Assign(v, ir.Call("fma", [v, v, ir.Call("erf", [v], f4)], f4)),
        ir.Decl(h, ir.Cast(h4, v)),
        ir.Assign(h, ir.Call("sqrt", [h], h4)),
        ir.Decl(V("u", uint3), A("thread_position_in_grid")),
        ir.Store("out", i, bin("+", bin("+", ir.Swizzle(v, "x", f32), ir.Swizzle(w, "y", f32)),
                                ir.Cast(f32, bin("+", ir.Swizzle(q, "z", i32),
                                                 ir.Cast(i32, ir.Swizzle(V("u", uint3), "y", u32)))))),
        ir.Store("out", bin("+", i, C(128)), ir.Cast(f32, ir.Swizzle(h, "w", f16))),
    ])


def all_attributes():
    acc = V("acc")
    body = [ir.Decl(acc, C(0))]
    for name, ty in ir.THREAD_ATTRIBUTES.items():
        val = X(name, "z") if ty == "uint3" else A(name)
        body.append(ir.Assign(acc, bin("+", acc, val)))
    body.append(ir.Decl(V("tp", uint3), A("threads_per_threadgroup")))
    # one slot per thread: x + grid.x * (y + grid.y * z)
    idx = bin("+", gid(), bin("*", X("threads_per_grid", "x"),
                               bin("+", X("thread_position_in_grid", "y"),
                                   bin("*", X("threads_per_grid", "y"), X("thread_position_in_grid", "z")))))
    body.append(ir.Store("out", idx, bin("+", acc, ir.Swizzle(V("tp", uint3), "x", u32))))
    return ir.KernelIR("attributes", [buf("out", u32, out=True)], body)


def math_all():
    """Every elementwise builtin of the registry, on float, half and bfloat (integers too
    where it takes them), summed into one output."""
    from metalbench.builtins import registry
    calls = [b for b in registry.all() if b.kind == "call"]
    i, x, s = V("i"), V("x", f32), V("s", f32)
    body = [ir.Decl(i, gid()), ir.Decl(x, ir.Load("inp", i, f32)), ir.Decl(s, C(0.0, f32)),
            ir.Decl(V("h", f16), ir.Cast(f16, x)), ir.Decl(V("bb", bf16), ir.Cast(bf16, x))]

    def add(e):
        body.append(ir.Assign(s, bin("+", s, e if e.type == f32 else ir.Cast(f32, e))))

    def call(b, args):
        sig = b.typecheck([a.type for a in args])
        e = ir.Call(b.name, [a if a.type == t else ir.Cast(t, a) for a, t in zip(args, sig.params)], sig.result)
        if isinstance(sig.result, T.VectorType):
            e = ir.Swizzle(e, "x", sig.result.elem)
        add(ir.Select(e, C(1.0, f32), C(0.0, f32), f32) if e.type == T.bool_ else e)
    for b in calls:
        if b.group == "Geometric":
            call(b, [ir.VecCons(T.VECTORS["float3"], [x])] * b.arity)
            continue
        if b.group == "Integer":
            n = b.arity
            call(b, [ir.Cast(u32, x)] + [C(3, u32)] * (n - 1))
            call(b, [ir.Cast(T.uint8, x)] + [C(3, T.uint8) if n < 3 or b.name != "extract_bits" else C(3, u32)]
                 * (n - 1))
            continue
        extra = {"ldexp": [ir.Cast(i32, x)], "step": [x], "smoothstep": [C(0.25, f32), x]}
        more = extra.get(b.name, [C(0.5 * (k + 1), f32) for k in range(b.arity - 1)])
        call(b, [x] + more)
        if b.group == "Numeric":
            call(b, [ir.Cast(i32, x)] + [C(3, i32)] * (b.arity - 1))
    for name in ("exp", "erf", "lgamma", "sqrt"):
        add(ir.Call(name, [V("h", f16)], f16))
        add(ir.Call(name, [V("bb", bf16)], bf16))
    body.append(ir.Store("out", i, s))
    return ir.KernelIR("math_all", [buf("inp"), buf("out", out=True)], body)


def simd_all():
    from metalbench import builtins as Bt
    simd = [bb.name for bb in Bt.registry.all() if bb.kind == "simd"]
    i, x, s = V("i"), V("x", f32), V("s", f32)
    lane = A("thread_index_in_simdgroup")
    body = [ir.Decl(i, gid()), ir.Decl(x, ir.Load("inp", i, f32)), ir.Decl(s, C(0.0, f32)),
            ir.Decl(V("k", i32), ir.Cast(i32, x))]
    for name in [n for n in simd if n[5:] in ("sum", "product", "max", "min", "and", "or", "xor")]:
        if name[5:] in ("and", "or", "xor"):            # simd_and, quad_and, ...: integers
            body.append(ir.Assign(s, bin("+", s, ir.Cast(f32, ir.Call(name, [V("k", i32)], i32)))))
        else:
            body.append(ir.Assign(s, bin("+", s, ir.Call(name, [x], f32))))
    for name in [n for n in simd if n.startswith(("simd_prefix_", "quad_prefix_"))]:
        body.append(ir.Assign(s, bin("+", s, ir.Call(name, [x], f32))))
    for name in [n for n in simd if n.startswith(("simd_shuffle", "simd_broadcast", "quad_shuffle", "quad_broadcast"))
                 and Bt.registry.get(n).arity == 2]:
        body.append(ir.Assign(s, bin("+", s, ir.Call(name, [x, bin("&", bin("+", lane, C(1)), C(31))], f32))))
    body += [
        ir.Assign(s, bin("+", s, ir.Call("simd_broadcast_first", [x], f32))),
        ir.Assign(s, bin("+", s, ir.Cast(f32, ir.Call("simd_shuffle_down", [ir.Cast(f16, x), C(1)], f16)))),
        ir.If(ir.Logical("and", ir.Call("simd_all", [bin(">", x, C(0.0, f32))], b),
                         ir.Call("simd_any", [bin("<", x, C(1.0, f32))], b), b),
              [ir.Assign(s, bin("+", s, C(1.0, f32)))]),
        ir.Decl(V("mask", T.uint64), ir.Call("simd_ballot", [bin(">", x, C(0.5, f32))], T.uint64)),
        ir.Assign(s, bin("+", s, ir.Cast(f32, V("mask", T.uint64)))),
        ir.Store("out", i, s),
    ]
    return ir.KernelIR("simd_all", [buf("inp"), buf("out", out=True)], body)


def atomics_all():
    i = V("i")
    body = [ir.Decl(i, gid())]
    for t, name in ((i32, "ai"), (u32, "au"), (f32, "af")):
        one = C(1 if t != f32 else 1.0, t)
        ops = ["add", "sub", "min", "max", "exchange"] + (["and", "or", "xor"] if t != f32 else [])
        for op in ops:
            body.append(ir.ExprStmt(ir.Atomic(op, name, i, [one], t)))
        body.append(ir.Decl(V(f"old_{name}", t), ir.Atomic("cas", name, C(0), [one, C(2 if t != f32 else 2.0, t)], t)))
        body.append(ir.Decl(V(f"cur_{name}", t), ir.Atomic("load", name, C(1), [], t)))
        body.append(ir.ExprStmt(ir.Atomic("store", name, C(2), [V(f"cur_{name}", t)], t)))
        body.append(ir.Store(name, C(3), bin("+", ir.Load(name, C(3), t), V(f"old_{name}", t))))
    return ir.KernelIR("atomics_all", [buf("ai", i32, out=True), buf("au", u32, out=True), buf("af", f32, out=True)],
                       body)


def control_flow():
    i, j, k, s = V("i"), V("j", i32), V("k", i32), V("s", i32)
    return ir.KernelIR("control", [buf("out", i32, out=True)], [
        ir.Decl(i, gid()),
        ir.Decl(s, C(0, i32)),
        ir.CFor([ir.Decl(j, C(0, i32))], bin("<", j, C(10, i32)), [ir.Assign(j, bin("+", j, C(2, i32)))], [
            ir.If(bin("==", j, C(4, i32)), [ir.Continue()]),
            ir.Assign(s, bin("+", s, j)),
        ]),
        ir.Decl(k, C(0, i32)),
        ir.While(bin("<", k, C(3, i32)), [ir.Assign(k, bin("+", k, C(1, i32)))], do_while=True),
        ir.For(V("m", i32), C(8, i32), C(0, i32), C(-2, i32), [
            ir.If(bin(">", s, C(100, i32)), [ir.Break()]),
            ir.Assign(s, bin("+", s, V("m", i32))),
        ]),
        ir.If(bin("<", s, C(0, i32)), [ir.Assign(s, C(0, i32))],
              [ir.If(bin("<", s, C(10, i32)), [ir.Assign(s, C(10, i32))], [ir.Assign(s, bin("*", s, C(2, i32)))])]),
        ir.Store("out", i, bin("+", s, ir.Load("table", bin("&", i, C(3)), i32))),
    ], globals=[ir.ArrayDecl("table", "constant", i32, (4,), init=[1, 2, 3, 4])])


def keywords():
    """User names that collide with MSL/CUDA words: must be renamed, consistently."""
    half, kernel, mn = V("half", f32), V("kernel", u32), V("min", f32)
    return ir.KernelIR("keywords", [buf("float"), scalar("thread", f32), buf("device", out=True)], [
        ir.Decl(kernel, gid()),
        ir.Decl(half, ir.Load("float", kernel, f32)),
        ir.Decl(mn, ir.Call("min", [half, V("thread", f32)], f32)),
        ir.ArrayDecl("constant", "thread", f32, (2,), init=[1.0, 2.0]),
        ir.Store("device", kernel, bin("+", mn, ir.Load("constant", C(1), f32))),
    ])


def shapes():
    i = V("i")
    return ir.KernelIR("shapes", [buf("x", ndim=2), buf("out", out=True)], [
        ir.Decl(i, gid()),
        ir.Store("out", i, ir.Cast(f32, bin("+", ir.Cast(T.int64, ir.ShapeOf("x", 1, i32)),
                                             bin("*", ir.StrideOf("x", C(0, i32), T.int64),
                                                 ir.Cast(T.int64, ir.NDimOf("x", i32)))))),
    ])


KERNELS = {f.__name__: f for f in (saxpy, tg_reduce, simd_atomic_sum, histogram, tiled_matmul, device_function,
                                    all_dtypes, casts_and_literals, select_logical, vectors, all_attributes,
                                    math_all, simd_all, atomics_all, control_flow, keywords, shapes)}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_builders_dump(name):
    # the IR is well formed enough for ir.dump
    assert ir.dump(KERNELS[name]())
