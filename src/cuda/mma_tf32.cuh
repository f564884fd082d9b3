// Internal: warp-level TF32 tensor-core MMA (m16n8k8) and the 3xTF32 operand split
// that keeps FP32-grade accuracy: x = big + small with both parts exact in TF32, and
// a*b ~ a_big*b_big + a_big*b_small + a_small*b_big (the small*small term is below
// FP32 rounding).
//
// Fragment ownership (g = lane / 4, t = lane % 4):
//   A (16 x 8, row): a0 (g, t)  a1 (g+8, t)  a2 (g, t+4)  a3 (g+8, t+4)
//   B (8 x 8, col):  b0 (t, g)  b1 (t+4, g)
//   D (16 x 8):      d0 (g, 2t) d1 (g, 2t+1) d2 (g+8, 2t) d3 (g+8, 2t+1)
#pragma once

#include <cstdint>

namespace batchqr::cuda {

__device__ __forceinline__ std::uint32_t to_tf32(float x) {
  std::uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ void split_tf32(float x, std::uint32_t& big, std::uint32_t& small) {
  big = to_tf32(x);
  small = to_tf32(x - __uint_as_float(big));
}

__device__ __forceinline__ void mma_tf32(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// d += a * b in 3xTF32 (small products first).
__device__ __forceinline__ void mma_3xtf32(float (&d)[4], const std::uint32_t (&a_big)[4],
                                           const std::uint32_t (&a_small)[4], const std::uint32_t (&b_big)[2],
                                           const std::uint32_t (&b_small)[2]) {
  mma_tf32(d, a_small, b_big);
  mma_tf32(d, a_big, b_small);
  mma_tf32(d, a_big, b_big);
}

}  // namespace batchqr::cuda
