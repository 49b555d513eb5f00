// Stand-in for MLX's mlx/backend/cuda/device/utils.cuh, enough to compile metalbench's
// generated kernels with nvcc outside MLX (tests): the types MLX's custom-kernel
// signature uses (Shape, Strides) and the half/bfloat headers MLX's JIT preamble brings.
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda/std/array>
#include <cuda/std/limits>

namespace mlx::core::cu {
#define MAX_NDIM 10  // as in MLX 0.32.4 (mlx/backend/cuda/device/config.h)
using Shape = cuda::std::array<int32_t, MAX_NDIM>;
using Strides = cuda::std::array<int64_t, MAX_NDIM>;
}  // namespace mlx::core::cu
