#include "cuda/cuda_check.hpp"
#include "cuda/geqr2_wcol.cuh"
#include "cuda/geqr2_wcol.hpp"

namespace batchqr::cuda {
namespace {

// The compiled rows per lane (a multiple of 4: float4 rows), ascending.
constexpr int kWcolRowsPerLane[] = {4, 8, 12, 16, 20, 24, 28, 32};

template <int RPL, bool kOnlyFlagged>
void launch_kernel(Layout layout, const Geqr2RegArgs& args, dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream) {
  if (layout == Layout::row_major)
    geqr2_wcol_kernel<Layout::row_major, RPL, kOnlyFlagged><<<grid, block, smem, stream>>>(args);
  else
    geqr2_wcol_kernel<Layout::col_major, RPL, kOnlyFlagged><<<grid, block, smem, stream>>>(args);
}

template <int RPL>
Status launch(Layout layout, const Geqr2RegArgs& args, std::int64_t batch, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(batch)), block(32 * kWcolWarps);
  const std::size_t smem = geqr2_wcol_smem_bytes(RPL);
  if (args.only_flagged != nullptr) launch_kernel<RPL, true>(layout, args, grid, block, smem, stream);
  else launch_kernel<RPL, false>(layout, args, grid, block, smem, stream);
  BATCHQR_CUDA_TRY(cudaGetLastError());
  return Status::success;
}

template <int RPL>
Status raise_limit(const DeviceInfo& dev) {
  if (geqr2_wcol_smem_bytes(RPL) > dev.smem_per_block_optin) return Status::not_supported;
  const int bytes = static_cast<int>(geqr2_wcol_smem_bytes(RPL));
  for (auto kernel : {geqr2_wcol_kernel<Layout::row_major, RPL, false>, geqr2_wcol_kernel<Layout::col_major, RPL, false>,
                      geqr2_wcol_kernel<Layout::row_major, RPL, true>, geqr2_wcol_kernel<Layout::col_major, RPL, true>})
    BATCHQR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  return Status::success;
}

}  // namespace

static_assert(32 * kWcolRowsPerLane[std::size(kWcolRowsPerLane) - 1] == kWcolMaxRows);

int geqr2_wcol_rows_per_lane(int rows) {
  for (int rpl : kWcolRowsPerLane)
    if (rows >= 1 && rows <= 32 * rpl) return rpl;
  return 0;
}

std::size_t geqr2_wcol_smem(int rows_per_lane) { return geqr2_wcol_smem_bytes(rows_per_lane); }

Status geqr2_wcol_initialize(const DeviceInfo& dev) {
  for (Status st : {raise_limit<4>(dev), raise_limit<8>(dev), raise_limit<12>(dev), raise_limit<16>(dev),
                    raise_limit<20>(dev), raise_limit<24>(dev), raise_limit<28>(dev), raise_limit<32>(dev)})
    if (st != Status::success) return st;
  return Status::success;
}

Status launch_geqr2_wcol(Layout layout, const Geqr2RegArgs& args, int rows_per_lane, std::int64_t batch,
                         cudaStream_t stream) {
  switch (rows_per_lane) {
    case 4: return launch<4>(layout, args, batch, stream);
    case 8: return launch<8>(layout, args, batch, stream);
    case 12: return launch<12>(layout, args, batch, stream);
    case 16: return launch<16>(layout, args, batch, stream);
    case 20: return launch<20>(layout, args, batch, stream);
    case 24: return launch<24>(layout, args, batch, stream);
    case 28: return launch<28>(layout, args, batch, stream);
    case 32: return launch<32>(layout, args, batch, stream);
    default: return Status::backend_error;  // geqr2_wcol_rows_per_lane() returns only these
  }
}

}  // namespace batchqr::cuda
