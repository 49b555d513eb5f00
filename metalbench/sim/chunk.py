"""Launch geometry: chunks of whole threadgroups and the thread attributes of their lanes.

Lane ``g * TG + t`` of a chunk is thread ``t`` (its ``thread_index_in_threadgroup``)
of the chunk's ``g``-th threadgroup, where ``TG`` is the dispatch threadgroup size.
An edge threadgroup of a grid that is not a multiple of the threadgroup is smaller:
its threads are linearised with its *actual* size (as Metal does) and the lanes past
its thread count do not exist (the chunk's base mask ``m0`` excludes them)::

    >>> lg = Launch((10, 1, 1), (4, 1, 1))
    >>> c = Chunk(lg, 0, lg.n_groups)
    >>> c.attr("thread_position_in_grid")[0].tolist()
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    >>> c.m0.tolist()[-4:]
    [True, True, False, False]
"""
from __future__ import annotations

import numpy as np

from .simd import SimdLayout

U32 = np.uint32
_GROUP_SIZE = ("threads_per_threadgroup", "simdgroups_per_threadgroup", "quadgroups_per_threadgroup")


def _u(x):
    return U32(x)


class Launch:
    """The geometry of one launch: grid and threadgroup (threads), group counts."""

    def __init__(self, grid, tg):
        self.grid = tuple(int(x) for x in grid)
        self.tg = tuple(int(x) for x in tg)
        self.ngrp = tuple(-(-g // t) for g, t in zip(self.grid, self.tg))
        self.n_groups = self.ngrp[0] * self.ngrp[1] * self.ngrp[2]
        self.TG = self.tg[0] * self.tg[1] * self.tg[2]
        self.even = all(g % t == 0 for g, t in zip(self.grid, self.tg))
        self.linear = self.tg[1] == self.tg[2] == 1 and self.grid[1] == self.grid[2] == 1
        self._cache: dict = {}

    def cached(self, key, make):
        """Lane arrays shared by the chunks of one size (never written in place)."""
        v = self._cache.get(key)
        if v is None:
            v = self._cache[key] = make()
        return v

    def uniform(self, name):
        """The value of a grid-uniform attribute (a scalar or a 3-tuple of scalars)."""
        tx, ty, tz = self.tg
        if name in ("grid_size", "threads_per_grid"):
            return tuple(_u(x) for x in self.grid)
        if name == "grid_origin":
            return (_u(0), _u(0), _u(0))
        if name == "threadgroups_per_grid":
            return tuple(_u(x) for x in self.ngrp)
        if name in ("dispatch_threads_per_threadgroup", "threads_per_threadgroup"):
            return (_u(tx), _u(ty), _u(tz))
        if name in ("thread_execution_width", "threads_per_simdgroup"):
            return _u(32)
        if name in ("dispatch_simdgroups_per_threadgroup", "simdgroups_per_threadgroup"):
            return _u(-(-self.TG // 32))
        if name in ("dispatch_quadgroups_per_threadgroup", "quadgroups_per_threadgroup"):
            return _u(-(-self.TG // 4))
        return None


class Chunk:
    """``G`` whole threadgroups starting at linear group ``g0``; attributes are computed
    on first use."""

    def __init__(self, launch: Launch, g0: int, G: int):
        self.launch = launch
        self.g0, self.G = g0, G
        self.L = G * launch.TG
        self._attrs: dict = {}
        self._sg = None
        lg = launch
        if lg.even:
            self.m0 = None
            self.exist = None
        else:
            count = self._group_actual_count()
            t = self.t_lane
            ex = t < np.repeat(count, lg.TG)
            self.exist = ex
            self.m0 = None if ex.all() else ex

    # -- lane layout
    @property
    def lane(self):
        return self.launch.cached(("lane", self.L), lambda: np.arange(self.L))

    @property
    def t_lane(self):
        TG, G = self.launch.TG, self.G
        return self.launch.cached(("t", G), lambda: np.tile(np.arange(TG, dtype=U32), G))

    @property
    def g_lane(self):
        """The chunk-local threadgroup number of each lane."""
        TG, G = self.launch.TG, self.G
        return self.launch.cached(("g", G), lambda: np.repeat(np.arange(G, dtype=np.int64), TG))

    def gbase(self, size: int):
        """Per lane, the offset of its threadgroup's copy of a threadgroup array of ``size``."""
        return self.launch.cached(("gb", self.G, size), lambda: self.g_lane * size)

    def _group_ids(self):
        nx, ny, _ = self.launch.ngrp
        gid = self.g0 + np.arange(self.G, dtype=np.int64)
        return gid % nx, (gid // nx) % ny, gid // (nx * ny)

    def _group_actual(self):
        gi = self._group_ids()
        return tuple(np.minimum(t, g - i * t) for g, t, i in zip(self.launch.grid, self.launch.tg, gi))

    def _group_actual_count(self):
        ax, ay, az = self._group_actual()
        return ax * ay * az

    def simd(self) -> SimdLayout:
        """The simdgroup view of this chunk's lanes."""
        if self._sg is None:
            self._sg = SimdLayout(self.G, self.launch.TG, self.exist)
        return self._sg

    # -- attributes
    def attr(self, name):
        """The value of thread attribute ``name``: a scalar or lane vector, or a 3-tuple."""
        v = self._attrs.get(name)
        if v is None:
            v = self._attrs[name] = self._compute(name)
        return v

    def _rep(self, per_group):
        return np.repeat(np.asarray(per_group).astype(U32), self.launch.TG)

    def _compute(self, name):
        lg = self.launch
        u = lg.uniform(name)
        if u is not None and (lg.even or name not in _GROUP_SIZE):
            return u
        t = self.t_lane
        if name == "thread_index_in_threadgroup":
            return t
        if name == "thread_index_in_simdgroup":
            return lg.cached(("tis", self.G), lambda: t % U32(32))
        if name == "simdgroup_index_in_threadgroup":
            return lg.cached(("sig", self.G), lambda: t // U32(32))
        if name == "thread_index_in_quadgroup":
            return lg.cached(("tiq", self.G), lambda: t % U32(4))
        if name == "quadgroup_index_in_threadgroup":
            return lg.cached(("qig", self.G), lambda: t // U32(4))
        if name == "threadgroup_position_in_grid":
            return tuple(self._rep(i) for i in self._group_ids())
        if name == "threads_per_threadgroup":
            return tuple(self._rep(a) for a in self._group_actual())
        if name == "simdgroups_per_threadgroup":
            return self._rep(-(-self._group_actual_count() // 32))
        if name == "quadgroups_per_threadgroup":
            return self._rep(-(-self._group_actual_count() // 4))
        if name == "thread_position_in_threadgroup":
            return self._pos_in_tg()
        if name == "thread_position_in_grid":
            if lg.linear:
                ar = lg.cached(("ar", self.L), lambda: np.arange(self.L, dtype=U32))
                if self.g0 == 0:  # the first chunk's positions are the lane numbers: reused across launches
                    return (ar, U32(0), U32(0))
                return (U32(self.g0 * lg.TG) + ar, U32(0), U32(0))
            p = self._pos_in_tg()
            g = self.attr("threadgroup_position_in_grid")
            return tuple(gi * U32(ti) + pi for gi, ti, pi in zip(g, lg.tg, p))
        raise KeyError(f"unknown thread attribute {name}")

    def _pos_in_tg(self):
        lg = self.launch
        t = self.t_lane
        tx, ty, tz = lg.tg
        if lg.even:
            def make():
                return (t % U32(tx), (t // U32(tx)) % U32(ty), t // U32(tx * ty))
            return lg.cached(("pos", self.G), make)
        ax, ay, _ = self.attr("threads_per_threadgroup")
        return (t % ax, (t // ax) % ay, t // (ax * ay))

    def positions(self, lanes, limit=4):
        """``thread_position_in_grid`` of some lanes, for error messages."""
        p = self.attr("thread_position_in_grid")
        out = []
        for ln in list(lanes)[:limit]:
            out.append(tuple(int(c[ln]) if isinstance(c, np.ndarray) else int(c) for c in p))
        return out

    # -- arrays
    def tg_array(self, dt, size, init):
        """One copy per threadgroup of a threadgroup array, flat: ``(G, size)``."""
        if init is not None:
            return np.tile(_initial(init, dt, size), self.G)
        return np.zeros(self.G * size, dt)

    def local_array(self, dt, size, init):
        """One copy per lane of a thread-local array, as ``(size, lanes)``."""
        if init is not None:
            return np.repeat(_initial(init, dt, size)[:, None], self.L, axis=1)
        return np.zeros((size, self.L), dt)


def _initial(init, dt, size):
    # C initialiser lists may be shorter than the array: the rest is zero
    flat = np.asarray(init).reshape(-1)
    one = np.zeros(size, dt)
    one[:flat.size] = flat[:size]
    return one

