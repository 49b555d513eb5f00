"""Loads and stores of lane vectors on device buffers, threadgroup and thread-local arrays.

Device buffers and threadgroup arrays are flat NumPy arrays addressed by an absolute
element index per lane (a threadgroup array of a chunk is ``(groups, size)`` flattened,
each lane adding its group's base). Thread-local arrays are ``(size, lanes)`` so that
an index that is the same for every lane (a loop counter) selects one contiguous row.

Inactive lanes never read or write: their addresses are replaced by 0 for gathers and
dropped for scatters::

    >>> import numpy as np
    >>> d = np.arange(4.0, dtype=np.float32)
    >>> ld(d, np.array([3, 99]), np.array([True, False]), 0).tolist()
    [3.0, 0.0]
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


def _zero(data):
    return data.dtype.type(0)


def ld(data, addr, m, k):
    """Gather ``data[addr]`` on the active lanes of ``m`` (0 elsewhere)."""
    if m is False:
        return _zero(data)
    try:
        if isinstance(addr, np.ndarray):
            if m is not None:
                addr = np.where(m, addr, 0)
            return data.take(addr)
        return data[addr]
    except IndexError:
        raise OutOfBounds(k, addr, None, data.size) from None


def st(data, addr, val, m, k):
    """Scatter ``val`` to ``data[addr]`` on the active lanes of ``m``; when several lanes
    write one address the last lane wins (a race on the GPU)."""
    if m is False:
        return
    try:
        if isinstance(addr, np.ndarray):
            if m is None:
                data[addr] = val
            else:
                data[addr[m]] = val[m] if isinstance(val, np.ndarray) else val
        else:
            if isinstance(val, np.ndarray):
                val = val[-1] if m is None else val[m][-1]
            data[addr] = val
    except IndexError:
        raise OutOfBounds(k, addr, None, data.size) from None


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


def ld_seg(data, o, n, m, k, addr):
    """``ld(data, addr(), m, k)`` where the addresses are known to be ``o .. o+n-1`` (``o``
    None: unknown): a slice when the active lanes' part is in bounds (lanes past the end
    must then be inactive), else the gather, which reports out-of-bounds lanes."""
    if o is not None and o >= 0 and m is not False:
        w = min(n, data.size - o)
        if w == n:
            seg = data[o:o + n]
            return seg.copy() if m is None else np.where(m, seg, data[0])
        if m is not None and w > 0 and not m[w:].any():
            r = np.empty(n, data.dtype)
            r[:w] = np.where(m[:w], data[o:o + w], data[0])
            r[w:] = data[0]
            return r
    return ld(data, addr(), m, k)


def st_seg(data, o, n, val, m, k, addr):
    """``st(data, addr(), val, m, k)`` where the addresses are known to be ``o .. o+n-1``
    (``o`` None: unknown): a slice store when the active lanes' part is in bounds."""
    if o is not None and o >= 0 and m is not False:
        w = min(n, data.size - o)
        if w == n:
            if m is None:
                data[o:o + n] = val
            else:
                np.copyto(data[o:o + n], val, where=m, casting="unsafe")
            return
        if m is not None and w > 0 and not m[w:].any():
            np.copyto(data[o:o + w], val[:w] if isinstance(val, np.ndarray) else val, where=m[:w],
                      casting="unsafe")
            return
    st(data, addr(), val, m, k)


def ld_loc(arr, idx, m, lane, k):
    """Load element ``idx`` of a thread-local array stored as ``(size, lanes)``."""
    if m is False:
        return _zero(arr)
    try:
        if isinstance(idx, np.ndarray):
            if m is not None:
                idx = np.where(m, idx, 0)
            return arr[idx, lane]
        return arr[idx].copy()
    except IndexError:
        raise OutOfBounds(k, idx, None, arr.shape[0]) from None


def st_loc(arr, idx, val, m, lane, k):
    """Store into element ``idx`` of a thread-local ``(size, lanes)`` array."""
    if m is False:
        return
    try:
        if isinstance(idx, np.ndarray):
            if m is None:
                arr[idx, lane] = val
            else:
                arr[idx[m], lane[m]] = val[m] if isinstance(val, np.ndarray) else val
        elif m is None:
            arr[idx] = val
        else:
            np.copyto(arr[idx], val, where=m)
    except IndexError:
        raise OutOfBounds(k, idx, None, arr.shape[0]) from None


def ld_ref(ref: BufRef, i, m, k):
    """Load through a device function's buffer parameter."""
    return ld(ref.flat, ref.addr(i), m, k)


def st_ref(ref: BufRef, i, val, m, k):
    """Store through a device function's buffer parameter."""
    st(ref.flat, ref.addr(i), val, m, k)


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
