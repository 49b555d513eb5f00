// cuda_shim.h -- just enough of CUDA (and of MLX's CUDA JIT preamble) for libclang to
// parse and type-check generated CUDA kernels as C++17 where nvcc is not installed.
// Declarations only. Used by metalbench.codegen.cuda_check.
#pragma once
#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __constant__ static
#define __grid_constant__
#define __forceinline__ inline
#define __restrict__
#define INFINITY __builtin_huge_valf()
#define NAN __builtin_nanf("")

typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long int64_t;
typedef unsigned long uint64_t;
typedef unsigned long size_t;

struct uint3 { unsigned int x, y, z; };
struct dim3 { unsigned int x, y, z; };
extern const uint3 threadIdx;
extern const uint3 blockIdx;
extern const dim3 blockDim;
extern const dim3 gridDim;
extern const int warpSize;
uint3 make_uint3(unsigned int, unsigned int, unsigned int);

struct __half_raw { unsigned short x; };
struct __nv_bfloat16_raw { unsigned short x; };
#define MB_HALF_LIKE(H)                                                                  \
  struct H {                                                                             \
    H() = default;                                                                       \
    constexpr H(H##_raw r) : x_(r.x) {}                                                  \
    unsigned short x_;                                                                   \
    H(float); H(double); H(int); H(unsigned int); H(short); H(unsigned short);           \
    H(long); H(unsigned long); H(long long); H(unsigned long long);                      \
    operator float() const;                                                              \
    H& operator+=(const H&); H& operator-=(const H&); H& operator*=(const H&);           \
    H& operator/=(const H&);                                                             \
  };                                                                                     \
  H operator+(const H&, const H&); H operator-(const H&, const H&);                      \
  H operator*(const H&, const H&); H operator/(const H&, const H&); H operator-(const H&);\
  bool operator==(const H&, const H&); bool operator!=(const H&, const H&);              \
  bool operator<(const H&, const H&); bool operator<=(const H&, const H&);               \
  bool operator>(const H&, const H&); bool operator>=(const H&, const H&);
MB_HALF_LIKE(__half)
MB_HALF_LIKE(__nv_bfloat16)

#define MB_F1(f) float f(float);
MB_F1(expf) MB_F1(exp2f) MB_F1(exp10f) MB_F1(logf) MB_F1(log2f) MB_F1(log10f) MB_F1(sqrtf)
MB_F1(rsqrtf) MB_F1(sinf) MB_F1(cosf) MB_F1(tanf) MB_F1(asinf) MB_F1(acosf) MB_F1(atanf)
MB_F1(sinhf) MB_F1(coshf) MB_F1(tanhf) MB_F1(asinhf) MB_F1(acoshf) MB_F1(atanhf) MB_F1(floorf)
MB_F1(ceilf) MB_F1(roundf) MB_F1(rintf) MB_F1(truncf) MB_F1(erff) MB_F1(erfcf) MB_F1(log1pf)
MB_F1(expm1f) MB_F1(cbrtf) MB_F1(sinpif) MB_F1(cospif) MB_F1(lgammaf) MB_F1(tgammaf)
MB_F1(fabsf) MB_F1(__saturatef) MB_F1(__expf) MB_F1(__logf) MB_F1(__sinf) MB_F1(__cosf)
#define MB_F2(f) float f(float, float);
MB_F2(powf) MB_F2(atan2f) MB_F2(fmodf) MB_F2(copysignf) MB_F2(hypotf) MB_F2(fdimf) MB_F2(fminf)
MB_F2(fmaxf)
float fmaf(float, float, float);
float ldexpf(float, int);
bool isnan(float); bool isinf(float); bool isfinite(float); bool signbit(float);
// double math (float64 kernels): the C names
#define MB_D1(f) double f(double);
MB_D1(exp) MB_D1(exp2) MB_D1(exp10) MB_D1(log) MB_D1(log2) MB_D1(log10) MB_D1(sqrt) MB_D1(rsqrt)
MB_D1(sin) MB_D1(cos) MB_D1(tan) MB_D1(asin) MB_D1(acos) MB_D1(atan) MB_D1(sinh) MB_D1(cosh) MB_D1(tanh)
MB_D1(asinh) MB_D1(acosh) MB_D1(atanh) MB_D1(floor) MB_D1(ceil) MB_D1(round) MB_D1(rint) MB_D1(trunc)
MB_D1(erf) MB_D1(erfc) MB_D1(log1p) MB_D1(expm1) MB_D1(cbrt) MB_D1(sinpi) MB_D1(cospi) MB_D1(lgamma)
MB_D1(tgamma) MB_D1(fabs)
#define MB_D2(f) double f(double, double);
MB_D2(pow) MB_D2(atan2) MB_D2(fmod) MB_D2(copysign) MB_D2(hypot) MB_D2(fdim) MB_D2(fmin) MB_D2(fmax)
double fma(double, double, double); double ldexp(double, int);
double __dmul_rn(double, double);   // a product never fused into an FMA
void* memcpy(void*, const void*, unsigned long);   // CUDA's device memcpy (NVRTC has it built in)
double __longlong_as_double(long long); long long __double_as_longlong(double);
bool isnan(double); bool isinf(double); bool isfinite(double); bool signbit(double);
int min(int, int); unsigned int min(unsigned int, unsigned int); long min(long, long);
unsigned long min(unsigned long, unsigned long); long long min(long long, long long);
unsigned long long min(unsigned long long, unsigned long long); float min(float, float);
int max(int, int); unsigned int max(unsigned int, unsigned int); long max(long, long);
unsigned long max(unsigned long, unsigned long); long long max(long long, long long);
unsigned long long max(unsigned long long, unsigned long long); float max(float, float);
int abs(int);
float __int_as_float(int); int __float_as_int(float);
float __fmul_rn(float, float); double __dmul_rn(double, double);
void* memcpy(void*, const void*, unsigned long);   // a device builtin under NVRTC
int __popc(unsigned int); int __popcll(unsigned long long); int __clz(int); int __clzll(long long);
int __ffs(int); int __ffsll(long long); unsigned int __brev(unsigned int);
unsigned long long __brevll(unsigned long long);
long long __mul64hi(long long, long long); unsigned long long __umul64hi(unsigned long long, unsigned long long);

unsigned int __activemask();
template <class T> T __shfl_sync(unsigned int mask, T v, int src, int width = 32);
template <class T> T __shfl_down_sync(unsigned int mask, T v, unsigned int d, int width = 32);
template <class T> T __shfl_up_sync(unsigned int mask, T v, unsigned int d, int width = 32);
template <class T> T __shfl_xor_sync(unsigned int mask, T v, int m, int width = 32);
int __all_sync(unsigned int, int); int __any_sync(unsigned int, int);
unsigned int __ballot_sync(unsigned int, int);
void __syncthreads(); void __syncwarp(unsigned int mask = 0xffffffffu); void __threadfence();

int atomicAdd(int*, int); unsigned int atomicAdd(unsigned int*, unsigned int); float atomicAdd(float*, float);
unsigned long long atomicAdd(unsigned long long*, unsigned long long); double atomicAdd(double*, double);
long long atomicMin(long long*, long long); long long atomicMax(long long*, long long);
__half atomicAdd(__half*, __half); __nv_bfloat16 atomicAdd(__nv_bfloat16*, __nv_bfloat16);
int atomicSub(int*, int); unsigned int atomicSub(unsigned int*, unsigned int);
#define MB_ATOMIC_INT(f) int f(int*, int); unsigned int f(unsigned int*, unsigned int); \
  unsigned long long f(unsigned long long*, unsigned long long);
MB_ATOMIC_INT(atomicMin) MB_ATOMIC_INT(atomicMax) MB_ATOMIC_INT(atomicAnd) MB_ATOMIC_INT(atomicOr)
MB_ATOMIC_INT(atomicXor) MB_ATOMIC_INT(atomicExch)
float atomicExch(float*, float);
int atomicCAS(int*, int, int); unsigned int atomicCAS(unsigned int*, unsigned int, unsigned int);
unsigned long long atomicCAS(unsigned long long*, unsigned long long, unsigned long long);

namespace cuda { namespace std {
template <class T, int N> struct array { T _v[N]; T& operator[](int); const T& operator[](int) const; };
template <class T> struct numeric_limits { static T infinity(); static T max(); static T lowest(); };
// MLX's complex64_t (mlx/backend/cuda/device/complex.cuh): the type of a complex64 argument
template <class T> struct complex { T _re, _im; T real() const; T imag() const; };
} }
namespace cooperative_groups {}
namespace mlx { namespace core { namespace cu {
using Shape = cuda::std::array<int32_t, 10>;
using Strides = cuda::std::array<int64_t, 10>;
template <class T> using complex_t = cuda::std::complex<T>;
using complex64_t = complex_t<float>;
} } }
