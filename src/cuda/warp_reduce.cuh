// Internal: warp-level reductions. Butterfly (xor) order, so every lane ends with the
// same, deterministic sum.
#pragma once

namespace batchqr::cuda {

template <typename T>
__device__ __forceinline__ T warp_allreduce_sum(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Eight sums over the warp, every lane ending with all eight (the same bits on every lane).
// Reduce-scatter, each level halving the values a lane carries (9 shuffles, 5 levels), then
// a gather from the lanes 4 c that hold sum c (8 shuffles, 1 level); a butterfly per value
// would take 40 shuffles.
__device__ __forceinline__ void warp_allreduce_sum8(float (&a)[8]) {
  constexpr unsigned kFull = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const bool b4 = lane & 16, b3 = lane & 8, b2 = lane & 4;
  float r4[4], r2[2];
#pragma unroll
  for (int t = 0; t < 4; ++t)  // keeps sums t + 4 b4
    r4[t] = (b4 ? a[t + 4] : a[t]) + __shfl_xor_sync(kFull, b4 ? a[t] : a[t + 4], 16);
#pragma unroll
  for (int t = 0; t < 2; ++t)  // keeps sums t + 2 b3 + 4 b4
    r2[t] = (b3 ? r4[t + 2] : r4[t]) + __shfl_xor_sync(kFull, b3 ? r4[t] : r4[t + 2], 8);
  float r = (b2 ? r2[1] : r2[0]) + __shfl_xor_sync(kFull, b2 ? r2[0] : r2[1], 4);  // sum (lane >> 2) & 7
  r += __shfl_xor_sync(kFull, r, 2);
  r += __shfl_xor_sync(kFull, r, 1);
#pragma unroll
  for (int c = 0; c < 8; ++c) a[c] = __shfl_sync(kFull, r, 4 * c);
}

}  // namespace batchqr::cuda
