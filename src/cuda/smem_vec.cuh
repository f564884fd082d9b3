// Internal: a run of floats in shared memory into a register array.
#pragma once

namespace batchqr::cuda {

// N floats from 16-byte-aligned src into dst, as float4 loads.
template <int N>
__device__ __forceinline__ void load_float4s(const float* src, float (&dst)[N]) {
  static_assert(N % 4 == 0, "whole float4s");
#pragma unroll
  for (int i = 0; i < N; i += 4) {
    const float4 f = *reinterpret_cast<const float4*>(src + i);
    dst[i] = f.x;
    dst[i + 1] = f.y;
    dst[i + 2] = f.z;
    dst[i + 3] = f.w;
  }
}

}  // namespace batchqr::cuda
