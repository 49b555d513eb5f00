"""The two front ends agree: the same expression written as DSL and as an MSL body gives
the same typed IR (one semantic layer builds both) and the same values on the simulator.

A table of hand-picked cases carries the C type each must have and a NumPy model of its
value; a hypothesis test writes random expression trees in both syntaxes."""
from dataclasses import fields

import mlx.core as mx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import metalbench as mb
from metalbench import ir
from metalbench import types as T
from metalbench.errors import KernelTypeError
from metalbench.dsl import atomic_add  # noqa: F401  (used by a kernel below)
from metalbench.frontend.msl import translate_kernel as msl_translate

N = 64
VARS = {"A": ("a", T.int32), "B": ("b", T.uint32), "C": ("c", T.int8), "D": ("d", T.uint8),
        "S": ("s", T.int16), "H": ("h", T.float16), "F": ("f", T.float32)}
rng = np.random.default_rng(7)


def _inputs():
    ints = {T.int32: rng.integers(-2**31, 2**31, N), T.uint32: rng.integers(0, 2**32, N),
            T.int8: rng.integers(-128, 128, N), T.uint8: rng.integers(0, 256, N),
            T.int16: rng.integers(-2**15, 2**15, N)}
    out = {}
    for name, (arr, t) in VARS.items():
        if t.is_float:
            v = (rng.standard_normal(N) * 8).astype(t.np)
        else:
            v = ints[t].astype(t.np)
            v[:4] = np.array([0, 1, -1, 7]).astype(t.np)     # edge values first
        out[arr] = v
    return out


INPUTS = _inputs()


def dsl_source(expr: str) -> str:
    loads = "\n".join(f"    {v} = {arr}[i]" for v, (arr, _) in VARS.items())
    args = ", ".join(arr for arr, _ in VARS.values())
    return (f"def agree({args}, out: mb.Out):\n    i = thread_position_in_grid.x\n{loads}\n"
            f"    r = {expr}\n    out[i] = r\n")


def msl_source(expr: str) -> str:
    loads = " ".join(f"{t.msl} {v} = {arr}[i];" for v, (arr, t) in VARS.items())
    return f"uint i = thread_position_in_grid.x;\n{loads}\nauto r = {expr};\nout[i] = r;\n"


def dsl_kernel(expr: str):
    import metalbench.dsl as dsl
    env = {"mb": mb, **{k: getattr(dsl, k) for k in dir(dsl) if not k.startswith("_")}}
    return mb.Kernel(source=dsl_source(expr), env=env)


def value_of_r(body):
    """The expression assigned to the local ``r`` (a Decl's initial value or an Assign)."""
    for s in ir.walk(body):
        if isinstance(s, ir.Decl) and s.var.name == "r" and s.init is not None:
            return s.init
        if isinstance(s, ir.Assign) and s.var.name == "r":
            return s.value
    raise AssertionError("no assignment to r")


def struct(x):
    """A comparable picture of an IR expression: node kinds, operators, types, values."""
    if isinstance(x, (T.ScalarType, T.VectorType)):
        return x.name
    if isinstance(x, ir.Node):
        return (type(x).__name__,) + tuple((f.name, struct(getattr(x, f.name))) for f in fields(x)
                                           if f.name != "span")
    if isinstance(x, (list, tuple)):
        return tuple(struct(v) for v in x)
    return x


def both(dsl_expr: str, msl_expr: str):
    """(DSL IR of r, MSL IR of r, DSL kernel) for one expression written both ways."""
    k = dsl_kernel(dsl_expr)
    args = [INPUTS[arr] for arr, _ in VARS.values()]
    d = value_of_r(k.ir(*args, out=((N,), mb.float32)).body)
    m_ir = msl_translate("agree", msl_source(msl_expr),
                         inputs=[(arr, t, 1) for arr, t in VARS.values()],
                         outputs=[("out", T.float32, 1)])
    return d, value_of_r(m_ir.body), k


def run_both(k, msl_expr: str, t: T.ScalarType):
    """The values of r from the DSL kernel and from the MSL body, on the simulator."""
    args = [INPUTS[arr] for arr, _ in VARS.values()]
    got_dsl = np.asarray(k(*args, grid=N, threadgroup=32, backend="sim", out=((N,), t)))
    mk = mb.metal_kernel(name="agree", input_names=[arr for arr, _ in VARS.values()], output_names=["out"],
                         source=msl_source(msl_expr))
    import mlx.core as mx
    (got_msl,) = mk(inputs=[mx.array(a) for a in args], grid=(N, 1, 1), threadgroup=(32, 1, 1),
                    output_shapes=[(N,)], output_dtypes=[T.to_mlx(t)], backend="sim")
    return got_dsl, np.asarray(got_msl)


def same_bits(x, y):
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype.kind == "f":
        return np.array_equal(x.view(f"u{x.itemsize}"), y.view(f"u{y.itemsize}"))
    return np.array_equal(x, y)


A, B, C, D, S, H, F = (INPUTS[arr] for arr, _ in VARS.values())
u32 = np.uint32

# (DSL spelling, MSL spelling, C type of the result, NumPy model of the value)
CASES = [
    ("A + B", "A + B", "uint32", lambda: A.astype(u32) + B),
    ("C + D", "C + D", "int32", lambda: C.astype(np.int32) + D),
    ("S * D", "S * D", "int32", lambda: S.astype(np.int32) * D),
    ("H * A", "H * A", "float16", lambda: H * A.astype(np.float16)),
    ("H + F", "H + F", "float32", lambda: H.astype(np.float32) + F),
    ("H * 0.5", "H * 0.5f", "float32", lambda: H.astype(np.float32) * np.float32(0.5)),
    ("H * 2", "H * 2", "float16", lambda: H * np.float16(2)),
    ("B < A", "B < A", "bool", lambda: B < A.astype(u32)),              # compares as unsigned
    ("A < C", "A < C", "bool", lambda: A < C),
    ("C << 3", "C << 3", "int32", lambda: C.astype(np.int32) << 3),
    ("D >> 1", "D >> 1", "int32", lambda: D.astype(np.int32) >> 1),
    ("B >> 3", "B >> 3", "uint32", lambda: B >> u32(3)),
    ("A >> 2", "A >> 2", "int32", lambda: A >> 2),                      # arithmetic shift
    ("-D", "-D", "int32", lambda: -D.astype(np.int32)),
    ("+D", "+D", "int32", lambda: D.astype(np.int32)),                  # unary plus promotes
    ("~C", "~C", "int32", lambda: ~C.astype(np.int32)),
    ("A & B", "A & B", "uint32", lambda: A.astype(u32) & B),
    ("select(A, H, C > 0)", "select(A, H, C > 0)", "float16",
     lambda: np.where(C > 0, H, A.astype(np.float16))),
    ("H if A < B else F", "A < B ? H : F", "float32",
     lambda: np.where(A.astype(u32) < B, H.astype(np.float32), F)),
    ("D if C < 0 else S", "C < 0 ? D : S", "int32", lambda: np.where(C < 0, D.astype(np.int32), S)),
    ("max(A, B)", "max(A, B)", "uint32", lambda: np.maximum(A.astype(u32), B)),
    ("min(H, F)", "min(H, F)", "float32", lambda: np.minimum(H.astype(np.float32), F)),
    ("A // 3", "A / 3", "int32", lambda: np.trunc(A / 3).astype(np.int32)),   # C division
    ("A % 7", "A % 7", "int32", lambda: np.fmod(A, 7).astype(np.int32)),
    ("uint32(F)", "uint(F)", "uint32", None),
    ("int8(A) + 1", "char(A) + 1", "int32", lambda: A.astype(np.int8).astype(np.int32) + 1),
    ("(A > 0) and (B > 3)", "(A > 0) && (B > 3)", "bool", lambda: (A > 0) & (B > 3)),
    ("not (H > 1)", "!(H > 1)", "bool", lambda: ~(H > 1)),
]


@pytest.mark.parametrize("dsl_expr,msl_expr,tname,model", CASES, ids=[c[0] for c in CASES])
def test_same_ir_type_and_value(dsl_expr, msl_expr, tname, model):
    d, m, k = both(dsl_expr, msl_expr)
    assert d.type.name == tname and m.type.name == tname
    assert struct(d) == struct(m)
    t = T.lookup(tname)
    got_dsl, got_msl = run_both(k, msl_expr, t)
    assert same_bits(got_dsl, got_msl)
    if model is not None:
        with np.errstate(over="ignore"):
            want = np.asarray(model()).astype(t.np)
        assert same_bits(got_dsl, want), (got_dsl[:8], want[:8])


# -- random expression trees in both syntaxes -------------------------------------------

LEAVES = list(VARS) + ["3", "0", "100"]
FLOATS = [("0.5", "0.5f"), ("2.25", "2.25f")]
CASTS = [("int32", "int"), ("uint32", "uint"), ("float16", "half"), ("float32", "float"),
         ("uint8", "uchar"), ("int16", "short")]


@st.composite
def num(draw, depth=3):
    """(DSL text, MSL text) of a numeric expression (never a bool, so that & | ^ mean the
    same in both languages)."""
    kind = draw(st.sampled_from(["leaf", "leaf", "float"] + (["un", "bin", "bin", "shift", "cond", "select",
                                                              "cast"] if depth else [])))
    if kind == "leaf":
        v = draw(st.sampled_from(LEAVES))
        return v, v
    if kind == "float":
        return draw(st.sampled_from(FLOATS))
    if kind == "un":
        op = draw(st.sampled_from(["-", "~"]))
        a = draw(num(depth - 1))
        return f"({op}{a[0]})", f"({op}{a[1]})"
    if kind == "bin":
        op = draw(st.sampled_from(["+", "-", "*", "&", "|", "^"]))
        a, b = draw(num(depth - 1)), draw(num(depth - 1))
        return f"({a[0]} {op} {b[0]})", f"({a[1]} {op} {b[1]})"
    if kind == "shift":
        op = draw(st.sampled_from(["<<", ">>"]))
        a = draw(num(depth - 1))
        n = draw(st.integers(0, 7))
        return f"({a[0]} {op} {n})", f"({a[1]} {op} {n})"
    if kind == "cond":
        c, a, b = draw(cond(depth - 1)), draw(num(depth - 1)), draw(num(depth - 1))
        return f"({a[0]} if {c[0]} else {b[0]})", f"({c[1]} ? {a[1]} : {b[1]})"
    if kind == "select":
        c, a, b = draw(cond(depth - 1)), draw(num(depth - 1)), draw(num(depth - 1))
        return f"select({a[0]}, {b[0]}, {c[0]})", f"select({a[1]}, {b[1]}, {c[1]})"
    dn, mn = draw(st.sampled_from(CASTS))
    a = draw(num(depth - 1))
    return f"{dn}({a[0]})", f"{mn}({a[1]})"


@st.composite
def cond(draw, depth=2):
    kind = draw(st.sampled_from(["cmp", "cmp"] + (["and", "or", "not"] if depth else [])))
    if kind == "cmp":
        op = draw(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]))
        a, b = draw(num(min(depth, 1))), draw(num(min(depth, 1)))
        return f"({a[0]} {op} {b[0]})", f"({a[1]} {op} {b[1]})"
    if kind == "not":
        a = draw(cond(depth - 1))
        return f"(not {a[0]})", f"(!{a[1]})"
    a, b = draw(cond(depth - 1)), draw(cond(depth - 1))
    sym = "&&" if kind == "and" else "||"
    return f"({a[0]} {kind} {b[0]})", f"({a[1]} {sym} {b[1]})"


def _attempt(fn):
    try:
        return fn(), None
    except KernelTypeError as e:
        return None, e.message


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(num(), cond()))
def test_random_expressions_agree(pair):
    dsl_expr, msl_expr = pair
    (res, err) = _attempt(lambda: both(dsl_expr, msl_expr))
    if err is not None:
        # An ill-typed expression (~ on a float, a shift of a float) is refused by both alike.
        k = dsl_kernel(dsl_expr)
        args = [INPUTS[arr] for arr, _ in VARS.values()]
        d_res, d_err = _attempt(lambda: k.ir(*args, out=((N,), mb.float32)))
        m_res, m_err = _attempt(lambda: msl_translate(
            "agree", msl_source(msl_expr), inputs=[(arr, t, 1) for arr, t in VARS.values()],
            outputs=[("out", T.float32, 1)]))
        assert d_err is not None and m_err is not None, (d_err, m_err)
        assert d_err == m_err
        return
    d, m, k = res
    assert struct(d) == struct(m), (dsl_expr, msl_expr)
    t = T.elem_of(d.type)
    got_dsl, got_msl = run_both(k, msl_expr, t)
    assert same_bits(got_dsl, got_msl)


# Ill-typed in both languages, with the same message.
ERRORS = [
    ("popcount(F)", "popcount(F)", "popcount takes an integer"),
    ("F << 2", "F << 2", "needs integer operands"),
    ("~H", "~H", "needs an integer operand"),
    ("F & A", "F & A", "needs integer operands"),
    ("exp(F, F)", "exp(F, F)", "exp() takes 1 argument"),
    ("simd_xor(H)", "simd_xor(H)", "simd_xor takes an integer"),
]


@pytest.mark.parametrize("dsl_expr,msl_expr,msg", ERRORS, ids=[e[0] for e in ERRORS])
def test_same_type_errors(dsl_expr, msl_expr, msg):
    k = dsl_kernel(dsl_expr)
    args = [INPUTS[arr] for arr, _ in VARS.values()]
    with pytest.raises(KernelTypeError) as d:
        k.ir(*args, out=((N,), mb.float32))
    with pytest.raises(KernelTypeError) as m:
        msl_translate("agree", msl_source(msl_expr), inputs=[(arr, t, 1) for arr, t in VARS.values()],
                      outputs=[("out", T.float32, 1)])
    assert msg in d.value.message and d.value.message == m.value.message
    # each points at the line of r's definition
    assert "r = " in str(d.value) and "auto r = " in str(m.value)


def test_atomic_element_rule_is_shared():
    """One atomic element rule: a float16 buffer is refused by the DSL, MSL bodies and
    the Numba layer alike, at the user's line."""
    from metalbench import cuda
    x = np.ones(8, np.float16)

    @mb.kernel
    def dsl_k(x, out: mb.Out):
        atomic_add(out, 0, x[0])  # noqa: F405

    with pytest.raises(KernelTypeError, match="int32, uint32 or float32 elements") as e1:
        dsl_k.ir(x)
    assert "atomic_add(out, 0, x[0])" in str(e1.value)
    with pytest.raises(KernelTypeError, match="int32, uint32 or float32 elements") as e2:
        msl_translate("k", "atomic_fetch_add_explicit(&out[0], x[0], memory_order_relaxed);",
                      inputs=[("x", T.float16, 1)], outputs=[("out", T.float16, 1)], atomic_outputs=True)
    assert "atomic_fetch_add_explicit(&out[0]" in str(e2.value)

    @cuda.jit
    def numba_k(x):
        cuda.atomic.add(x, 0, 1)

    with pytest.raises(KernelTypeError, match="int32, uint32 or float32 elements") as e3:
        numba_k.ir(x)
    assert "cuda.atomic.add(x, 0, 1)" in str(e3.value)


# tree-sitter reads `(a & (a * a)) * b` as a C cast of `*b` to the abstract type `a& (a*)`
# and `(a) * b` as a cast of `*b` to `a`, `(int(a) & a) * b` as a cast to a function type
# taking an `a`: where the parenthesised name is a variable, the
# MSL front end reads them as the binary expressions they are (the hypothesis test above
# found the first one).
PAREN_BINOPS = ["((A & (A * A)) * A)", "(A) * A", "(A) & 6", "(A + 1) * (A - 2)", "(A | (A >> 1)) - A",
                "(A * (A + 1)) & A", "(A) - 3", "(int)(A) * 2",
                # a function-style cast first: read as a function type whose "parameters" are A
                "((int(A) & (A * A)) * A)", "(int(A) & A) * A", "(int(A) | (A >> 1)) & A", "(int(A) + (A * A)) * A"]


@pytest.mark.parametrize("expr", PAREN_BINOPS)
def test_parenthesised_left_operands_are_not_casts(expr):
    a = np.array([3, -5, 7, 100000, -2**31, 2**31 - 1], np.int32)
    src = f"uint i = thread_position_in_grid.x;\nint A = a[i];\nauto r = {expr};\nout[i] = r;\n"
    k = mb.metal_kernel("paren", ["a"], ["out"], src)
    out = k(inputs=[mx.array(a)], grid=(a.size, 1, 1), threadgroup=(a.size, 1, 1), output_shapes=[a.shape],
            output_dtypes=[mx.int32], backend="sim")[0]
    with np.errstate(over="ignore"):
        A = a.astype(np.int64)
        want = eval(expr.replace("(int)", "").replace("int(A)", "A"), {"A": A})
    np.testing.assert_array_equal(np.array(out), (want & 0xFFFFFFFF).astype(np.uint32).view(np.int32))
