// Internal: the shared-memory tiles and products of larfb_stripe64's 64-reflector wgmma
// steps, apart from the kernel so that other kernels over the same tiles can share them.
// C and V arrive by TMA in 32-row chunks of two 32 x 32 boxes in the 128-byte swizzle; TF32
// wgmma reads only K-major operands from shared memory and phase 1's K is the rows, so each
// V chunk is transposed into K-major form, split into big and small; T (and -W2) are B
// operands of K = 64 in a split pair; phase 1's rows of W^T are the stripe's columns in a
// bank-conflict-free order (w_col).
#pragma once

#include <cstdint>

#include "cuda/mma_tf32.cuh"
#include "cuda/wgmma_tf32.cuh"

namespace batchqr::cuda::stripe64 {

inline constexpr int kK = 64;       // reflectors
inline constexpr int kTN = 64;      // columns of C per item
inline constexpr int kChunk = 32;   // rows per TMA box of C and of V
inline constexpr int kCBox = kChunk * 32 * 4;  // C: 32 rows x 32 columns, two per 32-row chunk
inline constexpr int kCChunk = 2 * kCBox;
inline constexpr int kVBox = kChunk * 32 * 4;  // V as stored: 32 rows x 32 reflectors, two per chunk
inline constexpr int kVChunk = 2 * kVBox;
inline constexpr int kBPart = kK * kTN * 4;    // a K = 64 B operand: big, then small

#if BATCHQR_HAVE_WGMMA

// Byte offset of C(r, c) (r < 32, c < 64) in a chunk: TMA's 128-byte swizzle, 16-byte
// group (c % 32) / 4 of row r at that group ^ (r % 8).
__device__ __forceinline__ int c_at(int r, int c) {
  return (c >> 5) * kCBox + r * 128 + ((((c & 31) >> 2) ^ (r & 7)) << 4) + (c & 3) * 4;
}
// Byte offset of V(r, n) (r < 32, n < 64) in a V chunk as stored (two boxes of 32
// reflectors, swizzled as C's), and in its K-major form for phase 1's B (each reflector's
// 32 rows in 128 bytes, the same swizzle with the roles swapped).
__device__ __forceinline__ int v_at(int r, int n) { return (n >> 5) * kVBox + r * 128 + ((((n & 31) >> 2) ^ (r & 7)) << 4) + (n & 3) * 4; }
__device__ __forceinline__ int vk_at(int r, int n) { return n * 128 + (((r >> 2) ^ (n & 7)) << 4) + (r & 3) * 4; }

// The k order of phases 2 and 3 inside each 8-block: slot s < 4 is reflector 2 s, slot
// 4 + s reflector 2 s + 1, so that a thread's A fragment is a pair of its accumulators
// (phase 2) or float2 reads of V (phase 3).
__device__ __forceinline__ int k_slot(int j) { return (j & ~7) + ((j & 1) ? 4 + ((j & 7) >> 1) : (j & 7) >> 1); }
// Byte offset of B(k slot, n) in a B part: core matrices of 8 (n) x 4 (k), K-direction
// cores 128 bytes apart, N-direction 2048 (wgmma_desc(.., 128, 2048), 256 bytes per k-step).
__device__ __forceinline__ int b_at(int k, int n) { return (n >> 3) * 2048 + (k >> 2) * 128 + (n & 7) * 16 + (k & 3) * 4; }

// Phase 1's rows of W^T (its m index) are the stripe's columns in this order: m = 16 w +
// 8 a + 4 b + s is column 32 (w / 2) + 4 (4 b + 2 (w % 2) + a) + s, which puts a warp's
// four rows of C (t) and eight columns (g) of one A register in 32 distinct banks.
__device__ __forceinline__ int w_col(int m) {
  const int w = m >> 4, a = (m >> 3) & 1, b = (m >> 2) & 1, s = m & 3;
  return 32 * (w >> 1) + 4 * (4 * b + 2 * (w & 1) + a) + s;
}

__device__ __forceinline__ void split4(const float (&x)[4], std::uint32_t (&big)[4], std::uint32_t (&small)[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) split_tf32(x[i], big[i], small[i]);
}

// d += A B over K = 64 (eight k-steps, 3xTF32) with B in a B part pair at sB (big, then
// small; b_at's layout), issued and waited for.
__device__ __forceinline__ void product_k64(float (&d)[32], std::uint32_t (&ab)[8][4], std::uint32_t (&as)[8][4],
                                            const unsigned char* sB) {
  wgmma_pin(ab);
  wgmma_pin(as);
  wgmma_pin(d);
  wgmma_fence();
#pragma unroll
  for (int kb = 0; kb < 8; ++kb) {
    const std::uint64_t bb = wgmma_desc(sB + 256 * kb, 128, 2048), bs = wgmma_desc(sB + kBPart + 256 * kb, 128, 2048);
    wgmma_m64n64k8_tf32(d, as[kb], bb);  // small products first, as mma_3xtf32
    wgmma_m64n64k8_tf32(d, ab[kb], bs);
    wgmma_m64n64k8_tf32(d, ab[kb], bb);
  }
  wgmma_commit();
  wgmma_wait_all(d);
}

// Phase 1 (W^T += C^T V) on one 32-row chunk, by one warpgroup: between these two steps its
// caller loads the thread's A values of C^T (rows t, t + 4 of each 8-row k-step, columns
// w_col(16 wr + g) and that + 4) and meets its barriers.
// 1. V's chunk as stored (at vb) into K-major form at sK, big (its top 19 bits, what the
//    tensor cores read of it) then small at sK + kVChunk. Thread tw (of 128) moves row
//    tw % 32's reflectors 4 q .. 4 q + 3, q = tw / 32 + 4 j: its float4 reads and each
//    warp's stores of one reflector fall in distinct banks.
__device__ __forceinline__ void v_chunk_k_major(const unsigned char* vb, unsigned char* sK, int tw) {
  const int r = tw & 31;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int n0 = 4 * ((tw >> 5) + 4 * j);
    const float4 x = *reinterpret_cast<const float4*>(vb + v_at(r, n0));
    const float xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float big = __uint_as_float(__float_as_uint(xs[e]) & 0xffffe000u);
      const int at = vk_at(r, n0 + e);
      *reinterpret_cast<float*>(sK + at) = big;
      *reinterpret_cast<float*>(sK + kVChunk + at) = xs[e] - big;
    }
  }
}
// 2. d += A B over the chunk's 32 rows (four k-steps, 3xTF32), B the K-major V at sK; issued
//    and waited for (after the caller's fence_proxy_async_shared for sK).
__device__ __forceinline__ void product_chunk(float (&d)[32], std::uint32_t (&ab)[4][4], std::uint32_t (&as)[4][4],
                                              const unsigned char* sK) {
  wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const std::uint64_t bb = wgmma_desc_sw128(sK + 32 * ks), bs = wgmma_desc_sw128(sK + kVChunk + 32 * ks);
    wgmma_m64n64k8_tf32(d, as[ks], bb);  // small products first, as mma_3xtf32
    wgmma_m64n64k8_tf32(d, ab[ks], bs);
    wgmma_m64n64k8_tf32(d, ab[ks], bb);
  }
  wgmma_commit();
  wgmma_wait_all(d);
}

#endif  // BATCHQR_HAVE_WGMMA

}  // namespace batchqr::cuda::stripe64
