// larfb with the trailing matrix read once: one CTA per (matrix, 32-column stripe of C),
// the whole stripe (all rows) held in shared memory while
//   W  := V^T C,   W2 := T^T W,   C := C - V W2
// run on it, so C crosses HBM once each way (three cuBLAS products read it twice and write
// it once, and W makes two round trips). V is read through L1/L2 (every stripe of a matrix
// reads the same V); T is staged in shared memory.
//
// For K = 32 or 64 reflectors (inner panels and 64-column outer blocks) and up to 1024
// rows in one CTA (the stripe takes rows x 32 floats of shared memory, plus 40 KiB). A
// taller stripe (up to 8192 rows) is split over the CTAs of a thread-block cluster, each
// holding a block of up to 512 rows; they add their partial W through distributed shared memory
// (rank order), and each updates its own rows. The two products
// in 3xTF32 on tensor cores (StripeMath::tf32x3, the policy's) or in FP32 FMAs; each entry
// of W is summed over rows in a fixed order (8 row groups, then a fixed tree), so results
// do not depend on scheduling. Row-major stripes (3xTF32) load their rows and V with TMA
// (tensor maps encoded per launch, tensor_map.hpp) where the layout allows it.
// Measurements: docs/perf-notes.md v8 onwards.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "batchqr/status.hpp"
#include "batchqr/types.hpp"
#include "cuda/larfb_operands.hpp"

namespace batchqr::cuda {

inline constexpr int kLarfbStripeMaxRows = 1024;   // in one CTA
inline constexpr int kLarfbStripeSplitRows = 512;  // per CTA of a cluster: 2 CTAs per SM
inline constexpr int kLarfbStripeMaxCluster = 16;  // Hopper's non-portable cluster size
inline constexpr int kLarfbStripeClusterMaxRows = kLarfbStripeMaxCluster * kLarfbStripeSplitRows;

// The rows each CTA of a cluster of `ctas` holds: an even share, rounded up to 32 (a
// warp tile of the update).
__host__ __device__ constexpr int stripe_split_rows(int rows, int ctas) {
  return ((rows + ctas - 1) / ctas + 31) / 32 * 32;
}
// The CTAs per stripe for `rows` rows: 1 up to kLarfbStripeMaxRows, then a cluster of
// blocks of at most kLarfbStripeSplitRows rows (up to 16 CTAs); 0 above
// kLarfbStripeClusterMaxRows (not implementable). split_rows in 1 .. kLarfbStripeSplitRows
// asks for blocks of at most that many rows instead (a cluster from split_rows + 1 rows),
// where 16 CTAs reach; other values leave the default.
int larfb_stripe_cluster(int rows, int split_rows = 0);

// Exactly 32 or 64 reflectors, 1 .. 8192 rows, V^T rows float4-aligned (vt_ld and
// vt_stride multiples of 4, vt 16-byte aligned), a grid of at most INT_MAX CTAs.
bool larfb_stripe_can_implement(const LarfbOperands& args, std::int64_t batch, int split_rows = 0);
// Shared memory each CTA needs for a stripe of `rows` rows (its rows of the stripe, W
// partials, W and W2; a cluster's summed W takes a partial's slot), and the most any form takes
// (the TMA form's alignment and mbarriers on top): what sets the CTAs per SM.
std::size_t larfb_stripe_smem_bytes(int rows, int split_rows = 0);
std::size_t larfb_stripe_max_smem_bytes(int rows, int split_rows = 0);
// Once per device (GeqrfOperation::initialize): the kernels' shared-memory limit.
Status larfb_stripe_initialize();
Status launch_larfb_stripe(Layout layout, StripeMath math, const LarfbOperands& args, std::int64_t batch,
                           cudaStream_t stream, int split_rows = 0);

}  // namespace batchqr::cuda
