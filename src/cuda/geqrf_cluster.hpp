// Internal: launching geqrf_cluster_kernel (geqrf_cluster.cuh), blocked QR of a whole
// matrix held in the shared memory of a thread-block cluster, as a device-level operation.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "batchqr/status.hpp"
#include "batchqr/types.hpp"
#include "cuda/device_info.hpp"
#include "cuda/geqr2_cta.hpp"

namespace batchqr::cuda {

// A compiled shape (rows: at most that many rows, a multiple of 32) on a cluster of `ctas`
// CTAs; rows == 0: none holds the matrix.
struct ClusterBlkConfig {
  int rows = 0;
  int ctas = 0;
};

inline constexpr int kClusterBlkMinRows = 192;  // the smallest compiled shape
inline constexpr int kClusterBlkMaxRows = 416;
inline constexpr int kClusterBlkMaxCols = 512;
inline constexpr int kClusterBlkMaxCtas = 8;  // the portable cluster size

// The smallest compiled shape that holds an m x n matrix, on the fewest CTAs (2 to 8, at
// most one per 8-column block) whose shared memory holds their share of it; or none
// (also without cluster launch).
ClusterBlkConfig geqrf_cluster_config(const DeviceInfo& dev, int m, int n);
// The most CTAs a launch may use for n columns (at most one per 8-column block, and 8).
int geqrf_cluster_max_ctas(int n);
// Dynamic shared memory of each CTA of a launch, in bytes.
std::size_t geqrf_cluster_smem(const ClusterBlkConfig& cfg, int n);
// Raises the kernels' shared-memory limits (once per device, before the first launch).
Status geqrf_cluster_initialize(const DeviceInfo& dev);
// Fills dev->whole_sm_clusters (the current device must be dev->device; raises the limit of
// the kernel it queries).
Status geqrf_cluster_occupancy(DeviceInfo* dev);
// One cluster per matrix; no workspace.
Status launch_geqrf_cluster(Layout layout, const Geqr2CtaArgs& args, const ClusterBlkConfig& cfg, std::int64_t batch,
                            cudaStream_t stream);

}  // namespace batchqr::cuda
