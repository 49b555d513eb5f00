"""NumPy ufuncs called in a kernel, as Numba compiles them.

- On scalars, ``np.greater(a, b)``, ``np.bitwise_and``, ``np.logical_xor``, ``np.invert``,
  ``np.add`` & co., ``np.deg2rad``/``np.rad2deg``, ``np.maximum``/``np.minimum`` (NaN
  propagating), ``np.square``: the operation in the ufunc's *loop type*, the first of the
  ufunc's loops (``np.greater.types``) every argument casts to safely (float16 and long
  double loops skipped), as Numba's ufunc typing picks it; ``int64`` against ``uint64``
  compares exactly (NumPy's ``qQ->?`` loops). The math ufuncs (``np.sin`` ...) are registry
  builtins (calls.py).
- With arrays and an output, ``np.sin(x, out)``, ``np.add(a, b, out=r)``: a loop over the
  output's elements in the calling thread, the inputs broadcast against it (NumPy's rule:
  trailing dimensions line up, a dimension of 1 repeats). The loop is Python syntax
  translated like the user's, so every backend runs it.

Example (on the simulator)::

    >>> import numpy as np
    >>> from metalbench import cuda
    >>> @cuda.jit
    ... def k(r, x):
    ...     np.sin(x, r)
    >>> x = np.linspace(0, 1, 6).reshape(2, 3); r = np.zeros_like(x)
    >>> k.configure(backend="sim")[1, 1](r, x)
    >>> bool(np.allclose(r, np.sin(x)))
    True
"""
from __future__ import annotations

import ast
import copy
import math

import numpy as np

from ... import ir
from ... import types as T
from ...errors import KernelTypeError
from ...builtins import registry
from ...semantics import is_complex

_COMPARE = {np.greater: ">", np.greater_equal: ">=", np.less: "<", np.less_equal: "<=", np.equal: "==",
            np.not_equal: "!="}
_BINARY = {np.add: "+", np.subtract: "-", np.multiply: "*", np.true_divide: "/", np.floor_divide: "//",
           np.remainder: "%", np.power: "**", np.bitwise_and: "&", np.bitwise_or: "|", np.bitwise_xor: "^",
           np.left_shift: "<<", np.right_shift: ">>"}
_LOGICAL = {np.logical_and: "&", np.logical_or: "|", np.logical_xor: "!="}
_SCALE = {np.deg2rad: math.pi / 180.0, np.radians: math.pi / 180.0, np.rad2deg: 180.0 / math.pi,
          np.degrees: 180.0 / math.pi}
_OWN = set(_COMPARE) | set(_BINARY) | set(_LOGICAL) | set(_SCALE) | {
    np.logical_not, np.invert, np.negative, np.positive, np.square, np.maximum, np.minimum}
# loop type characters Numba compiles (no float16 'e', long double 'g'/'G', objects, datetimes)
_LOOP_CHARS = set("?bBhHiIlLqQfdFD")


def loop_types(uf: np.ufunc, arg_types: list) -> tuple[list, list] | None:
    """The (input, output) scalar types of the first loop of ``uf`` that every argument
    type casts to safely, as Numba's ufunc typing chooses; None when none does.

    >>> [t.name for t in loop_types(np.add, [T.int16, T.int32])[0]]
    ['int32', 'int32']
    >>> [t.name for t in loop_types(np.greater, [T.int64, T.uint64])[0]]
    ['int64', 'uint64']
    """
    dts = [np.dtype(t.np) for t in arg_types]
    for sig in uf.types:
        ins, outs = sig.split("->")
        if not set(ins + outs) <= _LOOP_CHARS:
            continue
        if all(np.can_cast(d, np.dtype(c), "safe") for d, c in zip(dts, ins)):
            return [T.from_numpy(np.dtype(c)) for c in ins], [T.from_numpy(np.dtype(c)) for c in outs]
    return None


def is_numpy_ufunc(obj) -> bool:
    """Whether ``obj`` is a NumPy ufunc (the call goes to :meth:`NpUfuncsMixin.numpy_ufunc`)."""
    return isinstance(obj, np.ufunc)


class NpUfuncsMixin:
    """NumPy ufunc calls: a part of the translator."""

    def numpy_ufunc(self, uf: np.ufunc, node: ast.Call, statement: bool = False):
        """The translation of ``np.<ufunc>(...)`` (statements for the array form, a value
        for scalars), or None to leave a scalar call of a registry builtin to calls.py."""
        ins, outs = self._ufunc_operands(uf, node)
        arrays = [a for a in ins if self._array_operand(a) is not None]
        if outs or arrays:
            if not statement:
                raise self.err(KernelTypeError, f"np.{uf.__name__} on arrays is a statement here (its value, the "
                                                "output array, cannot be used)", node,
                               hint=f"call it on its own line: np.{uf.__name__}(x, out)")
            return self._ufunc_over_arrays(uf, node, ins, outs)
        if uf is np.conjugate:          # a real number is its own conjugate (semantics/complexval.py)
            return self.sem.conjugate(self.expr(ins[0]), self.span(node))
        if uf not in _OWN:
            if registry.lookup_object(uf) is not None:
                return None
            raise self.err(KernelTypeError, f"np.{uf.__name__} is not supported in kernels", node,
                           hint="write the operation out, or use a math function")
        return self.ufunc_scalar(uf, [self.expr(a) for a in ins], node)

    def _ufunc_operands(self, uf, node):
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise self.err(KernelTypeError, f"np.{uf.__name__}(*args) is not supported; pass the operands", node)
        if len(node.args) > uf.nargs:
            raise self.err(KernelTypeError, f"np.{uf.__name__}() takes {uf.nin} input(s) and {uf.nout} output(s), "
                                            f"got {len(node.args)} arguments", node)
        ins, outs = list(node.args[:uf.nin]), list(node.args[uf.nin:])
        for kw in node.keywords:
            if kw.arg != "out":
                raise self.err(KernelTypeError, f"np.{uf.__name__}(..., {kw.arg}=...) is not supported in kernels",
                               node, hint="only out= is")
            if outs:
                raise self.err(KernelTypeError, f"np.{uf.__name__}() got the output twice", node)
            outs = list(kw.value.elts) if isinstance(kw.value, ast.Tuple) else [kw.value]
        if len(ins) != uf.nin:
            raise self.err(KernelTypeError, f"np.{uf.__name__}() takes {uf.nin} input(s), got {len(ins)}", node)
        return ins, outs

    def _array_operand(self, a):
        if isinstance(a, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp)):
            return None
        return self.array_of(a)

    # -- the array form ---------------------------------------------------------------------
    def _ufunc_over_arrays(self, uf, node, ins, outs):
        name = f"np.{uf.__name__}"
        if not outs:
            raise self.err(KernelTypeError, f"{name} of an array makes a new array, which a kernel cannot allocate",
                           node, hint=f"pass the output array: {name}(x, out) or {name}(x, out=out)")
        if len(outs) != uf.nout:
            raise self.err(KernelTypeError, f"{name}() has {uf.nout} output(s), got {len(outs)}", node)
        if uf.nout != 1:
            raise self.err(KernelTypeError, f"{name} has {uf.nout} outputs; kernels support ufuncs of one output "
                                            "on arrays", node, hint="loop over the elements and call it on scalars")
        out_infos = []
        for o in outs:
            info = self._array_operand(o)
            if info is None:
                raise self.err(KernelTypeError, f"the output of {name} must be an array", o)
            out_infos.append(info)
        nd = out_infos[0].ndim
        if any(i.ndim != nd for i in out_infos):
            raise self.err(KernelTypeError, f"the outputs of {name} have different dimensions", node)
        tag = f"_uf{node.lineno}_{node.col_offset}"
        loc = lambda n: ast.fix_missing_locations(ast.copy_location(n, node))        # noqa: E731
        idx = [ast.Name(f"{tag}_i{k}", ast.Load()) for k in range(nd)]
        pre, elems = [], []
        for j, a in enumerate(ins):
            info = self._array_operand(a)
            if info is None:
                if isinstance(a, (ast.Name, ast.Constant)):
                    elems.append(a)
                else:       # evaluated once, before the loop, as NumPy evaluates arguments
                    pre.append(loc(ast.Assign([ast.Name(f"{tag}_a{j}", ast.Store())], a)))
                    elems.append(ast.Name(f"{tag}_a{j}", ast.Load()))
                continue
            if info.ndim > nd:
                raise self.err(KernelTypeError, f"{ast.unparse(a)} has {info.ndim} dimension(s), more than the "
                                                f"output's {nd}: it cannot broadcast to it", a)
            parts = []
            for d in range(info.ndim):
                k = d + nd - info.ndim
                dim = ast.Subscript(ast.Attribute(copy.deepcopy(a), "shape", ast.Load()), ast.Constant(d), ast.Load())
                # a dimension of 1 repeats (NumPy broadcasting); else it matches the output's
                parts.append(ast.IfExp(ast.Compare(dim, [ast.Eq()], [ast.Constant(1)]), ast.Constant(0), idx[k]))
            elems.append(ast.Subscript(copy.deepcopy(a), _index(parts), ast.Load()))
        value = ast.Call(copy.deepcopy(node.func), elems, [])
        targets = [ast.Subscript(copy.deepcopy(o), _index(list(idx)), ast.Store()) for o in outs]
        body: ast.stmt = ast.Assign(targets, value)
        for k in reversed(range(nd)):
            shape = ast.Subscript(ast.Attribute(copy.deepcopy(outs[0]), "shape", ast.Load()), ast.Constant(k),
                                  ast.Load())
            body = loc(ast.For(ast.Name(f"{tag}_i{k}", ast.Store()),
                               ast.Call(ast.Name("range", ast.Load()), [shape], []), [body], []))
            # loops are told apart by where they start (loops.py): one column each, within the call
            body.col_offset = node.col_offset + k
        return self.block(pre + [loc(body)])

    # -- scalars ----------------------------------------------------------------------------
    def ufunc_scalar(self, uf, args: list, node) -> ir.Expr:
        """``np.<uf>(*args)`` on scalar values, in the ufunc's loop type (:func:`loop_types`)."""
        sem, sp = self.sem, self.span(node)
        if any(is_complex(a) for a in args):
            return self.complex_ufunc(uf, args, node)          # NumPy's complex loops (complexes.py)
        for a in args:
            if not isinstance(a.type, T.ScalarType):
                raise self.err(KernelTypeError, f"np.{uf.__name__} takes numbers here, got {a.type.name}", node)
        lt = loop_types(uf, [a.type for a in args])
        if lt is None:
            raise self.err(KernelTypeError, f"np.{uf.__name__} has no loop for "
                                            f"({', '.join(a.type.name for a in args)})", node)
        tin, (tout,) = lt
        if uf in _COMPARE and len({t.name for t in tin}) == 2:          # int64 vs uint64, exactly
            return self._mixed_sign_compare(_COMPARE[uf], args, tin, sp)
        xs = [sem.convert(a, t, sp) for a, t in zip(args, tin)]
        if uf in _COMPARE:
            return sem.binop(_COMPARE[uf], xs[0], xs[1], sp)
        if uf in _BINARY:
            return sem.convert(sem.binop(_BINARY[uf], xs[0], xs[1], sp), tout, sp)
        if uf in _LOGICAL:
            return sem.binop(_LOGICAL[uf], sem.to_bool(xs[0], sp), sem.to_bool(xs[1], sp), sp)
        if uf is np.logical_not or (uf is np.invert and tout == T.bool_):
            return sem.unop("!", xs[0], sp)
        if uf in (np.invert, np.negative, np.positive):
            return sem.convert(sem.unop({np.invert: "~", np.negative: "-", np.positive: "+"}[uf], xs[0], sp), tout,
                               sp)
        if uf is np.square:
            return sem.convert(sem.binop("*", xs[0], xs[0], sp), tout, sp)
        if uf in _SCALE:
            return sem.binop("*", xs[0], sem.const(_SCALE[uf], tout, sp), sp)
        # maximum/minimum: NumPy's (a >= b or isnan(a)) ? a : b, so a NaN on either side wins
        a, b = sem.once(xs[0], sp), sem.once(xs[1], sp)
        pick = sem.binop(">=" if uf is np.maximum else "<=", a, b, sp)
        if tout.is_float:
            pick = sem.logical("or", pick, sem.builtin("isnan", [a], sp), sp)
        return sem.select(pick, a, b, sp)

    def _mixed_sign_compare(self, op, args, tin, sp):
        sem = self.sem
        a, b = (sem.once(sem.convert(x, t, sp), sp) for x, t in zip(args, tin))
        signed_left = tin[0].kind != "u"
        s = a if signed_left else b
        neg = sem.binop("<", s, sem.const(0, s.type, sp), sp)
        # a negative signed side is below every unsigned value
        below = {"<": True, "<=": True, ">": False, ">=": False, "==": False, "!=": True}
        mirror = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
        when_neg = below[op] if signed_left else below[mirror[op]]
        u = tin[1] if signed_left else tin[0]
        exact = sem.binop(op, sem.convert(a, u, sp) if signed_left else a,
                          b if signed_left else sem.convert(b, u, sp), sp)
        return sem.select(neg, ir.Const(when_neg, T.bool_, span=sp), exact, sp)


def _index(parts):
    if len(parts) == 1:
        return parts[0]
    return ast.Tuple(parts, ast.Load())
