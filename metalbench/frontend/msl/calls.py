"""MSL calls: casts and constructors, builtins (through the registry and the semantic
layer), ``select``, ``dot``, atomics, and dispatch to header functions and MLX utils."""
from __future__ import annotations

from ... import ir
from ... import types as T
from ...builtins import registry
from ...errors import KernelNameError
from .mlx_utils import UTILS
from .cxx_decls import AliasTemplate
from .cxx_objects import NOT_MINE
from .simdgroup import MATRIX_CALLS, MATRIX_TEMPLATES
from ...semantics.float_parts import frexp_parts, modf_parts
from .symbols import _ATOMIC_FNS, Buf, _NAMESPACES, _type_of_descriptor, _TypeName
from .complex64 import NAMES as COMPLEX_NAMES
from ...semantics import ComplexType, is_complex


def _is_vote_t(text: str) -> bool:
    """Whether ``text`` names ``simd_vote::vote_t`` (the 64 bits of a ballot; Metal code
    converts a ``simd_vote`` to them functional-style: ``ulong(simd_vote::vote_t(b))``).

    >>> _is_vote_t("metal::simd_vote::vote_t"), _is_vote_t("simd_vote :: vote_t"), _is_vote_t("S::vote_t")
    (True, True, False)
    """
    return text.replace(" ", "").removeprefix("::").removeprefix("metal::") == "simd_vote::vote_t"


class CallsMixin:
    """Calls, casts and atomics: a part of :class:`~metalbench.frontend.msl.Translator`."""

    def callee_name(self, fn):
        txt = self.text(fn).replace(" ", "")
        if fn.type == "template_function":
            txt = self.text(fn.child_by_field_name("name")).replace(" ", "")
        elif fn.type == "qualified_identifier" and fn.child_by_field_name("name").type == "template_function":
            txt = txt.split("<")[0]                     # ns::f<3>: the name without its arguments
        parts = txt.split("::")
        if len(parts) > 1 and parts[0] == "":          # ::metal::abs: the global namespace's metal
            parts = parts[1:]
        while len(parts) > 1 and parts[0] in _NAMESPACES:
            parts = parts[1:]
        return "::".join(parts)

    def type_template_call(self, fn) -> bool:
        """Whether the callee ``fn`` names one of Metal's type templates (``vec<T, n>``,
        ``simdgroup_matrix<T, 8, 8>``, possibly ``metal::``-qualified): the call constructs one."""
        if fn.type == "qualified_identifier" and self.text(fn).replace(" ", "").startswith(("metal::", "::metal::")):
            fn = fn.child_by_field_name("name")
        if fn is None or fn.type != "template_function":
            return False
        nm = self.text(fn.child_by_field_name("name")).replace(" ", "")
        return nm == "vec" or nm in MATRIX_TEMPLATES or self.text(fn).replace(" ", "") in COMPLEX_NAMES

    def alias_template_value_type(self, fn):
        """The scalar or vector type ``fn`` names when it is an alias template with its
        arguments (``V4<float>`` of ``template <class T> using V4 = vec<T, 4>;``), else None
        (a class type is constructed as classes are, cxx_calls)."""
        if fn.type != "template_function":
            return None
        ent = self.lookup(self.text(fn.child_by_field_name("name")).strip())
        if not isinstance(ent, AliasTemplate):
            return None
        t = self.alias(ent, self.template_args(fn.child_by_field_name("arguments").named_children), fn)
        return t if isinstance(t, (T.ScalarType, T.VectorType)) else None

    def call(self, node, stmt=False):
        sp = self.sp(node)
        fn = node.child_by_field_name("function")
        argn = node.child_by_field_name("arguments").named_children
        cast = self.paren_type(fn)
        if cast is not None:          # (uint)(n * m), (T)(-1e30f): a C cast the grammar read as a call
            if len(argn) != 1:
                self.type_err(node, f"({cast.msl})(...) casts one value")
            return self.cast_to(cast, [self.expr(argn[0])], node)
        if fn.type == "parenthesized_expression" and len(fn.named_children) == 1 \
                and fn.named_children[0].type in ("identifier", "qualified_identifier"):
            fn = fn.named_children[0]           # `(f)(x)` calls f
        name = self.callee_name(fn)
        targs = []
        if fn.type == "template_function":
            targs = fn.child_by_field_name("arguments").named_children
        elif fn.type == "qualified_identifier" and fn.child_by_field_name("name").type == "template_function":
            targs = fn.child_by_field_name("name").child_by_field_name("arguments").named_children
        # casts and constructors
        if name in ("static_cast", "reinterpret_cast", "as_type", "bit_cast"):
            if len(targs) != 1 or len(argn) != 1:
                self.type_err(node, f"{name}<T>(x) takes one type and one value")
            if self.ptr_rank(node) is not None:
                self.type_err(node, f"'{self.quote(node)}' is a pointer, not a value",
                              hint="index it (p[i]) or dereference it (*p)")
            if self.reference_cast(targs[0]):            # reinterpret_cast<thread T&>(x) (cxx_assign)
                return self.ref_cast_value(targs[0], argn[0], node)
            t, _ = self.resolve_type(_type_of_descriptor(targs[0]))
            if name == "static_cast":
                return self.cast_to(t, [self.value_as(argn[0], t)], node)
            if name == "reinterpret_cast":
                self.type_err(node, "reinterpret_cast of a value: use as_type<T>(x) to reinterpret bits")
            return self.sem.bitcast(t, self.expr(argn[0]), sp)
        limits = self.numeric_limits(fn, argn, node)
        if limits is not None:
            return limits
        if fn.type in ("primitive_type", "identifier", "type_identifier", "sized_type_specifier") \
                and self.is_type_name(fn) and self.lookup(name) is None or isinstance(self.lookup(name), _TypeName) \
                or fn.type == "qualified_identifier" and _is_vote_t(self.text(fn)):   # simd_vote::vote_t(v)
            t, _ = self.resolve_type(fn)
            if not argn and isinstance(t, ComplexType):
                return self.complex_construct([], node)
            if not argn and isinstance(t, (T.ScalarType, T.VectorType)):
                return self.sem.const(0, t, sp) if isinstance(t, T.ScalarType) else \
                    self.sem.vector(t, [self.sem.const(0, t.elem, sp)], sp)
            return self.cast_to(t, [self.value_as(a, t) if len(argn) == 1 else self.expr(a) for a in argn], node)
        if self.type_template_call(fn):     # vec<float, 4>(x), simdgroup_matrix<float, 8, 8>(0): constructors
            t, _ = self.resolve_type(fn)
            return self.cast_to(t, [self.value_as(a, t) if len(argn) == 1 else self.expr(a) for a in argn], node)
        t = self.alias_template_value_type(fn)
        if t is not None:                   # V4<float>(x) with template <class T> using V4 = vec<T, 4>;
            return self.cast_to(t, [self.value_as(a, t) if len(argn) == 1 else self.expr(a) for a in argn], node)
        if name in ("sincos", "modf", "frexp") and len(argn) == 2:
            return self.out_param_math(name, argn, node)
        if name in ("simd_shuffle_and_fill_down", "simd_shuffle_and_fill_up"):
            return self.shuffle_and_fill(name, argn, node)
        if name in _CLANG_BIT_BUILTINS and len(argn) == 1 and name not in self.funcdefs:
            # clang's __builtin_ctz & co. (MLX's hadamard.h: constexpr short logR = __builtin_ctz(R)):
            # Metal's ctz/clz/popcount of the unsigned argument, as an int
            fn_name, width = _CLANG_BIT_BUILTINS[name]
            v = self.sem.convert(self.expr(argn[0]), width, self.sp(node))
            return self.sem.convert(self.sem.builtin(fn_name, [v], self.sp(node)), T.int32, self.sp(node))
        if name == "make_uniform" and len(argn) == 1 and "make_uniform" not in self.funcdefs:
            return self.expr(argn[0])           # Metal's uniform<T> is its T here (translator.resolve_type)
        if name == "simd_active_threads_mask" and not argn:
            # the lanes that run this call: a ballot every active lane votes for
            return self.sem.builtin("simd_ballot", [self.sem.const(True, T.bool_, sp)], sp)
        if name in MATRIX_CALLS:
            return self.matrix_call(name, argn, targs, node, stmt)
        r = self.cxx_call(node, fn, argn, stmt)         # member functions, objects (cxx_calls)
        if r is not NOT_MINE:
            return r
        if fn.type == "field_expression" and self.elements_call(node):
            return self.elements_value(node)
        if name in ("threadgroup_barrier", "simdgroup_barrier"):
            if not stmt:
                self.type_err(node, f"{name} is a statement, not a value")
        if name in _ATOMIC_FNS:
            return self.atomic(name, argn, node, stmt)
        if name in UTILS and (name not in self.funcdefs or self.util_applies(name, argn)):
            return self.util(name, argn, node, targs)
        key = self.header_key(fn, name)
        if key is not None and not self.builtin_wins(key, name, argn):
            return self.user_call(key, argn, targs, node)
        if name == "select" and len(argn) == 3:
            a, b, c = (self.expr(x) for x in argn)
            if isinstance(c.type, T.VectorType):
                return self.select_components(a, b, c, node)
            return self.sem.select(c, b, a, sp)
        if name in ("all", "any") and len(argn) == 1:
            # Metal's relational all(bool4) / any(bool4) (the SIMD votes are simd_all/simd_any)
            v = self.expr(argn[0])
            if isinstance(v.type, T.VectorType):
                v = self.sem.once(v, sp)
                e = None
                for c in range(v.type.n):
                    comp = self.sem.to_bool(self.sem.vector_index(v, c, sp), sp)
                    e = comp if e is None else self.sem.logical("and" if name == "all" else "or", e, comp, sp)
                return e
            return self.sem.to_bool(v, sp)
        if name == "dot" and len(argn) == 2:
            a, b = (self.expr(x) for x in argn)
            if not isinstance(a.type, T.VectorType):
                self.type_err(node, "dot needs vectors")
            t = self.sem.common_type(a.type, b.type, sp)
            a, b = self.sem.convert(a, t), self.sem.convert(b, t)
            e = None
            for c in range(t.n):
                p = self.sem.binop("*", self.sem.vector_index(a, c, sp), self.sem.vector_index(b, c, sp), sp)
                e = p if e is None else self.sem.binop("+", e, p, sp)
            return e
        b = registry.lookup(self.text(fn).replace(" ", "").removeprefix("::") if fn.type != "template_function"
                            else name)
        if b is None and registry.lookup(name) is not None and registry.lookup(name).kind != "node":
            self.type_err(fn, f"Metal has no {self.text(fn).replace(' ', '')}; {name} has no precise:: or "
                              "fast:: variant", hint=f"write metal::{name}")
        if b is not None and b.kind in ("call", "simd"):
            args = [self.expr(a) for a in argn]
            for a, n in zip(args, argn):
                if a.type is None:
                    self.type_err(n, "this has no value (void)")
                if is_complex(a):
                    self.type_err(n, f"{self.text(fn).strip()} of a complex64_t: Metal's {b.name} takes no "
                                     "complex64_t (MLX's struct converts to every scalar type, so the call is "
                                     "ambiguous and Metal rejects it)",
                                  hint="compute on z.real and z.imag, e.g. metal::sqrt(z.real * z.real + "
                                       "z.imag * z.imag) for |z|")
            return self.sem.builtin(b.name, args, sp)
        if isinstance(self.lookup(name), (ir.Var, Buf)):
            self.type_err(node, f"'{name}' is not a function")
        if name.startswith(("simdgroup_", "quad_", "simd_")) or name in (
                "atomic_thread_fence", "printf", "os_log") or name in _METAL_UNSUPPORTED:
            self.unsupported(node, f"'{name}'")
        raise KernelNameError(f"use of undeclared function '{name}'", sp,
                              hint="define it in header=, or check the spelling of the Metal builtin")

    def shuffle_and_fill(self, name, argn, node):
        """Metal's ``simd_shuffle_and_fill_down/up(data, filling, delta[, modulo])`` as two
        index shuffles and a select. The SIMD-group splits into segments of ``modulo`` lanes
        (32 when left out); lane l of a segment reads ``data`` from segment lane l + delta
        (down) / l - delta (up), and where that falls past the segment's end (before its
        start) it reads ``filling`` from segment lane l + delta - modulo (l - delta + modulo)::

            v = simd_shuffle_and_fill_down(x[i], 0.0f, 4);   // the top 4 lanes get 0
        """
        sp = self.sp(node)
        S = self.sem
        if len(argn) not in (3, 4):
            self.type_err(node, f"{name}(data, filling_data, delta[, modulo]) takes 3 or 4 arguments")
        data = S.once(self.expr(argn[0]), sp)
        fill = S.once(S.convert(self.expr(argn[1]), data.type), sp)
        u = T.uint32
        delta = S.once(S.convert(self.expr(argn[2]), u), sp)
        mod = S.once(S.convert(self.expr(argn[3]), u), sp) if len(argn) == 4 else S.const(32, u, sp)
        lane = S.thread_attr("thread_index_in_simdgroup", sp)
        li = S.once(S.binop("%", lane, mod, sp), sp)           # the lane's place in its segment
        base = S.once(S.binop("-", lane, li, sp), sp)
        if name.endswith("down"):
            j = S.once(S.binop("+", li, delta, sp), sp)
            inside = S.binop("<", j, mod, sp)
            src_data = S.binop("+", base, j, sp)
            src_fill = S.binop("-", S.binop("+", base, j, sp), mod, sp)
        else:
            inside = S.binop(">=", li, delta, sp)
            src_data = S.binop("-", lane, delta, sp)
            src_fill = S.binop("-", S.binop("+", base, S.binop("+", li, mod, sp), sp), delta, sp)
        # both shuffles run on every lane (a select would run each only where it is taken, and
        # a shuffle reading a lane that does not run it is undefined)
        a = S.once(S.builtin("simd_shuffle", [data, src_data], sp), sp)
        b = S.once(S.builtin("simd_shuffle", [fill, src_fill], sp), sp)
        return S.select(inside, a, b, sp)

    def out_param_math(self, name, argn, node):
        """Metal's math functions with an out-parameter: ``sincos(x, c)`` (sin x, and c =
        cos x), ``modf(x, ip)`` (the fraction, and ip = trunc x) and ``frexp(x, e)`` (the
        mantissa, and e the exponent), the last two from ``semantics.float_parts``."""
        sp = self.sp(node)
        x = self.sem.once(self.expr(argn[0]), sp)
        if name == "sincos":
            second, result = self.sem.builtin("cos", [x], sp), self.sem.builtin("sin", [x], sp)
        elif name == "modf":
            result, second = modf_parts(self.sem, x, sp)
        else:
            if not (isinstance(x.type, T.ScalarType) and x.type.is_float):
                self.unsupported(node, f"frexp of a {x.type.name} (metalbench has it for one float)")
            result, second = frexp_parts(self.sem, x, sp)
        for st in self.assign(argn[1], None, None, sp, rhs=second):
            self.emit_pre(st, sp)
        return result

    def select_components(self, a, b, c, node):
        """``select(a, b, c)`` with a boolean vector ``c``: component k is ``c[k] ? b[k] : a[k]``."""
        sp = self.sp(node)
        n = c.type.n
        t = a.type if a.type == b.type else self.sem.common_type(a.type, b.type, sp)
        if not isinstance(t, T.VectorType) or t.n != n:
            self.type_err(node, f"select(a, b, c) with a {c.type.name} condition needs {n}-vectors a and b")
        a, b, c = (self.sem.once(self.sem.convert(v, w, sp), sp) for v, w in ((a, t), (b, t), (c, c.type)))
        comps = [self.sem.select(self.sem.vector_index(c, k, sp), self.sem.vector_index(b, k, sp),
                                 self.sem.vector_index(a, k, sp), sp) for k in range(n)]
        return self.vec_cons(t, comps, node)

    def numeric_limits(self, fn, argn, node):
        """``metal::numeric_limits<T>::infinity()`` & co.: a constant of type T, or None
        when ``fn`` is not such a member."""
        if fn.type != "qualified_identifier":
            return None
        while fn.type == "qualified_identifier" and fn.child_by_field_name("scope") is not None \
                and fn.child_by_field_name("scope").type == "namespace_identifier":
            fn = fn.child_by_field_name("name")
        scope = fn.child_by_field_name("scope") if fn.type == "qualified_identifier" else None
        if scope is None or scope.type != "template_type" or \
                self.text(scope.child_by_field_name("name")).strip() != "numeric_limits":
            return None
        member = self.text(fn.child_by_field_name("name")).strip()
        targs = scope.child_by_field_name("arguments").named_children
        t, _ = self.resolve_type(_type_of_descriptor(targs[0])) if len(targs) == 1 else (None, False)
        if not isinstance(t, T.ScalarType) or t.is_bool:
            self.type_err(scope, "numeric_limits<T> needs a scalar number type")
        v = _limit(t, member)
        if v is None:
            self.unsupported(node, f"numeric_limits<{t.msl}>::{member}()")
        if argn:
            self.type_err(node, f"numeric_limits<{t.msl}>::{member}() takes no arguments")
        return self.sem.const(v, t, self.sp(node))

    def atomic(self, name, argn, node, stmt):
        sp = self.sp(node)
        op = _ATOMIC_FNS[name]
        if not argn:
            self.type_err(node, f"{name} needs a pointer to an atomic element, e.g. &out[i]")
        if self.ptr_rank(argn[0]) != 0:
            self.type_err(argn[0], f"{name} needs a pointer to an atomic element, e.g. &out[i]")
        view = self.pointer(argn[0])
        if not view.atomic and not (view.space == "device" and self.use_of_output(view.buf, "atomic", name, sp)):
            self.type_err(argn[0], f"'{view.buf}' is not atomic",
                          hint="pass atomic_outputs=True to metal_kernel" if view.space == "device"
                          else "declare it as threadgroup atomic<T>")
        bname, idx = self.sem.view_address(view, ir.Const(0, T.int32, span=sp), sp)
        buf = Buf(bname, view.elem, view.space, atomic=True)
        t = buf.elem
        self.sem.check_atomic(op, t, buf.space, buf.name, sp, who=name)
        if op == "load":
            return self.sem.atomic("load", buf.name, t, buf.space, idx, [], sp, who=name)
        if op == "cas":
            if len(argn) < 3:
                self.type_err(node, f"{name}(object, &expected, desired, order, order)")
            exp_node = argn[1]
            if not (exp_node.type == "pointer_expression" and self.text(exp_node).lstrip().startswith("&")):
                self.type_err(exp_node, "the expected value is passed by address: &expected")
            evar = self.expr(exp_node.child_by_field_name("argument"))
            if not isinstance(evar, ir.Var):
                self.unsupported(exp_node, "an expected value that is not a local variable")
            desired = self.expr(argn[2])
            old = self.new_tmp(t, self.sem.atomic("cas", buf.name, t, buf.space, idx, [evar, desired], sp,
                                                  who=name), sp)
            ok = self.new_tmp(T.bool_, self.sem.binop("==", old, self.sem.convert(evar, t), sp), sp)
            self.emit_pre(ir.Assign(evar, self.sem.convert(old, evar.type), span=sp), sp)
            return ok
        if len(argn) < 2:
            self.type_err(node, f"{name} needs a value")
        return self.sem.atomic(op, buf.name, t, buf.space, idx, [self.expr(argn[1])], sp, who=name)


# Metal library functions the simulator does not have: named as such, not as undeclared
_CLANG_BIT_BUILTINS = {f"__builtin_{f}{sfx}": (f, t) for f in ("ctz", "clz", "popcount")
                       for sfx, t in (("", T.uint32), ("l", T.uint64), ("ll", T.uint64))}

_METAL_UNSUPPORTED = frozenset({"abs_diff", "hadd", "rhadd", "addsat", "subsat", "madhi", "madsat", "mad24",
                                "mul24", "determinant", "transpose", "pack_float_to_unorm4x8",
                                "unpack_unorm4x8_to_float", "pack_half_to_unorm2x16", "get_num_samples",
                                "discard_fragment", "dfdx", "dfdy", "fwidth"})


def _limit(t, member):
    """The value of ``numeric_limits<t>::member()`` (None: not a member metalbench knows)."""
    import numpy as np
    if t.is_float:
        import ml_dtypes
        fi = ml_dtypes.finfo(t.np) if t == T.bfloat16 else np.finfo(t.np)
        table = {"infinity": float("inf"), "quiet_NaN": float("nan"), "signaling_NaN": float("nan"),
                 "max": float(fi.max), "lowest": float(-fi.max), "min": float(fi.smallest_normal),
                 "epsilon": float(fi.eps), "denorm_min": float(fi.smallest_subnormal), "round_error": 0.5}
    else:
        ii = np.iinfo(t.np)
        table = {"max": int(ii.max), "min": int(ii.min), "lowest": int(ii.min), "epsilon": 0, "infinity": 0,
                 "quiet_NaN": 0, "signaling_NaN": 0, "denorm_min": 0, "round_error": 0}
    return table.get(member)
