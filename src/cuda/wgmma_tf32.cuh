// Internal: Hopper warpgroup MMA (wgmma.mma_async, sm_90a only) for TF32 products of shape
// m64n32k8 and m64n64k8: A (64 x 8) from registers, B (8 x N) from shared memory, K-major,
// no swizzle or the 128-byte one.
//
// BATCHQR_HAVE_WGMMA is 1 in device code compiled for sm_90a (and 0 elsewhere: other
// architectures, and the host pass), where callers keep their mma.sync form.
//
// Fragments (warp w of the warpgroup, g = lane / 4, t = lane % 4), as mma.sync m16n8k8 per
// warp on rows 16 w ..:
//   A: a0 (16 w + g, t)  a1 (16 w + g + 8, t)  a2 (16 w + g, t + 4)  a3 (16 w + g + 8, t + 4)
//   D: d[4 j + 2 h + e] = (16 w + g + 8 h, 8 j + 2 t + e), j = 0..3 (column blocks of 8)
// B in shared memory as core matrices of 8 (n) rows x 4 (k) floats, 128 contiguous bytes
// each: core (n / 8, k / 4) at (n / 8) * sbo + (k / 4) * lbo bytes from the descriptor's
// start, row n % 8 at 16 (n % 8) bytes, k % 4 at 4 (k % 4).
#pragma once

#include <cstdint>

#include "cuda/mbarrier.cuh"  // smem_address

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define BATCHQR_HAVE_WGMMA 1
#else
#define BATCHQR_HAVE_WGMMA 0
#endif

namespace batchqr::cuda {

// The 128 threads of warpgroup wg meet at barrier 1 + wg (0 is __syncthreads'). The id is
// a register (with immediate ids in two branches ptxas spilled in larfb_stripe): ptxas then
// reserves all 16 barriers.
__device__ __forceinline__ void warpgroup_barrier(int wg) { asm volatile("bar.sync %0, 128;" ::"r"(1 + wg) : "memory"); }

#if BATCHQR_HAVE_WGMMA

// Shared-memory matrix descriptor: start, leading (K-direction) and stride (N-direction)
// byte offsets between core matrices, each in units of 16 bytes; swizzle mode 0 (none).
__device__ __forceinline__ std::uint64_t wgmma_desc(const void* start, unsigned lbo_bytes, unsigned sbo_bytes) {
  return static_cast<std::uint64_t>((smem_address(start) & 0x3ffffu) >> 4) |
         (static_cast<std::uint64_t>(lbo_bytes >> 4) << 16) | (static_cast<std::uint64_t>(sbo_bytes >> 4) << 32);
}

// Pins register operands before a wgmma_fence(): the compiler may otherwise sink their
// computation past the fence, and ptxas then serializes the wgmma behind an injected
// warpgroup.arrive (info C7519).
template <int N, int M>
__device__ __forceinline__ void wgmma_pin(std::uint32_t (&a)[N][M]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int j = 0; j < M; ++j) asm volatile("" : "+r"(a[i][j])::"memory");
}
template <int N>
__device__ __forceinline__ void wgmma_pin(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Orders this thread's register writes (A, D) before the wgmma that read them.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }

// Waits for every committed wgmma; d is named so that no read of it moves above the wait.
__device__ __forceinline__ void wgmma_wait_all(float (&d)[16]) {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
               :
               : "memory");
}

// d += A B (A: TF32 bit patterns in registers; B: descriptor), issued asynchronously.
__device__ __forceinline__ void wgmma_m64n32k8_tf32(float (&d)[16], const std::uint32_t (&a)[4], std::uint64_t desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %21, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "{%16, %17, %18, %19}, %20, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1)
      : "memory");
}

// The same descriptor for a K-major operand in the 128-byte swizzle (the TMA's
// CU_TENSOR_MAP_SWIZZLE_128B): rows of 128 bytes (32 floats of K), 8-row groups 1024 bytes
// apart, the tile 1024-byte aligned; a k-step inside the 128 bytes advances `start` by
// its byte offset (the swizzle is a function of the address).
__device__ __forceinline__ std::uint64_t wgmma_desc_sw128(const void* start) {
  return static_cast<std::uint64_t>((smem_address(start) & 0x3ffffu) >> 4) | (std::uint64_t{1} << 16) |
         (std::uint64_t{1024 >> 4} << 32) | (std::uint64_t{1} << 62);
}

__device__ __forceinline__ void wgmma_wait_all(float (&d)[32]) {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                 "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               :
               : "memory");
}

// m64n64k8: D as for m64n32k8 with j = 0..7 (d[4 j + 2 h + e]).
__device__ __forceinline__ void wgmma_m64n64k8_tf32(float (&d)[32], const std::uint32_t (&a)[4], std::uint64_t desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1)
      : "memory");
}

#endif  // BATCHQR_HAVE_WGMMA

}  // namespace batchqr::cuda
