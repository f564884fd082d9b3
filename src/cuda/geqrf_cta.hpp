// Internal: launching geqrf_cta_kernel (geqrf_cta.cuh), blocked QR of a whole small matrix
// in one CTA's shared memory, as a device-level operation.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "batchqr/status.hpp"
#include "batchqr/types.hpp"
#include "cuda/device_info.hpp"
#include "cuda/geqr2_cta.hpp"

namespace batchqr::cuda {

// A compiled shape: up to 8 x rows_per_lane rows; 0: none holds the matrix.
struct CtaBlkConfig {
  int rows_per_lane = 0;
};

inline constexpr int kCtaBlkMaxRows = 256;
inline constexpr int kCtaBlkMaxCols = 256;

// The smallest compiled shape that holds an m x n matrix in the device's shared memory, or
// none.
CtaBlkConfig geqrf_cta_config(const DeviceInfo& dev, int m, int n);
// Dynamic shared memory of a launch, in bytes.
std::size_t geqrf_cta_smem(const CtaBlkConfig& cfg, int n);
// Raises the kernels' shared-memory limits (once per device, before the first launch).
Status geqrf_cta_initialize(const DeviceInfo& dev);
// One CTA per matrix; no workspace.
Status launch_geqrf_cta(Layout layout, const Geqr2CtaArgs& args, const CtaBlkConfig& cfg, std::int64_t batch,
                        cudaStream_t stream);

}  // namespace batchqr::cuda
