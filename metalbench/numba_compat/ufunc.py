"""``cuda.vectorize`` and ``cuda.guvectorize``: NumPy-style (generalised) ufuncs built on
``cuda.jit`` kernels, so they run on every backend (Metal, CUDA, the simulator).

``@vectorize(["float32(float32, float32)", ...])`` compiles the scalar function as a
device function and a kernel applying it element by element; a call broadcasts its
inputs (arrays, device arrays, scalars), picks the signature whose input types match
exactly (scalars convert, as in numba-cuda), and returns a NumPy array -- or a device
array when any input is one, with no transfer. ``out=`` writes into an array given.
Without signatures the types come from the first call's arguments::

    >>> import numpy as np
    >>> @vectorize(["float32(float32, float32)"])
    ... def add(a, b):
    ...     return a + b
    >>> add(np.arange(3, dtype=np.float32), np.float32(1)).tolist()
    [1.0, 2.0, 3.0]

``@guvectorize(["void(float32[:], float32[:], float32[:])"], "(n),(n)->()")`` applies a
function on core dimensions over the outer (loop) dimensions; its body is inlined into
the kernel with each array argument indexed at the thread's loop position.
"""
from __future__ import annotations

import ast
import inspect
import itertools
import linecache
import math
import operator
import re
import textwrap
import warnings
from functools import reduce as _reduce

import numpy as np

from ..errors import KernelSyntaxError, MetalbenchError
from . import nbtypes as nbt
from .devicearray import DeviceNDArray, device_array, to_device

_TPB = 256
_counter = itertools.count()


def _dtype(t) -> np.dtype:
    return nbt.as_dtype(t)


def _is_device(a) -> bool:
    return isinstance(a, DeviceNDArray)


def _is_scalar(a) -> bool:
    return isinstance(a, (int, float, complex, bool, np.number, np.bool_))


def _as_array(a):
    if _is_device(a) or isinstance(a, np.ndarray):
        return a
    if type(a).__module__.startswith("mlx"):
        return to_device(a)
    return np.asarray(a)


def _exec_kernel(src: str, name: str, env: dict, **jit_options):
    """A ``cuda.jit`` kernel from generated source (kept in linecache, so its source and
    error lines can be read)."""
    from .host import jit
    filename = f"<metalbench ufunc {name} {next(_counter)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    exec(compile(src, filename, "exec"), env)
    return jit(**jit_options)(env[name])


def _check_options(opts: dict, what: str):
    opts = dict(opts)
    opts.pop("target", None)
    if opts.pop("cache", False):
        raise TypeError("caching is not supported")
    if "nopython" in opts:
        if opts.pop("nopython") is not True:
            raise TypeError("nopython flag must be True")
        warnings.warn("nopython kwarg for cuda target is redundant", RuntimeWarning, stacklevel=4)
    for k in ("fastmath", "debug", "opt", "lineinfo", "identity", "writable_args"):
        opts.pop(k, None)
    if opts and what == "guvectorize":      # numba-cuda's two messages
        raise TypeError("The following target options are not supported: " + ", ".join(f"'{k}'" for k in opts))
    if opts:
        raise KeyError(f"Unrecognized options. cuda {what} target does not support option: "
                       f"'{next(iter(opts))}'")


def _launch_1d(kernel, n, args, stream=0):
    tpb = min(_TPB, max(1, n))
    kernel[max(1, math.ceil(n / tpb)), tpb, stream](*args)


def _flat_broadcast(a, shape, dtype):
    """``a`` broadcast to ``shape``, contiguous, of ``dtype``, as a 1-D array of the same
    kind (a device array stays on the device)."""
    if _is_device(a):
        if a.shape == tuple(shape) and a.dtype == dtype and a.is_c_contiguous():
            return a.reshape(-1) if a.ndim != 1 else a
        if a.on_device:
            import mlx.core as mx
            from .devicearray import _device_dtype, _layout, gpu_backend
            m = mx.broadcast_to(a._read(), tuple(shape)).reshape(-1)
            mt = _device_dtype(np.dtype(dtype), gpu_backend() or "cuda")
            if (a.dtype == np.float64) != (np.dtype(dtype) == np.float64) and mx.uint64 in (m.dtype, mt):
                from .. import runtime      # float64 held as its bits on cuda: convert values, not bits
                m = runtime.float64_bits(m) if mt == mx.uint64 else \
                    runtime.bits_float64(m).astype(mt, stream=mx.cpu)
            m = m.astype(mt) if m.dtype != mt else mx.array(m)
            size = int(np.prod(shape)) if shape else 1
            return DeviceNDArray(_dev=m, _layout_=_layout((size,), dtype))
        a = a._host
    return np.ascontiguousarray(np.broadcast_to(np.asarray(a, dtype=dtype), shape)).reshape(-1)


# ----------------------------------------------------------------------------- vectorize

class CUDAUFunc:
    """A ufunc from ``@cuda.vectorize``: call it like a NumPy ufunc (``out=``,
    ``stream=``), or ``.reduce(array)`` for binary ones."""

    def __init__(self, pyfunc, signatures=(), identity=None):
        self.pyfunc = self.py_func = pyfunc
        self.__name__ = pyfunc.__name__
        self.__doc__ = pyfunc.__doc__
        self.identity = identity
        self.nin = len(inspect.signature(pyfunc).parameters)
        self.nout = 1
        self.types: dict = {}            # input dtypes -> (output dtype, kernel)
        self.dynamic = not signatures
        for sig in signatures:
            self.add(sig)

    def __repr__(self) -> str:
        return f"<metalbench.cuda ufunc {self.__name__}>"

    def add(self, sig):
        """Compile for one more signature (``"float32(float32, float32)"`` or an object)."""
        s = nbt.parse_signature(sig)
        if len(s.args) != self.nin:
            raise TypeError(f"signature {s} has {len(s.args)} argument(s); {self.__name__} takes {self.nin}")
        if s.return_type is None:
            raise TypeError(f"vectorize signature {sig!r} needs a return type, as in 'float32(float32)'")
        ins = tuple(_dtype(t) for t in s.args)
        self.types[ins] = (_dtype(s.return_type), s)

    def kernel(self, ins, scalars: tuple):
        """The kernel for input dtypes ``ins``; ``scalars[i]``: input ``i`` is a scalar
        argument (read as is) rather than an array (read at the thread's element)."""
        key = ("kernel", ins, scalars)
        k = self.__dict__.get("_kernels", {}).get(key)
        if k is None:
            k = self._kernel(self.types[ins][1] if ins in self.types else None, scalars)
            self.__dict__.setdefault("_kernels", {})[key] = k
        return k

    def _kernel(self, sig, scalars):
        from .host import DeviceFunction
        core = self.__dict__.get("_core", {}).get(sig)
        if core is None:
            if self.pyfunc.__name__ == "<lambda>":
                from ..cuda.extending import _lambda_function
                core = _lambda_function(self.pyfunc, sig)
            else:
                core = DeviceFunction(self.pyfunc, sig=sig)
            self.__dict__.setdefault("_core", {})[sig] = core
        names = [f"a{i}" for i in range(self.nin)]
        items = [a if sc else f"{a}[i]" for a, sc in zip(names, scalars)]
        kname = "__vectorized_" + re.sub(r"\W", "_", self.__name__)
        src = (f"def {kname}({', '.join(names)}, out, n):\n"
               f"    i = cuda.grid(1)\n"
               f"    if i < n:\n"
               f"        out[i] = __core({', '.join(items)})\n")
        from .. import cuda
        return _exec_kernel(src, kname, {"cuda": cuda, "__core": core})

    # -- resolution -------------------------------------------------------------------
    def _resolve(self, args):
        """(input dtypes, output dtype, kernel) for these arguments (numba-cuda's rule:
        array dtypes match exactly; scalars take the signature's types)."""
        actual = [None if _is_scalar(a) else np.dtype(a.dtype) for a in args]
        if self.dynamic:
            ins = tuple(np.asarray(a).dtype if t is None else t for a, t in zip(args, actual))
            if ins not in self.types:
                self._compile_dynamic(ins)
            return ins, *self.types[ins]
        matches = [k for k in self.types
                   if all((np.asarray(a).dtype if t is None else t) == f for a, t, f in zip(args, actual, k))]
        if not matches:
            matches = [k for k in self.types if all(t is None or t == f for t, f in zip(actual, k))]
        if not matches:
            raise TypeError("No matching version.  GPU ufunc requires array arguments to have the exact types.  "
                            "This behaves like regular ufunc with casting='no'.")
        if len(matches) > 1:
            raise TypeError("Failed to resolve ufunc due to ambiguous signature. Too many untyped scalars. "
                            "Use numpy dtype object to type tag.")
        return matches[0], *self.types[matches[0]]

    def _compile_dynamic(self, ins):
        """Compile for input dtypes ``ins``; the output dtype is the function's result
        type under Numba's typing (read from the translated kernel)."""
        from .. import ir
        k = self._kernel(None, (False,) * self.nin)
        probe_args = [np.zeros(1, d) for d in ins] + [np.zeros(1, np.float64), 1]
        kir = k.ir(*probe_args)
        calls = [n for n in ir.walk(kir.body) for f in kir.functions if isinstance(n, ir.FuncCall) and n.func == f.name]
        ret = calls[0].type if calls else None
        if ret is None or not hasattr(ret, "np"):
            raise TypeError(f"{self.__name__} returns no scalar value for arguments of types "
                            f"{', '.join(map(str, ins))}")
        self.types[ins] = (np.dtype(ret.np), None)

    # -- calling ----------------------------------------------------------------------
    def __call__(self, *args, out=None, stream=0, **kws):
        if kws:
            warnings.warn("unrecognized keywords: %s" % ", ".join(kws), stacklevel=2)
        if len(args) == self.nin + 1 and out is None:
            args, out = args[:-1], args[-1]
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__} takes {self.nin} argument(s), got {len(args)}")
        args = [a if _is_scalar(a) else _as_array(a) for a in args]
        ins, res_t, _ = self._resolve(args)
        arrays = [a for a in args if not _is_scalar(a)]
        try:
            shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
        except ValueError as e:
            raise ValueError(f"{self.__name__}: {e}") from None
        n = int(np.prod(shape)) if shape else 1
        on_device = any(_is_device(a) for a in args) or _is_device(out)
        scalars = tuple(_is_scalar(a) for a in args)
        kernel = self.kernel(ins, scalars)
        kargs = [t.type(a) if sc else _flat_broadcast(a, shape or (1,), t) for a, t, sc in zip(args, ins, scalars)]
        if out is not None:
            out = _as_array(out)
            if tuple(out.shape) != tuple(shape) and out.size != n:
                raise ValueError(f"{self.__name__}: out has shape {out.shape}, the result {shape}")
            if out.dtype != res_t:
                raise TypeError(f"{self.__name__}: out has dtype {out.dtype}, the result {res_t}")
            flat = _flat_out(out)
            _launch_1d(kernel, n, [*kargs, flat[0], n], stream)
            flat[1]()
            return out
        if on_device:
            res = device_array(max(n, 1), res_t, stream=stream)
            _launch_1d(kernel, n, [*kargs, res, n], stream)
            return res.reshape(shape) if shape else res
        res = np.empty(max(n, 1), res_t)
        _launch_1d(kernel, n, [*kargs, res, n], stream)
        return res.reshape(shape) if shape else res[0]

    def reduce(self, arr, axis=0, dtype=None, out=None, stream=0):
        """Reduce a 1-D array (NumPy or device) with this binary ufunc, pairwise on the
        device; returns a NumPy scalar."""
        if self.nin != 2:
            raise TypeError("reduce only supported for binary functions")
        if axis != 0:
            raise NotImplementedError("reduce only along axis 0")
        a = _as_array(arr)
        if a.ndim != 1:
            a = a.reshape(-1) if _is_device(a) else np.asarray(a).reshape(-1)
        if a.size == 0:
            if self.identity is None:
                raise ValueError("zero-size array to reduction operation with no identity")
            return np.asarray(self.identity, dtype=a.dtype)[()]
        if not _is_device(a):
            a = to_device(np.ascontiguousarray(a), stream)
        return pairwise(self, a, stream).copy_to_host(stream=stream)[0]


def pairwise(uf, a: DeviceNDArray, stream=0) -> DeviceNDArray:
    """A 1-element device array: the 1-D device array ``a`` combined pairwise with the
    binary ufunc ``uf`` (``a[:h]`` with ``a[h:2h]``, an odd last element carried)."""
    while a.size > 1:
        half = a.size // 2
        head = uf(a[:half], a[half:2 * half], stream=stream)
        if a.size % 2:
            head = _concat(head, a[2 * half:])
        a = head
    return a


def _concat(a: DeviceNDArray, b: DeviceNDArray) -> DeviceNDArray:
    """Two 1-D device arrays end to end, on the device."""
    out = device_array(a.size + b.size, a.dtype)
    out[:a.size] = a
    out[a.size:] = b
    return out


def _flat_out(out):
    """(a 1-D array the kernel writes, a function putting it into ``out``)."""
    if _is_device(out):
        if out.is_c_contiguous():
            return (out.reshape(-1) if out.ndim != 1 else out), (lambda: None)
        tmp = device_array(out.size, out.dtype)
        return tmp, (lambda: out.copy_to_device(tmp.reshape(out.shape)))
    if out.flags.c_contiguous:
        return out.reshape(-1), (lambda: None)
    tmp = np.empty(out.size, out.dtype)
    return tmp, (lambda: np.copyto(out, tmp.reshape(out.shape)))


def vectorize(ftylist_or_function=(), **kws):
    """``@cuda.vectorize(signatures)`` / ``@numba.vectorize(signatures, target="cuda")``
    (without signatures: compiled per argument types at the first call).

    >>> @vectorize
    ... def twice(x):
    ...     return 2 * x
    >>> twice(np.arange(3, dtype=np.int32)).tolist()
    [0, 2, 4]
    """
    if callable(ftylist_or_function) and not isinstance(ftylist_or_function, (str, list, tuple, nbt.Signature)):
        _check_options(kws, "vectorize")
        return CUDAUFunc(ftylist_or_function, (), kws.get("identity"))
    sigs = ftylist_or_function
    if isinstance(sigs, (str, nbt.Signature)):
        sigs = [sigs]
    _check_options(kws, "vectorize")

    def wrap(fn):
        return CUDAUFunc(fn, list(sigs), kws.get("identity"))
    return wrap


# ----------------------------------------------------------------------------- guvectorize

def parse_gufunc_signature(sig: str):
    """``"(m,n),(n)->(m)"`` -> ([("m", "n"), ("n",)], [("m",)]).

    >>> parse_gufunc_signature("(m, n), (n) -> (m)")
    ([('m', 'n'), ('n',)], [('m',)])
    """
    text = re.sub(r"\s+", "", sig)
    if "->" not in text:
        raise ValueError(f"gufunc signature {sig!r} has no '->'")
    ins, outs = text.split("->", 1)

    def groups(part):
        if not re.fullmatch(r"(\((\w+(,\w+)*,?)?\),?)*", part):
            raise ValueError(f"bad gufunc signature {sig!r}")
        return [tuple(x for x in g.split(",") if x) for g in re.findall(r"\(([^)]*)\)", part)]
    inputs, outputs = groups(ins), groups(outs)
    undefined = {s for g in outputs for s in g} - {s for g in inputs for s in g}
    if undefined:
        raise NameError("undefined output symbols: %s" % ",".join(sorted(undefined)))
    return inputs, outputs


class GUFuncSchedule:
    """How a gufunc call runs: core shapes of inputs and outputs, the loop dimensions,
    which inputs are the same for every loop iteration (``pinned``)."""

    def __init__(self, ishapes, oshapes, loopdims, pinned):
        self.ishapes = ishapes
        self.oshapes = oshapes
        self.loopdims = loopdims
        self.loopn = _reduce(operator.mul, loopdims, 1)
        self.pinned = pinned
        self.output_shapes = [loopdims + s for s in oshapes]

    def __repr__(self) -> str:
        return (f"GUFuncSchedule(ishapes={self.ishapes}, oshapes={self.oshapes}, loopdims={self.loopdims}, "
                f"pinned={self.pinned})")


class GUFuncEngine:
    """Schedules a gufunc call from its signature and the input shapes.

    >>> GUFuncEngine.from_signature("(m,n),(n,p)->(m,p)").schedule([(100, 4, 5), (1, 5, 7)]).pinned
    [False, True]
    """

    @classmethod
    def from_signature(cls, signature):
        return cls(*parse_gufunc_signature(signature))

    def __init__(self, inputsig, outputsig):
        self.sin, self.sout = inputsig, outputsig
        self.nin, self.nout = len(inputsig), len(outputsig)

    def schedule(self, ishapes):
        if len(ishapes) != self.nin:
            raise TypeError("invalid number of input argument")
        sizes, outer, inner = {}, [], []
        for k, (shape, syms) in enumerate(zip(ishapes, self.sin), 1):
            shape = tuple(shape)
            if len(shape) < len(syms):
                raise ValueError(f"arg #{k}: insufficient inner dimension")
            core = shape[len(shape) - len(syms):] if syms else ()
            for axis, (d, s) in enumerate(zip(core, syms), len(shape) - len(syms)):
                if sizes.setdefault(s, d) != d:
                    raise ValueError(f"arg #{k}: shape[{axis}] mismatch argument")
            outer.append(shape[:len(shape) - len(syms)])
            inner.append(core)
        oshapes = [tuple(sizes[s] for s in g) for g in self.sout]
        loopdims = max(outer, key=lambda s: _reduce(operator.mul, s, 1))
        pinned = []
        for k, d in enumerate(outer, 1):
            if d != loopdims and d not in ((1,), ()):
                raise ValueError(f"arg #{k}: outer dimension mismatch")
            pinned.append(d != loopdims)
        return GUFuncSchedule(inner, oshapes, loopdims, pinned)


class _CoreRewriter(ast.NodeTransformer):
    """The core function's body as kernel code: array argument ``x`` with ``d`` core
    dimensions becomes the (loop, core...) array indexed at the thread's loop position
    ``__tid__``: ``x[j]`` -> ``x[__tid__, j]``, ``x.shape[k]`` -> ``x.shape[k + 1]``,
    ``len(x)`` -> ``x.shape[1]``; a 0-d argument is ``x[__tid__]`` (an output of shape
    ``()`` is written as ``x[0]``, like a 1-element array)."""

    def __init__(self, arrays: dict, scalars: set, fname: str):
        self.arrays = arrays          # name -> core ndim (0: element, given as 1-element array)
        self.scalars = scalars        # names read as x[__tid__]
        self.fname = fname

    def _tid(self):
        return ast.Name("__tid__", ast.Load())

    def visit_Subscript(self, node):
        if isinstance(node.value, ast.Name) and node.value.id in self.arrays:
            nd = self.arrays[node.value.id]
            idx = self.visit(node.slice)
            if nd == 0:
                return ast.copy_location(ast.Subscript(node.value, ast.BinOp(self._tid(), ast.Add(), idx),
                                                       node.ctx), node)
            elts = idx.elts if isinstance(idx, ast.Tuple) else [idx]
            return ast.copy_location(ast.Subscript(node.value, ast.Tuple([self._tid(), *elts], ast.Load()),
                                                   node.ctx), node)
        if (isinstance(node.value, ast.Attribute) and isinstance(node.value.value, ast.Name)
                and node.value.value.id in self.arrays and node.value.attr == "shape"):
            k = self.visit(node.slice)
            return ast.copy_location(ast.Subscript(node.value, ast.BinOp(k, ast.Add(), ast.Constant(1)),
                                                   node.ctx), node)
        return self.generic_visit(node)

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1 \
                and isinstance(node.args[0], ast.Name) and node.args[0].id in self.arrays:
            return ast.copy_location(ast.parse(f"{node.args[0].id}.shape[1]", mode="eval").body, node)
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in self.scalars and isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.Subscript(node, self._tid(), ast.Load()), node)
        if node.id in self.arrays and isinstance(node.ctx, ast.Load):
            raise KernelSyntaxError(f"guvectorize {self.fname}: the array argument {node.id!r} is used whole "
                                    f"(line {getattr(node, 'lineno', '?')}); metalbench inlines gufunc bodies, "
                                    "so use its elements, shape or len() only",
                                    hint="index it (x[i]), or read x.shape[k] / len(x)")
        return node

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id in self.arrays:
            if node.attr == "shape":     # the core shape, as a tuple
                nd = self.arrays[node.value.id]
                return ast.copy_location(ast.parse("(" + "".join(f"{node.value.id}.shape[{k + 1}], "
                                                                 for k in range(nd)) + ")", mode="eval").body, node)
            if node.attr == "size":
                nd = max(1, self.arrays[node.value.id])
                return ast.copy_location(ast.parse(" * ".join(f"{node.value.id}.shape[{k + 1}]"
                                                              for k in range(nd)), mode="eval").body, node)
            if node.attr == "ndim":
                return ast.copy_location(ast.Constant(self.arrays[node.value.id]), node)
        return self.generic_visit(node)


class CUDAGUFunc:
    """A generalised ufunc from ``@cuda.guvectorize``: call it with the inputs (outputs
    are allocated) or inputs and outputs, or ``out=``."""

    def __init__(self, pyfunc, signatures, layout: str):
        self.pyfunc = self.py_func = pyfunc
        self.__name__ = pyfunc.__name__
        self.__doc__ = pyfunc.__doc__
        self.layout = layout
        self.engine = GUFuncEngine.from_signature(layout)
        self.nin, self.nout = self.engine.nin, self.engine.nout
        self.types: dict = {}       # input dtypes -> (output dtypes, kernel)
        for sig in signatures:
            self.add(sig)

    def __repr__(self) -> str:
        return f"<metalbench.cuda gufunc {self.__name__} {self.layout}>"

    def __metalbench_intrinsic__(self, tr, call):
        # numba-cuda types a gufunc in a kernel as an unknown global (its TypingError's words)
        from ..errors import KernelTypeError
        raise tr.err(KernelTypeError, f"Untyped global name '{self.__name__}': a cuda.guvectorize gufunc cannot be "
                                      "called from a kernel", call,
                     hint="call it from the host, or make its body a @cuda.jit(device=True) function")

    def add(self, sig):
        s = nbt.parse_signature(sig)
        if s.return_type not in (None, nbt.none, nbt.void):
            raise TypeError(f"guvectorized functions cannot return values: signature {sig} specifies "
                            f"{s.return_type} return type")
        dims = [len(g) for g in self.engine.sin + self.engine.sout]
        if len(s.args) != len(dims):
            raise TypeError(f"signature {sig} has {len(s.args)} argument(s); the layout {self.layout!r} "
                            f"has {len(dims)}")
        dtypes = [np.dtype(_dtype(t.dtype if isinstance(t, nbt.Array) else t)) for t in s.args]
        for t, nd in zip(s.args, dims):
            if not isinstance(t, nbt.Array) and nd > 0:
                raise ValueError("gufunc signature mismatch: ndim>0 for scalar")
        arrays = [isinstance(t, nbt.Array) for t in s.args]
        self.types[tuple(dtypes[:self.nin])] = (tuple(dtypes[self.nin:]), self._kernel(arrays, dims))

    def _kernel(self, is_array, dims):
        try:
            src = textwrap.dedent(inspect.getsource(self.pyfunc))
        except (OSError, TypeError):
            raise MetalbenchError(f"cannot read the source of {self.__name__}",
                                  hint="define gufunc functions in a file or a notebook cell") from None
        fdef = next(n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef))
        names = [a.arg for a in fdef.args.args]
        arrays = {n: nd for n, arr, nd in zip(names, is_array, dims) if arr}
        scalars = {n for n, arr in zip(names, is_array) if not arr}
        body = [_CoreRewriter(arrays, scalars, self.__name__).visit(s) for s in fdef.body]
        kname = f"__gufunc_{self.__name__}"
        fn = ast.FunctionDef(kname, ast.arguments([], [ast.arg(n) for n in names] + [ast.arg("__n__")], None, [],
                                                  [], None, []),
                             [ast.parse("__tid__ = cuda.grid(1)").body[0],
                              ast.parse("if __tid__ >= __n__:\n    return").body[0], *body], [], None)
        ast.fix_missing_locations(fn)
        text = ast.unparse(ast.Module([fn], []))
        env = dict(self.pyfunc.__globals__)
        if self.pyfunc.__closure__:
            env.update(zip(self.pyfunc.__code__.co_freevars, (c.cell_contents for c in self.pyfunc.__closure__)))
        from .. import cuda
        env["cuda"] = cuda
        return _exec_kernel(text + "\n", kname, env)

    def _find(self, indtypes):
        hit = self.types.get(indtypes)
        if hit is not None:
            return indtypes, hit
        # numba-cuda's rule: the first signature whose types cast to the inputs' (the
        # inputs are then converted to the signature's types).
        for k, v in self.types.items():
            if all(np.can_cast(d, a) for a, d in zip(indtypes, k)):
                return k, v
        raise TypeError("no matching signature")

    def __call__(self, *args, out=None, stream=0):
        nin, nout = self.nin, self.nout
        if out is None and len(args) not in (nin, nin + nout):
            def n(k):
                return f"{k} positional argument{'s' * (k != 1)}"
            raise TypeError(f"This gufunc accepts {n(nin)} (when providing input only) or {n(nin + nout)} (when "
                            f"providing input and output). Got {n(len(args))}.")
        if out is not None and len(args) > nin:
            raise ValueError("cannot specify argument 'out' as both positional and keyword")
        outs = list(args[nin:]) if len(args) > nin else ([out] if nout == 1 else list(out)) if out is not None \
            else [None] * nout
        ins = [a if _is_device(a) else _as_array(np.asarray(a) if _is_scalar(a) else a) for a in args[:nin]]
        device = any(_is_device(a) for a in ins) or any(_is_device(o) for o in outs)
        sched = self.engine.schedule([a.shape for a in ins])
        indtypes, (outdtypes, kernel) = self._find(tuple(np.dtype(a.dtype) for a in ins))
        for shp, o in zip(sched.output_shapes, outs):
            if o is not None and tuple(o.shape) != tuple(shp):
                raise ValueError("output shape mismatch")
        loop = sched.loopn
        kargs = []
        for a, core, t in zip(ins, sched.ishapes, indtypes):
            full = sched.loopdims + tuple(core)
            flat = _flat_broadcast(a, full, t)
            kargs.append(flat.reshape((max(loop, 1),) + tuple(core)) if core else flat)
        results, finish = [], []
        for shp, o, t, core in zip(sched.output_shapes, outs, outdtypes, sched.oshapes):
            target = (max(loop, 1),) + (tuple(core) if core else ())
            if o is not None and (_is_device(o) or (isinstance(o, np.ndarray) and o.flags.c_contiguous)) \
                    and o.dtype == t:
                results.append(o)
                kargs.append(o.reshape(target))
                continue
            buf = device_array(target, t) if device else np.empty(target, t)
            kargs.append(buf)
            if o is not None:
                finish.append((o, buf))
                results.append(o)
            else:
                results.append(buf.reshape(shp) if shp else buf.reshape(()) if not device else buf)
        _launch_1d(kernel, max(loop, 1), [*kargs, max(loop, 1)], stream)
        for o, buf in finish:
            if _is_device(o):
                o.copy_to_device(buf.reshape(o.shape))
            else:
                np.copyto(o, (buf.copy_to_host() if _is_device(buf) else buf).reshape(o.shape))
        return results[0] if len(results) == 1 else tuple(results)


def guvectorize(*args, **kws):
    """``@cuda.guvectorize(signatures, layout)`` (``@numba.guvectorize(..., target="cuda")``).

    >>> @guvectorize(["void(float32[:], float32[:])"], "(n)->()")
    ... def total(x, r):
    ...     s = 0.0
    ...     for i in range(x.shape[0]):
    ...         s += x[i]
    ...     r[0] = s
    >>> total(np.ones((2, 3), np.float32)).tolist()
    [3.0, 3.0]
    """
    if len(args) == 1:
        sigs, layout = None, args[0]
    elif len(args) == 2:
        sigs, layout = args
    else:
        raise TypeError("guvectorize(signatures, layout)")
    if not isinstance(layout, str):
        raise TypeError(f"guvectorize: the layout must be a string like '(n),(n)->()', got {layout!r}")
    _check_options(kws, "guvectorize")
    if sigs is None:
        raise TypeError("guvectorize without signatures is not supported on the cuda target: give "
                        "['void(float32[:], float32[:])', ...]")
    if isinstance(sigs, (str, nbt.Signature, tuple)):
        sigs = [sigs]

    def wrap(fn):
        return CUDAGUFunc(fn, list(sigs), layout)
    return wrap
