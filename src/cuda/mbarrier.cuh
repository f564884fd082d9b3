// Internal: shared-memory mbarriers (sm_90) for producer-consumer hand-offs inside a CTA,
// and the proxy fence between a thread's generic and async (TMA, wgmma) shared-memory accesses.
// An arrive releases the arriving thread's earlier writes (CTA scope); a completed wait
// acquires them. Phases alternate in parity: a wait for parity P returns once the phase
// of that parity has completed (on a fresh barrier, at once for P = 1).
#pragma once

#include <cstdint>

namespace batchqr::cuda {

__device__ __forceinline__ unsigned smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Orders this thread's earlier generic-proxy shared-memory accesses before its later
// async-proxy ones: writes that wgmma then reads (after a barrier), or reads of a buffer
// that a TMA load then overwrites.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

__device__ __forceinline__ void mbarrier_init(std::uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_address(bar)), "r"(count) : "memory");
}

// Makes initialized barriers visible to the CTA (then a __syncthreads).
__device__ __forceinline__ void mbarrier_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

__device__ __forceinline__ void mbarrier_arrive(std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_address(bar)) : "memory");
}

__device__ __forceinline__ void mbarrier_wait(std::uint64_t* bar, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait;\n"
      "}\n" ::"r"(smem_address(bar)),
      "r"(parity)
      : "memory");
}

}  // namespace batchqr::cuda
