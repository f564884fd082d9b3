#include "cuda/cuda_check.hpp"
#include "cuda/geqrf_cta.cuh"
#include "cuda/geqrf_cta.hpp"

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

// f(std::integral_constant<int, RPL>) for cfg's shape; backend_error if none.
template <int I = 0, class F>
Status with_shape(const CtaBlkConfig& cfg, F&& f) {
  if constexpr (I == std::size(kRpls)) {
    return Status::backend_error;  // geqrf_cta_config() returns only these
  } else {
    if (cfg.rows_per_lane == kRpls[I]) return f(std::integral_constant<int, kRpls[I]>{});
    return with_shape<I + 1>(cfg, f);
  }
}

template <int I = 0>
Status raise_limits(const DeviceInfo& dev) {
  if constexpr (I == std::size(kRpls)) {
    return Status::success;
  } else {
    constexpr int RPL = kRpls[I];
    // As much as its widest matrix needs, at most what the device allows (geqrf_cta_config()
    // picks no wider one).
    const std::size_t bytes = std::min(geqrf_cta_smem_bytes(RPL, kCtaBlkMaxCols), dev.smem_per_block_optin);
    for (auto kernel : {geqrf_cta_kernel<Layout::row_major, RPL>, geqrf_cta_kernel<Layout::col_major, RPL>})
      BATCHQR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
    return raise_limits<I + 1>(dev);
  }
}

}  // namespace

CtaBlkConfig geqrf_cta_config(const DeviceInfo& dev, int m, int n) {
  if (m < 1 || n < 1 || m > kCtaBlkMaxRows || n > kCtaBlkMaxCols) return {};
  for (const int rpl : kRpls)
    if (m <= 8 * rpl) return geqrf_cta_smem_bytes(rpl, n) <= dev.smem_per_block_optin ? CtaBlkConfig{rpl} : CtaBlkConfig{};
  return {};
}

std::size_t geqrf_cta_smem(const CtaBlkConfig& cfg, int n) { return geqrf_cta_smem_bytes(cfg.rows_per_lane, n); }

Status geqrf_cta_initialize(const DeviceInfo& dev) { return raise_limits(dev); }

Status launch_geqrf_cta(Layout layout, const Geqr2CtaArgs& args, const CtaBlkConfig& cfg, std::int64_t batch,
                        cudaStream_t stream) {
  return with_shape(cfg, [&](auto rpl_c) { return launch<decltype(rpl_c)::value>(layout, args, batch, stream); });
}

}  // namespace batchqr::cuda
