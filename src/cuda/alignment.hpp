// Alignment tests of the kernels that move rows of float arrays in groups (float2, float4,
// TMA boxes): host code (can_implement, launch choices) and device code alike.
#pragma once

#include <cstdint>

namespace batchqr::cuda {

// Whether every row of a row-major float array (ld floats apart, from x) starts on a Bytes
// boundary, so that its Bytes groups move whole.
template <int Bytes>
__host__ __device__ inline bool rows_aligned(const float* x, std::int64_t ld) {
  static_assert(Bytes % 4 == 0, "whole floats");
  return ld % (Bytes / 4) == 0 && reinterpret_cast<std::uintptr_t>(x) % Bytes == 0;
}

// The same for every matrix of a batch (stride floats apart).
template <int Bytes>
__host__ __device__ inline bool batch_rows_aligned(const float* x, std::int64_t ld, std::int64_t stride) {
  return rows_aligned<Bytes>(x, ld) && stride % (Bytes / 4) == 0;
}

}  // namespace batchqr::cuda
