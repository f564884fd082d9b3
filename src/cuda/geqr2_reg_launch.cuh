// The compiled (R, CT) configurations of geqr2_reg_kernel: exactly kRegShapes
// (reg_config.hpp), among which policy.cu's reg_config() picks. Included once per layout.
#include "cuda/cuda_check.hpp"
#include "cuda/geqr2_reg_launch.hpp"

namespace batchqr::cuda {
namespace {

template <Layout L, int R, int CT>
Status launch_config(const Geqr2RegArgs& args, const RegConfig& rc, std::int64_t batch, cudaStream_t stream) {
  const std::size_t smem = geqr2_reg_smem_bytes(rc.warps, CT);
  geqr2_reg_kernel<L, R, CT><<<static_cast<unsigned>(batch), rc.warps * 32, smem, stream>>>(args);
  BATCHQR_CUDA_TRY(cudaGetLastError());
  return Status::success;
}

}  // namespace

template <Layout L>
Status launch_geqr2_reg(const Geqr2RegArgs& args, const RegConfig& rc, std::int64_t batch, cudaStream_t stream) {
  const int key = rc.col_tiles * 100 + rc.rows_per_warp;
  switch (key) {
    case 102: return launch_config<L, 2, 1>(args, rc, batch, stream);
    case 104: return launch_config<L, 4, 1>(args, rc, batch, stream);
    case 108: return launch_config<L, 8, 1>(args, rc, batch, stream);
    case 116: return launch_config<L, 16, 1>(args, rc, batch, stream);
    case 132: return launch_config<L, 32, 1>(args, rc, batch, stream);
    case 204: return launch_config<L, 4, 2>(args, rc, batch, stream);
    case 208: return launch_config<L, 8, 2>(args, rc, batch, stream);
    case 216: return launch_config<L, 16, 2>(args, rc, batch, stream);
    case 232: return launch_config<L, 32, 2>(args, rc, batch, stream);
    default: return Status::backend_error;  // reg_config() returns only these
  }
}



}  // namespace batchqr::cuda
