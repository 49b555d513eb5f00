"""Record arrays made in a Numba kernel: ``C = cuda.const.array_like(G)`` of a NumPy
structured array ``G`` (a global or closure variable), and ``S = cuda.shared.array(n,
dtype=rec)`` / ``cuda.local.array`` of a record dtype.

Before translation the assignment becomes one array per scalar field
(``C__x = cuda.const.array_like(G['x'])``, ``S__x = cuda.shared.array(n, float64)``;
nested records flattened, sub-array fields with their extra dimensions), and the body's
field accesses ``C[i]['x']``, ``C[i].x``, ``C[i].h[j]``, ``len(C)``, ``C.size`` and whole
records copied between record arrays of one dtype (``S[t] = x[i]``) use those arrays,
as record arguments are (records.py). Any other use of ``C`` is an error at its line.

    >>> import ast, numpy as np
    >>> class _Like:            # stands for cuda.const.array_like
    ...     __metalbench_const_array__ = True
    >>> G = np.array([(1.0, 2)], dtype=[("x", "f8"), ("y", "i8")])
    >>> fdef = ast.parse("def k(A):\\n    C = const(G)\\n    A[0] = C[0]['y']\\n").body[0]
    >>> fdef2, env, recs = const_record_arrays(fdef, {"const": _Like(), "G": G})
    >>> print(ast.unparse(fdef2))
    def k(A):
        C__x = const(_mb_crec_C__x)
        C__y = const(_mb_crec_C__y)
        A[0] = C[0]['y']
    >>> sorted(recs["C"][0].items()), env["_mb_crec_C__y"].tolist()
    ([(('x',), ('C__x', ())), (('y',), ('C__y', ()))], [2])
"""
from __future__ import annotations

import ast
import copy
from collections import ChainMap
from dataclasses import replace

import numpy as np

from .records import RecordArg, field_view, record_leaves, with_record_fields
from .specs import Binding


def _static(node, env):
    """The Python object a Name / Attribute chain names in ``env``, or None."""
    if isinstance(node, ast.Name):
        try:
            return env[node.id]
        except KeyError:
            import builtins
            return getattr(builtins, node.id, None)
    if isinstance(node, ast.Attribute):
        base = _static(node.value, env)
        return None if base is None else getattr(base, node.attr, None)
    return None


def _value(node, env):
    """A literal or a Name / Attribute chain's object, else None."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        return _static(node, env)


def _record_dtype(obj):
    """The structured NumPy dtype ``obj`` names (a dtype, or a Numba Record type), else None."""
    dt = obj if isinstance(obj, np.dtype) else getattr(obj, "dtype", None)
    return dt if isinstance(dt, np.dtype) and dt.names is not None else None


def _record_array_call(stmt, env):
    """(target, record dtype, shape tuple, the call) of ``S = cuda.shared.array(shape,
    dtype=rec)`` / ``cuda.local.array`` of a record dtype with a static non-zero shape, or None."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Call)):
        return None
    call = stmt.value
    if not getattr(_static(call.func, env), "__metalbench_array_maker__", False):
        return None
    kw = {k.arg: k.value for k in call.keywords}
    shape_node = call.args[0] if call.args else kw.get("shape")
    dtype_node = call.args[1] if len(call.args) > 1 else kw.get("dtype")
    if shape_node is None or dtype_node is None:
        return None
    dt = _record_dtype(_value(dtype_node, env))
    shape = _value(shape_node, env)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else shape
    if dt is None or not (isinstance(shape, tuple) and shape and all(isinstance(d, (int, np.integer)) and d > 0
                                                                      for d in shape)):
        return None
    return stmt.targets[0].id, dt, tuple(int(d) for d in shape), call


def _const_record_call(stmt, env):
    """(target name, the structured array, the call) of ``C = cuda.const.array_like(G)``, or None."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Call) and len(stmt.value.args) == 1 and not stmt.value.keywords):
        return None
    if not getattr(_static(stmt.value.func, env), "__metalbench_const_array__", False):
        return None
    arr = _static(stmt.value.args[0], env)
    if not (isinstance(arr, np.ndarray) and arr.dtype.names is not None):
        return None
    return stmt.targets[0].id, arr, stmt.value


class _Split(ast.NodeTransformer):
    def __init__(self, env):
        self.env, self.new, self.records = env, {}, {}

    def visit_Assign(self, node):
        made = _record_array_call(node, self.env)
        if made is not None:
            return self._split_made(node, *made)
        hit = _const_record_call(node, self.env)
        if hit is None:
            return self.generic_visit(node)
        name, arr, call = hit
        leaves = record_leaves(name, arr.dtype)
        out, fields = [], {}
        for path, leaf, sub in leaves:
            if leaf is None:
                continue            # an array of records inside a record: left unbound, an error where used
            key = f"_mb_crec_{leaf}"
            self.new[key] = np.ascontiguousarray(field_view(arr, path))
            c = copy.deepcopy(call)
            c.args = [ast.Name(id=key, ctx=ast.Load())]
            out.append(ast.copy_location(ast.Assign(targets=[ast.Name(id=leaf, ctx=ast.Store())], value=c), node))
            fields[path] = (leaf, tuple(sub))
        self.records[name] = (fields, leaves)
        return out

    def _split_made(self, node, name, dt, shape, call):
        """``S = cuda.shared.array(shape, rec)``: one array per scalar field of ``rec``."""
        leaves = record_leaves(name, dt)
        one = np.zeros(1, dt)
        out, fields = [], {}
        for path, leaf, sub in leaves:
            if leaf is None:
                continue
            self.new[f"_mb_crec_{leaf}_shape"] = shape + tuple(sub)
            self.new[f"_mb_crec_{leaf}_dtype"] = field_view(one, path).dtype
            c = copy.deepcopy(call)
            c.args = [ast.Name(id=f"_mb_crec_{leaf}_shape", ctx=ast.Load()),
                      ast.Name(id=f"_mb_crec_{leaf}_dtype", ctx=ast.Load())]
            c.keywords = [k for k in c.keywords if k.arg not in ("shape", "dtype")]
            out.append(ast.copy_location(ast.Assign(targets=[ast.Name(id=leaf, ctx=ast.Store())], value=c), node))
            fields[path] = (leaf, tuple(sub))
        self.records[name] = (fields, leaves)
        return out


def const_record_arrays(fdef: ast.FunctionDef, env):
    """(``fdef`` with each constant record array split into per-field constant arrays, the
    environment with those field arrays added (the caller's is not changed), ``{name:
    ({field path: (leaf, sub-shape)}, record_leaves)}``); ``fdef`` itself when there are none."""
    s = _Split(env)
    out = s.visit(copy.deepcopy(fdef))
    if not s.records:
        return fdef, env, {}
    ast.fix_missing_locations(out)
    return out, ChainMap(s.new, env), s.records


def bind_record_fields(parsed, records: dict, bindings: dict):
    """``parsed`` with its constant record arrays split (:func:`const_record_arrays`, each
    bound in ``bindings`` and added to ``records``) and every record of ``records`` read
    field by field; the one step a kernel and a device function both take before
    translation. ``parsed`` itself when there is nothing to do."""
    fdef, env, made = const_record_arrays(parsed.fdef, parsed.env)
    if made:
        parsed = replace(parsed, fdef=fdef, env=env)
        for name, (fields, leaves) in made.items():
            records[name] = fields
            bindings[name] = Binding("pyobj", RecordArg(name, leaves))
    if records:
        parsed = replace(parsed, fdef=with_record_fields(parsed.fdef, records)[0])
    return parsed
