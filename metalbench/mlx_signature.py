"""How MLX turns a ``mx.fast.metal_kernel`` body into a complete Metal kernel.

Models ``write_signature`` / ``write_template`` / the kernel naming of MLX 0.32
(``mlx/backend/common/metal_kernel.cpp``, the version with ``compile_options``;
``mlx/backend/metal/custom_kernel.cpp`` prepends ``metal::utils()``, the
preprocessed ``mlx/backend/metal/kernels/utils.h``, which starts with
``using namespace metal;``). Used for ``verbose=True`` printing, for the static
check of MSL on machines without a Mac (:mod:`metalbench.msl_check`), and by
the MSL front end to know which parameters a body receives.

MLX's rules, reproduced here:

- inputs in order, each ``const <space> <T><ref> name [[buffer(i)]]`` where the
  space is ``constant`` for arrays of fewer than 8 elements, else ``device``; the
  ref is ``&`` for 0-d arrays (our scalar parameters), else ``*``;
- after each input of ndim > 0, ``name_shape`` (``const constant int*``),
  ``name_strides`` (``const constant int64_t*``) and ``name_ndim``
  (``const constant int&``) -- each only if that substring occurs in the body;
- outputs ``device T* name`` (``device atomic<T>*`` for all of them with
  ``atomic_outputs=True``);
- then the thread attributes whose name occurs in the body (substring test), in
  MLX's fixed order, as ``uint3 thread_position_in_grid [[thread_position_in_grid]]``;
- kernel name ``custom_kernel_<name>[_<template hash>]`` then ``_<dtype>`` per
  input (suffix ``s`` for 0-d, ``c`` for constant-space inputs) and per output;
- with template arguments, ``template <typename T, int N, bool B>`` before the
  signature and an explicit instantiation ``template [[host_name("...")]] ...``;
- ``verbose=True`` prints that text (:func:`verbose_source`); the compiler sees it after
  MLX's preamble (:func:`full_source`, with our stand-in includes for the preamble).

Example::

    >>> from metalbench import types as T
    >>> src = full_source(name="myexp", body="uint e = thread_position_in_grid.x;\\n"
    ...                   "out[e] = metal::exp(inp[e]);",
    ...                   inputs=[InputSpec("inp", T.float32, ndim=1, size=16)],
    ...                   outputs=[OutputSpec("out", T.float32)])
    >>> print(src.splitlines()[3])
    [[kernel]] void custom_kernel_myexp_float_float(
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from . import types as T
from .ir import THREAD_ATTRIBUTES

# MLX passes inputs with fewer elements than this in the constant address space.
MAX_CONSTANT_ARRAY_SIZE = 8

# Our own stand-in for MLX's preamble (metal::utils()); the checker resolves these
# two includes to its shims.
PREAMBLE = ('#include <metal_stdlib>\n'
            '#include "mlx/backend/metal/kernels/utils.h"\n'
            'using namespace metal;\n')

# MLX's get_type_string (mlx/backend/common/utils.cpp).
MLX_TYPE_STRING = {
    "float32": "float", "float16": "float16_t", "bfloat16": "bfloat16_t", "bool": "bool",
    "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
    "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "float64": "double",
}


def type_string(dtype) -> str:
    """MLX's Metal spelling of a dtype (``mx.float16`` / ``T.float16`` / ``"float16"``).

    >>> type_string(T.float16), type_string("int32")
    ('float16_t', 'int32_t')
    """
    if isinstance(dtype, T.ScalarType):
        return MLX_TYPE_STRING[dtype.name]
    if isinstance(dtype, str) and dtype in MLX_TYPE_STRING:
        return MLX_TYPE_STRING[dtype]
    if isinstance(dtype, str):
        return MLX_TYPE_STRING[T.lookup(dtype).name]
    if type(dtype).__module__.startswith("mlx"):
        return MLX_TYPE_STRING[T.from_mlx(dtype).name]
    return MLX_TYPE_STRING[T.from_numpy(dtype).name]


@dataclass
class InputSpec:
    """What MLX knows about one input at call time: dtype, ndim and size."""
    name: str
    dtype: Any
    ndim: int = 1
    size: int = MAX_CONSTANT_ARRAY_SIZE

    @property
    def space(self) -> str:
        return "constant" if self.size < MAX_CONSTANT_ARRAY_SIZE else "device"


@dataclass
class OutputSpec:
    name: str
    dtype: Any


@dataclass
class FullSource:
    """The complete kernel text and where the header and body lie in it (1-based lines)."""
    text: str
    kernel_name: str
    header_line: int
    body_line: int
    body_lines: int
    params: list[str] = field(default_factory=list)
    header_lines: int = 0

    def __str__(self) -> str:
        return self.text


def shape_infos(body: str, input_names: list[str]) -> list[tuple[bool, bool, bool]]:
    """MLX's substring test: does the body mention ``x_shape``, ``x_strides``, ``x_ndim``?

    >>> shape_infos("int n = x_ndim;", ["x"])
    [(False, False, True)]
    """
    return [(f"{n}_shape" in body, f"{n}_strides" in body, f"{n}_ndim" in body) for n in input_names]


def attributes(body: str) -> list[str]:
    """The thread attributes MLX passes for ``body`` (substring test, MLX's order).

    >>> attributes("uint i = thread_position_in_grid.x;")
    ['thread_position_in_grid']
    """
    return [a for a in THREAD_ATTRIBUTES if a in body]


def _template_value(v) -> tuple[str, str]:
    """(parameter kind, value spelling) of a template argument as MLX writes them."""
    if isinstance(v, bool):
        return "bool", "1" if v else "0"     # std::ostream << bool, no boolalpha
    if isinstance(v, int):
        return "int", str(v)
    return "typename", type_string(v)


def kernel_name(name: str, inputs: list[InputSpec], outputs: list[OutputSpec],
                template: list | None = None) -> str:
    """MLX's host name of the kernel.

    >>> kernel_name("k", [InputSpec("a", "float32", 0, 1)], [OutputSpec("o", "float32")],
    ...             [("T", "float32"), ("N", 4)])
    'custom_kernel_k__float_4_floats_float'
    """
    kn = "custom_kernel_" + name
    if template:
        tdef = "<" + ", ".join(_template_value(v)[1] for _, v in template) + ">"
        h = re.sub(r"<|>|(, )", "_", tdef)[:-1]
        kn += "_" + h
    for s in inputs:
        kn += "_" + type_string(s.dtype)
        if s.ndim == 0:
            kn += "s"
        elif s.size < MAX_CONSTANT_ARRAY_SIZE:
            kn += "c"
    for o in outputs:
        kn += "_" + type_string(o.dtype)
    return kn


def signature_params(body: str, inputs: list[InputSpec], outputs: list[OutputSpec],
                     atomic_outputs: bool = False) -> list[str]:
    """The parameter declarations MLX writes, in order (without trailing commas)."""
    params = []
    index = 0
    infos = shape_infos(body, [s.name for s in inputs])
    for s, (sh, st, nd) in zip(inputs, infos):
        ref = "&" if s.ndim == 0 else "*"
        params.append(f"  const {s.space} {type_string(s.dtype)}{ref} {s.name} [[buffer({index})]]")
        index += 1
        if s.ndim > 0:
            if sh:
                params.append(f"  const constant int* {s.name}_shape [[buffer({index})]]")
                index += 1
            if st:
                params.append(f"  const constant int64_t* {s.name}_strides [[buffer({index})]]")
                index += 1
            if nd:
                params.append(f"  const constant int& {s.name}_ndim [[buffer({index})]]")
                index += 1
    for o in outputs:
        t = type_string(o.dtype)
        if atomic_outputs:
            t = f"atomic<{t}>"
        params.append(f"  device {t}* {o.name} [[buffer({index})]]")
        index += 1
    for a in attributes(body):
        params.append(f"  {THREAD_ATTRIBUTES[a]} {a} [[{a}]]")
    return params


def build(*, name: str, body: str, inputs: list[InputSpec], outputs: list[OutputSpec],
          header: str = "", template: list | None = None, atomic_outputs: bool = False,
          preamble: str = PREAMBLE) -> FullSource:
    """The complete source MLX compiles, with line bookkeeping (see :class:`FullSource`)."""
    kn = kernel_name(name, inputs, outputs, template)
    text = preamble
    header_line = text.count("\n") + 1
    text += header
    if template:
        text += "template <" + ", ".join(f"{_template_value(v)[0]} {n}" for n, v in template) + ">\n"
    text += f"[[kernel]] void {kn}(\n"
    params = signature_params(body, inputs, outputs, atomic_outputs)
    text += ",\n".join(params) + ") {\n"
    body_line = text.count("\n") + 1
    text += body + "\n}\n"
    if template:
        tdef = kn + "<" + ", ".join(_template_value(v)[1] for _, v in template) + ">"
        text += (f'\ntemplate [[host_name("{kn}")]] [[kernel]] decltype({tdef}) {tdef};\n')
    hl = header.count("\n") + (1 if header and not header.endswith("\n") else 0)
    return FullSource(text, kn, header_line, body_line, body.count("\n") + 1, params, hl)


def specs_from_rendered(rendered, inputs=None) -> tuple[list[InputSpec], list[OutputSpec]]:
    """Input/output specs of a ``codegen.msl.Rendered``; ``inputs`` (arrays or specs)
    give the real dtypes, ndims and sizes where known."""
    ins = []
    for i, n in enumerate(rendered.input_names):
        if inputs is not None and i < len(inputs):
            a = inputs[i]
            if isinstance(a, InputSpec):
                ins.append(a)
            else:
                ins.append(InputSpec(n, a.dtype, a.ndim, a.size))
            continue
        t, nd = (rendered.input_types[i] if rendered.input_types else (T.float32, 1))
        ins.append(InputSpec(n, t, nd, 1 if nd == 0 else MAX_CONSTANT_ARRAY_SIZE))
    outs = [OutputSpec(n, rendered.output_types[i] if rendered.output_types else T.float32)
            for i, n in enumerate(rendered.output_names)]
    return ins, outs


def full_source(rendered=None, template: list | None = None, *, inputs=None, name=None,
                body=None, header="", outputs=None, atomic_outputs=False) -> str:
    """The complete kernel source as MLX 0.32 builds it, for a ``Rendered`` or for
    explicit ``name``/``body``/``inputs``/``outputs``.

    >>> from metalbench import types as T
    >>> s = full_source(name="k", body="o[0] = a;", inputs=[InputSpec("a", T.float32, 0, 1)],
    ...                 outputs=[OutputSpec("o", T.float32)])
    >>> "const constant float& a [[buffer(0)]]" in s
    True
    """
    return str(build_for(rendered, template, inputs=inputs, name=name, body=body, header=header,
                         outputs=outputs, atomic_outputs=atomic_outputs))


def build_for(rendered=None, template=None, *, inputs=None, name=None, body=None, header="",
              outputs=None, atomic_outputs=False, preamble: str = PREAMBLE) -> FullSource:
    """Like :func:`full_source` but returns the :class:`FullSource` with line offsets."""
    if rendered is not None:
        ins, outs = specs_from_rendered(rendered, inputs)
        return build(name=rendered.name, body=rendered.body, header=rendered.header, inputs=ins,
                     outputs=outs, template=template, atomic_outputs=rendered.atomic_outputs,
                     preamble=preamble)
    ins = [s if isinstance(s, InputSpec) else InputSpec(*s) for s in (inputs or [])]
    outs = [s if isinstance(s, OutputSpec) else OutputSpec(*s) for s in (outputs or [])]
    return build(name=name, body=body, header=header, inputs=ins, outputs=outs, template=template,
                 atomic_outputs=atomic_outputs, preamble=preamble)


def verbose_source(rendered=None, template: list | None = None, **kw) -> str:
    """Exactly the text MLX prints for ``verbose=True``: header, signature, body and
    template instantiation, *without* the preamble (MLX prepends ``metal::utils()``
    only when it compiles). Arguments as for :func:`full_source`.

    >>> from metalbench import types as T
    >>> verbose_source(name="k", body="o[0] = 1;", outputs=[OutputSpec("o", T.float32)]).splitlines()[0]
    '[[kernel]] void custom_kernel_k_float('
    """
    return build_for(rendered, template, preamble="", **kw).text
