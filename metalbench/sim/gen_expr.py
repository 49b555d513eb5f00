"""Expressions for the simulator's code generator (a mixin of :class:`metalbench.sim.codegen.Gen`):
each IR expression becomes a Python expression on NumPy scalars or lane vectors (a list
of component strings for vector types). Arithmetic and casts are the scalar table's
(:mod:`metalbench.scalar`), printed inline where NumPy's operator is exactly C's.
"""
from __future__ import annotations

from .. import ir
from .. import scalar as S
from .. import types as T
from ..builtins import registry
from .gen_hoist import _HOISTABLE

_SW = {"r": 0, "g": 1, "b": 2, "a": 3, **{c: k for k, c in enumerate(T.COMPONENTS)}}


def _is_vec(t):
    return isinstance(t, T.VectorType)


def _pure(e, checked=False) -> bool:
    """No memory access, call or SIMD function: safe to evaluate on every lane (checked:
    nor an integer division, whose zero divisor on an untaken side is no finding)."""
    for n in ir.walk(e):
        if checked and isinstance(n, ir.BinOp) and n.op in ("/", "%") and T.elem_of(n.type).is_int:
            return False
        if isinstance(n, (ir.Load, ir.Atomic, ir.FuncCall, ir.MatrixMul)):
            return False
        if isinstance(n, ir.Call) and registry.get(n.name).kind == "simd":
            return False
    return True


class Expressions:
    """``ex(e)``: the Python source of an expression; may emit statements (loads, calls,
    lazy branches)."""

    def exl(self, e):
        v = self.ex(e)
        return v if isinstance(v, list) else [v]

    def ex(self, e):
        """Python source for expression ``e``: a string, or a list of component strings
        for a vector type. May emit statements (loads, calls, lazy branches)."""
        meth = getattr(self, "ex_" + type(e).__name__, None)
        if meth is None:
            raise NotImplementedError(f"simulator: expression {type(e).__name__}")
        # not when checked: checks of hoisted code (a division) would run, and report,
        # where the loop does not
        if self.hoists and not self._hoisting and not self.checked and isinstance(e, _HOISTABLE):
            h = self._invariant_ctx(e)
            if h is not None:
                return self._hoist(h, lambda: meth(e))
        return meth(e)

    def ex_Const(self, e):
        if _is_vec(e.type):
            vals = e.value if isinstance(e.value, (list, tuple)) else [e.value] * e.type.n
            return [self.const(v, e.type.elem) for v in vals]
        return self.const(e.value, e.type)

    def ex_Var(self, e):
        if _is_vec(e.type):
            return [f"v_{e.name}[{i}]" for i in range(e.type.n)]
        return f"v_{e.name}"

    def ex_ThreadAttr(self, e):
        self.attrs_used.add(e.name)
        if ir.THREAD_ATTRIBUTES[e.name] == "uint3":
            return [f"a_{e.name}_{i}" for i in range(3)]
        return f"a_{e.name}"

    def ex_Swizzle(self, e):
        v = e.value
        if self.checked and isinstance(v, ir.VecCons) and len(v.args) == v.type.n:
            # float4(a[4], a[5], a[6], a[7]).x (a vector array's a[1].x): the components not
            # picked are loaded, but no thread-local read of them happens in the program
            picked = {_SW[c] for c in e.components}
            self.untracked.update(id(a) for j, a in enumerate(v.args) if j not in picked and isinstance(a, ir.Load))
        comps = self.exl(e.value)
        picked = [comps[_SW[c]] for c in e.components]
        if len(picked) > 1 and len(set(picked)) < len(picked):
            picked = [p if p.isidentifier() else self.tmp(p) for p in picked]
        return picked[0] if len(picked) == 1 else picked

    def ex_VecCons(self, e):
        comps = []
        for a in e.args:
            comps += self.exl(a)
        if len(comps) == 1 and e.type.n > 1:
            c = comps[0] if comps[0].isidentifier() else self.tmp(comps[0])
            comps = [c] * e.type.n
        return comps

    def _bin(self, op, a, b, t, node=None):
        """One component of a binary operation on operands of scalar type ``t``: the
        operator inline where NumPy's is exactly C's, else the scalar table's function."""
        if self.checked and node is not None and op in ("/", "%") and t.is_int:
            k = self.node(node, None, None, "divide")
            fn = self.scalar_fn(S.binop_fn(op, t), "bin", op, t.name)
            return f"_ck.div({a}, {b}, {fn}, {self.m}, {k}, {op!r})"
        if self.checked and node is not None and op in ("<<", ">>") and t.is_int and \
                not (isinstance(node.b, ir.Const) and 0 <= node.b.value < t.itemsize * 8):
            k = self.node(node, None, None, "shift")
            fn = self.scalar_fn(S.binop_fn(op, t), "bin", op, t.name)
            return f"_ck.shift({a}, {b}, {fn}, {self.m}, {k}, {op!r}, {t.itemsize * 8})"
        inline = S.infix(op, t)
        if inline is not None:
            return f"({a} {inline} {b})"
        return f"{self.scalar_fn(S.binop_fn(op, t), 'bin', op, t.name)}({a}, {b})"

    def ex_BinOp(self, e):
        if self.lin_on and e.op in ("<", ">"):
            r = self._lin_guard(e)
            if r is not None:
                return r
        a, b = self.ex(e.a), self.ex(e.b)
        ta = T.elem_of(e.a.type)
        if _is_vec(e.type):
            n = e.type.n
            av = a if isinstance(a, list) else [self._name(a)] * n
            bv = b if isinstance(b, list) else [self._name(b)] * n
            return [self._bin(e.op, x, y, ta, e) for x, y in zip(av, bv)]
        return self._bin(e.op, a, b, ta, e)

    def _name(self, s):
        return s if s.isidentifier() else self.tmp(s)

    def ex_UnOp(self, e):
        t = T.elem_of(e.a.type)
        inline = S.unary_infix(e.op, t)
        fn = None if inline is not None else self.scalar_fn(S.unop_fn(e.op, t), "un", e.op, t.name)
        out = [f"({inline}{c})" if fn is None else f"{fn}({c})" for c in self.exl(e.a)]
        return out if _is_vec(e.type) else out[0]

    def ex_Cast(self, e):
        src = e.value.type
        comps = self.exl(e.value)
        out = [self._cast(c, T.elem_of(src), T.elem_of(e.type)) for c in comps]
        if _is_vec(e.type) and len(out) == 1:
            c = self._name(out[0])
            out = [c] * e.type.n
        return out if _is_vec(e.type) else out[0]

    def _cast(self, c, f, t):
        if f == t:
            return c
        return f"{self.scalar_fn(S.caster(f, t), 'cast', f.name, t.name)}({c})"

    def ex_Load(self, e):
        return self.load(e)

    def ex_Bitcast(self, e):
        # as_type: the components' bytes read as the new type (NumPy views)
        src, dst = T.elem_of(e.value.type), T.elem_of(e.type)
        r = self.tmp(f"_mem.bitcast([{', '.join(self.exl(e.value))}], {self.dtn(src)}, {self.dtn(dst)})")
        if _is_vec(e.type):
            return [f"{r}[{k}]" for k in range(e.type.n)]
        return f"{r}[0]"

    def ex_ShapeOf(self, e):
        return f"s_{e.buf}[{e.dim}]"

    def ex_StrideOf(self, e):
        return f"st_{e.buf}[{self.ex(e.dim)}]"

    def ex_NDimOf(self, e):
        return f"nd_{e.buf}"

    def ex_Atomic(self, e):
        return self.atomic(e, used=True)

    def ex_BufArg(self, e):
        return self.bufarg(e)

    def ex_FuncCall(self, e):
        f = self.funcs.get(e.func)
        if f is None:
            raise NotImplementedError(f"simulator: unknown device function {e.func!r}")
        args = [self.m]
        for a in e.args:
            v = self.ex(a)
            args.append(self.tuple_or(v))
        r = self.tmp(f"f_{e.func}({', '.join(args)})")
        if e.type is not None and _is_vec(e.type):
            return [f"{r}[{i}]" for i in range(e.type.n)]
        return r

    def ex_Call(self, e):
        # the builtin's declaration implements it: _bi[name].sim (see metalbench/builtins)
        b = registry.get(e.name)
        if b.kind == "simd":
            return self.simd(e)
        argv = [self.exl(a) for a in e.args]
        rt = e.type
        if not b.componentwise:     # whole vectors: each argument as its list of components
            lists = ", ".join(f"[{', '.join(a)}]" for a in argv)
            r = self.tmp(f"_bi[{e.name!r}]([{lists}], {self.dtn(T.elem_of(rt))})")
            return [f"{r}[{k}]" for k in range(rt.n)] if _is_vec(rt) else r
        n = rt.n if _is_vec(rt) else 1
        dt = self.dtn(T.elem_of(rt))
        out = []
        for i in range(n):
            cs = [a[i] if len(a) > 1 else a[0] for a in argv]
            out.append(f"_bi[{e.name!r}]([{', '.join(cs)}], {dt})")
        return out if _is_vec(rt) else out[0]

    def simd(self, e):
        self.uses_simd = True
        argv = [self.exl(a) for a in e.args]
        b = registry.get(e.name)
        mode = b.extra.get("shuffle")
        if self.checked:
            # the lanes that run it all arrive: it orders their memory accesses (sync_checks.py)
            self.emit(f"_ck.simd_sync({self.m}, {4 if b.collective == 'quadgroup' else 32})")
        if self.checked and mode is not None:
            # reading a lane that is inactive (divergence, a partial SIMD-group) is undefined
            k = self.node(e, None, None, "shuffle")
            self.emit(f"_ck.shuffle({k}, {mode!r}, _sg, {argv[1][0]}, {self.m})")
        n = e.type.n if _is_vec(e.type) else 1
        out = []
        for i in range(n):
            cs = [a[i] if len(a) > 1 else a[0] for a in argv]
            out.append(self.tmp(f"_bi[{e.name!r}](_sg, [{', '.join(cs)}], {self.m})"))
        return out if _is_vec(e.type) else out[0]

    def ex_Logical(self, e):
        a = self.ex(e.a)
        if self.U.is_uniform(e.a) and self.U.is_uniform(e.b) and _pure(e.b, self.checked):
            return f"({a} {e.op} {self.ex(e.b)})"
        if _pure(e.b, self.checked):
            return f"({a} {'&' if e.op == 'and' else '|'} {self.ex(e.b)})"
        r = self.tmp(a, "r")
        mb = self.tmp(f"_rt.{'and_' if e.op == 'and' else 'andnot'}({self.m}, {r})", "m")
        self.emit(f"if _rt.any_({mb}):")
        self.ind += 1
        saved = self.m
        self.m = mb
        b = self.ex(e.b)
        self.emit(f"{r} = {r} {'&' if e.op == 'and' else '|'} {b}")
        self.m = saved
        self.ind -= 1
        return r

    def ex_Select(self, e):
        n = e.type.n if _is_vec(e.type) else 1
        cu = self.U.is_uniform(e.cond)
        c = self.ex(e.cond)
        if _pure(e.a, self.checked) and _pure(e.b, self.checked):
            a, b = self.exl(e.a), self.exl(e.b)
            a = a * n if len(a) == 1 else a
            b = b * n if len(b) == 1 else b
            if cu:
                out = [f"({x} if {c} else {y})" for x, y in zip(a, b)]
            else:
                c = self._name(c)
                out = [f"_rt.where({c}, {x}, {y})" for x, y in zip(a, b)]
            return out if n > 1 else out[0]
        rs = [self.new("r") for _ in range(n)]
        zero = self.zero(e.type)
        self.emit(f"{', '.join(rs)}, = {zero if n > 1 else '(' + zero + ',)'}")
        if cu:
            for branch, neg in ((e.a, False), (e.b, True)):
                self.emit(f"if {'not ' if neg else ''}{c}:")
                self.ind += 1
                v = self.exl(branch)
                v = v * n if len(v) == 1 else v
                for r, x in zip(rs, v):
                    self.emit(f"{r} = {x}")
                self.ind -= 1
        else:
            c = self._name(c)
            saved = self.m
            for branch, fn in ((e.a, "and_"), (e.b, "andnot")):
                mm = self.tmp(f"_rt.{fn}({saved}, {c})", "m")
                self.emit(f"if _rt.any_({mm}):")
                self.ind += 1
                self.m = mm
                v = self.exl(branch)
                v = v * n if len(v) == 1 else v
                for r, x in zip(rs, v):
                    self.emit(f"{r} = _rt.sel({mm}, {x}, {r})")
                self.m = saved
                self.ind -= 1
        return rs if n > 1 else rs[0]
