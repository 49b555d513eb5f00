"""NumPy structured arrays (record dtypes) as ``@cuda.jit`` arguments.

A record array ``r`` is passed as one strided view per field (``r['a']``, nested
``r['p']['x']``, sub-array fields with their extra dimensions): each view is a buffer
parameter of its own (``r__a``, ``r__p__x``) and the kernel's AST reads the fields as
those buffers before it is translated: ``r[i].a`` and ``r[i]['a']`` are ``r__a[i]``,
``r[i].h[j]`` is ``r__h[i, j]``. A field is a typed load/store at ``base + i*itemsize +
offset`` of the caller's bytes: the launch writes each field view back into the structured
array, so padding and alignment are NumPy's. Only the fields the kernel names are passed.
What is not lowered (a whole record as a value, a field array as a value, a record used
in any other way) is an error at its line, never a silent wrong answer.

    >>> import numpy as np
    >>> rec = np.dtype([("a", np.float64), ("p", [("x", np.int32)]), ("h", np.float32, 2)])
    >>> record_leaves("r", rec)
    [(('a',), 'r__a', ()), (('p', 'x'), 'r__p__x', ()), (('h',), 'r__h', (2,))]
"""
from __future__ import annotations

import ast
import copy

import numpy as np

_SHAPE_ATTRS = ("size", "shape", "ndim")


def is_record_array(v) -> bool:
    """Whether ``v`` is a NumPy structured array (a record dtype) or one record of one
    (``np.void``/``np.record``: passed as a one-element array, written back into it)."""
    if isinstance(v, (np.ndarray, np.void)):
        return v.dtype.names is not None
    # a device array of records (numba_compat.devicearray.DeviceNDArray) whose storage is a
    # structured NumPy array (the simulator's); not the xoroshiro states (records over uint64 words)
    host = getattr(v, "_host", None)
    return hasattr(v, "copy_to_host") and isinstance(host, np.ndarray) and host.dtype.names is not None


def record_leaves(name: str, dtype: np.dtype, path=()) -> list:
    """``(field path, leaf parameter name, sub-array shape)`` of each scalar field of
    record ``dtype``, nested records flattened, in field order."""
    out = []
    for f in dtype.names:
        ft = dtype.fields[f][0]
        sub = ()
        if ft.subdtype is not None:
            ft, sub = ft.subdtype
        p = path + (f,)
        if ft.names is not None:
            if sub:     # an array of records inside a record: no single strided view per leaf
                out.append((p, None, sub))
                continue
            out.extend(record_leaves(name, ft, p))
        else:
            out.append((p, name + "".join(f"__{x}" for x in p), tuple(sub)))
    return out


def field_view(a: np.ndarray, path) -> np.ndarray:
    """The strided view of field ``path`` of structured array ``a`` (it shares ``a``'s bytes)."""
    for f in path:
        a = a[f]
    return a


class RecordArg:
    """What a record array's own name means in the kernel body once its field accesses are
    rewritten: any use left is a construct metalbench does not lower, an error at its line."""

    def __init__(self, name: str, fields):
        self.name, self.fields = name, fields

    @property
    def marker(self):
        """None for a record array; for a record, its index names (None: index 0)."""
        for p, leaf, _ in self.fields:
            if p == ():
                return ("scalar", leaf)
        return None

    def __metalbench_value__(self, tr, node):
        from ...errors import KernelTypeError
        names = ", ".join(".".join(p) for p, _, _ in self.fields[:6] if p)
        if any(p == () for p, _, _ in self.fields):
            what = f"a record (NumPy structured scalar); metalbench reads its fields ({self.name}.field, " \
                   f"{self.name}['field'], {self.name}.arr[j])"
        else:
            what = f"a record array (NumPy structured dtype); metalbench reads its fields element by element " \
                   f"({self.name}[i].field, {self.name}[i]['field'], {self.name}.size/.shape)"
        raise tr.err(KernelTypeError, f"{self.name!r} is {what} but not this use of it (fields: {names})", node,
                     hint="access one scalar field per expression, e.g. r[i].a = r[j].a per field")


def _key(node):
    """A field name from ``x.f`` or ``x['f']``, else None."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    return None


class _Fields(ast.NodeTransformer):
    def __init__(self, records: dict):
        self.records = records      # name -> {field path: (leaf, sub-shape)}
        self.used: set = set()

    def chain(self, node):
        """(record name, element index node, field path) of ``r[idx].f.g`` / ``r[idx]['f']``."""
        fields = []
        while True:
            k = _key(node)
            if k is None:
                break
            fields.append(k)
            node = node.value
        if fields and isinstance(node, ast.Name) and () in self.records.get(node.id, ()):
            # a scalar record (r.a): a one-element record array underneath, or in a device
            # function, an element of the caller's record array at the index it was given
            return node.id, self._scalar_index(node), tuple(reversed(fields))
        if not fields or not isinstance(node, ast.Subscript) or not isinstance(node.value, ast.Name) \
                or node.value.id not in self.records:
            return None
        return node.value.id, node.slice, tuple(reversed(fields))

    def leaf(self, node):
        c = self.chain(node)
        if c is None:
            return None
        name, idx, path = c
        hit = self.records[name].get(path)
        return None if hit is None or hit[0] is None else (name, idx, hit)

    def _index(self, leaf, elts, node, ctx):
        self.used.add(leaf)
        sl = elts[0] if len(elts) == 1 else ast.Tuple(elts=elts, ctx=ast.Load())
        return ast.copy_location(ast.Subscript(value=ast.Name(id=leaf, ctx=ast.Load()), slice=sl, ctx=ctx), node)

    @staticmethod
    def _elts(idx):
        return list(idx.elts) if isinstance(idx, ast.Tuple) else [idx]

    def visit_Subscript(self, node):
        # r[i].h[j]: a sub-array field indexed by the rest of the subscript
        inner = self.leaf(node.value)
        if inner is not None and inner[2][1] and _key(node) is None:
            _, idx, (leaf, _) = inner
            elts = [self.visit(e) for e in self._elts(idx)] + [self.visit(e) for e in self._elts(node.slice)]
            return self._index(leaf, elts, node, node.ctx)
        return self._field(node)

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id in self.records and node.attr in _SHAPE_ATTRS \
                and () not in self.records[node.value.id]:
            return self._shape_of(node.value.id, node, lambda n: ast.Attribute(value=n, attr=node.attr, ctx=node.ctx))
        return self._field(node)

    def _visit_call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1 \
                and isinstance(node.args[0], ast.Name) and node.args[0].id in self.records:
            return self._shape_of(node.args[0].id, node, lambda n: ast.Call(func=node.func, args=[n], keywords=[]))
        return self.generic_visit(node)

    def _shape_of(self, name, node, make):
        scalar = [leaf for leaf, sub in self.records[name].values() if leaf is not None and not sub]
        if () in self.records[name]:
            scalar = []
        if not scalar:
            return self.generic_visit(node)
        self.used.add(scalar[0])
        return ast.copy_location(make(ast.Name(id=scalar[0], ctx=ast.Load())), node)

    def _field(self, node):
        hit = self.leaf(node)
        if hit is None or hit[2][1]:
            return self.generic_visit(node)     # not a scalar field: whatever is left errors at its line
        _, idx, (leaf, _) = hit
        return self._index(leaf, [self.visit(e) for e in self._elts(idx)], node, node.ctx)

    def visit_Assign(self, node):
        # r[i] = s[j] of two record arrays of one dtype: one assignment per field
        if len(node.targets) == 1:
            t, v = node.targets[0], node.value
            ht, hv = self.leaf(t), self.leaf(v)
            if ht and hv and ht[2][1] and ht[2][1] == hv[2][1]:
                # d.h = s.h / d[i]['h'] = s[j]['h'] of one sub-array shape: element by element
                return [ast.copy_location(ast.Assign(
                    targets=[self._index(ht[2][0], [self.visit(copy.deepcopy(x)) for x in self._elts(ht[1])]
                                         + [ast.Constant(int(k)) for k in e], t, ast.Store())],
                    value=self._index(hv[2][0], [self.visit(copy.deepcopy(x)) for x in self._elts(hv[1])]
                                      + [ast.Constant(int(k)) for k in e], v, ast.Load())), node)
                    for e in np.ndindex(*ht[2][1])]
            if ht and ht[2][1] and hv is None and self.leaf(v) is None and self._element(v) is None \
                    and isinstance(v, (ast.Name, ast.Subscript, ast.Attribute)):
                # d['h'] = src of an array src of the field's shape (numba-cuda's assign_array_to_nested):
                # element by element; src that is no such array is an error at this line
                value = self.visit(v)
                return [ast.copy_location(ast.Assign(
                    targets=[self._index(ht[2][0], [self.visit(copy.deepcopy(x)) for x in self._elts(ht[1])]
                                         + [ast.Constant(int(k)) for k in e], t, ast.Store())],
                    value=ast.copy_location(ast.Subscript(value=copy.deepcopy(value), slice=_const_index(e),
                                                          ctx=ast.Load()), v)), node)
                    for e in np.ndindex(*ht[2][1])]
            rt, rv = self._element(t), self._element(v)
            ft, fv = (rt and self._fields(rt[0])), (rv and self._fields(rv[0]))
            if rt and rv and list(ft) == list(fv) and all(ft[p][1] == fv[p][1] for p in ft) \
                    and all(leaf is not None for leaf, _ in ft.values()) and all(leaf is not None for leaf, _ in fv.values()):
                out = []
                for path, (lt, sub) in ft.items():
                    lv = fv[path][0]
                    for e in np.ndindex(*sub):      # a sub-array field: element by element (small, static)
                        extra = [ast.Constant(int(x)) for x in e]
                        out.append(ast.copy_location(ast.Assign(
                            targets=[self._index(lt, [self.visit(copy.deepcopy(x)) for x in self._elts(rt[1])] + extra, t,
                                                 ast.Store())],
                            value=self._index(lv, [self.visit(copy.deepcopy(x)) for x in self._elts(rv[1])] + list(extra), v,
                                              ast.Load())), node))
                return out
        return self.generic_visit(node)

    def _scalar_index(self, node):
        names = self.records[node.id][()][0]
        if not names:
            return ast.copy_location(ast.Constant(0), node)
        elts = [ast.copy_location(ast.Name(id=n, ctx=ast.Load()), node) for n in names]
        return elts[0] if len(elts) == 1 else ast.copy_location(ast.Tuple(elts=elts, ctx=ast.Load()), node)

    def visit_Call(self, node):
        # a record passed to a function (a device function takes it as a record: functions.py
        # via bind_record_param) needs every field, whatever the callee reads
        for a in list(node.args) + [k.value for k in node.keywords]:
            base = a.value if isinstance(a, ast.Subscript) and _key(a) is None else a
            if isinstance(base, ast.Name) and base.id in self.records and not (
                    isinstance(node.func, ast.Name) and node.func.id == "len"):
                self.used.update(leaf for leaf, _ in self._fields(base.id).values() if leaf is not None)
        return self._visit_call(node)

    def _fields(self, name):
        return {p: v for p, v in self.records[name].items() if p != ()}

    def _element(self, node):
        if isinstance(node, ast.Name) and () in self.records.get(node.id, ()):
            return node.id, self._scalar_index(node)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in self.records \
                and _key(node) is None:
            return node.value.id, node.slice
        return None


def _const_index(e):
    if len(e) == 1:
        return ast.Constant(int(e[0]))
    return ast.Tuple(elts=[ast.Constant(int(k)) for k in e], ctx=ast.Load())


def with_record_fields(fdef: ast.FunctionDef, records: dict):
    """(``fdef`` with record field accesses read as their leaf buffers, the leaves used);
    ``records`` maps each record argument to ``{field path: (leaf name, sub-array shape)}``."""
    f = _Fields(records)
    out = f.visit(copy.deepcopy(fdef))
    ast.fix_missing_locations(out)
    return out, f.used


def record_argument(tr, node):
    """``(RecordArg, index node or None)`` when call argument ``node`` is a record argument
    (``r``: the record or record array itself; ``r[i]``: one record of a record array), else None."""
    base, idx = node, None
    if isinstance(node, ast.Subscript) and _key(node) is None:
        base, idx = node.value, node.slice
    if not isinstance(base, ast.Name):
        return None
    try:
        b = tr.lookup(base.id, base)
    except Exception:
        return None
    if b.kind != "pyobj" or not isinstance(b.value, RecordArg):
        return None
    if idx is not None and b.value.marker is not None:
        return None         # r[0] of a record: a field by position, not lowered
    return b.value, idx


def bind_record_param(tr, pname: str, rec: RecordArg, idx, node):
    """How device-function parameter ``pname`` receives record argument ``rec`` (``idx``:
    the element index of ``r[i]``, else None): the callee reads ``pname``'s fields as
    leaf buffers ``pname__f`` bound to the caller's, and a record element as the caller's
    leaves at index parameters ``pname__i0...`` (records.py rewrites the callee's body).

    Returns ``(bindings, [(FuncParam, argument)], hidden, key, layout)`` for
    ``FunctionsMixin.device_call``; ``layout`` is the callee's ``{path: (leaf, sub)}``."""
    from ... import ir
    from .specs import Binding
    bindings, params, hidden, key, fields = {}, [], [], [("record", rec.marker is None, idx is None)], []
    for path, leaf, sub in rec.fields:
        if path == ():
            continue
        b = tr.lookup(leaf, node) if leaf is not None else None
        if b is None or b.kind != "buf":
            fields.append((path, None, sub))
            key.append((path, None))
            continue
        info = b.value
        cleaf = pname + "".join(f"__{x}" for x in path)
        callee, extra, k = tr._buffer_param(cleaf, info, node)
        bindings[cleaf] = Binding("buf", callee)
        params.append((ir.FuncParam(cleaf, info.elem, info.space,
                                    const=info.kernel_param is not None and not info.kernel_param.is_output),
                       ir.BufArg(info.name, info.offset, span=tr.span(node))))
        hidden.extend(extra)
        key.append((path, k))
        fields.append((path, cleaf, sub))
    if idx is not None:             # r[i]: one record of the caller's record array
        elts = list(idx.elts) if isinstance(idx, ast.Tuple) else [idx]
        index = [tr.sem.index(tr.expr(e), tr.span(e)) for e in elts]
    elif rec.marker is not None and rec.marker[1]:      # a record the caller itself got by index
        index = [tr.lookup(n, node).value for n in rec.marker[1]]
    else:
        index = None
    if index is not None:
        names = tuple(f"{pname}__i{k}" for k in range(len(index)))
        for n, e in zip(names, index):
            bindings[n] = Binding("var", ir.Var(n, e.type))
            params.append((ir.FuncParam(n, e.type), e))
            key.append(("index", e.type.name))
        fields.append(((), names, ()))
    elif rec.marker is not None:
        fields.append(((), None, ()))
    bindings[pname] = Binding("pyobj", RecordArg(pname, fields))
    return bindings, params, hidden, tuple(key), {p: (lf, sub) for p, lf, sub in fields}

