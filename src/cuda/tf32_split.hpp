// Internal: the bit operations of the 3xTF32 operand split (mma_tf32.cuh), as host and
// device functions so that their numerical properties are tested without a GPU
// (tests/test_tf32_split.cpp).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define BATCHQR_HOST_DEVICE __host__ __device__
#else
#define BATCHQR_HOST_DEVICE
#endif

namespace batchqr::cuda {

// The FP32 value with bits x rounded to TF32 (10 explicit mantissa bits), to nearest with
// ties away from zero, as cvt.rna.tf32.f32 does for finite values: add half a TF32 ulp to
// the magnitude, clear the low 13 bits. A finite value that rounds past FLT_MAX becomes
// inf (as with cvt.rna). For NaN the result is meaningless (the add may carry into the
// sign); split_tf32 then still yields a NaN small part.
BATCHQR_HOST_DEVICE constexpr std::uint32_t tf32_round_bits(std::uint32_t x) { return (x + 0x1000u) & 0xffffe000u; }

// The part of a .tf32 operand that the tensor cores read: its top 19 bits.
BATCHQR_HOST_DEVICE constexpr std::uint32_t tf32_truncate_bits(std::uint32_t x) { return x & 0xffffe000u; }

}  // namespace batchqr::cuda
