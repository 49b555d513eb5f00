"""Numba's host-side array API: ``cuda.to_device``, ``cuda.device_array``, ``copy_to_host``.

A :class:`DeviceNDArray` keeps its elements where the kernels that use it run:

* on the GPU backends (``cuda``, ``metal``) in an ``mx.array`` ("device mode"):
  ``to_device`` is one host-to-device copy (``mx.array`` of the contiguous host
  array), ``copy_to_host`` one copy back (straight from a view of MLX's buffer into
  the result; on ``metal``, unified memory, ``copy_to_host()`` is that view, read-only),
  ``device_array``/``device_array_like`` and kernel launches none (a launch rebinds the
  array to the kernel's output, see :mod:`metalbench.numba_compat.host`);
* on the simulator, and for dtypes MLX has no device type for (records, complex128,
  float64 on Metal), in a NumPy array ("host mode"): kernels run on it in place.

On ``cuda`` a float64 array is held as its bits, a uint64 ``mx.array``
(``runtime.carrier``: MLX refuses float64 on the GPU); the kernels read the bits as
``double``, and the transfers view them as float64 on the host without a copy.

Shape, strides and flags follow Numba's (NumPy's) layout rules in both modes: an
F-order array reports F strides, a slice or a transpose is a view of its parent and
writes through to it. Transfers go through ``cuda.cudadrv.driver`` (``cuMemcpyHtoD``,
``cuMemcpyDtoH``), so code that checks for transfers can watch them::

    >>> import numpy as np
    >>> d = to_device(np.arange(4, dtype=np.float32))
    >>> d.copy_to_host().tolist(), d.shape, d.flags["C_CONTIGUOUS"]
    ([0.0, 1.0, 2.0, 3.0], (4,), True)
"""
from __future__ import annotations

import functools
import weakref

import numpy as np

from .. import types as T
from .runtime_stubs import driver


def _mx():
    import mlx.core as mx
    return mx


def gpu_backend() -> str | None:
    """The GPU backend device arrays created now live on ("cuda"/"metal"), else None."""
    from .host import get_backend
    b = get_backend()
    return b if b in ("cuda", "metal") else None


def _device_dtype(dtype: np.dtype, backend: str | None):
    """The mx dtype a device-mode array of ``dtype`` has on ``backend``, or None (host mode)."""
    if backend is None or dtype.fields is not None or dtype.subdtype is not None:
        return None
    try:
        t = T.from_numpy(dtype)
    except Exception:
        return None
    if backend == "metal" and t.name == "float64":
        return None                     # Metal has no double: such arrays stay on the host
    from ..runtime import carrier
    try:
        return T.to_mlx(carrier(t, backend))    # float64 on cuda: its bits, uint64
    except Exception:
        return None


def _layout(shape, dtype, order="C", strides=None) -> np.ndarray:
    """A NumPy array with ``shape``/``dtype`` and the strides of ``order`` that owns no
    memory (never read): slicing and transposing it gives the strides and flags of the
    corresponding device-array views."""
    dtype = np.dtype(dtype)
    shape = tuple(int(s) for s in shape)
    if strides is None:
        strides = _contiguous_strides(shape, dtype.itemsize, order)
    base = np.zeros(1, dtype=dtype) if dtype.itemsize else np.zeros(1, np.uint8)
    return np.lib.stride_tricks.as_strided(base, shape=shape, strides=strides, writeable=False)


def _contiguous_strides(shape, itemsize, order):
    strides, step = [0] * len(shape), itemsize
    axes = range(len(shape) - 1, -1, -1) if order != "F" else range(len(shape))
    for ax in axes:
        strides[ax] = step
        step *= max(1, shape[ax])
    return tuple(strides)


class Flags(dict):
    """A device array's flags: ``flags["C_CONTIGUOUS"]`` and ``flags.c_contiguous``."""
    c_contiguous = property(lambda self: self["C_CONTIGUOUS"])
    f_contiguous = property(lambda self: self["F_CONTIGUOUS"])
    contiguous = c_contiguous


class DeviceNDArray:
    """A "device" array: ``shape``, ``strides``, ``dtype``, ``size``, ``flags``,
    ``copy_to_host()``, ``copy_to_device(ary)``, views (slicing, ``.T``, ``reshape``,
    ``ravel``), ``split`` and ``np.asarray(d)`` (a copy to the host).

    >>> d = device_array((2, 3), np.float32)
    >>> d.shape, d.dtype.name, d.strides
    ((2, 3), 'float32', (12, 4))
    >>> d[1].shape, d.T.strides
    ((3,), (4, 12))
    """

    __array_priority__ = 20

    def __init__(self, data=None, stream=0, *, _dev=None, _layout_=None, _base=None, _op=None):
        self.stream = stream
        self._host = None        # host mode: the NumPy storage (possibly a view of the parent's)
        self._dev = None         # device mode, owner: the mx.array (logical contents, C order)
        self._base = _base       # device mode, view: the parent DeviceNDArray
        self._op = _op           # device mode, view: ("index", key) | ("transpose", axes) | ("reshape", shape)
        if data is not None:
            self._host = data if isinstance(data, np.ndarray) else np.asarray(data)
            self._meta = self._host
            self._kmeta = self._meta
        else:
            self._dev = _dev
            self._meta = _layout_
            self._kmeta = _layout_   # what kernels see (the same but for StateArray's records as words)
            if _base is None:
                self._mxdt = _dev.dtype if _dev is not None else _device_dtype(_layout_.dtype, gpu_backend() or "cuda")

    # -- what the kernels and the launch path use -------------------------------------------
    @property
    def on_device(self) -> bool:
        """True when the elements live in an ``mx.array`` (device mode)."""
        return self._host is None

    def _read(self):
        """Device mode: the logical contents as an ``mx.array`` (no copy for an owner)."""
        if self._base is None:
            return self._dev
        a = self._base._read()
        kind, arg = self._op
        if kind == "index":
            return a[arg]
        if kind == "transpose":
            return a.transpose(arg)
        return a.reshape(arg)

    def _write(self, new) -> None:
        """Device mode: replace the logical contents by the ``mx.array`` ``new`` (same
        shape; a view writes through to its parent, on the device)."""
        mx = _mx()
        new = _coerce(new, self)
        if tuple(new.shape) != self._kmeta.shape:
            new = new.reshape(self._kmeta.shape)
        if self._base is None:
            self._dev = new
            return
        kind, arg = self._op
        if kind == "index":
            cur = mx.array(self._base._read())   # a new array object: others keep the old one
            cur[arg] = new
            self._base._write(cur)
        elif kind == "transpose":
            self._base._write(new.transpose(np.argsort(arg).tolist()))
        else:
            self._base._write(new.reshape(self._base.shape))

    def _mx_dtype(self):
        root = self
        while root._base is not None:
            root = root._base
        return root._mxdt

    def _device_view(self) -> np.ndarray:
        """Device mode: the evaluated contents as a NumPy view of MLX's buffer, no copy
        (the view holds the ``mx.array``, which nothing mutates: launches rebind device
        arrays to new ones; float64 held as its bits is viewed as float64)."""
        from .. import runtime
        a = runtime.to_numpy(self._read())
        if self.dtype == np.float64 and a.dtype == np.uint64:
            a = a.view(np.float64)                # float64 held as its bits (cuda)
        return a.astype(self.dtype, copy=False)

    def _host_copy(self) -> np.ndarray:
        """A new NumPy array with the contents (device mode: the device-to-host copy, one)."""
        if self._host is not None:
            return np.array(self._host, copy=True, order="K")
        order = "F" if (self._meta.flags.f_contiguous and not self._meta.flags.c_contiguous) else "C"
        return np.array(self._device_view(), copy=True, order=order)

    def _kernel_copy(self) -> np.ndarray:
        """A NumPy copy of what kernels see (the simulator runs on it for a device-mode array)."""
        return self._host_copy()

    def __metalbench_signature__(self):
        """What a launch's argument signature needs (the thin path of repeated launches)."""
        return self._sig

    @functools.cached_property
    def _sig(self):
        # Shape, dtype and mode never change after creation: computed once.
        return ("device", self._meta.dtype.str, self._meta.shape, self._host is None)

    # -- NumPy-like attributes --------------------------------------------------------------
    shape = property(lambda self: self._meta.shape)
    dtype = property(lambda self: self._meta.dtype)
    size = property(lambda self: self._meta.size)
    ndim = property(lambda self: self._meta.ndim)
    strides = property(lambda self: self._meta.strides)
    itemsize = property(lambda self: self._meta.itemsize)
    nbytes = property(lambda self: self._meta.nbytes)
    alloc_size = nbytes

    @property
    def flags(self) -> "Flags":
        """``{"C_CONTIGUOUS": ..., "F_CONTIGUOUS": ...}`` as Numba gives them (also as
        attributes, ``flags.c_contiguous``, as NumPy's)."""
        f = self._meta.flags
        return Flags(C_CONTIGUOUS=bool(f.c_contiguous), F_CONTIGUOUS=bool(f.f_contiguous))

    def is_c_contiguous(self) -> bool:
        return bool(self._meta.flags.c_contiguous)

    def is_f_contiguous(self) -> bool:
        return bool(self._meta.flags.f_contiguous)

    @property
    def __cuda_array_interface__(self) -> dict:
        """The CUDA array interface of a host-mode array (as Numba's simulator gives it:
        the host pointer). Device-mode arrays live in MLX, which exposes no device pointer."""
        if self._host is None:
            raise AttributeError("metalbench device arrays on a GPU backend live in MLX arrays, which expose no "
                                 "device pointer; use copy_to_host() or the mx.array from cuda.as_mlx(d)")
        ai = self._host.__array_interface__
        _EXPOSED[ai["data"][0]] = self         # so a wrapper of this interface finds the array back
        return {"shape": ai["shape"], "strides": ai["strides"] if not self._host.flags.c_contiguous else None,
                "data": ai["data"], "typestr": ai["typestr"], "version": 3, "stream": None,
                **({"descr": ai["descr"]} if self.dtype.fields else {})}

    def __len__(self):
        return self.shape[0]

    def __repr__(self) -> str:
        where = "device" if self._host is None else "host"
        return f"<metalbench.cuda DeviceNDArray shape={self.shape} dtype={self.dtype} ({where})>"

    def __array__(self, dtype=None, copy=None):
        a = self._host_copy() if copy else self.copy_to_host()
        return a if dtype is None else a.astype(dtype)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    # -- views ------------------------------------------------------------------------------
    def _view(self, op, meta):
        return DeviceNDArray(stream=self.stream, _layout_=meta, _base=self, _op=op)

    def __getitem__(self, item):
        if self._host is not None:
            r = self._host[item]
            return DeviceNDArray(r, self.stream) if isinstance(r, np.ndarray) else r
        meta = self._meta[item]
        if not isinstance(meta, np.ndarray):          # one element: a device-to-host copy
            host = np.empty((), dtype=self.dtype)
            driver.cuMemcpyDtoH(host, self._view(("index", item), _layout((), self.dtype)), self.itemsize)
            return host[()]
        return self._view(("index", item), meta)

    def __setitem__(self, item, value):
        if self._host is not None:
            self._host[item] = np.asarray(value.copy_to_host() if isinstance(value, DeviceNDArray) else value)
            return
        mx = _mx()
        cur = mx.array(self._read())
        if isinstance(value, DeviceNDArray):
            val = _coerce(value._read(), self, value) if value.on_device else _to_mlx(value._host, self._mx_dtype())
        else:
            val = _to_mlx(np.asarray(value, dtype=self.dtype), self._mx_dtype())
        cur[item] = val
        self._write(cur)

    def setitem(self, key, value, stream=0):
        self[key] = value

    def getitem(self, item, stream=0):
        return self[item]

    @property
    def T(self) -> "DeviceNDArray":
        return self.transpose()

    def transpose(self, axes=None) -> "DeviceNDArray":
        axes = tuple(range(self.ndim - 1, -1, -1)) if axes is None else tuple(axes)
        if self._host is not None:
            return DeviceNDArray(self._host.transpose(axes), self.stream)
        return self._view(("transpose", axes), self._meta.transpose(axes))

    def reshape(self, *newshape, order="C") -> "DeviceNDArray":
        """A view with another shape (Numba: of a contiguous array, in C or F order)."""
        if len(newshape) == 1 and isinstance(newshape[0], (tuple, list)):
            newshape = tuple(newshape[0])
        if self._host is not None:
            r = self._host.reshape(newshape, order=order)
            if not np.shares_memory(r, self._host) and self._host.size:
                raise NotImplementedError("operation requires copying")
            return DeviceNDArray(r, self.stream)
        if not (self.is_c_contiguous() or self.is_f_contiguous()):
            raise NotImplementedError("operation requires copying")
        shape = np.empty(self.shape, dtype=np.uint8).reshape(newshape).shape if self.size else \
            tuple(int(s) for s in newshape)
        if order == "F" or (self.is_f_contiguous() and not self.is_c_contiguous() and order == "A"):
            raise NotImplementedError("reshape in F order of a device array on a GPU backend; copy it to the "
                                      "host, reshape there and copy back")
        return self._view(("reshape", shape), _layout(shape, self.dtype))

    def ravel(self, order="C", stream=0) -> "DeviceNDArray":
        """A 1-D view of a contiguous array."""
        return self.reshape(self.size, order=order)

    def view(self, dtype) -> "DeviceNDArray":
        """The same memory read as another dtype (host-mode arrays; device mode: same itemsize)."""
        if self._host is not None:
            return DeviceNDArray(self._host.view(dtype), self.stream)
        dtype = np.dtype(dtype)
        mt = _device_dtype(dtype, gpu_backend() or "cuda")
        if mt is None or dtype.itemsize != self.itemsize:
            raise NotImplementedError(f"view of a device array as {dtype} on a GPU backend")
        v = DeviceNDArray(stream=self.stream, _dev=self._read().view(mt), _layout_=_layout(self.shape, dtype))
        root = self
        while root._base is not None:
            root = root._base
        v._viewed_from = root.__dict__.get("_viewed_from", root)
        return v

    def split(self, section, stream=0) -> list:
        """1-D arrays of ``section`` elements (the last may be shorter), sharing memory."""
        if self.ndim != 1:
            raise ValueError("only support splitting 1D array")
        return [self[i:i + section] for i in range(0, self.size, section)]

    def bind(self, stream=0) -> "DeviceNDArray":
        return self

    # -- transfers --------------------------------------------------------------------------
    def copy_to_host(self, ary=None, stream=0):
        """A NumPy copy of the array, or a copy into ``ary`` (returned): one copy, with
        no temporary. On Apple's unified memory (``metal``) ``copy_to_host()`` is no
        copy: a read-only view of MLX's buffer, a snapshot that later launches leave
        as it is (they rebind the device array to new buffers); ``copy_to_host(ary)``
        or ``copy_to_host().copy()`` give a writable array.

        >>> d = to_device(np.arange(3, dtype=np.int32))
        >>> d.copy_to_host().tolist(), d.copy_to_host(np.zeros(3, np.int32)).tolist()
        ([0, 1, 2], [0, 1, 2])
        """
        if ary is None:
            if self._host is None and self._kmeta is self._meta and _reads_back_as_view():
                view = self._device_view()
                view.flags.writeable = False
                return view
            ary = np.empty(self.shape, dtype=self.dtype,
                           order="F" if (self.is_f_contiguous() and not self.is_c_contiguous()) else "C")
        elif ary.shape != self.shape and ary.size != self.size:
            raise ValueError(f"copy_to_host: shape {ary.shape} does not match the device array's {self.shape}")
        driver.cuMemcpyDtoH(ary, self, self.nbytes)
        return ary

    to_host = copy_to_host

    def copy_to_device(self, ary, stream=0):
        """Overwrite the contents with the host array (or device array) ``ary``."""
        if isinstance(ary, DeviceNDArray):
            if ary.size != self.size:
                raise ValueError(f"copy_to_device: {ary.shape} into {self.shape}")
            if self._host is not None:
                np.copyto(self._host, ary._host_copy().reshape(self.shape))
            else:
                val = _coerce(ary._read(), self, ary) if ary.on_device else _to_mlx(ary._host, self._mx_dtype())
                self._write(val.reshape(self.shape))
            return
        a = np.asarray(ary)
        if a.size != self.size:
            raise ValueError(f"copy_to_device: host array of shape {a.shape} into a device array of {self.shape}")
        driver.cuMemcpyHtoD(self, a, a.nbytes)

    def get_ipc_handle(self):
        raise NotImplementedError("IPC handles (cuda IPC between processes) are not supported by metalbench.cuda")

    def as_cuda_arg(self):
        return self

    @property
    def device_ctypes_pointer(self):
        raise NotImplementedError("metalbench device arrays expose no raw device pointer")

    @property
    def gpu_data(self) -> "_Memory":
        """Which memory the array lives in: views (slices, ``view``, ``T``) of one array
        compare equal. There is no raw device pointer behind it."""
        if self._host is not None:
            base = self._host
            while isinstance(base.base, np.ndarray):
                base = base.base
            return _Memory(("host", id(base.base) if base.base is not None else id(base)))
        root = self
        while root._base is not None:
            root = root._base
        return _Memory(("device", id(root.__dict__.get("_viewed_from", root))))


class _Memory:
    """``DeviceNDArray.gpu_data``: equal for arrays sharing their memory."""

    def __init__(self, key):
        self.key = key

    def __eq__(self, other):
        return isinstance(other, _Memory) and other.key == self.key

    def __hash__(self):
        return hash(self.key)

    @property
    def device_pointer(self):
        raise NotImplementedError("metalbench device arrays expose no raw device pointer")


def _to_mlx(a: np.ndarray, mx_dtype=None):
    from .. import runtime
    if a.dtype == np.float64 and mx_dtype == _mx().uint64:
        return _mx().array(np.ascontiguousarray(a).view(np.uint64))    # float64 as its bits (cuda)
    m = runtime.to_mlx(np.ascontiguousarray(a))
    return m if mx_dtype is None or m.dtype == mx_dtype else m.astype(mx_dtype)


def _coerce(new, dst: DeviceNDArray, src: DeviceNDArray | None = None):
    """The ``mx.array`` ``new`` (the contents of ``src`` when it comes from a device
    array) with ``dst``'s MLX dtype, converting values as NumPy assignment does: a
    float64 array held as bits (cuda) takes float64 values as bits, other values
    converted to float64 first, on the CPU stream (MLX computes float64 only there)."""
    mt = dst._mx_dtype()
    if new.dtype == mt and (src is None or src.dtype == dst.dtype):
        return new
    from .. import runtime
    mx = _mx()
    if src is not None and src.dtype == np.float64 and new.dtype == mx.uint64:
        new = runtime.bits_float64(new)            # the source holds float64 bits
    if dst.dtype == np.float64 and mt == mx.uint64:
        return runtime.float64_bits(new)
    if new.dtype == mx.float64:
        return new.astype(mt, stream=mx.cpu)
    return new.astype(mt)


def _h2d(dev: DeviceNDArray, host: np.ndarray, nbytes=None) -> None:
    """The host-to-device copy (``driver.cuMemcpyHtoD``'s work)."""
    if dev._host is not None:
        np.copyto(dev._host, np.asarray(host).reshape(dev.shape), casting="unsafe")
        return
    dev._write(_to_mlx(np.asarray(host, dtype=dev.dtype).reshape(dev.shape), dev._mx_dtype()))


def _d2h(host: np.ndarray, dev: DeviceNDArray, nbytes=None) -> None:
    """The device-to-host copy (``driver.cuMemcpyDtoH``'s work)."""
    if dev._kmeta is not dev._meta:         # records held as words (StateArray): converted
        src = dev._host_copy()
    else:                                   # straight from the storage: the one copy is copyto's
        src = dev._host if dev._host is not None else dev._device_view()
    if host.ndim == 0:
        host[()] = np.asarray(src).reshape(())
    else:
        np.copyto(host, np.asarray(src).reshape(host.shape), casting="unsafe")


driver._install_copies(_h2d, _d2h)


def _reads_back_as_view() -> bool:
    """Whether ``copy_to_host()`` returns a view of the device array's buffer: on Apple's
    unified memory (``metal``) the CPU reads MLX's buffer where the GPU wrote it. On
    ``cuda``, MLX's buffers are CUDA managed memory the CPU reads by migrating pages;
    ``copy_to_host()`` copies once there, so that the result is host memory the caller
    owns and the transfer is paid where Numba (and CuPy) pay it."""
    return gpu_backend() == "metal"


def _new(shape, dtype, order="C", strides=None, stream=0, fill=None) -> DeviceNDArray:
    dtype = np.dtype(dtype)
    shape = (int(shape),) if np.isscalar(shape) else tuple(int(s) for s in shape)
    mt = _device_dtype(dtype, gpu_backend())
    if mt is None:
        if strides is not None:
            nbytes = sum((n - 1) * s for n, s in zip(shape, strides)) + dtype.itemsize
            buf = np.zeros(nbytes if all(shape) else 0, np.uint8)
            a = np.ndarray(shape, dtype, buffer=buf, strides=strides)
        else:
            a = np.zeros(shape, dtype=dtype, order=order)
        return DeviceNDArray(a, stream)
    mx = _mx()
    dev = mx.zeros(shape, dtype=mt) if fill is None else fill
    return DeviceNDArray(stream=stream, _dev=dev, _layout_=_layout(shape, dtype, order, strides))


def to_device(obj, stream=0, copy=True, to=None):
    """Copy a host array to the "device": ``d = cuda.to_device(a)``; with ``to=d`` it
    fills an existing device array. Costs one host-to-device copy.

    >>> to_device(np.ones(3, np.int32)).copy_to_host().tolist()
    [1, 1, 1]
    """
    if to is not None:
        to.copy_to_device(obj, stream)
        return to
    if isinstance(obj, DeviceNDArray):
        return obj
    if type(obj).__module__.startswith("mlx"):
        from .. import runtime
        from .. import types as T
        # the dtype from MLX's dtype, not from an op on the array: on a GPU stream any op on
        # a float64 array (obj[:0] included) raises "float64 is not supported on the GPU"
        npdt = np.dtype(T.from_mlx(obj.dtype).np)
        mt = _device_dtype(npdt, gpu_backend())
        if mt is not None:   # already an MLX array: a device-side copy, no transfer
            dev = runtime.float64_bits(obj) if obj.dtype != mt and mt == _mx().uint64 else _mx().array(obj)
            return DeviceNDArray(stream=stream, _dev=dev, _layout_=_layout(obj.shape, npdt))
        obj = runtime.to_numpy(obj)
    a = np.asarray(obj)
    if a.dtype.hasobject:
        raise TypeError(f"cannot copy an array of Python objects to the device (dtype {a.dtype})")
    mt = _device_dtype(a.dtype, gpu_backend())
    if mt is None:
        d = DeviceNDArray(np.empty_like(a, order="K") if a.ndim else np.empty((), a.dtype), stream)
    else:
        order = "F" if (a.flags.f_contiguous and not a.flags.c_contiguous) else "C"
        d = DeviceNDArray(stream=stream, _dev=None, _layout_=_layout(a.shape, a.dtype, order))
    driver.cuMemcpyHtoD(d, a, a.nbytes)
    return d


def auto_device(obj, stream=0, copy=True, user_explicit=False):
    """Numba's ``devicearray.auto_device``: (device array, whether it was copied)."""
    if isinstance(obj, DeviceNDArray):
        return obj, False
    if np.isscalar(obj) or isinstance(obj, np.generic):
        obj = np.asarray(obj)
    a = np.asarray(obj)
    if a.ndim and not (a.flags.c_contiguous or a.flags.f_contiguous):
        raise ValueError("Array contains non-contiguous buffer and cannot be transferred as a single memory "
                         "region. Please ensure contiguous buffer with numpy .ascontiguousarray()")
    return to_device(a, stream, copy), True


def device_array(shape, dtype=np.float64, strides=None, order="C", stream=0):
    """A new "device" array, no transfer (zero-filled; Numba's is uninitialised).

    >>> device_array(3, np.int32).copy_to_host().tolist()
    [0, 0, 0]
    """
    return _new(shape, dtype, order, strides, stream)


def device_array_like(ary, stream=0):
    """A new "device" array with the shape, dtype and layout of ``ary`` (contiguous: a
    view's like-array is contiguous, as ``np.zeros_like`` makes it).

    >>> device_array_like(np.ones((2, 2), np.float32, order="F")).strides
    (4, 8)
    """
    meta = ary._meta if isinstance(ary, DeviceNDArray) else np.asarray(ary)
    like = np.zeros_like(_layout(meta.shape, meta.dtype, strides=meta.strides) if meta.ndim else meta)
    return _new(meta.shape, meta.dtype, strides=like.strides, stream=stream)


from_array_like = device_array_like


def from_record_like(rec, stream=0):
    return device_array((), rec.dtype, stream=stream)


def pinned_array(shape, dtype=np.float64, strides=None, order="C"):
    """A host array (pinning means nothing here: launches read NumPy arrays directly)."""
    return np.zeros(shape, dtype=dtype, order=order) if strides is None else \
        _new(shape, dtype, strides=strides)._host_copy()


def mapped_array(shape, dtype=np.float64, strides=None, order="C", stream=0, portable=False, wc=False):
    """A host array kernels can use directly (on unified memory that is what mapping means)."""
    return pinned_array(shape, dtype, strides, order)


def managed_array(shape, dtype=np.float64, strides=None, order="C", stream=0, attach_global=True):
    """A host array kernels can use directly (CUDA managed memory's role)."""
    return pinned_array(shape, dtype, strides, order)


def _like(ary):
    meta = ary._meta if isinstance(ary, DeviceNDArray) else np.asarray(ary)
    return np.zeros_like(_layout(meta.shape, meta.dtype, strides=meta.strides) if meta.ndim else meta)


def pinned_array_like(ary):
    """A host array shaped like ``ary`` (layout kept as ``np.zeros_like`` keeps it)."""
    return np.array(_like(ary), copy=True, order="K")


mapped_array_like = managed_array_like = pinned_array_like


# host pointer -> the device array whose __cuda_array_interface__ gave it (live arrays only)
_EXPOSED: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()


def from_interface(obj):
    """The metalbench device array behind ``obj``'s ``__cuda_array_interface__`` (an object
    wrapping one of ours, as numba-cuda's ForeignArray does), or None: only pointers this
    module handed out are followed, never foreign memory."""
    try:
        iface = getattr(obj, "__cuda_array_interface__", None)
    except Exception:           # noqa: BLE001 — a property that refuses (GPU-mode arrays)
        return None
    if not isinstance(iface, dict) or not isinstance(iface.get("data"), tuple):
        return None
    d = _EXPOSED.get(iface["data"][0])
    if d is None or tuple(d.shape) != tuple(iface.get("shape", ())):
        return None
    return d


def is_cuda_array(obj) -> bool:
    """True for metalbench device arrays (Numba: objects with ``__cuda_array_interface__``)."""
    return isinstance(obj, DeviceNDArray)


def as_cuda_array(obj, sync=True):
    """A device array for ``obj``: a DeviceNDArray itself; another array is copied."""
    if isinstance(obj, DeviceNDArray):
        return obj
    raise TypeError("as_cuda_array: metalbench.cuda can only wrap its own device arrays (foreign GPU memory "
                    "through __cuda_array_interface__ is not supported); use cuda.to_device(array)")


def is_device_array(obj) -> bool:
    return isinstance(obj, DeviceNDArray)


def require_context(fn):
    return fn


class _Managed:
    """``with cuda.pinned(a, b):`` (nothing to do) and ``with cuda.mapped(a) as d:`` (a
    device array over ``a``; its contents come back to ``a`` when the block ends)."""

    def __init__(self, arrays, mapped, stream=0):
        self.arrays = arrays
        self.mapped = mapped
        self.devs = None

    def __enter__(self):
        if not self.mapped:
            return None
        self.devs = [to_device(a) for a in self.arrays]
        return self.devs[0] if len(self.devs) == 1 else self.devs

    def __exit__(self, *exc):
        if self.devs is not None:
            for a, d in zip(self.arrays, self.devs):
                d.copy_to_host(a)
        return False


def pinned(*arrays):
    """``with cuda.pinned(a, ...):`` -- pinning means nothing here."""
    return _Managed(arrays, False)


def mapped(*arrays, **kws):
    """``with cuda.mapped(a, ...) as d:`` -- device arrays whose contents return to the
    host arrays at the end of the block."""
    return _Managed(arrays, True, kws.get("stream", 0))
