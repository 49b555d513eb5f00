// host stand-in for MLX's utils.cuh: the types of the custom-kernel signature
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda/std/array>
#include <cuda/std/limits>
#include <cuda/std/complex>
namespace mlx::core::cu {
#define MAX_NDIM 10
using Shape = cuda::std::array<int32_t, MAX_NDIM>;
using Strides = cuda::std::array<int64_t, MAX_NDIM>;
// as mlx/backend/cuda/device/complex.cuh: a complex64 argument is a complex64_t*
template <typename T> using complex_t = cuda::std::complex<T>;
using complex64_t = complex_t<float>;
}
