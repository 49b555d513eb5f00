// mlx_utils_shim.h -- declarations of the helpers MLX's Metal preamble
// (mlx/backend/metal/kernels/utils.h) gives every custom kernel, for type checks.
#pragma once
#include <metal_stdlib>
using namespace metal;

typedef half float16_t;
typedef bfloat bfloat16_t;

template <typename IdxT = int64_t>
IdxT elem_to_loc(IdxT elem, constant const int* shape, constant const int64_t* strides, int ndim);
template <typename IdxT = int64_t>
IdxT elem_to_loc(uint3 elem, constant const int* shape, constant const int64_t* strides, int ndim);
template <typename IdxT = int64_t>
IdxT elem_to_loc_1(uint elem, constant const int64_t& stride);
template <typename IdxT = int64_t>
IdxT elem_to_loc_2(uint2 elem, constant const int64_t strides[2]);
template <typename IdxT = int64_t>
IdxT elem_to_loc_3(uint3 elem, constant const int64_t strides[3]);
template <typename T> struct Limits {
  static const constant T max; static const constant T min;
  static const constant T finite_max; static const constant T finite_min; };
template <typename T, typename U> inline T ceildiv(T N, U M) { return (N + M - 1) / M; }
