"""How a builtin call is printed: spelling factories for the MSL and CUDA printers.

A spelling is a function ``(p, args, t) -> str``: ``p`` is the printer (``p.expr``,
``p.need(name, code)`` for helper code in the header, ``p.cast_text``), ``args`` the
call's (already converted) IR arguments and ``t`` its result type. The factories
here cover the common shapes; a declaration may also write its own function.

    >>> from metalbench import ir, types as T
    >>> from metalbench.codegen.msl import MSLPrinter
    >>> p = MSLPrinter(ir.KernelIR("k", [], []))
    >>> metal("exp")(p, [ir.Var("x", T.bfloat16)], T.bfloat16)
    'static_cast<bfloat>(metal::exp(static_cast<float>(x)))'
"""
from __future__ import annotations

from .. import ir
from .. import types as T
from ..errors import KernelTypeError

from ..codegen.c_like import ASSIGN


def _float_like(t):
    return T.float32 if isinstance(t, T.ScalarType) else T.vector_of(T.float32, t.n)


def _texts(p, args, through_float: bool):
    out = []
    for a in args:
        s = p.expr(a, ASSIGN)
        if through_float and T.elem_of(a.type).is_float:
            s = p.cast_text(_float_like(a.type), s)
        out.append(s)
    return out


def metal(name: str, through_half: bool = False):
    """A Metal standard-library function: ``metal::name(...)``. bfloat arguments go
    through float (Metal's math has no bfloat overloads); ``through_half`` sends
    half through float as well."""
    def spell(p, args, t):
        elem = T.elem_of(args[0].type) if args else None
        tf = elem is not None and (elem.name == "bfloat16" or (through_half and elem.name == "float16"))
        call = f"metal::{name}({', '.join(_texts(p, args, tf))})"
        return p.cast_text(t, call) if tf and T.elem_of(t).is_float else call
    spell.metal_name = f"metal::{name}"
    return spell


def metal_helper(fn: str, code: str, deps: dict | None = None):
    """A float function Metal lacks, printed into the header from ``code`` (plus the
    helpers in ``deps``, name -> code); half and bfloat go through float, vectors
    through a componentwise overload."""
    def spell(p, args, t):
        for dn, dc in (deps or {}).items():
            p.need(dn, dc)
        p.need(fn, code)
        vt = args[0].type
        if isinstance(vt, T.VectorType):
            _vector_overload(p, fn, vt.n, len(args))
        elem = T.elem_of(vt)
        tf = elem.is_float and elem.name != "float32"
        call = f"{fn}({', '.join(_texts(p, args, tf))})"
        return p.cast_text(t, call) if tf and T.elem_of(t).is_float else call
    spell.metal_name = fn
    return spell


def _vector_overload(p, fn: str, n: int, nargs: int) -> None:
    vt = f"float{n}"
    params = ", ".join(f"{vt} {'abc'[i]}" for i in range(nargs))
    comps = ", ".join(f"{fn}({', '.join(f'{chr(97 + i)}.{c}' for i in range(nargs))})" for c in "xyzw"[:n])
    p.need(f"{fn}_{vt}", f"inline {vt} {fn}({params}) {{\n    return {vt}({comps});\n}}")


def template_helper(fn: str, code: str, vectors: bool = True):
    """A ``template <typename T>`` helper printed into the header (works per type)."""
    def spell(p, args, t):
        if not vectors and any(isinstance(a.type, T.VectorType) for a in args):
            raise KernelTypeError(f"{fn} of a vector is not supported here", args[0].span)
        p.need(fn, code)
        return f"{fn}({', '.join(p.expr(a, ASSIGN) for a in args)})"
    spell.metal_name = fn
    return spell


def by_kind(int=None, float=None):    # noqa: A002 - the names read best at the call site
    """Chooses a spelling by the first argument's element kind (bool counts as int)."""
    def spell(p, args, t):
        e = T.elem_of(args[0].type)
        s = float if e.is_float else int
        if s is None:
            raise KernelTypeError(f"no spelling for {e.name} arguments", args[0].span)
        return s(p, args, t)
    spell.metal_name = getattr(float or int, "metal_name", "")
    spell.parts = (int, float)
    return spell


def _need(p, fn: str, helpers: dict) -> None:
    """Adds helper ``fn`` to the header after the helpers its code calls."""
    for other, code in helpers.items():
        if other != fn and other in helpers[fn] and other not in p.helpers:
            _need(p, other, helpers)
    p.need(fn, helpers[fn])


def cuda(float: str | None = None, int: str | None = None, helpers: dict | None = None,  # noqa: A002
         double: str | None = None):
    """A CUDA spelling: ``float`` names the float32 function (``expf`` or an ``mb_``
    helper), ``double`` the float64 one (default: a libm name without its ``f``, or the
    same helper, whose code is a template), ``int`` the integer one; ``helpers`` maps
    helper names to their code. half and bfloat compute in float; vectors apply the
    scalar call per component."""
    helpers = helpers or {}
    if double is None and float is not None:
        double = float if float in helpers or not float.endswith("f") else float[:-1]

    def scalar(p, args, t):
        elem = T.elem_of(args[0].type if args else t)
        texts = [p.expr(a, ASSIGN) for a in args]
        fn = (double if elem.name == "float64" else float) if elem.is_float else int
        if fn is None:
            raise KernelTypeError(f"no CUDA spelling for {elem.name} arguments", args[0].span if args else None)
        if fn in helpers:
            _need(p, fn, helpers)
        if elem.name in ("float16", "bfloat16"):
            texts = [f"static_cast<float>({s})" if T.elem_of(a.type).is_float else s for s, a in zip(texts, args)]
            call = f"{fn}({', '.join(texts)})"
            return p.cast_text(t, call) if T.elem_of(t).is_float else call
        return f"{fn}({', '.join(texts)})"

    def spell(p, args, t):
        return map_vector(p, scalar, args, t)
    spell.cuda_name = float or int
    return spell


# Float helpers are templates over float and double (half and bfloat arrive as float);
# these pick the f-suffixed libm function for float.
CUDA_FT = {
    "mb_fmin_t": "template <class T> __device__ inline T mb_fmin_t(T a, T b) "
                 "{ if constexpr (sizeof(T) == 8) return fmin(a, b); else return fminf(a, b); }",
    "mb_fmax_t": "template <class T> __device__ inline T mb_fmax_t(T a, T b) "
                 "{ if constexpr (sizeof(T) == 8) return fmax(a, b); else return fmaxf(a, b); }",
}


def map_vector(p, scalar, args, t):
    """Prints ``scalar`` per component when an argument is a vector (a lambda over
    ``mb_map``), else directly."""
    if args and isinstance(args[0].type, T.VectorType):
        ps = [ir.Var(f"mb_{'abc'[i]}", T.elem_of(a.type)) for i, a in enumerate(args)]
        params = ", ".join(f"{p.tname(v.type)} {v.name}" for v in ps)
        body = scalar(p, ps, T.elem_of(t))
        vargs = ", ".join(p.expr(a, ASSIGN) for a in args)
        return f"mb_map([]({params}) {{ return {body}; }}, {vargs})"
    return scalar(p, args, t)
