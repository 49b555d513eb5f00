"""``numba.cuda.extending`` for ported code: ``overload`` and ``register_jitable`` work on
kernels; the LLVM-level extension API (``intrinsic``, ``lower_builtin``, data models)
cannot exist here -- metalbench compiles to MSL/CUDA C++ through MLX, not to LLVM IR --
and says so when used.

``@overload(f)`` makes the plain Python function ``f`` callable in kernels: at each call
the typing function receives the Numba types of the arguments and returns the
implementation, which is compiled as a device function::

    def clamp01(x):
        return min(max(x, 0.0), 1.0)

    @overload(clamp01)
    def _clamp01(x):
        if isinstance(x, types.Float):
            return lambda x: min(max(x, 0.0), 1.0)

    @cuda.jit
    def k(a):
        i = cuda.grid(1)
        a[i] = clamp01(a[i])
"""
from __future__ import annotations

import ast

from ..errors import KernelTypeError, MetalbenchError
from ..numba_compat import nbtypes as nbt

_DEVICE = {}      # implementation function -> its DeviceFunction


def _device_function(impl):
    from ..numba_compat.host import CUDAKernel, DeviceFunction
    if isinstance(impl, DeviceFunction):
        return impl
    if isinstance(impl, CUDAKernel):
        return impl.as_device_function()
    f = getattr(impl, "__metalbench_device_function__", None)
    if f is not None:
        return f
    d = _DEVICE.get(impl)
    if d is None:
        d = _DEVICE[impl] = _lambda_function(impl) if impl.__name__ == "<lambda>" else DeviceFunction(impl)
    return d


def _lambda_function(fn, sig=None):
    """A lambda as a device function: its expression becomes ``def f(args): return expr``,
    with the lambda's globals and closure as the names it sees."""
    import inspect
    import textwrap
    from ..numba_compat.host import DeviceFunction
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        lines, first = [], 0
    raw = "".join(lines)
    src = textwrap.dedent(raw)
    shift = (len(lines[0]) - len(lines[0].lstrip())) - (len(src.splitlines()[0]) - len(src.splitlines()[0].lstrip())) \
        if lines else 0
    code = fn.__code__
    params = list(code.co_varnames[:code.co_argcount])
    # Where the lambda's own code starts (line, column): tells lambdas on one line apart.
    pos = next(((ln, col) for ln, _, col, end in code.co_positions() if ln is not None and col is not None and end),
               None)
    found = None
    for text in (src, src.strip().rstrip(",").rstrip(")"), "(" + src.strip() + ")"):
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        lams = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and [a.arg for a in n.args.args] == params]
        if len(lams) > 1 and pos is not None and text is src:
            line, col = pos[0] - first + 1, pos[1] - shift
            lams = [n for n in lams if (n.body.lineno, n.body.col_offset) <= (line, col)
                    <= (n.body.end_lineno, n.body.end_col_offset)]
        if len(lams) == 1:
            found = lams[0]
            break
    if found is None:
        raise MetalbenchError(f"cannot read the source of the lambda {fn!r} used as an implementation",
                              hint="write the implementation as a def")
    body = f"def _lambda_impl({ast.unparse(found.args)}):\n    return {ast.unparse(found.body)}\n"
    env = dict(fn.__globals__)
    if fn.__closure__:
        env.update(zip(code.co_freevars, (c.cell_contents for c in fn.__closure__)))
    return DeviceFunction(None, sig=sig, source=body, env=env)


def _type_of_arg(tr, node):
    """The Numba type of a call argument inside a kernel (what an overload's typing
    function receives)."""
    if isinstance(node, ast.Name):
        b = tr.lookup(node.id, node)
        if b.kind == "buf":
            info = b.value
            return nbt.Array(nbt.from_dtype(info.elem.np), max(1, info.ndim or 1), "A")
        if b.kind in ("const", "pyobj"):
            try:
                return nbt.typeof(b.value)
            except (ValueError, TypeError):
                return nbt.Opaque(type(b.value).__name__)
    if isinstance(node, ast.Constant):
        return nbt.typeof(node.value)
    if isinstance(node, ast.Tuple):
        return nbt.Tuple([_type_of_arg(tr, e) for e in node.elts])
    return _type_of_value(tr.value_or_tuple(node))


def _type_of_value(e):
    items = getattr(e, "items", None)
    if items is not None:               # a tuple value: Numba's Tuple/UniTuple of its items
        return nbt.Tuple([_type_of_value(x) for x in items])
    np_dtype = getattr(getattr(e, "type", None), "np", None)
    if np_dtype is not None:
        return nbt.from_dtype(np_dtype)
    return nbt.Opaque(type(e).__name__)


class _Overload:
    """What ``@overload(func)`` registers: the typing function, called with the
    argument types at each call site in a kernel."""

    def __init__(self, func, typer, options):
        self.func = func
        self.typer = typer
        self.options = options

    def hook(self, tr, call):
        types = [_type_of_arg(tr, a) for a in call.args]
        kwtypes = {kw.arg: _type_of_arg(tr, kw.value) for kw in call.keywords}
        try:
            impl = self.typer(*types, **kwtypes)
        except MetalbenchError:
            raise
        except Exception as e:
            raise tr.err(KernelTypeError, f"the @overload of {self.func.__name__} raised {type(e).__name__}: {e}",
                         call) from e
        if impl is None:
            shown = ", ".join(map(str, types + [f"{k}={v}" for k, v in kwtypes.items()]))
            raise tr.err(KernelTypeError, f"no @overload implementation of {self.func.__name__} for ({shown})",
                         call, hint="the overload's typing function returned None for these argument types")
        return tr.device_call(_device_function(impl), call)


def overload(func, jit_options=None, strict=True, inline="never", prefer_literal=False, **kwargs):
    """``@overload(func)``: make ``func`` callable in kernels through a typing function
    that takes the arguments' Numba types and returns an implementation (a Python
    function compiled as a device function), or None when it does not apply.

    >>> def twice(x):
    ...     return 2 * x
    >>> @overload(twice)
    ... def _twice(x):
    ...     return lambda x: x + x
    >>> hasattr(twice, "__metalbench_intrinsic__")
    True
    """
    def decorate(typer):
        ol = _Overload(func, typer, dict(jit_options or {}, inline=inline, **kwargs))
        try:
            func.__metalbench_intrinsic__ = ol.hook
        except (AttributeError, TypeError):
            raise TypeError(f"@overload({func!r}): metalbench can overload plain Python functions only "
                            "(not builtins or NumPy functions)") from None
        return typer
    return decorate


def register_jitable(*args, **kwargs):
    """``@register_jitable``: the function stays callable from Python and becomes
    callable from kernels (compiled as a device function where it is called).

    >>> @register_jitable
    ... def add1(x):
    ...     return x + 1
    >>> add1(1)
    2
    """
    def wrap(fn):
        fn.__metalbench_intrinsic__ = lambda tr, call: tr.device_call(_device_function(fn), call)
        return fn
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return wrap(args[0])
    return wrap


def _llvm_only(what):
    def refuse(*args, **kwargs):
        raise MetalbenchError(f"numba.cuda.extending.{what} extends Numba's LLVM code generation; metalbench "
                              "compiles kernels to MSL/CUDA C++ through MLX, so it has no LLVM level to extend",
                              hint="write the function as a @cuda.jit(device=True) function, or make a Python "
                                   "function callable in kernels with @overload or @register_jitable")
    refuse.__name__ = what
    return refuse


class _Intrinsic:
    """``@intrinsic``: an LLVM-level function. Defining one is allowed; calling it (from
    Python or a kernel) says why it cannot work here."""

    def __init__(self, name, defn, prefer_literal=False, **kwargs):
        self._name = name
        self._defn = defn

    def __call__(self, *args, **kwargs):
        _llvm_only("intrinsic")()

    @property
    def __metalbench_intrinsic__(self):
        def hook(tr, call):
            raise tr.err(KernelTypeError, f"{self._name} is a numba.extending.intrinsic: it generates LLVM IR, which "
                                          "metalbench (MSL/CUDA C++ through MLX) cannot use", call,
                         hint="write it as a @cuda.jit(device=True) function")
        return hook


def intrinsic(*args, **kwargs):
    """``@intrinsic``: accepted at definition, a clear error when called (no LLVM here)."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return _Intrinsic(args[0].__name__, args[0])
    return lambda fn: _Intrinsic(fn.__name__, fn, **kwargs)


overload_method = overload_attribute = overload_classmethod = _llvm_only("overload_method")
type_callable = lower_builtin = lower_cast = lower_getattr = lower_setattr = _llvm_only("lower_builtin")
make_attribute_wrapper = register_model = typeof_impl = box = unbox = NativeValue = _llvm_only("register_model")
models = core_models = None


class CPUFunction:
    """What ``numba.njit`` gives ported code: the function runs as Python when called
    from Python (Numba would compile it for the CPU; the results are the same) and is
    compiled as a device function when a kernel calls it, as numba-cuda allows."""

    def __init__(self, fn, signatures=(), options=None):
        self.py_func = fn
        self.signatures = list(signatures)
        self.targetoptions = dict(options or {})
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __call__(self, *args, **kwargs):
        return self.py_func(*args, **kwargs)

    def __metalbench_intrinsic__(self, tr, call):
        return tr.device_call(_device_function(self.py_func), call)

    def __repr__(self) -> str:
        return f"<metalbench.cuda njit function {self.__name__} (runs as Python on the host)>"


def njit(*args, **kwargs):
    """``numba.njit`` for ported code (see :class:`CPUFunction`).

    >>> @njit
    ... def f(x):
    ...     return x + 1
    >>> f(1), f.py_func(2)
    (2, 3)
    """
    if len(args) == 1 and callable(args[0]) and not isinstance(args[0], (str, list, tuple)):
        return CPUFunction(args[0], (), kwargs)
    sigs = args[0] if args else ()
    sigs = sigs if isinstance(sigs, list) else [sigs] if sigs else []
    return lambda fn: CPUFunction(fn, sigs, kwargs)
