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

}  // namespace batchqr::cuda
