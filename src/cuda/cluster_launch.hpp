// Internal: the configuration of a cudaLaunchKernelEx launch whose CTAs form 1-D
// thread-block clusters of `cluster` CTAs (none when cluster <= 1).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace batchqr::cuda {

struct ClusterLaunch {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1] = {};

  ClusterLaunch(dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream, int cluster) {
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    if (cluster > 1) {
      attr[0].id = cudaLaunchAttributeClusterDimension;
      attr[0].val.clusterDim.x = static_cast<unsigned>(cluster);
      attr[0].val.clusterDim.y = 1;
      attr[0].val.clusterDim.z = 1;
      cfg.attrs = attr;
      cfg.numAttrs = 1;
    }
  }
  ClusterLaunch(const ClusterLaunch&) = delete;  // cfg.attrs points into this object
  ClusterLaunch& operator=(const ClusterLaunch&) = delete;
};

}  // namespace batchqr::cuda
