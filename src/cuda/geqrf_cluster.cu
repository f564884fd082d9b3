#include <algorithm>
#include <iterator>

#include "cuda/cluster_launch.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/geqrf_cluster.cuh"
#include "cuda/geqrf_cluster.hpp"
#include "cuda/shape_table.hpp"

namespace batchqr::cuda {
namespace {

// Rows of the compiled shapes, in 32-row steps (the panel warp's registers per column and
// lane: 8 to 13).
constexpr int kRows[] = {192, 224, 256, 288, 320, 352, 384, 416};
static_assert(kRows[0] == kClusterBlkMinRows && kRows[std::size(kRows) - 1] == kClusterBlkMaxRows);

template <int MR>
Status launch(Layout layout, const Geqr2CtaArgs& args, const ClusterBlkConfig& cfg, std::int64_t batch,
              cudaStream_t stream) {
  const ClusterLaunch cl(dim3(static_cast<unsigned>(batch * cfg.ctas)), dim3(32 * kClWarps),
                         geqrf_cluster_smem_bytes(MR, cfg.ctas, args.n), stream, cfg.ctas);
  if (layout == Layout::row_major)
    BATCHQR_CUDA_TRY(cudaLaunchKernelEx(&cl.cfg, geqrf_cluster_kernel<Layout::row_major, MR>, args));
  else
    BATCHQR_CUDA_TRY(cudaLaunchKernelEx(&cl.cfg, geqrf_cluster_kernel<Layout::col_major, MR>, args));
  return Status::success;
}

}  // namespace

ClusterBlkConfig geqrf_cluster_config(const DeviceInfo& dev, int m, int n) {
  if (!dev.cluster_launch || m < 1 || n < 1 || m > kClusterBlkMaxRows || n > kClusterBlkMaxCols) return {};
  const int rows = std::max(kClusterBlkMinRows, (m + 31) / 32 * 32);
  for (int ctas = 2, most = geqrf_cluster_max_ctas(n); ctas <= most; ++ctas)
    if (geqrf_cluster_smem_bytes(rows, ctas, n) <= dev.smem_per_block_optin) return {rows, ctas};
  return {};
}

int geqrf_cluster_max_ctas(int n) { return std::min(kClusterBlkMaxCtas, (n + kCtaBlkPanel - 1) / kCtaBlkPanel); }

std::size_t geqrf_cluster_smem(const ClusterBlkConfig& cfg, int n) {
  return geqrf_cluster_smem_bytes(cfg.rows, cfg.ctas, n);
}

Status geqrf_cluster_initialize(const DeviceInfo& dev) {
  if (!dev.cluster_launch) return Status::success;
  return for_each_shape<std::size(kRows)>([&](auto i) {
    constexpr int MR = kRows[decltype(i)::value];
    const int bytes = static_cast<int>(dev.smem_per_block_optin);  // geqrf_cluster_config() asks for no more
    for (auto kernel : {geqrf_cluster_kernel<Layout::row_major, MR>, geqrf_cluster_kernel<Layout::col_major, MR>})
      BATCHQR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    return Status::success;
  });
}

Status geqrf_cluster_occupancy(DeviceInfo* dev) {
  // A CTA of the whole opt-in shared memory: one per SM. The launches take less where more
  // CTAs than the fewest share a matrix, but their registers (158-234 x 256 threads) allow no
  // second CTA per SM either.
  const auto kernel = geqrf_cluster_kernel<Layout::row_major, kClusterBlkMaxRows>;
  const int bytes = static_cast<int>(dev->smem_per_block_optin);
  BATCHQR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  for (int c = 2; c <= kClusterBlkMaxCtas; ++c) {
    const ClusterLaunch cl(dim3(static_cast<unsigned>(c)), dim3(32 * kClWarps), dev->smem_per_block_optin, nullptr, c);
    int clusters = 0;
    BATCHQR_CUDA_TRY(cudaOccupancyMaxActiveClusters(&clusters, kernel, &cl.cfg));
    dev->whole_sm_clusters[c] = clusters;
  }
  return Status::success;
}

Status launch_geqrf_cluster(Layout layout, const Geqr2CtaArgs& args, const ClusterBlkConfig& cfg, std::int64_t batch,
                            cudaStream_t stream) {
  return with_shape<std::size(kRows)>([&](std::size_t i) { return kRows[i] == cfg.rows; },
                                      [&](auto i) { return launch<kRows[decltype(i)::value]>(layout, args, cfg, batch, stream); });
}

}  // namespace batchqr::cuda
