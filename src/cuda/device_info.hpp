// Internal: the device properties the algorithm policy reads, queried once per context.
#pragma once

#include <cstddef>

namespace batchqr::cuda {

struct DeviceInfo {
  int device = 0;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::size_t smem_per_block_optin = 0;  // bytes of shared memory one CTA may opt in to
  std::size_t smem_per_sm = 0;
  bool cluster_launch = false;           // thread-block clusters (sm_90+)
  // Clusters of c CTAs (c = 2 .. 8) that are resident at once when each CTA takes a whole SM
  // (cudaOccupancyMaxActiveClusters with geqrf_cluster's launch); 0: not known. Fewer than
  // sm_count / c where the SMs of a GPC do not divide into clusters of c.
  int whole_sm_clusters[9] = {};
  bool tf32x3 = false;                   // trailing updates: batchqr's 3xTF32 kernels, else cuBLAS SGEMM
};

}  // namespace batchqr::cuda
