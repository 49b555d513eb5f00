"""The semantic layer on its own: rule sets, operators, conversions, folding, atomics,
indexing. Values are checked against NumPy/C models."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalbench import ir
from metalbench import types as T
from metalbench.errors import KernelTypeError, Source, Span
from metalbench.semantics import DSL, MSL, NUMBA, Semantics, const_value

SRC = Source("t", "x = a + b\n")
SP = Span(SRC, 1, 4, 1, 9)


def c(v, t):
    return ir.Const(v, t)


def var(name, t):
    return ir.Var(name, t)


def test_division_per_language():
    msl, dsl = Semantics(MSL), Semantics(DSL)
    assert msl.binop("/", c(-7, T.int32), c(2, T.int32)).value == -3          # C truncates
    e = dsl.binop("/", c(7, T.int32), c(2, T.int32))                          # Python's true division
    assert e.type == T.float32 and e.value == 3.5
    assert dsl.binop("//", c(-7, T.int32), c(2, T.int32)).value == -3         # the DSL's // on ints is C's
    f = dsl.binop("//", var("x", T.float16), c(2, T.int32))
    assert isinstance(f, ir.Call) and f.name == "floor" and f.type == T.float16
    with pytest.raises(KernelTypeError, match="not an MSL operator"):
        msl.binop("//", c(1, T.int32), c(2, T.int32), SP)


def test_remainder_per_language():
    assert Semantics(MSL).binop("%", c(-7, T.int32), c(3, T.int32)).value == int(np.fmod(-7, 3))
    e = Semantics(DSL).binop("%", var("x", T.float32), c(3, T.int32))
    assert isinstance(e, ir.Call) and e.name == "fmod"
    with pytest.raises(KernelTypeError, match="fmod") as ei:
        Semantics(MSL).binop("%", var("x", T.float32), c(3, T.int32), SP)
    assert ei.value.span is SP                                                # errors carry the given span


def test_power_unrolls_through_the_once_hook():
    made = []

    def once(e, span):
        made.append(e)
        return ir.Var("tmp", e.type, span=span)

    sem = Semantics(DSL, once=once)
    x = ir.BinOp("+", var("a", T.int32), c(1, T.int32), T.int32)
    e = sem.binop("**", x, c(3, T.int32), SP)
    assert len(made) == 1 and made[0] is x                                    # evaluated once
    assert e.type == T.int32 and isinstance(e, ir.BinOp) and e.op == "*"
    assert sem.binop("**", c(3, T.int32), c(4, T.int32)).value == 81
    p = sem.binop("**", var("a", T.int32), c(0.5, T.float32))
    assert isinstance(p, ir.Call) and p.name == "pow" and p.type == T.float32
    with pytest.raises(KernelTypeError, match="pow"):
        Semantics(MSL).binop("**", c(2, T.int32), c(2, T.int32))


def test_bool_bitwise():
    p, q = var("p", T.bool_), var("q", T.bool_)
    assert Semantics(MSL).binop("^", p, q).type == T.int32                    # C promotes
    assert Semantics(DSL).binop("^", p, q).type == T.bool_                    # Python keeps bool


@pytest.mark.parametrize("a,b,want", [(T.int32, T.uint32, T.uint32), (T.int64, T.uint32, T.int64),
                                      (T.uint64, T.int64, T.uint64), (T.int8, T.uint16, T.int32),
                                      (T.float16, T.int64, T.float16), (T.bfloat16, T.float16, T.float32)])
def test_usual_arithmetic_conversions(a, b, want):
    for rules in (MSL, DSL):      # NUMBA has Numba's own (tests/test_numba_typing.py)
        assert Semantics(rules).binop("+", var("a", a), var("b", b)).type == want


def test_select_and_logical_fold_constant_conditions():
    sem = Semantics(MSL)
    a, b = var("a", T.int32), var("h", T.float16)
    s = sem.select(c(False, T.bool_), a, b)
    assert isinstance(s, ir.Var) and s.name == "h"                            # only the taken side
    t = sem.select(var("k", T.bool_), a, b)
    assert isinstance(t, ir.Select) and t.type == T.float16 and t.a.type == T.float16
    x = var("x", T.bool_)
    assert sem.logical("or", c(False, T.bool_), x) is x
    assert sem.logical("or", c(1, T.int32), x).value is True
    assert isinstance(sem.logical("and", x, c(True, T.bool_)), ir.Logical)


def test_conversions_refuse_what_msl_refuses():
    sem = Semantics(MSL)
    v = var("v", T.VECTORS["float4"])
    with pytest.raises(KernelTypeError, match="pick a component"):
        sem.convert(v, T.float32, SP)
    with pytest.raises(KernelTypeError, match="cannot convert float4 to float2"):
        sem.convert(v, T.VECTORS["float2"], SP)
    with pytest.raises(KernelTypeError, match="cannot be a condition"):
        sem.to_bool(v, SP)
    assert sem.component(v, "rg").components == "xy"
    with pytest.raises(KernelTypeError, match="no component"):
        sem.component(var("w", T.VECTORS["float2"]), "z", SP)
    assert sem.cast(T.uint8, c(300.5, T.float32)).value == 255                # saturates, as at run time
    assert sem.cast(T.uint8, c(300, T.int32)).value == 44                     # int -> int wraps


def test_shifts():
    sem = Semantics(MSL)
    e = sem.binop("<<", var("x", T.uint8), var("s", T.int64))
    assert e.type == T.int32 and e.b.type == T.int64                          # right operand keeps its type
    assert sem.binop(">>", c(-16, T.int32), c(2, T.int32)).value == -4        # arithmetic shift
    with pytest.raises(KernelTypeError, match="integer operands"):
        sem.binop("<<", c(1.0, T.float32), c(2, T.int32), SP)


def test_unary():
    sem = Semantics(MSL)
    assert sem.unop("-", c(1, T.uint32)).value == 2**32 - 1
    assert sem.unop("~", c(0, T.uint8)).value == -1                           # promoted to int first
    assert sem.unop("+", var("d", T.uint8)).type == T.int32
    assert sem.unop("!", c(3, T.int32)).value is False


def test_atomic_rules():
    dsl, numba = Semantics(DSL), Semantics(NUMBA)
    idx = c(0, T.int32)
    a = dsl.atomic("cas", "out", T.float32, "device", idx, [c(0, T.int32), c(1, T.int32)])
    assert a.type == T.float32 and [x.type for x in a.args] == [T.float32, T.float32]
    with pytest.raises(KernelTypeError, match="integer elements"):
        numba.check_atomic("cas", T.float32, "device", "out", SP, who="cuda.atomic.cas")
    with pytest.raises(KernelTypeError, match="uint32 elements"):
        numba.check_atomic("inc", T.int32, "device", "out", SP, who="cuda.atomic.inc")
    numba.check_atomic("inc", T.uint32, "device", "out", SP)
    with pytest.raises(KernelTypeError, match="integer elements"):
        dsl.check_atomic("xor", T.float32, "device", "out", SP)
    with pytest.raises(KernelTypeError, match="local arrays"):
        dsl.check_atomic("add", T.int32, "thread", "tmp", SP)
    for bad in (T.float16, T.bfloat16, T.int8, T.uint16, T.bool_):
        with pytest.raises(KernelTypeError, match="int32, uint32 or float32"):
            Semantics(MSL).check_atomic("add", bad, "device", "out", SP)
    # 64-bit atomics run on sim and cuda (as float64 does); the Metal printer refuses them
    for t in (T.int64, T.uint64, T.float64):
        Semantics(MSL).check_atomic("cas", t, "device", "out", SP)
    with pytest.raises(KernelTypeError, match="integer elements"):
        Semantics(MSL).check_atomic("xor", T.float64, "device", "out", SP)
    from metalbench.builtins import check_atomic
    with pytest.raises(KernelTypeError, match="Metal has no 64-bit atomics"):
        check_atomic("cas", T.int64, SP)


def test_builtin_typing_errors_carry_the_span():
    sem = Semantics(MSL)
    with pytest.raises(KernelTypeError) as e:
        sem.builtin("clz", [var("x", T.float16)], SP)
    assert e.value.span is SP and "clz takes an integer" in e.value.message
    assert sem.builtin("fma", [c(1, T.int32), var("h", T.float16), var("h", T.float16)]).type == T.float16


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=4).flatmap(
    lambda shape: st.tuples(st.just(tuple(shape)), st.tuples(*[st.integers(0, d - 1) for d in shape]))))
def test_linear_index_is_row_major(case):
    shape, idx = case
    sem = Semantics(MSL)
    lin = sem.linear_index([sem.index(c(i, T.int32)) for i in idx], list(shape))
    assert const_value(lin) == np.ravel_multi_index(idx, shape)


def test_linear_index_types_follow_c():
    sem = Semantics(MSL)
    e = sem.linear_index([sem.index(var("i", T.uint32)), sem.index(var("j", T.int16))], [4, 8])
    assert e.type == T.uint32                                                 # uint * int -> uint
    assert sem.index(var("b", T.bool_)).type == T.int32
    with pytest.raises(KernelTypeError, match="must be an integer"):
        sem.index(var("f", T.float32), SP)


def test_int_literals():
    sem = Semantics(DSL)
    assert sem.int_literal(2**31 - 1).type == T.int32
    assert sem.int_literal(2**31).type == T.int64
    assert sem.int_literal(2**63).type == T.uint64
    with pytest.raises(KernelTypeError, match="64 bits"):
        sem.int_literal(2**64, SP)
    assert sem.float_literal(0.1).value == float(np.float32(0.1))
