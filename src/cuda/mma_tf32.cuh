// Internal: warp-level TF32 tensor-core MMA (m16n8k8) and the 3xTF32 operand split
// that keeps FP32-grade accuracy: x = big + small with big exact in TF32 and small exact
// in FP32 (the tensor cores read its top 19 bits), and a*b ~ a_big*b_big + a_big*b_small +
// a_small*b_big (the small*small term is below FP32 rounding).
//
// Fragment ownership (g = lane / 4, t = lane % 4):
//   A (16 x 8, row): a0 (g, t)  a1 (g+8, t)  a2 (g, t+4)  a3 (g+8, t+4)
//   B (8 x 8, col):  b0 (t, g)  b1 (t+4, g)
//   D (16 x 8):      d0 (g, 2t) d1 (g, 2t+1) d2 (g+8, 2t) d3 (g+8, 2t+1)
#pragma once

#include <cstdint>

#include "cuda/tf32_split.hpp"

namespace batchqr::cuda {

// big = x rounded to TF32 (tf32_round_bits, as cvt.rna.tf32). small = x - big is exact in
// FP32 and is passed with its low bits set: the tensor cores read a .tf32 operand's top 19
// bits only (UpdateKernels.Tf32OperandBits checks it on the GPU), which costs small at most
// 2^-10 of itself, below 2^-21 |x| (tests/test_tf32_split.cpp). Three instructions per
// value, where cvt.rna for both parts took seven on sm_90. Non-finite x: big may be anything
// (a NaN's add can carry into the sign), but small = x - big is then NaN, so NaN and inf
// still reach the product as NaN, as before.
__device__ __forceinline__ void split_tf32(float x, std::uint32_t& big, std::uint32_t& small) {
  big = tf32_round_bits(__float_as_uint(x));
  small = __float_as_uint(x - __uint_as_float(big));
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
