// cuda_host.h -- runs metalbench's printed CUDA on the CPU, compiled by g++ (tests/hostcuda.py).
//
// Not a CUDA implementation: just enough of the device side for the kernels metalbench
// prints, with the semantics that matter to them modelled as NVIDIA GPUs have them:
//
// * every GPU thread of a block is a fiber (ucontext) on one OS thread; blocks run one
//   after the other. A fiber runs until it reaches a synchronisation point
//   (__syncthreads, a warp shuffle/vote/__syncwarp, __activemask) and waits there;
// * __syncthreads releases when every thread of the block that has not exited waits at one;
// * a shuffle or vote releases when every lane of its mask waits at one with the same
//   mask; it reads the value of the source lane (a lane outside the mask reads its own
//   value and the launch records an undefined read);
// * __activemask() is the set of lanes that wait at the same __activemask call site once
//   no other synchronisation can progress (the lanes a GPU runs together there);
// * __half and __nv_bfloat16 hold their bits; conversions from float and double round to
//   nearest even (NaN becomes the canonical 0x7fff, as CUDA's), arithmetic is done in
//   float and rounded once (exact for + - * /: float has 2p+2 bits of both formats);
// * atomics are plain read-modify-writes (one OS thread).
//
// What is not modelled: float -> int conversions out of range (C++ leaves them undefined,
// the GPU saturates; the scalar differential test covers them on the GPU), CUDA's math
// library accuracy (the host's libm), FMA contraction (compiled with -ffp-contract=off).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <ucontext.h>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __constant__ static
#define __grid_constant__
#define __restrict__ __restrict
#define __align__(n) alignas(n)

struct uint3 { unsigned int x, y, z; };
struct dim3 { unsigned int x, y, z; };
inline uint3 make_uint3(unsigned a, unsigned b, unsigned c) { return uint3{a, b, c}; }
inline uint3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;
constexpr int warpSize = 32;

using std::isfinite;
using std::isinf;
using std::isnan;
using std::signbit;

// ----------------------------------------------------------------------------- integer min/max (CUDA's overloads)
#define MBH_MINMAX(T)                                                    \
    inline T min(T a, T b) { return a < b ? a : b; }                     \
    inline T max(T a, T b) { return a > b ? a : b; }
MBH_MINMAX(int) MBH_MINMAX(unsigned int) MBH_MINMAX(long) MBH_MINMAX(unsigned long)
MBH_MINMAX(long long) MBH_MINMAX(unsigned long long)
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline unsigned int min(int a, unsigned int b) { return min(static_cast<unsigned>(a), b); }
inline unsigned int min(unsigned int a, int b) { return min(a, static_cast<unsigned>(b)); }
inline unsigned int max(int a, unsigned int b) { return max(static_cast<unsigned>(a), b); }
inline unsigned int max(unsigned int a, int b) { return max(a, static_cast<unsigned>(b)); }

// ----------------------------------------------------------------------------- bits and math intrinsics
inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
inline float __uint_as_float(unsigned i) { float f; memcpy(&f, &i, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned i; memcpy(&i, &f, 4); return i; }
inline double __longlong_as_double(long long i) { double f; memcpy(&f, &i, 8); return f; }
inline long long __double_as_longlong(double f) { long long i; memcpy(&i, &f, 8); return i; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz(static_cast<unsigned>(x)) : 32; }
inline int __clzll(long long x) { return x ? __builtin_clzll(static_cast<unsigned long long>(x)) : 64; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
inline unsigned long long __brevll(unsigned long long x) {
    return (static_cast<unsigned long long>(__brev(static_cast<unsigned>(x))) << 32) | __brev(static_cast<unsigned>(x >> 32));
}
inline int __mulhi(int a, int b) { return static_cast<int>((static_cast<long long>(a) * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32); }
inline long long __mul64hi(long long a, long long b) { return static_cast<long long>((static_cast<__int128>(a) * b) >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
inline float __fmul_rn(float a, float b) { return a * b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x != x ? 0.0f : (x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x)); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float sinpif(float x) { return static_cast<float>(sin(M_PI * static_cast<double>(x))); }
inline float cospif(float x) { return static_cast<float>(cos(M_PI * static_cast<double>(x))); }
inline double sinpi(double x) { return sin(M_PI * x); }
inline double cospi(double x) { return cos(M_PI * x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __powf(float a, float b) { return powf(a, b); }
inline float __exp10f(float x) { return exp10f(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __tanf(float x) { return tanf(x); }

// ----------------------------------------------------------------------------- half and bfloat16
namespace mbh {
inline uint16_t f2h(float f) {   // round to nearest even; NaN -> 0x7fff as CUDA's __float2half
    uint32_t x; memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return 0x7fffu;
    if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);   // rounds to >= 65520: inf
    if (ax < 0x38800000u) {                                                  // below 2^-14: subnormal
        float a; memcpy(&a, &ax, 4);
        const float q = a * 16777216.0f;                                     // units of 2^-24 (exact)
        float r = nearbyintf(q);                                             // ties to even (default mode)
        return static_cast<uint16_t>(sign | static_cast<uint32_t>(r));
    }
    uint32_t m = ax + 0xfffu + ((ax >> 13) & 1u) - 0x38000000u;             // rebias and round
    return static_cast<uint16_t>(sign | (m >> 13));
}
inline float h2f(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    uint32_t x;
    if (e == 0x1f) x = sign | 0x7f800000u | (m << 13);
    else if (e == 0) {
        float v = static_cast<float>(m) * 5.9604644775390625e-08f;
        return sign ? -v : v;
    } else x = sign | ((e + 112u) << 23) | (m << 13);
    float f; memcpy(&f, &x, 4);
    return f;
}
inline uint16_t d2h(double d) {   // one rounding from double
    if (d != d) return 0x7fffu;
    if (fabs(d) >= 65520.0) return d < 0 ? 0xfc00u : 0x7c00u;
    const float f = static_cast<float>(d);     // exact when the double fits, else decide by the double
    if (static_cast<double>(f) == d) return f2h(f);
    uint16_t lo = f2h(f);
    // f rounded once already; step to the neighbour the double is nearer to
    const double a = h2f(lo);
    const uint16_t nb = static_cast<uint16_t>((d > a) == !(lo & 0x8000u) ? lo + 1 : lo - 1);
    const double b = h2f(nb);
    const double da = fabs(d - a), db = fabs(d - b);
    if (db < da || (db == da && !(nb & 1u))) return nb;
    return lo;
}
inline uint16_t f2bf(float f) {
    uint32_t x; memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(x >> 16);
}
inline float bf2f(uint16_t b) { uint32_t x = static_cast<uint32_t>(b) << 16; float f; memcpy(&f, &x, 4); return f; }
inline uint16_t d2bf(double d) {
    if (d != d) return 0x7fffu;
    const float f = static_cast<float>(d);
    if (static_cast<double>(f) == d) return f2bf(f);
    // between two floats: the bfloat rounding of the double decides by the exact value
    uint16_t lo = f2bf(f);
    const double a = bf2f(lo);
    const uint16_t nb = static_cast<uint16_t>((d > a) == !(lo & 0x8000u) ? lo + 1 : lo - 1);
    if ((lo & 0x7fffu) == 0x7f80u) return lo;
    const double b = bf2f(nb);
    const double da = fabs(d - a), db = fabs(d - b);
    if (db < da || (db == da && !(nb & 1u))) return nb;
    return lo;
}
}  // namespace mbh

struct __half_raw { unsigned short x; };
struct __nv_bfloat16_raw { unsigned short x; };
#define MBH_HALF(H, RAW, TOF, FROMF, FROMD)                                                   \
    struct H {                                                                                \
        uint16_t __x;                                                                         \
        H() = default;                                                                        \
        constexpr H(RAW r) : __x(r.x) {}                                                      \
        H(float f) : __x(FROMF(f)) {}                                                         \
        H(double d) : __x(FROMD(d)) {}                                                        \
        H(int v) : __x(FROMF(static_cast<float>(v))) {}                                       \
        H(unsigned int v) : __x(FROMF(static_cast<float>(v))) {}                              \
        H(short v) : __x(FROMF(static_cast<float>(v))) {}                                     \
        H(unsigned short v) : __x(FROMF(static_cast<float>(v))) {}                            \
        H(long v) : __x(FROMF(static_cast<float>(v))) {}                                      \
        H(unsigned long v) : __x(FROMF(static_cast<float>(v))) {}                             \
        H(long long v) : __x(FROMF(static_cast<float>(v))) {}                                 \
        H(unsigned long long v) : __x(FROMF(static_cast<float>(v))) {}                        \
        operator float() const { return TOF(__x); }                                           \
        H& operator+=(const H& o) { return *this = H(float(*this) + float(o)); }              \
        H& operator-=(const H& o) { return *this = H(float(*this) - float(o)); }              \
        H& operator*=(const H& o) { return *this = H(float(*this) * float(o)); }              \
        H& operator/=(const H& o) { return *this = H(float(*this) / float(o)); }              \
    };                                                                                        \
    inline H operator+(const H& a, const H& b) { return H(float(a) + float(b)); }             \
    inline H operator-(const H& a, const H& b) { return H(float(a) - float(b)); }             \
    inline H operator*(const H& a, const H& b) { return H(float(a) * float(b)); }             \
    inline H operator/(const H& a, const H& b) { return H(float(a) / float(b)); }             \
    inline H operator-(const H& a) { H r; r.__x = static_cast<uint16_t>(a.__x ^ 0x8000u); return r; } \
    inline H operator+(const H& a) { return a; }                                              \
    inline bool operator==(const H& a, const H& b) { return float(a) == float(b); }           \
    inline bool operator!=(const H& a, const H& b) { return float(a) != float(b); }           \
    inline bool operator<(const H& a, const H& b) { return float(a) < float(b); }             \
    inline bool operator<=(const H& a, const H& b) { return float(a) <= float(b); }           \
    inline bool operator>(const H& a, const H& b) { return float(a) > float(b); }             \
    inline bool operator>=(const H& a, const H& b) { return float(a) >= float(b); }
MBH_HALF(__half, __half_raw, mbh::h2f, mbh::f2h, mbh::d2h)
MBH_HALF(__nv_bfloat16, __nv_bfloat16_raw, mbh::bf2f, mbh::f2bf, mbh::d2bf)
typedef __half half;
inline __half __double2half(double d) { return __half(d); }
inline __nv_bfloat16 __double2bfloat16(double d) { return __nv_bfloat16(d); }
inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline float __half2float(__half h) { return float(h); }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 h) { return float(h); }
inline __half __hadd(__half a, __half b) { return a + b; }
inline __half __hmul(__half a, __half b) { return a * b; }
inline __half __hadd_rn(__half a, __half b) { return a + b; }
inline __half __hmul_rn(__half a, __half b) { return a * b; }
inline __half __hfma(__half a, __half b, __half c) { return __half(fma(double(float(a)), double(float(b)), double(float(c)))); }
inline bool __hisnan(__half a) { return float(a) != float(a); }
inline bool __hisinf(__half a) { return std::isinf(float(a)); }

// ----------------------------------------------------------------------------- the fiber scheduler
namespace mbh {
enum Wait { NONE, SYNC, SHFL, ACTIVE, DONE };

struct Fiber {
    ucontext_t ctx;
    uint3 tid;
    Wait wait = NONE;
    unsigned mask = 0;
    const void* site = nullptr;
    unsigned char val[16];           // the value offered to a shuffle or vote
    int src = 0;                     // the lane read (shuffles)
    unsigned char out[16];           // what the shuffle or vote gives back
};

struct Launch {
    std::vector<Fiber> fibers;
    std::vector<char*> stacks;
    ucontext_t main_ctx;
    int current = -1;
    std::function<void()> body;
    unsigned long long undefined_reads = 0;   // shuffles from lanes outside the mask
    bool deadlock = false;
};
inline Launch* L = nullptr;
constexpr size_t STACK = 256 * 1024;

inline Fiber& me() { return L->fibers[L->current]; }
inline unsigned lane_of(int f) { return static_cast<unsigned>(f) & 31u; }
inline int warp_of(int f) { return f >> 5; }

inline void yield_wait(Wait w) {
    Fiber& f = me();
    f.wait = w;
    swapcontext(&f.ctx, &L->main_ctx);
}

inline void entry() {
    L->body();
    me().wait = DONE;
    swapcontext(&me().ctx, &L->main_ctx);
}

// one pass of resolution once every fiber waits; true if any was released
inline bool resolve(int n) {
    bool any = false;
    const int warps = (n + 31) / 32;
    for (int w = 0; w < warps; ++w) {             // shuffles and votes whose mask is all there
        for (int f = w * 32; f < n && f < w * 32 + 32; ++f) {
            Fiber& a = L->fibers[f];
            if (a.wait != SHFL) continue;
            bool ready = true;
            for (int l = 0; l < 32; ++l) {
                if (!((a.mask >> l) & 1u)) continue;
                const int g = w * 32 + l;
                if (g >= n || L->fibers[g].wait != SHFL || L->fibers[g].mask != a.mask) { ready = false; break; }
            }
            if (!ready || !((a.mask >> lane_of(f)) & 1u)) continue;
            for (int l = 0; l < 32; ++l) {
                if (!((a.mask >> l) & 1u)) continue;
                Fiber& b = L->fibers[w * 32 + l];
                const int s = b.src;
                if (s == -2) {                                     // a vote: the ballot of the mask
                    unsigned ballot = 0;
                    for (int k = 0; k < 32; ++k)
                        if (((a.mask >> k) & 1u) && L->fibers[w * 32 + k].val[0]) ballot |= 1u << k;
                    memcpy(b.out, &ballot, 4);
                } else if (s >= 0 && s < 32 && ((a.mask >> s) & 1u)) memcpy(b.out, L->fibers[w * 32 + s].val, 16);
                else { memcpy(b.out, b.val, 16); if (s >= 0) ++L->undefined_reads; }
            }
            for (int l = 0; l < 32; ++l)
                if ((a.mask >> l) & 1u) L->fibers[w * 32 + l].wait = NONE;
            any = true;
        }
    }
    if (any) return true;
    bool all_sync = true, some_sync = false;      // __syncthreads: every thread not exited
    for (int f = 0; f < n; ++f) {
        if (L->fibers[f].wait == DONE) continue;
        if (L->fibers[f].wait == SYNC) some_sync = true; else all_sync = false;
    }
    if (all_sync && some_sync) {
        for (int f = 0; f < n; ++f) if (L->fibers[f].wait == SYNC) L->fibers[f].wait = NONE;
        return true;
    }
    for (int w = 0; w < warps; ++w) {             // __activemask: lanes at the same call site
        for (int f = w * 32; f < n && f < w * 32 + 32; ++f) {
            if (L->fibers[f].wait != ACTIVE) continue;
            const void* site = L->fibers[f].site;
            unsigned m = 0;
            for (int g = w * 32; g < n && g < w * 32 + 32; ++g)
                if (L->fibers[g].wait == ACTIVE && L->fibers[g].site == site) m |= 1u << lane_of(g);
            for (int g = w * 32; g < n && g < w * 32 + 32; ++g)
                if (L->fibers[g].wait == ACTIVE && L->fibers[g].site == site) {
                    L->fibers[g].wait = NONE;
                    memcpy(L->fibers[g].out, &m, 4);
                }
            return true;                          // one group at a time: the others may join later
        }
    }
    return false;
}

inline void run_block(uint3 bid, dim3 bdim) {
    const int n = static_cast<int>(bdim.x * bdim.y * bdim.z);
    L->fibers.assign(n, Fiber());
    while (static_cast<int>(L->stacks.size()) < n) L->stacks.push_back(static_cast<char*>(malloc(STACK)));
    for (int f = 0; f < n; ++f) {
        Fiber& fb = L->fibers[f];
        fb.tid = make_uint3(f % bdim.x, (f / bdim.x) % bdim.y, f / (bdim.x * bdim.y));
        getcontext(&fb.ctx);
        fb.ctx.uc_stack.ss_sp = L->stacks[f];
        fb.ctx.uc_stack.ss_size = STACK;
        fb.ctx.uc_link = nullptr;
        makecontext(&fb.ctx, entry, 0);
    }
    blockIdx = bid;
    for (;;) {
        bool ran = false;
        for (int f = 0; f < n; ++f) {
            if (L->fibers[f].wait != NONE) continue;
            L->current = f;
            threadIdx = L->fibers[f].tid;
            swapcontext(&L->main_ctx, &L->fibers[f].ctx);
            ran = true;
        }
        bool done = true;
        for (int f = 0; f < n; ++f) done = done && L->fibers[f].wait == DONE;
        if (done) return;
        if (!ran && !resolve(n)) { L->deadlock = true; return; }
        if (ran) resolve(n);
    }
}

// Runs body() as every thread of a gridDim x blockDim launch; 0 on success.
inline int launch(dim3 grid, dim3 block, std::function<void()> body, unsigned long long* undefined_reads) {
    Launch launch_state;
    L = &launch_state;
    L->body = std::move(body);
    gridDim = grid;
    blockDim = block;
    int rc = 0;
    for (unsigned z = 0; z < grid.z && !rc; ++z)
        for (unsigned y = 0; y < grid.y && !rc; ++y)
            for (unsigned x = 0; x < grid.x && !rc; ++x) {
                run_block(make_uint3(x, y, z), block);
                if (L->deadlock) rc = 2;
            }
    for (char* s : L->stacks) free(s);
    *undefined_reads = L->undefined_reads;
    L = nullptr;
    return rc;
}
}  // namespace mbh

// ----------------------------------------------------------------------------- synchronisation
inline void __syncthreads() { mbh::yield_wait(mbh::SYNC); }
inline void __threadfence() {}
inline void __threadfence_block() {}
__attribute__((noinline)) inline unsigned __activemask() {
    mbh::Fiber& f = mbh::me();
    f.site = __builtin_return_address(0);
    mbh::yield_wait(mbh::ACTIVE);
    unsigned m;
    memcpy(&m, mbh::me().out, 4);
    return m;
}
template <class T> inline T mbh_exchange(unsigned mask, T v, int src) {
    static_assert(sizeof(T) <= 16, "shuffle of a large type");
    mbh::Fiber& f = mbh::me();
    f.mask = mask;
    memset(f.val, 0, 16);
    memcpy(f.val, &v, sizeof(T));
    f.src = src;
    mbh::yield_wait(mbh::SHFL);
    T r;
    memcpy(&r, mbh::me().out, sizeof(T));
    return r;
}
inline unsigned mbh_self() { return static_cast<unsigned>(mbh::L->current) & 31u; }
template <class T> inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
    const int lane = static_cast<int>(mbh_self());
    return mbh_exchange(mask, v, (lane & ~(width - 1)) + (src & (width - 1)));
}
template <class T> inline T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32) {
    const int lane = static_cast<int>(mbh_self());
    const int s = lane ^ m;
    return mbh_exchange(mask, v, s >= ((lane & ~(width - 1)) + width) ? lane : s);
}
template <class T> inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
    const int lane = static_cast<int>(mbh_self());
    const int s = lane + static_cast<int>(d);
    return mbh_exchange(mask, v, s >= ((lane & ~(width - 1)) + width) ? lane : s);
}
template <class T> inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32) {
    const int lane = static_cast<int>(mbh_self());
    const int s = lane - static_cast<int>(d);
    return mbh_exchange(mask, v, s < (lane & ~(width - 1)) ? lane : s);
}
inline void __syncwarp(unsigned mask = 0xffffffffu) { (void)mbh_exchange(mask, 0, -1); }
// votes: every lane of the mask offers its predicate; resolve() gives each the ballot
inline unsigned __ballot_sync(unsigned mask, int pred) {
    return mbh_exchange(mask, static_cast<unsigned>(pred != 0), -2);
}
inline int __all_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) == mask; }
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }

// ----------------------------------------------------------------------------- atomics (one OS thread)
template <class T> inline T atomicAdd(T* p, T v) { T o = *p; *p = o + v; return o; }
template <class T> inline T atomicSub(T* p, T v) { T o = *p; *p = o - v; return o; }
template <class T> inline T atomicExch(T* p, T v) { T o = *p; *p = v; return o; }
template <class T> inline T atomicMin(T* p, T v) { T o = *p; *p = v < o ? v : o; return o; }
template <class T> inline T atomicMax(T* p, T v) { T o = *p; *p = v > o ? v : o; return o; }
template <class T> inline T atomicAnd(T* p, T v) { T o = *p; *p = o & v; return o; }
template <class T> inline T atomicOr(T* p, T v) { T o = *p; *p = o | v; return o; }
template <class T> inline T atomicXor(T* p, T v) { T o = *p; *p = o ^ v; return o; }
template <class T> inline T atomicCAS(T* p, T c, T v) { T o = *p; if (o == c) *p = v; return o; }
