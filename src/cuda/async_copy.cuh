// Internal: asynchronous global -> shared copies (cp.async, LDGSTS). A thread keeps all of
// its copies in flight instead of one round trip through a register each; they are
// complete (for the issuing thread) after async_wait() or async_wait_group<N>(), and
// visible to the others after a barrier (__syncwarp within a warp, __syncthreads).
#pragma once

namespace batchqr::cuda {

__device__ __forceinline__ void async_copy(float* dst, const float* src) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(src) : "memory");
}
// 16 bytes, both addresses 16-byte aligned; bypasses L1 (.cg).
__device__ __forceinline__ void async_copy16(float* dst, const float* src) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src) : "memory");
}
// 16 bytes, both addresses 16-byte aligned, through L1 (.ca): for data other CTAs on the
// SM read too.
__device__ __forceinline__ void async_copy16_l1(float* dst, const float* src) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src) : "memory");
}
__device__ __forceinline__ void async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most N of this thread's committed groups are pending.
template <int N>
__device__ __forceinline__ void async_wait_group() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void async_wait() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

}  // namespace batchqr::cuda
