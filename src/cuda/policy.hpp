// Internal: how a geqrf problem is mapped onto kernels. Every choice is a function of
// (m, n, batch) and the device properties; docs/perf-notes.md holds the measurements.
#pragma once

#include <cstddef>
#include <cstdint>

#include "batchqr/types.hpp"
#include "cuda/device_info.hpp"

namespace batchqr::cuda {

enum class Algorithm {
  fused,    // one geqr2 launch factors the whole matrix on chip (unblocked)
  blocked,  // geqr2 panel of width nb, then larfb on the trailing matrix, per panel
};

struct PanelPlan {
  int cluster = 1;       // CTAs per matrix
  int rows_per_cta = 0;
  int lds = 0;           // shared-memory leading dimension (odd: conflict-free staging)
  bool in_smem = true;   // false: the panel is factored in place in global memory
  std::size_t smem_bytes = 0;
};

// Row slices of one larfb launch (see larfb.cuh).
struct LarfbSplit {
  int splits = 1;
  int rows_per_split = 0;  // a multiple of kLarfbChunk
};

struct GeqrfPlan {
  Algorithm algorithm = Algorithm::blocked;
  int nb = 32;                   // panel width (blocked)
  std::int64_t batch_chunk = 1;  // matrices per pass; bounds the workspace
  std::size_t t_floats = 0;      // per matrix: T factor
  std::size_t w_floats = 0;      // per matrix: larfb partials (the largest panel's)
  std::size_t workspace_bytes = 0;
};

inline constexpr int kPanelWarps = 8;
// Cluster sizes up to 8 are portable; larger panels are factored in global memory.
inline constexpr int kMaxCluster = 8;
// The workspace of the blocked algorithm is bounded to about this per pass (larger
// batches are factored in chunks, which are still large enough to fill the GPU).
inline constexpr std::size_t kMaxWorkspace = std::size_t{256} << 20;
// larfb splits rows until a launch has about this many CTAs per SM (8 fit by shared memory
// and threads), keeping at least kMinSplitRows rows per CTA.
inline constexpr int kLarfbCtasPerSm = 8;
inline constexpr int kMinSplitRows = 256;

// Shared-memory layout of one panel (rows x ncols) split over `cluster` CTAs.
PanelPlan panel_plan(const DeviceInfo& dev, int rows, int ncols, int nrefl, bool with_t,
                     std::int64_t batch);
LarfbSplit larfb_split(const DeviceInfo& dev, std::int64_t batch, int rows, int tiles);
GeqrfPlan make_plan(const DeviceInfo& dev, const GeqrfDesc& desc);

}  // namespace batchqr::cuda
