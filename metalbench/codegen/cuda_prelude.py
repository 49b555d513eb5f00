"""The CUDA prelude a printed kernel's header starts with, in pieces (issue 18).

A kernel's header carries only the pieces its text names, with the pieces those name in
turn: MLX's ``cuda_kernel`` rebuilds the whole kernel source on every call and hashes it at
every evaluation, so unused templates cost time on every launch.

    >>> from metalbench.codegen.cuda_prelude import base_prelude
    >>> "mb_tid" in base_prelude("unsigned l = mb_lane();")
    True
"""
from __future__ import annotations

import re

# The prelude, in pieces: a kernel's header carries only those its text names (with the
# pieces they name in turn), because MLX rebuilds and hashes a kernel's whole source on
# every call (``build_kernel`` in ``fast::cuda_kernel``, ``std::hash`` of it at eval): a
# saxpy's 3.5 KB of unused templates cost time on every launch.
_BASE_INCLUDES = """\
// metalbench: MSL semantics on CUDA (types, lanes, conversions through float for half/bfloat).
#include <cuda_fp16.h>
#include <cuda_bf16.h>"""

_BASE = (   # (the names a piece defines, its text), in dependency order
    (("INFINITY",), """\
#ifndef INFINITY
#define INFINITY (cuda::std::numeric_limits<float>::infinity())
#endif"""),
    (("NAN",), """\
#ifndef NAN
#define NAN (cuda::std::numeric_limits<float>::quiet_NaN())
#endif"""),
    (("mb_enable_if",), """\
template <bool B, class T = void> struct mb_enable_if {};
template <class T> struct mb_enable_if<true, T> { typedef T type; };"""),
    (("mb_vec", "mb_is_vec"), """\
template <class T, int N> struct mb_vec;
template <class X> struct mb_is_vec { static constexpr bool value = false; };
template <class T, int N> struct mb_is_vec<mb_vec<T, N>> { static constexpr bool value = true; };"""),
    (("mb_is_half",), """\
template <class T> struct mb_is_half { static constexpr bool value = false; };
template <> struct mb_is_half<__half> { static constexpr bool value = true; };
template <> struct mb_is_half<__nv_bfloat16> { static constexpr bool value = true; };"""),
    (("mb_narrow",), """\
// float -> char/short saturates to the type's range, NaN -> 0 (metalbench.scalar; cvt need not).
template <class T> struct mb_narrow { static constexpr int lo = 0, hi = 0; };
template <> struct mb_narrow<int8_t> { static constexpr int lo = -128, hi = 127; };
template <> struct mb_narrow<uint8_t> { static constexpr int lo = 0, hi = 255; };
template <> struct mb_narrow<int16_t> { static constexpr int lo = -32768, hi = 32767; };
template <> struct mb_narrow<uint16_t> { static constexpr int lo = 0, hi = 65535; };"""),
    (("mb_is_float",), """\
template <class U> struct mb_is_float { static constexpr bool value = mb_is_half<U>::value; typedef float wide; };
template <> struct mb_is_float<float> { static constexpr bool value = true; typedef float wide; };
template <> struct mb_is_float<double> { static constexpr bool value = true; typedef double wide; };"""),
    (("mb_cvt",), """\
// static_cast with half/bfloat going through float (their direct conversions are partial).
template <class T, class U> __device__ inline T mb_cvt(U u) {
    if constexpr (mb_narrow<T>::hi != 0 && mb_is_float<U>::value) {
        typedef typename mb_is_float<U>::wide F;                          // half -> float
        const F x = static_cast<F>(u);
        if (x != x) return T(0);
        if (x <= F(mb_narrow<T>::lo)) return T(mb_narrow<T>::lo);
        if (x >= F(mb_narrow<T>::hi)) return T(mb_narrow<T>::hi);
        return static_cast<T>(static_cast<int>(x));
    } else if constexpr (mb_is_half<T>::value || mb_is_half<U>::value) {
        return static_cast<T>(static_cast<float>(u));
    } else {
        return static_cast<T>(u);
    }
}"""),
    (("mb_tid", "mb_lane"), """\
// Lane and linear thread index: threads are linear over x, then y, then z, as on Metal.
__device__ inline unsigned mb_tid() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
__device__ inline unsigned mb_lane() { return mb_tid() & 31u; }"""),
    (("mb_thread_index",), """\
// Metal's thread_index_in_threadgroup: linear over this threadgroup's own (possibly
// partial, at the grid's edge) size; equal to mb_tid() in every full threadgroup.
__device__ inline unsigned mb_thread_index(const uint32_t* grid) {
    unsigned tx = min(blockDim.x, grid[0] - blockIdx.x * blockDim.x);
    unsigned ty = min(blockDim.y, grid[1] - blockIdx.y * blockDim.y);
    return threadIdx.x + tx * (threadIdx.y + ty * threadIdx.z);
}"""),
)
_BASE_NAMES = [re.compile(r"\b(?:%s)\b" % "|".join(names)) for names, _ in _BASE]


def base_prelude(text: str) -> str:
    """The prelude pieces ``text`` (a kernel's body and other header parts) names, and those
    they name in turn, in dependency order, after the includes.

    >>> "mb_cvt" in base_prelude("out[i] = mb_cvt<int8_t>(x[i]);")
    True
    >>> "mb_cvt" in base_prelude("out[i] = x[i];"), "mb_narrow" in base_prelude("mb_cvt<int>(u)")
    (False, True)
    """
    used = [False] * len(_BASE)
    grown = True
    while grown:
        grown = False
        for k, ((_, piece), names) in enumerate(zip(_BASE, _BASE_NAMES)):
            if not used[k] and names.search(text):
                used[k], grown, text = True, True, text + "\n" + piece
    return "\n".join([_BASE_INCLUDES] + [piece for (_, piece), u in zip(_BASE, used) if u])
