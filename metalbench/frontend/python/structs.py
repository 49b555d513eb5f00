"""Structs as kernel arguments: a tuple, ``NamedTuple`` or dataclass of arrays and numbers
passed as one argument (issue 19). Each leaf becomes a kernel parameter of its own
(``p.x`` is the parameter ``p__x``: a buffer or a uniform scalar), and the kernel's AST reads
``p.x``, ``p[0]`` and nested ``p.a.b`` as those parameters before it is translated, so
everything an array or a scalar argument can do, a field can (views, atomics, SIMD-group
matrix loads, passing it to an ``@mb.func``).

    >>> from typing import NamedTuple
    >>> class Layer(NamedTuple):
    ...     w: object
    ...     scale: float
    >>> leaves = []
    >>> flatten_struct("p", Layer([1.0], 2.0), leaves)
    (('w', 'p__w'), ('scale', 'p__scale'))
    >>> [name for name, _ in leaves]
    ['p__w', 'p__scale']
"""
from __future__ import annotations

import ast
import copy
import dataclasses
from dataclasses import replace


def is_struct(v) -> bool:
    """Whether a kernel argument is a struct: a tuple (plain or named) or a dataclass instance."""
    return isinstance(v, tuple) or (dataclasses.is_dataclass(v) and not isinstance(v, type))


def struct_fields(v) -> list:
    """``(field name, value)`` of a struct argument, in order."""
    if isinstance(v, tuple):
        names = getattr(v, "_fields", None) or [str(k) for k in range(len(v))]
        return list(zip(names, v))
    return [(f.name, getattr(v, f.name)) for f in dataclasses.fields(v)]


def flatten_struct(name: str, v, leaves: list):
    """The structure of struct ``v`` passed as ``name``: a tuple of ``(field, item)`` where an
    item is a leaf parameter's name (``name__field``) or a nested structure; appends
    ``(leaf name, value)`` to ``leaves``."""
    out = []
    for field, x in struct_fields(v):
        leaf = f"{name}__{field}"
        if is_struct(x):
            out.append((field, flatten_struct(leaf, x, leaves)))
        else:
            leaves.append((leaf, x))
            out.append((field, leaf))
    return tuple(out)


def _item(structure, key):
    for k, (field, item) in enumerate(structure):
        if key == field or (isinstance(key, int) and key in (k, k - len(structure))):
            return item
    return None


def _const_int(node):
    """The value of an integer literal index (``2``, ``-1``), else None."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        sign, node = -1, node.operand
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return sign * node.value
    return None


class StructArg:
    """What a struct argument's own name means in the kernel body (its fields are
    parameters): used whole, it is an error that names the fields."""

    def __init__(self, name: str, structure):
        self.name, self.structure = name, structure

    def __metalbench_value__(self, tr, node):
        from ...errors import KernelTypeError
        fields = ", ".join(f"{self.name}[{f}]" if f.isdigit() else f"{self.name}.{f}" for f, _ in self.structure)
        raise tr.err(KernelTypeError, f"{self.name!r} is a struct argument; use its fields ({fields})", node,
                     hint="pass fields to device functions one by one")


class _Fields(ast.NodeTransformer):
    def __init__(self, structs: dict):
        self.structs = structs

    def resolve(self, node):
        if isinstance(node, ast.Name):
            return self.structs.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return _item(base, node.attr) if isinstance(base, tuple) else None
        if isinstance(node, ast.Subscript):
            k = _const_int(node.slice)
            base = self.resolve(node.value) if k is not None else None
            return _item(base, k) if isinstance(base, tuple) else None
        return None

    def _leaf(self, node):
        r = self.resolve(node)
        if isinstance(r, str):
            return ast.copy_location(ast.Name(id=r, ctx=node.ctx), node)
        return self.generic_visit(node)

    visit_Attribute = visit_Subscript = _leaf

    def visit_Call(self, node):
        # len(p) of a struct: its number of fields
        if isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1:
            r = self.resolve(node.args[0])
            if isinstance(r, tuple):
                return ast.copy_location(ast.Constant(len(r)), node)
        return self.generic_visit(node)


def with_struct_fields(parsed, structs: dict):
    """``parsed`` (a ParsedFunction) with its body reading struct fields as their leaf
    parameters; ``structs`` maps each struct argument to its structure."""
    if not structs:
        return parsed
    fdef = _Fields(structs).visit(copy.deepcopy(parsed.fdef))
    return replace(parsed, fdef=fdef)
