"""Loads and stores of lane vectors on device buffers, threadgroup and thread-local arrays.

Device buffers and threadgroup arrays are flat NumPy arrays addressed by an absolute
element index per lane (a threadgroup array of a chunk is ``(groups, size)`` flattened,
each lane adding its group's base). Thread-local arrays are ``(size, lanes)`` so that
an index that is the same for every lane (a loop counter) selects one contiguous row.

Inactive lanes never read or write: their addresses are replaced by 0 for gathers and
dropped for scatters. An active lane's address outside its buffer or array (negative
included: NumPy's wrap-around never applies) reads 0 and writes nothing, as on a GPU,
and is counted in the launch's :class:`OOBCount` (the unchecked launch warns with the
counts); without a counter it raises :class:`OutOfBounds`::

    >>> import numpy as np
    >>> d = np.arange(4.0, dtype=np.float32)
    >>> ld(d, np.array([3, 99]), np.array([True, False]), 0).tolist()
    [3.0, 0.0]
    >>> ob = OOBCount(); ob.L = 3
    >>> ld(d, np.array([-1, 2, 4], np.int32), None, 0, ob).tolist(), ob.counts
    ([0.0, 2.0, 0.0], {0: 2})
"""
from __future__ import annotations

import numpy as np


class OutOfBounds(Exception):
    """Raised by an access helper; the launcher turns it into a KernelCheckError."""

    def __init__(self, k: int, index, bad, n=None):
        super().__init__(k)
        self.k = k          # node number in the program's node table
        self.index = index  # the index per lane (or a scalar)
        self.bad = bad      # bool per lane (or None: every active lane)
        self.n = n          # the valid size, when known


class BufRef:
    """A buffer passed to a device function: ``flat[base + (off + i) * stride]`` is
    element ``i``; ``0 <= off + i < n`` is in bounds."""

    __slots__ = ("flat", "base", "off", "stride", "n", "name", "space")

    def __init__(self, flat, base, off, stride, n, name, space):
        self.flat, self.base, self.off, self.stride = flat, base, off, stride
        self.n, self.name, self.space = n, name, space

    def shifted(self, offset) -> "BufRef":
        """The same buffer seen from ``offset`` elements on (MSL ``p + offset``)."""
        return BufRef(self.flat, self.base, self.off + offset, self.stride, self.n, self.name, self.space)

    def viewed(self, dtype) -> "BufRef":
        """The same memory read as ``dtype`` elements (a reinterpreting pointer cast, see
        :func:`reinterpret`); offsets are rescaled to the new element size."""
        if not isinstance(self.stride, int) or self.stride != 1:
            raise NotImplementedError("simulator: reinterpreting a thread-local array")
        old, new = self.flat.dtype.itemsize, np.dtype(dtype).itemsize
        return BufRef(reinterpret(self.flat, dtype), self.base * old // new, self.off * old // new, 1,
                      self.n * old // new, self.name, self.space)

    def addr(self, i):
        if self.stride == 1:
            return self.base + (self.off + i)
        return self.base + (self.off + i) * self.stride

    def at(self, rel):
        """The address in ``flat`` of element ``rel`` of the buffer (``off`` included)."""
        return self.base + rel if self.stride == 1 else self.base + rel * self.stride


def reinterpret(data, dtype):
    """``data``'s storage read as elements of ``dtype`` (MSL ``(device uchar*)x``): a NumPy
    view, so stores through it change ``data``; bytes past the last whole element of
    ``dtype`` are not addressable.

    >>> reinterpret(np.array([0x04030201], np.uint32), np.uint8).tolist()
    [1, 2, 3, 4]
    """
    dt = np.dtype(dtype)
    raw = data.reshape(-1).view(np.uint8)
    return raw[:raw.size - raw.size % dt.itemsize].view(dt)


def bitcast(comps, src, dst) -> list:
    """``as_type``: the components ``comps`` (scalars or lane vectors of dtype ``src``) as
    bytes, read as components of dtype ``dst`` (uniform in, uniform out).

    >>> [hex(int(v)) for v in bitcast([np.float32(1.0)], np.float32, np.uint32)]
    ['0x3f800000']
    """
    arrs = [np.asarray(c, dtype=src) for c in comps]
    shape = np.broadcast_shapes(*(a.shape for a in arrs))
    raw = np.ascontiguousarray(np.stack([np.broadcast_to(a, shape) for a in arrs], axis=-1)).view(dst)
    if raw.ndim == 1:
        return [raw[k] for k in range(raw.shape[0])]
    return [raw[:, k].copy() for k in range(raw.shape[-1])]


class OOBCount:
    """Out-of-bounds accesses of one unchecked launch, per node of the program's node
    table (the accesses read 0 or were dropped). ``L`` is the current chunk's lane count
    (a uniform access by every lane counts once per lane)."""

    __slots__ = ("L", "counts", "example", "sizes", "names")

    def __init__(self):
        self.L = 0
        self.counts: dict = {}   # node -> number of lane accesses out of bounds
        self.example: dict = {}  # node -> the first bad index seen
        self.sizes: dict = {}    # node -> the size it was checked against
        self.names: dict = {}    # node -> the buffer, when not the node's (a function's parameter)

    def add(self, k, n_bad, example, size, name=None):
        if n_bad:
            self.counts[k] = self.counts.get(k, 0) + n_bad
            self.example.setdefault(k, int(example))
            self.sizes.setdefault(k, int(size))
            if name is not None:
                self.names.setdefault(k, name)


def _zero(data):
    return data.dtype.type(0)


# Signed lane addresses viewed unsigned: a negative address becomes a huge one, which
# take() and fancy indexing refuse (they would wrap it around, Python-style). 64-bit
# addresses have no such view (NumPy casts them back to intp): they are range-checked.
_UNSIGNED = {np.dtype(np.int8): np.dtype(np.uint8), np.dtype(np.int16): np.dtype(np.uint16),
             np.dtype(np.int32): np.dtype(np.uint32)}


def _nowrap(a):
    """``a`` (lane addresses) as NumPy will not wrap it, or None when a 64-bit one may wrap."""
    u = _UNSIGNED.get(a.dtype)
    if u is not None:
        return a.view(u)
    if a.dtype.itemsize == 8 and a.size and int(a.view(np.uint64).max()) >= 1 << 63:
        return None
    return a


def inside(rel, n) -> bool:
    """Whether every entry of the index vector ``rel`` is in ``0 .. n-1`` (one pass).

        >>> inside(np.array([0, 3], np.int32), 4), inside(np.array([-1], np.int32), 4)
        (True, False)
    """
    if not rel.size:
        return True
    u = _UNSIGNED.get(rel.dtype)
    if u is not None:
        return int(rel.view(u).max()) < n
    if rel.dtype.kind == "u":
        return int(rel.max()) < n
    return int(rel.min()) >= 0 and int(rel.max()) < n


def inside_any(v, n) -> bool:
    """:func:`inside` for a lane vector or a uniform scalar."""
    return inside(v, n) if isinstance(v, np.ndarray) else bool(0 <= v < n)


def inside_active(a, s, n, m) -> bool:
    """Whether ``a + s`` (``a`` lane vector or scalar, ``s`` an int) is in ``0 .. n-1`` on
    the active lanes of ``m`` (masked reductions: no per-lane index is computed)."""
    if m is False:
        return True
    if not isinstance(a, np.ndarray):
        return bool(0 <= a + s < n)
    if m is None:
        return inside_any(a, n - s) and (s >= 0 or inside_any(a + s, n))
    if not a.size or not m.any():
        return True
    info = np.iinfo(a.dtype)
    hi = int(np.max(a, where=m, initial=info.min))
    if hi + s >= n:
        return False
    return (a.dtype.kind == "u" and s >= 0) or int(np.min(a, where=m, initial=info.max)) + s >= 0


def _bad(rel, n, m):
    """The active lanes of ``m`` whose index ``rel`` is outside ``0 .. n-1``."""
    bad = rel >= n
    if rel.dtype.kind == "i":
        bad |= rel < 0
    if m is not None:
        bad &= m
    return bad


def _hit(ob, k, rel, bad, n, name=None):
    """Count the out-of-bounds lanes ``bad`` of node ``k`` (or raise without a counter);
    none (an inactive lane's index outside, as in ``if (i < n) t[n - 1 - i] = v``): nothing."""
    j = np.flatnonzero(bad)
    if not j.size:
        return
    if ob is None:
        raise OutOfBounds(k, rel, bad, n)
    ob.add(k, int(j.size), rel[j[0]], n, name)


def _hit_uniform(ob, k, rel, m, n, name=None):
    """A uniform index outside ``0 .. n-1``: every active lane's access is out of bounds."""
    if ob is None:
        raise OutOfBounds(k, rel, None if m is None else m, n)
    ob.add(k, ob.L if m is None else int(np.count_nonzero(m)), rel, n, name)


def _gather_out(data, rel, n, m, k, ob, at=None, name=None):
    """The general gather: out-of-bounds active lanes counted and read as 0. ``at`` maps
    in-bounds indices to addresses in ``data`` (default: the same)."""
    bad = _bad(rel, n, m)
    _hit(ob, k, rel, bad, n, name)
    if n == 0:
        return np.zeros(rel.shape, data.dtype)
    safe = np.where(bad, 0, rel)
    r = data.take(safe if at is None else at(safe))
    r[bad] = 0
    return r


def _scatter_out(data, rel, n, val, m, k, ob, at=None, name=None):
    """The general scatter: out-of-bounds active lanes counted and dropped."""
    bad = _bad(rel, n, m)
    _hit(ob, k, rel, bad, n, name)
    keep = ~bad if m is None else (m & ~bad)
    if not keep.any():
        return
    addr = (rel if at is None else at(rel))[keep]
    data[addr] = val[keep] if isinstance(val, np.ndarray) else val


def ld(data, addr, m, k, ob=None):
    """Gather ``data[addr]`` on the active lanes of ``m`` (0 elsewhere, and 0 where the
    address is outside ``data``)."""
    if m is False:
        return _zero(data)
    if isinstance(addr, np.ndarray):
        if m is not None:
            addr = np.where(m, addr, 0)
        a = _nowrap(addr)
        if a is not None:
            try:
                return data.take(a)
            except IndexError:
                pass
        return _gather_out(data, addr, data.size, m, k, ob)
    if 0 <= addr < data.size:
        return data[addr]
    _hit_uniform(ob, k, addr, m, data.size)
    return _zero(data)


def st(data, addr, val, m, k, ob=None):
    """Scatter ``val`` to ``data[addr]`` on the active lanes of ``m``; when several lanes
    write one address the last lane wins (a race on the GPU); addresses outside ``data``
    are dropped."""
    if m is False:
        return
    if isinstance(addr, np.ndarray):
        a = _nowrap(addr)
        if a is not None:
            try:
                if m is None:
                    data[a] = val
                else:
                    data[a[m]] = val[m] if isinstance(val, np.ndarray) else val
                return
            except IndexError:  # NumPy checks every index before it writes any
                pass
        _scatter_out(data, addr, data.size, val, m, k, ob)
        return
    if isinstance(val, np.ndarray):
        if m is not None and not m.any():
            return
        val = val[-1] if m is None else val[m][-1]
    if 0 <= addr < data.size:
        data[addr] = val
    else:
        _hit_uniform(ob, k, addr, m, data.size)


def ld_tg(data, gb, rel, n, m, k, ob=None):
    """Gather element ``rel`` of each lane's group's copy of a threadgroup array of ``n``
    elements (``gb``: each lane's group base in the flat ``data``). An index outside
    ``0 .. n-1`` reads 0: it never reaches another group's copy."""
    if m is False:
        return _zero(data)
    if isinstance(rel, np.ndarray):
        # inactive lanes may read any element of their copy: no masking when all are inside
        if inside(rel, n):
            return data.take(gb + rel)
        if m is not None:
            rel = np.where(m, rel, 0)
            if inside(rel, n):
                return data.take(gb + rel)
        return _gather_out(data, rel, n, m, k, ob, gb.__add__)
    if 0 <= rel < n:
        return data.take(gb + rel)
    _hit_uniform(ob, k, rel, m, n)
    return np.zeros(gb.shape, data.dtype)


def st_tg(data, gb, rel, n, val, m, k, ob=None):
    """Scatter into element ``rel`` of each lane's group's copy of a threadgroup array
    (see :func:`ld_tg`); an index outside ``0 .. n-1`` is dropped."""
    if m is False:
        return
    if isinstance(rel, np.ndarray):
        if inside(rel, n) or (m is not None and inside(rel[m], n)):
            st(data, gb + rel, val, m, k, ob)
        else:
            _scatter_out(data, rel, n, val, m, k, ob, gb.__add__)
        return
    if 0 <= rel < n:
        st(data, gb + rel, val, m, k)
    else:
        _hit_uniform(ob, k, rel, m, n)


def ld_lin(data, o, n, m):
    """``ld`` at the contiguous addresses ``o .. o+n-1`` (the caller proved them in bounds):
    a copy instead of a gather; inactive lanes read element 0, as in ``ld``."""
    if m is False:
        return _zero(data)
    seg = data[o:o + n]
    if m is None:
        return seg.copy()
    return np.where(m, seg, data[0])


def st_lin(data, o, n, val, m):
    """``st`` at the contiguous addresses ``o .. o+n-1`` (in bounds, one lane each)."""
    if m is False:
        return
    if m is None:
        data[o:o + n] = val
    else:
        np.copyto(data[o:o + n], val, where=m, casting="unsafe")


def ld_seg(data, o, n, m, load):
    """A load whose addresses are ``o .. o+n-1`` with every active lane's inside its
    array (``o`` None: not known): a slice (lanes past the end of ``data`` must then be
    inactive); else ``load()``, the general gather."""
    if o is not None and o >= 0 and m is not False:
        w = min(n, data.size - o)
        if w == n:
            seg = data[o:o + n]
            return seg.copy() if m is None else np.where(m, seg, data[0])
        if m is not None and w > 0:
            r = np.empty(n, data.dtype)
            r[:w] = np.where(m[:w], data[o:o + w], data[0])
            r[w:] = data[0]
            return r
    return load()


def st_seg(data, o, n, val, m, store):
    """A store whose addresses are ``o .. o+n-1`` with every active lane's inside its
    array (``o`` None: not known): a slice store; else ``store()``, the general scatter."""
    if o is not None and o >= 0 and m is not False:
        w = min(n, data.size - o)
        if w == n:
            if m is None:
                data[o:o + n] = val
            else:
                np.copyto(data[o:o + n], val, where=m, casting="unsafe")
            return
        if m is not None and w > 0:
            np.copyto(data[o:o + w], val[:w] if isinstance(val, np.ndarray) else val, where=m[:w],
                      casting="unsafe")
            return
    store()


def ld_loc(arr, idx, m, lane, k, ob=None):
    """Load element ``idx`` of a thread-local array stored as ``(size, lanes)``."""
    if m is False:
        return _zero(arr)
    n = arr.shape[0]
    if isinstance(idx, np.ndarray):
        if m is not None:
            idx = np.where(m, idx, 0)
        a = _nowrap(idx)
        if a is not None:
            try:
                return arr[a, lane]
            except IndexError:
                pass
        bad = _bad(idx, n, m)
        _hit(ob, k, idx, bad, n)
        r = arr[np.where(bad, 0, idx), lane] if n else np.zeros(idx.shape, arr.dtype)
        r[bad] = 0
        return r
    if 0 <= idx < n:
        return arr[idx].copy()
    _hit_uniform(ob, k, idx, m, n)
    return np.zeros(arr.shape[1], arr.dtype)


def st_loc(arr, idx, val, m, lane, k, ob=None):
    """Store into element ``idx`` of a thread-local ``(size, lanes)`` array."""
    if m is False:
        return
    n = arr.shape[0]
    if isinstance(idx, np.ndarray):
        a = _nowrap(idx)
        if a is not None:
            try:
                if m is None:
                    arr[a, lane] = val
                else:
                    arr[a[m], lane[m]] = val[m] if isinstance(val, np.ndarray) else val
                return
            except IndexError:
                pass
        bad = _bad(idx, n, m)
        _hit(ob, k, idx, bad, n)
        keep = ~bad if m is None else (m & ~bad)
        arr[idx[keep], lane[keep]] = val[keep] if isinstance(val, np.ndarray) else val
    elif not 0 <= idx < n:
        _hit_uniform(ob, k, idx, m, n)
    elif m is None:
        arr[idx] = val
    else:
        np.copyto(arr[idx], val, where=m)


def ld_ref(ref: BufRef, i, m, k, ob=None):
    """Load through a device function's buffer parameter (element ``i`` of the view:
    outside ``0 .. n-1`` of the buffer it points into reads 0)."""
    if m is False:
        return _zero(ref.flat)
    rel = ref.off + i
    if isinstance(rel, np.ndarray):
        if m is not None:
            rel = np.where(m, rel, 0)
        if inside(rel, ref.n):
            return ref.flat.take(ref.at(rel))
        return _gather_out(ref.flat, rel, ref.n, m, k, ob, ref.at, ref.name)
    a = ref.at(rel)
    if 0 <= rel < ref.n:
        return ref.flat.take(a) if isinstance(a, np.ndarray) else ref.flat[a]
    _hit_uniform(ob, k, rel, m, ref.n, ref.name)
    return np.zeros(a.shape, ref.flat.dtype) if isinstance(a, np.ndarray) else _zero(ref.flat)


def st_ref(ref: BufRef, i, val, m, k, ob=None):
    """Store through a device function's buffer parameter (outside its buffer: dropped)."""
    if m is False:
        return
    rel = ref.off + i
    if isinstance(rel, np.ndarray):
        if inside(rel, ref.n) or (m is not None and inside(rel[m], ref.n)):
            st(ref.flat, ref.at(rel), val, m, k)
        else:
            _scatter_out(ref.flat, rel, ref.n, val, m, k, ob, ref.at, ref.name)
    elif 0 <= rel < ref.n:
        st(ref.flat, ref.at(rel), val, m, k)
    else:
        _hit_uniform(ob, k, rel, m, ref.n, ref.name)


def check(rel, n, m, k):
    """Checked mode: raise OutOfBounds unless ``0 <= rel < n`` on every active lane."""
    if m is False:
        return
    if isinstance(rel, np.ndarray):
        bad = rel >= n
        if rel.dtype.kind != "u":
            bad |= rel < 0
        if m is not None:
            bad &= m
        if bad.any():
            raise OutOfBounds(k, rel, bad, n)
    elif not (0 <= rel < n):
        raise OutOfBounds(k, rel, None if m is None else m, n)
