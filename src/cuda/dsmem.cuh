// Internal: distributed shared memory of a thread-block cluster (sm_90): the address of
// this CTA's shared variable in another CTA of the cluster, arrivals on another CTA's
// mbarrier, and bulk copies from this CTA's shared memory into another's that complete on
// the receiver's mbarrier (its phase waits for their bytes, mbarrier_arrive_expect_tx).
#pragma once

#include <cstdint>

#include "cuda/mbarrier.cuh"

namespace batchqr::cuda {

// The shared::cluster address of `p` (in this CTA's shared memory) in the CTA of `rank`.
__device__ __forceinline__ unsigned dsmem_address(const void* p, unsigned rank) {
  unsigned a;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(a) : "r"(smem_address(p)), "r"(rank));
  return a;
}

// Arrives on the mbarrier at shared::cluster address `bar`, releasing this thread's earlier
// accesses at cluster scope.
__device__ __forceinline__ void mbarrier_arrive_cluster(unsigned bar) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// mbarrier_wait with cluster-scope acquire: for phases completed by other CTAs' arrivals.
__device__ __forceinline__ void mbarrier_wait_cluster(std::uint64_t* bar, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait:\n"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait;\n"
      "}\n" ::"r"(smem_address(bar)),
      "r"(parity)
      : "memory");
}

// `bytes` (a multiple of 16) from `src` (this CTA, 16-byte aligned) to shared::cluster
// address `dst` (16-byte aligned), completing `bytes` of the transaction count of the
// mbarrier at shared::cluster address `bar` (in the destination's CTA). The writes of src
// before it need fence_proxy_async_shared() (the copy reads through the async proxy).
__device__ __forceinline__ void bulk_copy_to_cluster(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
  asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   dst),
               "r"(smem_address(src)), "r"(bytes), "r"(bar)
               : "memory");
}

}  // namespace batchqr::cuda
