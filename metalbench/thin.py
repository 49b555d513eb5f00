"""The thin path: what a repeated kernel call runs instead of binding again.

A kernel's ``__call__`` keys a call by its argument signature (array dtype and shape,
scalar types, constexpr values, grid, threadgroup, backend) and maps a repeated key
straight to the prepared MLX call (``protocol.MLXLaunch``), through a function
generated per entry (:func:`thin_gpu_call`); in front of that, the last entry's
generated *guard* (:func:`launch_guard`) checks a call against the entry's key and
launches in one frame. Also here: the converters from user values to MLX inputs
(0-d arrays for scalars, cached). ``protocol`` re-exports every name.

    >>> signatures([1.5, True])
    (<class 'float'>, <class 'bool'>)
"""
from __future__ import annotations

import functools
import keyword
import math
import re
from typing import NamedTuple

import numpy as np

from . import launch as L
from . import runtime
from . import scalar
from . import types as T

def _converter(kind: str, t: T.ScalarType, backend: str = "", shaped: bool = True):
    """value -> what MLX receives for an input of ``kind`` and type ``t`` on ``backend``
    (float64 on cuda: its bits, ``runtime.carrier``). ``shaped``: whether MLX passes this
    input's shape arguments (``mlx_signature.shape_infos``; a 0-d ``mx.array`` scalar must
    then cross as a vector on cuda)."""
    mx_array = mlx_array_type()
    if runtime.carrier(t, backend) is not t:
        if kind != "scalar":
            return runtime.float64_bits

        def scalar_bits(v):    # float64 on cuda: its bits, a vector as other scalars (below)
            if type(v) is mx_array:
                return runtime.float64_scalar_bits(v).reshape(1)
            return scalar_array(v, t, vector=True, bits=True)
        return scalar_bits
    mt = T.to_mlx(t)

    def buffer(v):
        if type(v) is mx_array:
            return v if v.dtype == mt else v.astype(mt)
        a = runtime.to_mlx(np.ascontiguousarray(runtime.to_numpy(v)))   # NumPy: the one copy
        return a if a.dtype == mt else a.astype(mt)

    # On cuda a scalar crosses as a one-element vector: MLX's CUDA kernels read it through a
    # pointer either way, and a 0-d input made from a number cost ~8 us more a launch on the
    # H200 (a kernel of 8 scalar parameters at 64K elements: 45.5 against 37.2 us). On Metal
    # a 0-d input is a ``constant T&``, which the printed MSL expects.
    vector = backend == "cuda"

    def scalar(v):
        if type(v) is mx_array:
            v = v if v.dtype == mt else v.astype(mt)
            # MLX 0.32's CUDA kernels skip a 0-d input's shape parameter in the signature but
            # pass its shape argument whenever the body holds ``<name>_shape`` anywhere, also
            # inside another input's (``k`` and ``codebook_shape``): every later argument
            # shifts (an illegal address in vmlx's codebook kernels). A vector has both.
            # Only then: the reshape is an MLX op per launch (~3 us a call on the H200)
            return v.reshape(1) if shaped and vector and v.ndim == 0 else v
        return scalar_array(v, t, vector)
    return scalar if kind == "scalar" else buffer


_SCALARS: dict = {}
# the scalar types with a signed zero (NumPy's too: np.float32(-0.0) == 0.0, same hash):
# a cache keyed by value must not answer -0.0 for 0.0
_SIGNED_ZEROS = frozenset([float, complex] + [np.dtype(c).type for c in "efdgFDG"])


def value_key(v):
    """``v`` as a key of a cache of converted scalars: ``v`` itself, except that a zero
    of a type with signed zeros carries its sign(s) (-0.0 == 0.0 and they hash alike, but
    a kernel must receive the one it was given). Zeros are cached like any value: a loop
    passing ``0.0`` on every launch must not upload a fresh array each time (on the H200 a
    fresh one-element array cost ~24 us of GPU time a launch, an upload on first use).

    >>> value_key(2.5), value_key(-0.0) == value_key(0.0), value_key(np.float32(-0.0)) == value_key(-0.0)
    (2.5, False, False)
    """
    if not v and type(v) in _SIGNED_ZEROS:
        c = complex(v)
        return ("zero", type(v), math.copysign(1.0, c.real), math.copysign(1.0, c.imag))
    return v


# MLX's CUDA allocator puts every allocation of at most 8 bytes (a one-element scalar array)
# in one shared pool of managed memory that the GPU maps but does not migrate: a kernel then
# reads its scalars from host memory, and every new scalar the host writes there keeps the
# pool's pages on the host. On the H200 the simulation's move step at 64K agents took 34-56 us
# with its eight scalars in one-element arrays, 15-20 us with the same values in 12-byte
# arrays, which live in their own managed pages and move to the GPU on first use
# (benchmarks/RESULTS.md, session 10). Creating such an array costs the host more (~10 us:
# its recycled page comes back from the GPU), so a value's first conversion stays one
# element and a value seen again (a loop's constant) gets the padded array, kept.
_ONCE: dict = {}
MLX_SMALL_POOL_BYTES = 8        # (mlx/backend/cuda/allocator.cpp: small_block_size)


def padded_length(itemsize: int) -> int:
    """Elements of ``itemsize`` bytes an array needs to be allocated outside MLX's small
    CUDA pool (more than :data:`MLX_SMALL_POOL_BYTES`).

    >>> padded_length(4), padded_length(2), padded_length(8)
    (3, 5, 2)
    """
    return MLX_SMALL_POOL_BYTES // itemsize + 1


def scalar_array(v, t: T.ScalarType, vector: bool = False, bits: bool = False):
    """An MLX array holding scalar ``v`` as ``t``: 0-d, or with ``vector`` (how scalars
    cross to CUDA kernels, which read element 0) one-dimensional: one element the first
    time a value is seen, from the second time on a vector of the value repeated past 8
    bytes (see ``_ONCE``); with ``bits`` (float64 on cuda) uint64 holding the value's
    float64 bits. Recent values are kept, so a kernel launched in a loop with the same
    scalars does not allocate and copy them each time.

    >>> scalar_array(3, T.int32).shape, scalar_array(0.25, T.float16, vector=True).tolist()
    ((), [0.25])
    >>> scalar_array(0.25, T.float16, vector=True).tolist()
    [0.25, 0.25, 0.25, 0.25, 0.25]
    """
    import mlx.core as mx
    try:
        key = (t.name, value_key(v.item() if isinstance(v, (np.generic, np.ndarray)) else v), vector, bits)
        a = _SCALARS.get(key)
    except (TypeError, ValueError):
        key, a = None, None
    if a is None:
        lasting = not vector or key is None or key in _ONCE
        if isinstance(v, np.ndarray):
            v = v.reshape(())[()]
        elif type(v) is int:                         # C's conversion: 0xFFFFFFFF as int32 is -1
            v = scalar.value(v, t)
        count = padded_length(np.dtype(t.np).itemsize) if vector and lasting else 1
        if bits:
            a = mx.array(np.array([float(v)] * count, np.float64).view(np.uint64))
        elif t in (T.bfloat16, T.float64):
            a = mx.array([float(v)] * count if vector else float(v), dtype=T.to_mlx(t))
        elif vector:        # (from a list, as a hand-written launch makes it: the value NumPy rounded)
            a = mx.array([np.asarray(v, dtype=t.np).item()] * count, dtype=T.to_mlx(t))
        else:
            a = mx.array(np.asarray(v, dtype=t.np))
        if key is not None and lasting:
            if len(_SCALARS) > 256:
                _SCALARS.clear()
            _SCALARS[key] = a
            _ONCE.pop(key, None)
        elif key is not None:
            if len(_ONCE) > 1024:
                _ONCE.clear()
            _ONCE[key] = None
    return a


def is_kept(a) -> bool:
    """Whether scalar array ``a`` (from :func:`scalar_array`) is one to keep: a 0-d one or a
    padded vector, not a first conversion's one-element vector.

    >>> is_kept(scalar_array(1.75, T.float32)), is_kept(scalar_array(1.75, T.float32, vector=True))
    (True, False)
    """
    return a.ndim == 0 or a.size > 1


@functools.lru_cache(maxsize=None)
def mlx_array_type():
    import mlx.core as mx
    return mx.array


# ----------------------------------------------------------------------------- thin path

_INT32 = (-(2 ** 31), 2 ** 31)
_UNKEYED = []     # in a key, makes it unhashable: that call binds from scratch
_MXA = None       # mx.array (set on first use)
_DTYPE_KEY = None  # how a dtype enters keys


def _mx_facts():
    global _MXA, _DTYPE_KEY
    import mlx.core as mx
    # MLX hashes a Dtype to its enum value: a unique small int, cheaper to hash and
    # compare than the Dtype object (a new wrapper on every ``a.dtype``). Checked, not assumed.
    dts = [getattr(mx, n) for n in ("bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
                                     "int64", "float16", "float32", "float64", "bfloat16")]
    _DTYPE_KEY = hash if len({hash(d) for d in dts}) == len(dts) else (lambda d: d)
    _MXA = mx.array


def arg_signature(a):
    """A hashable description of one argument for the thin-path key: dtype and shape of
    arrays, the type of scalars (ints: whether they fit int32, which decides their
    type), or an unhashable marker for anything else (that call then binds from scratch).

    >>> import numpy as np
    >>> arg_signature(np.zeros((2, 3), np.float32)), arg_signature(2.0), arg_signature(3)
    (('<f4', (2, 3)), <class 'float'>, (<class 'int'>, True))
    """
    if _MXA is None:
        _mx_facts()
    ta = type(a)
    if ta is _MXA:
        return (_DTYPE_KEY(a.dtype), a.shape)
    if ta is float or ta is bool:
        return ta
    if ta is np.ndarray:
        return (a.dtype.str, a.shape)
    if ta is int:
        return (int, _INT32[0] <= a < _INT32[1])
    if isinstance(a, np.generic):
        return a.dtype.str
    sig = getattr(ta, "__metalbench_signature__", None)     # device arrays and other array types
    return sig(a) if sig is not None else _UNKEYED


def signatures(args) -> tuple:
    """``arg_signature`` of each argument.

    >>> signatures([1.5, True])
    (<class 'float'>, <class 'bool'>)
    """
    return _SIGNATURES[len(args)](args)


class _SignatureFunctions(dict):
    """Number of arguments -> a function computing their signatures, generated unrolled
    (``mx.array`` and float inline): a comprehension's frame and loop cost as much as
    the attribute reads themselves, and this runs on every kernel call."""

    def __missing__(self, n):
        if _MXA is None:
            _mx_facts()
        names = [f"a{i}" for i in range(n)]
        items = [f"((dk({a}.dtype), {a}.shape) if type({a}) is mxa else float if type({a}) is float "
                 f"else sig({a}))" for a in names]
        src = (f"def signatures_{n}(args):\n" + (f"    {', '.join(names)}, = args\n" if n else "")
               + f"    return ({', '.join(items)}{',' if n == 1 else ''})\n")
        env = {"mxa": _MXA, "dk": _DTYPE_KEY, "sig": arg_signature}
        exec(compile(src, f"<metalbench signatures_{n}>", "exec"), env)
        f = self[n] = env[f"signatures_{n}"]
        return f


_SIGNATURES = _SignatureFunctions()


_ENV_KEY = b"METALBENCH_BACKEND"


def backend_token(backend):
    """What the thin-path key needs of ``backend``: the name, or for "auto" the
    ``METALBENCH_BACKEND`` setting it resolves with (read cheaply: no re-resolution).

    >>> backend_token("sim")
    'sim'
    """
    if backend is None or backend == "auto":
        return ("auto", L.env_fast(_ENV_KEY))
    return backend


class ThinCache(dict):
    """Per-kernel map from a call signature to its prepared launch (bounded), plus the
    last hit: ``last = (key, entry)``, compared before hashing (calls in a loop repeat
    one signature). Only hashable keys are ever stored, so an unhashable one (an
    argument of an unknown type) never equals ``last[0]``."""

    _NONE = (object(), None)

    def __init__(self):
        super().__init__()
        self.last = self._NONE

    def put(self, key, entry):
        if len(self) > 64:
            self.clear()
        self[key] = entry
        self.last = (key, entry)

    def clear(self):
        super().clear()
        self.last = self._NONE


class Front(NamedTuple):
    """How :func:`thin_gpu_call` writes a kernel object's own call (``f.front``): its
    parameters (``params``, e.g. ``"*args, grid=None, ..., **kwargs"``), the expression a
    call without the entry's key returns (``miss``), the ``__qualname__`` a TypeError
    names, a parameter that must be empty (``empty``: the ``**`` one when the key holds no
    keywords, or None), the same two for a ``k[grid, threadgroup]`` launcher
    (``grid_params``, ``grid_miss``; grid and threadgroup its first parameters), and the
    guard's lines for these signatures when they differ from the guard's (``lines``: the
    key's keywords as named parameters, :func:`launch_guard`'s ``named``).

    >>> Front("*args", "slow(args)", "K.__call__", None).grid_params is None
    True
    """
    params: str
    miss: str
    qualname: str
    empty: str | None
    grid_params: str | None = None
    grid_miss: str | None = None
    lines: list | None = None


def thin_gpu_call(plan: "MLXLaunch", sources: list, first_values: list, single: bool, owner=None,
                  last=None, fixed: tuple | None = None, guard: tuple | None = None, front: Front | None = None):
    """A function ``f(args, kwargs, init_value, checked, stream)`` launching ``plan``
    with the inputs taken by position from ``vec`` (``args``, or with ``fixed`` given,
    ``args + tuple(kwargs.values()) + fixed``), and setting ``owner.last_launch = last``
    (``KernelBase.last_launch``'s cell).

    ``sources[i]`` is the position in ``vec`` of MLX input ``i``; ``first_values`` are
    the values of the call that built the plan: inputs that were ``mx.array``s of the
    kernel's dtype need no converter (the thin key guarantees the same dtype later),
    scalars get a per-input cache of their 0-d arrays. The function is generated for
    its inputs (no loop, no ``**kwargs``): it is the whole host cost of a repeated call.

    With ``guard = (params, lines, env, where)`` (:func:`launch_guard`), ``f.guarded(params)``
    is the same launch (without init_value or stream) for the kernel's own arguments, after
    ``lines`` (which return :data:`MISS` unless the call has this entry's key). ``where``
    says where ``vec[i]`` is in the guard's frame: a list of expressions, or a number
    ``nargs`` (``a{i}`` below it, ``fixed[i - nargs]`` from it on).

    With ``front`` (a :class:`Front`) too, ``f.front`` is the same check and launch
    taking the kernel object's own call signature: the function a :class:`FastCall`
    kernel object hands its calls to (:func:`front_source`); a call without the entry's
    key returns the expression ``front.miss`` (the kernel's general path).
    """
    mx_array = mlx_array_type()
    from .protocol import unpad
    env = {"kernel": plan.kernel, "owner": owner, "box": owner._last if owner is not None else None, "last": last, "MISS": MISS,
           "unpad": unpad}
    env.update(("k_" + k, v) for k, v in plan.kwargs.items())
    items, gitems = [], []
    where = guard[3] if guard is not None else 0
    if type(where) is int:
        where = [f"a{i}" for i in range(where)]
    for j, ((name, kind, t), c, v, i) in enumerate(zip(plan.spec_inputs, plan.converters, first_values, sources)):
        a = where[i] if i < len(where) else f"fixed[{i - len(where)}]"
        if (type(v) is mx_array and v.dtype == T.to_mlx(t) and c is not runtime.float64_bits
                and not (kind == "scalar" and plan.backend == "cuda" and v.ndim == 0
                         and plan.shaped[j])):   # (_converter)
            items.append(f"vec[{i}]")
            gitems.append(a)
        elif kind == "scalar" and not runtime.is_array(v):
            env[f"c{j}"] = cs = _cached_scalar(t, plan.backend)
            env[f"sc{j}"] = cs.cache
            items.append(f"c{j}(vec[{i}])")
            # the cache inlined (a call costs more than the lookup); zero: the sign is not in the key
            gitems.append(f"(s if {a} and (s := sc{j}.get({a})) is not None else c{j}({a}))"
                          if (type(v) in (float, int, bool) or is_numpy_number(v)) and a.isidentifier()
                          else f"c{j}({a})")
        else:
            env[f"c{j}"] = c
            items.append(f"c{j}(vec[{i}])")
            gitems.append(f"c{j}({a})")
    for j, e in enumerate(plan.extra):
        env[f"e{j}"] = e
        items.append(f"e{j}")
        gitems.append(f"e{j}")
    kws = ", ".join(f"{k}=k_{k}" for k in plan.kwargs)
    env["v64"] = runtime.bits_float64
    env["init64"] = functools.partial(runtime.float64_init_value, types=plan.output_types)
    ret = "outs" if single is None else "outs[0]" if single else "tuple(outs)"   # None: MLX's list
    views = plan.unpad_source() + "".join(f"    outs[{k}] = v64(outs[{k}])\n" for k in plan.bits_outputs)   # float64 results
    env["fixed"] = fixed

    def body(items, options=True):     # options=False: no init_value, no stream (MLX's defaults)
        ins = f"inputs=[{', '.join(items)}], {kws}" + (", init_value=init_value" if options or plan.bits_outputs else "")
        return ((f"    init_value = init64({'init_value' if options else None})\n" if plan.bits_outputs else "")
                + ("    box[0] = last\n" if owner is not None else "")      # owner.last_launch = last
                + (f"    if stream is None:\n        outs = kernel({ins})\n"
                   f"    else:\n        outs = kernel({ins}, stream=stream)\n" if options else
                   f"    outs = kernel({ins})\n") + views + f"    return {ret}\n")
    src = ("def call(vec, kwargs, init_value, checked, stream):\n"
           + ("    vec = vec + tuple(kwargs.values()) + fixed\n" if fixed is not None else "") + body(items))
    if guard is not None:
        params, lines, genv, _ = guard
        env.update(genv)
        src += f"def guarded({params}):\n" + "".join(lines) + body(gitems, False)
        if front is not None:
            flines = front.lines if front.lines is not None else lines
            src += front_source(front.params, flines, body(gitems, False), front.miss, env, front.empty)
            if front.grid_params:      # a k[grid, threadgroup] launcher's
                src += front_source(front.grid_params, flines, body(gitems, False), front.grid_miss, env,
                                    front.empty, "grid_front")
    exec(compile(src, f"<metalbench thin call {plan.kernel_name}>", "exec"), env)
    if guard is not None:
        env["call"].guarded = env["guarded"]
        if front is not None:
            env["call"].front = named(env["__call__"], front.qualname)
            env["call"].grid_front = env.get("grid_front") and named(env["grid_front"], front.qualname)
    return env["call"]


def front_source(params: str, lines: list, body: str, miss: str, env: dict, empty: str | None = None,
                 name: str = "__call__") -> str:
    """Source of ``name(params)``: a guard's ``lines`` (each ``return MISS`` becoming
    ``return <miss>``; first, that parameter ``empty`` is empty), then ``body`` (the
    launch), in a try block that trims a ``MetalbenchError``'s traceback as
    ``errors.user_facing`` does; fills ``env``.

    >>> env = {}
    >>> print(front_source("*args, **kwargs", ["    if not args: return MISS\\n"],
    ...                    "    return args[0]\\n", "slow(args, kwargs)", env, "kwargs").strip())
    def __call__(*args, **kwargs):
        try:
            if kwargs: return slow(args, kwargs)
            if not args: return slow(args, kwargs)
            return args[0]
        except MBError as e:
            raise trim(e)
    """
    from .errors import MetalbenchError, trim_traceback
    env["MBError"], env["trim"] = MetalbenchError, trim_traceback
    head = [f"    if {empty}: return MISS\n"] if empty else []
    text = "".join(head + lines + [body]).replace("return MISS", f"return {miss}")
    text = "".join("    " + ln for ln in text.splitlines(True))
    return f"def {name}({params}):\n    try:\n{text}    except MBError as e:\n        raise trim(e)\n"


def named(fn, qualname: str):
    """``fn`` with ``__qualname__`` ``qualname`` (what a TypeError about its arguments
    names: "Kernel.__call__() got ...")."""
    fn.__qualname__ = qualname
    return fn


def _not_ready(*args, **kwargs):
    raise TypeError("this metalbench object is not initialised")


_PARTIAL_SETSTATE = functools.partial.__setstate__


class FastCall(functools.partial):
    """The base of objects called on the hot path (kernel objects, ``k[grid, tg]``
    launchers): a call goes straight to a swappable function, the *front*.

    CPython 3.12+ calls a ``functools.partial`` (and a subclass that leaves ``__call__``
    alone) by vectorcall: the arguments reach the partial's function with no args tuple,
    kwargs dict or ``__call__`` lookup, as a plain function call. A Python class with a
    ``__call__`` pays for all three on every call (``slot_tp_call``), more than the rest
    of a thin-path launch. (On 3.10/3.11 a partial subclass is called through
    ``tp_call``: no faster, no slower.) A subclass builds its general front in
    ``_generic_front`` and installs fronts with ``_set_front`` (a prepared entry's
    generated check-and-launch, see :func:`thin_gpu_call`); ``func``, ``args`` and
    ``keywords`` are the partial's (read-only).

    >>> class Twice(FastCall):
    ...     def __init__(self):
    ...         self._set_front(self._generic_front())
    ...     def _generic_front(self):
    ...         return lambda x: 2 * x
    >>> Twice()(21)
    42
    """

    def __new__(cls, *args, **kwargs):
        return functools.partial.__new__(cls, _not_ready)

    def _generic_front(self):
        raise NotImplementedError

    def _set_front(self, fn, *first) -> None:
        """Calls of this object go to ``fn`` from now on (with ``first`` before their
        arguments: the partial's own, prepended in C)."""
        _PARTIAL_SETSTATE(self, (fn, first, {}, self.__dict__))

    __repr__ = object.__repr__

    if hasattr(functools.partial, "__get__"):       # 3.13+: partials bind as methods (3.14)
        def __get__(self, obj, objtype=None):
            return self                              # a kernel stored on a class stays itself

    def __reduce_ex__(self, protocol):
        # copy.copy: the attributes (not the partial's state: the front closes over self)
        return _fresh, (type(self),), dict(self.__dict__)

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        self._set_front(self._generic_front())


def _fresh(cls):
    return cls.__new__(cls)


MISS = object()     # what a thin-path guard returns for a call without its entry's key


def launch_guard(args, grid, threadgroup, backend, name="args", extra=(), extra_env=None, values=(),
                 kwargs=None, named=False):
    """``(lines, env)``: source returning :data:`MISS` unless a call's arguments (``name``,
    unpacked to ``a0``..), grid, threadgroup and backend give the key these do and
    ``extra`` holds (None: no signature). Stricter than the key is fine; looser never.

    ``values``: positions whose scalar values (not only types) are in the key (constexprs,
    arguments an output shape is computed from). ``kwargs``: the keyword arguments the
    key holds (scalars by value, arrays by dtype and shape), read from a dict ``kwargs``
    into ``k0``..; a call with other keywords (``init_value=`` ...) misses. With ``named``,
    the keywords are the function's own parameters (default :data:`MISS`; see
    :func:`named_keywords`), not a dict: the caller's ``**`` parameter must be empty.

    >>> lines, env = launch_guard((1.5,), 8, None, "sim")
    >>> print(lines[-1].strip())
    if not (type(a0) is float): return MISS
    """
    if _MXA is None:
        _mx_facts()
    env = {"mxa": _MXA, "dk": _DTYPE_KEY, "sig": arg_signature, "MISS": MISS, "g_grid": grid,
           "g_grid_t": type(grid), "g_tg": threadgroup, "g_tg_t": type(threadgroup), **(extra_env or {})}
    conds, kconds = [], []
    for i, a in enumerate(args):
        c = _arg_check(f"a{i}", a, i in values, env)
        if c is None:
            return None
        conds.append(c)
    for j, (k, a) in enumerate((kwargs or {}).items()):
        c = _arg_check(f"k{j}", a, True, env)
        if c is None:
            return None
        kconds.append(c)
    if backend is None or backend == "auto":
        env["envf"], env["g_env"] = L.env_fast, L.env_fast(_ENV_KEY)
        bcheck = f"(backend != 'auto' and backend is not None) or envf({_ENV_KEY!r}) != g_env"
    else:
        env["g_backend"] = backend
        bcheck = "backend != g_backend"
    lines = ["    if not (grid is g_grid or (type(grid) is g_grid_t and grid == g_grid)): return MISS\n",
             "    if not (threadgroup is g_tg or (type(threadgroup) is g_tg_t and threadgroup == g_tg)): return MISS\n",
             f"    if {bcheck}: return MISS\n"]
    lines += [f"    if not ({c}): return MISS\n" for c in extra]
    # the count by len(), not a try around the unpacking: a front's miss (thin_gpu_call)
    # must not run inside an except block (its errors would chain to the ValueError); and
    # unpacking any other sequence would take an iterator's items
    unpack = f"{', '.join(f'a{i}' for i in range(len(args)))}, = {name}\n"
    lines += [f"    if len({name}) != {len(args)}: return MISS\n"] + (["    " + unpack] if args else [])
    lines += [f"    if not ({' and '.join(conds)}): return MISS\n"] if args else []
    if kwargs and named:       # no dict built, no lookups: ~0.2 us a call less
        lines += [f"    k{j} = {k}\n" for j, k in enumerate(kwargs)]
        lines += [f"    if not ({' and '.join(kconds)}): return MISS\n"]
    elif kwargs:
        lines += [f"    if len(kwargs) != {len(kwargs)}: return MISS\n"]
        lines += [f"    k{j} = kwargs.get({k!r}, MISS)\n" for j, k in enumerate(kwargs)]
        lines += [f"    if not ({' and '.join(kconds)}): return MISS\n"]
    return lines, env


# names a generated front uses for itself: a keyword of the same name cannot be a parameter
_FRONT_NAMES = frozenset({"args", "kwargs", "grid", "threadgroup", "backend", "launch", "inputs", "options",
                          "output_shapes", "output_dtypes", "outs", "vec", "stream", "init_value", "checked",
                          "kernel", "owner", "box", "last", "MISS", "unpad", "v64", "init64", "fixed", "miss",
                          "MBError", "trim", "mxa", "dk", "sig", "envf", "kwd", "template", "e"})


def named_keywords(names, env: dict) -> bool:
    """Whether the keywords ``names`` can be a generated front's own parameters
    (``launch_guard(..., named=True)``): identifiers that are no Python keyword and clash
    with none of the front's names (its parameters, locals ``a0``/``k0``.., ``env``).

    >>> named_keywords(["NC", "TG"], {}), named_keywords(["grid"], {}), named_keywords(["k0"], {})
    (True, False, False)
    """
    return all(n.isidentifier() and not keyword.iskeyword(n) and n not in _FRONT_NAMES and n not in env
               and not re.fullmatch(r"[ake]\d+|c\d+|sc\d+|[kg]_\w*", n) for n in names)


def with_named(kwargs: dict, **named) -> dict:
    """``kwargs`` and those of ``named`` that were given (not :data:`MISS`): the keywords
    of a call whose front took some of them as named parameters, for its general path.

    >>> with_named({"x": 1}, NC=MISS, TG=256)
    {'x': 1, 'TG': 256}
    """
    d = dict(kwargs)
    d.update((k, v) for k, v in named.items() if v is not MISS)
    return d


def keyword_front(kwnames, lines: list, env: dict, line_env: dict) -> Front:
    """The :class:`Front` of a DSL kernel entry whose key holds the keywords ``kwnames``
    (constexprs by keyword: ``softmax(x, NC=1024, TG=256)``) as the front's own named
    parameters, checked by ``lines`` (``launch_guard(..., named=True)``, constants in
    ``line_env``, put in ``env``); a call that misses hands them back to the kernel's
    general path as keywords (:func:`with_named`).

    >>> keyword_front(["NC"], [], {}, {}).params
    "*args, grid=None, threadgroup=None, backend='auto', NC=MISS, **kwargs"
    """
    env.update(line_env, kwd=with_named)
    kw = ", ".join(f"{n}=MISS" for n in kwnames)
    back = "kwd(kwargs, " + ", ".join(f"{n}={n}" for n in kwnames) + ")"
    return Front(f"*args, grid=None, threadgroup=None, backend='auto', {kw}, **kwargs",
                 f"miss(args, {back}, grid, threadgroup, backend, 1)", "Kernel.__call__", "kwargs",
                 f"launch, grid, threadgroup, *args, backend='auto', {kw}, **kwargs",
                 f"launch._miss(args, {back}, backend)", lines)


def _arg_check(a: str, v, by_value: bool, env: dict):
    """The guard's condition that the argument named ``a`` has ``v``'s key (its value too
    when ``by_value``, for scalars), with its constants put in ``env``; None when ``v``
    has no key (the call binds from scratch)."""
    s = arg_signature(v)
    if s is _UNKEYED:
        return None
    if type(v) is _MXA:     # arrays: by dtype and shape, never by value
        env[f"g_s_{a}"], env[f"g_d_{a}"] = v.shape, v.dtype      # (Dtype == Dtype: by value)
        return f"type({a}) is mxa and {a}.shape == g_s_{a} and {a}.dtype == g_d_{a}"
    env[f"g_sig_{a}"], env[f"g_v_{a}"] = s, v
    if runtime.is_array(v):
        return f"sig({a}) == g_sig_{a}"
    if type(v) in (float, bool):
        return f"type({a}) is {type(v).__name__}" + (f" and {a} == g_v_{a}" if by_value else "")
    if type(v) is int and by_value:
        return f"type({a}) is int and {a} == g_v_{a}"
    if is_numpy_number(v):
        # a NumPy number's exact type is its dtype (no datetime units, no byte order):
        # a type test, not a call of arg_signature (8 such scalars cost 3 us per launch)
        env[f"g_t_{a}"] = type(v)
        return f"type({a}) is g_t_{a}" + (f" and {a} == g_v_{a}" if by_value else "")
    return f"sig({a}) == g_sig_{a}" + (f" and {a} == g_v_{a}" if by_value else "")


_NUMPY_NUMBERS = frozenset(np.dtype(c).type for c in "?bhilqBHILQefdgFDG")


def is_numpy_number(v) -> bool:
    """Whether ``v`` is a NumPy bool or number scalar (not datetime, string or void):
    one whose type alone gives its dtype.

    >>> is_numpy_number(np.float32(1)), is_numpy_number(1.0), is_numpy_number(np.datetime64(1, "s"))
    (True, False, False)
    """
    return type(v) in _NUMPY_NUMBERS


def _cached_scalar(t: T.ScalarType, backend: str = ""):
    """value -> a 0-d MLX array of ``t`` (as ``backend`` carries it), remembered per
    value (bounded)."""
    cache: dict = {}
    convert = _converter("scalar", t, backend)
    mx_array = mlx_array_type()

    def scalar(v):
        a = cache.get(k := value_key(v))
        if a is None:
            a = convert(v)
            if type(a) is not mx_array or is_kept(a):      # (not a value's first one-element vector)
                if len(cache) > 256:      # (a loop's step counter: a few hundred values)
                    cache.clear()
                cache[k] = a
        return a
    scalar.cache = cache
    return scalar


class GridLaunch(FastCall):
    """``k[grid, threadgroup]`` of a DSL kernel: ``k[n, 256](*args, **kw)`` is
    ``k(*args, grid=n, threadgroup=256, **kw)``. After a GPU launch its front is the
    kernel's last entry's ``grid_front`` (:func:`thin_gpu_call`), with this launcher,
    its grid and threadgroup as first arguments; otherwise, and for calls that front
    does not take, :meth:`_miss` (the kernel's general path).

    >>> import numpy as np, metalbench as mb
    >>> k = mb.kernel(source="def inc(x, out: mb.Out):\\n    out[thread_position_in_grid.x] = x[thread_position_in_grid.x] + 1")
    >>> k[2, 2] is k[2, 2], np.asarray(k[2, 2](np.zeros(2, np.float32), backend="sim")).tolist()
    (True, [1.0, 1.0])
    """

    def __init__(self, kernel, grid, threadgroup):
        self.kernel, self.grid, self.threadgroup = kernel, grid, threadgroup
        self._set_front(self._generic_front())

    def __repr__(self):
        return f"<{self.kernel.name}[{self.grid!r}, {self.threadgroup!r}]>"

    def _generic_front(self):
        from .errors import MetalbenchError, trim_traceback
        miss = self._miss

        def __call__(*args, backend="auto", **kwargs):
            try:
                return miss(args, kwargs, backend)
            except MetalbenchError as e:
                raise trim_traceback(e)
        return named(__call__, "Kernel.__call__")

    def _miss(self, args, kwargs, backend):
        # the kernel's general path with this grid and threadgroup; then the front of the
        # entry the kernel now uses, if it has one for launchers (its checks include the grid)
        k = self.kernel
        r = k._miss(args, kwargs, self.grid, self.threadgroup, backend)
        front = k.__dict__.get("_grid_front")
        if front is not None:
            self._set_front(front, self, self.grid, self.threadgroup)
        elif self.args:
            self._set_front(self._generic_front())
        return r


def grid_launch(kernel, config) -> GridLaunch:
    """``kernel[config]``: a :class:`GridLaunch` per configuration, kept (bounded)."""
    launches = getattr(kernel, "_grid_launches", None)
    if launches is None:
        launches = kernel._grid_launches = {}
    try:
        hit = launches.get(config)
    except TypeError:                  # a list in the configuration: made each time
        hit = None
    if hit is not None:
        return hit
    cfg = config if type(config) is tuple else (config,)
    if not 1 <= len(cfg) <= 2:
        from .errors import KernelLaunchError
        raise KernelLaunchError(f"{kernel.name}[...] takes a grid and a threadgroup, got {len(cfg)} items",
                                hint=f"{kernel.name}[n, 256](...), or {kernel.name}[(w, h), (16, 16)](...)")
    return remember_launch(launches, config, GridLaunch(kernel, cfg[0], cfg[1] if len(cfg) > 1 else None))


def remember_launch(cache: dict, config, launch):
    """Keep ``launch`` for ``k[config]`` (a bounded cache: cleared past 64 configurations; a
    configuration holding lists is not hashable and is made each time) and return it.

    >>> remember_launch({}, (4, 256), "launcher")
    'launcher'
    """
    try:
        if len(cache) > 64:
            cache.clear()
        cache[config] = launch
    except TypeError:
        pass
    return launch
