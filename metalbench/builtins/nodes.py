"""Builtins the front ends lower to their own IR nodes: atomics (``ir.Atomic``),
barriers (``ir.Barrier``), arrays (``ir.ArrayDecl``) and ``select`` (``ir.Select``).

They are declared here for their names, docs and validation; their backends are the
nodes' (the printers' ``atomic``/``barrier``/``array_decl``, the simulator's). The
atomic element-type rule lives here, once, for both front ends and the Numba layer::

    >>> from metalbench import types as T
    >>> atomic_error("add", T.float32) is None, atomic_error("xor", T.float32)
    (True, 'atomic_xor needs integer elements (int32 or uint32), not float32')
"""
from __future__ import annotations

from .. import types as T
from ..errors import KernelTypeError
from .core import add_builtin

# Metal's atomics (MSL 3, section "Atomic Functions"): atomic_int and atomic_uint have
# every operation; atomic_float has load, store, exchange, compare-exchange, fetch_add
# and fetch_sub (metalbench adds min/max through a compare-exchange loop); no bitwise
# operations on floats. 64-bit atomics exist only as ulong min/max (ATOMIC_METAL_64).
ATOMIC_ELEMS = {
    T.int32: frozenset({"add", "sub", "min", "max", "and", "or", "xor", "exchange", "cas", "load", "store"}),
    T.uint32: frozenset({"add", "sub", "min", "max", "and", "or", "xor", "exchange", "cas", "load", "store"}),
    T.float32: frozenset({"add", "sub", "min", "max", "exchange", "cas", "load", "store"}),
}


# 64-bit atomics: the simulator and CUDA have them (atomicCAS/atomicAdd & co. on 64-bit
# words, atomicAdd on double), Metal has not; the semantic layer accepts them
# (``wide=True``) and the Metal printer refuses them, as it refuses double.
ATOMIC_ELEMS_64 = {
    T.int64: ATOMIC_ELEMS[T.int32],
    T.uint64: ATOMIC_ELEMS[T.uint32],
    T.float64: ATOMIC_ELEMS[T.float32],
}


# Metal 3.1 (Apple9 GPUs and later): atomic_max_explicit / atomic_min_explicit on device
# atomic_ulong, which return nothing; the Metal printer prints these (a statement) and
# refuses every other 64-bit atomic.
ATOMIC_METAL_64 = {T.uint64: frozenset({"min", "max"})}


def atomic_error(op: str, elem, what: str | None = None, wide: bool = False) -> str | None:
    """None if atomic ``op`` works on elements of ``elem``, else the reason (the one
    rule every front end and the Numba layer use). ``what`` names the call in the message;
    ``wide`` accepts 64-bit elements too (sim and cuda; Metal's printer refuses them).

    >>> atomic_error("cas", T.int64, wide=True) is None, atomic_error("cas", T.int64)[:46]
    (True, 'atomic_compare_exchange on int64: Metal has no')
    """
    what = what or f"atomic_{'compare_exchange' if op == 'cas' else op}"
    ops = ATOMIC_ELEMS.get(elem) or (ATOMIC_ELEMS_64.get(elem) if wide else None)
    if ops is None:
        if elem in ATOMIC_ELEMS_64 and op in ATOMIC_ELEMS_64[elem]:
            return (f"{what} on {elem.name}: Metal has no 64-bit atomics (they work on backend='sim' and "
                    "'cuda'); use an int32, uint32 or float32 buffer on Metal")
        also = " (or int64, uint64, float64 on sim and cuda)" if wide else ""
        return f"{what} needs int32, uint32 or float32 elements{also}, not {getattr(elem, 'name', elem)}"
    if op not in ops:
        ints = "int32, uint32, int64 or uint64" if wide else "int32 or uint32"
        return f"{what} needs integer elements ({ints}), not {elem.name}"
    return None


def check_atomic(op: str, elem, span=None, what: str | None = None, buffer: str | None = None,
                 wide: bool = False) -> None:
    """Raises ``KernelTypeError`` at ``span`` when atomic ``op`` does not work on ``elem``
    (``wide``: 64-bit elements allowed, as on sim and cuda)."""
    msg = atomic_error(op, elem, what, wide)
    if msg is not None:
        if buffer:
            msg += f" ({buffer!r} holds {getattr(elem, 'name', elem)})"
        raise KernelTypeError(msg, span, hint="use an int32 or uint32 buffer (float32 for add, sub, min, max, "
                                              "exchange, compare-exchange)")


# ----------------------------------------------------------------------------- atomics

_ATOMICS = (
    ("add", "atomic_fetch_add_explicit", "Adds value to array[index]; returns the old value.", "(array, index, value)"),
    ("sub", "atomic_fetch_sub_explicit", "Subtracts value from array[index]; returns the old value.",
     "(array, index, value)"),
    ("min", "atomic_fetch_min_explicit", "array[index] = min(array[index], value); returns the old value.",
     "(array, index, value)"),
    ("max", "atomic_fetch_max_explicit", "array[index] = max(array[index], value); returns the old value.",
     "(array, index, value)"),
    ("and", "atomic_fetch_and_explicit", "Bitwise AND into array[index]; returns the old value.",
     "(array, index, value)"),
    ("or", "atomic_fetch_or_explicit", "Bitwise OR into array[index]; returns the old value.", "(array, index, value)"),
    ("xor", "atomic_fetch_xor_explicit", "Bitwise XOR into array[index]; returns the old value.",
     "(array, index, value)"),
    ("exchange", "atomic_exchange_explicit", "Stores value in array[index]; returns the old value.",
     "(array, index, value)"),
    ("cas", "atomic_compare_exchange_weak_explicit",
     "If array[index] == expected, stores desired; returns the old value either way.",
     "(array, index, expected, desired)"),
    ("load", "atomic_load_explicit", "Reads array[index] atomically.", "(array, index)"),
    ("store", "atomic_store_explicit", "Writes value to array[index] atomically.", "(array, index, value)"),
)

for _op, _msl, _doc, _params in _ATOMICS:
    _name = "atomic_compare_exchange" if _op == "cas" else f"atomic_{_op}"
    _ex = {"cas": "old = atomic_compare_exchange(out, 0, 0, 1)", "load": "v = atomic_load(out, i)",
           "store": "atomic_store(out, i, 1)"}.get(_op, f"old = {_name}(out, 0, x[i])")
    _ret = {"store": " -> None", "cas": " -> T", "load": " -> T"}.get(_op, " -> T")
    _allowed = ", ".join(t.name for t, ops in ATOMIC_ELEMS.items() if _op in ops) + "".join(
        f"; {t.name} on Metal 3.1 as atomic_{_op}_explicit, a statement" for t, ops in ATOMIC_METAL_64.items()
        if _op in ops)
    add_builtin(_name, group="Atomics", kind="node", node="Atomic", doc=_doc, example=_ex,
                params_doc=_params + _ret,
                details=f"Elements: {_allowed}. Works on device buffers and threadgroup arrays (outputs used "
                        "atomically become MLX atomic outputs by themselves).",
                msl_aliases=(_msl,) + {"cas": ("atomic_compare_exchange_strong_explicit",),
                                       # Metal 3.1's ulong forms (ATOMIC_METAL_64), which return nothing
                                       "min": ("atomic_min_explicit",), "max": ("atomic_max_explicit",)}.get(_op, ()),
                extra={"op": _op, "msl": _msl})

# ----------------------------------------------------------------------------- memory and synchronisation

add_builtin("threadgroup_barrier", group="Memory and synchronisation", kind="node", node="Barrier",
            doc="Waits until every thread of the threadgroup reaches it; orders the memory named by the flags.",
            example="threadgroup_barrier(mem_threadgroup)", params_doc="(flags=mem_threadgroup) -> None",
            details="Flags: mem_none (orders nothing), mem_threadgroup, mem_device, mem_texture; combine "
                    "several as separate arguments. Every thread of the threadgroup must reach the same barrier.",
            extra={"collective": "threadgroup"})
add_builtin("simdgroup_barrier", group="Memory and synchronisation", kind="node", node="Barrier",
            doc="Waits until every thread of the SIMD-group reaches it; orders the memory named by the flags "
                "between its lanes.", example="simdgroup_barrier(mem_threadgroup)",
            params_doc="(flags=mem_none) -> None",
            details="A SIMD-group function (simd_sum, simd_shuffle, simd_ballot ...) orders its lanes' threadgroup "
                    "and device memory accesses the same way, since every active lane must reach it (quad_* "
                    "functions: the lanes of the quad-group); the checked simulator follows both. Lanes of other "
                    "SIMD-groups need a threadgroup_barrier.",
            extra={"collective": "simdgroup"})
add_builtin("atomic_thread_fence", group="Memory and synchronisation", kind="node", node="Fence",
            doc="Orders this thread's accesses to the memory named by the flags, as other threads of the scope "
                "see them (no barrier: threads reach it independently).",
            example="atomic_thread_fence(mem_flags.mem_device, memory_order_seq_cst, thread_scope_device)",
            params_doc="(flags, order=memory_order_seq_cst, scope=thread_scope_device) -> None",
            details="Publishing data to other threadgroups (a decoupled look-back scan): write the data, "
                    "atomic_thread_fence(mem_device, ...), then set a flag with atomic_store; the reader loads the "
                    "flag with atomic_load, fences, then reads the data. Orders: memory_order_relaxed, _acquire, "
                    "_release, _acq_rel, _seq_cst; scopes: thread_scope_device, _threadgroup, _simdgroup. CUDA: "
                    "__threadfence() (device scope), __threadfence_block(). The checked simulator honours "
                    "device-scope fences with mem_device.",
            extra={"scope": "thread"})
add_builtin("threadgroup_array", group="Memory and synchronisation", kind="node", node="ArrayDecl",
            doc="Declares an array in threadgroup memory, shared by the threadgroup's threads.",
            example="tile = threadgroup_array((16, 16), float32)", params_doc="(shape, dtype) -> array",
            details="shape is an int or a tuple of compile-time ints (constexpr values work); dtype a DSL "
                    "type (float32, half, uint32, ...). Assign it to a name at the top level of the kernel: "
                    "buf = threadgroup_array(256, float32); index it as buf[i] or buf[i, j]. At most 32 KiB "
                    "of threadgroup memory per kernel. Not initialised: fill it, then threadgroup_barrier().",
            extra={"space": "threadgroup"})
add_builtin("local_array", group="Memory and synchronisation", kind="node", node="ArrayDecl",
            doc="Declares an array private to each thread (registers or thread memory).",
            example="acc = local_array(4, float32)", params_doc="(shape, dtype) -> array",
            details="Same arguments as threadgroup_array; each thread has its own copy.",
            extra={"space": "thread"})

# ----------------------------------------------------------------------------- selection

add_builtin("select", group="Selection", kind="node", node="Select",
            doc="c ? b : a, componentwise for vectors (Metal's argument order).",
            example="r = select(a, b, x[i] > 0)", params_doc="(a: T, b: T, c: bool) -> T",
            details="The same as `b if c else a` (a scalar or a bool vector c; vectors select per component).")
