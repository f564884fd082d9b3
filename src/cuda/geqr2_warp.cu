// The compiled row counts of geqr2_warp_kernel (M in {8, 16, 32}) and their launcher.
#include "cuda/cuda_check.hpp"
#include "cuda/geqr2_warp.cuh"
#include "cuda/geqr2_warp_launch.hpp"

namespace batchqr::cuda {
namespace {

template <int M>
Status launch_rows(Layout layout, const Geqr2WarpArgs& args, cudaStream_t stream) {
  const auto ctas = static_cast<unsigned>((args.batch + kWarpQrWarpsPerCta - 1) / kWarpQrWarpsPerCta);
  if (layout == Layout::row_major)
    geqr2_warp_kernel<Layout::row_major, M><<<ctas, 32 * kWarpQrWarpsPerCta, 0, stream>>>(args);
  else
    geqr2_warp_kernel<Layout::col_major, M><<<ctas, 32 * kWarpQrWarpsPerCta, 0, stream>>>(args);
  BATCHQR_CUDA_TRY(cudaGetLastError());
  return Status::success;
}

}  // namespace

int warp_qr_rows(int m, int n) {
  if (m < 1 || n < 1 || n > 32 || m > 32) return 0;
  return m <= 8 ? 8 : (m <= 16 ? 16 : 32);
}

Status launch_geqr2_warp(Layout layout, const Geqr2WarpArgs& args, cudaStream_t stream) {
  switch (warp_qr_rows(args.m, args.n)) {
    case 8: return launch_rows<8>(layout, args, stream);
    case 16: return launch_rows<16>(layout, args, stream);
    case 32: return launch_rows<32>(layout, args, stream);
    default: return Status::backend_error;  // the policy asks for m, n <= 32 only
  }
}

}  // namespace batchqr::cuda
