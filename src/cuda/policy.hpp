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

struct GeqrfPlan {
  Algorithm algorithm = Algorithm::blocked;
  int nb = 32;                   // panel width (blocked)
  std::int64_t batch_chunk = 1;  // matrices per pass; bounds the workspace
  std::size_t workspace_bytes = 0;
};

inline constexpr int kPanelWarps = 8;
// Cluster sizes up to 8 are portable; larger panels are factored in global memory.
inline constexpr int kMaxCluster = 8;
// The T workspace of the blocked algorithm is bounded to this per pass.
inline constexpr std::size_t kMaxTWorkspace = std::size_t{64} << 20;

// Shared-memory layout of one panel (rows x ncols) split over `cluster` CTAs.
PanelPlan panel_plan(const DeviceInfo& dev, int rows, int ncols, int nrefl, bool with_t,
                     std::int64_t batch);
GeqrfPlan make_plan(const DeviceInfo& dev, const GeqrfDesc& desc);

}  // namespace batchqr::cuda
