"""What Numba's CUDA dispatcher exposes besides launching: ``overloads``,
``specializations``/``specialize``, ``extensions``, the compile hook
``_compile_for_args`` and the thread-local launch configuration
(``numba.cuda.launchconfig``), and the argument hints ``cuda.In``/``Out``/``InOut``.

A kernel compiles (builds its IR for new argument types) on the first launch with those
types; that compilation goes through ``kernel._compile_for_args(*args)`` while
``launchconfig.current_launch_config()`` describes the launch, as in numba-cuda::

    >>> from metalbench import cuda
    >>> import numpy as np
    >>> @cuda.jit
    ... def f(x):
    ...     x[0] = 1
    >>> f.configure(backend="sim")[1, 1](np.zeros(1, np.int32))
    >>> [str(t) for t in next(iter(f.overloads))]
    ['array(int32, 1d, C)']
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

from . import nbtypes as nbt

_tls = threading.local()


class LaunchConfig:
    """The launch a compilation serves: ``dispatcher``, ``griddim``, ``blockdim``,
    ``stream``, ``sharedmem``, ``args``."""

    def __init__(self, dispatcher, griddim, blockdim, stream, sharedmem, args):
        self.dispatcher = dispatcher
        self.griddim = griddim
        self.blockdim = blockdim
        self.stream = stream
        self.sharedmem = sharedmem
        self.args = args

    def __repr__(self) -> str:
        return (f"<LaunchConfig {getattr(self.dispatcher, 'name', '?')}[{self.griddim}, {self.blockdim}] "
                f"{len(self.args)} args>")


def current_launch_config():
    """The launch configuration of the compilation running in this thread, or None."""
    return getattr(_tls, "config", None)


@contextlib.contextmanager
def launch_config(cfg: LaunchConfig):
    prev = current_launch_config()
    _tls.config = cfg
    try:
        yield cfg
    finally:
        _tls.config = prev


# ----------------------------------------------------------------------------- argument hints

class ArgHint:
    """``cuda.In(a)``, ``cuda.Out(a)``, ``cuda.InOut(a)``: how a host array travels to a
    launch. ``In``: its contents go in, the kernel's writes do not come back. ``Out`` and
    ``InOut``: the kernel's writes come back (metalbench passes the contents in for ``Out``
    too: Numba's device copy would be uninitialised)."""

    copy_input = True
    copy_output = True

    def __init__(self, value):
        self.value = value

    def launch_value(self):
        """The array the launch runs on."""
        v = self.value
        if not self.copy_output and isinstance(v, np.ndarray):
            return np.array(v, copy=True)      # writes land in a copy nobody reads
        return v

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value!r})"


class In(ArgHint):
    copy_output = False


class Out(ArgHint):
    copy_input = False


class InOut(ArgHint):
    pass


def wrap_arg(value, default=InOut):
    """``value`` as an argument hint (``default`` unless it is one already)."""
    return value if isinstance(value, ArgHint) else default(value)


def unwrap(v):
    return v.launch_value() if isinstance(v, ArgHint) else v


# ----------------------------------------------------------------------------- overloads

class _Overloads(dict):
    """``kernel.overloads``: argument types -> :class:`CompiledKernel`; a signature
    object (``kernel.signatures[0]``) finds its entry too."""

    @staticmethod
    def _key(k):
        return tuple(k.args) if isinstance(k, nbt.Signature) else k

    def __getitem__(self, k):
        return super().__getitem__(self._key(k))

    def __contains__(self, k):
        return super().__contains__(self._key(k))

    def get(self, k, default=None):
        return super().get(self._key(k), default)


class CompiledKernel:
    """One entry of ``kernel.overloads``: the specialisation for some argument types."""

    def __init__(self, dispatcher, argtypes, specialization):
        self.dispatcher = dispatcher
        self.argument_types = argtypes
        self.signature = nbt.Signature(nbt.void, argtypes)
        self.specialization = specialization
        self.launch_config_sensitive = False
        self.py_func = dispatcher.fn

    def __repr__(self) -> str:
        return f"<compiled {self.dispatcher.name}{self.signature}>"

    @property
    def _type_annotation(self):
        """Numba's type annotation: ``typemap`` (name -> Numba type; numba_compat/typemap.py)."""
        from .typemap import TypeAnnotation
        return TypeAnnotation(self.specialization.ir)


def argument_types(args) -> tuple:
    """The Numba types of a launch's arguments (device arrays and host arrays of one
    dtype and layout give one type, so they share a compilation)."""
    out = []
    for a in args:
        a = unwrap(a)
        try:
            out.append(nbt.typeof(a))
        except (TypeError, ValueError):
            out.append(nbt.Opaque(type(a).__name__))
    return tuple(out)


class DispatcherAPI:
    """The dispatcher attributes of a ``cuda.jit`` kernel (mixed into ``CUDAKernel``)."""

    def host_function(self):
        """The Python function when this ``jit`` function returns a value, else None.

        Ported code reads ``import numba`` as ``import metalbench.cuda as numba``, so
        ``numba.jit`` is ``cuda.jit``: a function that returns a value cannot be a kernel, and
        called from the host without a launch configuration it is Numba's CPU ``jit``: it
        runs as Python (same results; from a kernel it stays a device function)::

            >>> from metalbench import cuda
            >>> @cuda.jit
            ... def twice(x):
            ...     return 2 * x
            >>> twice(21)
            42
        """
        from ..frontend.python.statements import _returns_value
        try:
            fdef = self.parsed().fdef
        except Exception:           # no readable source: not a function to run on the host
            return None
        return self.fn if _returns_value(fdef) else None

    @property
    def overloads(self) -> dict:
        """Argument types -> :class:`CompiledKernel`, one per compilation."""
        o = self.__dict__.get("_overloads")
        if o is None:
            o = self._overloads = _Overloads()
        return o

    @property
    def specializations(self) -> dict:
        """Argument types -> the kernel ``specialize`` made for them."""
        s = self.__dict__.get("_specializations")
        if s is None:
            s = self._specializations = {}
        return s

    @property
    def extensions(self) -> list:
        """Objects with ``prepare_args(ty, val, stream=, retr=) -> (ty, val)``, applied to
        each argument before a launch (as Numba's dispatcher does)."""
        e = self.__dict__.get("_extensions")
        if e is None:
            e = self._extensions = []
        return e

    @extensions.setter
    def extensions(self, value):
        self._extensions = list(value)

    def specialize(self, *args):
        """A kernel fixed to these argument types (Numba types, or values whose types
        are taken); one per distinct types, kept in ``specializations``."""
        if getattr(self, "signatures", None) or self.__dict__.get("_specialized"):
            raise RuntimeError("Dispatcher already specialized")
        types = tuple(a if isinstance(a, nbt.Type) else nbt.typeof(a) for a in args)
        hit = self.specializations.get(types)
        if hit is None:
            from .host import CUDAKernel
            hit = CUDAKernel(self.fn, backend=self._backend, checked=self._checked,
                             sigs=[nbt.Signature(nbt.void, types)])
            hit._specialized = True
            self.specializations[types] = hit
        return hit

    def mark_launch_config_sensitive(self):
        """Numba recompiles a launch-configuration-sensitive kernel per configuration;
        here a compilation is per argument types and the flag is recorded."""
        self._launch_config_sensitive = True

    def _compile_for_args(self, *args, **kws):
        """Compile for these arguments (a launch calls this for argument types it has not
        compiled yet, inside the launch's ``current_launch_config()``)."""
        vals = tuple(unwrap(a) for a in args)
        cfg = current_launch_config()          # its dynamic shared memory is compile-time
        bound = self.bind_inplace(vals, kws, sharedmem=getattr(cfg, "sharedmem", 0) or 0)
        sp = self.specialization(bound)
        types = argument_types(vals)
        ck = self.overloads.get(types)
        if ck is None:
            ck = self.overloads[types] = CompiledKernel(self, types, sp)
        if self.__dict__.get("_launch_config_sensitive"):
            ck.launch_config_sensitive = True
        return ck

    def _compile_hook(self, args, kwargs, grid3, tg3, stream=0, sharedmem=0):
        """Run ``_compile_for_args`` inside the launch configuration."""
        griddim = tuple(g // t for g, t in zip(grid3, tg3))
        with launch_config(LaunchConfig(self, griddim, tuple(tg3), stream, sharedmem, tuple(args))):
            self._compile_for_args(*args, **kwargs)

    def _prepare_args(self, args, extensions, stream=0):
        """Apply ``extensions`` to each argument; returns the values to launch with."""
        out, retr = [], []
        for a in args:
            ty = None
            for ext in extensions:
                ty, a = ext.prepare_args(ty, a, stream=stream, retr=retr)
            out.append(a)
        return tuple(out), retr
