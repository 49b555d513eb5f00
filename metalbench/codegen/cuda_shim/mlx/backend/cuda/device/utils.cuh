// Stand-in for MLX's mlx/backend/cuda/device/utils.cuh, enough to compile metalbench's
// generated kernels with nvcc outside MLX (tests): the types MLX's custom-kernel
// signature uses (Shape, Strides, complex64_t) and the half/bfloat headers MLX's JIT
// preamble brings.
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda/std/array>
#include <cuda/std/limits>

// As MLX 0.32.4's mlx/backend/cuda/device/complex.cuh (which utils.cuh includes): a
// complex64 array argument is declared `const mlx::core::cu::complex64_t* x`.
#define LIBCUDACXX_ENABLE_SIMPLIFIED_COMPLEX_OPERATIONS
#include <cuda/std/complex>

namespace mlx::core::cu {
#define MAX_NDIM 10  // as in MLX 0.32.4 (mlx/backend/cuda/device/config.h)
using Shape = cuda::std::array<int32_t, MAX_NDIM>;
using Strides = cuda::std::array<int64_t, MAX_NDIM>;
template <typename T>
using complex_t = cuda::std::complex<T>;
using complex64_t = complex_t<float>;
}  // namespace mlx::core::cu
