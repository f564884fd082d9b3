#include "cuda/cuda_check.hpp"
#include "cuda/geqrf_cta.cuh"
#include "cuda/geqrf_cta.hpp"
#include "cuda/shape_table.hpp"

namespace batchqr::cuda {
namespace {

// Rows per lane of the compiled shapes (8 RPL rows each), in 32-row steps.
constexpr int kRpls[] = {8, 12, 16, 20, 24, 28, 32};

template <int RPL>
Status launch(Layout layout, const Geqr2CtaArgs& args, std::int64_t batch, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(batch)), block(32 * kCtaBlkWarps);
  const std::size_t smem = geqrf_cta_smem_bytes(RPL, args.n);
  if (layout == Layout::row_major)
    geqrf_cta_kernel<Layout::row_major, RPL><<<grid, block, smem, stream>>>(args);
  else
    geqrf_cta_kernel<Layout::col_major, RPL><<<grid, block, smem, stream>>>(args);
  BATCHQR_CUDA_TRY(cudaGetLastError());
  return Status::success;
}

}  // namespace

CtaBlkConfig geqrf_cta_config(const DeviceInfo& dev, int m, int n) {
  if (m < 1 || n < 1 || m > kCtaBlkMaxRows || n > kCtaBlkMaxCols) return {};
  for (const int rpl : kRpls)
    if (m <= 8 * rpl) return geqrf_cta_smem_bytes(rpl, n) <= dev.smem_per_block_optin ? CtaBlkConfig{rpl} : CtaBlkConfig{};
  return {};
}

std::size_t geqrf_cta_smem(const CtaBlkConfig& cfg, int n) { return geqrf_cta_smem_bytes(cfg.rows_per_lane, n); }

Status geqrf_cta_initialize(const DeviceInfo& dev) {
  return for_each_shape<std::size(kRpls)>([&](auto i) {
    constexpr int RPL = kRpls[decltype(i)::value];
    // As much as its widest matrix needs, at most what the device allows (geqrf_cta_config()
    // picks no wider one).
    const std::size_t bytes = std::min(geqrf_cta_smem_bytes(RPL, kCtaBlkMaxCols), dev.smem_per_block_optin);
    for (auto kernel : {geqrf_cta_kernel<Layout::row_major, RPL>, geqrf_cta_kernel<Layout::col_major, RPL>})
      BATCHQR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
    return Status::success;
  });
}

Status launch_geqrf_cta(Layout layout, const Geqr2CtaArgs& args, const CtaBlkConfig& cfg, std::int64_t batch,
                        cudaStream_t stream) {
  return with_shape<std::size(kRpls)>([&](std::size_t i) { return kRpls[i] == cfg.rows_per_lane; },
                                      [&](auto i) { return launch<kRpls[decltype(i)::value]>(layout, args, batch, stream); });
}

}  // namespace batchqr::cuda
