// larfb of 64 reflectors on 64-column stripes with warpgroup MMA (wgmma, sm_90a), for
// row-major matrices: a persistent CTA per SM takes (matrix, 64 columns of C) items in turn,
// the stripe (up to 512 rows) held in shared memory while
//   W^T  := C^T V    (phase 1: A = C^T from registers, B = V from shared memory)
//   W2^T := W^T T    (phase 2)
//   C    := C - V W2 (phase 3: A = V from registers, B = -W2; the accumulators start as C)
// run on it, each product in 3xTF32 (FP32-grade, mma_tf32.cuh), each entry of W summed in a
// fixed order (bitwise reproducible). Against larfb_stripe (32 columns, mma.sync, two CTAs
// per SM), V is read half as often per column and the products are asynchronous wgmma.
// TF32 wgmma reads only K-major operands from shared memory and phase 1's K is the rows, so
// each 32-row chunk of V (row-major, as the panels store V^T) is transposed into K-major form
// in shared memory; the stripe and V arrive by TMA. Measurements: docs/perf-notes.md v29.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "batchqr/status.hpp"
#include "cuda/larfb_operands.hpp"

namespace batchqr::cuda {

inline constexpr int kStripe64MaxRows = 512;

// Whether the kernel exists in this build for the device (sm_90a machine code; compute
// capability 9.0).
bool larfb_stripe64_available(int cc_major, int cc_minor);
// Exactly 64 reflectors, 1 .. kStripe64MaxRows rows, V^T, the matrices and their rows
// 16-byte aligned and col0 a multiple of 4 (the TMA's tensor maps), at most INT_MAX items.
bool larfb_stripe64_can_implement(const LarfbOperands& args, std::int64_t batch);
// Dynamic shared memory of a CTA for `rows` rows.
std::size_t larfb_stripe64_smem_bytes(int rows);
// Once per device: the kernel's shared-memory limit.
Status larfb_stripe64_initialize();
// Row-major matrices only; persistent, at most one CTA per SM (sm_count). not_supported
// where can_implement says no or the driver refuses a tensor map.
Status launch_larfb_stripe64(const LarfbOperands& args, std::int64_t batch, int sm_count, cudaStream_t stream);

}  // namespace batchqr::cuda
