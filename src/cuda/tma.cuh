// Internal: tensor-memory-accelerator loads (cp.async.bulk.tensor, sm_90 and newer) of a
// box of a tensor map (tensor_map.hpp) into shared memory, completing on an mbarrier:
// one instruction moves a whole tile, where per-thread cp.async spends an instruction and
// its address arithmetic per 16 bytes.
#pragma once

#include <cuda.h>  // CUtensorMap (the type only; no driver API call here)

#include <cstdint>

#include "cuda/mbarrier.cuh"

namespace batchqr::cuda {

// Arrives on `bar` and adds `bytes` to the transaction count its phase waits for.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(std::uint64_t* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_address(bar)), "r"(bytes)
               : "memory");
}

// The box at element coordinates (c0, c1, c2) of `map` (a __grid_constant__ kernel
// parameter) to `dst` (aligned as the map's swizzle requires: 1024 bytes for 128-byte
// swizzle); elements outside the tensor arrive as zeros. Completes on `bar`.
__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, int c0, int c1, int c2,
                                            std::uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"(smem_address(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(smem_address(bar))
      : "memory");
}

}  // namespace batchqr::cuda
