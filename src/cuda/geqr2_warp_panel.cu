// The compiled row counts of geqr2_warp_panel_kernel and their launcher. Steps of 32 rows
// bound the wasted FMAs on zero rows to a fifth at worst; the largest, 192, keeps a[]
// within the 255 registers of a thread.
#include "cuda/cuda_check.hpp"
#include "cuda/geqr2_warp_panel.cuh"
#include "cuda/geqr2_warp_panel_launch.hpp"

namespace batchqr::cuda {
namespace {

constexpr int kMaxWarpPanelRows = 192;

template <int M>
Status launch_rows(Layout layout, const Geqr2RegArgs& args, std::int64_t batch, cudaStream_t stream) {
  const auto ctas = static_cast<unsigned>(batch);
  if (layout == Layout::row_major)
    geqr2_warp_panel_kernel<Layout::row_major, M><<<ctas, 32, 0, stream>>>(args);
  else
    geqr2_warp_panel_kernel<Layout::col_major, M><<<ctas, 32, 0, stream>>>(args);
  BATCHQR_CUDA_TRY(cudaGetLastError());
  return Status::success;
}

}  // namespace

int warp_panel_rows(int rows, int ncols) {
  if (rows < 1 || ncols < 1 || ncols > kMaxPanelWidth || rows > kMaxWarpPanelRows) return 0;
  return std::max(64, (rows + 31) / 32 * 32);
}

Status launch_geqr2_warp_panel(Layout layout, const Geqr2RegArgs& args, std::int64_t batch, cudaStream_t stream) {
  if (batch < 1 || batch > 0x7fffffff) return Status::not_supported;
  switch (warp_panel_rows(args.rows, args.ncols)) {
    case 64: return launch_rows<64>(layout, args, batch, stream);
    case 96: return launch_rows<96>(layout, args, batch, stream);
    case 128: return launch_rows<128>(layout, args, batch, stream);
    case 160: return launch_rows<160>(layout, args, batch, stream);
    case 192: return launch_rows<192>(layout, args, batch, stream);
    default: return Status::backend_error;  // the policy asks only for panels warp_panel_rows() holds
  }
}

}  // namespace batchqr::cuda
