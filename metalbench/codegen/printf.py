"""Formats of kernel prints (``ir.Print``): C printf specs and Python format specs, read
once here for the front ends (validation), the simulator (Python's formatting) and the
CUDA printer (device ``printf``).

    >>> split_c_format("i=%d v=%.3f%%\\n")
    (['i=', ' v=', '%\\n'], ['%d', '%.3f'])
    >>> c_to_python("%5.2lf"), c_to_python("%u"), c_to_python("%llx")
    ('%5.2f', '%d', '%x')
    >>> python_to_c(".3f", "float"), python_to_c("", "int"), python_to_c(">8d", "uint")
    ('%.3f', '%lld', '%8llu')
"""
from __future__ import annotations

import re

# %[flags][width][.precision][length]conversion; Metal's vector length ``v4`` is accepted.
C_SPEC = re.compile(r"%(?P<flags>[-+ #0]*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d*))?"
                    r"(?P<len>hh|h|ll|l|j|z|t|L|v\d+h{0,2}l?)?(?P<conv>[diouxXeEfFgGaAcsp%])")

# [[fill]align][sign][#][0][width][grouping][.precision][type]
PY_SPEC = re.compile(r"(?:(?P<fill>.)?(?P<align>[<>=^]))?(?P<sign>[-+ ])?(?P<alt>#)?(?P<zero>0)?"
                     r"(?P<width>\d+)?(?P<group>[,_])?(?:\.(?P<prec>\d+))?(?P<type>[bcdeEfFgGnosxX%])?$")

INT_CONV = "diouxXc"
FLOAT_CONV = "eEfFgGaA"


class FormatError(ValueError):
    """A format the kernel print cannot use (the front end turns it into a KernelSyntaxError)."""


def split_c_format(fmt: str) -> tuple[list[str], list[str]]:
    """``fmt`` (a C printf format) as literal pieces and the conversion specs between
    them (``%%`` becomes a literal ``%``). ``*`` widths and ``%n`` are refused."""
    texts, specs, pos, cur = [], [], 0, []
    for m in C_SPEC.finditer(fmt):
        cur.append(fmt[pos:m.start()])
        pos = m.end()
        if m.group("conv") == "%":
            cur.append("%")
            continue
        if m.group("width") == "*" or m.group("prec") == "*":
            raise FormatError(f"{m.group(0)!r}: a '*' width or precision is not supported")
        texts.append("".join(cur))
        cur = []
        specs.append(m.group(0))
    rest = fmt[pos:]
    if "%" in rest.replace("%%", ""):
        raise FormatError(f"{rest!r}: an incomplete or unknown % conversion")
    cur.append(rest)
    texts.append("".join(cur))
    return texts, specs


def c_to_python(spec: str) -> str:
    """A C conversion spec as Python's ``%`` operator spells it (length modifiers dropped,
    ``u``/``i`` as ``d``; ``%a`` stays and is handled by the caller)."""
    m = C_SPEC.fullmatch(spec)
    if m is None:
        raise FormatError(f"{spec!r} is not a printf conversion")
    conv = {"u": "d", "i": "d", "p": "x"}.get(m.group("conv"), m.group("conv"))
    width = m.group("width") or ""
    prec = "" if m.group("prec") is None else "." + m.group("prec")
    return f"%{m.group('flags')}{width}{prec}{conv}"


def format_c(spec: str, v) -> str:
    """One value formatted as C's printf would (``spec`` is the C conversion)."""
    m = C_SPEC.fullmatch(spec)
    conv = m.group("conv")
    if conv in "aA":
        s = float(v).hex()
        return s.upper() if conv == "A" else s
    if conv == "s":
        return str(v)
    if conv in INT_CONV:
        v = int(v)
        if conv == "c":
            return chr(v & 0xFF)
        if conv in "uoxX" and v < 0:   # printf reads the bits as unsigned (the arg's width)
            v &= (1 << 64) - 1
    else:
        v = float(v)
    return c_to_python(spec) % v


def python_to_c(spec: str, kind: str) -> str:
    """Python format ``spec`` for a value of ``kind`` ("float", "int", "uint", "bool") as a
    printf conversion, with the length the CUDA printer's casts give the value (``long
    long`` for integers, ``double`` for floats). An empty spec prints as Python's ``str``
    does as near as printf can: ``%g`` for floats."""
    m = PY_SPEC.match(spec)
    if m is None:
        raise FormatError(f"{spec!r} is not a format spec")
    flags = ""
    if m.group("align") == "<":
        flags += "-"
    if m.group("sign") in ("+", " "):
        flags += m.group("sign")
    if m.group("alt"):
        flags += "#"
    if m.group("zero") or (m.group("align") == "=" and m.group("fill") == "0"):
        flags += "0"
    width = m.group("width") or ""
    prec = "" if m.group("prec") is None else "." + m.group("prec")
    ty = m.group("type")
    if kind == "float":
        conv = {None: "g", "n": "g", "%": "f", "d": "g"}.get(ty, ty)
        if conv not in FLOAT_CONV:
            raise FormatError(f"format spec {spec!r} does not apply to a float")
        return f"%{flags}{width}{prec}{conv}"
    conv = {None: "d", "n": "d", "b": "d"}.get(ty, ty)
    if conv in FLOAT_CONV:
        return f"%{flags}{width}{prec}{conv}"
    if conv not in INT_CONV or conv == "i":
        raise FormatError(f"format spec {spec!r} does not apply to an integer")
    if conv == "d" and kind == "uint":
        conv = "u"
    return f"%{flags}{width}{prec}{'' if conv == 'c' else 'll'}{conv}"


def c_for_type(spec: str, kind: str) -> str:
    """A user's printf conversion re-spelt for the value the CUDA printer passes:
    integers as ``long long`` (``ll``), floats as ``double``; a float printed with an
    integer conversion (or the reverse) keeps the user's conversion and the printer
    casts the value to match."""
    m = C_SPEC.fullmatch(spec)
    conv = m.group("conv")
    width = m.group("width") or ""
    prec = "" if m.group("prec") is None else "." + m.group("prec")
    if conv in "sp":
        raise FormatError(f"{spec!r}: kernels print numbers, not strings or pointers")
    length = "ll" if conv in INT_CONV and conv != "c" else ""
    return f"%{m.group('flags')}{width}{prec}{length}{conv}"


# ----------------------------------------------------------------------------- printers

_NOTED = []


def _c_literal(s: str) -> str:
    out = []
    for ch in s:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "%":
            out.append("%%")
        elif ord(ch) < 32:
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    return "".join(out)


def cuda_print(printer, s) -> list[str]:
    """``ir.Print`` as CUDA device ``printf`` calls (at most 32 values each, CUDA's limit).
    Integers are passed as ``long long``, floats as ``double`` (printf's own promotions
    would not widen ``half``); a tagged print starts with the thread's position."""
    from .. import ir
    from .. import types as T
    from ..frontend.printing import value_kind
    fmt, args = [], []
    if s.tag is not None:
        fmt.append("[thread (%u, %u, %u)] ")
        args += [printer.expr(ir.Swizzle(s.tag, c, T.uint32)) for c in "xyz"]
    fmt.append(_c_literal(s.text[0]))
    for (kind, spec), a, text in zip(s.specs, s.args, s.text[1:]):
        vk = value_kind(a.type)
        if kind == "py" and vk == "bool" and not spec:
            fmt.append("%s")
            args.append(f'(({printer.expr(a)}) ? "True" : "False")')
        else:
            conv = python_to_c(spec, "int" if vk == "bool" else vk) if kind == "py" else c_for_type(spec, vk)
            c = conv[-1]
            to = T.float64 if c in FLOAT_CONV else T.int32 if c == "c" else T.uint64 if c in "uoxX" else T.int64
            args.append(printer.expr(ir.Cast(to, a)))
            fmt.append(conv)
        fmt.append(_c_literal(text))
    if len(args) <= 32:
        return [f'printf("{"".join(fmt)}"{"".join(", " + x for x in args)});']
    # more values than one printf takes: consecutive calls (each piece keeps its own values)
    pieces, cur_f, cur_a = [], [], []
    it = iter(args)
    for piece in fmt:
        n = len(C_SPEC.findall(piece.replace("%%", "")))
        if len(cur_a) + n > 32:
            pieces.append(("".join(cur_f), cur_a))
            cur_f, cur_a = [], []
        cur_f.append(piece)
        cur_a += [next(it) for _ in range(n)]
    pieces.append(("".join(cur_f), cur_a))
    return [f'printf("{pf}"{"".join(", " + x for x in pa)});' for pf, pa in pieces]


def msl_print(s) -> str:
    """``ir.Print`` for Metal: compiled out (MLX enables Metal's shader logging only in its
    debug builds), with a one-time note; the simulator prints it."""
    if not _NOTED:
        _NOTED.append(True)
        from ..sim.notices import warn_user
        warn_user("metalbench: print()/printf/os_log in a kernel is compiled out on the metal backend "
                  "(Metal logs only in debug builds of MLX); run on backend='sim' to see the prints, or "
                  "'cuda' (device printf)", UserWarning)
    return "// print compiled out: Metal logs only in debug builds (metalbench prints on the simulator)"
