"""Memory access for the simulator's code generator (a mixin of :class:`metalbench.sim.codegen.Gen`):
loads, stores and atomics on device, constant, threadgroup and thread memory, with the
checked mode's hooks (bounds, races) and the fast paths (slices for lane-linear
addresses, precomputed threadgroup addresses in loops).
"""
from __future__ import annotations

import numpy as np

from .. import ir
from .. import types as T


class MemoryAccess:
    """Loads, stores, atomics and buffer arguments of device functions."""

    def _buf(self, name):
        b = self.scope.bufs.get(name)
        if b is None:
            raise NotImplementedError(f"simulator: unknown buffer or array {name!r}")
        return b

    def _check(self, kind, py, size, idx, k):
        if not self.checked:
            return
        # the storage and absolute address let the checker track races per element
        if kind == "ref":
            self.emit(f"_ck.acc_ref({k}, {py}, {idx}, {self.m})")
        elif kind == "dev":
            self.emit(f"_ck.acc({k}, {idx}, {size}, {self.m}, {py}, {idx})")
        elif kind == "tg":
            a = self.tmp(f"_gb{size} + {idx}", "a")  # one address array for check and access
            self.emit(f"_ck.acc({k}, {idx}, {size}, {self.m}, {py}, {a})")
            return a
        else:
            self.emit(f"_ck.acc({k}, {idx}, {size}, {self.m})")

    def _check_lin(self, f, py, size, index, k):
        # proved contiguous and in bounds: the checker's O(1) path; else the general check
        if self.checked:
            ix = self.ex(index)
            self.emit(f"_ck.acc_lin({k}, {f[0]}, {size}, {self.m}, {py}) if {self._lin_cond(f, size)} "
                      f"else _ck.acc({k}, {ix}, {size}, {self.m}, {py}, {ix})")

    def _index(self, e):
        idx = self.ex(e)
        if self.checked and not idx.isidentifier():
            idx = self.tmp(idx, "x")
        return idx

    def _tg_addr(self, e, size):
        """The flat address of element ``e`` of a threadgroup array in each lane's group.
        In a loop, an invariant address is computed before it, and ``A + s`` (``A``
        invariant, ``s`` uniform) becomes one add on a precomputed ``_gb + A`` when
        ``A + s`` provably does not wrap (else the exact wrapped form)."""
        gb = f"_gb{size}"
        # returns (address, o): o an expression for an int (or None) such that the
        # addresses are o + lane (found once per loop entry): the access can be a slice
        if not self.hoists or self.checked or self._hoisting:
            return f"{gb} + {self.ex(e)}", None
        h = self._invariant_ctx(e)
        if h is not None:
            hv = self._hoist(h, lambda: f"{gb} + {self.ex(e)}")
            hc = self._hoist(h, lambda: f"_rt.contig({hv})")
            return hv, hc
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
                info = np.iinfo(t.np)
                s = self.tmp(f"int({self.ex(b)})", "s")
                if e.op == "-":
                    s = self.tmp(f"-{s}", "s")
                ok = self.tmp(f"{info.min} <= {sp}[0] + {s} and {sp}[1] + {s} <= {info.max}", "ok")
                return (f"(({gv} + {s}) if {ok} else {gb} + {self.ex(e)})",
                        f"(({gc} + {s}) if {ok} and {gc} is not None else None)")
        return f"{gb} + {self.ex(e)}", None

    def load(self, e):
        kind, py, size, space, _ = self._buf(e.buf)
        k = self.node(e, e.buf, space, "read")
        if self.lin_on and kind in ("dev", "glob"):
            f = self._lin(e.index)
            if f is not None:
                self._check_lin(f, py, size, e.index, k)
                return self.tmp(f"_mem.ld_lin({py}, {f[0]}, _L, {self.m}) if {self._lin_cond(f, size)} "
                                f"else _mem.ld({py}, {self.ex(e.index)}, {self.m}, {k})")
        if kind == "tg" and not self.checked:
            addr, o = self._tg_addr(e.index, size)
            if o is None:
                return self.tmp(f"_mem.ld({py}, {addr}, {self.m}, {k})")
            return self.tmp(f"_mem.ld_seg({py}, {o}, _L, {self.m}, {k}, lambda: {addr})")
        idx = self._index(e.index)
        a = self._check(kind, py, size, idx, k)
        if kind in ("dev", "glob"):
            return self.tmp(f"_mem.ld({py}, {idx}, {self.m}, {k})")
        if kind == "tg":
            return self.tmp(f"_mem.ld({py}, {a or f'_gb{size} + {idx}'}, {self.m}, {k})")
        if kind == "loc":
            return self.tmp(f"_mem.ld_loc({py}, {idx}, {self.m}, _lane, {k})")
        return self.tmp(f"_mem.ld_ref({py}, {idx}, {self.m}, {k})")

    def store(self, s):
        kind, py, size, space, _ = self._buf(s.buf)
        k = self.node(s, s.buf, space, "write")
        if self.lin_on and kind in ("dev", "glob"):
            f = self._lin(s.index)
            if f is not None:
                idx = self.ex(s.index)
                v = self._name(self.tuple_or(self.ex(s.value)))
                self._check_lin(f, py, size, s.index, k)
                self.emit(f"if {self._lin_cond(f, size)}:")
                self.emit(f"    _mem.st_lin({py}, {f[0]}, _L, {v}, {self.m})")
                self.emit("else:")
                self.emit(f"    _mem.st({py}, {idx}, {v}, {self.m}, {k})")
                return
        if kind == "tg" and not self.checked:
            addr, o = self._tg_addr(s.index, size)
            if o is None:
                self.emit(f"_mem.st({py}, {addr}, {self.ex(s.value)}, {self.m}, {k})")
                return
            v = self.tuple_or(self.ex(s.value))
            self.emit(f"_mem.st_seg({py}, {o}, _L, {v}, {self.m}, {k}, lambda: {addr})")
            return
        idx = self._index(s.index)
        v = self.ex(s.value)
        a = self._check(kind, py, size, idx, k)
        if kind in ("dev", "glob"):
            self.emit(f"_mem.st({py}, {idx}, {v}, {self.m}, {k})")
        elif kind == "tg":
            self.emit(f"_mem.st({py}, {a or f'_gb{size} + {idx}'}, {v}, {self.m}, {k})")
        elif kind == "loc":
            self.emit(f"_mem.st_loc({py}, {idx}, {v}, {self.m}, _lane, {k})")
        else:
            self.emit(f"_mem.st_ref({py}, {idx}, {v}, {self.m}, {k})")

    def atomic(self, e, used=True):
        kind, py, size, space, _ = self._buf(e.buf)
        k = self.node(e, e.buf, space, "atomic")
        idx = self._index(e.index)
        args = [self.ex(a) for a in e.args]
        a_ = self._check(kind, py, size, idx, k)
        if kind == "tg":
            data, addr = py, a_ or f"_gb{size} + {idx}"
        elif kind == "ref":
            data, addr = f"{py}.flat", f"{py}.addr({idx})"
        elif kind == "loc":
            data, addr = f"{py}.reshape(-1)", f"{idx} * _L + _lane"
        else:
            data, addr = py, idx
        call = f"_at.atomic({e.op!r}, {data}, {addr}, [{', '.join(args)}], {self.m}, _L, {k}, {used})"
        if used:
            return self.tmp(call)
        self.emit(call)
        return None

    def bufarg(self, a: ir.BufArg):
        kind, py, size, space, _ = self._buf(a.buf)
        off = self.ex(a.offset) if a.offset is not None else None
        if kind == "ref":
            return f"{py}.shifted({off})" if off is not None else py
        o = off if off is not None else "0"
        if kind in ("dev", "glob"):
            return f"_mem.BufRef({py}, 0, {o}, 1, {size}, {a.buf!r}, {space!r})"
        if kind == "tg":
            return f"_mem.BufRef({py}, _gb{size}, {o}, 1, {size}, {a.buf!r}, 'threadgroup')"
        return f"_mem.BufRef({py}.reshape(-1), _lane, {o}, _L, {size}, {a.buf!r}, 'thread')"
