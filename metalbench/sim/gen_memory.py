"""Memory access for the simulator's code generator (a mixin of :class:`metalbench.sim.codegen.Gen`):
loads, stores and atomics on device, constant, threadgroup and thread memory, with the
checked mode's hooks (bounds, races) and the fast paths (slices for lane-linear
addresses, precomputed threadgroup addresses in loops).
"""
from __future__ import annotations

import numpy as np

from .. import ir
from .. import types as T
from .debug import cov_lin, cov_store
from .gen_expr import _pure


class MemoryAccess:
    """Loads, stores, atomics and buffer arguments of device functions."""

    def _buf(self, name):
        b = self.scope.bufs.get(name)
        if b is None:
            raise NotImplementedError(f"simulator: unknown buffer or array {name!r}")
        return b

    @staticmethod
    def _tg_index(index):
        """A threadgroup array's index as the simulator adds it to each lane's group base
        (``_gb``, int64): a 64-bit unsigned index (``(size_t)sg * N + i``) read as int64.
        NumPy turns int64 + uint64 into float64, which no array takes as an address; an
        index past 2**63 becomes negative, outside the array either way."""
        t = index.type
        if isinstance(t, T.ScalarType) and t.is_int and t.bits == 64 and not t.is_signed:
            return ir.Cast(T.int64, index)
        return index

    def _check(self, kind, py, size, idx, k, val=None):
        if not self.checked:
            return
        # the storage and absolute address let the checker track races per element; a
        # store's value tells same-value writes (a warning) from races
        v = f", val={val}" if isinstance(val, str) else ""
        if kind == "ref":
            self.emit(f"_ck.acc_ref({k}, {py}, {idx}, {self.m}{v})")
        elif kind == "dev":
            self.emit(f"_ck.acc({k}, {idx}, {size}, {self.m}, {py}, {idx}{v})")
        elif kind == "tg":
            a = self.tmp(f"_gb{size} + {idx}", "a")  # one address array for check and access
            self.emit(f"_ck.acc({k}, {idx}, {size}, {self.m}, {py}, {a}{v})")
            return a
        elif kind == "loc" and (val is None or isinstance(val, str)):
            # bounds, and which elements each thread has written (``val``: a copy's source)
            src = "" if val is None else f", {val}"
            self.emit(f"_ck.acc_loc({k}, {py}, {idx}, {size}, {self.m}{src})")
        else:
            self.emit(f"_ck.acc({k}, {idx}, {size}, {self.m})")

    def _loc_copy(self, s, kind):
        """A store of an element of a thread-local array into one (an object's copy,
        ``S t = s``, or ``a[p] = a[p - 1]``): the source's load is not checked, the destination
        element is written when the source element was (``"(array, index)"``). A source index
        that cannot be evaluated twice (a load, a call) leaves the load checked as a read (None):
        marking the destination written without looking would hide an unwritten element
        shifted along the array (an insertion sort's tail)."""
        e = s.value
        if not (self.checked and kind == "loc" and isinstance(e, ir.Load)):
            return None
        src = self.scope.bufs.get(e.buf)
        if src is None or src[0] != "loc":
            return None
        if not _pure(e.index, True):
            return None
        self.untracked.add(id(e))
        return f"({src[1]}, {self.ex(e.index)})"

    def _check_align(self, e, kind, py, elem, k):
        """Checked mode: a vector access Metal requires aligned (``e.vector``, see
        ``ir.Load``) at an address that may not be: the checker warns per thread."""
        if not self.checked or getattr(e, "vector", None) is None:
            return
        t, align = e.vector
        idx = self._index(e.index)
        rel = f"({py}.off + {idx})" if kind == "ref" else idx
        name = f"{py}.name" if kind == "ref" else repr(self.view_roots.get(e.buf, e.buf))
        self.emit(f"_ck.align({k}, {rel}, {T.elem_of(elem).itemsize}, {align}, {self.m}, {t.msl!r}, {name})")

    def _check_lin(self, f, py, size, index, k, val=None):
        # proved contiguous and in bounds: the checker's O(1) path; else the general check
        if self.checked:
            ix = self.ex(index)
            v = f", val={val}" if isinstance(val, str) else ""
            self.emit(f"_ck.acc_lin({k}, {f[0]}, {size}, {self.m}, {py}{v}) if {self._lin_cond(f, size)} "
                      f"else _ck.acc({k}, {ix}, {size}, {self.m}, {py}, {ix}{v})")

    def _index(self, e):
        idx = self.ex(e)
        if self.checked and not idx.isidentifier():
            idx = self.tmp(idx, "x")
        return idx

    def _tg_rel(self, e, size):
        """The index ``e`` into a threadgroup array of ``size`` elements per group, for an
        unchecked access: ``(rel, fast)``. ``rel`` is the index expression (the general
        access, :func:`~metalbench.sim.memory.ld_tg`, bounds-checks it per lane). In a loop,
        ``fast`` may be ``(addr, o, ok, a, s)``: the flat addresses, their first one when
        the lanes' addresses are ``o + lane`` (else None: a gather), and ``ok``, true when
        every lane's index is inside the array (found once per loop entry or with a scalar
        test); else the index is ``a + s`` (``a`` a lane vector, ``s`` an int) and a slice
        is still taken when the *active* lanes' indices are inside. An invariant address
        is computed before the loop, and ``A + s`` (``A`` invariant, ``s`` uniform) becomes
        one add on a precomputed ``_gb + A``."""
        gb = f"_gb{size}"
        if not self.hoists or self.checked or self._hoisting:
            return self.ex(e), None
        h = self._invariant_ctx(e)
        if h is not None:
            iv = self._hoist(h, lambda: self.ex(e))
            hv = self._hoist(h, lambda: f"{gb} + {iv}")
            hb = self._hoist(h, lambda: f"_mem.inside_any({iv}, {size})")
            hc = self._hoist(h, lambda: f"_rt.contig({hv})")
            return iv, (hv, hc, hb, iv, "0")
        t = e.type
        if isinstance(e, ir.BinOp) and e.op in ("+", "-") and isinstance(t, T.ScalarType) and t.is_int \
                and e.a.type == t and e.b.type == t:
            pairs = [(e.a, e.b)] + ([(e.b, e.a)] if e.op == "+" else [])
            for a, b in pairs:
                ha = self._invariant_ctx(a)
                if ha is None or self.U.is_uniform(a) or not self.U.is_uniform(b):
                    continue
                an = self._hoist(ha, lambda: self.ex(a))
                gv = self._hoist(ha, lambda: f"{gb} + {an}")
                sp = self._hoist(ha, lambda: f"_rt.span({an})")
                gc = self._hoist(ha, lambda: f"_rt.contig({gv})")
                s = self.tmp(f"int({self.ex(b)})", "s")
                if e.op == "-":
                    s = self.tmp(f"-{s}", "s")
                # inside the array: the exact sum is in 0 .. size-1, so it did not wrap either
                ok = self.tmp(f"0 <= {sp}[0] + {s} and {sp}[1] + {s} < {size}", "ok")
                o = self.tmp(f"(({gc} + {s}) if {gc} is not None else None)", "o")
                return self.ex(e), (f"({gv} + {s})", o, ok, an, s)
        return self.ex(e), None

    def _tg_fast(self, fast, size, general):
        """The access through ``fast`` (see :meth:`_tg_rel`): ``general(o)`` is the helper
        call taking the slice start (or None), ``py.take``/``st`` on the addresses when
        every lane is inside; a slice when only the active lanes are."""
        addr, o, ok, a, s = fast
        act = f"({o} if {o} is not None and _mem.inside_active({a}, {s}, {size}, {self.m}) else None)"
        return general(o, addr), general(act, None), ok

    def load(self, e):
        kind, py, size, space, elem = self._buf(e.buf)
        k = self.node(e, e.buf, space, "read")
        self._check_align(e, kind, py, elem, k)
        if self.lin_on and kind in ("dev", "glob"):
            f = self._lin(e.index)
            if f is not None:
                self._check_lin(f, py, size, e.index, k)
                return self.tmp(f"_mem.ld_lin({py}, {f[0]}, _L, {self.m}) if {self._lin_cond(f, size)} "
                                f"else _mem.ld({py}, {self.ex(e.index)}, {self.m}, {k}, _ob)")
        index = self._tg_index(e.index) if kind == "tg" else e.index
        if kind == "tg" and not self.checked:
            rel, fast = self._tg_rel(index, size)
            general = f"_mem.ld_tg({py}, _gb{size}, {rel}, {size}, {self.m}, {k}, _ob)"
            if fast is None:
                return self.tmp(general)
            proven, active, ok = self._tg_fast(fast, size, lambda o, addr: (
                f"_mem.ld_seg({py}, {o}, _L, {self.m}, lambda: "
                + (f"{py}.take({addr}))" if addr is not None else f"{general})")))
            return self.tmp(f"({proven} if {ok} else {active})")
        idx = self._index(index)
        a = self._check("loc_bounds" if kind == "loc" and id(e) in self.untracked else kind, py, size, idx, k)
        if kind in ("dev", "glob"):
            return self.tmp(f"_mem.ld({py}, {idx}, {self.m}, {k}, _ob)")
        if kind == "tg":
            return self.tmp(f"_mem.ld({py}, {a}, {self.m}, {k}, _ob)")
        if kind == "loc":
            return self.tmp(f"_mem.ld_loc({py}, {idx}, {self.m}, _lane, {k}, _ob)")
        return self.tmp(f"_mem.ld_ref({py}, {idx}, {self.m}, {k}, _ob)")

    def store(self, s):
        kind, py, size, space, elem = self._buf(s.buf)
        k = self.node(s, s.buf, space, "write")
        self._check_align(s, kind, py, elem, k)
        if self.lin_on and kind in ("dev", "glob"):
            f = self._lin(s.index)
            if f is not None:
                idx = self.ex(s.index)
                v = self._name(self.tuple_or(self.ex(s.value)))
                self._check_lin(f, py, size, s.index, k, v)
                self.emit(f"if {self._lin_cond(f, size)}:")
                self.emit(f"    _mem.st_lin({py}, {f[0]}, _L, {v}, {self.m})")
                cov_lin(self, s.buf, f[0])
                self.emit("else:")
                self.emit(f"    _mem.st({py}, {idx}, {v}, {self.m}, {k}, _ob)")
                cov_store(self, s.buf, kind, space, 1)
                return
        index = self._tg_index(s.index) if kind == "tg" else s.index
        if kind == "tg" and not self.checked:
            rel, fast = self._tg_rel(index, size)
            if fast is None:
                self.emit(f"_mem.st_tg({py}, _gb{size}, {rel}, {size}, {self.ex(s.value)}, {self.m}, {k}, _ob)")
                return
            v = self._name(self.tuple_or(self.ex(s.value)))
            general = f"_mem.st_tg({py}, _gb{size}, {rel}, {size}, {v}, {self.m}, {k}, _ob)"
            proven, active, ok = self._tg_fast(fast, size, lambda o, addr: (
                f"_mem.st_seg({py}, {o}, _L, {v}, {self.m}, lambda: "
                + (f"_mem.st({py}, {addr}, {v}, {self.m}, {k}))" if addr is not None else f"{general})")))
            self.emit(f"if {ok}:")
            self.emit(f"    {proven}")
            self.emit("else:")
            self.emit(f"    {active}")
            return
        idx = self._index(index)
        copy = self._loc_copy(s, kind)
        v = self.ex(s.value)
        if self.checked and isinstance(v, str):
            v = self._name(v)
        a = self._check(kind, py, size, idx, k, copy if kind == "loc" else v)
        cov_store(self, s.buf, kind, space)
        if kind in ("dev", "glob"):
            self.emit(f"_mem.st({py}, {idx}, {v}, {self.m}, {k}, _ob)")
        elif kind == "tg":
            self.emit(f"_mem.st({py}, {a}, {v}, {self.m}, {k}, _ob)")
        elif kind == "loc":
            self.emit(f"_mem.st_loc({py}, {idx}, {v}, {self.m}, _lane, {k}, _ob)")
        else:
            self.emit(f"_mem.st_ref({py}, {idx}, {v}, {self.m}, {k}, _ob)")

    def atomic(self, e, used=True):
        kind, py, size, space, _ = self._buf(e.buf)
        k = self.node(e, e.buf, space, "atomic")
        idx = self._index(self._tg_index(e.index) if kind == "tg" else e.index)
        if not idx.isidentifier():
            idx = self.tmp(idx, "x")
        args = [self.ex(a) for a in e.args]
        a_ = self._check(kind, py, size, idx, k)
        # (storage, flat address, index within the array, the array's size)
        if kind == "tg":
            data, addr, rel, n = py, a_ or f"_gb{size} + {idx}", idx, size
        elif kind == "ref":
            data, addr, rel, n = f"{py}.flat", f"{py}.addr({idx})", f"{py}.off + {idx}", f"{py}.n"
        elif kind == "loc":
            data, addr, rel, n = f"{py}.reshape(-1)", f"{idx} * _L + _lane", idx, size
        else:
            data, addr, rel, n = py, idx, "None", "None"
        cov_store(self, e.buf, kind, space)
        call = (f"_at.atomic({e.op!r}, {data}, {addr}, [{', '.join(args)}], {self.m}, _L, {k}, {used}, "
                f"{rel}, {n}, _ob)")
        if used:
            return self.tmp(call)
        self.emit(call)
        return None

    def bufarg(self, a: ir.BufArg):
        kind, py, size, space, _ = self._buf(a.buf)
        off = None
        if a.offset is not None:
            off = self.ex(self._tg_index(a.offset) if kind == "tg" else a.offset)
        if kind == "ref":
            return f"{py}.shifted({off})" if off is not None else py
        o = off if off is not None else "0"
        if kind in ("dev", "glob"):
            return f"_mem.BufRef({py}, 0, {o}, 1, {size}, {a.buf!r}, {space!r})"
        if kind == "tg":
            return f"_mem.BufRef({py}, _gb{size}, {o}, 1, {size}, {a.buf!r}, 'threadgroup')"
        return f"_mem.BufRef({py}.reshape(-1), _lane, {o}, _L, {size}, {a.buf!r}, 'thread')"
