#include "cuda/cuda_check.hpp"
#include "cuda/geqr2_cta.cuh"
#include "cuda/geqr2_cta.hpp"
#include "cuda/shape_table.hpp"

namespace batchqr::cuda {
namespace {

// The compiled shapes (rows per lane, slots, warps), by registers per thread: each holds
// RPL * SLOTS floats of the matrix per thread and v (RPL more), at most 72 + 24 of the 128
// registers of 16 warps. 8 warps (twice the slots) were within 2-7% (docs/perf-notes.md
// v15) and past 96 floats of matrix per thread the compiler keeps it in local memory.
struct Shape {
  int rpl, slots, warps;
};
constexpr Shape kShapes[] = {{8, 1, 16},  {16, 1, 16}, {8, 2, 16},  {24, 1, 16}, {8, 3, 16},
                             {32, 1, 16}, {16, 2, 16}, {16, 3, 16}, {24, 2, 16}, {32, 2, 16}, {24, 3, 16}};

template <int RPL, int SLOTS, int NW>
Status launch(Layout layout, const Geqr2CtaArgs& args, std::int64_t batch, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(batch)), block(32 * NW);
  const std::size_t smem = geqr2_cta_smem_bytes(RPL, args.n);
  if (layout == Layout::row_major)
    geqr2_cta_kernel<Layout::row_major, RPL, SLOTS, NW><<<grid, block, smem, stream>>>(args);
  else
    geqr2_cta_kernel<Layout::col_major, RPL, SLOTS, NW><<<grid, block, smem, stream>>>(args);
  BATCHQR_CUDA_TRY(cudaGetLastError());
  return Status::success;
}

template <int RPL, int SLOTS, int NW>
Status raise_limit(const DeviceInfo& dev) {
  const std::size_t bytes = geqr2_cta_smem_bytes(RPL, std::min(SLOTS * 4 * NW, kCtaMaxCols));
  if (bytes > dev.smem_per_block_optin) return Status::success;  // geqr2_cta_config() will not pick it
  for (auto kernel : {geqr2_cta_kernel<Layout::row_major, RPL, SLOTS, NW>, geqr2_cta_kernel<Layout::col_major, RPL, SLOTS, NW>})
    BATCHQR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  return Status::success;
}

}  // namespace

CtaConfig geqr2_cta_config(const DeviceInfo& dev, int m, int n) {
  if (m < 1 || n < 1 || m > kCtaMaxRows || n > kCtaMaxCols) return {};
  for (const Shape& s : kShapes)
    if (m <= 8 * s.rpl && n <= s.slots * 4 * s.warps &&
        geqr2_cta_smem_bytes(s.rpl, n) <= dev.smem_per_block_optin)
      return {s.rpl, s.slots, s.warps};
  return {};
}

std::size_t geqr2_cta_smem(const CtaConfig& cfg, int n) { return geqr2_cta_smem_bytes(cfg.rows_per_lane, n); }

Status geqr2_cta_initialize(const DeviceInfo& dev) {
  return for_each_shape<std::size(kShapes)>([&](auto i) {
    constexpr Shape s = kShapes[decltype(i)::value];
    return raise_limit<s.rpl, s.slots, s.warps>(dev);
  });
}

Status launch_geqr2_cta(Layout layout, const Geqr2CtaArgs& args, const CtaConfig& cfg, std::int64_t batch,
                        cudaStream_t stream) {
  auto match = [&](std::size_t i) {
    return cfg.rows_per_lane == kShapes[i].rpl && cfg.slots == kShapes[i].slots && cfg.warps == kShapes[i].warps;
  };
  return with_shape<std::size(kShapes)>(match, [&](auto i) {
    constexpr Shape s = kShapes[decltype(i)::value];
    return launch<s.rpl, s.slots, s.warps>(layout, args, batch, stream);
  });
}

}  // namespace batchqr::cuda
