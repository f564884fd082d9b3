// The compiled configurations of geqr2_reg_kernel: exactly kRegShapes (reg_config.hpp),
// among which policy.cu's reg_config() picks. Included once per layout.
#include "cuda/cluster_launch.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/geqr2_reg_launch.hpp"

namespace batchqr::cuda {
namespace {

template <Layout L, int R, int CT, int MaxW>
Status launch_config(const Geqr2RegArgs& args, const RegConfig& rc, std::int64_t batch, cudaStream_t stream) {
  const std::size_t smem = geqr2_reg_smem_bytes(rc.warps, MaxW, R, CT);
  geqr2_reg_kernel<L, R, CT, MaxW><<<static_cast<unsigned>(batch), rc.warps * 32, smem, stream>>>(args);
  BATCHQR_CUDA_TRY(cudaGetLastError());
  return Status::success;
}

// A panel split over a cluster of rc.cluster CTAs (geqr2_reg_kernel's kCluster variant).
template <Layout L, int R, int MaxW>
Status launch_cluster_config(const Geqr2RegArgs& args, const RegConfig& rc, std::int64_t batch, cudaStream_t stream) {
  Geqr2RegArgs a = args;
  a.cluster = rc.cluster;
  const ClusterLaunch l(dim3(static_cast<unsigned>(batch * rc.cluster)), dim3(rc.warps * 32),
                       geqr2_reg_smem_bytes(rc.warps, MaxW, R, 1, true), stream, rc.cluster);
  BATCHQR_CUDA_TRY(cudaLaunchKernelEx(&l.cfg, geqr2_reg_kernel<L, R, 1, MaxW, true>, a));
  return Status::success;
}

constexpr int key(int R, int CT, int max_warps) { return (CT * 100 + R) * 100 + max_warps; }

}  // namespace

template <Layout L>
Status launch_geqr2_reg(const Geqr2RegArgs& args, const RegConfig& rc, std::int64_t batch, cudaStream_t stream) {
  if (rc.cluster > 1) {
    switch (key(rc.rows_per_warp, rc.col_tiles, rc.max_warps)) {
      case key(16, 1, 16): return launch_cluster_config<L, 16, 16>(args, rc, batch, stream);
      case key(32, 1, 16): return launch_cluster_config<L, 32, 16>(args, rc, batch, stream);
      case key(32, 1, 32): return launch_cluster_config<L, 32, 32>(args, rc, batch, stream);
      default: return Status::backend_error;  // reg_cluster_config() returns only these
    }
  }
  switch (key(rc.rows_per_warp, rc.col_tiles, rc.max_warps)) {
    case key(2, 1, 16): return launch_config<L, 2, 1, 16>(args, rc, batch, stream);
    case key(4, 1, 16): return launch_config<L, 4, 1, 16>(args, rc, batch, stream);
    case key(8, 1, 16): return launch_config<L, 8, 1, 16>(args, rc, batch, stream);
    case key(16, 1, 16): return launch_config<L, 16, 1, 16>(args, rc, batch, stream);
    case key(32, 1, 16): return launch_config<L, 32, 1, 16>(args, rc, batch, stream);
    case key(32, 1, 32): return launch_config<L, 32, 1, 32>(args, rc, batch, stream);
    case key(4, 2, 16): return launch_config<L, 4, 2, 16>(args, rc, batch, stream);
    case key(8, 2, 16): return launch_config<L, 8, 2, 16>(args, rc, batch, stream);
    case key(16, 2, 16): return launch_config<L, 16, 2, 16>(args, rc, batch, stream);
    case key(32, 2, 16): return launch_config<L, 32, 2, 16>(args, rc, batch, stream);
    default: return Status::backend_error;  // reg_config() returns only kRegShapes
  }
}

}  // namespace batchqr::cuda
